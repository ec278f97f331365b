// NodeMetric (slo.koordinator.sh/v1alpha1) -> NodeMetricReported: the koordlet's status report
// (apis/slo/v1alpha1/nodemetric_types.go; ResourceMap is {"resources": ResourceList, ...},
// apis/slo/v1alpha1/resources.go).
#include <algorithm>
#include <array>
#include <optional>
#include <utility>

#include "bridges/kubernetes/translate_internal.hpp"
#include "messages/priority.hpp"
#include "messages/qos.hpp"

namespace colony::kube::translate_internal {

namespace {

using res_offset = flatbuffers::Offset<wire::Resources>;

// A ResourceMap's resources (usage can never be negative: a report saying so is corrupt).
result<std::optional<split_resources>> resource_map(const json* m, const object_ref& ref,
                                                    const std::string& field) {
  if (m == nullptr) return std::optional<split_resources>();
  if (!m->is_object()) return invalid(ref, field, "must be an object");
  auto a = parse_resources(member(m, "resources"), ref, field + ".resources");
  if (!a) return tl::unexpected(a.error());
  return std::optional<split_resources>(split(*a));
}

struct aggregated {
  std::int64_t duration_ms = 0;
  std::array<std::optional<split_resources>, 5> usage;  // avg, p50, p90, p95, p99
};

constexpr std::array<const char*, 5> aggregation_types = {"avg", "p50", "p90", "p95", "p99"};

result<std::vector<aggregated>> aggregated_usages(const json* list, const object_ref& ref,
                                                  const std::string& field) {
  std::vector<aggregated> out;
  if (list == nullptr) return out;
  if (!list->is_array()) return invalid(ref, field, "must be a list");
  for (std::size_t i = 0; i < list->size(); ++i) {
    const json& a = (*list)[i];
    const std::string f = field + index(i);
    if (!a.is_object()) return invalid(ref, f, "must be an object");
    aggregated g;
    if (const json* d = member(a, "duration"); d != nullptr) {
      auto ms = parse_duration_ms(*d, ref, f + ".duration");
      if (!ms) return tl::unexpected(ms.error());
      g.duration_ms = *ms;
    }
    const json* usage = member(a, "usage");
    if (usage != nullptr && !usage->is_object()) return invalid(ref, f + ".usage", "must be a map");
    for (std::size_t t = 0; t < aggregation_types.size(); ++t) {
      auto r = resource_map(member(usage, aggregation_types[t]), ref,
                            f + ".usage." + aggregation_types[t]);
      if (!r) return tl::unexpected(r.error());
      g.usage[t] = std::move(*r);
    }
    out.push_back(std::move(g));
  }
  return out;
}

struct pod_metric {
  std::string key;
  split_resources usage;
  wire::PriorityClass priority = wire::PriorityClass::None;
  wire::QoSClass qos = wire::QoSClass::None;
};

result<std::vector<pod_metric>> pod_metrics(const json* list, const object_ref& ref) {
  std::vector<pod_metric> out;
  if (list == nullptr) return out;
  if (!list->is_array()) return invalid(ref, "status.podsMetric", "must be a list");
  for (std::size_t i = 0; i < list->size(); ++i) {
    const json& p = (*list)[i];
    const std::string f = "status.podsMetric" + index(i);
    if (!p.is_object()) return invalid(ref, f, "must be an object");
    auto ns = string_member(&p, "namespace", ref, f + ".namespace");
    if (!ns) return tl::unexpected(ns.error());
    auto name = string_member(&p, "name", ref, f + ".name");
    if (!name) return tl::unexpected(name.error());
    if (name->empty()) return invalid(ref, f + ".name", "is required");
    pod_metric m;
    m.key = ns->empty() ? *name : *ns + "/" + *name;
    auto usage = resource_map(member(p, "podUsage"), ref, f + ".podUsage");
    if (!usage) return tl::unexpected(usage.error());
    if (*usage) m.usage = std::move(**usage);
    auto prio = string_member(&p, "priority", ref, f + ".priority");
    if (!prio) return tl::unexpected(prio.error());
    const priority_class pc = get_pod_priority_class_by_name(*prio);
    if (!prio->empty() && pc == priority_class::none)
      return invalid(ref, f + ".priority",
                     quote_text(*prio) + " is not koord-prod, koord-mid, koord-batch, koord-free");
    m.priority = static_cast<wire::PriorityClass>(pc);  // same numbering (priority.hpp)
    auto qos = string_member(&p, "qos", ref, f + ".qos");
    if (!qos) return tl::unexpected(qos.error());
    const qos_class qc = get_pod_qos_class_by_name(*qos);
    if (!qos->empty() && qc == qos_class::none)
      return invalid(ref, f + ".qos", quote_text(*qos) + " is not SYSTEM, LSE, LSR, LS, BE");
    m.qos = static_cast<wire::QoSClass>(qc);  // same numbering (qos.hpp)
    out.push_back(std::move(m));
  }
  // The koordlet lists pods in no particular order; the record should not depend on it.
  std::stable_sort(out.begin(), out.end(),
                   [](const pod_metric& a, const pod_metric& b) { return a.key < b.key; });
  return out;
}

// status.hostApplicationMetric[] (HostApplicationMetricInfo: name, usage, priority, qos), sorted
// by name as the koordlet's report is.
result<std::vector<pod_metric>> host_app_metrics(const json* list, const object_ref& ref) {
  std::vector<pod_metric> out;
  if (list == nullptr) return out;
  if (!list->is_array()) return invalid(ref, "status.hostApplicationMetric", "must be a list");
  for (std::size_t i = 0; i < list->size(); ++i) {
    const json& h = (*list)[i];
    const std::string f = "status.hostApplicationMetric" + index(i);
    if (!h.is_object()) return invalid(ref, f, "must be an object");
    auto name = string_member(&h, "name", ref, f + ".name");
    if (!name) return tl::unexpected(name.error());
    if (name->empty()) return invalid(ref, f + ".name", "is required");
    pod_metric m;
    m.key = *name;
    auto usage = resource_map(member(h, "usage"), ref, f + ".usage");
    if (!usage) return tl::unexpected(usage.error());
    if (*usage) m.usage = std::move(**usage);
    auto prio = string_member(&h, "priority", ref, f + ".priority");
    if (!prio) return tl::unexpected(prio.error());
    const priority_class pc = get_pod_priority_class_by_name(*prio);
    if (!prio->empty() && pc == priority_class::none)
      return invalid(ref, f + ".priority",
                     quote_text(*prio) + " is not koord-prod, koord-mid, koord-batch, koord-free");
    m.priority = static_cast<wire::PriorityClass>(pc);
    auto qos = string_member(&h, "qos", ref, f + ".qos");
    if (!qos) return tl::unexpected(qos.error());
    const qos_class qc = get_pod_qos_class_by_name(*qos);
    if (!qos->empty() && qc == qos_class::none)
      return invalid(ref, f + ".qos", quote_text(*qos) + " is not SYSTEM, LSE, LSR, LS, BE");
    m.qos = static_cast<wire::QoSClass>(qc);
    out.push_back(std::move(m));
  }
  std::stable_sort(out.begin(), out.end(),
                   [](const pod_metric& a, const pod_metric& b) { return a.key < b.key; });
  return out;
}

res_offset optional_resources(messages::event_builder& b, const std::optional<split_resources>& r) {
  return r ? build_resources(b, *r) : res_offset();
}

flatbuffers::Offset<flatbuffers::Vector<flatbuffers::Offset<wire::AggregatedUsage>>>
build_aggregated(messages::event_builder& b, const std::vector<aggregated>& list) {
  if (list.empty()) return 0;
  std::vector<flatbuffers::Offset<wire::AggregatedUsage>> v;
  v.reserve(list.size());
  for (const auto& a : list) {
    const auto avg = optional_resources(b, a.usage[0]);
    const auto p50 = optional_resources(b, a.usage[1]);
    const auto p90 = optional_resources(b, a.usage[2]);
    const auto p95 = optional_resources(b, a.usage[3]);
    const auto p99 = optional_resources(b, a.usage[4]);
    v.push_back(wire::CreateAggregatedUsage(b.fbb(), a.duration_ms, avg, p50, p90, p95, p99));
  }
  return b.fbb().CreateVector(v);
}

}  // namespace

json node_metric_projection(const json& o) {
  json p = json::object();
  const json* spec = member(o, "spec");
  p["spec"] = spec != nullptr ? *spec : json();
  const json* status = member(o, "status");
  p["status"] = status != nullptr ? *status : json();
  return p;
}

result<event_list> translate_node_metric(const request& r) {
  const json& o = *r.object;
  auto ref = read_ref(object_kind::node_metric, o, false);
  if (!ref) return tl::unexpected(ref.error());
  if (r.what == op::deleted)
    return not_translated(*ref,
                          "DELETED: the schema has no event that clears a node's metric "
                          "(Koordinator resets the node's batch resources then)");
  const json* policy = member(member(o, "spec"), "metricCollectPolicy");
  std::int64_t aggregate_ms = 0, interval_ms = 0;
  for (auto [key, out] : {std::pair{"aggregateDurationSeconds", &aggregate_ms},
                          std::pair{"reportIntervalSeconds", &interval_ms}}) {
    const json* v = member(policy, key);
    if (v == nullptr) continue;
    const std::string f = std::string("spec.metricCollectPolicy.") + key;
    if (!v->is_number_integer() || v->get<std::int64_t>() < 0 ||
        v->get<std::int64_t>() > std::int64_t{1} << 40)
      return invalid(*ref, f, v->dump() + " is not a number of seconds");
    *out = v->get<std::int64_t>() * 1000;
  }
  const json* status = member(o, "status");
  const json* update = member(status, "updateTime");
  // koord-manager creates the object; the koordlet's first report sets updateTime. Until
  // then there is nothing to report.
  if (update == nullptr) return event_list{};
  if (!update->is_string()) return invalid(*ref, "status.updateTime", "must be a time string");
  auto update_ms = parse_time_ms(update->get<std::string>(), *ref, "status.updateTime");
  if (!update_ms) return tl::unexpected(update_ms.error());
  const json* nm = member(status, "nodeMetric");
  if (nm != nullptr && !nm->is_object())
    return invalid(*ref, "status.nodeMetric", "must be an object");
  auto node_usage = resource_map(member(nm, "nodeUsage"), *ref, "status.nodeMetric.nodeUsage");
  if (!node_usage) return tl::unexpected(node_usage.error());
  auto system_usage =
      resource_map(member(nm, "systemUsage"), *ref, "status.nodeMetric.systemUsage");
  if (!system_usage) return tl::unexpected(system_usage.error());
  auto agg_node = aggregated_usages(member(nm, "aggregatedNodeUsages"), *ref,
                                    "status.nodeMetric.aggregatedNodeUsages");
  if (!agg_node) return tl::unexpected(agg_node.error());
  auto agg_system = aggregated_usages(member(nm, "aggregatedSystemUsages"), *ref,
                                      "status.nodeMetric.aggregatedSystemUsages");
  if (!agg_system) return tl::unexpected(agg_system.error());
  auto pods = pod_metrics(member(status, "podsMetric"), *ref);
  if (!pods) return tl::unexpected(pods.error());
  auto apps = host_app_metrics(member(status, "hostApplicationMetric"), *ref);
  if (!apps) return tl::unexpected(apps.error());
  auto reclaimable = resource_map(member(member(status, "prodReclaimableMetric"), "resource"), *ref,
                                  "status.prodReclaimableMetric.resource");
  if (!reclaimable) return tl::unexpected(reclaimable.error());

  messages::event_builder b;
  auto& fbb = b.fbb();
  const auto node = fbb.CreateString(ref->name);
  const auto nu = optional_resources(b, *node_usage);
  const auto su = optional_resources(b, *system_usage);
  const auto an = build_aggregated(b, *agg_node);
  const auto as = build_aggregated(b, *agg_system);
  flatbuffers::Offset<flatbuffers::Vector<flatbuffers::Offset<wire::PodMetric>>> pv;
  if (!pods->empty()) {
    std::vector<flatbuffers::Offset<wire::PodMetric>> v;
    v.reserve(pods->size());
    for (const auto& p : *pods) {
      const auto key = fbb.CreateString(p.key);
      const auto usage = build_resources(b, p.usage);
      v.push_back(wire::CreatePodMetric(fbb, key, usage, p.priority, p.qos));
    }
    pv = fbb.CreateVector(v);
  }
  const auto pr = optional_resources(b, *reclaimable);
  flatbuffers::Offset<flatbuffers::Vector<flatbuffers::Offset<wire::HostAppMetric>>> hv;
  if (!apps->empty()) {
    std::vector<flatbuffers::Offset<wire::HostAppMetric>> v;
    v.reserve(apps->size());
    for (const auto& h : *apps) {
      const auto name = fbb.CreateString(h.key);
      const auto usage = build_resources(b, h.usage);
      v.push_back(wire::CreateHostAppMetric(fbb, name, usage, h.priority, h.qos));
    }
    hv = fbb.CreateVector(v);
  }
  const auto payload = wire::CreateNodeMetricReported(fbb, node, *update_ms, aggregate_ms,
                                                      interval_ms, nu, su, an, as, pv, pr, hv);
  event_list out;
  out.push_back(b.finish(header(r.time, wire::EntityKind::Node, ref->name, *r.options), payload));
  return out;
}

}  // namespace colony::kube::translate_internal
