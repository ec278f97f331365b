// DeviceShare (GPU): validates a pod's device request, converts it to per-GPU core/memory,
// allocates it device by device (a shared GPU is one device with remaining core and memory;
// a whole GPU must be entirely free) and scores nodes by device allocation.
//
// What it defines: the request validation and conversion (ValidateDeviceRequest,
// ConvertDeviceRequest, calcDesiredRequestsAndCountForGPU), the device scorer
// (LeastAllocated/MostAllocated), the GPU allocator and the plugin.
//
// Koordinator: apis/extension/device_share.go; pkg/scheduler/plugins/deviceshare/{utils.go,
// devicehandler_gpu.go, device_allocator.go, device_resources.go, scoring.go, plugin.go}.
// Two paths. A node with a Device object (node_info::device_model) is served by the joint
// allocator (device/joint_allocation.hpp: GPUs with RDMA NICs and FPGAs, NUMA / PCIe locality,
// the device-allocate-hint and device-joint-allocate annotations). A node without one has only
// the GPUs its registration lists, served device by device below; an RDMA / FPGA request does
// not fit there. Not yet: NUMA hints to the topology manager, reservations' devices.
// Thread-safety: stateless after construction except per-cycle state in cycle_state.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "actors/scheduler/framework.hpp"
#include "actors/scheduler/node_resources_fit.hpp"

namespace colony::scheduler {

namespace device {
struct device_share_request;
}

// Request-combination flags (utils.go).
enum device_flag : std::uint32_t {
  dev_nvidia_gpu = 1u << 0,
  dev_amd_gpu = 1u << 1,
  dev_hygon_dcu = 1u << 2,
  dev_koord_gpu = 1u << 3,
  dev_gpu_shared = 1u << 4,
  dev_gpu_core = 1u << 5,
  dev_gpu_memory = 1u << 6,
  dev_gpu_memory_ratio = 1u << 7,
  dev_huawei_npu_core = 1u << 8,
  dev_huawei_npu_cpu = 1u << 9,
  dev_huawei_npu_dvpp = 1u << 10,
  dev_fpga = 1u << 11,
  dev_rdma = 1u << 12,
};

// ValidateDeviceRequest: the combination of requested names must be an allowed one, with the
// percentage rules; returns the combination flags.
[[nodiscard]] result<std::uint32_t> validate_device_request(const device_request& r);
// ConvertDeviceRequest: nvidia/amd/dcu n -> core = ratio = 100n; koordinator.sh/gpu x -> core =
// ratio = x; other allowed combinations are kept (restricted to their names).
[[nodiscard]] device_request convert_device_request(const device_request& r,
                                                    std::uint32_t combination);

// calcDesiredRequestsAndCountForGPU: the request of one GPU and how many GPUs.
struct gpu_requirements {
  std::int64_t count = 1;
  bool has_core = false;
  std::int64_t core = 0;
  bool has_memory_ratio = false;
  std::int64_t memory_ratio = 0;
  bool has_memory = false;
  std::int64_t memory_bytes = 0;
  bool shared = false;
  bool operator==(const gpu_requirements&) const = default;
};
[[nodiscard]] gpu_requirements calc_desired_requests_and_count_for_gpu(
    const device_request& converted);

// int64(ratio * total / 100) and int(bytes / total * 100), as devicehandler_gpu.go.
[[nodiscard]] std::int64_t memory_ratio_to_bytes(std::int64_t ratio, std::int64_t total) noexcept;
[[nodiscard]] std::int64_t memory_bytes_to_ratio(std::int64_t bytes, std::int64_t total) noexcept;

// DeviceShare scoring resources (scoringStrategy.resources). GPU ones take part here.
enum class device_resource : std::uint8_t { gpu_core, gpu_memory, gpu_memory_ratio, rdma, fpga };
[[nodiscard]] std::string_view to_string(device_resource r) noexcept;
[[nodiscard]] std::optional<device_resource> parse_device_resource(std::string_view s) noexcept;

struct device_resource_spec {
  device_resource name = device_resource::gpu_memory_ratio;
  std::int64_t weight = 1;
  bool operator==(const device_resource_spec&) const = default;
};

struct device_share_args {
  // Default: LeastAllocated (defaults.go SetDefaults_DeviceShareArgs).
  scoring_strategy_type scoring_strategy = scoring_strategy_type::least_allocated;
  // Default: gpu-memory-ratio, gpu-memory, rdma, fpga with weight 1 (defaults.go).
  std::vector<device_resource_spec> resources{{device_resource::gpu_memory_ratio, 1},
                                              {device_resource::gpu_memory, 1},
                                              {device_resource::rdma, 1},
                                              {device_resource::fpga, 1}};
};
[[nodiscard]] result<void> validate(const device_share_args& a, const std::string& path);

// The per-resource totals/frees a scorer looks at (one device, or a node's sum).
struct device_amounts {
  std::int64_t core = 0;
  std::int64_t memory = 0;
  std::int64_t memory_ratio = 0;
};

class device_scorer {
 public:
  explicit device_scorer(const device_share_args& args);
  // resourceAllocationScorer.scoreDevice / scoreNode: per weighted resource with non-zero total,
  // requested = total - free + podRequest (or total when free > total).
  [[nodiscard]] std::int64_t score(const gpu_requirements& req, const device_amounts& total,
                                   const device_amounts& free) const noexcept;

 private:
  scoring_strategy_type type_;
  std::int64_t w_core_ = 0, w_memory_ = 0, w_ratio_ = 0;
};

class device_share final : public plugin {
 public:
  static constexpr std::string_view plugin_name = "DeviceShare";
  explicit device_share(device_share_args args = {});

  [[nodiscard]] std::string_view name() const noexcept override { return plugin_name; }
  // Filter and Score read the per-cycle state PreFilter stored and the node only.
  [[nodiscard]] bool parallel_safe() const noexcept override { return true; }
  [[nodiscard]] std::uint32_t points() const noexcept override {
    return ep_pre_filter | ep_filter | ep_score | ep_reserve;
  }
  [[nodiscard]] const device_share_args& args() const noexcept { return args_; }

  status pre_filter(cycle_state& st, const pod_info& pod, std::span<const node_info>,
                    event_time) override;
  status filter(cycle_state& st, const pod_info& pod, const node_info& node, event_time) override;
  // Queue when ev.node has enough devices with room for the pod's per-GPU request (the Filter's
  // count); a pod without a device request, or an invalid one (PreFilter's business), queues.
  [[nodiscard]] queueing_hint filter_hint(const pod_info& pod,
                                          const cluster_event& ev) const override;
  std::int64_t score(cycle_state& st, const pod_info& pod, const node_info& node,
                     event_time) override;
  bool normalize_score(cycle_state&, const pod_info&, std::span<std::int64_t> scores) override;
  status reserve(cycle_state& st, const pod_info& pod, const node_info& node, event_time) override;

  // The allocation the plugin would make on `node` (devices by score desc, then minor asc).
  [[nodiscard]] result<std::vector<gpu_allocation>> allocate(const gpu_requirements& req,
                                                             const node_info& node) const;
  // Parses a pod's GPU request (nullopt when it requests no GPU). Each device type's part of the
  // request is validated on its own, as GetPodDeviceRequests does.
  [[nodiscard]] static result<std::optional<gpu_requirements>> requirements_of(const pod_info& pod);
  // The joint allocator's answer for the pod on a node with a Device object (REQUIRES:
  // node.device_model): the devices, or failed_precondition with Koordinator's reason.
  [[nodiscard]] result<device::device_allocations> allocate_joint(
      const device::device_share_request& req, const node_info& node) const;

 private:
  struct state : cycle_data {
    std::uint64_t cycle = ~0ull;
    const pod_info* pod = nullptr;
    bool skip = true;      // no device request
    bool has_gpu = false;  // req holds the GPU part
    gpu_requirements req;
    std::shared_ptr<const device::device_share_request> request;  // every type, annotations
    std::string error;  // the request does not parse (PreFilter refuses the pod with it)
  };
  state& state_of(cycle_state& st, const pod_info& pod);

  device_share_args args_;
  device_scorer scorer_;
};

inline constexpr std::string_view err_insufficient_gpu = "Insufficient gpu devices";

}  // namespace colony::scheduler
