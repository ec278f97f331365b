// This machine's CPU and NUMA topology from sysfs and /proc, what Koordinator's koordlet reports
// as the node's NodeCPUInfo and NodeNUMAInfo (pkg/koordlet/util/cpuinfo.go GetLocalCPUInfo, which
// runs `lscpu -e=CPU,NODE,SOCKET,CORE,CACHE,ONLINE`, and pkg/koordlet/util/meminfo.go
// GetNodeNUMAInfo), and the CPU basic info its CPU normalization reads (model, hyper-threading,
// turbo). Read from the files lscpu reads, without running a program:
//   online CPUs  <sys>/devices/system/cpu/online (a cpulist, "0-3,8")
//   core/socket  <sys>/devices/system/cpu/cpuN/topology/{core_id,physical_package_id}
//   NUMA node    <sys>/devices/system/node/nodeM/cpulist (none of it: a non-NUMA kernel, node 0)
//   NUMA memory  <sys>/devices/system/node/nodeM/meminfo "Node M MemTotal:" (else /proc/meminfo)
//   model        <proc>/cpuinfo "model name", "vendor_id"
//   turbo        <sys>/devices/system/cpu/intel_pstate/no_turbo, else cpufreq/boost
//
// The roots are arguments ("/sys" and "/proc" on a node, temporary trees in tests). Errors name
// the file (where) and the field or token (message): not_found when a file the topology needs is
// missing, invalid_input when one is malformed or the files disagree. Thread-safety: free
// functions; safe to call concurrently.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "actors/koordlet/node_topology.hpp"
#include "messages/result.hpp"

namespace colony::node {

// The machine in the koordlet's own types (actors/koordlet/node_topology.hpp), which its component
// reports the NodeResourceTopology from: one logical CPU (Koordinator's extension.CPUInfo /
// ProcessorInfo), one NUMA node's MemTotal, and the whole (metriccache NodeCPUInfo +
// NodeNUMAInfo). cpu_model: /proc/cpuinfo's first "model name" (empty when absent, e.g. some ARM);
// hyper_thread_enabled: some physical core (socket, core) has more than one online CPU;
// turbo_enabled: intel_pstate/no_turbo == 0, else cpufreq/boost == 1, else false.
using cpu_topology_entry = koordlet::topology_cpu;
using numa_node_memory = koordlet::topology_numa_memory;
using machine_topology = koordlet::machine_info;

// A Linux cpulist ("0-3,8,10-11", the format of cpu/online and node/nodeM/cpulist): the CPU ids,
// ascending and without repeats. Surrounding whitespace (the file's '\n') is allowed; "" is no
// CPUs. invalid_input "bad cpulist token 'T'" with where = path for a token that is not N or
// N-M with N <= M (strides like "0-7:2" are boot-parameter syntax, never in sysfs).
[[nodiscard]] result<std::vector<std::int32_t>> parse_cpu_list(std::string_view text,
                                                               const std::string& path);

// sys_root: normally "/sys"; proc_root: normally "/proc" (tests pass fake trees).
// core is numbered machine-wide (see topology_reader.cpp): unique across sockets as lscpu's CORE
// column is, while sysfs core_id repeats per socket.
[[nodiscard]] result<machine_topology> read_machine_topology(const std::string& sys_root,
                                                             const std::string& proc_root);

}  // namespace colony::node
