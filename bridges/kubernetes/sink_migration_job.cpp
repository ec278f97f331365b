// The PodMigrationJob writes of decision_sink (sink_migration_job.hpp).
#include "bridges/kubernetes/sink_migration_job.hpp"

#include <charconv>
#include <optional>

#include "bridges/kubernetes/kube_time.hpp"
#include "bridges/kubernetes/sink.hpp"
#include "messages/names.hpp"

namespace colony::kube {

using json = nlohmann::json;
using messages::to_string_view;

namespace {

// A string member of a JSON object, "" when absent or not a string (answers are read leniently:
// a malformed status is rewritten, never a reason to throw).
std::string text_of(const json& o, std::string_view key) {
  if (!o.is_object()) return {};
  const auto it = o.find(key);
  return it != o.end() && it->is_string() ? it->get<std::string>() : std::string();
}

bool final_phase(std::string_view p) { return p == "Succeeded" || p == "Failed" || p == "Aborted"; }

// util.UpdateCondition (pkg/descheduler/controllers/migration/util/util.go): replaces the
// condition of this type, keeping lastTransitionTime (and lastProbeTime) when the status is the
// same; true when anything changed.
bool update_condition(json& status, std::string_view type, std::string_view value,
                      std::string_view reason, std::string_view message, std::int64_t time_ms) {
  json c{{"type", type}, {"status", value}, {"lastTransitionTime", rfc3339(time_ms)}};
  if (!reason.empty()) c["reason"] = reason;
  if (!message.empty()) c["message"] = message;
  if (!status.contains("conditions") || !status["conditions"].is_array())
    status["conditions"] = json::array();
  for (auto& old : status["conditions"]) {
    if (text_of(old, "type") != type) continue;
    if (text_of(old, "status") == value && old.contains("lastTransitionTime"))
      c["lastTransitionTime"] = old["lastTransitionTime"];
    if (old.contains("lastProbeTime")) c["lastProbeTime"] = old["lastProbeTime"];
    const bool same = old == c;
    old = std::move(c);
    return !same;
  }
  status["conditions"].push_back(std::move(c));
  return true;
}

// The condition each reason of the controller is written with (controller.go: evictPod,
// createReservation, handleReservationCreateSuccess, syncReservationScheduleFailed,
// waitForPodBindReservation, the bound pod's readiness, preemption), by
// PodMigrationJobConditionType and PodMigrationJobReason
// (apis/scheduling/v1alpha1/pod_migration_job_types.go). `own` set: the condition carries that
// reason and no message (a step the record's reason implies), else the record's.
struct condition_of_reason {
  std::string_view reason, type, status, own;
};
constexpr condition_of_reason reason_conditions[] = {
    {"ReservationCreated", "ReservationCreated", "True", ""},
    {"Evicting", "Eviction", "False", ""},
    {"FailedEvict", "Eviction", "False", ""},
    {"EvictComplete", "Eviction", "True", ""},
    {"FailedCreateReservation", "ReservationCreated", "False", ""},
    {"Unschedulable", "ReservationScheduled", "False", ""},
    // The pod is gone (evictPod: Eviction=True/EvictComplete), the replacement not bound yet.
    {"WaitForPodBindReservation", "Eviction", "True", "EvictComplete"},
    {"WaitForPodBindReservation", "PodBoundReservation", "False", ""},
    {"WaitForBoundPodReady", "BoundPodReady", "False", ""},
    {"Preempting", "Preemption", "False", ""},
    {"PreemptComplete", "Preemption", "True", ""},
};

}  // namespace

std::string go_duration(std::int64_t ms) {
  if (ms == 0) return "0s";
  std::string out = ms < 0 ? "-" : "";
  const std::uint64_t u =
      ms < 0 ? 0 - static_cast<std::uint64_t>(ms) : static_cast<std::uint64_t>(ms);
  if (u < 1000) return out + std::to_string(u) + "ms";
  const std::uint64_t h = u / 3'600'000, m = u / 60'000 % 60, s = u / 1000 % 60, frac = u % 1000;
  if (h > 0) out += std::to_string(h) + "h";
  if (h > 0 || m > 0) out += std::to_string(m) + "m";
  out += std::to_string(s);
  if (frac != 0) {
    std::string f = std::to_string(frac);
    f.insert(0, 3 - f.size(), '0');
    while (f.back() == '0') f.pop_back();
    out += "." + f;
  }
  return out + "s";
}

json migration_job_object(const wire::MigrationJobCreated& job, std::string_view pod_uid) {
  std::string trigger;
  if (job.inputs() != nullptr)
    for (const auto* t : *job.inputs())
      if (to_string_view(t->name()) == "trigger") trigger = std::string(to_string_view(t->text()));
  json annotations = json::object();
  const auto annotate = [&](std::string_view key, std::string_view value) {
    if (!value.empty()) annotations[std::string(key)] = value;
  };
  annotate(names::annotation_evict_reason, to_string_view(job.reason()));
  annotate(names::annotation_evict_trigger, trigger);
  // The creating instance, which Koordinator's Reconcile drives alone, and the marker by which
  // Colony's bridge knows its own jobs when they come back (translate_options::descheduler_name).
  annotate(names::annotation_job_created_by, to_string_view(job.creator()));
  json pod_ref = json::object();
  if (const auto key = to_string_view(job.pod()); !key.empty()) {
    const auto [ns, name] = split_pod_key(key);
    pod_ref = {{"namespace", ns}, {"name", name}};
    if (!pod_uid.empty()) pod_ref["uid"] = pod_uid;
  }
  json spec{{"podRef", pod_ref}};
  if (const auto mode = to_string_view(job.mode()); !mode.empty()) spec["mode"] = mode;
  if (job.ttl_ms() > 0) spec["ttl"] = go_duration(job.ttl_ms());
  if (job.paused()) spec["paused"] = true;
  json metadata{{"name", to_string_view(job.name())}};
  if (!annotations.empty()) metadata["annotations"] = std::move(annotations);
  return json{{"apiVersion", "scheduling.koordinator.sh/v1alpha1"},
              {"kind", "PodMigrationJob"},
              {"metadata", std::move(metadata)},
              {"spec", std::move(spec)}};
}

json migration_job_status(const wire::MigrationJobPhaseChanged& p, const json& current,
                          std::int64_t time_ms) {
  json st = current.is_object() ? current : json::object();
  const std::string phase(to_string_view(p.phase()));
  const std::string reason(to_string_view(p.reason()));
  const std::string message(to_string_view(p.message()));
  const std::string node(to_string_view(p.node()));
  const std::string pod(to_string_view(p.pod()));
  const auto set = [&](const char* key, const std::string& value) {
    if (value.empty()) {
      st.erase(key);
    } else {
      st[key] = value;
    }
  };
  set("phase", phase);
  set("reason", reason);
  set("message", message);
  std::string written;  // the type of the last condition changed, as updateCondition sets status
  if (!node.empty()) {
    // syncReservationScheduleSuccess: the reservation's node, ReservationScheduled=True.
    st["nodeName"] = node;
    if (update_condition(st, "ReservationScheduled", "True", "", "", time_ms))
      written = "ReservationScheduled";
  }
  for (const auto& c : reason_conditions)
    if (c.reason == reason &&
        update_condition(st, c.type, c.status, c.own.empty() ? std::string_view(reason) : c.own,
                         c.own.empty() ? std::string_view(message) : std::string_view(), time_ms))
      written = c.type;
  if (!pod.empty()) {
    // The pod bound into the reservation (status.podRef = GetBoundPod()).
    const auto [ns, name] = split_pod_key(pod);
    st["podRef"] = {{"namespace", ns}, {"name", name}};
    if (phase == "Succeeded" &&
        update_condition(st, "PodBoundReservation", "True", "", message, time_ms))
      written = "PodBoundReservation";
  }
  if (phase == "Succeeded") {
    st["status"] = "Complete";
  } else if (!written.empty()) {
    st["status"] = written;
  }
  if (st.contains("conditions") && st["conditions"].empty()) st.erase("conditions");
  return st;
}

std::optional<write_outcome> decision_sink::migration_job_write(const wire::Envelope& env) {
  // A user's job and a user's abort come from the API (causation -1): nothing to write back.
  if (env.causation() < 0) return std::nullopt;
  const std::string api(migration_job_api);
  if (env.payload_type() == wire::Payload::MigrationJobCreated) {
    const auto& job = *env.payload_as_MigrationJobCreated();
    const std::string name(to_string_view(job.name()));
    write_outcome o{.kind = write_kind::migration_job, .object = name};
    // The pod's uid, as the descheduler puts it in spec.podRef: from the caller's pod index, or
    // read; a pod that cannot be read is named without it (the controller reads it by name).
    std::string uid;
    if (const auto key = to_string_view(job.pod()); !key.empty()) {
      if (opt_.pod_uid) {
        uid = opt_.pod_uid(key);
      } else {
        const auto [ns, pod] = split_pod_key(key);
        const std::string path = "/api/v1/namespaces/" + ns + "/pods/" + pod;
        auto g = send([&] { return client_.get(path); }, opt_.max_attempts);
        o.attempts += g.attempts;
        if (g.last) {
          const json pod_object = json::parse(g.last->body, nullptr, false);
          if (pod_object.is_object() && pod_object.contains("metadata"))
            uid = text_of(pod_object.at("metadata"), "uid");
        }
      }
    }
    const std::string body = migration_job_object(job, uid).dump();
    auto r = send([&] { return client_.post(api, body); }, opt_.max_attempts);
    o.attempts += r.attempts;
    if (r.last) {
      o.ok = o.wrote = true;
      o.http_status = r.last->status;
      o.message = "created";
    } else if (r.last.error().code == errc::already_exists) {
      o.ok = true;  // the same decision carried out before a restart
      o.http_status = 409;
      o.message = "PodMigrationJob already exists";
    } else if (r.last.error().code == errc::not_found) {
      // No PodMigrationJob CRD: nothing to create it in, as Koordinator's descheduler could not
      // run without it; the job still runs in Colony.
      o.ok = true;
      o.http_status = 404;
      o.message =
          "no PodMigrationJob API (CRD scheduling.koordinator.sh podmigrationjobs not "
          "installed)";
    } else {
      o.http_status = http_status_of(r.last.error());
      o.message = "PodMigrationJob " + name + ": create failed after " +
                  std::to_string(r.attempts) + " attempts: " + r.last.error().describe();
    }
    return o;
  }

  const auto& p = *env.payload_as_MigrationJobPhaseChanged();
  const std::string name(to_string_view(p.name()));
  const std::string phase(to_string_view(p.phase()));
  write_outcome o{.kind = write_kind::migration_job_status, .object = name};
  const std::string path = api + "/" + name;
  // Read, then replace the status (Status().Update); a 409 reads again, as the controller's
  // requeue would. attempts: every request of every round.
  for (std::uint32_t round = 1;; ++round) {
    const bool last_round = round >= std::max(1u, opt_.max_attempts);
    auto g = send([&] { return client_.get(path); }, opt_.max_attempts);
    o.attempts += g.attempts;
    if (!g.last) {
      if (g.last.error().code == errc::not_found) {
        // Deleted (by a user or a scavenger), or no CRD: no status to write.
        o.ok = true;
        o.http_status = 404;
        o.message = "PodMigrationJob is gone";
      } else {
        o.http_status = http_status_of(g.last.error());
        o.message = g.last.error().describe();
      }
      break;
    }
    json cur = json::parse(g.last->body, nullptr, false);
    if (!cur.is_object()) {
      o.message = "response is not a JSON object";
      break;
    }
    const json current = cur.contains("status") ? cur["status"] : json();
    // A final phase is never left: the controller stops at one (doMigrate), a user's Aborted is
    // theirs, and an older record replayed must not undo a newer one.
    if (const std::string have = text_of(current, "phase"); final_phase(have) && have != phase) {
      o.ok = true;
      o.http_status = 200;
      o.message = "PodMigrationJob is ";
      o.message += have;
      o.message += " already, not ";
      o.message += phase;
      break;
    }
    const json want = migration_job_status(p, current, env.event_time_ms());
    if (replace_field(o, cur, "status", want, path + "/status", last_round,
                      "PodMigrationJob already has this status", "phase " + phase))
      continue;
    break;
  }
  if (!o.ok) o.message = "PodMigrationJob " + name + " status: " + o.message;
  return o;
}

}  // namespace colony::kube
