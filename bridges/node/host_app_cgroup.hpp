// Where a host application's cgroup is (NodeSLO spec.hostApplications), relative to a controller
// directory: Koordinator's GetHostAppCgroupRelativePath (pkg/koordlet/util/host_application.go)
// with GetPodQoSRelativePath (pkg/koordlet/util/cgroup.go) for the kubepods bases.
//   no cgroupPath        host-latency-sensitive/<name> (LSE, LSR, LS), host-best-effort/<name>
//                        (BE), <name> (no QoS); under the cgroup root
//   CgroupRoot (or "")   <parentDir>/<relativePath> under the cgroup root
//   Kubepods             <kube parent>/kubepods[.slice]/<parentDir>/<relativePath>
//   KubepodsBurstable    .../kubepods/burstable or kubepods.slice/kubepods-burstable.slice/...
//   KubepodsBesteffort   .../kubepods/besteffort or kubepods.slice/kubepods-besteffort.slice/...
// The kubepods names follow the driver (cgroup_layout.hpp); the path parts are joined as written
// (systemd or not: Koordinator does not convert them). Pure; thread-safety: free functions.
#pragma once

#include <string>
#include <string_view>

#include "actors/koordlet/koordlet_types.hpp"
#include "bridges/node/cgroup_layout.hpp"

namespace colony::node {

// Whether the directory depends on the cgroup driver (a kubepods base).
[[nodiscard]] bool host_app_under_kubepods(const koordlet::host_app_info& app) noexcept;

// The host application's directory relative to a controller directory (v1: each controller's,
// v2: the unified root). kube_parent_dir is kubelet's --cgroup-root (source_config).
[[nodiscard]] std::string host_app_cgroup_dir(const koordlet::host_app_info& app, cgroup_driver d,
                                              std::string_view kube_parent_dir);

}  // namespace colony::node
