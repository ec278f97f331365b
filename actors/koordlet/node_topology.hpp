// node_topology: what the koordlet reports as its node's NodeResourceTopology
// (pkg/koordlet/statesinformer/impl/states_noderesourcetopology.go calcNodeTopo,
// calCPUSharePools, calTopologyZoneList, getNodeReserved), from the machine's CPU and NUMA topology
// and the CPUs the node's pods hold.
//
// Annotations, each as Koordinator's koordlet marshals it:
//   node.koordinator.sh/cpu-basic-info {"cpuModel","hyperThreadEnabled","turboEnabled","vendorID"}
//                                        (extension.CPUBasicInfo, empty / false fields left out)
//   node.koordinator.sh/cpu-topology     {"detail":[{"id","core","socket","node"}, ...]} by id
//   node.koordinator.sh/cpu-shared-pools the LS share pool: every CPU but those a pod's
//                                        resource-status cpuset holds, the node reservation's
//                                        reservedCPUs and an exclusive system-QoS cpuset; one
//                                        {"socket","node","cpuset"} per NUMA node, by (socket,
//                                        node)
//   node.koordinator.sh/be-cpu-shared-pools the same, taking out only LSE pods' CPUs
//   kubelet.koordinator.sh/cpu-manager-policy {"policy": the kubelet's CPU manager policy}
//   node.koordinator.sh/pod-cpu-allocs   "null": no kubelet static-policy allocations (Colony's
//                                        koordlet does not read kubelet's cpu_manager_state)
//   node.koordinator.sh/reservation      {"reservedCPUs": ...} from the Node's annotation, "{}"
//   none
// Zones: one per NUMA node, "node-<id>" of type "Node", cpu = its CPUs (capacity = allocatable),
// memory = its MemTotal. topologyPolicies: the kubelet topology manager policy as the NRT names it.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "messages/qos.hpp"
#include "messages/result.hpp"

namespace colony::koordlet {

struct topology_cpu {
  std::int32_t id = 0, core = 0, socket = 0, numa_node = 0;
  bool operator==(const topology_cpu&) const = default;
};

struct topology_numa_memory {
  std::int32_t id = 0;
  std::int64_t memory_bytes = 0;
  bool operator==(const topology_numa_memory&) const = default;
};

// The machine as the node's collectors read it (NodeTopologySampled).
struct machine_info {
  std::vector<topology_cpu> cpus;                // ascending id
  std::vector<topology_numa_memory> numa_nodes;  // ascending id
  std::string cpu_model, vendor_id;
  bool hyper_thread_enabled = false, turbo_enabled = false;
  bool operator==(const machine_info&) const = default;
};

// A pod on the node whose scheduling.koordinator.sh/resource-status names a cpuset.
struct cpuset_pod {
  qos_class qos = qos_class::none;
  std::vector<std::int32_t> cpus;
};

struct node_topology_inputs {
  const machine_info* machine = nullptr;
  std::vector<cpuset_pod> pods;
  // The Node's node.koordinator.sh/reservation annotation ("" none): its reservedCPUs leave
  // both share pools and are reported in the NRT's reservation annotation.
  std::string node_reservation;
  std::string kubelet_cpu_manager_policy = "none";
  std::string topology_policy = "None";  // the NRT's topologyPolicies entry
};

struct nrt_zone {
  std::string name, type;
  std::int64_t cpu_milli = 0, memory_bytes = 0;
  bool operator==(const nrt_zone&) const = default;
};

struct node_topology_report {
  std::vector<std::pair<std::string, std::string>> annotations;  // sorted by key
  std::vector<std::string> topology_policies;
  std::vector<nrt_zone> zones;  // by NUMA node id
  bool operator==(const node_topology_report&) const = default;
};

// The reservedCPUs of a node.koordinator.sh/reservation annotation (getNodeReserved; a reservation
// by CPU count alone reserves none here), ascending; "" gives none. invalid_input naming the field.
[[nodiscard]] result<std::vector<std::int32_t>> node_reserved_cpus(std::string_view annotation);

// invalid_input, naming what: no CPUs; CPU ids not ascending or repeated; a CPU's NUMA node
// without memory or a memory entry without CPUs (Koordinator: "NUMA node number not matched");
// a reservation annotation that does not parse.
[[nodiscard]] result<node_topology_report> calc_node_topology(const node_topology_inputs& in);

}  // namespace colony::koordlet
