// Golden cases for batch resources: Koordinator's
// pkg/slo-controller/noderesource/plugins/batchresource/plugin_test.go (TestPluginCalculate,
// TestPlugin_isDegradeNeeded, TestPrepare, TestPrepareWithThirdParty) and
// pkg/slo-controller/noderesource/resource_calculator_test.go (Test_calculateNodeResource).
// Golden cases GC-BATCH-1..14. Each row carries the Go case
// name and Koordinator's expected message, which koordinator_message() must reproduce byte for
// byte.
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

struct batch_case {
  std::string go_name;  // TestPluginCalculate case name
  std::function<void(colocation_strategy&)> strategy_fn;
  std::function<void(node_input&)> node_fn;
  std::function<std::vector<pod_input>()> pods_fn;  // null: getTestPodList
  std::function<void(node_metric_input&)> metric_fn;
  std::int64_t want_cpu;
  std::int64_t want_mem;
  std::string want_cpu_msg;
  std::string want_mem_msg;
};

node_reservation reserve(std::optional<std::int64_t> cpu, std::optional<std::int64_t> mem,
                         std::string cpus = "") {
  node_reservation r;
  r.cpu_milli = cpu;
  r.memory_bytes = mem;
  r.reserved_cpus = std::move(cpus);
  return r;
}

// Pods of "calculate with pods in multiple priority classes" (GC-BATCH-9). podProd1: no QoS label,
// priority 9999 -> Prod; podMid: qos BE but priority 7000 -> class Mid (raw class wins) -> counted
// as HP.
std::vector<pod_input> multi_priority_pods(qos_class first_qos, std::string first_name) {
  return {
      make_pod(std::move(first_name), priority_class::prod, first_qos, pod_phase::running,
               rl(10 * cores, 10 * G)),
      make_pod("podProd1", priority_class::prod, qos_class::lsr, pod_phase::running,
               rl(10 * cores, 10 * G)),
      make_pod("podBatch", priority_class::batch, qos_class::be, pod_phase::running,
               rl(10 * cores, 10 * G)),
      make_pod("podMid", priority_class::mid, qos_class::be, pod_phase::pending,
               rl(20 * cores, 40 * G)),
      make_pod("podProd2", priority_class::prod, qos_class::lsr, pod_phase::succeeded,
               rl(10 * cores, 10 * G)),
  };
}

std::vector<batch_case> batch_cases() {
  auto p6565 = [](colocation_strategy&) {};
  auto mem_req_7080 = [](colocation_strategy& s) {
    s.cpu_reclaim_threshold_percent = 70;
    s.memory_reclaim_threshold_percent = 80;
    s.memory_calculate_policy = calculate_policy::request;
  };
  auto adjusted = [](colocation_strategy& s) {
    s.cpu_reclaim_threshold_percent = 150;
    s.memory_reclaim_threshold_percent = 120;
    s.cpu_calculate_policy = calculate_policy::max_usage_request;
    s.memory_calculate_policy = calculate_policy::request;
  };
  auto different = [](colocation_strategy& s) {
    s.cpu_reclaim_threshold_percent = 150;
    s.memory_reclaim_threshold_percent = 120;
    s.cpu_calculate_policy = calculate_policy::usage;
    s.memory_calculate_policy = calculate_policy::max_usage_request;
  };
  auto no_node = [](node_input&) {};
  auto anno = [](node_reservation r) {
    return [r](node_input& n) { n.annotation_reservation = r; };
  };
  auto kubelet_90_100 = [](node_reservation r) {
    return [r](node_input& n) {
      n.allocatable = rl(90 * cores, 100 * G);
      n.annotation_reservation = r;
    };
  };
  auto no_metric = [](node_metric_input&) {};
  auto host_app = [](priority_class p, std::int64_t cpu, std::int64_t mem) {
    return [p, cpu, mem](node_metric_input& m) {
      m.system_usage = rl(4 * cores, 6 * G);
      m.host_app_metrics = {{"test-host-application", rl(cpu, mem), p}};
    };
  };
  const std::string cpu25 =
      "batchAllocatable[CPU(Milli-Core)]:25000 = nodeCapacity:100000 - nodeSafetyMargin:35000 - "
      "systemUsageOrNodeReserved:7000 - podHPUsed:33000";
  const std::string mem33 =
      "batchAllocatable[Mem(GB)]:33 = nodeCapacity:120 - nodeSafetyMargin:42 - systemUsage:12 - "
      "podHPUsed:33";
  const std::string cpu22 =
      "batchAllocatable[CPU(Milli-Core)]:22000 = nodeCapacity:100000 - nodeSafetyMargin:35000 - "
      "systemUsageOrNodeReserved:10000 - podHPUsed:33000";
  const std::string mem25 =
      "batchAllocatable[Mem(GB)]:25 = nodeCapacity:120 - nodeSafetyMargin:42 - systemUsage:20 - "
      "podHPUsed:33";
  const std::string cpu12 =
      "batchAllocatable[CPU(Milli-Core)]:12000 = nodeCapacity:100000 - nodeSafetyMargin:35000 - "
      "systemUsageOrNodeReserved:20000 - podHPUsed:33000";
  const std::string cpu30 =
      "batchAllocatable[CPU(Milli-Core)]:30000 = nodeCapacity:100000 - nodeSafetyMargin:30000 - "
      "systemUsageOrNodeReserved:7000 - podHPUsed:33000";
  const std::string cpu101 =
      "batchAllocatable[CPU(Milli-Core)]:101000 = nodeCapacity:100000 - nodeSafetyMargin:-50000 - "
      "systemUsageOrNodeReserved:7000 - podHPMaxUsedRequest:42000";
  const std::string cpu100 =
      "batchAllocatable[CPU(Milli-Core)]:100000 = min(nodeCapacity:100000 * thresholdRatio:1, "
      "nodeCapacity:100000 - "
      "nodeSafetyMargin:-50000 - systemUsageOrNodeReserved:7000 - podHPMaxUsedRequest:42000)";
  const std::string mem84 =
      "batchAllocatable[Mem(GB)]:84 = nodeCapacity:120 - nodeSafetyMargin:-24 - nodeReserved:0 - "
      "podHPRequest:60";
  const std::string mem84cap =
      "batchAllocatable[Mem(GB)]:84 = min(nodeCapacity:120 * thresholdRatio:1, nodeCapacity:120 - "
      "nodeSafetyMargin:-24 - nodeReserved:0 - podHPRequest:60)";
  return {
      // GC-BATCH-1
      {"calculate with memory usage", p6565, no_node, nullptr, no_metric, 25000, 33 * G, cpu25,
       mem33},
      {"calculate with memory usage and reserve nothing from node.annotation", p6565,
       anno(reserve({}, {})), nullptr, no_metric, 25000, 33 * G, cpu25, mem33},
      {"calculate with memory usage and reserve specific cpus from node.annotation and left equal "
       "sys.used",
       p6565, anno(reserve({}, {}, "0-1")), nullptr, no_metric, 25000, 33 * G, cpu25, mem33},
      {"calculate with memory usage and reserve specific cpus from node.annotation and right equal "
       "sys.used",
       p6565, anno(reserve({}, {}, "0-19")), nullptr, no_metric, 12000, 33 * G, cpu12, mem33},
      // GC-BATCH-7
      {"calculate with memory usage and reserve cpus by quantity from node.annotation and right "
       "equal sys.used",
       p6565, anno(reserve(20 * cores, {})), nullptr, no_metric, 12000, 33 * G, cpu12, mem33},
      {"calculate with memory usage and reserve cpus by quantity and specific cores from "
       "node.annotation and right "
       "equal sys.used",
       p6565, anno(reserve(20 * cores, {}, "0-9")), nullptr, no_metric, 22000, 33 * G, cpu22,
       mem33},
      {"calculate with memory usage and reserve memory from node.annotation and right equal "
       "sys.used",
       p6565, anno(reserve({}, 20 * G)), nullptr, no_metric, 25000, 25 * G, cpu25, mem25},
      {"calculate with memory usage and reserve memory from node.annotation and left equal "
       "sys.used",
       p6565, anno(reserve({}, 5 * G)), nullptr, no_metric, 25000, 33 * G, cpu25, mem33},
      {"calculate with memory usage and reserve memory and cpu from node.annotation and left equal "
       "sys.used",
       p6565, anno(reserve(2 * cores, 5 * G)), nullptr, no_metric, 25000, 33 * G, cpu25, mem33},
      {"calculate with memory usage and reserve memory and cpu from node.annotation and right "
       "equal sys.used",
       p6565, anno(reserve(10 * cores, 20 * G)), nullptr, no_metric, 22000, 25 * G, cpu22, mem25},
      {"calculate with memory usage and reserve memory and specific cores from node.annotation and "
       "right equal "
       "sys.used",
       p6565, anno(reserve({}, 20 * G, "0-9")), nullptr, no_metric, 22000, 25 * G, cpu22, mem25},
      {"calculate with memory usage and reserve memory and cpu which kubelet reserved is the "
       "biggest among "
       "node.annotation, sys.used and kubelet reserved",
       p6565, kubelet_90_100(reserve(2 * cores, 5 * G)), nullptr, no_metric, 22000, 25 * G, cpu22,
       mem25},
      // GC-BATCH-2
      {"calculate with memory request", mem_req_7080, no_node, nullptr, no_metric, 30000, 36 * G,
       cpu30,
       "batchAllocatable[Mem(GB)]:36 = nodeCapacity:120 - nodeSafetyMargin:24 - nodeReserved:0 - "
       "podHPRequest:60"},
      {"calculate with memory request and reserve memory from node.annotation and left equal "
       "sys.used",
       mem_req_7080, anno(reserve({}, 5 * G)), nullptr, no_metric, 30000, 31 * G, cpu30,
       "batchAllocatable[Mem(GB)]:31 = nodeCapacity:120 - nodeSafetyMargin:24 - nodeReserved:5 - "
       "podHPRequest:60"},
      {"calculate with memory request and reserve memory which kubelet reserved is the biggest "
       "among node.annotation, "
       "sys.used and kubelet reserve",
       mem_req_7080, kubelet_90_100(reserve({}, 5 * G)), nullptr, no_metric, 27000, 16 * G,
       "batchAllocatable[CPU(Milli-Core)]:27000 = nodeCapacity:100000 - nodeSafetyMargin:30000 - "
       "systemUsageOrNodeReserved:10000 - podHPUsed:33000",
       "batchAllocatable[Mem(GB)]:16 = nodeCapacity:120 - nodeSafetyMargin:24 - nodeReserved:20 - "
       "podHPRequest:60"},
      {"calculate with memory request and reserve memory from node.annotation and right equal "
       "sys.used",
       mem_req_7080, anno(reserve({}, 10 * G)), nullptr, no_metric, 30000, 26 * G, cpu30,
       "batchAllocatable[Mem(GB)]:26 = nodeCapacity:120 - nodeSafetyMargin:24 - nodeReserved:10 - "
       "podHPRequest:60"},
      // GC-BATCH-9
      {"calculate with pods in multiple priority classes", p6565, no_node,
       [] { return multi_priority_pods(qos_class::ls, "podProd"); },
       [](node_metric_input& m) {
         m.pod_metrics = {make_metric("podProd", rl(5 * cores, 5 * G)),
                          make_metric("podProd1", rl(6 * cores, 6 * G)),
                          make_metric("podBatch", rl(10 * cores, 10 * G)),
                          make_metric("podMid", rl(22 * cores, 22 * G))};
       },
       25000, 33 * G, cpu25, mem33},
      // GC-BATCH-10: podProd1 has no metric (request counts), podProd2's metric is dangling.
      {"calculate with pods terminated", p6565, no_node,
       [] {
         return std::vector<pod_input>{make_pod("podProd", priority_class::prod, qos_class::ls,
                                                pod_phase::running, rl(10 * cores, 10 * G)),
                                       make_pod("podProd1", priority_class::prod, qos_class::lsr,
                                                pod_phase::running, rl(10 * cores, 10 * G))};
       },
       [](node_metric_input& m) {
         m.node_usage = {25 * cores, 30 * G};
         m.system_usage = rl(5 * cores, 10 * G);
         m.pod_metrics = {make_metric("podProd", rl(5 * cores, 5 * G)),
                          make_metric("podProd2", rl(10 * cores, 10 * G))};
       },
       35000, 43 * G,
       "batchAllocatable[CPU(Milli-Core)]:35000 = nodeCapacity:100000 - nodeSafetyMargin:35000 - "
       "systemUsageOrNodeReserved:5000 - podHPUsed:25000",
       "batchAllocatable[Mem(GB)]:43 = nodeCapacity:120 - nodeSafetyMargin:42 - systemUsage:10 - "
       "podHPUsed:25"},
      // GC-BATCH-11: the LSE pod counts its cpu request (10) instead of its usage (5).
      {"calculate with pods QoS=LSE", p6565, no_node,
       [] { return multi_priority_pods(qos_class::lse, "podProdLSE"); },
       [](node_metric_input& m) {
         m.pod_metrics = {make_metric("podProdLSE", rl(5 * cores, 5 * G)),
                          make_metric("podProd1", rl(6 * cores, 6 * G)),
                          make_metric("podBatch", rl(10 * cores, 10 * G)),
                          make_metric("podMid", rl(22 * cores, 22 * G))};
       },
       20000, 33 * G,
       "batchAllocatable[CPU(Milli-Core)]:20000 = nodeCapacity:100000 - nodeSafetyMargin:35000 - "
       "systemUsageOrNodeReserved:7000 - podHPUsed:38000",
       mem33},
      // GC-BATCH-3
      {"calculate with cpu maxUsageRequest and memory request",
       [](colocation_strategy& s) {
         s.cpu_reclaim_threshold_percent = 70;
         s.cpu_calculate_policy = calculate_policy::max_usage_request;
         s.memory_reclaim_threshold_percent = 80;
         s.memory_calculate_policy = calculate_policy::request;
       },
       no_node, nullptr, no_metric, 21000, 36 * G,
       "batchAllocatable[CPU(Milli-Core)]:21000 = nodeCapacity:100000 - nodeSafetyMargin:30000 - "
       "systemUsageOrNodeReserved:7000 - podHPMaxUsedRequest:42000",
       "batchAllocatable[Mem(GB)]:36 = nodeCapacity:120 - nodeSafetyMargin:24 - nodeReserved:0 - "
       "podHPRequest:60"},
      // GC-BATCH-4: percents above 100 give a negative safety margin that adds capacity.
      {"calculate with adjusted reclaim ratio", adjusted, no_node, nullptr, no_metric, 101000,
       84 * G, cpu101, mem84},
      // GC-BATCH-5
      {"calculate with batch cpu threshold percent only",
       [adjusted](colocation_strategy& s) {
         adjusted(s);
         s.batch_cpu_threshold_percent = 100;
       },
       no_node, nullptr, no_metric, 100000, 84 * G, cpu100, mem84},
      {"calculate with batch memory threshold percent only",
       [adjusted](colocation_strategy& s) {
         adjusted(s);
         s.batch_memory_threshold_percent = 100;
       },
       no_node, nullptr, no_metric, 101000, 84 * G, cpu101, mem84cap},
      {"calculate with both batch cpu/mem threshold percent",
       [adjusted](colocation_strategy& s) {
         adjusted(s);
         s.batch_cpu_threshold_percent = 100;
         s.batch_memory_threshold_percent = 100;
       },
       no_node, nullptr, no_metric, 100000, 84 * G, cpu100, mem84cap},
      // GC-BATCH-6
      {"calculate without batch cpu/mem threshold percent-with different xxxCalculatePolicy",
       different, no_node, nullptr, no_metric, 110000, 72 * G,
       "batchAllocatable[CPU(Milli-Core)]:110000 = nodeCapacity:100000 - nodeSafetyMargin:-50000 - "
       "systemUsageOrNodeReserved:7000 - podHPUsed:33000",
       "batchAllocatable[Mem(GB)]:72 = nodeCapacity:120 - nodeSafetyMargin:-24 - systemUsage:12 - "
       "podHPMaxUsedRequest:60"},
      {"calculate with both batch cpu/mem threshold percent-with different xxxCalculatePolicy",
       [different](colocation_strategy& s) {
         different(s);
         s.batch_cpu_threshold_percent = 100;
         s.batch_memory_threshold_percent = 100;
       },
       no_node, nullptr, no_metric, 100000, 72 * G,
       "batchAllocatable[CPU(Milli-Core)]:100000 = min(nodeCapacity:100000 * thresholdRatio:1, "
       "nodeCapacity:100000 - "
       "nodeSafetyMargin:-50000 - systemUsageOrNodeReserved:7000 - podHPUsed:33000)",
       "batchAllocatable[Mem(GB)]:72 = min(nodeCapacity:120 * thresholdRatio:1, nodeCapacity:120 - "
       "nodeSafetyMargin:-24 - systemUsage:12 - podHPMaxUsedRequest:60)"},
      // GC-BATCH-8: Prod host applications count as system usage (4+3 cpu, 6+6G memory).
      {"calculate with memory usage, including product host application usage", p6565, no_node,
       nullptr, host_app(priority_class::prod, 3 * cores, 6 * G), 25000, 33 * G, cpu25, mem33},
      {"calculate with memory usage, including mid host application usage", p6565, no_node, nullptr,
       host_app(priority_class::mid, 3 * cores, 6 * G), 25000, 33 * G, cpu25, mem33},
      {"calculate with memory usage, including batch host application usage", p6565, no_node,
       nullptr, host_app(priority_class::batch, 3 * cores, 6 * G), 28000, 39 * G,
       "batchAllocatable[CPU(Milli-Core)]:28000 = nodeCapacity:100000 - nodeSafetyMargin:35000 - "
       "systemUsageOrNodeReserved:4000 - podHPUsed:33000",
       "batchAllocatable[Mem(GB)]:39 = nodeCapacity:120 - nodeSafetyMargin:42 - systemUsage:6 - "
       "podHPUsed:33"},
  };
}

class TestPluginCalculate : public ::testing::TestWithParam<batch_case> {};

TEST_P(TestPluginCalculate, MatchesKoordinator) {
  const auto& c = GetParam();
  colocation_strategy s = make_strategy(65, 65);
  c.strategy_fn(s);
  node_input node = make_node("test-node1", rl(100 * cores, 120 * G));
  c.node_fn(node);
  const std::vector<pod_input> pods = c.pods_fn ? c.pods_fn() : default_pods();
  node_metric_input metric = default_metric(now);
  c.metric_fn(metric);
  calculator_scratch scratch;
  const auto r = calculate_node_resource(s, node, pods, &metric, now, scratch);
  SCOPED_TRACE(c.go_name);
  EXPECT_FALSE(r.degraded);
  EXPECT_FALSE(r.batch_reset);
  EXPECT_EQ(r.batch_cpu_milli, c.want_cpu);
  EXPECT_EQ(r.batch_memory_bytes, c.want_mem);
  EXPECT_EQ(koordinator_message(r.batch_cpu), c.want_cpu_msg);
  EXPECT_EQ(koordinator_message(r.batch_memory), c.want_mem_msg);
  // The explanation always ends with the result term.
  ASSERT_FALSE(r.batch_cpu.terms.empty());
  EXPECT_EQ(r.batch_cpu.terms.back().name, "result");
  EXPECT_EQ(r.batch_cpu.terms.back().value, c.want_cpu);
  EXPECT_EQ(r.batch_memory.terms.back().value, c.want_mem);
}

std::string case_name(const ::testing::TestParamInfo<batch_case>& info) {
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
  return out + std::to_string(info.index);
}

INSTANTIATE_TEST_SUITE_P(BatchResource, TestPluginCalculate, ::testing::ValuesIn(batch_cases()),
                         case_name);

// GC-BATCH-12, resource_calculator_test.go Test_calculateNodeResource
// "calculate normal result always no less than zero": the cpu formula is -7000, clamped to 0.
TEST(TestCalculateNodeResource, CalculateNormalResultAlwaysNoLessThanZero) {
  colocation_config cfg;
  cfg.cluster = merge(colocation_strategy::defaults(), make_strategy(65, 65));
  node_input node = make_node("test-node0", rl(20 * cores, 40 * G));
  std::vector<pod_input> pods{make_pod("podA", priority_class::prod, qos_class::ls,
                                       pod_phase::running, rl(20 * cores, 20 * G))};
  node_metric_input metric;  // NodeMetric info empty, no pod metrics
  metric.update_time = now;
  calculator_scratch scratch;
  const auto r = reconcile_node_resource(cfg, node, pods, &metric, now, scratch);
  EXPECT_EQ(r.batch_cpu_milli, 0);
  EXPECT_EQ(r.batch_memory_bytes, 6 * G);
  EXPECT_EQ(r.mid_cpu_milli, 0);
  EXPECT_EQ(r.mid_memory_bytes, 0);
  EXPECT_EQ(koordinator_message(r.batch_cpu),
            "batchAllocatable[CPU(Milli-Core)]:0 = nodeCapacity:20000 - nodeSafetyMargin:7000 - "
            "systemUsageOrNodeReserved:0 - podHPUsed:20000");
  EXPECT_EQ(koordinator_message(r.batch_memory),
            "batchAllocatable[Mem(GB)]:6 = nodeCapacity:40 - nodeSafetyMargin:14 - systemUsage:0 - "
            "podHPUsed:20");
  EXPECT_EQ(koordinator_message(r.mid_cpu),
            "midAllocatable[CPU(milli-core)]:0 = min(min(ProdReclaimable:0, NodeUnused:0) + "
            "Unallocated:0 * "
            "midUnallocatedRatio:0, NodeCapacity:20000 * thresholdRatio:1)");
  EXPECT_EQ(
      koordinator_message(r.mid_memory),
      "midAllocatable[Memory(GB)]:0 = min(min(ProdReclaimable:0, NodeUnused:0) + Unallocated:20 * "
      "midUnallocatedRatio:0, NodeCapacity:40 * thresholdRatio:1)");
}

// GC-BATCH-13, TestPlugin_isDegradeNeeded.
struct degrade_case {
  std::string go_name;
  bool has_metric;
  std::optional<std::int64_t> update_offset_ms;  // updateTime relative to the clock
  bool want;
};

class TestPluginIsDegradeNeeded : public ::testing::TestWithParam<degrade_case> {};

TEST_P(TestPluginIsDegradeNeeded, MatchesKoordinator) {
  const auto& c = GetParam();
  colocation_strategy s = colocation_strategy::defaults();
  s.degrade_time_minutes = 10;
  node_metric_input m;
  if (c.update_offset_ms) m.update_time = event_time{now.value + *c.update_offset_ms};
  EXPECT_EQ(is_degrade_needed(s, c.has_metric ? &m : nullptr, now), c.want) << c.go_name;
}

INSTANTIATE_TEST_SUITE_P(
    BatchResource, TestPluginIsDegradeNeeded,
    ::testing::Values(
        degrade_case{"empty NodeMetric should degrade", false, std::nullopt, true},
        degrade_case{"empty NodeMetric status should degrade", true, std::nullopt, true},
        degrade_case{"outdated NodeMetric status should degrade", true, -11 * minute_ms, true},
        // the clock moved 11 minutes past an updateTime of "now"
        degrade_case{"outdated NodeMetric status should degrade 1", true, -11 * minute_ms, true},
        // boundary (derived): exactly degradeTimeMinutes old is not "after"
        degrade_case{"exactly at the degrade time does not degrade", true, -10 * minute_ms, false},
        degrade_case{"one millisecond past the degrade time degrades", true, -10 * minute_ms - 1,
                     true},
        degrade_case{"fresh NodeMetric does not degrade", true, -20 * 1000, false}));

TEST(TestPluginCalculateDegrade, StaleNodeMetricResetsBatchAndMid) {
  colocation_strategy s = merge(colocation_strategy::defaults(), make_strategy(65, 65));
  node_input node = make_node("test-node1", rl(100 * cores, 120 * G));
  node_metric_input metric = default_metric(event_time{now.value - 16 * minute_ms});
  calculator_scratch scratch;
  const auto r = calculate_node_resource(s, node, default_pods(), &metric, now, scratch);
  EXPECT_TRUE(r.degraded);
  EXPECT_TRUE(r.batch_reset);
  EXPECT_TRUE(r.mid_reset);
  EXPECT_EQ(
      koordinator_message(r.batch_cpu),
      "degrade node resource because of abnormal nodeMetric, reason: degradedByBatchResource");
  EXPECT_EQ(
      koordinator_message(r.mid_memory),
      "degrade node Mid resource because of abnormal nodeMetric, reason: degradedByMidResource");
  const auto p = prepare_node_resource(r, node);
  EXPECT_EQ(p.allocatable, node_extended_resources{});  // all four removed from the node
}

// GC-BATCH-14, TestPrepareWithThirdParty.
TEST(TestPrepareWithThirdParty, UpdateBatchResourcesWithThirdParty) {
  auto parsed = parse_third_party_allocations(
      R"({"allocations":[{"name":"hadoop-yarn","priority":"koord-batch","resources":{"kubernetes.io/batch-cpu":"10000","kubernetes.io/batch-memory":"10Gi"}}]})");
  ASSERT_TRUE(parsed) << parsed.error().describe();
  node_input node = make_node("test-node", rl(100 * cores, 400 * Gi), rl(100 * cores, 380 * Gi));
  node.third_party_allocations = *parsed;
  node_resource_result r;
  r.batch_cpu_milli = 50000;
  r.batch_memory_bytes = 120 * Gi;
  r.mid_reset = true;
  const auto p = prepare_node_resource(r, node);
  EXPECT_EQ(p.allocatable.batch_cpu, 40000);
  EXPECT_EQ(p.allocatable.batch_memory, 110 * Gi);
  EXPECT_EQ(p.origin_batch_cpu, 50000);
  EXPECT_EQ(p.origin_batch_memory, 120 * Gi);
}

TEST(TestPrepareWithThirdParty, UpdateBatchResourcesWithThirdPartyMaxZero) {
  auto parsed = parse_third_party_allocations(
      R"({"allocations":[{"name":"hadoop-yarn","priority":"koord-batch","resources":{"kubernetes.io/batch-cpu":"60000","kubernetes.io/batch-memory":"120Gi"}}]})");
  ASSERT_TRUE(parsed);
  node_input node = make_node("test-node", rl(100 * cores, 400 * Gi), rl(100 * cores, 380 * Gi));
  node.third_party_allocations = *parsed;
  node_resource_result r;
  r.batch_cpu_milli = 50000;
  r.batch_memory_bytes = 120 * Gi;
  const auto p = prepare_node_resource(r, node);
  EXPECT_EQ(p.allocatable.batch_cpu, 0);
  EXPECT_EQ(p.allocatable.batch_memory, 0);
}

// TestPrepare "update NUMA-level batch resources with cpu-normalization ratio" (node part):
// batch-cpu 25000 with ratio 1.20 becomes int64(25,000,000 * 1.2) milli = 30000.
TEST(TestPrepare, UpdateBatchResourcesWithCpuNormalizationRatio) {
  node_input node = make_node("test-node", rl(100 * cores, 400 * Gi), rl(100 * cores, 380 * Gi));
  node.cpu_normalization_ratio = 1.20;
  node_resource_result r;
  r.batch_cpu_milli = 25000;
  r.batch_memory_bytes = 50 * G;
  r.mid_cpu_milli = 7000;  // mid-cpu is never scaled
  r.mid_memory_bytes = 3 * G;
  const auto p = prepare_node_resource(r, node);
  EXPECT_EQ(p.allocatable.batch_cpu, 30000);
  EXPECT_EQ(p.allocatable.batch_memory, 50 * G);
  EXPECT_EQ(p.allocatable.mid_cpu, 7000);
  // A ratio <= 1.0 is skipped ("skip for invalid ratio").
  node.cpu_normalization_ratio = 0.8;
  EXPECT_EQ(prepare_node_resource(r, node).allocatable.batch_cpu, 25000);
  // A fractional product rounds up to an integer (Quantity.Value()): 3 * 1.0005 = 3.0015 -> 4.
  node.cpu_normalization_ratio = 1.0005;
  r.batch_cpu_milli = 3;
  EXPECT_EQ(prepare_node_resource(r, node).allocatable.batch_cpu, 4);
}

// Go's order of operations: percent -> ratio first, then multiply, then truncate.
TEST(GoArithmetic, ThresholdPercentTruncatesAfterMultiplying) {
  colocation_strategy s = merge(colocation_strategy::defaults(), make_strategy(65, 65));
  s.batch_cpu_threshold_percent = 29;  // 100000 * 0.29 = 28999.999999999996 -> 28999
  s.cpu_reclaim_threshold_percent = 100;
  node_input node = make_node("n", rl(100 * cores, 120 * G));
  node_metric_input metric;
  metric.update_time = now;
  calculator_scratch scratch;
  const auto r = calculate_node_resource(s, node, {}, &metric, now, scratch);
  EXPECT_EQ(r.batch_cpu_milli, 28999);
  EXPECT_EQ(
      koordinator_message(r.batch_cpu),
      "batchAllocatable[CPU(Milli-Core)]:28999 = min(nodeCapacity:100000 * thresholdRatio:0.29, "
      "nodeCapacity:100000 - nodeSafetyMargin:0 - systemUsageOrNodeReserved:0 - podHPUsed:0)");
}

TEST(BatchResource, DuplicateMetricKeysKeepTheLastLikeGoMaps) {
  colocation_strategy s = merge(colocation_strategy::defaults(), make_strategy(100, 100));
  node_input node = make_node("n", rl(100 * cores, 100 * G));
  std::vector<pod_input> pods{
      make_pod("p", priority_class::prod, qos_class::ls, pod_phase::running, rl(1 * cores, 1 * G))};
  node_metric_input metric;
  metric.update_time = now;
  metric.pod_metrics = {make_metric("p", rl(9 * cores, 9 * G)),
                        make_metric("p", rl(2 * cores, 2 * G))};
  calculator_scratch scratch;
  const auto r = calculate_node_resource(s, node, pods, &metric, now, scratch);
  EXPECT_EQ(r.batch_cpu_milli,
            98 * cores);  // only the last metric (2 cores) counts, nothing dangling
}

TEST(BatchResource, SucceededPodWithMetricCountsAsDangling) {
  colocation_strategy s = merge(colocation_strategy::defaults(), make_strategy(100, 100));
  node_input node = make_node("n", rl(100 * cores, 100 * G));
  std::vector<pod_input> pods{make_pod("done", priority_class::prod, qos_class::ls,
                                       pod_phase::succeeded, rl(1 * cores, 1 * G)),
                              make_pod("lp", priority_class::batch, qos_class::be,
                                       pod_phase::running, rl(1 * cores, 1 * G))};
  node_metric_input metric;
  metric.update_time = now;
  metric.pod_metrics = {make_metric("done", rl(3 * cores, 3 * G)),
                        make_metric("lp", rl(50 * cores, 50 * G))};
  calculator_scratch scratch;
  const auto r = calculate_node_resource(s, node, pods, &metric, now, scratch);
  // "done" is not Running/Pending: its metric is dangling (priority "" = HP). "lp"'s metric is not.
  EXPECT_EQ(r.batch_cpu_milli, 97 * cores);
  EXPECT_EQ(r.batch_memory_bytes, 97 * G);
}

TEST(BatchResource, ExplanationNamesEveryTermOfTheUsedFormula) {
  colocation_strategy s = merge(colocation_strategy::defaults(), make_strategy(65, 65));
  node_input node = make_node("test-node1", rl(100 * cores, 120 * G));
  node_metric_input metric = default_metric(now);
  calculator_scratch scratch;
  const auto r = calculate_node_resource(s, node, default_pods(), &metric, now, scratch);
  std::vector<std::string> names;
  for (const auto& t : r.batch_cpu.terms) names.emplace_back(t.name);
  const std::vector<std::string> want{
      "cpuCalculatePolicy",        "nodeCapacity",       "cpuReclaimThresholdPercent",
      "nodeSafetyMargin",          "systemUsage",        "hostAppHPUsed",
      "kubeletReserved",           "annotationReserved", "nodeReserved",
      "systemUsageOrNodeReserved", "podHPUsed",          "podHPNoMetricRequest",
      "podLSERequestOverUsage",    "podDanglingUsed",    "result"};
  EXPECT_EQ(names, want);
  EXPECT_EQ(r.batch_cpu.terms[0].text, "usage");
  EXPECT_EQ(r.batch_cpu.terms[2].value, 65);
  EXPECT_EQ(r.batch_cpu.terms[3].value, 35000);
  EXPECT_NE(describe(r.batch_cpu).find("nodeSafetyMargin = 35000 milli-cpu"), std::string::npos);
  // The memory request formula does not list system usage: it does not use it.
  s.memory_calculate_policy = calculate_policy::request;
  const auto r2 = calculate_node_resource(s, node, default_pods(), &metric, now, scratch);
  for (const auto& t : r2.batch_memory.terms) EXPECT_NE(t.name, "systemUsage");
}

}  // namespace
}  // namespace colony::slo_controller
