// slo_controller_config.hpp: the koordinator-system/slo-controller-config ConfigMap
// (apis/configuration/slo_controller_config.go, pkg/util/sloconfig/, pkg/slo-controller/config/).
//
// Keys: colocation-config (typed, complete), resource-threshold-config, cpu-burst-config and
// system-config (typed cluster + node strategies), resource-qos-config, host-application-config,
// cpu-normalization-config, resource-amplification-config (validated, kept as canonical JSON for
// the components that consume them).
//
// Semantics (Koordinator's, per key): a missing ConfigMap or key means the defaults; a key that
// fails to parse or validate keeps the previously valid value of that key in force, or leaves the
// key unavailable if there was none (after a restart). Nothing throws. Pure; thread-safe.
//
// Validity = the controller's checks (IsColocationStrategyValid) plus the ConfigMap webhook's
// struct tags (`validate:"min=..,max=.."`), e.g. resourceDiffThreshold in (0, 1]. Colony is
// stricter than the controller in one place: unknown enum strings (cpuCalculatePolicy "foo", or
// "request" for CPU) are rejected instead of being silently treated as "usage". Cross-field rules
// (gtfield/ltfield) are checked when both fields are set. Not checked: overlapping nodeSelectors
// and duplicate names (webhook only).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "actors/slo_controller/colocation_strategy.hpp"
#include "messages/result.hpp"

namespace colony::slo_controller {

// ConfigMap data keys (apis/configuration/slo_controller_config.go).
inline constexpr std::string_view colocation_config_key = "colocation-config";
inline constexpr std::string_view resource_threshold_config_key = "resource-threshold-config";
inline constexpr std::string_view resource_qos_config_key = "resource-qos-config";
inline constexpr std::string_view cpu_burst_config_key = "cpu-burst-config";
inline constexpr std::string_view system_config_key = "system-config";
inline constexpr std::string_view host_application_config_key = "host-application-config";
inline constexpr std::string_view cpu_normalization_config_key = "cpu-normalization-config";
inline constexpr std::string_view resource_amplification_config_key =
    "resource-amplification-config";

// ResourceThresholdStrategy (apis/slo/v1alpha1/nodeslo_types.go); defaults from
// DefaultResourceThresholdStrategy (pkg/util/sloconfig/nodeslo_config.go).
struct resource_threshold_strategy {
  std::optional<bool> enable;                                  // Default: false
  std::optional<std::int64_t> cpu_suppress_threshold_percent;  // Default: 65, 0..100
  std::optional<std::int64_t> cpu_suppress_min_percent;        // Default: unset, 0..100
  std::optional<std::string> cpu_suppress_policy;              // Default: "cpuset" (or "cfsQuota")
  std::optional<std::int64_t> memory_evict_threshold_percent;  // Default: 70, 0..100, > lower
  std::optional<std::int64_t> memory_evict_lower_percent;      // Default: unset (threshold - 2)
  std::optional<std::int64_t> memory_allocatable_evict_threshold_percent;  // Default: unset, >= 0
  std::optional<std::int64_t> memory_allocatable_evict_lower_percent;      // Default: unset, >= 0
  std::optional<std::int64_t> cpu_evict_be_satisfaction_upper_percent;     // Default: unset, 0..100
  std::optional<std::int64_t> cpu_evict_be_satisfaction_lower_percent;     // Default: unset, 0..100
  std::optional<std::int64_t> cpu_evict_be_usage_threshold_percent;  // Default: unset (90), 0..100
  std::optional<std::int64_t> cpu_evict_time_window_seconds;         // Default: unset, > 0
  std::optional<std::int64_t> cpu_evict_threshold_percent;           // Default: unset, 0..100
  std::optional<std::int64_t> cpu_evict_lower_percent;               // Default: unset, 0..100
  std::optional<std::int64_t> cpu_allocatable_evict_threshold_percent;  // Default: unset, >= 0
  std::optional<std::int64_t> cpu_allocatable_evict_lower_percent;      // Default: unset, >= 0
  std::optional<std::string>
      cpu_evict_policy;  // Default: "evictByRealLimit" (or "evictByAllocatable")
  std::optional<std::int64_t> evict_enabled_priority_threshold;      // Default: unset, int32
  std::optional<std::int64_t> allocatable_evict_priority_threshold;  // Default: unset, 0..7999
  bool operator==(const resource_threshold_strategy&) const = default;
  [[nodiscard]] static resource_threshold_strategy defaults();
};

// CPUBurstStrategy; defaults from DefaultCPUBurstStrategy.
struct cpu_burst_strategy {
  std::optional<std::string> policy;  // Default: "none" (cpuBurstOnly, cfsQuotaBurstOnly, auto)
  std::optional<std::int64_t> cpu_burst_percent;               // Default: 1000, 1..10000
  std::optional<std::int64_t> cfs_quota_burst_percent;         // Default: 300, >= 100
  std::optional<std::int64_t> cfs_quota_burst_period_seconds;  // Default: -1, >= -1
  std::optional<std::int64_t> share_pool_threshold_percent;    // Default: 50, 0..100
  bool operator==(const cpu_burst_strategy&) const = default;
  [[nodiscard]] static cpu_burst_strategy defaults();
};

// SystemStrategy: kernel knobs, unset by default (DefaultSystemStrategy).
struct system_strategy {
  std::optional<std::int64_t> min_free_kbytes_factor;  // > 0
  std::optional<std::int64_t> watermark_scale_factor;  // 1..400
  std::optional<std::int64_t> memcg_reap_back_ground;  // 0..1
  std::optional<std::int64_t> sched_group_identity_enabled;
  std::optional<std::int64_t> sched_idle_saver_wmark;
  std::optional<std::int64_t> page_cache_limit_enabled;  // 0..1
  std::optional<std::string> total_network_bandwidth;    // a Quantity, Default: "0"
  bool operator==(const system_strategy&) const = default;
  [[nodiscard]] static system_strategy defaults();
};

// clusterStrategy + nodeStrategies[] (first match wins); node entries are stored merged over the
// cluster strategy, the cluster strategy over the defaults (nodeslo/resource_strategy.go).
template <class Strategy>
struct node_strategy {
  std::string name;
  label_selector node_selector;
  Strategy strategy;
  bool operator==(const node_strategy&) const = default;
};
template <class Strategy>
struct cluster_and_nodes {
  Strategy cluster = Strategy::defaults();
  std::vector<node_strategy<Strategy>> node_strategies;
  bool operator==(const cluster_and_nodes&) const = default;
  // The strategy for a node with these labels.
  [[nodiscard]] const Strategy& for_node(const node_labels& labels) const {
    for (const auto& n : node_strategies) {
      if (selector_matches(n.node_selector, labels)) return n.strategy;
    }
    return cluster;
  }
};
using resource_threshold_config = cluster_and_nodes<resource_threshold_strategy>;
using cpu_burst_config = cluster_and_nodes<cpu_burst_strategy>;
using system_config = cluster_and_nodes<system_strategy>;

// A key Colony validates but hands on as canonical JSON (sorted keys, no whitespace); "" =
// defaults.
struct json_config {
  std::string canonical_json;
  bool operator==(const json_config&) const = default;
};

// The ConfigMap: each key is nullopt when unavailable (never parsed successfully since start).
struct slo_controller_config {
  std::optional<colocation_config> colocation = colocation_config{};
  std::optional<resource_threshold_config> resource_threshold = resource_threshold_config{};
  std::optional<cpu_burst_config> cpu_burst = cpu_burst_config{};
  std::optional<system_config> system = system_config{};
  std::optional<json_config> resource_qos = json_config{};
  std::optional<json_config> host_application = json_config{};
  std::optional<json_config> cpu_normalization = json_config{};
  std::optional<json_config> resource_amplification = json_config{};
  bool operator==(const slo_controller_config&) const = default;
};

// Per-key parsers: `text` is the key's value (a JSON document); "" means the defaults. Errors name
// the ConfigMap key and the JSON path of the offending field, and quote the value, e.g.
// "colocation-config.cpuReclaimThresholdPercent: invalid value -5 (must be >= 0)". A malformed
// document, a wrong JSON type anywhere, or an invalid cluster strategy rejects the key. A node
// entry whose merged strategy is invalid is replaced by the cluster strategy (Koordinator's
// syncConfig, "node config invalid, use cluster config") and reported in `warnings`; so is an empty
// or invalid nodeSelector (the entry then never matches).
[[nodiscard]] result<colocation_config> parse_colocation_config(
    std::string_view text, std::vector<error>* warnings = nullptr);
[[nodiscard]] result<resource_threshold_config> parse_resource_threshold_config(
    std::string_view text, std::vector<error>* warnings = nullptr);
[[nodiscard]] result<cpu_burst_config> parse_cpu_burst_config(
    std::string_view text, std::vector<error>* warnings = nullptr);
[[nodiscard]] result<system_config> parse_system_config(std::string_view text,
                                                        std::vector<error>* warnings = nullptr);
[[nodiscard]] result<json_config> parse_resource_qos_config(std::string_view text,
                                                            std::vector<error>* warnings = nullptr);
[[nodiscard]] result<json_config> parse_host_application_config(
    std::string_view text, std::vector<error>* warnings = nullptr);
[[nodiscard]] result<json_config> parse_cpu_normalization_config(
    std::string_view text, std::vector<error>* warnings = nullptr);
[[nodiscard]] result<json_config> parse_resource_amplification_config(
    std::string_view text, std::vector<error>* warnings = nullptr);

struct config_update {
  slo_controller_config in_force;          // the config to use from now on
  std::vector<std::string> rejected_keys;  // keys whose new value was refused
  std::vector<colony::error> warnings;     // accepted with a fallback (invalid node entries)
  std::optional<colony::error> error;  // every rejected key, joined with "; " (first key's code)
};

// Applies a new ConfigMap to the config in force. `configmap_json` is the ConfigMap's `data` as a
// JSON object of strings ({"colocation-config": "{...}", ...}); values may also be JSON objects.
// An unparsable document, or a non-object, rejects the whole update (previous stays in force).
// `previous` = nullopt means "just started": a key that fails is unavailable.
[[nodiscard]] config_update update(const std::optional<slo_controller_config>& previous,
                                   std::string_view configmap_json);

// The ConfigMap was deleted: every key back to its defaults (syncConfig with configMap == nil).
[[nodiscard]] slo_controller_config deleted_config();

}  // namespace colony::slo_controller
