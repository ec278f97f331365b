// CPU topology of one node: sockets, NUMA nodes, physical cores and logical CPUs
// (hyper-threads), as Koordinator's CPUTopology / CPUDetails, built and validated.
//
// Koordinator: pkg/scheduler/plugins/nodenumaresource/cpu_topology.go (CPUTopology,
// CPUTopologyBuilder, CPUInfo), apis/extension/numa_aware.go (the node.koordinator.sh/cpu-topology
// annotation the koordlet reports), cpu_accumulator_test.go buildCPUTopologyForTest.
//
// A topology is immutable once built. Besides Koordinator's per-CPU map it keeps dense indices
// (CPUs, cores, NUMA nodes and sockets each numbered 0.. in ascending id order) so the CPU
// accumulator works over flat arrays; "ascending id" and "ascending index" are the same order.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "actors/scheduler/numa/cpu_set.hpp"
#include "messages/result.hpp"

namespace colony::scheduler::numa {

// CPUInfo without the allocation fields (RefCount and ExclusivePolicy live in cpu_allocation).
struct cpu_info {
  int cpu_id = 0;
  int core_id = 0;
  int node_id = 0;
  int socket_id = 0;
  bool operator==(const cpu_info&) const = default;
};

class cpu_topology {
 public:
  // CPUTopology.NumCPUs / NumCores / NumNodes / NumSockets.
  [[nodiscard]] int num_cpus() const { return static_cast<int>(cpus_.size()); }
  [[nodiscard]] int num_cores() const { return static_cast<int>(core_ids_.size()); }
  [[nodiscard]] int num_nodes() const { return static_cast<int>(node_ids_.size()); }
  [[nodiscard]] int num_sockets() const { return static_cast<int>(socket_ids_.size()); }
  // CPUsPerCore / CPUsPerSocket / CPUsPerNode: NumCPUs int-div the count (0 when the count is 0).
  [[nodiscard]] int cpus_per_core() const { return per(num_cores()); }
  [[nodiscard]] int cpus_per_socket() const { return per(num_sockets()); }
  [[nodiscard]] int cpus_per_node() const { return per(num_nodes()); }
  // IsValid: every count non-zero.
  [[nodiscard]] bool is_valid() const { return !cpus_.empty(); }

  // CPUDetails in ascending CPU id.
  [[nodiscard]] const std::vector<cpu_info>& details() const { return cpus_; }
  // CPUDetails.CPUs().
  [[nodiscard]] const cpu_set& cpus() const { return all_; }
  // The info of `cpu_id`, or nullptr when the node has no such CPU.
  [[nodiscard]] const cpu_info* find(int cpu_id) const {
    const int i = index_of(cpu_id);
    return i < 0 ? nullptr : &cpus_[static_cast<std::size_t>(i)];
  }
  // CPUsInNUMANodes / CPUsInSockets / CPUsInCores for one id.
  [[nodiscard]] cpu_set cpus_in_numa_node(int node_id) const;
  [[nodiscard]] cpu_set cpus_in_socket(int socket_id) const;
  [[nodiscard]] cpu_set cpus_in_core(int core_id) const;
  // NUMA node ids, ascending.
  [[nodiscard]] const std::vector<int>& numa_node_ids() const { return node_ids_; }

  // ---- dense view, for the accumulator ----
  // Dense index of a CPU id, -1 when absent.
  [[nodiscard]] int index_of(int cpu_id) const {
    return cpu_id >= 0 && static_cast<std::size_t>(cpu_id) < index_of_.size()
               ? index_of_[static_cast<std::size_t>(cpu_id)]
               : -1;
  }
  [[nodiscard]] int core_index(int cpu_index) const { return core_of_[u(cpu_index)]; }
  [[nodiscard]] int node_index(int cpu_index) const { return node_of_[u(cpu_index)]; }
  [[nodiscard]] int socket_index(int cpu_index) const { return socket_of_[u(cpu_index)]; }
  [[nodiscard]] int cpu_id_at(int cpu_index) const { return cpus_[u(cpu_index)].cpu_id; }
  [[nodiscard]] int core_id_at(int core_index) const { return core_ids_[u(core_index)]; }
  // The NUMA node / socket index of a core (every CPU of a core shares them: build() checks).
  [[nodiscard]] int core_node_index(int core_index) const { return core_node_[u(core_index)]; }
  [[nodiscard]] int core_socket_index(int core_index) const { return core_socket_[u(core_index)]; }
  // The socket index of a NUMA node (build() checks a node lies in one socket).
  [[nodiscard]] int node_socket_index(int node_index) const { return node_socket_[u(node_index)]; }
  // The dense indices of a core's CPUs, ascending.
  [[nodiscard]] const int* core_cpus_begin(int core_index) const {
    return core_cpus_.data() + core_offsets_[u(core_index)];
  }
  [[nodiscard]] const int* core_cpus_end(int core_index) const {
    return core_cpus_.data() + core_offsets_[u(core_index) + 1];
  }

 private:
  friend class cpu_topology_builder;
  static std::size_t u(int i) { return static_cast<std::size_t>(i); }
  [[nodiscard]] int per(int n) const { return n == 0 ? 0 : num_cpus() / n; }

  std::vector<cpu_info> cpus_;
  cpu_set all_;
  std::vector<int> index_of_;                       // by CPU id
  std::vector<int> core_of_, node_of_, socket_of_;  // by dense CPU index
  std::vector<int> core_ids_, node_ids_, socket_ids_;
  std::vector<int> core_offsets_, core_cpus_;
  std::vector<int> core_node_, core_socket_, node_socket_;
};

// CPUTopologyBuilder plus validation. build() refuses a topology Koordinator's int-div
// helpers would get wrong, naming what is inconsistent:
// - a CPU id given twice ("cpu 3 listed twice: core 1 and core 2");
// - a core whose CPUs are in different NUMA nodes or sockets;
// - a NUMA node in two sockets;
// - counts that do not add up: CPUs per core, cores per NUMA node or NUMA nodes per socket
//   not the same everywhere (then NumCPUs / NumCores is not every core's size);
// - no CPUs at all (CPUTopology.IsValid), or a negative id.
class cpu_topology_builder {
 public:
  // AddCPUInfo: `core_id` is Linux's core_id, numbered within its socket, so the builder
  // stores socket_id << 16 | core_id as Koordinator does (two sockets' core 0 are two cores).
  cpu_topology_builder& add_cpu_info(int socket_id, int node_id, int core_id, int cpu_id);
  // A CPU whose core id is already unique across the node (buildCPUTopologyForTest's global
  // numbering), stored as given.
  cpu_topology_builder& add_cpu(const cpu_info& info);
  [[nodiscard]] result<cpu_topology> build() const;

 private:
  std::vector<cpu_info> cpus_;
  std::string first_error_;
};

// A uniform machine, for tests, the simulator and benchmarks.
struct machine_model {
  int sockets = 1;                // Default: 1
  int numa_nodes_per_socket = 1;  // Default: 1
  int cores_per_numa_node = 1;    // Default: 1
  int threads_per_core = 1;       // Default: 1 (2 with SMT / Hyper-Threading)
  enum class numbering : std::uint8_t {
    // x86 Linux: first threads of every core across all sockets, then the sibling threads
    // (2 sockets x 48 cores x 2: cpu 0 and cpu 96 share core 0). core_id restarts per socket.
    linux_x86,
    // buildCPUTopologyForTest: a core's threads are adjacent (cpu 0 and 1 share core 0); core
    // and NUMA node ids count up across the whole node.
    siblings_adjacent,
  };
  numbering order = numbering::linux_x86;  // Default: linux_x86
};

// Errors name the machine_model field that is below 1, or the total when it exceeds max_cpu_id.
[[nodiscard]] result<cpu_topology> build_topology(const machine_model& m);

// buildCPUTopologyForTest(sockets, nodesPerSocket, coresPerNode, cpusPerCore).
[[nodiscard]] cpu_topology build_cpu_topology_for_test(int sockets, int nodes_per_socket,
                                                       int cores_per_node, int cpus_per_core);

// The node.koordinator.sh/cpu-topology annotation the koordlet writes for a machine of this
// model (linux_x86 numbering: core ids restart per socket, as Linux reports them; entries in
// cpu id order). Errors as build_topology's.
[[nodiscard]] result<std::string> format_cpu_topology_annotation(const machine_model& m);

// The node.koordinator.sh/cpu-topology annotation ({"detail":[{"id","core","socket","node"}]}),
// converted as convertCPUTopology does (AddCPUInfo per entry). Errors name the field.
[[nodiscard]] result<cpu_topology> parse_cpu_topology_annotation(std::string_view json);

}  // namespace colony::scheduler::numa
