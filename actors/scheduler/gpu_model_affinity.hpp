// GPUModelAffinity: a Filter that keeps a GPU pod to nodes of the GPU models it allows.
//
// Colony's plugin, not Koordinator's: it stands in for a required node affinity on the label
// node.koordinator.sh/gpu-model (apis/extension/device_share.go LabelGPUModel), which is how a
// Koordinator user pins a GPU pod to models ("In" over the allowed values), and how the openb
// simulator (alibaba/clusterdata cluster-trace-gpu-v2023, its gpu_spec column) applies a pod's
// gpu_spec. Colony carries the allowed models on the pod (PodSubmitted.gpu_models) instead of as
// a node-affinity term, since it models no general node affinity yet.
//
// Filter: a pod that requests a GPU (requests_gpu) and lists models passes only nodes whose
// gpu_model is one of them (byte equality); a node without the label matches no list. A pod
// without a GPU request, or with an empty list, passes every node. The failure is
// UnschedulableAndUnresolvable, as NodeAffinity's (preemption cannot change a node's labels).
//
// Registered in plugin_registry::with_builtin() as "GPUModelAffinity". Koordinator's shipped
// profile does not list it; the scheduler component adds it unless told not to
// (scheduler_component_options::gpu_model_affinity).
// Thread-safety: stateless.
#pragma once

#include <string_view>

#include "actors/scheduler/framework.hpp"

namespace colony::scheduler {

// True when the pod asks for any GPU: koordinator.sh/gpu (or the x100 resource_list gpu field),
// nvidia.com/gpu, gpu.shared, gpu-core, gpu-memory or gpu-memory-ratio. The openb simulator
// restricts models only for such pods (num_gpu > 0).
[[nodiscard]] bool requests_gpu(const pod_info& pod) noexcept;

// The filter's verdict for one node, outside a cycle.
[[nodiscard]] bool gpu_model_matches(const pod_info& pod, const node_info& node) noexcept;

class gpu_model_affinity final : public plugin {
 public:
  static constexpr std::string_view plugin_name = "GPUModelAffinity";
  // The openb simulator's wording, kept so Colony's reports read the same.
  static constexpr std::string_view reason = "node(s) didn't match the pod's GPU model (gpu_spec)";

  [[nodiscard]] std::string_view name() const noexcept override { return plugin_name; }
  [[nodiscard]] std::uint32_t points() const noexcept override { return ep_filter; }
  // Reads the pod and the node only.
  [[nodiscard]] bool parallel_safe() const noexcept override { return true; }
  status filter(cycle_state&, const pod_info& pod, const node_info& node, event_time) override;
  // Queue when ev.node's model is one the pod allows (the Filter itself).
  [[nodiscard]] queueing_hint filter_hint(const pod_info& pod,
                                          const cluster_event& ev) const override;
};

}  // namespace colony::scheduler
