// Where kubelet puts pods in the cgroup tree: the controller mounts (cgroup v1 per-controller
// hierarchies or the v2 unified one), the driver (cgroupfs or systemd), and each pod's QoS tier,
// uid and container directories under kubepods.
//
// Naming follows kubelet (pkg/kubelet/cm/cgroup_manager_linux.go, qos_container_manager_linux.go)
// as Koordinator formats and parses it (pkg/koordlet/util/system/cgroup_driver.go: Formatter,
// PodIDParser, ContainerIDParser; GetCgroupDriverFromCgroupName):
//   cgroupfs: kubepods/pod<uid>, kubepods/{burstable,besteffort}/pod<uid>, .../<container-id>
//   systemd:  kubepods.slice/kubepods-pod<uid_>.slice,
//             kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod<uid_>.slice,
//             .../{cri-containerd,docker,crio,pouch}-<id>.scope
// where <uid_> is the pod uid with '-' replaced by '_' (systemd reserves '-' for nesting).
// Guaranteed pods sit directly under kubepods.
//
// Discovery only lists directories; it never creates or writes. Thread-safety: free functions.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "actors/koordlet/cgroup_writer.hpp"
#include "messages/qos.hpp"
#include "messages/result.hpp"

namespace colony::node {

using koordlet::cgroup_version;

enum class cgroup_driver : std::uint8_t { cgroupfs, systemd };
[[nodiscard]] std::string_view to_string(cgroup_driver d) noexcept;

// The directory of each controller that the readers use. On v2 all three are the root.
struct cgroup_mounts {
  cgroup_version version = cgroup_version::v1;
  std::string cpu;      // v1: cpu.stat (throttling)
  std::string cpuacct;  // v1: cpuacct.usage, and *.pressure where the kernel has cgroup1 PSI
  std::string memory;   // v1: memory.usage_in_bytes, memory.stat
  std::string cpuset;   // v1: cpuset.cpus (the executor's BE cpuset); "" when not mounted
};

// v2 when root/cgroup.controllers exists (a unified mount); otherwise v1 with root/cpu,
// root/cpuacct (or the co-mounted "cpu,cpuacct") and root/memory. A hybrid host (v1 controllers
// plus an empty v2 at root/unified) is v1, as Koordinator treats it. not_found names the
// controller directory that is missing.
[[nodiscard]] result<cgroup_mounts> detect_mounts(const std::string& cgroup_root);

struct container_cgroup {
  std::string id;       // the runtime's container id (hash)
  std::string runtime;  // "containerd", "docker", "cri-o", "pouch" (systemd); "" on cgroupfs
  std::string dir;      // relative to a controller directory
  bool operator==(const container_cgroup&) const = default;
};

struct pod_cgroup {
  std::string uid;  // with dashes, as metadata.uid
  kube_qos_class qos = kube_qos_class::unset;
  std::string dir;                           // relative to a controller directory
  std::vector<container_cgroup> containers;  // sorted by id; includes the sandbox (pause)
  bool operator==(const pod_cgroup&) const = default;
};

struct kubepods_layout {
  cgroup_driver driver = cgroup_driver::cgroupfs;
  std::string kubepods_dir;      // "kubepods" or "kubepods.slice"
  std::vector<pod_cgroup> pods;  // sorted by uid
};

// Lists kubepods under one controller directory (v1: the cpuacct one; v2: the root). The driver
// is guessed from the name as GetCgroupDriverFromCgroupName does: kubepods.slice -> systemd,
// kubepods -> cgroupfs. not_found when neither exists. Directories that match no pod or
// container pattern are ignored (systemd puts other units there, e.g. crio-conmon-<id>.scope).
[[nodiscard]] result<kubepods_layout> discover_kubepods(const std::string& controller_dir);

// Pure name helpers (Formatter of cgroup_driver.go), relative to a controller directory.
[[nodiscard]] std::string kubepods_dir_name(cgroup_driver d);
[[nodiscard]] std::string pod_dir(cgroup_driver d, kube_qos_class qos, std::string_view uid);
// A QoS tier's directory: kubepods itself for Guaranteed, "kubepods/besteffort",
// "kubepods.slice/kubepods-burstable.slice", ...
[[nodiscard]] std::string qos_tier_dir(cgroup_driver d, kube_qos_class qos);
// Pod uid from a pod directory's basename; nullopt when it is not a pod directory.
[[nodiscard]] std::optional<std::string> parse_pod_dir_name(cgroup_driver d,
                                                            std::string_view basename);
// Container id and runtime from a container directory's basename; nullopt when it is not one.
[[nodiscard]] std::optional<container_cgroup> parse_container_dir_name(cgroup_driver d,
                                                                       std::string_view basename);

}  // namespace colony::node
