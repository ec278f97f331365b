// Koordinator's priority classes (apis/extension/priority.go PriorityClass), the bands of
// spec.priority that define them, the name <-> class mapping and the class-from-QoS rule of
// priority_utils.go, defined once for every module (admission, koordlet, scheduler,
// slo-controller). Deriving a pod's class (GetPodPriorityClassRaw / WithDefault) reads each
// module's own pod struct and stays there, built from these functions.
//
// Numbering matches colony.wire::PriorityClass in messages/colony.fbs (tests/messages checks
// it), so a wire value converts with a static_cast. Pure constexpr; no state.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string_view>

#include "messages/qos.hpp"

namespace colony {

// Values of label koordinator.sh/priority-class. none = "" (no class).
enum class priority_class : std::uint8_t { none = 0, prod = 1, mid = 2, batch = 3, free = 4 };

// KnownPriorityClasses less PriorityNone, in wire order.
inline constexpr std::array<priority_class, 4> known_priority_classes = {
    priority_class::prod, priority_class::mid, priority_class::batch, priority_class::free};

// "koord-prod", "koord-mid", "koord-batch", "koord-free"; none is "".
[[nodiscard]] constexpr std::string_view to_string(priority_class p) noexcept {
  switch (p) {
    case priority_class::prod:
      return "koord-prod";
    case priority_class::mid:
      return "koord-mid";
    case priority_class::batch:
      return "koord-batch";
    case priority_class::free:
      return "koord-free";
    case priority_class::none:
      break;
  }
  return "";
}

// GetPodPriorityClassByName: one of the four names, else (including "") none.
[[nodiscard]] constexpr priority_class get_pod_priority_class_by_name(
    std::string_view name) noexcept {
  for (priority_class p : known_priority_classes)
    if (to_string(p) == name) return p;
  return priority_class::none;
}

// Inclusive bands of spec.priority (PriorityProdValueMax/Min, ...: package variables in Go,
// fixed here) and the value GetDefaultPriorityByPriorityClass gives each class.
struct priority_band {
  std::int32_t min;
  std::int32_t max;
  std::int32_t default_value;
};
inline constexpr priority_band priority_prod_band{9000, 9999, 9500};
inline constexpr priority_band priority_mid_band{7000, 7999, 7500};
inline constexpr priority_band priority_batch_band{5000, 5999, 5500};
inline constexpr priority_band priority_free_band{3000, 3999, 3500};
// PriorityNoneValueDefault: the value of no class, and a spec.priority that counts as unset.
inline constexpr std::int32_t priority_none_value_default = 0;

// Go's names for the band limits.
inline constexpr std::int32_t priority_prod_value_max = priority_prod_band.max;
inline constexpr std::int32_t priority_prod_value_min = priority_prod_band.min;
inline constexpr std::int32_t priority_mid_value_max = priority_mid_band.max;
inline constexpr std::int32_t priority_mid_value_min = priority_mid_band.min;
inline constexpr std::int32_t priority_batch_value_max = priority_batch_band.max;
inline constexpr std::int32_t priority_batch_value_min = priority_batch_band.min;
inline constexpr std::int32_t priority_free_value_max = priority_free_band.max;
inline constexpr std::int32_t priority_free_value_min = priority_free_band.min;

// DefaultPriorityClass: what an out-of-band priority or an unknown QoS maps to.
inline constexpr priority_class default_priority_class = priority_class::none;

// getPriorityClassByPriority: the band containing the value; none when absent or outside
// every band.
[[nodiscard]] constexpr priority_class get_priority_class_by_priority(
    std::optional<std::int32_t> priority) noexcept {
  if (!priority) return priority_class::none;
  const std::int32_t p = *priority;
  auto in = [p](const priority_band& b) { return p >= b.min && p <= b.max; };
  if (in(priority_prod_band)) return priority_class::prod;
  if (in(priority_mid_band)) return priority_class::mid;
  if (in(priority_batch_band)) return priority_class::batch;
  if (in(priority_free_band)) return priority_class::free;
  return default_priority_class;
}

// GetDefaultPriorityByPriorityClass: 9500 / 7500 / 5500 / 3500, none 0.
[[nodiscard]] constexpr std::int32_t get_default_priority_by_priority_class(
    priority_class p) noexcept {
  switch (p) {
    case priority_class::prod:
      return priority_prod_band.default_value;
    case priority_class::mid:
      return priority_mid_band.default_value;
    case priority_class::batch:
      return priority_batch_band.default_value;
    case priority_class::free:
      return priority_free_band.default_value;
    case priority_class::none:
      break;
  }
  return priority_none_value_default;
}

// GetPodPriorityClassWithQoS: SYSTEM/LSE/LSR/LS -> prod, BE -> batch, none -> none.
[[nodiscard]] constexpr priority_class get_pod_priority_class_with_qos(qos_class q) noexcept {
  switch (q) {
    case qos_class::system:
    case qos_class::lse:
    case qos_class::lsr:
    case qos_class::ls:
      return priority_class::prod;
    case qos_class::be:
      return priority_class::batch;
    case qos_class::none:
      break;
  }
  return default_priority_class;
}

}  // namespace colony
