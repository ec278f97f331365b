#include "bridges/kubernetes/translate.hpp"

#include <array>
#include <exception>
#include <utility>

#include "bridges/kubernetes/translate_internal.hpp"

namespace colony::kube {

namespace ti = translate_internal;
using ti::json;

namespace {

constexpr std::array<std::pair<object_kind, std::string_view>, 14> kinds = {{
    {object_kind::node, "Node"},
    {object_kind::pod, "Pod"},
    {object_kind::priority_class, "PriorityClass"},
    {object_kind::config_map, "ConfigMap"},
    {object_kind::cluster_colocation_profile, "ClusterColocationProfile"},
    {object_kind::elastic_quota, "ElasticQuota"},
    {object_kind::node_metric, "NodeMetric"},
    {object_kind::elastic_quota_profile, "ElasticQuotaProfile"},
    {object_kind::reservation, "Reservation"},
    {object_kind::pod_migration_job, "PodMigrationJob"},
    {object_kind::pod_group, "PodGroup"},
    {object_kind::device, "Device"},
    {object_kind::node_resource_topology, "NodeResourceTopology"},
    {object_kind::node_slo, "NodeSLO"},
}};

// Why a known kind has no event (docs/kubernetes-bridge.md "Gaps").
std::string_view gap_of(object_kind k, const translate_options& o) noexcept {
  switch (k) {
    case object_kind::node_slo:
      if (!o.koordlet_node.empty()) return {};
      return "NodeSLOs are the slo-controller's output (NodeSLOUpdated, written by the sink); "
             "only a koordlet (translate_options::koordlet_node) reads them back";
    default:
      return {};
  }
}

bool namespaced(object_kind k) noexcept {
  switch (k) {
    case object_kind::pod:
    case object_kind::config_map:
    case object_kind::elastic_quota:
    case object_kind::elastic_quota_profile:
    case object_kind::pod_group:
      return true;
    default:
      return false;
  }
}

// Runs a translation with nlohmann's exceptions (and any other) turned into values.
template <class F>
result<event_list> guarded(object_kind kind, F&& f) {
  try {
    return f();
  } catch (const json::exception& e) {
    return fail(errc::invalid_input, e.what(), std::string(to_string(kind)));
  } catch (const std::exception& e) {
    return fail(errc::internal, e.what(), std::string(to_string(kind)));
  }
}

result<event_list> dispatch(object_kind kind, const ti::request& r) {
  if (!gap_of(kind, *r.options).empty()) {
    // Named as precisely as the object allows; a nameless one is still refused by kind.
    ti::object_ref ref;
    ref.kind = kind;
    ref.name = "<unnamed>";
    if (auto named = ti::read_ref(kind, *r.object, namespaced(kind))) ref = *named;
    return ti::not_translated(ref, std::string(gap_of(kind, *r.options)));
  }
  switch (kind) {
    case object_kind::node:
      return ti::translate_node(r);
    case object_kind::pod:
      return ti::translate_pod(r);
    case object_kind::priority_class:
      return ti::translate_priority_class(r);
    case object_kind::config_map:
      return ti::translate_config_map(r);
    case object_kind::cluster_colocation_profile:
      return ti::translate_colocation_profile(r);
    case object_kind::elastic_quota:
      return ti::translate_elastic_quota(r);
    case object_kind::node_metric:
      return ti::translate_node_metric(r);
    case object_kind::node_slo:
      return ti::translate_node_slo(r);
    case object_kind::reservation:
      return ti::translate_reservation(r);
    case object_kind::pod_migration_job:
      return ti::translate_migration_job(r);
    case object_kind::node_resource_topology:
      return ti::translate_node_resource_topology(r);
    case object_kind::elastic_quota_profile:
    case object_kind::pod_group:
    case object_kind::device:
      return ti::translate_recorded(kind, r);
    default:
      break;
  }
  return fail(errc::internal, "no translator for kind " + std::string(to_string(kind)));
}

// The generic projection of a kind without a translation: the object without the metadata
// that changes on every write.
json without_volatile(const json& o) {
  if (!o.is_object()) return o;
  json p = o;
  if (auto md = p.find("metadata"); md != p.end() && md->is_object()) {
    md->erase("resourceVersion");
    md->erase("managedFields");
    md->erase("generation");
  }
  return p;
}

}  // namespace

std::string_view to_string(object_kind k) noexcept {
  for (const auto& [kind, name] : kinds)
    if (kind == k) return name;
  return "Unknown";
}

result<object_kind> parse_object_kind(std::string_view kind) {
  for (const auto& [k, name] : kinds)
    if (name == kind) return k;
  return fail(errc::invalid_input, "kind " + ti::quote_text(kind) + " is not one the bridge knows",
              "kind");
}

std::optional<recorded_kind_info> recorded_kind(object_kind k) noexcept {
  // Group, version, plural and scope of the CRDs a Koordinator cluster installs (Reservation's
  // and PodMigrationJob's too: they are translated to their own records, but listed and scoped
  // like the others) (koordinator config/crd/bases: quota.koordinator.sh_elasticquotaprofiles.yaml,
  // scheduling.koordinator.sh_{reservations,podmigrationjobs,devices}.yaml,
  // scheduling.sigs.k8s.io_podgroups.yaml from scheduler-plugins).
  switch (k) {
    case object_kind::elastic_quota_profile:
      return recorded_kind_info{"quota.koordinator.sh/v1alpha1", "elasticquotaprofiles", true};
    case object_kind::reservation:
      return recorded_kind_info{"scheduling.koordinator.sh/v1alpha1", "reservations", false};
    case object_kind::pod_migration_job:
      return recorded_kind_info{"scheduling.koordinator.sh/v1alpha1", "podmigrationjobs", false};
    case object_kind::pod_group:
      return recorded_kind_info{"scheduling.sigs.k8s.io/v1alpha1", "podgroups", true};
    case object_kind::device:
      return recorded_kind_info{"scheduling.koordinator.sh/v1alpha1", "devices", false};
    default:
      return std::nullopt;
  }
}

std::string recorded_key(object_kind k, std::string_view ns, std::string_view name) {
  std::string key(to_string(k));
  key += '/';
  if (!ns.empty()) {
    key += ns;
    key += '/';
  }
  key += name;
  return key;
}

std::string_view to_string(change c) noexcept {
  switch (c) {
    case change::none:
      return "none";
    case change::condition:
      return "condition";
    case change::relevant:
      return "relevant";
  }
  return "unknown";
}

change change_kind(object_kind kind, const json& old_object, const json& new_object,
                   const translate_options& options) {
  try {
    switch (kind) {
      case object_kind::node:
        if (ti::node_projection(old_object, options) != ti::node_projection(new_object, options))
          return change::relevant;
        return ti::node_condition_projection(old_object) ==
                       ti::node_condition_projection(new_object)
                   ? change::none
                   : change::condition;
      case object_kind::pod:
        return ti::pod_projection(old_object) == ti::pod_projection(new_object) ? change::none
                                                                                : change::relevant;
      case object_kind::node_slo:
        return ti::node_slo_projection(old_object) == ti::node_slo_projection(new_object)
                   ? change::none
                   : change::relevant;
      case object_kind::priority_class:
        return ti::priority_class_projection(old_object) ==
                       ti::priority_class_projection(new_object)
                   ? change::none
                   : change::relevant;
      case object_kind::config_map:
        return ti::config_map_projection(old_object, options) ==
                       ti::config_map_projection(new_object, options)
                   ? change::none
                   : change::relevant;
      case object_kind::cluster_colocation_profile:
        return ti::colocation_profile_projection(old_object) ==
                       ti::colocation_profile_projection(new_object)
                   ? change::none
                   : change::relevant;
      case object_kind::elastic_quota:
        return ti::elastic_quota_projection(old_object) == ti::elastic_quota_projection(new_object)
                   ? change::none
                   : change::relevant;
      case object_kind::node_metric:
        return ti::node_metric_projection(old_object) == ti::node_metric_projection(new_object)
                   ? change::none
                   : change::relevant;
      case object_kind::reservation:
        return ti::reservation_projection(old_object) == ti::reservation_projection(new_object)
                   ? change::none
                   : change::relevant;
      case object_kind::pod_migration_job:
        return ti::migration_job_projection(old_object) == ti::migration_job_projection(new_object)
                   ? change::none
                   : change::relevant;
      case object_kind::node_resource_topology:
        return ti::node_resource_topology_projection(old_object) ==
                       ti::node_resource_topology_projection(new_object)
                   ? change::none
                   : change::relevant;
      case object_kind::elastic_quota_profile:
      case object_kind::pod_group:
      case object_kind::device:
        return ti::recorded_projection(old_object) == ti::recorded_projection(new_object)
                   ? change::none
                   : change::relevant;
      default:
        return without_volatile(old_object) == without_volatile(new_object) ? change::none
                                                                            : change::relevant;
    }
  } catch (const std::exception&) {
    return change::relevant;  // let the translation name what is wrong
  }
}

result<event_list> translate_added(object_kind kind, const json& object, event_time t,
                                   const translate_options& options) {
  return guarded(kind, [&]() -> result<event_list> {
    ti::request r;
    r.what = ti::op::added;
    r.object = &object;
    r.time = t;
    r.options = &options;
    return dispatch(kind, r);
  });
}

result<event_list> translate_modified(object_kind kind, const json& old_object,
                                      const json& new_object, event_time t,
                                      const translate_options& options) {
  return guarded(kind, [&]() -> result<event_list> {
    ti::request r;
    r.what = ti::op::modified;
    r.old_object = &old_object;
    r.object = &new_object;
    r.changed = change_kind(kind, old_object, new_object, options);
    r.time = t;
    r.options = &options;
    if (r.changed == change::none) return event_list{};
    return dispatch(kind, r);
  });
}

result<event_list> translate_deleted(object_kind kind, const json& last, event_time t,
                                     const translate_options& options) {
  return guarded(kind, [&]() -> result<event_list> {
    ti::request r;
    r.what = ti::op::deleted;
    r.object = &last;
    r.time = t;
    r.options = &options;
    return dispatch(kind, r);
  });
}

}  // namespace colony::kube
