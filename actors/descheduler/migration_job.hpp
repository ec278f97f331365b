// PodMigrationJob as the migration controller and its arbitration read it
// (apis/scheduling/v1alpha1/pod_migration_job_types.go): phases, the reasons Koordinator writes,
// and the cluster view the filters count jobs in. Plain values.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "actors/descheduler/descheduler_types.hpp"

namespace colony::descheduler {

enum class job_phase : std::uint8_t { pending, running, succeeded, failed, aborted };
// "Pending", "Running", "Succeeded", "Failed", "Aborted".
[[nodiscard]] std::string_view to_string(job_phase p) noexcept;
// The phase of its name; "" counts as Pending (PodMigrationJobPending's empty form).
[[nodiscard]] std::optional<job_phase> parse_job_phase(std::string_view s) noexcept;
[[nodiscard]] constexpr bool is_final(job_phase p) noexcept {
  return p == job_phase::succeeded || p == job_phase::failed || p == job_phase::aborted;
}

// Reasons and condition types (pod_migration_job_types.go).
namespace job_reason {
inline constexpr std::string_view timeout = "Timeout";
inline constexpr std::string_view forbidden_migrate_pod = "ForbiddenMigratePod";
inline constexpr std::string_view missing_pod = "MissingPod";
inline constexpr std::string_view invalid_pod_ref = "InvalidPodRef";
inline constexpr std::string_view evicting = "Evicting";
inline constexpr std::string_view failed_evict = "FailedEvict";
inline constexpr std::string_view evict_complete = "EvictComplete";
// ReservationFirst (controller.go doMigrate).
inline constexpr std::string_view reservation_created = "ReservationCreated";  // condition type
inline constexpr std::string_view failed_create_reservation = "FailedCreateReservation";
inline constexpr std::string_view unschedulable = "Unschedulable";
inline constexpr std::string_view missing_reservation = "MissingReservation";
inline constexpr std::string_view reservation_expired = "ReservationExpired";
inline constexpr std::string_view wait_for_pod_bind_reservation = "WaitForPodBindReservation";
inline constexpr std::string_view pod_bound_reservation = "PodBoundReservation";  // condition type
}  // namespace job_reason

struct job_info {
  std::string name;
  std::string pod;  // namespace/name
  job_phase phase = job_phase::pending;
  // Passed arbitration (annotation descheduler.koordinator.sh/passed-arbitration).
  bool passed_arbitration = false;
  std::int64_t created_ms = 0;
  std::int64_t ttl_ms = 0;  // spec.ttl; 0 = none
  std::string mode;
};

// A workload as the controller finder resolves it: its desired replicas and its pods' keys.
struct workload_info {
  std::int64_t replicas = 0;
  std::vector<std::string> pods;
};

// A workload as the owner of the view keeps it between events, for the workload filters' fast
// path: its desired replicas and the keys of its pods that are not available (not found among
// the view's pods, not ready, terminating or failed), sorted and distinct. Equal to what the
// filters derive from workload_info by looking each of its pods up.
struct workload_state {
  std::int64_t replicas = 0;
  std::vector<std::string> unavailable;
};

// Pods by key for point lookups: a hash map beside the ordered map (which is for walking in key
// order). Lookups only, so nothing depends on its order.
using pod_lookup = std::unordered_map<std::string_view, const pod_info*>;

class job_index;

// What the filters read: every pod by key, every job (any phase), and the workload of a pod's
// controller owner (nullopt: not found, which fails the workload filters as an error does).
// With an index (job_index.hpp, kept by the jobs' owner in step with `pods`) the filters and the
// arbitration sort count from it and never read `jobs`, which may then be null. With
// `workload_state_of` (nullptr: not found) the workload filters read it instead of `workload` and
// never look a workload's pods up; with `pod_index` pod() looks keys up there. Both optional, both
// kept by the view's owner in step with `pods` and `workload`.
struct migration_view {
  const std::map<std::string, pod_info, std::less<>>* pods = nullptr;
  const std::vector<job_info>* jobs = nullptr;
  std::function<std::optional<workload_info>(const pod_info&)> workload;
  const job_index* index = nullptr;
  std::function<const workload_state*(const pod_info&)> workload_state_of;
  const pod_lookup* pod_index = nullptr;

  [[nodiscard]] const pod_info* pod(std::string_view key) const;
};

}  // namespace colony::descheduler
