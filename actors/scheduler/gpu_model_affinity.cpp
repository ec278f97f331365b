#include "actors/scheduler/gpu_model_affinity.hpp"

#include <algorithm>

namespace colony::scheduler {

bool requests_gpu(const pod_info& pod) noexcept {
  const auto& d = pod.devices;
  return pod.requests.gpu > 0 || d.koord_gpu > 0 || d.nvidia_gpu > 0 || d.gpu_shared > 0 ||
         d.gpu_core > 0 || d.gpu_memory > 0 || d.gpu_memory_ratio > 0;
}

bool gpu_model_matches(const pod_info& pod, const node_info& node) noexcept {
  if (pod.gpu_models.empty() || !requests_gpu(pod)) return true;
  if (node.gpu_model.empty()) return false;
  return std::find(pod.gpu_models.begin(), pod.gpu_models.end(), node.gpu_model) !=
         pod.gpu_models.end();
}

status gpu_model_affinity::filter(cycle_state&, const pod_info& pod, const node_info& node,
                                  event_time) {
  return gpu_model_matches(pod, node) ? status{} : status::unresolvable(reason);
}

queueing_hint gpu_model_affinity::filter_hint(const pod_info& pod, const cluster_event& ev) const {
  if (ev.node == nullptr) return queueing_hint::queue;
  return gpu_model_matches(pod, *ev.node) ? queueing_hint::queue : queueing_hint::skip;
}

}  // namespace colony::scheduler
