#include "actors/koordlet/memory_qos.hpp"

#include <algorithm>

namespace colony::koordlet {

const memory_qos& memory_qos_of(const resource_qos_memory_strategy& s,
                                const pod_info& pod) noexcept {
  switch (pod_qos_with_default(pod)) {
    case qos_class::lse:
    case qos_class::lsr:
      return s.lsr_class;
    case qos_class::be:
      return s.be_class;
    case qos_class::system:
      return s.system_class;
    default:
      return s.ls_class;
  }
}

std::optional<memory_qos_settings> pod_memory_qos(const resource_qos_memory_strategy& s,
                                                  const pod_info& pod,
                                                  std::int64_t node_allocatable) noexcept {
  const auto& q = memory_qos_of(s, pod);
  if (!q.enable) return std::nullopt;
  std::int64_t request = 0, limit = 0;
  bool unlimited = false;
  for (const auto& c : pod.containers) {
    request += std::max<std::int64_t>(0, c.requests.memory_bytes);
    if (c.limits.memory_bytes <= 0) unlimited = true;
    limit += std::max<std::int64_t>(0, c.limits.memory_bytes);
  }
  if (unlimited || limit <= 0) limit = node_allocatable;
  memory_qos_settings r;
  r.min_bytes = request * q.min_limit_percent / 100;
  r.low_bytes = std::max(request * q.low_limit_percent / 100, r.min_bytes);
  if (q.throttling_percent > 0) {
    const std::int64_t over = std::max<std::int64_t>(0, limit - request);
    const std::int64_t high = request + over * q.throttling_percent / 100;
    r.high_bytes = high / memory_page_size * memory_page_size;
  }
  return r;
}

}  // namespace colony::koordlet
