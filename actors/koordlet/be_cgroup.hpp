// BE pod cgroup sizing from batch resources: cpu.shares, cfs quota and memory limit of a pod with
// Raw QoS BE, from its containers' kubernetes.io/batch-cpu and batch-memory.
//
// Koordinator: pkg/koordlet/runtimehooks/hooks/batchresource/batch_resource.go (SetPodCPUShares,
// SetPodCFSQuota, SetPodMemoryLimit), pkg/koordlet/util/system/cgroup.go (MilliCPUToShares,
// MilliCPUToQuota). Pure; thread-safety: none needed.
#pragma once

#include <cstdint>
#include <optional>

#include "actors/koordlet/koordlet_types.hpp"

namespace colony::koordlet {

inline constexpr std::int64_t cpu_shares_min = 2;       // CPUSharesMinValue
inline constexpr std::int64_t cpu_shares_max = 262144;  // CPUSharesMaxValue
inline constexpr std::int64_t cpu_share_unit = 1024;    // CPUShareUnitValue
inline constexpr std::int64_t cfs_quota_min = 1000;     // CFSQuotaMinValue

[[nodiscard]] std::int64_t milli_cpu_to_shares(std::int64_t milli) noexcept;
[[nodiscard]] std::int64_t milli_cpu_to_quota(std::int64_t milli) noexcept;  // -1 when <= 0

struct be_cgroup_settings {
  std::int64_t cpu_shares = cpu_shares_min;
  std::int64_t cfs_quota_us = -1;        // -1 = unlimited
  std::int64_t memory_limit_bytes = -1;  // -1 = unlimited
};

// REQUIRES: pod.qos == BE (other pods keep their kubelet cgroups; returns nullopt).
// cfs_quota_enabled: false when resourceUsedThresholdWithBE.enable and the suppress policy is
// cfsQuota (GetCFSQuotaScaleRatio); cpu_normalization_ratio > 1 divides the quota (ceil).
[[nodiscard]] std::optional<be_cgroup_settings> be_pod_cgroup(
    const pod_info& pod, bool cfs_quota_enabled, double cpu_normalization_ratio) noexcept;

// The cfs_quota_enabled argument as Koordinator derives it from the NodeSLO.
[[nodiscard]] inline bool be_cfs_quota_enabled(const resource_threshold_strategy& s) noexcept {
  return !(s.enable && s.cpu_suppress_policy == cpu_suppress_policy_type::cfs_quota);
}

}  // namespace colony::koordlet
