// decision_sink: Reservation writes (see sink.hpp). koord-scheduler's status writes
// (pkg/util/reservation/reservation.go SetReservationAvailable, SetReservationSucceeded,
// SetReservationExpired; pkg/scheduler/plugins/reservation setReservationUnschedulable, all
// through UpdateStatus under RetryOnConflict), and the Reservation a descheduler creates for a
// ReservationFirst migration (pkg/descheduler/controllers/migration/reservation/util.go
// CreateOrUpdateReservationOptions) or deletes when the migration ends.
#include <algorithm>
#include <charconv>
#include <limits>

#include "bridges/kubernetes/kube_time.hpp"
#include "bridges/kubernetes/sink.hpp"
#include "bridges/kubernetes/translate.hpp"
#include "messages/names.hpp"
#include "messages/quantity.hpp"

namespace colony::kube {

using json = nlohmann::json;
using messages::to_string_view;

namespace {

// Koordinator's Reservation (scheduling.koordinator.sh/v1alpha1, cluster-scoped).
constexpr std::string_view reservations_path =
    "/apis/scheduling.koordinator.sh/v1alpha1/reservations";
// The observation source's envelope source (translate_options::source): its records are the
// API server's objects already, never writes.
constexpr std::string_view bridge_source = "bridge/k8s";

bool terminal(std::string_view phase) { return phase == "Succeeded" || phase == "Failed"; }

// metav1.Duration as Go's time.Duration.String() prints it: "5m0s", "1h0m0s", "1.5s", "300ms".
std::string go_duration_ms(std::int64_t ms) {
  if (ms == 0) return "0s";
  if (ms < 1000) return std::to_string(ms) + "ms";
  const std::int64_t secs = ms / 1000;
  std::string out;
  if (secs >= 3600) out += std::to_string(secs / 3600) + "h";
  if (secs >= 60) out += std::to_string(secs % 3600 / 60) + "m";
  out += std::to_string(secs % 60);
  if (const std::int64_t frac = ms % 1000; frac != 0) {
    std::string f = std::to_string(frac);
    f.insert(0, 3 - f.size(), '0');
    while (f.back() == '0') f.pop_back();
    out += "." + f;
  }
  return out + "s";
}

json* find_condition(json& status, std::string_view type) {
  auto it = status.find("conditions");
  if (it == status.end() || !it->is_array()) return nullptr;
  for (auto& c : *it)
    if (c.is_object() && c.value("type", "") == type) return &c;
  return nullptr;
}

json condition(std::string_view type, std::string_view status, std::string_view reason,
               const std::string& time) {
  return json{{"type", type},
              {"status", status},
              {"reason", reason},
              {"lastProbeTime", time},
              {"lastTransitionTime", time}};
}

// Sets condition `type` to (status, reason): appended when absent; else updated, the transition
// time moving only when the status does.
void set_condition(json& st, std::string_view type, std::string_view status,
                   std::string_view reason, const std::string& time) {
  if (json* c = find_condition(st, type)) {
    if (c->value("status", "") != status) (*c)["lastTransitionTime"] = time;
    (*c)["status"] = status;
    (*c)["reason"] = reason;
    (*c)["lastProbeTime"] = time;
    return;
  }
  if (!st.contains("conditions") || !st["conditions"].is_array()) st["conditions"] = json::array();
  st["conditions"].push_back(condition(type, status, reason, time));
}

// Two ResourceLists name the same quantities (spelled as the server keeps them or not).
bool same_resources(const json& a, const json& b) {
  const json ea = a.is_object() ? a : json::object();
  const json eb = b.is_object() ? b : json::object();
  if (ea.size() != eb.size()) return false;
  for (const auto& [k, v] : ea.items()) {
    const auto it = eb.find(k);
    if (it == eb.end()) return false;
    if (v == *it) continue;
    if (!v.is_string() || !it->is_string()) return false;
    auto x = k8s::quantity::parse(v.get<std::string>());
    auto y = k8s::quantity::parse(it->get<std::string>());
    if (!x || !y || !(*x == *y)) return false;
  }
  return true;
}

// The conditions without their times, by type.
json condition_facts(const json& st) {
  json out = json::object();
  const auto it = st.find("conditions");
  if (it == st.end() || !it->is_array()) return out;
  for (const auto& c : *it) {
    if (!c.is_object()) continue;
    out[c.value("type", "")] = {c.value("status", ""), c.value("reason", ""),
                                c.value("message", "")};
  }
  return out;
}

}  // namespace

json resource_list_json(const wire::Resources* w) {
  json out = json::object();
  if (w == nullptr) return out;
  const auto r = messages::to_resource_list(w);
  auto put = [&](std::string_view name, std::int64_t v, std::string text) {
    if (v != 0) out[std::string(name)] = std::move(text);
  };
  put(names::cpu, r.cpu_milli, k8s::format_milli(r.cpu_milli));
  put(names::memory, r.memory_bytes, k8s::format_memory(r.memory_bytes));
  // Koordinator writes batch-cpu and mid-cpu as the plain number of milli-cores.
  put(names::batch_cpu, r.batch_cpu_milli, std::to_string(r.batch_cpu_milli));
  put(names::batch_memory, r.batch_memory_bytes, k8s::format_memory(r.batch_memory_bytes));
  put(names::mid_cpu, r.mid_cpu_milli, std::to_string(r.mid_cpu_milli));
  put(names::mid_memory, r.mid_memory_bytes, k8s::format_memory(r.mid_memory_bytes));
  // The record does not say whether the count came from nvidia.com/gpu (x100) or
  // koordinator.sh/gpu (as is): written as Koordinator's own, whose unit is Colony's.
  put(names::koord_gpu, r.gpu, std::to_string(r.gpu));
  put(names::gpu_core, r.gpu_core, std::to_string(r.gpu_core));
  put(names::gpu_memory, r.gpu_memory_bytes, k8s::format_memory(r.gpu_memory_bytes));
  put(names::gpu_memory_ratio, r.gpu_memory_ratio, std::to_string(r.gpu_memory_ratio));
  put(names::pods, r.pods, std::to_string(r.pods));
  if (w->extended() != nullptr)
    for (const auto* q : *w->extended())
      put(to_string_view(q->name()), q->value(), std::to_string(q->value()));
  return out;
}

json reservation_status(const json& current, const reservation_phase_write& w) {
  json st = current.is_object() ? current : json::object();
  if (w.phase == "Available") {
    // SetReservationAvailable: the conditions start over.
    st["phase"] = "Available";
    st["nodeName"] = w.node;
    st["allocatable"] = w.allocatable;
    st["conditions"] = json::array({condition("Scheduled", "True", "Scheduled", w.time),
                                    condition("Ready", "True", "Available", w.time)});
  } else if (w.phase == "Pending") {
    // setReservationUnschedulable: the phase is left (it retries); a scheduled reservation keeps
    // Scheduled=True. An empty phase reads as Pending to Koordinator's helpers and is written so.
    if (st.value("phase", "").empty()) st["phase"] = "Pending";
    json* c = find_condition(st, "Scheduled");
    if (c == nullptr || c->value("status", "") != "True")
      set_condition(st, "Scheduled", "False", w.reason, w.time);
  } else if (w.phase == "Succeeded") {
    st["phase"] = "Succeeded";
    set_condition(st, "Ready", "False", "Succeeded", w.time);
    if (!w.owner_name.empty()) {
      json ref = {{"namespace", w.owner_ns}, {"name", w.owner_name}};
      if (!w.owner_uid.empty()) ref["uid"] = w.owner_uid;
      st["currentOwners"] = json::array({ref});
    }
  } else if (w.phase == "Failed") {
    st["phase"] = "Failed";
    set_condition(st, "Ready", "False", w.reason.empty() ? "Expired" : w.reason, w.time);
  }
  return st;
}

bool reservation_status_holds(const json& current, const json& want) {
  if (!current.is_object()) return false;
  for (const char* k : {"phase", "nodeName"})
    if (current.value(k, "") != want.value(k, "")) return false;
  const json none = json();
  if (!same_resources(current.value("allocatable", none), want.value("allocatable", none)))
    return false;
  if (current.value("currentOwners", none) != want.value("currentOwners", none)) return false;
  return condition_facts(current) == condition_facts(want);
}

bool reservation_phase_is_stale(const json& current, std::string_view record_phase) {
  const std::string phase =
      current.is_object() ? current.value("phase", std::string()) : std::string();
  if (terminal(phase)) return record_phase != phase;
  return phase == "Available" && record_phase == "Pending";
}

json reservation_object(const wire::ReservationUpserted& r) {
  json labels = json::object();
  if (r.labels() != nullptr)
    for (const auto* kv : *r.labels())
      labels[std::string(to_string_view(kv->key()))] = std::string(to_string_view(kv->value()));
  labels[std::string(managed_by_label)] = std::string(managed_by_colony);

  json pod_spec = {
      {"containers",
       json::array({{{"name", "reserve"},
                     {"resources", {{"requests", resource_list_json(r.requests())}}}}})}};
  if (const auto s = to_string_view(r.scheduler_name()); !s.empty())
    pod_spec["schedulerName"] = std::string(s);
  if (const auto n = to_string_view(r.node_name()); !n.empty())
    pod_spec["nodeName"] = std::string(n);
  if (r.priority() != std::numeric_limits<std::int32_t>::max()) pod_spec["priority"] = r.priority();
  if (r.not_in_nodes() != nullptr && r.not_in_nodes()->size() > 0) {
    json values = json::array();
    for (const auto* n : *r.not_in_nodes()) values.push_back(std::string(to_string_view(n)));
    pod_spec["affinity"] = {
        {"nodeAffinity",
         {{"requiredDuringSchedulingIgnoredDuringExecution",
           {{"nodeSelectorTerms",
             json::array({{{"matchFields", json::array({{{"key", "metadata.name"},
                                                         {"operator", "NotIn"},
                                                         {"values", values}}})}}})}}}}}};
  }

  json owners = json::array();
  if (r.owners() != nullptr) {
    for (const auto* o : *r.owners()) {
      json owner = json::object();
      if (o->has_object()) {
        json obj = json::object();
        for (auto [key, v] :
             {std::pair{"uid", o->object_uid()}, std::pair{"name", o->object_name()},
              std::pair{"namespace", o->object_namespace()}})
          if (!to_string_view(v).empty()) obj[key] = std::string(to_string_view(v));
        owner["object"] = obj;
      }
      if (o->has_controller()) {
        json c = {{"apiVersion", std::string(to_string_view(o->controller_api_version()))},
                  {"kind", std::string(to_string_view(o->controller_kind()))},
                  {"name", std::string(to_string_view(o->controller_name()))},
                  {"uid", std::string(to_string_view(o->controller_uid()))}};
        if (o->controller_flag() >= 0) c["controller"] = o->controller_flag() == 1;
        if (const auto ns = to_string_view(o->controller_namespace()); !ns.empty())
          c["namespace"] = std::string(ns);
        owner["controller"] = c;
      }
      if (o->has_label_selector()) {
        json ml = json::object();
        if (o->match_labels() != nullptr)
          for (const auto* kv : *o->match_labels())
            ml[std::string(to_string_view(kv->key()))] = std::string(to_string_view(kv->value()));
        owner["labelSelector"] = {{"matchLabels", ml}};
      }
      owners.push_back(owner);
    }
  }

  json spec = {
      {"template", {{"spec", pod_spec}}}, {"owners", owners}, {"allocateOnce", r.allocate_once()}};
  // ttl and expires are exclusive in Koordinator's API; expires is checked first. A ttl of 0
  // with no expires disables expiry ("0s"); with expires, ttl is left to the CRD's default.
  if (r.ttl_ms() > 0 || r.expires_ms() < 0)
    spec["ttl"] = go_duration_ms(std::max<std::int64_t>(0, r.ttl_ms()));
  if (r.expires_ms() >= 0) spec["expires"] = rfc3339(r.expires_ms());
  if (const auto p = to_string_view(r.allocate_policy()); !p.empty())
    spec["allocatePolicy"] = std::string(p);
  if (r.unschedulable()) spec["unschedulable"] = true;
  return json{{"apiVersion", "scheduling.koordinator.sh/v1alpha1"},
              {"kind", "Reservation"},
              {"metadata", {{"name", std::string(to_string_view(r.name()))}, {"labels", labels}}},
              {"spec", spec}};
}

// ---- the writes --------------------------------------------------------------------------

result<json> decision_sink::get_object(const std::string& path, std::uint32_t& attempts) {
  auto r = send([&] { return client_.get(path); }, opt_.max_attempts);
  attempts += r.attempts;
  if (!r.last) return tl::make_unexpected(r.last.error());
  json j = json::parse(r.last->body, nullptr, false);
  if (!j.is_object()) return fail(errc::invalid_input, "response is not a JSON object", path);
  return j;
}

write_outcome decision_sink::reservation_status_write(const wire::Envelope& env) {
  const auto& p = *env.payload_as_ReservationPhaseChanged();
  const std::string name(to_string_view(p.name()));
  write_outcome o{.kind = write_kind::reservation_status, .object = name};
  reservation_phase_write w{.phase = std::string(to_string_view(p.phase())),
                            .node = std::string(to_string_view(p.node())),
                            .reason = std::string(to_string_view(p.reason())),
                            .allocatable = resource_list_json(p.allocatable()),
                            .owner_ns = {},
                            .owner_name = {},
                            .owner_uid = {},
                            .time = rfc3339(env.event_time_ms())};
  if (w.phase != "Available" && w.phase != "Pending" && w.phase != "Succeeded" &&
      w.phase != "Failed") {
    o.message = "Reservation " + name + ": phase \"" + w.phase + "\" is not one Colony writes";
    return o;
  }
  if (w.phase == "Succeeded" && p.owner() != nullptr && p.owner()->size() > 0) {
    const auto pod_key = split_pod_key(to_string_view(p.owner()));
    w.owner_ns = pod_key.first;
    w.owner_name = pod_key.second;
    // currentOwners are ObjectReferences with the pod's uid, which the record does not carry.
    auto pod = get_object("/api/v1/namespaces/" + w.owner_ns + "/pods/" + w.owner_name, o.attempts);
    if (pod) {
      w.owner_uid = pod->value("/metadata/uid"_json_pointer, std::string());
    } else if (pod.error().code != errc::not_found) {
      o.http_status = http_status_of(pod.error());
      o.message = "Reservation " + name + ": reading owner pod " + w.owner_ns + "/" + w.owner_name +
                  ": " + pod.error().describe();
      return o;
    }
  }
  const std::string path = std::string(reservations_path) + "/" + name;
  for (std::uint32_t round = 1;; ++round) {
    const bool last_round = round >= std::max(1u, opt_.max_attempts);
    auto cur = get_object(path, o.attempts);
    if (!cur) {
      o.http_status = http_status_of(cur.error());
      if (cur.error().code == errc::not_found) {
        // updateReservationStatus skips a reservation that is gone (a deleted one's Failed
        // record comes after its deletion).
        o.ok = true;
        o.message = "reservation is gone";
      } else {
        o.message = cur.error().describe();
      }
      break;
    }
    const json none;
    const json& have = cur->contains("status") ? (*cur)["status"] : none;
    if (reservation_phase_is_stale(have, w.phase)) {
      o.ok = true;
      o.http_status = 200;
      o.message = "reservation is " + have.value("phase", std::string()) + "; an older " + w.phase +
                  " is not written";
      break;
    }
    const json want = reservation_status(have, w);
    if (reservation_status_holds(have, want)) {
      o.ok = true;
      o.http_status = 200;
      o.message = "reservation already has this status";
      break;
    }
    if (replace_field(o, *cur, "status", want, path + "/status", last_round,
                      "reservation already has this status",
                      w.phase + (w.node.empty() ? "" : " on " + w.node)))
      continue;
    break;
  }
  if (!o.ok) o.message = "Reservation " + name + " status: " + o.message;
  return o;
}

std::optional<write_outcome> decision_sink::reservation_object_write(const wire::Envelope& env) {
  // An observation (the bridge's record of an object) is the API server's already.
  if (env.causation() < 0 || to_string_view(env.source()) == bridge_source) return std::nullopt;
  const auto& r = *env.payload_as_ReservationUpserted();
  const std::string name(to_string_view(r.name()));
  write_outcome o{.kind = write_kind::reservation, .object = name};
  if (r.deleted()) {
    const std::string path = std::string(reservations_path) + "/" + name;
    auto d = send([&] { return client_.del(path); }, opt_.max_attempts);
    o.attempts = d.attempts;
    if (d.last) {
      o.ok = o.wrote = true;
      o.http_status = d.last->status;
      o.message = "deleted";
    } else if (d.last.error().code == errc::not_found) {
      o.ok = true;
      o.http_status = 404;
      o.message = "reservation is gone";
    } else {
      o.http_status = http_status_of(d.last.error());
      o.message = "Reservation " + name + " delete: " + d.last.error().describe();
    }
    return o;
  }
  const std::string body = reservation_object(r).dump();
  auto c = send([&] { return client_.post(reservations_path, body); }, opt_.max_attempts);
  o.attempts = c.attempts;
  if (c.last) {
    o.ok = o.wrote = true;
    o.http_status = c.last->status;
    o.message = "created";
  } else if (c.last.error().code == errc::already_exists) {
    // Created before (a replay after a restart): the record names an object that exists.
    o.ok = true;
    o.http_status = 409;
    o.message = "reservation already exists";
  } else {
    o.http_status = http_status_of(c.last.error());
    o.message = "Reservation " + name + " create: " + c.last.error().describe();
    if (c.last.error().code == errc::not_found)
      o.message +=
          " (no Reservation API: CRD scheduling.koordinator.sh reservations not installed)";
  }
  return o;
}

}  // namespace colony::kube
