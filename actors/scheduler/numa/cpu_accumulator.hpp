// The CPU accumulator: which logical CPUs a cpuset-bound pod gets on a node (takeCPUs), the
// preferred-CPUs wrapper (takePreferredCPUs) and the node's CPU allocation with reference
// counts (NodeAllocation's allocatedCPUs, addCPUs, release, getAvailableCPUs).
//
// Koordinator: pkg/scheduler/plugins/nodenumaresource/{cpu_accumulator.go,
// node_allocation.go}.
//
// Determinism: Go's sort.Slice is not stable. Every comparator Koordinator uses ends in an id
// (node, socket, core, CPU) except the one in takeCPUs that orders sockets by free cores only;
// Colony sorts that one stably (ties keep the previous order: fewer-allocated-first per the NUMA
// strategy, then socket id). Go's sort.Slice is an insertion sort, hence stable too, for up to
// 12 elements, so on nodes with at most 12 sockets the two agree exactly.
//
// Cost: one take_cpus allocates O(CPUs) scratch once; the loops over CPUs, cores, NUMA nodes and
// sockets work on flat arrays of dense indices (no maps, no per-element allocation).
#pragma once

#include <span>
#include <string>
#include <vector>

#include "actors/scheduler/numa/cpu_set.hpp"
#include "actors/scheduler/numa/cpu_topology.hpp"
#include "actors/scheduler/numa/numa_aware.hpp"
#include "messages/result.hpp"

namespace colony::scheduler::numa {

// The allocation half of CPUInfo: how many pods hold a CPU and the exclusive policy of the last
// one that took it (addPodAllocation overwrites ExclusivePolicy).
struct allocated_cpu {
  int cpu_id = 0;
  int ref_count = 0;
  cpu_exclusive_policy exclusive_policy = cpu_exclusive_policy::unset;
  bool operator==(const allocated_cpu&) const = default;
};

struct take_policy {
  cpu_bind_policy bind = cpu_bind_policy::full_pcpus;
  cpu_exclusive_policy exclusive = cpu_exclusive_policy::none;
  numa_allocate_strategy numa_strategy = numa_allocate_strategy::most_allocated;
  // TopologyOptions.MaxRefCount: how many pods may share one CPU (1 unless reservations
  // overlap). Above 1, CPUs and cores with fewer holders are taken first.
  int max_ref_count = 1;
};

// takeCPUs: `num_cpus_needed` CPUs out of `available` (CPU ids; ids not in the topology are
// ignored). `allocated` lists the CPUs pods already hold: their exclusive policies fence cores
// (PCPULevel) and NUMA nodes (NUMANodeLevel) off for a request with the same policy, their
// ref counts order CPUs when max_ref_count > 1.
//
// The order (Koordinator's rules):
// 1. FullPCPUs, or one thread per core: whole free cores from one NUMA node (nodes in strategy
//    order; first skipping NUMANodeLevel-fenced nodes, then not), else from one socket, else
//    whole sockets' free cores largest-first, then single cores from the smallest remainders.
// 2. Not FullPCPUs: one NUMA node, then one socket, with enough free CPUs (first one CPU per
//    free core, PCPULevel-fenced cores skipped; then any CPU), spread one thread per core first.
// 3. Finally every free CPU, sockets already holding result CPUs first, spread per core.
// Errors: err_not_enough_cpus when fewer CPUs are available than needed (failed_precondition);
// "failed to allocate cpus" when the rules above cannot finish.
[[nodiscard]] result<cpu_set> take_cpus(const cpu_topology& topology, const cpu_set& available,
                                        std::span<const allocated_cpu> allocated,
                                        int num_cpus_needed, const take_policy& policy);

// takePreferredCPUs: first up to num_cpus_needed CPUs of available ∩ preferred (by take_cpus
// over that set alone), then the rest from the other available CPUs.
[[nodiscard]] result<cpu_set> take_preferred_cpus(const cpu_topology& topology,
                                                  const cpu_set& available,
                                                  const cpu_set& preferred,
                                                  std::span<const allocated_cpu> allocated,
                                                  int num_cpus_needed, const take_policy& policy);

// TestCPUSpreadByPCPUs: freeCPUs(false) then spreadCPUs over every CPU of `available`, with
// nothing taken yet: the order the last rule walks. CPU ids.
[[nodiscard]] std::vector<int> spread_order(const cpu_topology& topology, const cpu_set& available,
                                            std::span<const allocated_cpu> allocated,
                                            const take_policy& policy);

// NodeAllocation's CPU half: which pod holds which CPUs.
class node_cpu_allocation {
 public:
  // addCPUs: a pod already present is left as it is.
  void add_cpus(const std::string& pod_uid, const cpu_set& cpus, cpu_exclusive_policy exclusive);
  // release: a CPU whose ref count reaches 0 is no longer allocated.
  void release(const std::string& pod_uid);

  struct available {
    cpu_set cpus;                          // what take_cpus may use
    std::vector<allocated_cpu> allocated;  // ref counts after `preferred` were returned
  };
  // getAvailableCPUs: all CPUs minus those held max_ref_count times or more, minus `reserved`.
  // Each set in `preferred` gives its CPUs back once (a reservation being reused, a victim being
  // preempted), so a CPU held twice and returned twice is free.
  [[nodiscard]] available available_cpus(const cpu_topology& topology, int max_ref_count,
                                         const cpu_set& reserved,
                                         std::span<const cpu_set> preferred = {}) const;
  // The allocated CPUs, ascending id.
  [[nodiscard]] std::vector<allocated_cpu> allocated() const;

  struct pod {
    cpu_set cpus;
    cpu_exclusive_policy exclusive = cpu_exclusive_policy::unset;
  };
  // The pods holding CPUs, in the order they were added.
  [[nodiscard]] const std::vector<std::pair<std::string, pod>>& pods() const noexcept {
    return pods_;
  }

 private:
  std::vector<std::pair<std::string, pod>> pods_;  // insertion order; few pods per node
  std::vector<allocated_cpu> cpus_;                // ascending cpu id
};

}  // namespace colony::scheduler::numa
