#include "actors/koordlet/cpu_suppress.hpp"

#include <algorithm>
#include <cmath>

namespace colony::koordlet {

namespace {

// In the order calculate_be_suppress_cpu lists them, then the policies' own terms.
constexpr suppress_term_def suppress_defs[] = {
    {"capacityMilli", "milli", "node status.capacity cpu"},
    {"cpuSuppressThresholdPercent", "percent",
     "share of capacity LS+system+BE may use (resourceUsedThresholdWithBE)"},
    {"cpuSuppressMinPercent", "percent", "floor for BE as share of capacity; -1 = unset"},
    {"nodeUsed", "cores", "last node CPU usage"},
    {"podsAllUsed", "cores", "sum of last usage of all pods with metrics"},
    {"podNonBEUsed", "cores",
     "usage of pods that are not BE (raw QoS) nor BestEffort, plus pods without meta"},
    {"hostAppsAllUsed", "cores", "sum of host application usage"},
    {"hostAppNonBEUsed", "cores", "usage of host apps not running as BE"},
    {"nodeReserved", "cores", "max(kubelet reserved, node reservation annotation)"},
    {"systemUsed", "cores", "max(nodeUsed - podsAllUsed - hostAppsAllUsed, 0, nodeReserved)"},
    {"beMinMilli", "milli", "capacity x cpuSuppressMinPercent; -1 = unset"},
    {"beSuppressMilli", "milli",
     "capacity x threshold - podNonBEUsed - hostAppNonBEUsed - systemUsed, at least beMinMilli"},
    {"targetCPUs", "count", "BE cpuset size after the floor of 2 and the growth limit"},
    {"lsrCPUs", "count", "share taken from the LSR pool"},
    {"cfsQuotaUs", "us", "besteffort cpu.cfs_quota_us written"},
    {"stepLimited", "count", "growth capped at 10 % of the node"},
};

enum suppress_term : std::size_t {
  t_capacity,
  t_threshold,
  t_min,
  t_node_used,
  t_pods_all,
  t_pods_non_be,
  t_apps_all,
  t_apps_non_be,
  t_reserved,
  t_system,
  t_be_min,
  t_be_suppress,
};

explain_term term_of(suppress_term t, double value) {
  const auto& d = suppress_defs[t];
  return {d.name, value, d.unit, d.text};
}

}  // namespace

std::span<const suppress_term_def> suppress_terms() noexcept { return suppress_defs; }

const suppress_term_def* find_suppress_term(std::string_view name) noexcept {
  for (const auto& d : suppress_defs)
    if (d.name == name) return &d;
  return nullptr;
}

explain_term suppress_term(std::string_view name, double value) noexcept {
  const auto* d = find_suppress_term(name);
  return d == nullptr ? explain_term{name, value, {}, {}}
                      : explain_term{d->name, value, d->unit, d->text};
}

// helpers.NonBEPodFilter: Raw QoS != BE and Kubernetes QoS != BestEffort.
bool non_be_pod(const pod_info& p) noexcept {
  return p.qos != qos_class::be && p.kube_qos_class != kube_qos::best_effort;
}

// helpers.NonBEHostAppFilter: a host app is BE only if it says so AND runs under
// kubepods-besteffort.
bool non_be_host_app(const host_app_info& h) noexcept {
  return h.qos != qos_class::be || !h.has_cgroup_path || h.base != cgroup_base::kube_besteffort;
}

// calculateBESuppressCPU + helpers.CalculateFilterPodsUsed. Float cores are converted to milli
// once per sum (int64(x * 1000), truncating), in Go's order.
be_suppress_cpu calculate_be_suppress_cpu(const node_info& node, double node_used_cores,
                                          std::span<const pod_info> pods,
                                          std::span<const double> orphan_pod_cpu_cores,
                                          std::span<const host_app_info> host_apps,
                                          std::int64_t threshold_percent,
                                          std::optional<std::int64_t> min_percent) {
  be_suppress_cpu out;
  const double reserved_cores = static_cast<double>(node.reserved_cpu_milli) / 1000;

  double pods_all = 0, pods_non_be = 0;
  for (const auto& p : pods) {
    if (!p.cpu_used_cores) continue;  // no metric: not in podMetrics
    pods_all += *p.cpu_used_cores;
    if (non_be_pod(p)) pods_non_be += *p.cpu_used_cores;
  }
  for (double c : orphan_pod_cpu_cores) {  // podMeta missing: counted as filtered (non-BE)
    pods_all += c;
    pods_non_be += c;
  }
  double apps_all = 0, apps_non_be = 0;
  for (const auto& h : host_apps) {
    if (!h.cpu_used_cores) continue;
    apps_all += *h.cpu_used_cores;
    if (non_be_host_app(h)) apps_non_be += *h.cpu_used_cores;
  }
  double system_raw = node_used_cores - pods_all - apps_all;
  double system_used = std::max(system_raw, 0.0);
  if (system_used < reserved_cores) system_used = reserved_cores;

  const std::int64_t capacity_milli = node.capacity.cpu_milli;
  std::int64_t suppress = capacity_milli * threshold_percent / 100;
  suppress -= static_cast<std::int64_t>(pods_non_be * 1000);
  suppress -= static_cast<std::int64_t>(apps_non_be * 1000);
  suppress -= static_cast<std::int64_t>(system_used * 1000);
  std::int64_t min_milli = -1;
  if (min_percent) {
    min_milli = capacity_milli * *min_percent / 100;
    suppress = std::max(suppress, min_milli);
  }
  out.suppress_milli = suppress;

  auto& e = out.explain;
  e.reserve(12);
  e.push_back(term_of(t_capacity, double(capacity_milli)));
  e.push_back(term_of(t_threshold, double(threshold_percent)));
  e.push_back(term_of(t_min, min_percent ? double(*min_percent) : -1.0));
  e.push_back(term_of(t_node_used, node_used_cores));
  e.push_back(term_of(t_pods_all, pods_all));
  e.push_back(term_of(t_pods_non_be, pods_non_be));
  e.push_back(term_of(t_apps_all, apps_all));
  e.push_back(term_of(t_apps_non_be, apps_non_be));
  e.push_back(term_of(t_reserved, reserved_cores));
  e.push_back(term_of(t_system, system_used));
  e.push_back(term_of(t_be_min, double(min_milli)));
  e.push_back(term_of(t_be_suppress, double(suppress)));
  return out;
}

// calculateBESuppressCPUSetPolicy, kept step by step so picks match Koordinator's exactly.
// Buckets are ranges of one sorted copy (one sort, no vector per bucket).
std::vector<std::int32_t> calculate_be_suppress_cpuset_policy(
    std::int32_t cpus, std::span<const processor_info> processors) {
  std::vector<std::int32_t> picked;
  const auto n = static_cast<std::int32_t>(processors.size());
  if (n < cpus || n == 0) return picked;
  picked.reserve(static_cast<std::size_t>(std::max(cpus, 0)));

  // Bucket key (nodeId + numProcessors) * (socketId + 1), as Go's getNodeIndex; inside a bucket
  // by (coreID, cpuID).
  struct item {
    std::int32_t key;
    processor_info p;
  };
  std::vector<item> items;
  items.reserve(processors.size());
  std::int32_t max_id = 0;
  for (const auto& p : processors) {
    items.push_back({(p.node_id + n) * (p.socket_id + 1), p});
    max_id = std::max(max_id, p.cpu_id);
  }
  auto item_less = [](const item& a, const item& b) {
    if (a.key != b.key) return a.key < b.key;
    if (a.p.core_id != b.p.core_id) return a.p.core_id < b.p.core_id;
    return a.p.cpu_id < b.p.cpu_id;
  };
  // Processor lists usually arrive in cpu-id order, nearly sorted by this key: insertion sort is
  // linear there (the order is total, so the algorithm does not change the result).
  for (std::size_t k = 1; k < items.size(); ++k) {
    const item x = items[k];
    std::size_t j = k;
    for (; j > 0 && item_less(x, items[j - 1]); --j) items[j] = items[j - 1];
    items[j] = x;
  }
  struct bucket {
    std::uint32_t begin, size;
  };
  std::vector<bucket> buckets;
  for (std::uint32_t i = 0; i < items.size();) {
    std::uint32_t j = i;
    while (j < items.size() && items[j].key == items[i].key) ++j;
    buckets.push_back({i, j - i});
    i = j;
  }
  // Bigger buckets first; equal sizes by first cpu id (ids are unique, so this is total).
  std::sort(buckets.begin(), buckets.end(), [&](const bucket& a, const bucket& b) {
    if (a.size == b.size) return items[a.begin].p.cpu_id < items[b.begin].p.cpu_id;
    return a.size > b.size;
  });

  std::vector<std::uint8_t> used(static_cast<std::size_t>(max_id) + 1, 0);
  auto is_used = [&](std::int32_t id) {
    return id >= 0 && used[static_cast<std::size_t>(id)] != 0;
  };
  auto mark = [&](std::int32_t id) {
    if (id >= 0) used[static_cast<std::size_t>(id)] = 1;
  };

  const auto nb = buckets.size();
  std::int32_t need = cpus;
  std::int32_t pre_need = -1;
  std::size_t i = 0;
  // Pass 1: whole hyper-thread pairs while more than one CPU is needed.
  for (;; i = (i + 1) % nb) {
    if (need <= 1) break;
    if (i == 0) {
      if (pre_need == need) break;  // a full cycle picked nothing
      pre_need = need;
    }
    const item* bc = &items[buckets[i].begin];
    const std::uint32_t bs = buckets[i].size;
    for (std::uint32_t j = 0; j + 1 < bs; ++j) {
      if (is_used(bc[j].p.cpu_id)) continue;
      if (bc[j].p.core_id == bc[j + 1].p.core_id) {
        picked.push_back(bc[j].p.cpu_id);
        picked.push_back(bc[j + 1].p.cpu_id);
        mark(bc[j].p.cpu_id);
        mark(bc[j + 1].p.cpu_id);
        need -= 2;
        break;
      }
    }
  }
  // Pass 2: single CPUs, continuing from the bucket where pass 1 stopped.
  pre_need = -1;
  const std::size_t start = i;
  for (;; i = (i + 1) % nb) {
    if (need <= 0) break;
    if (i == start) {
      if (pre_need == need) break;
      pre_need = need;
    }
    const item* bc = &items[buckets[i].begin];
    for (std::uint32_t j = 0; j < buckets[i].size; ++j) {
      if (is_used(bc[j].p.cpu_id)) continue;
      picked.push_back(bc[j].p.cpu_id);
      mark(bc[j].p.cpu_id);
      --need;
      break;
    }
  }
  return picked;
}

const std::vector<std::int32_t>& cpuset_policy_memo::picks(std::int32_t cpus,
                                                           std::span<const processor_info> pool) {
  ++calls_;
  entry* victim = &entries_[0];
  for (auto& e : entries_) {
    if (e.cpus == cpus && std::equal(e.pool.begin(), e.pool.end(), pool.begin(), pool.end())) {
      ++hits_;
      e.last_use = calls_;
      return e.picked;
    }
    if (e.last_use < victim->last_use) victim = &e;  // least recently used (never used: 0)
  }
  victim->cpus = cpus;
  victim->pool.assign(pool.begin(), pool.end());
  victim->picked = calculate_be_suppress_cpuset_policy(cpus, pool);
  victim->last_use = calls_;
  return victim->picked;
}

namespace {

// CPU id -> raw QoS of the pod pinned to it (last pod wins, in pod order, as Go's loop).
std::vector<qos_class> pinned_pool(std::span<const processor_info> processors,
                                   std::span<const pod_info> pods) {
  std::int32_t max_id = 0;
  for (const auto& p : processors) max_id = std::max(max_id, p.cpu_id);
  for (const auto& pod : pods)
    for (auto c : pod.pinned_cpus) max_id = std::max(max_id, c);
  std::vector<qos_class> pool(static_cast<std::size_t>(max_id) + 1, qos_class::none);
  for (const auto& pod : pods)
    for (auto c : pod.pinned_cpus)
      if (c >= 0) pool[static_cast<std::size_t>(c)] = pod.qos;
  return pool;
}

bool contains(std::span<const std::int32_t> s, std::int32_t v) {
  return std::find(s.begin(), s.end(), v) != s.end();
}

}  // namespace

cpuset_decision adjust_by_cpuset(std::int64_t suppress_milli, const cpuset_inputs& in,
                                 std::span<const pod_info> pods) {
  cpuset_decision d;
  auto pool = pinned_pool(in.processors, pods);
  std::vector<processor_info> lsr, ls;
  ls.reserve(in.processors.size());
  for (const auto& p : in.processors) {
    if (contains(in.reserved_cpus, p.cpu_id) || contains(in.system_qos_exclusive_cpus, p.cpu_id))
      continue;
    auto q = p.cpu_id >= 0 ? pool[static_cast<std::size_t>(p.cpu_id)] : qos_class::none;
    if (q == qos_class::lsr)
      lsr.push_back(p);
    else if (q != qos_class::lse)
      ls.push_back(p);
  }

  auto cpus = static_cast<std::int32_t>(std::ceil(static_cast<double>(suppress_milli) / 1000));
  if (cpus < be_min_cpuset_cores) cpus = static_cast<std::int32_t>(be_min_cpuset_cores);
  auto max_increase = static_cast<std::int32_t>(
      std::ceil(static_cast<double>(in.processors.size()) * be_max_increase_cpu_percent));
  auto old_n = static_cast<std::int32_t>(in.old_be_cpuset.size());
  if (cpus - old_n > max_increase) cpus = old_n + max_increase;  // grow slowly, shrink at once
  d.target_cpus = cpus;

  const auto pools = static_cast<std::int32_t>(lsr.size() + ls.size());
  if (pools == 0) return d;  // nothing to pick from (Go would divide by zero)
  const std::int32_t lsr_n = cpus * static_cast<std::int32_t>(lsr.size()) / pools;
  d.lsr_cpus = lsr_n;
  auto pick = [&](std::int32_t k, std::span<const processor_info> pool) {
    if (in.memo != nullptr) {
      const auto& p = in.memo->picks(k, pool);
      d.cpus.insert(d.cpus.end(), p.begin(), p.end());
    } else {
      const auto p = calculate_be_suppress_cpuset_policy(k, pool);
      d.cpus.insert(d.cpus.end(), p.begin(), p.end());
    }
  };
  if (lsr_n > 0) pick(lsr_n, lsr);
  if (cpus - lsr_n > 0) pick(cpus - lsr_n, ls);
  if (!d.cpus.empty()) {
    d.merged.assign(in.old_be_cpuset.begin(), in.old_be_cpuset.end());
    d.merged.insert(d.merged.end(), d.cpus.begin(), d.cpus.end());
    std::sort(d.merged.begin(), d.merged.end());
    d.merged.erase(std::unique(d.merged.begin(), d.merged.end()), d.merged.end());
  }
  return d;
}

std::vector<std::int32_t> calc_be_cpuset(const cpuset_inputs& in, std::span<const pod_info> pods) {
  std::vector<std::int32_t> out;
  out.reserve(in.processors.size());
  for (const auto& p : in.processors) {
    auto id = p.cpu_id;
    if (contains(in.reserved_cpus, id) || contains(in.system_qos_exclusive_cpus, id)) continue;
    bool lse = false;
    for (const auto& pod : pods)
      if (pod.qos == qos_class::lse && contains(pod.pinned_cpus, id)) {
        lse = true;
        break;
      }
    if (!lse) out.push_back(id);
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

// adjustByCfsQuota. C is capacity in whole cores rounded up (Quantity.Value()).
cfs_quota_decision adjust_by_cfs_quota(std::int64_t suppress_milli, std::int64_t capacity_cpu_milli,
                                       std::int64_t current) {
  cfs_quota_decision d;
  std::int64_t quota = suppress_milli * default_cfs_period_us / 1000;
  quota = std::max(quota, be_min_quota);
  const std::int64_t cores = (capacity_cpu_milli + 999) / 1000;
  const double min_delta =
      double(cores) * double(default_cfs_period_us) * suppress_bypass_quota_delta_ratio;
  if (std::fabs(double(quota) - double(current)) < min_delta && quota != be_min_quota) return d;
  const double max_increase =
      double(cores) * double(default_cfs_period_us) * be_max_increase_cpu_percent;
  if (double(quota) - double(current) > max_increase && current != be_unset_quota) {
    quota = current + static_cast<std::int64_t>(max_increase);
    d.step_limited = true;
  }
  d.write = true;
  d.quota_us = quota;
  return d;
}

cpu_suppress_decision suppress_be_cpu(const cpu_suppress_input& in,
                                      const resource_threshold_strategy& cfg,
                                      const koordlet_feature_gates& gates,
                                      const cpu_suppress_state& state) {
  cpu_suppress_decision d;
  d.next_state = state;
  if (!gates.be_cpu_suppress) {
    d.reason = "feature gate BECPUSuppress off";
    return d;
  }
  if (!cfg.enable) {  // IsFeatureDisabled: restore both policies
    d.action = suppress_action::recover;
    d.restore_cfs_quota = state.cfs_quota != policy_status::recovered;
    d.restore_cpuset = calc_be_cpuset(in.cpuset, in.pods);
    d.next_state = {policy_status::recovered, policy_status::recovered};
    d.reason = "resourceUsedThresholdWithBE.enable is false";
    return d;
  }
  if (in.node == nullptr) {
    d.reason = "no node";
    return d;
  }
  if (in.pods.empty()) {
    d.reason = "no pods";
    return d;
  }
  if (!in.node_cpu_used_cores) {
    d.reason = "no node cpu metric";
    return d;
  }
  if (cfg.cpu_suppress_policy == cpu_suppress_policy_type::cpuset && in.cpuset.processors.empty()) {
    d.reason = "no node cpu info";
    return d;
  }
  d.suppress = calculate_be_suppress_cpu(
      *in.node, *in.node_cpu_used_cores, in.pods, in.orphan_pod_cpu_cores, in.host_apps,
      cfg.cpu_suppress_threshold_percent, cfg.cpu_suppress_min_percent);
  if (cfg.cpu_suppress_policy == cpu_suppress_policy_type::cfs_quota) {
    d.action = suppress_action::cfs_quota;
    d.cfs_quota = adjust_by_cfs_quota(d.suppress.suppress_milli, in.node->capacity.cpu_milli,
                                      in.current_be_cfs_quota_us);
    d.restore_cpuset = calc_be_cpuset(in.cpuset, in.pods);
    d.next_state = {policy_status::in_use, policy_status::recovered};
  } else {
    d.action = suppress_action::cpuset;
    d.cpuset = adjust_by_cpuset(d.suppress.suppress_milli, in.cpuset, in.pods);
    d.restore_cfs_quota = state.cfs_quota != policy_status::recovered;
    d.next_state = {policy_status::recovered, policy_status::in_use};
  }
  return d;
}

}  // namespace colony::koordlet
