// Decision records for the sink tests, built with messages::event_builder the way the
// components build them (the builders there are private to their translation units):
//   PodScheduled             actors/entities/binding.cpp acceptance(): entity Node/<node>,
//                            causation = proposal offset, source "node"
//   PodUnschedulable         actors/scheduler/actor/scheduler_component.cpp: entity Pod/<key>,
//                            PluginReason per failure (plugin, reason, nodes), source scheduler
//   NodeBatchResourceUpdated actors/slo_controller/actor/slo_controller_component.cpp: entity
//                            Node/<node>, source "slo-controller"
//   PodEvicted               actors/koordlet/actor/koordlet_component.cpp: entity Pod/<key>
//   NodeSLOUpdated           actors/slo_controller/actor/slo_controller_component.cpp: entity
//                            Node/<node>, source "slo-controller"
// Each record gets its log offset written in, as the log does at append.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "messages/codec.hpp"

namespace colony::kube::testing {

using messages::byte_buffer;

inline byte_buffer with_offset(byte_buffer b, std::uint64_t offset) {
  if (!messages::patch_offset(b, offset)) b.clear();
  return b;
}

inline byte_buffer pod_scheduled(std::uint64_t offset, const std::string& pod,
                                 const std::string& node, std::int64_t time_ms = 1'000) {
  messages::event_builder b;
  auto& fbb = b.fbb();
  const std::int64_t proposal = static_cast<std::int64_t>(offset) - 1;
  resource_list req;
  req.cpu_milli = 100;
  req.memory_bytes = 64ll << 20;
  req.pods = 1;
  auto p = fbb.CreateString(pod);
  auto nd = fbb.CreateString(node);
  auto rq = b.resources(req);
  std::vector<flatbuffers::Offset<wire::DeviceAllocation>> dv;
  auto dvv = fbb.CreateVector(dv);
  auto sched = fbb.CreateString("koord-scheduler");
  auto payload = wire::CreatePodScheduled(fbb, p, nd, proposal, rq, dvv, sched);
  return with_offset(b.finish(messages::header{event_time{time_ms}, wire::EntityKind::Node, node,
                                               proposal, "node"},
                              payload),
                     offset);
}

struct reason_row {
  std::string plugin, reason;
  std::int32_t nodes;
};

inline byte_buffer pod_unschedulable(std::uint64_t offset, const std::string& pod,
                                     const std::vector<reason_row>& rows,
                                     std::int64_t time_ms = 2'000) {
  messages::event_builder b;
  auto& fbb = b.fbb();
  std::vector<flatbuffers::Offset<wire::PluginReason>> reasons;
  for (const auto& r : rows)
    reasons.push_back(
        wire::CreatePluginReasonDirect(fbb, r.plugin.c_str(), r.reason.c_str(), r.nodes));
  auto p = fbb.CreateString(pod);
  auto rv = fbb.CreateVector(reasons);
  auto sched = fbb.CreateString("koord-scheduler");
  auto payload = wire::CreatePodUnschedulable(fbb, p, 1, rv, sched);
  return with_offset(
      b.finish(messages::header{event_time{time_ms}, wire::EntityKind::Pod, pod,
                                static_cast<std::int64_t>(offset) - 1, "koord-scheduler"},
               payload),
      offset);
}

inline byte_buffer node_batch(std::uint64_t offset, const std::string& node,
                              std::int64_t batch_cpu_milli, std::int64_t batch_memory_bytes,
                              std::int64_t mid_cpu_milli = 0, std::int64_t mid_memory_bytes = 0) {
  messages::event_builder b;
  auto& fbb = b.fbb();
  std::vector<flatbuffers::Offset<wire::Term>> terms;
  {
    wire::TermBuilder tb(fbb);
    tb.add_value(batch_cpu_milli);
    tb.add_known(wire::TermName::result);
    tb.add_group(wire::TermGroup::batch_cpu);
    terms.push_back(tb.Finish());
  }
  const auto term_vec = fbb.CreateVector(terms);
  const auto nn = fbb.CreateString(node);
  const auto cp = fbb.CreateString("usage");
  const auto mp = fbb.CreateString("usage");
  const auto payload = wire::CreateNodeBatchResourceUpdated(
      fbb, nn, batch_cpu_milli, batch_memory_bytes, mid_cpu_milli, mid_memory_bytes, cp, mp, false,
      term_vec);
  return with_offset(
      b.finish(messages::header{event_time{3'000}, wire::EntityKind::Node, node,
                                static_cast<std::int64_t>(offset) - 1, "slo-controller"},
               payload),
      offset);
}

// QuotaRuntimeUpdated as actors/quota/actor/quota_events.cpp builds it: entity
// ElasticQuota/<name>, source "elastic-quota"; runtime_keys names cpu and memory.
inline byte_buffer quota_runtime(std::uint64_t offset, const std::string& quota,
                                 const resource_list& runtime, const resource_list& used,
                                 const resource_list& request) {
  messages::event_builder b;
  auto& fbb = b.fbb();
  const auto n = fbb.CreateString(quota);
  const auto rt = b.resources(runtime);
  const auto u = b.resources(used);
  const auto rq = b.resources(request);
  const auto npu = b.resources(resource_list{});
  const auto payload = wire::CreateQuotaRuntimeUpdated(fbb, n, rt, u, rq, npu, 0b11);
  return with_offset(
      b.finish(messages::header{event_time{4'000}, wire::EntityKind::ElasticQuota, quota,
                                static_cast<std::int64_t>(offset) - 1, "elastic-quota"},
               payload),
      offset);
}

// QuotaUpserted as koord-manager's profile controller writes a tree root (source
// "koord-manager/quota-profile", causation offset - 1; causation -1 and source "bridge/k8s" for
// the bridge's observation of the object). Keys: cpu and memory (bits 0 and 1).
inline byte_buffer quota_root(std::uint64_t offset, const std::string& name, const std::string& ns,
                              const std::vector<std::pair<std::string, std::string>>& labels,
                              const std::vector<std::pair<std::string, std::string>>& annotations,
                              const resource_list& min, const resource_list& max,
                              bool observed = false) {
  messages::event_builder b;
  auto& fbb = b.fbb();
  const auto n = fbb.CreateString(name);
  const auto nsp = fbb.CreateString(ns);
  const auto lv = b.key_values(labels);
  const auto av = b.key_values(annotations);
  const auto mi = b.resources(min);
  const auto ma = b.resources(max);
  wire::QuotaUpsertedBuilder qb(fbb);
  qb.add_name(n);
  qb.add_namespace_(nsp);
  qb.add_is_parent(true);
  qb.add_min(mi);
  qb.add_max(ma);
  qb.add_labels(lv);
  qb.add_annotations(av);
  qb.add_min_keys(0b11);
  qb.add_max_keys(0b11);
  const auto payload = qb.Finish();
  return with_offset(
      b.finish(messages::header{event_time{4'000}, wire::EntityKind::ElasticQuota, name,
                                observed ? -1 : static_cast<std::int64_t>(offset) - 1,
                                observed ? "bridge/k8s" : "koord-manager/quota-profile"},
               payload),
      offset);
}

inline byte_buffer pod_evicted(std::uint64_t offset, const std::string& pod,
                               const std::string& node) {
  messages::event_builder b;
  auto& fbb = b.fbb();
  std::vector<flatbuffers::Offset<wire::Term>> terms;
  const auto tv = fbb.CreateVector(terms);
  const auto pn = fbb.CreateString(pod);
  const auto nn = fbb.CreateString(node);
  const auto msg = fbb.CreateString("evict pod by memory usage");
  resource_list req;
  req.memory_bytes = 64ll << 20;
  const auto rel = b.resources(req);
  return with_offset(
      b.finish(
          messages::header{event_time{4'000}, wire::EntityKind::Pod, pod,
                           static_cast<std::int64_t>(offset) - 1, "koordlet/" + node},
          wire::CreatePodEvicted(fbb, pn, nn, wire::EvictionReason::MemoryEvict, msg, tv, rel)),
      offset);
}

// An observation the sink ignores.
inline byte_buffer pod_started(std::uint64_t offset, const std::string& pod,
                               const std::string& node) {
  messages::event_builder b;
  auto& fbb = b.fbb();
  auto p = fbb.CreateString(pod);
  auto nd = fbb.CreateString(node);
  auto payload = wire::CreatePodStarted(fbb, p, nd);
  return with_offset(
      b.finish(messages::header{event_time{5'000}, wire::EntityKind::Pod, pod, -1, "bridge/k8s"},
               payload),
      offset);
}

inline byte_buffer node_slo_updated(std::uint64_t offset, const std::string& node,
                                    const std::string& spec_json, std::int64_t time_ms = 3'000) {
  messages::event_builder b;
  auto& fbb = b.fbb();
  auto sj = fbb.CreateString(spec_json);
  auto payload = wire::CreateNodeSLOUpdated(fbb, sj);
  return with_offset(
      b.finish(messages::header{event_time{time_ms}, wire::EntityKind::Node, node,
                                static_cast<std::int64_t>(offset) - 1, "slo-controller"},
               payload),
      offset);
}

}  // namespace colony::kube::testing
