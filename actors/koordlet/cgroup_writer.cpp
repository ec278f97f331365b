#include "actors/koordlet/cgroup_writer.hpp"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>

namespace colony::koordlet {

// Kubelet's mapping of shares [2, 262144] to weights [1, 10000] (KEP 2254).
std::int64_t cpu_shares_to_weight(std::int64_t shares) noexcept {
  if (shares < 2) shares = 2;
  if (shares > 262144) shares = 262144;
  return 1 + ((shares - 2) * 9999) / 262142;
}

std::vector<cgroup_file_write> translate_cgroup_settings(std::span<const cgroup_settings> settings,
                                                         cgroup_version v) {
  std::vector<cgroup_file_write> out;
  const bool v2 = v == cgroup_version::v2;
  for (const auto& s : settings) {
    auto put = [&](std::string_view file, std::string value) {
      std::string path = s.dir;
      if (!path.empty() && path.back() != '/') path += '/';
      path += file;
      out.push_back({std::move(path), std::move(value)});
    };
    // cpuset first: a shrinking BE cpuset must land before quotas that assume it.
    if (s.cpuset_cpus) put("cpuset.cpus", *s.cpuset_cpus);
    if (s.cfs_quota_us) {
      if (v2)
        put("cpu.max",
            (*s.cfs_quota_us < 0 ? std::string("max") : std::to_string(*s.cfs_quota_us)) + " " +
                std::to_string(s.cfs_period_us));
      else
        put("cpu.cfs_quota_us", std::to_string(*s.cfs_quota_us));
    }
    if (s.cpu_shares) {
      if (v2)
        put("cpu.weight", std::to_string(cpu_shares_to_weight(*s.cpu_shares)));
      else
        put("cpu.shares", std::to_string(*s.cpu_shares));
    }
    if (s.cfs_burst_us)
      put(v2 ? "cpu.max.burst" : "cpu.cfs_burst_us", std::to_string(*s.cfs_burst_us));
    if (s.bvt_warp_ns) put("cpu.bvt_warp_ns", std::to_string(*s.bvt_warp_ns));
    if (s.cpu_idle && v2) put("cpu.idle", *s.cpu_idle ? "1" : "0");
    if (s.memory_limit_bytes) {
      const auto val = *s.memory_limit_bytes;
      if (v2)
        put("memory.max", val < 0 ? std::string("max") : std::to_string(val));
      else
        put("memory.limit_in_bytes", std::to_string(val));
    }
    if (s.memory_min_bytes) put("memory.min", std::to_string(*s.memory_min_bytes));
    if (s.memory_low_bytes) put("memory.low", std::to_string(*s.memory_low_bytes));
    if (s.memory_high_bytes) {
      const auto val = *s.memory_high_bytes;
      put("memory.high", val < 0 ? std::string("max") : std::to_string(val));
    }
  }
  return out;
}

result<std::size_t> write_cgroup_files(const std::string& root,
                                       std::span<const cgroup_file_write> writes) {
  std::size_t n = 0;
  for (const auto& w : writes) {
    const std::filesystem::path full = std::filesystem::path(root) / w.path;
    std::error_code ec;
    if (!std::filesystem::is_directory(full.parent_path(), ec))
      return fail(errc::not_found, "cgroup directory does not exist", full.parent_path().string());
    std::ofstream f(full, std::ios::out | std::ios::trunc);
    if (!f)
      return fail(errc::unavailable, std::string("cannot open: ") + std::strerror(errno),
                  full.string());
    f << w.value;
    f.flush();
    if (!f)
      return fail(errc::unavailable, std::string("write failed: ") + std::strerror(errno),
                  full.string());
    ++n;
  }
  return n;
}

}  // namespace colony::koordlet
