// Koordinator QoS classes and their derivation for a pod (apis/extension/qos.go, qos_utils.go),
// plus Kubernetes' own pod QoS class (k8s.io/kubectl/pkg/util/qos GetPodQOS) used as fallback.
//
// Raw = the koordinator.sh/qosClass label only (what the validating webhook, koordlet victim
// filters and runtime hooks read). With default = Raw, else mapped from the Kubernetes class.
// Pure functions; no state.
#pragma once

#include <cstdint>
#include <string_view>

#include "actors/admission/pod_spec.hpp"
#include "messages/qos.hpp"

namespace colony::admission {

// The QoS classes, their names, QoSClassForGuaranteed, the Kubernetes QoS names and
// GetPodQoSClassWithKubeQoS live in messages/qos.hpp (one definition for every module); named
// here so admission code reads them unqualified.
using colony::get_pod_qos_class_by_name;
using colony::get_pod_qos_class_with_kube_qos;
using colony::qos_class;
using colony::qos_class_for_guaranteed;
using colony::to_string;

// GetQoSClassByAttrs: the label value if it is one of the five names, else none.
[[nodiscard]] qos_class get_qos_class_by_attrs(const string_map& labels) noexcept;

// GetPodQoSClassRaw.
[[nodiscard]] qos_class get_pod_qos_class_raw(const pod_spec& pod) noexcept;

// k8s qos.GetPodQOS over requests/limits of cpu and memory (containers and init containers):
// BestEffort when no container requests or limits cpu/memory; Guaranteed when every container
// has both cpu and memory limits and the summed requests equal the summed limits for every
// requested resource; otherwise Burstable. Zero quantities count as absent, as in Kubernetes.
[[nodiscard]] kube_qos_class compute_kube_qos_class(const pod_spec& pod) noexcept;

// GetKubeQosClass: status.qosClass if set, otherwise computed.
[[nodiscard]] kube_qos_class get_kube_qos_class(const pod_spec& pod) noexcept;

// GetPodQoSClassWithDefault.
[[nodiscard]] qos_class get_pod_qos_class_with_default(const pod_spec& pod) noexcept;

}  // namespace colony::admission
