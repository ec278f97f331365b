// run_cycle with a parallelizer (Filter and Score fanned out over threads) against the same
// cycle on one thread: over seeded random clusters (NodeMetrics for LoadAwareScheduling, GPUs for
// DeviceShare, full and nearly full nodes) and pods, every decision must be the same: node,
// scores, runners-up, evaluated and feasible counts, failure reasons and the rotating start.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <memory>
#include <random>
#include <thread>
#include <vector>

#include "actors/scheduler/scheduler_config.hpp"
#include "tests/actors/scheduler/test_helpers.hpp"

namespace colony::scheduler {
namespace {

using testing::Gi;
using testing::kNow;

// A parallelizer that runs the tasks on `threads` std::threads, strided; counts its calls.
auto threaded(std::size_t threads, std::shared_ptr<std::atomic<int>> calls) {
  return [threads, calls](std::size_t n, const std::function<void(std::size_t)>& fn) {
    ++*calls;
    std::vector<std::thread> ts;
    for (std::size_t w = 0; w < threads; ++w)
      ts.emplace_back([&, w] {
        for (std::size_t i = w; i < n; i += threads) fn(i);
      });
    for (auto& t : ts) t.join();
  };
}

std::vector<node_info> random_nodes(std::mt19937_64& rng, std::size_t n) {
  std::vector<node_info> nodes;
  for (std::size_t i = 0; i < n; ++i) {
    auto node = testing::make_node("node-" + std::to_string(i), 32'000 + 1000 * (rng() % 64),
                                   (64 + rng() % 448) * Gi);
    // Some nodes already nearly full, so Filter fails on them.
    if (rng() % 4 == 0) {
      node.requested.cpu_milli = node.allocatable.cpu_milli - 500 * (rng() % 4);
      node.non_zero_requested.cpu_milli = node.requested.cpu_milli;
    }
    if (rng() % 3 != 0) {
      node_metric m;
      m.update_time = event_time{kNow.value - 1000 * static_cast<std::int64_t>(rng() % 400)};
      m.node_usage.cpu_milli = static_cast<std::int64_t>(rng() % node.allocatable.cpu_milli);
      m.node_usage.memory_bytes = static_cast<std::int64_t>(rng() % node.allocatable.memory_bytes);
      node.metric = m;
    }
    if (rng() % 2 == 0) {
      const int gpus = 1 + static_cast<int>(rng() % 8);
      for (int g = 0; g < gpus; ++g) {
        gpu_device d;
        d.minor = g;
        d.memory_total_bytes = 80 * Gi;
        d.core_used = 25 * static_cast<std::int64_t>(rng() % 5);
        d.memory_ratio_used = d.core_used;
        d.memory_used_bytes = d.memory_total_bytes * d.core_used / 100;
        node.gpus.push_back(d);
      }
      node.allocatable.gpu = 100 * gpus;
    }
    nodes.push_back(std::move(node));
  }
  return nodes;
}

pod_info random_pod(std::mt19937_64& rng, std::size_t i) {
  auto pod = testing::make_pod("default/pod-" + std::to_string(i),
                               testing::cpu_mem(500 * (1 + rng() % 32), (1 + rng() % 64) * Gi));
  pod.requests.pods = 1;
  if (rng() % 3 == 0) pod.devices.koord_gpu = 25 * static_cast<std::int64_t>(1 + rng() % 8);
  return pod;
}

void expect_same(const decision& a, const decision& b, std::size_t cycle) {
  SCOPED_TRACE("cycle " + std::to_string(cycle));
  EXPECT_EQ(a.result, b.result);
  EXPECT_EQ(a.node, b.node);
  EXPECT_EQ(a.total_score, b.total_score);
  EXPECT_EQ(a.evaluated_nodes, b.evaluated_nodes);
  EXPECT_EQ(a.feasible_nodes, b.feasible_nodes);
  EXPECT_EQ(a.message, b.message);
  ASSERT_EQ(a.scores.size(), b.scores.size());
  for (std::size_t i = 0; i < a.scores.size(); ++i) {
    EXPECT_EQ(a.scores[i].raw, b.scores[i].raw);
    EXPECT_EQ(a.scores[i].weighted, b.scores[i].weighted);
  }
  ASSERT_EQ(a.alternatives.size(), b.alternatives.size());
  for (std::size_t i = 0; i < a.alternatives.size(); ++i)
    EXPECT_EQ(a.alternatives[i].node, b.alternatives[i].node);
  ASSERT_EQ(a.failures.size(), b.failures.size());
  for (std::size_t i = 0; i < a.failures.size(); ++i) {
    EXPECT_EQ(a.failures[i].plugin, b.failures[i].plugin);
    EXPECT_EQ(a.failures[i].reason, b.failures[i].reason);
    EXPECT_EQ(a.failures[i].nodes, b.failures[i].nodes);
  }
  EXPECT_EQ(a.gpu_allocations.size(), b.gpu_allocations.size());
}

TEST(ParallelCycle, SameDecisionsAsOneThread) {
  auto cfg = parse_scheduler_config(koord_scheduler_shipped_config(), "shipped");
  ASSERT_TRUE(cfg) << cfg.error().describe();
  for (std::uint64_t seed : {1u, 2u, 3u}) {
    std::mt19937_64 rng(seed);
    auto one = build_framework(*cfg, 0, plugin_registry::with_builtin(), seed);
    auto many = build_framework(*cfg, 0, plugin_registry::with_builtin(), seed);
    ASSERT_TRUE(one && many);
    auto calls = std::make_shared<std::atomic<int>>(0);
    many->fwk->options().parallelizer = threaded(4, calls);
    many->fwk->options().parallel_chunk = 16;
    // 700 nodes: the adaptive percentage looks for 294 feasible ones, several windows deep
    // when many nodes are full.
    auto nodes_a = random_nodes(rng, 700);
    auto nodes_b = nodes_a;
    cycle_state sa, sb;
    std::size_t scheduled = 0, failed = 0;
    for (std::size_t i = 0; i < 250; ++i) {
      const auto pod = random_pod(rng, i);
      const auto now = event_time{kNow.value + static_cast<std::int64_t>(i) * 1000};
      auto da = one->fwk->run_cycle(sa, pod, nodes_a, now);
      auto db = many->fwk->run_cycle(sb, pod, nodes_b, now);
      expect_same(da, db, i);
      EXPECT_EQ(one->fwk->next_start_node_index(), many->fwk->next_start_node_index());
      if (da.result == outcome::scheduled && db.result == outcome::scheduled) {
        assume_pod(nodes_a[da.node_index], pod, da, now);
        assume_pod(nodes_b[db.node_index], pod, db, now);
        ++scheduled;
      } else {
        ++failed;
      }
    }
    // The parallel path ran (every shipped Filter/Score plugin is parallel_safe), and the runs
    // exercised both outcomes (so the comparison covers failures too).
    EXPECT_GT(scheduled, 50u) << "seed " << seed;
    EXPECT_GT(failed, 0u) << "seed " << seed;
    EXPECT_GE(calls->load(), 250) << "seed " << seed;
  }
}

}  // namespace
}  // namespace colony::scheduler
