// Event builders for the ElasticQuota component tests: quotas, labelled pods, pod lifecycle.
// Node, tick and PodScheduled builders come from tests/actors/scheduler_actor/test_events.hpp.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "colony_generated.h"
#include "messages/codec.hpp"
#include "messages/names.hpp"
#include "tests/actors/scheduler_actor/test_events.hpp"
#include "tests/support/resources.hpp"

namespace colony::testing {

struct quota_event_factory {
  messages::event_builder b;
  event_factory pods;

  messages::byte_buffer quota(std::int64_t t, const std::string& name, const resource_list& min,
                              const resource_list& max, const std::string& parent = "",
                              bool is_parent = false) {
    auto& f = b.fbb();
    auto n = f.CreateString(name);
    auto ns = f.CreateString("default");
    auto pa = f.CreateString(parent);
    auto mi = b.resources(min);
    auto ma = b.resources(max);
    wire::QuotaUpsertedBuilder qb(f);
    qb.add_name(n);
    qb.add_namespace_(ns);
    qb.add_parent(pa);
    qb.add_is_parent(is_parent);
    qb.add_min(mi);
    qb.add_max(ma);
    auto p = qb.Finish();
    return b.finish(
        messages::header{event_time{t}, wire::EntityKind::ElasticQuota, name, -1, "test"}, p);
  }
  messages::byte_buffer quota_deleted(std::int64_t t, const std::string& name) {
    auto p = wire::CreateQuotaDeletedDirect(b.fbb(), name.c_str());
    return b.finish(
        messages::header{event_time{t}, wire::EntityKind::ElasticQuota, name, -1, "test"}, p);
  }
  // A pod with the quota label (none when quota is empty) and optionally non-preemptible:
  // the scheduler tests' pod, labelled.
  messages::byte_buffer pod(std::int64_t t, const std::string& name, std::int64_t cpu,
                            std::int64_t mem, const std::string& quota,
                            bool non_preemptible = false) {
    std::vector<std::pair<std::string, std::string>> labels;
    if (!quota.empty()) labels.emplace_back(std::string(names::label_quota_name), quota);
    if (non_preemptible) labels.emplace_back(std::string(names::label_preemptible), "false");
    return pods.pod(t, name, cpu, mem, "koord-scheduler", labels);
  }
  messages::byte_buffer finished(std::int64_t t, const std::string& pod) {
    auto p = wire::CreatePodFinishedDirect(b.fbb(), pod.c_str());
    return b.finish(messages::header{event_time{t}, wire::EntityKind::Pod, pod, -1, "test"}, p);
  }
};

// A component fed built envelopes one batch at a time: stamped with offsets, kept alive (an
// envelope must outlive on_event), handed to the component when it wants the type, then
// on_batch_end; returns what the batch emitted.
template <class Component>
struct quota_component_rig {
  Component c;
  event_factory f;
  quota_event_factory q;
  offset_stamper stamp;
  std::vector<messages::byte_buffer> kept;

  std::vector<messages::byte_buffer> batch(std::vector<messages::byte_buffer> recs) {
    std::vector<messages::byte_buffer> out;
    for (auto& r : recs) {
      kept.push_back(stamp(std::move(r)));
      const auto& env = env_of(kept.back());
      if (c.wants(env.payload_type())) c.on_event(env, out);
    }
    c.on_batch_end(out);
    return out;
  }
};

}  // namespace colony::testing
