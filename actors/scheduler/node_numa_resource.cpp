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
  s.requested_memory_bytes = pod.requests.memory_bytes;
  s.pod_numa_topology_policy = pod.numa_spec.topology_policy;
  s.pod_numa_exclusive = pod.numa_spec.single_numa_node_exclusive;
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
                                      std::span<const node_info> nodes, event_time) {
  auto& s = st.slot<numa_pre_filter_state>(slot());
  nodes_base_ = nodes.data();
  nodes_n_ = nodes.size();
  cycle_ = st.cycle + 1;  // never 0, so a fresh slot is never valid
  if (hint_cycle_.size() < nodes.size()) {
    hint_cycle_.resize(nodes.size(), 0);
    hint_.resize(nodes.size());
  }
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
  std::optional<numa::numa_hint> admitted;
  auto r = filter_with(*s, pod, node, &admitted);
  if (r.ok() && admitted && nodes_base_ != nullptr && &node >= nodes_base_ &&
      &node < nodes_base_ + nodes_n_) {
    const auto i = static_cast<std::size_t>(&node - nodes_base_);
    hint_[i] = *admitted;
    hint_cycle_[i] = cycle_;
  }
  return r;
}

const numa::numa_hint* node_numa_resource::cached_hint(const node_info& node) const {
  if (nodes_base_ == nullptr || &node < nodes_base_ || &node >= nodes_base_ + nodes_n_)
    return nullptr;
  const auto i = static_cast<std::size_t>(&node - nodes_base_);
  return hint_cycle_[i] == cycle_ ? &hint_[i] : nullptr;
}

std::string_view node_numa_resource::intern(std::string text) const {
  std::lock_guard lock(interned_mu_);
  return *interned_.insert(std::move(text)).first;
}

status node_numa_resource::filter_with(const numa_pre_filter_state& s, const pod_info& pod,
                                       const node_info& node,
                                       std::optional<numa::numa_hint>* admitted) const {
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
    if (topo == nullptr || !topo->is_valid())
      return status::unresolvable(err_invalid_cpu_topology, nn.topology_problem);
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
      numa_pod_allocation a;
      return allocate_with_hint(s, node, true, std::nullopt, a);
    }
  }
  if (*merged == numa::numa_topology_policy::restricted ||
      *merged == numa::numa_topology_policy::single_numa_node) {
    numa::numa_hint best;
    auto r = admit(s, node, *merged, best);
    if (r.ok() && admitted != nullptr) *admitted = best;
    return r;
  }
  return {};
}

// What one decision on one node reads, computed once however many NUMA node sets it tries:
// the bind policy, the available CPUs, and what each NUMA node has left.
struct node_numa_resource::node_context {
  const node_info& node;
  const numa::node_numa_state& nn;
  const numa::cpu_topology* topo = nullptr;  // valid or nullptr
  numa::bind_decision policy;
  int max_ref = 1;
  std::optional<numa::node_cpu_allocation::available> cpus;  // available_cpus, when bound
  std::vector<numa::numa_amount> avail;                      // NUMA nodes' available (trimmed)
  std::vector<numa::numa_amount> held;                       // what pods hold per NUMA node

  node_context(const numa_pre_filter_state& s, const node_info& n, bool bind)
      : node(n), nn(n.numa) {
    const auto* t = nn.topology();
    if (t != nullptr && t->is_valid()) topo = t;
    const auto* kubelet = nn.options && nn.options->policy ? &*nn.options->policy : nullptr;
    policy = numa::get_cpu_bind_policy(nn.labels, kubelet, s.required_cpu_bind_policy,
                                       s.preferred_cpu_bind_policy);
    max_ref = nn.options ? nn.options->max_ref_count : 1;
    if (bind && topo != nullptr)
      cpus = nn.allocation.available_cpus(*topo, max_ref, nn.options->reserved_cpus);
    if (!nn.numa_allocatable.empty()) {
      // The cpuset CPUs per NUMA node count only under a cpu amplification ratio.
      avail = numa::available_numa_resources(
          nn.numa_allocatable, nn.numa_held,
          nn.cpu_amplification_ratio > 1 ? nn.cpuset_cpus_by_numa_node() : std::vector<int>{},
          nn.cpu_amplification_ratio, &held);
      if (bind && policy.required && cpus) {
        // trimNUMANodeResources: a NUMA node offers no more CPUs than the required bind policy
        // can use there.
        for (auto& a : avail) {
          if (a.cpu_milli == 0) continue;
          const auto usable = numa::filter_cpus_by_required_cpu_bind_policy(
              policy.policy, cpus->cpus.intersection(topo->cpus_in_numa_node(a.node)), *topo);
          a.cpu_milli = std::min<std::int64_t>(a.cpu_milli, std::int64_t{usable.size()} * 1000);
        }
      }
    }
  }
};

status node_numa_resource::allocate_with_hint(const numa_pre_filter_state& s, const node_info& node,
                                              bool bind, const std::optional<std::uint64_t>& hint,
                                              numa_pod_allocation& out) const {
  const node_context ctx(s, node, bind);
  return allocate_in(ctx, s, bind, hint, out);
}

status node_numa_resource::allocate_in(const node_context& ctx, const numa_pre_filter_state& s,
                                       bool bind, const std::optional<std::uint64_t>& hint,
                                       numa_pod_allocation& out) const {
  const auto& nn = ctx.nn;
  if (bind && ctx.topo == nullptr) return status::fail(std::string(err_invalid_cpu_topology));
  out = {};
  // allocateResourcesByHint: the request split over the hint's NUMA nodes.
  if (hint) {
    if (nn.numa_allocatable.empty())
      return status::unresolvable(err_insufficient_resources_on_numa_node);
    numa::numa_split_options split;
    split.request_cpu_bind = bind;
    split.required_cpu_bind = ctx.policy.required;
    split.bind = ctx.policy.policy;
    split.cpus_per_core = ctx.topo != nullptr ? ctx.topo->cpus_per_core() : 1;
    auto shares =
        numa::distribute_evenly({s.requested_milli_cpu, s.requested_memory_bytes},
                                nn.numa_allocatable, ctx.avail, numa::numa_mask_ids(*hint), split);
    if (!shares) return status::unschedulable(intern(shares.error().message));
    out.numa_resources = std::move(*shares);
  }
  if (!bind) return {};
  auto strategy = numa::get_numa_allocate_strategy(
      nn.labels, args_.numa_scoring_strategy == scoring_strategy_type::most_allocated);
  if (!strategy) return status::unresolvable(intern(strategy.error().describe()));
  numa::cpuset_request req;
  req.num_cpus_needed = s.num_cpus_needed;
  req.policy.bind = ctx.policy.policy;
  req.policy.exclusive = s.preferred_cpu_exclusive_policy;
  req.policy.numa_strategy = *strategy;
  req.policy.max_ref_count = ctx.max_ref;
  req.required = ctx.policy.required;
  for (const auto& a : out.numa_resources)
    req.numa_nodes.push_back({a.node, static_cast<int>(a.cpu_milli / 1000)});
  auto cpus = numa::allocate_cpuset(*ctx.topo, ctx.cpus->cpus, ctx.cpus->allocated, req);
  if (!cpus) return status::unschedulable(numa::err_not_enough_cpus, cpus.error().message);
  out.cpuset = std::move(*cpus);
  return {};
}

status node_numa_resource::admit(const numa_pre_filter_state& s, const node_info& node,
                                 numa::numa_topology_policy policy, numa::numa_hint& best) const {
  const auto& nn = node.numa;
  if (nn.numa_allocatable.empty()) return status::unresolvable(err_missing_numa_resources);
  auto bind = request_cpu_bind(s, nn.cpu_bind_policy);
  if (!bind) return status::unresolvable(numa::err_invalid_requested_cpus);
  const node_context ctx(s, node, *bind);
  // When the node's policy is set, the pod's exclusivity keeps its old default (none); a pod
  // that names a policy gets Required unless it says otherwise.
  auto exclusive = s.pod_numa_exclusive;
  if (exclusive == numa::numa_topology_exclusive::unset &&
      s.pod_numa_topology_policy != numa::numa_topology_policy::none)
    exclusive = numa::numa_topology_exclusive::required;
  std::vector<int> ids;
  ids.reserve(nn.numa_allocatable.size());
  for (const auto& a : nn.numa_allocatable) ids.push_back(a.node);
  // GetPodTopologyHints.
  numa::numa_request request{s.requested_milli_cpu, s.requested_memory_bytes};
  if (*bind && nn.cpu_amplification_ratio > 1)
    request.cpu_milli = amplify(request.cpu_milli, nn.cpu_amplification_ratio);
  resource_list pod_requests;
  pod_requests.cpu_milli = request.cpu_milli;
  pod_requests.memory_bytes = request.memory_bytes;
  const auto score = [&](const numa::numa_amount& used, const numa::numa_amount& total) {
    resource_list u, t;
    u.cpu_milli = used.cpu_milli;
    u.memory_bytes = used.memory_bytes;
    t.cpu_milli = total.cpu_milli;
    t.memory_bytes = total.memory_bytes;
    return numa_resource_allocation_score(args_.numa_scoring_strategy, args_.numa_scoring_resources,
                                          u, t, pod_requests);
  };
  const auto try_allocate = [&](std::uint64_t mask) {
    numa_pod_allocation a;
    return allocate_in(ctx, s, *bind, mask, a).ok();
  };
  const numa::provider_hints hints = numa::generate_numa_hints(
      nn.numa_allocatable, ctx.avail, request, policy, score, try_allocate);
  // The NUMA nodes' idle/single/shared status matters only to a Required exclusivity.
  const auto st = exclusive == numa::numa_topology_exclusive::required
                      ? nn.numa_status(static_cast<int>(ids.size()))
                      : std::vector<numa::numa_node_status>{};
  auto merged = numa::merge_numa_hints(policy, ids, std::span(&hints, 1), exclusive, st);
  if (!merged.admit && !merged.reasons.empty()) {
    std::string why;
    for (const auto& r : merged.reasons) why += (why.empty() ? "" : ", ") + r;
    return status::unschedulable(intern(std::move(why)));
  }
  best = merged.best;
  numa_pod_allocation a;
  return allocate_in(ctx, s, *bind, best.affinity, a);
}

status node_numa_resource::allocate(const numa_pre_filter_state& s, const node_info& node,
                                    numa_pod_allocation& out, const numa::numa_hint* cached) const {
  out = {};
  if (s.skip) return {};
  const auto& nn = node.numa;
  auto merged = numa::merge_topology_policy(nn.topology_policy, s.pod_numa_topology_policy);
  const auto policy = merged ? *merged : numa::numa_topology_policy::none;
  auto bind = request_cpu_bind(s, nn.cpu_bind_policy);
  if (!bind) return status::unresolvable(numa::err_invalid_requested_cpus);
  if (!*bind && policy == numa::numa_topology_policy::none) return {};
  std::optional<std::uint64_t> hint;
  if (cached != nullptr && policy != numa::numa_topology_policy::best_effort) {
    hint = cached->affinity;  // Filter's admission in this cycle (Koordinator's stored affinity)
  } else if (policy != numa::numa_topology_policy::none) {
    numa::numa_hint best;
    if (auto st = admit(s, node, policy, best); !st.ok()) return st;
    hint = best.affinity;
  }
  return allocate_with_hint(s, node, *bind, hint, out);
}

std::int64_t node_numa_resource::score(cycle_state& st, const pod_info& pod, const node_info& node,
                                       event_time) {
  const auto* s = st.find<numa_pre_filter_state>(slot());
  return s == nullptr ? 0 : score_with(*s, pod, node, cached_hint(node));
}

std::int64_t node_numa_resource::score_with(const numa_pre_filter_state& s, const pod_info& pod,
                                            const node_info& node,
                                            const numa::numa_hint* cached) const {
  if (s.skip) return 0;
  const auto& nn = node.numa;
  auto bind = request_cpu_bind(s, nn.cpu_bind_policy);
  if (!bind) return 0;
  if (*bind && (nn.topology() == nullptr || !nn.topology()->is_valid())) return 0;
  const double ratio = nn.cpu_amplification_ratio;
  resource_list pod_requests = pod.requests;
  if (*bind && ratio > 1) pod_requests.cpu_milli = amplify(pod_requests.cpu_milli, ratio);
  auto merged = numa::merge_topology_policy(nn.topology_policy, s.pod_numa_topology_policy);
  const auto policy = merged ? *merged : numa::numa_topology_policy::none;
  if (policy == numa::numa_topology_policy::none) {
    // scoreWithAmplifiedCPUs.
    if (s.requested_milli_cpu == 0 || ratio <= 1)
      return numa_resource_allocation_score(args_.scoring_strategy, args_.scoring_resources,
                                            node.requested, node.allocatable, pod_requests);
    resource_list requested = node.requested;
    const std::int64_t held = allocated_cpuset_milli(node);
    requested.cpu_milli += amplify(held, ratio) - held;
    return numa_resource_allocation_score(args_.scoring_strategy, args_.scoring_resources,
                                          requested, node.allocatable, pod_requests);
  }
  // The allocation under the hint Filter found (BestEffort: none yet, as in Koordinator, whose
  // Filter stores no hint for it); a failure scores 0.
  std::optional<std::uint64_t> hint;
  if (policy != numa::numa_topology_policy::best_effort) {
    if (cached != nullptr) {
      hint = cached->affinity;
    } else {
      numa::numa_hint best;
      if (!admit(s, node, policy, best).ok()) return 0;
      hint = best.affinity;
    }
  }
  // One context for the allocation and the NUMA nodes' held resources below.
  const node_context ctx(s, node, *bind);
  numa_pod_allocation a;
  if (!allocate_in(ctx, s, *bind, hint, a).ok()) return 0;
  // calculateAllocatableAndRequested.
  resource_list allocatable = node.allocatable, requested = node.requested;
  if (!a.numa_resources.empty()) {
    allocatable = {};
    requested = {};
    const auto& held = ctx.held;
    for (const auto& share : a.numa_resources) {
      for (const auto& h : held)
        if (h.node == share.node) {
          requested.cpu_milli += h.cpu_milli;
          requested.memory_bytes += h.memory_bytes;
        }
      for (const auto& t : nn.numa_allocatable)
        if (t.node == share.node) {
          allocatable.cpu_milli += t.cpu_milli;
          allocatable.memory_bytes += t.memory_bytes;
        }
    }
  }
  if (!a.cpuset.empty()) requested.cpu_milli = amplify(allocated_cpuset_milli(node), ratio);
  return numa_resource_allocation_score(args_.scoring_strategy, args_.scoring_resources, requested,
                                        allocatable, pod_requests);
}

status node_numa_resource::reserve(cycle_state& st, const pod_info&, const node_info& node,
                                   event_time) {
  const auto* s = st.find<numa_pre_filter_state>(slot());
  if (s == nullptr) return status::fail("NodeNUMAResource: no PreFilter state");
  numa_pod_allocation a;
  if (auto r = allocate(*s, node, a, cached_hint(node)); !r.ok()) return r;
  st.cpuset = std::move(a.cpuset);
  st.numa_resources = std::move(a.numa_resources);
  return {};
}

}  // namespace colony::scheduler
