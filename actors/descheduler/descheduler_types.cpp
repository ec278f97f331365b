#include "actors/descheduler/descheduler_types.hpp"

namespace colony::descheduler {

std::int64_t amount(const resource_amounts& r, std::string_view name) {
  const auto it = r.find(name);
  return it == r.end() ? 0 : it->second;
}

qos_class effective_qos_class(const pod_info& p) {
  if (p.qos_label != qos_class::none) return p.qos_label;
  return get_pod_qos_class_with_kube_qos(p.kube_qos);
}

priority_class effective_priority_class(const pod_info& p) {
  // GetPodPriorityClassRaw: the label when present, else the band of spec.priority.
  priority_class c = p.has_priority_class_label ? p.priority_class_label
                                                : get_priority_class_by_priority(p.priority);
  if (c != priority_class::none) return c;
  return get_pod_priority_class_with_qos(effective_qos_class(p));
}

}  // namespace colony::descheduler
