// Joint GPU + RDMA (+ FPGA) allocation on one node with NUMA/PCIe locality, and the NUMA
// topology hints of a pod's device request. Pure functions over the node's Device object
// (device_topology.hpp), what pods already use of it, and the pod's request and annotations.
//
// Koordinator: apis/extension/device_share.go (DeviceJointAllocate, DeviceAllocateHints,
// DeviceHint); pkg/scheduler/plugins/deviceshare/{device_allocator.go (AutopilotAllocator:
// Prepare, Allocate, filterNodeDevice, tryJointAllocate, jointAllocate, validateJointAllocation,
// allocateDevices, defaultAllocateDevices, allocateVF, newPreferredPCIes),
// allocator_gpu.go (allocateByDeviceTopology, allocateFromScope), allocator_gpu_helper.go
// (GetGPUTopologyScope), devicehandler_default.go (CalcDesiredRequestsAndCount),
// device_resources.go (sortDeviceResourcesByMinor, sortDeviceResourcesByPreferredPCIe),
// topology_hint.go (generateTopologyHints, generateDesignatedHints), utils.go (mustAllocateVF,
// parsePodDeviceShareExtensions)}.
//
// Order and tie-breaks (Koordinator iterates Go maps where Colony fixes an order):
//   - device types are allocated gpu, rdma, fpga (the joint primary first, then its secondaries
//     in annotation order, then the rest in that order);
//   - GPUs: the deepest topology scope (PCIe switch, then NUMA node, then the node) that can hold
//     the whole request wins; among equally deep ones the one already holding more used GPUs
//     (bin packing), then the smaller NUMA node id / PCIe id; within a scope smaller minors first
//     (a shared GPU: the best-scored device, then the smaller minor);
//   - other devices: score (the DeviceShare scorer) high to low, then minor ascending; with
//     preferred PCIe switches, round-robin over those switches (each round by score, then minor),
//     then the rest;
//   - a VF: the free one with the smallest bus ID among the groups the vfSelector matches.
// Thread-safety: plain functions.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "actors/scheduler/device/device_topology.hpp"
#include "actors/scheduler/device_share.hpp"
#include "actors/scheduler/numa/topology_manager.hpp"
#include "messages/names.hpp"

namespace colony::scheduler::device {

using names::annotation_device_allocate_hint;
using names::annotation_device_joint_allocate;

// DeviceJointAllocateScope.
inline constexpr std::string_view same_pcie_scope = "SamePCIe";

// DeviceJointAllocate: device_types[0] is the primary type; the others are placed in the
// primary's PCIe switches. required_scope "" or "SamePCIe".
struct device_joint_allocate {
  std::vector<device_type> device_types;
  std::string required_scope;
  bool operator==(const device_joint_allocate&) const = default;
};
// GetDeviceJointAllocate on the annotation's value. Errors name the field
// ("device-joint-allocate.deviceTypes[1]").
[[nodiscard]] result<device_joint_allocate> parse_device_joint_allocate(std::string_view value);

// DeviceAllocateStrategy, DeviceExclusivePolicy.
enum class allocate_strategy : std::uint8_t { none, apply_for_all, requests_as_count };
enum class exclusive_policy : std::uint8_t { none, device_level, pcie_level };

// metav1.LabelSelector (matchLabels, matchExpressions In/NotIn/Exists/DoesNotExist). An empty
// selector matches everything, as LabelSelectorAsSelector makes it.
struct label_requirement {
  enum class op : std::uint8_t { in, not_in, exists, does_not_exist };
  std::string key;
  op operation = op::in;
  std::vector<std::string> values;
  bool operator==(const label_requirement&) const = default;
};
struct label_selector {
  label_map match_labels;
  std::vector<label_requirement> match_expressions;
  bool operator==(const label_selector&) const = default;
  [[nodiscard]] bool matches(const label_map& labels) const;
};

// DeviceHint.
struct device_hint {
  std::optional<label_selector> selector;     // which devices may be allocated
  std::optional<label_selector> vf_selector;  // set: allocate a VF of each device (mustAllocateVF)
  allocate_strategy strategy = allocate_strategy::none;
  exclusive_policy exclusive = exclusive_policy::none;
  std::string required_topology_scope;  // Device | PCIe | NUMANode | Node (GPU only)
  bool operator==(const device_hint&) const = default;
};
// DeviceAllocateHints, by device type.
struct device_allocate_hints {
  std::array<std::optional<device_hint>, device_type_count> by_type{};
  bool operator==(const device_allocate_hints&) const = default;
  [[nodiscard]] const device_hint* of(device_type t) const noexcept {
    const auto& h = by_type[static_cast<std::size_t>(t)];
    return h ? &*h : nullptr;
  }
};
// GetDeviceAllocateHints on the annotation's value. Errors name the field
// ("device-allocate-hint.rdma.allocateStrategy").
[[nodiscard]] result<device_allocate_hints> parse_device_allocate_hints(std::string_view value);

// A pod's device request as the allocator reads it.
struct device_share_request {
  std::optional<gpu_requirements> gpu;  // calc_desired_requests_and_count_for_gpu
  std::int64_t rdma = 0;                // koordinator.sh/rdma as requested
  std::int64_t fpga = 0;                // koordinator.sh/fpga as requested
  device_allocate_hints hints;
  // After parsePodDeviceShareExtensions' filtering: types with ApplyForAll or no request removed.
  std::optional<device_joint_allocate> joint;
};
// GetPodDeviceRequests + parsePodDeviceShareExtensions: validates each device type's part of
// `r` on its own (validate_device_request), converts the GPU part and parses the two
// annotations (empty value = annotation absent). nullopt when the pod requests no device.
[[nodiscard]] result<std::optional<device_share_request>> make_device_share_request(
    const device_request& r, std::string_view hints_annotation, std::string_view joint_annotation);

// What Colony's GPU accounting (node_info::gpus: core_used, memory_used_bytes,
// memory_ratio_used) says pods hold, as usage entries.
void add_gpu_usage(node_device_usage& usage, std::span<const gpu_device> gpus);
// The GPU part in Colony's existing form (framework.hpp gpu_allocation).
[[nodiscard]] std::vector<gpu_allocation> to_gpu_allocations(
    std::span<const device_allocation> allocations);

struct allocate_options {
  // The DeviceShare scorer (scoringStrategy and resource weights).
  device_share_args args;
  // The topology manager's chosen NUMA hint (a bit per NUMA node): devices on other NUMA nodes
  // and devices without a topology are left out (filterNodeDevice); a device with nodeID -1 stays.
  std::optional<std::uint64_t> numa_affinity;
};

// Koordinator's refusals (their text).
inline constexpr std::string_view err_joint_allocate_violation =
    "node(s) Device Joint-Allocate rules violation";
inline constexpr std::string_view err_insufficient_primary = "node(s) Insufficient primary device";
inline constexpr std::string_view err_insufficient_numa_scoped = "Insufficient NUMA Scoped Devices";
inline constexpr std::string_view err_designated_lack_numa =
    "Designated Allocation Lack NUMA Node ID";
inline constexpr std::string_view err_insufficient_topology_scoped_gpu =
    "Insufficient Topology Scoped GPU Devices";
inline constexpr std::string_view err_insufficient_gpu_devices = "Insufficient GPU Devices";
inline constexpr std::string_view err_unsupported_multi_shared_gpu =
    "node(s) Unsupported Multi-Shared GPU";
// Others: "Insufficient <type> devices", "Insufficient <type> VirtualFunctions".

// AutopilotAllocator.Allocate: the pod's devices on this node, or failed_precondition with
// Koordinator's reason as the message (invalid_input for a request the node can never serve
// being malformed, e.g. an invalid hint). REQUIRES: topo == build_numa_topology(devices).
[[nodiscard]] result<device_allocations> allocate_devices(const node_devices& devices,
                                                          const numa_topology& topo,
                                                          const node_device_usage& usage,
                                                          const device_share_request& req,
                                                          const allocate_options& opts = {});

// defaultNUMAScore: a hint whose allocation is the whole node's gets it, so device NUMA
// preference outweighs the CPU's.
inline constexpr std::int64_t default_numa_score = 500;

// generateTopologyHints: for every non-empty set of the node's NUMA nodes (one node first, then
// pairs, ...) whether the request can be allocated there; hints by device type name ("gpu",
// "rdma", "fpga", ascending), preferred = as few NUMA nodes as the narrowest feasible set.
// Refuses with the whole node's reason when no set is feasible.
[[nodiscard]] result<numa::provider_hints> generate_topology_hints(
    const node_devices& devices, const numa_topology& topo, const node_device_usage& usage,
    const device_share_request& req, const device_share_args& args = {});

// generateDesignatedHints: the hint of an allocation already made (a pod that carries
// device-allocated): the NUMA nodes of its devices, preferred, score 500.
[[nodiscard]] result<numa::provider_hints> generate_designated_hints(
    std::span<const device_allocation> allocations, const node_devices& devices,
    const numa_topology& topo);

}  // namespace colony::scheduler::device
