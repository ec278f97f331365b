#include "cmd/colony/synthetic.hpp"

#include <string>

#include <xxhash.h>

namespace colony::cli {

namespace {
std::uint64_t mix(std::uint64_t seed, std::uint64_t x) {
  std::uint64_t in[2] = {seed, x};
  return XXH3_64bits(in, sizeof(in));
}
}  // namespace

messages::byte_buffer synthetic_event(messages::event_builder& b, std::uint64_t seed,
                                      std::uint64_t seq) {
  auto& f = b.fbb();
  messages::header h;
  h.time = event_time{static_cast<std::int64_t>(seq) * 1000};
  h.source = "generate";
  if (seq < synthetic_nodes) {
    std::string name = "gen-node-" + std::to_string(seq);
    resource_list cap;
    cap.cpu_milli = 32000;
    cap.memory_bytes = 128 * gib;
    cap.pods = 110;
    auto n = f.CreateString(name);
    auto c = b.resources(cap);
    auto a = b.resources(cap);
    wire::NodeRegisteredBuilder nb(f);
    nb.add_name(n);
    nb.add_capacity(c);
    nb.add_allocatable(a);
    auto off = nb.Finish();
    h.kind = wire::EntityKind::Node;
    h.key = name;
    return b.finish(h, off);
  }
  const std::uint64_t j = seq - synthetic_nodes;
  const std::uint64_t pod = j / 3;
  const std::uint64_t r = mix(seed, pod);
  std::string pod_key = "default/gen-pod-" + std::to_string(pod);
  std::string node = "gen-node-" + std::to_string(r % synthetic_nodes);
  resource_list req;
  req.cpu_milli = 100 + static_cast<std::int64_t>((r >> 8) % 3900);
  req.memory_bytes = (64 + static_cast<std::int64_t>((r >> 20) % 8000)) * mib;
  req.pods = 1;
  h.kind = wire::EntityKind::Pod;
  h.key = pod_key;
  switch (j % 3) {
    case 0: {
      auto n = f.CreateString(pod_key);
      auto rq = b.resources(req);
      wire::PodSubmittedBuilder pb(f);
      pb.add_name(n);
      pb.add_requests(rq);
      pb.add_priority(static_cast<std::int32_t>(r % 10000));
      pb.add_has_priority(true);
      return b.finish(h, pb.Finish());
    }
    case 1: {
      auto p = f.CreateString(pod_key);
      auto nd = f.CreateString(node);
      auto rq = b.resources(req);
      wire::PodScheduledBuilder sb(f);
      sb.add_pod(p);
      sb.add_node(nd);
      sb.add_requests(rq);
      h.kind = wire::EntityKind::Node;
      h.key = node;
      h.causation = static_cast<std::int64_t>(seq - 1);
      return b.finish(h, sb.Finish());
    }
    default: {
      auto off = wire::CreatePodFinishedDirect(f, pod_key.c_str(), node.c_str(),
                                               wire::PodPhase::Succeeded);
      return b.finish(h, off);
    }
  }
}

}  // namespace colony::cli
