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

// A pod's workload by its parts: the pod's namespace and its controller's kind and name. Tables
// keyed by the joined form "<ns><Sep><Kind><Sep><name>" (joined_key_hash, joined_key_equal) find
// it without building that string, which the filters would otherwise do for every pod judged.
struct workload_ref {
  std::string_view ns, kind, name;
};
[[nodiscard]] inline workload_ref workload_ref_of(const pod_info& p) {
  return {p.ns, p.owner.kind, p.owner.name};
}

// FNV-1a over the joined form's bytes, fed part by part: the same hash for the string and for its
// parts. Deliberately not noexcept on the stored key: libstdc++ then keeps each key's hash in its
// node, so a lookup never rehashes the stored keys of its bucket (each one a string elsewhere in
// memory) to find where the bucket ends.
template <char Sep>
struct joined_key_hash {
  using is_transparent = void;
  static std::uint64_t feed(std::uint64_t h, char c) noexcept {
    return (h ^ static_cast<unsigned char>(c)) * 1099511628211ULL;
  }
  static std::uint64_t feed(std::uint64_t h, std::string_view s) noexcept {
    for (const char c : s) h = feed(h, c);
    return h;
  }
  static constexpr std::uint64_t basis = 14695981039346656037ULL;
  std::size_t operator()(std::string_view joined) const { return feed(basis, joined); }
  std::size_t operator()(const workload_ref& w) const noexcept {
    return feed(feed(feed(feed(feed(basis, w.ns), Sep), w.kind), Sep), w.name);
  }
};
template <char Sep>
struct joined_key_equal {
  using is_transparent = void;
  static bool same(std::string_view joined, const workload_ref& w) noexcept {
    if (joined.size() != w.ns.size() + w.kind.size() + w.name.size() + 2) return false;
    const std::size_t k = w.ns.size() + 1, n = k + w.kind.size() + 1;
    return joined.substr(0, w.ns.size()) == w.ns && joined[w.ns.size()] == Sep &&
           joined.substr(k, w.kind.size()) == w.kind && joined[n - 1] == Sep &&
           joined.substr(n) == w.name;
  }
  bool operator()(std::string_view a, std::string_view b) const noexcept { return a == b; }
  bool operator()(const workload_ref& w, std::string_view j) const noexcept { return same(j, w); }
  bool operator()(std::string_view j, const workload_ref& w) const noexcept { return same(j, w); }
};

// The joined form of a pod's workload key: "<ns><Sep><Kind><Sep><name>".
template <char Sep>
[[nodiscard]] std::string joined_key(const workload_ref& w) {
  std::string k;
  k.reserve(w.ns.size() + w.kind.size() + w.name.size() + 2);
  k.append(w.ns).push_back(Sep);
  k.append(w.kind).push_back(Sep);
  k.append(w.name);
  return k;
}

// A transparent hash for tables keyed by std::string and looked up by string_view (pod keys, job
// names). Not noexcept, like joined_key_hash, so that the tables keep each key's hash.
struct key_hash {
  using is_transparent = void;
  std::size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};

// Workload states by "<ns>/<Kind>/<name>", for the owners of views that keep them.
using workload_state_table =
    std::unordered_map<std::string, workload_state, joined_key_hash<'/'>, joined_key_equal<'/'>>;

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
