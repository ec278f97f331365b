#include "bridges/node/host_app_cgroup.hpp"

#include "bridges/node/internal/file_read.hpp"

namespace colony::node {

namespace kl = koordlet;

bool host_app_under_kubepods(const kl::host_app_info& app) noexcept {
  return app.has_cgroup_path && (app.base == kl::cgroup_base::kube_qos_guaranteed ||
                                 app.base == kl::cgroup_base::kube_burstable ||
                                 app.base == kl::cgroup_base::kube_besteffort);
}

std::string host_app_cgroup_dir(const kl::host_app_info& app, cgroup_driver d,
                                std::string_view kube_parent_dir) {
  if (!app.has_cgroup_path) {
    // defaultHostLSCgroupDir / defaultHostBECgroupDir; no QoS: the name alone.
    switch (app.qos) {
      case kl::qos_class::lse:
      case kl::qos_class::lsr:
      case kl::qos_class::ls:
        return internal::join("host-latency-sensitive", app.name);
      case kl::qos_class::be:
        return internal::join("host-best-effort", app.name);
      default:
        return app.name;
    }
  }
  std::string base;
  switch (app.base) {
    case kl::cgroup_base::kube_qos_guaranteed:
      base = internal::join(kube_parent_dir, qos_tier_dir(d, kube_qos_class::guaranteed));
      break;
    case kl::cgroup_base::kube_burstable:
      base = internal::join(kube_parent_dir, qos_tier_dir(d, kube_qos_class::burstable));
      break;
    case kl::cgroup_base::kube_besteffort:
      base = internal::join(kube_parent_dir, qos_tier_dir(d, kube_qos_class::best_effort));
      break;
    default:  // CgroupRoot, and an empty base
      break;
  }
  return internal::join(internal::join(base, app.parent_dir), app.relative_path);
}

}  // namespace colony::node
