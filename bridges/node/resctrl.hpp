// resctrl on a node: the machine's resctrl info (what the policy needs to compute schemata) and
// the executor of the koordlet's resctrl decisions (targets "resctrl/<group>").
//
// Koordinator: pkg/koordlet/util/system/resctrl.go (paths under <sysfs>/resctrl, cbm_mask,
// GetCacheIds from the root schemata, ReadResctrlTasksMap), resctrl_linux.go,
// pkg/koordlet/qosmanager/plugins/resctrl/resctrl_reconcile.go (initCatGroupIfNotExist: a group
// is made by mkdir; getContainerCgroupNewTaskIds: the containers' cgroup tasks; only the tasks
// not in the group yet are written), pkg/koordlet/resourceexecutor/resctrl_updater.go.
//
// Files:
//   <root>/schemata              the root group's: its L3 cache ids and MB domain ids
//   <root>/info/L3/cbm_mask      hex mask of every way; min_cbm_bits
//   <root>/info/MB/min_bandwidth, bandwidth_gran
//   <root>/<group>/schemata      written "L3:0=f;1=f\nMB:0=90;1=90" in one write (the kernel
//                                takes several lines at once and keeps the resources not named)
//   <root>/<group>/tasks         one pid per write (the kernel's rule), appended
// Where resctrl is not mounted (no <root>/schemata) every decision is reported in
// apply_result::unsupported (not_found, "unsupported by this kernel: resctrl is not mounted at
// <root>", where = <root>), never silently skipped. Nothing here reads a clock or knows the log.
// Thread-safety: one caller at a time.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "actors/koordlet/resctrl.hpp"
#include "bridges/node/cgroup_executor.hpp"
#include "messages/result.hpp"

namespace colony::node {

// The machine's resctrl info. not_found (where = the root) when resctrl is not mounted there;
// invalid_input naming the file for a malformed one. vendor_id AuthenticAMD in
// <proc_root>/cpuinfo sets amd (Koordinator's GetVendorIDByCPUInfo); a missing cpuinfo is Intel.
[[nodiscard]] result<koordlet::resctrl_info> read_resctrl_info(const std::string& resctrl_root,
                                                               const std::string& proc_root);

struct resctrl_executor_config {
  std::string resctrl_root = "/sys/fs/resctrl";  // Default: /sys/fs/resctrl
  std::string cgroup_root = "/sys/fs/cgroup";    // where the pods' cgroups (their tasks) are
  std::string kube_parent_dir;                   // kubelet's --cgroup-root under each controller
};

class resctrl_executor {
 public:
  explicit resctrl_executor(resctrl_executor_config c) : config_(std::move(c)) {}

  // One group's settings: "schemata" (written, read back, compared resource by resource and
  // domain by domain) and "tasks" (pod uids, comma-separated: the tasks of their pod and
  // container cgroups, v1 cpu controller `tasks` / v2 `cgroup.threads`, not in the group yet are
  // written; a task that exits meanwhile is skipped; a pod without a cgroup is skipped). The
  // group directory is made when missing. applied_file keys: "resctrl/<group>/schemata" (read
  // back: the file's lines for the resources written), "resctrl/<group>/tasks" (written: the pids
  // written; read back: those the group's tasks file lists afterwards).
  [[nodiscard]] apply_result apply_group(
      std::string_view group,
      const std::vector<std::pair<std::string, std::string>>& settings) const;

 private:
  resctrl_executor_config config_;
};

}  // namespace colony::node
