// The scheduler's NUMA topology manager: NUMA affinity hints of the hint providers merged into
// the pod's best hint under a NUMA topology policy (BestEffort, Restricted, SingleNUMANode),
// with the NUMA exclusivity check. Pure.
//
// Koordinator: pkg/scheduler/frameworkext/topologymanager/{policy.go (mergePermutation,
// filterProvidersHints, mergeFilteredHints, checkExclusivePolicy), policy_best_effort.go,
// policy_restricted.go, policy_single_numa_node.go, manager.go}, pkg/util/bitmask (masks, their
// order and text).
//
// Colony's order where Koordinator iterates a Go map: a provider's resources are taken in
// ascending name order (the permutations, and so ties between equally narrow hints of equal
// score, follow it); Koordinator's order is random.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "actors/scheduler/numa/numa_aware.hpp"

namespace colony::scheduler::numa {

// NUMATopologyHint. affinity: a bit per NUMA node id; nullopt = no NUMA affinity (nil mask).
struct numa_hint {
  std::optional<std::uint64_t> affinity;
  bool unsatisfied = false;
  bool preferred = false;
  std::int64_t score = 0;
  bool operator==(const numa_hint&) const = default;
};

// One provider's hints by resource name; a resource with nullopt has no preference (a nil
// list), one with an empty list has no possible affinity. An empty provider (no map) has no
// preference at all.
using provider_hints = std::vector<std::pair<std::string, std::optional<std::vector<numa_hint>>>>;

// NumaNodeStatus: what the cpuset pods on a NUMA node are (idle, single-NUMA pods only, or
// shared with a pod spanning NUMA nodes).
enum class numa_node_status : std::uint8_t { idle, single, shared };

struct numa_merge_result {
  numa_hint best;
  bool admit = false;
  std::vector<std::string> reasons;
};

// bitmask.NewBitMask(ids...).
[[nodiscard]] std::uint64_t numa_mask(std::span<const int> ids) noexcept;
// bitMask.String(): binary, in groups of two digits ("01", "10", "0101").
[[nodiscard]] std::string numa_mask_string(std::uint64_t mask);
// IsNarrowerThan: fewer bits, or as many with a lower value.
[[nodiscard]] bool numa_mask_narrower(std::uint64_t a, std::uint64_t b) noexcept;
// IterateBitMasks: every non-empty subset of `ids`, one NUMA node first, then pairs, ...; within
// a size in lexicographic order of the ids.
[[nodiscard]] std::vector<std::uint64_t> numa_masks_of(std::span<const int> ids);

// checkExclusivePolicy: a hint with no affinity fails; under Required, a multi-node hint may not
// take a node whose pods are single-NUMA ones, a one-node hint not a shared node.
[[nodiscard]] bool check_exclusive_policy(const numa_hint& h, numa_topology_exclusive exclusive,
                                          std::span<const numa_node_status> status);

// Policy.Merge for policy best_effort, restricted or single_numa_node over `numa_nodes`.
// Reasons: "Unsatisfied NUMA <resource>" for a resource with no possible affinity
// (Restricted, SingleNUMANode), "Unaligned NUMA Hint cause <summary>" when the best hint is not
// preferred.
[[nodiscard]] numa_merge_result merge_numa_hints(numa_topology_policy policy,
                                                 std::span<const int> numa_nodes,
                                                 std::span<const provider_hints> providers,
                                                 numa_topology_exclusive exclusive,
                                                 std::span<const numa_node_status> status);

}  // namespace colony::scheduler::numa
