// koordlet_component::topology_round: the node's NodeResourceTopology report (node_topology.hpp)
// as a NodeResourceTopologyUpdated record, emitted when it differs from the last one, as
// Koordinator's reportNodeTopology updates the object only when isChanged says so.
#include "actors/koordlet/actor/koordlet_component.hpp"

namespace colony::koordlet_actor {

namespace kl = colony::koordlet;

void koordlet_component::topology_round(const wire::Envelope& env,
                                        std::vector<messages::byte_buffer>& out) {
  if (!machine_) return;
  kl::node_topology_inputs in;
  in.machine = &*machine_;
  in.node_reservation = node_reservation_;
  for (const auto& p : pods_.all())
    if (!p.pinned_cpus.empty()) in.pods.push_back({p.qos, p.pinned_cpus});
  auto r = kl::calc_node_topology(in);
  if (!r) {
    topology_error_ = r.error();
    return;
  }
  topology_error_.reset();
  if (topology_reported_ && *topology_reported_ == *r) return;
  auto& fbb = b_.fbb();
  const auto node = b_.key_string(opt_.node);
  const auto ann = b_.key_values(r->annotations);
  std::vector<flatbuffers::Offset<flatbuffers::String>> pv;
  for (const auto& p : r->topology_policies) pv.push_back(fbb.CreateString(p));
  const auto policies = fbb.CreateVector(pv);
  std::vector<flatbuffers::Offset<wire::TopologyZone>> zv;
  for (const auto& z : r->zones) {
    const auto zn = fbb.CreateString(z.name);
    const auto zt = fbb.CreateString(z.type);
    zv.push_back(wire::CreateTopologyZone(fbb, zn, zt, z.cpu_milli, z.memory_bytes));
  }
  const auto zones = fbb.CreateVector(zv);
  out.push_back(
      b_.finish(header(env, wire::EntityKind::Node, opt_.node),
                wire::CreateNodeResourceTopologyUpdated(fbb, node, ann, policies, zones, false)));
  topology_reported_ = std::move(*r);
}

}  // namespace colony::koordlet_actor
