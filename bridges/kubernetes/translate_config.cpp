// Configuration objects -> ConfigUpdated: PriorityClass, the slo-controller-config ConfigMap,
// ClusterColocationProfile. Each becomes the payload the consuming component already reads
// (actors/admission/actor/colocation_profile_component.hpp, actors/slo_controller/actor/
// slo_controller_component.hpp, actors/koordlet/actor/koordlet_component.cpp), keyed as the sim
// keys it (sim/trace_source.cpp configuration()).
#include <array>
#include <limits>

#include "bridges/kubernetes/translate_internal.hpp"
#include "messages/qos.hpp"

namespace colony::kube::translate_internal {

namespace {

// The ConfigUpdated kinds and envelope keys the components match on.
constexpr std::string_view kind_priority_class = "PriorityClass";
constexpr std::string_view kind_slo_config = "slo-controller-config";
constexpr std::string_view kind_profile = "ClusterColocationProfile";
constexpr std::string_view key_admission = "admission";
constexpr std::string_view key_slo_controller = "slo-controller";

messages::byte_buffer config_updated(std::string_view entity_key, std::string_view kind,
                                     std::string_view name, const json* spec, event_time t,
                                     const translate_options& opt) {
  messages::event_builder b;
  auto& fbb = b.fbb();
  const auto k = fbb.CreateString(kind);
  const auto n = fbb.CreateString(name);
  // json objects dump with sorted keys: the same object gives the same text.
  flatbuffers::Offset<flatbuffers::String> s;
  if (spec != nullptr) s = fbb.CreateString(spec->dump());
  const auto payload = wire::CreateConfigUpdated(fbb, k, n, s, spec == nullptr);
  return b.finish(header(t, wire::EntityKind::Cluster, entity_key, opt), payload);
}

// metadata with only what the components read (name, labels, annotations): resourceVersion,
// uid, timestamps and managedFields would make every write a different record.
result<json> stable_metadata(const json& o, const object_ref& ref) {
  json md = json::object();
  md["name"] = ref.name;
  const json* m = member(o, "metadata");
  auto labels = string_map(member(m, "labels"), ref, "metadata.labels");
  if (!labels) return tl::unexpected(labels.error());
  auto annotations = string_map(member(m, "annotations"), ref, "metadata.annotations");
  if (!annotations) return tl::unexpected(annotations.error());
  if (!labels->empty())
    md["labels"] = json(std::map<std::string, std::string>(labels->begin(), labels->end()));
  if (!annotations->empty())
    md["annotations"] =
        json(std::map<std::string, std::string>(annotations->begin(), annotations->end()));
  return md;
}

// metav1.LabelSelector as LabelSelectorAsSelector accepts it
// (apimachinery/pkg/apis/meta/v1/helpers.go): Koordinator matches every pod on a selector it
// cannot convert, so a bad one is refused here.
result<void> check_selector(const json* sel, const object_ref& ref, const std::string& field) {
  if (sel == nullptr) return {};
  if (!sel->is_object()) return invalid(ref, field, "must be an object");
  auto labels = string_map(member(sel, "matchLabels"), ref, field + ".matchLabels");
  if (!labels) return tl::unexpected(labels.error());
  const json* exprs = member(sel, "matchExpressions");
  if (exprs == nullptr) return {};
  if (!exprs->is_array()) return invalid(ref, field + ".matchExpressions", "must be a list");
  for (std::size_t i = 0; i < exprs->size(); ++i) {
    const json& e = (*exprs)[i];
    const std::string f = field + ".matchExpressions" + index(i);
    if (!e.is_object()) return invalid(ref, f, "must be an object");
    auto key = string_member(&e, "key", ref, f + ".key");
    if (!key) return tl::unexpected(key.error());
    if (key->empty()) return invalid(ref, f + ".key", "is required");
    auto op = string_member(&e, "operator", ref, f + ".operator");
    if (!op) return tl::unexpected(op.error());
    const json* values = member(e, "values");
    if (values != nullptr && !values->is_array())
      return invalid(ref, f + ".values", "must be a list");
    for (std::size_t j = 0; values != nullptr && j < values->size(); ++j)
      if (!(*values)[j].is_string())
        return invalid(ref, f + ".values" + index(j), "must be a string");
    const std::size_t n = values == nullptr ? 0 : values->size();
    if (*op == "In" || *op == "NotIn") {
      if (n == 0) return invalid(ref, f + ".values", "must be non-empty for operator " + *op);
    } else if (*op == "Exists" || *op == "DoesNotExist") {
      if (n != 0) return invalid(ref, f + ".values", "must be empty for operator " + *op);
    } else {
      return invalid(ref, f + ".operator",
                     quote_text(*op) + " is not In, NotIn, Exists, DoesNotExist");
    }
  }
  return {};
}

}  // namespace

// ---- PriorityClass (scheduling.k8s.io/v1) -------------------------------------------------

json priority_class_projection(const json& o) {
  json p = json::object();
  for (const char* k : {"value", "preemptionPolicy", "globalDefault"}) {
    const json* v = member(o, k);
    p[k] = v != nullptr ? *v : json();
  }
  return p;
}

result<event_list> translate_priority_class(const request& r) {
  const json& o = *r.object;
  auto ref = read_ref(object_kind::priority_class, o, false);
  if (!ref) return tl::unexpected(ref.error());
  event_list out;
  if (r.what == op::deleted) {
    out.push_back(
        config_updated(key_admission, kind_priority_class, ref->name, nullptr, r.time, *r.options));
    return out;
  }
  const json* value = member(o, "value");
  if (value == nullptr) return invalid(*ref, "value", "is required");
  if (!value->is_number_integer() ||
      value->get<std::int64_t>() < std::numeric_limits<std::int32_t>::min() ||
      value->get<std::int64_t>() > std::numeric_limits<std::int32_t>::max())
    return invalid(*ref, "value", value->dump() + " is not an int32");
  auto policy = string_member(&o, "preemptionPolicy", *ref, "preemptionPolicy");
  if (!policy) return tl::unexpected(policy.error());
  auto global = bool_member(&o, "globalDefault", *ref, "globalDefault");
  if (!global) return tl::unexpected(global.error());
  // The shape parse_priority_classes_yaml reads (actors/admission/profile_loader.hpp).
  json spec = json::object();
  spec["apiVersion"] = "scheduling.k8s.io/v1";
  spec["kind"] = kind_priority_class;
  spec["metadata"] = json{{"name", ref->name}};
  spec["value"] = value->get<std::int64_t>();
  if (!policy->empty()) spec["preemptionPolicy"] = *policy;
  if (*global) spec["globalDefault"] = true;
  out.push_back(
      config_updated(key_admission, kind_priority_class, ref->name, &spec, r.time, *r.options));
  return out;
}

// ---- ConfigMap koordinator-system/slo-controller-config ------------------------------------

json config_map_projection(const json& o, const translate_options& opt) {
  const json* md = member(o, "metadata");
  const json* ns = member(md, "namespace");
  const json* name = member(md, "name");
  if (ns == nullptr || name == nullptr || *ns != opt.slo_config_namespace ||
      *name != opt.slo_config_name)
    return json();  // not the slo-controller's: no change is ever relevant
  const json* data = member(o, "data");
  return data != nullptr ? *data : json();
}

result<event_list> translate_config_map(const request& r) {
  const json& o = *r.object;
  auto ref = read_ref(object_kind::config_map, o, true);
  if (!ref) return tl::unexpected(ref.error());
  event_list out;
  const translate_options& opt = *r.options;
  if (ref->ns != opt.slo_config_namespace || ref->name != opt.slo_config_name) return out;
  const std::string name = ref->key();
  if (r.what == op::deleted) {
    out.push_back(config_updated(key_slo_controller, kind_slo_config, name, nullptr, r.time, opt));
    return out;
  }
  // The data map as a JSON object of strings: what the sim writes from its config's
  // sloControllerConfig (sim/sim_config.cpp) and slo_controller::update reads.
  auto data = string_map(member(o, "data"), *ref, "data");
  if (!data) return tl::unexpected(data.error());
  json spec = json::object();
  for (const auto& [k, v] : *data) spec[k] = v;
  out.push_back(config_updated(key_slo_controller, kind_slo_config, name, &spec, r.time, opt));
  return out;
}

// ---- ClusterColocationProfile (config.koordinator.sh/v1alpha1) ---------------------------

json colocation_profile_projection(const json& o) {
  json p = json::object();
  const json* labels = member(member(o, "metadata"), "labels");
  p["labels"] = labels != nullptr ? *labels : json();
  p["annotations"] = kept_annotations(o);
  const json* spec = member(o, "spec");
  p["spec"] = spec != nullptr ? *spec : json();
  return p;
}

result<event_list> translate_colocation_profile(const request& r) {
  const json& o = *r.object;
  auto ref = read_ref(object_kind::cluster_colocation_profile, o, false);
  if (!ref) return tl::unexpected(ref.error());
  event_list out;
  if (r.what == op::deleted) {
    out.push_back(
        config_updated(key_admission, kind_profile, ref->name, nullptr, r.time, *r.options));
    return out;
  }
  const json* spec = member(o, "spec");
  if (spec == nullptr || !spec->is_object()) return invalid(*ref, "spec", "is required");
  if (auto ok = check_selector(member(spec, "namespaceSelector"), *ref, "spec.namespaceSelector");
      !ok)
    return tl::unexpected(ok.error());
  if (auto ok = check_selector(member(spec, "selector"), *ref, "spec.selector"); !ok)
    return tl::unexpected(ok.error());
  // The CRD's enum (apis/config/v1alpha1/cluster_colocation_profile_types.go).
  auto qos = string_member(spec, "qosClass", *ref, "spec.qosClass");
  if (!qos) return tl::unexpected(qos.error());
  if (!qos->empty() && get_pod_qos_class_by_name(*qos) == qos_class::none)
    return invalid(*ref, "spec.qosClass", quote_text(*qos) + " is not LSE, LSR, LS, BE, SYSTEM");
  auto md = stable_metadata(o, *ref);
  if (!md) return tl::unexpected(md.error());
  auto api = string_member(&o, "apiVersion", *ref, "apiVersion");
  if (!api) return tl::unexpected(api.error());
  // One profile object, as parse_profiles_yaml reads it (JSON is YAML); status is left out.
  json doc = json::object();
  doc["apiVersion"] = api->empty() ? "config.koordinator.sh/v1alpha1" : *api;
  doc["kind"] = kind_profile;
  doc["metadata"] = std::move(*md);
  doc["spec"] = *spec;
  out.push_back(config_updated(key_admission, kind_profile, ref->name, &doc, r.time, *r.options));
  return out;
}

}  // namespace colony::kube::translate_internal
