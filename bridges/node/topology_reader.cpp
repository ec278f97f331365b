#include "bridges/node/topology_reader.hpp"

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <utility>

#include "bridges/node/internal/file_read.hpp"

namespace colony::node {

namespace {

// The kernel's NR_CPUS is at most 8192; a bound far above it keeps a corrupt range such as
// "0-2000000000" from allocating gigabytes.
constexpr std::int32_t max_cpu_id = (1 << 20) - 1;

using internal::trim;

std::optional<std::int32_t> parse_id(std::string_view s) {
  std::int32_t v = 0;
  const auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || ec != std::errc{} || p != s.data() + s.size() || v < 0) return std::nullopt;
  return v;
}

tl::unexpected<error> bad_token(std::string_view token, const std::string& path,
                                std::string_view why = {}) {
  std::string m = "bad cpulist token '" + std::string(token.substr(0, 40)) + "'";
  if (!why.empty()) m += ": " + std::string(why);
  return fail(errc::invalid_input, std::move(m), path);
}

// A non-negative id from a one-number sysfs file (topology/core_id, physical_package_id).
result<std::int32_t> read_id_file(const std::string& path, std::string_view field) {
  auto content = internal::read_file(path);
  if (!content) return tl::unexpected(content.error());
  auto v = internal::parse_count(*content, field, path);
  if (!v) return tl::unexpected(v.error());
  if (*v > std::numeric_limits<std::int32_t>::max()) {
    return fail(errc::invalid_input, "field " + std::string(field) + ": out of range", path);
  }
  return static_cast<std::int32_t>(*v);
}

// "MemTotal:  24684084 kB" (/proc/meminfo) or "Node 0 MemTotal:  24684084 kB" (node meminfo)
// -> bytes.
result<std::int64_t> mem_total_bytes(std::string_view content, const std::string& key,
                                     const std::string& path) {
  auto v = internal::find_key(content, key);
  if (!v) return fail(errc::invalid_input, "field " + key + " missing", path);
  std::string_view s = trim(*v);
  const bool kib = s.size() >= 2 && s.substr(s.size() - 2) == "kB";
  if (kib) s.remove_suffix(2);
  auto n = internal::parse_count(s, key, path);
  if (!n) return n;
  constexpr std::int64_t max_kib = std::int64_t{1} << 52;  // no int64 overflow when scaled
  if (kib && *n > max_kib)
    return fail(errc::invalid_input, "field " + key + ": out of range", path);
  return kib ? *n * 1024 : *n;
}

result<std::int64_t> read_mem_total(const std::string& path, const std::string& key) {
  auto content = internal::read_file(path);
  if (!content) return tl::unexpected(content.error());
  return mem_total_bytes(*content, key, path);
}

// A flag file that may be absent (the driver is not loaded): nullopt then; the number otherwise.
result<std::optional<std::int64_t>> read_optional_count(const std::string& path,
                                                        std::string_view field) {
  auto content = internal::read_file(path);
  if (!content) {
    if (content.error().code == errc::not_found) return std::optional<std::int64_t>{};
    return tl::unexpected(content.error());
  }
  auto v = internal::parse_count(*content, field, path);
  if (!v) return tl::unexpected(v.error());
  return std::optional<std::int64_t>{*v};
}

// Koordinator's TurboEnabled: intel_pstate's no_turbo is the switch where that driver runs
// (0 = turbo allowed); acpi-cpufreq and amd-pstate expose cpufreq/boost instead (1 = boost on).
// Neither file: the driver has no turbo control, reported as off.
result<bool> read_turbo(const std::string& cpu_root) {
  const std::string no_turbo = internal::join(cpu_root, "intel_pstate/no_turbo");
  auto nt = read_optional_count(no_turbo, "no_turbo");
  if (!nt) return tl::unexpected(nt.error());
  if (nt->has_value()) return **nt == 0;
  const std::string boost = internal::join(cpu_root, "cpufreq/boost");
  auto b = read_optional_count(boost, "boost");
  if (!b) return tl::unexpected(b.error());
  return b->has_value() && **b == 1;
}

// The value of the first "key<tabs> : value" line of /proc/cpuinfo; "" when no line has it.
std::string cpuinfo_value(std::string_view content, std::string_view key) {
  while (!content.empty()) {
    const auto nl = content.find('\n');
    const std::string_view line = content.substr(0, nl);
    content = nl == std::string_view::npos ? std::string_view{} : content.substr(nl + 1);
    if (line.substr(0, key.size()) != key) continue;
    std::string_view rest = line.substr(key.size());
    while (!rest.empty() && (rest.front() == ' ' || rest.front() == '\t')) rest.remove_prefix(1);
    // Only the whole key counts: a longer key sharing its prefix has no ':' right after it.
    if (rest.empty() || rest.front() != ':') continue;
    return std::string(trim(rest.substr(1)));
  }
  return {};
}

// The NUMA node ids of <sys>/devices/system/node (its "nodeM" subdirectories), ascending by
// number: list_dirs sorts by name, which puts node10 before node2.
result<std::vector<std::int32_t>> list_numa_nodes(const std::string& node_root) {
  auto names = internal::list_dirs(node_root);
  if (!names) return tl::unexpected(names.error());
  std::vector<std::int32_t> ids;
  for (const auto& n : *names) {
    if (n.size() <= 4 || n.compare(0, 4, "node") != 0) continue;
    if (auto id = parse_id(std::string_view(n).substr(4))) ids.push_back(*id);
  }
  std::sort(ids.begin(), ids.end());
  return ids;
}

// A CPU in the online list without topology files: the list and sysfs disagree; say which CPU.
error missing_topology(error e, std::int32_t cpu) {
  if (e.code == errc::not_found) e.message = "online CPU " + std::to_string(cpu) + ": " + e.message;
  return e;
}

}  // namespace

result<std::vector<std::int32_t>> parse_cpu_list(std::string_view text, const std::string& path) {
  text = trim(text);
  std::vector<std::int32_t> cpus;
  if (text.empty()) return cpus;
  for (;;) {
    const auto comma = text.find(',');
    const std::string_view token = text.substr(0, comma);
    const auto dash = token.find('-');
    const auto first = parse_id(token.substr(0, dash));
    const auto last = dash == std::string_view::npos ? first : parse_id(token.substr(dash + 1));
    if (!first || !last) return bad_token(token, path);
    if (*first > *last) return bad_token(token, path, "range start after its end");
    if (*last > max_cpu_id) return bad_token(token, path, "beyond the largest CPU id");
    for (std::int32_t c = *first; c <= *last; ++c) cpus.push_back(c);
    if (comma == std::string_view::npos) break;
    text.remove_prefix(comma + 1);
  }
  std::sort(cpus.begin(), cpus.end());
  cpus.erase(std::unique(cpus.begin(), cpus.end()), cpus.end());
  return cpus;
}

result<machine_topology> read_machine_topology(const std::string& sys_root,
                                               const std::string& proc_root) {
  const std::string cpu_root = internal::join(sys_root, "devices/system/cpu");
  const std::string online_path = internal::join(cpu_root, "online");
  auto online_text = internal::read_file(online_path);
  if (!online_text) return tl::unexpected(online_text.error());
  auto online = parse_cpu_list(*online_text, online_path);
  if (!online) return tl::unexpected(online.error());
  if (online->empty()) return fail(errc::invalid_input, "no online CPUs", online_path);

  machine_topology t;
  t.cpus.reserve(online->size());
  // sysfs core_id is the core's number inside its package, so it repeats on every socket (and
  // may have gaps); Koordinator's CORE column comes from lscpu, which numbers the distinct
  // (socket, core_id) pairs 0, 1, 2, ... in order of first appearance by ascending CPU id. The
  // same numbering here keeps CPUs of different sockets from sharing a core id, which consumers
  // grouping CPUs by core (the BE cpuset policy) rely on.
  std::map<std::pair<std::int32_t, std::int32_t>, std::int32_t> core_index;
  std::map<std::pair<std::int32_t, std::int32_t>, std::int32_t> threads_per_core;
  for (const std::int32_t id : *online) {
    const std::string topo = internal::join(cpu_root, "cpu" + std::to_string(id) + "/topology");
    auto core_id = read_id_file(internal::join(topo, "core_id"), "core_id");
    if (!core_id) return tl::unexpected(missing_topology(core_id.error(), id));
    auto socket = read_id_file(internal::join(topo, "physical_package_id"), "physical_package_id");
    if (!socket) return tl::unexpected(missing_topology(socket.error(), id));
    const auto key = std::make_pair(*socket, *core_id);
    const auto next = static_cast<std::int32_t>(core_index.size());
    const std::int32_t core = core_index.try_emplace(key, next).first->second;
    ++threads_per_core[key];
    t.cpus.push_back(cpu_topology_entry{id, core, *socket, 0});
  }
  t.hyper_thread_enabled = std::any_of(threads_per_core.begin(), threads_per_core.end(),
                                       [](const auto& kv) { return kv.second > 1; });

  const std::string node_root = internal::join(sys_root, "devices/system/node");
  if (!internal::is_dir(node_root)) {
    // A kernel built without NUMA has no node directory: one node 0 holding every CPU and all
    // of the memory, as lscpu and Koordinator's GetNodeNUMAInfo then report.
    const std::string meminfo = internal::join(proc_root, "meminfo");
    auto total = read_mem_total(meminfo, "MemTotal:");
    if (!total) return tl::unexpected(total.error());
    t.numa_nodes.push_back(numa_node_memory{0, *total});
  } else {
    auto node_ids = list_numa_nodes(node_root);
    if (!node_ids) return tl::unexpected(node_ids.error());
    std::vector<std::int32_t> node_of(t.cpus.size(), -1);
    for (const std::int32_t node : *node_ids) {
      const std::string dir = internal::join(node_root, "node" + std::to_string(node));
      // The node's cpulist is authoritative for which CPUs it holds (the cpuN/nodeM links are
      // the same information, one CPU at a time).
      const std::string cpulist_path = internal::join(dir, "cpulist");
      auto cpulist_text = internal::read_file(cpulist_path);
      if (!cpulist_text) return tl::unexpected(cpulist_text.error());
      auto cpulist = parse_cpu_list(*cpulist_text, cpulist_path);
      if (!cpulist) return tl::unexpected(cpulist.error());
      for (const std::int32_t c : *cpulist) {
        const auto it = std::lower_bound(online->begin(), online->end(), c);
        // Only online CPUs are reported; a node may still list one going offline.
        if (it == online->end() || *it != c) continue;
        auto& owner = node_of[static_cast<std::size_t>(it - online->begin())];
        if (owner >= 0) {
          return fail(
              errc::invalid_input,
              "cpu " + std::to_string(c) + ": also in node" + std::to_string(owner) + "'s cpulist",
              cpulist_path);
        }
        owner = node;
      }
      // Memory-only nodes (no CPUs, e.g. CXL or HBM) are nodes too: their memory is reported.
      const std::string meminfo = internal::join(dir, "meminfo");
      auto total = read_mem_total(meminfo, "Node " + std::to_string(node) + " MemTotal:");
      if (!total) return tl::unexpected(total.error());
      t.numa_nodes.push_back(numa_node_memory{node, *total});
    }
    for (std::size_t i = 0; i < t.cpus.size(); ++i) {
      if (node_of[i] < 0) {
        return fail(errc::invalid_input,
                    "field cpu" + std::to_string(t.cpus[i].id) + ": online but in no " + node_root +
                        "/nodeM/cpulist",
                    online_path);
      }
      t.cpus[i].numa_node = node_of[i];
    }
  }

  const std::string cpuinfo_path = internal::join(proc_root, "cpuinfo");
  // A proc root without cpuinfo (a container's partial /proc, a test's fake tree) leaves the
  // CPU basic info unknown, as a cpuinfo without "model name" does; the topology stands.
  auto cpuinfo = internal::read_file(cpuinfo_path);
  if (!cpuinfo && cpuinfo.error().code != errc::not_found) return tl::unexpected(cpuinfo.error());
  if (cpuinfo) {
    t.cpu_model = cpuinfo_value(*cpuinfo, "model name");
    t.vendor_id = cpuinfo_value(*cpuinfo, "vendor_id");
  }

  auto turbo = read_turbo(cpu_root);
  if (!turbo) return tl::unexpected(turbo.error());
  t.turbo_enabled = *turbo;
  return t;
}

}  // namespace colony::node
