// worker_pool: every task of a job runs exactly once at any thread count, start()/wait() halves
// leave the caller free in between, and run() while a job is in flight finishes that job first
// (how the scheduler's Filter fan-out shares the pool with the step host's node job).
#include "actors/entities/worker_pool.hpp"

#include <atomic>
#include <cstddef>
#include <functional>
#include <vector>

#include <gtest/gtest.h>

namespace colony::entities {
namespace {

TEST(WorkerPool, EveryTaskRunsOnceAtAnyThreadCount) {
  for (const std::size_t threads : {1u, 2u, 4u}) {
    worker_pool pool(threads);
    for (const std::size_t n : {0u, 1u, 7u, 8u, 100u, 5000u}) {
      std::vector<std::atomic<int>> hits(n);
      const std::function<void(std::size_t)> fn = [&](std::size_t i) { hits[i].fetch_add(1); };
      pool.run(n, fn);
      for (std::size_t i = 0; i < n; ++i)
        ASSERT_EQ(hits[i].load(), 1) << "threads " << threads << " n " << n << " task " << i;
    }
  }
}

TEST(WorkerPool, RunInsideAStartedJobFinishesThatJobFirst) {
  worker_pool pool(2);
  constexpr std::size_t node_tasks = 64, filter_tasks = 32;
  std::vector<std::atomic<int>> node_hits(node_tasks), filter_hits(filter_tasks);
  std::atomic<std::size_t> node_done_before_filter{0};
  std::atomic<std::size_t> node_done{0};
  const std::function<void(std::size_t)> node_job = [&](std::size_t i) {
    node_hits[i].fetch_add(1);
    node_done.fetch_add(1);
  };
  const std::function<void(std::size_t)> filter_job = [&](std::size_t i) {
    // The node job is complete before any task of the nested job starts.
    if (node_done.load() == node_tasks) node_done_before_filter.fetch_add(1);
    filter_hits[i].fetch_add(1);
  };
  int rounds = 0;
  for (; rounds < 200; ++rounds) {
    for (auto& h : node_hits) h.store(0);
    for (auto& h : filter_hits) h.store(0);
    node_done.store(0);
    node_done_before_filter.store(0);
    pool.start(node_tasks, node_job);
    pool.run(filter_tasks, filter_job);  // a cluster-scoped component fanning out
    pool.wait();                         // the host's wait: nothing left, returns at once
    for (std::size_t i = 0; i < node_tasks; ++i) ASSERT_EQ(node_hits[i].load(), 1) << i;
    for (std::size_t i = 0; i < filter_tasks; ++i) ASSERT_EQ(filter_hits[i].load(), 1) << i;
    ASSERT_EQ(node_done_before_filter.load(), filter_tasks);
  }
  EXPECT_EQ(rounds, 200);
}

}  // namespace
}  // namespace colony::entities
