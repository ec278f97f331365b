// Resource-key helpers for ElasticQuota: which fields of a colony::resource_list are "present"
// (a Kubernetes ResourceList distinguishes "cpu: 0" from "no cpu key", and Koordinator's quota
// code masks and compares by key), Kubernetes names of the fields, resource-aware quantity parsing
// and printing over messages/quantity.hpp, and the JSON ResourceList form used by quota
// annotations (shared-weight, ...).
//
// resource_keys is a bitmask: bit i = field i of resource_list in declaration order
// (cpu, memory, batch-cpu, batch-memory, mid-cpu, mid-memory, gpu, gpu-core, gpu-memory,
// gpu-memory-ratio, pods). Where a caller has no key information (e.g. the wire Resources
// table, whose absent fields read 0), keys_from_values says "the non-zero fields".
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "messages/resources.hpp"
#include "messages/result.hpp"

namespace colony::quota {

using resource_keys = std::uint16_t;

inline constexpr int resource_count = 11;
inline constexpr resource_keys no_keys = 0;
inline constexpr resource_keys all_keys = (1u << resource_count) - 1;
// Sentinel: derive the keys from the non-zero fields of the values they describe.
inline constexpr resource_keys keys_from_values = 0x8000;

namespace key {
inline constexpr resource_keys cpu = 1u << 0;
inline constexpr resource_keys memory = 1u << 1;
inline constexpr resource_keys batch_cpu = 1u << 2;
inline constexpr resource_keys batch_memory = 1u << 3;
inline constexpr resource_keys mid_cpu = 1u << 4;
inline constexpr resource_keys mid_memory = 1u << 5;
inline constexpr resource_keys gpu = 1u << 6;
inline constexpr resource_keys gpu_core = 1u << 7;
inline constexpr resource_keys gpu_memory = 1u << 8;
inline constexpr resource_keys gpu_memory_ratio = 1u << 9;
inline constexpr resource_keys pods = 1u << 10;
}  // namespace key

// Pointer-to-member table: field i of a resource_list.
inline constexpr std::array<std::int64_t resource_list::*, resource_count> resource_fields = {
    &resource_list::cpu_milli,
    &resource_list::memory_bytes,
    &resource_list::batch_cpu_milli,
    &resource_list::batch_memory_bytes,
    &resource_list::mid_cpu_milli,
    &resource_list::mid_memory_bytes,
    &resource_list::gpu,
    &resource_list::gpu_core,
    &resource_list::gpu_memory_bytes,
    &resource_list::gpu_memory_ratio,
    &resource_list::pods,
};

[[nodiscard]] inline std::int64_t field(const resource_list& r, int i) {
  return r.*resource_fields[i];
}
[[nodiscard]] inline std::int64_t& field(resource_list& r, int i) { return r.*resource_fields[i]; }
[[nodiscard]] constexpr bool has_key(resource_keys keys, int i) { return (keys >> i) & 1u; }

[[nodiscard]] resource_keys nonzero_keys(const resource_list& r);
// Zeroes every field whose key is not in keys (quotav1.Mask).
[[nodiscard]] resource_list masked(const resource_list& r, resource_keys keys);
// keys, or the non-zero fields of values when keys == keys_from_values.
[[nodiscard]] inline resource_keys resolve_keys(resource_keys keys, const resource_list& values) {
  return keys == keys_from_values ? nonzero_keys(values) : keys;
}
// Per field max / min (quotav1.Max; used for non-lending request and limited request).
[[nodiscard]] resource_list max_of(const resource_list& a, const resource_list& b);

// A ResourceList with its key set.
struct keyed_resources {
  resource_list values;
  resource_keys keys = no_keys;
  bool operator==(const keyed_resources&) const = default;
};

// Kubernetes name of field i ("cpu", "memory", "kubernetes.io/batch-cpu", ..., "nvidia.com/gpu").
[[nodiscard]] std::string_view resource_name(int i);
// Field indices of keys, ordered by Kubernetes name (how Koordinator's printResourceList sorts).
[[nodiscard]] std::vector<int> indices_by_name(resource_keys keys);

// How a Kubernetes resource name maps onto a field: value = Value() * scale, or MilliValue()
// when milli (cpu). nvidia.com/gpu counts whole devices, so scale 100 (koordinator.sh/gpu units).
struct resource_name_info {
  int index = 0;
  std::int64_t scale = 1;
  bool milli = false;
};
[[nodiscard]] std::optional<resource_name_info> lookup_resource(std::string_view name);

// Parses a Kubernetes quantity ("500m", "1.5", "10Gi", "1e3") into Value() (milli=false) or
// MilliValue() (milli=true), rounding away from zero like resource.Quantity
// (k8s::parse_quantity_value / k8s::parse_quantity_milli).
[[nodiscard]] result<std::int64_t> parse_quantity(std::string_view text, bool milli);
// Parses one named quantity into its field value (applies milli and scale).
[[nodiscard]] result<std::int64_t> parse_named_quantity(const resource_name_info& info,
                                                        std::string_view text);

// Kubernetes' canonical DecimalSI text of field i's value (Colony keeps no original format):
// cpu from milli-cores ("2", "500m"), gpu from 1/100 devices ("1", "1500m"), everything else
// the integer ("20", "1k"; memory in bytes).
[[nodiscard]] std::string format_quantity(int i, std::int64_t v);
// printResourceList (plugin_helper.go): "cpu:1,memory:2", keys sorted by name; "<empty>".
[[nodiscard]] std::string print_resource_list(const resource_list& r, resource_keys keys);
// Go's %v of a []ResourceName: "[cpu memory]".
[[nodiscard]] std::string print_names(resource_keys keys);
// Go's %v of a []string: "[a b]".
[[nodiscard]] std::string print_strings(const std::vector<std::string>& v);

// JSON ResourceList ({"cpu":"2","memory":"1Gi"} or numbers) as quota annotations carry it.
// Unknown resource names are skipped and listed in ignored (Colony has no field for them).
struct parsed_resource_list {
  keyed_resources resources;
  std::vector<std::string> ignored;
};
[[nodiscard]] result<parsed_resource_list> parse_resource_list_json(std::string_view json,
                                                                    std::string_view where);
// Go json.Marshal of a ResourceList: keys sorted, values as quoted canonical quantities.
[[nodiscard]] std::string resource_list_to_json(const resource_list& r, resource_keys keys);
// JSON list of strings (namespaces annotation, max-strict-check-resource-keys).
[[nodiscard]] result<std::vector<std::string>> parse_string_list_json(std::string_view json,
                                                                      std::string_view where);

}  // namespace colony::quota
