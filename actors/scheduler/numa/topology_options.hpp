// A node's topology options from its NodeResourceTopology object: the CPU topology the koordlet
// reports, the CPUs no cpuset pod may take (reservedCPUs), the kubelet CPU manager policy, the
// NUMA topology policy and each NUMA node's allocatable CPU net of reserved CPUs.
//
// Koordinator: pkg/scheduler/plugins/nodenumaresource/topology_options.go (NewTopologyOptions,
// getPodAllocsCPUSet, extractNUMANodeResources, convertToNUMATopologyPolicy),
// apis/extension/{numa_aware.go, node_reservation.go GetReservedCPUs, system_qos.go}.
//
// Like Koordinator, a malformed annotation does not stop the rest: its part is left out (as Go
// logs and carries on) and the error value, naming the annotation and field, is kept in
// `problems` for the caller to report.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "actors/scheduler/numa/cpu_topology.hpp"
#include "actors/scheduler/numa/numa_aware.hpp"
#include "messages/names.hpp"
#include "messages/result.hpp"

namespace colony::scheduler::numa {

using names::annotation_node_cpu_allocs;
using names::annotation_node_reservation;
inline constexpr std::string_view annotation_node_system_qos_resource =
    "node.koordinator.sh/system-qos-resource";

// One NodeResourceTopology zone, the part the CPU allocation reads.
struct nrt_zone {
  std::string name;  // "node-<id>" for NUMA nodes
  std::string type;  // "Node" for NUMA nodes
  std::int64_t cpu_allocatable_milli = 0;
  std::int64_t memory_allocatable_bytes = 0;
};

// A NUMA node's resources (NUMANodeResource, the cpu and memory Colony models).
struct numa_node_cpu {
  int node = 0;
  std::int64_t cpu_milli = 0;     // allocatable cpu minus the node's reserved CPUs x 1000
  std::int64_t memory_bytes = 0;  // allocatable memory
  bool operator==(const numa_node_cpu&) const = default;
};

struct topology_options {
  cpu_topology topology;  // invalid (no CPUs) when the annotation is absent or malformed
  cpu_set reserved_cpus;
  int max_ref_count = 1;  // Default: 1 (UpdateTopologyOptions)
  std::optional<kubelet_cpu_manager_policy> policy;
  numa_topology_policy topology_policy = numa_topology_policy::none;  // NUMATopologyPolicy
  std::vector<numa_node_cpu> numa_node_cpus;                          // ascending node id
  std::vector<error> problems;
};

// NewTopologyOptions. reservedCPUs = CPUs of pod-cpu-allocs entries managed by the kubelet (with
// a uid and a non-empty cpuset) ∪ the kubelet's reservedCPUs ∪ the node reservation's
// reservedCPUs ∪ the system-qos cpuset when exclusive (the default).
[[nodiscard]] topology_options new_topology_options(
    const label_map& nrt_annotations, const std::vector<std::string>& nrt_topology_policies,
    const std::vector<nrt_zone>& zones);

}  // namespace colony::scheduler::numa
