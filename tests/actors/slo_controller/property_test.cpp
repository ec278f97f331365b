// Property tests of the batch/mid calculation over seeded random nodes (std::mt19937_64 raw output,
// no std::*_distribution): results are never negative; under the `usage` policy batch resources
// never grow when any high-priority usage grows; the output does not depend on pod order.
#include <algorithm>
#include <random>
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
