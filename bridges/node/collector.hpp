// The node collector: snapshots of /proc and of every kubepods cgroup at one instant, and the
// usage between two snapshots (node CPU and memory, per pod and per container), shaped as the
// samples of actors/koordlet/node_metric's sample_window.
//
// Koordinator: pkg/koordlet/metricsadvisor/collectors/noderesource/node_resource_collector.go
// (node CPU from /proc/stat tick deltas, node memory MemTotal - MemAvailable),
// collectors/podresource/pod_resource_collector.go (pod and container CPU from cpuacct usage
// deltas, memory from memory.stat's MemoryStatRaw.Usage(); a pod needs two collections before
// it has a CPU figure). Time is an argument (event_time, ms); nothing here reads a clock.
//
// Ownership: node_source holds its configuration and the detected mounts; snapshots are values.
// Thread-safety: a node_source may be used from one thread at a time.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "actors/koordlet/koordlet_types.hpp"
#include "actors/koordlet/node_metric.hpp"
#include "bridges/node/cgroup_layout.hpp"
#include "bridges/node/cgroup_reader.hpp"
#include "bridges/node/proc_reader.hpp"
#include "messages/result.hpp"
#include "messages/units.hpp"

namespace colony::node {

struct source_config {
  // Default: /sys/fs/cgroup (kubelet's and Koordinator's --cgroup-root-dir).
  std::string cgroup_root = "/sys/fs/cgroup";
  // Default: /proc (Koordinator's --proc-root-dir).
  std::string proc_root = "/proc";
  // Where sysfs is mounted: the machine's CPU and NUMA topology (topology_reader.hpp).
  // Default: /sys (Koordinator's --sys-root-dir).
  std::string sys_root = "/sys";
  // Where resctrl is mounted (RdtResctrl: its info is read at start, its groups written).
  // Default: /sys/fs/resctrl (Koordinator: <sysfs root>/resctrl).
  std::string resctrl_root = "/sys/fs/resctrl";
  // Where kubepods sits under each controller directory: kubelet's --cgroup-root (Koordinator's
  // --cgroup-kube-path parent). Default: "" (kubepods directly under the controller).
  std::string kube_parent_dir;
  // USER_HZ of /proc/stat. Default: 100, what Koordinator assumes and every Linux ABI uses.
  std::int64_t ticks_per_second = 100;
  // Also read cpu.stat throttling and the *.pressure (PSI) files of every cgroup. NodeMetric
  // needs neither; Koordinator reads them in separate collectors behind feature gates
  // (PSICollector, off by default), and they double the files read per cgroup. Default: false.
  // Without it, throttling is still read for every cgroup that has a cfs quota while cfs-quota
  // burst wants it (snapshot's container_bandwidth; a cgroup without a quota is never throttled
  // by its own bandwidth).
  bool read_pressure = false;
  // Also read kidled's memory.idle_page_stats of the memory root and every pod (cold_page.hpp):
  // memory with hot page cache. Koordinator's ColdPageCollector gate. Default: false (off).
  bool read_cold_pages = false;
};

// One cgroup's counters at one instant.
struct cgroup_sample {
  std::int64_t cpu_usage_ns = 0;
  cgroup_memory memory;
  std::optional<cpu_throttling> throttling;  // absent when read_pressure is false
  std::optional<psi_stats> cpu_psi, memory_psi, io_psi;
};

struct container_snapshot {
  std::string id;
  std::string runtime;
  cgroup_sample sample;
  // cpu.cfs_quota_us / cpu.cfs_period_us (v2 cpu.max); nullopt where the files are absent. A
  // cgroup with a quota also has its cpu.stat throttling counters read (sample.throttling):
  // cpuburst's cfs-quota burst scales the quota of a throttled container.
  std::optional<cfs_bandwidth> cfs;
};

struct pod_snapshot {
  std::string uid;
  kube_qos_class qos = kube_qos_class::unset;
  cgroup_sample sample;
  // The pod cgroup's cfs quota as a CPU limit (read_cpu_limit_milli); nullopt: none. On a node
  // without an API server this is all the koordlet knows of the pod's limit: kubelet writes the
  // pod's CPU limit there (MilliCPUToQuota), where Koordinator's koordlet reads the pod's spec.
  std::optional<std::int64_t> cpu_limit_milli;
  std::optional<cfs_bandwidth> cfs;            // as container_snapshot::cfs
  std::vector<container_snapshot> containers;  // sorted by id
  // read_cold_pages: usage with page cache minus cold pages (cold_page.hpp); nullopt: not read.
  std::optional<std::int64_t> memory_with_hot_page_bytes;
};

// A host application's cgroup (NodeSLO spec.hostApplications; host_app_cgroup.hpp's directory).
struct host_app_snapshot {
  std::string name;
  std::string dir;  // relative to a controller directory
  cgroup_sample sample;
};

struct node_snapshot {
  event_time time{0};
  proc_cpu_ticks cpu;
  proc_meminfo memory;
  std::optional<cgroup_driver> driver;       // nullopt: no kubepods on this host
  std::vector<pod_snapshot> pods;            // sorted by uid
  std::vector<host_app_snapshot> host_apps;  // sorted by name, those whose cgroup was read
  // Cgroups that could not be read this round (a pod deleted between listing and reading, a
  // malformed file), or the missing kubepods directory. The rest of the snapshot is valid.
  std::vector<error> skipped;
  // read_cold_pages: MemTotal - MemFree - the memory root's cold pages; nullopt: not read.
  std::optional<std::int64_t> memory_with_hot_page_bytes;
  // read_cold_pages on a kernel without kidled: the memory root's memory.idle_page_stats missing
  // (not_found, "unsupported by this kernel: ...", where = the file). Pods are not tried then.
  std::optional<error> cold_pages_unsupported;
};

class node_source {
 public:
  // Detects the cgroup mounts under config.cgroup_root. not_found names what is missing.
  [[nodiscard]] static result<node_source> open(source_config config);

  // Reads /proc and every kubepods cgroup now (time `now`, supplied by the caller), and the
  // cgroup of each host application given (the hostapplication collector,
  // metricsadvisor/collectors/hostapplication: cpuacct usage and MemoryStatRaw.Usage() of
  // GetHostAppCgroupRelativePath). Fails only when /proc cannot be read; per-cgroup failures go
  // to node_snapshot::skipped (a host application under kubepods needs the driver: without a
  // kubepods directory it is skipped too).
  // `previous` (the last snapshot, optional) lends the cfs periods it read: a cgroup's period is
  // set by kubelet when it makes the cgroup and nothing changes it, so on v1 only the quota is
  // read again (one file less per limited cgroup).
  // `container_bandwidth` (cfs-quota burst's inputs): read every non-BestEffort container's cfs
  // quota and, where one is set, its throttling and its pod's. Without it containers have no
  // `cfs` and pods no throttling (unless read_pressure); pods' quotas are read all the same (the
  // pod's CPU limit). The caller asks for it only while a component needs it.
  [[nodiscard]] result<node_snapshot> snapshot(
      event_time now, std::span<const koordlet::host_app_info> host_apps = {},
      const node_snapshot* previous = nullptr, bool container_bandwidth = true) const;

  [[nodiscard]] const cgroup_mounts& mounts() const { return mounts_; }
  [[nodiscard]] const source_config& config() const { return config_; }

 private:
  node_source(source_config c, cgroup_mounts m) : config_(std::move(c)), mounts_(std::move(m)) {}
  source_config config_;
  cgroup_mounts mounts_;
};

struct container_usage {
  std::string id;
  double cpu_cores = 0;
  milli_cpu cpu{0};
  bytes memory{0};  // MemoryStatRaw.Usage(): anon + unevictable
  bytes working_set{0};
  std::int64_t cfs_quota_us = -1;  // the later snapshot's quota; -1: none
  std::int64_t cfs_period_us = 0;  // 0: not read
  std::int64_t nr_periods = -1;    // cpu.stat deltas over the interval; -1: not read
  std::int64_t nr_throttled = -1;
};

struct pod_usage {
  std::string uid;
  kube_qos_class qos = kube_qos_class::unset;
  double cpu_cores = 0;
  milli_cpu cpu{0};
  bytes memory{0};
  bytes working_set{0};
  std::int64_t nr_throttled = 0;   // periods throttled in the interval (0 without throttling)
  std::int64_t throttled_ns = 0;   // time throttled in the interval
  std::int64_t nr_periods = -1;    // periods in the interval; -1: throttling not read
  std::int64_t cfs_quota_us = -1;  // as container_usage
  std::int64_t cfs_period_us = 0;
  std::optional<std::int64_t> cpu_limit_milli;  // the later snapshot's (pod_snapshot)
  std::vector<container_usage> containers;
  std::optional<std::int64_t> memory_with_hot_page_bytes;  // the later snapshot's
};

struct host_app_usage {
  std::string name;
  double cpu_cores = 0;
  milli_cpu cpu{0};
  bytes memory{0};  // MemoryStatRaw.Usage(), as a pod's
};

struct node_usage {
  event_time time{0};  // the later snapshot's time
  double cpu_cores = 0;
  milli_cpu cpu{0};
  bytes memory{0};  // MemTotal - MemAvailable
  milli_cpu cpu_capacity{0};
  bytes memory_capacity{0};
  std::vector<pod_usage> pods;  // pods present in both snapshots, sorted by uid
  std::optional<std::int64_t> memory_with_hot_page_bytes;  // the later snapshot's
  // Host applications in both snapshots whose counter did not go backwards, sorted by name (the
  // collector ignores a host application's first collection).
  std::vector<host_app_usage> host_apps;
};

// Usage over (before.time, after.time]. invalid_input when after.time <= before.time or the
// node's tick counter went backwards. A pod (container) missing from `before`, or whose CPU
// counter went backwards (its cgroup was recreated), is left out, as Koordinator's pod collector
// skips a pod until it has two points.
[[nodiscard]] result<node_usage> usage_between(const node_snapshot& before,
                                               const node_snapshot& after,
                                               std::int64_t ticks_per_second = 100);

// Appends one collect tick to the NodeMetric window: the node sample, the derived system sample
// (sample_window::add_node_and_system) and one sample per pod, keyed by uid, and per host
// application, by name.
void add_to_window(koordlet::sample_window& w, const node_usage& u);

// The pods of a usage report as the NodeMetric builder wants them. Cgroups carry no namespace or
// name: until uids are mapped to pods (API server or the log), name = uid and namespace = "".
[[nodiscard]] std::vector<koordlet::pod_info> pods_by_uid(const node_usage& u);

}  // namespace colony::node
