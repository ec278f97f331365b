// The background ClusterColocationProfile controller
// (pkg/controller/colocationprofile/colocationprofile_controller.go, colocationprofile_util.go),
// behind Koordinator's feature gate ColocationProfileController.
//
// Every reconcile_interval, for each profile that is controller-managed (label
// config.koordinator.sh/controller-managed=true) or for all with reconcile_by_default, the
// controller re-applies the profile to matching Pending pods that have no node yet. It differs
// from the webhook: a nil spec.selector selects no pod (an empty one selects all); an unknown
// Namespace does not match; schedulerName, priorityClassName and resources are not touched
// (labels, annotations, key mappings, suffixes, qosClass, koordinatorPriority and the patch
// are); each (profile resourceVersion, pod uid) is updated at most once per
// force_update_pod_duration; updates go through a token bucket (golang.org/x/time/rate:
// max_update_pod_qps refill, max_update_pod_qps_burst capacity, starting full).
//
// The state (bucket, recently-updated cache) lives in colocation_profile_controller; time is
// an argument, never read from a clock; probability draws use the seeded hash of
// colocation_profile.hpp. Not thread-safe: one owner (the admission actor).
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "actors/admission/colocation_profile.hpp"
#include "actors/admission/pod_spec.hpp"
#include "messages/result.hpp"
#include "messages/units.hpp"

namespace colony::admission {

struct colocation_profile_controller_options {
  // Default: false (--colocation-profile-reconcile-by-default, colocationprofile_controller.go).
  bool reconcile_by_default = false;
  // Default: 30 s (--colocation-profile-reconcile-interval).
  duration_ms reconcile_interval{30'000};
  // Default: 5 min (--colocation-profile-force-update-pod-duration).
  duration_ms force_update_pod_duration{300'000};
  // Default: 10 (--colocation-profile-update-pod-qps).
  double max_update_pod_qps = 10.0;
  // Default: 100 (--colocation-profile-update-pod-qps-burst).
  int max_update_pod_qps_burst = 100;
};

// A pod the controller may look at, with the labels of its Namespace (nullptr = no such
// Namespace, which the controller treats as "does not match").
struct controller_pod {
  const pod_spec* pod = nullptr;
  const string_map* namespace_labels = nullptr;
};

// ReconcileSummary.
struct reconcile_summary {
  int desired = 0;
  int succeeded = 0;
  int changed = 0;
  int rate_limited = 0;
  int skipped = 0;  // by probability
  int cached = 0;   // updated recently

  bool operator==(const reconcile_summary&) const = default;
};

struct reconcile_result {
  bool reconciled = false;        // false: the profile is not managed (nothing done)
  std::vector<pod_spec> updated;  // pods that changed, mutated, in input order
  reconcile_summary summary;
  duration_ms requeue_after{0};  // reconcile_interval when reconciled
};

// listPodsForProfile's filter for one pod: selector (nil selects nothing), Namespace
// selector (unknown Namespace does not match), Pending and not bound. An invalid selector
// is an error, as in Koordinator.
[[nodiscard]] result<bool> controller_selects_pod(const cluster_colocation_profile& profile,
                                                  const controller_pod& pod);

// The controller's doMutateByColocationProfile (no schedulerName, no priorityClassName).
[[nodiscard]] result<void> controller_mutate_by_colocation_profile(
    pod_spec& pod, const cluster_colocation_profile& profile);

class colocation_profile_controller {
 public:
  explicit colocation_profile_controller(colocation_profile_controller_options options = {});

  // One Reconcile of `profile` (at resource version `resource_version`) over `pods`, at
  // event time `now`. Pods are visited in the given order (the caller sorts them, e.g. by
  // namespace/name, for determinism).
  [[nodiscard]] result<reconcile_result> reconcile(const cluster_colocation_profile& profile,
                                                   std::string_view resource_version,
                                                   std::span<const controller_pod> pods,
                                                   event_time now, std::uint64_t seed);

  [[nodiscard]] const colocation_profile_controller_options& options() const { return options_; }

 private:
  bool allow(event_time now);  // rate.Limiter.Allow
  void expire(event_time now);

  colocation_profile_controller_options options_;
  double tokens_;
  event_time last_refill_{0};
  bool refilled_once_ = false;
  std::map<std::string, event_time, std::less<>> updated_until_;  // "rv/uid" -> expiry
};

}  // namespace colony::admission
