#include "actors/descheduler/low_node_load.hpp"

#include <algorithm>
#include <array>
#include <limits>
#include <optional>
#include <set>

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

// Calls f(i, lo, hi) with the metrics [lo, hi) under each pod's key: one merge while the pods
// come in key order (as they are listed), a binary search per pod from the first one out of order
// on (the same ranges). The order is checked in the merge itself: a separate pass over the pods
// would read each scattered pod twice.
template <class F>
void for_each_metric_range(std::span<const pod_info* const> pods,
                           const std::vector<metric_ref>& sorted, F&& f) {
  bool ordered = true;
  auto lo = sorted.begin();
  for (std::size_t i = 0; i < pods.size(); ++i) {
    const pod_info& p = *pods[i];
    if (ordered && i > 0 && compare_keys(pods[i - 1]->ns, pods[i - 1]->name, p.ns, p.name) > 0)
      ordered = false;
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

// One node's four thresholds of a resource with capacity `capacity` (getNodeThresholds): the
// pool's percentages of the capacity, or with deviation thresholds the pool's average usage
// percent minus low (plus high), each clamped to 0..100; a 0 low percentage then means the whole
// capacity.
struct resource_percents {
  double low = 0, high = 0, prod_low = 0, prod_high = 0;  // the pool's; 0 when absent
  double avg = 0, prod_avg = 0;                           // the pool's average usage percent
};
struct resource_limits {
  std::int64_t low = 0, high = 0, prod_low = 0, prod_high = 0;
};
std::int64_t percent_of(std::int64_t capacity, double percent) {
  return static_cast<std::int64_t>(percent * 0.01 * static_cast<double>(capacity));
}
resource_limits limits_of(std::int64_t capacity, const resource_percents& p, bool use_deviation) {
  resource_limits l;
  if (!use_deviation) {
    l.low = percent_of(capacity, p.low);
    l.high = percent_of(capacity, p.high);
    l.prod_low = percent_of(capacity, p.prod_low);
    l.prod_high = percent_of(capacity, p.prod_high);
    return l;
  }
  if (p.low == min_percentage) {
    l.low = l.high = capacity;
  } else {
    l.low = percent_of(capacity, normalize_percentage(p.avg - p.low));
    l.high = percent_of(capacity, normalize_percentage(p.avg + p.high));
  }
  if (p.prod_low == min_percentage) {
    l.prod_low = l.prod_high = capacity;
  } else {
    l.prod_low = percent_of(capacity, normalize_percentage(p.prod_avg - p.prod_low));
    l.prod_high = percent_of(capacity, normalize_percentage(p.prod_avg + p.prod_high));
  }
  return l;
}

double percent_in(const std::map<std::string, double, std::less<>>& m, std::string_view r) {
  const auto it = m.find(r);
  return it == m.end() ? 0.0 : it->second;
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
  return percent_of(amount(capacity, r), percent);
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
  std::map<std::string, node_thresholds, std::less<>> out;
  for (const auto& [name, u] : usages) {
    node_thresholds nt;
    for (const auto& r : t.resources) {
      const resource_percents p{percent_in(t.low, r),      percent_in(t.high, r),
                                percent_in(t.prod_low, r), percent_in(t.prod_high, r),
                                percent_in(avg, r),        percent_in(prod_avg, r)};
      const auto l = limits_of(amount(u.node->allocatable, r), p, use_deviation);
      nt.low[r] = l.low;
      nt.high[r] = l.high;
      nt.prod_low[r] = l.prod_low;
      nt.prod_high[r] = l.prod_high;
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

// The round's nodeFit state: interned names and each target's requests (by the caller's index
// of the target's node).
struct fit_cache {
  request_names names;
  std::vector<node_requests> nodes;
};

void compute_requests(node_requests& n, const node_info& node,
                      std::span<const pod_info* const> pods, request_names& interned) {
  n.computed = true;
  n.schedulable = !node.unschedulable && node.ready;
  if (const auto cap = node.allocatable.find(names::pods); cap != node.allocatable.end())
    n.pods_cap = cap->second;
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

// A target of one eviction phase, resolved once: its node and pods (for nodeFit), whether it has
// thresholds, each threshold as a slot (the resource's index in the phase's list, the limit and
// the usage it bounds; resources the usage lacks are never checked, so they get no slot) kept in
// fit_targets::slots, [begin, end) per scope (node, prod), and its nodeFit state in the round's
// fit_cache.
struct fit_slot {
  std::size_t resource = 0;
  std::int64_t limit = 0;
  std::int64_t* used = nullptr;
};
struct fit_target {
  const node_info* node = nullptr;
  std::span<const pod_info* const> pods;
  bool has_thresholds = false;
  std::array<std::pair<std::size_t, std::size_t>, 2> slots{};  // [prod]
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
  // Blocks per superblock: as the first targets fill up with pre-reserved pods, a search would
  // otherwise skip block after block of them; superblocks skip 32 blocks at a time.
  static constexpr std::size_t blocks_per_super = 32;
  std::size_t resources = 0;
  std::vector<std::int64_t> room;   // target i, resource r: room[i * resources + r]
  std::vector<std::int64_t> max;    // block b, resource r: max[b * resources + r]
  std::vector<std::int64_t> super;  // superblock s, resource r: super[s * resources + r]
};

struct fit_targets {
  fit_cache* cache = nullptr;
  std::vector<fit_target> targets;
  std::vector<fit_slot> slots;         // the targets' slots, one range per target and scope
  std::vector<std::string> resources;  // every threshold resource of the targets
  std::optional<bool> rooms_prod;      // the scope `rooms` was built for
  room_blocks rooms;
  std::vector<std::int64_t> amounts;  // scratch: the pod's usage per resource
  pod_requests requests;              // scratch: the pod's requests
};

std::span<const fit_slot> slots_of_scope(const fit_targets& f, const fit_target& t, bool prod) {
  const auto [b, e] = t.slots[prod ? 1 : 0];
  return {f.slots.data() + b, e - b};
}

void set_room(fit_targets& f, std::size_t i, bool prod) {
  auto& rb = f.rooms;
  const std::size_t r = rb.resources;
  std::int64_t* room = rb.room.data() + i * r;
  std::fill(room, room + r, room_blocks::unlimited);
  for (const auto& s : slots_of_scope(f, f.targets[i], prod))
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

void set_super_max(fit_targets& f, std::size_t s) {
  auto& rb = f.rooms;
  const std::size_t r = rb.resources;
  const std::size_t blocks = rb.max.size() / std::max<std::size_t>(r, 1);
  const std::size_t lo = s * room_blocks::blocks_per_super;
  const std::size_t hi = std::min(lo + room_blocks::blocks_per_super, blocks);
  std::int64_t* m = rb.super.data() + s * r;
  std::fill(m, m + r, std::numeric_limits<std::int64_t>::min());
  for (std::size_t b = lo; b < hi; ++b)
    for (std::size_t x = 0; x < r; ++x) m[x] = std::max(m[x], rb.max[b * r + x]);
}

// Sets target i's room from its slots and updates its block and superblock.
void update_room(fit_targets& f, std::size_t i, bool prod) {
  set_room(f, i, prod);
  const std::size_t b = i / room_blocks::block;
  set_block_max(f, b);
  set_super_max(f, b / room_blocks::blocks_per_super);
}

void build_rooms(fit_targets& f, bool prod) {
  auto& rb = f.rooms;
  rb.resources = f.resources.size();
  const std::size_t n = f.targets.size();
  const std::size_t blocks = (n + room_blocks::block - 1) / room_blocks::block;
  rb.room.assign(n * rb.resources, 0);
  rb.max.assign(blocks * rb.resources, 0);
  const std::size_t supers =
      (blocks + room_blocks::blocks_per_super - 1) / room_blocks::blocks_per_super;
  rb.super.assign(supers * rb.resources, 0);
  for (std::size_t i = 0; i < n; ++i) set_room(f, i, prod);
  for (std::size_t b = 0; b < blocks; ++b) set_block_max(f, b);
  for (std::size_t x = 0; x < supers; ++x) set_super_max(f, x);
  f.rooms_prod = prod;
}

// Every amount within the room (r resources). Without early exits: which resource lacks room
// varies from target to target, so a branch per resource would be mispredicted.
bool admits(const std::int64_t* room, const std::int64_t* amounts, std::size_t r) {
  bool ok = true;
  for (std::size_t x = 0; x < r; ++x) ok &= amounts[x] <= room[x];
  return ok;
}

// The first target in [i, end) whose room admits `a`; end when none. R: the resources, when known
// at compile time (0: rb.resources).
template <std::size_t R>
std::size_t first_in_block(const room_blocks& rb, std::size_t i, std::size_t end,
                           const std::int64_t* a) {
  const std::size_t r = R == 0 ? rb.resources : R;
  for (const std::int64_t* room = rb.room.data() + i * r; i < end; ++i, room += r)
    if (admits(room, a, r)) return i;
  return end;
}

// The first target at or after `from` whose room admits `amounts`; targets.size() when none.
std::size_t first_room(const fit_targets& f, std::size_t from,
                       const std::vector<std::int64_t>& amounts) {
  const auto& rb = f.rooms;
  const std::size_t n = f.targets.size(), r = rb.resources;
  const std::int64_t* a = amounts.data();
  std::size_t i = from;
  constexpr std::size_t super_targets = room_blocks::block * room_blocks::blocks_per_super;
  while (i < n) {
    // A superblock or block is skipped whole when its maxima do not admit; entered at i otherwise.
    const std::size_t s = i / super_targets;
    if (!admits(rb.super.data() + s * r, a, r)) {
      i = (s + 1) * super_targets;
      continue;
    }
    const std::size_t b = i / room_blocks::block;
    if (!admits(rb.max.data() + b * r, a, r)) {
      i = (b + 1) * room_blocks::block;
      continue;
    }
    const std::size_t end = std::min((b + 1) * room_blocks::block, n);
    // Two resources (cpu and memory) is the usual case: its loop is unrolled.
    i = r == 2 ? first_in_block<2>(rb, i, end, a) : first_in_block<0>(rb, i, end, a);
    if (i < end) return i;
  }
  return n;
}

bool fits_node(fit_targets& f, fit_target& t) {
  if (!t.requests->computed) compute_requests(*t.requests, *t.node, t.pods, f.cache->names);
  return fits_requests(f.requests, *t.requests, *t.node, f.cache->names);
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
    if (!t.has_thresholds) {
      if (fits_node(resolved, t)) return true;
      continue;
    }
    const auto slots = slots_of_scope(resolved, t, prod);
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

// Targets over node_usage maps (pod_fits_any_node_with_threshold); cache.nodes by target.
fit_targets resolve_targets(std::span<const target_ref> targets, fit_cache& cache) {
  fit_targets out;
  out.cache = &cache;
  cache.nodes.resize(targets.size());
  out.targets.reserve(targets.size());
  auto index_of = [&out](const std::string& r) {
    const auto it = std::find(out.resources.begin(), out.resources.end(), r);
    if (it != out.resources.end()) return static_cast<std::size_t>(it - out.resources.begin());
    out.resources.push_back(r);
    return out.resources.size() - 1;
  };
  auto add_slots = [&](const resource_amounts& th, resource_amounts& usage) {
    const std::size_t begin = out.slots.size();
    for (const auto& [r, limit] : th)
      if (const auto it = usage.find(r); it != usage.end())
        out.slots.push_back({index_of(r), limit, &it->second});
    return std::pair{begin, out.slots.size()};
  };
  for (std::size_t i = 0; i < targets.size(); ++i) {
    const auto& [u, th] = targets[i];
    fit_target f;
    f.node = u->node;
    f.pods = u->all_pods;
    f.requests = &cache.nodes[i];
    if (th != nullptr) {
      f.has_thresholds = true;
      f.slots[0] = add_slots(th->high, u->usage);
      f.slots[1] = add_slots(th->prod_high, u->prod_usage);
    }
    out.targets.push_back(f);
  }
  return out;
}

// A pool's node with a fresh NodeMetric, as getNodeUsage leaves it (NodeUsage); its usage,
// thresholds and capacity per threshold resource are in the round's node tables, at its place.
struct pool_node {
  const node_info* node = nullptr;
  std::vector<const pod_info*> all_pods, prod_pods;
  std::vector<metric_ref> pod_metrics;
};

// Amounts per pool node and threshold resource, node i's resource k at [i * r + k]. Every node of
// a pool has the same resources in its usage and threshold maps (the pool's threshold resources),
// so the round keeps them as rows rather than as string-keyed maps per node.
class node_table {
 public:
  node_table(std::size_t nodes, std::size_t r) : r_(r), v_(nodes * r, 0) {}
  std::int64_t* operator[](std::size_t i) { return v_.data() + i * r_; }
  const std::int64_t* operator[](std::size_t i) const { return v_.data() + i * r_; }

 private:
  std::size_t r_;
  std::vector<std::int64_t> v_;
};

// getNodeUsage for one node: its pods, its NodeMetric's pods by key, the prod pods, and its usage
// and prod usage of each threshold resource (`resources`, sorted) into use / prod_use. The pods
// resource, when a threshold resource, is the node's pod count (prod pods for prod usage).
void node_usage_of(pool_node& u, const node_metric_info& m,
                   const std::vector<std::string>& resources, std::int64_t* use,
                   std::int64_t* prod_use) {
  // The metrics by key, with their places in the NodeMetric (keys compared, never built).
  std::vector<std::pair<metric_ref, std::size_t>> by_key;
  by_key.reserve(m.pods.size());
  for (std::size_t i = 0; i < m.pods.size(); ++i)
    by_key.push_back({{m.pods[i].ns, m.pods[i].name, &m.pods[i].usage}, i});
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
  std::vector<char> prod_metric(m.pods.size());
  constexpr std::size_t ahead = 4;
  for (std::size_t i = 0; i < u.all_pods.size(); ++i) {
    if (i + ahead < u.all_pods.size()) __builtin_prefetch(&u.all_pods[i + ahead]->priority);
    if (effective_priority_class(*u.all_pods[i]) == priority_class::prod) {
      u.prod_pods.push_back(u.all_pods[i]);
      __builtin_prefetch(&u.all_pods[i]->ns);  // its key is matched to the metrics next
    }
  }
  for_each_metric_range(u.prod_pods, u.pod_metrics, [&](std::size_t, auto lo, auto hi) {
    for (auto it = lo; it != hi; ++it)
      prod_metric[by_key[static_cast<std::size_t>(it - u.pod_metrics.begin())].second] = 1;
  });
  // Each metric's usage walked once beside the (sorted) threshold resources.
  const std::size_t nr = resources.size();
  for (std::size_t k = 0; k < nr; ++k) {
    use[k] = amount(m.system_usage, resources[k]);
    prod_use[k] = 0;
  }
  for (std::size_t i = 0; i < m.pods.size(); ++i) {
    const auto& pu = m.pods[i].usage;
    auto it = pu.begin();
    for (std::size_t k = 0; it != pu.end() && k < nr;) {
      const int c = it->first.compare(resources[k]);
      if (c < 0) {
        ++it;
      } else if (c > 0) {
        ++k;
      } else {
        use[k] += it->second;
        if (prod_metric[i]) prod_use[k] += it->second;
        ++it;
        ++k;
      }
    }
  }
  if (const auto p = std::lower_bound(resources.begin(), resources.end(), names::pods);
      p != resources.end() && *p == names::pods) {
    const auto k = static_cast<std::size_t>(p - resources.begin());
    use[k] = static_cast<std::int64_t>(u.all_pods.size());
    prod_use[k] = static_cast<std::int64_t>(u.prod_pods.size());
  }
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
  // The threshold resources (sorted; every one in the usage and threshold maps of every node).
  const auto& res = t.resources;
  const std::size_t nr = res.size();
  auto weight_of = [&weights](std::string_view r) {
    const auto it = weights.find(r);
    return it == weights.end() ? std::int64_t{0} : it->second;
  };

  // getNodeUsage over the nodes with a fresh NodeMetric, in name order (a name listed twice
  // counts once, the first time), as Koordinator's map by node name would hold them.
  std::vector<std::pair<const node_info*, const node_metric_info*>> usable;
  usable.reserve(nodes.size());
  for (const auto* n : nodes) {
    const node_metric_info* m = in.node_metric ? in.node_metric(n->name) : nullptr;
    if (m == nullptr || !m->has_node_metric) continue;
    const auto exp = args_.node_metric_expiration_seconds;
    if (!m->update_time_ms || (exp && *exp > 0 && now - *m->update_time_ms >= *exp * 1000))
      continue;
    usable.emplace_back(n, m);
  }
  const auto name_less = [](const auto& a, const auto& b) { return a.first->name < b.first->name; };
  if (!std::is_sorted(usable.begin(), usable.end(), name_less))
    std::stable_sort(usable.begin(), usable.end(), name_less);
  usable.erase(
      std::unique(usable.begin(), usable.end(),
                  [](const auto& a, const auto& b) { return a.first->name == b.first->name; }),
      usable.end());
  const std::size_t nn = usable.size();
  std::vector<pool_node> pn(nn);
  node_table use(nn, nr), prod_use(nn, nr), cap(nn, nr);
  for (std::size_t i = 0; i < nn; ++i) {
    pn[i].node = usable[i].first;
    pn[i].all_pods = in.pods_on_node(*pn[i].node);
  }
  // The pods, the NodeMetric entries and their usage maps are scattered over the heap; read node
  // by node, getNodeUsage would mostly wait on memory. So what a node reads is fetched ahead:
  // two nodes ahead each pod's class fields and the entries, one node ahead the first node of
  // each entry's usage map (its address is in the entry fetched the node before); a prod pod's
  // key once its class is known (node_usage_of). Written here rather than in a helper: GCC takes
  // a function of prefetches alone for a pure one and drops its calls.
  constexpr std::size_t ahead = 2;
  for (std::size_t i = 0; i < nn + ahead; ++i) {
    if (i < nn) {
      for (const auto* p : pn[i].all_pods) __builtin_prefetch(&p->priority);
      const auto& entries = usable[i].second->pods;
      const auto* b = reinterpret_cast<const char*>(entries.data());
      const auto* e = reinterpret_cast<const char*>(entries.data() + entries.size());
      for (; b < e; b += 64) __builtin_prefetch(b);
    }
    if (i < ahead) continue;
    if (i + 1 - ahead < nn)
      for (const auto& entry : usable[i + 1 - ahead].second->pods)
        if (!entry.usage.empty()) __builtin_prefetch(&*entry.usage.begin());
    const std::size_t at = i - ahead;
    auto& u = pn[at];
    node_usage_of(u, *usable[at].second, res, use[at], prod_use[at]);
    for (std::size_t k = 0; k < nr; ++k) cap[at][k] = amount(u.node->allocatable, res[k]);
  }
  // A resource's pods amount outside the threshold resources (node_usage_score reads it too).
  const bool pods_listed = std::binary_search(res.begin(), res.end(), names::pods);

  // getNodeThresholds (node_thresholds_of over the tables).
  node_table low_th(nn, nr), high_th(nn, nr), prod_low_th(nn, nr), prod_high_th(nn, nr);
  {
    std::vector<resource_percents> pct(nr);
    for (std::size_t k = 0; k < nr; ++k)
      pct[k] = {percent_in(t.low, res[k]), percent_in(t.high, res[k]),
                percent_in(t.prod_low, res[k]), percent_in(t.prod_high, res[k])};
    if (pool.use_deviation_thresholds && nn > 0) {
      // calcAverageResourceUsagePercent, summed in node-name order as over the map.
      for (std::size_t i = 0; i < nn; ++i)
        for (std::size_t k = 0; k < nr; ++k) {
          const std::int64_t total = cap[i][k];
          if (total == 0) continue;
          pct[k].avg += static_cast<double>(use[i][k]) / static_cast<double>(total) * 100.0;
          pct[k].prod_avg +=
              static_cast<double>(prod_use[i][k]) / static_cast<double>(total) * 100.0;
        }
      const auto n = static_cast<double>(nn);
      for (auto& p : pct) {
        p.avg /= n;
        p.prod_avg /= n;
      }
    }
    for (std::size_t i = 0; i < nn; ++i)
      for (std::size_t k = 0; k < nr; ++k) {
        const auto l = limits_of(cap[i][k], pct[k], pool.use_deviation_thresholds);
        low_th[i][k] = l.low;
        high_th[i][k] = l.high;
        prod_low_th[i][k] = l.prod_low;
        prod_high_th[i][k] = l.prod_high;
      }
  }
  // isNodeOverutilized / isNodeUnderutilized over a row: some resource strictly above.
  auto above = [nr](const std::int64_t* usage, const std::int64_t* limit) {
    for (std::size_t k = 0; k < nr; ++k)
      if (usage[k] > limit[k]) return true;
    return false;
  };
  fit_cache fits;
  fits.nodes.resize(nn);

  // classifyNodes (exclusive, first match wins).
  std::vector<std::size_t> low, high, prod_low, prod_high, both_low;
  for (std::size_t i = 0; i < nn; ++i) {
    const bool schedulable = !pn[i].node->unschedulable;
    const bool prod_over = above(prod_use[i], prod_high_th[i]);
    const bool prod_under = schedulable && !above(prod_use[i], prod_low_th[i]);
    if (schedulable && !above(use[i], low_th[i])) {
      if (prod_over)
        prod_high.push_back(i);
      else if (prod_under)
        both_low.push_back(i);
      else
        low.push_back(i);
    } else if (above(use[i], high_th[i])) {
      high.push_back(i);
    } else if (prod_over) {
      prod_high.push_back(i);
    } else if (prod_under) {
      prod_low.push_back(i);
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
  const auto name_of = [&pn](std::size_t i) -> const std::string& { return pn[i].node->name; };
  // filterRealAbnormalNodes: the sources kept, a subsequence of `src` by name.
  auto abnormal_of = [&](const std::vector<std::size_t>& src, detector_cache& cache) {
    std::vector<std::string> names;
    names.reserve(src.size());
    for (const auto i : src) names.push_back(name_of(i));
    std::vector<std::size_t> v;
    std::size_t j = 0;
    for (const auto& n : filter_real_abnormal_nodes(names, cache, anomaly, now)) {
      while (name_of(src[j]) != n) ++j;
      v.push_back(src[j++]);
    }
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
  for (const auto i : low) node_detectors_.reset(name_of(i), now);
  for (const auto i : prod_low) prod_detectors_.reset(name_of(i), now);
  for (const auto i : both_low) node_detectors_.reset(name_of(i), now);
  const std::size_t all_low = low.size() + prod_low.size() + both_low.size();
  if (static_cast<std::int64_t>(all_low) <= args_.number_of_nodes) {
    round.stopped = "underutilized nodes not more than numberOfNodes";
    return round;
  }
  if (all_low == nodes.size()) {
    round.stopped = "all nodes are underutilized";
    return round;
  }
  // sortNodesByUsage: node_usage_score over the node's usage map (the threshold resources and
  // pods) against its allocatable, descending, ties in classified order.
  std::vector<std::int64_t> weight_k(nr);
  for (std::size_t k = 0; k < nr; ++k) weight_k[k] = weight_of(res[k]);
  auto usage_score = [&](std::size_t i, bool prod) {
    const std::int64_t* u = prod ? prod_use[i] : use[i];
    std::int64_t score = 0, weight_sum = 0;
    auto add = [&](std::int64_t used, std::int64_t c, std::int64_t weight) {
      const std::int64_t s = c == 0 ? 0 : std::min(used, c) * 1000 / c;
      score += s * weight;
      weight_sum += weight;
    };
    for (std::size_t k = 0; k < nr; ++k) add(u[k], cap[i][k], weight_k[k]);
    if (!pods_listed)
      add(static_cast<std::int64_t>(prod ? pn[i].prod_pods.size() : pn[i].all_pods.size()),
          amount(pn[i].node->allocatable, names::pods), weight_of(names::pods));
    return weight_sum == 0 ? 0 : score / weight_sum;
  };
  auto sort_by_usage = [&](std::vector<std::size_t>& v, bool prod) {
    std::vector<std::pair<std::int64_t, std::size_t>> scored;
    scored.reserve(v.size());
    for (const auto i : v) scored.emplace_back(usage_score(i, prod), i);
    std::stable_sort(scored.begin(), scored.end(),
                     [](const auto& a, const auto& b) { return a.first > b.first; });
    for (std::size_t x = 0; x < v.size(); ++x) v[x] = scored[x].second;
  };
  sort_by_usage(abnormal, false);
  sort_by_usage(abnormal_prod, true);

  // targetAvailableUsage: per threshold resource, the targets' high (prodHigh) less their usage.
  using amounts_k = std::vector<std::int64_t>;
  auto available = [&](const std::vector<std::size_t>& dst, bool prod) {
    amounts_k a(nr, 0);
    for (const auto i : dst) {
      const std::int64_t* lim = prod ? prod_high_th[i] : high_th[i];
      const std::int64_t* u = prod ? prod_use[i] : use[i];
      for (std::size_t k = 0; k < nr; ++k) a[k] += lim[k] - u[k];
    }
    return a;
  };
  amounts_k total = available(low, false);
  const amounts_k prod_avail = available(prod_low, true);
  amounts_k both_total = available(both_low, false);
  const amounts_k prod_both = available(both_low, true);
  amounts_k node_total(nr);
  for (std::size_t k = 0; k < nr; ++k) node_total[k] = total[k] + both_total[k];

  // The eviction reason (overUtilizedEvictionReason), over the pool's high (prodHigh)
  // percentages, whose resources are threshold resources (new_thresholds).
  std::array<std::vector<std::pair<std::size_t, double>>, 2> percents;  // [prod]: (k, percent)
  for (const bool prod : {false, true})
    for (const auto& [r, p] : prod ? t.prod_high : t.high)
      percents[prod ? 1 : 0].emplace_back(
          static_cast<std::size_t>(std::lower_bound(res.begin(), res.end(), r) - res.begin()), p);
  auto reason_of = [&](std::size_t i, bool prod) {
    const std::int64_t* u = prod ? prod_use[i] : use[i];
    const std::int64_t* lim = prod ? prod_high_th[i] : high_th[i];
    std::string s = "node is overutilized, ";
    bool first = true;
    for (const auto& [k, p] : percents[prod ? 1 : 0]) {
      if (u[k] <= lim[k]) continue;
      const std::int64_t c = cap[i][k];
      // resourceUsagePercentages: none (0 here) for a resource without capacity.
      const double pct = c == 0 ? 0.0 : 100.0 * static_cast<double>(u[k]) / static_cast<double>(c);
      s += fmt::format("{}{} {} usage({:.2f}%)>threshold({:.2f}%)", first ? "" : ", ",
                       prod ? "prod" : "node", res[k], pct, p);
      first = false;
    }
    return s;
  };
  auto pod_filter = [&](const pod_info& p) {
    return pod_selected(p) && (!ev.filter || ev.filter(p));
  };
  const bool fit = args_.node_fit.value_or(true);

  // The targets of a phase (targets_a, then targets_b), resolved once: every threshold resource
  // is a slot of every target (node scope: high over usage; prod scope: prodHigh over prod usage).
  auto resolve = [&](const std::vector<std::size_t>& targets_a,
                     const std::vector<std::size_t>& targets_b) {
    fit_targets out;
    out.cache = &fits;
    out.resources = res;
    out.targets.reserve(targets_a.size() + targets_b.size());
    out.slots.reserve(2 * nr * (targets_a.size() + targets_b.size()));
    for (const auto* v : {&targets_a, &targets_b})
      for (const auto i : *v) {
        fit_target f;
        f.node = pn[i].node;
        f.pods = pn[i].all_pods;
        f.requests = &fits.nodes[i];
        f.has_thresholds = true;
        for (const bool prod : {false, true}) {
          const std::size_t begin = out.slots.size();
          std::int64_t* u = prod ? prod_use[i] : use[i];
          const std::int64_t* lim = prod ? prod_high_th[i] : high_th[i];
          for (std::size_t k = 0; k < nr; ++k) out.slots.push_back({k, lim[k], u + k});
          f.slots[prod ? 1 : 0] = {begin, out.slots.size()};
        }
        out.targets.push_back(f);
      }
    return out;
  };

  auto balance_pods = [&](const std::vector<std::size_t>& sources,
                          const std::vector<std::size_t>& targets_a,
                          const std::vector<std::size_t>& targets_b, amounts_k& budget, bool prod) {
    if (targets_a.empty() && targets_b.empty()) return;
    auto targets = resolve(targets_a, targets_b);
    // Every field of a source's pods is read (the evictor's filter, the fit, the sort), and the
    // pods are scattered over the heap: each source's pods are fetched while the one two before
    // it is processed, and their annotation maps' first nodes (read by the filter and the sort:
    // eviction and deletion cost) while the one before it is. (Inline: see getNodeUsage.)
    constexpr std::size_t ahead = 2;
    for (std::size_t x = 0; x < sources.size() + ahead; ++x) {
      if (x < sources.size())
        for (const auto* p : prod ? pn[sources[x]].prod_pods : pn[sources[x]].all_pods) {
          const auto* b = reinterpret_cast<const char*>(p);
          for (std::size_t off = 0; off < sizeof(pod_info); off += 64) __builtin_prefetch(b + off);
        }
      if (x < ahead) continue;
      if (x + 1 - ahead < sources.size())
        for (const auto* p :
             prod ? pn[sources[x + 1 - ahead]].prod_pods : pn[sources[x + 1 - ahead]].all_pods)
          if (!p->annotations.empty()) __builtin_prefetch(&*p->annotations.begin());
      const std::size_t si = sources[x - ahead];
      const auto& src = pn[si];
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
      std::int64_t* usage = prod ? prod_use[si] : use[si];
      const std::int64_t* limit = prod ? prod_high_th[si] : high_th[si];
      weight_map w;
      resource_amounts excess;
      for (std::size_t k = 0; k < nr; ++k)
        if (usage[k] > limit[k]) {
          w[res[k]] = weight_k[k];
          excess[res[k]] = usage[k] - limit[k];
        }
      sort_pods_by_usage(removable, excess, w, [&](const pod_info& p) -> const resource_amounts* {
        return removable_metric(p);
      });
      // evictPods
      for (const auto* p : removable) {
        // continueEvictionCond
        if (!above(usage, limit)) {
          (prod ? prod_detectors_ : node_detectors_).reset(src.node->name, now);
          break;
        }
        bool exhausted = false;
        for (std::size_t k = 0; k < nr; ++k)
          if (budget[k] <= 0) exhausted = true;
        if (exhausted) break;
        if (!pod_filter(*p)) continue;
        if (!args_.dry_run) {
          eviction_request req;
          req.pod = p;
          req.node = src.node->name;
          req.pool = pool.name;
          req.prod = prod;
          req.reason = reason_of(si, prod);
          if (!ev.evict || !ev.evict(req)) continue;
        }
        ++round.evicted;
        const auto* m = removable_metric(*p);
        if (m == nullptr) continue;
        for (std::size_t k = 0; k < nr; ++k) {
          const std::int64_t q = res[k] == names::pods ? 1 : amount(*m, res[k]);
          budget[k] -= q;
          use[si][k] -= q;
          if (prod) prod_use[si][k] -= q;
        }
      }
    }
  };
  balance_pods(abnormal, low, both_low, node_total, false);
  // The bothLow part left after the node phase bounds what the prod phase may use of it.
  for (std::size_t k = 0; k < nr; ++k)
    if (both_total[k] > node_total[k]) both_total[k] = node_total[k];
  amounts_k prod_total(nr);
  for (std::size_t k = 0; k < nr; ++k)
    prod_total[k] = prod_avail[k] + std::min(prod_both[k], both_total[k]);
  balance_pods(abnormal_prod, prod_low, both_low, prod_total, true);

  for (const auto i : abnormal) node_detectors_.mark_normal(name_of(i), now);
  for (const auto i : abnormal_prod) prod_detectors_.mark_normal(name_of(i), now);
  for (const auto i : high) processed.push_back(name_of(i));
  return round;
}

}  // namespace colony::descheduler
