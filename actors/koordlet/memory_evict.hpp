// Memory eviction: BEMemoryEvict, MemoryAllocatableEvict and MemoryEvict tasks of one round.
//
// Koordinator: pkg/koordlet/qosmanager/plugins/memoryevict/memory_evict.go. Pure: the caller passes
// the node, the pods with their last memory usage, the node's last memory usage, the evictor's
// state and the time; the decision lists victims in eviction order with their reason and inputs.
// Thread-safety: none needed.
#pragma once

#include <optional>
#include <span>

#include "actors/koordlet/evict.hpp"
#include "actors/koordlet/koordlet_types.hpp"

namespace colony::koordlet {

inline constexpr std::int64_t memory_release_buffer_percent = 2;  // memoryReleaseBufferPercent

struct memory_evict_options {
  // Koordinator's MemoryEvict stores pod usage as int64(bytes * 1000), so the first victim nearly
  // always covers the target. Off by default in Colony.
  // Default: false (Colony; Koordinator behaves as true)
  bool usage_x1000_compat = false;
};

// calculateReleaseByUsedThresholdPercent: bytes to release, nullopt when below the threshold or
// without a node metric. Does not validate lower < threshold (the config check does).
[[nodiscard]] std::optional<std::int64_t> memory_release_by_used_threshold(
    std::int64_t capacity_bytes, std::optional<double> node_used_bytes,
    std::int64_t threshold_percent, std::optional<std::int64_t> lower_percent);

// calculateReleaseByAllocatableThresholdPercent: per resource (memory, batch-memory, mid-memory)
// request sums of pods with priority value <= threshold against node allocatable. Returns the
// release list and the bit set of released priority classes (bit = 1 << priority_class).
struct allocatable_release {
  resource_list release;
  std::uint8_t classes = 0;
};
[[nodiscard]] allocatable_release memory_release_by_allocatable_threshold(
    const node_info& node, std::span<const pod_info> pods, std::int32_t priority_threshold,
    std::int64_t threshold_percent, std::int64_t lower_percent);

// getSortedBEPodInfos: Raw-QoS BE pods allowed by their eviction policy (no phase filter).
[[nodiscard]] std::vector<evict_candidate> sorted_be_memory_candidates(
    std::span<const pod_info> pods);

// getPodEvictInfoAndSortByPriority for memory: active, allowed, priority value <= threshold,
// eviction-enabled, with a usage metric; by_request selects the allocatable variant's last key.
[[nodiscard]] std::vector<evict_candidate> sorted_memory_candidates(std::span<const pod_info> pods,
                                                                    evict_feature feature,
                                                                    std::int32_t priority_threshold,
                                                                    bool by_request,
                                                                    bool usage_x1000);

// Config checks (generateConfigCheck): nullopt when valid, else why not.
[[nodiscard]] std::optional<std::string_view> check_memory_evict_config(
    const resource_threshold_strategy& cfg, evict_feature feature);

struct memory_evict_input {
  const node_info* node = nullptr;
  std::span<const pod_info> pods;                // memory_used_bytes = last pod memory metric
  std::optional<double> node_memory_used_bytes;  // last node memory metric
};

struct memory_evict_decision {
  bool ran = false;  // false: cooling down, gate off or invalid node
  std::string_view skip_reason;
  std::vector<evict_task> tasks;  // the tasks built, in execution order
  std::vector<std::pair<evict_feature, std::string_view>> config_errors;
  evict_round round;
  evictor_state next_state;
};

// memoryEvict(): one round at time `now`.
[[nodiscard]] memory_evict_decision memory_evict(const memory_evict_input& in,
                                                 const resource_threshold_strategy& cfg,
                                                 const koordlet_feature_gates& gates,
                                                 const qos_manager_timing& timing,
                                                 const evictor_state& state, event_time now,
                                                 const memory_evict_options& opt = {});

}  // namespace colony::koordlet
