// ElasticQuota admission, preemption and revocation (see admission.hpp).
#include "actors/quota/admission.hpp"

#include <algorithm>

namespace colony::quota {

namespace {

// quotav1.LessThanOrEqual(a, b): only keys present in both are compared; returns the keys of
// b where a exceeds it.
resource_keys exceeding(const resource_list& a, resource_keys a_keys, const resource_list& b,
                        resource_keys b_keys) {
  resource_keys out = 0;
  const resource_keys both = a_keys & b_keys;
  for (int k = 0; k < resource_count; ++k) {
    if (has_key(both, k) && field(a, k) > field(b, k)) out |= static_cast<resource_keys>(1u << k);
  }
  return out;
}

// quotav1.SubtractWithNonNegativeResult: a - b per field, at least 0.
resource_list subtract_non_negative(const resource_list& a, const resource_list& b) {
  resource_list out = a - b;
  for (int k = 0; k < resource_count; ++k) field(out, k) = std::max<std::int64_t>(0, field(out, k));
  return out;
}

const quota_view* find_view(std::span<const quota_view> chain, std::size_t i) {
  return i < chain.size() ? &chain[i] : nullptr;
}

}  // namespace

bool view_of(const quota_tree& tree, std::string_view name, quota_view& out) {
  const auto* sp = tree.spec(name);
  const auto* st = tree.status(name);
  if (sp == nullptr || st == nullptr) return false;
  out.name = sp->name;
  out.parent = st->parent.empty() ? std::string(quota_names::root_quota) : st->parent;
  out.min = sp->min;
  out.min_keys = sp->min_keys;
  out.max = sp->max;
  out.max_keys = sp->max_keys;
  out.runtime = st->runtime;
  out.runtime_keys = st->runtime_keys;
  out.used = st->used;
  out.non_preemptible_used = st->non_preemptible_used;
  return true;
}

admission_result check_quota_recursive(std::span<const quota_view> chain,
                                       std::vector<std::string> quota_name_topo,
                                       const resource_list& pod_request,
                                       const elastic_quota_args& args) {
  const resource_keys pod_keys = nonzero_keys(pod_request);
  for (std::size_t i = 0; const auto* q = find_view(chain, i); ++i) {
    if (q->name == quota_names::root_quota) break;
    const resource_list& limit = args.enable_runtime_quota ? q->runtime : q->max;
    const resource_keys limit_keys = args.enable_runtime_quota ? q->runtime_keys : q->max_keys;
    // newUsed = Mask(podRequest + used, names(podRequest)).
    const resource_list new_used = masked(pod_request + q->used, pod_keys);
    if (auto exceed = exceeding(new_used, pod_keys, limit, limit_keys); exceed != 0) {
      admission_result r;
      r.code = admission_code::unschedulable;
      r.quota = q->name;
      r.exceed_dimensions = exceed;
      r.reason = "Insufficient quotas, quotaNameTopo: " + print_strings(quota_name_topo) +
                 ", runtime: " + print_resource_list(limit, limit_keys) +
                 ", used: " + print_resource_list(q->used, nonzero_keys(q->used)) +
                 ", pod's request: " + print_resource_list(pod_request, pod_keys) +
                 ", exceedDimensions: " + print_names(exceed);
      return r;
    }
    quota_name_topo.insert(quota_name_topo.begin(), q->parent);
  }
  return admission_result{
      admission_code::success, chain.empty() ? std::string{} : chain[0].name, 0, {}};
}

admission_result pre_filter(std::span<const quota_view> chain, const resource_list& pod_request,
                            bool non_preemptible, const elastic_quota_args& args) {
  if (chain.empty()) return admission_result{admission_code::skip, {}, 0, {}};
  const quota_view& q = chain[0];
  const resource_list& limit = args.enable_runtime_quota ? q.runtime : q.max;
  const resource_keys limit_keys = args.enable_runtime_quota ? q.runtime_keys : q.max_keys;
  const resource_list pod = masked(pod_request, q.max_keys);
  const resource_keys pod_keys = nonzero_keys(pod);

  const resource_list need = q.used + pod;
  if (auto exceed = exceeding(need, q.max_keys | nonzero_keys(need), limit, limit_keys);
      exceed != 0) {
    admission_result r;
    r.code = admission_code::unschedulable;
    r.quota = q.name;
    r.exceed_dimensions = exceed;
    r.reason = "Insufficient quotas, quotaName: " + q.name +
               ", runtime: " + print_resource_list(limit, limit_keys) +
               ", used: " + print_resource_list(q.used, nonzero_keys(q.used)) +
               ", pod's request: " + print_resource_list(pod, pod_keys) +
               ", exceedDimensions: " + print_names(exceed);
    return r;
  }

  if (non_preemptible) {  // non-preemptible pods are limited to min
    const resource_list np_need = q.non_preemptible_used + pod;
    if (auto exceed = exceeding(np_need, q.max_keys | nonzero_keys(np_need), q.min, q.min_keys);
        exceed != 0) {
      admission_result r;
      r.code = admission_code::unschedulable;
      r.quota = q.name;
      r.exceed_dimensions = exceed;
      r.reason = "Insufficient non-preemptible quotas, quotaName: " + q.name +
                 ", min: " + print_resource_list(q.min, q.min_keys) + ", nonPreemptibleUsed: " +
                 print_resource_list(q.non_preemptible_used, nonzero_keys(q.non_preemptible_used)) +
                 ", pod's request: " + print_resource_list(pod, pod_keys) +
                 ", exceedDimensions: " + print_names(exceed);
      return r;
    }
  }

  if (args.enable_check_parent_quota && chain.size() > 1) {
    auto r = check_quota_recursive(chain.subspan(1), {chain[1].name, q.name}, pod, args);
    if (!r.admitted()) return r;
  }
  return admission_result{admission_code::success, q.name, 0, {}};
}

admission_result pre_filter(const quota_tree& tree, std::string_view quota,
                            const resource_list& pod_request, bool non_preemptible) {
  if (quota.empty()) return admission_result{admission_code::skip, {}, 0, {}};
  std::vector<quota_view> chain(1);
  if (!view_of(tree, quota, chain[0])) {
    return admission_result{admission_code::error, std::string(quota), 0,
                            "Could not find the specified ElasticQuota"};
  }
  if (tree.args().enable_check_parent_quota) {
    for (const auto& a : tree.ancestors(quota)) {
      chain.emplace_back();
      if (!view_of(tree, a, chain.back())) chain.pop_back();
    }
  }
  return pre_filter(chain, pod_request, non_preemptible, tree.args());
}

// ---- preemption ---------------------------------------------------------------------------

bool more_important_pod(const preemption_pod& a, const preemption_pod& b) {
  if (a.priority != b.priority) return a.priority > b.priority;
  if (a.start_time_ms != b.start_time_ms) return a.start_time_ms < b.start_time_ms;
  return a.name < b.name;
}

bool can_preempt(const preemption_pod& pod, const preemption_pod& victim,
                 const elastic_quota_args& args) {
  if (victim.non_preemptible) return false;
  if (args.disable_default_quota_preemption && victim.quota == quota_names::default_quota)
    return false;
  return pod.priority > victim.priority && pod.quota == victim.quota;
}

eligibility pod_eligible_to_preempt_others(const preemption_pod& pod, const preemptor_state& state,
                                           bool nominated_node_known,
                                           std::span<const preemption_pod> terminating) {
  if (state.preempt_never) return {false, "not eligible due to preemptionPolicy=Never."};
  if (state.nominated_node.empty() || state.nominated_unresolvable || !nominated_node_known)
    return {};
  for (const auto& p : terminating) {
    if (p.quota == pod.quota && p.priority < pod.priority)
      return {false, "not eligible due to a terminating pod on the nominated node."};
  }
  return {};
}

victims_result select_victims_on_node(const preemption_pod& pod, std::string_view node_name,
                                      std::span<const preemption_pod> node_pods,
                                      const resource_list& node_allocatable,
                                      const quota_view& quota, const elastic_quota_args& args) {
  resource_list node_used;
  std::vector<preemption_pod> potential;
  for (const auto& p : node_pods) {
    node_used += p.request;
    if (can_preempt(pod, p, args)) potential.push_back(p);
  }
  return select_victims_on_node(pod, node_name, node_used, potential, node_allocatable, quota,
                                args);
}

victims_result select_victims_on_node(const preemption_pod& pod, std::string_view node_name,
                                      const resource_list& node_used_in,
                                      std::span<const preemption_pod> potential_pods,
                                      const resource_list& node_allocatable,
                                      const quota_view& quota, const elastic_quota_args& args) {
  victims_result out;
  if (potential_pods.empty()) {
    out.reason =
        "No victims found on node " + std::string(node_name) + " for preemptor pod " + pod.name;
    return out;
  }
  // preempt.go SelectVictimsOnNode: every potential victim is removed first (RemovePod
  // subtracts its masked request from the quota's used), then reprieved one at a time.
  std::vector<const preemption_pod*> potential;
  potential.reserve(potential_pods.size());
  resource_list node_used = node_used_in;
  resource_list quota_used = quota.used;
  for (const auto& p : potential_pods) {
    potential.push_back(&p);
    node_used -= p.request;
    if (p.booked) quota_used = subtract_non_negative(quota_used, masked(p.request, quota.max_keys));
  }
  auto fits_node = [&] { return (node_used + pod.request).fits_in(node_allocatable); };
  if (!fits_node()) {
    out.reason = "preemptor pod " + pod.name + " does not fit node " + std::string(node_name) +
                 " even without its lower-priority pods";
    return out;
  }
  std::sort(
      potential.begin(), potential.end(),
      [](const preemption_pod* a, const preemption_pod* b) { return more_important_pod(*a, *b); });
  // filterPodsWithPDBViolation keeps order: PDB-violating victims are reprieved first.
  std::stable_partition(potential.begin(), potential.end(),
                        [](const preemption_pod* p) { return p->pdb_violating; });

  const resource_list& limit = args.enable_runtime_quota ? quota.runtime : quota.max;
  const resource_keys limit_keys = args.enable_runtime_quota ? quota.runtime_keys : quota.max_keys;
  const resource_keys pod_keys = nonzero_keys(pod.request);
  for (const auto* p : potential) {
    const resource_list p_quota = p->booked ? masked(p->request, quota.max_keys) : resource_list{};
    node_used += p->request;
    quota_used += p_quota;
    bool evict = false;
    if (!fits_node()) {
      evict = true;
      if (p->pdb_violating) ++out.num_pdb_violating;
    } else {
      // Kept only while used + request stays within the quota's runtime.
      const resource_list new_used = masked(quota_used + pod.request, pod_keys);
      evict = exceeding(new_used, pod_keys, limit, limit_keys) != 0;
    }
    if (evict) {
      node_used -= p->request;
      quota_used = subtract_non_negative(quota_used, p_quota);
      out.victims.push_back(p->name);
    }
  }
  out.feasible = true;
  return out;
}

// ---- revocation -------------------------------------------------------------------------------

std::vector<std::string> get_to_revoke_pod_list(const resource_list& used, resource_keys used_keys,
                                                const resource_list& runtime,
                                                resource_keys runtime_keys,
                                                std::vector<revoke_pod> pods) {
  auto importance = [](const revoke_pod& a, const revoke_pod& b) {  // a more important than b
    if (a.priority != b.priority) return a.priority > b.priority;
    if (a.start_time_ms != b.start_time_ms) return a.start_time_ms < b.start_time_ms;
    return a.name < b.name;
  };
  // Least important first.
  std::sort(pods.begin(), pods.end(),
            [&](const revoke_pod& a, const revoke_pod& b) { return importance(b, a); });

  resource_list cur = used;
  resource_keys cur_keys = used_keys;
  auto within = [&] { return exceeding(cur, cur_keys, runtime, runtime_keys) == 0; };
  std::vector<const revoke_pod*> try_back;
  for (const auto& p : pods) {
    if (within()) break;
    if (p.non_preemptible) continue;
    // Mask(Subtract(used, podReq), names(podReq)), as Koordinator writes it.
    const resource_keys pk = resolve_keys(p.request_keys, p.request);
    cur = masked(cur - p.request, pk);
    cur_keys = pk;
    try_back.push_back(&p);
  }
  std::vector<std::string> out;
  if (!within()) {
    for (const auto* p : try_back) out.push_back(p->name);
    return out;
  }
  for (auto it = try_back.rbegin(); it != try_back.rend(); ++it) {
    const revoke_pod& p = **it;
    const resource_keys pk = resolve_keys(p.request_keys, p.request);
    cur = masked(cur + p.request, pk);
    cur_keys = pk;
    if (!within()) {
      cur -= p.request;
      out.push_back(p.name);
    }
  }
  return out;
}

bool over_used_monitor::monitor(std::int64_t now_ms, const resource_list& used,
                                resource_keys used_keys, const resource_list& runtime,
                                resource_keys runtime_keys, std::int64_t delay_evict_time_ms) {
  std::int64_t over_for = 0;
  if (exceeding(used, used_keys, runtime, runtime_keys) != 0) {
    over_for = now_ms - last_under_used_time_ms;
  } else {
    last_under_used_time_ms = now_ms;
  }
  if (over_for > delay_evict_time_ms) {
    last_under_used_time_ms = now_ms;
    return true;
  }
  return false;
}

std::vector<revoke_decision> revoke_step(const quota_tree& tree, revoke_controller_state& state,
                                         std::int64_t now_ms) {
  std::vector<revoke_decision> out;
  const auto& args = tree.args();
  if (!args.monitor_all_quotas || !args.enable_runtime_quota) return out;
  // syncQuota: a monitor per quota except system (root is never stored).
  auto names = tree.quota_names();
  std::erase(names, std::string(quota_names::system_quota));
  for (auto it = state.monitors.begin(); it != state.monitors.end();) {
    it = std::binary_search(names.begin(), names.end(), it->first) ? std::next(it)
                                                                   : state.monitors.erase(it);
  }
  for (const auto& name : names) {
    auto [it, inserted] = state.monitors.try_emplace(name);
    if (inserted) it->second.last_under_used_time_ms = now_ms;
    const auto* st = tree.status(name);
    if (st == nullptr) continue;
    if (!it->second.monitor(now_ms, st->used, st->runtime_keys, st->runtime, st->runtime_keys,
                            args.delay_evict_time_ms)) {
      continue;
    }
    std::vector<revoke_pod> assigned;
    for (const auto* p : tree.pods_of(name)) {
      if (!p->assigned) continue;
      assigned.push_back(revoke_pod{p->name, p->priority, p->start_time_ms, p->non_preemptible,
                                    p->request, p->request_keys});
    }
    const std::string reason =
        "quota " + name + " used " + print_resource_list(st->used, st->runtime_keys) +
        " exceeds runtime " + print_resource_list(st->runtime, st->runtime_keys) +
        " for longer than delayEvictTime";
    for (auto& pod : get_to_revoke_pod_list(st->used, st->runtime_keys, st->runtime,
                                            st->runtime_keys, std::move(assigned))) {
      out.push_back(revoke_decision{std::move(pod), name, reason});
    }
  }
  return out;
}

}  // namespace colony::quota
