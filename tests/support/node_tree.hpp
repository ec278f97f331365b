// A fake node in a directory: /proc/stat, /proc/meminfo and a cgroup tree (v1 per-controller
// directories, optionally co-mounted "cpu,cpuacct", or v2 unified) with the files the
// bridges/node readers read. Used by the node_source tests and the koordlet benchmarks.
//
// Writes only under the given root; the caller owns and removes it. Not thread-safe.
#pragma once

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <string_view>

#include "actors/koordlet/cgroup_writer.hpp"

namespace colony::testing {

// The counters of one fake cgroup.
struct fake_cgroup {
  std::int64_t cpu_ns = 0;
  std::int64_t usage_bytes = 0;
  std::int64_t inactive_file = 0;
  std::int64_t inactive_anon = 0;
  std::int64_t active_anon = 0;
  std::int64_t unevictable = 0;
  std::int64_t nr_periods = 0;
  std::int64_t nr_throttled = 0;
  std::int64_t throttled_ns = 0;
  bool psi = false;  // write {cpu,memory,io}.pressure
  // Write cpu.cfs_quota_us and cpu.cfs_period_us (v2: cpu.max) with this quota (-1: none), as
  // the kernel has them in every cgroup. Default: unset (no quota files).
  std::optional<std::int64_t> cfs_quota_us;
  std::int64_t cfs_period_us = 100000;
};

class node_tree {
 public:
  using version = koordlet::cgroup_version;

  // v1 with comounted = true puts cpu and cpuacct files in one "cpu,cpuacct" directory.
  node_tree(std::filesystem::path root, version v, bool comounted = false)
      : root_(std::move(root)), v_(v), comounted_(comounted) {
    std::filesystem::create_directories(root_ / "proc");
    std::filesystem::create_directories(root_ / "cgroup");
    if (v_ == version::v2) {
      write(root_ / "cgroup" / "cgroup.controllers", "cpuset cpu io memory pids\n");
    } else {
      for (auto c : {cpu_dir(), cpuacct_dir(), std::string("memory")}) {
        std::filesystem::create_directories(root_ / "cgroup" / c);
      }
    }
  }

  [[nodiscard]] std::string cgroup_root() const { return (root_ / "cgroup").string(); }
  [[nodiscard]] std::string proc_root() const { return (root_ / "proc").string(); }

  // /proc/stat with `cpus` per-CPU lines; the aggregate line puts `used` ticks in user and the
  // rest of each field at 0 except idle.
  void write_proc(int cpus, std::int64_t used_ticks, std::int64_t idle_ticks,
                  std::int64_t mem_total_kib, std::int64_t mem_available_kib) const {
    std::string stat = "cpu  " + std::to_string(used_ticks) + " 0 0 " + std::to_string(idle_ticks) +
                       " 0 0 0 0 0 0\n";
    for (int i = 0; i < cpus; ++i) stat += "cpu" + std::to_string(i) + " 0 0 0 0 0 0 0 0 0 0\n";
    stat += "intr 1 2 3\nctxt 42\nbtime 1700000000\nprocesses 7\n";
    write(root_ / "proc" / "stat", stat);
    write(root_ / "proc" / "meminfo", "MemTotal:       " + std::to_string(mem_total_kib) +
                                          " kB\nMemFree:         1000 kB\nMemAvailable:   " +
                                          std::to_string(mem_available_kib) +
                                          " kB\nBuffers:           0 kB\n");
  }

  // Every file the readers use, for the cgroup at `rel` (relative to each controller dir).
  void write_cgroup(const std::string& rel, const fake_cgroup& c) const {
    if (v_ == version::v2) {
      const auto d = root_ / "cgroup" / rel;
      std::filesystem::create_directories(d);
      write(d / "cpu.stat", "usage_usec " + std::to_string(c.cpu_ns / 1000) +
                                "\nuser_usec 0\nsystem_usec 0\nnr_periods " +
                                std::to_string(c.nr_periods) + "\nnr_throttled " +
                                std::to_string(c.nr_throttled) + "\nthrottled_usec " +
                                std::to_string(c.throttled_ns / 1000) + "\n");
      write(d / "memory.current", std::to_string(c.usage_bytes) + "\n");
      write(d / "memory.stat", "anon 0\nfile 0\ninactive_anon " + std::to_string(c.inactive_anon) +
                                   "\nactive_anon " + std::to_string(c.active_anon) +
                                   "\ninactive_file " + std::to_string(c.inactive_file) +
                                   "\nactive_file 0\nunevictable " + std::to_string(c.unevictable) +
                                   "\n");
      if (c.psi) write_psi(d);
      if (c.cfs_quota_us)
        write(d / "cpu.max",
              (*c.cfs_quota_us < 0 ? std::string("max") : std::to_string(*c.cfs_quota_us)) + " " +
                  std::to_string(c.cfs_period_us) + "\n");
      return;
    }
    const auto cpu = root_ / "cgroup" / cpu_dir() / rel;
    const auto acct = root_ / "cgroup" / cpuacct_dir() / rel;
    const auto mem = root_ / "cgroup" / "memory" / rel;
    for (const auto& d : {cpu, acct, mem}) std::filesystem::create_directories(d);
    write(acct / "cpuacct.usage", std::to_string(c.cpu_ns) + "\n");
    write(cpu / "cpu.stat", "nr_periods " + std::to_string(c.nr_periods) + "\nnr_throttled " +
                                std::to_string(c.nr_throttled) + "\nthrottled_time " +
                                std::to_string(c.throttled_ns) + "\nnr_bursts 0\nburst_time 0\n");
    write(mem / "memory.usage_in_bytes", std::to_string(c.usage_bytes) + "\n");
    // Per-cgroup fields first, then the hierarchical totals the reader must pick.
    write(mem / "memory.stat",
          "cache 1\nrss 1\ninactive_anon 1\nactive_anon 1\ninactive_file 1\nunevictable 1\n"
          "total_cache 0\ntotal_rss 0\ntotal_inactive_anon " +
              std::to_string(c.inactive_anon) + "\ntotal_active_anon " +
              std::to_string(c.active_anon) + "\ntotal_inactive_file " +
              std::to_string(c.inactive_file) + "\ntotal_active_file 0\ntotal_unevictable " +
              std::to_string(c.unevictable) + "\n");
    if (c.psi) write_psi(acct);
    if (c.cfs_quota_us) {
      write(cpu / "cpu.cfs_quota_us", std::to_string(*c.cfs_quota_us) + "\n");
      write(cpu / "cpu.cfs_period_us", std::to_string(c.cfs_period_us) + "\n");
    }
  }

  // The directory holding `file` of the cgroup at rel (for tests that corrupt one file).
  [[nodiscard]] std::filesystem::path file_path(const std::string& rel,
                                                std::string_view file) const {
    const auto base = root_ / "cgroup";
    if (v_ == version::v2) return base / rel / file;
    if (file == "cpuacct.usage" || file.find("pressure") != std::string_view::npos) {
      return base / cpuacct_dir() / rel / file;
    }
    if (file.substr(0, 4) == "cpu.") return base / cpu_dir() / rel / file;
    return base / "memory" / rel / file;
  }

  static void write(const std::filesystem::path& p, const std::string& content) {
    std::filesystem::create_directories(p.parent_path());
    std::ofstream(p, std::ios::trunc) << content;
  }

 private:
  [[nodiscard]] std::string cpu_dir() const { return comounted_ ? "cpu,cpuacct" : "cpu"; }
  [[nodiscard]] std::string cpuacct_dir() const { return comounted_ ? "cpu,cpuacct" : "cpuacct"; }

  static void write_psi(const std::filesystem::path& d) {
    write(d / "cpu.pressure",
          "some avg10=1.50 avg60=0.75 avg300=0.25 total=12345\n"
          "full avg10=0.00 avg60=0.00 avg300=0.00 total=0\n");
    write(d / "memory.pressure",
          "some avg10=0.00 avg60=0.00 avg300=0.00 total=7\n"
          "full avg10=0.00 avg60=0.00 avg300=0.00 total=3\n");
    write(d / "io.pressure", "some avg10=2.00 avg60=1.00 avg300=0.50 total=99\n");
  }

  std::filesystem::path root_;
  version v_;
  bool comounted_;
};

// A node of `pods` pods over the three QoS tiers (i % 3: Guaranteed, Burstable, BestEffort), 2
// containers each, in the systemd or cgroupfs layout, on 32 CPUs; every counter grows with
// `tick` (one call per collect interval). Pod i's uid ends in 100000000000 + i. Guaranteed and
// Burstable pods have a 2-core cfs quota, their containers 1 core each (throttled in 1 of 10
// periods: every pod's, or only every `throttled_one_in`-th pod's); BestEffort ones none, as
// kubelet sets them. The benchmarks' node (110 pods: kubelet's default maxPods).
inline void write_pods_node(const node_tree& t, bool systemd, std::int64_t tick, int pods = 110,
                            int throttled_one_in = 1) {
  t.write_proc(32, 1000 + tick * 800, 100000 + tick * 2400, 128 * 1024 * 1024, 64 * 1024 * 1024);
  for (int i = 0; i < pods; ++i) {
    const auto q = i % 3;
    const std::string uid = "00000000-0000-0000-0000-" + std::to_string(100000000000 + i);
    std::string u = uid;
    for (auto& ch : u) ch = ch == '-' ? '_' : ch;
    std::string dir;
    if (systemd) {
      dir = q == 0 ? "kubepods.slice/kubepods-pod" + u + ".slice"
            : q == 1
                ? "kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" + u + ".slice"
                : "kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod" + u + ".slice";
    } else {
      dir = q == 0   ? "kubepods/pod" + uid
            : q == 1 ? "kubepods/burstable/pod" + uid
                     : "kubepods/besteffort/pod" + uid;
    }
    fake_cgroup c;
    c.cpu_ns = (i + 1) * 1'000'000 * (tick + 1);
    c.active_anon = (i + 1) * 1'000'000;
    c.usage_bytes = c.active_anon * 2;
    c.inactive_file = c.active_anon / 2;
    c.psi = true;
    c.nr_periods = 10 * tick;
    c.nr_throttled = i % throttled_one_in == 0 ? tick : 0;
    c.cfs_quota_us = q == 2 ? -1 : 200000;
    t.write_cgroup(dir, c);
    c.cfs_quota_us = q == 2 ? -1 : 100000;
    for (int k = 0; k < 2; ++k) {
      const std::string id = "c" + std::to_string(i) + "x" + std::to_string(k);
      t.write_cgroup(dir + (systemd ? "/cri-containerd-" + id + ".scope" : "/" + id), c);
    }
  }
}

}  // namespace colony::testing
