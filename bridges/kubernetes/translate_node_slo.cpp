// NodeSLO (slo.koordinator.sh/v1alpha1, cluster-scoped, named after its node) -> NodeSLOUpdated,
// for a koordlet (translate_options::koordlet_node): the spec the slo-controller rendered, read
// back as Koordinator's koordlet reads its NodeSLO (pkg/koordlet/statesinformer/impl/
// states_nodeslo.go). The spec is carried as compact JSON (keys sorted), the shape the
// slo-controller's NodeSLOUpdated has (apis/slo/v1alpha1/nodeslo_types.go NodeSLOSpec); the
// koordlet component parses it (slo_controller::parse_node_slo_spec).
#include "bridges/kubernetes/translate_internal.hpp"

namespace colony::kube::translate_internal {

json node_slo_projection(const json& o) {
  const json* spec = member(o, "spec");
  return spec != nullptr ? *spec : json::object();
}

result<event_list> translate_node_slo(const request& r) {
  auto ref = read_ref(object_kind::node_slo, *r.object, false);
  if (!ref) return tl::unexpected(ref.error());
  event_list out;
  // A NodeSLO deleted: the koordlet keeps the strategies in force, as its statesinformer keeps
  // the last NodeSLO it had (no event clears them).
  if (r.what == op::deleted) return out;
  const json* spec = member(*r.object, "spec");
  if (spec != nullptr && !spec->is_object()) return invalid(*ref, "spec", "must be an object");
  const std::string text = spec != nullptr ? spec->dump() : std::string("{}");
  messages::event_builder b;
  auto& fbb = b.fbb();
  const auto s = fbb.CreateString(text);
  const auto payload = wire::CreateNodeSLOUpdated(fbb, s);
  out.push_back(b.finish(header(r.time, wire::EntityKind::Node, ref->name, *r.options), payload));
  return out;
}

}  // namespace colony::kube::translate_internal
