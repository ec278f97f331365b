// Golden cases for the strategy of a node and the slo-controller-config ConfigMap: Koordinator's
// pkg/util/sloconfig/colocation_config_test.go (Test_GetNodeColocationStrategy,
// Test_IsColocationStrategyValid), pkg/slo-controller/config/colocation_cm_event_handler_test.go
// (Test_syncColocationConfigIfChanged), pkg/slo-controller/noderesource/resource_calculator_test.go
// (Test_isColocationCfgDisabled).
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "actors/slo_controller/node_resource.hpp"
#include "actors/slo_controller/slo_controller_config.hpp"
#include "tests/actors/slo_controller/test_fixtures.hpp"

namespace colony::slo_controller {
namespace {

colocation_strategy partial(std::optional<bool> enable, std::int64_t cpu, std::int64_t mem) {
  colocation_strategy s;
  s.enable = enable;
  s.cpu_reclaim_threshold_percent = cpu;
  s.memory_reclaim_threshold_percent = mem;
  return s;
}

label_selector match(std::string k, std::string v) {
  label_selector s;
  s.present = true;
  s.has_match_labels = true;
  s.match_labels[std::move(k)] = std::move(v);
  return s;
}

// --- Test_GetNodeColocationStrategy ---

TEST(TestGetNodeColocationStrategy, ReturnPartialClusterStrategy) {
  colocation_config cfg;
  cfg.cluster = partial(false, 65, 65);
  node_labels labels;
  EXPECT_EQ(node_colocation_strategy(cfg, {&labels, std::nullopt}), partial(false, 65, 65));
}

TEST(TestGetNodeColocationStrategy, GetMergedNodeStrategy1) {
  colocation_config cfg;
  cfg.cluster = partial(false, 65, 65);
  cfg.cluster.memory_calculate_policy = calculate_policy::usage;
  colocation_strategy node_s;
  node_s.enable = true;
  cfg.node_configs.push_back({"", match("xxx", "yyy"), node_s});
  node_labels labels{{"xxx", "yyy"}};
  colocation_strategy want = partial(true, 65, 65);
  want.memory_calculate_policy = calculate_policy::usage;
  EXPECT_EQ(node_colocation_strategy(cfg, {&labels, std::nullopt}), want);
}

TEST(TestGetNodeColocationStrategy, GetMergedNodeStrategy2) {
  colocation_config cfg;  // defaults
  colocation_strategy off, on;
  off.enable = false;
  on.enable = true;
  cfg.node_configs.push_back({"", match("xxx", "yyy"), off});
  cfg.node_configs.push_back({"", match("xxx", "zzz"), on});
  node_labels labels{{"xxx", "zzz"}};
  colocation_strategy want = colocation_strategy::defaults();
  want.enable = true;
  EXPECT_EQ(node_colocation_strategy(cfg, {&labels, std::nullopt}), want);
}

TEST(TestGetNodeColocationStrategy, GetMergedNodeStrategyAndIgnoreInvalidSelector) {
  colocation_config cfg;
  cfg.cluster = partial(false, 65, 65);
  label_selector bad;
  bad.present = true;
  bad.match_expressions.push_back({"xxx", "out", {"yyy"}});
  colocation_strategy off, on;
  off.enable = false;
  on.enable = true;
  cfg.node_configs.push_back({"xxx-out-yyy", bad, off});
  cfg.node_configs.push_back({"xxx-yyy", match("xxx", "yyy"), on});
  node_labels labels{{"xxx", "yyy"}};
  EXPECT_EQ(node_colocation_strategy(cfg, {&labels, std::nullopt}), partial(true, 65, 65));
}

TEST(TestGetNodeColocationStrategy, GetStrategyMergedWithNodeRatios) {
  colocation_config cfg;
  cfg.cluster = partial(false, 65, 65);
  cfg.cluster.mid_static_cpu_reserved_percent = 0;
  cfg.cluster.mid_static_memory_reserved_percent = 0;
  node_labels labels{{std::string(label_cpu_reclaim_ratio), "0.7"},
                     {std::string(label_memory_reclaim_ratio), "0.75"},
                     {std::string(label_mid_static_cpu_reserved_ratio), "0.1"},
                     {std::string(label_mid_static_memory_reserved_ratio), "0.12"}};
  colocation_strategy want = partial(false, 70, 75);
  want.mid_static_cpu_reserved_percent = 10;
  want.mid_static_memory_reserved_percent = 12;
  EXPECT_EQ(node_colocation_strategy(cfg, {&labels, std::nullopt}), want);
}

TEST(TestGetNodeColocationStrategy, GetStrategyWhileParseNodeReclaimRatiosFailed) {
  colocation_config cfg;
  cfg.cluster = partial(false, 65, 65);
  node_labels labels{{std::string(label_cpu_reclaim_ratio), "-1"},
                     {std::string(label_memory_reclaim_ratio), "invalidField"}};
  EXPECT_EQ(node_colocation_strategy(cfg, {&labels, std::nullopt}), partial(false, 65, 65));
}

TEST(TestGetNodeColocationStrategy, GetStrategyMergedWithNodeStrategyOnAnnotations) {
  colocation_config cfg;
  cfg.cluster = partial(false, 65, 65);
  node_labels labels;
  const std::string anno = R"({
  "cpuReclaimThresholdPercent": 70,
  "memoryReclaimThresholdPercent": 75,
  "midStaticCPUReservedPercent": 10,
  "midStaticMemoryReservedPercent": 15
})";
  colocation_strategy want = partial(false, 70, 75);
  want.mid_static_cpu_reserved_percent = 10;
  want.mid_static_memory_reserved_percent = 15;
  EXPECT_EQ(node_colocation_strategy(cfg, {&labels, anno}), want);
}

TEST(TestGetNodeColocationStrategy, GetStrategyDisabledByNodeStrategyOnAnnotations) {
  colocation_config cfg;
  cfg.cluster = partial(true, 65, 65);
  node_labels labels;
  EXPECT_EQ(node_colocation_strategy(cfg, {&labels, R"({"enable": false})"}),
            partial(false, 65, 65));
  // ...and the reconcile then resets every co-location resource (isColocationCfgDisabled).
  EXPECT_TRUE(is_colocation_disabled(cfg, partial(false, 65, 65)));
}

TEST(TestGetColocationStrategyOnNode, ParseStrategyFailedIsIgnored) {
  colocation_config cfg;
  cfg.cluster = partial(true, 65, 65);
  node_labels labels;
  EXPECT_EQ(node_colocation_strategy(cfg, {&labels, R"({"cpuReclaimThresholdPercent": "70"})"}),
            partial(true, 65, 65));
  EXPECT_EQ(node_colocation_strategy(cfg, {&labels, "{invalid"}), partial(true, 65, 65));
}

TEST(NodeReclaimPercent, TruncatesLikeGo) {
  node_labels labels{{std::string(label_cpu_reclaim_ratio), "0.29"},
                     {std::string(label_memory_reclaim_ratio), "+1.5"}};
  EXPECT_EQ(node_reclaim_percent(&labels, label_cpu_reclaim_ratio), 28);  // int64(0.29 * 100) = 28
  EXPECT_EQ(node_reclaim_percent(&labels, label_memory_reclaim_ratio), 150);
  labels[std::string(label_cpu_reclaim_ratio)] = " 0.5";
  EXPECT_EQ(node_reclaim_percent(&labels, label_cpu_reclaim_ratio), std::nullopt);
  labels[std::string(label_cpu_reclaim_ratio)] = "NaN";
  EXPECT_EQ(node_reclaim_percent(&labels, label_cpu_reclaim_ratio), std::nullopt);
}

// --- Test_isColocationCfgDisabled ---

TEST(TestIsColocationCfgDisabled, SetAsDisabledWhenNoConfig) {
  colocation_config cfg;  // enable defaults to false
  EXPECT_TRUE(is_colocation_disabled(cfg, cfg.cluster));
}

TEST(TestIsColocationCfgDisabled, UseClusterConfigWhenNilNode) {
  colocation_config cfg;
  cfg.cluster.enable = true;
  node_labels labels;
  EXPECT_FALSE(is_colocation_disabled(cfg, node_colocation_strategy(cfg, {&labels, std::nullopt})));
}

TEST(TestIsColocationCfgDisabled, DisabledNodeGetsEverythingReset) {
  colocation_config cfg;
  cfg.cluster.enable = true;
  colocation_strategy off;
  off.enable = false;
  cfg.node_configs.push_back({"off", match("pool", "online"), off});
  node_input node = testing::make_node("n", testing::rl(10000, 10 * testing::G));
  node.labels = {{"pool", "online"}};
  node_metric_input metric;
  metric.update_time = event_time{0};
  calculator_scratch scratch;
  const auto r = reconcile_node_resource(cfg, node, {}, &metric, event_time{0}, scratch);
  EXPECT_TRUE(r.disabled);
  EXPECT_TRUE(r.batch_reset && r.mid_reset);
  EXPECT_EQ(koordinator_message(r.batch_cpu),
            "node colocation is disabled in Config, reason: DisableInConfig");
}

// reconcile_node_resource resolves the node's strategy itself (skipping the merge when no ratio
// label or strategy annotation is present); every ratio label, found among other
// node.koordinator.sh/ labels, must give the result of the merged strategy.
TEST(ReconcileNodeResource, RatioLabelsAmongOtherKoordinatorLabelsAreApplied) {
  colocation_config cfg;
  cfg.cluster.enable = true;
  cfg.cluster.cpu_reclaim_threshold_percent = 65;
  cfg.cluster.memory_reclaim_threshold_percent = 65;
  cfg.cluster.mid_static_cpu_reserved_percent = 10;
  cfg.cluster.mid_static_memory_reserved_percent = 10;
  cfg.cluster.mid_reclaim_mode = reclaim_mode::static_mode;
  node_metric_input metric;
  metric.update_time = event_time{0};
  metric.node_usage = {20000, 20 * testing::G};
  calculator_scratch scratch;
  const std::string_view ratio_labels[] = {label_cpu_reclaim_ratio, label_memory_reclaim_ratio,
                                           label_mid_static_cpu_reserved_ratio,
                                           label_mid_static_memory_reserved_ratio};
  node_input plain = testing::make_node("n", testing::rl(100000, 100 * testing::G));
  plain.labels = {{"node.koordinator.sh/a", "x"}, {"node.koordinator.sh/zz", "y"}};
  const auto base = reconcile_node_resource(cfg, plain, {}, &metric, event_time{0}, scratch);
  for (const std::string_view label : ratio_labels) {
    node_input node = plain;
    node.labels[std::string(label)] = "0.3";
    const auto want =
        calculate_node_resource(node_colocation_strategy(cfg, {&node.labels, std::nullopt}), node,
                                {}, &metric, event_time{0}, scratch);
    const auto got = reconcile_node_resource(cfg, node, {}, &metric, event_time{0}, scratch);
    EXPECT_EQ(got.batch_cpu_milli, want.batch_cpu_milli) << label;
    EXPECT_EQ(got.batch_memory_bytes, want.batch_memory_bytes) << label;
    EXPECT_EQ(got.mid_cpu_milli, want.mid_cpu_milli) << label;
    EXPECT_EQ(got.mid_memory_bytes, want.mid_memory_bytes) << label;
    // Each label changes one of the four resources from the label-less result.
    EXPECT_TRUE(got.batch_cpu_milli != base.batch_cpu_milli ||
                got.batch_memory_bytes != base.batch_memory_bytes ||
                got.mid_cpu_milli != base.mid_cpu_milli ||
                got.mid_memory_bytes != base.mid_memory_bytes)
        << label;
  }
}

// --- Test_IsColocationStrategyValid (validate) ---

struct validity_case {
  std::string go_name;
  colocation_strategy strategy;
  bool want;
};

colocation_strategy valid_base() {
  colocation_strategy s;
  s.enable = true;
  s.cpu_reclaim_threshold_percent = 65;
  s.memory_reclaim_threshold_percent = 65;
  s.degrade_time_minutes = 15;
  s.update_time_threshold_seconds = 300;
  s.resource_diff_threshold = 0.1;
  return s;
}

std::vector<validity_case> validity_cases() {
  auto with = [](auto f) {
    colocation_strategy s = valid_base();
    f(s);
    return s;
  };
  return {
      {"partial strategy is valid", with([](colocation_strategy&) {}), true},
      {"partial strategy is valid 1",
       with([](colocation_strategy& s) { s.memory_calculate_policy = calculate_policy::request; }),
       true},
      {"default strategy is valid", colocation_strategy::defaults(), true},
      {"midCPUThresholdPercent less than 0 strategy is invalid",
       with([](colocation_strategy& s) { s.mid_cpu_threshold_percent = -1; }), false},
      {"midCPUThresholdPercent more than 100 strategy is invalid",
       with([](colocation_strategy& s) { s.mid_cpu_threshold_percent = 101; }), false},
      {"midMemoryThresholdPercent less than 0 strategy is invalid",
       with([](colocation_strategy& s) { s.mid_memory_threshold_percent = -1; }), false},
      {"midMemoryThresholdPercent more than 100 strategy is invalid",
       with([](colocation_strategy& s) { s.mid_memory_threshold_percent = 101; }), false},
      {"midUnallocatedPercent less than 0 strategy is invalid",
       with([](colocation_strategy& s) { s.mid_unallocated_percent = -1; }), false},
      {"midUnallocatedPercent more than 100 strategy is invalid",
       with([](colocation_strategy& s) { s.mid_unallocated_percent = 200; }), false},
      {"batchCPUThresholdPercent more than 100 strategy is invalid",
       with([](colocation_strategy& s) {
         s.mid_unallocated_percent = 200;
         s.batch_cpu_threshold_percent = 200;
         s.batch_memory_threshold_percent = 20;
       }),
       false},
      {"batchCPUThresholdPercent less than 0 strategy is invalid",
       with([](colocation_strategy& s) { s.batch_cpu_threshold_percent = -1; }), false},
      {"default strategy + batchXXXThresholdPercent[0,100] is valid",
       with([](colocation_strategy& s) {
         s.batch_cpu_threshold_percent = 100;
         s.batch_memory_threshold_percent = 0;
       }),
       true},
      // batch caps above 100 are valid (only >= 0 is required)
      {"batchCPUThresholdPercent above 100 alone is valid",
       with([](colocation_strategy& s) { s.batch_cpu_threshold_percent = 150; }), true},
      {"degradeTimeMinutes 0 is invalid",
       with([](colocation_strategy& s) { s.degrade_time_minutes = 0; }), false},
      {"resourceDiffThreshold 0 is invalid",
       with([](colocation_strategy& s) { s.resource_diff_threshold = 0.0; }), false},
      {"cpuCalculatePolicy request is invalid",
       with([](colocation_strategy& s) { s.cpu_calculate_policy = calculate_policy::request; }),
       false},
      {"cpuReclaimThresholdPercent above 100 is valid",
       with([](colocation_strategy& s) { s.cpu_reclaim_threshold_percent = 150; }), true},
  };
}

class TestIsColocationStrategyValid : public ::testing::TestWithParam<validity_case> {};
TEST_P(TestIsColocationStrategyValid, MatchesKoordinator) {
  const auto& c = GetParam();
  EXPECT_EQ(validate(c.strategy, "colocation-config").has_value(), c.want) << c.go_name;
}
INSTANTIATE_TEST_SUITE_P(Sloconfig, TestIsColocationStrategyValid,
                         ::testing::ValuesIn(validity_cases()));

// --- ConfigMap parsing (Test_syncColocationConfigIfChanged) ---

std::string configmap(std::string_view colocation_json) {
  return nlohmann::json{{"colocation-config", std::string(colocation_json)}}.dump();
}

colocation_config old_cfg() {
  colocation_config c;
  c.cluster.enable = true;
  c.cluster.cpu_reclaim_threshold_percent = 55;
  return c;
}

std::optional<slo_controller_config> previous_with(colocation_config c) {
  slo_controller_config p;
  p.colocation = std::move(c);
  return p;
}

TEST(TestSyncColocationConfigIfChanged, ConfigmapIsNilCfgWillBeChangedToUseDefaultCfg) {
  EXPECT_EQ(deleted_config().colocation, colocation_config{});
}

TEST(TestSyncColocationConfigIfChanged, NoColocationConfigInConfigmapUsesDefaultCfg) {
  const auto u = update(previous_with(old_cfg()), "{}");
  EXPECT_FALSE(u.error);
  EXPECT_EQ(u.in_force.colocation, colocation_config{});
}

TEST(TestSyncColocationConfigIfChanged, UnmarshalFailedForCacheUnavailable) {
  const auto u =
      update(std::nullopt,
             configmap(R"({"metricAggregateDurationSeconds":10, "invalidKey":"invalidValue",})"));
  ASSERT_TRUE(u.error);
  EXPECT_EQ(u.error->code, errc::invalid_input);
  EXPECT_EQ(u.error->where, "colocation-config");
  EXPECT_FALSE(u.in_force.colocation.has_value());         // unavailable after a restart
  EXPECT_TRUE(u.in_force.resource_threshold.has_value());  // other keys are independent
}

TEST(TestSyncColocationConfigIfChanged, UnmarshalFailedKeepTheOld) {
  const auto u =
      update(previous_with(old_cfg()),
             configmap(R"({"metricAggregateDurationSeconds":10, "invalidKey":"invalidValue",})"));
  ASSERT_TRUE(u.error);
  EXPECT_EQ(u.in_force.colocation, old_cfg());
  EXPECT_EQ(u.rejected_keys, std::vector<std::string>{"colocation-config"});
}

TEST(TestSyncColocationConfigIfChanged, ValidateAndMergePartialConfigWithTheDefault) {
  const auto u = update(
      previous_with(old_cfg()),
      configmap(
          R"({"metricAggregateDurationSeconds":60,"cpuReclaimThresholdPercent":70,)"
          R"("memoryReclaimThresholdPercent":70,"updateTimeThresholdSeconds":100,"metricReportIntervalSeconds":20})"));
  ASSERT_FALSE(u.error) << u.error->describe();
  colocation_strategy want = colocation_strategy::defaults();
  want.metric_aggregate_duration_seconds = 60;
  want.metric_report_interval_seconds = 20;
  want.cpu_reclaim_threshold_percent = 70;
  want.memory_reclaim_threshold_percent = 70;
  want.update_time_threshold_seconds = 100;
  ASSERT_TRUE(u.in_force.colocation);
  EXPECT_EQ(u.in_force.colocation->cluster, want);
}

TEST(TestSyncColocationConfigIfChanged, GotInvalidPartialConfigIfRestartAndWillUnavailable) {
  const auto u = update(
      std::nullopt,
      configmap(
          R"({"metricAggregateDurationSeconds":60,"cpuReclaimThresholdPercent":70,)"
          R"("memoryReclaimThresholdPercent":70,"updateTimeThresholdSeconds":-1,"metricReportIntervalSeconds":20})"));
  ASSERT_TRUE(u.error);
  EXPECT_EQ(u.error->where, "colocation-config.updateTimeThresholdSeconds");
  EXPECT_NE(u.error->message.find("-1"), std::string::npos);
  EXPECT_FALSE(u.in_force.colocation.has_value());
}

TEST(TestSyncColocationConfigIfChanged, GotInvalidPartialConfigKeepTheOld) {
  const auto u =
      update(previous_with(old_cfg()),
             configmap(R"({"metricAggregateDurationSeconds":60,"updateTimeThresholdSeconds":-1})"));
  ASSERT_TRUE(u.error);
  EXPECT_EQ(u.in_force.colocation, old_cfg());
}

TEST(TestSyncColocationConfigIfChanged, NodeConfigInvalidUseClusterConfig) {
  const auto u = update(
      previous_with(old_cfg()),
      configmap(
          R"({"enable":true,"metricAggregateDurationSeconds":30,"metricReportIntervalSeconds":20,)"
          R"("cpuReclaimThresholdPercent":70,"memoryReclaimThresholdPercent":80,"updateTimeThresholdSeconds":300,)"
          R"("degradeTimeMinutes":5,"resourceDiffThreshold":0.1,"nodeConfigs":[{"nodeSelector":)"
          R"({"matchLabels":{"xxx":"yyy"}},"metricAggregateDurationSeconds":-1}]})"));
  EXPECT_FALSE(u.error);
  ASSERT_TRUE(u.in_force.colocation);
  const auto& c = *u.in_force.colocation;
  colocation_strategy want = colocation_strategy::defaults();
  want.enable = true;
  want.metric_aggregate_duration_seconds = 30;
  want.metric_report_interval_seconds = 20;
  want.cpu_reclaim_threshold_percent = 70;
  want.memory_reclaim_threshold_percent = 80;
  want.degrade_time_minutes = 5;
  EXPECT_EQ(c.cluster, want);
  ASSERT_EQ(c.node_configs.size(), 1U);
  EXPECT_EQ(c.node_configs[0].strategy, want);  // replaced by the cluster strategy
  ASSERT_EQ(u.warnings.size(), 1U);
  EXPECT_EQ(u.warnings[0].where, "colocation-config.nodeConfigs[0].metricAggregateDurationSeconds");
}

TEST(TestSyncColocationConfigIfChanged, NodeConfigWithChange) {
  const auto r = parse_colocation_config(
      R"({"enable":true,"cpuReclaimThresholdPercent":70,"nodeConfigs":[{"name":"alios","nodeSelector":{"matchLabels":{"kubernetes.io/kernel":"alios"}},"updateTimeThresholdSeconds":360,"resourceDiffThreshold":0.2}]})");
  ASSERT_TRUE(r) << r.error().describe();
  ASSERT_EQ(r->node_configs.size(), 1U);
  EXPECT_EQ(r->node_configs[0].name, "alios");
  EXPECT_EQ(r->node_configs[0].strategy.update_time_threshold_seconds, 360);
  EXPECT_EQ(r->node_configs[0].strategy.resource_diff_threshold, 0.2);
  EXPECT_EQ(r->node_configs[0].strategy.cpu_reclaim_threshold_percent,
            70);  // inherited from the cluster
  node_labels alios{{"kubernetes.io/kernel", "alios"}};
  EXPECT_EQ(node_colocation_strategy(*r, {&alios, std::nullopt}).update_time_threshold_seconds,
            360);
  node_labels other;
  EXPECT_EQ(node_colocation_strategy(*r, {&other, std::nullopt}).update_time_threshold_seconds,
            300);
}

// Reference F: defaults of every colocation-config field.
TEST(ColocationConfig, DefaultsMatchDefaultColocationStrategy) {
  const auto r = parse_colocation_config("{}");
  ASSERT_TRUE(r);
  const auto& s = r->cluster;
  EXPECT_EQ(s.enable, false);
  EXPECT_EQ(s.metric_aggregate_duration_seconds, 300);
  EXPECT_EQ(s.metric_report_interval_seconds, 60);
  EXPECT_EQ(s.metric_aggregate_durations, (std::vector<std::string>{"5m", "10m", "30m"}));
  EXPECT_EQ(s.metric_memory_collect_policy, "usageWithoutPageCache");
  EXPECT_EQ(s.cpu_reclaim_threshold_percent, 60);
  EXPECT_EQ(s.cpu_calculate_policy, calculate_policy::usage);
  EXPECT_EQ(s.memory_reclaim_threshold_percent, 65);
  EXPECT_EQ(s.memory_calculate_policy, calculate_policy::usage);
  EXPECT_EQ(s.degrade_time_minutes, 15);
  EXPECT_EQ(s.update_time_threshold_seconds, 300);
  EXPECT_EQ(s.resource_diff_threshold, 0.1);
  EXPECT_FALSE(s.mid_reclaim_mode);
  EXPECT_EQ(s.mid_cpu_threshold_percent, 100);
  EXPECT_EQ(s.mid_memory_threshold_percent, 100);
  EXPECT_EQ(s.mid_unallocated_percent, 0);
  EXPECT_EQ(s.mid_static_cpu_reserved_percent, 0);
  EXPECT_EQ(s.mid_static_memory_reserved_percent, 0);
  EXPECT_FALSE(s.batch_cpu_threshold_percent);
  EXPECT_FALSE(s.batch_memory_threshold_percent);
}

struct invalid_case {
  std::string json;
  std::string where;
  std::string value_text;  // must appear in the message
};

class ColocationConfigInvalid : public ::testing::TestWithParam<invalid_case> {};
TEST_P(ColocationConfigInvalid, NamesKeyAndValue) {
  const auto& c = GetParam();
  const auto r = parse_colocation_config(c.json);
  ASSERT_FALSE(r) << c.json;
  EXPECT_EQ(r.error().code, errc::invalid_input);
  EXPECT_EQ(r.error().where, c.where);
  EXPECT_NE(r.error().message.find(c.value_text), std::string::npos) << r.error().describe();
}
INSTANTIATE_TEST_SUITE_P(
    Ranges, ColocationConfigInvalid,
    ::testing::Values(
        invalid_case{R"({"cpuReclaimThresholdPercent":-5})",
                     "colocation-config.cpuReclaimThresholdPercent", "-5"},
        invalid_case{R"({"memoryReclaimThresholdPercent":-1})",
                     "colocation-config.memoryReclaimThresholdPercent", "-1"},
        invalid_case{R"({"cpuReclaimThresholdPercent":65.5})",
                     "colocation-config.cpuReclaimThresholdPercent", "65.5"},
        invalid_case{R"({"cpuReclaimThresholdPercent":"65"})",
                     "colocation-config.cpuReclaimThresholdPercent", "\"65\""},
        invalid_case{R"({"enable":"true"})", "colocation-config.enable", "\"true\""},
        invalid_case{R"({"degradeTimeMinutes":0})", "colocation-config.degradeTimeMinutes", "0"},
        invalid_case{R"({"metricAggregateDurationSeconds":0})",
                     "colocation-config.metricAggregateDurationSeconds", "0"},
        invalid_case{R"({"metricReportIntervalSeconds":-60})",
                     "colocation-config.metricReportIntervalSeconds", "-60"},
        invalid_case{R"({"resourceDiffThreshold":0})", "colocation-config.resourceDiffThreshold",
                     "0"},
        invalid_case{R"({"resourceDiffThreshold":1.5})", "colocation-config.resourceDiffThreshold",
                     "1.5"},
        invalid_case{R"({"midCPUThresholdPercent":101})",
                     "colocation-config.midCPUThresholdPercent", "101"},
        invalid_case{R"({"midMemoryThresholdPercent":-1})",
                     "colocation-config.midMemoryThresholdPercent", "-1"},
        invalid_case{R"({"midUnallocatedPercent":200})", "colocation-config.midUnallocatedPercent",
                     "200"},
        invalid_case{R"({"midStaticCPUReservedPercent":-3})",
                     "colocation-config.midStaticCPUReservedPercent", "-3"},
        invalid_case{R"({"batchCPUThresholdPercent":-1})",
                     "colocation-config.batchCPUThresholdPercent", "-1"},
        invalid_case{R"({"batchMemoryThresholdPercent":-7})",
                     "colocation-config.batchMemoryThresholdPercent", "-7"},
        invalid_case{R"({"cpuCalculatePolicy":"request"})", "colocation-config.cpuCalculatePolicy",
                     "\"request\""},
        invalid_case{R"({"memoryCalculatePolicy":"foo"})",
                     "colocation-config.memoryCalculatePolicy", "\"foo\""},
        invalid_case{R"({"midReclaimMode":"dynamic"})", "colocation-config.midReclaimMode",
                     "\"dynamic\""},
        invalid_case{R"({"metricMemoryCollectPolicy":"all"})",
                     "colocation-config.metricMemoryCollectPolicy", "\"all\""},
        invalid_case{R"({"metricAggregatePolicy":{"durations":["5x"]}})",
                     "colocation-config.metricAggregatePolicy.durations", "\"5x\""},
        invalid_case{R"({"nodeConfigs":{}})", "colocation-config.nodeConfigs", "{...}"},
        invalid_case{R"([1,2])", "colocation-config", "[...]"}));

TEST(ColocationConfig, GoFieldMatchingIsCaseInsensitive) {
  const auto r = parse_colocation_config(R"({"CPUReclaimThresholdPercent":70,"enable":true})");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->cluster.cpu_reclaim_threshold_percent, 70);
  const auto n = parse_colocation_config(R"({"cpuReclaimThresholdPercent":null})");
  ASSERT_TRUE(n);
  EXPECT_EQ(n->cluster.cpu_reclaim_threshold_percent, 60);  // null = unset = default
}

TEST(SloControllerConfig, OtherKeysParseWithDefaultsAndRanges) {
  auto rt = parse_resource_threshold_config(
      R"({"clusterStrategy":{"enable":true,"cpuSuppressThresholdPercent":70},
      "nodeStrategies":[{"name":"n","nodeSelector":{"matchLabels":{"a":"b"}},"memoryEvictThresholdPercent":80}]})");
  ASSERT_TRUE(rt) << rt.error().describe();
  EXPECT_EQ(rt->cluster.cpu_suppress_threshold_percent, 70);
  EXPECT_EQ(rt->cluster.memory_evict_threshold_percent, 70);  // default
  EXPECT_EQ(rt->cluster.cpu_suppress_policy, "cpuset");
  ASSERT_EQ(rt->node_strategies.size(), 1U);
  EXPECT_EQ(rt->node_strategies[0].strategy.memory_evict_threshold_percent, 80);
  EXPECT_EQ(rt->node_strategies[0].strategy.cpu_suppress_threshold_percent, 70);
  node_labels l{{"a", "b"}};
  EXPECT_EQ(rt->for_node(l).memory_evict_threshold_percent, 80);

  auto bad =
      parse_resource_threshold_config(R"({"clusterStrategy":{"cpuSuppressThresholdPercent":120}})");
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().where,
            "resource-threshold-config.clusterStrategy.cpuSuppressThresholdPercent");
  auto lower = parse_resource_threshold_config(
      R"({"clusterStrategy":{"memoryEvictThresholdPercent":60,"memoryEvictLowerPercent":65}})");
  ASSERT_FALSE(lower);
  EXPECT_EQ(lower.error().where,
            "resource-threshold-config.clusterStrategy.memoryEvictThresholdPercent");

  auto burst = parse_cpu_burst_config("");
  ASSERT_TRUE(burst);
  EXPECT_EQ(burst->cluster.policy, "none");
  EXPECT_EQ(burst->cluster.cpu_burst_percent, 1000);
  EXPECT_EQ(burst->cluster.cfs_quota_burst_percent, 300);
  EXPECT_EQ(burst->cluster.cfs_quota_burst_period_seconds, -1);
  EXPECT_EQ(burst->cluster.share_pool_threshold_percent, 50);
  EXPECT_FALSE(parse_cpu_burst_config(R"({"clusterStrategy":{"policy":"always"}})"));
  EXPECT_FALSE(parse_cpu_burst_config(R"({"clusterStrategy":{"cfsQuotaBurstPercent":99}})"));

  EXPECT_TRUE(parse_system_config(
      R"({"clusterStrategy":{"minFreeKbytesFactor":100,"watermarkScaleFactor":150}})"));
  EXPECT_FALSE(parse_system_config(R"({"clusterStrategy":{"watermarkScaleFactor":401}})"));

  auto qos = parse_resource_qos_config(
      R"({"clusterStrategy":{"beClass":{"cpuQOS":{"enable":true,"groupIdentity":-1}}}})");
  ASSERT_TRUE(qos) << qos.error().describe();
  auto qos_bad = parse_resource_qos_config(
      R"({"clusterStrategy":{"beClass":{"cpuQOS":{"groupIdentity":3}}}})");
  ASSERT_FALSE(qos_bad);
  EXPECT_EQ(qos_bad.error().where,
            "resource-qos-config.clusterStrategy.beClass.cpuQOS.groupIdentity");

  EXPECT_TRUE(parse_cpu_normalization_config(
      R"({"enable":true,"ratioModel":{"Intel":{"baseRatio":1.5}}})"));
  EXPECT_FALSE(parse_cpu_normalization_config(
      R"({"enable":true,"ratioModel":{"Intel":{"baseRatio":0.5}}})"));
  EXPECT_TRUE(parse_resource_amplification_config(
      R"({"enable":true,"resourceAmplificationRatio":{"cpu":1.5}})"));
  EXPECT_FALSE(
      parse_resource_amplification_config(R"({"resourceAmplificationRatio":{"cpu":"1.5"}})"));
  EXPECT_TRUE(parse_host_application_config(
      R"({"applications":[{"name":"nginx","priority":"koord-prod","qos":"LS"}]})"));
  EXPECT_FALSE(parse_host_application_config(R"({"applications":[{"name":"nginx","qos":"XX"}]})"));
}

// HostApplicationSpec priority / qos take Koordinator's class names exactly (apis/extension
// priority.go, qos.go); "" is allowed (unset), anything else is an error naming the field.
TEST(SloControllerConfig, HostApplicationClassNames) {
  auto app = [](std::string_view field, std::string_view value) {
    return parse_host_application_config(R"({"applications":[{"name":"nginx",")" +
                                         std::string(field) + R"(":")" + std::string(value) +
                                         R"("}]})");
  };
  for (std::string_view p : {"koord-prod", "koord-mid", "koord-batch", "koord-free", ""})
    EXPECT_TRUE(app("priority", p)) << p;
  for (std::string_view q : {"SYSTEM", "LSE", "LSR", "LS", "BE", ""})
    EXPECT_TRUE(app("qos", q)) << q;
  for (std::string_view p : {"Koord-Prod", "koord-none", "prod", "koord-prod "}) {
    auto r = app("priority", p);
    ASSERT_FALSE(r) << p;
    EXPECT_NE(r.error().where.find("applications[0].priority"), std::string::npos)
        << r.error().where;
  }
  for (std::string_view q : {"be", "NONE", "LS "}) {
    auto r = app("qos", q);
    ASSERT_FALSE(r) << q;
    EXPECT_NE(r.error().where.find("applications[0].qos"), std::string::npos) << r.error().where;
  }
}

TEST(SloControllerConfig, UpdateKeepsEachKeyIndependently) {
  nlohmann::json cm{{"colocation-config", R"({"enable":true})"},
                    {"cpu-burst-config", R"({"clusterStrategy":{"cpuBurstPercent":0}})"}};
  slo_controller_config prev;
  cpu_burst_config old_burst;
  old_burst.cluster.cpu_burst_percent = 500;
  prev.cpu_burst = old_burst;
  const auto u = update(prev, cm.dump());
  ASSERT_TRUE(u.error);
  EXPECT_EQ(u.rejected_keys, std::vector<std::string>{"cpu-burst-config"});
  EXPECT_NE(u.error->message.find("invalid value 0"), std::string::npos);
  EXPECT_EQ(u.in_force.cpu_burst, old_burst);  // previous value stays in force
  ASSERT_TRUE(u.in_force.colocation);
  EXPECT_EQ(u.in_force.colocation->cluster.enable, true);  // the valid key is applied
  // Not an object / not JSON: nothing changes.
  const auto bad = update(prev, "[1]");
  EXPECT_TRUE(bad.error);
  EXPECT_EQ(bad.in_force, prev);
}

// --- fuzz-style robustness: random mutations of a valid ConfigMap never crash ---

TEST(SloControllerConfigRobustness, RandomMutationsGiveValueOrError) {
  const std::string base =
      nlohmann::json{
          {"colocation-config",
           R"({"enable":true,"cpuReclaimThresholdPercent":65,"memoryReclaimThresholdPercent":65,"memoryCalculatePolicy":"request","metricAggregatePolicy":{"durations":["5m","10m"]},"nodeConfigs":[{"name":"a","nodeSelector":{"matchLabels":{"k":"v"},"matchExpressions":[{"key":"x","operator":"In","values":["y"]}]},"cpuReclaimThresholdPercent":70}]})"},
          {"resource-threshold-config",
           R"({"clusterStrategy":{"enable":true,"cpuSuppressThresholdPercent":65}})"},
          {"cpu-burst-config", R"({"clusterStrategy":{"policy":"auto","cpuBurstPercent":1000}})"},
          {"resource-qos-config",
           R"({"clusterStrategy":{"lsClass":{"memoryQOS":{"enable":true,"wmarkRatio":95}}}})"},
          {"cpu-normalization-config", R"({"enable":true,"defaultRatio":1.2})"}}
          .dump();
  std::mt19937_64 rng(20240611);
  const std::string alphabet = "{}[]\":,0123456789-.eE truefalsnul\\abcxyz";
  std::optional<slo_controller_config> prev;
  int accepted = 0;
  for (int i = 0; i < 3000; ++i) {
    std::string s = base;
    const int edits = 1 + static_cast<int>(rng() % 6);
    for (int e = 0; e < edits && !s.empty(); ++e) {
      const std::size_t pos = rng() % s.size();
      switch (rng() % 4) {
        case 0:
          s.erase(pos, 1 + rng() % 3);
          break;
        case 1:
          s.insert(pos, 1, alphabet[rng() % alphabet.size()]);
          break;
        case 2:
          s[pos] = alphabet[rng() % alphabet.size()];
          break;
        default:
          s.insert(pos, s.substr(rng() % s.size(), rng() % 16));
          break;
      }
    }
    const auto u = update(prev, s);
    if (u.error) {
      EXPECT_FALSE(u.error->message.empty());
      EXPECT_FALSE(u.rejected_keys.empty());
    } else {
      ++accepted;
      EXPECT_TRUE(u.rejected_keys.empty());
      ASSERT_TRUE(u.in_force.colocation);
      EXPECT_TRUE(validate(u.in_force.colocation->cluster, "x"));  // what is in force is valid
    }
    prev = u.in_force;
  }
  EXPECT_GT(accepted, 0);
}

}  // namespace
}  // namespace colony::slo_controller
