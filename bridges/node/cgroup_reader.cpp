#include "bridges/node/cgroup_reader.hpp"

#include <array>
#include <charconv>
#include <string>

#include "bridges/node/internal/file_read.hpp"

namespace colony::node {

namespace {

bool v2(const cgroup_mounts& m) { return m.version == cgroup_version::v2; }

// Both v2 cpu.stat counters are in microseconds.
constexpr std::int64_t max_usec = INT64_MAX / 1000;

result<std::int64_t> usec_to_ns(std::int64_t us, std::string_view field, const std::string& path) {
  if (us > max_usec)
    return fail(errc::invalid_input, "field " + std::string(field) + ": out of range", path);
  return us * 1000;
}

// A signed decimal (cpu.cfs_quota_us holds -1 for "no quota"), surrounding whitespace allowed.
result<std::int64_t> parse_signed(std::string_view text, std::string_view field,
                                  const std::string& path) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\n')) text.remove_prefix(1);
  while (!text.empty() && (text.back() == ' ' || text.back() == '\n')) text.remove_suffix(1);
  std::int64_t v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (text.empty() || ec != std::errc{} || end != text.data() + text.size())
    return fail(errc::invalid_input, "field " + std::string(field) + ": not a number", path);
  return v;
}

}  // namespace

result<std::optional<cfs_bandwidth>> read_cfs_bandwidth(const cgroup_mounts& m,
                                                        std::string_view dir,
                                                        std::optional<std::int64_t> known_period) {
  const std::string base = internal::join(m.cpu, dir);
  cfs_bandwidth b;
  if (v2(m)) {
    const std::string path = internal::join(base, "cpu.max");
    auto c = internal::read_file(path);
    if (!c) {
      if (c.error().code == errc::not_found) return std::optional<cfs_bandwidth>{};
      return tl::unexpected(c.error());
    }
    const std::string_view t = *c;
    const auto sp = t.find(' ');
    if (sp == std::string_view::npos)
      return fail(errc::invalid_input, "cpu.max: expected \"QUOTA PERIOD\"", path);
    auto p = parse_signed(t.substr(sp + 1), "cpu.max period", path);
    if (!p) return tl::unexpected(p.error());
    b.period_us = *p;
    if (t.substr(0, sp) == "max") return std::optional<cfs_bandwidth>{b};
    auto q = parse_signed(t.substr(0, sp), "cpu.max quota", path);
    if (!q) return tl::unexpected(q.error());
    b.quota_us = *q;
    return std::optional<cfs_bandwidth>{b};
  }
  const std::string qpath = internal::join(base, "cpu.cfs_quota_us");
  auto qt = internal::read_file(qpath);
  if (!qt) {
    if (qt.error().code == errc::not_found) return std::optional<cfs_bandwidth>{};
    return tl::unexpected(qt.error());
  }
  auto q = parse_signed(*qt, "cpu.cfs_quota_us", qpath);
  if (!q) return tl::unexpected(q.error());
  if (*q < 0) return std::optional<cfs_bandwidth>{b};  // no quota: the period does not matter
  b.quota_us = *q;
  if (known_period && *known_period > 0) {
    b.period_us = *known_period;
    return std::optional<cfs_bandwidth>{b};
  }
  const std::string ppath = internal::join(base, "cpu.cfs_period_us");
  auto pt = internal::read_file(ppath);
  if (!pt) return tl::unexpected(pt.error());
  auto p = internal::parse_count(*pt, "cpu.cfs_period_us", ppath);
  if (!p) return tl::unexpected(p.error());
  b.quota_us = *q;
  b.period_us = *p;
  return std::optional<cfs_bandwidth>{b};
}

std::optional<std::int64_t> cpu_limit_milli(const cfs_bandwidth& b) {
  if (b.quota_us < 0 || b.period_us <= 0 || b.quota_us > INT64_MAX / 1000) return std::nullopt;
  return b.quota_us * 1000 / b.period_us;
}

result<std::optional<std::int64_t>> read_cpu_limit_milli(const cgroup_mounts& m,
                                                         std::string_view dir) {
  auto b = read_cfs_bandwidth(m, dir);
  if (!b) return tl::unexpected(b.error());
  if (!*b || (*b)->quota_us < 0) return std::optional<std::int64_t>{};
  if ((*b)->period_us <= 0 || (*b)->quota_us > INT64_MAX / 1000)
    return fail(errc::invalid_input,
                "cfs quota " + std::to_string((*b)->quota_us) + " over period " +
                    std::to_string((*b)->period_us) + " is out of range",
                internal::join(internal::join(m.cpu, dir), v2(m) ? "cpu.max" : "cpu.cfs_quota_us"));
  return cpu_limit_milli(**b);
}

result<std::int64_t> read_cpu_usage_ns(const cgroup_mounts& m, std::string_view dir) {
  if (v2(m)) {
    const std::string path = internal::join(internal::join(m.cpu, dir), "cpu.stat");
    auto c = internal::read_file(path);
    if (!c) return tl::unexpected(c.error());
    auto us = internal::key_count(*c, "usage_usec", path);
    if (!us) return us;
    return usec_to_ns(*us, "usage_usec", path);
  }
  const std::string path = internal::join(internal::join(m.cpuacct, dir), "cpuacct.usage");
  auto c = internal::read_file(path);
  if (!c) return tl::unexpected(c.error());
  return internal::parse_count(*c, "cpuacct.usage", path);
}

namespace {

result<cpu_throttling> parse_throttling(const cgroup_mounts& m, std::string_view content,
                                        const std::string& path) {
  cpu_throttling t;
  auto periods = internal::key_count(content, "nr_periods", path);
  if (!periods) return tl::unexpected(periods.error());
  auto throttled = internal::key_count(content, "nr_throttled", path);
  if (!throttled) return tl::unexpected(throttled.error());
  t.nr_periods = *periods;
  t.nr_throttled = *throttled;
  if (v2(m)) {
    auto us = internal::key_count(content, "throttled_usec", path);
    if (!us) return tl::unexpected(us.error());
    auto ns = usec_to_ns(*us, "throttled_usec", path);
    if (!ns) return tl::unexpected(ns.error());
    t.throttled_ns = *ns;
  } else {
    auto ns = internal::key_count(content, "throttled_time", path);
    if (!ns) return tl::unexpected(ns.error());
    t.throttled_ns = *ns;
  }
  return t;
}

}  // namespace

result<cpu_throttling> read_cpu_throttling(const cgroup_mounts& m, std::string_view dir) {
  const std::string path = internal::join(internal::join(m.cpu, dir), "cpu.stat");
  auto c = internal::read_file(path);
  if (!c) return tl::unexpected(c.error());
  return parse_throttling(m, *c, path);
}

result<cpu_usage_stat> read_cpu_usage_stat(const cgroup_mounts& m, std::string_view dir,
                                           bool with_throttling) {
  cpu_usage_stat out;
  if (!v2(m)) {
    auto u = read_cpu_usage_ns(m, dir);
    if (!u) return tl::unexpected(u.error());
    out.usage_ns = *u;
    if (with_throttling) {
      auto t = read_cpu_throttling(m, dir);
      if (!t) return tl::unexpected(t.error());
      out.throttling = *t;
    }
    return out;
  }
  const std::string path = internal::join(internal::join(m.cpu, dir), "cpu.stat");
  auto c = internal::read_file(path);
  if (!c) return tl::unexpected(c.error());
  auto us = internal::key_count(*c, "usage_usec", path);
  if (!us) return tl::unexpected(us.error());
  auto ns = usec_to_ns(*us, "usage_usec", path);
  if (!ns) return tl::unexpected(ns.error());
  out.usage_ns = *ns;
  if (with_throttling) {
    auto t = parse_throttling(m, *c, path);
    if (!t) return tl::unexpected(t.error());
    out.throttling = *t;
  }
  return out;
}

result<cgroup_memory> read_memory(const cgroup_mounts& m, std::string_view dir) {
  const std::string base = internal::join(m.memory, dir);
  const std::string usage_path =
      internal::join(base, v2(m) ? "memory.current" : "memory.usage_in_bytes");
  auto usage_text = internal::read_file(usage_path);
  if (!usage_text) return tl::unexpected(usage_text.error());
  cgroup_memory mem;
  auto usage = internal::parse_count(
      *usage_text, v2(m) ? "memory.current" : "memory.usage_in_bytes", usage_path);
  if (!usage) return tl::unexpected(usage.error());
  mem.usage_bytes = *usage;

  const std::string stat_path = internal::join(base, "memory.stat");
  auto stat = internal::read_file(stat_path);
  if (!stat) return tl::unexpected(stat.error());
  // v1 memory.stat has per-cgroup fields and hierarchical total_* ones; a pod's containers are
  // its children, so the totals are the pod's usage (Koordinator's ReadMemoryStat reads total_*).
  const std::array<std::string_view, 4> keys =
      v2(m) ? std::array<std::string_view, 4>{"inactive_file", "inactive_anon", "active_anon",
                                              "unevictable"}
            : std::array<std::string_view, 4>{"total_inactive_file", "total_inactive_anon",
                                              "total_active_anon", "total_unevictable"};
  std::array<std::int64_t, 4> v{};
  for (std::size_t i = 0; i < keys.size(); ++i) {
    auto x = internal::key_count(*stat, keys[i], stat_path);
    if (!x) return tl::unexpected(x.error());
    v[i] = *x;
  }
  mem.inactive_file_bytes = v[0];
  if (v[1] > INT64_MAX - v[2] - v[3]) {
    return fail(errc::invalid_input, "fields *_anon + unevictable: out of range", stat_path);
  }
  mem.anon_bytes = v[1] + v[2] + v[3];
  return mem;
}

namespace {

// "some avg10=0.00 avg60=0.00 avg300=0.00 total=0"
result<psi_line> parse_psi_line(std::string_view line, std::string_view kind,
                                const std::string& path) {
  psi_line p;
  bool seen[4] = {false, false, false, false};
  std::size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && line[i] == ' ') ++i;
    const std::size_t start = i;
    while (i < line.size() && line[i] != ' ') ++i;
    const std::string_view tok = line.substr(start, i - start);
    const auto eq = tok.find('=');
    if (eq == std::string_view::npos) continue;
    const std::string_view key = tok.substr(0, eq);
    const std::string_view val = tok.substr(eq + 1);
    const std::string field = std::string(kind) + "." + std::string(key);
    if (key == "total") {
      auto t = internal::parse_count(val, field, path);
      if (!t) return tl::unexpected(t.error());
      p.total_us = *t;
      seen[3] = true;
      continue;
    }
    double* dst = key == "avg10"    ? &p.avg10
                  : key == "avg60"  ? &p.avg60
                  : key == "avg300" ? &p.avg300
                                    : nullptr;
    if (dst == nullptr) continue;  // a field newer kernels may add
    double d = 0;
    auto [ptr, ec] = std::from_chars(val.data(), val.data() + val.size(), d);
    if (val.empty() || ec != std::errc{} || ptr != val.data() + val.size() || d < 0) {
      return fail(errc::invalid_input,
                  "field " + field + ": not a number: '" + std::string(val) + "'", path);
    }
    *dst = d;
    seen[key == "avg10" ? 0 : key == "avg60" ? 1 : 2] = true;
  }
  for (int k = 0; k < 4; ++k) {
    if (!seen[k]) {
      static constexpr std::array<const char*, 4> names = {"avg10", "avg60", "avg300", "total"};
      return fail(errc::invalid_input, "field " + std::string(kind) + "." + names[k] + " missing",
                  path);
    }
  }
  return p;
}

}  // namespace

result<std::optional<psi_stats>> read_psi(const cgroup_mounts& m, std::string_view dir,
                                          psi_resource r) {
  const char* file = r == psi_resource::cpu      ? "cpu.pressure"
                     : r == psi_resource::memory ? "memory.pressure"
                                                 : "io.pressure";
  const std::string path = internal::join(internal::join(m.cpuacct, dir), file);
  auto c = internal::read_file(path);
  if (!c) {
    // Kernels without PSI (or cgroup v1 without psi=1) have no such file: absent, no error.
    if (c.error().code == errc::not_found) return std::optional<psi_stats>();
    return tl::unexpected(c.error());
  }
  auto some = internal::find_key(*c, "some");
  if (!some) return fail(errc::invalid_input, "field some missing", path);
  psi_stats s;
  auto sl = parse_psi_line(*some, "some", path);
  if (!sl) return tl::unexpected(sl.error());
  s.some = *sl;
  if (auto full = internal::find_key(*c, "full")) {
    auto fl = parse_psi_line(*full, "full", path);
    if (!fl) return tl::unexpected(fl.error());
    s.full = *fl;
  }
  return std::optional<psi_stats>(s);
}

}  // namespace colony::node
