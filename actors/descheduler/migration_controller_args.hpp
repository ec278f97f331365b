// MigrationControllerArgs (descheduler/v1alpha2, pkg/descheduler/apis/config/types_pluginargs.go)
// with Koordinator's defaults (v1alpha2/defaults.go SetDefaults_MigrationControllerArgs) and
// validation (validation/validation_pluginargs.go), and the workload limits derived from
// replicas (pkg/descheduler/controllers/migration/util/util.go GetMaxUnavailable /
// GetMaxMigrating). Plain values.
#pragma once

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "actors/admission/label_selector.hpp"
#include "messages/result.hpp"

namespace colony::descheduler {

inline constexpr std::string_view job_mode_reservation_first = "ReservationFirst";
inline constexpr std::string_view job_mode_evict_directly = "EvictDirectly";

// intstr.IntOrString: an int, or a percentage ("10%").
struct int_or_percent {
  std::int64_t value = 0;
  bool percent = false;
  bool operator==(const int_or_percent&) const = default;
};
// "10%" or "3".
[[nodiscard]] result<int_or_percent> parse_int_or_percent(std::string_view text,
                                                          std::string_view field);

// GetMaxUnavailable (also GetMaxMigrating): an int as is, a percentage of replicas rounded
// down; 0 becomes 1; unset: replicas > 10: 10 %, 4..10: 2, else 1; at most replicas.
[[nodiscard]] std::int64_t get_max_unavailable(std::int64_t replicas,
                                               const std::optional<int_or_percent>& v);

// ObjectLimiterArgs: at most max_migrating evictions per duration per object.
struct object_limiter_args {
  std::int64_t duration_ms = 5 * 60'000;
  std::optional<int_or_percent> max_migrating;  // nullopt: maxMigratingPerWorkload
  std::int64_t burst = 0;                       // 0 = 1
};

// The evictor's constraints (pkg/descheduler/evictions/evictions.go NewEvictorFilter).
struct evictor_filter_args {
  bool evict_local_storage_pods = false;
  bool evict_system_critical_pods = false;
  bool ignore_pvc_pods = false;
  bool evict_failed_bare_pods = false;
  bool evict_all_bare_pods = false;
  std::optional<std::int32_t> priority_threshold;  // pods with priority >= it are kept
  std::optional<admission::label_selector> label_selector;
  std::vector<std::string> namespaces_include, namespaces_exclude;
};

struct migration_controller_args {
  std::int64_t max_concurrent_reconciles = 1;
  // Defaults: per node 2, the others off (nullopt).
  std::optional<std::int64_t> max_migrating_per_node = 2;
  std::optional<std::int64_t> max_migrating_per_namespace;
  std::optional<std::int64_t> max_migrating_globally;
  std::optional<int_or_percent> max_migrating_per_workload;
  std::optional<int_or_percent> max_unavailable_per_workload;
  bool skip_check_expected_replicas = false;
  std::set<std::string, std::less<>> skip_eviction_gates;
  // Default: ReservationFirst (Colony's sim config sets EvictDirectly until Reservation lands).
  std::string default_job_mode = std::string(job_mode_reservation_first);
  // Default: 5 min.
  std::int64_t default_job_ttl_ms = 5 * 60'000;
  std::vector<std::string> scheduler_names = {"koord-scheduler"};
  // Default: Eviction.
  std::string eviction_policy = "Eviction";
  // Default: 10 per second, burst 1 (every eviction shares one token bucket).
  double evict_qps = 10;
  std::int64_t evict_burst = 1;
  // Default: workload 5 min; namespace off.
  std::optional<object_limiter_args> workload_limiter = object_limiter_args{};
  std::optional<object_limiter_args> namespace_limiter;
  // Default: 500 ms.
  std::int64_t arbitration_interval_ms = 500;
  evictor_filter_args filter;
  bool node_fit = false;
};

// Gates skipEvictionGates may name (validation_pluginargs.go).
[[nodiscard]] bool is_eviction_gate(std::string_view gate);
[[nodiscard]] result<void> validate(const migration_controller_args& a);

}  // namespace colony::descheduler
