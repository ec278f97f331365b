// A log in a vector for component tests: each appended event gets the next offset, as the log
// assigns it, and builders for the observation events the components consume.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "messages/codec.hpp"
#include "messages/units.hpp"
#include "tests/support/resources.hpp"

namespace colony::testing {

struct event_log {
  std::vector<messages::byte_buffer> records;
  messages::event_builder b;

  template <class T>
  std::uint64_t append(std::int64_t t, wire::EntityKind kind, std::string_view key,
                       flatbuffers::Offset<T> payload, std::string_view source = "test") {
    messages::header h;
    h.time = event_time{t};
    h.kind = kind;
    h.key = key;
    h.source = source;
    auto bytes = b.finish(h, payload);
    const auto off = records.size();
    EXPECT_TRUE(messages::patch_offset(bytes, log_offset{off}));
    records.push_back(std::move(bytes));
    return off;
  }
  // Appends an event a component emitted (the log assigns its offset).
  std::uint64_t append_bytes(messages::byte_buffer bytes) {
    const auto off = records.size();
    EXPECT_TRUE(messages::patch_offset(bytes, log_offset{off}));
    records.push_back(std::move(bytes));
    return off;
  }
  [[nodiscard]] const wire::Envelope& at(std::uint64_t off) const {
    auto d = messages::decode(records[off], "test log");
    EXPECT_TRUE(d.has_value()) << d.error().describe();
    return *d->envelope;
  }

  std::uint64_t node(std::int64_t t, const std::string& name, resource_list cap,
                     resource_list alloc,
                     const std::vector<std::pair<std::string, std::string>>& labels = {}) {
    auto& fbb = b.fbb();
    const auto c = b.resources(cap);
    const auto a = b.resources(alloc);
    const auto l = b.key_values(labels);
    const auto n = fbb.CreateString(name);
    return append(t, wire::EntityKind::Node, name,
                  wire::CreateNodeRegistered(fbb, n, c, a, l, 0, 0, false));
  }
  // A node with annotations too (node.koordinator.sh/cpu-basic-info, ...).
  std::uint64_t annotated_node(
      std::int64_t t, const std::string& name, resource_list cap, resource_list alloc,
      const std::vector<std::pair<std::string, std::string>>& labels,
      const std::vector<std::pair<std::string, std::string>>& annotations) {
    auto& fbb = b.fbb();
    const auto c = b.resources(cap);
    const auto a = b.resources(alloc);
    const auto l = b.key_values(labels);
    const auto an = b.key_values(annotations);
    const auto n = fbb.CreateString(name);
    return append(t, wire::EntityKind::Node, name,
                  wire::CreateNodeRegistered(fbb, n, c, a, l, an, 0, false));
  }
  std::uint64_t mutated(std::int64_t t, const std::string& pod, wire::QoSClass qos,
                        wire::PriorityClass pc, std::int32_t priority, resource_list req,
                        resource_list lim = {},
                        const std::vector<std::pair<std::string, std::string>>& labels = {}) {
    auto& fbb = b.fbb();
    const auto r = b.resources(req);
    const auto li = b.resources(lim);
    const auto l = b.key_values(labels);
    const auto n = fbb.CreateString(pod);
    return append(t, wire::EntityKind::Pod, pod,
                  wire::CreatePodMutated(fbb, n, 0, qos, pc, priority, 0, 0, r, li, l, 0));
  }
  std::uint64_t scheduled(std::int64_t t, const std::string& pod, const std::string& node,
                          resource_list req) {
    auto& fbb = b.fbb();
    const auto r = b.resources(req);
    const auto p = fbb.CreateString(pod);
    const auto n = fbb.CreateString(node);
    return append(t, wire::EntityKind::Node, node,
                  wire::CreatePodScheduled(fbb, p, n, -1, r, 0, 0));
  }
  std::uint64_t finished(std::int64_t t, const std::string& pod, const std::string& node) {
    auto& fbb = b.fbb();
    const auto p = fbb.CreateString(pod);
    const auto n = fbb.CreateString(node);
    return append(t, wire::EntityKind::Pod, pod,
                  wire::CreatePodFinished(fbb, p, n, wire::PodPhase::Succeeded));
  }
  struct pod_usage {
    std::string pod;
    std::int64_t cpu = 0, mem = 0;
    wire::PriorityClass pc = wire::PriorityClass::None;
    wire::QoSClass qos = wire::QoSClass::None;
  };
  std::uint64_t metric(std::int64_t t, const std::string& node, std::int64_t cpu, std::int64_t mem,
                       const std::vector<pod_usage>& pods, resource_list system = {}) {
    auto& fbb = b.fbb();
    std::vector<flatbuffers::Offset<wire::PodMetric>> pms;
    for (const auto& p : pods) {
      resource_list u;
      u.cpu_milli = p.cpu;
      u.memory_bytes = p.mem;
      const auto ru = b.resources(u);
      const auto pn = fbb.CreateString(p.pod);
      pms.push_back(wire::CreatePodMetric(fbb, pn, ru, p.pc, p.qos));
    }
    const auto pv = fbb.CreateVector(pms);
    resource_list nu;
    nu.cpu_milli = cpu;
    nu.memory_bytes = mem;
    const auto nuo = b.resources(nu);
    const auto suo = b.resources(system);
    const auto n = fbb.CreateString(node);
    return append(t, wire::EntityKind::Node, node,
                  wire::CreateNodeMetricReported(fbb, n, t, 300000, 60000, nuo, suo, 0, 0, pv, 0),
                  "koordlet");
  }
  std::uint64_t config(std::int64_t t, std::string_view kind, std::string_view spec,
                       bool deleted = false) {
    auto& fbb = b.fbb();
    const auto k = fbb.CreateString(kind);
    const auto n = fbb.CreateString("koordinator-system/slo-controller-config");
    const auto s = fbb.CreateString(spec);
    return append(t, wire::EntityKind::Cluster, "slo-controller",
                  wire::CreateConfigUpdated(fbb, k, n, s, deleted));
  }
};

using colony::gib;  // messages/units.hpp

inline const wire::Envelope& decoded(const messages::byte_buffer& b) {
  auto d = messages::decode(b, "emitted");
  EXPECT_TRUE(d.has_value()) << d.error().describe();
  return *d->envelope;
}

}  // namespace colony::testing
