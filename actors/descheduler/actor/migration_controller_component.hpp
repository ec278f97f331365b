// migration_controller_component: koord-descheduler's PodMigrationJob controller
// (pkg/descheduler/controllers/migration/controller.go) with its arbitration
// (controllers/migration/arbitrator/), as a cluster-scoped component over the log, named
// "koord-descheduler/migration-controller". Both modes: EvictDirectly and ReservationFirst.
//
// Jobs come from MigrationJobCreated records (any creator). Every arbitration interval of event
// time (arbitrationArgs.interval, ticks at its multiples) while any job is waiting, and when a
// job's TTL runs out, it wakes up and:
//   1. TTL: a job not yet final whose age (event time - creation) reached its ttl (> 0) fails:
//      Failed/Timeout, and its reservation, if it made one, is deleted.
//   2. Arbitration: the waiting jobs sorted (arbitration.hpp: creation time, pod, Job grouping,
//      migrating count), then judged in that order: the non-retryable filter failing fails the
//      job (Failed/ForbiddenMigratePod, the refusal as message); the retryable filters (counting
//      inside a pass) failing keep it waiting; else it passes and is reconciled at once:
//        - paused (the controller's or the job's spec.paused): nothing;
//        - no pod named: Failed/InvalidPodRef; a pod that is gone: Failed/MissingPod;
//        - EvictDirectly: Running/Evicting, then the eviction, when the eviction token bucket
//          (evictQPS, evictBurst, on event time) has a token; else Running and the eviction at a
//          later tick;
//        - ReservationFirst: a ReservationUpserted named as the job (reservation/util.go
//          CreateOrUpdateReservationOptions: the pod's requests, owner = the pod's controller,
//          allocateOnce, the job's ttl, labels created-by koord-descheduler and
//          reservation-order = the job's creation time, not_in_nodes = the pod's node), then
//          Running/ReservationCreated; a pod without a controller: Failed/FailedCreateReservation.
//   3. When the pod's PodEvicted comes back through the log: EvictDirectly: Succeeded/
//      EvictComplete ("Pod <ns/name> has been evicted"); ReservationFirst: Running/
//      WaitForPodBindReservation. If the pod ends otherwise first: as if evicted when the eviction
//      was issued, else Failed/MissingPod.
//   4. ReservationFirst, as the reservation's ReservationPhaseChanged come back: Pending/
//      Unschedulable: Running/Unschedulable (once; the job waits for its TTL); Available on
//      another node: Running/Evicting with node = the reservation's, then the eviction as in 2;
//      Available on the pod's own node, or Succeeded before the eviction: Failed/
//      ForbiddenMigratePod; Succeeded after it: Succeeded/PodBoundReservation with pod = the
//      owner bound into it ("Bind Pod <owner> in Reservation <name>"); Failed/Expired: Failed/
//      ReservationExpired; Failed/Deleted: Failed/MissingReservation.
// The eviction: PodEvicted keyed Pod/<key>, reason Descheduled, message "evicted by
// PodMigrationJob <job> (<trigger>): <reason>", inputs migrationJob and trigger (text terms),
// released = the pod's requests, node = the pod's node; causation = the job's
// MigrationJobCreated offset. Phase changes: MigrationJobPhaseChanged keyed
// PodMigrationJob/<job>, causation = that offset too (or the PodEvicted / PodFinished /
// ReservationPhaseChanged that moved it). Aborted is a user's decision: the controller never
// writes it, and leaves an Aborted job. Ties break by the arbitration order, then by job name.
// Single owner.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "actors/descheduler/actor/descheduler_view.hpp"
#include "actors/descheduler/migration_controller_args.hpp"
#include "actors/descheduler/object_limiter.hpp"
#include "actors/entities/component.hpp"
#include "messages/codec.hpp"

namespace colony::descheduler_actor {

// A ReservationPhaseChanged of a job's reservation, kept until the batch ends.
struct reservation_change {
  std::string name, phase, node, reason, owner;
  std::int64_t offset = -1;
};

inline constexpr std::string_view migration_controller_name =
    "koord-descheduler/migration-controller";

struct migration_controller_options {
  std::string name = std::string(migration_controller_name);
  descheduler::migration_controller_args args;
  bool paused = false;
};

struct migration_controller_stats {
  std::uint64_t passes = 0, passed = 0, forbidden = 0, evictions = 0, throttled = 0;
  std::uint64_t object_limited = 0;  // evictions held by an object limiter (tick by tick)
};

class migration_controller_component final : public entities::component {
 public:
  explicit migration_controller_component(migration_controller_options opt);

  [[nodiscard]] std::string_view name() const override { return opt_.name; }
  [[nodiscard]] bool wants(wire::Payload type) const override {
    return view_wants(type) || type == wire::Payload::ReservationPhaseChanged;
  }
  void on_event(const wire::Envelope& env, std::vector<messages::byte_buffer>& out) override;
  void on_batch_end(std::vector<messages::byte_buffer>& out) override;
  [[nodiscard]] std::optional<std::int64_t> next_wakeup_ms() const override;
  void on_wakeup(std::int64_t now_ms, std::vector<messages::byte_buffer>& out) override;

  [[nodiscard]] const migration_controller_stats& stats() const { return stats_; }

 private:
  void tick(std::vector<messages::byte_buffer>& out);
  void phase(const view_job& j, descheduler::job_phase p, std::string_view reason,
             const std::string& message, std::int64_t causation,
             std::vector<messages::byte_buffer>& out, std::string_view node = {},
             std::string_view pod = {});
  bool try_evict(const view_job& j, std::vector<messages::byte_buffer>& out);
  // ReservationFirst: the reservation of a job that passed arbitration (false: the pod has no
  // controller to own it, and the job failed).
  bool create_reservation(const view_job& j, std::vector<messages::byte_buffer>& out);
  void delete_reservation(const std::string& job, std::int64_t causation,
                          std::vector<messages::byte_buffer>& out);
  void on_reservation_phase(const reservation_change& c, std::vector<messages::byte_buffer>& out);
  [[nodiscard]] std::int64_t next_tick_after(std::int64_t t) const;

  migration_controller_options opt_;
  descheduler_view view_;
  messages::event_builder b_;
  std::int64_t now_ = 0;
  std::int64_t last_offset_ = -1;
  std::set<std::string, std::less<>> waiting_;   // jobs queued for arbitration
  std::vector<std::string> to_evict_;            // passed, Running, eviction not issued yet
  std::set<std::string, std::less<>> evicting_;  // eviction issued, not seen back yet
  std::vector<std::pair<std::string, std::int64_t>> ended_;  // (pod, causation) this batch
  // ReservationFirst jobs whose reservation was written, by job (= reservation) name.
  struct reserving_job {
    enum class step : std::uint8_t { reserving, scheduled, evicted };
    step at = step::reserving;
    std::string node;  // the reservation's node once Available
    bool unschedulable_told = false;
    messages::byte_buffer spec;  // the ReservationUpserted written, re-sent with deleted=true
  };
  std::map<std::string, reserving_job, std::less<>> reserving_;
  std::vector<reservation_change> reservation_changes_;  // this batch
  std::optional<std::int64_t> next_tick_;
  // The eviction token bucket (evictQPS, evictBurst).
  double tokens_ = 0;
  std::int64_t tokens_at_ = 0;
  // The object limiters (objectLimiters): an eviction is tracked when it is issued, and a
  // PodEvicted read back that this instance did not issue (a replay) when it is read.
  descheduler::migration_object_limits limits_{opt_.args};
  std::multiset<std::string, std::less<>> tracked_;
  migration_controller_stats stats_;
};

}  // namespace colony::descheduler_actor
