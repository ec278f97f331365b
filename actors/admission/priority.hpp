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
#include "messages/priority.hpp"
#include "messages/result.hpp"

namespace colony::admission {

// The priority classes, their names, the spec.priority bands, GetDefaultPriorityByPriorityClass
// and GetPodPriorityClassWithQoS live in messages/priority.hpp (one definition for every
// module); named here so admission code reads them unqualified.
using colony::default_priority_class;
using colony::get_default_priority_by_priority_class;
using colony::get_pod_priority_class_by_name;
using colony::get_pod_priority_class_with_qos;
using colony::get_priority_class_by_priority;
using colony::priority_band;
using colony::priority_batch_band;
using colony::priority_class;
using colony::priority_free_band;
using colony::priority_mid_band;
using colony::priority_none_value_default;
using colony::priority_prod_band;
using colony::to_string;  // again: a using-declaration names the overloads seen so far

// GetPodPriorityClassRaw: the koordinator.sh/priority-class label if present (an unknown name
// gives none; it does not fall back to spec.priority), else the band of spec.priority.
[[nodiscard]] priority_class get_pod_priority_class_raw(const pod_spec& pod) noexcept;

// GetPodPriorityClassWithDefault: raw class, else derived from the QoS with default.
[[nodiscard]] priority_class get_pod_priority_class_with_default(const pod_spec& pod) noexcept;

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
