#include "actors/descheduler/actor/migration_controller_component.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "actors/descheduler/arbitration.hpp"
#include "actors/descheduler/migration_filter.hpp"
#include "messages/names.hpp"
#include "messages/terms.hpp"

namespace colony::descheduler_actor {

namespace fb = flatbuffers;
using descheduler::job_phase;
using messages::to_string_view;

migration_controller_component::migration_controller_component(migration_controller_options opt)
    : opt_(std::move(opt)),
      tokens_(static_cast<double>(std::max<std::int64_t>(1, opt_.args.evict_burst))) {}

std::int64_t migration_controller_component::next_tick_after(std::int64_t t) const {
  const std::int64_t i = std::max<std::int64_t>(1, opt_.args.arbitration_interval_ms);
  return (t / i + 1) * i;
}

void migration_controller_component::on_event(const wire::Envelope& env,
                                              std::vector<messages::byte_buffer>& /*out*/) {
  now_ = std::max(now_, env.event_time_ms());
  last_offset_ = static_cast<std::int64_t>(env.offset());
  using P = wire::Payload;
  switch (env.payload_type()) {
    case P::PodEvicted: {
      const auto* e = env.payload_as_PodEvicted();
      const auto pod = to_string_view(e->pod());
      ended_.emplace_back(std::string(pod), last_offset_);
      // trackEvictedPod, for an eviction this instance did not just issue (before the view
      // forgets the pod).
      if (e->reason() == wire::EvictionReason::Descheduled) {
        if (const auto it = tracked_.find(pod); it != tracked_.end()) {
          tracked_.erase(it);
        } else if (const auto* p = view_.pod(pod); p != nullptr) {
          const auto w = view_.workload(*p);
          limits_.track(*p, w ? w->replicas : 0, env.event_time_ms());
        }
      }
      break;
    }
    case P::PodFinished:
      ended_.emplace_back(std::string(to_string_view(env.payload_as_PodFinished()->pod())),
                          last_offset_);
      break;
    case P::ReservationPhaseChanged: {
      const auto* e = env.payload_as_ReservationPhaseChanged();
      if (reserving_.count(to_string_view(e->name())) == 0) return;  // not a job's reservation
      reservation_change c;
      c.name = std::string(to_string_view(e->name()));
      c.phase = std::string(to_string_view(e->phase()));
      c.node = std::string(to_string_view(e->node()));
      c.reason = std::string(to_string_view(e->reason()));
      c.owner = std::string(to_string_view(e->owner()));
      c.offset = last_offset_;
      reservation_changes_.push_back(std::move(c));
      return;  // the view does not read reservations
    }
    default:
      break;
  }
  view_.on_event(env);
  if (env.payload_type() == P::MigrationJobCreated) {
    const std::string name(to_string_view(env.payload_as_MigrationJobCreated()->name()));
    const auto* j = view_.job(name);
    if (j != nullptr && j->info.phase == job_phase::pending && !waiting_.count(name)) {
      waiting_.insert(name);
      const std::int64_t t = next_tick_after(now_);
      if (!next_tick_ || t < *next_tick_) next_tick_ = t;
    }
  } else if (env.payload_type() == P::MigrationJobPhaseChanged) {
    const std::string name(to_string_view(env.payload_as_MigrationJobPhaseChanged()->name()));
    const auto* j = view_.job(name);
    if (j != nullptr && descheduler::is_final(j->info.phase)) {
      waiting_.erase(name);
      evicting_.erase(name);
      std::erase(to_evict_, name);
    }
  }
}

std::optional<std::int64_t> migration_controller_component::next_wakeup_ms() const {
  std::optional<std::int64_t> t = next_tick_;
  for (const auto& j : view_.job_list()) {  // the jobs not final
    if (j.ttl_ms <= 0) continue;
    const std::int64_t due = j.created_ms + j.ttl_ms;
    if (!t || due < *t) t = due;
  }
  if (t) t = std::max(*t, now_);
  return t;
}

void migration_controller_component::phase(const view_job& j, job_phase p, std::string_view reason,
                                           const std::string& message, std::int64_t causation,
                                           std::vector<messages::byte_buffer>& out,
                                           std::string_view node, std::string_view pod) {
  auto& fbb = b_.fbb();
  auto name = fbb.CreateString(j.info.name);
  auto ph = fbb.CreateString(descheduler::to_string(p));
  auto why = fbb.CreateString(reason);
  auto msg = fbb.CreateString(message);
  const auto nd = node.empty() ? fb::Offset<fb::String>{} : fbb.CreateString(node);
  const auto pd = pod.empty() ? fb::Offset<fb::String>{} : fbb.CreateString(pod);
  auto payload = wire::CreateMigrationJobPhaseChanged(fbb, name, ph, why, msg, nd, pd);
  const messages::header h{event_time{now_}, wire::EntityKind::PodMigrationJob, j.info.name,
                           causation >= 0 ? causation : last_offset_, opt_.name};
  out.push_back(b_.finish(h, payload));
  const std::string n = j.info.name;
  view_.set_phase(n, p, reason);
  if (descheduler::is_final(p)) {
    waiting_.erase(n);
    evicting_.erase(n);
    std::erase(to_evict_, n);
    reserving_.erase(n);
  }
}

bool migration_controller_component::create_reservation(const view_job& j,
                                                        std::vector<messages::byte_buffer>& out) {
  const auto* pod = view_.pod(j.info.pod);
  // Owners: the pod's controller (reservation/util.go CreateOrUpdateReservationOptions; a
  // running bare pod gives none, which the Reservation's validation refuses).
  if (pod == nullptr || pod->owner.empty()) {
    phase(j, job_phase::failed, descheduler::job_reason::failed_create_reservation,
          "Pod " + j.info.pod + " has no controller to own its Reservation", j.created_offset, out);
    return false;
  }
  const resource_list* req = view_.requests(j.info.pod);
  auto& fbb = b_.fbb();
  const auto name = b_.key_string(j.info.name);
  const auto uid = fbb.CreateString(j.info.name);
  const auto requests = b_.resources(req ? *req : resource_list{});
  const auto c_kind = fbb.CreateString(pod->owner.kind);
  const auto c_name = fbb.CreateString(pod->owner.name);
  const auto c_ns = fbb.CreateString(pod->ns);
  wire::ReservationOwnerBuilder ob(fbb);
  ob.add_has_controller(true);
  ob.add_controller_kind(c_kind);
  ob.add_controller_name(c_name);
  ob.add_controller_namespace(c_ns);
  ob.add_controller_flag(1);
  const auto owner = ob.Finish();
  const auto owners = fbb.CreateVector(&owner, 1);
  // Sorted by key, as the record's comment asks.
  const auto labels = b_.key_values(
      {{std::string(names::label_created_by), "koord-descheduler"},
       {std::string(names::label_reservation_order), std::to_string(j.info.created_ms)}});
  const auto scheduler = fbb.CreateString(pod->scheduler_name);
  const auto here = fbb.CreateString(pod->node);
  const auto not_in = fbb.CreateVector(&here, 1);
  // The job's ttl when the template sets none; none on the job: the CRD's default (24 h).
  const std::int64_t ttl = j.ttl_ms > 0 ? j.ttl_ms : std::int64_t{24} * 3600 * 1000;
  wire::ReservationUpsertedBuilder rb(fbb);
  rb.add_name(name);
  rb.add_uid(uid);
  rb.add_requests(requests);
  rb.add_priority(pod->priority.value_or(0));
  rb.add_owners(owners);
  rb.add_ttl_ms(ttl);
  rb.add_expires_ms(-1);
  rb.add_allocate_once(true);
  rb.add_labels(labels);
  rb.add_scheduler_name(scheduler);
  rb.add_not_in_nodes(not_in);
  const auto payload = rb.Finish();
  const messages::header h{event_time{now_}, wire::EntityKind::Reservation, j.info.name,
                           j.created_offset >= 0 ? j.created_offset : last_offset_, opt_.name};
  out.push_back(b_.finish(h, payload));
  auto& r = reserving_[j.info.name];
  r = reserving_job{};
  r.spec = out.back();
  return true;
}

void migration_controller_component::delete_reservation(const std::string& job,
                                                        std::int64_t causation,
                                                        std::vector<messages::byte_buffer>& out) {
  const auto it = reserving_.find(job);
  if (it == reserving_.end()) return;
  // The spec as written, with deleted = true (Reconciler.deleteReservation).
  const auto* env = wire::GetEnvelope(it->second.spec.data());
  const auto* e = env->payload_as_ReservationUpserted();
  auto& fbb = b_.fbb();
  const auto name = b_.key_string(job);
  const auto uid = fbb.CreateString(to_string_view(e->uid()));
  const auto requests = b_.resources(messages::to_resource_list(e->requests()));
  wire::ReservationUpsertedBuilder rb(fbb);
  rb.add_name(name);
  rb.add_uid(uid);
  rb.add_requests(requests);
  rb.add_ttl_ms(e->ttl_ms());
  rb.add_expires_ms(-1);
  rb.add_deleted(true);
  const auto payload = rb.Finish();
  const messages::header h{event_time{now_}, wire::EntityKind::Reservation, job, causation,
                           opt_.name};
  out.push_back(b_.finish(h, payload));
}

void migration_controller_component::on_reservation_phase(const reservation_change& c,
                                                          std::vector<messages::byte_buffer>& out) {
  const auto rit = reserving_.find(c.name);
  const view_job* jp = view_.job(c.name);
  if (rit == reserving_.end() || jp == nullptr || descheduler::is_final(jp->info.phase)) return;
  const view_job j = *jp;
  auto& r = rit->second;
  using step = reserving_job::step;
  if (c.phase == "Pending") {
    // handleScheduleFailed: ReservationScheduled=False/Unschedulable; the job stays Running
    // and waits (its TTL ends it).
    if (c.reason == "Unschedulable" && !r.unschedulable_told) {
      r.unschedulable_told = true;
      phase(j, job_phase::running, descheduler::job_reason::unschedulable,
            "Reservation " + c.name + " is unschedulable", c.offset, out);
    }
  } else if (c.phase == "Available") {
    if (r.at != step::reserving) return;
    const auto* pod = view_.pod(j.info.pod);
    if (pod != nullptr && pod->node == c.node) {
      phase(j, job_phase::failed, descheduler::job_reason::forbidden_migrate_pod,
            "Reservation " + c.name + " is scheduled to the pod's own node " + c.node, c.offset,
            out, c.node);
      return;
    }
    r.at = step::scheduled;
    r.node = c.node;
    phase(j, job_phase::running, descheduler::job_reason::evicting,
          "Reservation " + c.name + " is scheduled to node " + c.node, c.offset, out, c.node);
    // Evicted in the same reconcile when the token bucket and the object limiters allow, else
    // at a later tick (the requeue).
    const view_job now_running = *view_.job(c.name);
    if (!try_evict(now_running, out)) {
      to_evict_.push_back(j.info.name);
      if (!next_tick_ || *next_tick_ > next_tick_after(now_)) next_tick_ = next_tick_after(now_);
    }
  } else if (c.phase == "Succeeded") {
    if (r.at == step::evicted) {
      const std::string node = r.node;
      phase(j, job_phase::succeeded, descheduler::job_reason::pod_bound_reservation,
            "Bind Pod \"" + c.owner + "\" in Reservation \"" + c.name + "\"", c.offset, out, node,
            c.owner);
    } else {
      // evictPod: the reservation was consumed before the eviction was issued.
      phase(j, job_phase::failed, descheduler::job_reason::forbidden_migrate_pod,
            "Reservation " + c.name + " was taken by " + c.owner + " before the eviction", c.offset,
            out, r.node);
    }
  } else if (c.phase == "Failed") {
    const bool expired = c.reason == "Expired";
    phase(j, job_phase::failed,
          expired ? descheduler::job_reason::reservation_expired
                  : descheduler::job_reason::missing_reservation,
          "Reservation " + c.name + (expired ? " expired" : " is gone (" + c.reason + ")"),
          c.offset, out, r.node);
  }
}

bool migration_controller_component::try_evict(const view_job& j,
                                               std::vector<messages::byte_buffer>& out) {
  const auto* pod = view_.pod(j.info.pod);
  if (pod == nullptr || pod->node.empty()) {
    phase(j, job_phase::failed, descheduler::job_reason::missing_pod,
          "Pod " + j.info.pod + " is not found", j.created_offset, out);
    return true;
  }
  // An object limiter out of tokens holds the job (requeued: the next tick asks again) unless
  // the pod asks to be evicted (controller.go doMigrate, filterLimitedObject).
  if (limits_.limited(*pod, now_) && pod->annotations.count(descheduler::annotation_evict) == 0) {
    ++stats_.object_limited;
    return false;
  }
  // One token bucket for every eviction (evictor/interpreter.go): evictQPS, evictBurst.
  const double qps = opt_.args.evict_qps;
  if (qps > 0) {
    const double burst = static_cast<double>(std::max<std::int64_t>(1, opt_.args.evict_burst));
    tokens_ = std::min(burst, tokens_ + static_cast<double>(now_ - tokens_at_) / 1000.0 * qps);
    tokens_at_ = now_;
    if (tokens_ < 1) {
      ++stats_.throttled;
      return false;
    }
    tokens_ -= 1;
  }
  const resource_list* req = view_.requests(j.info.pod);
  auto& fbb = b_.fbb();
  auto p = fbb.CreateString(j.info.pod);
  auto node = fbb.CreateString(pod->node);
  const std::string trigger = j.trigger.empty() ? std::string("PodMigrationJob") : j.trigger;
  auto msg = fbb.CreateString(
      fmt::format("evicted by PodMigrationJob {} ({}): {}", j.info.name, trigger, j.reason));
  auto inputs = messages::text_terms(fbb, {{"migrationJob", j.info.name}, {"trigger", trigger}});
  auto released = b_.resources(req ? *req : resource_list{});
  auto payload = wire::CreatePodEvicted(fbb, p, node, wire::EvictionReason::Descheduled, msg,
                                        inputs, released);
  const messages::header h{event_time{now_}, wire::EntityKind::Pod, j.info.pod,
                           j.created_offset >= 0 ? j.created_offset : last_offset_, opt_.name};
  out.push_back(b_.finish(h, payload));
  evicting_.insert(j.info.name);
  ++stats_.evictions;
  const auto w = view_.workload(*pod);
  limits_.track(*pod, w ? w->replicas : 0, now_);
  tracked_.insert(j.info.pod);
  return true;
}

void migration_controller_component::on_batch_end(std::vector<messages::byte_buffer>& out) {
  // Pods that ended: their jobs complete (eviction issued) or lose their pod.
  for (const auto& [pod, causation] : ended_) {
    const view_job* j = view_.active_job_of(pod);
    if (j == nullptr) continue;
    const view_job copy = *j;
    const auto rf = reserving_.find(copy.info.name);
    if (evicting_.count(copy.info.name) && rf != reserving_.end()) {
      // ReservationFirst: evicted; the job ends when the replacement binds the reservation.
      evicting_.erase(copy.info.name);
      rf->second.at = reserving_job::step::evicted;
      const std::string node = rf->second.node;
      phase(copy, job_phase::running, descheduler::job_reason::wait_for_pod_bind_reservation,
            "Pod " + pod + " has been evicted; waiting for a pod to bind Reservation " +
                copy.info.name,
            causation, out, node);
    } else if (evicting_.count(copy.info.name))
      phase(copy, job_phase::succeeded, descheduler::job_reason::evict_complete,
            "Pod " + pod + " has been evicted", causation, out);
    else
      phase(copy, job_phase::failed, descheduler::job_reason::missing_pod,
            "Pod " + pod + " ended before its eviction", causation, out);
  }
  ended_.clear();
  for (const auto& c : std::exchange(reservation_changes_, {})) on_reservation_phase(c, out);
  if (next_tick_ && now_ >= *next_tick_) {
    tick(out);
    return;
  }
  // A TTL that runs out between ticks.
  for (const auto& j : view_.job_list())
    if (j.ttl_ms > 0 && now_ - j.created_ms >= j.ttl_ms) {
      tick(out);
      return;
    }
}

void migration_controller_component::on_wakeup(std::int64_t now_ms,
                                               std::vector<messages::byte_buffer>& out) {
  now_ = std::max(now_, now_ms);
  tick(out);
}

void migration_controller_component::tick(std::vector<messages::byte_buffer>& out) {
  // 1. TTL (controller.go: now - creationTimestamp >= ttl -> Failed/Timeout).
  std::vector<std::string> expired;
  for (const auto& j : view_.job_list())
    if (j.ttl_ms > 0 && now_ - j.created_ms >= j.ttl_ms) expired.push_back(j.name);
  for (const auto& name : expired) {
    const view_job copy = *view_.job(name);
    delete_reservation(name, copy.created_offset, out);
    phase(copy, job_phase::failed, descheduler::job_reason::timeout,
          fmt::format("job timed out after {} ms", copy.ttl_ms), copy.created_offset, out);
  }
  // 2. Arbitration of the waiting jobs.
  if (!waiting_.empty()) {
    ++stats_.passes;
    std::vector<descheduler::arbitration_job> jobs;
    for (const auto& name : waiting_) {
      const view_job* j = view_.job(name);
      if (j == nullptr) continue;
      jobs.push_back({&j->info, view_.pod(j->info.pod)});
    }
    descheduler::sort_jobs(jobs, view_.migration());
    const auto outcome = descheduler::arbitrate_once(
        jobs,
        [this](const descheduler::arbitration_job& a) {
          return descheduler::non_retryable_refusal(*a.pod, opt_.args, view_.migration());
        },
        [this](const descheduler::arbitration_job& a) {
          return descheduler::retryable_refusal(*a.pod, opt_.args, view_.migration(), true);
        },
        [this](const descheduler::job_info& j) { view_.mark_passed(j.name); });
    for (const auto& [job, why] : outcome.failed) {
      ++stats_.forbidden;
      const view_job copy = *view_.job(job->name);
      phase(copy, job_phase::failed, descheduler::job_reason::forbidden_migrate_pod, why,
            copy.created_offset, out);
    }
    for (const auto* job : outcome.passed) {
      ++stats_.passed;
      const view_job copy = *view_.job(job->name);
      waiting_.erase(copy.info.name);
      if (opt_.paused || copy.paused) continue;
      const std::string mode = copy.info.mode.empty() ? opt_.args.default_job_mode : copy.info.mode;
      if (copy.info.pod.empty() || copy.info.pod.front() == '/' || copy.info.pod.back() == '/') {
        phase(copy, job_phase::failed, descheduler::job_reason::invalid_pod_ref,
              "podRef needs a namespace and a name", copy.created_offset, out);
      } else if (view_.pod(copy.info.pod) == nullptr) {
        phase(copy, job_phase::failed, descheduler::job_reason::missing_pod,
              "Pod " + copy.info.pod + " is not found", copy.created_offset, out);
      } else if (mode != descheduler::job_mode_evict_directly) {
        if (create_reservation(copy, out))
          phase(copy, job_phase::running, descheduler::job_reason::reservation_created,
                "Reservation " + copy.info.name + " created for Pod " + copy.info.pod,
                copy.created_offset, out);
      } else {
        phase(copy, job_phase::running, descheduler::job_reason::evicting,
              "Pod " + copy.info.pod + " passed arbitration", copy.created_offset, out);
        to_evict_.push_back(copy.info.name);
      }
    }
  }
  // 3. Evictions, in the order the jobs passed, as the token bucket allows.
  std::vector<std::string> left;
  for (const auto& name : std::vector<std::string>(to_evict_)) {
    const view_job* j = view_.job(name);
    if (j == nullptr || descheduler::is_final(j->info.phase)) continue;
    const view_job copy = *j;
    if (!try_evict(copy, out)) left.push_back(name);
  }
  to_evict_ = std::move(left);
  if (!waiting_.empty() || !to_evict_.empty())
    next_tick_ = next_tick_after(now_);
  else
    next_tick_.reset();
}

}  // namespace colony::descheduler_actor
