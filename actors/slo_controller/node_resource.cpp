#include "actors/slo_controller/node_resource.hpp"

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <functional>
#include <limits>

#include "actors/slo_controller/go_arith.hpp"
#include "actors/slo_controller/internal/json_fields.hpp"
#include "messages/names.hpp"

namespace colony::slo_controller {

namespace {

// Slot of a 64-bit value in a power-of-two table: the top bits of value * 2^64/phi (Fibonacci
// hashing), so ids 1, 2, 3... and std::hash values spread alike.
std::size_t home_slot(std::uint64_t v, std::size_t mask) {
  return static_cast<std::size_t>((v * 0x9e3779b97f4a7c15ULL) >> 32) & mask;
}

// Backward-shift deletion for linear probing: after emptying slot i, moves later members of the
// run back so that every remaining member stays reachable from its home slot.
template <class Slot, class Live, class Home>
void erase_slot(std::vector<Slot>& t, std::size_t i, Live&& live, Home&& home) {
  const std::size_t mask = t.size() - 1;
  for (std::size_t j = (i + 1) & mask;; j = (j + 1) & mask) {
    if (!live(t[j])) break;
    const std::size_t k = home(t[j]);
    // Move t[j] to i if its home k is not cyclically within (i, j].
    const bool stays = i <= j ? (i < k && k <= j) : (i < k || k <= j);
    if (!stays) {
      t[i] = t[j];
      i = j;
    }
  }
  t[i] = Slot{};
}

}  // namespace

std::size_t pod_key_interner::find_entry(std::uint64_t hash) const {
  if (by_key_.empty()) return entries_.size();
  const std::size_t mask = by_key_.size() - 1;
  for (std::size_t i = home_slot(hash, mask);; i = (i + 1) & mask) {
    const key_slot& sl = by_key_[i];
    if (sl.entry == 0) return entries_.size();
    if (sl.hash == hash && entries_[sl.entry - 1].key == buf_) return sl.entry - 1;
  }
}

std::size_t pod_key_interner::entry_of(std::uint64_t id) const {
  if (id == 0 || by_id_.empty()) return entries_.size();
  const std::size_t mask = by_id_.size() - 1;
  for (std::size_t i = home_slot(id, mask);; i = (i + 1) & mask) {
    const id_slot& sl = by_id_[i];
    if (sl.id == 0) return entries_.size();
    if (sl.id == id) return sl.entry;
  }
}

void pod_key_interner::grow() {
  const std::size_t cap = by_key_.empty() ? 64 : by_key_.size() * 2;
  by_key_.assign(cap, key_slot{});
  by_id_.assign(cap, id_slot{});
  const std::size_t mask = cap - 1;
  for (std::size_t e = 0; e < entries_.size(); ++e) {
    if (entries_[e].id == 0) continue;
    std::size_t i = home_slot(entries_[e].hash, mask);
    while (by_key_[i].entry != 0) i = (i + 1) & mask;
    by_key_[i] = {entries_[e].hash, static_cast<std::uint32_t>(e + 1)};
    i = home_slot(entries_[e].id, mask);
    while (by_id_[i].id != 0) i = (i + 1) & mask;
    by_id_[i] = {entries_[e].id, static_cast<std::uint32_t>(e)};
  }
}

namespace {

// "<ns length>:<ns><name>": length-prefixed so that (ns, name) pairs map to distinct keys whatever
// the characters.
void append_key(std::string& out, std::string_view ns, std::string_view name) {
  char len[24];
  const auto r = std::to_chars(len, len + sizeof len, ns.size());
  out.append(len, r.ptr).append(":").append(ns).append(name);
}

}  // namespace

std::uint64_t pod_key_interner::find(std::string_view ns, std::string_view name) {
  buf_.clear();
  append_key(buf_, ns, name);
  const std::size_t e = find_entry(std::hash<std::string_view>{}(buf_));
  return e == entries_.size() ? 0 : entries_[e].id;
}

void pod_key_interner::find_many(
    std::span<const std::pair<std::string_view, std::string_view>> keys,
    std::span<std::uint64_t> ids) {
  const std::size_t n = keys.size();
  if (by_key_.empty()) {
    for (std::size_t i = 0; i < n; ++i) ids[i] = 0;
    return;
  }
  // Pass by pass, so that each pass's cache misses (slot, entry, key bytes) overlap across the
  // batch instead of following one another key by key. Prefetches are hints: results are those
  // of find().
  batch_keys_.clear();
  batch_ends_.clear();
  batch_hashes_.clear();
  const std::size_t mask = by_key_.size() - 1;
  for (const auto& [ns, name] : keys) {
    const std::size_t begin = batch_keys_.size();
    append_key(batch_keys_, ns, name);
    batch_ends_.push_back(batch_keys_.size());
    const std::uint64_t h = std::hash<std::string_view>{}(
        std::string_view(batch_keys_).substr(begin, batch_keys_.size() - begin));
    batch_hashes_.push_back(h);
    __builtin_prefetch(&by_key_[home_slot(h, mask)]);
  }
  // The first slot of each run whose hash matches: its entry is the candidate.
  batch_entries_.assign(n, entries_.size());
  for (std::size_t k = 0; k < n; ++k) {
    for (std::size_t i = home_slot(batch_hashes_[k], mask);; i = (i + 1) & mask) {
      const key_slot& sl = by_key_[i];
      if (sl.entry == 0) break;
      if (sl.hash == batch_hashes_[k]) {
        batch_entries_[k] = sl.entry - 1;
        __builtin_prefetch(&entries_[sl.entry - 1]);
        break;
      }
    }
  }
  for (std::size_t k = 0; k < n; ++k)
    if (batch_entries_[k] != entries_.size())
      __builtin_prefetch(entries_[batch_entries_[k]].key.data());
  std::size_t begin = 0;
  for (std::size_t k = 0; k < n; ++k) {
    const std::string_view key =
        std::string_view(batch_keys_).substr(begin, batch_ends_[k] - begin);
    begin = batch_ends_[k];
    const std::size_t e = batch_entries_[k];
    if (e == entries_.size()) {
      ids[k] = 0;
    } else if (entries_[e].key == key) {
      ids[k] = entries_[e].id;
    } else {  // equal 64-bit hashes, different keys: search the whole run
      buf_.assign(key);
      const std::size_t f = find_entry(batch_hashes_[k]);
      ids[k] = f == entries_.size() ? 0 : entries_[f].id;
    }
  }
}

std::uint64_t pod_key_interner::intern(std::string_view ns, std::string_view name) {
  if (const std::uint64_t id = find(ns, name); id != 0) {
    retain(id);
    return id;
  }
  if ((held_ + 1) * 2 > by_key_.size()) grow();
  std::size_t e;
  if (free_.empty()) {
    e = entries_.size();
    entries_.emplace_back();
  } else {
    e = free_.back();
    free_.pop_back();
  }
  entry& x = entries_[e];
  x.id = next_++;
  x.refs = 1;
  x.hash = std::hash<std::string_view>{}(buf_);
  x.key = buf_;
  const std::size_t mask = by_key_.size() - 1;
  std::size_t i = home_slot(x.hash, mask);
  while (by_key_[i].entry != 0) i = (i + 1) & mask;
  by_key_[i] = {x.hash, static_cast<std::uint32_t>(e + 1)};
  i = home_slot(x.id, mask);
  while (by_id_[i].id != 0) i = (i + 1) & mask;
  by_id_[i] = {x.id, static_cast<std::uint32_t>(e)};
  ++held_;
  return x.id;
}

bool pod_key_interner::retain(std::uint64_t id) {
  const std::size_t e = entry_of(id);
  if (e == entries_.size()) return false;
  ++entries_[e].refs;
  return true;
}

void pod_key_interner::release(std::uint64_t id) {
  const std::size_t e = entry_of(id);
  if (e == entries_.size()) return;
  if (--entries_[e].refs == 0) erase(e);
}

void pod_key_interner::erase(std::size_t e) {
  entry& x = entries_[e];
  const std::size_t mask = by_key_.size() - 1;
  std::size_t i = home_slot(x.hash, mask);
  while (by_key_[i].entry != e + 1) i = (i + 1) & mask;
  erase_slot(
      by_key_, i, [](const key_slot& s) { return s.entry != 0; },
      [&](const key_slot& s) { return home_slot(s.hash, mask); });
  i = home_slot(x.id, mask);
  while (by_id_[i].id != x.id) i = (i + 1) & mask;
  erase_slot(
      by_id_, i, [](const id_slot& s) { return s.id != 0; },
      [&](const id_slot& s) { return home_slot(s.id, mask); });
  x.id = 0;
  x.refs = 0;
  x.key.clear();
  x.key.shrink_to_fit();
  free_.push_back(static_cast<std::uint32_t>(e));
  --held_;
}

std::uint64_t pod_key_interner::references(std::uint64_t id) const {
  const std::size_t e = entry_of(id);
  return e == entries_.size() ? 0 : entries_[e].refs;
}

std::optional<std::pair<std::string_view, std::string_view>> pod_key_interner::key_of(
    std::uint64_t id) const {
  const std::size_t e = entry_of(id);
  if (e == entries_.size()) return std::nullopt;
  // "<ns length>:<ns><name>", as find() builds it.
  const std::string_view k = entries_[e].key;
  const auto colon = k.find(':');
  std::size_t ns_len = 0;
  std::from_chars(k.data(), k.data() + colon, ns_len);
  return std::pair{k.substr(colon + 1, ns_len), k.substr(colon + 1 + ns_len)};
}

resource_list pod_request(const std::vector<resource_list>& containers,
                          const std::vector<resource_list>& init_containers,
                          const resource_list& overhead) {
  resource_list sum;
  for (const auto& c : containers) {
    sum.cpu_milli += c.cpu_milli;
    sum.memory_bytes += c.memory_bytes;
  }
  for (const auto& c : init_containers) {
    sum.cpu_milli = std::max(sum.cpu_milli, c.cpu_milli);
    sum.memory_bytes = std::max(sum.memory_bytes, c.memory_bytes);
  }
  sum.cpu_milli += overhead.cpu_milli;
  sum.memory_bytes += overhead.memory_bytes;
  return sum;
}

pod_sample sample_of(const pod_input& p) noexcept {
  return {p.key_id, p.requests.cpu_milli, p.requests.memory_bytes, p.priority, p.qos, p.phase};
}

pod_metric_sample sample_of(const pod_metric& m) noexcept {
  return {m.key_id, m.usage.cpu_milli, m.usage.memory_bytes, m.priority, m.qos};
}

namespace {

// Term names and units: static strings so that an explanation allocates only its vector.
constexpr std::string_view u_cpu = "milli-cpu";
constexpr std::string_view u_mem = "bytes";
constexpr std::string_view u_pct = "percent";

constexpr std::string_view reason_batch_degraded =
    "degrade node resource because of abnormal nodeMetric, reason: degradedByBatchResource";
constexpr std::string_view reason_mid_degraded =
    "degrade node Mid resource because of abnormal nodeMetric, reason: degradedByMidResource";
constexpr std::string_view reason_disabled =
    "node colocation is disabled in Config, reason: DisableInConfig";

struct cm {  // a cpu/memory pair: the only two resources these formulas touch
  std::int64_t cpu = 0;
  std::int64_t mem = 0;
  cm& operator+=(const cm& o) {
    cpu += o.cpu;
    mem += o.mem;
    return *this;
  }
};
cm of(const resource_list& r) { return {r.cpu_milli, r.memory_bytes}; }
cm max_of(const cm& a, const cm& b) { return {std::max(a.cpu, b.cpu), std::max(a.mem, b.mem)}; }

bool active(pod_phase p) { return p == pod_phase::running || p == pod_phase::pending; }
bool low_priority(priority_class p) {
  return p == priority_class::batch || p == priority_class::free;
}

std::uint64_t string_key_hash(std::string_view ns, std::string_view name) {
  // Lookup only (never used for ordering), so std::hash's per-build value is fine.
  std::uint64_t h = std::hash<std::string_view>{}(ns);
  h ^= std::hash<std::string_view>{}(name) + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
  return h;
}

// One kernel serves pod_input/pod_metric records and pod_sample/pod_metric_sample: these read the
// fields it needs from either.
cm request_of(const pod_input& p) { return of(p.requests); }
cm request_of(const pod_sample& p) { return {p.cpu_milli, p.memory_bytes}; }
cm usage_of(const pod_metric& m) { return of(m.usage); }
cm usage_of(const pod_metric_sample& m) { return {m.cpu_milli, m.memory_bytes}; }

// How pods and metrics are keyed: by interned id (equal ids <=> equal keys) or by namespace/name
// (equal hashes are confirmed on the strings).
struct by_id {
  template <class T>
  static std::uint64_t key(const T& x) {
    return x.key_id;
  }
  template <class A, class B>
  static bool same(const A&, const B&) {
    return true;
  }
};
struct by_name {
  template <class T>
  static std::uint64_t key(const T& x) {
    return string_key_hash(x.ns, x.name);
  }
  template <class A, class B>
  static bool same(const A& a, const B& b) {
    return a.ns == b.ns && a.name == b.name;
  }
};

constexpr std::uint8_t metric_shadowed = 1;
constexpr std::uint8_t metric_matched = 2;

// The per-pod sums both formulas read, from one pass over the pods.
struct pod_sums {
  cm prod_allocated;  // midresource getUnallocated: Running/Pending pods not Mid/Batch/Free
  cm hp_request;      // batch: Running/Pending pods not Batch/Free (Prod/Mid/None) ...
  cm hp_used;         // ... usage (request if no metric; LSE cpu by request), plus dangling
  cm hp_max_used_req;
  cm no_metric_request;
  cm lse_cpu_request_over_usage;
  cm dangling;  // metrics whose pod is not a Running/Pending pod in the list, by metric priority
};

// Matches pods to pod metrics as Koordinator's podMetricMap does (for duplicate metric keys the
// LAST one wins: later map writes overwrite earlier ones), and sums the pods for the mid
// (getUnallocated) and batch (calculateOnNode) formulas.
// Asks for every cache line of [p, p + n) at once: a node's samples are a few KB that are cold each
// round (a round over thousands of nodes does not fit in cache), and fetching the lines in parallel
// costs about one memory latency instead of one per line while the hardware prefetcher ramps up.
// Records (pod_input, pod_metric) are mostly cold bytes and are left to the hardware. A hint only:
// no effect on results.
template <class T>
void prefetch_all(const T* p, std::size_t n) {
  if constexpr (sizeof(T) <= 64) {
    const char* const b = reinterpret_cast<const char*>(p);
    const std::size_t bytes = n * sizeof(T);
    for (std::size_t off = 0; off < bytes; off += 64) __builtin_prefetch(b + off);
  }
}

template <class Match, class Pods, class Metrics>
pod_sums sum_pods(const Pods& pods, const Metrics& metrics, calculator_scratch& s) {
  const std::size_t nm = metrics.size();
  prefetch_all(metrics.data(), nm);
  prefetch_all(pods.data(), pods.size());
  s.metric_state.assign(nm + 1, 0);
  std::size_t cap = 16;
  int shift = 60;  // 64 - log2(cap): the slot is the top bits of key * 2^64/phi (Fibonacci hashing)
  while (cap < nm * 4) {
    cap <<= 1;
    --shift;
  }
  if (s.slots.size() < cap) s.slots.resize(cap);
  if (++s.generation == 0) {  // wrapped: stale slots could look live, so clear them once
    for (auto& sl : s.slots) sl.generation = 0;
    s.generation = 1;
  }
  const std::uint32_t gen = s.generation;
  const std::uint64_t mask = cap - 1;
  calculator_scratch::slot* const slots = s.slots.data();
  for (std::size_t m = 0; m < nm; ++m) {
    const auto& pm = metrics[m];
    const std::uint64_t k = Match::key(pm);
    for (std::uint64_t i = (k * 0x9e3779b97f4a7c15ULL) >> shift;; i = (i + 1) & mask) {
      calculator_scratch::slot& sl = slots[i];
      if (sl.generation != gen) {
        sl = {k, static_cast<std::uint32_t>(m), gen};
        break;
      }
      if (sl.key == k && Match::same(metrics[sl.metric], pm)) {
        s.metric_state[sl.metric] = metric_shadowed;
        sl.metric = static_cast<std::uint32_t>(m);
        break;
      }
    }
  }
  // Branch-free in the pods' classes: they are mixed at random along a node's pod list, so branches
  // on them would mispredict about once per pod. Each sum takes its term through an all-ones or
  // all-zeros mask instead; adding a masked-out 0 changes nothing, so the sums are the branchy
  // formula's exactly.
  auto masked = [](const cm& v, std::int64_t m) { return cm{v.cpu & m, v.mem & m}; };
  auto all_if = [](bool b) { return -static_cast<std::int64_t>(b); };
  pod_sums out;
  for (const auto& pod : pods) {
    const std::int64_t act = all_if(active(pod.phase));  // Running/Pending: counted, matches
    std::int64_t has = 0;                                // has a metric (only matters if active)
    cm used;
    if (nm != 0) {
      const std::uint64_t k = Match::key(pod);
      std::size_t found = nm;  // metric_state[nm] absorbs the mark of a pod without metric
      for (std::uint64_t i = (k * 0x9e3779b97f4a7c15ULL) >> shift;; i = (i + 1) & mask) {
        const calculator_scratch::slot& sl = slots[i];
        if (sl.generation != gen) break;
        if (sl.key == k && Match::same(metrics[sl.metric], pod)) {
          found = sl.metric;
          break;
        }
      }
      has = all_if(found != nm);
      s.metric_state[found] |= static_cast<std::uint8_t>(metric_matched & act);
      used = masked(usage_of(metrics[found != nm ? found : 0]), has);
    }
    const cm req = request_of(pod);
    // HP = Prod/Mid/None (LP pods are ignored; their metric is not dangling); prod = not Mid
    // either.
    const std::int64_t hp = act & all_if(!low_priority(pod.priority));
    const std::int64_t prod = hp & all_if(pod.priority != priority_class::mid);
    const std::int64_t lse = all_if(pod.qos == qos_class::lse);
    out.prod_allocated += masked(req, prod);
    out.hp_request += masked(req, hp);
    // Usage: the request when there is no metric yet (e.g. just scheduled); LSE pods do not lend
    // CPU, so their CPU counts by request and their memory by usage.
    const std::int64_t cpu_by_usage = has & ~lse;
    out.hp_used += masked({(used.cpu & cpu_by_usage) | (req.cpu & ~cpu_by_usage),
                           (used.mem & has) | (req.mem & ~has)},
                          hp);
    out.no_metric_request += masked(req, hp & ~has);
    out.lse_cpu_request_over_usage.cpu += (req.cpu - used.cpu) & (hp & has & lse);
    out.hp_max_used_req += masked(max_of(req, used), hp & has);  // nothing without a metric
  }
  for (std::size_t m = 0; m < nm; ++m) {
    const bool dangling = s.metric_state[m] == 0 && !low_priority(metrics[m].priority);
    out.dangling += masked(usage_of(metrics[m]), all_if(dangling));
  }
  out.hp_used += out.dangling;
  out.hp_max_used_req += out.dangling;
  return out;
}

// GetNodeReservationFromKubelet: max(capacity - allocatable, 0) per resource.
cm kubelet_reserved(const node_input& n) {
  return {std::max<std::int64_t>(n.capacity.cpu_milli - n.allocatable.cpu_milli, 0),
          std::max<std::int64_t>(n.capacity.memory_bytes - n.allocatable.memory_bytes, 0)};
}

// GetNodeReservationFromAnnotation + GetNodeReservationResources: a non-empty reservedCPUs replaces
// the cpu entry by the cpuset's size; a malformed cpuset voids the whole annotation.
cm annotation_reserved(const node_input& n) {
  if (!n.annotation_reservation) return {};
  const auto& r = *n.annotation_reservation;
  cm out{r.cpu_milli.value_or(0), r.memory_bytes.value_or(0)};
  if (!r.reserved_cpus.empty()) {
    auto size = cpuset_size(r.reserved_cpus);
    if (!size) return {};
    out.cpu = *size * 1000;
  }
  return out;
}

// GetHostAppHPUsed: host applications whose default priority is above the resource's priority.
cm host_app_hp_used(const node_metric_input& m, priority_class res_priority) {
  cm sum;
  for (const auto& h : m.host_app_metrics) {
    if (get_default_priority_by_priority_class(h.priority) <=
        get_default_priority_by_priority_class(res_priority))
      continue;
    sum += of(h.usage);
  }
  return sum;
}

void reset_explanation(explanation& e, std::string_view resource, std::string_view reason,
                       const colocation_strategy& strategy, const node_metric_input* metric,
                       event_time now) {
  e.resource = resource;
  e.formula = "reset";
  e.terms.clear();
  e.terms.push_back({"reset", 0, "", reason});
  if (metric == nullptr) {
    e.terms.push_back({"nodeMetric", 0, "", "missing"});
  } else if (!metric->update_time) {
    e.terms.push_back({"nodeMetricUpdateTime", 0, "", "missing"});
  } else if (reason == reason_batch_degraded || reason == reason_mid_degraded) {
    e.terms.push_back({"nodeMetricAgeSeconds", (now.value - metric->update_time->value) / 1000,
                       "seconds", "now - NodeMetric status.updateTime"});
    e.terms.push_back({"degradeTimeMinutes", strategy.degrade_time_minutes.value_or(15), "minutes",
                       "degrade when the NodeMetric is older than this"});
  }
  e.terms.push_back({"result", 0, "", "removed from node capacity and allocatable"});
}

// --- batch (batchresource.Plugin.calculateOnNode + util.CalculateBatchResourceByPolicy) ---

void calculate_batch(const colocation_strategy& strategy, const node_input& node,
                     const node_metric_input& metric, const pod_sums& sums,
                     node_resource_result& out) {
  const cm hp_request = sums.hp_request;
  const cm hp_used = sums.hp_used;
  const cm hp_max_used_req = sums.hp_max_used_req;
  const cm no_metric_request = sums.no_metric_request;
  const cm lse_cpu_request_over_usage = sums.lse_cpu_request_over_usage;
  const cm dangling = sums.dangling;

  const cm cap = of(node.capacity);
  const std::int64_t cpu_reclaim = strategy.cpu_reclaim_threshold_percent.value_or(60);
  const std::int64_t mem_reclaim = strategy.memory_reclaim_threshold_percent.value_or(65);
  const cm margin{go::multiply_milli_quant(cap.cpu, go::reserve_ratio(cpu_reclaim)),
                  go::multiply_quant(cap.mem, go::reserve_ratio(mem_reclaim))};
  const cm host_hp = host_app_hp_used(metric, priority_class::batch);
  cm system_used = of(metric.system_usage);
  const cm system_usage_only = system_used;
  system_used += host_hp;
  const cm kubelet = kubelet_reserved(node);
  const cm anno = annotation_reserved(node);
  const cm node_reserved = max_of(kubelet, anno);
  const cm sys_or_reserved = max_of(system_used, node_reserved);

  auto clamp0 = [](std::int64_t v) { return std::max<std::int64_t>(v, 0); };
  const cm by_usage{clamp0(cap.cpu - margin.cpu - sys_or_reserved.cpu - hp_used.cpu),
                    clamp0(cap.mem - margin.mem - sys_or_reserved.mem - hp_used.mem)};
  const cm by_request{clamp0(cap.cpu - margin.cpu - node_reserved.cpu - hp_request.cpu),
                      clamp0(cap.mem - margin.mem - node_reserved.mem - hp_request.mem)};
  const cm by_max{clamp0(cap.cpu - margin.cpu - sys_or_reserved.cpu - hp_max_used_req.cpu),
                  clamp0(cap.mem - margin.mem - sys_or_reserved.mem - hp_max_used_req.mem)};

  // CPU: "maxUsageRequest" or, for anything else (request is not supported for CPU), "usage".
  const calculate_policy cpu_policy =
      strategy.cpu_calculate_policy.value_or(calculate_policy::usage);
  const bool cpu_max = cpu_policy == calculate_policy::max_usage_request;
  std::int64_t batch_cpu = cpu_max ? by_max.cpu : by_usage.cpu;
  std::optional<std::int64_t> cpu_cap;
  if (strategy.batch_cpu_threshold_percent) {
    cpu_cap =
        go::multiply_milli_quant(cap.cpu, go::percent_ratio(*strategy.batch_cpu_threshold_percent));
    batch_cpu = std::min(batch_cpu, *cpu_cap);
  }
  const calculate_policy mem_policy =
      strategy.memory_calculate_policy.value_or(calculate_policy::usage);
  const bool mem_req = mem_policy == calculate_policy::request;
  const bool mem_max = mem_policy == calculate_policy::max_usage_request;
  std::int64_t batch_mem = mem_req ? by_request.mem : (mem_max ? by_max.mem : by_usage.mem);
  std::optional<std::int64_t> mem_cap;
  if (strategy.batch_memory_threshold_percent) {
    mem_cap =
        go::multiply_quant(cap.mem, go::percent_ratio(*strategy.batch_memory_threshold_percent));
    batch_mem = std::min(batch_mem, *mem_cap);
  }
  out.batch_cpu_milli = batch_cpu;
  out.batch_memory_bytes = batch_mem;

  // Explanations, in formula order.
  auto& ec = out.batch_cpu;
  ec.resource = names::batch_cpu;
  ec.formula = cpu_max ? "maxUsageRequest" : "usage";
  ec.terms.clear();
  ec.terms.reserve(18);
  ec.terms.push_back({"cpuCalculatePolicy", 0, "", to_string(cpu_policy)});
  ec.terms.push_back({"nodeCapacity", cap.cpu, u_cpu, "node status.capacity cpu"});
  ec.terms.push_back(
      {"cpuReclaimThresholdPercent", cpu_reclaim, u_pct, "share of capacity batch may reclaim"});
  ec.terms.push_back({"nodeSafetyMargin", margin.cpu, u_cpu,
                      "capacity * (100 - cpuReclaimThresholdPercent) / 100"});
  ec.terms.push_back(
      {"systemUsage", system_usage_only.cpu, u_cpu, "NodeMetric status.nodeMetric.systemUsage"});
  ec.terms.push_back({"hostAppHPUsed", host_hp.cpu, u_cpu, "usage of Prod/Mid host applications"});
  ec.terms.push_back({"kubeletReserved", kubelet.cpu, u_cpu, "max(capacity - allocatable, 0)"});
  ec.terms.push_back({"annotationReserved", anno.cpu, u_cpu, names::annotation_node_reservation});
  ec.terms.push_back(
      {"nodeReserved", node_reserved.cpu, u_cpu, "max(kubeletReserved, annotationReserved)"});
  ec.terms.push_back({"systemUsageOrNodeReserved", sys_or_reserved.cpu, u_cpu,
                      "max(systemUsage + hostAppHPUsed, nodeReserved)"});
  if (cpu_max) {
    ec.terms.push_back(
        {"podHPMaxUsedRequest", hp_max_used_req.cpu, u_cpu,
         "sum over Prod/Mid/None pods of max(request, usage), plus dangling metrics"});
  } else {
    ec.terms.push_back({"podHPUsed", hp_used.cpu, u_cpu,
                        "usage of Prod/Mid/None pods (request if no metric; LSE: request), plus "
                        "dangling metrics"});
    ec.terms.push_back({"podHPNoMetricRequest", no_metric_request.cpu, u_cpu,
                        "part: requests of HP pods without metric"});
    ec.terms.push_back({"podLSERequestOverUsage", lse_cpu_request_over_usage.cpu, u_cpu,
                        "part: LSE pods' cpu request minus usage"});
  }
  ec.terms.push_back(
      {"podDanglingUsed", dangling.cpu, u_cpu, "part: metrics of HP pods not in the pod list"});
  if (cpu_cap) {
    ec.terms.push_back({"batchCPUThresholdPercent", *strategy.batch_cpu_threshold_percent, u_pct,
                        "cap on batch-cpu"});
    ec.terms.push_back(
        {"batchCPUThreshold", *cpu_cap, u_cpu, "capacity * batchCPUThresholdPercent / 100"});
  }
  ec.terms.push_back({"result", batch_cpu, u_cpu, "max(formula, 0), capped"});

  auto& em = out.batch_memory;
  em.resource = names::batch_memory;
  em.formula = mem_req ? "request" : (mem_max ? "maxUsageRequest" : "usage");
  em.terms.clear();
  em.terms.reserve(18);
  em.terms.push_back({"memoryCalculatePolicy", 0, "", to_string(mem_policy)});
  em.terms.push_back({"nodeCapacity", cap.mem, u_mem, "node status.capacity memory"});
  em.terms.push_back(
      {"memoryReclaimThresholdPercent", mem_reclaim, u_pct, "share of capacity batch may reclaim"});
  em.terms.push_back({"nodeSafetyMargin", margin.mem, u_mem,
                      "capacity * (100 - memoryReclaimThresholdPercent) / 100"});
  if (!mem_req) {
    em.terms.push_back(
        {"systemUsage", system_usage_only.mem, u_mem, "NodeMetric status.nodeMetric.systemUsage"});
    em.terms.push_back(
        {"hostAppHPUsed", host_hp.mem, u_mem, "usage of Prod/Mid host applications"});
  }
  em.terms.push_back({"kubeletReserved", kubelet.mem, u_mem, "max(capacity - allocatable, 0)"});
  em.terms.push_back({"annotationReserved", anno.mem, u_mem, names::annotation_node_reservation});
  em.terms.push_back(
      {"nodeReserved", node_reserved.mem, u_mem, "max(kubeletReserved, annotationReserved)"});
  if (mem_req) {
    em.terms.push_back(
        {"podHPRequest", hp_request.mem, u_mem, "requests of Running/Pending Prod/Mid/None pods"});
  } else {
    em.terms.push_back({"systemUsageOrNodeReserved", sys_or_reserved.mem, u_mem,
                        "max(systemUsage + hostAppHPUsed, nodeReserved)"});
    if (mem_max) {
      em.terms.push_back(
          {"podHPMaxUsedRequest", hp_max_used_req.mem, u_mem,
           "sum over Prod/Mid/None pods of max(request, usage), plus dangling metrics"});
    } else {
      em.terms.push_back(
          {"podHPUsed", hp_used.mem, u_mem,
           "usage of Prod/Mid/None pods (request if no metric), plus dangling metrics"});
      em.terms.push_back({"podHPNoMetricRequest", no_metric_request.mem, u_mem,
                          "part: requests of HP pods without metric"});
      // Go's message for usage+threshold prints podHPMaxUsedRequest (a Koordinator quirk); keep it
      // available so koordinator_message can reproduce the text.
      if (mem_cap) {
        em.terms.push_back({"podHPMaxUsedRequest", hp_max_used_req.mem, u_mem,
                            "not used by the usage formula; printed by Koordinator's message"});
      }
    }
    em.terms.push_back(
        {"podDanglingUsed", dangling.mem, u_mem, "part: metrics of HP pods not in the pod list"});
  }
  if (mem_cap) {
    em.terms.push_back({"batchMemoryThresholdPercent", *strategy.batch_memory_threshold_percent,
                        u_pct, "cap on batch-memory"});
    em.terms.push_back(
        {"batchMemoryThreshold", *mem_cap, u_mem, "capacity * batchMemoryThresholdPercent / 100"});
  }
  em.terms.push_back({"result", batch_mem, u_mem, "max(formula, 0), capped"});
}

// --- mid (midresource.Plugin.calculate + util.CalculateMidResourceBy*) ---

void calculate_mid(const colocation_strategy& strategy, const node_input& node,
                   const node_metric_input& metric, const cm& prod_allocated,
                   node_resource_result& out) {
  const cm cap = of(node.capacity);
  const std::int64_t cpu_thr_pct = strategy.mid_cpu_threshold_percent.value_or(100);
  const std::int64_t mem_thr_pct = strategy.mid_memory_threshold_percent.value_or(100);
  const double cpu_thr_ratio = go::percent_ratio(cpu_thr_pct);
  const double mem_thr_ratio = go::percent_ratio(mem_thr_pct);
  const std::int64_t cpu_max = go::to_int64(static_cast<double>(cap.cpu) * cpu_thr_ratio);
  const std::int64_t mem_max = go::to_int64(static_cast<double>(cap.mem) * mem_thr_ratio);
  auto& ec = out.mid_cpu;
  auto& em = out.mid_memory;
  ec.resource = names::mid_cpu;
  em.resource = names::mid_memory;
  ec.terms.clear();
  em.terms.clear();
  ec.terms.reserve(16);
  em.terms.reserve(16);

  if (strategy.mid_reclaim_mode && *strategy.mid_reclaim_mode == reclaim_mode::static_mode) {
    // CalculateMidResourceByStaticMode.
    const std::int64_t cpu_pct = strategy.mid_static_cpu_reserved_percent.value_or(0);
    const std::int64_t mem_pct = strategy.mid_static_memory_reserved_percent.value_or(0);
    const std::int64_t cpu_res = go::multiply_milli_quant(cap.cpu, go::percent_ratio(cpu_pct));
    const std::int64_t mem_res = go::multiply_quant(cap.mem, go::percent_ratio(mem_pct));
    out.mid_cpu_milli = cpu_res > cpu_max ? cpu_max : cpu_res;
    out.mid_memory_bytes = mem_res > mem_max ? mem_max : mem_res;
    ec.formula = em.formula = "static";
    ec.terms.push_back({"midReclaimMode", 0, "", "static"});
    ec.terms.push_back({"nodeCapacity", cap.cpu, u_cpu, "node status.capacity cpu"});
    ec.terms.push_back(
        {"midStaticCPUReservedPercent", cpu_pct, u_pct, "share of capacity reserved for mid"});
    ec.terms.push_back(
        {"midStaticReserved", cpu_res, u_cpu, "capacity * midStaticCPUReservedPercent / 100"});
    ec.terms.push_back({"midCPUThresholdPercent", cpu_thr_pct, u_pct, "cap on mid-cpu"});
    ec.terms.push_back({"midThreshold", cpu_max, u_cpu, "capacity * midCPUThresholdPercent / 100"});
    ec.terms.push_back(
        {"result", out.mid_cpu_milli, u_cpu, "min(midStaticReserved, midThreshold)"});
    em.terms.push_back({"midReclaimMode", 0, "", "static"});
    em.terms.push_back({"nodeCapacity", cap.mem, u_mem, "node status.capacity memory"});
    em.terms.push_back(
        {"midStaticMemoryReservedPercent", mem_pct, u_pct, "share of capacity reserved for mid"});
    em.terms.push_back(
        {"midStaticReserved", mem_res, u_mem, "capacity * midStaticMemoryReservedPercent / 100"});
    em.terms.push_back({"midMemoryThresholdPercent", mem_thr_pct, u_pct, "cap on mid-memory"});
    em.terms.push_back(
        {"midThreshold", mem_max, u_mem, "capacity * midMemoryThresholdPercent / 100"});
    em.terms.push_back(
        {"result", out.mid_memory_bytes, u_mem, "min(midStaticReserved, midThreshold)"});
    return;
  }

  const cm prod_reclaimable = metric.prod_reclaimable ? of(*metric.prod_reclaimable) : cm{};
  const cm host_hp = host_app_hp_used(metric, priority_class::mid);
  cm system_used = of(metric.system_usage);
  system_used += host_hp;
  const cm kubelet = kubelet_reserved(node);
  const cm anno = annotation_reserved(node);
  const cm node_reserved = max_of(system_used, max_of(kubelet, anno));
  // getUnallocated: prod_allocated = requests of Running/Pending pods not Mid, Batch or Free.
  const cm unallocated{std::max<std::int64_t>(cap.cpu - node_reserved.cpu - prod_allocated.cpu, 0),
                       std::max<std::int64_t>(cap.mem - node_reserved.mem - prod_allocated.mem, 0)};
  // getNodeUnused: capacity - nodeUsage; an incomplete nodeUsage gives an empty list (0).
  const bool usage_valid =
      metric.node_usage.cpu_milli.has_value() && metric.node_usage.memory_bytes.has_value();
  const cm unused = usage_valid ? cm{cap.cpu - *metric.node_usage.cpu_milli,
                                     cap.mem - *metric.node_usage.memory_bytes}
                                : cm{};
  std::int64_t cpu = std::min(prod_reclaimable.cpu, unused.cpu);
  if (cpu < 0) cpu = 0;
  std::int64_t mem = std::min(prod_reclaimable.mem, unused.mem);
  if (mem < 0) mem = 0;
  const std::int64_t unalloc_pct = strategy.mid_unallocated_percent.value_or(0);
  const double unalloc_ratio = go::percent_ratio(unalloc_pct);
  const std::int64_t adj_cpu = go::to_int64(static_cast<double>(unallocated.cpu) * unalloc_ratio);
  const std::int64_t adj_mem = go::to_int64(static_cast<double>(unallocated.mem) * unalloc_ratio);
  cpu += adj_cpu;
  mem += adj_mem;
  if (cpu > cpu_max) cpu = cpu_max;
  if (mem > mem_max) mem = mem_max;
  out.mid_cpu_milli = cpu;
  out.mid_memory_bytes = mem;

  ec.formula = em.formula = "dynamic";
  auto fill = [&](explanation& e, std::int64_t capv, std::int64_t prod, std::int64_t usage,
                  bool usage_known, std::int64_t unusedv, std::int64_t sys, std::int64_t host,
                  std::int64_t kub, std::int64_t an, std::int64_t reserved, std::int64_t alloc,
                  std::int64_t unalloc, std::int64_t adj, std::int64_t thr_pct, std::int64_t thr,
                  std::int64_t res, std::string_view unit, std::string_view thr_name) {
    e.terms.push_back({"midReclaimMode", 0, "", "dynamic"});
    e.terms.push_back({"nodeCapacity", capv, unit, "node status.capacity"});
    e.terms.push_back({"prodReclaimable", prod, unit,
                       metric.prod_reclaimable ? "NodeMetric status.prodReclaimableMetric"
                                               : "missing: taken as 0"});
    e.terms.push_back({"nodeUsage", usage, unit,
                       usage_known ? "NodeMetric status.nodeMetric.nodeUsage"
                                   : "incomplete nodeUsage: NodeUnused taken as 0"});
    e.terms.push_back({"nodeUnused", unusedv, unit, "capacity - nodeUsage"});
    e.terms.push_back({"systemUsage", sys, unit, "NodeMetric status.nodeMetric.systemUsage"});
    e.terms.push_back({"hostAppHPUsed", host, unit, "usage of Prod host applications"});
    e.terms.push_back({"kubeletReserved", kub, unit, "max(capacity - allocatable, 0)"});
    e.terms.push_back({"annotationReserved", an, unit, names::annotation_node_reservation});
    e.terms.push_back({"nodeReserved", reserved, unit,
                       "max(systemUsage + hostAppHPUsed, kubeletReserved, annotationReserved)"});
    e.terms.push_back(
        {"prodPodAllocated", alloc, unit, "requests of Running/Pending pods not Mid/Batch/Free"});
    e.terms.push_back(
        {"unallocated", unalloc, unit, "max(capacity - nodeReserved - prodPodAllocated, 0)"});
    e.terms.push_back(
        {"midUnallocatedPercent", unalloc_pct, u_pct, "share of unallocated lent to mid"});
    e.terms.push_back(
        {"unallocatedForMid", adj, unit, "unallocated * midUnallocatedPercent / 100"});
    e.terms.push_back({thr_name, thr_pct, u_pct, "cap on the mid resource"});
    e.terms.push_back({"midThreshold", thr, unit, "capacity * threshold percent / 100"});
    e.terms.push_back(
        {"result", res, unit,
         "min(max(min(prodReclaimable, nodeUnused), 0) + unallocatedForMid, midThreshold)"});
  };
  fill(ec, cap.cpu, prod_reclaimable.cpu, metric.node_usage.cpu_milli.value_or(0), usage_valid,
       unused.cpu, metric.system_usage.cpu_milli, host_hp.cpu, kubelet.cpu, anno.cpu,
       node_reserved.cpu, prod_allocated.cpu, unallocated.cpu, adj_cpu, cpu_thr_pct, cpu_max, cpu,
       u_cpu, "midCPUThresholdPercent");
  fill(em, cap.mem, prod_reclaimable.mem, metric.node_usage.memory_bytes.value_or(0), usage_valid,
       unused.mem, metric.system_usage.memory_bytes, host_hp.mem, kubelet.mem, anno.mem,
       node_reserved.mem, prod_allocated.mem, unallocated.mem, adj_mem, mem_thr_pct, mem_max, mem,
       u_mem, "midMemoryThresholdPercent");
}

// --- message formatting (Go's fmt %v) ---

// fmt's %v for a float64 (strconv.FormatFloat(f, 'g', -1, 64)): shortest round-trip digits; %e
// form when the decimal exponent is < -4 or >= 6 ("if precision was the shortest possible, use
// precision 6 for this decision", strconv/ftoa.go), so 1e6 prints as "1e+06".
std::string go_float(double f) {
  if (f == 0) return std::signbit(f) ? "-0" : "0";
  if (std::isnan(f)) return "NaN";
  if (std::isinf(f)) return f > 0 ? "+Inf" : "-Inf";
  char buf[64];
  auto r = std::to_chars(buf, buf + sizeof buf, f, std::chars_format::scientific);
  std::string sci(buf, r.ptr);  // e.g. "-1.2345e-05"
  bool neg = sci[0] == '-';
  if (neg) sci.erase(0, 1);
  auto epos = sci.find('e');
  std::string mant = sci.substr(0, epos);
  int exp = std::stoi(sci.substr(epos + 1));
  std::string digits;
  for (char c : mant) {
    if (c != '.') digits += c;
  }
  std::string out;
  if (exp < -4 || exp >= 6) {
    out = digits.substr(0, 1);
    if (digits.size() > 1) out += "." + digits.substr(1);
    char eb[16];
    std::snprintf(eb, sizeof eb, "e%c%02d", exp < 0 ? '-' : '+', exp < 0 ? -exp : exp);
    out += eb;
  } else if (exp < 0) {
    out = "0." + std::string(static_cast<std::size_t>(-exp - 1), '0') + digits;
  } else if (static_cast<std::size_t>(exp) + 1 >= digits.size()) {
    out = digits + std::string(static_cast<std::size_t>(exp) + 1 - digits.size(), '0');
  } else {
    out = digits.substr(0, static_cast<std::size_t>(exp) + 1) + "." +
          digits.substr(static_cast<std::size_t>(exp) + 1);
  }
  return neg ? "-" + out : out;
}

const term* find_term(const explanation& e, std::string_view name) {
  for (const auto& t : e.terms) {
    if (t.name == name) return &t;
  }
  return nullptr;
}
std::int64_t tv(const explanation& e, std::string_view name) {
  const term* t = find_term(e, name);
  return t != nullptr ? t->value : 0;
}

}  // namespace

std::string koordinator_message(const explanation& e) {
  auto s = [](std::int64_t v) { return std::to_string(v); };
  auto g = [](std::int64_t v) { return std::to_string(go::giga(v)); };
  if (e.formula == "reset") {
    const term* t = find_term(e, "reset");
    return t != nullptr ? std::string(t->text) : std::string();
  }
  if (e.resource == names::batch_cpu) {
    std::string pod_label = e.formula == "maxUsageRequest" ? "podHPMaxUsedRequest" : "podHPUsed";
    std::string body = "nodeCapacity:" + s(tv(e, "nodeCapacity")) +
                       " - nodeSafetyMargin:" + s(tv(e, "nodeSafetyMargin")) +
                       " - systemUsageOrNodeReserved:" + s(tv(e, "systemUsageOrNodeReserved")) +
                       " - " + pod_label + ":" + s(tv(e, pod_label));
    std::string out = "batchAllocatable[CPU(Milli-Core)]:" + s(tv(e, "result")) + " = ";
    if (const term* thr = find_term(e, "batchCPUThresholdPercent")) {
      return out + "min(nodeCapacity:" + s(tv(e, "nodeCapacity")) +
             " * thresholdRatio:" + go_float(go::percent_ratio(thr->value)) + ", " + body + ")";
    }
    return out + body;
  }
  if (e.resource == names::batch_memory) {
    std::string body = "nodeCapacity:" + g(tv(e, "nodeCapacity")) +
                       " - nodeSafetyMargin:" + g(tv(e, "nodeSafetyMargin"));
    const term* thr = find_term(e, "batchMemoryThresholdPercent");
    if (e.formula == "request") {
      body += " - nodeReserved:" + g(tv(e, "nodeReserved")) +
              " - podHPRequest:" + g(tv(e, "podHPRequest"));
    } else if (e.formula == "maxUsageRequest" || thr != nullptr) {
      // Koordinator prints podHPMaxUsedRequest for usage+threshold too (plugins/util/util.go).
      body += " - systemUsage:" + g(tv(e, "systemUsageOrNodeReserved")) +
              " - podHPMaxUsedRequest:" + g(tv(e, "podHPMaxUsedRequest"));
    } else {
      body += " - systemUsage:" + g(tv(e, "systemUsageOrNodeReserved")) +
              " - podHPUsed:" + g(tv(e, "podHPUsed"));
    }
    std::string out = "batchAllocatable[Mem(GB)]:" + g(tv(e, "result")) + " = ";
    if (thr != nullptr) {
      return out + "min(nodeCapacity:" + g(tv(e, "nodeCapacity")) +
             " * thresholdRatio:" + go_float(go::percent_ratio(thr->value)) + ", " + body + ")";
    }
    return out + body;
  }
  const bool cpu = e.resource == names::mid_cpu;
  auto q = [&](std::int64_t v) { return cpu ? s(v) : g(v); };
  std::string head = cpu ? "midAllocatable[CPU(milli-core)]:" : "midAllocatable[Memory(GB)]:";
  std::string thr_name = cpu ? "midCPUThresholdPercent" : "midMemoryThresholdPercent";
  std::string thr_ratio = go_float(go::percent_ratio(tv(e, thr_name)));
  if (e.formula == "static") {
    std::string pct_name = cpu ? "midStaticCPUReservedPercent" : "midStaticMemoryReservedPercent";
    return head + q(tv(e, "result")) + " = min(nodeCapacity:" + q(tv(e, "nodeCapacity")) +
           " * staticReservedPercent:" + go_float(go::percent_ratio(tv(e, pct_name))) +
           ", nodeCapacity:" + q(tv(e, "nodeCapacity")) + " * thresholdRatio:" + thr_ratio + ")";
  }
  return head + q(tv(e, "result")) + " = min(min(ProdReclaimable:" + q(tv(e, "prodReclaimable")) +
         ", NodeUnused:" + q(tv(e, "nodeUnused")) + ") + Unallocated:" + q(tv(e, "unallocated")) +
         " * midUnallocatedRatio:" + go_float(go::percent_ratio(tv(e, "midUnallocatedPercent"))) +
         ", NodeCapacity:" + q(tv(e, "nodeCapacity")) + " * thresholdRatio:" + thr_ratio + ")";
}

std::string describe(const explanation& e) {
  std::string out = std::string(e.resource) + " (" + std::string(e.formula) + ")\n";
  for (const auto& t : e.terms) {
    out += "  " + std::string(t.name) + " = ";
    if (t.unit.empty()) {
      out += std::string(t.text) + "\n";
      continue;
    }
    out += std::to_string(t.value) + " " + std::string(t.unit);
    if (!t.text.empty()) out += "  (" + std::string(t.text) + ")";
    out += "\n";
  }
  return out;
}

bool is_degrade_needed(const colocation_strategy& strategy, const node_metric_input* metric,
                       event_time now) {
  if (metric == nullptr || !metric->update_time) return true;
  const std::int64_t minutes = strategy.degrade_time_minutes.value_or(15);
  // time.Duration(minutes) * time.Minute; saturate instead of wrapping for absurd values.
  constexpr std::int64_t limit = std::numeric_limits<std::int64_t>::max() / 60000;
  const std::int64_t window =
      minutes > limit ? std::numeric_limits<std::int64_t>::max() : minutes * 60000;
  if (metric->update_time->value > std::numeric_limits<std::int64_t>::max() - window) return false;
  return now.value > metric->update_time->value + window;  // now.After(updateTime + window)
}

namespace {

// The degrade check and the two formulas around sum_pods; `sum` runs sum_pods on the node's inputs.
template <class Sum>
node_resource_result calculate(const colocation_strategy& strategy, const node_input& node,
                               const node_metric_input* metric, event_time now, Sum&& sum) {
  node_resource_result out;
  if (is_degrade_needed(strategy, metric, now)) {
    out.degraded = out.batch_reset = out.mid_reset = true;
    out.batch_reason = reason_batch_degraded;
    out.mid_reason = reason_mid_degraded;
    reset_explanation(out.batch_cpu, names::batch_cpu, reason_batch_degraded, strategy, metric,
                      now);
    reset_explanation(out.batch_memory, names::batch_memory, reason_batch_degraded, strategy,
                      metric, now);
    reset_explanation(out.mid_cpu, names::mid_cpu, reason_mid_degraded, strategy, metric, now);
    reset_explanation(out.mid_memory, names::mid_memory, reason_mid_degraded, strategy, metric,
                      now);
    return out;
  }
  const pod_sums sums = sum();
  calculate_mid(strategy, node, *metric, sums.prod_allocated, out);
  calculate_batch(strategy, node, *metric, sums, out);
  return out;
}

}  // namespace

node_resource_result calculate_node_resource(const colocation_strategy& strategy,
                                             const node_input& node,
                                             const std::vector<pod_input>& pods,
                                             const node_metric_input* metric, event_time now,
                                             calculator_scratch& scratch) {
  return calculate(strategy, node, metric, now, [&] {
    const auto& metrics = metric->pod_metrics;
    bool interned = true;
    for (const auto& pm : metrics) interned = interned && pm.key_id != 0;
    for (const auto& pod : pods) interned = interned && pod.key_id != 0;
    return interned ? sum_pods<by_id>(pods, metrics, scratch)
                    : sum_pods<by_name>(pods, metrics, scratch);
  });
}

node_resource_result calculate_node_resource(const colocation_strategy& strategy,
                                             const node_input& node,
                                             std::span<const pod_sample> pods,
                                             const node_metric_input* metric,
                                             std::span<const pod_metric_sample> pod_metrics,
                                             event_time now, calculator_scratch& scratch) {
  return calculate(strategy, node, metric, now,
                   [&] { return sum_pods<by_id>(pods, pod_metrics, scratch); });
}

namespace {

// Whether the node has any of the four *-ratio labels. They share one prefix, so one tree descent
// finds the only keys that can be one of them (instead of one descent per label, on every node of
// every round).
bool has_ratio_label(const node_labels& labels) {
  constexpr std::string_view prefix = "node.koordinator.sh/";
  static_assert(label_cpu_reclaim_ratio.starts_with(prefix) &&
                label_memory_reclaim_ratio.starts_with(prefix) &&
                label_mid_static_cpu_reserved_ratio.starts_with(prefix) &&
                label_mid_static_memory_reserved_ratio.starts_with(prefix));
  for (auto it = labels.lower_bound(prefix);
       it != labels.end() && std::string_view(it->first).starts_with(prefix); ++it) {
    const std::string_view k = it->first;
    if (k == label_cpu_reclaim_ratio || k == label_memory_reclaim_ratio ||
        k == label_mid_static_cpu_reserved_ratio || k == label_mid_static_memory_reserved_ratio)
      return true;
  }
  return false;
}

// node_colocation_strategy without copying in the common case: a node with no strategy annotation
// and no ratio labels uses the first matching nodeConfigs entry (stored merged over the cluster
// strategy, so merge(cluster, entry) == entry) or the cluster strategy itself.
const colocation_strategy& resolve_strategy(const colocation_config& cfg, const node_input& node,
                                            colocation_strategy& storage) {
  if (!node.colocation_strategy_annotation && !has_ratio_label(node.labels)) {
    for (const auto& nc : cfg.node_configs) {
      if (selector_matches(nc.node_selector, node.labels)) return nc.strategy;
    }
    return cfg.cluster;
  }
  node_strategy_inputs in;
  in.labels = &node.labels;
  if (node.colocation_strategy_annotation)
    in.colocation_strategy_annotation = *node.colocation_strategy_annotation;
  storage = node_colocation_strategy(cfg, in);
  return storage;
}

// NodeResourceReconciler.Reconcile around `calc`, which runs calculate_node_resource on the node's
// inputs with the resolved strategy.
template <class Calc>
node_resource_result reconcile(const colocation_config& cfg, const node_input& node,
                               const node_metric_input* metric, event_time now, Calc&& calc) {
  colocation_strategy storage;
  const colocation_strategy& strategy = resolve_strategy(cfg, node, storage);
  if (is_colocation_disabled(cfg, strategy)) {
    node_resource_result out;
    out.disabled = out.batch_reset = out.mid_reset = true;
    out.batch_reason = out.mid_reason = reason_disabled;
    reset_explanation(out.batch_cpu, names::batch_cpu, reason_disabled, strategy, metric, now);
    reset_explanation(out.batch_memory, names::batch_memory, reason_disabled, strategy, metric,
                      now);
    reset_explanation(out.mid_cpu, names::mid_cpu, reason_disabled, strategy, metric, now);
    reset_explanation(out.mid_memory, names::mid_memory, reason_disabled, strategy, metric, now);
    return out;
  }
  return calc(strategy);
}

}  // namespace

node_resource_result reconcile_node_resource(const colocation_config& cfg, const node_input& node,
                                             const std::vector<pod_input>& pods,
                                             const node_metric_input* metric, event_time now,
                                             calculator_scratch& scratch) {
  return reconcile(cfg, node, metric, now, [&](const colocation_strategy& strategy) {
    return calculate_node_resource(strategy, node, pods, metric, now, scratch);
  });
}

node_resource_result reconcile_node_resource(const colocation_config& cfg, const node_input& node,
                                             std::span<const pod_sample> pods,
                                             const node_metric_input* metric,
                                             std::span<const pod_metric_sample> pod_metrics,
                                             event_time now, calculator_scratch& scratch) {
  return reconcile(cfg, node, metric, now, [&](const colocation_strategy& strategy) {
    return calculate_node_resource(strategy, node, pods, metric, pod_metrics, now, scratch);
  });
}

prepared_node_resources prepare_node_resource(const node_resource_result& r,
                                              const node_input& node) {
  prepared_node_resources p;
  if (!r.batch_reset) {
    std::int64_t cpu = r.batch_cpu_milli;
    if (node.cpu_normalization_ratio && *node.cpu_normalization_ratio > 1.0) {
      // MultiplyMilliQuant on the quantity whose value is the milli count, then Quantity.Value()
      // rounds the (possibly fractional) result up to an integer.
      const std::int64_t scaled_milli =
          go::multiply_milli_quant(go::milli_value(cpu), *node.cpu_normalization_ratio);
      cpu = go::ceil_div(scaled_milli, 1000);
      p.terms.push_back({"cpuNormalizationRatioPermille",
                         go::to_int64(*node.cpu_normalization_ratio * 1000), "permille",
                         "node.koordinator.sh/cpu-normalization-ratio applied to batch-cpu"});
      p.terms.push_back(
          {"batchCPUNormalized", cpu, u_cpu, "ceil(int64(batch-cpu * 1000 * ratio) / 1000)"});
    }
    p.allocatable.batch_cpu = cpu;
    p.allocatable.batch_memory = r.batch_memory_bytes;
  }
  if (!r.mid_reset) {
    p.allocatable.mid_cpu = r.mid_cpu_milli;
    p.allocatable.mid_memory = r.mid_memory_bytes;
  }
  // batchresource.Plugin.Prepare: record the origin, then subtract koord-batch third-party
  // allocations.
  const std::int64_t bc = p.allocatable.batch_cpu.value_or(-1);
  const std::int64_t bm = p.allocatable.batch_memory.value_or(-1);
  p.origin_batch_cpu = std::max<std::int64_t>(bc, 0);
  p.origin_batch_memory = std::max<std::int64_t>(bm, 0);
  if (bc < 0 || bm < 0 || !node.third_party_allocations) return p;
  std::int64_t third_cpu = 0;
  std::int64_t third_mem = 0;
  for (const auto& a : *node.third_party_allocations) {
    if (a.priority != priority_class::batch) continue;
    third_cpu += a.resources.batch_cpu_milli;
    third_mem += a.resources.batch_memory_bytes;
  }
  p.allocatable.batch_cpu = std::max<std::int64_t>(p.origin_batch_cpu - third_cpu, 0);
  p.allocatable.batch_memory = std::max<std::int64_t>(p.origin_batch_memory - third_mem, 0);
  p.terms.push_back({"thirdPartyBatchCPU", third_cpu, u_cpu,
                     "koord-batch node.koordinator.sh/thirdPartyAllocations"});
  p.terms.push_back({"thirdPartyBatchMemory", third_mem, u_mem,
                     "koord-batch node.koordinator.sh/thirdPartyAllocations"});
  return p;
}

sync_decision need_sync(const colocation_strategy& strategy,
                        const node_extended_resources& old_alloc,
                        const node_extended_resources& new_alloc,
                        std::optional<event_time> last_update, event_time now) {
  sync_decision d;
  const std::int64_t threshold_s = strategy.update_time_threshold_seconds.value_or(300);
  if (!last_update) {
    d.need_sync = true;
    d.reason = sync_reason_expired;
    d.terms.push_back({"lastUpdateTime", 0, "", "never written"});
  } else {
    const std::int64_t elapsed_ms = now.value - last_update->value;
    constexpr std::int64_t limit = std::numeric_limits<std::int64_t>::max() / 1000;
    const std::int64_t threshold_ms =
        threshold_s > limit ? std::numeric_limits<std::int64_t>::max() : threshold_s * 1000;
    if (elapsed_ms > threshold_ms) {  // Clock.Since(last) > UpdateTimeThresholdSeconds
      d.need_sync = true;
      d.reason = sync_reason_expired;
      d.terms.push_back({"millisSinceLastUpdate", elapsed_ms, "ms", "now - last successful write"});
      d.terms.push_back(
          {"updateTimeThresholdSeconds", threshold_s, "seconds", "rewrite at least this often"});
    }
  }
  const double diff = strategy.resource_diff_threshold.value_or(0.1);
  struct item {
    std::string_view name;
    const std::optional<std::int64_t>& o;
    const std::optional<std::int64_t>& n;
    bool batch;
  };
  const std::array<item, 4> items{
      {{names::batch_cpu, old_alloc.batch_cpu, new_alloc.batch_cpu, true},
       {names::batch_memory, old_alloc.batch_memory, new_alloc.batch_memory, true},
       {names::mid_cpu, old_alloc.mid_cpu, new_alloc.mid_cpu, false},
       {names::mid_memory, old_alloc.mid_memory, new_alloc.mid_memory, false}}};
  for (const auto& it : items) {
    bool changed = false;
    if (it.o.has_value() != it.n.has_value()) {
      changed = true;
    } else if (it.o && go::is_quantity_diff(go::milli_value(*it.o), go::milli_value(*it.n), diff)) {
      changed = true;
    }
    if (!changed) continue;
    if (!d.need_sync)
      d.reason = it.batch ? "batch resource diff is big than threshold"
                          : "mid resource diff is big than threshold";
    d.need_sync = true;
    const std::string_view unit =
        it.name == names::batch_cpu || it.name == names::mid_cpu ? u_cpu : u_mem;
    d.terms.push_back({it.name, it.n.value_or(0), unit, it.n ? "new allocatable" : "new: removed"});
    d.terms.push_back(
        {"previous", it.o.value_or(0), unit, it.o ? "old allocatable" : "old: absent"});
    d.terms.push_back({"resourceDiffThresholdPermille", go::to_int64(diff * 1000), "permille",
                       "|new - old| > old * resourceDiffThreshold, in milli"});
  }
  return d;
}

// --- Kubernetes strings ---

result<std::int64_t> cpuset_size(std::string_view text) {
  // k8s.io/utils/cpuset Parse: comma-separated CPUs or ranges "a-b" (a <= b); empty = no CPUs.
  std::vector<std::pair<std::int64_t, std::int64_t>> ranges;
  auto bad = [&](std::string_view why) {
    return fail(errc::invalid_input, "invalid cpuset \"" + std::string(text.substr(0, 64)) +
                                         "\" (" + std::string(why) + ")");
  };
  if (text.empty()) return 0;
  std::size_t pos = 0;
  while (pos <= text.size()) {
    std::size_t comma = text.find(',', pos);
    if (comma == std::string_view::npos) comma = text.size();
    std::string_view part = text.substr(pos, comma - pos);
    std::size_t dash = part.find('-');
    auto num = [&](std::string_view n, std::int64_t& out) {
      auto [p, ec] = std::from_chars(n.data(), n.data() + n.size(), out);
      return !n.empty() && ec == std::errc{} && p == n.data() + n.size() && out >= 0 &&
             out <= 1 << 20;
    };
    std::int64_t a = 0;
    std::int64_t b = 0;
    if (dash == std::string_view::npos) {
      if (!num(part, a)) return bad("not a number");
      b = a;
    } else {
      if (!num(part.substr(0, dash), a) || !num(part.substr(dash + 1), b)) return bad("bad range");
      if (a > b) return bad("range start after end");
    }
    ranges.emplace_back(a, b);
    pos = comma + 1;
  }
  std::sort(ranges.begin(), ranges.end());
  std::int64_t count = 0;
  std::int64_t next = -1;  // first CPU not yet counted
  for (const auto& [a, b] : ranges) {
    std::int64_t from = std::max(a, next);
    if (b >= from) count += b - from + 1;
    next = std::max(next, b + 1);
  }
  return count;
}

namespace {

result<std::int64_t> quantity_json(const internal::json& v, bool milli, std::string_view where) {
  std::string text;
  if (v.is_string()) {
    text = v.get<std::string>();
  } else if (v.is_number()) {
    text = v.dump();
  } else {
    return internal::invalid(where, "", v, "want a quantity");
  }
  auto r = milli ? parse_quantity_milli(text) : parse_quantity_value(text);
  if (!r) return fail(errc::invalid_input, r.error().message, std::string(where));
  return r;
}

}  // namespace

result<node_reservation> parse_node_reservation(std::string_view json_text) {
  constexpr std::string_view where = names::annotation_node_reservation;
  auto doc = internal::parse_json(json_text, where);
  if (!doc) return tl::unexpected(doc.error());
  if (!doc->is_object()) return internal::invalid(where, "", *doc, "want an object");
  node_reservation r;
  if (const auto* res = internal::find_field(*doc, "resources");
      res != nullptr && !res->is_null()) {
    if (!res->is_object()) return internal::invalid(where, "resources", *res, "want an object");
    for (auto it = res->begin(); it != res->end(); ++it) {
      if (it.key() == names::cpu) {
        auto v = quantity_json(*it, true, std::string(where) + ".resources.cpu");
        if (!v) return tl::unexpected(v.error());
        r.cpu_milli = *v;
      } else if (it.key() == names::memory) {
        auto v = quantity_json(*it, false, std::string(where) + ".resources.memory");
        if (!v) return tl::unexpected(v.error());
        r.memory_bytes = *v;
      }
    }
  }
  std::optional<std::string> cpus;
  if (auto ok = internal::read_string(*doc, "reservedCPUs", where, cpus); !ok)
    return tl::unexpected(ok.error());
  r.reserved_cpus = cpus.value_or("");
  return r;
}

result<std::vector<third_party_allocation>> parse_third_party_allocations(
    std::string_view json_text) {
  constexpr std::string_view where = names::annotation_third_party_allocations;
  auto doc = internal::parse_json(json_text, where);
  if (!doc) return tl::unexpected(doc.error());
  if (!doc->is_object()) return internal::invalid(where, "", *doc, "want an object");
  std::vector<third_party_allocation> out;
  const auto* allocs = internal::find_field(*doc, "allocations");
  if (allocs == nullptr || allocs->is_null()) return out;
  if (!allocs->is_array()) return internal::invalid(where, "allocations", *allocs, "want an array");
  std::size_t i = 0;
  for (const auto& a : *allocs) {
    std::string w = std::string(where) + ".allocations[" + std::to_string(i++) + "]";
    if (!a.is_object()) return internal::invalid(w, "", a, "want an object");
    third_party_allocation t;
    std::optional<std::string> name, prio;
    if (auto ok = internal::read_string(a, "name", w, name); !ok) return tl::unexpected(ok.error());
    if (auto ok = internal::read_string(a, "priority", w, prio); !ok)
      return tl::unexpected(ok.error());
    t.name = name.value_or("");
    t.priority = get_pod_priority_class_by_name(prio.value_or(""));
    if (const auto* res = internal::find_field(a, "resources"); res != nullptr && !res->is_null()) {
      if (!res->is_object()) return internal::invalid(w, "resources", *res, "want an object");
      for (auto it = res->begin(); it != res->end(); ++it) {
        std::int64_t* field = nullptr;
        bool milli = false;
        if (it.key() == names::batch_cpu) field = &t.resources.batch_cpu_milli;
        if (it.key() == names::batch_memory) field = &t.resources.batch_memory_bytes;
        if (it.key() == names::cpu) {
          field = &t.resources.cpu_milli;
          milli = true;
        }
        if (it.key() == names::memory) field = &t.resources.memory_bytes;
        if (field == nullptr) continue;
        auto v = quantity_json(*it, milli, w + ".resources." + it.key());
        if (!v) return tl::unexpected(v.error());
        *field = *v;
      }
    }
    out.push_back(std::move(t));
  }
  return out;
}

}  // namespace colony::slo_controller
