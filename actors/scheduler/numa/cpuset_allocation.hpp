// A pod's cpuset on one node: the CPU half of the resource manager's Allocate (allocateCPUSet),
// the required-bind-policy filter and check, over the accumulator. The NUMA split of the
// request (allocateResourcesByHint / tryBestToDistributeEvenly) is an input here: the plugin
// work computes it from the topology hint.
//
// Koordinator: pkg/scheduler/plugins/nodenumaresource/resource_manager.go (allocateCPUSet,
// filterCPUsByRequiredCPUBindPolicy, satisfiedRequiredCPUBindPolicy, determineFullPCPUs,
// determineSpreadByPCPUs).
#pragma once

#include <span>
#include <vector>

#include "actors/scheduler/numa/cpu_accumulator.hpp"

namespace colony::scheduler::numa {

struct cpuset_request {
  int num_cpus_needed = 0;
  take_policy policy;
  // requiredCPUBindPolicy: only whole free cores (FullPCPUs) or one CPU per core (SpreadByPCPUs)
  // are candidates, and the result must keep to the policy.
  bool required = false;
  // preferredCPUs (a reservation's CPUs being reused): taken first.
  cpu_set preferred;
  // The NUMA nodes the hint chose, with the whole CPUs each must supply (NUMANodeResource cpu
  // milli / 1000), in the order allocateResourcesByHint lists them. Empty: anywhere on the node.
  struct numa_share {
    int node = 0;
    int cpus = 0;
  };
  std::vector<numa_share> numa_nodes;
};

// filterCPUsByRequiredCPUBindPolicy: FullPCPUs keeps the cores whose every CPU is available;
// SpreadByPCPUs keeps the lowest available CPU of each core; other policies keep all.
[[nodiscard]] cpu_set filter_cpus_by_required_cpu_bind_policy(cpu_bind_policy policy,
                                                              const cpu_set& available,
                                                              const cpu_topology& topology);
// satisfiedRequiredCPUBindPolicy: FullPCPUs needs whole cores (cores x threads per core ==
// CPUs), SpreadByPCPUs one CPU per core. The error reads "insufficient CPUs to satisfy required
// cpu bind policy <policy>".
[[nodiscard]] result<void> satisfied_required_cpu_bind_policy(cpu_bind_policy policy,
                                                              const cpu_set& cpus,
                                                              const cpu_topology& topology);

// allocateCPUSet over `available` (node_cpu_allocation::available_cpus) and `allocated`:
// filter by the required policy; too few CPUs is err_not_enough_cpus; with NUMA shares, each
// node's CPUs by take_preferred_cpus (at most what the node has) and together exactly the
// request (else err_not_enough_cpus); without, take_preferred_cpus over the node; then the
// required policy check.
[[nodiscard]] result<cpu_set> allocate_cpuset(const cpu_topology& topology,
                                              const cpu_set& available,
                                              std::span<const allocated_cpu> allocated,
                                              const cpuset_request& request);

}  // namespace colony::scheduler::numa
