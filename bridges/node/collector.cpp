#include "bridges/node/collector.hpp"

#include <algorithm>
#include <cmath>
#include <utility>

#include "bridges/node/cold_page.hpp"
#include "bridges/node/host_app_cgroup.hpp"
#include "bridges/node/internal/file_read.hpp"

namespace colony::node {

result<node_source> node_source::open(source_config config) {
  if (config.ticks_per_second <= 0) {
    return fail(errc::invalid_input, "ticks_per_second must be positive", "source_config");
  }
  auto m = detect_mounts(config.cgroup_root);
  if (!m) return tl::unexpected(m.error());
  return node_source(std::move(config), std::move(*m));
}

namespace {

// The cgroup's usage, its cfs bandwidth (into `cfs`, unless !read_cfs) and, with `pressure` or
// (with `throttling_of_quota`) a quota, its throttling counters.
result<cgroup_sample> read_sample(const cgroup_mounts& m, const std::string& dir, bool pressure,
                                  std::optional<cfs_bandwidth>& cfs,
                                  std::optional<std::int64_t> known_period, bool read_cfs = true,
                                  bool throttling_of_quota = true) {
  cgroup_sample s;
  // The quota first: it says whether the throttling counters are wanted.
  if (read_cfs) {
    auto bw = read_cfs_bandwidth(m, dir, known_period);
    if (!bw) return tl::unexpected(bw.error());
    cfs = *bw;
  }
  auto cpu =
      read_cpu_usage_stat(m, dir, pressure || (throttling_of_quota && cfs && cfs->quota_us >= 0));
  if (!cpu) return tl::unexpected(cpu.error());
  s.cpu_usage_ns = cpu->usage_ns;
  s.throttling = cpu->throttling;
  auto mem = read_memory(m, dir);
  if (!mem) return tl::unexpected(mem.error());
  s.memory = *mem;
  if (!pressure) return s;
  for (auto [r, dst] :
       {std::pair{psi_resource::cpu, &s.cpu_psi}, std::pair{psi_resource::memory, &s.memory_psi},
        std::pair{psi_resource::io, &s.io_psi}}) {
    auto p = read_psi(m, dir, r);
    if (!p) return tl::unexpected(p.error());
    *dst = *p;
  }
  return s;
}

}  // namespace

namespace {

// The period a previous snapshot read for the cgroup (uid or container id), if it had a quota.
template <class T>
std::optional<std::int64_t> period_in(const std::vector<T>& v, const std::string& key,
                                      std::string T::*field) {
  const auto it = std::lower_bound(v.begin(), v.end(), key,
                                   [&](const T& x, const std::string& k) { return x.*field < k; });
  if (it == v.end() || (*it).*field != key || !it->cfs || it->cfs->period_us <= 0)
    return std::nullopt;
  return it->cfs->period_us;
}

}  // namespace

result<node_snapshot> node_source::snapshot(event_time now,
                                            std::span<const koordlet::host_app_info> apps,
                                            const node_snapshot* previous,
                                            bool container_bandwidth) const {
  node_snapshot snap;
  snap.time = now;
  auto cpu = read_proc_stat(config_.proc_root);
  if (!cpu) return tl::unexpected(cpu.error());
  snap.cpu = *cpu;
  auto mem = read_meminfo(config_.proc_root);
  if (!mem) return tl::unexpected(mem.error());
  snap.memory = *mem;
  if (config_.read_cold_pages) {
    if (auto hot = node_memory_with_hot_page(mounts_, config_.proc_root)) {
      snap.memory_with_hot_page_bytes = *hot;
    } else if (hot.error().code == errc::not_found) {
      snap.cold_pages_unsupported =
          error{errc::not_found, "unsupported by this kernel: no memory.idle_page_stats (kidled)",
                hot.error().where};
    } else {
      snap.skipped.push_back(hot.error());
    }
  }

  auto layout = discover_kubepods(internal::join(mounts_.cpuacct, config_.kube_parent_dir));
  for (const auto& a : apps) {
    if (host_app_under_kubepods(a) && !layout) {
      snap.skipped.push_back(error{errc::not_found,
                                   "host application " + a.name + ": no kubepods directory",
                                   internal::join(mounts_.cpuacct, config_.kube_parent_dir)});
      continue;
    }
    const std::string dir = host_app_cgroup_dir(
        a, layout ? layout->driver : cgroup_driver::cgroupfs, config_.kube_parent_dir);
    std::optional<cfs_bandwidth> no_cfs;  // a host application's quota is not cpuburst's
    auto hs = read_sample(mounts_, dir, false, no_cfs, std::nullopt, false);
    if (!hs) {
      snap.skipped.push_back(hs.error());
      continue;
    }
    snap.host_apps.push_back({a.name, dir, std::move(*hs)});
  }
  std::sort(snap.host_apps.begin(), snap.host_apps.end(),
            [](const host_app_snapshot& x, const host_app_snapshot& y) { return x.name < y.name; });
  if (!layout) {
    snap.skipped.push_back(layout.error());
    return snap;
  }
  snap.driver = layout->driver;
  snap.pods.reserve(layout->pods.size());
  for (auto& p : layout->pods) {
    if (!config_.kube_parent_dir.empty()) {
      p.dir = internal::join(config_.kube_parent_dir, p.dir);
      for (auto& c : p.containers) c.dir = internal::join(config_.kube_parent_dir, c.dir);
    }
    const pod_snapshot* before = nullptr;
    if (previous != nullptr) {
      const auto it =
          std::lower_bound(previous->pods.begin(), previous->pods.end(), p.uid,
                           [](const pod_snapshot& x, const std::string& k) { return x.uid < k; });
      if (it != previous->pods.end() && it->uid == p.uid) before = &*it;
    }
    std::optional<cfs_bandwidth> cfs;
    auto ps = read_sample(mounts_, p.dir, config_.read_pressure, cfs,
                          before != nullptr && before->cfs && before->cfs->period_us > 0
                              ? std::optional<std::int64_t>(before->cfs->period_us)
                              : std::nullopt,
                          true, container_bandwidth);
    if (!ps) {
      snap.skipped.push_back(ps.error());
      continue;
    }
    if (cfs && cfs->quota_us >= 0 && (cfs->period_us <= 0 || cfs->quota_us > INT64_MAX / 1000)) {
      snap.skipped.push_back(error{
          errc::invalid_input,
          "cfs quota " + std::to_string(cfs->quota_us) + " over period " +
              std::to_string(cfs->period_us) + " is out of range",
          internal::join(internal::join(mounts_.cpu, p.dir),
                         mounts_.version == cgroup_version::v2 ? "cpu.max" : "cpu.cfs_quota_us")});
      continue;
    }
    pod_snapshot pod{std::move(p.uid),
                     p.qos,
                     std::move(*ps),
                     cfs ? cpu_limit_milli(*cfs) : std::nullopt,
                     cfs,
                     {},
                     std::nullopt};
    pod.containers.reserve(p.containers.size());
    for (auto& c : p.containers) {
      std::optional<cfs_bandwidth> ccfs;
      // A BestEffort pod's containers are no cfs-quota burst's (cpuburst skips Raw QoS BE, and a
      // pod in the besteffort tier has no requests, so it is no LS pod): their quota and
      // throttling are not read; nor anyone's while cfs-quota burst does not need them.
      auto cs = read_sample(mounts_, c.dir, config_.read_pressure, ccfs,
                            before != nullptr
                                ? period_in(before->containers, c.id, &container_snapshot::id)
                                : std::nullopt,
                            container_bandwidth && pod.qos != kube_qos_class::best_effort);
      if (!cs) {
        snap.skipped.push_back(cs.error());
        continue;
      }
      pod.containers.push_back({std::move(c.id), std::move(c.runtime), std::move(*cs), ccfs});
    }
    if (snap.memory_with_hot_page_bytes) {
      if (auto hot = cgroup_memory_with_hot_page(mounts_, p.dir))
        pod.memory_with_hot_page_bytes = *hot;
      else if (hot.error().code != errc::not_found)
        snap.skipped.push_back(hot.error());
    }
    snap.pods.push_back(std::move(pod));
  }
  return snap;
}

namespace {

std::int64_t to_milli(double cores) { return static_cast<std::int64_t>(cores * 1000); }

// Cores used by a cgroup between two samples; nullopt when the counter went backwards.
std::optional<double> cores_between(const cgroup_sample& a, const cgroup_sample& b, double secs) {
  if (b.cpu_usage_ns < a.cpu_usage_ns) return std::nullopt;
  return static_cast<double>(b.cpu_usage_ns - a.cpu_usage_ns) / 1e9 / secs;
}

// cpu.stat's counters over the interval; nullopt when either end lacks them or one went
// backwards (a recreated cgroup).
std::optional<cpu_throttling> throttling_between(const cgroup_sample& a, const cgroup_sample& b) {
  if (!a.throttling || !b.throttling) return std::nullopt;
  const auto& x = *a.throttling;
  const auto& y = *b.throttling;
  if (y.nr_periods < x.nr_periods || y.nr_throttled < x.nr_throttled ||
      y.throttled_ns < x.throttled_ns)
    return std::nullopt;
  return cpu_throttling{y.nr_periods - x.nr_periods, y.nr_throttled - x.nr_throttled,
                        y.throttled_ns - x.throttled_ns};
}

template <class T, class Key>
const T* find_sorted(const std::vector<T>& v, const std::string& key, Key key_of) {
  auto it = std::lower_bound(v.begin(), v.end(), key,
                             [&](const T& x, const std::string& k) { return key_of(x) < k; });
  if (it == v.end() || key_of(*it) != key) return nullptr;
  return &*it;
}

}  // namespace

result<node_usage> usage_between(const node_snapshot& before, const node_snapshot& after,
                                 std::int64_t ticks_per_second) {
  if (after.time <= before.time) {
    return fail(errc::invalid_input,
                "snapshots out of order: " + std::to_string(before.time.value) + " ms then " +
                    std::to_string(after.time.value) + " ms",
                "usage_between");
  }
  if (after.cpu.used < before.cpu.used) {
    return fail(errc::invalid_input, "field cpu: tick counter went backwards", "/proc/stat");
  }
  if (ticks_per_second <= 0) {
    return fail(errc::invalid_input, "ticks_per_second must be positive", "usage_between");
  }
  const double secs = static_cast<double>(after.time.value - before.time.value) / 1000;
  node_usage u;
  u.time = after.time;
  u.cpu_cores = static_cast<double>(after.cpu.used - before.cpu.used) /
                static_cast<double>(ticks_per_second) / secs;
  u.cpu = milli_cpu{to_milli(u.cpu_cores)};
  u.memory = bytes{after.memory.used_bytes()};
  u.cpu_capacity = milli_cpu{std::int64_t{after.cpu.cpus} * 1000};
  u.memory_capacity = bytes{after.memory.total_bytes};
  u.memory_with_hot_page_bytes = after.memory_with_hot_page_bytes;
  u.pods.reserve(after.pods.size());
  for (const auto& p : after.pods) {
    const auto* prev = find_sorted(
        before.pods, p.uid, [](const pod_snapshot& x) -> const auto& { return x.uid; });
    if (prev == nullptr) continue;
    auto cores = cores_between(prev->sample, p.sample, secs);
    if (!cores) continue;
    pod_usage pu;
    pu.uid = p.uid;
    pu.qos = p.qos;
    pu.cpu_cores = *cores;
    pu.cpu = milli_cpu{to_milli(*cores)};
    pu.memory = bytes{p.sample.memory.anon_bytes};
    pu.working_set = bytes{p.sample.memory.working_set_bytes()};
    pu.cpu_limit_milli = p.cpu_limit_milli;
    pu.memory_with_hot_page_bytes = p.memory_with_hot_page_bytes;
    if (const auto d = throttling_between(prev->sample, p.sample)) {
      pu.nr_throttled = d->nr_throttled;
      pu.throttled_ns = d->throttled_ns;
      pu.nr_periods = d->nr_periods;
    }
    if (p.cfs) {
      pu.cfs_quota_us = p.cfs->quota_us;
      pu.cfs_period_us = p.cfs->period_us;
    }
    for (const auto& c : p.containers) {
      const auto* pc = find_sorted(
          prev->containers, c.id, [](const container_snapshot& x) -> const auto& { return x.id; });
      if (pc == nullptr) continue;
      auto cc = cores_between(pc->sample, c.sample, secs);
      if (!cc) continue;
      container_usage cu{c.id, *cc, milli_cpu{to_milli(*cc)}, bytes{c.sample.memory.anon_bytes},
                         bytes{c.sample.memory.working_set_bytes()}};
      if (c.cfs) {
        cu.cfs_quota_us = c.cfs->quota_us;
        cu.cfs_period_us = c.cfs->period_us;
      }
      if (const auto d = throttling_between(pc->sample, c.sample)) {
        cu.nr_periods = d->nr_periods;
        cu.nr_throttled = d->nr_throttled;
      }
      pu.containers.push_back(std::move(cu));
    }
    u.pods.push_back(std::move(pu));
  }
  for (const auto& h : after.host_apps) {
    const auto* prev = find_sorted(
        before.host_apps, h.name, [](const host_app_snapshot& x) -> const auto& { return x.name; });
    if (prev == nullptr || prev->dir != h.dir) continue;  // first point, or declared elsewhere now
    auto cores = cores_between(prev->sample, h.sample, secs);
    if (!cores) continue;
    u.host_apps.push_back(
        {h.name, *cores, milli_cpu{to_milli(*cores)}, bytes{h.sample.memory.anon_bytes}});
  }
  return u;
}

void add_to_window(koordlet::sample_window& w, const node_usage& u) {
  std::vector<koordlet::usage_sample> pods;
  pods.reserve(u.pods.size());
  for (const auto& p : u.pods) {
    const koordlet::usage_sample s{u.time, p.cpu_cores, static_cast<double>(p.memory.value)};
    w.add_pod(p.uid, s);
    pods.push_back(s);
  }
  std::vector<koordlet::usage_sample> apps;
  apps.reserve(u.host_apps.size());
  for (const auto& h : u.host_apps) {
    const koordlet::usage_sample s{u.time, h.cpu_cores, static_cast<double>(h.memory.value)};
    w.add_host_app(h.name, s);
    apps.push_back(s);
  }
  w.add_node_and_system({u.time, u.cpu_cores, static_cast<double>(u.memory.value)}, pods, apps);
}

std::vector<koordlet::pod_info> pods_by_uid(const node_usage& u) {
  std::vector<koordlet::pod_info> out;
  out.reserve(u.pods.size());
  for (const auto& p : u.pods) {
    koordlet::pod_info pi;
    pi.name = p.uid;
    pi.uid = p.uid;
    pi.kube_qos_class = p.qos;
    out.push_back(std::move(pi));
  }
  return out;
}

}  // namespace colony::node
