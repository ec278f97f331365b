// node_slo: the NodeSLO spec rendered per node (pkg/slo-controller/nodeslo/resource_strategy.go,
// nodeslo_cm_event_handler.go): defaults, the cluster strategy, nodeStrategies selection order,
// resource-qos merging, the JSON form and the koordlet's reading of it.
#include "actors/slo_controller/node_slo.hpp"

#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace colony::slo_controller {
namespace {

using json = nlohmann::json;

slo_controller_config config_of(const json& data) {
  auto u = update(std::nullopt, data.dump());
  EXPECT_FALSE(u.error.has_value()) << (u.error ? u.error->describe() : "");
  return u.in_force;
}

json rendered(const slo_controller_config& cfg, const node_labels& labels) {
  return json::parse(node_slo_renderer(cfg).spec_json(labels));
}

// DefaultSLOCfg (nodeslo_cm_event_handler.go) rendered for any node: DefaultResourceThreshold-
// Strategy, an empty ResourceQOSStrategy, DefaultCPUBurstStrategy, DefaultSystemStrategy
// (pkg/util/sloconfig/nodeslo_config.go; values from the reference's section F).
TEST(NodeSlo, DefaultsWithoutConfigMap) {
  const std::string want =
      R"({"cpuBurstStrategy":{"cfsQuotaBurstPercent":300,"cfsQuotaBurstPeriodSeconds":-1,)"
      R"("cpuBurstPercent":1000,"policy":"none","sharePoolThresholdPercent":50},)"
      R"("resourceQOSStrategy":{},)"
      R"("resourceUsedThresholdWithBE":{"cpuEvictPolicy":"evictByRealLimit",)"
      R"("cpuSuppressPolicy":"cpuset","cpuSuppressThresholdPercent":65,"enable":false,)"
      R"("memoryEvictThresholdPercent":70},)"
      R"("systemStrategy":{"totalNetworkBandwidth":"0"}})";
  EXPECT_EQ(node_slo_renderer().spec_json({}), want);
  EXPECT_EQ(node_slo_renderer(slo_controller_config{}).spec_json({{"any", "label"}}), want);
  // A key that was never available renders its defaults too.
  slo_controller_config unavailable;
  unavailable.resource_threshold.reset();
  unavailable.resource_qos.reset();
  EXPECT_EQ(node_slo_renderer(unavailable).spec_json({}), want);
}

// Three entries: two select pool=online (the first must win), one pool=batch. Each node entry
// is merged over the cluster strategy, which is merged over the defaults.
const json threshold_config = {
    {"resource-threshold-config",
     json{{"clusterStrategy", {{"enable", true}, {"cpuSuppressThresholdPercent", 55}}},
          {"nodeStrategies",
           json::array({{{"name", "online-first"},
                         {"nodeSelector", {{"matchLabels", {{"pool", "online"}}}}},
                         {"cpuSuppressThresholdPercent", 40}},
                        {{"name", "online-second"},
                         {"nodeSelector",
                          {{"matchExpressions",
                            json::array({{{"key", "pool"},
                                          {"operator", "In"},
                                          {"values", json::array({"online", "batch"})}}})}}},
                         {"cpuSuppressThresholdPercent", 30},
                         {"memoryEvictThresholdPercent", 80}},
                        {{"name", "batch"},
                         {"nodeSelector", {{"matchLabels", {{"pool", "batch"}}}}},
                         {"enable", false}}})}}
         .dump()}};

TEST(NodeSlo, NodeStrategiesFirstMatchWinsOverClusterStrategy) {
  const auto cfg = config_of(threshold_config);
  struct row {
    const char* name;
    node_labels labels;
    bool enable;
    std::int64_t suppress;
    std::int64_t memory_evict;
  };
  const std::vector<row> rows{
      // No entry matches: the cluster strategy over the defaults.
      {"no labels", {}, true, 55, 70},
      {"other pool", {{"pool", "gpu"}}, true, 55, 70},
      // online matches entries 1 and 2 (In online,batch): the first wins, merged over cluster.
      {"online", {{"pool", "online"}}, true, 40, 70},
      // batch matches entry 2 (In) before entry 3 (matchLabels): order, not specificity.
      {"batch", {{"pool", "batch"}}, true, 30, 80},
  };
  for (const auto& r : rows) {
    const auto spec = rendered(cfg, r.labels);
    const auto& t = spec.at("resourceUsedThresholdWithBE");
    EXPECT_EQ(t.at("enable"), r.enable) << r.name;
    EXPECT_EQ(t.at("cpuSuppressThresholdPercent"), r.suppress) << r.name;
    EXPECT_EQ(t.at("memoryEvictThresholdPercent"), r.memory_evict) << r.name;
    EXPECT_EQ(t.at("cpuSuppressPolicy"), "cpuset") << r.name;  // default kept through the merge
    // The other keys are untouched by this key's entries.
    EXPECT_EQ(spec.at("cpuBurstStrategy").at("policy"), "none") << r.name;
  }
}

TEST(NodeSlo, EachKeySelectsItsOwnEntry) {
  json data = threshold_config;
  data["cpu-burst-config"] =
      json{
          {"clusterStrategy", {{"policy", "auto"}}},
          {"nodeStrategies", json::array({{{"name", "batch-burst"},
                                           {"nodeSelector", {{"matchLabels", {{"pool", "batch"}}}}},
                                           {"policy", "cpuBurstOnly"},
                                           {"cpuBurstPercent", 200}}})}}
          .dump();
  data["system-config"] =
      json{{"clusterStrategy", {{"totalNetworkBandwidth", "1000M"}, {"watermarkScaleFactor", 150}}},
           {"nodeStrategies",
            json::array({{{"name", "online-sys"},
                          {"nodeSelector", {{"matchLabels", {{"pool", "online"}}}}},
                          {"minFreeKbytesFactor", 100}}})}}
          .dump();
  const auto cfg = config_of(data);
  const auto online = rendered(cfg, {{"pool", "online"}});
  const auto batch = rendered(cfg, {{"pool", "batch"}});
  EXPECT_EQ(online.at("cpuBurstStrategy").at("policy"), "auto");
  EXPECT_EQ(online.at("cpuBurstStrategy").at("cpuBurstPercent"), 1000);
  EXPECT_EQ(batch.at("cpuBurstStrategy").at("policy"), "cpuBurstOnly");
  EXPECT_EQ(batch.at("cpuBurstStrategy").at("cpuBurstPercent"), 200);
  // resource.Quantity in canonical form; a node entry without one has the cluster's.
  EXPECT_EQ(batch.at("systemStrategy"),
            (json{{"totalNetworkBandwidth", "1G"}, {"watermarkScaleFactor", 150}}));
  EXPECT_EQ(online.at("systemStrategy"), (json{{"totalNetworkBandwidth", "1G"},
                                               {"watermarkScaleFactor", 150},
                                               {"minFreeKbytesFactor", 100}}));
}

// resource-qos-config is merged over an empty strategy (DefaultSLOCfg), node entries over the
// cluster strategy object by object (util.MergeCfg), without the entry's name and nodeSelector.
TEST(NodeSlo, ResourceQosMergesObjectsAndDropsProfileFields) {
  json data;
  data["resource-qos-config"] =
      json{{"clusterStrategy",
            {{"lsClass", {{"cpuQOS", {{"enable", true}, {"groupIdentity", 2}}}}},
             {"policies", {{"cpuPolicy", "groupIdentity"}}}}},
           {"nodeStrategies",
            json::array({{{"name", "be-heavy"},
                          {"nodeSelector", {{"matchLabels", {{"pool", "batch"}}}}},
                          {"lsClass", {{"cpuQOS", {{"groupIdentity", 1}}}}},
                          {"beClass", {{"memoryQOS", {{"enable", true}, {"wmarkRatio", 90}}}}}}})}}
          .dump();
  const auto cfg = config_of(data);
  EXPECT_EQ(rendered(cfg, {}).at("resourceQOSStrategy"),
            (json{{"lsClass", {{"cpuQOS", {{"enable", true}, {"groupIdentity", 2}}}}},
                  {"policies", {{"cpuPolicy", "groupIdentity"}}}}));
  EXPECT_EQ(rendered(cfg, {{"pool", "batch"}}).at("resourceQOSStrategy"),
            (json{{"lsClass", {{"cpuQOS", {{"enable", true}, {"groupIdentity", 1}}}}},
                  {"beClass", {{"memoryQOS", {{"enable", true}, {"wmarkRatio", 90}}}}},
                  {"policies", {{"cpuPolicy", "groupIdentity"}}}}));
}

TEST(NodeSlo, SpecJsonIsTheCanonicalJsonOfTheTypedSpec) {
  json data = threshold_config;
  data["resource-qos-config"] =
      json{{"clusterStrategy", {{"beClass", {{"cpuQOS", {{"enable", true}}}}}}}}.dump();
  data["cpu-burst-config"] = json{{"clusterStrategy", {{"policy", "auto"}}}}.dump();
  const auto cfg = config_of(data);
  const node_slo_renderer r(cfg);
  for (const node_labels& labels :
       std::vector<node_labels>{{}, {{"pool", "online"}}, {{"pool", "batch"}}}) {
    const auto text = r.spec_json(labels);
    EXPECT_EQ(text, node_slo_spec_json(r.spec(labels)));
    EXPECT_EQ(text, json::parse(text).dump());  // sorted keys, no whitespace
    // What the koordlet reads back is what was rendered.
    auto back = parse_node_slo_spec(text);
    ASSERT_TRUE(back.has_value()) << back.error().describe();
    EXPECT_EQ(*back, r.spec(labels));
  }
}

// The koordlet merges its NodeSLO over the defaults (states_nodeslo.go mergeNodeSLOSpec).
TEST(NodeSlo, KoordletReadsAPartialSpecOverTheDefaults) {
  auto s = parse_node_slo_spec(
      R"({"resourceUsedThresholdWithBE":{"enable":true,"cpuSuppressPolicy":"cfsQuota"}})");
  ASSERT_TRUE(s.has_value()) << s.error().describe();
  EXPECT_EQ(s->resource_used_threshold_with_be.enable, true);
  EXPECT_EQ(s->resource_used_threshold_with_be.cpu_suppress_policy, "cfsQuota");
  EXPECT_EQ(s->resource_used_threshold_with_be.cpu_suppress_threshold_percent, 65);
  EXPECT_EQ(s->cpu_burst, cpu_burst_strategy::defaults());
  EXPECT_EQ(s->system, system_strategy::defaults());
  EXPECT_EQ(s->resource_qos_strategy_json, "{}");
  EXPECT_EQ(parse_node_slo_spec("{}").value(), node_slo_spec{});

  // Refused, naming the field: not JSON, a wrong type, a value out of range.
  for (const char* bad : {"{", "[]", R"({"cpuBurstStrategy":{"cpuBurstPercent":"x"}})",
                          R"({"resourceUsedThresholdWithBE":{"cpuSuppressThresholdPercent":101}})",
                          R"({"resourceQOSStrategy":3})"}) {
    const auto r = parse_node_slo_spec(bad);
    EXPECT_FALSE(r.has_value()) << bad;
  }
  const auto r = parse_node_slo_spec(R"({"cpuBurstStrategy":{"cpuBurstPercent":"x"}})");
  ASSERT_FALSE(r.has_value());
  EXPECT_NE(r.error().describe().find("cpuBurstPercent"), std::string::npos)
      << r.error().describe();
}

TEST(NodeSlo, OnlyTheNodeSloKeysCount) {
  const auto a = config_of(threshold_config);
  json other = threshold_config;
  other["colocation-config"] = json{{"enable", true}}.dump();
  other["cpu-normalization-config"] = json{{"enable", true}}.dump();
  EXPECT_TRUE(same_node_slo_keys(a, config_of(other)));
  other["cpu-burst-config"] = json{{"clusterStrategy", {{"policy", "auto"}}}}.dump();
  EXPECT_FALSE(same_node_slo_keys(a, config_of(other)));
}

}  // namespace
}  // namespace colony::slo_controller
