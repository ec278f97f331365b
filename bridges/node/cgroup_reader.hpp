// Readers of one cgroup's usage files, for cgroup v1 (per-controller directories) and v2
// (unified), as Koordinator's resource executor reads them
// (pkg/koordlet/util/system/cgroup_resource.go names, pkg/koordlet/resourceexecutor/reader.go:
// ReadCPUAcctUsage, ReadCPUStat, ReadMemoryStat, ReadPSI):
//   CPU usage   v1 cpuacct/<dir>/cpuacct.usage (ns)      v2 <dir>/cpu.stat usage_usec
//   throttling  v1 cpu/<dir>/cpu.stat nr_periods, nr_throttled, throttled_time (ns)
//               v2 <dir>/cpu.stat nr_periods, nr_throttled, throttled_usec
//   memory      v1 memory/<dir>/memory.usage_in_bytes + memory.stat total_* fields
//               v2 <dir>/memory.current + memory.stat
//   PSI         v1 cpuacct/<dir>/{cpu,memory,io}.pressure (kernels with cgroup1 PSI)
//               v2 <dir>/{cpu,memory,io}.pressure
//   CPU limit   v1 cpu/<dir>/cpu.cfs_quota_us, cpu.cfs_period_us   v2 <dir>/cpu.max
// `dir` is relative to the controller directories of cgroup_mounts. Errors name the file (where)
// and the field (message): not_found when the file is missing (the cgroup went away),
// invalid_input when it is malformed. Thread-safety: free functions.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "bridges/node/cgroup_layout.hpp"
#include "messages/result.hpp"

namespace colony::node {

// Cumulative CPU time of the cgroup in nanoseconds.
[[nodiscard]] result<std::int64_t> read_cpu_usage_ns(const cgroup_mounts& m, std::string_view dir);

struct cpu_throttling {
  std::int64_t nr_periods = 0;
  std::int64_t nr_throttled = 0;
  std::int64_t throttled_ns = 0;
  bool operator==(const cpu_throttling&) const = default;
};
[[nodiscard]] result<cpu_throttling> read_cpu_throttling(const cgroup_mounts& m,
                                                         std::string_view dir);

// CPU usage and, when asked, throttling in as few reads as the layout allows: v2 has both in
// cpu.stat (one read), v1 in cpuacct.usage and cpu/cpu.stat.
struct cpu_usage_stat {
  std::int64_t usage_ns = 0;
  std::optional<cpu_throttling> throttling;
};
[[nodiscard]] result<cpu_usage_stat> read_cpu_usage_stat(const cgroup_mounts& m,
                                                         std::string_view dir,
                                                         bool with_throttling);

// The cgroup's CFS bandwidth as the files hold it: v1 cpu.cfs_quota_us and cpu.cfs_period_us
// (the period is read only when there is a quota), v2 cpu.max "QUOTA PERIOD" ("max": -1).
struct cfs_bandwidth {
  std::int64_t quota_us = -1;  // -1: no quota
  std::int64_t period_us = 0;  // 0: not read (no quota on v1)
  bool operator==(const cfs_bandwidth&) const = default;
};
// nullopt when the files are absent (a tree without the cpu controller's quota files);
// invalid_input naming the file when they are malformed.
// known_period_us: the cgroup's period as read before (kubelet sets it when it makes the cgroup,
// and nothing here changes it); v1 then reads the quota only.
[[nodiscard]] result<std::optional<cfs_bandwidth>> read_cfs_bandwidth(
    const cgroup_mounts& m, std::string_view dir,
    std::optional<std::int64_t> known_period_us = std::nullopt);

// quota x 1000 / period (the inverse of kubelet's MilliCPUToQuota); nullopt without a quota or
// with a period <= 0.
[[nodiscard]] std::optional<std::int64_t> cpu_limit_milli(const cfs_bandwidth& b);

// The CPU limit kubelet wrote as the cgroup's cfs quota, in milli-cores (quota x 1000 / period,
// the inverse of kubelet's MilliCPUToQuota). nullopt when the cgroup has no quota (-1, "max") or
// the files are absent (a tree without the cpu controller's quota files); invalid_input when
// they are malformed.
[[nodiscard]] result<std::optional<std::int64_t>> read_cpu_limit_milli(const cgroup_mounts& m,
                                                                       std::string_view dir);

struct cgroup_memory {
  std::int64_t usage_bytes = 0;          // memory.usage_in_bytes / memory.current
  std::int64_t inactive_file_bytes = 0;  // total_inactive_file / inactive_file
  // inactive_anon + active_anon + unevictable: Koordinator's MemoryStatRaw.Usage(), the pod
  // memory its pod collector reports (usage without page cache).
  std::int64_t anon_bytes = 0;
  // cadvisor's working set: usage - inactive_file, at least 0 (what kubelet's eviction uses).
  [[nodiscard]] std::int64_t working_set_bytes() const {
    return usage_bytes > inactive_file_bytes ? usage_bytes - inactive_file_bytes : 0;
  }
  bool operator==(const cgroup_memory&) const = default;
};
[[nodiscard]] result<cgroup_memory> read_memory(const cgroup_mounts& m, std::string_view dir);

enum class psi_resource : std::uint8_t { cpu, memory, io };

struct psi_line {
  double avg10 = 0, avg60 = 0, avg300 = 0;
  std::int64_t total_us = 0;
  bool operator==(const psi_line&) const = default;
};
struct psi_stats {
  psi_line some;
  std::optional<psi_line> full;  // cpu.pressure has no "full" line before Linux 5.13
  bool operator==(const psi_stats&) const = default;
};
// nullopt when the kernel has no such file (PSI is optional); invalid_input when it is malformed.
[[nodiscard]] result<std::optional<psi_stats>> read_psi(const cgroup_mounts& m,
                                                        std::string_view dir, psi_resource r);

}  // namespace colony::node
