// What the scheduler keeps per node for NodeNUMAResource: the topology options of the node's
// NodeResourceTopology, the node labels the plugin reads (resolved once per change, not per
// cycle), the node's cpu amplification ratio, and which pods hold which CPUs.
//
// Koordinator keeps the same in two places: topologyOptionsManager (per node, fed by the
// NodeResourceTopology informer) and resourceManager's nodeAllocation (fed by Reserve and the pod
// informer): pkg/scheduler/plugins/nodenumaresource/{topology_options.go, resource_manager.go,
// node_allocation.go, topology_eventhandler.go, pod_eventhandler.go}.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "actors/scheduler/numa/cpu_accumulator.hpp"
#include "actors/scheduler/numa/numa_aware.hpp"
#include "actors/scheduler/numa/numa_resources.hpp"
#include "actors/scheduler/numa/topology_manager.hpp"
#include "actors/scheduler/numa/topology_options.hpp"

namespace colony::scheduler::numa {

struct node_numa_state {
  // nullptr: no NodeResourceTopology seen for the node (Koordinator then has empty options: an
  // invalid CPU topology, no kubelet policy, NUMA policy None).
  std::shared_ptr<const topology_options> options;
  // The node's labels the plugin reads (cpu-bind-policy, numa-topology-policy,
  // numa-allocate-strategy); the rest are left out.
  label_map labels;
  // extension.GetNodeResourceAmplificationRatio(cpu / memory): <= 1 (or -1, absent) = none.
  // Call refresh() after changing them.
  double cpu_amplification_ratio = -1;
  double memory_amplification_ratio = -1;
  node_cpu_allocation allocation;
  // NodeAllocation's NUMA half: the NUMA node resources each pod holds, in the order added, and
  // their sum per NUMA node (ascending node id; kept by add_numa / release_numa).
  std::vector<std::pair<std::string, std::vector<numa_amount>>> numa_pods;
  std::vector<numa_amount> numa_held;

  // Derived by refresh() from the above:
  node_cpu_bind_policy cpu_bind_policy = node_cpu_bind_policy::none;  // GetNodeCPUBindPolicy
  numa_topology_policy topology_policy = numa_topology_policy::none;  // getNUMATopologyPolicy
  // The numa-topology-policy label names no policy (Koordinator would carry the unknown string
  // into mergeTopologyPolicy); Colony's Filter refuses the node with this message.
  std::string topology_policy_error;
  // The first problem new_topology_options found in the NodeResourceTopology (an annotation that
  // does not parse, an inconsistent CPU topology), naming the annotation and field; "" none.
  std::string topology_problem;
  // The NUMA nodes' allocatable cpu and memory (net of reserved CPUs), amplified by the node's
  // ratios (amplifyNUMANodeResources); ascending node id; empty without NUMA zones.
  std::vector<numa_amount> numa_allocatable;

  [[nodiscard]] const cpu_topology* topology() const noexcept {
    return options ? &options->topology : nullptr;
  }
  // Keeps the labels NodeNUMAResource reads out of a node's whole label set (name, value);
  // returns whether they changed.
  template <class Pairs>
  bool set_labels(const Pairs& all) {
    label_map next;
    for (const auto& [k, v] : all)
      if (k == names::label_node_cpu_bind_policy || k == names::label_numa_topology_policy ||
          k == names::label_node_numa_allocate_strategy)
        next.insert_or_assign(std::string(k), std::string(v));
    if (next == labels) return false;
    labels = std::move(next);
    refresh();
    return true;
  }
  void set_options(std::shared_ptr<const topology_options> o) {
    options = std::move(o);
    refresh();
  }
  // Recomputes the derived fields.
  void refresh();

  // addPodAllocation / release of a pod's NUMA resources (the cpuset half is `allocation`).
  void add_numa(const std::string& pod_key, std::vector<numa_amount> shares);
  void release_numa(std::string_view pod_key);
  // What the pods hold per NUMA node (ascending node id, only nodes something was held on):
  // numa_held recomputed from numa_pods (for tests).
  [[nodiscard]] std::vector<numa_amount> numa_allocated() const;
  // CPUs cpuset pods hold on each NUMA node id (index = id).
  [[nodiscard]] std::vector<int> cpuset_cpus_by_numa_node() const;
  // GetAllNUMANodeStatus over NUMA node ids 0..n-1: idle, single (only pods whose cpuset is on
  // one NUMA node) or shared.
  [[nodiscard]] std::vector<numa_node_status> numa_status(int n) const;
};

}  // namespace colony::scheduler::numa
