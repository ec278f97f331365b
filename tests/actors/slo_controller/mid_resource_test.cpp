// Golden cases for mid resources and the write decision: Koordinator's
// pkg/slo-controller/noderesource/plugins/midresource/plugin_test.go (TestPluginCalculate,
// TestPlugin_isDegradeNeeded) and pkg/slo-controller/noderesource/resource_calculator_test.go
// (Test_isNodeResourceSyncNeeded); golden cases GC-MID-1..5, GC-SYNC-1..4.
#include <functional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "actors/slo_controller/node_resource.hpp"
#include "tests/actors/slo_controller/test_fixtures.hpp"

namespace colony::slo_controller {
namespace {

using namespace testing;  // NOLINT: fixtures

const event_time now{1'700'000'000'000};

// getTestNode: capacity 100 / 210G, allocatable 100 / 200G (kubelet reserves 10G of memory).
node_input mid_node() {
  return make_node("test-node", rl(100 * cores, 210 * G), rl(100 * cores, 200 * G));
}

std::vector<pod_input> mid_pods() {
  return {make_pod("podA", priority_class::prod, qos_class::ls, pod_phase::running,
                   rl(20 * cores, 40 * G)),
          make_pod("podB", priority_class::batch, qos_class::be, pod_phase::running,
                   rl(15 * cores, 30 * G))};
}

struct mid_case {
  std::string go_name;
  std::function<void(colocation_strategy&)> strategy_fn;
  std::function<void(node_metric_input&)> metric_fn;
  bool want_reset;
  std::int64_t want_cpu;
  std::int64_t want_mem;
  std::string want_cpu_msg;
  std::string want_mem_msg;
};

// The Go cases' base strategy: enable, degradeTimeMinutes 10, midStatic 10/10 (ignored in dynamic
// mode).
colocation_strategy mid_strategy() {
  colocation_strategy s;
  s.enable = true;
  s.degrade_time_minutes = 10;
  s.mid_static_cpu_reserved_percent = 10;
  s.mid_static_memory_reserved_percent = 10;
  return s;
}

node_metric_input mid_metric(std::int64_t usage_cpu, std::int64_t usage_mem) {
  node_metric_input m;
  m.update_time = event_time{now.value - 20 * 1000};
  m.node_usage = {usage_cpu, usage_mem};
  m.pod_metrics = {make_metric("podA", rl(5 * cores, 10 * G)),
                   make_metric("podB", rl(15 * cores, 30 * G))};
  return m;
}

std::vector<mid_case> mid_cases() {
  auto none = [](colocation_strategy&) {};
  auto static_mode = [](std::int64_t pct) {
    return [pct](colocation_strategy& s) {
      s.mid_static_cpu_reserved_percent = pct;
      s.mid_static_memory_reserved_percent = pct;
      s.mid_reclaim_mode = reclaim_mode::static_mode;
      s.mid_cpu_threshold_percent = 10;
      s.mid_memory_threshold_percent = 20;
      s.mid_unallocated_percent = 10;
    };
  };
  auto usage = [](std::int64_t cpu, std::int64_t mem, std::optional<resource_list> prod) {
    return [=](node_metric_input& m) {
      m = mid_metric(cpu, mem);
      m.prod_reclaimable = prod;
    };
  };
  auto host = [](priority_class p, std::int64_t cpu, std::int64_t mem) {
    return [=](node_metric_input& m) {
      m = mid_metric(30 * cores, 50 * G);
      m.prod_reclaimable = resource_list{};  // ProdReclaimableMetric{} with no resources: 0
      m.host_app_metrics = {{"test-host-application", rl(cpu, mem), p}};
    };
  };
  const std::string zero_cpu_80 =
      "midAllocatable[CPU(milli-core)]:0 = min(min(ProdReclaimable:0, NodeUnused:70000) + "
      "Unallocated:80000 * "
      "midUnallocatedRatio:0, NodeCapacity:100000 * thresholdRatio:1)";
  const std::string zero_mem_160 =
      "midAllocatable[Memory(GB)]:0 = min(min(ProdReclaimable:0, NodeUnused:160) + Unallocated:160 "
      "* "
      "midUnallocatedRatio:0, NodeCapacity:210 * thresholdRatio:1)";
  return {
      // GC-MID-5
      {"degrade when node metric is expired",
       [](colocation_strategy& s) { s.degrade_time_minutes = 5; },
       [](node_metric_input& m) {
         m = mid_metric(20 * cores, 45 * G);
         m.update_time = event_time{now.value - 30 * minute_ms};
       },
       true, 0, 0,
       "degrade node Mid resource because of abnormal nodeMetric, reason: degradedByMidResource",
       "degrade node Mid resource because of abnormal nodeMetric, reason: degradedByMidResource"},
      // GC-MID-1
      {"calculate correctly when node metric is valid", none,
       usage(20 * cores, 45 * G, rl(10 * cores, 15 * G)), false, 10000, 15 * G,
       "midAllocatable[CPU(milli-core)]:10000 = min(min(ProdReclaimable:10000, NodeUnused:80000) + "
       "Unallocated:80000 "
       "* midUnallocatedRatio:0, NodeCapacity:100000 * thresholdRatio:1)",
       "midAllocatable[Memory(GB)]:15 = min(min(ProdReclaimable:15, NodeUnused:165) + "
       "Unallocated:160 * "
       "midUnallocatedRatio:0, NodeCapacity:210 * thresholdRatio:1)"},
      // GC-MID-2
      {"calculate correctly where the prod reclaimable exceeds the mid threshold",
       [](colocation_strategy& s) {
         s.mid_cpu_threshold_percent = 10;
         s.mid_memory_threshold_percent = 20;
         s.mid_unallocated_percent = 10;
       },
       usage(30 * cores, 50 * G, rl(15 * cores, 30 * G)), false, 10000, 42 * G,
       "midAllocatable[CPU(milli-core)]:10000 = min(min(ProdReclaimable:15000, NodeUnused:70000) + "
       "Unallocated:80000 "
       "* midUnallocatedRatio:0.1, NodeCapacity:100000 * thresholdRatio:0.1)",
       "midAllocatable[Memory(GB)]:42 = min(min(ProdReclaimable:30, NodeUnused:160) + "
       "Unallocated:160 * "
       "midUnallocatedRatio:0.1, NodeCapacity:210 * thresholdRatio:0.2)"},
      // GC-MID-3
      {"calculate correctly when prod reclaimable is nil", none,
       usage(30 * cores, 50 * G, resource_list{}), false, 0, 0, zero_cpu_80, zero_mem_160},
      // GC-MID-4
      {"calculate correctly when set reserved resource in static mode: not exceed", static_mode(10),
       usage(30 * cores, 50 * G, rl(15 * cores, 30 * G)), false, 10000, 21 * G,
       "midAllocatable[CPU(milli-core)]:10000 = min(nodeCapacity:100000 * "
       "staticReservedPercent:0.1, "
       "nodeCapacity:100000 * thresholdRatio:0.1)",
       "midAllocatable[Memory(GB)]:21 = min(nodeCapacity:210 * staticReservedPercent:0.1, "
       "nodeCapacity:210 * "
       "thresholdRatio:0.2)"},
      {"calculate correctly when set reserved resource in static mode: exceed", static_mode(100),
       usage(30 * cores, 50 * G, rl(15 * cores, 30 * G)), false, 10000, 42 * G,
       "midAllocatable[CPU(milli-core)]:10000 = min(nodeCapacity:100000 * staticReservedPercent:1, "
       "nodeCapacity:100000 * thresholdRatio:0.1)",
       "midAllocatable[Memory(GB)]:42 = min(nodeCapacity:210 * staticReservedPercent:1, "
       "nodeCapacity:210 * "
       "thresholdRatio:0.2)"},
      {"calculate correctly where node metrics is invalid", none,
       [](node_metric_input& m) {
         m = node_metric_input{};
         m.update_time = event_time{now.value - 20 * 1000};
         m.prod_reclaimable = rl(20 * cores, 20 * G);
       },
       false, 0, 0,
       "midAllocatable[CPU(milli-core)]:0 = min(min(ProdReclaimable:20000, NodeUnused:0) + "
       "Unallocated:80000 * "
       "midUnallocatedRatio:0, NodeCapacity:100000 * thresholdRatio:1)",
       "midAllocatable[Memory(GB)]:0 = min(min(ProdReclaimable:20, NodeUnused:0) + Unallocated:160 "
       "* "
       "midUnallocatedRatio:0, NodeCapacity:210 * thresholdRatio:1)"},
      {"calculate correctly where the prod reclaimable exceeds the node free resource", none,
       usage(90 * cores, 200 * G, rl(20 * cores, 20 * G)), false, 10000, 10 * G,
       "midAllocatable[CPU(milli-core)]:10000 = min(min(ProdReclaimable:20000, NodeUnused:10000) + "
       "Unallocated:80000 "
       "* midUnallocatedRatio:0, NodeCapacity:100000 * thresholdRatio:1)",
       "midAllocatable[Memory(GB)]:10 = min(min(ProdReclaimable:20, NodeUnused:10) + "
       "Unallocated:160 * "
       "midUnallocatedRatio:0, NodeCapacity:210 * thresholdRatio:1)"},
      {"including product host application usage", none,
       host(priority_class::prod, 5 * cores, 15 * G), false, 0, 0,
       "midAllocatable[CPU(milli-core)]:0 = min(min(ProdReclaimable:0, NodeUnused:70000) + "
       "Unallocated:75000 * "
       "midUnallocatedRatio:0, NodeCapacity:100000 * thresholdRatio:1)",
       "midAllocatable[Memory(GB)]:0 = min(min(ProdReclaimable:0, NodeUnused:160) + "
       "Unallocated:155 * "
       "midUnallocatedRatio:0, NodeCapacity:210 * thresholdRatio:1)"},
      {"including mid host application usage", none, host(priority_class::mid, 5 * cores, 15 * G),
       false, 0, 0, zero_cpu_80, zero_mem_160},
      {"including batch host application usage", none,
       host(priority_class::batch, 2 * cores, 10 * G), false, 0, 0, zero_cpu_80, zero_mem_160},
  };
}

class MidTestPluginCalculate : public ::testing::TestWithParam<mid_case> {};

TEST_P(MidTestPluginCalculate, MatchesKoordinator) {
  const auto& c = GetParam();
  colocation_strategy s = mid_strategy();
  c.strategy_fn(s);
  node_metric_input metric;
  c.metric_fn(metric);
  calculator_scratch scratch;
  const auto r = calculate_node_resource(s, mid_node(), mid_pods(), &metric, now, scratch);
  SCOPED_TRACE(c.go_name);
  EXPECT_EQ(r.mid_reset, c.want_reset);
  if (!c.want_reset) {
    EXPECT_EQ(r.mid_cpu_milli, c.want_cpu);
    EXPECT_EQ(r.mid_memory_bytes, c.want_mem);
  }
  EXPECT_EQ(koordinator_message(r.mid_cpu), c.want_cpu_msg);
  EXPECT_EQ(koordinator_message(r.mid_memory), c.want_mem_msg);
}

std::string mid_case_name(const ::testing::TestParamInfo<mid_case>& info) {
  std::string out;
  bool up = true;
  for (char ch : info.param.go_name) {
    if (std::isalnum(static_cast<unsigned char>(ch)) != 0) {
      out += up ? static_cast<char>(std::toupper(static_cast<unsigned char>(ch))) : ch;
      up = false;
    } else {
      up = true;
    }
  }
  return out;
}

INSTANTIATE_TEST_SUITE_P(MidResource, MidTestPluginCalculate, ::testing::ValuesIn(mid_cases()),
                         mid_case_name);

// midresource TestPlugin_isDegradeNeeded: a missing prodReclaimableMetric does NOT degrade.
TEST(MidTestPluginIsDegradeNeeded, NodeMetricWithoutProdReclaimableDoesNotDegrade) {
  colocation_strategy s = mid_strategy();
  node_metric_input m = mid_metric(20 * cores, 45 * G);
  m.prod_reclaimable.reset();
  EXPECT_FALSE(is_degrade_needed(s, &m, now));
  calculator_scratch scratch;
  const auto r = calculate_node_resource(s, mid_node(), mid_pods(), &m, now, scratch);
  EXPECT_FALSE(r.mid_reset);
  EXPECT_EQ(r.mid_cpu_milli, 0);
}

// GC-SYNC-1..4, resource_calculator_test.go Test_isNodeResourceSyncNeeded (threshold 300 s, diff
// 0.1).
struct sync_case {
  std::string go_name;
  std::optional<std::int64_t> last_update_offset_ms;
  node_extended_resources old_alloc;
  node_extended_resources new_alloc;
  bool want;
};

node_extended_resources batch_alloc(std::int64_t cpu_cores, std::int64_t mem_g) {
  node_extended_resources r;
  r.batch_cpu = cpu_cores;  // "20" as in the Go test: the quantity value
  r.batch_memory = mem_g * G;
  return r;
}

class TestIsNodeResourceSyncNeeded : public ::testing::TestWithParam<sync_case> {};

TEST_P(TestIsNodeResourceSyncNeeded, MatchesKoordinator) {
  const auto& c = GetParam();
  colocation_strategy s = colocation_strategy::defaults();
  s.update_time_threshold_seconds = 300;
  s.resource_diff_threshold = 0.1;
  std::optional<event_time> last;
  if (c.last_update_offset_ms) last = event_time{now.value + *c.last_update_offset_ms};
  const auto d = need_sync(s, c.old_alloc, c.new_alloc, last, now);
  EXPECT_EQ(d.need_sync, c.want) << c.go_name;
  EXPECT_EQ(d.reason.empty(), !c.want);
}

INSTANTIATE_TEST_SUITE_P(
    ResourceCalculator, TestIsNodeResourceSyncNeeded,
    ::testing::Values(sync_case{"needSync for expired node resource", -10 * minute_ms,
                                batch_alloc(20, 40), batch_alloc(20, 40), true},
                      sync_case{"needSync for cpu diff larger than 0.1", 0, batch_alloc(20, 40),
                                batch_alloc(15, 40), true},
                      sync_case{"needSync for memory diff larger than 0.1", 0, batch_alloc(20, 40),
                                batch_alloc(20, 70), true},
                      sync_case{"no need to sync, everything's ok.", 0, batch_alloc(20, 40),
                                batch_alloc(20, 40), false},
                      sync_case{"never written needs sync", std::nullopt, batch_alloc(20, 40),
                                batch_alloc(20, 40), true},
                      // derived boundaries: exactly 300 s is not "more than"; a 10 % change is not
                      // "more than" 10 %
                      sync_case{"exactly at the update threshold does not sync", -300 * 1000,
                                batch_alloc(20, 40), batch_alloc(20, 40), false},
                      sync_case{"exactly ten percent does not sync", 0, batch_alloc(20, 40),
                                batch_alloc(22, 40), false},
                      sync_case{"a resource appearing needs sync", 0, node_extended_resources{},
                                batch_alloc(20, 40), true}));

TEST(TestIsNodeResourceSyncNeeded, MidResourceChangeNeedsSync) {
  // midresource TestPluginNeedSync "need to sync for mid resource changed".
  colocation_strategy s = colocation_strategy::defaults();
  node_extended_resources a = batch_alloc(20, 40);
  node_extended_resources b = a;
  a.mid_cpu = 20000;
  b.mid_cpu = 10000;
  const auto d = need_sync(s, a, b, now, now);
  EXPECT_TRUE(d.need_sync);
  EXPECT_EQ(d.reason, "mid resource diff is big than threshold");
  EXPECT_FALSE(need_sync(s, a, a, now, now).need_sync);
}

}  // namespace
}  // namespace colony::slo_controller
