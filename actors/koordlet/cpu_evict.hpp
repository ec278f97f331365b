// CPU eviction: BECPUEvict (BE CPU satisfaction), CPUAllocatableEvict and CPUEvict tasks.
//
// Koordinator: pkg/koordlet/qosmanager/plugins/cpuevict/cpu_evict.go. The BE series (usage,
// request, real limit in milli-cores, one sample per collect interval) come from the caller,
// summarised over the window with summarize_be_cpu. Pure; time is an argument. Thread-safety: none
// needed.
#pragma once

#include <optional>
#include <span>

#include "actors/koordlet/evict.hpp"
#include "actors/koordlet/koordlet_types.hpp"

namespace colony::koordlet {

inline constexpr std::int64_t be_cpu_satisfaction_low_percent_max =
    60;  // beCPUSatisfactionLowPercentMax
inline constexpr std::int64_t be_cpu_satisfaction_upper_percent_max =
    100;  // beCPUSatisfactionUpperPercentMax
inline constexpr std::int64_t be_cpu_usage_threshold_percent = 90;  // beCPUUsageThresholdPercent
inline constexpr std::int64_t cpu_release_buffer_percent = 2;       // cpuReleaseBufferPercent
inline constexpr double default_min_allocatable_batch_milli_cpu =
    1;  // defaultMinAllocatableBatchMilliCPU

// One BE-level sample (metricsadvisor/collectors/beresource): besteffort cgroup usage, sum of
// batch-cpu requests of BE pods, and the real limit min(|cpuset| x 1000, quota x 1000 / period).
struct be_cpu_sample {
  event_time time{0};
  double usage_milli = 0;
  double request_milli = 0;
  double real_limit_milli = 0;
};

// Averages over the window and the last values (latest sample within 2 x collect interval).
struct be_cpu_window {
  std::int64_t count = 0;  // samples in the window (min over the three series)
  double avg_usage = 0, avg_request = 0, avg_real_limit = 0;
  double last_usage = 0, last_request = 0, last_real_limit = 0;  // 0 when no recent sample
};

// window = max(collect interval, cpuEvictTimeWindowSeconds)
// (calculateMilliReleaseByBESatisfaction).
[[nodiscard]] std::int64_t cpu_evict_window_seconds(const resource_threshold_strategy& cfg,
                                                    const qos_manager_timing& timing);

// Samples must be in time order. Window [now - window, now], both ends included.
[[nodiscard]] be_cpu_window summarize_be_cpu(std::span<const be_cpu_sample> samples, event_time now,
                                             std::int64_t window_seconds,
                                             duration_ms collect_interval);

// getBEMilliAllocatable: node allocatable batch-cpu; 0 -> 1; missing or negative -> -1.
[[nodiscard]] double be_milli_allocatable(const node_info& node);

// isBECPUUsageHighEnough.
[[nodiscard]] bool is_be_cpu_usage_high_enough(double usage_milli, double limit_milli,
                                               std::optional<std::int64_t> threshold_percent);

// calculateResourceMilliToReleaseBySatisfaction. REQUIRES: both satisfaction percents set.
[[nodiscard]] std::int64_t calculate_resource_milli_to_release_by_satisfaction(
    double request_milli, double limit_milli, const resource_threshold_strategy& cfg);

// calculateMilliReleaseByBESatisfaction: batch-cpu milli to release (0 = none), with its terms.
struct be_satisfaction_release {
  std::int64_t milli = 0;
  std::vector<explain_term> explain;
};
[[nodiscard]] be_satisfaction_release calculate_milli_release_by_be_satisfaction(
    const be_cpu_window& w, const resource_threshold_strategy& cfg, const node_info& node,
    std::int64_t window_seconds, std::int64_t collect_interval_seconds);

// calculateMilliReleaseByUsedThresholdPercent: cpu milli to release from the node's average usage.
[[nodiscard]] std::optional<std::int64_t> cpu_release_by_used_threshold(
    std::int64_t capacity_milli, std::optional<double> node_used_cores,
    std::int64_t threshold_percent, std::optional<std::int64_t> lower_percent);

struct cpu_allocatable_release {
  resource_list release;
  std::uint8_t classes = 0;  // bit (1 << priority_class)
};
// calculateMilliReleaseByAllocatableThresholdPercent (release = int64(sum - lower/100 x alloc)).
[[nodiscard]] cpu_allocatable_release cpu_release_by_allocatable_threshold(
    const node_info& node, std::span<const pod_info> pods, std::int32_t priority_threshold,
    std::int64_t threshold_percent, std::int64_t lower_percent);

// getBEPodEvictInfoAndSort: Raw-QoS BE pods allowed by policy; spec.priority asc when both set and
// different, else usage ratio (last cpu milli / batch-cpu request) desc; ties by namespace/name.
[[nodiscard]] std::vector<evict_candidate> sorted_be_cpu_candidates(std::span<const pod_info> pods);

// getPodEvictInfoAndSortByPriority for CPU (by_request: allocatable variant).
[[nodiscard]] std::vector<evict_candidate> sorted_cpu_candidates(std::span<const pod_info> pods,
                                                                 evict_feature feature,
                                                                 std::int32_t priority_threshold,
                                                                 bool by_request);

[[nodiscard]] std::optional<std::string_view> check_cpu_evict_config(
    const resource_threshold_strategy& cfg, evict_feature feature);

struct cpu_evict_input {
  const node_info* node = nullptr;
  std::span<const pod_info> pods;            // cpu_used_cores = last pod CPU metric
  be_cpu_window be;                          // summarize_be_cpu over cpu_evict_window_seconds
  std::optional<double> node_cpu_avg_cores;  // node CPU average over the same window
};

struct cpu_evict_decision {
  bool ran = false;
  std::string_view skip_reason;
  std::vector<evict_task> tasks;
  std::vector<std::pair<evict_feature, std::string_view>> config_errors;
  std::vector<explain_term> be_satisfaction_explain;
  evict_round round;
  evictor_state next_state;
};

// cpuEvict(): one round at time `now`. state.last_evict_time starts at the koordlet start time.
[[nodiscard]] cpu_evict_decision cpu_evict(const cpu_evict_input& in,
                                           const resource_threshold_strategy& cfg,
                                           const koordlet_feature_gates& gates,
                                           const qos_manager_timing& timing,
                                           const evictor_state& state, event_time now);

}  // namespace colony::koordlet
