// PodMigrationJob (scheduling.koordinator.sh/v1alpha1, cluster-scoped) -> the records of
// Colony's migration controller, for a job a user created:
//   ADDED, phase "", Pending or Running   MigrationJobCreated (the job enters arbitration)
//   ADDED in a final phase                nothing (a job that ended before Colony saw it)
//   MODIFIED to status.phase Aborted      MigrationJobPhaseChanged Aborted (the user's decision)
//   DELETED while not final               MigrationJobPhaseChanged Aborted, reason Deleted
// Koordinator's controller wires only PMJ Create events into arbitration and reconciles on
// Update/Delete (pkg/descheduler/controllers/migration/controller.go, arbitrator/handler.go), so
// only a creation makes a job; Aborted is never written by the controller, only by a user.
//
// A job carrying koordinator.sh/job-created-by was made by a descheduler: Colony's own
// (translate_options::descheduler_name; its MigrationJobCreated is a decision already in the log,
// the sink created the object from it) gives no MigrationJobCreated but its abort or deletion is
// recorded; another instance's gives nothing at all, as Koordinator's Reconcile ignores a job
// whose job-created-by is not its own (controllers/migration/evict.go AnnotationJobCreatedBy).
#include <algorithm>
#include <string>
#include <tuple>

#include "bridges/kubernetes/translate_internal.hpp"
#include "messages/names.hpp"

namespace colony::kube::translate_internal {

namespace {

constexpr std::string_view phase_aborted = "Aborted";

bool final_phase(std::string_view p) {
  return p == "Succeeded" || p == "Failed" || p == phase_aborted;
}

// Whose job it is, from koordinator.sh/job-created-by.
enum class owner : std::uint8_t { user, colony, other };

struct job_fields {
  object_ref ref;
  owner by = owner::user;
  std::string phase;  // status.phase ("" = Pending)
  std::string pod;    // "namespace/name", "" when either is empty
  std::string mode;
  std::int64_t ttl_ms = 0;
  bool paused = false;
  std::string reason, trigger, creator;
};

// The manager of the object's first write (the managedFields entry without a subresource with
// the earliest time, ties by name): who created the job, e.g. "kubectl-create". "" if none.
std::string creating_manager(const json* md) {
  const json* mf = member(md, "managedFields");
  if (mf == nullptr || !mf->is_array()) return {};
  std::string best_time, best;
  bool found = false;
  for (const auto& e : *mf) {
    const json* sub = member(e, "subresource");
    if (sub != nullptr && !(sub->is_string() && sub->get<std::string>().empty())) continue;
    const json* m = member(e, "manager");
    if (m == nullptr || !m->is_string()) continue;
    const json* t = member(e, "time");
    const std::string time = t != nullptr && t->is_string() ? t->get<std::string>() : std::string();
    const std::string name = m->get<std::string>();
    if (!found || std::tie(time, name) < std::tie(best_time, best)) {
      best_time = time;
      best = name;
      found = true;
    }
  }
  return best;
}

// Reads and checks what the records carry. For another instance's job only the name and owner.
result<job_fields> read_job(const json& o, const translate_options& opt) {
  job_fields f;
  auto ref = read_ref(object_kind::pod_migration_job, o, false);
  if (!ref) return tl::unexpected(ref.error());
  f.ref = *ref;
  if (!ref->ns.empty())
    return invalid(f.ref, "metadata.namespace", "must be empty: PodMigrationJob is cluster-scoped");
  const json* md = member(o, "metadata");
  const json* anns = member(md, "annotations");
  if (anns != nullptr && !anns->is_object())
    return invalid(f.ref, "metadata.annotations", "must be an object");
  const auto annotation = [&](std::string_view key) -> result<std::string> {
    return string_member(anns, key, f.ref, "metadata.annotations[" + std::string(key) + "]");
  };
  auto created_by = annotation(names::annotation_job_created_by);
  if (!created_by) return tl::unexpected(created_by.error());
  if (!created_by->empty())
    f.by = *created_by == opt.descheduler_name ? owner::colony : owner::other;
  if (f.by == owner::other) return f;

  const json* status = member(o, "status");
  if (status != nullptr && !status->is_object())
    return invalid(f.ref, "status", "must be an object");
  auto phase = string_member(status, "phase", f.ref, "status.phase");
  if (!phase) return tl::unexpected(phase.error());
  // PodMigrationJobPhase (apis/scheduling/v1alpha1/pod_migration_job_types.go); "" is Pending.
  if (!phase->empty() && *phase != "Pending" && *phase != "Running" && !final_phase(*phase))
    return invalid(f.ref, "status.phase",
                   quote_text(*phase) + " is not Pending, Running, Succeeded, Failed, Aborted");
  f.phase = *phase;

  const json* spec = member(o, "spec");
  if (spec != nullptr && !spec->is_object()) return invalid(f.ref, "spec", "must be an object");
  // podRef: the controller fails a job without namespace or name (InvalidPodRef), so an empty
  // one is carried as pod "" rather than refused.
  const json* pod_ref = member(spec, "podRef");
  if (pod_ref != nullptr && !pod_ref->is_object())
    return invalid(f.ref, "spec.podRef", "must be an object");
  auto pod_ns = string_member(pod_ref, "namespace", f.ref, "spec.podRef.namespace");
  if (!pod_ns) return tl::unexpected(pod_ns.error());
  auto pod_name = string_member(pod_ref, "name", f.ref, "spec.podRef.name");
  if (!pod_name) return tl::unexpected(pod_name.error());
  if (!pod_ns->empty() && !pod_name->empty()) f.pod = *pod_ns + "/" + *pod_name;
  // PodMigrationJobMode; empty = the controller's defaultJobMode.
  auto mode = string_member(spec, "mode", f.ref, "spec.mode");
  if (!mode) return tl::unexpected(mode.error());
  if (!mode->empty() && *mode != "ReservationFirst" && *mode != "EvictDirectly")
    return invalid(f.ref, "spec.mode",
                   quote_text(*mode) + " is not ReservationFirst, EvictDirectly");
  f.mode = *mode;
  // A metav1.Duration; the controller counts a ttl <= 0 as none (abortJobIfTimeout).
  if (const json* ttl = member(spec, "ttl")) {
    auto ms = parse_duration_ms(*ttl, f.ref, "spec.ttl");
    if (!ms) return tl::unexpected(ms.error());
    f.ttl_ms = std::max<std::int64_t>(*ms, 0);
  }
  auto paused = bool_member(spec, "paused", f.ref, "spec.paused");
  if (!paused) return tl::unexpected(paused.error());
  f.paused = *paused;
  // The evictor's annotations (controllers/migration/evictor/interpreter.go); a user may set them.
  auto reason = annotation(names::annotation_evict_reason);
  if (!reason) return tl::unexpected(reason.error());
  f.reason = std::move(*reason);
  auto trigger = annotation(names::annotation_evict_trigger);
  if (!trigger) return tl::unexpected(trigger.error());
  f.trigger = std::move(*trigger);
  f.creator = creating_manager(md);
  return f;
}

messages::byte_buffer created(const job_fields& f, const request& r) {
  messages::event_builder b;
  auto& fbb = b.fbb();
  // Schema field order, one creating call per statement (docs/events.md).
  const auto name = fbb.CreateString(f.ref.name);
  const auto pod = fbb.CreateString(f.pod);
  const auto mode = fbb.CreateString(f.mode);
  const auto reason = fbb.CreateString(f.reason);
  const auto creator = fbb.CreateString(f.creator);
  // The trigger as the descheduler's own jobs carry it (a text term), so the eviction message
  // names it.
  std::vector<flatbuffers::Offset<wire::Term>> terms;
  if (!f.trigger.empty()) {
    const auto tn = fbb.CreateString("trigger");
    const auto tv = fbb.CreateString(f.trigger);
    wire::TermBuilder tb(fbb);
    tb.add_name(tn);
    tb.add_text(tv);
    terms.push_back(tb.Finish());
  }
  const auto inputs = fbb.CreateVector(terms);
  const auto payload = wire::CreateMigrationJobCreated(fbb, name, pod, mode, reason, f.ttl_ms,
                                                       creator, inputs, f.paused);
  return b.finish(header(r.time, wire::EntityKind::PodMigrationJob, f.ref.name, *r.options),
                  payload);
}

messages::byte_buffer aborted(const job_fields& f, const request& r, std::string_view reason,
                              const std::string& message) {
  messages::event_builder b;
  auto& fbb = b.fbb();
  const auto name = fbb.CreateString(f.ref.name);
  const auto phase = fbb.CreateString(phase_aborted);
  const auto why = fbb.CreateString(reason);
  const auto msg = fbb.CreateString(message);
  const auto payload = wire::CreateMigrationJobPhaseChanged(fbb, name, phase, why, msg);
  return b.finish(header(r.time, wire::EntityKind::PodMigrationJob, f.ref.name, *r.options),
                  payload);
}

}  // namespace

json migration_job_projection(const json& o) {
  // What the translation reads: the owner annotation, the spec and the phase. Colony's own
  // status writes (status.status, conditions, reason, message) are no news.
  const json* md = member(o, "metadata");
  const json* created_by = member(member(md, "annotations"), names::annotation_job_created_by);
  const json* uid = member(md, "uid");
  const json* spec = member(o, "spec");
  const json* phase = member(member(o, "status"), "phase");
  return json{{"uid", uid != nullptr ? *uid : json()},
              {"createdBy", created_by != nullptr ? *created_by : json()},
              {"spec", spec != nullptr ? *spec : json()},
              {"phase", phase != nullptr ? *phase : json()}};
}

result<event_list> translate_migration_job(const request& r) {
  auto f = read_job(*r.object, *r.options);
  if (!f) return tl::unexpected(f.error());
  event_list out;
  if (f->by == owner::other) return out;
  switch (r.what) {
    case op::added:
      // Colony's own job comes back from the API (or is listed again after a restart): its
      // MigrationJobCreated is the descheduler's decision, already logged.
      if (f->by == owner::user && !final_phase(f->phase)) out.push_back(created(*f, r));
      break;
    case op::modified: {
      std::string before;
      if (const json* p = member(member(r.old_object, "status"), "phase"); p && p->is_string())
        before = p->get<std::string>();
      if (f->phase != phase_aborted || before == phase_aborted) break;
      // The user's words, when the abort wrote any: a reason or message the status held before
      // is the controller's, not the user's. Read leniently (they are only carried).
      const auto said = [&](const char* key) {
        const json* now = member(member(*r.object, "status"), key);
        const json* was = member(member(r.old_object, "status"), key);
        if (now == nullptr || !now->is_string() || (was != nullptr && *was == *now))
          return std::string();
        return now->get<std::string>();
      };
      const std::string message = said("message");
      out.push_back(
          aborted(*f, r, said("reason"),
                  message.empty() ? "PodMigrationJob " + f->ref.name + " aborted" : message));
      break;
    }
    case op::deleted:
      // A job deleted before it ended is stopped for good (Koordinator's arbitrator drops it
      // and its reconcile finds nothing): recorded as an abort, so the controller leaves it.
      if (!final_phase(f->phase))
        out.push_back(aborted(*f, r, "Deleted", "PodMigrationJob " + f->ref.name + " deleted"));
      break;
  }
  return out;
}

}  // namespace colony::kube::translate_internal
