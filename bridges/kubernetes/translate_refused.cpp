// A refused object -> ObjectRefused (schema v3): what a bridge appends instead of the object's
// observations when a translate_* call refused it, naming the object and the wrong field.
#include <utility>

#include "bridges/kubernetes/translate_internal.hpp"

namespace colony::kube {

namespace ti = translate_internal;

namespace {

// metadata.<key> when it is a string; "" otherwise (the refusal may be about metadata itself).
std::string metadata_string(const nlohmann::json& object, std::string_view key) {
  const nlohmann::json* v = ti::member(ti::member(object, "metadata"), key);
  return v != nullptr && v->is_string() ? v->get<std::string>() : std::string();
}

// The entity the kind's own observations are keyed to (translate_<kind>.cpp), so that
// `colony log dump --entity` shows a refusal beside them.
std::pair<wire::EntityKind, std::string> entity_of(object_kind kind, const std::string& ns,
                                                   const std::string& name) {
  switch (kind) {
    case object_kind::node:
    case object_kind::node_metric:             // a NodeMetric is named after its node
    case object_kind::node_slo:                // so is a NodeSLO
    case object_kind::node_resource_topology:  // and a NodeResourceTopology
      return {wire::EntityKind::Node, name};
    case object_kind::pod:
      return {wire::EntityKind::Pod, ns.empty() ? name : ns + "/" + name};
    case object_kind::elastic_quota:  // keyed by name alone, as the quota tree is
      return {wire::EntityKind::ElasticQuota, name};
    case object_kind::config_map:  // only the slo-controller-config ConfigMap is watched
      return {wire::EntityKind::Cluster, "slo-controller"};
    case object_kind::priority_class:
    case object_kind::cluster_colocation_profile:
      return {wire::EntityKind::Cluster, "admission"};
    case object_kind::reservation:  // cluster-scoped, keyed by name
      return {wire::EntityKind::Reservation, name};
    case object_kind::pod_migration_job:  // cluster-scoped, keyed by name as its job records
      return {wire::EntityKind::PodMigrationJob, name};
    default:
      break;
  }
  // A recorded kind's ObjectObserved entity, by its CRD's scope (a cluster-scoped object refused
  // for carrying a namespace is still keyed as its observations would be).
  if (const auto info = recorded_kind(kind))
    return {wire::EntityKind::Object, recorded_key(kind, info->namespaced ? ns : "", name)};
  return {wire::EntityKind::Cluster, std::string(to_string(kind))};
}

}  // namespace

messages::byte_buffer translate_refused(object_kind kind, const nlohmann::json& object,
                                        const error& refusal, event_time t,
                                        const translate_options& options) {
  const std::string ns = metadata_string(object, "namespace");
  const std::string name = metadata_string(object, "name");
  // translate's `where` is "<Kind> <key>: <field>" (object_ref::where); neither a kind nor a
  // Kubernetes name holds ": ", so the field is what follows the first one. None: the object.
  std::string field;
  if (const auto colon = refusal.where.find(": "); colon != std::string::npos)
    field = refusal.where.substr(colon + 2);
  const auto [entity_kind, entity_key] = entity_of(kind, ns, name);

  messages::event_builder b;
  auto& fbb = b.fbb();
  // Schema field order, one creating call per statement (docs/events.md).
  const auto api_kind = fbb.CreateString(to_string(kind));
  const auto nsp = fbb.CreateString(ns);
  const auto nm = fbb.CreateString(name);
  const auto uid = fbb.CreateString(metadata_string(object, "uid"));
  const auto rv = fbb.CreateString(metadata_string(object, "resourceVersion"));
  const auto fld = fbb.CreateString(field);
  const auto reason = fbb.CreateString(refusal.message);
  const auto code = fbb.CreateString(colony::to_string(refusal.code));
  const auto payload =
      wire::CreateObjectRefused(fbb, api_kind, nsp, nm, uid, rv, fld, reason, code);
  return b.finish(ti::header(t, entity_kind, entity_key, options), payload);
}

}  // namespace colony::kube
