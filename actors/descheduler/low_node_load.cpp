#include "actors/descheduler/low_node_load.hpp"

#include <algorithm>
#include <limits>
#include <optional>
#include <set>
#include <unordered_map>

#include <fmt/format.h>

#include "actors/descheduler/pod_sorter.hpp"
#include "messages/names.hpp"

namespace colony::descheduler {

namespace {

constexpr double max_percentage = 100;
constexpr double min_percentage = 0;

double normalize_percentage(double p) { return std::clamp(p, min_percentage, max_percentage); }

std::int64_t& at(resource_amounts& m, std::string_view r) {
  auto it = m.find(r);
  if (it == m.end()) it = m.emplace(std::string(r), 0).first;
  return it->second;
}

// "<ns>/<name>" keys compared without building them (-1, 0, 1).
int compare_keys(std::string_view ans, std::string_view an, std::string_view bns,
                 std::string_view bn) {
  if (ans.size() == bns.size()) {
    // The '/' at the same place: the namespaces decide, then the names.
    if (const int c = ans.compare(bns)) return c < 0 ? -1 : 1;
    const int c = an.compare(bn);
    return c < 0 ? -1 : (c > 0 ? 1 : 0);
  }
  auto at = [](std::string_view ns, std::string_view n, std::size_t i) {
    return static_cast<unsigned char>(i < ns.size()    ? ns[i]
                                      : i == ns.size() ? '/'
                                                       : n[i - ns.size() - 1]);
  };
  const std::size_t la = ans.size() + 1 + an.size(), lb = bns.size() + 1 + bn.size();
  for (std::size_t i = 0; i < std::min(la, lb); ++i)
    if (const auto ca = at(ans, an, i), cb = at(bns, bn, i); ca != cb) return ca < cb ? -1 : 1;
  return la == lb ? 0 : (la < lb ? -1 : 1);
}

using metric_ref = node_usage::pod_metric_ref;

// The metrics of the pods under key ns/name.
std::pair<std::vector<metric_ref>::const_iterator, std::vector<metric_ref>::const_iterator>
metrics_of(const std::vector<metric_ref>& sorted, std::string_view ns, std::string_view name) {
  const auto lo = std::partition_point(sorted.begin(), sorted.end(), [&](const metric_ref& m) {
    return compare_keys(m.ns, m.name, ns, name) < 0;
  });
  const auto hi = std::partition_point(lo, sorted.end(), [&](const metric_ref& m) {
    return compare_keys(m.ns, m.name, ns, name) == 0;
  });
  return {lo, hi};
}

// Calls f(i, lo, hi) with the metrics [lo, hi) under each pod's key: one merge when the pods are
// in key order, else a binary search per pod.
template <class F>
void for_each_metric_range(std::span<const pod_info* const> pods,
                           const std::vector<metric_ref>& sorted, F&& f) {
  const bool ordered =
      std::is_sorted(pods.begin(), pods.end(), [](const pod_info* a, const pod_info* b) {
        return compare_keys(a->ns, a->name, b->ns, b->name) < 0;
      });
  auto lo = sorted.begin();
  for (std::size_t i = 0; i < pods.size(); ++i) {
    const pod_info& p = *pods[i];
    if (!ordered) {
      const auto [l, h] = metrics_of(sorted, p.ns, p.name);
      f(i, l, h);
      continue;
    }
    // The first metric at or after this key is at or after the previous pod's.
    while (lo != sorted.end() && compare_keys(lo->ns, lo->name, p.ns, p.name) < 0) ++lo;
    auto hi = lo;
    while (hi != sorted.end() && compare_keys(hi->ns, hi->name, p.ns, p.name) == 0) ++hi;
    f(i, lo, hi);
  }
}

}  // namespace

const resource_amounts* node_usage::pod_metric(std::string_view ns, std::string_view name) const {
  const auto [lo, hi] = metrics_of(pod_metrics, ns, name);
  return lo == hi ? nullptr : std::prev(hi)->usage;
}

pool_thresholds new_thresholds(const low_node_load_node_pool& pool) {
  pool_thresholds t;
  if (pool.low_thresholds) t.low = *pool.low_thresholds;
  if (pool.high_thresholds) t.high = *pool.high_thresholds;
  if (pool.prod_low_thresholds) t.prod_low = *pool.prod_low_thresholds;
  if (pool.prod_high_thresholds) t.prod_high = *pool.prod_high_thresholds;
  std::set<std::string> names;
  for (const auto* m : {&t.low, &t.high, &t.prod_low, &t.prod_high})
    for (const auto& [r, p] : *m) names.insert(r);
  names.insert(std::string(names::memory));
  const double fill = pool.use_deviation_thresholds ? min_percentage : max_percentage;
  for (const auto& r : names) {
    if (!t.low.count(r)) {
      t.low[r] = fill;
      t.high[r] = fill;
    }
    if (!t.prod_low.count(r)) {
      t.prod_low[r] = fill;
      t.prod_high[r] = fill;
    }
  }
  // getResourceNames(lowThresholds): every name is in low now.
  for (const auto& [r, p] : t.low) t.resources.push_back(r);
  return t;
}

std::int64_t resource_threshold(const resource_amounts& capacity, std::string_view r,
                                double percent) {
  return static_cast<std::int64_t>(percent * 0.01 * static_cast<double>(amount(capacity, r)));
}

std::map<std::string, node_thresholds, std::less<>> node_thresholds_of(
    const std::map<std::string, node_usage, std::less<>>& usages, const pool_thresholds& t,
    bool use_deviation) {
  std::map<std::string, double, std::less<>> avg, prod_avg;
  if (use_deviation && !usages.empty()) {
    // calcAverageResourceUsagePercent: the mean over the pool's nodes of usage / capacity.
    for (const auto& [name, u] : usages) {
      for (const auto* pair : {&u.usage, &u.prod_usage}) {
        auto& sum = pair == &u.usage ? avg : prod_avg;
        for (const auto& [r, used] : *pair) {
          const std::int64_t total = amount(u.node->allocatable, r);
          if (total == 0) continue;
          sum[r] += static_cast<double>(used) / static_cast<double>(total) * 100.0;
        }
      }
    }
    const auto n = static_cast<double>(usages.size());
    for (auto& [r, s] : avg) s /= n;
    for (auto& [r, s] : prod_avg) s /= n;
  }
  auto get = [](const std::map<std::string, double, std::less<>>& m, const std::string& r) {
    const auto it = m.find(r);
    return it == m.end() ? 0.0 : it->second;
  };
  std::map<std::string, node_thresholds, std::less<>> out;
  for (const auto& [name, u] : usages) {
    node_thresholds nt;
    const auto& cap = u.node->allocatable;
    for (const auto& r : t.resources) {
      if (use_deviation) {
        if (get(t.low, r) == min_percentage) {
          nt.low[r] = nt.high[r] = amount(cap, r);
        } else {
          nt.low[r] = resource_threshold(cap, r, normalize_percentage(get(avg, r) - get(t.low, r)));
          nt.high[r] =
              resource_threshold(cap, r, normalize_percentage(get(avg, r) + get(t.high, r)));
        }
        if (get(t.prod_low, r) == min_percentage) {
          nt.prod_low[r] = nt.prod_high[r] = amount(cap, r);
        } else {
          nt.prod_low[r] = resource_threshold(
              cap, r, normalize_percentage(get(prod_avg, r) - get(t.prod_low, r)));
          nt.prod_high[r] = resource_threshold(
              cap, r, normalize_percentage(get(prod_avg, r) + get(t.prod_high, r)));
        }
      } else {
        nt.low[r] = resource_threshold(cap, r, get(t.low, r));
        nt.high[r] = resource_threshold(cap, r, get(t.high, r));
        nt.prod_low[r] = resource_threshold(cap, r, get(t.prod_low, r));
        nt.prod_high[r] = resource_threshold(cap, r, get(t.prod_high, r));
      }
    }
    out.emplace(name, std::move(nt));
  }
  return out;
}

std::map<std::string, double, std::less<>> resource_usage_percentages(
    const resource_amounts& usage, const resource_amounts& capacity) {
  std::map<std::string, double, std::less<>> out;
  for (const auto& [r, u] : usage) {
    const std::int64_t c = amount(capacity, r);
    if (c != 0) out[r] = 100.0 * static_cast<double>(u) / static_cast<double>(c);
  }
  return out;
}

resource_amounts overutilized(const resource_amounts& usage, const resource_amounts& thresholds) {
  resource_amounts over;
  for (const auto& [r, th] : thresholds) {
    const auto it = usage.find(r);
    if (it != usage.end() && it->second > th) over[r] = it->second;
  }
  return over;
}

bool underutilized(const resource_amounts& usage, const resource_amounts& thresholds) {
  for (const auto& [r, th] : thresholds) {
    const auto it = usage.find(r);
    if (it != usage.end() && it->second > th) return false;
  }
  return true;
}

void sort_nodes_by_usage(std::vector<const node_usage*>& nodes, const weight_map& w, bool ascending,
                         bool prod) {
  std::vector<std::pair<std::int64_t, const node_usage*>> scored;
  scored.reserve(nodes.size());
  for (const auto* n : nodes)
    scored.emplace_back(node_usage_score(prod ? n->prod_usage : n->usage, n->node->allocatable, w),
                        n);
  std::stable_sort(scored.begin(), scored.end(), [ascending](const auto& a, const auto& b) {
    return ascending ? a.first < b.first : a.first > b.first;
  });
  for (std::size_t i = 0; i < nodes.size(); ++i) nodes[i] = scored[i].second;
}

namespace {

// The requests of a node's pods, summed (nodeFit's requested side).
resource_amounts requested_of(std::span<const pod_info* const> pods_on_node) {
  resource_amounts requested;
  for (const auto* p : pods_on_node)
    for (const auto& [r, q] : p->requests) at(requested, r) += q;
  return requested;
}

// nodeFit against the node's summed requests and pod count.
bool node_fit_with(const pod_info& pod, const node_info& node, const resource_amounts& requested,
                   std::size_t pod_count) {
  if (node.unschedulable || !node.ready) return false;
  if (const auto cap = node.allocatable.find(names::pods); cap != node.allocatable.end())
    if (static_cast<std::int64_t>(pod_count) + 1 > cap->second) return false;
  for (const auto& [r, q] : pod.requests) {
    if (q <= 0 || r == names::pods) continue;
    if (amount(requested, r) + q > amount(node.allocatable, r)) return false;
  }
  return true;
}

// The names of requested resources met in a round, interned so that nodeFit compares indices.
struct request_names {
  std::vector<std::string> names;
  std::size_t index(std::string_view r) {
    const auto it = std::find(names.begin(), names.end(), r);
    if (it != names.end()) return static_cast<std::size_t>(it - names.begin());
    names.emplace_back(r);
    return names.size() - 1;
  }
};

// nodeFit's view of a target, computed at its first nodeFit of the round and shared by both
// eviction phases (fixed for the round: LowNodeLoad moves no pod onto a target): the summed
// requests of its pods and its allocatable, by interned name (a name interned after the sum was
// taken is requested by none of its pods).
struct node_requests {
  bool computed = false;
  bool schedulable = false;
  std::optional<std::int64_t> pods_cap;
  std::int64_t pod_count = 0;
  std::vector<std::int64_t> requested, allocatable;
};

// The round's nodeFit state: interned names and each target's requests.
struct fit_cache {
  request_names names;
  std::unordered_map<const node_usage*, node_requests> nodes;
};

void compute_requests(node_requests& n, const node_usage& u, request_names& interned) {
  const node_info& node = *u.node;
  n.computed = true;
  n.schedulable = !node.unschedulable && node.ready;
  if (const auto cap = node.allocatable.find(names::pods); cap != node.allocatable.end())
    n.pods_cap = cap->second;
  const auto& pods = u.all_pods;
  n.pod_count = static_cast<std::int64_t>(pods.size());
  // The pods and their request maps are scattered in memory: each pod's map is fetched a few
  // pods ahead, its first entry once the map itself has arrived.
  constexpr std::size_t ahead = 6, ahead_entry = 3;
  for (std::size_t i = 0; i < pods.size(); ++i) {
    if (i + ahead < pods.size()) __builtin_prefetch(&pods[i + ahead]->requests);
    if (i + ahead_entry < pods.size()) {
      const auto& next = pods[i + ahead_entry]->requests;
      if (!next.empty()) __builtin_prefetch(&*next.begin());
    }
    std::size_t pos = 0;
    for (const auto& [r, q] : pods[i]->requests) {
      // Pods mostly request the same names in the same order: try the name's place first.
      const std::size_t k =
          pos < interned.names.size() && interned.names[pos] == r ? pos : interned.index(r);
      if (k >= n.requested.size()) n.requested.resize(k + 1, 0);
      n.requested[k] += q;
      ++pos;
    }
  }
}

// A pod's requests as nodeFit checks them: positive, not pods, by interned name.
using pod_requests = std::vector<std::pair<std::size_t, std::int64_t>>;

void pod_requests_of(const pod_info& pod, request_names& names, pod_requests& out) {
  out.clear();
  for (const auto& [r, q] : pod.requests)
    if (q > 0 && r != names::pods) out.emplace_back(names.index(r), q);
}

// node_fit_with over a target's node_requests.
bool fits_requests(const pod_requests& req, node_requests& n, const node_info& node,
                   const request_names& interned) {
  if (!n.schedulable) return false;
  if (n.pods_cap && n.pod_count + 1 > *n.pods_cap) return false;
  while (n.allocatable.size() < interned.names.size())
    n.allocatable.push_back(amount(node.allocatable, interned.names[n.allocatable.size()]));
  for (const auto& [k, q] : req) {
    const std::int64_t used = k < n.requested.size() ? n.requested[k] : 0;
    if (used + q > n.allocatable[k]) return false;
  }
  return true;
}

// A target of one eviction phase, resolved once: its usage, thresholds (nullptr: none), each
// threshold as a slot (the resource's index in the phase's list, the limit and the usage it
// bounds; resources the usage lacks are never checked, so they get no slot), and its nodeFit
// state in the round's fit_cache.
struct fit_slot {
  std::size_t resource = 0;
  std::int64_t limit = 0;
  std::int64_t* used = nullptr;
};
struct fit_target {
  node_usage* usage = nullptr;
  const node_thresholds* thresholds = nullptr;
  std::vector<fit_slot> slots, prod_slots;
  node_requests* requests = nullptr;
};
// The targets' room under their thresholds (limit - usage per resource; none: no limit), per
// target and as maxima over blocks of consecutive targets, so that the first target whose room
// admits a pod is found by skipping whole blocks without the room. (A tree of maxima prunes
// badly with several resources: one target's cpu room and another's memory room make a range
// look open where no target is.) Built for one scope (node or prod slots).
struct room_blocks {
  static constexpr std::int64_t unlimited = std::numeric_limits<std::int64_t>::max();
  static constexpr std::size_t block = 32;
  std::size_t resources = 0;
  std::vector<std::int64_t> room;  // target i, resource r: room[i * resources + r]
  std::vector<std::int64_t> max;   // block b, resource r: max[b * resources + r]
};

struct fit_targets {
  fit_cache* cache = nullptr;
  std::vector<fit_target> targets;
  std::vector<std::string> resources;  // every threshold resource of the targets
  std::optional<bool> rooms_prod;      // the scope `rooms` was built for
  room_blocks rooms;
  std::vector<std::int64_t> amounts;  // scratch: the pod's usage per resource
  pod_requests requests;              // scratch: the pod's requests
};

const std::vector<fit_slot>& slots_of_scope(const fit_target& t, bool prod) {
  return prod ? t.prod_slots : t.slots;
}

void set_room(fit_targets& f, std::size_t i, bool prod) {
  auto& rb = f.rooms;
  const std::size_t r = rb.resources;
  std::int64_t* room = rb.room.data() + i * r;
  std::fill(room, room + r, room_blocks::unlimited);
  for (const auto& s : slots_of_scope(f.targets[i], prod))
    room[s.resource] = std::min(room[s.resource], s.limit - *s.used);
}

void set_block_max(fit_targets& f, std::size_t b) {
  auto& rb = f.rooms;
  const std::size_t r = rb.resources;
  const std::size_t lo = b * room_blocks::block;
  const std::size_t hi = std::min(lo + room_blocks::block, f.targets.size());
  std::int64_t* m = rb.max.data() + b * r;
  std::fill(m, m + r, std::numeric_limits<std::int64_t>::min());
  for (std::size_t i = lo; i < hi; ++i)
    for (std::size_t x = 0; x < r; ++x) m[x] = std::max(m[x], rb.room[i * r + x]);
}

// Sets target i's room from its slots and updates its block.
void update_room(fit_targets& f, std::size_t i, bool prod) {
  set_room(f, i, prod);
  set_block_max(f, i / room_blocks::block);
}

void build_rooms(fit_targets& f, bool prod) {
  auto& rb = f.rooms;
  rb.resources = f.resources.size();
  const std::size_t n = f.targets.size();
  const std::size_t blocks = (n + room_blocks::block - 1) / room_blocks::block;
  rb.room.assign(n * rb.resources, 0);
  rb.max.assign(blocks * rb.resources, 0);
  for (std::size_t i = 0; i < n; ++i) set_room(f, i, prod);
  for (std::size_t b = 0; b < blocks; ++b) set_block_max(f, b);
  f.rooms_prod = prod;
}

// Every amount within the room (r resources).
bool admits(const std::int64_t* room, const std::int64_t* amounts, std::size_t r) {
  for (std::size_t x = 0; x < r; ++x)
    if (amounts[x] > room[x]) return false;
  return true;
}

// The first target at or after `from` whose room admits `amounts`; targets.size() when none.
std::size_t first_room(const fit_targets& f, std::size_t from,
                       const std::vector<std::int64_t>& amounts) {
  const auto& rb = f.rooms;
  const std::size_t n = f.targets.size(), r = rb.resources;
  const std::int64_t* a = amounts.data();
  std::size_t i = from;
  while (i < n) {
    const std::size_t b = i / room_blocks::block;
    // A block is skipped whole when its maxima do not admit; entered at i otherwise.
    if (!admits(rb.max.data() + b * r, a, r)) {
      i = (b + 1) * room_blocks::block;
      continue;
    }
    const std::size_t end = std::min((b + 1) * room_blocks::block, n);
    for (; i < end; ++i)
      if (admits(rb.room.data() + i * r, a, r)) return i;
  }
  return n;
}

bool fits_node(fit_targets& f, fit_target& t) {
  if (!t.requests->computed) compute_requests(*t.requests, *t.usage, f.cache->names);
  return fits_requests(f.requests, *t.requests, *t.usage->node, f.cache->names);
}

// podFitsAnyNodeWithThreshold over resolved targets. Both checks are pure, so the cheap threshold
// check runs first and nodeFit only on a target that would take the pod; the result is the
// first target passing both, as in Koordinator's loop (nodeFit, then the thresholds).
bool pod_fits_any_target(const pod_info& pod, const resource_amounts& pod_usage,
                         fit_targets& resolved, bool prod) {
  // The pod's usage and requests, looked up once rather than per target.
  auto& amounts = resolved.amounts;
  amounts.resize(resolved.resources.size());
  for (std::size_t i = 0; i < amounts.size(); ++i)
    amounts[i] = amount(pod_usage, resolved.resources[i]);
  pod_requests_of(pod, resolved.cache->names, resolved.requests);
  if (resolved.rooms_prod != prod) build_rooms(resolved, prod);
  const std::size_t n = resolved.targets.size();
  // A target passes the thresholds when usage + the pod's <= limit for each slot, i.e. the pod's
  // amount is within the room; the blocks skip ranges where no target has the room.
  for (std::size_t i = first_room(resolved, 0, amounts); i < n;
       i = first_room(resolved, i + 1, amounts)) {
    auto& t = resolved.targets[i];
    if (t.thresholds == nullptr) {
      if (fits_node(resolved, t)) return true;
      continue;
    }
    const auto& slots = prod ? t.prod_slots : t.slots;
    bool exceeded = false;
    for (const auto& s : slots)
      if (*s.used + amounts[s.resource] > s.limit) {
        exceeded = true;
        break;
      }
    if (exceeded || !fits_node(resolved, t)) continue;
    // The pod's usage is pre-reserved on the target (kept whether or not it is evicted).
    for (const auto& s : slots) *s.used += amounts[s.resource];
    update_room(resolved, i, prod);
    return true;
  }
  return false;
}

using target_ref = std::pair<node_usage*, const node_thresholds*>;

fit_targets resolve_targets(std::span<const target_ref> targets, fit_cache& cache) {
  fit_targets out;
  out.cache = &cache;
  out.targets.reserve(targets.size());
  auto index_of = [&out](const std::string& r) {
    const auto it = std::find(out.resources.begin(), out.resources.end(), r);
    if (it != out.resources.end()) return static_cast<std::size_t>(it - out.resources.begin());
    out.resources.push_back(r);
    return out.resources.size() - 1;
  };
  auto slots_of = [&](const resource_amounts& th, resource_amounts& usage) {
    std::vector<fit_slot> v;
    for (const auto& [r, limit] : th)
      if (const auto it = usage.find(r); it != usage.end())
        v.push_back({index_of(r), limit, &it->second});
    return v;
  };
  for (const auto& [u, th] : targets) {
    fit_target f;
    f.usage = u;
    f.requests = &cache.nodes[u];
    if (th != nullptr) {
      f.thresholds = th;
      f.slots = slots_of(th->high, u->usage);
      f.prod_slots = slots_of(th->prod_high, u->prod_usage);
    }
    out.targets.push_back(std::move(f));
  }
  return out;
}

}  // namespace

bool node_fit(const pod_info& pod, const node_info& node,
              std::span<const pod_info* const> pods_on_node) {
  return node_fit_with(pod, node, requested_of(pods_on_node), pods_on_node.size());
}

bool pod_fits_any_node_with_threshold(
    const pod_info& pod, const resource_amounts& pod_usage, std::span<const std::string> targets,
    std::map<std::string, node_usage, std::less<>>& usages,
    const std::map<std::string, node_thresholds, std::less<>>& thresholds, bool prod) {
  std::vector<target_ref> refs;
  for (const auto& name : targets) {
    const auto u = usages.find(name);
    if (u == usages.end()) continue;
    const auto t = thresholds.find(name);
    refs.emplace_back(&u->second, t == thresholds.end() ? nullptr : &t->second);
  }
  fit_cache cache;
  auto resolved = resolve_targets(refs, cache);
  return pod_fits_any_target(pod, pod_usage, resolved, prod);
}

std::vector<std::string> filter_real_abnormal_nodes(std::span<const std::string> sources,
                                                    detector_cache& cache,
                                                    const anomaly_condition& c,
                                                    std::int64_t now_ms) {
  std::vector<std::string> out;
  for (const auto& n : sources)
    if (c.consecutive_abnormalities == 1 || cache.mark_abnormal(n, c, now_ms)) out.push_back(n);
  return out;
}

low_node_load::low_node_load(low_node_load_args args)
    : args_(std::move(args)),
      node_detectors_(args_.detector_cache_timeout_ms.value_or(300'000)),
      prod_detectors_(args_.detector_cache_timeout_ms.value_or(300'000)) {}

bool low_node_load::pod_selected(const pod_info& p) const {
  const auto& inc = args_.evictable_namespaces_include;
  const auto& exc = args_.evictable_namespaces_exclude;
  if (!inc.empty() && std::find(inc.begin(), inc.end(), p.ns) == inc.end()) return false;
  if (std::find(exc.begin(), exc.end(), p.ns) != exc.end()) return false;
  bool any = false, matched = false;
  for (const auto& s : args_.pod_selectors) {
    if (!s.selector) continue;
    any = true;
    if (admission::label_selector_matches(*s.selector, p.labels).value_or(false)) {
      matched = true;
      break;
    }
  }
  return !any || matched;
}

std::vector<pool_round> low_node_load::balance(const low_node_load_input& in, const evictor& ev) {
  std::vector<pool_round> out;
  if (args_.paused) return out;
  std::vector<std::string> processed;
  for (const auto& pool : args_.node_pools) out.push_back(process_pool(pool, in, ev, processed));
  return out;
}

pool_round low_node_load::process_pool(const low_node_load_node_pool& pool,
                                       const low_node_load_input& in, const evictor& ev,
                                       std::vector<std::string>& processed) {
  pool_round round;
  round.pool = pool.name;
  const std::int64_t now = in.now_ms;
  // filterNodes: a pool without a selector takes every node, processed ones included.
  std::vector<const node_info*> nodes;
  for (const auto& n : in.nodes) {
    if (pool.node_selector) {
      if (std::find(processed.begin(), processed.end(), n.name) != processed.end()) continue;
      if (!admission::label_selector_matches(*pool.node_selector, n.labels).value_or(false))
        continue;
    }
    nodes.push_back(&n);
  }
  round.nodes = nodes.size();
  if (nodes.empty()) {
    round.stopped = "no nodes";
    return round;
  }
  const pool_thresholds t = new_thresholds(pool);
  const weight_map weights = pool.resource_weights.value_or(weight_map{});
  const anomaly_condition anomaly = pool.anomaly.value_or(anomaly_condition{});

  // getNodeUsage
  std::map<std::string, node_usage, std::less<>> usages;
  for (const auto* n : nodes) {
    const node_metric_info* m = in.node_metric ? in.node_metric(n->name) : nullptr;
    if (m == nullptr || !m->has_node_metric) continue;
    const auto exp = args_.node_metric_expiration_seconds;
    if (!m->update_time_ms || (exp && *exp > 0 && now - *m->update_time_ms >= *exp * 1000))
      continue;
    node_usage u;
    u.node = n;
    u.all_pods = in.pods_on_node(*n);
    // The metrics by key, with their places in the NodeMetric (keys compared, never built).
    std::vector<std::pair<metric_ref, std::size_t>> by_key;
    by_key.reserve(m->pods.size());
    for (std::size_t i = 0; i < m->pods.size(); ++i)
      by_key.push_back({{m->pods[i].ns, m->pods[i].name, &m->pods[i].usage}, i});
    // Sorted only when out of key order (a stable sort of an ordered list changes nothing).
    const auto key_less = [](const auto& a, const auto& b) {
      return compare_keys(a.first.ns, a.first.name, b.first.ns, b.first.name) < 0;
    };
    if (!std::is_sorted(by_key.begin(), by_key.end(), key_less))
      std::stable_sort(by_key.begin(), by_key.end(), key_less);
    u.pod_metrics.reserve(by_key.size());
    for (const auto& [ref, i] : by_key) u.pod_metrics.push_back(ref);
    // Which metrics are of prod pods (every entry under a prod pod's key), found once per pod
    // rather than once per resource. The pods are scattered in memory: each one's class is
    // fetched a few pods ahead.
    std::vector<char> prod_metric(m->pods.size());
    constexpr std::size_t ahead = 4;
    for (std::size_t i = 0; i < u.all_pods.size(); ++i) {
      if (i + ahead < u.all_pods.size()) __builtin_prefetch(&u.all_pods[i + ahead]->priority);
      if (effective_priority_class(*u.all_pods[i]) == priority_class::prod)
        u.prod_pods.push_back(u.all_pods[i]);
    }
    for_each_metric_range(u.prod_pods, u.pod_metrics, [&](std::size_t, auto lo, auto hi) {
      for (auto it = lo; it != hi; ++it)
        prod_metric[by_key[static_cast<std::size_t>(it - u.pod_metrics.begin())].second] = 1;
    });
    // Each metric's usage walked once beside the (sorted) threshold resources.
    const std::size_t nr = t.resources.size();
    std::vector<std::int64_t> used(nr), prod_used(nr);
    for (std::size_t k = 0; k < nr; ++k) used[k] = amount(m->system_usage, t.resources[k]);
    for (std::size_t i = 0; i < m->pods.size(); ++i) {
      const auto& pu = m->pods[i].usage;
      auto it = pu.begin();
      for (std::size_t k = 0; it != pu.end() && k < nr;) {
        const int c = it->first.compare(t.resources[k]);
        if (c < 0) {
          ++it;
        } else if (c > 0) {
          ++k;
        } else {
          used[k] += it->second;
          if (prod_metric[i]) prod_used[k] += it->second;
          ++it;
          ++k;
        }
      }
    }
    for (std::size_t k = 0; k < nr; ++k) {
      u.usage[t.resources[k]] = used[k];
      u.prod_usage[t.resources[k]] = prod_used[k];
    }
    u.usage[std::string(names::pods)] = static_cast<std::int64_t>(u.all_pods.size());
    u.prod_usage[std::string(names::pods)] = static_cast<std::int64_t>(u.prod_pods.size());
    usages.emplace(n->name, std::move(u));
  }
  const auto thresholds = node_thresholds_of(usages, t, pool.use_deviation_thresholds);
  // Each node's thresholds by its usage (the two maps have the same keys).
  std::unordered_map<const node_usage*, const node_thresholds*> thresholds_of;
  thresholds_of.reserve(usages.size());
  auto th = thresholds.begin();
  for (const auto& [name, u] : usages) thresholds_of.emplace(&u, &(th++)->second);
  fit_cache fits;

  // classifyNodes (exclusive, first match wins).
  std::vector<node_usage*> low, high, prod_low, prod_high, both_low;
  for (auto& entry : usages) {
    // A named member, not a structured binding: Clang 14 refuses bindings captured by lambdas.
    auto& u = entry.second;
    const auto& th = *thresholds_of.at(&u);
    const bool schedulable = !u.node->unschedulable;
    auto prod_over = [&] { return !overutilized(u.prod_usage, th.prod_high).empty(); };
    auto prod_under = [&] { return schedulable && underutilized(u.prod_usage, th.prod_low); };
    if (schedulable && underutilized(u.usage, th.low)) {
      if (prod_over())
        prod_high.push_back(&u);
      else if (prod_under())
        both_low.push_back(&u);
      else
        low.push_back(&u);
    } else if (!overutilized(u.usage, th.high).empty()) {
      high.push_back(&u);
    } else if (prod_over()) {
      prod_high.push_back(&u);
    } else if (prod_under()) {
      prod_low.push_back(&u);
    }
  }
  round.low = low.size();
  round.high = high.size();
  round.prod_low = prod_low.size();
  round.prod_high = prod_high.size();
  round.both_low = both_low.size();
  if (high.empty() && prod_high.empty()) {
    round.stopped = "all nodes are under target utilization";
    return round;
  }
  // filterRealAbnormalNodes
  auto abnormal_of = [&](const std::vector<node_usage*>& src, detector_cache& cache) {
    std::vector<std::string> names;
    for (const auto* u : src) names.push_back(u->node->name);
    std::vector<const node_usage*> v;
    for (const auto& n : filter_real_abnormal_nodes(names, cache, anomaly, now))
      v.push_back(&usages.at(n));
    return v;
  };
  auto abnormal = abnormal_of(high, node_detectors_);
  auto abnormal_prod = abnormal_of(prod_high, prod_detectors_);
  round.abnormal = abnormal.size();
  round.abnormal_prod = abnormal_prod.size();
  if (abnormal.empty() && abnormal_prod.empty()) {
    round.stopped = "no node detected as anomalous";
    return round;
  }
  if (low.empty() && prod_low.empty() && both_low.empty()) {
    round.stopped = "no node is underutilized";
    return round;
  }
  for (auto* u : low) node_detectors_.reset(u->node->name, now);
  for (auto* u : prod_low) prod_detectors_.reset(u->node->name, now);
  for (auto* u : both_low) node_detectors_.reset(u->node->name, now);
  const std::size_t all_low = low.size() + prod_low.size() + both_low.size();
  if (static_cast<std::int64_t>(all_low) <= args_.number_of_nodes) {
    round.stopped = "underutilized nodes not more than numberOfNodes";
    return round;
  }
  if (all_low == nodes.size()) {
    round.stopped = "all nodes are underutilized";
    return round;
  }
  sort_nodes_by_usage(abnormal, weights, false, false);
  sort_nodes_by_usage(abnormal_prod, weights, false, true);

  // targetAvailableUsage
  auto available = [&](const std::vector<node_usage*>& dst, bool prod) {
    resource_amounts a;
    for (const auto& r : t.resources) a[r] = 0;
    for (const auto* u : dst) {
      const auto& th = *thresholds_of.at(u);
      for (const auto& r : t.resources)
        a[r] +=
            amount(prod ? th.prod_high : th.high, r) - amount(prod ? u->prod_usage : u->usage, r);
    }
    return a;
  };
  resource_amounts total = available(low, false);
  const resource_amounts prod_avail = available(prod_low, true);
  resource_amounts both_total = available(both_low, false);
  const resource_amounts prod_both = available(both_low, true);
  resource_amounts node_total;
  for (const auto& r : t.resources) node_total[r] = total[r] + both_total[r];

  // The eviction reason (overUtilizedEvictionReason), over the filled high thresholds.
  auto reason_of = [&](const node_usage& u, bool prod) {
    const auto& th = *thresholds_of.at(&u);
    const auto over = overutilized(prod ? u.prod_usage : u.usage, prod ? th.prod_high : th.high);
    const auto pct = resource_usage_percentages(prod ? u.prod_usage : u.usage, u.node->allocatable);
    const auto& percent = prod ? t.prod_high : t.high;
    std::string s = "node is overutilized, ";
    bool first = true;
    for (const auto& [r, p] : percent) {
      if (!over.count(r)) continue;
      const auto pi = pct.find(r);
      s += fmt::format("{}{} {} usage({:.2f}%)>threshold({:.2f}%)", first ? "" : ", ",
                       prod ? "prod" : "node", r, pi == pct.end() ? 0.0 : pi->second, p);
      first = false;
    }
    return s;
  };
  auto pod_filter = [&](const pod_info& p) {
    return pod_selected(p) && (!ev.filter || ev.filter(p));
  };
  const bool fit = args_.node_fit.value_or(true);

  auto balance_pods = [&](const std::vector<const node_usage*>& sources,
                          const std::vector<node_usage*>& targets_a,
                          const std::vector<node_usage*>& targets_b, resource_amounts& budget,
                          bool prod) {
    std::vector<target_ref> refs;
    for (const auto* v : {&targets_a, &targets_b})
      for (auto* u : *v) refs.emplace_back(u, thresholds_of.at(u));
    if (refs.empty()) return;
    // Resolved once per phase, not once per candidate pod.
    auto targets = resolve_targets(refs, fits);
    for (const auto* src_c : sources) {
      auto& src = usages.at(src_c->node->name);
      const auto& all = prod ? src.prod_pods : src.all_pods;
      // Each pod's metric (the last entry under its key), matched once; the removable
      // pods' kept by pod for the sort and the evictions.
      std::vector<const resource_amounts*> metric_of(all.size());
      for_each_metric_range(all, src.pod_metrics, [&](std::size_t i, auto lo, auto hi) {
        if (lo != hi) metric_of[i] = std::prev(hi)->usage;
      });
      std::vector<const pod_info*> removable;
      std::vector<std::pair<const pod_info*, const resource_amounts*>> removable_metrics;
      for (std::size_t i = 0; i < all.size(); ++i) {
        const auto* p = all[i];
        if (!pod_filter(*p)) continue;
        if (fit) {
          const auto* m = metric_of[i];
          if (m == nullptr) continue;
          if (!pod_fits_any_target(*p, *m, targets, prod)) continue;
        }
        removable.push_back(p);
        removable_metrics.emplace_back(p, metric_of[i]);
      }
      if (removable.empty()) continue;
      std::sort(removable_metrics.begin(), removable_metrics.end());
      // A pod listed twice has one metric, so the first entry for it is as good as any.
      auto removable_metric = [&removable_metrics](const pod_info& p) {
        const auto it = std::lower_bound(
            removable_metrics.begin(), removable_metrics.end(), &p,
            [](const auto& e, const pod_info* q) { return std::less<>{}(e.first, q); });
        return it->second;
      };
      // sortPodsOnOneOverloadedNode
      const auto& th = *thresholds_of.at(&src);
      const auto& limit = prod ? th.prod_high : th.high;
      const auto over = overutilized(prod ? src.prod_usage : src.usage, limit);
      weight_map w;
      resource_amounts excess;
      for (const auto& [r, used] : over) {
        const auto wi = weights.find(r);
        w[r] = wi == weights.end() ? 0 : wi->second;
        excess[r] = used - amount(limit, r);
      }
      sort_pods_by_usage(removable, excess, w, [&](const pod_info& p) -> const resource_amounts* {
        return removable_metric(p);
      });
      // evictPods
      for (const auto* p : removable) {
        // continueEvictionCond
        if (overutilized(prod ? src.prod_usage : src.usage, limit).empty()) {
          (prod ? prod_detectors_ : node_detectors_).reset(src.node->name, now);
          break;
        }
        bool exhausted = false;
        for (const auto& r : t.resources)
          if (const auto b = budget.find(r); b != budget.end() && b->second <= 0) exhausted = true;
        if (exhausted) break;
        if (!pod_filter(*p)) continue;
        if (!args_.dry_run) {
          eviction_request req;
          req.pod = p;
          req.node = src.node->name;
          req.pool = pool.name;
          req.prod = prod;
          req.reason = reason_of(src, prod);
          if (!ev.evict || !ev.evict(req)) continue;
        }
        ++round.evicted;
        const auto* m = removable_metric(*p);
        if (m == nullptr) continue;
        for (auto& [r, avail] : budget) {
          const std::int64_t q = r == names::pods ? 1 : amount(*m, r);
          avail -= q;
          if (auto nu = src.usage.find(r); nu != src.usage.end()) nu->second -= q;
          if (prod)
            if (auto pu = src.prod_usage.find(r); pu != src.prod_usage.end()) pu->second -= q;
        }
      }
    }
  };
  balance_pods(abnormal, low, both_low, node_total, false);
  // The bothLow part left after the node phase bounds what the prod phase may use of it.
  for (const auto& r : t.resources)
    if (both_total[r] > node_total[r]) both_total[r] = node_total[r];
  resource_amounts prod_total;
  for (const auto& r : t.resources)
    prod_total[r] = amount(prod_avail, r) + std::min(amount(prod_both, r), both_total[r]);
  balance_pods(abnormal_prod, prod_low, both_low, prod_total, true);

  for (const auto* u : abnormal) node_detectors_.mark_normal(u->node->name, now);
  for (const auto* u : abnormal_prod) prod_detectors_.mark_normal(u->node->name, now);
  for (const auto* u : high) processed.push_back(u->node->name);
  return round;
}

}  // namespace colony::descheduler
