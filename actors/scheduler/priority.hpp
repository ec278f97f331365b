// Koordinator priority and QoS classes as the scheduler plugins read them: the classes, names
// and bands come from messages/priority.hpp, messages/qos.hpp; here is the derivation over the
// scheduler's plain values (label, spec.priority, Kubernetes QoS).
//
// Pure functions over plain values; no state, thread-safe.
// Koordinator: apis/extension/{priority.go, priority_utils.go, qos_utils.go}.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "messages/priority.hpp"
#include "messages/qos.hpp"

namespace colony::scheduler {

// PriorityClass, QoSClass, their names and the spec.priority bands (PriorityProdValueMax, ...):
// one definition in messages/priority.hpp, messages/qos.hpp, named here.
using colony::get_pod_priority_class_with_qos;
using colony::get_pod_qos_class_with_kube_qos;
using colony::get_priority_class_by_priority;
using colony::priority_batch_value_max;
using colony::priority_batch_value_min;
using colony::priority_class;
using colony::priority_free_value_max;
using colony::priority_free_value_min;
using colony::priority_mid_value_max;
using colony::priority_mid_value_min;
using colony::priority_prod_value_max;
using colony::priority_prod_value_min;
using colony::qos_class;
using colony::to_string;

// Kubernetes pod QoS (v1.PodQOSClass), used when the Koordinator QoS label is absent: one
// definition in messages/qos.hpp. The scheduler never holds unset (pod_info keeps an optional
// and computes GetPodQOS when it is absent).
using kube_qos = colony::kube_qos_class;

// GetPodPriorityClassRaw: the label wins, else spec.priority.
[[nodiscard]] constexpr priority_class priority_class_raw(priority_class label,
                                                          std::int32_t priority) noexcept {
  return label != priority_class::none ? label : get_priority_class_by_priority(priority);
}

// GetPodQoSClassWithDefault: the Koordinator label, else GetPodQoSClassWithKubeQoS
// (Guaranteed -> LSR, Burstable -> LS, BestEffort -> BE).
[[nodiscard]] constexpr qos_class qos_with_default(qos_class label, kube_qos k) noexcept {
  return label != qos_class::none ? label : get_pod_qos_class_with_kube_qos(k);
}

// GetPodPriorityClassWithDefault: raw class, else from QoS (SYSTEM/LSE/LSR/LS -> prod,
// BE -> batch). So a pod with requests and no priority is prod; one without requests is batch.
[[nodiscard]] constexpr priority_class priority_class_with_default(priority_class label,
                                                                   std::int32_t priority,
                                                                   qos_class qos_label,
                                                                   kube_qos k) noexcept {
  auto raw = priority_class_raw(label, priority);
  if (raw != priority_class::none) return raw;
  return get_pod_priority_class_with_qos(qos_with_default(qos_label, k));
}

}  // namespace colony::scheduler
