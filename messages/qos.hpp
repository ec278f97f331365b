// Koordinator's QoS classes (apis/extension/qos.go QoSClass), their label values, the
// name <-> class mapping and the Kubernetes-QoS fallback (qos_utils.go
// GetPodQoSClassWithKubeQoS), defined once for every module (admission, koordlet, scheduler,
// slo-controller). Deriving a pod's class (GetPodQoSClassRaw / WithDefault) reads each module's
// own pod struct and stays there.
//
// Numbering matches colony.wire::QoSClass in messages/colony.fbs (tests/messages checks it), so
// a wire value converts with a static_cast. Pure constexpr; no state.
#pragma once

#include <array>
#include <cstdint>
#include <string_view>

namespace colony {

// Values of label koordinator.sh/qosClass. none = "" (label absent or not one of the names).
enum class qos_class : std::uint8_t { none = 0, system = 1, lse = 2, lsr = 3, ls = 4, be = 5 };

// The five named classes, in wire order (none excluded).
inline constexpr std::array<qos_class, 5> known_qos_classes = {
    qos_class::system, qos_class::lse, qos_class::lsr, qos_class::ls, qos_class::be};

// "SYSTEM", "LSE", "LSR", "LS", "BE"; none is "".
[[nodiscard]] constexpr std::string_view to_string(qos_class q) noexcept {
  switch (q) {
    case qos_class::system:
      return "SYSTEM";
    case qos_class::lse:
      return "LSE";
    case qos_class::lsr:
      return "LSR";
    case qos_class::ls:
      return "LS";
    case qos_class::be:
      return "BE";
    case qos_class::none:
      break;
  }
  return "";
}

// GetPodQoSClassByName: a known name (case-sensitive) gives its class, anything else
// (including "") none.
[[nodiscard]] constexpr qos_class get_pod_qos_class_by_name(std::string_view name) noexcept {
  for (qos_class q : known_qos_classes)
    if (to_string(q) == name) return q;
  return qos_class::none;
}

// QoSClassForGuaranteed: a Guaranteed pod without a Koordinator QoS counts as LSR, not LS.
inline constexpr qos_class qos_class_for_guaranteed = qos_class::lsr;

// Kubernetes pod QoS class (corev1.PodQOSClass, pod.status.qosClass), the fallback of
// GetPodQoSClassWithDefault. unset = "" (not set; each module computes it by GetPodQOS over
// the pod view it holds). Numbering matches colony.wire::KubeQoSClass.
enum class kube_qos_class : std::uint8_t {
  unset = 0,
  guaranteed = 1,
  burstable = 2,
  best_effort = 3
};

// "Guaranteed", "Burstable", "BestEffort"; unset is "".
[[nodiscard]] constexpr std::string_view to_string(kube_qos_class q) noexcept {
  switch (q) {
    case kube_qos_class::guaranteed:
      return "Guaranteed";
    case kube_qos_class::burstable:
      return "Burstable";
    case kube_qos_class::best_effort:
      return "BestEffort";
    case kube_qos_class::unset:
      break;
  }
  return "";
}

// GetPodQoSClassWithKubeQoS: Guaranteed -> LSR (QoSClassForGuaranteed), Burstable -> LS,
// BestEffort -> BE, unset -> none.
[[nodiscard]] constexpr qos_class get_pod_qos_class_with_kube_qos(kube_qos_class q) noexcept {
  switch (q) {
    case kube_qos_class::guaranteed:
      return qos_class_for_guaranteed;
    case kube_qos_class::burstable:
      return qos_class::ls;
    case kube_qos_class::best_effort:
      return qos_class::be;
    case kube_qos_class::unset:
      break;
  }
  return qos_class::none;
}

}  // namespace colony
