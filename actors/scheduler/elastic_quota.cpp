// elastic_quota.hpp: the ElasticQuota plugin over colony::quota.
#include "actors/scheduler/elastic_quota.hpp"

#include <algorithm>
#include <cstring>
#include <limits>
#include <utility>
#include <vector>

namespace colony::scheduler {

namespace {

std::int64_t start_time_of(const pod_info& p) {
  if (p.scheduled_time) return p.scheduled_time->value;
  if (p.assigned_time) return p.assigned_time->value;
  return 0;
}

quota::preemption_pod preemption_pod_of(const pod_info& p, std::string quota_name) {
  quota::preemption_pod out;
  out.name = p.key;
  out.quota = std::move(quota_name);
  out.priority = p.priority;
  out.start_time_ms = start_time_of(p);
  out.non_preemptible = p.non_preemptible;
  out.request = p.requests;
  return out;
}

// A cheap key for a quota name in PostFilter's per-node summaries: length, first and last 8
// bytes, mixed. Two names with the same key only make PostFilter look at a node's pods when it
// need not; decisions never depend on it.
std::uint64_t quota_key(std::string_view s) {
  std::uint64_t head = 0, tail = 0;
  const std::size_t n = std::min<std::size_t>(s.size(), 8);
  std::memcpy(&head, s.data(), n);
  std::memcpy(&tail, s.data() + s.size() - n, n);
  std::uint64_t h = head ^ ((tail << 29) | (tail >> 35)) ^ (s.size() * 0xff51afd7ed558ccdull);
  h *= 0x9e3779b97f4a7c15ull;
  return h ^ (h >> 32);
}

}  // namespace

elastic_quota::elastic_quota(std::shared_ptr<quota::quota_tree> tree) : tree_(std::move(tree)) {}

std::string elastic_quota::quota_of(const pod_info& pod) const {
  return tree_->get_quota_name(pod.namespace_name(), pod.quota_name);
}

quota::quota_pod elastic_quota::to_quota_pod(const pod_info& pod, std::string quota) const {
  quota::quota_pod q;
  q.name = pod.key;
  q.namespace_name = std::string(pod.namespace_name());
  q.quota = std::move(quota);
  q.request = pod.requests;
  q.overhead = pod.overhead;  // upsert_pod applies ElasticQuotaIgnorePodOverhead
  q.non_preemptible = pod.non_preemptible;
  q.priority = pod.priority;
  q.start_time_ms = start_time_of(pod);
  q.node = pod.node_name;
  q.assigned = !pod.node_name.empty() && !pod.terminated;
  return q;
}

status elastic_quota::pre_filter(cycle_state& st, const pod_info& pod,
                                 std::span<const node_info> nodes, event_time) {
  nodes_ = nodes;
  auto& s = st.slot<state>(slot());
  s.cycle = st.cycle;
  s.quota = quota_of(pod);
  s.booked = s.assigned = false;
  if (s.quota.empty()) return status::skip();  // DisableDefaultQuota: no association
  // plugin.go PreFilter: runtime is refreshed on demand (RefreshRuntime); Colony recomputes
  // the whole fixed point, and only when something that feeds runtime changed.
  if (tree_->needs_refresh()) tree_->refresh_runtime();
  // elasticquota core PodRequests: without spec.overhead under ElasticQuotaIgnorePodOverhead.
  const resource_list request = quota::quota_pod_requests(
      pod.requests, pod.overhead, tree_->args().elastic_quota_ignore_pod_overhead);
  auto r = quota::pre_filter(*tree_, s.quota, request, pod.non_preemptible);
  switch (r.code) {
    case quota::admission_code::success:
      return {};
    case quota::admission_code::skip:
      return status::skip();
    case quota::admission_code::error:
      return status::fail(r.reason);
    case quota::admission_code::unschedulable:
      break;
  }
  const bool np = r.reason.starts_with(err_insufficient_non_preemptible_quotas);
  return status::unschedulable(
      np ? err_insufficient_non_preemptible_quotas : err_insufficient_quotas, std::move(r.reason));
}

status elastic_quota::reserve(cycle_state& st, const pod_info& pod, const node_info& node,
                              event_time) {
  auto& s = st.slot<state>(slot());
  if (s.cycle != st.cycle) {  // Reserve without this plugin's PreFilter (e.g. a replay)
    s.cycle = st.cycle;
    s.quota = quota_of(pod);
    s.booked = s.assigned = false;
  }
  if (s.quota.empty()) return {};
  // plugin.go Reserve: mgr.OnPodAdd / updatePodIsAssigned. A pod the quota manager already
  // books (pending) becomes assigned; an unknown one is booked as assigned.
  const quota::quota_pod* known = tree_->pod(pod.key);
  if (known != nullptr && known->quota == s.quota) {
    if (!known->assigned) {
      tree_->update_pod_is_assigned(pod.key, true, node.name);
      s.assigned = true;
    }
    return {};
  }
  if (known != nullptr) return {};  // booked under another quota: the quota actor owns it
  // Booked pending first, then assigned: used is updated at once (no refresh needed).
  auto q = to_quota_pod(pod, s.quota);
  q.assigned = false;
  if (auto r = tree_->upsert_pod(std::move(q)); !r) return status::fail(r.error().message);
  tree_->update_pod_is_assigned(pod.key, true, node.name);
  s.booked = true;
  return {};
}

void elastic_quota::unreserve(cycle_state& st, const pod_info& pod, const node_info&, event_time) {
  auto& s = st.slot<state>(slot());
  if (s.cycle != st.cycle) return;
  if (s.booked || s.assigned) tree_->update_pod_is_assigned(pod.key, false);
  if (s.booked) tree_->remove_pod(pod.key);
  s.booked = s.assigned = false;
}

bool elastic_quota::may_hold_victims(std::size_t index, const pod_info& pod, std::string_view quota,
                                     std::uint64_t key, resource_list& node_used) {
  if (cache_.size() < nodes_.size()) cache_.resize(nodes_.size());
  const node_info& node = nodes_[index];
  node_entry& e = cache_[index];
  if (e.node != &node || e.generation != node.generation) {
    // Changed since the last look: read the pods directly (as cheap as building a summary);
    // the summary is built at the next look if the node is still unchanged then.
    e.node = &node;
    e.generation = node.generation;
    e.built = false;
    bool any = false;
    for (const auto& p : node.pods)
      any = any || (!p.terminated && !p.non_preemptible && p.priority < pod.priority &&
                    (p.quota_name.empty() || p.quota_name == quota));
    if (!any) return false;
    node_used = {};
    for (const auto& p : node.pods)
      if (!p.terminated) node_used += p.requests;
    return true;
  }
  if (!e.built) {
    e.used = {};
    e.keys.clear();
    e.priorities.clear();
    e.unlabeled_lowest_priority = std::numeric_limits<std::int32_t>::max();
    for (const auto& p : node.pods) {
      if (p.terminated) continue;
      e.used += p.requests;
      if (p.non_preemptible) continue;
      if (p.quota_name.empty()) {
        e.unlabeled_lowest_priority = std::min(e.unlabeled_lowest_priority, p.priority);
        continue;
      }
      e.keys.push_back(quota_key(p.quota_name));
      e.priorities.push_back(p.priority);
    }
    e.built = true;
  }
  bool any = e.unlabeled_lowest_priority < pod.priority;
  for (std::size_t j = 0; j < e.keys.size(); ++j)
    any |= e.keys[j] == key && e.priorities[j] < pod.priority;
  if (any) node_used = e.used;
  return any;
}

post_filter_result elastic_quota::post_filter(cycle_state& st, const pod_info& pod, event_time) {
  post_filter_result out;
  auto* s = st.find<state>(slot());
  if (s == nullptr || s->cycle != st.cycle || s->quota.empty()) return out;
  quota::quota_view view;
  if (!quota::view_of(*tree_, s->quota, view)) return out;
  const quota::preemption_pod preemptor = preemption_pod_of(pod, s->quota);
  const auto& args = tree_->args();
  const std::uint64_t quota_hash = quota_key(s->quota);

  struct candidate {
    std::size_t node = 0;
    int pdb = 0;
    std::int32_t highest = 0;
    std::int64_t priority_sum = 0;
    std::int64_t earliest_start = 0;  // of the victims with the highest priority
    std::vector<std::string> victims;
  };
  std::optional<candidate> best;
  resource_list node_used;
  for (std::size_t i = 0; i < nodes_.size(); ++i) {
    const node_info& node = nodes_[i];
    // A possible victim is a preemptible pod of lower priority in the same quota; a pod without
    // a quota label belongs to its namespace's quota, resolved below.
    if (!may_hold_victims(i, pod, s->quota, quota_hash, node_used)) continue;
    // The pods canPreempt accepts (preempt.go), copied into reused storage.
    std::size_t n = 0;
    for (const auto& p : node.pods) {
      if (p.terminated || p.non_preemptible || p.priority >= pod.priority) continue;
      if (!p.quota_name.empty() && p.quota_name != s->quota) continue;
      if (n == potential_.size()) potential_.emplace_back();
      quota::preemption_pod& v = potential_[n];
      v.name = p.key;
      v.quota = p.quota_name.empty() ? quota_of(p) : p.quota_name;
      v.priority = p.priority;
      v.start_time_ms = start_time_of(p);
      v.non_preemptible = p.non_preemptible;
      v.pdb_violating = false;
      v.request = p.requests;
      const quota::quota_pod* known = tree_->pod(p.key);
      v.booked = known != nullptr && known->quota == s->quota;
      if (quota::can_preempt(preemptor, v, args)) ++n;
    }
    const std::span<const quota::preemption_pod> potential(potential_.data(), n);
    auto r = quota::select_victims_on_node(preemptor, node.name, node_used, potential,
                                           node.allocatable, view, args);
    if (!r.feasible || r.victims.empty()) continue;
    candidate c;
    c.node = i;
    c.pdb = r.num_pdb_violating;
    c.highest = std::numeric_limits<std::int32_t>::min();
    c.earliest_start = std::numeric_limits<std::int64_t>::max();
    for (const auto& v : r.victims) {
      for (const auto& p : potential) {
        if (p.name != v) continue;
        if (p.priority > c.highest) c.earliest_start = std::numeric_limits<std::int64_t>::max();
        if (p.priority >= c.highest) c.earliest_start = std::min(c.earliest_start, p.start_time_ms);
        c.highest = std::max(c.highest, p.priority);
        c.priority_sum += p.priority;
      }
    }
    c.victims = std::move(r.victims);
    auto better = [](const candidate& a, const candidate& b) {
      if (a.pdb != b.pdb) return a.pdb < b.pdb;
      if (a.highest != b.highest) return a.highest < b.highest;
      if (a.priority_sum != b.priority_sum) return a.priority_sum < b.priority_sum;
      if (a.victims.size() != b.victims.size()) return a.victims.size() < b.victims.size();
      // The latest start among the highest-priority victims (GetEarliestPodStartTime).
      if (a.earliest_start != b.earliest_start) return a.earliest_start > b.earliest_start;
      return a.node < b.node;
    };
    if (!best || better(c, *best)) best = std::move(c);
  }
  if (!best) return out;
  out.st = {};
  out.nominated_node = nodes_[best->node].name;
  out.victims = std::move(best->victims);
  return out;
}

}  // namespace colony::scheduler
