#include "bridges/node/cgroup_executor.hpp"

#include <charconv>
#include <filesystem>
#include <optional>
#include <span>

#include "actors/koordlet/cgroup_writer.hpp"
#include "actors/koordlet/cpu_suppress.hpp"
#include "actors/koordlet/koordlet_types.hpp"
#include "bridges/node/host_app_cgroup.hpp"
#include "bridges/node/internal/file_read.hpp"

namespace colony::node {

namespace {

namespace kl = koordlet;

std::string_view trim(std::string_view s) {
  while (!s.empty() &&
         (s.back() == '\n' || s.back() == ' ' || s.back() == '\t' || s.back() == '\r'))
    s.remove_suffix(1);
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  return s;
}

bool ends_with(std::string_view s, std::string_view p) {
  return s.size() >= p.size() && s.substr(s.size() - p.size()) == p;
}

std::string basename(std::string_view path) {
  const auto slash = path.rfind('/');
  return std::string(slash == std::string_view::npos ? path : path.substr(slash + 1));
}

std::string dirname(std::string_view path) {
  const auto slash = path.rfind('/');
  return slash == std::string_view::npos ? std::string() : std::string(path.substr(0, slash));
}

std::optional<std::int64_t> to_int(std::string_view s) {
  std::int64_t v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc{} || end != s.data() + s.size()) return std::nullopt;
  return v;
}

constexpr std::int64_t page_size = 4096;
constexpr std::int64_t page_counter_max = 9223372036854771712;

bool is_memory_bytes_file(std::string_view file) {
  const auto name = basename(file);
  return name == "memory.limit_in_bytes" || name == "memory.min" || name == "memory.low" ||
         name == "memory.high" || name == "memory.max";
}

// Files of kernel features a kernel may lack: written only where they exist.
bool optional_feature_file(std::string_view name) {
  return name == "cpu.bvt_warp_ns" || name == "memory.min" || name == "memory.low" ||
         name == "memory.high";
}

}  // namespace

bool same_cgroup_value(std::string_view file, std::string_view written,
                       std::string_view read_back) {
  const auto w = trim(written);
  const auto r = trim(read_back);
  if (w == r) return true;
  if (ends_with(file, "cpuset.cpus")) {
    auto a = kl::parse_cpuset(w);
    auto b = kl::parse_cpuset(r);
    return a && b && *a == *b;
  }
  if (is_memory_bytes_file(file)) {
    const auto wv = to_int(w);
    const auto rv = to_int(r);
    if (!wv || !rv) return false;
    // v1 reads -1 back as PAGE_COUNTER_MAX pages (9223372036854771712 with 4-KiB pages).
    if (*wv == -1) return *rv >= page_counter_max;
    return *wv >= 0 && *rv == *wv / page_size * page_size;
  }
  return false;
}

result<cgroup_executor> cgroup_executor::open(executor_config c) {
  auto m = detect_mounts(c.cgroup_root);
  if (!m) return tl::unexpected(m.error());
  return cgroup_executor(std::move(c), std::move(*m));
}

std::string cgroup_executor::base(const std::string& controller, bool at_root) const {
  return at_root ? controller : internal::join(controller, config_.kube_parent_dir);
}

bool cgroup_executor::write_one(const std::string& controller, const std::string& rel,
                                const std::string& value, apply_result& out, bool at_root) const {
  const std::string root = base(controller, at_root);
  const kl::cgroup_file_write w{rel, value};
  if (auto n = kl::write_cgroup_files(root, std::span<const kl::cgroup_file_write>(&w, 1)); !n) {
    out.failed = n.error();
    return false;
  }
  const std::string file = internal::join(root, rel);
  auto back = internal::read_file(file);
  if (!back) {
    out.failed = back.error();
    return false;
  }
  const std::string read_back(trim(*back));
  if (!same_cgroup_value(rel, value, read_back)) {
    out.failed = error{errc::failed_precondition,
                       "wrote \"" + value + "\" but the file holds \"" + read_back + "\"", file};
    return false;
  }
  out.done.push_back({file, rel, value, read_back});
  return true;
}

apply_result cgroup_executor::apply_be_cfs_quota(std::int64_t quota_us) const {
  apply_result out;
  const std::string& ctrl = mounts_.cpu;
  auto layout = discover_kubepods(base(ctrl));
  if (!layout) {
    out.failed = layout.error();
    return out;
  }
  kl::cgroup_settings s;
  s.dir = qos_tier_dir(layout->driver, kube_qos_class::best_effort);
  s.cfs_quota_us = quota_us;
  s.cfs_period_us = kl::default_cfs_period_us;
  for (const auto& w : kl::translate_cgroup_settings(std::span(&s, 1), mounts_.version))
    if (!write_one(ctrl, w.path, w.value, out)) break;
  return out;
}

apply_result cgroup_executor::apply_be_cpuset(std::string_view cpus) const {
  apply_result out;
  const std::string& ctrl = mounts_.cpuset;
  if (ctrl.empty()) {
    out.failed = error{errc::not_found, "no cpuset controller directory (v1)",
                       internal::join(config_.cgroup_root, "cpuset")};
    return out;
  }
  auto wanted = kl::parse_cpuset(cpus);
  if (!wanted) {
    out.failed = wanted.error();
    return out;
  }
  auto layout = discover_kubepods(base(ctrl));
  if (!layout) {
    out.failed = layout.error();
    return out;
  }
  // Tier, then its pods, then their containers: parents before children.
  std::vector<std::string> dirs{qos_tier_dir(layout->driver, kube_qos_class::best_effort)};
  for (const auto& p : layout->pods) {
    if (p.qos != kube_qos_class::best_effort) continue;
    dirs.push_back(p.dir);
    for (const auto& c : p.containers) dirs.push_back(c.dir);
  }
  const std::string target = kl::format_cpuset(*wanted);
  // Pass 1, top down: old union new, so that no child ever holds a CPU its parent lacks.
  for (const auto& d : dirs) {
    const std::string rel = internal::join(d, "cpuset.cpus");
    auto old = internal::read_file(internal::join(base(ctrl), rel));
    if (!old) {
      out.failed = old.error();
      return out;
    }
    auto ids = kl::parse_cpuset(trim(*old));
    if (!ids) {
      out.failed = error{errc::invalid_input, ids.error().message, internal::join(base(ctrl), rel)};
      return out;
    }
    const std::string before = kl::format_cpuset(*ids);
    ids->insert(ids->end(), wanted->begin(), wanted->end());
    const std::string merged = kl::format_cpuset(*ids);
    if (merged == before) continue;  // already a superset
    if (!write_one(ctrl, rel, merged, out)) return out;
  }
  // Pass 2, bottom up: the new set.
  for (auto it = dirs.rbegin(); it != dirs.rend(); ++it)
    if (!write_one(ctrl, internal::join(*it, "cpuset.cpus"), target, out)) return out;
  return out;
}

apply_result cgroup_executor::apply_pod_settings(
    std::string_view pod_uid,
    const std::vector<std::pair<std::string, std::string>>& settings) const {
  apply_result out;
  const std::string& ctrl = mounts_.cpu;
  auto layout = discover_kubepods(base(ctrl));
  if (!layout) {
    out.failed = layout.error();
    return out;
  }
  const pod_cgroup* pod = nullptr;
  for (const auto& p : layout->pods)
    if (p.uid == pod_uid) pod = &p;
  if (pod == nullptr) {
    out.failed = error{errc::not_found, "no pod cgroup with uid " + std::string(pod_uid),
                       internal::join(base(ctrl), layout->kubepods_dir)};
    return out;
  }
  for (const auto& [file, value] : settings) {
    std::string dir = pod->dir;
    if (const auto c = dirname(file); !c.empty()) {
      const container_cgroup* found = nullptr;
      for (const auto& cc : pod->containers)
        if (cc.id == c) found = &cc;
      if (found == nullptr) {
        out.failed =
            error{errc::not_found, "pod " + std::string(pod_uid) + " has no container " + c,
                  internal::join(base(ctrl), pod->dir)};
        return out;
      }
      dir = found->dir;
    }
    if (!write_settings(dir, {{basename(file), value}}, out)) return out;
  }
  return out;
}

apply_result cgroup_executor::apply_qos_settings(
    kube_qos_class tier, const std::vector<std::pair<std::string, std::string>>& settings) const {
  apply_result out;
  auto layout = discover_kubepods(base(mounts_.cpu));
  if (!layout) {
    out.failed = layout.error();
    return out;
  }
  (void)write_settings(qos_tier_dir(layout->driver, tier), settings, out);
  return out;
}

apply_result cgroup_executor::apply_host_app_settings(
    const koordlet::host_app_info& app,
    const std::vector<std::pair<std::string, std::string>>& settings) const {
  apply_result out;
  cgroup_driver d = cgroup_driver::cgroupfs;
  if (host_app_under_kubepods(app)) {
    auto layout = discover_kubepods(base(mounts_.cpu));
    if (!layout) {
      out.failed = layout.error();
      return out;
    }
    d = layout->driver;
  }
  const std::string dir = host_app_cgroup_dir(app, d, config_.kube_parent_dir);
  if (!internal::is_dir(internal::join(mounts_.cpu, dir))) {
    out.failed = error{errc::not_found, "host application " + app.name + " has no cgroup",
                       internal::join(mounts_.cpu, dir)};
    return out;
  }
  (void)write_settings(dir, settings, out, true);
  return out;
}

bool cgroup_executor::write_settings(
    const std::string& dir, const std::vector<std::pair<std::string, std::string>>& settings,
    apply_result& out, bool at_root) const {
  for (const auto& [name, value] : settings) {
    // The component names files as cgroup v1 does; translate the ones the writer knows.
    kl::cgroup_settings s;
    s.dir = dir;
    const auto v = to_int(value);
    std::vector<kl::cgroup_file_write> writes;
    if (name == "cpu.cfs_burst_us" && v) {
      s.cfs_burst_us = *v;
    } else if (name == "cpu.cfs_quota_us" && v) {
      s.cfs_quota_us = *v;
    } else if (name == "cpu.shares" && v) {
      s.cpu_shares = *v;
    } else if (name == "memory.limit_in_bytes" && v) {
      s.memory_limit_bytes = *v;
    } else {
      writes.push_back({internal::join(dir, name), value});
    }
    if (writes.empty()) writes = kl::translate_cgroup_settings(std::span(&s, 1), mounts_.version);
    for (const auto& w : writes) {
      const bool memory = basename(w.path).rfind("memory.", 0) == 0;
      const std::string& ctrl =
          memory && mounts_.version == cgroup_version::v1 ? mounts_.memory : mounts_.cpu;
      if (optional_feature_file(basename(w.path))) {
        const std::string file = internal::join(base(ctrl, at_root), w.path);
        std::error_code ec;
        if (!std::filesystem::exists(file, ec)) {
          out.unsupported.push_back(
              error{errc::not_found,
                    "unsupported by this kernel: no " + basename(w.path) +
                        (mounts_.version == cgroup_version::v1 ? " (cgroup v1)" : " (cgroup v2)"),
                    file});
          continue;
        }
      }
      if (!write_one(ctrl, w.path, w.value, out, at_root)) return false;
    }
  }
  return true;
}

}  // namespace colony::node
