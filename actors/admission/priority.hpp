// Koordinator priority classes and their derivation for a pod (apis/extension/priority.go,
// priority_utils.go).
//
// A priority class is a band of pod.spec.priority values; the label
// koordinator.sh/priority-class overrides the band, and koordinator.sh/priority holds the
// sub-priority inside the band. Pure functions; no state.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "actors/admission/pod_spec.hpp"
#include "actors/admission/qos.hpp"
#include "messages/result.hpp"

namespace colony::admission {

// Numbering matches colony.wire::PriorityClass.
enum class priority_class : std::uint8_t { none = 0, prod = 1, mid = 2, batch = 3, free = 4 };

// "koord-prod", "koord-mid", "koord-batch", "koord-free"; none is "".
[[nodiscard]] std::string_view to_string(priority_class p) noexcept;

// GetPodPriorityClassByName: one of the four names, else none.
[[nodiscard]] priority_class priority_class_from_string(std::string_view name) noexcept;

// Inclusive bands of spec.priority (package variables in Go; fixed here).
struct priority_band {
  std::int32_t min;
  std::int32_t max;
  std::int32_t default_value;
};
inline constexpr priority_band priority_prod_band{9000, 9999, 9500};
inline constexpr priority_band priority_mid_band{7000, 7999, 7500};
inline constexpr priority_band priority_batch_band{5000, 5999, 5500};
inline constexpr priority_band priority_free_band{3000, 3999, 3500};
inline constexpr std::int32_t priority_none_value_default = 0;

// DefaultPriorityClass: what an out-of-band priority or an unknown QoS maps to.
inline constexpr priority_class default_priority_class = priority_class::none;

// getPriorityClassByPriority: the band containing the value; none when absent or outside.
[[nodiscard]] priority_class get_priority_class_by_priority(
    std::optional<std::int32_t> priority) noexcept;

// GetPodPriorityClassRaw: the koordinator.sh/priority-class label if present (an unknown name
// gives none; it does not fall back to spec.priority), else the band of spec.priority.
[[nodiscard]] priority_class get_pod_priority_class_raw(const pod_spec& pod) noexcept;

// GetPodPriorityClassWithQoS: SYSTEM/LSE/LSR/LS -> prod, BE -> batch, none -> none.
[[nodiscard]] priority_class get_pod_priority_class_with_qos(qos_class q) noexcept;

// GetPodPriorityClassWithDefault: raw class, else derived from the QoS with default.
[[nodiscard]] priority_class get_pod_priority_class_with_default(const pod_spec& pod) noexcept;

// GetDefaultPriorityByPriorityClass.
[[nodiscard]] std::int32_t get_default_priority_by_priority_class(priority_class p) noexcept;

// GetPodPriorityValueWithDefault: a nil pod gives 0; a set, non-zero spec.priority is returned
// as is; otherwise the default value of the class with default.
[[nodiscard]] std::int32_t get_pod_priority_value_with_default(const pod_spec* pod) noexcept;
[[nodiscard]] inline std::int32_t get_pod_priority_value_with_default(
    const pod_spec& pod) noexcept {
  return get_pod_priority_value_with_default(&pod);
}

// Go's strconv.ParseInt(s, 0, 32): optional sign, base from prefix (0x hex, 0o or leading 0
// octal, 0b binary, else decimal), '_' digit separators as Go allows them, int32 range.
[[nodiscard]] result<std::int32_t> parse_int32_base0(std::string_view s);

// GetPodSubPriority: label koordinator.sh/priority parsed by parse_int32_base0; a missing or
// empty label gives 0; a bad one is an error naming the label.
[[nodiscard]] result<std::int32_t> get_pod_sub_priority(const string_map& labels);

}  // namespace colony::admission
