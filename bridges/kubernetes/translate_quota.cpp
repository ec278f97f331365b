// ElasticQuota (scheduling.sigs.k8s.io/v1alpha1 with Koordinator's labels) -> QuotaUpserted /
// QuotaDeleted, the payload the quota component and the scheduler's ElasticQuota plugin book
// (actors/quota/actor/quota_events.hpp spec_of).
#include <optional>

#include "bridges/kubernetes/translate_internal.hpp"
#include "messages/names.hpp"

namespace colony::kube::translate_internal {

namespace {

// What koord-scheduler writes back onto the quota as its status
// (pkg/scheduler/plugins/elasticquota/controller.go): Colony publishes it as
// QuotaRuntimeUpdated, so it is neither carried nor a reason for an event.
const std::vector<std::string_view>& status_annotations() {
  static const std::vector<std::string_view> a = {names::annotation_runtime,
                                                  names::annotation_request,
                                                  names::annotation_child_request,
                                                  names::annotation_guaranteed,
                                                  names::annotation_allocated,
                                                  names::annotation_non_preemptible_request,
                                                  names::annotation_non_preemptible_used};
  return a;
}

std::string text_of(const json* list, const std::string& name) {
  const json* v = member(list, name);
  if (v == nullptr) return {};
  return v->is_string() ? v->get<std::string>() : v->dump();
}

// validateQuotaSelfItem (pkg/webhook/elasticquota/quota_topology_check.go): min and max not
// negative (parse_resources), every min key also in max, min <= max per key.
result<void> check_min_max(const json* spec, const amounts& min, const amounts& max,
                           const object_ref& ref) {
  for (const auto& [name, v] : min) {
    auto it = max.find(name);
    if (it == max.end()) return invalid(ref, "spec.min." + name, "has no spec.max." + name);
    if (v > it->second)
      return invalid(ref, "spec.min." + name,
                     "exceeds spec.max." + name + " (" +
                         quote_text(text_of(member(spec, "min"), name)) + " > " +
                         quote_text(text_of(member(spec, "max"), name)) + ")");
  }
  return {};
}

std::optional<std::string_view> find_kv(const kv_list& kvs, std::string_view key) {
  for (const auto& [k, v] : kvs)
    if (k == key) return v;
  return std::nullopt;
}

}  // namespace

json elastic_quota_projection(const json& o) {
  json p = json::object();
  const json* labels = member(member(o, "metadata"), "labels");
  p["labels"] = labels != nullptr ? *labels : json();
  p["annotations"] = kept_annotations(o, status_annotations());
  const json* spec = member(o, "spec");
  p["spec"] = spec != nullptr ? *spec : json();
  return p;
}

result<event_list> translate_elastic_quota(const request& r) {
  const json& o = *r.object;
  // Koordinator's quota tree is keyed by name alone (names are cluster-unique); the namespace
  // is carried in the event.
  auto ref = read_ref(object_kind::elastic_quota, o, true, false);
  if (!ref) return tl::unexpected(ref.error());
  const translate_options& opt = *r.options;
  messages::event_builder b;
  auto& fbb = b.fbb();
  event_list out;
  if (r.what == op::deleted) {
    const auto name = fbb.CreateString(ref->name);
    const auto payload = wire::CreateQuotaDeleted(fbb, name);
    out.push_back(
        b.finish(header(r.time, wire::EntityKind::ElasticQuota, ref->name, opt), payload));
    return out;
  }
  const json* md = member(o, "metadata");
  const std::string ns = member(md, "namespace")->get<std::string>();  // read_ref checked it
  auto labels = string_map(member(md, "labels"), *ref, "metadata.labels");
  if (!labels) return tl::unexpected(labels.error());
  auto annotations =
      string_map(member(md, "annotations"), *ref, "metadata.annotations", status_annotations());
  if (!annotations) return tl::unexpected(annotations.error());
  const json* spec = member(o, "spec");
  if (spec != nullptr && !spec->is_object()) return invalid(*ref, "spec", "must be an object");
  auto min = parse_resources(member(spec, "min"), *ref, "spec.min");
  if (!min) return tl::unexpected(min.error());
  auto max = parse_resources(member(spec, "max"), *ref, "spec.max");
  if (!max) return tl::unexpected(max.error());
  if (auto ok = check_min_max(spec, *min, *max, *ref); !ok) return tl::unexpected(ok.error());
  // The shared weight is a JSON ResourceList in an annotation (apis/extension/elastic_quota.go
  // AnnotationSharedWeight); the quota tree reads the annotation, the typed field mirrors it.
  amounts weight;
  const std::string weight_field =
      "metadata.annotations[" + std::string(names::annotation_shared_weight) + "]";
  if (auto w = find_kv(*annotations, names::annotation_shared_weight); w && !w->empty()) {
    const json parsed = json::parse(*w, nullptr, false);
    if (parsed.is_discarded() || !parsed.is_object())
      return invalid(*ref, weight_field, quote_text(*w) + " is not a JSON ResourceList");
    auto sw = parse_resources(&parsed, *ref, weight_field);
    if (!sw) return tl::unexpected(sw.error());
    weight = std::move(*sw);
  }
  const auto label = [&](std::string_view key) {
    auto v = find_kv(*labels, key);
    return v ? std::string(*v) : std::string();
  };
  const std::string parent = label(names::label_quota_parent);
  const std::string tree = label(names::label_quota_tree_id);
  const bool is_parent = label(names::label_quota_is_parent) == "true";
  // AllowLentResource defaults to true; only "false" turns it off (GetAllowLentResource).
  const bool allow_lent = label(names::label_quota_allow_lent_resource) != "false";
  const split_resources smin = split(*min);
  const split_resources smax = split(*max);
  const split_resources sweight = split(weight);

  const auto name = fbb.CreateString(ref->name);
  const auto nsp = fbb.CreateString(ns);
  const auto par = fbb.CreateString(parent);
  const auto tid = fbb.CreateString(tree);
  const auto rmin = build_resources(b, smin);
  const auto rmax = build_resources(b, smax);
  const auto rweight = build_resources(b, sweight);
  const auto lab = b.key_values(*labels);
  const auto ann = b.key_values(*annotations);
  const auto payload =
      wire::CreateQuotaUpserted(fbb, name, nsp, par, tid, is_parent, allow_lent, rmin, rmax,
                                rweight, lab, ann, smin.keys, smax.keys);
  out.push_back(b.finish(header(r.time, wire::EntityKind::ElasticQuota, ref->name, opt), payload));
  return out;
}

}  // namespace colony::kube::translate_internal
