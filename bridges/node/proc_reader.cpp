#include "bridges/node/proc_reader.hpp"

#include <array>
#include <string_view>

#include "bridges/node/internal/file_read.hpp"

namespace colony::node {

namespace {

// Whitespace-separated fields of one line.
template <std::size_t N>
std::size_t split_fields(std::string_view line, std::array<std::string_view, N>& out) {
  std::size_t n = 0;
  std::size_t i = 0;
  while (i < line.size() && n < N) {
    while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) ++i;
    const std::size_t start = i;
    while (i < line.size() && line[i] != ' ' && line[i] != '\t') ++i;
    if (i > start) out[n++] = line.substr(start, i - start);
  }
  return n;
}

}  // namespace

result<proc_cpu_ticks> read_proc_stat(const std::string& proc_root) {
  const std::string path = internal::join(proc_root, "stat");
  auto content = internal::read_file(path);
  if (!content) return tl::unexpected(content.error());
  proc_cpu_ticks t;
  bool seen_total = false;
  std::string_view rest = *content;
  while (!rest.empty()) {
    const auto nl = rest.find('\n');
    const std::string_view line = rest.substr(0, nl);
    rest = nl == std::string_view::npos ? std::string_view{} : rest.substr(nl + 1);
    if (line.size() < 3 || line.substr(0, 3) != "cpu") continue;
    if (line.size() > 3 && line[3] >= '0' && line[3] <= '9') {
      ++t.cpus;
      continue;
    }
    std::array<std::string_view, 11> f{};
    const std::size_t n = split_fields(line, f);
    if (f[0] != "cpu") continue;
    // cpu user nice system idle iowait irq softirq ...
    if (n < 8) {
      return fail(errc::invalid_input,
                  "field cpu: expected at least 7 counters, got " + std::to_string(n - 1), path);
    }
    static constexpr std::array<std::pair<std::size_t, const char*>, 5> used_fields = {
        {{1, "cpu.user"}, {2, "cpu.nice"}, {3, "cpu.system"}, {6, "cpu.irq"}, {7, "cpu.softirq"}}};
    for (const auto& uf : used_fields) {
      auto v = internal::parse_count(f[uf.first], uf.second, path);
      if (!v) return tl::unexpected(v.error());
      t.used += *v;
    }
    seen_total = true;
  }
  if (!seen_total) return fail(errc::invalid_input, "field cpu: line missing", path);
  if (t.cpus == 0) return fail(errc::invalid_input, "field cpuN: no per-CPU lines", path);
  return t;
}

namespace {

// "MemTotal:       24684084 kB" -> bytes.
result<std::int64_t> meminfo_field(std::string_view content, std::string_view key,
                                   const std::string& path) {
  auto v = internal::find_key(content, key);
  if (!v) return fail(errc::invalid_input, "field " + std::string(key) + " missing", path);
  std::string_view s = *v;
  const bool kib = s.size() >= 2 && s.substr(s.size() - 2) == "kB";
  if (kib) s.remove_suffix(2);
  auto n = internal::parse_count(s, key, path);
  if (!n) return n;
  constexpr std::int64_t max_kib = std::int64_t{1} << 52;  // no int64 overflow when scaled
  if (kib && *n > max_kib) {
    return fail(errc::invalid_input, "field " + std::string(key) + ": out of range", path);
  }
  return kib ? *n * 1024 : *n;
}

}  // namespace

result<proc_meminfo> read_meminfo(const std::string& proc_root) {
  const std::string path = internal::join(proc_root, "meminfo");
  auto content = internal::read_file(path);
  if (!content) return tl::unexpected(content.error());
  auto total = meminfo_field(*content, "MemTotal:", path);
  if (!total) return tl::unexpected(total.error());
  auto avail = meminfo_field(*content, "MemAvailable:", path);
  if (!avail) return tl::unexpected(avail.error());
  if (*avail > *total) {
    return fail(errc::invalid_input, "field MemAvailable: larger than MemTotal", path);
  }
  return proc_meminfo{*total, *avail};
}

}  // namespace colony::node
