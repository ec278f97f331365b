// Koordinator priority classes, QoS classes and the translation of cpu/memory into the
// co-location resource names (batch-*, mid-*), as the scheduler plugins read them.
//
// Pure functions over plain values; no state, thread-safe.
// Koordinator: apis/extension/{priority.go, priority_utils.go, qos_utils.go, resource.go}.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace colony::scheduler {

// apis/extension/priority.go PriorityClass. none = "" (no class).
enum class priority_class : std::uint8_t { none, prod, mid, batch, free };

// apis/extension/qos.go QoSClass. none = label absent.
enum class qos_class : std::uint8_t { none, system, lse, lsr, ls, be };

// Kubernetes pod QoS (v1.PodQOSClass), used when the Koordinator QoS label is absent.
enum class kube_qos : std::uint8_t { guaranteed, burstable, best_effort };

[[nodiscard]] constexpr std::string_view to_string(priority_class c) noexcept {
  switch (c) {
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

[[nodiscard]] constexpr std::optional<priority_class> parse_priority_class(
    std::string_view s) noexcept {
  if (s == "koord-prod") return priority_class::prod;
  if (s == "koord-mid") return priority_class::mid;
  if (s == "koord-batch") return priority_class::batch;
  if (s == "koord-free") return priority_class::free;
  if (s.empty()) return priority_class::none;
  return std::nullopt;
}

// Priority value ranges (priority.go): prod 9000-9999, mid 7000-7999, batch 5000-5999,
// free 3000-3999; anything else is no class.
inline constexpr std::int32_t priority_prod_value_max = 9999;
inline constexpr std::int32_t priority_prod_value_min = 9000;
inline constexpr std::int32_t priority_mid_value_max = 7999;
inline constexpr std::int32_t priority_mid_value_min = 7000;
inline constexpr std::int32_t priority_batch_value_max = 5999;
inline constexpr std::int32_t priority_batch_value_min = 5000;
inline constexpr std::int32_t priority_free_value_max = 3999;
inline constexpr std::int32_t priority_free_value_min = 3000;

[[nodiscard]] constexpr priority_class priority_class_by_value(std::int32_t p) noexcept {
  if (p >= priority_prod_value_min && p <= priority_prod_value_max) return priority_class::prod;
  if (p >= priority_mid_value_min && p <= priority_mid_value_max) return priority_class::mid;
  if (p >= priority_batch_value_min && p <= priority_batch_value_max) return priority_class::batch;
  if (p >= priority_free_value_min && p <= priority_free_value_max) return priority_class::free;
  return priority_class::none;
}

// GetPodPriorityClassRaw: the label wins, else spec.priority.
[[nodiscard]] constexpr priority_class priority_class_raw(priority_class label,
                                                          std::int32_t priority) noexcept {
  return label != priority_class::none ? label : priority_class_by_value(priority);
}

// GetPodQoSClassWithDefault: the Koordinator label, else Guaranteed -> LSR, Burstable -> LS,
// BestEffort -> BE.
[[nodiscard]] constexpr qos_class qos_with_default(qos_class label, kube_qos k) noexcept {
  if (label != qos_class::none) return label;
  switch (k) {
    case kube_qos::guaranteed:
      return qos_class::lsr;
    case kube_qos::burstable:
      return qos_class::ls;
    case kube_qos::best_effort:
      return qos_class::be;
  }
  return qos_class::none;
}

// GetPodPriorityClassWithDefault: raw class, else from QoS (SYSTEM/LSE/LSR/LS -> prod,
// BE -> batch). So a pod with requests and no priority is prod; one without requests is batch.
[[nodiscard]] constexpr priority_class priority_class_with_default(priority_class label,
                                                                   std::int32_t priority,
                                                                   qos_class qos_label,
                                                                   kube_qos k) noexcept {
  auto raw = priority_class_raw(label, priority);
  if (raw != priority_class::none) return raw;
  switch (qos_with_default(qos_label, k)) {
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
  return priority_class::none;
}

}  // namespace colony::scheduler
