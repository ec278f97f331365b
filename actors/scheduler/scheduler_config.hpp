// KubeSchedulerConfiguration (kubescheduler.config.k8s.io/v1) as koord-scheduler reads it:
// profiles, plugins enabled/disabled per extension point, and pluginConfig args with
// Koordinator's arg names for LoadAwareScheduling, NodeResourcesFit, Coscheduling and
// DeviceShare. Parsed with yaml-cpp; every error names the field path (and line:column for
// YAML syntax errors). Also builds a framework (profile) from a parsed profile.
//
// Accepted input: the configuration document itself, or the ConfigMap that ships it
// (config/manager/scheduler-config.yaml: data.koord-scheduler-config).
// Args of plugins Colony does not implement here (ElasticQuota, Reservation, ...) are kept as
// YAML text in profile_config::other_plugin_args for their owners to parse.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "actors/quota/quota_tree.hpp"
#include "actors/scheduler/coscheduling.hpp"
#include "actors/scheduler/device_share.hpp"
#include "actors/scheduler/framework.hpp"
#include "actors/scheduler/load_aware.hpp"
#include "actors/scheduler/node_numa_resource.hpp"
#include "actors/scheduler/node_resources_fit.hpp"
#include "messages/result.hpp"

namespace colony::scheduler {

struct plugin_ref {
  std::string name;
  std::int64_t weight = 0;  // score only; 0 = 1 (framework default)
};

struct plugin_set {
  std::vector<plugin_ref> enabled;
  std::vector<std::string> disabled;  // "*" disables every default plugin of the point
};

struct profile_config {
  std::string scheduler_name = "default-scheduler";
  std::optional<std::int32_t> percentage_of_nodes_to_score;
  // Keyed by extension point: multiPoint, preEnqueue, queueSort, preFilter, filter, postFilter,
  // preScore, score, reserve, permit, preBind, bind, postBind.
  std::map<std::string, plugin_set> plugins;
  load_aware_args load_aware;
  node_resources_fit_args node_resources_fit;
  coscheduling_args coscheduling;
  device_share_args device_share;
  node_numa_resource_args node_numa_resource;
  // ElasticQuotaArgs when the profile's pluginConfig has them; none: the host's (Koordinator's
  // defaults unless it says otherwise).
  std::optional<quota::elastic_quota_args> elastic_quota;
  std::map<std::string, std::string> other_plugin_args;  // plugin name -> args as YAML text
};

struct scheduler_config {
  // Default: 0 = adaptive (KubeSchedulerConfiguration.percentageOfNodesToScore).
  std::int32_t percentage_of_nodes_to_score = 0;
  // Default: 1 (podInitialBackoffSeconds).
  std::int64_t pod_initial_backoff_seconds = 1;
  // Default: 10 (podMaxBackoffSeconds).
  std::int64_t pod_max_backoff_seconds = 10;
  std::vector<profile_config> profiles;
};

// Parses and validates. `source` names the input in error locations ("file.yaml").
[[nodiscard]] result<scheduler_config> parse_scheduler_config(std::string_view yaml,
                                                              std::string_view source = "config");

// Koordinator's shipped configuration (config/manager/scheduler-config.yaml), as YAML text.
[[nodiscard]] std::string_view koord_scheduler_shipped_config();

// Creates a plugin of a profile from its parsed args. ElasticQuota (actors/quota) registers its
// factory here; Reservation will too.
using plugin_factory = std::function<result<std::shared_ptr<plugin>>(const profile_config&)>;

class plugin_registry {
 public:
  // NodeResourcesFit, LoadAwareScheduling, Coscheduling, DeviceShare, NodeNUMAResource, and
  // Colony's GPUModelAffinity (gpu_model_affinity.hpp), FGDScore and BestFitScore (fgd.hpp).
  [[nodiscard]] static plugin_registry with_builtin();
  void add(std::string name, plugin_factory f) { factories_[std::move(name)] = std::move(f); }
  [[nodiscard]] const plugin_factory* find(std::string_view name) const;

 private:
  std::map<std::string, plugin_factory, std::less<>> factories_;
};

// kube-scheduler's default plugins, restricted to those Colony implements: NodeResourcesFit on
// filter and score (weight 1). Defaults are merged with the profile as kube does.
struct built_profile {
  std::unique_ptr<framework> fwk;
  // Plugins the profile names that Colony does not implement (skipped), sorted.
  std::vector<std::string> skipped_plugins;
};

[[nodiscard]] result<built_profile> build_framework(const scheduler_config& cfg,
                                                    std::size_t profile_index,
                                                    const plugin_registry& registry,
                                                    std::uint64_t seed = 0);

}  // namespace colony::scheduler
