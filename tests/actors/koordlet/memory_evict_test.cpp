// Golden cases from Koordinator's
// pkg/koordlet/qosmanager/plugins/memoryevict/memory_evict_test.go.
#include <gtest/gtest.h>

#include "actors/koordlet/memory_evict.hpp"
#include "tests/actors/koordlet/koordlet_test_util.hpp"

namespace colony::koordlet {
namespace {

using test::G;
using test::Gi;
using test::make_node;
using test::make_pod;

pod_info mem_pod(std::string name, qos_class q, std::int32_t prio, std::int64_t used) {
  auto p = make_pod(std::move(name), q, prio);
  p.memory_used_bytes = double(used);
  return p;
}

std::vector<pod_info> memory_evict_fixture() {
  return {mem_pod("test_lsr_pod", qos_class::lsr, 1000, 40 * G),
          mem_pod("test_ls_pod", qos_class::ls, 500, 30 * G),
          mem_pod("test_noqos_pod", qos_class::none, 100, 10 * G),
          mem_pod("test_be_pod_priority100_1", qos_class::be, 100, 5 * G),
          mem_pod("test_be_pod_priority100_2", qos_class::be, 100, 20 * G),
          mem_pod("test_be_pod_priority120", qos_class::be, 120, 10 * G)};
}

// Test_memoryEvict: node 80 cores / 120G, only BEMemoryEvict enabled.
TEST(KoordletMemoryEvict, MemoryEvict) {
  struct row {
    const char* name;
    std::int64_t threshold;
    std::optional<std::int64_t> lower;
    std::int64_t node_used;
    std::int64_t want_release;  // 0 = no task
    std::vector<std::string> want_victims;
  };
  const std::vector<row> rows = {
      {"test_memoryevict_sort_by_priority_and_usage_82 (GC-MEM-1)",
       82,
       std::nullopt,
       115 * G,
       18 * G,
       {"test_be_pod_priority100_2"}},
      {"test_memoryevict_MemoryEvictThresholdPercent_80 (GC-MEM-2)",
       80,
       std::nullopt,
       115 * G,
       20400000000,
       {"test_be_pod_priority100_2", "test_be_pod_priority100_1"}},
      {"test_memoryevict_MemoryEvictThresholdPercent_50 (GC-MEM-3)",
       50,
       std::nullopt,
       115 * G,
       56400000000,
       {"test_be_pod_priority100_2", "test_be_pod_priority100_1", "test_be_pod_priority120"}},
      {"test_memoryevict_MemoryEvictLowerPercent_78 (GC-MEM-4)",
       82,
       78,
       115 * G,
       20400000000,
       {"test_be_pod_priority100_2", "test_be_pod_priority100_1"}},
      {"test_memory_under_evict_line (GC-MEM-5)", 80, std::nullopt, 80 * G, 0, {}},
  };
  auto node = make_node(80000, 120 * G);
  auto pods = memory_evict_fixture();
  koordlet_feature_gates gates;
  gates.be_memory_evict = true;
  for (const auto& r : rows) {
    SCOPED_TRACE(r.name);
    resource_threshold_strategy cfg;
    cfg.enable = true;
    cfg.memory_evict_threshold_percent = r.threshold;
    cfg.memory_evict_lower_percent = r.lower;
    memory_evict_input in{&node, pods, double(r.node_used)};
    auto d = memory_evict(in, cfg, gates, {}, {}, event_time{10000});
    ASSERT_TRUE(d.ran);
    if (r.want_release == 0) {
      EXPECT_TRUE(d.tasks.empty());
      EXPECT_TRUE(d.round.victims.empty());
      EXPECT_EQ(d.next_state.last_evict_time, event_time{0});
      continue;
    }
    ASSERT_EQ(d.tasks.size(), 1u);
    EXPECT_EQ(d.tasks[0].to_release.memory_bytes, r.want_release);
    std::vector<std::string> names;
    for (const auto& v : d.round.victims) {
      names.push_back(v.name);
      EXPECT_EQ(evict_round::reason(v.feature), "trigger by koordlet feature BEMemoryEvict");
      EXPECT_EQ(v.released_used.memory_bytes, v.inputs.used);  // a victim releases its usage
    }
    EXPECT_EQ(names, r.want_victims);
    EXPECT_EQ(d.next_state.last_evict_time, event_time{10000});
  }
}

// Test_calculateReleaseByUsedThresholdPercent (node 120G, used 115G).
TEST(KoordletMemoryEvict, CalculateReleaseByUsedThresholdPercent) {
  EXPECT_EQ(memory_release_by_used_threshold(120 * G, 115.0 * G, 80, std::nullopt),
            20400000000);                                                                // GC-MEM-6
  EXPECT_EQ(memory_release_by_used_threshold(120 * G, 115.0 * G, 80, 80), 18000000000);  // GC-MEM-7
  EXPECT_EQ(memory_release_by_used_threshold(120 * G, 80.0 * G, 80, std::nullopt),
            std::nullopt);  // GC-MEM-8
  EXPECT_EQ(memory_release_by_used_threshold(120 * G, std::nullopt, 80, std::nullopt),
            std::nullopt);
}

// Test_getPodEvictInfoAndSortByPriority "test_memoryevict_MemoryEvictThresholdPercent_80"
// (GC-MEM-9).
TEST(KoordletMemoryEvict, GetPodEvictInfoAndSortByPriority) {
  auto mk = [](std::string name, std::int32_t prio, std::optional<std::int64_t> label,
               std::int64_t used) {
    auto p = mem_pod(std::move(name), qos_class::none, prio, used);
    p.priority_label = label;
    p.eviction_enabled = true;
    return p;
  };
  std::vector<pod_info> pods = {
      mk("test_failed_pod", 100, 9999, 20 * G),
      mk("test_evictDisabled_pod", 100, 9999, 20 * G),
      mk("test_higher_priority", 3400, 9999, 20 * G),
      mk("test_podPriority_120_4000", 120, 4000, 3 * G),
      mk("test_podPriority_100_9999", 100, 9999, 10 * G),
      mk("test_podPriority_120_2000", 120, 2000, 1 * G),
      mk("test_podPriority_100_9999_1", 100, 9999, 11 * G),
      mk("test_podPriority_120_3000", 120, 3000, 2 * G),
  };
  pods[0].phase = pod_phase::failed;
  pods[1].eviction_enabled = false;
  auto c = sorted_memory_candidates(pods, evict_feature::memory_evict, 3000, false, false);
  std::vector<std::string> names;
  for (const auto& e : c) names.push_back(pods[e.pod].name);
  EXPECT_EQ(names,
            (std::vector<std::string>{"test_podPriority_100_9999_1", "test_podPriority_100_9999",
                                      "test_podPriority_120_2000", "test_podPriority_120_3000",
                                      "test_podPriority_120_4000"}));
}

// Test_calculateReleaseByAllocatableThresholdPercent (GC-MEM-10, GC-MEM-11).
TEST(KoordletMemoryEvict, CalculateReleaseByAllocatableThresholdPercent) {
  auto node = make_node(100000, 200 * Gi);
  node.allocatable.batch_memory_bytes = 100 * Gi;
  auto batch = [](std::string name, std::int64_t req) {
    auto p = make_pod(std::move(name), qos_class::be, 5000);
    p.containers.push_back({"main", {}, {}});
    p.containers[0].requests.batch_memory_bytes = req;
    p.requests.batch_memory_bytes = req;
    return p;
  };
  struct row {
    const char* name;
    std::int64_t a, b, want;
  };
  const row rows[] = {
      {"allocatable threshold exceeded - batch memory (GC-MEM-10)", 45 * Gi, 40 * Gi, 16106127360},
      {"allocatable threshold not exceeded (GC-MEM-11)", 20 * Gi, 30 * Gi, 0}};
  for (const auto& r : rows) {
    SCOPED_TRACE(r.name);
    std::vector<pod_info> pods = {batch("pod-a", r.a), batch("pod-b", r.b)};
    auto rel = memory_release_by_allocatable_threshold(node, pods, 5999, 80, 70);
    EXPECT_EQ(rel.release.batch_memory_bytes, r.want);
    if (r.want > 0) {
      evict_task t;
      t.measure = measure_kind::memory_request;
      t.released_classes = rel.classes;
      EXPECT_EQ(measure_pod(t, pods[0]).batch_memory_bytes, r.a);  // each pod releases its request
    }
  }
}

TEST(KoordletMemoryEvict, CoolDownAndConfigChecks) {
  auto node = make_node(80000, 120 * G);
  auto pods = memory_evict_fixture();
  koordlet_feature_gates gates;
  gates.be_memory_evict = true;
  gates.memory_evict = true;
  resource_threshold_strategy cfg;
  cfg.enable = true;
  cfg.memory_evict_threshold_percent = 80;
  memory_evict_input in{&node, pods, 115.0 * G};
  evictor_state st{event_time{8000}};
  EXPECT_FALSE(memory_evict(in, cfg, gates, {}, st, event_time{11999}).ran);  // 4 s cool-down
  auto d = memory_evict(in, cfg, gates, {}, st, event_time{12000});
  EXPECT_TRUE(d.ran);
  ASSERT_EQ(d.config_errors.size(), 1u);  // MemoryEvict needs evictEnabledPriorityThreshold
  EXPECT_EQ(d.config_errors[0].first, evict_feature::memory_evict);
  cfg.memory_evict_lower_percent = 80;
  EXPECT_TRUE(check_memory_evict_config(cfg, evict_feature::be_memory_evict).has_value());
}

}  // namespace
}  // namespace colony::koordlet
