// Golden cases for CPU normalization and resource amplification (cpu_normalization.hpp), from
// Koordinator's pkg/slo-controller/noderesource/plugins/cpunormalization/plugin_test.go
// (Test_getCPUNormalizationRatioFromModel, Test_getCPUNormalizationRatio, TestPluginNeedSyncMeta,
// TestPluginCalculate), plugins/resourceamplification/plugin_test.go (TestPluginNeedSyncMeta,
// TestPluginCalculate) and apis/extension/node_resource_amplification.go (Amplify).
#include <optional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "actors/slo_controller/cpu_normalization.hpp"
#include "actors/slo_controller/slo_controller_config.hpp"

namespace colony::slo_controller {
namespace {

using opt_sv = std::optional<std::string_view>;

model_ratio_cfg full_model(double base, double turbo, double ht, double ht_turbo) {
  model_ratio_cfg m;
  m.base_ratio = base;
  m.turbo_enabled_ratio = turbo;
  m.hyper_thread_enabled_ratio = ht;
  m.hyper_thread_turbo_enabled_ratio = ht_turbo;
  return m;
}

cpu_normalization_strategy strategy(std::optional<bool> enable,
                                    std::map<std::string, model_ratio_cfg, std::less<>> models,
                                    std::optional<double> def = std::nullopt) {
  cpu_normalization_strategy s;
  s.enable = enable;
  s.ratio_model = std::move(models);
  s.default_ratio = def;
  return s;
}

cpu_basic_info info(std::string model, bool ht, bool turbo) {
  return cpu_basic_info{std::move(model), ht, turbo};
}

// Test_getCPUNormalizationRatioFromModel.
TEST(CpuNormalizationGolden, RatioFromModel) {
  struct row {
    const char* name;
    cpu_basic_info info;
    cpu_normalization_strategy s;
    double want;  // -1: error
  };
  auto nil_model = strategy(true, {});
  nil_model.ratio_model.reset();
  const auto full = full_model(1.5, 1.65, 1.0, 1.1);
  model_ratio_cfg base_only;
  base_only.base_ratio = 1.0;
  model_ratio_cfg base_15;
  base_15.base_ratio = 1.5;
  const std::vector<row> rows = {
      {"nil model", info("", false, false), nil_model, -1},
      {"no ratio for model", info("CPU XXX", false, false),
       strategy(true, {{"CPU YYY", base_only}}), -1},
      {"missing ratio for Turbo and HT on", info("CPU XXX", true, true),
       strategy(true, {{"CPU XXX", base_15}}), -1},
      {"got ratio for Turbo and HT on", info("CPU XXX", true, true),
       strategy(true, {{"CPU XXX", full}}), 1.1},
      {"got ratio for HT on", info("CPU XXX", true, false), strategy(true, {{"CPU XXX", full}}),
       1.0},
      {"got ratio for Turbo on", info("CPU XXX", false, true), strategy(true, {{"CPU XXX", full}}),
       1.65},
      {"got ratio for basic setting", info("CPU XXX", false, false),
       strategy(true, {{"CPU XXX", full}}), 1.5},
      {"missing ratio for basic setting", info("CPU XXX", false, false),
       strategy(true, {{"CPU XXX", model_ratio_cfg{}}}), -1},
  };
  for (const auto& r : rows) {
    auto got = cpu_normalization_ratio_from_model(r.info, r.s);
    if (r.want < 0) {
      EXPECT_FALSE(got) << r.name;
    } else {
      ASSERT_TRUE(got) << r.name << ": " << got.error().describe();
      EXPECT_EQ(*got, r.want) << r.name;
    }
  }
  // Errors name the field that is missing.
  auto e = cpu_normalization_ratio_from_model(info("Intel Xeon", false, false),
                                              strategy(true, {{"Intel Xeon", model_ratio_cfg{}}}));
  ASSERT_FALSE(e);
  EXPECT_EQ(e.error().where, "cpu-normalization-config.ratioModel[\"Intel Xeon\"].baseRatio");
}

// Test_getCPUNormalizationRatio.
TEST(CpuNormalizationGolden, RatioWithDefault) {
  auto nil_model = [](std::optional<double> def) {
    auto s = strategy(true, {}, def);
    s.ratio_model.reset();
    return s;
  };
  EXPECT_FALSE(cpu_normalization_ratio(info("", false, false), nil_model(std::nullopt)))
      << "nil model and nil default ratio";
  EXPECT_EQ(cpu_normalization_ratio(info("", false, false), nil_model(2.5)).value_or(-1), 2.5)
      << "nil model and valid default ratio";
  EXPECT_EQ(
      cpu_normalization_ratio(info("CPU XXX", false, false),
                              strategy(true, {{"CPU XXX", full_model(1.9, 1.65, 1.0, 1.1)}}, 3.5))
          .value_or(-1),
      1.9)
      << "model takes precedence over the default ratio";
  EXPECT_EQ(cpu_normalization_ratio(info("CPU XXX", false, false),
                                    strategy(true, {{"CPU XXX", model_ratio_cfg{}}}, 2.2))
                .value_or(-1),
            2.2)
      << "use the default ratio with invalid model";
}

// plugins/cpunormalization TestPluginNeedSyncMeta.
TEST(CpuNormalizationGolden, NeedSyncMeta) {
  struct row {
    const char* name;
    opt_sv old_ratio, new_ratio;
    bool want;
    std::string_view reason;
  };
  const std::vector<row> rows = {
      {"need sync when failed to parse old ratio", "[}", "1.10", true, "old ratio parsed error"},
      {"abort sync when failed to parse new ratio", "1.10", "[}", false, "new ratio parsed error"},
      {"no need sync when both have no ratio", std::nullopt, std::nullopt, false, "ratios are nil"},
      {"need sync when old has no ratio", std::nullopt, "1.10", true, "old ratio is nil"},
      {"need sync when new has no ratio", "1.10", std::nullopt, true, "new ratio is nil"},
      {"skip sync when ratio is unchanged", "1.10", "1.10", false, "ratios are close"},
      {"skip sync when ratio are close", "1.10", "1.099999999", false, "ratios are close"},
      {"need sync when ratio is different", "1.10", "1.20", true, "ratio is different"},
  };
  for (const auto& r : rows) {
    const auto got = cpu_normalization_need_sync(r.old_ratio, r.new_ratio);
    EXPECT_EQ(got.need_sync, r.want) << r.name;
    EXPECT_EQ(got.reason, r.reason) << r.name;
  }
}

// plugins/cpunormalization TestPluginCalculate (the NRT's annotation is the basic_info argument;
// "get configmap cache failed" and "failed to get NRT" are the component's: no config, no node).
TEST(CpuNormalizationGolden, Calculate) {
  constexpr std::string_view nrt_info =
      R"({"cpuModel": "XXX", "hyperThreadEnabled": true, "turboEnabled": true})";
  const auto full = full_model(1.5, 1.65, 1.0, 1.1);
  model_ratio_cfg base_only;
  base_only.base_ratio = 1.0;
  model_ratio_cfg too_big;
  too_big.hyper_thread_turbo_enabled_ratio = 10;
  struct row {
    const char* name;
    cpu_normalization_strategy s;
    opt_sv label;
    opt_sv basic;
    std::optional<std::string> want;  // nullopt: error
  };
  const std::vector<row> rows = {
      {"failed to get node config", strategy(true, {}), "{]", nrt_info, std::nullopt},
      {"node strategy is disabled", strategy(false, {}), std::nullopt, nrt_info, "1.00"},
      {"failed to get CPUBasicInfo", strategy(true, {}), std::nullopt, std::nullopt, std::nullopt},
      {"failed to parse CPUBasicInfo", strategy(true, {}), std::nullopt, "{]", std::nullopt},
      {"failed to get ratio", strategy(true, {{"XXX", base_only}}), std::nullopt, nrt_info,
       std::nullopt},
      {"failed to validate ratio", strategy(true, {{"XXX", too_big}}), std::nullopt, nrt_info,
       std::nullopt},
      {"get ratio correctly", strategy(true, {{"XXX", full}}), std::nullopt, nrt_info, "1.10"},
      {"get ratio when strategy disable but not enabled", strategy(false, {{"XXX", full}}), "true",
       nrt_info, "1.10"},
      {"strategy enabled but node disabled", strategy(true, {{"XXX", full}}), "false", nrt_info,
       "1.00"},
  };
  for (const auto& r : rows) {
    auto got = calculate_cpu_normalization(r.s, r.label, r.basic);
    if (!r.want) {
      EXPECT_FALSE(got) << r.name << " got " << got.value_or("");
    } else {
      ASSERT_TRUE(got) << r.name << ": " << got.error().describe();
      EXPECT_EQ(*got, *r.want) << r.name;
    }
  }
}

// "get ratio correctly 1": the node entry (matching label) merged over the cluster strategy
// decides, parsed from the ConfigMap key.
TEST(CpuNormalizationGolden, NodeConfigFromConfigMap) {
  auto cfg = parse_cpu_normalization_strategies(R"({
    "enable": false,
    "ratioModel": {"XXX": {"baseRatio": 1.0, "turboEnabledRatio": 1.0,
                           "hyperThreadEnabledRatio": 1.0, "hyperThreadTurboEnabledRatio": 1.0}},
    "nodeConfigs": [{"name": "test-node-1", "nodeSelector": {"matchLabels": {"a": "b"}},
                     "enable": true,
                     "ratioModel": {"XXX": {"baseRatio": 1.5, "turboEnabledRatio": 1.65,
                                            "hyperThreadEnabledRatio": 1.0,
                                            "hyperThreadTurboEnabledRatio": 1.1}}}]})");
  ASSERT_TRUE(cfg) << cfg.error().describe();
  const node_labels labelled{{"a", "b"}};
  const node_labels other{};
  constexpr std::string_view nrt_info =
      R"({"cpuModel": "XXX", "hyperThreadEnabled": true, "turboEnabled": true})";
  EXPECT_EQ(calculate_cpu_normalization(cfg->for_node(labelled), std::nullopt, nrt_info).value(),
            "1.10");
  EXPECT_EQ(calculate_cpu_normalization(cfg->for_node(other), std::nullopt, nrt_info).value(),
            "1.00");
  // A node entry's model replaces the cluster's model of that name whole (util.MergeCfg).
  auto merged = parse_cpu_normalization_strategies(
      R"({"enable":true,"defaultRatio":1.2,"ratioModel":{"A":{"baseRatio":1.5,"turboEnabledRatio":1.6}},
          "nodeConfigs":[{"nodeSelector":{"matchLabels":{"a":"b"}},"ratioModel":{"A":{"baseRatio":2.0},"B":{"baseRatio":3.0}}}]})");
  ASSERT_TRUE(merged) << merged.error().describe();
  const auto& n = merged->node_configs.at(0).strategy;
  EXPECT_EQ(n.enable, true);
  EXPECT_EQ(n.default_ratio, 1.2);
  ASSERT_TRUE(n.ratio_model);
  EXPECT_EQ(n.ratio_model->at("A").base_ratio, 2.0);
  EXPECT_FALSE(n.ratio_model->at("A").turbo_enabled_ratio);
  EXPECT_EQ(n.ratio_model->at("B").base_ratio, 3.0);
  EXPECT_EQ(merged->cluster.ratio_model->size(), 1u);
}

// configmap_event_handler_test.go Test_syncCacheIfCfgChanged "sync cache changed with node
// configs": the node entry inherits the cluster's models and overrides enable.
TEST(CpuNormalizationGolden, SyncConfigWithNodeConfigs) {
  auto cfg = parse_cpu_normalization_strategies(R"({
    "enable": false,
    "ratioModel": {
      "Intel(R) Xeon(R) Platinum XXX CPU @ 2.50GHz": {"baseRatio": 1.5, "hyperThreadEnabledRatio": 1.0,
        "turboEnabledRatio": 1.8, "hyperThreadTurboEnabledRatio": 1.2},
      "Intel(R) Xeon(R) Platinum YYY CPU @ 2.50GHz": {"baseRatio": 1.8, "hyperThreadEnabledRatio": 1.2,
        "turboEnabledRatio": 2.16, "hyperThreadTurboEnabledRatio": 1.44}},
    "nodeConfigs": [{"nodeSelector": {"matchLabels": {"test-cpu-normalization": "true"}},
                     "enable": true}]})");
  ASSERT_TRUE(cfg) << cfg.error().describe();
  const auto xxx = full_model(1.5, 1.8, 1.0, 1.2);
  const auto yyy = full_model(1.8, 2.16, 1.2, 1.44);
  const auto cluster = strategy(false, {{"Intel(R) Xeon(R) Platinum XXX CPU @ 2.50GHz", xxx},
                                        {"Intel(R) Xeon(R) Platinum YYY CPU @ 2.50GHz", yyy}});
  EXPECT_EQ(cfg->cluster, cluster);
  ASSERT_EQ(cfg->node_configs.size(), 1u);
  auto node = cluster;
  node.enable = true;
  EXPECT_EQ(cfg->node_configs[0].strategy, node);
  EXPECT_EQ(&cfg->for_node({{"test-cpu-normalization", "true"}}), &cfg->node_configs[0].strategy);
  EXPECT_EQ(&cfg->for_node({}), &cfg->cluster);
  // The default config ("failed to get cpu normalization key"): disabled, empty model.
  EXPECT_EQ(parse_cpu_normalization_strategies("")->cluster, strategy(std::nullopt, {}));
}

TEST(CpuNormalizationConfig, ErrorsNameTheField) {
  struct row {
    const char* text;
    const char* where;
  };
  const std::vector<row> rows = {
      {R"({"ratioModel":{"Intel Xeon":{"baseRatio":0.5}}})",
       "cpu-normalization-config.ratioModel[\"Intel Xeon\"].baseRatio"},
      {R"({"ratioModel":{"Intel Xeon":{"turboEnabledRatio":"1.2"}}})",
       "cpu-normalization-config.ratioModel[\"Intel Xeon\"].turboEnabledRatio"},
      {R"({"defaultRatio":5.5})", "cpu-normalization-config.defaultRatio"},
      {R"({"enable":"yes"})", "cpu-normalization-config.enable"},
      {R"({"ratioModel":[]})", "cpu-normalization-config.ratioModel"},
      {R"({"nodeConfigs":[{"nodeSelector":{"matchLabels":{"a":"b"}},"ratioModel":{"M":{"hyperThreadTurboEnabledRatio":6}}}]})",
       "cpu-normalization-config.nodeConfigs[0].ratioModel[\"M\"].hyperThreadTurboEnabledRatio"},
  };
  for (const auto& r : rows) {
    auto got = parse_cpu_normalization_strategies(r.text);
    ASSERT_FALSE(got) << r.text;
    EXPECT_EQ(got.error().where, r.where) << r.text << ": " << got.error().describe();
  }
  // The ConfigMap-level validator names the same path.
  auto cm = parse_cpu_normalization_config(R"({"ratioModel":{"Intel Xeon":{"baseRatio":0.5}}})");
  ASSERT_FALSE(cm);
  EXPECT_EQ(cm.error().where, "cpu-normalization-config.ratioModel[\"Intel Xeon\"].baseRatio");
  // Defaults: disabled, empty model.
  auto def = parse_cpu_normalization_strategies("");
  ASSERT_TRUE(def);
  EXPECT_EQ(def->cluster.enable.value_or(false), false);
  EXPECT_EQ(calculate_cpu_normalization(def->cluster, std::nullopt, std::nullopt).value(), "1.00");
}

TEST(CpuNormalizationFormat, BasicInfoAndRatioText) {
  auto i = parse_cpu_basic_info(
      R"({"cpuModel":"Intel(R) Xeon(R) Platinum 8369B CPU @ 2.70GHz","hyperThreadEnabled":true,"turboEnabled":false,"catL3CbmMask":"fff","vendorID":"GenuineIntel"})");
  ASSERT_TRUE(i) << i.error().describe();
  EXPECT_EQ(i->cpu_model, "Intel(R) Xeon(R) Platinum 8369B CPU @ 2.70GHz");
  EXPECT_TRUE(i->hyper_thread_enabled);
  EXPECT_FALSE(i->turbo_enabled);
  EXPECT_FALSE(parse_cpu_basic_info(R"({"cpuModel":1})"));
  EXPECT_FALSE(parse_cpu_basic_info("{]"));
  // SetCPUNormalizationRatio's note: 3.1415926 -> "3.14"; 'f' rounds the binary value.
  EXPECT_EQ(format_ratio(3.1415926), "3.14");
  EXPECT_EQ(format_ratio(1.1), "1.10");
  EXPECT_EQ(format_ratio(1.5 * 1.2), "1.80");
  EXPECT_EQ(format_ratio(2), "2.00");
  EXPECT_FALSE(validate_cpu_normalization_ratio(0.99));
  EXPECT_TRUE(validate_cpu_normalization_ratio(1.0));
  EXPECT_TRUE(validate_cpu_normalization_ratio(5.0));
  EXPECT_FALSE(validate_cpu_normalization_ratio(5.01));
  EXPECT_EQ(parse_cpu_normalization_ratio(std::nullopt).value(), -1);
  EXPECT_FALSE(parse_cpu_normalization_ratio("0"));
  EXPECT_FALSE(parse_cpu_normalization_ratio("abc"));
}

// update_node_meta: Calculate, Prepare and NeedSyncMeta of both plugins over one node
// (resource_calculator.go updateNodeResource), the patch being client.MergeFrom's.
TEST(CpuNormalizationMeta, UpdateNodeMeta) {
  auto cpu = parse_cpu_normalization_strategies(
      R"({"enable":true,"ratioModel":{"M":{"baseRatio":1.25}}})");
  auto amp = parse_resource_amplification_strategies("");
  ASSERT_TRUE(cpu && amp);
  node_meta m;
  m.cpu_basic_info = R"({"cpuModel":"M"})";
  // First reconcile: both annotations created.
  auto u = update_node_meta(&*cpu, &*amp, {}, m, false);
  EXPECT_TRUE(u.need_sync);
  EXPECT_EQ(u.patch, R"({"node.koordinator.sh/cpu-normalization-ratio":"1.25",)"
                     R"("node.koordinator.sh/resource-amplification-ratio":"{\"cpu\":1.25}"})");
  EXPECT_EQ(u.reason,
            "CPUNormalization: old ratio is nil; ResourceAmplification: old ratio is empty");
  // Applied: nothing more to write.
  auto after = m;
  ASSERT_TRUE(apply_annotation_patch(u.patch, after));
  EXPECT_EQ(after, u.after);
  EXPECT_FALSE(update_node_meta(&*cpu, &*amp, {}, after, false).need_sync);
  // A malformed ratio on the node and no basic info: Calculate fails, Prepare keeps the old text
  // (NeedSyncMeta "old ratio parsed error"), and the amplification, which cannot parse it
  // either, stays absent: a sync with nothing to patch.
  node_meta bad;
  bad.cpu_normalization_ratio = "[}";
  u = update_node_meta(&*cpu, &*amp, {}, bad, false);
  EXPECT_TRUE(u.need_sync);
  EXPECT_EQ(u.patch, "");
  // Both configs unavailable: the normalization ratio stays, the amplification ratio goes.
  u = update_node_meta(nullptr, nullptr, {}, after, false);
  EXPECT_EQ(u.patch, R"({"node.koordinator.sh/resource-amplification-ratio":null})");
  EXPECT_EQ(u.reason, "ResourceAmplification: new ratio is empty");
}

// plugins/resourceamplification TestPluginNeedSyncMeta.
TEST(ResourceAmplificationGolden, NeedSyncMeta) {
  struct row {
    const char* name;
    std::string_view o, n;
    bool want;
    std::string_view reason;
  };
  const std::vector<row> rows = {
      {"no need sync when both have no ratio", "", "", false, "ratio remains empty"},
      {"need sync when old has no ratio", "", R"({"cpu":1.12})", true, "old ratio is empty"},
      {"need sync when new has no ratio", R"({"cpu":1.12})", "", true, "new ratio is empty"},
      {"skip sync when ratio is unchanged", R"({"cpu":1.12})", R"({"cpu":1.12})", false,
       "ratio remains unchanged"},
      {"need sync when ratio is different", R"({"cpu":1.12})", R"({"cpu":1.23})", true,
       "ratio changed"},
  };
  for (const auto& r : rows) {
    const auto got = resource_amplification_need_sync(r.o, r.n);
    EXPECT_EQ(got.need_sync, r.want) << r.name;
    EXPECT_EQ(got.reason, r.reason) << r.name;
  }
}

// plugins/resourceamplification TestPluginCalculate.
TEST(ResourceAmplificationGolden, Calculate) {
  auto amp = [](std::map<std::string, double, std::less<>> r) {
    resource_amplification_strategy s;
    s.enable = true;
    s.ratios = std::move(r);
    return s;
  };
  struct row {
    const char* name;
    resource_amplification_strategy s;
    opt_sv norm;
    std::optional<std::string> want;  // "" = no annotation; nullopt = error
  };
  const std::vector<row> rows = {
      {"get cpu normalization ratio failed", {}, "invalid", std::nullopt},
      {"calculate ratio correctly with cpu normalization", {}, "1.22", R"({"cpu":1.22})"},
      {"calculate ratio correctly without cpu normalization", {}, std::nullopt, ""},
      {"calculate ratio with amplification ratio", amp({{"cpu", 1.1}, {"memory", 2.1}}),
       std::nullopt, R"({"cpu":1.10,"memory":2.10})"},
      {"calculate ratio with both cpu normalization ratio and amplification ratio",
       amp({{"cpu", 1.5}, {"memory", 2.5}}), "1.20", R"({"cpu":1.80,"memory":2.50})"},
      {"calculate ratio with cpu normalization ratio and amplification memory ratio",
       amp({{"memory", 3.5}}), "1.50", R"({"cpu":1.50,"memory":3.50})"},
      {"calculate ratio with cpu normalization ratio and other resource type ratio",
       amp({{"memory", 3.5}, {"storage", 1.8}}), "1.50",
       R"({"cpu":1.50,"memory":3.50,"storage":1.80})"},
      {"calculate ratio with final cpu normalization ratio > 1 correctly",
       amp({{"cpu", 0.8}, {"memory", 3.5}, {"storage", 1.8}}), "1.50",
       R"({"cpu":1.20,"memory":3.50,"storage":1.80})"},
      {"calculate ratio with final cpu normalization ratio < 1 invalid",
       amp({{"cpu", 0.5}, {"memory", 3.5}, {"storage", 1.8}}), "1.50", std::nullopt},
      {"calculate ratio with one resource amplification ratio invalid",
       amp({{"memory", 3.5}, {"storage", 0.5}}), "1.50", std::nullopt},
  };
  for (const auto& r : rows) {
    auto got = calculate_resource_amplification(r.s, r.norm);
    if (!r.want) {
      EXPECT_FALSE(got) << r.name;
      continue;
    }
    ASSERT_TRUE(got) << r.name << ": " << got.error().describe();
    EXPECT_EQ(got->value_or(""), *r.want) << r.name;
  }
}

TEST(ResourceAmplificationFormat, ParseAndAmplify) {
  auto r = parse_amplification_ratios(R"({"cpu":1.80,"memory":2.50})");
  ASSERT_TRUE(r) << r.error().describe();
  EXPECT_EQ(r->at("cpu"), 1.8);
  EXPECT_EQ(r->at("memory"), 2.5);
  EXPECT_FALSE(parse_amplification_ratios(R"({"cpu":"x"})"));
  EXPECT_FALSE(parse_amplification_ratios("{"));
  // extension.Amplify: ceil(origin * ratio), only above 1.
  EXPECT_EQ(amplify(1000, 1.5), 1500);
  EXPECT_EQ(amplify(1001, 1.5), 1502);
  EXPECT_EQ(amplify(1000, 1.0), 1000);
  EXPECT_EQ(amplify(1000, 0.5), 1000);
  auto cfg = parse_resource_amplification_strategies(
      R"({"enable":true,"resourceAmplificationRatio":{"cpu":1.5},"nodeConfigs":[{"nodeSelector":{"matchLabels":{"a":"b"}},"resourceAmplificationRatio":{"memory":2}}]})");
  ASSERT_TRUE(cfg) << cfg.error().describe();
  EXPECT_EQ(cfg->node_configs.at(0).strategy.ratios.size(), 2u);
  auto bad =
      parse_resource_amplification_strategies(R"({"resourceAmplificationRatio":{"cpu":0.5}})");
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().where, "resource-amplification-config.resourceAmplificationRatio.cpu");
}

}  // namespace
}  // namespace colony::slo_controller
