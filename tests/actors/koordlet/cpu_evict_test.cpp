// Golden cases from Koordinator's
// pkg/koordlet/qosmanager/plugins/cpuevict/cpu_evict_test.go.
#include <gtest/gtest.h>

#include "actors/koordlet/cpu_evict.hpp"
#include "tests/actors/koordlet/koordlet_test_util.hpp"

namespace colony::koordlet {
namespace {

using test::make_node;
using test::make_pod;

// Test_CPUEvict_calculateMilliReleaseByBESatisfaction: lower 30, upper 40, usage threshold 90
// unless noted; collect interval 1 s; node allocatable batch-cpu 30000 unless noted.
TEST(KoordletCpuEvict, CPUEvictCalculateMilliReleaseByBESatisfaction) {
  struct q {
    std::int64_t count;
    double limit, used, request;
  };
  struct row {
    const char* name;
    int cfg;  // 0: default, 1: usage threshold 50, 2: 1 + evictByAllocatable
    q avg, cur;
    std::int64_t alloc_batch_cpu;
    std::int64_t want;
  };
  const std::vector<row> rows = {
      {"test_avgMetricQueryResult_Error", 0, {0, 0, 0, 0}, {}, 30000, 0},
      {"test_avgMetricQueryResult_CPURealLimit_zero", 0, {59, 0, 20000, 0}, {}, 30000, 0},
      {"test_avgMetricQueryResult_cpuUsage_not_enough", 0, {59, 20000, 10000, 0}, {}, 30000, 0},
      {"test_avgMetricQueryResult_cpuRequest_zero", 0, {59, 20000, 19000, 0}, {}, 30000, 0},
      {"test_avgMetricQueryResult_ResourceSatisfaction_enough (GC-CEV-3)",
       0,
       {59, 20000, 19000, 40000},
       {},
       30000,
       0},
      {"test_avgMetricQueryResult_need_release_but_currentMetricQueryResult_invalid",
       0,
       {59, 10000, 9500, 50000},
       {1, 0, 0, 0},
       30000,
       0},
      {"test_avgMetricQueryResult_need_release_but_currentMetricQueryResult_cpuUsage_not_enough "
       "(GC-CEV-4)",
       0,
       {59, 10000, 9500, 50000},
       {1, 10000, 5000, 50000},
       30000,
       0},
      {"test_avgRelease>currentRelease (GC-CEV-1)",
       0,
       {59, 10000, 9500, 50000},
       {1, 14000, 13000, 50000},
       30000,
       6000},
      {"test_avgRelease<currentRelease (GC-CEV-2)",
       0,
       {59, 13000, 12000, 50000},
       {1, 11000, 10000, 50000},
       30000,
       7000},
      {"test_BEUsageThresholdPercent_50_avgMetricQueryResult_cpuUsage_not_enough",
       1,
       {59, 20000, 9000, 0},
       {},
       30000,
       0},
      {"test_BEUsageThresholdPercent_50_avgMetricQueryResult_need_release_but_"
       "currentMetricQueryResult_cpuUsage_not_enough",
       1,
       {59, 10000, 6000, 50000},
       {1, 10000, 4000, 50000},
       30000,
       0},
      {"test_BEUsageThresholdPercent_50_avgRelease>currentRelease",
       1,
       {59, 10000, 6000, 50000},
       {1, 14000, 8000, 50000},
       30000,
       6000},
      {"test_BEUsageThresholdPercent_50_avgMetricQueryResult_skip_release_when_allocatable_small_"
       "but_policy_by_reallimit",
       1,
       {59, 10000, 6000, 50000},
       {1, 10000, 4000, 50000},
       8000,
       0},
      {"test_BEUsageThresholdPercent_50_avgMetricQueryResult_need_release_since_allocatable_is_"
       "small (GC-CEV-5)",
       2,
       {59, 10000, 6000, 50000},
       {1, 10000, 4000, 50000},
       8000,
       12000},
      {"test_BEUsageThresholdPercent_50_avgMetricQueryResult_need_release_since_allocatable_is_"
       "zero",
       2,
       {59, 10000, 6000, 50000},
       {1, 10000, 4000, 50000},
       0,
       20000 - 1},
  };
  for (const auto& r : rows) {
    SCOPED_TRACE(r.name);
    resource_threshold_strategy cfg;
    cfg.cpu_evict_be_satisfaction_upper_percent = 40;
    cfg.cpu_evict_be_satisfaction_lower_percent = 30;
    if (r.cfg >= 1) cfg.cpu_evict_be_usage_threshold_percent = 50;
    if (r.cfg == 2) cfg.cpu_evict_policy = cpu_evict_policy_type::evict_by_allocatable;
    auto node = make_node(60000, 120 * test::Gi);
    node.allocatable.batch_cpu_milli = r.alloc_batch_cpu;
    be_cpu_window w;
    w.count = r.avg.count;
    w.avg_usage = r.avg.used;
    w.avg_request = r.avg.request;
    w.avg_real_limit = r.avg.limit;
    w.last_usage = r.cur.used;
    w.last_request = r.cur.request;
    w.last_real_limit = r.cur.limit;
    auto rel = calculate_milli_release_by_be_satisfaction(w, cfg, node, 1, 1);
    EXPECT_EQ(rel.milli, r.want);
    EXPECT_EQ(rel.explain.back().name, "milliRelease");
  }
}

// Test_calculateReleaseByUsedThresholdPercent (node 100 cores, used 81 cores, threshold 80).
TEST(KoordletCpuEvict, CalculateReleaseByUsedThresholdPercent) {
  EXPECT_EQ(cpu_release_by_used_threshold(100000, 81.0, 80, std::nullopt), 3000);  // GC-CEV-6
  EXPECT_EQ(cpu_release_by_used_threshold(100000, 81.0, 80, 80), 1000);            // GC-CEV-7
  EXPECT_EQ(cpu_release_by_used_threshold(100000, 11.0, 80, std::nullopt),
            std::nullopt);  // GC-CEV-8
}

// Test_getBEPodEvictInfoAndSort "test_sort" (GC-CEV-9).
TEST(KoordletCpuEvict, GetBEPodEvictInfoAndSort) {
  auto be = [](std::string name, std::int32_t prio, double used) {
    auto p = make_pod(std::move(name), qos_class::be, prio);
    p.containers.push_back({"main", {}, {}});
    p.containers[0].requests.batch_cpu_milli = 16000;
    p.cpu_used_cores = used;
    return p;
  };
  std::vector<pod_info> pods = {
      make_pod("pod_lsr", qos_class::lsr, 9000), be("pod_be_1_priority100", 100, 3),
      make_pod("pod_ls", qos_class::ls, 9000), be("pod_be_2_priority100", 100, 4),
      be("pod_be_3_priority10", 10, 4)};
  auto c = sorted_be_cpu_candidates(pods);
  std::vector<std::string> names;
  for (const auto& e : c) names.push_back(pods[e.pod].name);
  EXPECT_EQ(names, (std::vector<std::string>{"pod_be_3_priority10", "pod_be_2_priority100",
                                             "pod_be_1_priority100"}));
  EXPECT_DOUBLE_EQ(c[1].usage_ratio, 0.25);
  EXPECT_DOUBLE_EQ(c[2].usage_ratio, 0.1875);
}

// Test_calculateMilliReleaseByAllocatableThresholdPercent "allocatable threshold exceeded - batch
// cpu" (GC-CEV-10).
TEST(KoordletCpuEvict, CalculateMilliReleaseByAllocatableThresholdPercent) {
  auto node = make_node(100000, 100 * test::Gi);
  node.allocatable.batch_cpu_milli = 100000;
  auto batch = [](std::string name, std::int64_t req) {
    auto p = make_pod(std::move(name), qos_class::be, 5000);
    p.containers.push_back({"main", {}, {}});
    p.containers[0].requests.batch_cpu_milli = req;
    return p;
  };
  std::vector<pod_info> pods = {batch("a", 45000), batch("b", 40000)};
  auto rel = cpu_release_by_allocatable_threshold(node, pods, 5999, 80, 70);
  EXPECT_EQ(rel.release.batch_cpu_milli, 15000);
  EXPECT_EQ(rel.classes, 1u << static_cast<unsigned>(priority_class::batch));
}

TEST(KoordletCpuEvict, RoundEvictsBEPodsUntilCoveredAfterCoolDown) {
  auto node = make_node(60000, 120 * test::Gi);
  node.allocatable.batch_cpu_milli = 30000;
  std::vector<pod_info> pods;
  for (int i = 0; i < 4; ++i) {
    auto p = make_pod("be-" + std::to_string(i), qos_class::be, 5000);
    p.containers.push_back({"main", {}, {}});
    p.containers[0].requests.batch_cpu_milli = 4000;
    p.cpu_used_cores = 1.0 + i;
    pods.push_back(p);
  }
  resource_threshold_strategy cfg;
  cfg.enable = true;
  cfg.cpu_evict_be_satisfaction_upper_percent = 40;
  cfg.cpu_evict_be_satisfaction_lower_percent = 30;
  koordlet_feature_gates gates;
  gates.be_cpu_evict = true;
  cpu_evict_input in;
  in.node = &node;
  in.pods = pods;
  in.be = {59, 9500, 50000, 10000, 13000, 50000, 14000};  // GC-CEV-1 figures: release 6000
  evictor_state st{event_time{0}};  // koordlet started at 0: no eviction in the first 20 s
  EXPECT_FALSE(cpu_evict(in, cfg, gates, {}, st, event_time{19999}).ran);
  auto d = cpu_evict(in, cfg, gates, {}, st, event_time{20000});
  ASSERT_TRUE(d.ran);
  ASSERT_EQ(d.tasks.size(), 1u);
  EXPECT_EQ(d.tasks[0].to_release.batch_cpu_milli, 6000);
  ASSERT_EQ(d.round.victims.size(), 2u);  // 4000 each, highest usage ratio first
  EXPECT_EQ(d.round.victims[0].name, "be-3");
  EXPECT_EQ(d.round.victims[1].name, "be-2");
  EXPECT_EQ(d.round.released_request.batch_cpu_milli, 8000);
  EXPECT_TRUE(d.round.tasks[0].failed_to_release.is_zero());
  EXPECT_EQ(d.next_state.last_evict_time, event_time{20000});
}

TEST(KoordletCpuEvict, SummarizeBECpuWindow) {
  std::vector<be_cpu_sample> s;
  for (int t = 0; t <= 60; ++t) s.push_back({event_time{t * 1000}, double(t), 100, 50});
  auto w = summarize_be_cpu(s, event_time{60000}, 10, duration_ms{1000});
  EXPECT_EQ(w.count, 11);  // [50 s, 60 s], both ends
  EXPECT_DOUBLE_EQ(w.avg_usage, 55);
  EXPECT_DOUBLE_EQ(w.last_usage, 60);
  auto stale = summarize_be_cpu(s, event_time{63000}, 10, duration_ms{1000});
  EXPECT_EQ(stale.last_usage, 0);  // nothing within 2 s
}

}  // namespace
}  // namespace colony::koordlet
