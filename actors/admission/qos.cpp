#include "actors/admission/qos.hpp"

#include "messages/names.hpp"

namespace colony::admission {

qos_class get_qos_class_by_attrs(const string_map& labels) noexcept {
  if (const std::string* v = find_value(labels, names::label_qos_class))
    return get_pod_qos_class_by_name(*v);
  return qos_class::none;
}

qos_class get_pod_qos_class_raw(const pod_spec& pod) noexcept {
  return get_qos_class_by_attrs(pod.labels);
}

kube_qos_class compute_kube_qos_class(const pod_spec& pod) noexcept {
  // Sums of the positive cpu/memory quantities, and whether each was seen at all
  // (Kubernetes keys its maps by resource name; a positive sum means "present").
  std::int64_t req_cpu = 0, req_mem = 0, lim_cpu = 0, lim_mem = 0;
  bool guaranteed = true;
  auto visit = [&](const container_spec& c) {
    if (c.requests.cpu_milli > 0) req_cpu += c.requests.cpu_milli;
    if (c.requests.memory_bytes > 0) req_mem += c.requests.memory_bytes;
    const bool has_cpu_limit = c.limits.cpu_milli > 0;
    const bool has_mem_limit = c.limits.memory_bytes > 0;
    if (has_cpu_limit) lim_cpu += c.limits.cpu_milli;
    if (has_mem_limit) lim_mem += c.limits.memory_bytes;
    if (!has_cpu_limit || !has_mem_limit) guaranteed = false;
  };
  // GetPodQOS walks containers then init containers; order does not matter for sums.
  for (const auto& c : pod.containers) visit(c);
  for (const auto& c : pod.init_containers) visit(c);

  const int n_requests = (req_cpu > 0) + (req_mem > 0);
  const int n_limits = (lim_cpu > 0) + (lim_mem > 0);
  if (n_requests == 0 && n_limits == 0) return kube_qos_class::best_effort;
  if (guaranteed) {
    // Every requested resource needs an equal limit.
    if (req_cpu > 0 && (lim_cpu <= 0 || lim_cpu != req_cpu)) guaranteed = false;
    if (req_mem > 0 && (lim_mem <= 0 || lim_mem != req_mem)) guaranteed = false;
  }
  if (guaranteed && n_requests == n_limits) return kube_qos_class::guaranteed;
  return kube_qos_class::burstable;
}

kube_qos_class get_kube_qos_class(const pod_spec& pod) noexcept {
  if (pod.status_qos_class != kube_qos_class::unset) return pod.status_qos_class;
  return compute_kube_qos_class(pod);
}

qos_class get_pod_qos_class_with_default(const pod_spec& pod) noexcept {
  const qos_class raw = get_pod_qos_class_raw(pod);
  if (raw != qos_class::none) return raw;
  return get_pod_qos_class_with_kube_qos(get_kube_qos_class(pod));
}

}  // namespace colony::admission
