// Cold memory (kidled): memory.idle_page_stats of a memory cgroup (Anolis / Alibaba Cloud Linux
// kernels), the bytes of page cache idle for long enough to count as cold, and memory usage with
// hot page cache: usage without page cache plus the page cache that is not cold.
//
// Koordinator (feature gate ColdPageCollector, >= 1.3):
// pkg/koordlet/util/system/kidled_util.go (ParseMemoryIdlePageStats: 31 lines, a header of six
// "# key: value" lines, then the rows "csei ... slab" of per-bucket bytes;
// GetColdPageTotalBytes: cfei + dfei + cfui + dfui from bucket kidledColdBoundary = 5 on),
// pkg/koordlet/util/cold_page.go (GetNodeMemUsageWithHotPageCache: MemTotal - MemFree - cold;
// GetCgroupMemUsageWithHotPageCache: MemoryStatRaw.UsageWithPageCache() - cold, i.e. inactive_anon
// + active_anon + unevictable + active_file + inactive_file - cold),
// pkg/koordlet/metricsadvisor/collectors/coldmemoryresource/cold_page_kidled.go (node: the
// memory root's file; pods: the pod cgroup's).
// Errors name the file (where) and the field. Thread-safety: free functions.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "bridges/node/cgroup_layout.hpp"
#include "messages/result.hpp"

namespace colony::node {

inline constexpr std::string_view idle_page_stats_file = "memory.idle_page_stats";
// kidled's default cold boundary: buckets from index 5 ([60 s, 120 s) with the default buckets
// 1,2,5,15,30,60,120,240 scan periods) on are cold (defaultKidledColdBoundary).
inline constexpr int kidled_cold_boundary = 5;

struct idle_page_stats {
  std::string version;
  std::uint64_t page_scans = 0, slab_scans = 0, scan_period_in_seconds = 0, use_hierarchy = 0;
  std::vector<std::uint64_t> buckets;
  // csei, dsei, cfei, dfei, csui, dsui, cfui, dfui, csea, dsea, cfea, dfea, csua, dsua, cfua,
  // dfua, slab -> bytes per bucket
  std::map<std::string, std::vector<std::uint64_t>, std::less<>> rows;
  bool operator==(const idle_page_stats&) const = default;
};

// ParseMemoryIdlePageStats over the file's text (surrounding whitespace trimmed, as Koordinator's
// cgroup read does). invalid_input naming `where` unless it has 31 lines.
[[nodiscard]] result<idle_page_stats> parse_idle_page_stats(std::string_view text,
                                                            const std::string& where);

// GetColdPageTotalBytes: clean and dirty file pages, evictable and unevictable, inactive
// (cfei, dfei, cfui, dfui), in buckets [boundary, end).
[[nodiscard]] std::uint64_t cold_page_bytes(const idle_page_stats& s,
                                            int boundary = kidled_cold_boundary) noexcept;

// The cold bytes of <memory controller>/<dir>/memory.idle_page_stats. not_found when the kernel
// has no such file.
[[nodiscard]] result<std::int64_t> read_cold_page_bytes(const cgroup_mounts& m,
                                                        std::string_view dir);

// Node: MemTotal - MemFree - the memory root's cold bytes (<proc_root>/meminfo). not_found when
// the memory root has no memory.idle_page_stats (the kernel lacks kidled).
[[nodiscard]] result<std::int64_t> node_memory_with_hot_page(const cgroup_mounts& m,
                                                             const std::string& proc_root);

// A cgroup (a pod): memory.stat's anon + unevictable + active_file + inactive_file (v1 total_*)
// minus its cold bytes, at least 0. not_found as read_cold_page_bytes.
[[nodiscard]] result<std::int64_t> cgroup_memory_with_hot_page(const cgroup_mounts& m,
                                                               std::string_view dir);

}  // namespace colony::node
