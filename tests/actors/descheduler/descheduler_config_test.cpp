// DeschedulerConfiguration: Koordinator's defaults and node-pool conversion, and bad configs as
// errors naming the field (pkg/descheduler/apis/config/validation/validation_loadaware.go).
#include <gtest/gtest.h>

#include "actors/descheduler/descheduler_config.hpp"

namespace colony::descheduler {
namespace {

std::string config_with(const std::string& lnl_args, const std::string& mc_args = "{}") {
  return "apiVersion: descheduler/v1alpha2\n"
         "kind: DeschedulerConfiguration\n"
         "deschedulingInterval: 10s\n"
         "profiles:\n"
         "- name: koord-descheduler\n"
         "  plugins:\n"
         "    balance:\n"
         "      enabled:\n"
         "      - name: LowNodeLoad\n"
         "  pluginConfig:\n"
         "  - name: MigrationController\n"
         "    args: " +
         mc_args +
         "\n"
         "  - name: LowNodeLoad\n"
         "    args: " +
         lnl_args + "\n";
}

TEST(DeschedulerConfig, DefaultsAndTheDefaultNodePool) {
  auto c = parse_descheduler_config(
      config_with("{lowThresholds: {cpu: 45, memory: 55}, highThresholds: {cpu: 75, memory: 80}, "
                  "evictableNamespaces: {exclude: [kube-system, koordinator-system]}}"));
  ASSERT_TRUE(c.has_value()) << c.error().describe();
  EXPECT_EQ(c->descheduling_interval_ms, 10'000);
  EXPECT_TRUE(c->low_node_load_enabled);
  const auto& a = c->low_node_load;
  ASSERT_EQ(a.node_pools.size(), 1u);
  const auto& p = a.node_pools[0];
  EXPECT_EQ(p.name, default_node_pool_name);
  EXPECT_EQ(p.high_thresholds->at("cpu"), 75);
  EXPECT_EQ(p.anomaly->consecutive_abnormalities, 5);
  EXPECT_EQ(p.anomaly->consecutive_normalities, 3);
  EXPECT_EQ(p.anomaly->timeout_ms, 60'000);
  EXPECT_EQ(p.resource_weights->at("cpu"), 1);
  EXPECT_EQ(p.resource_weights->at("memory"), 1);
  EXPECT_EQ(*a.node_metric_expiration_seconds, 180);
  EXPECT_TRUE(*a.node_fit);
  EXPECT_EQ(*a.detector_cache_timeout_ms, 300'000);
  EXPECT_FALSE(a.high_thresholds.has_value());  // moved into the pool
  // MigrationControllerArgs defaults.
  EXPECT_EQ(c->migration.default_job_mode, "ReservationFirst");
  EXPECT_EQ(c->migration.default_job_ttl_ms, 300'000);
  EXPECT_EQ(*c->migration.max_migrating_per_node, 2);
  EXPECT_EQ(c->migration.arbitration_interval_ms, 500);
  EXPECT_EQ(c->migration.evict_qps, 10);
}

TEST(DeschedulerConfig, PoolsInheritTopLevelFields) {
  auto c = parse_descheduler_config(config_with(
      "{lowThresholds: {cpu: 10}, highThresholds: {cpu: 20}, anomalyCondition: "
      "{consecutiveAbnormalities: 2}, nodePools: [{name: gpu, nodeSelector: {matchLabels: {a: b}}, "
      "highThresholds: {cpu: 30}}]}"));
  ASSERT_TRUE(c.has_value()) << c.error().describe();
  const auto& pools = c->low_node_load.node_pools;
  ASSERT_EQ(pools.size(), 2u);
  EXPECT_EQ(pools[1].name, "gpu");
  EXPECT_EQ(pools[1].low_thresholds->at("cpu"), 10);
  EXPECT_EQ(pools[1].high_thresholds->at("cpu"), 30);
  EXPECT_EQ(pools[1].anomaly->consecutive_abnormalities, 2);
  EXPECT_EQ(pools[0].anomaly->consecutive_normalities, 3);
  // The else-if quirk: with both counts 0 only consecutiveAbnormalities is defaulted, and the
  // 0 left in consecutiveNormalities fails validation.
  auto quirk = parse_descheduler_config(config_with("{anomalyCondition: {timeout: 30s}}"));
  ASSERT_FALSE(quirk.has_value());
  EXPECT_NE(quirk.error().message.find("anomalyCondition.consecutiveNormalities"),
            std::string::npos)
      << quirk.error().message;
}

struct bad_row {
  const char* what;
  std::string yaml;
  const char* field;  // the error names it
};

TEST(DeschedulerConfig, BadConfigsNameTheField) {
  const std::vector<bad_row> rows{
      {"low above 100", config_with("{lowThresholds: {cpu: 120}, highThresholds: {cpu: 90}}"),
       "lowThresholds[cpu]"},
      {"negative high", config_with("{highThresholds: {memory: -1}}"), "highThresholds[memory]"},
      {"low above high", config_with("{lowThresholds: {cpu: 80}, highThresholds: {cpu: 70}}"),
       "lowThresholds[cpu]"},
      {"prod high above high",
       config_with("{highThresholds: {cpu: 70}, prodHighThresholds: {cpu: 80}}"),
       "prodHighThresholds[cpu]"},
      {"prod low above prod high",
       config_with("{prodLowThresholds: {cpu: 50}, prodHighThresholds: {cpu: 40}}"),
       "prodLowThresholds[cpu]"},
      {"negative number of nodes", config_with("{numberOfNodes: -1}"), "numberOfNodes"},
      {"both include and exclude",
       config_with("{evictableNamespaces: {include: [a], exclude: [b]}}"), "evictableNamespaces"},
      {"not a number", config_with("{lowThresholds: {cpu: lots}}"), "lowThresholds[cpu]"},
      {"unknown field", config_with("{lowThreshold: {cpu: 1}}"), "lowThreshold"},
      {"bad job mode", config_with("{}", "{defaultJobMode: Teleport}"), "defaultJobMode"},
      {"bad ttl", config_with("{}", "{defaultJobTTL: soon}"), "defaultJobTTL"},
      {"bad gate", config_with("{}", "{skipEvictionGates: [Nope]}"), "skipEvictionGates"},
      {"pool threshold above 100",
       config_with("{nodePools: [{name: a, highThresholds: {cpu: 101}}]}"),
       "nodePools[0].highThresholds[cpu]"},
      {"negative abnormalities", config_with("{anomalyCondition: {consecutiveAbnormalities: -2}}"),
       "consecutiveAbnormalities"},
  };
  for (const auto& r : rows) {
    auto c = parse_descheduler_config(r.yaml);
    ASSERT_FALSE(c.has_value()) << r.what;
    EXPECT_EQ(c.error().code, errc::invalid_input) << r.what;
    EXPECT_NE(c.error().message.find(r.field), std::string::npos)
        << r.what << ": " << c.error().message;
  }
  auto no_interval = parse_descheduler_config(
      "apiVersion: descheduler/v1alpha2\nkind: DeschedulerConfiguration\nprofiles: [{name: x}]\n");
  ASSERT_FALSE(no_interval.has_value());
  EXPECT_NE(no_interval.error().message.find("deschedulingInterval"), std::string::npos);
}

TEST(DeschedulerConfig, GoDurations) {
  EXPECT_EQ(*parse_go_duration("10s", "f"), 10'000);
  EXPECT_EQ(*parse_go_duration("1m30s", "f"), 90'000);
  EXPECT_EQ(*parse_go_duration("500ms", "f"), 500);
  EXPECT_EQ(*parse_go_duration("1h", "f"), 3'600'000);
  EXPECT_FALSE(parse_go_duration("10", "f").has_value());
  EXPECT_FALSE(parse_go_duration("5d", "f").has_value());
}

}  // namespace
}  // namespace colony::descheduler
