// LoadAwareScheduling: filter nodes whose estimated usage would exceed thresholds and prefer
// the least-used nodes, from NodeMetric reports plus estimates of pods the metric has not
// seen yet.
//
// What it defines: load_aware_args (Koordinator's LoadAwareSchedulingArgs, code defaults and
// the shipped profile), the default estimator (estimate_pod / estimate_node), the per-node
// assigned-pod summary (the podAssignCache "delta" rule) and the plugin.
//
// Koordinator: pkg/scheduler/plugins/loadaware/{load_aware.go, helper.go, pod_assign_cache.go,
// estimator/default_estimator.go}; args pkg/scheduler/apis/config/v1/{types.go, defaults.go};
// validation pkg/scheduler/apis/config/validation/validation_pluginargs.go.
//
// Thread-safety: a plugin instance keeps a per-node summary cache keyed by node position and
// node_info::generation; one cycle at a time.
#pragma once

#include <array>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "actors/scheduler/framework.hpp"

namespace colony::scheduler {

struct load_aware_aggregated_args {
  resource_map usage_thresholds;                           // Default: none
  std::optional<aggregation_type> usage_aggregation_type;  // Default: unset
  duration_ms usage_aggregated_duration{0};                // Default: 0 (longest reported)
  std::optional<aggregation_type> score_aggregation_type;  // Default: unset
  duration_ms score_aggregated_duration{0};                // Default: 0 (longest reported)
};

// LoadAwareSchedulingArgs after SetDefaults_LoadAwareSchedulingArgs (code defaults).
struct load_aware_args {
  // Default: true (defaults.go).
  bool filter_expired_node_metrics = true;
  // Default: false (defaults.go).
  bool enable_schedule_when_node_metrics_expired = false;
  // Default: 180 (defaults.go defaultNodeMetricExpirationSeconds).
  std::int64_t node_metric_expiration_seconds = 180;
  // Default: cpu 1, memory 1; only when empty and dominantResourceWeight == 0 (defaults.go).
  resource_map resource_weights{{resource_name::cpu, 1}, {resource_name::memory, 1}};
  // Default: 0 (types.go).
  std::int64_t dominant_resource_weight = 0;
  // Default: cpu 65, memory 95; only when empty (defaults.go defaultUsageThresholds).
  resource_map usage_thresholds{{resource_name::cpu, 65}, {resource_name::memory, 95}};
  // Default: none = prod filter disabled (types.go).
  resource_map prod_usage_thresholds;
  // Default: false (types.go).
  bool prod_usage_include_sys = false;
  // Default: false (types.go).
  bool score_according_prod_usage = false;
  // Default: cpu 85, memory 70; missing keys filled (defaults.go defaultEstimatedScalingFactors).
  resource_map estimated_scaling_factors{{resource_name::cpu, 85}, {resource_name::memory, 70}};
  // Default: unset (types.go).
  std::optional<std::int64_t> estimated_seconds_after_pod_scheduled;
  // Default: unset (types.go).
  std::optional<std::int64_t> estimated_seconds_after_initialized;
  // Default: false (types.go).
  bool allow_customize_estimation = false;
  // Default: unset (types.go).
  std::optional<load_aware_aggregated_args> aggregated;
  // Default: none (types.go supportedResources).
  std::vector<resource_name> supported_resources;

  // Args with every defaultable field empty, for a config parser to fill before
  // apply_defaults() (so "set but empty" and "unset" follow Koordinator's rules).
  [[nodiscard]] static load_aware_args unset();
  // SetDefaults_LoadAwareSchedulingArgs.
  void apply_defaults();
  // config/manager/scheduler-config.yaml: usageThresholds cpu 0 / memory 0 (filter disabled),
  // filterExpiredNodeMetrics false, nodeMetricExpirationSeconds 300, factors 85/70, weights 1/1.
  [[nodiscard]] static load_aware_args shipped_profile();
};

// ValidateLoadAwareSchedulingArgs; `path` prefixes the field names in errors.
[[nodiscard]] result<void> validate(const load_aware_args& a, const std::string& path);

// --- Estimator (estimator/default_estimator.go) --------------------------------------------

// Koordinator's defaults when a pod requests nothing of a resource: 250 milli-cpu, 200 Mi.
inline constexpr std::int64_t load_aware_default_milli_cpu = 250;
inline constexpr std::int64_t load_aware_default_memory = 200 * 1024 * 1024;

// EstimatePod: per scaling-factor key R (untranslated), from the pod's translated request or
// limit. With allow_customize, pod.custom_scaling_factors override per key.
[[nodiscard]] resource_map estimate_pod(const pod_info& pod, const resource_map& factors,
                                        bool allow_customize);
// EstimateNode: allocatable with node.koordinator.sh/raw-allocatable keys overriding it.
[[nodiscard]] resource_list estimate_node(const node_info& node);

// --- Plugin ---------------------------------------------------------------------------------

class load_aware_scheduling final : public plugin {
 public:
  static constexpr std::string_view plugin_name = "LoadAwareScheduling";
  // Values over the resource vector, indexed by position in resources() (the sorted names);
  // only the first resources().size() entries are used.
  using vec = std::array<std::int64_t, resource_name_count>;

  explicit load_aware_scheduling(load_aware_args args = {});

  [[nodiscard]] std::string_view name() const noexcept override { return plugin_name; }
  // Filter and Score read PreFilter's estimate and fill only the cache entry of the node they
  // are given (cache_ is sized in PreFilter).
  [[nodiscard]] bool parallel_safe() const noexcept override { return true; }
  [[nodiscard]] std::uint32_t points() const noexcept override {
    return ep_pre_filter | ep_filter | ep_score;
  }
  [[nodiscard]] const load_aware_args& args() const noexcept { return args_; }
  // The sorted resource vector (ResourceVectorizer).
  [[nodiscard]] const std::vector<resource_name>& resources() const noexcept { return names_; }

  status pre_filter(cycle_state& st, const pod_info& pod, std::span<const node_info> nodes,
                    event_time now) override;
  status filter(cycle_state& st, const pod_info& pod, const node_info& node,
                event_time now) override;
  std::int64_t score(cycle_state& st, const pod_info& pod, const node_info& node,
                     event_time now) override;
  void score_nodes(cycle_state& st, const pod_info& pod, std::span<const node_info> nodes,
                   std::span<const std::uint32_t> indices, std::span<std::int64_t> out,
                   event_time now) override;

  // Per-node summary of assigned pods against the node's NodeMetric (pod_assign_cache.go
  // nodeInfo): what the filter and score add to reported usage.
  struct node_summary {
    vec prod_usage{};
    vec node_delta{};
    vec prod_delta{};
    vec node_estimated{};
  };
  [[nodiscard]] node_summary summarize(const node_info& node) const;
  // Estimated usage of existing load (GetNodeMetricAndEstimatedOfExisting), before the
  // incoming pod. REQUIRES: node.metric.
  [[nodiscard]] vec estimated_existing(const node_info& node, const node_summary& s, bool prod_pod,
                                       std::optional<aggregation_type> agg_type,
                                       duration_ms agg_duration) const;
  [[nodiscard]] vec estimate_vec(const pod_info& pod) const;

 private:
  struct filter_profile {
    vec usage{};
    vec prod{};
    bool has_agg = false;
    vec agg{};
    std::optional<aggregation_type> agg_type;
    duration_ms agg_duration{0};
  };
  // Everything Filter and Score need from one node, computed once per node version: the
  // existing-load estimates of every path (plain/aggregated, prod), allocatable and the
  // node's threshold profile. Filter/Score then only add the incoming pod.
  struct cache_entry {
    const node_info* node = nullptr;
    std::uint64_t generation = 0;
    bool valid = false;
    bool has_metric = false;       // a NodeMetric exists
    bool has_node_metric = false;  // status.nodeMetric != nil
    bool has_update = false;       // status.updateTime set
    bool filter_prod_enabled = false;
    bool filter_is_agg = false;
    bool filter_disabled = false;
    std::int64_t update_ms = 0;
    std::unique_ptr<filter_profile> profile;  // only for nodes with custom thresholds
  };
  // An entry plus its values: [filter existing | score existing | prod existing | allocatable],
  // each resources().size() long, kept in one flat array per cache for locality.
  struct entry_view {
    const cache_entry* e;
    const std::int64_t* data;
  };
  struct incoming : cycle_data {
    std::uint64_t cycle = ~0ull;
    const pod_info* pod = nullptr;
    vec estimate{};
    bool prod = false;
  };

  [[nodiscard]] vec to_vec(const resource_map& m) const;
  [[nodiscard]] vec to_vec(const resource_list& l) const;
  [[nodiscard]] bool empty(const vec& v) const;
  [[nodiscard]] bool expired(const node_metric& m, event_time now) const;
  [[nodiscard]] const incoming& incoming_of(cycle_state& st, const pod_info& pod);
  [[nodiscard]] entry_view entry_for(const node_info& node);
  void fill_entry(const node_info& node, cache_entry& e, std::int64_t* data) const;
  [[nodiscard]] bool expired_at(const cache_entry& e, event_time now) const;
  [[nodiscard]] const filter_profile& profile_for(const node_info& node,
                                                  filter_profile& scratch) const;
  // The node score for used = existing + estimate over alloc (resource order).
  [[nodiscard]] std::int64_t score_sum(const std::int64_t* existing, const std::int64_t* estimate,
                                       const std::int64_t* alloc) const;
  [[nodiscard]] std::int64_t score_entry(const incoming& in, const node_info& node, event_time now);

  load_aware_args args_;
  std::vector<resource_name> names_;
  std::vector<std::pair<std::size_t, resource_name>> idx_;  // (position, name)
  vec scaling_factors_{};
  vec score_weights_{};
  bool score_disabled_ = false;
  filter_profile base_profile_;
  std::array<std::string, resource_name_count> usage_reason_;
  std::array<std::string, resource_name_count> agg_reason_;
  // Cache indexed by the node's position in the span of the current cycle (see pre_filter).
  const node_info* nodes_base_ = nullptr;
  std::size_t nodes_count_ = 0;
  std::vector<cache_entry> cache_;
  std::vector<std::int64_t> flat_;  // 4 * resources().size() values per cache entry
  cache_entry scratch_;             // for nodes outside the cycle's span
  std::array<std::int64_t, 4 * resource_name_count> scratch_data_{};
};

inline constexpr std::string_view err_reason_node_metric_expired = "node(s) nodeMetric expired";

}  // namespace colony::scheduler
