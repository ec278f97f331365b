// decision_sink: decisions into API writes (see sink.hpp).
#include "bridges/kubernetes/sink.hpp"

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <ctime>
#include <thread>

#include "actors/quota/quota_resources.hpp"
#include "actors/scheduler/numa/numa_aware.hpp"
#include "bridges/kubernetes/backoff.hpp"
#include "bridges/kubernetes/kube_time.hpp"
#include "messages/codec.hpp"
#include "messages/names.hpp"
#include "messages/priority.hpp"
#include "messages/qos.hpp"
#include "messages/quantity.hpp"
#include "messages/terms.hpp"

namespace colony::kube {

using json = nlohmann::json;
using messages::to_string_view;

// Koordinator's ElasticQuota (scheduling.sigs.k8s.io/v1alpha1, namespaced).
constexpr std::string_view elastic_quota_api = "/apis/scheduling.sigs.k8s.io/v1alpha1";
// How long a quota name found to be no API object stays so before it is looked for again.
constexpr std::chrono::seconds quota_recheck{10};
// Koordinator's NodeSLO (slo.koordinator.sh/v1alpha1, cluster-scoped).
constexpr std::string_view node_slo_api = "/apis/slo.koordinator.sh/v1alpha1";
constexpr std::string_view topology_api = "/apis/topology.node.k8s.io/v1alpha1";
// How long the NodeSLO API found missing (no CRD) stays so before it is asked again.
constexpr std::chrono::seconds node_slo_recheck{10};

std::string_view to_string(write_kind k) noexcept {
  switch (k) {
    case write_kind::binding:
      return "binding";
    case write_kind::pod_condition:
      return "pod-condition";
    case write_kind::event:
      return "event";
    case write_kind::node_resources:
      return "node-resources";
    case write_kind::eviction:
      return "eviction";
    case write_kind::quota_status:
      return "quota-status";
    case write_kind::node_slo:
      return "node-slo";
    case write_kind::node_metric:
      return "node-metric";
    case write_kind::reservation_status:
      return "reservation-status";
    case write_kind::reservation:
      return "reservation";
    case write_kind::migration_job:
      return "migration-job";
    case write_kind::migration_job_status:
      return "migration-job-status";
    case write_kind::quota:
      return "quota";
    case write_kind::node_topology:
      return "node-topology";
    case write_kind::node_annotations:
      return "node-annotations";
  }
  return "unknown";
}

// ---- bodies ----------------------------------------------------------------------------

std::pair<std::string, std::string> split_pod_key(std::string_view key) {
  const auto slash = key.find('/');
  if (slash == std::string_view::npos) return {"default", std::string(key)};
  return {std::string(key.substr(0, slash)), std::string(key.substr(slash + 1))};
}

json node_slo_object(std::string_view node, const json& spec) {
  // initNodeSLO (nodeslo_controller.go): name = the node's, no namespace (cluster-scoped), status
  // empty.
  return json{{"apiVersion", "slo.koordinator.sh/v1alpha1"},
              {"kind", "NodeSLO"},
              {"metadata", {{"name", node}}},
              {"spec", spec}};
}

std::string resource_status_annotation(const wire::PodScheduled& p) {
  // extension.ResourceStatus as the scheduler's NodeNUMAResource writes it (one formatter,
  // numa_aware.hpp); quantities as resource.Quantity writes them.
  scheduler::numa::resource_status rs;
  if (auto c = scheduler::numa::cpu_set::parse(to_string_view(p.cpuset()))) rs.cpuset = *c;
  if (const auto* v = p.numa_resources())
    for (const auto* a : *v) {
      scheduler::numa::numa_node_resource r;
      r.node = a->node();
      if (a->cpu_milli() != 0) r.resources["cpu"] = k8s::format_milli(a->cpu_milli());
      if (a->memory_bytes() != 0) r.resources["memory"] = k8s::format_binary_si(a->memory_bytes());
      rs.numa_node_resources.push_back(std::move(r));
    }
  if (rs.cpuset.empty() && rs.numa_node_resources.empty()) return {};
  return scheduler::numa::format_resource_status(rs);
}

std::string device_allocated_annotation(const wire::PodScheduled& p) {
  // DeviceShare's PreBind (pkg/scheduler/plugins/deviceshare/plugin.go) writes
  // apiext.DeviceAllocations: a list per device type, resources as quantities.
  const auto* v = p.devices();
  if (v == nullptr || v->size() == 0) return {};
  json out = json::object();
  for (const auto* d : *v) {
    std::string type(to_string_view(d->type()));
    json res = json::object();
    if (type.empty()) {
      type = "gpu";
      res[std::string(names::gpu_core)] = std::to_string(d->core());
      res[std::string(names::gpu_memory)] = k8s::format_binary_si(d->memory_bytes());
      if (d->memory_ratio() != 0)
        res[std::string(names::gpu_memory_ratio)] = std::to_string(d->memory_ratio());
    } else {
      res[type == "rdma" ? std::string(names::koord_rdma) : std::string(names::koord_fpga)] =
          std::to_string(d->amount());
    }
    json a = {{"minor", d->minor()}, {"resources", std::move(res)}};
    if (d->vf_bus_id() != nullptr && d->vf_bus_id()->size() > 0) {
      json vf = {{"busID", std::string(to_string_view(d->vf_bus_id()))}};
      if (d->vf_minor() != 0) vf["minor"] = d->vf_minor();  // omitempty
      a["extension"] = {{"vfs", json::array({std::move(vf)})}};
    }
    out[type].push_back(std::move(a));
  }
  return out.dump();
}

json binding_body(std::string_view ns, std::string_view name, std::string_view node,
                  std::string_view resource_status, std::string_view device_allocated) {
  // What DefaultBinder posts (pkg/scheduler/framework/plugins/defaultbinder), uid aside:
  // PodScheduled does not carry it.
  json b{{"apiVersion", "v1"},
         {"kind", "Binding"},
         {"metadata", {{"name", name}, {"namespace", ns}}},
         {"target", {{"apiVersion", "v1"}, {"kind", "Node"}, {"name", node}}}};
  // NodeNUMAResource's PreBind sets scheduling.koordinator.sh/resource-status before binding
  // (pkg/scheduler/plugins/nodenumaresource/plugin.go preBindObject); the API server copies a
  // Binding's annotations onto the pod as it binds it (pkg/registry/core/pod/storage
  // setPodHostAndAnnotations), so the pod gets it in the same write.
  if (!resource_status.empty())
    b["metadata"]["annotations"][std::string(names::annotation_resource_status)] =
        std::string(resource_status);
  // DeviceShare's PreBind sets scheduling.koordinator.sh/device-allocated the same way.
  if (!device_allocated.empty())
    b["metadata"]["annotations"][std::string(names::annotation_device_allocated)] =
        std::string(device_allocated);
  return b;
}

std::string fit_error_message(std::span<const unschedulable_reason> reasons) {
  // FitError.Error() (pkg/scheduler/framework/types.go): "0/N nodes are available: " then the
  // sorted "count reason" histogram. Colony's Filter stops at a node's first failing plugin,
  // so N is the sum of the counts. A reason with no node count is a whole message (PreFilter
  // or "no nodes available to schedule pods").
  std::int64_t n = 0;
  std::vector<std::string> parts;
  std::string whole;
  for (const auto& r : reasons) {
    if (r.nodes <= 0) {
      whole = r.reason;
      continue;
    }
    n += r.nodes;
    parts.push_back(std::to_string(r.nodes) + " " + r.reason);
  }
  std::string msg;
  if (parts.empty() && !whole.empty()) {
    msg = whole;
  } else {
    std::sort(parts.begin(), parts.end());
    msg = "0/" + std::to_string(n) + " nodes are available";
    for (std::size_t i = 0; i < parts.size(); ++i) msg += (i == 0 ? ": " : ", ") + parts[i];
    msg += ".";
  }
  // truncateMessage (schedule_one.go): an Event note holds 1024 bytes.
  constexpr std::size_t limit = 1024;
  if (msg.size() > limit) msg = msg.substr(0, limit - 4) + " ...";
  return msg;
}

json unschedulable_condition_patch(std::string_view message, std::string_view transition_time) {
  json c = {{"type", "PodScheduled"},
            {"status", "False"},
            {"reason", "Unschedulable"},
            {"message", message},
            {"lastProbeTime", nullptr}};
  if (!transition_time.empty()) c["lastTransitionTime"] = transition_time;
  // Strategic merge: conditions merge by "type", so the pod's other conditions stay.
  return json{{"status", {{"conditions", json::array({c})}}}};
}

namespace {

const json* find_condition(const json& pod, std::string_view type) {
  const auto* st = pod.contains("status") ? &pod["status"] : nullptr;
  if (st == nullptr || !st->contains("conditions") || !(*st)["conditions"].is_array())
    return nullptr;
  for (const auto& c : (*st)["conditions"])
    if (c.is_object() && c.value("type", "") == type) return &c;
  return nullptr;
}

}  // namespace

bool has_unschedulable_condition(const json& pod, std::string_view message) {
  const json* c = find_condition(pod, "PodScheduled");
  return c != nullptr && c->value("status", "") == "False" &&
         c->value("reason", "") == "Unschedulable" && c->value("message", "") == message;
}

json failed_scheduling_event(const event_fields& f) {
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(f.offset));
  const std::string t = rfc3339(f.time_ms);
  json involved = {{"apiVersion", "v1"}, {"kind", "Pod"}, {"namespace", f.ns}, {"name", f.pod}};
  if (!f.uid.empty()) involved["uid"] = f.uid;
  // kube-scheduler: Eventf(pod, nil, Warning, "FailedScheduling", "Scheduling", msg). Written
  // as a core/v1 Event the way client-go's recorder does (count 1, first = last timestamp).
  return json{{"apiVersion", "v1"},
              {"kind", "Event"},
              {"metadata", {{"name", f.pod + "." + hex}, {"namespace", f.ns}}},
              {"involvedObject", involved},
              {"reason", "FailedScheduling"},
              {"message", f.message},
              {"type", "Warning"},
              {"action", "Scheduling"},
              {"source", {{"component", f.component}}},
              {"reportingComponent", f.component},
              {"reportingInstance", f.instance},
              {"firstTimestamp", t},
              {"lastTimestamp", t},
              {"count", 1}};
}

json node_resources_patch(const node_batch_values& v) {
  // Koordinator's noderesource controller writes batch-cpu as NewQuantity(milli, DecimalSI):
  // the number of milli-cores as a plain integer (apis/extension/resource.go).
  json list = {{std::string(names::batch_cpu), std::to_string(v.batch_cpu_milli)},
               {std::string(names::batch_memory), std::to_string(v.batch_memory_bytes)}};
  if (v.include_mid) {
    list[std::string(names::mid_cpu)] = std::to_string(v.mid_cpu_milli);
    list[std::string(names::mid_memory)] = std::to_string(v.mid_memory_bytes);
  }
  return json{{"status", {{"capacity", list}, {"allocatable", list}}}};
}

namespace {

// The value of resource `name` in node.status.<field>; nullopt when absent or unreadable.
std::optional<std::int64_t> node_quantity(const json& node, const char* field,
                                          std::string_view name) {
  const auto ptr = json::json_pointer("/status/" + std::string(field));
  if (!node.contains(ptr)) return std::nullopt;
  const json& list = node.at(ptr);
  const auto it = list.find(std::string(name));
  if (it == list.end() || !it->is_string()) return std::nullopt;
  auto q = k8s::parse_quantity_value(it->get<std::string>());
  if (!q) return std::nullopt;
  return *q;
}

}  // namespace

bool node_has_resources(const json& node, const node_batch_values& v) {
  std::vector<std::pair<std::string_view, std::int64_t>> want = {
      {names::batch_cpu, v.batch_cpu_milli}, {names::batch_memory, v.batch_memory_bytes}};
  if (v.include_mid) {
    want.emplace_back(names::mid_cpu, v.mid_cpu_milli);
    want.emplace_back(names::mid_memory, v.mid_memory_bytes);
  }
  for (const char* field : {"capacity", "allocatable"})
    for (const auto& [name, value] : want)
      if (node_quantity(node, field, name) != value) return false;
  return true;
}

json eviction_body(std::string_view ns, std::string_view name, std::string_view uid) {
  json body{{"apiVersion", "policy/v1"},
            {"kind", "Eviction"},
            {"metadata", {{"name", name}, {"namespace", ns}}}};
  // metav1.NewUIDPreconditions, no grace period override (evictor.go).
  if (!uid.empty()) body["deleteOptions"] = {{"preconditions", {{"uid", uid}}}};
  return body;
}

namespace {

// metav1.Duration as Go prints it: "5m0s", "1h0m0s", "30s".
std::string go_duration(std::int64_t secs) {
  std::string out;
  if (secs >= 3600) out += std::to_string(secs / 3600) + "h";
  if (secs >= 60) out += std::to_string(secs % 3600 / 60) + "m";
  return out + std::to_string(secs % 60) + "s";
}

json resource_map(const wire::Resources* r) {
  const auto u = messages::to_resource_list(r);
  return json{{"resources",
               {{std::string(names::cpu), k8s::format_milli(u.cpu_milli)},
                {std::string(names::memory), k8s::format_memory(u.memory_bytes)}}}};
}

json aggregated(const flatbuffers::Vector<flatbuffers::Offset<wire::AggregatedUsage>>* v) {
  json out = json::array();
  if (v == nullptr) return out;
  for (const auto* a : *v) {
    json usage = json::object();
    const std::pair<const char*, const wire::Resources*> kinds[] = {{"avg", a->avg()},
                                                                    {"p50", a->p50()},
                                                                    {"p90", a->p90()},
                                                                    {"p95", a->p95()},
                                                                    {"p99", a->p99()}};
    for (const auto& k : kinds)
      if (k.second != nullptr) usage[k.first] = resource_map(k.second);
    out.push_back({{"duration", go_duration(a->duration_ms() / 1000)}, {"usage", usage}});
  }
  return out;
}

}  // namespace

json node_metric_status(const wire::NodeMetricReported& m) {
  json nm = json::object();
  if (m.node_usage() != nullptr) nm["nodeUsage"] = resource_map(m.node_usage());
  if (m.system_usage() != nullptr) nm["systemUsage"] = resource_map(m.system_usage());
  nm["aggregatedNodeUsages"] = aggregated(m.aggregated_node_usages());
  nm["aggregatedSystemUsages"] = aggregated(m.aggregated_system_usages());
  json pods = json::array();
  if (m.pods() != nullptr) {
    for (const auto* p : *m.pods()) {
      const auto key = to_string_view(p->pod());
      const auto slash = key.find('/');
      const auto ns = slash == std::string_view::npos ? std::string_view() : key.substr(0, slash);
      const auto name = slash == std::string_view::npos ? key : key.substr(slash + 1);
      // Same numbering as the wire enums (messages/priority.hpp, messages/qos.hpp).
      pods.push_back(
          {{"namespace", std::string(ns)},
           {"name", std::string(name)},
           {"podUsage", resource_map(p->usage())},
           {"priority", std::string(to_string(static_cast<priority_class>(p->priority_class())))},
           {"qos", std::string(to_string(static_cast<qos_class>(p->qos_class())))}});
    }
  }
  // HostApplicationMetricInfo (apis/slo/v1alpha1/nodemetric_types.go): name, usage, priority, qos.
  json apps = json::array();
  if (m.host_apps() != nullptr)
    for (const auto* h : *m.host_apps())
      apps.push_back(
          {{"name", std::string(to_string_view(h->name()))},
           {"usage", resource_map(h->usage())},
           {"priority", std::string(to_string(static_cast<priority_class>(h->priority_class())))},
           {"qos", std::string(to_string(static_cast<qos_class>(h->qos_class())))}});
  return json{{"updateTime", rfc3339(m.update_time_ms())},
              {"nodeMetric", nm},
              {"podsMetric", pods},
              {"hostApplicationMetric", apps}};
}

json node_topology_object(const wire::NodeResourceTopologyUpdated& t) {
  json annotations = json::object();
  if (t.annotations() != nullptr)
    for (const auto* kv : *t.annotations())
      annotations[std::string(to_string_view(kv->key()))] =
          std::string(to_string_view(kv->value()));
  json policies = json::array();
  if (t.topology_policies() != nullptr)
    for (const auto* p : *t.topology_policies()) policies.push_back(std::string(to_string_view(p)));
  json zones = json::array();
  if (t.zones() != nullptr)
    for (const auto* z : *t.zones()) {
      const std::string cpu = k8s::format_milli(z->cpu_allocatable_milli());
      const std::string mem = k8s::format_binary_si(z->memory_allocatable_bytes());
      zones.push_back(
          {{"name", std::string(to_string_view(z->name()))},
           {"type", std::string(to_string_view(z->type()))},
           {"resources",
            json::array(
                {{{"name", "cpu"}, {"capacity", cpu}, {"allocatable", cpu}, {"available", cpu}},
                 {{"name", "memory"},
                  {"capacity", mem},
                  {"allocatable", mem},
                  {"available", mem}}})}});
    }
  return json{{"apiVersion", "topology.node.k8s.io/v1alpha1"},
              {"kind", "NodeResourceTopology"},
              {"metadata",
               {{"name", std::string(to_string_view(t.node()))},
                {"labels", {{"app.kubernetes.io/managed-by", "Koordinator"}}},
                {"annotations", annotations}}},
              {"topologyPolicies", policies},
              {"zones", zones}};
}

json node_metric_object(const wire::NodeMetricReported& m) {
  json durations = json::array();
  if (m.aggregated_node_usages() != nullptr)
    for (const auto* a : *m.aggregated_node_usages())
      durations.push_back(go_duration(a->duration_ms() / 1000));
  json policy{{"aggregateDurationSeconds", m.aggregate_duration_ms() / 1000},
              {"reportIntervalSeconds", std::max<std::int64_t>(m.report_interval_ms() / 1000, 1)},
              // The report's own policy (v9); records from before v9 have none: the default.
              {"nodeMemoryCollectPolicy",
               m.memory_collect_policy() != nullptr && m.memory_collect_policy()->size() > 0
                   ? std::string(to_string_view(m.memory_collect_policy()))
                   : std::string("usageWithoutPageCache")}};
  if (!durations.empty()) policy["nodeAggregatePolicy"] = {{"durations", durations}};
  return json{{"apiVersion", "slo.koordinator.sh/v1alpha1"},
              {"kind", "NodeMetric"},
              {"metadata", {{"name", std::string(to_string_view(m.node()))}}},
              {"spec", {{"metricCollectPolicy", policy}}}};
}

json quota_status_patch(const wire::QuotaRuntimeUpdated& q, const json& current) {
  const auto keys_of = [&](const resource_list& r) {
    auto k = static_cast<quota::resource_keys>(q.runtime_keys() & quota::all_keys);
    for (int i = 0; i < quota::resource_count; ++i)
      if (quota::field(r, i) != 0) k = static_cast<quota::resource_keys>(k | (1u << i));
    return k;
  };
  const auto list = [&](const wire::Resources* w) {
    const auto r = messages::to_resource_list(w);
    return json::parse(quota::resource_list_to_json(r, keys_of(r)));
  };
  const auto annotation = [&](const wire::Resources* w) {
    const auto r = messages::to_resource_list(w);
    return quota::resource_list_to_json(r, keys_of(r));
  };
  json used = list(q.used());
  if (const auto* old = current.contains("/status/used"_json_pointer)
                            ? &current.at("/status/used"_json_pointer)
                            : nullptr;
      old != nullptr && old->is_object()) {
    for (const auto& [k, v] : old->items())
      if (!used.contains(k)) used[k] = nullptr;
  }
  return json{{"metadata",
               {{"annotations",
                 {{std::string(names::annotation_runtime), annotation(q.runtime())},
                  {std::string(names::annotation_request), annotation(q.request())},
                  {std::string(names::annotation_non_preemptible_used),
                   annotation(q.non_preemptible_used())}}}}},
              {"status", {{"used", used}}}};
}

bool quota_has_status(const json& current, const json& patch) {
  for (const auto& [k, v] : patch.at("/metadata/annotations"_json_pointer).items()) {
    const json* anns = current.contains("/metadata/annotations"_json_pointer)
                           ? &current.at("/metadata/annotations"_json_pointer)
                           : nullptr;
    if (anns == nullptr || !anns->contains(k) || anns->at(k) != v) return false;
  }
  const auto up = "/status/used"_json_pointer;
  const json have = current.contains(up) ? current.at(up) : json::object();
  for (const auto& [k, v] : patch.at(up).items()) {
    if (v.is_null()) {
      if (have.contains(k)) return false;
      continue;
    }
    if (!have.contains(k) || !have.at(k).is_string()) return false;
    // Compared as quantities: the server may keep another spelling of the same value.
    auto a = k8s::parse_quantity_milli(have.at(k).get<std::string>());
    auto b = k8s::parse_quantity_milli(v.get<std::string>());
    if (!a || !b || *a != *b) return false;
  }
  return true;
}

// ---- the sink --------------------------------------------------------------------------

namespace {

// "(Retry-After N s)" as api_client appends it.
std::optional<std::chrono::milliseconds> retry_after_of(const error& e) {
  const auto p = e.message.find("(Retry-After ");
  if (p == std::string::npos) return std::nullopt;
  long s = 0;
  const char* b = e.message.data() + p + 13;
  if (std::from_chars(b, e.message.data() + e.message.size(), s).ec != std::errc{})
    return std::nullopt;
  return std::chrono::milliseconds(s * 1000);
}

std::string pod_path(const std::string& ns, const std::string& name) {
  return "/api/v1/namespaces/" + ns + "/pods/" + name;
}

}  // namespace

decision_sink::decision_sink(api_client c, sink_options o)
    : client_(std::move(c)), opt_(std::move(o)) {
  if (!opt_.sleep) opt_.sleep = [](std::chrono::milliseconds d) { std::this_thread::sleep_for(d); };
}

result<decision_sink> decision_sink::open(connection conn, sink_options options) {
  auto c = api_client::open(std::move(conn), options.client);
  if (!c) return tl::make_unexpected(c.error());
  return decision_sink(std::move(*c), std::move(options));
}

write_outcome decision_sink::node_annotations(const std::string& node, std::string_view patch,
                                              const json& cur) {
  write_outcome o{.kind = write_kind::node_annotations, .object = node};
  const json p = json::parse(patch, nullptr, false);
  if (!p.is_object()) {
    o.message = "Node " + node + " annotations: meta.annotationsPatch is not a JSON object";
    return o;
  }
  const json* have = nullptr;
  if (cur.contains("metadata") && cur["metadata"].is_object() &&
      cur["metadata"].contains("annotations") && cur["metadata"]["annotations"].is_object())
    have = &cur["metadata"]["annotations"];
  bool differs = false;
  for (const auto& [k, v] : p.items()) {
    const bool present = have != nullptr && have->contains(k);
    if (v.is_null() ? present : (!present || (*have)[k] != v)) differs = true;
  }
  if (!differs) {
    o.ok = true;
    o.http_status = 200;
    o.message = "node already has these annotations";
    return o;
  }
  const std::string body = json{{"metadata", {{"annotations", p}}}}.dump();
  auto r = send([&] { return client_.patch("/api/v1/nodes/" + node, patch_type::merge, body); },
                opt_.max_attempts);
  o.attempts = r.attempts;
  if (r.last) {
    o.ok = o.wrote = true;
    o.http_status = r.last->status;
    o.message = "annotations " + std::string(patch);
  } else {
    o.http_status = http_status_of(r.last.error());
    o.message = "Node " + node + " annotations: " + r.last.error().describe();
  }
  return o;
}

bool decision_sink::replace_field(write_outcome& o, json& cur, const char* field, const json& want,
                                  const std::string& path, bool last_round, const char* unchanged,
                                  std::string written) {
  if (cur.contains(field) && cur[field] == want) {
    o.ok = true;
    o.http_status = 200;
    o.message = unchanged;
    return false;
  }
  cur[field] = want;
  const std::string body = cur.dump();
  auto r = send([&] { return client_.put(path, body); }, opt_.max_attempts);
  o.attempts += r.attempts;
  if (r.last) {
    o.ok = o.wrote = true;
    o.http_status = r.last->status;
    o.message = std::move(written);
    return false;
  }
  if (r.last.error().code == errc::failed_precondition && http_status_of(r.last.error()) == 409 &&
      !last_round)
    return true;
  o.http_status = http_status_of(r.last.error());
  o.message = r.last.error().describe();
  return false;
}

decision_sink::attempt_result decision_sink::send(const std::function<result<response>()>& call,
                                                  std::uint32_t limit) {
  backoff b(opt_.backoff_initial, opt_.backoff_cap, opt_.jitter, opt_.seed + counters_.requests);
  attempt_result r{fail(errc::internal, "not sent"), 0};
  for (;;) {
    ++counters_.requests;
    ++r.attempts;
    r.last = call();
    if (r.last || r.last.error().code != errc::unavailable || r.attempts >= std::max(1u, limit))
      return r;
    auto d = b.next();
    if (auto ra = retry_after_of(r.last.error())) d = std::max(d, std::min(*ra, opt_.backoff_cap));
    waits_.push_back(d);
    ++counters_.retries;
    opt_.sleep(d);
  }
}

result<std::vector<write_outcome>> decision_sink::apply(std::span<const std::uint8_t> record) {
  auto dec = messages::decode(record, "decision_sink record");
  if (!dec) return tl::make_unexpected(dec.error());
  const wire::Envelope& env = *dec->envelope;
  ++counters_.records;
  std::vector<write_outcome> out;
  const std::uint64_t off = env.offset();

  // One finished outcome, counted.
  auto finish = [&](write_outcome o) {
    o.offset = off;
    if (!o.ok) {
      ++counters_.failed;
    } else if (o.wrote) {
      ++counters_.writes;
    } else {
      ++counters_.skipped;
    }
    out.push_back(std::move(o));
  };
  auto from_error = [](write_outcome& o, const error& e) {
    o.http_status = http_status_of(e);
    o.message = e.describe();
  };
  auto get_json = [&](const std::string& path, json& into) -> result<void> {
    auto r = send([&] { return client_.get(path); }, opt_.max_attempts);
    if (!r.last) return tl::make_unexpected(r.last.error());
    into = json::parse(r.last->body, nullptr, false);
    if (into.is_discarded()) return fail(errc::invalid_input, "response is not JSON", path);
    return {};
  };

  try {
    switch (env.payload_type()) {
      case wire::Payload::PodScheduled: {
        const auto* p = env.payload_as_PodScheduled();
        // Named copies, not a structured binding: lambdas below capture them (Clang 14).
        const auto pod_key = split_pod_key(to_string_view(p->pod()));
        const std::string& ns = pod_key.first;
        const std::string& name = pod_key.second;
        const std::string node(to_string_view(p->node()));
        write_outcome o{.kind = write_kind::binding, .object = ns + "/" + name};
        const std::string body = binding_body(ns, name, node, resource_status_annotation(*p),
                                              device_allocated_annotation(*p))
                                     .dump();
        auto r = send([&] { return client_.post(pod_path(ns, name) + "/binding", body); },
                      opt_.max_attempts);
        o.attempts = r.attempts;
        if (r.last) {
          o.ok = o.wrote = true;
          o.http_status = r.last->status;
          o.message = "bound to " + node;
        } else if (http_status_of(r.last.error()) == 409) {
          // Already bound (pkg/registry/core/pod/storage: "pod ... is already assigned"):
          // success when to the same node, a replay after a restart.
          o.http_status = 409;
          json pod;
          if (auto g = get_json(pod_path(ns, name), pod); !g) {
            o.message =
                "binding answered 409 and the pod could not be read: " + g.error().describe();
          } else {
            const std::string bound = pod.value("/spec/nodeName"_json_pointer, std::string{});
            o.ok = bound == node;
            o.message = o.ok ? "already bound to " + node
                             : "pod " + o.object + " is bound to node " + bound + ", not to node " +
                                   node + " as decided";
          }
        } else {
          from_error(o, r.last.error());
          o.message = "binding pod " + o.object + " to node " + node + " failed: " + o.message;
        }
        finish(std::move(o));
        break;
      }
      case wire::Payload::PodUnschedulable: {
        const auto* p = env.payload_as_PodUnschedulable();
        // Named copies, not a structured binding: lambdas below capture them (Clang 14).
        const auto pod_key = split_pod_key(to_string_view(p->pod()));
        const std::string& ns = pod_key.first;
        const std::string& name = pod_key.second;
        std::vector<unschedulable_reason> reasons;
        if (p->reasons() != nullptr)
          for (const auto* r : *p->reasons())
            reasons.push_back({std::string(to_string_view(r->plugin())),
                               std::string(to_string_view(r->reason())), r->nodes()});
        const std::string msg = fit_error_message(reasons);
        const std::string key = ns + "/" + name;
        write_outcome cond{.kind = write_kind::pod_condition, .object = key};
        write_outcome ev{.kind = write_kind::event, .object = key};
        json pod;
        auto g = get_json(pod_path(ns, name), pod);
        cond.attempts = 1;
        if (!g) {
          // A pod that is gone needs no condition (handleSchedulingFailure drops it too).
          cond.ok = ev.ok = g.error().code == errc::not_found;
          from_error(cond, g.error());
          ev.http_status = cond.http_status;
          ev.message = cond.message = cond.ok ? "pod is gone" : cond.message;
          finish(std::move(cond));
          finish(std::move(ev));
          break;
        }
        const std::string bound = pod.value("/spec/nodeName"_json_pointer, std::string{});
        if (!bound.empty()) {
          // A replayed record older than the pod's binding: writing it would undo the binding's
          // PodScheduled=True condition. Deliberately nothing.
          cond.ok = ev.ok = true;
          cond.message = ev.message = "pod is bound to " + bound + "; nothing to write";
          finish(std::move(cond));
          finish(std::move(ev));
          break;
        }
        if (has_unschedulable_condition(pod, msg)) {
          cond.ok = true;
          cond.http_status = 200;
          cond.message = "condition already set";
        } else {
          // podutil.UpdatePodCondition: the transition time moves only when the status does.
          const json* old = find_condition(pod, "PodScheduled");
          const bool same_status = old != nullptr && old->value("status", "") == "False";
          const std::string body =
              unschedulable_condition_patch(msg, same_status ? "" : rfc3339(env.event_time_ms()))
                  .dump();
          auto r = send(
              [&] {
                return client_.patch(pod_path(ns, name) + "/status", patch_type::strategic, body);
              },
              opt_.max_attempts);
          cond.attempts = r.attempts;
          if (r.last) {
            cond.ok = cond.wrote = true;
            cond.http_status = r.last->status;
            cond.message = msg;
          } else {
            from_error(cond, r.last.error());
          }
        }
        event_fields f{.ns = ns,
                       .pod = name,
                       .uid = pod.value("/metadata/uid"_json_pointer, std::string{}),
                       .message = msg,
                       .component = opt_.scheduler_name,
                       .instance = opt_.reporting_instance,
                       .offset = off,
                       .time_ms = env.event_time_ms()};
        const json evjson = failed_scheduling_event(f);
        const std::string evbody = evjson.dump();
        auto r = send([&] { return client_.post("/api/v1/namespaces/" + ns + "/events", evbody); },
                      opt_.max_attempts);
        ev.attempts = r.attempts;
        if (r.last) {
          ev.ok = ev.wrote = true;
          ev.http_status = r.last->status;
          ev.message = "event " + evjson["metadata"]["name"].get<std::string>();
        } else if (r.last.error().code == errc::already_exists) {
          ev.ok = true;  // the same record's Event, written before a restart
          ev.http_status = 409;
          ev.message = "event already exists";
        } else {
          from_error(ev, r.last.error());
        }
        finish(std::move(cond));
        finish(std::move(ev));
        break;
      }
      case wire::Payload::NodeBatchResourceUpdated: {
        const auto* p = env.payload_as_NodeBatchResourceUpdated();
        const std::string node(to_string_view(p->node()));
        write_outcome o{.kind = write_kind::node_resources, .object = node};
        node_batch_values v{.batch_cpu_milli = p->batch_cpu_milli(),
                            .batch_memory_bytes = p->batch_memory_bytes(),
                            .mid_cpu_milli = p->mid_cpu_milli(),
                            .mid_memory_bytes = p->mid_memory_bytes()};
        json cur;
        auto g = get_json("/api/v1/nodes/" + node, cur);
        o.attempts = 1;
        if (!g) {
          from_error(o, g.error());
          finish(std::move(o));
          break;
        }
        // The slo-controller's metadata patch (cpu-normalization-ratio,
        // resource-amplification-ratio): a merge PATCH of the Node's annotations, as
        // Koordinator's resource_calculator updates node metadata, when the Node differs.
        if (const auto* ts = p->terms())
          for (const auto* t : *ts)
            if (messages::term_named(*t, "meta.annotationsPatch"))
              finish(node_annotations(node, to_string_view(t->text()), cur));
        // Mid resources when decided, or when the node lists them already (then they follow,
        // to 0 included): an all-zero mid in the record is Koordinator's midresource disabled.
        v.include_mid = v.mid_cpu_milli != 0 || v.mid_memory_bytes != 0 ||
                        node_quantity(cur, "allocatable", names::mid_cpu).has_value() ||
                        node_quantity(cur, "allocatable", names::mid_memory).has_value();
        if (node_has_resources(cur, v)) {
          o.ok = true;
          o.http_status = 200;
          o.message = "node already has these values";
          finish(std::move(o));
          break;
        }
        const std::string body = node_resources_patch(v).dump();
        auto r = send(
            [&] {
              return client_.patch("/api/v1/nodes/" + node + "/status", patch_type::merge, body);
            },
            opt_.max_attempts);
        o.attempts = r.attempts;
        if (r.last) {
          o.ok = o.wrote = true;
          o.http_status = r.last->status;
          o.message = "batch-cpu " + std::to_string(v.batch_cpu_milli) + ", batch-memory " +
                      std::to_string(v.batch_memory_bytes);
        } else {
          from_error(o, r.last.error());
        }
        finish(std::move(o));
        break;
      }
      case wire::Payload::PodEvicted: {
        const auto* p = env.payload_as_PodEvicted();
        // Named copies, not a structured binding: lambdas below capture them (Clang 14).
        const auto pod_key = split_pod_key(to_string_view(p->pod()));
        const std::string& ns = pod_key.first;
        const std::string& name = pod_key.second;
        write_outcome o{.kind = write_kind::eviction, .object = ns + "/" + name};
        const std::string uid = opt_.pod_uid ? opt_.pod_uid(o.object) : std::string();
        const std::string body = eviction_body(ns, name, uid).dump();
        // 429: a PodDisruptionBudget allows no disruption now (pkg/registry/core/pod/storage/
        // eviction.go); it may later, so it is retried like any unavailable answer.
        auto r = send([&] { return client_.post(pod_path(ns, name) + "/eviction", body); },
                      opt_.eviction_max_attempts);
        o.attempts = r.attempts;
        if (r.last) {
          // 201; a pod already terminating is deleted again (canIgnorePDB), a no-op.
          o.ok = o.wrote = true;
          o.http_status = r.last->status;
          o.message = "evicted";
        } else if (r.last.error().code == errc::not_found) {
          o.ok = true;
          o.http_status = 404;
          o.message = "pod is gone";
        } else if (http_status_of(r.last.error()) == 429) {
          from_error(o, r.last.error());
          o.message = "eviction of pod " + o.object +
                      " refused: a PodDisruptionBudget allows no disruption now (HTTP 429 after " +
                      std::to_string(r.attempts) + " attempts): " + o.message;
        } else {
          from_error(o, r.last.error());
          o.message = "eviction of pod " + o.object + " failed after " +
                      std::to_string(r.attempts) + " attempts: " + o.message;
        }
        finish(std::move(o));
        break;
      }
      case wire::Payload::QuotaRuntimeUpdated: {
        const auto* p = env.payload_as_QuotaRuntimeUpdated();
        const std::string name(to_string_view(p->name()));
        write_outcome o{.kind = write_kind::quota_status, .object = name};
        o.attempts = 1;
        // The namespace: found once per quota (a LIST by name across namespaces), then kept.
        auto ns_it = quota_namespace_.find(name);
        const auto now = std::chrono::steady_clock::now();
        if (ns_it == quota_namespace_.end() ||
            (ns_it->second.ns.empty() && now - ns_it->second.checked > quota_recheck)) {
          json found;
          auto g = get_json(std::string(elastic_quota_api) +
                                "/elasticquotas?fieldSelector=metadata.name%3D" + name,
                            found);
          // 404: the API itself is missing (no ElasticQuota CRD), so no quota is an object.
          if (!g && g.error().code != errc::not_found) {
            from_error(o, g.error());
            finish(std::move(o));
            break;
          }
          const auto& items = g ? found.value("items", json::array()) : json::array();
          quota_place place{.ns = {}, .checked = now};
          if (!items.empty())
            place.ns = items[0].at("/metadata/namespace"_json_pointer).get<std::string>();
          ns_it = quota_namespace_.insert_or_assign(name, std::move(place)).first;
        }
        if (ns_it->second.ns.empty()) {
          o.ok = true;
          o.http_status = 404;
          o.message = "no ElasticQuota object of this name";
          finish(std::move(o));
          break;
        }
        const std::string path = std::string(elastic_quota_api) + "/namespaces/" +
                                 ns_it->second.ns + "/elasticquotas/" + name;
        json cur;
        if (auto g = get_json(path, cur); !g) {
          if (g.error().code == errc::not_found) {
            quota_namespace_.erase(ns_it);
            o.ok = true;
            o.http_status = 404;
            o.message = "quota is gone";
          } else {
            from_error(o, g.error());
          }
          finish(std::move(o));
          break;
        }
        const json patch = quota_status_patch(*p, cur);
        if (quota_has_status(cur, patch)) {
          o.ok = true;
          o.http_status = 200;
          o.message = "quota already has these values";
          finish(std::move(o));
          break;
        }
        const std::string body = patch.dump();
        // ElasticQuota has no status subresource: status is written with the object.
        auto r =
            send([&] { return client_.patch(path, patch_type::merge, body); }, opt_.max_attempts);
        o.attempts = r.attempts;
        if (r.last) {
          o.ok = o.wrote = true;
          o.http_status = r.last->status;
          o.message = "namespace " + ns_it->second.ns + ": runtime " +
                      patch.at("/metadata/annotations"_json_pointer)
                          .at(std::string(names::annotation_runtime))
                          .get<std::string>();
        } else {
          from_error(o, r.last.error());
        }
        finish(std::move(o));
        break;
      }
      case wire::Payload::NodeSLOUpdated: {
        const std::string node(to_string_view(env.entity_key()));
        write_outcome o{.kind = write_kind::node_slo, .object = node};
        const json spec = json::parse(to_string_view(env.payload_as_NodeSLOUpdated()->spec_json()),
                                      nullptr, false);
        if (spec.is_discarded() || !spec.is_object()) {
          o.message = "NodeSLOUpdated spec_json is not a JSON object";
          finish(std::move(o));
          break;
        }
        const auto now = std::chrono::steady_clock::now();
        if (no_node_slo_api_ && now - *no_node_slo_api_ < node_slo_recheck) {
          o.ok = true;
          o.http_status = 404;
          o.message = "no NodeSLO API (CRD slo.koordinator.sh nodeslos not installed)";
          finish(std::move(o));
          break;
        }
        const std::string path = std::string(node_slo_api) + "/nodeslos/" + node;
        // Read, then create or update; a 409 (created meanwhile, or a stale resourceVersion)
        // reads again, as controller-runtime's requeue would.
        // attempts: every request of every round.
        for (std::uint32_t round = 1;; ++round) {
          const bool last_round = round >= std::max(1u, opt_.max_attempts);
          auto g = send([&] { return client_.get(path); }, opt_.max_attempts);
          o.attempts += g.attempts;
          if (!g.last && g.last.error().code != errc::not_found) {
            from_error(o, g.last.error());
            break;
          }
          if (!g.last) {
            const std::string body = node_slo_object(node, spec).dump();
            auto r =
                send([&] { return client_.post(std::string(node_slo_api) + "/nodeslos", body); },
                     opt_.max_attempts);
            o.attempts += r.attempts;
            if (r.last) {
              o.ok = o.wrote = true;
              o.http_status = r.last->status;
              o.message = "created";
              no_node_slo_api_.reset();
              break;
            }
            if (r.last.error().code == errc::already_exists && !last_round) continue;
            if (r.last.error().code == errc::not_found) {
              // The collection itself is missing: no NodeSLO CRD. Nothing to write to, as
              // Koordinator's controller cannot run without it either.
              no_node_slo_api_ = now;
              o.ok = true;
              o.http_status = 404;
              o.message = "no NodeSLO API (CRD slo.koordinator.sh nodeslos not installed)";
              break;
            }
            from_error(o, r.last.error());
            break;
          }
          no_node_slo_api_.reset();
          json cur = json::parse(g.last->body, nullptr, false);
          if (!cur.is_object()) {
            o.message = "NodeSLO " + node + ": response is not a JSON object";
            break;
          }
          if (replace_field(o, cur, "spec", spec, path, last_round, "NodeSLO already has this spec",
                            "updated"))
            continue;
          break;
        }
        if (!o.ok && o.message.find("NodeSLO") == std::string::npos)
          o.message = "NodeSLO " + node + ": " + o.message;
        finish(std::move(o));
        break;
      }
      case wire::Payload::NodeResourceTopologyUpdated: {
        // Only a koordlet's own report (a decision) is written; one observed from the cluster
        // is the API server's already.
        if (env.causation() < 0) {
          ++counters_.ignored;
          break;
        }
        const auto& t = *env.payload_as_NodeResourceTopologyUpdated();
        const std::string node(to_string_view(t.node()));
        write_outcome o{.kind = write_kind::node_topology, .object = node};
        const std::string path = std::string(topology_api) + "/noderesourcetopologies/" + node;
        const json want = node_topology_object(t);
        auto g = send([&] { return client_.get(path); }, opt_.max_attempts);
        o.attempts += g.attempts;
        if (!g.last && g.last.error().code == errc::not_found) {
          // createNodeTopoIfNotExist, with the report in it (one write instead of two).
          const std::string body = want.dump();
          auto c = send(
              [&] {
                return client_.post(std::string(topology_api) + "/noderesourcetopologies", body);
              },
              opt_.max_attempts);
          o.attempts += c.attempts;
          if (c.last) {
            o.ok = o.wrote = true;
            o.http_status = c.last->status;
            o.message = "created";
          } else {
            from_error(o, c.last.error());
            if (c.last.error().code == errc::not_found)
              o.message = "no NodeResourceTopology API (CRD topology.node.k8s.io not installed): " +
                          o.message;
          }
        } else if (!g.last) {
          from_error(o, g.last.error());
        } else {
          const json cur = json::parse(g.last->body, nullptr, false);
          // isChanged: the koordlet's annotations (other keys are left alone), the policies and
          // the zones as a whole (Colony reports cpu and memory; a merge patch replaces lists).
          json ann_patch = json::object();
          const json* cur_ann = nullptr;
          if (cur.is_object() && cur.contains("metadata") && cur["metadata"].is_object() &&
              cur["metadata"].contains("annotations"))
            cur_ann = &cur["metadata"]["annotations"];
          for (const auto& [k, v] : want["metadata"]["annotations"].items())
            if (cur_ann == nullptr || !cur_ann->is_object() || !cur_ann->contains(k) ||
                (*cur_ann)[k] != v)
              ann_patch[k] = v;
          json patch = json::object();
          if (!ann_patch.empty()) patch["metadata"] = {{"annotations", ann_patch}};
          for (const char* f : {"topologyPolicies", "zones"})
            if (!cur.is_object() || !cur.contains(f) || cur[f] != want[f]) patch[f] = want[f];
          if (patch.empty()) {
            o.ok = true;
            o.http_status = 200;
            o.message = "NodeResourceTopology already has this report";
          } else {
            const std::string body = patch.dump();
            auto r = send([&] { return client_.patch(path, patch_type::merge, body); },
                          opt_.max_attempts);
            o.attempts += r.attempts;
            if (r.last) {
              o.ok = o.wrote = true;
              o.http_status = r.last->status;
              o.message = "updated";
            } else {
              from_error(o, r.last.error());
            }
          }
        }
        if (!o.ok) o.message = "NodeResourceTopology " + node + ": " + o.message;
        finish(std::move(o));
        break;
      }
      case wire::Payload::NodeMetricReported: {
        // Only a koordlet's own report (a decision) is written; one observed from the cluster
        // is the API server's already.
        if (env.causation() < 0) {
          ++counters_.ignored;
          break;
        }
        const auto& m = *env.payload_as_NodeMetricReported();
        const std::string node(to_string_view(m.node()));
        write_outcome o{.kind = write_kind::node_metric, .object = node};
        const std::string path = std::string(node_slo_api) + "/nodemetrics/" + node;
        const json status = node_metric_status(m);
        // Read (create when missing), then replace the status; a 409 reads again
        // (RetryOnConflict). attempts: every request of every round.
        for (std::uint32_t round = 1;; ++round) {
          const bool last_round = round >= std::max(1u, opt_.max_attempts);
          auto g = send([&] { return client_.get(path); }, opt_.max_attempts);
          o.attempts += g.attempts;
          json cur;
          if (!g.last && g.last.error().code == errc::not_found) {
            const std::string body = node_metric_object(m).dump();
            auto c =
                send([&] { return client_.post(std::string(node_slo_api) + "/nodemetrics", body); },
                     opt_.max_attempts);
            o.attempts += c.attempts;
            if (!c.last && c.last.error().code == errc::already_exists && !last_round) continue;
            if (!c.last) {
              from_error(o, c.last.error());
              if (c.last.error().code == errc::not_found)
                o.message =
                    "no NodeMetric API (CRD slo.koordinator.sh nodemetrics not "
                    "installed): " +
                    o.message;
              break;
            }
            cur = json::parse(c.last->body, nullptr, false);
          } else if (!g.last) {
            from_error(o, g.last.error());
            break;
          } else {
            cur = json::parse(g.last->body, nullptr, false);
          }
          if (!cur.is_object()) {
            o.message = "response is not a JSON object";
            break;
          }
          if (replace_field(o, cur, "status", status, path + "/status", last_round,
                            "NodeMetric already has this status",
                            "status " + status["updateTime"].get<std::string>()))
            continue;
          break;
        }
        if (!o.ok) o.message = "NodeMetric " + node + " status: " + o.message;
        finish(std::move(o));
        break;
      }
      case wire::Payload::ReservationPhaseChanged:
        finish(reservation_status_write(env));
        break;
      case wire::Payload::ReservationUpserted:
        if (auto o = reservation_object_write(env)) {
          finish(std::move(*o));
        } else {
          ++counters_.ignored;
        }
        break;
      case wire::Payload::QuotaUpserted:
        if (auto o = quota_object_write(env)) {
          finish(std::move(*o));
        } else {
          ++counters_.ignored;
        }
        break;
      case wire::Payload::MigrationJobCreated:
      case wire::Payload::MigrationJobPhaseChanged:
        if (auto o = migration_job_write(env)) {
          finish(std::move(*o));
        } else {
          ++counters_.ignored;
        }
        break;
      default:
        ++counters_.ignored;
        break;
    }
  } catch (const std::exception& e) {
    // nlohmann's exceptions (a malformed answer) stop here: errors are values.
    return fail(errc::internal, e.what(), "decision_sink offset " + std::to_string(off));
  }
  return out;
}

}  // namespace colony::kube
