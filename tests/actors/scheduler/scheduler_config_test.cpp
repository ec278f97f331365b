// KubeSchedulerConfiguration parsing: Koordinator's shipped profile, defaults, and errors that
// name the field path.
#include <gtest/gtest.h>

#include "actors/scheduler/scheduler_config.hpp"

namespace colony::scheduler {
namespace {

using R = resource_name;

TEST(SchedulerConfig, ParsesKoordinatorShippedProfile) {
  auto cfg = parse_scheduler_config(koord_scheduler_shipped_config(), "scheduler-config.yaml");
  ASSERT_TRUE(cfg.has_value()) << cfg.error().describe();
  ASSERT_EQ(cfg->profiles.size(), 1u);
  const auto& p = cfg->profiles[0];
  EXPECT_EQ(p.scheduler_name, "koord-scheduler");
  const auto shipped = load_aware_args::shipped_profile();
  EXPECT_EQ(p.load_aware.filter_expired_node_metrics, shipped.filter_expired_node_metrics);
  EXPECT_EQ(p.load_aware.node_metric_expiration_seconds, 300);
  EXPECT_EQ(p.load_aware.usage_thresholds, shipped.usage_thresholds);
  EXPECT_EQ(p.load_aware.resource_weights, shipped.resource_weights);
  EXPECT_EQ(p.load_aware.estimated_scaling_factors, shipped.estimated_scaling_factors);
  EXPECT_EQ(p.node_resources_fit.resources,
            node_resources_fit_args::koordinator_profile().resources);
  // ElasticQuotaArgs: the shipped file names only the namespace, the rest are the defaults.
  ASSERT_TRUE(p.elastic_quota.has_value());
  EXPECT_EQ(p.elastic_quota->quota_group_namespace, "koordinator-system");
  EXPECT_EQ(p.elastic_quota->delay_evict_time_ms, quota::elastic_quota_args{}.delay_evict_time_ms);
  EXPECT_FALSE(p.other_plugin_args.contains("ElasticQuota"));

  auto built = build_framework(*cfg, 0, plugin_registry::with_builtin());
  ASSERT_TRUE(built.has_value()) << built.error().describe();
  std::vector<std::string> names;
  for (const auto& e : built->fwk->plugins()) names.emplace_back(e.impl->name());
  EXPECT_EQ(names, (std::vector<std::string>{"NodeResourcesFit", "Coscheduling", "NodeNUMAResource",
                                             "DeviceShare", "LoadAwareScheduling"}));
  const auto* la = built->fwk->find("LoadAwareScheduling");
  ASSERT_NE(la, nullptr);
  for (const auto& e : built->fwk->plugins()) {
    if (e.impl->name() == "Coscheduling") {
      EXPECT_TRUE(e.enabled & ep_permit);
      EXPECT_TRUE(e.enabled & ep_pre_enqueue);
      EXPECT_TRUE(e.enabled & ep_post_filter);
    }
    if (e.impl->name() == "NodeResourcesFit") {
      EXPECT_EQ(e.enabled, ep_filter | ep_score);
    }
    if (e.impl->name() == "NodeNUMAResource") {
      EXPECT_EQ(e.enabled, ep_pre_filter | ep_filter | ep_score | ep_reserve);
      EXPECT_EQ(e.weight, 1);
    }
  }
  EXPECT_NE(built->fwk->find("NodeNUMAResource"), nullptr);
  EXPECT_EQ(
      built->skipped_plugins,
      (std::vector<std::string>{"DefaultBinder", "DefaultPreBind", "DefaultPreemption",
                                "ElasticQuota", "PrioritySort", "Reservation", "SchedulingHint"}));
}

// ElasticQuotaArgs (pkg/scheduler/apis/config/v1/types.go): each field given lands in
// quota::elastic_quota_args; the fields left out keep SetDefaults_ElasticQuotaArgs' values.
TEST(SchedulerConfig, ElasticQuotaArgs) {
  auto cfg = parse_scheduler_config(R"(profiles:
  - pluginConfig:
    - name: ElasticQuota
      args:
        delayEvictTime: 5m
        revokePodInterval: 2s
        systemQuotaGroupMax: {cpu: "64", memory: 256Gi}
        quotaGroupNamespace: quotas
        monitorAllQuotas: true
        enableCheckParentQuota: true
        enableRuntimeQuota: false
        enableMinQuotaScale: false
        disableDefaultQuotaPreemption: false
        enableQueueHint: true
)",
                                    "eq.yaml");
  ASSERT_TRUE(cfg.has_value()) << cfg.error().describe();
  ASSERT_TRUE(cfg->profiles[0].elastic_quota.has_value());
  const auto& a = *cfg->profiles[0].elastic_quota;
  const quota::elastic_quota_args d;
  EXPECT_EQ(a.delay_evict_time_ms, 300'000);
  EXPECT_EQ(a.revoke_pod_interval_ms, 2'000);
  EXPECT_EQ(a.system_quota_group_max.cpu_milli, 64'000);
  EXPECT_EQ(a.system_quota_group_max.memory_bytes, 256ll << 30);
  EXPECT_EQ(a.default_quota_group_max, d.default_quota_group_max);  // not given
  EXPECT_EQ(a.quota_group_namespace, "quotas");
  EXPECT_TRUE(a.monitor_all_quotas);
  EXPECT_TRUE(a.enable_check_parent_quota);
  EXPECT_FALSE(a.enable_runtime_quota);
  EXPECT_FALSE(a.enable_min_quota_scale);
  EXPECT_FALSE(a.disable_default_quota_preemption);
  // Without the plugin's config: none (the host's defaults apply).
  auto bare = parse_scheduler_config("profiles:\n  - schedulerName: x\n", "bare.yaml");
  ASSERT_TRUE(bare.has_value()) << bare.error().describe();
  EXPECT_FALSE(bare->profiles[0].elastic_quota.has_value());
}

// NodeNUMAResourceArgs (pkg/scheduler/apis/config/types.go): the defaults of
// SetDefaults_NodeNUMAResourceArgs, the fields given, and errors naming the field.
TEST(SchedulerConfig, NodeNUMAResourceArgs) {
  const std::string head = R"(apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
  - schedulerName: koord-scheduler
    pluginConfig:
      - name: NodeNUMAResource
        args:
)";
  auto cfg = parse_scheduler_config(head + R"(          defaultCPUBindPolicy: SpreadByPCPUs
          scoringStrategy:
            type: MostAllocated
            resources: [{name: cpu, weight: 2}]
          numaScoringStrategy:
            type: MostAllocated
)");
  ASSERT_TRUE(cfg.has_value()) << cfg.error().describe();
  const auto& a = cfg->profiles[0].node_numa_resource;
  EXPECT_EQ(a.default_cpu_bind_policy, numa::cpu_bind_policy::spread_by_pcpus);
  EXPECT_EQ(a.scoring_strategy, scoring_strategy_type::most_allocated);
  EXPECT_EQ(a.scoring_resources, (std::vector<resource_spec>{{resource_name::cpu, 2}}));
  EXPECT_EQ(a.numa_scoring_strategy, scoring_strategy_type::most_allocated);
  // numaScoringStrategy.resources keep their default (cpu 1, memory 1).
  EXPECT_EQ(a.numa_scoring_resources.size(), 2u);
  const node_numa_resource_args defaults;
  EXPECT_EQ(defaults.default_cpu_bind_policy, numa::cpu_bind_policy::full_pcpus);
  EXPECT_EQ(defaults.scoring_strategy, scoring_strategy_type::least_allocated);

  auto bad = parse_scheduler_config(head + "          defaultCPUBindPolicy: Pinned\n", "s.yaml");
  ASSERT_FALSE(bad.has_value());
  EXPECT_NE(bad.error().describe().find("pluginConfig[0].args.defaultCPUBindPolicy"),
            std::string::npos)
      << bad.error().describe();
  EXPECT_NE(bad.error().describe().find("Pinned"), std::string::npos);
  auto typo = parse_scheduler_config(head + "          numaScoringStrategy: {tpye: X}\n", "s.yaml");
  ASSERT_FALSE(typo.has_value());
  EXPECT_NE(typo.error().describe().find("numaScoringStrategy"), std::string::npos)
      << typo.error().describe();
}

TEST(SchedulerConfig, AcceptsTheShippedConfigMap) {
  std::string cm =
      "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: scheduler-config\ndata:\n"
      "  koord-scheduler-config: |\n";
  std::string inner(koord_scheduler_shipped_config());
  std::size_t pos = 0;
  while (pos < inner.size()) {
    auto nl = inner.find('\n', pos);
    cm += "    " + inner.substr(pos, nl - pos) + "\n";
    pos = nl + 1;
  }
  auto cfg = parse_scheduler_config(cm, "configmap.yaml");
  ASSERT_TRUE(cfg.has_value()) << cfg.error().describe();
  EXPECT_EQ(cfg->profiles[0].scheduler_name, "koord-scheduler");
}

TEST(SchedulerConfig, AppliesKoordinatorDefaultsToPartialArgs) {
  auto cfg = parse_scheduler_config(R"(
kind: KubeSchedulerConfiguration
percentageOfNodesToScore: 30
profiles:
  - schedulerName: s
    pluginConfig:
      - name: LoadAwareScheduling
        args:
          dominantResourceWeight: 10
          estimatedScalingFactors: {memory: 50}
          aggregated:
            usageThresholds: {cpu: 70}
            usageAggregationType: p95
            usageAggregatedDuration: 5m
      - name: Coscheduling
        args:
          defaultTimeout: 30s
          defaultMatchPolicy: only-waiting
)");
  ASSERT_TRUE(cfg.has_value()) << cfg.error().describe();
  EXPECT_EQ(cfg->percentage_of_nodes_to_score, 30);
  const auto& la = cfg->profiles[0].load_aware;
  EXPECT_TRUE(la.resource_weights.empty());  // not defaulted: dominantResourceWeight != 0
  EXPECT_EQ(la.usage_thresholds, (resource_map{{R::cpu, 65}, {R::memory, 95}}));
  EXPECT_EQ(la.estimated_scaling_factors, (resource_map{{R::cpu, 85}, {R::memory, 50}}));
  ASSERT_TRUE(la.aggregated);
  EXPECT_EQ(la.aggregated->usage_aggregated_duration.value, 300000);
  EXPECT_EQ(cfg->profiles[0].coscheduling.default_timeout.value, 30000);
  EXPECT_EQ(cfg->profiles[0].coscheduling.default_match_policy, gang_match_policy::only_waiting);
  auto built = build_framework(*cfg, 0, plugin_registry::with_builtin());
  ASSERT_TRUE(built.has_value());
  EXPECT_EQ(built->fwk->options().percentage_of_nodes_to_score, 30);
}

TEST(SchedulerConfig, ErrorsNameTheFieldPath) {
  struct row {
    const char* name;
    const char* yaml;
    const char* where_contains;
  };
  const row rows[] = {
      {"threshold above 100",
       "profiles:\n  - pluginConfig:\n    - name: LoadAwareScheduling\n      args:\n        "
       "usageThresholds: {cpu: 101}\n",
       "profiles[0].pluginConfig[0].args.usageThresholds[cpu]"},
      {"unknown resource",
       "profiles:\n  - pluginConfig:\n    - name: LoadAwareScheduling\n      args:\n        "
       "resourceWeights: {gpus: 1}\n",
       "profiles[0].pluginConfig[0].args.resourceWeights[gpus]"},
      {"unknown field",
       "profiles:\n  - pluginConfig:\n    - name: NodeResourcesFit\n      args:\n        "
       "scoringStrategy: {tpye: x}\n",
       "profiles[0].pluginConfig[0].args.scoringStrategy.tpye"},
      {"bad weight",
       "profiles:\n  - pluginConfig:\n    - name: NodeResourcesFit\n      args:\n        "
       "scoringStrategy:\n          resources: [{name: cpu, weight: 0}]\n",
       "profiles[0].pluginConfig[0].args.scoringStrategy.resources[0].weight"},
      {"bad duration",
       "profiles:\n  - pluginConfig:\n    - name: Coscheduling\n      args:\n        "
       "defaultTimeout: soon\n",
       "profiles[0].pluginConfig[0].args.defaultTimeout"},
      {"not a bool",
       "profiles:\n  - pluginConfig:\n    - name: LoadAwareScheduling\n      args:\n        "
       "filterExpiredNodeMetrics: maybe\n",
       "profiles[0].pluginConfig[0].args.filterExpiredNodeMetrics"},
      {"ElasticQuotaArgs: unknown field",
       "profiles:\n  - pluginConfig:\n    - name: ElasticQuota\n      args:\n        "
       "delayEvict: 5m\n",
       "profiles[0].pluginConfig[0].args.delayEvict"},
      {"ElasticQuotaArgs: bad quantity",
       "profiles:\n  - pluginConfig:\n    - name: ElasticQuota\n      args:\n        "
       "defaultQuotaGroupMax: {cpu: lots}\n",
       "profiles[0].pluginConfig[0].args.defaultQuotaGroupMax"},
      {"ElasticQuotaArgs: zero interval",
       "profiles:\n  - pluginConfig:\n    - name: ElasticQuota\n      args:\n        "
       "revokePodInterval: 0s\n",
       "profiles[0].pluginConfig[0].args.revokePodInterval"},
      {"unknown extension point", "profiles:\n  - plugins:\n      prefilter: {}\n",
       "profiles[0].plugins.prefilter"},
      {"percentage out of range", "percentageOfNodesToScore: 120\n", "percentageOfNodesToScore"},
      {"yaml syntax", "profiles: [\n", "test.yaml:"},
  };
  for (const auto& r : rows) {
    SCOPED_TRACE(r.name);
    auto cfg = parse_scheduler_config(r.yaml, "test.yaml");
    ASSERT_FALSE(cfg.has_value());
    EXPECT_EQ(cfg.error().code, errc::invalid_input);
    EXPECT_NE(cfg.error().where.find(r.where_contains), std::string::npos)
        << cfg.error().describe();
  }
}

}  // namespace
}  // namespace colony::scheduler
