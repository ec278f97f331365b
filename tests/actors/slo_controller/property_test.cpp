// Property tests of the batch/mid calculation over seeded random nodes (std::mt19937_64 raw output,
// no std::*_distribution): results are never negative; under the `usage` policy batch resources
// never grow when any high-priority usage grows; the output does not depend on pod order.
#include <algorithm>
#include <map>
#include <random>
#include <set>
#include <span>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "actors/slo_controller/node_resource.hpp"
#include "tests/actors/slo_controller/test_fixtures.hpp"

namespace colony::slo_controller {
namespace {

using namespace testing;  // NOLINT: fixtures

const event_time now{1'000'000'000};

struct instance {
  colocation_strategy strategy;
  node_input node;
  std::vector<pod_input> pods;
  node_metric_input metric;
};

std::int64_t pick(std::mt19937_64& rng, std::int64_t lo, std::int64_t hi) {
  return lo + static_cast<std::int64_t>(rng() % static_cast<std::uint64_t>(hi - lo + 1));
}

instance random_instance(std::mt19937_64& rng) {
  instance in;
  in.strategy = colocation_strategy::defaults();
  in.strategy.enable = true;
  in.strategy.cpu_reclaim_threshold_percent = pick(rng, 0, 200);
  in.strategy.memory_reclaim_threshold_percent = pick(rng, 0, 200);
  const calculate_policy policies[] = {calculate_policy::usage, calculate_policy::request,
                                       calculate_policy::max_usage_request,
                                       calculate_policy::other};
  in.strategy.cpu_calculate_policy = policies[rng() % 4];
  in.strategy.memory_calculate_policy = policies[rng() % 4];
  if (rng() % 3 == 0) in.strategy.batch_cpu_threshold_percent = pick(rng, 0, 150);
  if (rng() % 3 == 0) in.strategy.batch_memory_threshold_percent = pick(rng, 0, 150);
  if (rng() % 4 == 0) in.strategy.mid_reclaim_mode = reclaim_mode::static_mode;
  in.strategy.mid_cpu_threshold_percent = pick(rng, 0, 100);
  in.strategy.mid_memory_threshold_percent = pick(rng, 0, 100);
  in.strategy.mid_unallocated_percent = pick(rng, 0, 100);
  in.strategy.mid_static_cpu_reserved_percent = pick(rng, 0, 100);
  in.strategy.mid_static_memory_reserved_percent = pick(rng, 0, 100);

  const std::int64_t cap_cpu = pick(rng, 1, 256) * cores;
  const std::int64_t cap_mem = pick(rng, 1, 1024) * Gi;
  in.node = make_node("n", rl(cap_cpu, cap_mem),
                      rl(cap_cpu - pick(rng, 0, cap_cpu / 4), cap_mem - pick(rng, 0, cap_mem / 4)));
  if (rng() % 3 == 0) {
    node_reservation r;
    if (rng() % 2) r.cpu_milli = pick(rng, 0, cap_cpu / 2);
    if (rng() % 2) r.memory_bytes = pick(rng, 0, cap_mem / 2);
    if (rng() % 4 == 0) r.reserved_cpus = "0-" + std::to_string(pick(rng, 0, 7));
    in.node.annotation_reservation = r;
  }
  const priority_class classes[] = {priority_class::none, priority_class::prod, priority_class::mid,
                                    priority_class::batch, priority_class::free};
  const qos_class qoses[] = {qos_class::none, qos_class::system, qos_class::lse,
                             qos_class::lsr,  qos_class::ls,     qos_class::be};
  const pod_phase phases[] = {pod_phase::pending, pod_phase::running, pod_phase::running,
                              pod_phase::succeeded, pod_phase::failed};
  const int npods = static_cast<int>(pick(rng, 0, 40));
  in.metric.update_time = event_time{now.value - pick(rng, 0, 60'000)};
  in.metric.system_usage = rl(pick(rng, 0, cap_cpu / 4), pick(rng, 0, cap_mem / 4));
  if (rng() % 5 != 0) in.metric.node_usage = {pick(rng, 0, cap_cpu), pick(rng, 0, cap_mem)};
  if (rng() % 2)
    in.metric.prod_reclaimable = rl(pick(rng, 0, cap_cpu / 2), pick(rng, 0, cap_mem / 2));
  for (int i = 0; i < npods; ++i) {
    pod_input p =
        make_pod("pod" + std::to_string(i), classes[rng() % 5], qoses[rng() % 6], phases[rng() % 5],
                 rl(pick(rng, 0, cap_cpu / 8), pick(rng, 0, cap_mem / 8)));
    if (rng() % 4 != 0) {
      in.metric.pod_metrics.push_back(make_metric(
          p.name, rl(pick(rng, 0, cap_cpu / 8), pick(rng, 0, cap_mem / 8)), classes[rng() % 5]));
    }
    in.pods.push_back(std::move(p));
  }
  // a few dangling metrics
  for (int i = 0, n = static_cast<int>(pick(rng, 0, 3)); i < n; ++i) {
    in.metric.pod_metrics.push_back(
        make_metric("gone" + std::to_string(i),
                    rl(pick(rng, 0, cap_cpu / 8), pick(rng, 0, cap_mem / 8)), classes[rng() % 5]));
  }
  if (rng() % 3 == 0) {
    in.metric.host_app_metrics.push_back(
        {"app", rl(pick(rng, 0, cap_cpu / 8), pick(rng, 0, cap_mem / 8)), classes[rng() % 5]});
  }
  std::shuffle(in.metric.pod_metrics.begin(), in.metric.pod_metrics.end(), rng);
  return in;
}

node_resource_result run(const instance& in, calculator_scratch& s) {
  return calculate_node_resource(in.strategy, in.node, in.pods, &in.metric, now, s);
}

TEST(BatchResourceProperty, AllocatableIsNeverNegative) {
  std::mt19937_64 rng(1);
  calculator_scratch s;
  for (int i = 0; i < 3000; ++i) {
    const instance in = random_instance(rng);
    const auto r = run(in, s);
    ASSERT_FALSE(r.degraded);
    ASSERT_GE(r.batch_cpu_milli, 0) << "seed iteration " << i;
    ASSERT_GE(r.batch_memory_bytes, 0) << "seed iteration " << i;
    ASSERT_GE(r.mid_cpu_milli, 0) << "seed iteration " << i;
    ASSERT_GE(r.mid_memory_bytes, 0) << "seed iteration " << i;
    ASSERT_EQ(r.batch_cpu.terms.back().value, r.batch_cpu_milli);
    ASSERT_EQ(r.batch_memory.terms.back().value, r.batch_memory_bytes);
    ASSERT_EQ(r.mid_cpu.terms.back().value, r.mid_cpu_milli);
    ASSERT_EQ(r.mid_memory.terms.back().value, r.mid_memory_bytes);
    const auto p = prepare_node_resource(r, in.node);
    ASSERT_GE(p.allocatable.batch_cpu.value_or(0), 0);
  }
}

TEST(BatchResourceProperty, UsagePolicyIsMonotoneNonIncreasingInUsage) {
  std::mt19937_64 rng(2);
  calculator_scratch s;
  for (int i = 0; i < 3000; ++i) {
    instance in = random_instance(rng);
    in.strategy.cpu_calculate_policy = calculate_policy::usage;
    in.strategy.memory_calculate_policy = calculate_policy::usage;
    const auto before = run(in, s);
    // Grow one usage: a pod metric (HP, LP or dangling), the system usage, or a host application.
    instance more = in;
    const std::int64_t dc = pick(rng, 0, 8 * cores);
    const std::int64_t dm = pick(rng, 0, 8 * Gi);
    const auto what = rng() % 3;
    if (what == 0 && !more.metric.pod_metrics.empty()) {
      auto& m = more.metric.pod_metrics[rng() % more.metric.pod_metrics.size()];
      m.usage.cpu_milli += dc;
      m.usage.memory_bytes += dm;
    } else if (what == 1) {
      more.metric.system_usage.cpu_milli += dc;
      more.metric.system_usage.memory_bytes += dm;
    } else {
      more.metric.host_app_metrics.push_back({"extra", rl(dc, dm), priority_class::prod});
    }
    const auto after = run(more, s);
    ASSERT_LE(after.batch_cpu_milli, before.batch_cpu_milli) << "iteration " << i;
    ASSERT_LE(after.batch_memory_bytes, before.batch_memory_bytes) << "iteration " << i;
  }
}

TEST(BatchResourceProperty, ResultDoesNotDependOnPodOrder) {
  std::mt19937_64 rng(3);
  calculator_scratch s;
  for (int i = 0; i < 500; ++i) {
    instance in = random_instance(rng);
    const auto a = run(in, s);
    std::shuffle(in.pods.begin(), in.pods.end(), rng);
    const auto b = run(in, s);
    ASSERT_EQ(a.batch_cpu_milli, b.batch_cpu_milli);
    ASSERT_EQ(a.batch_memory_bytes, b.batch_memory_bytes);
    ASSERT_EQ(a.mid_cpu_milli, b.mid_cpu_milli);
    ASSERT_EQ(a.mid_memory_bytes, b.mid_memory_bytes);
    ASSERT_EQ(koordinator_message(a.batch_cpu), koordinator_message(b.batch_cpu));
  }
}

TEST(BatchResourceProperty, InternedKeysMatchLikeStringKeys) {
  std::mt19937_64 rng(4);
  calculator_scratch s;
  for (int i = 0; i < 500; ++i) {
    instance in = random_instance(rng);
    if (!in.metric.pod_metrics.empty() && rng() % 2) {
      in.metric.pod_metrics.push_back(
          in.metric.pod_metrics.front());  // a duplicate key: the last one wins
      in.metric.pod_metrics.back().usage.cpu_milli += 7;
    }
    const auto by_string = run(in, s);
    pod_key_interner keys;
    for (auto& p : in.pods) p.key_id = keys.intern(p.ns, p.name);
    for (auto& m : in.metric.pod_metrics) m.key_id = keys.intern(m.ns, m.name);
    const auto by_id = run(in, s);
    ASSERT_EQ(by_string.batch_cpu_milli, by_id.batch_cpu_milli) << i;
    ASSERT_EQ(by_string.batch_memory_bytes, by_id.batch_memory_bytes) << i;
    ASSERT_EQ(by_string.mid_cpu_milli, by_id.mid_cpu_milli) << i;
    // One pod without an id falls back to strings for the whole node, with the same result.
    if (!in.pods.empty()) {
      in.pods.front().key_id = 0;
      ASSERT_EQ(run(in, s).batch_cpu_milli, by_string.batch_cpu_milli) << i;
    }
  }
  pod_key_interner keys;
  EXPECT_EQ(keys.intern("a", "b"), 1U);
  EXPECT_EQ(keys.intern("a", "c"), 2U);
  EXPECT_EQ(keys.intern("a", "b"), 1U);
  EXPECT_NE(keys.intern("a/b", ""), keys.intern("a", "b/"));  // pairs, not joined strings
}

// The interner's reference counting and id rule (node_resource.hpp): a key lives while it has
// references; freed ids are never reused, so a key interned again gets the next new id.
TEST(PodKeyInterner, ReleasedKeysAreForgottenAndIdsAreNotReused) {
  pod_key_interner keys;
  const auto a = keys.intern("ns", "a");
  const auto b = keys.intern("ns", "b");
  EXPECT_EQ(keys.intern("ns", "a"), a);  // a second reference
  EXPECT_EQ(keys.references(a), 2U);
  EXPECT_EQ(keys.size(), 2U);
  keys.release(a);
  EXPECT_EQ(keys.size(), 2U);  // one reference left
  ASSERT_TRUE(keys.key_of(a).has_value());
  EXPECT_EQ(keys.key_of(a)->first, "ns");
  EXPECT_EQ(keys.key_of(a)->second, "a");
  keys.release(a);
  EXPECT_EQ(keys.size(), 1U);
  EXPECT_FALSE(keys.key_of(a).has_value());
  EXPECT_EQ(keys.references(a), 0U);
  keys.release(a);  // not held: ignored
  keys.release(0);
  EXPECT_EQ(keys.references(b), 1U);
  const auto a2 = keys.intern("ns", "a");
  EXPECT_EQ(a2, 3U);  // the next new id, not a's freed 1
  EXPECT_NE(a2, a);
  EXPECT_EQ(keys.next_id(), 4U);
  // Names with ':' and digits round-trip through the length-prefixed key.
  const auto odd = keys.intern("12:x", "3:y/z");
  EXPECT_EQ(keys.key_of(odd)->first, "12:x");
  EXPECT_EQ(keys.key_of(odd)->second, "3:y/z");
  const auto empty_ns = keys.intern("", "p");
  EXPECT_EQ(keys.key_of(empty_ns)->first, "");
  EXPECT_EQ(keys.key_of(empty_ns)->second, "p");
  // Churn: thousands of keys, at most 10 held at a time, leave only the held ones; every new key
  // gets a larger id than the last.
  std::vector<std::uint64_t> held;
  std::uint64_t last = keys.next_id() - 1;
  for (int i = 0; i < 5000; ++i) {
    const auto id = keys.intern("churn", std::to_string(i));
    ASSERT_GT(id, last);
    last = id;
    held.push_back(id);
    if (held.size() > 10) {
      keys.release(held.front());
      held.erase(held.begin());
    }
    ASSERT_LE(keys.size(), 14U);
  }
  for (const auto id : held) keys.release(id);
  EXPECT_EQ(keys.size(), 4U);  // b, a2, odd, empty_ns
}

// The interner against a plain model (std::map key -> {id, refs}) over seeded random intern /
// find / retain / release: same ids (the counter rule), same references, same size, key_of
// round-trips. Exercises the open-addressing tables' growth and backward-shift deletion.
TEST(PodKeyInterner, RandomOperationsMatchAPlainModel) {
  std::mt19937_64 rng(99);
  pod_key_interner keys;
  struct held {
    std::uint64_t id = 0;
    std::uint64_t refs = 0;
  };
  std::map<std::pair<std::string, std::string>, held> model;
  std::uint64_t next = 1;
  for (int i = 0; i < 200000; ++i) {
    const auto k = rng() % 3000;  // a key universe much larger than what is held at a time
    const std::pair<std::string, std::string> key{"ns-" + std::to_string(k % 7),
                                                  "pod-" + std::to_string(k)};
    auto it = model.find(key);
    switch (rng() % 4) {
      case 0: {  // intern
        const auto id = keys.intern(key.first, key.second);
        if (it == model.end()) {
          ASSERT_EQ(id, next) << i;
          ++next;
          model[key] = {id, 1};
        } else {
          ASSERT_EQ(id, it->second.id) << i;
          ++it->second.refs;
        }
        break;
      }
      case 1: {  // find, then retain what is held
        const auto id = keys.find(key.first, key.second);
        ASSERT_EQ(id, it == model.end() ? 0U : it->second.id) << i;
        ASSERT_EQ(keys.retain(id), it != model.end()) << i;
        if (it != model.end()) ++it->second.refs;
        break;
      }
      default: {  // release (twice as likely, so that keys come and go)
        if (it == model.end()) {
          keys.release(next + 5);  // an id never given: ignored
          break;
        }
        keys.release(it->second.id);
        if (--it->second.refs == 0) model.erase(it);
        break;
      }
    }
    ASSERT_EQ(keys.size(), model.size()) << i;
    if (i % 1000 == 0) {  // find_many over a batch (some held, some not, some twice) = find
      std::vector<std::pair<std::string, std::string>> batch;
      for (int b = 0; b < 64; ++b) {
        const auto kb = rng() % 3000;
        batch.emplace_back("ns-" + std::to_string(kb % 7), "pod-" + std::to_string(kb));
      }
      batch.push_back(batch.front());
      std::vector<std::pair<std::string_view, std::string_view>> views(batch.begin(), batch.end());
      std::vector<std::uint64_t> ids(views.size(), 77);
      keys.find_many(views, ids);
      for (std::size_t b = 0; b < batch.size(); ++b) {
        const auto m = model.find(batch[b]);
        ASSERT_EQ(ids[b], m == model.end() ? 0U : m->second.id) << i << " " << b;
      }
    }
  }
  EXPECT_GT(model.size(), 100U);
  for (const auto& [key, h] : model) {
    ASSERT_EQ(keys.references(h.id), h.refs);
    const auto kv = keys.key_of(h.id);
    ASSERT_TRUE(kv.has_value());
    EXPECT_EQ(kv->first, key.first);
    EXPECT_EQ(kv->second, key.second);
    EXPECT_EQ(keys.find(key.first, key.second), h.id);
  }
  EXPECT_EQ(keys.next_id(), next);
}

void expect_same_explanation(const explanation& a, const explanation& b, int i) {
  ASSERT_EQ(a.resource, b.resource) << i;
  ASSERT_EQ(a.formula, b.formula) << i;
  ASSERT_EQ(a.terms.size(), b.terms.size()) << i << " " << a.resource;
  ASSERT_EQ(a.terms.dropped(), 0U) << i;
  for (std::size_t t = 0; t < a.terms.size(); ++t) {
    ASSERT_EQ(a.terms[t].name, b.terms[t].name) << i;
    ASSERT_EQ(a.terms[t].value, b.terms[t].value) << i << " " << a.terms[t].name;
    ASSERT_EQ(a.terms[t].unit, b.terms[t].unit) << i;
    ASSERT_EQ(a.terms[t].text, b.terms[t].text) << i;
  }
  ASSERT_EQ(koordinator_message(a), koordinator_message(b)) << i;
}

void expect_same(const node_resource_result& a, const node_resource_result& b, int i) {
  ASSERT_EQ(a.batch_cpu_milli, b.batch_cpu_milli) << i;
  ASSERT_EQ(a.batch_memory_bytes, b.batch_memory_bytes) << i;
  ASSERT_EQ(a.mid_cpu_milli, b.mid_cpu_milli) << i;
  ASSERT_EQ(a.mid_memory_bytes, b.mid_memory_bytes) << i;
  ASSERT_EQ(a.batch_reset, b.batch_reset) << i;
  ASSERT_EQ(a.mid_reset, b.mid_reset) << i;
  ASSERT_EQ(a.degraded, b.degraded) << i;
  ASSERT_EQ(a.disabled, b.disabled) << i;
  ASSERT_EQ(a.batch_reason, b.batch_reason) << i;
  ASSERT_EQ(a.mid_reason, b.mid_reason) << i;
  expect_same_explanation(a.batch_cpu, b.batch_cpu, i);
  expect_same_explanation(a.batch_memory, b.batch_memory, i);
  expect_same_explanation(a.mid_cpu, b.mid_cpu, i);
  expect_same_explanation(a.mid_memory, b.mid_memory, i);
}

// The hot/cold split inputs (pod_sample / pod_metric_sample, matched by interned id) give exactly
// the results of the pod_input records matched by namespace/name, term by term: duplicate metric
// keys (last wins), dangling metrics, pods without metric, inactive and LP pods, degraded nodes,
// ids interned in any order, one scratch reused across nodes of every size, and a wrapping slot
// generation.
TEST(BatchResourceProperty, SamplesMatchRecordsExactly) {
  std::mt19937_64 rng(5);
  calculator_scratch by_name_scratch;
  calculator_scratch s;
  pod_key_interner keys;  // one interner for the whole run, as an actor has
  colocation_config cfg;
  for (int i = 0; i < 2000; ++i) {
    instance in = random_instance(rng);
    if (!in.metric.pod_metrics.empty() && rng() % 2) {
      in.metric.pod_metrics.push_back(in.metric.pod_metrics[rng() % in.metric.pod_metrics.size()]);
      in.metric.pod_metrics.back().usage.cpu_milli += 7;
    }
    if (rng() % 10 == 0) in.metric.update_time.reset();  // degraded
    // Distinct names per instance so the interner sees a growing, interleaved id space.
    const std::string ns = "ns" + std::to_string(i % 13);
    for (auto& p : in.pods) p.ns = ns;
    for (auto& m : in.metric.pod_metrics) m.ns = ns;
    const auto by_name =
        calculate_node_resource(in.strategy, in.node, in.pods, &in.metric, now, by_name_scratch);
    // Intern metrics first half the time: ids need not follow pod order.
    if (rng() % 2) {
      for (auto& m : in.metric.pod_metrics) m.key_id = keys.intern(m.ns, m.name);
      for (auto& p : in.pods) p.key_id = keys.intern(p.ns, p.name);
    } else {
      for (auto& p : in.pods) p.key_id = keys.intern(p.ns, p.name);
      for (auto& m : in.metric.pod_metrics) m.key_id = keys.intern(m.ns, m.name);
    }
    std::vector<pod_sample> pods;
    for (const auto& p : in.pods) pods.push_back(sample_of(p));
    std::vector<pod_metric_sample> metrics;
    for (const auto& m : in.metric.pod_metrics) metrics.push_back(sample_of(m));
    node_metric_input header = in.metric;
    header.pod_metrics.clear();                      // not read by the sample overload
    if (i % 500 == 499) s.generation = 0xffffffffU;  // next node wraps the generation
    const auto by_sample =
        calculate_node_resource(in.strategy, in.node, pods, &header, metrics, now, s);
    expect_same(by_name, by_sample, i);
    const auto by_id = calculate_node_resource(in.strategy, in.node, in.pods, &in.metric, now, s);
    expect_same(by_name, by_id, i);
    // reconcile: strategy resolution and the disabled reset are shared by both forms.
    cfg.cluster = in.strategy;
    cfg.cluster.enable = rng() % 8 != 0;
    expect_same(reconcile_node_resource(cfg, in.node, in.pods, &in.metric, now, by_name_scratch),
                reconcile_node_resource(cfg, in.node, pods, &header, metrics, now, s), i);
    if (HasFatalFailure()) return;
  }
  // No NodeMetric at all: degraded in both forms.
  const instance in = random_instance(rng);
  expect_same(calculate_node_resource(in.strategy, in.node, in.pods, nullptr, now, s),
              calculate_node_resource(in.strategy, in.node, std::span<const pod_sample>{}, nullptr,
                                      {}, now, s),
              -1);
}

// The pod sums written the plain way, as Koordinator's calculateOnNode / getUnallocated read: a
// podMetricMap keyed by namespace/name (a later metric overwrites an earlier one), one branch per
// pod class, dangling metrics = map entries no Running/Pending pod took.
struct reference_sums {
  std::int64_t prod_allocated_cpu = 0, prod_allocated_mem = 0;
  std::int64_t hp_request_mem = 0;
  std::int64_t hp_used_cpu = 0, hp_used_mem = 0;
  std::int64_t hp_max_cpu = 0, hp_max_mem = 0;
  std::int64_t no_metric_cpu = 0, no_metric_mem = 0;
  std::int64_t lse_over_cpu = 0;
  std::int64_t dangling_cpu = 0, dangling_mem = 0;
};

reference_sums reference(const instance& in) {
  reference_sums r;
  std::map<std::pair<std::string, std::string>, const pod_metric*> by_key;
  for (const auto& m : in.metric.pod_metrics) by_key[{m.ns, m.name}] = &m;
  std::set<std::pair<std::string, std::string>> taken;
  for (const auto& p : in.pods) {
    if (p.phase != pod_phase::running && p.phase != pod_phase::pending) continue;
    const auto it = by_key.find({p.ns, p.name});
    if (it != by_key.end()) taken.insert(it->first);
    if (p.priority == priority_class::batch || p.priority == priority_class::free) continue;
    if (p.priority != priority_class::mid) {
      r.prod_allocated_cpu += p.requests.cpu_milli;
      r.prod_allocated_mem += p.requests.memory_bytes;
    }
    r.hp_request_mem += p.requests.memory_bytes;
    if (it == by_key.end()) {
      r.hp_used_cpu += p.requests.cpu_milli;
      r.hp_used_mem += p.requests.memory_bytes;
      r.no_metric_cpu += p.requests.cpu_milli;
      r.no_metric_mem += p.requests.memory_bytes;
      continue;
    }
    const auto& u = it->second->usage;
    if (p.qos == qos_class::lse) {
      r.hp_used_cpu += p.requests.cpu_milli;
      r.lse_over_cpu += p.requests.cpu_milli - u.cpu_milli;
    } else {
      r.hp_used_cpu += u.cpu_milli;
    }
    r.hp_used_mem += u.memory_bytes;
    r.hp_max_cpu += std::max(p.requests.cpu_milli, u.cpu_milli);
    r.hp_max_mem += std::max(p.requests.memory_bytes, u.memory_bytes);
  }
  for (const auto& [key, m] : by_key) {
    if (taken.count(key) != 0) continue;
    if (m->priority == priority_class::batch || m->priority == priority_class::free) continue;
    r.dangling_cpu += m->usage.cpu_milli;
    r.dangling_mem += m->usage.memory_bytes;
  }
  r.hp_used_cpu += r.dangling_cpu;
  r.hp_used_mem += r.dangling_mem;
  r.hp_max_cpu += r.dangling_cpu;
  r.hp_max_mem += r.dangling_mem;
  return r;
}

// Checks a term's value when the formula printed that term (which terms appear depends on policy).
void expect_term(const explanation& e, std::string_view name, std::int64_t want, int i) {
  for (const auto& t : e.terms) {
    if (t.name == name) {
      EXPECT_EQ(t.value, want) << "iteration " << i << " " << e.resource << " " << name;
      return;
    }
  }
}

// The branch-free one-pass kernel computes the same pod sums as the plain formula, in both input
// forms, including duplicate metric keys, LSE pods, pods without metrics, dangling metrics.
TEST(BatchResourceProperty, PodSumsEqualThePlainFormula) {
  std::mt19937_64 rng(6);
  calculator_scratch s;
  pod_key_interner keys;
  int checked_dangling = 0;
  for (int i = 0; i < 2000; ++i) {
    instance in = random_instance(rng);
    in.strategy.mid_reclaim_mode.reset();  // dynamic: prints prodPodAllocated
    if (!in.metric.pod_metrics.empty() && rng() % 2) {
      in.metric.pod_metrics.push_back(in.metric.pod_metrics[rng() % in.metric.pod_metrics.size()]);
      in.metric.pod_metrics.back().usage.cpu_milli += 7;
    }
    const reference_sums want = reference(in);
    checked_dangling += want.dangling_cpu != 0 ? 1 : 0;
    for (auto& p : in.pods) p.key_id = keys.intern(p.ns, p.name);
    for (auto& m : in.metric.pod_metrics) m.key_id = keys.intern(m.ns, m.name);
    std::vector<pod_sample> pods;
    for (const auto& p : in.pods) pods.push_back(sample_of(p));
    std::vector<pod_metric_sample> metrics;
    for (const auto& m : in.metric.pod_metrics) metrics.push_back(sample_of(m));
    for (const auto& r : {run(in, s), calculate_node_resource(in.strategy, in.node, pods,
                                                              &in.metric, metrics, now, s)}) {
      expect_term(r.mid_cpu, "prodPodAllocated", want.prod_allocated_cpu, i);
      expect_term(r.mid_memory, "prodPodAllocated", want.prod_allocated_mem, i);
      expect_term(r.batch_cpu, "podHPUsed", want.hp_used_cpu, i);
      expect_term(r.batch_cpu, "podHPMaxUsedRequest", want.hp_max_cpu, i);
      expect_term(r.batch_cpu, "podHPNoMetricRequest", want.no_metric_cpu, i);
      expect_term(r.batch_cpu, "podLSERequestOverUsage", want.lse_over_cpu, i);
      expect_term(r.batch_cpu, "podDanglingUsed", want.dangling_cpu, i);
      expect_term(r.batch_memory, "podHPRequest", want.hp_request_mem, i);
      expect_term(r.batch_memory, "podHPUsed", want.hp_used_mem, i);
      expect_term(r.batch_memory, "podHPMaxUsedRequest", want.hp_max_mem, i);
      expect_term(r.batch_memory, "podHPNoMetricRequest", want.no_metric_mem, i);
      expect_term(r.batch_memory, "podDanglingUsed", want.dangling_mem, i);
    }
    if (HasFailure()) return;
  }
  EXPECT_GT(checked_dangling, 100);  // the generator does exercise dangling metrics
}

TEST(QuantityParsing, KubernetesQuantities) {
  EXPECT_EQ(parse_quantity_milli("1"), 1000);
  EXPECT_EQ(parse_quantity_milli("100m"), 100);
  EXPECT_EQ(parse_quantity_milli("0.5"), 500);
  EXPECT_EQ(parse_quantity_milli("1.0001"), 1001);  // MilliValue rounds up
  EXPECT_EQ(parse_quantity_value("1Gi"), Gi);
  EXPECT_EQ(parse_quantity_value("120G"), 120 * G);
  EXPECT_EQ(parse_quantity_value("50k"), 50000);
  EXPECT_EQ(parse_quantity_value("1e3"), 1000);
  EXPECT_EQ(parse_quantity_value("1500m"), 2);  // Value rounds up
  EXPECT_FALSE(parse_quantity_value("1Gb"));
  EXPECT_FALSE(parse_quantity_value(""));
  EXPECT_FALSE(parse_quantity_value("99999999999999999999"));
  EXPECT_EQ(cpuset_size("0-3,8"), 5);
  EXPECT_EQ(cpuset_size("0-3,2-5"), 6);
  EXPECT_EQ(cpuset_size(""), 0);
  EXPECT_FALSE(cpuset_size("3-1"));
  EXPECT_FALSE(cpuset_size("0,"));
  auto r =
      parse_node_reservation(R"({"resources":{"cpu":"2","memory":"5G"},"reservedCPUs":"0-1"})");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->cpu_milli, 2000);
  EXPECT_EQ(r->memory_bytes, 5 * G);
  EXPECT_EQ(r->reserved_cpus, "0-1");
}

}  // namespace
}  // namespace colony::slo_controller
