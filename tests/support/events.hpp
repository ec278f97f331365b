// Helpers that build real events for tests.
#pragma once

#include <string>

#include "messages/codec.hpp"
#include "tests/support/resources.hpp"

namespace colony::testing {

inline messages::byte_buffer node_registered(messages::event_builder& b, const std::string& name,
                                             std::int64_t cpu_milli, std::int64_t mem_bytes,
                                             std::int64_t t_ms = 0) {
  const auto cap = cpu_mem(cpu_milli, mem_bytes, 110);
  auto& f = b.fbb();
  auto n = f.CreateString(name);
  auto c = b.resources(cap);
  auto a = b.resources(cap);
  wire::NodeRegisteredBuilder nb(f);
  nb.add_name(n);
  nb.add_capacity(c);
  nb.add_allocatable(a);
  return b.finish({event_time{t_ms}, wire::EntityKind::Node, name, -1, "test"}, nb.Finish());
}

inline messages::byte_buffer pod_submitted(messages::event_builder& b, const std::string& pod,
                                           std::int64_t cpu_milli, std::int64_t mem_bytes,
                                           std::int64_t t_ms = 0) {
  const auto req = cpu_mem(cpu_milli, mem_bytes, 1);
  auto& f = b.fbb();
  auto n = f.CreateString(pod);
  auto r = b.resources(req);
  wire::PodSubmittedBuilder pb(f);
  pb.add_name(n);
  pb.add_requests(r);
  return b.finish({event_time{t_ms}, wire::EntityKind::Pod, pod, -1, "test"}, pb.Finish());
}

inline messages::byte_buffer pod_scheduled(messages::event_builder& b, const std::string& pod,
                                           const std::string& node, std::int64_t cpu_milli,
                                           std::int64_t mem_bytes, std::int64_t t_ms = 0) {
  const auto req = cpu_mem(cpu_milli, mem_bytes, 1);
  auto& f = b.fbb();
  auto p = f.CreateString(pod);
  auto n = f.CreateString(node);
  auto r = b.resources(req);
  wire::PodScheduledBuilder sb(f);
  sb.add_pod(p);
  sb.add_node(n);
  sb.add_requests(r);
  return b.finish({event_time{t_ms}, wire::EntityKind::Node, node, -1, "test"}, sb.Finish());
}

inline messages::byte_buffer pod_finished(messages::event_builder& b, const std::string& pod,
                                          const std::string& node, std::int64_t t_ms = 0) {
  auto off =
      wire::CreatePodFinishedDirect(b.fbb(), pod.c_str(), node.c_str(), wire::PodPhase::Succeeded);
  return b.finish({event_time{t_ms}, wire::EntityKind::Pod, pod, -1, "test"}, off);
}

}  // namespace colony::testing
