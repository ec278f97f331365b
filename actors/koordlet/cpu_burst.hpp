// CPU burst: static cpu.cfs_burst_us per container, and dynamic cfs-quota burst driven by
// throttling, the node's share-pool load and a per-container token-bucket limiter.
//
// Koordinator: pkg/koordlet/qosmanager/plugins/cpuburst/cpu_burst.go. The limiter is a value;
// `burst_limiter_allow` is a pure step (state in, state out). Its initial fill is random in
// Koordinator: here it comes from caller-supplied raw bits (e.g. std::mt19937_64 output), so runs
// are reproducible. Thread-safety: none needed.
#pragma once

#include <cstdint>
#include <optional>
#include <span>

#include "actors/koordlet/koordlet_types.hpp"

namespace colony::koordlet {

inline constexpr double cfs_increase_step = 1.2;                   // cfsIncreaseStep
inline constexpr double cfs_decrease_step = 0.8;                   // cfsDecreaseStep
inline constexpr double share_pool_cooling_threshold_ratio = 0.9;  // sharePoolCoolingThresholdRatio
inline constexpr std::int64_t limiter_consume_tokens_percent =
    100;  // cpuThresholdPercentForLimiterConsumeTokens
inline constexpr std::int64_t limiter_saving_tokens_percent =
    60;  // cpuThresholdPercentForLimiterSavingTokens
inline constexpr std::int64_t cfs_base_period_us = 100000;  // system.CFSBasePeriodValue

enum class cpu_burst_policy : std::uint8_t {
  none,
  cpu_burst_only,
  cfs_quota_burst_only,
  auto_burst
};

// CPUBurstConfig; optional fields so a pod annotation koordinator.sh/cpuBurst can overlay them.
struct cpu_burst_config {
  std::optional<cpu_burst_policy> policy;                      // Default: none
  std::optional<std::int64_t> cpu_burst_percent;               // Default: 1000
  std::optional<std::int64_t> cfs_quota_burst_percent;         // Default: 300
  std::optional<std::int64_t> cfs_quota_burst_period_seconds;  // Default: -1 (unlimited)
};

// CPUBurstStrategy of the node (defaults: pkg/util/sloconfig/nodeslo_config.go).
struct cpu_burst_strategy {
  cpu_burst_config config{cpu_burst_policy::none, 1000, 300, -1};  // Default: none/1000/300/-1
  std::int64_t share_pool_threshold_percent = 50;                  // Default: 50
};

// genPodBurstConfig: fields set in the pod's annotation override the node's.
[[nodiscard]] cpu_burst_config merge_burst_config(const cpu_burst_config& node,
                                                  const std::optional<cpu_burst_config>& pod);
[[nodiscard]] bool cpu_burst_enabled(const cpu_burst_config& c) noexcept;  // cpuBurstOnly | auto
[[nodiscard]] bool cfs_quota_burst_enabled(
    const cpu_burst_config& c) noexcept;  // cfsQuotaBurstOnly | auto
// IsPodCPUBurstable: Raw QoS not LSR, LSE or BE.
[[nodiscard]] bool pod_cpu_burstable(const pod_info& p) noexcept;

// calcStaticCPUBurstVal: int64(limit cores x cpuBurstPercent/100 x 100000); 0 without a limit
// or when the policy has no cpu burst.
[[nodiscard]] std::int64_t calc_static_cpu_burst_val(std::int64_t container_cpu_limit_milli,
                                                     const cpu_burst_config& c) noexcept;

struct cpu_burst_values {
  std::vector<std::int64_t> containers;  // cpu.cfs_burst_us per container, pod spec order
  std::int64_t pod = 0;                  // sum
};
// applyCPUBurst for one pod.
[[nodiscard]] cpu_burst_values apply_cpu_burst(const pod_info& pod, const cpu_burst_config& c);

// ---- node state ------------------------------------------------------------------------------

enum class node_burst_state : std::uint8_t { overload, cooling, idle, unknown };
[[nodiscard]] std::string_view to_string(node_burst_state s) noexcept;

// getNodeStateForBurst. node_cpu_avg_cores: node usage averaged over min(5 x interval, 10 s);
// pod_cpu_avg_cores parallel to pods (nullopt = no metric). processors: NodeCPUInfo size
// (0 = unknown -> unknown).
[[nodiscard]] node_burst_state get_node_state_for_burst(
    std::int64_t share_pool_threshold_percent, std::optional<double> node_cpu_avg_cores,
    std::int32_t processors, std::span<const pod_info> pods,
    std::span<const std::optional<double>> pod_cpu_avg_cores);

// ---- limiter ---------------------------------------------------------------------------------

struct burst_limiter {
  std::int64_t bucket_capacity = 0;
  std::int64_t current_token = 0;
  event_time last_update_time{0};
  duration_ms expire_duration{0};
};

// newBurstLimiter: capacity P x (percent - 100), fill = capacity x r with r in [0, 0.5) from
// random_bits ((bits >> 11) x 2^-53 / 2).
[[nodiscard]] burst_limiter make_burst_limiter(std::int64_t period_seconds,
                                               std::int64_t max_scale_percent, event_time now,
                                               std::uint64_t random_bits) noexcept;

struct limiter_step {
  burst_limiter next;
  bool allowed = false;
  std::int64_t tokens = 0;
};
// burstLimiter.Allow: t = whole seconds since the last check; usage >= 100 % consumes
// (usage - 100) x t, usage < 60 % saves (100 - usage) x t; clamp to +-capacity; allowed if > 0.
[[nodiscard]] limiter_step burst_limiter_allow(const burst_limiter& l, event_time now,
                                               std::int64_t usage_scale_percent) noexcept;
// UpdateIfChanged: re-initialised when the capacity changes.
[[nodiscard]] burst_limiter burst_limiter_update_if_changed(const burst_limiter& l,
                                                            std::int64_t period_seconds,
                                                            std::int64_t max_scale_percent,
                                                            event_time now,
                                                            std::uint64_t random_bits) noexcept;
// Expire: unused for longer than 2 x period.
[[nodiscard]] bool burst_limiter_expired(const burst_limiter& l, event_time now) noexcept;

// ---- cfs quota burst per container -----------------------------------------------------------

enum class cfs_operation : std::uint8_t { scale_up, scale_down, remain, reset };
[[nodiscard]] std::string_view to_string(cfs_operation o) noexcept;

// changeOperationByNode: Overload turns up/remain into down; Cooling/Unknown turn up into remain.
[[nodiscard]] cfs_operation change_operation_by_node(node_burst_state s, cfs_operation op) noexcept;

struct container_burst_input {
  std::int64_t cpu_limit_milli = 0;       // spec limit; <= 0: skipped
  bool running = true;                    // containerStatus.state.running
  std::int64_t current_cfs_quota_us = 0;  // container cpu.cfs_quota_us now
  std::optional<double> cpu_usage_cores;  // last container CPU usage (limiter input)
  std::optional<double> throttled_ratio;  // last throttled sample; nullopt = no metric
  std::optional<burst_limiter> limiter;   // this container's limiter, if one exists
};

struct cfs_quota_burst_result {
  bool skipped = true;  // not running or no limit
  cfs_operation origin = cfs_operation::remain;
  cfs_operation final_op = cfs_operation::remain;
  std::int64_t base_cfs = 0;  // limit milli x 100
  std::int64_t ceil_cfs = 0;  // base x cfsQuotaBurstPercent/100 when > 100
  std::int64_t target_cfs = 0;
  std::int64_t delta = 0;                     // target - current; 0 = nothing to write
  std::optional<burst_limiter> next_limiter;  // limiter after this check (created if needed)
};

// applyCFSQuotaBurst for one container (the limiter is consulted first, even when the policy
// has no cfs burst, as Koordinator does).
[[nodiscard]] cfs_quota_burst_result cfs_quota_burst(const cpu_burst_config& c,
                                                     node_burst_state state,
                                                     const container_burst_input& in,
                                                     event_time now, std::uint64_t random_bits);

// applyContainerCFSQuota: pod quota after a container delta; a pod quota <= 0 is left alone.
// Growing writes the pod first, shrinking the container first.
struct pod_quota_update {
  bool write_pod = false;
  std::int64_t pod_quota_us = 0;
  bool pod_first = false;
};
[[nodiscard]] pod_quota_update pod_cfs_quota_update(std::int64_t current_pod_quota_us,
                                                    std::int64_t delta) noexcept;

}  // namespace colony::koordlet
