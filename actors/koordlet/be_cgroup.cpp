#include "actors/koordlet/be_cgroup.hpp"

#include <cmath>

namespace colony::koordlet {

std::int64_t milli_cpu_to_shares(std::int64_t milli) noexcept {
  if (milli <= 0) return cpu_shares_min;
  std::int64_t s = milli * cpu_share_unit / 1000;
  if (s < cpu_shares_min) s = cpu_shares_min;
  if (s > cpu_shares_max) s = cpu_shares_max;
  return s;
}

std::int64_t milli_cpu_to_quota(std::int64_t milli) noexcept {
  std::int64_t q = milli * 100000 / 1000;
  if (q <= 0) return -1;
  if (q < cfs_quota_min) q = cfs_quota_min;
  return q;
}

std::optional<be_cgroup_settings> be_pod_cgroup(const pod_info& pod, bool cfs_quota_enabled,
                                                double ratio) noexcept {
  if (pod.qos != qos_class::be) return std::nullopt;
  be_cgroup_settings s;
  std::int64_t req = 0;
  for (const auto& c : pod.containers)
    if (c.requests.batch_cpu_milli > 0) req += c.requests.batch_cpu_milli;
  s.cpu_shares = milli_cpu_to_shares(req);

  if (cfs_quota_enabled) {
    std::int64_t lim = 0;
    for (const auto& c : pod.containers) {
      if (c.limits.batch_cpu_milli <= 0) {  // one unlimited container makes the pod unlimited
        lim = -1;
        break;
      }
      lim += c.limits.batch_cpu_milli;
    }
    s.cfs_quota_us = milli_cpu_to_quota(lim);
    if (s.cfs_quota_us > 0 && ratio > 1.0)
      s.cfs_quota_us = static_cast<std::int64_t>(std::ceil(double(s.cfs_quota_us) / ratio));
  }

  std::int64_t mem = 0;
  for (const auto& c : pod.containers) {
    if (c.limits.batch_memory_bytes <= 0) {
      mem = -1;
      break;
    }
    mem += c.limits.batch_memory_bytes;
  }
  s.memory_limit_bytes = mem;
  return s;
}

}  // namespace colony::koordlet
