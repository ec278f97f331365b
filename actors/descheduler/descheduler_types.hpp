// The descheduler's plain views of nodes, pods and NodeMetrics (what koord-descheduler reads from
// its informers), and the pod classes Koordinator derives from them
// (apis/extension/priority.go GetPodPriorityClassWithDefault, apis/extension/qos.go
// GetPodQoSClassWithDefault). Pure values; no state.
//
// Resource amounts are keyed by Kubernetes resource name (messages/names.hpp: "cpu", "memory",
// "pods", extended names); cpu in millicores, everything else in units (bytes, counts), as
// Koordinator's descheduler compares them (MilliValue for cpu, Value for the rest).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "messages/priority.hpp"
#include "messages/qos.hpp"

namespace colony::descheduler {

using resource_amounts = std::map<std::string, std::int64_t, std::less<>>;
using string_pairs = std::map<std::string, std::string, std::less<>>;

// The amount of `name` in `r` (0 when absent).
[[nodiscard]] std::int64_t amount(const resource_amounts& r, std::string_view name);

// A pod's controller owner reference (metav1.GetControllerOf): kind and name in the pod's
// namespace; empty kind = no controller.
struct owner_ref {
  std::string kind;
  std::string name;
  [[nodiscard]] bool empty() const { return kind.empty(); }
  bool operator==(const owner_ref&) const = default;
};

struct pod_info {
  std::string ns;
  std::string name;
  std::string uid;
  std::string node;  // spec.nodeName; "" while pending
  std::string scheduler_name;
  owner_ref owner;
  std::optional<std::int32_t> priority;                        // spec.priority
  priority_class priority_class_label = priority_class::none;  // koordinator.sh/priority-class
  bool has_priority_class_label = false;
  qos_class qos_label = qos_class::none;  // koordinator.sh/qosClass
  kube_qos_class kube_qos = kube_qos_class::unset;
  string_pairs labels;
  string_pairs annotations;
  resource_amounts requests;
  std::int64_t creation_ms = 0;
  bool mirror = false;         // kubernetes.io/config.mirror annotation
  bool static_pod = false;     // kubernetes.io/config.source != api
  bool local_storage = false;  // hostPath or emptyDir volumes
  bool pvc = false;            // a PersistentVolumeClaim volume
  bool terminating = false;    // deletionTimestamp set
  bool failed = false;         // status.phase Failed
  bool ready = true;           // active and Ready (kubecontroller.IsPodActive && IsPodReady)

  [[nodiscard]] std::string key() const { return ns + "/" + name; }
};

// GetPodPriorityClassWithDefault: the label, else the spec.priority band, else from the QoS.
[[nodiscard]] priority_class effective_priority_class(const pod_info& p);
// GetPodQoSClassWithDefault: the label, else from the Kubernetes QoS.
[[nodiscard]] qos_class effective_qos_class(const pod_info& p);

struct node_info {
  std::string name;
  string_pairs labels;
  // node.koordinator.sh/raw-allocatable when present and parsable, else status.allocatable
  // (GetNodeRawAllocatableFromNode).
  resource_amounts allocatable;
  bool unschedulable = false;
  bool ready = true;
};

struct pod_metric_info {
  std::string ns;
  std::string name;
  resource_amounts usage;
  [[nodiscard]] std::string key() const { return ns + "/" + name; }
};

// A NodeMetric's status as LowNodeLoad reads it.
struct node_metric_info {
  std::optional<std::int64_t> update_time_ms;  // status.updateTime; nullopt = nil
  bool has_node_metric = true;                 // status.nodeMetric != nil
  resource_amounts system_usage;               // status.nodeMetric.systemUsage
  std::vector<pod_metric_info> pods;           // status.podsMetric, in order
};

}  // namespace colony::descheduler
