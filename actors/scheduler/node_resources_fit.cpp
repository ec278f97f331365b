// node_resources_fit.hpp
#include "actors/scheduler/node_resources_fit.hpp"

namespace colony::scheduler {

namespace {
constexpr std::string_view too_many_pods = "Too many pods";

constexpr bool gpu_family(resource_name r) noexcept {
  return r == resource_name::gpu || r == resource_name::gpu_core ||
         r == resource_name::gpu_memory || r == resource_name::gpu_memory_ratio;
}
}  // namespace

node_resources_fit_args node_resources_fit_args::koordinator_profile() {
  node_resources_fit_args a;
  a.resources = {{resource_name::cpu, 1},
                 {resource_name::memory, 1},
                 {resource_name::batch_cpu, 1},
                 {resource_name::batch_memory, 1}};
  return a;
}

result<void> validate(const node_resources_fit_args& a, const std::string& path) {
  // k8s validation.go validateResources: weight in [1, 100], no duplicate names.
  std::array<bool, resource_name_count> seen{};
  for (std::size_t i = 0; i < a.resources.size(); ++i) {
    const auto& r = a.resources[i];
    auto where = path + ".scoringStrategy.resources[" + std::to_string(i) + "]";
    if (r.weight <= 0 || r.weight > 100)
      return fail(errc::invalid_input,
                  "resource weight of " + std::string(to_string(r.name)) +
                      " should be in range [1, 100], got " + std::to_string(r.weight),
                  where + ".weight");
    if (seen[static_cast<std::size_t>(r.name)])
      return fail(errc::invalid_input, "duplicate resource " + std::string(to_string(r.name)),
                  where + ".name");
    seen[static_cast<std::size_t>(r.name)] = true;
  }
  return {};
}

std::int64_t least_requested_score(std::int64_t requested, std::int64_t capacity) noexcept {
  if (capacity == 0) return 0;
  if (requested > capacity) return 0;
  return (capacity - requested) * max_node_score / capacity;
}

std::int64_t most_requested_score(std::int64_t requested, std::int64_t capacity) noexcept {
  if (capacity == 0) return 0;
  if (requested > capacity) requested = capacity;  // pods without requests get minimum values
  return requested * max_node_score / capacity;
}

node_resources_fit::node_resources_fit(node_resources_fit_args args) : args_(std::move(args)) {
  for (auto r : args_.ignored_resources) ignored_[static_cast<std::size_t>(r)] = true;
  for (std::size_t i = 0; i < resource_name_count; ++i) {
    insufficient_[i] = "Insufficient " + std::string(to_string(static_cast<resource_name>(i)));
    auto r = static_cast<resource_name>(i);
    if (is_scalar(r) && !gpu_family(r) && !ignored_[i]) scalar_checks_.push_back(r);
  }
}

status node_resources_fit::fits_request(const pod_info& pod, const node_info& node) const {
  return fits(pod, node.allocatable, node.requested);
}

status node_resources_fit::fits(const pod_info& pod, const resource_list& allocatable,
                                const resource_list& requested) const {
  // fit.go fitsRequest: pod count first, then cpu, memory, scalar resources in order.
  if (requested.pods + 1 > allocatable.pods) return status::unschedulable(too_many_pods);
  const auto& req = pod.requests;
  if (req.cpu_milli > 0 && req.cpu_milli > allocatable.cpu_milli - requested.cpu_milli)
    return status::unschedulable(insufficient_[static_cast<std::size_t>(resource_name::cpu)]);
  if (req.memory_bytes > 0 && req.memory_bytes > allocatable.memory_bytes - requested.memory_bytes)
    return status::unschedulable(insufficient_[static_cast<std::size_t>(resource_name::memory)]);
  for (auto r : scalar_checks_) {
    const std::int64_t q = get(req, r);
    if (q == 0) continue;
    if (q > get(allocatable, r) - get(requested, r))
      return status::unschedulable(insufficient_[static_cast<std::size_t>(r)]);
  }
  return {};
}

queueing_hint node_resources_fit::filter_hint(const pod_info& pod, const cluster_event& ev) const {
  if (ev.node == nullptr) return queueing_hint::queue;
  return fits_request(pod, *ev.node).ok() ? queueing_hint::queue : queueing_hint::skip;
}

status node_resources_fit::filter(cycle_state& st, const pod_info& pod, const node_info& node,
                                  event_time) {
  // Reservations the pod matched on this node give back what they hold (reservation.hpp).
  if (const resource_list* relief = st.relief_for(node)) {
    resource_list requested = node.requested;
    requested -= *relief;
    return fits(pod, node.allocatable, requested);
  }
  return fits_request(pod, node);
}

std::int64_t node_resources_fit::score_node(const pod_info& pod, const node_info& node) const {
  // resource_allocation.go score(): skip resources with zero allocatable; a scalar resource the
  // pod does not request is skipped (returns 0, 0); cpu/memory use NonZeroRequested.
  std::int64_t node_score = 0, weight_sum = 0;
  for (const auto& spec : args_.resources) {
    std::int64_t alloc = 0, requested = 0;
    switch (spec.name) {
      case resource_name::cpu:
        alloc = node.allocatable.cpu_milli;
        requested =
            node.non_zero_requested.cpu_milli +
            (pod.requests.cpu_milli == 0 ? default_milli_cpu_request : pod.requests.cpu_milli);
        break;
      case resource_name::memory:
        alloc = node.allocatable.memory_bytes;
        requested =
            node.non_zero_requested.memory_bytes +
            (pod.requests.memory_bytes == 0 ? default_memory_request : pod.requests.memory_bytes);
        break;
      case resource_name::pods:
        alloc = node.allocatable.pods;
        requested = node.requested.pods + 1;
        break;
      default: {
        std::int64_t q = get(pod.requests, spec.name);
        if (q == 0) continue;
        alloc = get(node.allocatable, spec.name);
        requested = get(node.requested, spec.name) + q;
      }
    }
    if (alloc == 0) continue;
    std::int64_t s = args_.scoring_strategy == scoring_strategy_type::least_allocated
                         ? least_requested_score(requested, alloc)
                         : most_requested_score(requested, alloc);
    node_score += s * spec.weight;
    weight_sum += spec.weight;
  }
  return weight_sum == 0 ? 0 : node_score / weight_sum;
}

void node_resources_fit::score_nodes(cycle_state&, const pod_info& pod,
                                     std::span<const node_info> nodes,
                                     std::span<const std::uint32_t> indices,
                                     std::span<std::int64_t> out, event_time) {
  // The terms of score_node() that depend only on the pod, in args order: which node list
  // holds the requested amount, what the pod adds, the weight. Same arithmetic per node.
  struct term {
    std::int64_t resource_list::*field;
    const resource_list node_info::*base;
    std::int64_t add;
    std::int64_t weight;
  };
  std::array<term, resource_name_count> terms{};
  std::size_t nt = 0;
  for (const auto& spec : args_.resources) {
    if (nt == terms.size()) break;
    switch (spec.name) {
      case resource_name::cpu:
        terms[nt++] = {
            &resource_list::cpu_milli, &node_info::non_zero_requested,
            pod.requests.cpu_milli == 0 ? default_milli_cpu_request : pod.requests.cpu_milli,
            spec.weight};
        break;
      case resource_name::memory:
        terms[nt++] = {
            &resource_list::memory_bytes, &node_info::non_zero_requested,
            pod.requests.memory_bytes == 0 ? default_memory_request : pod.requests.memory_bytes,
            spec.weight};
        break;
      case resource_name::pods:
        terms[nt++] = {&resource_list::pods, &node_info::requested, 1, spec.weight};
        break;
      default: {
        const std::int64_t q = get(pod.requests, spec.name);
        if (q == 0) continue;
        terms[nt++] = {field_of(spec.name), &node_info::requested, q, spec.weight};
      }
    }
  }
  const bool least = args_.scoring_strategy == scoring_strategy_type::least_allocated;
  for (std::size_t j = 0; j < indices.size(); ++j) {
    const node_info& node = nodes[indices[j]];
    std::int64_t node_score = 0, weight_sum = 0;
    for (std::size_t t = 0; t < nt; ++t) {
      const term& tm = terms[t];
      const std::int64_t alloc = node.allocatable.*tm.field;
      if (alloc == 0) continue;
      const std::int64_t requested = (node.*tm.base).*tm.field + tm.add;
      const std::int64_t sc =
          least ? least_requested_score(requested, alloc) : most_requested_score(requested, alloc);
      node_score += sc * tm.weight;
      weight_sum += tm.weight;
    }
    out[j] = weight_sum == 0 ? 0 : node_score / weight_sum;
  }
}

std::int64_t node_resources_fit::score(cycle_state&, const pod_info& pod, const node_info& node,
                                       event_time) {
  return score_node(pod, node);
}

}  // namespace colony::scheduler
