#include "actors/scheduler/node_numa_resource.hpp"

#include "actors/scheduler/resource_amplification.hpp"

namespace colony::scheduler {

namespace {

bool all_zero(const resource_list& r) noexcept {
  resource_list z = r;
  z.pods = 0;  // PodRequests has no pod count
  return z == resource_list{};
}

// util.go requestCPUBind: the pod asked for a cpuset in PreFilter, or the node's cpu-bind
// policy binds every whole-CPU request (a fractional one is refused there).
result<bool> request_cpu_bind(const numa_pre_filter_state& s, numa::node_cpu_bind_policy node) {
  if (s.request_cpu_bind) return true;
  if (s.requested_milli_cpu == 0) return false;
  if (node != numa::node_cpu_bind_policy::none) {
    if (s.requested_milli_cpu % 1000 != 0)
      return fail(errc::failed_precondition, std::string(numa::err_invalid_requested_cpus));
    return true;
  }
  return false;
}

std::int64_t least_requested(std::int64_t requested, std::int64_t capacity) noexcept {
  if (capacity == 0 || requested > capacity) return 0;
  return (capacity - requested) * max_node_score / capacity;
}

std::int64_t most_requested(std::int64_t requested, std::int64_t capacity) noexcept {
  if (capacity == 0) return 0;
  if (requested > capacity) requested = capacity;
  return requested * max_node_score / capacity;
}

// The cpu the node's cpuset pods hold (1000 per CPU).
std::int64_t allocated_cpuset_milli(const node_info& node) {
  const auto* topo = node.numa.topology();
  if (topo == nullptr) return 0;
  int n = 0;
  for (const auto& c : node.numa.allocation.allocated())
    if (c.ref_count > 0) ++n;
  return static_cast<std::int64_t>(n) * 1000;
}

}  // namespace

result<numa_pre_filter_state> numa_pre_filter(const pod_info& pod,
                                              numa::cpu_bind_policy default_policy) {
  if (!pod.numa_spec_error.empty()) return fail(errc::invalid_input, pod.numa_spec_error, pod.key);
  numa_pre_filter_state s;
  if (all_zero(pod.requests)) return s;  // skip
  s.skip = false;
  s.requested_milli_cpu = pod.requests.cpu_milli;
  s.num_cpus_needed = static_cast<int>(pod.requests.cpu_milli / 1000);
  s.pod_numa_topology_policy = pod.numa_spec.topology_policy;
  if (numa::allow_use_cpuset(pod.qos_label, pod.priority_class_with_default())) {
    auto b =
        numa::resolve_pod_cpu_bind(pod.cpu_resource_spec, pod.requests.cpu_milli, default_policy);
    if (!b) return tl::unexpected(b.error());
    if (b->request_cpu_bind) {
      s.request_cpu_bind = true;
      s.required_cpu_bind_policy = b->required_cpu_bind_policy;
      s.preferred_cpu_bind_policy = b->preferred_cpu_bind_policy;
      s.preferred_cpu_exclusive_policy = b->preferred_cpu_exclusive_policy;
    }
  }
  return s;
}

std::int64_t numa_resource_allocation_score(scoring_strategy_type type,
                                            std::span<const resource_spec> resources,
                                            const resource_list& requested,
                                            const resource_list& allocatable,
                                            const resource_list& pod_requests) noexcept {
  std::int64_t score = 0, weights = 0;
  for (const auto& r : resources) {
    const std::int64_t pod = get(pod_requests, r.name);
    if (pod == 0 && is_scalar(r.name)) continue;
    const std::int64_t alloc = get(allocatable, r.name);
    if (alloc == 0) continue;
    const std::int64_t req = get(requested, r.name) + pod;
    score += (type == scoring_strategy_type::most_allocated ? most_requested(req, alloc)
                                                            : least_requested(req, alloc)) *
             r.weight;
    weights += r.weight;
  }
  return weights == 0 ? 0 : score / weights;
}

status node_numa_resource::pre_filter(cycle_state& st, const pod_info& pod,
                                      std::span<const node_info>, event_time) {
  auto& s = st.slot<numa_pre_filter_state>(slot());
  auto r = numa_pre_filter(pod, args_.default_cpu_bind_policy);
  if (!r) {
    s = numa_pre_filter_state{};
    if (r.error().code == errc::failed_precondition)
      return status::unresolvable(numa::err_invalid_requested_cpus);
    return status::fail(r.error().describe());
  }
  s = *r;
  return {};
}

status node_numa_resource::filter(cycle_state& st, const pod_info& pod, const node_info& node,
                                  event_time) {
  const auto* s = st.find<numa_pre_filter_state>(slot());
  if (s == nullptr) return status::fail("NodeNUMAResource: no PreFilter state");
  return filter_with(*s, pod, node);
}

status node_numa_resource::filter_with(const numa_pre_filter_state& s, const pod_info& pod,
                                       const node_info& node) const {
  (void)pod;
  if (s.skip) return {};
  const auto& nn = node.numa;
  if (!nn.topology_policy_error.empty())
    return status::unresolvable(err_invalid_numa_topology_policy_label, nn.topology_policy_error);
  auto merged = numa::merge_topology_policy(nn.topology_policy, s.pod_numa_topology_policy);
  if (!merged) return status::unresolvable(numa::err_not_match_numa_topology);
  auto bind = request_cpu_bind(s, nn.cpu_bind_policy);
  if (!bind) return status::unresolvable(numa::err_invalid_requested_cpus);
  if (!fits_amplified_cpus(s.requested_milli_cpu, *bind, nn.cpu_amplification_ratio,
                           node.allocatable.cpu_milli, node.requested.cpu_milli,
                           nn.cpu_amplification_ratio > 1 ? allocated_cpuset_milli(node) : 0))
    return status::unschedulable(err_insufficient_amplified_cpu);
  if (*bind) {
    const auto* topo = nn.topology();
    if (topo == nullptr || !topo->is_valid()) return status::unresolvable(err_invalid_cpu_topology);
    auto required = s.required_cpu_bind_policy;
    if (nn.cpu_bind_policy == numa::node_cpu_bind_policy::full_pcpus_only)
      required = numa::cpu_bind_policy::full_pcpus;
    else if (nn.cpu_bind_policy == numa::node_cpu_bind_policy::spread_by_pcpus)
      required = numa::cpu_bind_policy::spread_by_pcpus;
    if (s.required_cpu_bind_policy != numa::cpu_bind_policy::unset &&
        s.required_cpu_bind_policy != required)
      return status::unresolvable(err_cpu_bind_policy_conflict);
    if (required == numa::cpu_bind_policy::full_pcpus &&
        s.num_cpus_needed % topo->cpus_per_core() != 0)
      return status::unresolvable(err_smt_alignment);
    if (required != numa::cpu_bind_policy::unset && *merged == numa::numa_topology_policy::none) {
      auto a = allocate(s, node);
      if (!a) return status::unschedulable(numa::err_not_enough_cpus, a.error().message);
      return {};
    }
  }
  if (*merged != numa::numa_topology_policy::none)
    return status::unresolvable(err_numa_topology_policy_unsupported);
  return {};
}

result<numa::cpu_set> node_numa_resource::allocate(const numa_pre_filter_state& s,
                                                   const node_info& node) const {
  const auto& nn = node.numa;
  auto bind = request_cpu_bind(s, nn.cpu_bind_policy);
  if (!bind) return tl::unexpected(bind.error());
  if (!*bind) return numa::cpu_set{};
  const auto* topo = nn.topology();
  if (topo == nullptr || !topo->is_valid())
    return fail(errc::failed_precondition, std::string(err_invalid_cpu_topology), node.name);
  const auto* kubelet = nn.options->policy ? &*nn.options->policy : nullptr;
  const auto policy = numa::get_cpu_bind_policy(nn.labels, kubelet, s.required_cpu_bind_policy,
                                                s.preferred_cpu_bind_policy);
  auto strategy = numa::get_numa_allocate_strategy(
      nn.labels, args_.numa_scoring_strategy == scoring_strategy_type::most_allocated);
  if (!strategy) return tl::unexpected(strategy.error());
  numa::cpuset_request req;
  req.num_cpus_needed = s.num_cpus_needed;
  req.policy.bind = policy.policy;
  req.policy.exclusive = s.preferred_cpu_exclusive_policy;
  req.policy.numa_strategy = *strategy;
  req.policy.max_ref_count = nn.options->max_ref_count;
  req.required = policy.required;
  const auto avail =
      nn.allocation.available_cpus(*topo, nn.options->max_ref_count, nn.options->reserved_cpus);
  return numa::allocate_cpuset(*topo, avail.cpus, avail.allocated, req);
}

std::int64_t node_numa_resource::score(cycle_state& st, const pod_info& pod, const node_info& node,
                                       event_time) {
  const auto* s = st.find<numa_pre_filter_state>(slot());
  return s == nullptr ? 0 : score_with(*s, pod, node);
}

std::int64_t node_numa_resource::score_with(const numa_pre_filter_state& s, const pod_info& pod,
                                            const node_info& node) const {
  if (s.skip) return 0;
  const auto& nn = node.numa;
  auto bind = request_cpu_bind(s, nn.cpu_bind_policy);
  if (!bind) return 0;
  if (*bind && (nn.topology() == nullptr || !nn.topology()->is_valid())) return 0;
  // scoreWithAmplifiedCPUs (policy None; other policies are refused at Filter).
  const double ratio = nn.cpu_amplification_ratio;
  resource_list pod_requests = pod.requests;
  if (*bind && ratio > 1) pod_requests.cpu_milli = amplify(pod_requests.cpu_milli, ratio);
  if (s.requested_milli_cpu == 0 || ratio <= 1)
    return numa_resource_allocation_score(args_.scoring_strategy, args_.scoring_resources,
                                          node.requested, node.allocatable, pod_requests);
  resource_list requested = node.requested;
  const std::int64_t held = allocated_cpuset_milli(node);
  requested.cpu_milli += amplify(held, ratio) - held;
  return numa_resource_allocation_score(args_.scoring_strategy, args_.scoring_resources, requested,
                                        node.allocatable, pod_requests);
}

status node_numa_resource::reserve(cycle_state& st, const pod_info&, const node_info& node,
                                   event_time) {
  const auto* s = st.find<numa_pre_filter_state>(slot());
  if (s == nullptr) return status::fail("NodeNUMAResource: no PreFilter state");
  if (s->skip) return {};
  auto a = allocate(*s, node);
  if (!a) {
    if (a.error().message == err_invalid_cpu_topology)
      return status::fail(std::string(err_invalid_cpu_topology));
    return status::unschedulable(numa::err_not_enough_cpus, a.error().message);
  }
  st.cpuset = std::move(*a);
  return {};
}

}  // namespace colony::scheduler
