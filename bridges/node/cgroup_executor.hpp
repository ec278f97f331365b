// cgroup_executor: the sink that carries a koordlet's cgroup decisions out on its node's real
// cgroup tree, and reconciles every write against what the file holds afterwards.
//
// What it writes (Koordinator: pkg/koordlet/qosmanager/plugins/cpusuppress adjustByCfsQuota and
// adjustByCPUSet, pkg/koordlet/qosmanager/plugins/cpuburst, pkg/koordlet/resourceexecutor for the
// leveled cpuset updates; file names from actors/koordlet/cgroup_writer):
//   BE cfs quota   the BestEffort tier's cpu.cfs_quota_us (v1 cpu controller) / cpu.max (v2)
//   BE cpuset      cpuset.cpus of the BestEffort tier, its pods and their containers (v1 cpuset
//                  controller, v2 unified). A v1 child's cpuset must stay inside its parent's, so
//                  as Koordinator's LeveledUpdateBatch does: first the union of old and new top
//                  down (tier, pods, containers), then the new set bottom up.
//   pod settings   a pod's own files in the component's v1 names, translated on v2
//                  (cpu.cfs_burst_us -> cpu.max.burst, cpu.cfs_quota_us -> cpu.max, cpu.shares ->
//                  cpu.weight, memory.limit_in_bytes -> memory.max), and "<container>/<file>" for
//                  a container directory (cfs-quota burst: "<container id>/cpu.cfs_quota_us"
//                  and the pod's, in the decision's order). memory.* files go to the memory
//                  controller (v1).
//   QoS dirs       the same for a kube QoS dir (kubepods for Guaranteed, its burstable and
//                  besteffort tiers): group identity's cpu.bvt_warp_ns.
//   host apps      the same for a host application's cgroup (host_app_cgroup.hpp), relative to
//                  the controller directory itself (not the kube parent): cpu.bvt_warp_ns.
// Files of kernel features that a kernel may lack (cpu.bvt_warp_ns of Anolis' group identity,
// memory.min/low/high where v1 lacks them) are written only where the file exists, as
// Koordinator's resource IsSupported checks; an absent one is reported in `unsupported` (never a
// silent no-op) and the other writes of the decision go on.
// After each write the file is read back: a value other than the one written (the kernel's
// canonical form is compared: trailing whitespace, cpuset lists as sets) is an error naming the
// file and both values, and the writes after it are not attempted.
//
// The layout (driver, tier and pod directories) is found at each call, under
// <controller>/<kube_parent_dir>, as the collector finds it. Nothing here reads a clock or knows
// the log: decisions come in as plain values, applied writes go out as plain values (the caller,
// `colony koordlet`, turns them into CgroupUpdated / WriteFailed records).
// Thread-safety: one caller at a time.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "actors/koordlet/koordlet_types.hpp"
#include "bridges/node/cgroup_layout.hpp"
#include "messages/result.hpp"

namespace colony::node {

struct executor_config {
  // Default: /sys/fs/cgroup.
  std::string cgroup_root = "/sys/fs/cgroup";
  // kubelet's --cgroup-root under each controller (source_config::kube_parent_dir). Default: "".
  std::string kube_parent_dir;
};

// One file written and read back.
struct applied_file {
  std::string file;       // absolute path
  std::string key;        // the file relative to its controller's kubepods parent:
                          // "kubepods/besteffort/cpu.cfs_quota_us"
  std::string written;    // what was written
  std::string read_back;  // what the file held afterwards (trailing whitespace trimmed)
};

// The writes of one decision, in the order made. On error, `done` holds those that succeeded.
struct apply_result {
  std::vector<applied_file> done;
  std::optional<error> failed;  // the first write that failed or did not read back
  // Files the kernel lacks (see the top of the file), one error naming each, not written.
  std::vector<error> unsupported;
};

class cgroup_executor {
 public:
  // Detects the mounts. not_found names the controller directory that is missing.
  [[nodiscard]] static result<cgroup_executor> open(executor_config c);

  // The BestEffort tier's cfs quota in us (-1: unlimited) with the default 100 ms period.
  [[nodiscard]] apply_result apply_be_cfs_quota(std::int64_t quota_us) const;
  // The BE cpuset ("0-3,6") on the tier, its pods and containers. v1 needs the cpuset controller.
  [[nodiscard]] apply_result apply_be_cpuset(std::string_view cpus) const;
  // Settings of one pod found by uid in any tier: (file, value) with file "cpu.cfs_burst_us" or
  // "<container id>/cpu.cfs_burst_us" (cpuburst), "cpu.cfs_quota_us" or
  // "<container id>/cpu.cfs_quota_us" (cfs-quota burst; v2 cpu.max "QUOTA 100000"), the hooks'
  // files; written in the order given. not_found when no pod or container has that id.
  [[nodiscard]] apply_result apply_pod_settings(
      std::string_view pod_uid,
      const std::vector<std::pair<std::string, std::string>>& settings) const;

  // Settings of a kube QoS dir (Guaranteed: kubepods itself), same file names as a pod's.
  [[nodiscard]] apply_result apply_qos_settings(
      kube_qos_class tier, const std::vector<std::pair<std::string, std::string>>& settings) const;

  // Settings of a host application's cgroup (applied_file::key relative to the controller
  // directory). not_found when its directory is missing, or when it sits under kubepods and no
  // kubepods directory tells the driver.
  [[nodiscard]] apply_result apply_host_app_settings(
      const koordlet::host_app_info& app,
      const std::vector<std::pair<std::string, std::string>>& settings) const;

  [[nodiscard]] const cgroup_mounts& mounts() const { return mounts_; }

 private:
  cgroup_executor(executor_config c, cgroup_mounts m)
      : config_(std::move(c)), mounts_(std::move(m)) {}
  // <controller>/<kube_parent_dir>; <controller> itself when at_root (host applications).
  [[nodiscard]] std::string base(const std::string& controller, bool at_root = false) const;
  // Writes value into base(controller)/rel and reads it back into out (see the top of the file).
  [[nodiscard]] bool write_one(const std::string& controller, const std::string& rel,
                               const std::string& value, apply_result& out,
                               bool at_root = false) const;
  // Translates and writes (file, value) pairs relative to `dir` (a pod, container or QoS dir,
  // the same relative path under every v1 controller). False once a write failed.
  [[nodiscard]] bool write_settings(
      const std::string& dir, const std::vector<std::pair<std::string, std::string>>& settings,
      apply_result& out, bool at_root = false) const;

  executor_config config_;
  cgroup_mounts mounts_;
};

// Whether `read_back` is what writing `written` into `file` leaves there: equal after trimming
// whitespace; for a cpuset.cpus file, the same set of CPUs; for a memory byte file (v1
// memory.limit_in_bytes, memory.min/low/high/max), the value rounded down to whole 4-KiB pages,
// and for v1's -1 (unlimited) the kernel's page-counter maximum it reads back as.
[[nodiscard]] bool same_cgroup_value(std::string_view file, std::string_view written,
                                     std::string_view read_back);

}  // namespace colony::node
