// The PodMigrationJob writes of kube::decision_sink (sink_migration_job.cpp), as pure functions
// tested without a server:
//
//   MigrationJobCreated       POST podmigrationjobs: the job Colony's descheduler decided, shaped
//   (a decision)              as Koordinator's descheduler creates it (pkg/descheduler/
//                             controllers/migration/evict.go): annotations koordinator.sh/
//                             evict-reason, evict-trigger and job-created-by (the record's creator:
//                             the marker kube::translate_options::descheduler_name reads back),
//                             spec podRef {namespace, name, uid when known}, mode, ttl, paused.
//                             409 AlreadyExists is done (a replay); 404 (no CRD) is done with
//                             nothing written.
//   MigrationJobPhaseChanged  GET podmigrationjobs/NAME, then PUT .../status with the status the
//   (a decision)              controller would hold after this change (phase, status, reason,
//                             message, nodeName, podRef, conditions as util.UpdateCondition keeps
//                             them); nothing when it already holds it, or when the job is in
//                             another final phase (a user's Aborted, or a replay of an older
//                             record); a 409 Conflict reads again. A job gone (404) is done.
//   either, observed          nothing: a user's job or abort comes from the API (causation -1)
//
// Thread-safety: the functions are reentrant.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "messages/codec.hpp"

namespace colony::kube {

// Koordinator's PodMigrationJob API (scheduling.koordinator.sh/v1alpha1, cluster-scoped).
inline constexpr std::string_view migration_job_api =
    "/apis/scheduling.koordinator.sh/v1alpha1/podmigrationjobs";

// metav1.Duration as Go's time.Duration.String() prints it: "5m0s", "1h0m0s", "1.5s", "300ms",
// "0s".
[[nodiscard]] std::string go_duration(std::int64_t ms);

// The PodMigrationJob Colony's descheduler creates for `job` (no status: the apiserver ignores
// it on create, the subresource carries it). pod_uid "" = spec.podRef without uid.
[[nodiscard]] nlohmann::json migration_job_object(const wire::MigrationJobCreated& job,
                                                  std::string_view pod_uid);

// `current` (the job's .status as read, null when none) after the phase change `p` at
// `time_ms`: phase, reason and message from the record (omitted when empty, as Go's omitempty);
// nodeName and podRef when it names them; the condition its reason stands for (ReservationCreated:
// ReservationCreated=True; Evicting, FailedEvict: Eviction=False; EvictComplete: Eviction=True;
// FailedCreateReservation: ReservationCreated=False; Unschedulable: ReservationScheduled=False;
// WaitForPodBindReservation: Eviction=True/EvictComplete and PodBoundReservation=False;
// WaitForBoundPodReady: BoundPodReady=False; Preempting / PreemptComplete: Preemption), and
// ReservationScheduled=True once a node is named, each updated
// by type with lastTransitionTime moved only when its status changes; status.status = the type
// of the condition written, "Complete" when Succeeded (controller.go updateCondition,
// evictPodDirectly). Other fields of `current` are kept.
[[nodiscard]] nlohmann::json migration_job_status(const wire::MigrationJobPhaseChanged& p,
                                                  const nlohmann::json& current,
                                                  std::int64_t time_ms);

}  // namespace colony::kube
