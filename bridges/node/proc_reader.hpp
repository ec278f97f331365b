// Node-level readers over /proc: CPU ticks from /proc/stat and memory from /proc/meminfo, as
// Koordinator's node resource collector reads them
// (pkg/koordlet/metricsadvisor/collectors/noderesource/node_resource_collector.go,
// pkg/koordlet/util/cpu.go readTotalCPUStat, pkg/koordlet/util/meminfo.go).
//
// The proc root is an argument ("/proc" on a node, a temporary tree in tests). Errors name the
// file and the field. Thread-safety: free functions; safe to call concurrently.
#pragma once

#include <cstdint>
#include <string>

#include "messages/result.hpp"

namespace colony::node {

// The aggregate "cpu" line of /proc/stat, in USER_HZ ticks.
struct proc_cpu_ticks {
  // user + nice + system + irq + softirq: what readTotalCPUStat counts as used (idle, iowait,
  // steal and guest are left out; guest time is already inside user).
  std::int64_t used = 0;
  // Number of "cpuN" lines: the CPUs online, the node's CPU capacity in cores.
  std::int32_t cpus = 0;
};

// Reads proc_root/stat. invalid_input when the "cpu" line is missing, has fewer than 7 counters
// (Koordinator refuses <= 7 fields) or holds a non-number.
[[nodiscard]] result<proc_cpu_ticks> read_proc_stat(const std::string& proc_root);

struct proc_meminfo {
  std::int64_t total_bytes = 0;      // MemTotal
  std::int64_t available_bytes = 0;  // MemAvailable
  // Koordinator's node memory usage without page cache: MemTotal - MemAvailable
  // (MemInfo.MemUsageBytes, pkg/koordlet/util/meminfo.go).
  [[nodiscard]] std::int64_t used_bytes() const { return total_bytes - available_bytes; }
};

// Reads proc_root/meminfo ("MemTotal:  24684084 kB"). invalid_input when MemTotal or
// MemAvailable is missing or malformed, or MemAvailable > MemTotal.
[[nodiscard]] result<proc_meminfo> read_meminfo(const std::string& proc_root);

}  // namespace colony::node
