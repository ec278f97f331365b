// Memory QoS basics: memory.min, memory.low and memory.high of a pod from its class's
// memoryQOS (ResourceQOSStrategy), as Koordinator's cgroup reconcile computes them.
//
// Koordinator: pkg/koordlet/qosmanager/plugins/cgreconcile/cgroup_reconcile.go
// (calculatePodMemoryQoS), defaults in pkg/util/sloconfig/nodeslo_config.go. The Anolis-only
// files (memory.wmark_*, memory.priority, memory.oom.group) are not modelled.
// Pure; thread-safety: none needed.
#pragma once

#include <cstdint>
#include <optional>

#include "actors/koordlet/koordlet_types.hpp"

namespace colony::koordlet {

inline constexpr std::int64_t memory_page_size = 4096;

// <class>.memoryQOS of ResourceQOSStrategy.
struct memory_qos {
  bool enable = false;                  // Default: false (every class)
  std::int64_t min_limit_percent = 0;   // Default: 0
  std::int64_t low_limit_percent = 0;   // Default: 0
  std::int64_t throttling_percent = 0;  // Default: 0 (memory.high "max")
};

struct resource_qos_memory_strategy {
  memory_qos lsr_class, ls_class, be_class, system_class;
};

struct memory_qos_settings {
  std::int64_t min_bytes = 0;
  std::int64_t low_bytes = 0;
  std::optional<std::int64_t> high_bytes;  // nullopt: "max" (no throttling)
  bool operator==(const memory_qos_settings&) const = default;
};

// The class of a pod for memory QoS: LSE and LSR use lsrClass, LS lsClass, BE beClass, SYSTEM
// systemClass, a pod without a Koordinator QoS its kube QoS's default (pod_qos_with_default).
[[nodiscard]] const memory_qos& memory_qos_of(const resource_qos_memory_strategy& s,
                                              const pod_info& pod) noexcept;

// nullopt when the pod's class has memoryQOS disabled. request/limit: the pod's memory request
// and limit (a limit of 0: none, the node's allocatable memory stands for it).
// memory.min = request x minLimitPercent / 100; memory.low = request x lowLimitPercent / 100,
// raised to memory.min; memory.high = request + (limit - request) x throttlingPercent / 100,
// rounded down to whole pages, "max" when throttlingPercent is 0.
[[nodiscard]] std::optional<memory_qos_settings> pod_memory_qos(
    const resource_qos_memory_strategy& s, const pod_info& pod,
    std::int64_t node_allocatable_memory_bytes) noexcept;

}  // namespace colony::koordlet
