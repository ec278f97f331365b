// scheduler_config.hpp
#include "actors/scheduler/scheduler_config.hpp"

#include <algorithm>
#include <set>
#include <tuple>

#include <yaml-cpp/yaml.h>
#include <nlohmann/json.hpp>

#include "actors/quota/quota_resources.hpp"
#include "actors/scheduler/elastic_quota.hpp"
#include "actors/scheduler/fgd.hpp"
#include "actors/scheduler/gpu_model_affinity.hpp"

namespace colony::scheduler {

namespace {

using ynode = YAML::Node;

struct ctx {
  std::string source;
  [[nodiscard]] std::string at(const std::string& path, const ynode& n) const {
    auto m = n.Mark();
    std::string s = source;
    if (!m.is_null()) s += ":" + std::to_string(m.line + 1) + ":" + std::to_string(m.column + 1);
    return s + ": " + path;
  }
  [[nodiscard]] tl::unexpected<error> bad(const std::string& path, const ynode& n,
                                          std::string msg) const {
    return fail(errc::invalid_input, std::move(msg), at(path, n));
  }
};

template <class T>
result<T> scalar(const ctx& c, const ynode& n, const std::string& path, std::string_view what) {
  if (!n.IsScalar()) return c.bad(path, n, "expected " + std::string(what));
  try {
    return n.as<T>();
  } catch (const YAML::Exception&) {
    return c.bad(path, n, "expected " + std::string(what) + ", got \"" + n.Scalar() + "\"");
  }
}

result<void> check_keys(const ctx& c, const ynode& n, const std::string& path,
                        std::initializer_list<std::string_view> allowed) {
  if (!n.IsMap()) return c.bad(path, n, "expected a mapping");
  for (const auto& kv : n) {
    auto k = kv.first.as<std::string>();
    if (std::find(allowed.begin(), allowed.end(), k) == allowed.end())
      return c.bad(path + "." + k, kv.first, "unknown field \"" + k + "\"");
  }
  return {};
}

result<resource_map> resource_map_of(const ctx& c, const ynode& n, const std::string& path) {
  resource_map m;
  if (n.IsNull()) return m;
  if (!n.IsMap()) return c.bad(path, n, "expected a mapping of resource name to integer");
  for (const auto& kv : n) {
    auto k = kv.first.as<std::string>();
    auto r = parse_resource_name(k);
    if (!r) return c.bad(path + "[" + k + "]", kv.first, "unsupported resource name \"" + k + "\"");
    auto v = scalar<std::int64_t>(c, kv.second, path + "[" + k + "]", "an integer");
    if (!v) return tl::unexpected(v.error());
    m[*r] = *v;
  }
  return m;
}

result<duration_ms> duration_of(const ctx& c, const ynode& n, const std::string& path) {
  auto s = scalar<std::string>(c, n, path, "a duration");
  if (!s) return tl::unexpected(s.error());
  auto d = parse_go_duration(*s);
  if (!d) return c.bad(path, n, "invalid duration \"" + *s + "\"");
  return *d;
}

result<aggregation_type> agg_type_of(const ctx& c, const ynode& n, const std::string& path) {
  auto s = scalar<std::string>(c, n, path, "an aggregation type");
  if (!s) return tl::unexpected(s.error());
  auto t = parse_aggregation_type(*s);
  if (!t)
    return c.bad(path, n, "unknown aggregation type \"" + *s + "\" (avg, p50, p90, p95, p99)");
  return *t;
}

#define COLONY_TRY(var, expr) \
  auto var = (expr);          \
  if (!var) return tl::unexpected(std::move(var).error())

result<load_aware_args> load_aware_of(const ctx& c, const ynode& n, const std::string& path) {
  auto a = load_aware_args::unset();
  if (n.IsNull()) {
    a.apply_defaults();
    return a;
  }
  if (auto r = check_keys(
          c, n, path,
          {"apiVersion", "kind", "filterExpiredNodeMetrics", "enableScheduleWhenNodeMetricsExpired",
           "nodeMetricExpirationSeconds", "resourceWeights", "dominantResourceWeight",
           "usageThresholds", "prodUsageThresholds", "prodUsageIncludeSys",
           "scoreAccordingProdUsage", "estimatedScalingFactors",
           "estimatedSecondsAfterPodScheduled", "estimatedSecondsAfterInitialized",
           "allowCustomizeEstimation", "aggregated", "supportedResources"});
      !r)
    return tl::unexpected(r.error());
  auto p = [&](const char* f) { return path + "." + f; };
  if (n["filterExpiredNodeMetrics"]) {
    COLONY_TRY(
        v, scalar<bool>(c, n["filterExpiredNodeMetrics"], p("filterExpiredNodeMetrics"), "a bool"));
    a.filter_expired_node_metrics = *v;
  }
  if (n["enableScheduleWhenNodeMetricsExpired"]) {
    COLONY_TRY(v, scalar<bool>(c, n["enableScheduleWhenNodeMetricsExpired"],
                               p("enableScheduleWhenNodeMetricsExpired"), "a bool"));
    a.enable_schedule_when_node_metrics_expired = *v;
  }
  if (n["nodeMetricExpirationSeconds"]) {
    COLONY_TRY(v, scalar<std::int64_t>(c, n["nodeMetricExpirationSeconds"],
                                       p("nodeMetricExpirationSeconds"), "an integer"));
    a.node_metric_expiration_seconds = *v;
  }
  if (n["resourceWeights"]) {
    COLONY_TRY(v, resource_map_of(c, n["resourceWeights"], p("resourceWeights")));
    a.resource_weights = *v;
  }
  if (n["dominantResourceWeight"]) {
    COLONY_TRY(v, scalar<std::int64_t>(c, n["dominantResourceWeight"], p("dominantResourceWeight"),
                                       "an integer"));
    a.dominant_resource_weight = *v;
  }
  if (n["usageThresholds"]) {
    COLONY_TRY(v, resource_map_of(c, n["usageThresholds"], p("usageThresholds")));
    a.usage_thresholds = *v;
  }
  if (n["prodUsageThresholds"]) {
    COLONY_TRY(v, resource_map_of(c, n["prodUsageThresholds"], p("prodUsageThresholds")));
    a.prod_usage_thresholds = *v;
  }
  if (n["prodUsageIncludeSys"]) {
    COLONY_TRY(v, scalar<bool>(c, n["prodUsageIncludeSys"], p("prodUsageIncludeSys"), "a bool"));
    a.prod_usage_include_sys = *v;
  }
  if (n["scoreAccordingProdUsage"]) {
    COLONY_TRY(
        v, scalar<bool>(c, n["scoreAccordingProdUsage"], p("scoreAccordingProdUsage"), "a bool"));
    a.score_according_prod_usage = *v;
  }
  if (n["estimatedScalingFactors"]) {
    COLONY_TRY(v, resource_map_of(c, n["estimatedScalingFactors"], p("estimatedScalingFactors")));
    a.estimated_scaling_factors = *v;
  }
  if (n["estimatedSecondsAfterPodScheduled"]) {
    COLONY_TRY(v, scalar<std::int64_t>(c, n["estimatedSecondsAfterPodScheduled"],
                                       p("estimatedSecondsAfterPodScheduled"), "an integer"));
    a.estimated_seconds_after_pod_scheduled = *v;
  }
  if (n["estimatedSecondsAfterInitialized"]) {
    COLONY_TRY(v, scalar<std::int64_t>(c, n["estimatedSecondsAfterInitialized"],
                                       p("estimatedSecondsAfterInitialized"), "an integer"));
    a.estimated_seconds_after_initialized = *v;
  }
  if (n["allowCustomizeEstimation"]) {
    COLONY_TRY(
        v, scalar<bool>(c, n["allowCustomizeEstimation"], p("allowCustomizeEstimation"), "a bool"));
    a.allow_customize_estimation = *v;
  }
  if (const auto agg = n["aggregated"]; agg && !agg.IsNull()) {
    const std::string ap = p("aggregated");
    if (auto r = check_keys(c, agg, ap,
                            {"usageThresholds", "usageAggregationType", "usageAggregatedDuration",
                             "scoreAggregationType", "scoreAggregatedDuration"});
        !r)
      return tl::unexpected(r.error());
    load_aware_aggregated_args g;
    if (agg["usageThresholds"]) {
      COLONY_TRY(v, resource_map_of(c, agg["usageThresholds"], ap + ".usageThresholds"));
      g.usage_thresholds = *v;
    }
    if (agg["usageAggregationType"]) {
      COLONY_TRY(v, agg_type_of(c, agg["usageAggregationType"], ap + ".usageAggregationType"));
      g.usage_aggregation_type = *v;
    }
    if (agg["usageAggregatedDuration"]) {
      COLONY_TRY(v,
                 duration_of(c, agg["usageAggregatedDuration"], ap + ".usageAggregatedDuration"));
      g.usage_aggregated_duration = *v;
    }
    if (agg["scoreAggregationType"]) {
      COLONY_TRY(v, agg_type_of(c, agg["scoreAggregationType"], ap + ".scoreAggregationType"));
      g.score_aggregation_type = *v;
    }
    if (agg["scoreAggregatedDuration"]) {
      COLONY_TRY(v,
                 duration_of(c, agg["scoreAggregatedDuration"], ap + ".scoreAggregatedDuration"));
      g.score_aggregated_duration = *v;
    }
    a.aggregated = g;
  }
  if (const auto sr = n["supportedResources"]; sr && !sr.IsNull()) {
    if (!sr.IsSequence())
      return c.bad(p("supportedResources"), sr, "expected a list of resource names");
    for (std::size_t i = 0; i < sr.size(); ++i) {
      auto ip = p("supportedResources") + "[" + std::to_string(i) + "]";
      COLONY_TRY(s, scalar<std::string>(c, sr[i], ip, "a resource name"));
      auto r = parse_resource_name(*s);
      if (!r) return c.bad(ip, sr[i], "unsupported resource name \"" + *s + "\"");
      a.supported_resources.push_back(*r);
    }
  }
  a.apply_defaults();
  if (auto r = validate(a, path); !r) {
    auto e = r.error();
    return fail(e.code, e.message, c.source + ": " + e.where);
  }
  return a;
}

result<scoring_strategy_type> strategy_of(const ctx& c, const ynode& n, const std::string& path) {
  COLONY_TRY(s, scalar<std::string>(c, n, path, "a scoring strategy type"));
  if (*s == "LeastAllocated") return scoring_strategy_type::least_allocated;
  if (*s == "MostAllocated") return scoring_strategy_type::most_allocated;
  if (*s == "RequestedToCapacityRatio")
    return c.bad(path, n, "scoring strategy RequestedToCapacityRatio is not supported by Colony");
  return c.bad(path, n, "unknown scoring strategy \"" + *s + "\"");
}

// scoringStrategy's type and resources (NodeResourcesFit, NodeNUMAResource).
result<bool> scoring_of(const ctx& c, const ynode& ss, const std::string& sp,
                        scoring_strategy_type& type, std::vector<resource_spec>& resources) {
  if (ss["type"]) {
    COLONY_TRY(t, strategy_of(c, ss["type"], sp + ".type"));
    type = *t;
  }
  if (const auto res = ss["resources"]; res && !res.IsNull()) {
    if (!res.IsSequence()) return c.bad(sp + ".resources", res, "expected a list");
    resources.clear();
    for (std::size_t i = 0; i < res.size(); ++i) {
      const std::string ip = sp + ".resources[" + std::to_string(i) + "]";
      if (auto r = check_keys(c, res[i], ip, {"name", "weight"}); !r)
        return tl::unexpected(r.error());
      COLONY_TRY(name, scalar<std::string>(c, res[i]["name"], ip + ".name", "a resource name"));
      auto rn = parse_resource_name(*name);
      if (!rn)
        return c.bad(ip + ".name", res[i]["name"], "unsupported resource name \"" + *name + "\"");
      std::int64_t w = 1;
      if (res[i]["weight"]) {
        COLONY_TRY(wv, scalar<std::int64_t>(c, res[i]["weight"], ip + ".weight", "an integer"));
        w = *wv;
      }
      resources.push_back({*rn, w});
    }
  }
  return true;
}

result<node_resources_fit_args> fit_of(const ctx& c, const ynode& n, const std::string& path) {
  node_resources_fit_args a;
  if (n.IsNull()) return a;
  if (auto r = check_keys(
          c, n, path,
          {"apiVersion", "kind", "scoringStrategy", "ignoredResources", "ignoredResourceGroups"});
      !r)
    return tl::unexpected(r.error());
  if (const auto ss = n["scoringStrategy"]; ss && !ss.IsNull()) {
    const std::string sp = path + ".scoringStrategy";
    if (auto r = check_keys(c, ss, sp, {"type", "resources", "requestedToCapacityRatio"}); !r)
      return tl::unexpected(r.error());
    COLONY_TRY(r, scoring_of(c, ss, sp, a.scoring_strategy, a.resources));
  }
  if (const auto ig = n["ignoredResources"]; ig && !ig.IsNull()) {
    if (!ig.IsSequence()) return c.bad(path + ".ignoredResources", ig, "expected a list");
    for (std::size_t i = 0; i < ig.size(); ++i) {
      const std::string ip = path + ".ignoredResources[" + std::to_string(i) + "]";
      COLONY_TRY(name, scalar<std::string>(c, ig[i], ip, "a resource name"));
      auto rn = parse_resource_name(*name);
      if (!rn) return c.bad(ip, ig[i], "unsupported resource name \"" + *name + "\"");
      a.ignored_resources.push_back(*rn);
    }
  }
  if (auto r = validate(a, path); !r) {
    auto e = r.error();
    return fail(e.code, e.message, c.source + ": " + e.where);
  }
  return a;
}

result<coscheduling_args> coscheduling_of(const ctx& c, const ynode& n, const std::string& path) {
  coscheduling_args a;
  if (n.IsNull()) return a;
  if (auto r = check_keys(
          c, n, path,
          {"apiVersion", "kind", "defaultTimeout", "controllerWorkers", "enablePreemption",
           "skipCheckScheduleCycle", "awareNetworkTopology", "defaultMatchPolicy"});
      !r)
    return tl::unexpected(r.error());
  if (n["defaultTimeout"]) {
    COLONY_TRY(v, duration_of(c, n["defaultTimeout"], path + ".defaultTimeout"));
    a.default_timeout = *v;
  }
  if (n["controllerWorkers"]) {
    COLONY_TRY(v, scalar<std::int32_t>(c, n["controllerWorkers"], path + ".controllerWorkers",
                                       "an integer"));
    a.controller_workers = *v;
  }
  if (n["enablePreemption"]) {
    COLONY_TRY(v, scalar<bool>(c, n["enablePreemption"], path + ".enablePreemption", "a bool"));
    a.enable_preemption = *v;
  }
  if (n["skipCheckScheduleCycle"]) {
    COLONY_TRY(v, scalar<bool>(c, n["skipCheckScheduleCycle"], path + ".skipCheckScheduleCycle",
                               "a bool"));
    a.skip_check_schedule_cycle = *v;
  }
  if (n["awareNetworkTopology"]) {
    COLONY_TRY(
        v, scalar<bool>(c, n["awareNetworkTopology"], path + ".awareNetworkTopology", "a bool"));
    a.aware_network_topology = *v;
  }
  if (n["defaultMatchPolicy"]) {
    COLONY_TRY(v, scalar<std::string>(c, n["defaultMatchPolicy"], path + ".defaultMatchPolicy",
                                      "a match policy"));
    auto mp = parse_gang_match_policy(*v);
    if (!mp)
      return c.bad(path + ".defaultMatchPolicy", n["defaultMatchPolicy"],
                   "unknown match policy \"" + *v + "\"");
    a.default_match_policy = *mp;
  }
  if (auto r = validate(a, path); !r) {
    auto e = r.error();
    return fail(e.code, e.message, c.source + ": " + e.where);
  }
  return a;
}

// NodeNUMAResourceArgs: defaultCPUBindPolicy, scoringStrategy, numaScoringStrategy.
result<node_numa_resource_args> node_numa_resource_of(const ctx& c, const ynode& n,
                                                      const std::string& path) {
  node_numa_resource_args a;
  if (n.IsNull()) return a;
  if (auto r = check_keys(
          c, n, path,
          {"apiVersion", "kind", "defaultCPUBindPolicy", "scoringStrategy", "numaScoringStrategy"});
      !r)
    return tl::unexpected(r.error());
  if (const auto d = n["defaultCPUBindPolicy"]; d && !d.IsNull()) {
    const std::string dp = path + ".defaultCPUBindPolicy";
    COLONY_TRY(v, scalar<std::string>(c, d, dp, "a CPU bind policy"));
    auto p = numa::parse_cpu_bind_policy(*v);
    // ValidateNodeNUMAResourceArgs accepts FullPCPUs, SpreadByPCPUs and ConstrainedBurst.
    if (!p || *p == numa::cpu_bind_policy::unrecognized || *p == numa::cpu_bind_policy::unset ||
        *p == numa::cpu_bind_policy::default_policy)
      return c.bad(dp, d, "unsupported CPU bind policy \"" + *v + "\"");
    a.default_cpu_bind_policy = *p;
  }
  for (const auto& [key, type, res] :
       {std::tuple{"scoringStrategy", &a.scoring_strategy, &a.scoring_resources},
        std::tuple{"numaScoringStrategy", &a.numa_scoring_strategy, &a.numa_scoring_resources}}) {
    if (const auto ss = n[key]; ss && !ss.IsNull()) {
      const std::string sp = path + "." + key;
      if (auto r = check_keys(c, ss, sp, {"type", "resources"}); !r)
        return tl::unexpected(r.error());
      COLONY_TRY(r, scoring_of(c, ss, sp, *type, *res));
    }
  }
  return a;
}

// ElasticQuotaArgs (pkg/scheduler/apis/config/v1/types.go; defaults in defaults.go
// SetDefaults_ElasticQuotaArgs, which quota::elastic_quota_args holds). A quota group max is a
// ResourceList of quantities.
result<quota::elastic_quota_args> elastic_quota_of(const ctx& c, const ynode& n,
                                                   const std::string& path) {
  quota::elastic_quota_args a;
  if (n.IsNull()) return a;
  if (auto r = check_keys(c, n, path,
                          {"apiVersion", "kind", "delayEvictTime", "revokePodInterval",
                           "defaultQuotaGroupMax", "systemQuotaGroupMax", "quotaGroupNamespace",
                           "monitorAllQuotas", "enableCheckParentQuota", "enableRuntimeQuota",
                           "enableMinQuotaScale", "disableDefaultQuotaPreemption",
                           "enableQueueHint", "quotaSnapshotUpdateInterval", "hookPlugins"});
      !r)
    return tl::unexpected(r.error());
  for (const auto& [key, field] :
       {std::pair{"delayEvictTime", &quota::elastic_quota_args::delay_evict_time_ms},
        std::pair{"revokePodInterval", &quota::elastic_quota_args::revoke_pod_interval_ms}}) {
    if (!n[key]) continue;
    COLONY_TRY(v, duration_of(c, n[key], path + "." + key));
    if (v->value <= 0) return c.bad(path + "." + key, n[key], "must be positive");
    a.*field = v->value;
  }
  for (const auto& [key, field] :
       {std::pair{"defaultQuotaGroupMax", &quota::elastic_quota_args::default_quota_group_max},
        std::pair{"systemQuotaGroupMax", &quota::elastic_quota_args::system_quota_group_max}}) {
    const auto m = n[key];
    if (!m || m.IsNull() || (m.IsMap() && m.size() == 0)) continue;  // empty: the default
    if (!m.IsMap()) return c.bad(path + "." + key, m, "expected a ResourceList");
    nlohmann::json list = nlohmann::json::object();
    for (const auto& kv : m) {
      COLONY_TRY(k, scalar<std::string>(c, kv.first, path + "." + key, "a resource name"));
      COLONY_TRY(
          q, scalar<std::string>(c, kv.second, path + "." + key + "[" + *k + "]", "a quantity"));
      list[*k] = *q;
    }
    auto parsed = quota::parse_resource_list_json(list.dump(), path + "." + key);
    if (!parsed) return c.bad(path + "." + key, m, parsed.error().message);
    if (!parsed->ignored.empty())
      return c.bad(path + "." + key, m,
                   "a resource Colony cannot book: " + parsed->ignored.front());
    a.*field = parsed->resources.values;
  }
  if (n["quotaGroupNamespace"]) {
    COLONY_TRY(v, scalar<std::string>(c, n["quotaGroupNamespace"], path + ".quotaGroupNamespace",
                                      "a namespace"));
    if (!v->empty()) a.quota_group_namespace = *v;
  }
  for (const auto& [key, field] :
       {std::pair{"monitorAllQuotas", &quota::elastic_quota_args::monitor_all_quotas},
        std::pair{"enableCheckParentQuota", &quota::elastic_quota_args::enable_check_parent_quota},
        std::pair{"enableRuntimeQuota", &quota::elastic_quota_args::enable_runtime_quota},
        std::pair{"enableMinQuotaScale", &quota::elastic_quota_args::enable_min_quota_scale},
        std::pair{"disableDefaultQuotaPreemption",
                  &quota::elastic_quota_args::disable_default_quota_preemption}}) {
    if (!n[key]) continue;
    COLONY_TRY(v, scalar<bool>(c, n[key], path + "." + key, "a bool"));
    a.*field = *v;
  }
  // enableQueueHint, quotaSnapshotUpdateInterval and hookPlugins shape how Koordinator's plugin
  // caches and extends itself, not what it decides: accepted, not used.
  return a;
}

result<device_share_args> device_share_of(const ctx& c, const ynode& n, const std::string& path) {
  device_share_args a;
  if (n.IsNull()) return a;
  // Fields Colony accepts but does not use yet (allocator choice, NUMA, GPU templates).
  if (auto r =
          check_keys(c, n, path,
                     {"apiVersion", "kind", "allocator", "scoringStrategy",
                      "disableDeviceNUMATopologyAlignment", "gpuSharedResourceTemplatesConfig"});
      !r)
    return tl::unexpected(r.error());
  if (const auto ss = n["scoringStrategy"]; ss && !ss.IsNull()) {
    const std::string sp = path + ".scoringStrategy";
    if (auto r = check_keys(c, ss, sp, {"type", "resources"}); !r) return tl::unexpected(r.error());
    if (ss["type"]) {
      COLONY_TRY(t, strategy_of(c, ss["type"], sp + ".type"));
      a.scoring_strategy = *t;
    }
    if (const auto res = ss["resources"]; res && !res.IsNull()) {
      if (!res.IsSequence()) return c.bad(sp + ".resources", res, "expected a list");
      a.resources.clear();
      for (std::size_t i = 0; i < res.size(); ++i) {
        const std::string ip = sp + ".resources[" + std::to_string(i) + "]";
        if (auto r = check_keys(c, res[i], ip, {"name", "weight"}); !r)
          return tl::unexpected(r.error());
        COLONY_TRY(name, scalar<std::string>(c, res[i]["name"], ip + ".name", "a resource name"));
        auto rn = parse_device_resource(*name);
        if (!rn)
          return c.bad(ip + ".name", res[i]["name"],
                       "unsupported device resource \"" + *name + "\"");
        std::int64_t w = 1;
        if (res[i]["weight"]) {
          COLONY_TRY(wv, scalar<std::int64_t>(c, res[i]["weight"], ip + ".weight", "an integer"));
          w = *wv;
        }
        a.resources.push_back({*rn, w});
      }
    }
  }
  if (auto r = validate(a, path); !r) {
    auto e = r.error();
    return fail(e.code, e.message, c.source + ": " + e.where);
  }
  return a;
}

constexpr std::array<std::string_view, 13> extension_points{
    "multiPoint", "preEnqueue", "queueSort", "preFilter", "filter", "postFilter", "preScore",
    "score",      "reserve",    "permit",    "preBind",   "bind",   "postBind"};

result<plugin_set> plugin_set_of(const ctx& c, const ynode& n, const std::string& path) {
  plugin_set s;
  if (n.IsNull()) return s;
  if (auto r = check_keys(c, n, path, {"enabled", "disabled"}); !r)
    return tl::unexpected(r.error());
  auto list = [&](const char* which, auto&& add) -> result<void> {
    const auto l = n[which];
    if (!l || l.IsNull()) return {};
    if (!l.IsSequence()) return c.bad(path + "." + which, l, "expected a list of plugins");
    for (std::size_t i = 0; i < l.size(); ++i) {
      const std::string ip = path + "." + which + "[" + std::to_string(i) + "]";
      if (auto r = check_keys(c, l[i], ip, {"name", "weight"}); !r)
        return tl::unexpected(r.error());
      COLONY_TRY(name, scalar<std::string>(c, l[i]["name"], ip + ".name", "a plugin name"));
      std::int64_t w = 0;
      if (l[i]["weight"]) {
        COLONY_TRY(wv, scalar<std::int64_t>(c, l[i]["weight"], ip + ".weight", "an integer"));
        if (*wv < 0) return c.bad(ip + ".weight", l[i]["weight"], "weight must not be negative");
        w = *wv;
      }
      add(*name, w);
    }
    return {};
  };
  if (auto r = list("enabled",
                    [&](const std::string& nm, std::int64_t w) {
                      s.enabled.push_back({nm, w});
                    });
      !r)
    return tl::unexpected(r.error());
  if (auto r =
          list("disabled", [&](const std::string& nm, std::int64_t) { s.disabled.push_back(nm); });
      !r)
    return tl::unexpected(r.error());
  return s;
}

result<profile_config> profile_of(const ctx& c, const ynode& n, const std::string& path) {
  profile_config pc;
  pc.load_aware = load_aware_args{};
  if (auto r = check_keys(c, n, path,
                          {"schedulerName", "percentageOfNodesToScore", "plugins", "pluginConfig"});
      !r)
    return tl::unexpected(r.error());
  if (n["schedulerName"]) {
    COLONY_TRY(v, scalar<std::string>(c, n["schedulerName"], path + ".schedulerName", "a name"));
    pc.scheduler_name = *v;
  }
  if (n["percentageOfNodesToScore"]) {
    COLONY_TRY(v, scalar<std::int32_t>(c, n["percentageOfNodesToScore"],
                                       path + ".percentageOfNodesToScore", "an integer"));
    if (*v < 0 || *v > 100)
      return c.bad(path + ".percentageOfNodesToScore", n["percentageOfNodesToScore"],
                   "percentageOfNodesToScore must be in [0, 100]");
    pc.percentage_of_nodes_to_score = *v;
  }
  if (const auto pl = n["plugins"]; pl && !pl.IsNull()) {
    if (!pl.IsMap()) return c.bad(path + ".plugins", pl, "expected a mapping of extension points");
    for (const auto& kv : pl) {
      auto point = kv.first.as<std::string>();
      if (std::find(extension_points.begin(), extension_points.end(), point) ==
          extension_points.end())
        return c.bad(path + ".plugins." + point, kv.first,
                     "unknown extension point \"" + point + "\"");
      COLONY_TRY(s, plugin_set_of(c, kv.second, path + ".plugins." + point));
      pc.plugins[point] = std::move(*s);
    }
  }
  if (const auto cfgs = n["pluginConfig"]; cfgs && !cfgs.IsNull()) {
    if (!cfgs.IsSequence()) return c.bad(path + ".pluginConfig", cfgs, "expected a list");
    std::set<std::string> seen;
    for (std::size_t i = 0; i < cfgs.size(); ++i) {
      const std::string ip = path + ".pluginConfig[" + std::to_string(i) + "]";
      if (auto r = check_keys(c, cfgs[i], ip, {"name", "args"}); !r)
        return tl::unexpected(r.error());
      COLONY_TRY(name, scalar<std::string>(c, cfgs[i]["name"], ip + ".name", "a plugin name"));
      if (!seen.insert(*name).second)
        return c.bad(ip + ".name", cfgs[i]["name"], "repeated config for plugin " + *name);
      const ynode args = cfgs[i]["args"] ? cfgs[i]["args"] : ynode{};
      const std::string ap = ip + ".args";
      if (*name == load_aware_scheduling::plugin_name) {
        COLONY_TRY(a, load_aware_of(c, args, ap));
        pc.load_aware = std::move(*a);
      } else if (*name == node_resources_fit::plugin_name) {
        COLONY_TRY(a, fit_of(c, args, ap));
        pc.node_resources_fit = std::move(*a);
      } else if (*name == coscheduling::plugin_name) {
        COLONY_TRY(a, coscheduling_of(c, args, ap));
        pc.coscheduling = *a;
      } else if (*name == device_share::plugin_name) {
        COLONY_TRY(a, device_share_of(c, args, ap));
        pc.device_share = std::move(*a);
      } else if (*name == node_numa_resource::plugin_name) {
        COLONY_TRY(a, node_numa_resource_of(c, args, ap));
        pc.node_numa_resource = std::move(*a);
      } else if (*name == elastic_quota::plugin_name) {
        COLONY_TRY(a, elastic_quota_of(c, args, ap));
        pc.elastic_quota = std::move(*a);
      } else {
        YAML::Emitter out;
        out << args;
        pc.other_plugin_args[*name] = out.c_str();
      }
    }
  }
  return pc;
}

result<scheduler_config> config_of(const ctx& c, const ynode& root) {
  scheduler_config cfg;
  if (!root.IsMap()) return c.bad("", root, "expected a KubeSchedulerConfiguration mapping");
  // The ConfigMap Koordinator ships wraps the configuration in data.koord-scheduler-config.
  if (root["kind"] && root["kind"].IsScalar() && root["kind"].Scalar() == "ConfigMap") {
    const auto data = root["data"];
    if (!data || !data["koord-scheduler-config"])
      return c.bad("data.koord-scheduler-config", root, "ConfigMap has no koord-scheduler-config");
    COLONY_TRY(text, scalar<std::string>(c, data["koord-scheduler-config"],
                                         "data.koord-scheduler-config", "a string"));
    ynode inner;
    try {
      inner = YAML::Load(*text);
    } catch (const YAML::Exception& e) {
      return fail(errc::invalid_input, e.msg,
                  c.source + ": data.koord-scheduler-config:" + std::to_string(e.mark.line + 1) +
                      ":" + std::to_string(e.mark.column + 1));
    }
    ctx ic{c.source + "#data.koord-scheduler-config"};
    return config_of(ic, inner);
  }
  if (root["kind"]) {
    COLONY_TRY(kind, scalar<std::string>(c, root["kind"], "kind", "a kind"));
    if (*kind != "KubeSchedulerConfiguration")
      return c.bad("kind", root["kind"], "expected kind KubeSchedulerConfiguration, got " + *kind);
  }
  if (root["percentageOfNodesToScore"]) {
    COLONY_TRY(v, scalar<std::int32_t>(c, root["percentageOfNodesToScore"],
                                       "percentageOfNodesToScore", "an integer"));
    if (*v < 0 || *v > 100)
      return c.bad("percentageOfNodesToScore", root["percentageOfNodesToScore"],
                   "percentageOfNodesToScore must be in [0, 100]");
    cfg.percentage_of_nodes_to_score = *v;
  }
  if (root["podInitialBackoffSeconds"]) {
    COLONY_TRY(v, scalar<std::int64_t>(c, root["podInitialBackoffSeconds"],
                                       "podInitialBackoffSeconds", "an integer"));
    if (*v <= 0)
      return c.bad("podInitialBackoffSeconds", root["podInitialBackoffSeconds"],
                   "must be greater than 0");
    cfg.pod_initial_backoff_seconds = *v;
  }
  if (root["podMaxBackoffSeconds"]) {
    COLONY_TRY(v, scalar<std::int64_t>(c, root["podMaxBackoffSeconds"], "podMaxBackoffSeconds",
                                       "an integer"));
    if (*v < cfg.pod_initial_backoff_seconds)
      return c.bad("podMaxBackoffSeconds", root["podMaxBackoffSeconds"],
                   "must be greater than or equal to podInitialBackoffSeconds");
    cfg.pod_max_backoff_seconds = *v;
  }
  if (const auto profiles = root["profiles"]; profiles && !profiles.IsNull()) {
    if (!profiles.IsSequence()) return c.bad("profiles", profiles, "expected a list");
    std::set<std::string> names;
    for (std::size_t i = 0; i < profiles.size(); ++i) {
      const std::string ip = "profiles[" + std::to_string(i) + "]";
      COLONY_TRY(p, profile_of(c, profiles[i], ip));
      if (!names.insert(p->scheduler_name).second)
        return c.bad(ip + ".schedulerName", profiles[i], "duplicate profile " + p->scheduler_name);
      cfg.profiles.push_back(std::move(*p));
    }
  }
  if (cfg.profiles.empty()) cfg.profiles.emplace_back();  // kube defaults one profile
  return cfg;
}

}  // namespace

result<scheduler_config> parse_scheduler_config(std::string_view yaml, std::string_view source) {
  ctx c{std::string(source)};
  ynode root;
  try {
    root = YAML::Load(std::string(yaml));
  } catch (const YAML::Exception& e) {
    return fail(
        errc::invalid_input, e.msg,
        c.source + ":" + std::to_string(e.mark.line + 1) + ":" + std::to_string(e.mark.column + 1));
  }
  try {
    return config_of(c, root);
  } catch (const YAML::Exception& e) {  // defensive: a conversion we did not anticipate
    return fail(
        errc::invalid_input, e.msg,
        c.source + ":" + std::to_string(e.mark.line + 1) + ":" + std::to_string(e.mark.column + 1));
  }
}

std::string_view koord_scheduler_shipped_config() {
  // config/manager/scheduler-config.yaml (the KubeSchedulerConfiguration inside the ConfigMap).
  return R"(apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
  - pluginConfig:
    - name: NodeResourcesFit
      args:
        apiVersion: kubescheduler.config.k8s.io/v1
        kind: NodeResourcesFitArgs
        scoringStrategy:
          type: LeastAllocated
          resources:
            - name: cpu
              weight: 1
            - name: memory
              weight: 1
            - name: "kubernetes.io/batch-cpu"
              weight: 1
            - name: "kubernetes.io/batch-memory"
              weight: 1
    - name: LoadAwareScheduling
      args:
        apiVersion: kubescheduler.config.k8s.io/v1
        kind: LoadAwareSchedulingArgs
        filterExpiredNodeMetrics: false
        nodeMetricExpirationSeconds: 300
        resourceWeights:
          cpu: 1
          memory: 1
        usageThresholds:
          cpu: 0
          memory: 0
        estimatedScalingFactors:
          cpu: 85
          memory: 70
    - name: ElasticQuota
      args:
        apiVersion: kubescheduler.config.k8s.io/v1
        kind: ElasticQuotaArgs
        quotaGroupNamespace: koordinator-system
    plugins:
      preEnqueue:
        enabled:
          - name: Coscheduling
      queueSort:
        disabled:
          - name: "*"
        enabled:
          - name: PrioritySort
      preFilter:
        enabled:
          - name: SchedulingHint
          - name: Reservation
          - name: NodeNUMAResource
          - name: DeviceShare
          - name: Coscheduling
          - name: ElasticQuota
      filter:
        enabled:
          - name: LoadAwareScheduling
          - name: NodeNUMAResource
          - name: DeviceShare
          - name: Reservation
      postFilter:
        disabled:
          - name: "*"
        enabled:
          - name: Reservation
          - name: Coscheduling
          - name: ElasticQuota
          - name: DefaultPreemption
      preScore:
        enabled:
          - name: Reservation
          - name: Coscheduling
      score:
        enabled:
          - name: LoadAwareScheduling
            weight: 1
          - name: NodeNUMAResource
            weight: 1
          - name: DeviceShare
            weight: 1
          - name: Reservation
            weight: 5000
          - name: Coscheduling
            weight: 1
      reserve:
        enabled:
          - name: LoadAwareScheduling
          - name: NodeNUMAResource
          - name: DeviceShare
          - name: Reservation
          - name: Coscheduling
          - name: ElasticQuota
      permit:
        enabled:
          - name: Coscheduling
      preBind:
        enabled:
          - name: NodeNUMAResource
          - name: DeviceShare
          - name: Reservation
          - name: Coscheduling
          - name: DefaultPreBind
      bind:
        disabled:
          - name: "*"
        enabled:
          - name: Reservation
          - name: DefaultBinder
      postBind:
        enabled:
          - name: Coscheduling
    schedulerName: koord-scheduler
)";
}

plugin_registry plugin_registry::with_builtin() {
  plugin_registry r;
  r.add(std::string(node_resources_fit::plugin_name),
        [](const profile_config& p) -> result<std::shared_ptr<plugin>> {
          return std::make_shared<node_resources_fit>(p.node_resources_fit);
        });
  r.add(std::string(load_aware_scheduling::plugin_name),
        [](const profile_config& p) -> result<std::shared_ptr<plugin>> {
          return std::make_shared<load_aware_scheduling>(p.load_aware);
        });
  r.add(std::string(coscheduling::plugin_name),
        [](const profile_config& p) -> result<std::shared_ptr<plugin>> {
          return std::make_shared<coscheduling>(p.coscheduling);
        });
  r.add(std::string(device_share::plugin_name),
        [](const profile_config& p) -> result<std::shared_ptr<plugin>> {
          return std::make_shared<device_share>(p.device_share);
        });
  r.add(std::string(node_numa_resource::plugin_name),
        [](const profile_config& p) -> result<std::shared_ptr<plugin>> {
          return std::make_shared<node_numa_resource>(p.node_numa_resource);
        });
  // Colony's stand-in for a required node affinity on node.koordinator.sh/gpu-model (see
  // gpu_model_affinity.hpp); a profile may name it at filter (or multiPoint).
  // The FGD paper's policies (fgd.hpp): Colony's, not Koordinator's; a profile names them at
  // score and at reserve after DeviceShare.
  r.add(std::string(fgd_score_plugin::plugin_name),
        [](const profile_config& p) -> result<std::shared_ptr<plugin>> {
          fgd_args a;
          if (auto it = p.other_plugin_args.find(std::string(fgd_score_plugin::plugin_name));
              it != p.other_plugin_args.end()) {
            auto parsed = parse_fgd_args(it->second, "pluginConfig.FGDScore.args");
            if (!parsed) return tl::unexpected(parsed.error());
            a = std::move(*parsed);
          }
          return std::make_shared<fgd_score_plugin>(std::move(a));
        });
  r.add(std::string(best_fit_score_plugin::plugin_name),
        [](const profile_config&) -> result<std::shared_ptr<plugin>> {
          return std::make_shared<best_fit_score_plugin>();
        });
  r.add(std::string(gpu_model_affinity::plugin_name),
        [](const profile_config&) -> result<std::shared_ptr<plugin>> {
          return std::make_shared<gpu_model_affinity>();
        });
  return r;
}

const plugin_factory* plugin_registry::find(std::string_view name) const {
  auto it = factories_.find(name);
  return it == factories_.end() ? nullptr : &it->second;
}

namespace {

std::uint32_t point_bit(std::string_view point) {
  if (point == "preEnqueue") return ep_pre_enqueue;
  if (point == "preFilter") return ep_pre_filter;
  if (point == "filter") return ep_filter;
  if (point == "postFilter") return ep_post_filter;
  if (point == "score") return ep_score;
  if (point == "reserve") return ep_reserve;
  if (point == "permit") return ep_permit;
  return 0;  // queueSort, preScore, preBind, bind, postBind: not separate points in Colony
}

}  // namespace

result<built_profile> build_framework(const scheduler_config& cfg, std::size_t profile_index,
                                      const plugin_registry& registry, std::uint64_t seed) {
  if (profile_index >= cfg.profiles.size())
    return fail(errc::out_of_range, "no profile " + std::to_string(profile_index), "profiles");
  const profile_config& pc = cfg.profiles[profile_index];
  const std::string path = "profiles[" + std::to_string(profile_index) + "].plugins";

  // Ordered plugin list (first appearance) with enabled points and score weight. Defaults
  // first, as kube's mergePlugins keeps default plugins ahead of custom ones.
  struct slot {
    std::string name;
    std::uint32_t points = 0;
    std::int64_t weight = 1;
  };
  std::vector<slot> order;
  auto get = [&](const std::string& name) -> slot& {
    for (auto& s : order)
      if (s.name == name) return s;
    order.push_back({name, 0, 1});
    return order.back();
  };
  auto disabled = [&](std::string_view point, const std::string& name) {
    auto it = pc.plugins.find(std::string(point));
    if (it == pc.plugins.end()) return false;
    for (const auto& d : it->second.disabled)
      if (d == "*" || d == name) return true;
    return false;
  };
  const std::string fit(node_resources_fit::plugin_name);
  if (!disabled("multiPoint", fit)) {
    if (!disabled("filter", fit)) get(fit).points |= ep_filter;
    if (!disabled("score", fit)) get(fit).points |= ep_score;
  }
  // Canonical extension-point order (multiPoint first), so plugin order follows the profile's
  // PreEnqueue/PreFilter/Filter lists rather than the alphabetical order of point names.
  for (std::string_view point : extension_points) {
    auto found = pc.plugins.find(std::string(point));
    if (found == pc.plugins.end()) continue;
    for (const auto& e : found->second.enabled) {
      slot& s = get(e.name);
      s.points |= point == "multiPoint" ? ~0u : point_bit(point);
      if ((point == "score" || point == "multiPoint") && e.weight > 0) s.weight = e.weight;
    }
  }

  framework_options opts;
  opts.scheduler_name = pc.scheduler_name;
  opts.percentage_of_nodes_to_score =
      pc.percentage_of_nodes_to_score.value_or(cfg.percentage_of_nodes_to_score);
  opts.seed = seed;
  built_profile out;
  out.fwk = std::make_unique<framework>(opts);
  for (auto& s : order) {
    // LoadAwareScheduling's PreFilter only precomputes (incoming estimate, per-node cache); the
    // shipped profile does not list it under preFilter, Koordinator then estimates lazily. Colony
    // enables it with Filter/Score so the cache works; results are identical.
    if (s.name == load_aware_scheduling::plugin_name && (s.points & (ep_filter | ep_score)))
      s.points |= ep_pre_filter;
    const plugin_factory* f = registry.find(s.name);
    if (!f) {
      out.skipped_plugins.push_back(s.name);
      continue;
    }
    if (s.points == 0) continue;
    auto p = (*f)(pc);
    if (!p) {
      auto e = p.error();
      return fail(e.code, e.message, path + "." + s.name);
    }
    out.fwk->add(std::move(*p), s.weight, s.points);
  }
  std::sort(out.skipped_plugins.begin(), out.skipped_plugins.end());
  return out;
}

}  // namespace colony::scheduler
