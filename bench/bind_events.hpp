// The ~200-byte event stream of the replay benchmarks (kafka.replay, entities.replay_binds), in
// one place so that both fold the same records.
#pragma once

#include <cstdint>
#include <string>

#include "colony_generated.h"
#include "messages/codec.hpp"
#include "messages/resources.hpp"
#include "messages/units.hpp"

namespace colony::bench {

// Event i: a PodScheduled of pod (i % pods) on node (i % 5000), keyed by the node. Pods are
// reused every `pods` events, so a long stream keeps a steady entity population (5000 nodes +
// `pods` pods) instead of one new actor per event, and rebinding a bound pod is the common case.
inline messages::byte_buffer pod_scheduled_200(messages::event_builder& b, std::uint64_t i,
                                               std::uint64_t pods = 50000) {
  resource_list req;
  req.cpu_milli = 100 + static_cast<std::int64_t>(i % 4000);
  req.memory_bytes = 256 * mib;
  req.pods = 1;
  const auto pod = "default/bench-pod-" + std::to_string(i % pods);
  const auto node = "node-" + std::to_string(i % 5000);
  auto& f = b.fbb();
  const auto p = f.CreateString(pod);
  const auto n = f.CreateString(node);
  const auto r = b.resources(req);
  const auto s = f.CreateString("bench");
  wire::PodScheduledBuilder sb(f);
  sb.add_pod(p);
  sb.add_node(n);
  sb.add_requests(r);
  sb.add_scheduler(s);
  return b.finish(
      {event_time{static_cast<std::int64_t>(i)}, wire::EntityKind::Node, node, -1, "bench"},
      sb.Finish());
}

}  // namespace colony::bench
