// One node's devices as Koordinator's Device object gives them (scheduling.koordinator.sh/v1alpha1
// Device, one per node, named after the node), what pods already use of them, and the derived
// NUMA/PCIe index the joint allocator and the NUMA hints read. Pure.
//
// Koordinator: apis/scheduling/v1alpha1/device_types.go (DeviceInfo, DeviceTopology,
// VirtualFunctionGroup); pkg/scheduler/plugins/deviceshare/{device_cache.go (buildDeviceResources,
// updateNodeDevice), numa_topology.go (newNUMATopology), device_resources.go}.
//
// Colony's choices: devices are kept sorted by (type, minor); the parser refuses what Koordinator
// would silently accept (an unknown type, a missing or negative minor, a duplicate minor of a
// type, a device without resources) and names the offending field.
// Thread-safety: plain values.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "messages/result.hpp"

namespace colony::scheduler::device {

// DeviceType. The order is Colony's allocation and output order where Koordinator iterates a map.
enum class device_type : std::uint8_t { gpu, rdma, fpga };
inline constexpr std::size_t device_type_count = 3;
[[nodiscard]] std::string_view to_string(device_type t) noexcept;
[[nodiscard]] std::optional<device_type> parse_device_type(std::string_view s) noexcept;

// A device's resources (DeviceInfo.resources) or an amount of them (used, free, requested). A
// missing name is 0, as quotav1 treats an absent key.
struct device_amount {
  std::int64_t gpu_core = 0;          // koordinator.sh/gpu-core
  std::int64_t gpu_memory = 0;        // koordinator.sh/gpu-memory (bytes)
  std::int64_t gpu_memory_ratio = 0;  // koordinator.sh/gpu-memory-ratio
  std::int64_t rdma = 0;              // koordinator.sh/rdma (100 = a whole NIC)
  std::int64_t fpga = 0;              // koordinator.sh/fpga (100 = a whole card)
  bool operator==(const device_amount&) const = default;
  // quotav1.IsZero.
  [[nodiscard]] bool is_zero() const noexcept { return *this == device_amount{}; }
};
// quotav1.LessThanOrEqual(request, free): every requested amount fits.
[[nodiscard]] bool fits(const device_amount& request, const device_amount& free) noexcept;
[[nodiscard]] device_amount operator+(const device_amount& a, const device_amount& b) noexcept;
// quotav1.SubtractWithNonNegativeResult.
[[nodiscard]] device_amount subtract_non_negative(const device_amount& a,
                                                  const device_amount& b) noexcept;

using label_map = std::map<std::string, std::string, std::less<>>;

// DeviceTopology. node_id -1 = no NUMA node (numa_topology.go skips such devices).
struct device_topology {
  std::int32_t socket_id = -1;
  std::int32_t node_id = -1;
  std::string pcie_id;  // the PCIe switch; unique across NUMA nodes
  std::string bus_id;
  bool operator==(const device_topology&) const = default;
};

// VirtualFunction / VirtualFunctionGroup.
struct virtual_function {
  std::int32_t minor = 0;
  std::string bus_id;
  bool operator==(const virtual_function&) const = default;
};
struct vf_group {
  label_map labels;
  std::vector<virtual_function> vfs;
  bool operator==(const vf_group&) const = default;
};

// DeviceInfo.
struct device_info {
  device_type type = device_type::gpu;
  std::int32_t minor = 0;
  std::string uuid;  // "id"
  bool health = false;
  label_map labels;
  device_amount resources;
  std::optional<device_topology> topology;
  std::vector<vf_group> vf_groups;
  bool operator==(const device_info&) const = default;
  // buildDeviceResources: an unhealthy device counts with no resources.
  [[nodiscard]] device_amount total() const noexcept {
    return health ? resources : device_amount{};
  }
  [[nodiscard]] std::size_t vf_count() const noexcept;
};

// The Device object of one node.
struct node_devices {
  std::string node_name;             // metadata.name
  std::vector<device_info> devices;  // sorted by (type, minor), minors unique per type
  // The device of (type, minor); nullptr when absent.
  [[nodiscard]] const device_info* find(device_type t, std::int32_t minor) const noexcept;
  // The devices of one type, in minor order.
  [[nodiscard]] std::span<const device_info> of_type(device_type t) const noexcept;
};

// Parses a Device object (JSON as the API server serves it). Errors are invalid_input with
// `where` naming the field ("spec.devices[3].topology.nodeID"). Resources may be quantity
// strings ("83201216Ki") or numbers.
[[nodiscard]] result<node_devices> parse_device(const nlohmann::json& obj);
[[nodiscard]] result<node_devices> parse_device(std::string_view json_text);

// What pods already hold of one device (the sum of their device-allocated entries) and the VFs
// they hold on it (by bus ID).
struct device_usage {
  device_type type = device_type::gpu;
  std::int32_t minor = 0;
  device_amount used;
  std::vector<std::string> vfs;
  bool operator==(const device_usage&) const = default;
};
// A node's usage: at most one entry per (type, minor), sorted by (type, minor).
struct node_device_usage {
  std::vector<device_usage> devices;
  [[nodiscard]] const device_usage* find(device_type t, std::int32_t minor) const noexcept;
  // Adds `amount` (and a VF when given) to the device's entry, creating it in order.
  void add(device_type t, std::int32_t minor, const device_amount& amount,
           const std::string* vf_bus_id = nullptr);
  // Takes `amount` (never below zero) and the VF back; an entry left with nothing is removed.
  void remove(device_type t, std::int32_t minor, const device_amount& amount,
              const std::string* vf_bus_id = nullptr);
};

// What is free on a device: total (zero when unhealthy) minus used, never negative.
[[nodiscard]] device_amount free_of(const device_info& d, const node_device_usage& usage) noexcept;

// numa_topology.go's PCIe: the devices of one PCIe switch on one NUMA node.
struct pcie_group {
  std::int32_t socket_id = -1;
  std::int32_t node_id = -1;
  std::string pcie_id;
  // Minors by type (index = device_type), ascending.
  std::vector<std::int32_t> minors[device_type_count];
};

// NUMATopology (numa_topology.go newNUMATopology) and the per-PCIe grouping device_cache.go and
// allocator_gpu_helper.go (GetGPUTopologyScope) build: devices with a topology and node_id != -1,
// grouped by NUMA node (ascending) and, within one, by PCIe switch (pcie_id ascending).
struct numa_topology {
  struct numa_node {
    std::int32_t node_id = 0;
    std::vector<pcie_group> pcies;
  };
  std::vector<numa_node> nodes;  // by node_id ascending
  std::int32_t num_nodes_per_socket = 0;

  // The NUMA node ids, ascending (the bits generate_topology_hints iterates).
  [[nodiscard]] std::vector<int> node_ids() const;
  // deviceToNodeID: the NUMA node of (type, minor); nullopt when it has none.
  [[nodiscard]] std::optional<std::int32_t> node_of(const node_devices& nd, device_type t,
                                                    std::int32_t minor) const noexcept;
  // calcTotalDevicesByNUMA: how many devices of `t` lie on the NUMA nodes of `mask`.
  [[nodiscard]] std::size_t count_in(device_type t, std::uint64_t mask) const noexcept;
};
[[nodiscard]] numa_topology build_numa_topology(const node_devices& nd);

// A node's Device object as the scheduler keeps it: the devices and their NUMA/PCIe grouping,
// built once per observed object and shared by every copy of the node's view.
struct device_model {
  node_devices devices;
  numa_topology topology;  // build_numa_topology(devices)
};

// One allocated device (apiext.DeviceAllocation): per-instance resources and, for an RDMA NIC
// with VFs requested, the VF.
struct device_allocation {
  device_type type = device_type::gpu;
  std::int32_t minor = 0;
  device_amount resources;
  std::optional<virtual_function> vf;
  bool operator==(const device_allocation&) const = default;
};
// A pod's allocation, sorted by (type, minor).
using device_allocations = std::vector<device_allocation>;

// The used amounts and VFs an allocation adds (nodeDevice.updateCacheUsed).
void add_allocations(node_device_usage& usage, std::span<const device_allocation> allocations);
// The reverse (a pod forgotten or unreserved).
void remove_allocations(node_device_usage& usage, std::span<const device_allocation> allocations);

}  // namespace colony::scheduler::device
