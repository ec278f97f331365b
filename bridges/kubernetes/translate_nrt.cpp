// NodeResourceTopology (topology.node.k8s.io/v1alpha1, cluster-scoped, named after its node)
// -> NodeResourceTopologyUpdated: what NodeNUMAResource reads of it (Koordinator's
// pkg/scheduler/plugins/nodenumaresource/topology_eventhandler.go and topology_options.go): the
// annotations (the CPU topology, the kubelet CPU manager policy, pod-cpu-allocs, the node
// reservation, ...), topologyPolicies, and the zones' allocatable cpu and memory. DELETED: the
// same event with `deleted` set (the node loses its topology, as Koordinator's handler does).
#include <string>
#include <vector>

#include "bridges/kubernetes/translate_internal.hpp"
#include "messages/names.hpp"

namespace colony::kube::translate_internal {

json node_resource_topology_projection(const json& o) {
  json p = json::object();
  p["annotations"] = kept_annotations(o);
  for (const char* k : {"topologyPolicies", "zones"}) {
    const json* v = member(o, k);
    p[k] = v != nullptr ? *v : json();
  }
  return p;
}

result<event_list> translate_node_resource_topology(const request& r) {
  const json& o = *r.object;
  auto ref = read_ref(object_kind::node_resource_topology, o, false);
  if (!ref) return tl::unexpected(ref.error());
  messages::event_builder b;
  auto& fbb = b.fbb();
  auto node = fbb.CreateString(ref->name);
  if (r.what == op::deleted) {
    auto payload = wire::CreateNodeResourceTopologyUpdated(fbb, node, 0, 0, 0, true);
    event_list out;
    out.push_back(b.finish(header(r.time, wire::EntityKind::Node, ref->name, *r.options), payload));
    return out;
  }
  auto annotations = string_map(member(member(o, "metadata"), "annotations"), *ref,
                                "metadata.annotations", {last_applied_annotation});
  if (!annotations) return tl::unexpected(annotations.error());
  std::vector<std::string> policies;
  if (const json* tp = member(o, "topologyPolicies")) {
    if (!tp->is_array()) return invalid(*ref, "topologyPolicies", "must be a list of strings");
    for (std::size_t i = 0; i < tp->size(); ++i) {
      if (!(*tp)[i].is_string())
        return invalid(*ref, "topologyPolicies" + index(i), "must be a string");
      policies.push_back((*tp)[i].get<std::string>());
    }
  }
  struct zone {
    std::string name, type;
    std::int64_t cpu_milli = 0, memory_bytes = 0;
  };
  std::vector<zone> zones;
  if (const json* zs = member(o, "zones")) {
    if (!zs->is_array()) return invalid(*ref, "zones", "must be a list");
    for (std::size_t i = 0; i < zs->size(); ++i) {
      const json& z = (*zs)[i];
      const std::string f = "zones" + index(i);
      if (!z.is_object()) return invalid(*ref, f, "must be an object");
      zone out;
      auto name = string_member(&z, "name", *ref, f + ".name");
      if (!name) return tl::unexpected(name.error());
      auto type = string_member(&z, "type", *ref, f + ".type");
      if (!type) return tl::unexpected(type.error());
      out.name = std::move(*name);
      out.type = std::move(*type);
      if (const json* rs = member(z, "resources")) {
        if (!rs->is_array()) return invalid(*ref, f + ".resources", "must be a list");
        for (std::size_t k = 0; k < rs->size(); ++k) {
          const json& res = (*rs)[k];
          const std::string rf = f + ".resources" + index(k);
          auto rn = string_member(&res, "name", *ref, rf + ".name");
          if (!rn) return tl::unexpected(rn.error());
          if (*rn != names::cpu && *rn != names::memory) continue;  // the resources Colony splits
          const json* alloc = member(res, "allocatable");
          if (alloc == nullptr) return invalid(*ref, rf + ".allocatable", "is required");
          auto v = parse_amount(*rn, *alloc, *ref, rf + ".allocatable");
          if (!v) return tl::unexpected(v.error());
          (*rn == names::cpu ? out.cpu_milli : out.memory_bytes) = *v;
        }
      }
      zones.push_back(std::move(out));
    }
  }
  auto ann = b.key_values(*annotations);
  std::vector<flatbuffers::Offset<flatbuffers::String>> pv;
  for (const auto& p : policies) pv.push_back(fbb.CreateString(p));
  auto pvec = fbb.CreateVector(pv);
  std::vector<flatbuffers::Offset<wire::TopologyZone>> zv;
  for (const auto& z : zones) {
    auto zn = fbb.CreateString(z.name);
    auto zt = fbb.CreateString(z.type);
    zv.push_back(wire::CreateTopologyZone(fbb, zn, zt, z.cpu_milli, z.memory_bytes));
  }
  auto zvec = fbb.CreateVector(zv);
  auto payload = wire::CreateNodeResourceTopologyUpdated(fbb, node, ann, pvec, zvec, false);
  event_list out;
  out.push_back(b.finish(header(r.time, wire::EntityKind::Node, ref->name, *r.options), payload));
  return out;
}

}  // namespace colony::kube::translate_internal
