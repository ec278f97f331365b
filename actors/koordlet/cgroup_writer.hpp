// Cgroup writes for cluster mode: a pure translation from koordlet settings to (relative path,
// value) pairs, in cgroup v2 names (default) or v1 names, and a small writer that writes them
// under a configurable root directory.
//
// Koordinator: pkg/koordlet/util/system/cgroup_resource.go (the v1/v2 file names and the v2
// conversions: cpu.max "quota period", cpu.weight from shares, memory.max "max"),
// resourceexecutor (write order). The translation is pure; only write_cgroup_files does I/O
// (std::ofstream). Errors name the file. Thread-safety: none; one writer per koordlet.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "messages/result.hpp"

namespace colony::koordlet {

enum class cgroup_version : std::uint8_t { v1, v2 };

// What to set on one cgroup directory; unset fields are not written.
struct cgroup_settings {
  std::string dir;  // relative to the cgroup root, e.g. "kubepods.slice/kubepods-besteffort.slice"
  std::optional<std::int64_t> cfs_quota_us;  // -1 = unlimited
  std::int64_t cfs_period_us = 100000;       // used with cfs_quota_us
  std::optional<std::int64_t> cpu_shares;    // v1 cpu.shares; v2 cpu.weight converted
  std::optional<std::int64_t> cfs_burst_us;  // cpu.cfs_burst_us / cpu.max.burst
  std::optional<std::string> cpuset_cpus;    // "2-4,7"
  std::optional<std::int64_t>
      memory_limit_bytes;  // -1 = unlimited (v1 memory.limit_in_bytes / v2 memory.max)
  std::optional<std::int64_t>
      memory_high_bytes;  // v2 memory.high (v1: memory.high of Anolis, same name)
  std::optional<std::int64_t> memory_min_bytes;  // memory.min
  std::optional<std::int64_t> memory_low_bytes;  // memory.low
  std::optional<std::int64_t> bvt_warp_ns;       // cpu.bvt_warp_ns (Anolis group identity)
  std::optional<bool> cpu_idle;                  // cpu.idle (v2 only)
};

struct cgroup_file_write {
  std::string path;  // relative to the root: dir + "/" + file
  std::string value;
  bool operator==(const cgroup_file_write&) const = default;
};

// v2 cpu.weight from v1 shares (ConvertCPUSharesToWeight: 1 + (shares - 2) x 9999 / 262142).
[[nodiscard]] std::int64_t cpu_shares_to_weight(std::int64_t shares) noexcept;

// Files to write, in a fixed order per directory (cpuset, cpu, memory). Pure.
[[nodiscard]] std::vector<cgroup_file_write> translate_cgroup_settings(
    std::span<const cgroup_settings> s, cgroup_version v);

// Writes every file under root (root + "/" + path). Stops at the first failure and names the
// file (not_found when the cgroup directory does not exist; unavailable for other I/O errors).
// Does not create directories: cgroups are made by the runtime, never by koordlet.
[[nodiscard]] result<std::size_t> write_cgroup_files(const std::string& root,
                                                     std::span<const cgroup_file_write> writes);

}  // namespace colony::koordlet
