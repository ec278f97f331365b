#include "bridges/node/cold_page.hpp"

#include <algorithm>
#include <charconv>

#include "bridges/node/internal/file_read.hpp"

namespace colony::node {
namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() &&
         (s.front() == ' ' || s.front() == '\n' || s.front() == '\t' || s.front() == '\r'))
    s.remove_prefix(1);
  while (!s.empty() &&
         (s.back() == ' ' || s.back() == '\n' || s.back() == '\t' || s.back() == '\r'))
    s.remove_suffix(1);
  return s;
}

std::vector<std::string_view> fields(std::string_view line) {
  std::vector<std::string_view> out;
  std::size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) ++i;
    const auto start = i;
    while (i < line.size() && line[i] != ' ' && line[i] != '\t') ++i;
    if (i > start) out.push_back(line.substr(start, i - start));
  }
  return out;
}

// strconv.ParseUint with its error ignored, as Koordinator's parser does: 0 where not a number.
std::uint64_t lenient(std::string_view s) {
  std::uint64_t v = 0;
  const auto r = std::from_chars(s.data(), s.data() + s.size(), v);
  return r.ec == std::errc{} && r.ptr == s.data() + s.size() ? v : 0;
}

std::string_view key_of(std::string_view f) {  // "version:" -> "version"
  return f.empty() ? f : f.substr(0, f.size() - 1);
}

}  // namespace

result<idle_page_stats> parse_idle_page_stats(std::string_view text, const std::string& where) {
  text = trim(text);
  std::vector<std::string_view> lines;
  while (true) {
    const auto nl = text.find('\n');
    lines.push_back(text.substr(0, nl));
    if (nl == std::string_view::npos) break;
    text = text.substr(nl + 1);
  }
  if (lines.size() != 31)
    return tl::unexpected(error{errc::invalid_input,
                                "field lines: want 31 (6 header lines, 8 comment lines, 17 rows), "
                                "got " +
                                    std::to_string(lines.size()),
                                where});
  idle_page_stats s;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    const auto f = fields(lines[i]);
    if (i < 6) {
      if (f.size() < 3) continue;  // "# version: 1.0"
      const auto key = key_of(f[1]);
      if (key == "version")
        s.version = std::string(f[2]);
      else if (key == "page_scans")
        s.page_scans = lenient(f[2]);
      else if (key == "slab_scans")
        s.slab_scans = lenient(f[2]);
      else if (key == "scan_period_in_seconds")
        s.scan_period_in_seconds = lenient(f[2]);
      else if (key == "use_hierarchy")
        s.use_hierarchy = lenient(f[2]);
      else if (key == "buckets") {
        std::string_view b = f[2];
        while (true) {
          const auto comma = b.find(',');
          s.buckets.push_back(lenient(b.substr(0, comma)));
          if (comma == std::string_view::npos) break;
          b = b.substr(comma + 1);
        }
      }
    } else if (i >= 14) {
      if (f.empty()) continue;
      std::vector<std::uint64_t> v;
      for (std::size_t k = 1; k < f.size(); ++k) v.push_back(lenient(f[k]));
      s.rows[std::string(f[0])] = std::move(v);
    }
  }
  return s;
}

std::uint64_t cold_page_bytes(const idle_page_stats& s, int boundary) noexcept {
  std::uint64_t total = 0;
  for (const std::string_view row : {"cfei", "dfei", "cfui", "dfui"}) {
    const auto it = s.rows.find(row);
    if (it == s.rows.end()) continue;
    for (std::size_t i = static_cast<std::size_t>(boundary); i < it->second.size(); ++i)
      total += it->second[i];
  }
  return total;
}

result<std::int64_t> read_cold_page_bytes(const cgroup_mounts& m, std::string_view dir) {
  const std::string path =
      internal::join(internal::join(m.memory, dir), std::string(idle_page_stats_file));
  auto text = internal::read_file(path);
  if (!text) return tl::unexpected(text.error());
  auto s = parse_idle_page_stats(*text, path);
  if (!s) return tl::unexpected(s.error());
  return static_cast<std::int64_t>(cold_page_bytes(*s));
}

result<std::int64_t> node_memory_with_hot_page(const cgroup_mounts& m,
                                               const std::string& proc_root) {
  auto cold = read_cold_page_bytes(m, "");
  if (!cold) return tl::unexpected(cold.error());
  const std::string path = internal::join(proc_root, "meminfo");
  auto text = internal::read_file(path);
  if (!text) return tl::unexpected(text.error());
  auto kib = [&](std::string_view key) -> result<std::int64_t> {
    const auto v = internal::find_key(*text, key);
    if (!v)
      return tl::unexpected(
          error{errc::invalid_input, "field " + std::string(key) + " missing", path});
    auto s = trim(*v);
    if (s.size() >= 2 && s.substr(s.size() - 2) == "kB") s = trim(s.substr(0, s.size() - 2));
    auto n = internal::parse_count(s, key, path);
    if (!n) return tl::unexpected(n.error());
    return *n * 1024;
  };
  auto total = kib("MemTotal:");
  if (!total) return tl::unexpected(total.error());
  auto free = kib("MemFree:");
  if (!free) return tl::unexpected(free.error());
  return std::max<std::int64_t>(0, *total - *free - *cold);
}

result<std::int64_t> cgroup_memory_with_hot_page(const cgroup_mounts& m, std::string_view dir) {
  auto cold = read_cold_page_bytes(m, dir);
  if (!cold) return tl::unexpected(cold.error());
  const bool v2 = m.version == cgroup_version::v2;
  const std::string path = internal::join(internal::join(m.memory, dir), "memory.stat");
  auto stat = internal::read_file(path);
  if (!stat) return tl::unexpected(stat.error());
  std::int64_t sum = 0;
  for (const std::string_view key :
       {"inactive_anon", "active_anon", "unevictable", "active_file", "inactive_file"}) {
    auto v = internal::key_count(*stat, v2 ? std::string(key) : "total_" + std::string(key), path);
    if (!v) return tl::unexpected(v.error());
    sum += *v;
  }
  return std::max<std::int64_t>(0, sum - *cold);
}

}  // namespace colony::node
