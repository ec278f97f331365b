// Seeded property tests over random nodes and pods (std::mt19937_64 raw output only).
#include <gtest/gtest.h>

#include <random>

#include "actors/koordlet/cpu_evict.hpp"
#include "actors/koordlet/cpu_suppress.hpp"
#include "actors/koordlet/memory_evict.hpp"
#include "actors/koordlet/node_metric.hpp"
#include "tests/actors/koordlet/koordlet_test_util.hpp"

namespace colony::koordlet {
namespace {

struct rng {
  std::mt19937_64 e;
  explicit rng(std::uint64_t seed) : e(seed) {}
  std::int64_t in(std::int64_t lo, std::int64_t hi) {  // [lo, hi]
    return lo + static_cast<std::int64_t>(e() % static_cast<std::uint64_t>(hi - lo + 1));
  }
  double unit() { return double(e() >> 11) * 0x1.0p-53; }
};

std::vector<pod_info> random_pods(rng& r, std::int64_t node_mem, std::int64_t node_cpu) {
  std::vector<pod_info> pods;
  const auto n = r.in(0, 30);
  const qos_class qs[] = {qos_class::none, qos_class::lsr, qos_class::ls, qos_class::be,
                          qos_class::lse};
  for (std::int64_t i = 0; i < n; ++i) {
    auto q = qs[r.in(0, 4)];
    std::optional<std::int32_t> prio;
    if (r.in(0, 9) > 0)
      prio = static_cast<std::int32_t>(q == qos_class::be ? r.in(5000, 5999) : r.in(0, 9999));
    auto p = test::make_pod("pod-" + std::to_string(i), q, prio);
    p.ns = r.in(0, 1) ? "default" : "batch";
    p.memory_used_bytes = double(r.in(0, node_mem / 8));
    p.cpu_used_cores = double(r.in(0, node_cpu / 8)) / 1000;
    if (r.in(0, 9) == 0) p.memory_used_bytes.reset();
    p.eviction_enabled = r.in(0, 1) == 1;
    p.evicted = r.in(0, 19) == 0;
    p.phase = r.in(0, 19) == 0 ? pod_phase::succeeded : pod_phase::running;
    p.priority_label = r.in(0, 1) ? std::optional<std::int64_t>(r.in(0, 9999)) : std::nullopt;
    p.containers.push_back({"main", {}, {}});
    p.containers[0].requests.batch_cpu_milli = q == qos_class::be ? r.in(0, 8000) : 0;
    p.containers[0].requests.batch_memory_bytes = q == qos_class::be ? r.in(0, 8) * test::Gi : 0;
    p.requests.cpu_milli = r.in(0, 4000);
    p.requests.memory_bytes = r.in(0, 8) * test::Gi;
    pods.push_back(p);
  }
  return pods;
}

// Released amounts are exactly what the evicted pods' measures add up to, and each task stops at
// the victim that covers it (dropping that victim leaves the task uncovered).
void check_round(const evict_round& round, std::span<const evict_task> tasks,
                 std::span<const pod_info> pods) {
  resource_list used, request;
  for (const auto& v : round.victims) {
    used += v.released_used;
    request += v.released_request;
    resource_list max_used, max_req;
    for (const auto& t : tasks) {
      auto& bound = t.target == release_target::pod_used ? max_used : max_req;
      bound.zip(measure_pod(t, pods[v.pod]),
                [](std::int64_t& a, std::int64_t b) { a = std::max(a, b); });
    }
    EXPECT_TRUE(v.released_used.fits_in(max_used));
    EXPECT_TRUE(v.released_request.fits_in(max_req));
  }
  EXPECT_EQ(used, round.released_used);
  EXPECT_EQ(request, round.released_request);
  // No pod is evicted twice.
  std::vector<std::uint32_t> ids;
  for (const auto& v : round.victims) ids.push_back(v.pod);
  std::sort(ids.begin(), ids.end());
  EXPECT_EQ(std::adjacent_find(ids.begin(), ids.end()), ids.end());
}

TEST(KoordletProperty, EvictionRoundNeverReleasesMoreThanItEvicts) {
  for (std::uint64_t seed = 1; seed <= 300; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    rng r(seed);
    auto node = test::make_node(r.in(8, 128) * 1000, r.in(16, 512) * test::Gi);
    node.allocatable.batch_memory_bytes = r.in(0, 64) * test::Gi;
    node.allocatable.batch_cpu_milli = r.in(0, 64000);
    auto pods = random_pods(r, node.capacity.memory_bytes, node.capacity.cpu_milli);
    koordlet_feature_gates gates;
    gates.be_memory_evict = gates.memory_evict = gates.memory_allocatable_evict = true;
    gates.be_cpu_evict = gates.cpu_evict = gates.cpu_allocatable_evict = true;
    resource_threshold_strategy cfg;
    cfg.enable = true;
    cfg.memory_evict_threshold_percent = r.in(10, 90);
    cfg.evict_enabled_priority_threshold = static_cast<std::int32_t>(r.in(0, 9999));
    cfg.memory_allocatable_evict_threshold_percent = r.in(50, 100);
    cfg.memory_allocatable_evict_lower_percent =
        *cfg.memory_allocatable_evict_threshold_percent - r.in(1, 20);
    cfg.allocatable_evict_priority_threshold = static_cast<std::int32_t>(r.in(3000, 7999));
    cfg.cpu_evict_threshold_percent = r.in(10, 90);
    cfg.cpu_allocatable_evict_threshold_percent = r.in(50, 100);
    cfg.cpu_allocatable_evict_lower_percent =
        *cfg.cpu_allocatable_evict_threshold_percent - r.in(1, 20);
    cfg.cpu_evict_be_satisfaction_lower_percent = r.in(1, 60);
    cfg.cpu_evict_be_satisfaction_upper_percent =
        *cfg.cpu_evict_be_satisfaction_lower_percent + r.in(0, 30);

    memory_evict_input mi{&node, pods, double(node.capacity.memory_bytes) * r.unit()};
    auto md = memory_evict(mi, cfg, gates, {}, {}, event_time{100000}, {r.in(0, 1) == 1});
    check_round(md.round, md.tasks, pods);
    EXPECT_EQ(md.round.newly_evicted, md.next_state.last_evict_time == event_time{100000});

    cpu_evict_input ci;
    ci.node = &node;
    ci.pods = pods;
    ci.node_cpu_avg_cores = double(node.capacity.cpu_milli) / 1000 * r.unit();
    ci.be = {60, 9000, 50000, double(r.in(0, 40000)), 9000, 50000, double(r.in(0, 40000))};
    auto cd = cpu_evict(ci, cfg, gates, {}, {}, event_time{100000});
    check_round(cd.round, cd.tasks, pods);
  }
}

TEST(KoordletProperty, SuppressNeverGivesBELessThanTheMinimum) {
  for (std::uint64_t seed = 1; seed <= 300; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    rng r(seed);
    const auto ncpu = r.in(4, 96);
    auto node = test::make_node(ncpu * 1000, 64 * test::Gi);
    node.reserved_cpu_milli = r.in(0, 2000);
    std::vector<processor_info> procs;
    for (std::int32_t i = 0; i < ncpu; ++i)
      procs.push_back({i, i / 2, i / std::int32_t(ncpu / 2), i / std::int32_t(ncpu / 2)});
    auto pods = random_pods(r, node.capacity.memory_bytes, node.capacity.cpu_milli * 4);
    for (auto& p : pods) p.pinned_cpus.clear();
    std::vector<std::int32_t> old;
    for (std::int32_t i = 0, n = static_cast<std::int32_t>(r.in(0, ncpu)); i < n; ++i)
      old.push_back(i);
    std::optional<std::int64_t> min_pct;
    if (r.in(0, 1)) min_pct = r.in(0, 50);
    const auto threshold = r.in(0, 100);
    auto s = calculate_be_suppress_cpu(node, double(r.in(0, ncpu * 1000)) / 1000, pods, {}, {},
                                       threshold, min_pct);
    if (min_pct) {
      EXPECT_GE(s.suppress_milli, node.capacity.cpu_milli * *min_pct / 100);
    }

    cpuset_inputs in{procs, old, {}, {}};
    auto d = adjust_by_cpuset(s.suppress_milli, in, pods);
    const std::int32_t max_inc = static_cast<std::int32_t>((ncpu + 9) / 10);
    const std::int32_t floor_cpus =
        std::min<std::int32_t>(2, static_cast<std::int32_t>(old.size()) + max_inc);
    EXPECT_GE(d.target_cpus, floor_cpus);
    if (min_pct) {
      const auto want = (node.capacity.cpu_milli * *min_pct / 100 + 999) / 1000;
      EXPECT_GE(d.target_cpus, std::min<std::int64_t>(want, std::int64_t(old.size()) + max_inc));
    }
    EXPECT_EQ(std::int64_t(d.cpus.size()), d.target_cpus);  // nothing pinned: all picks succeed
    auto sorted = d.cpus;
    std::sort(sorted.begin(), sorted.end());
    EXPECT_EQ(std::adjacent_find(sorted.begin(), sorted.end()), sorted.end());

    auto q = adjust_by_cfs_quota(s.suppress_milli, node.capacity.cpu_milli,
                                 r.in(0, 1) ? -1 : r.in(2000, ncpu * 100000));
    if (q.write) {
      EXPECT_GE(q.quota_us, be_min_quota);
    }
  }
}

TEST(KoordletProperty, PercentilesAreOrdered) {
  for (std::uint64_t seed = 1; seed <= 200; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    rng r(seed);
    sample_window w;
    const auto n = r.in(1, 2000);
    for (std::int64_t t = 0; t < n; ++t)
      w.add_node_and_system({event_time{t * 1000}, r.unit() * 64, r.unit() * 1e11}, {}, {});
    node_metric_collect_policy p;
    p.aggregate_durations_seconds = {60, 300, 1800};
    auto st = build_node_metric_status(w, {}, {}, p, event_time{(n - 1) * 1000});
    for (const auto* list :
         {&st.node_metric.aggregated_node_usages, &st.node_metric.aggregated_system_usages}) {
      for (const auto& a : *list) {
        if (!a.avg) continue;
        EXPECT_LE(a.p50->cpu_milli, a.p90->cpu_milli);
        EXPECT_LE(a.p90->cpu_milli, a.p95->cpu_milli);
        EXPECT_LE(a.p95->cpu_milli, a.p99->cpu_milli);
        EXPECT_LE(a.p50->memory_bytes, a.p90->memory_bytes);
        EXPECT_LE(a.p90->memory_bytes, a.p95->memory_bytes);
        EXPECT_LE(a.p95->memory_bytes, a.p99->memory_bytes);
      }
    }
  }
}

}  // namespace
}  // namespace colony::koordlet
