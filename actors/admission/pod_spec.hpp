// pod_spec: the plain-struct pod that admission policies read and mutate.
//
// Only the parts of a Kubernetes Pod that Koordinator's admission logic touches: metadata
// (namespace, name, uid, labels, annotations), spec.priority / priorityClassName /
// preemptionPolicy / schedulerName, per-container resources (init and regular containers,
// since request-from-limit defaulting and the extended-resource-spec annotation are per
// container), spec.overhead and status.qosClass.
//
// Resources use colony::resource_list, where an absent resource is 0. Kubernetes tells an
// absent quantity from an explicit "0"; Colony does not, so an explicit zero quantity is
// treated as absent everywhere in this module (the only visible effect: a container with an
// explicit `cpu: 0` request and a batch-cpu limit gets the limit as request, where Koordinator
// would keep 0).
//
// Rounding: CPU quantities must reach Colony as Kubernetes' Quantity.MilliValue() (which rounds
// up: "0.1m" is 1), memory as Value() (bytes, rounded up). The batch translation then keeps
// the milli value exactly (Koordinator's NewQuantity(q.MilliValue())), so no further rounding
// happens in this module.
//
// A caller that only knows pod-level totals (the PodSubmitted event) can build one container
// from them; per-container translation then equals Koordinator's except that a container
// with a limit but no request is only defaulted when the whole pod has no request.
//
// Plain value types: no ownership tricks, no thread-safety concerns.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "messages/qos.hpp"
#include "messages/resources.hpp"

namespace colony::admission {

// Labels and annotations. Ordered, so every iteration (and every emitted event) is
// deterministic, unlike Go's maps.
using string_map = std::map<std::string, std::string, std::less<>>;

// Kubernetes pod QoS class (pod.status.qosClass, k8s.io/api/core/v1 PodQOSClass): one
// definition in messages/qos.hpp.
using colony::kube_qos_class;

// Kubernetes pod phase (status.phase); the background profile controller only touches Pending pods.
enum class pod_phase : std::uint8_t {
  pending = 0,
  running = 1,
  succeeded = 2,
  failed = 3,
  unknown = 4
};

struct container_spec {
  std::string name;
  resource_list requests;
  resource_list limits;

  bool operator==(const container_spec&) const = default;
};

struct pod_spec {
  std::string pod_namespace;  // metadata.namespace
  std::string name;           // metadata.name
  std::string uid;            // metadata.uid; keys the probability draw when set
  string_map labels;
  string_map annotations;

  std::optional<std::int32_t> priority;  // spec.priority; nullopt = not set
  std::string priority_class_name;       // spec.priorityClassName
  std::string preemption_policy;         // spec.preemptionPolicy; empty = not set
  std::string scheduler_name;            // spec.schedulerName

  std::vector<container_spec> init_containers;
  std::vector<container_spec> containers;
  std::optional<resource_list> overhead;  // spec.overhead; nullopt = not set

  std::string node_name;  // spec.nodeName; empty = not bound yet

  kube_qos_class status_qos_class = kube_qos_class::unset;  // status.qosClass
  pod_phase phase = pod_phase::pending;                     // status.phase

  bool operator==(const pod_spec&) const = default;
};

// Kubernetes' pod request (k8s.io/component-helpers resource.PodRequests, as Koordinator's
// util.GetPodRequest uses it): the sum over containers, then the per-resource max with every
// init container, plus spec.overhead.
[[nodiscard]] resource_list get_pod_request(const pod_spec& pod);

// Kubernetes' pod limits (resource.PodLimits): the sum over containers, the per-resource max
// with every init container, plus spec.overhead only for resources that have a limit.
[[nodiscard]] resource_list get_pod_limits(const pod_spec& pod);

// Value of a label/annotation, or nullptr when absent (absent differs from "").
[[nodiscard]] const std::string* find_value(const string_map& m, std::string_view key);

}  // namespace colony::admission
