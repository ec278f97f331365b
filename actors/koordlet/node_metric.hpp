// NodeMetric reporting: a window of time-stamped usage samples (node, system, pods, host apps)
// and the builder of the NodeMetric status koordlet writes every reportIntervalSeconds.
//
// Koordinator: pkg/koordlet/statesinformer/impl/states_nodemetric.go (collectMetric,
// queryNodeMetric, metricsInColdStart), pkg/koordlet/metriccache/util.go (avg, percentile),
// apis/slo/v1alpha1/nodemetric_types.go.
//
// The caller appends samples (time is an argument, never read from a clock) and calls
// build_node_metric_status at report time. Ownership: sample_window owns its samples.
// Thread-safety: none; one koordlet actor owns one window.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "actors/koordlet/koordlet_types.hpp"

namespace colony::koordlet {

inline constexpr std::int64_t default_report_interval_seconds = 60;  // defaultReportIntervalSeconds
inline constexpr std::int64_t min_report_interval_seconds = 30;      // minReportIntervalSeconds
inline constexpr std::int64_t default_aggregate_duration_seconds =
    300;  // defaultAggregateDurationSeconds
inline constexpr std::int64_t min_aggregate_duration_seconds = 60;  // minAggregateDurationSeconds
inline constexpr double validate_time_range_ratio = 0.5;            // validateTimeRangeRatio

enum class node_memory_collect_policy : std::uint8_t {
  usage_without_page_cache,
  usage_with_hot_page_cache,
  usage_with_page_cache
};

// NodeMetric spec.metricCollectPolicy (defaults: nodemetric controller collect_policy.go).
struct node_metric_collect_policy {
  // Default: 300 s, floor 60 (aggregateDurationSeconds)
  std::optional<std::int64_t> aggregate_duration_seconds = default_aggregate_duration_seconds;
  // Default: 60 s, floor 30 (reportIntervalSeconds)
  std::optional<std::int64_t> report_interval_seconds = default_report_interval_seconds;
  // Default: [5m, 10m, 30m] (nodeAggregatePolicy.durations)
  std::vector<std::int64_t> aggregate_durations_seconds{300, 600, 1800};
  // Default: usageWithoutPageCache (nodeMemoryCollectPolicy); the caller picks the memory series.
  node_memory_collect_policy memory_policy = node_memory_collect_policy::usage_without_page_cache;
};

[[nodiscard]] std::int64_t effective_report_interval_seconds(
    const node_metric_collect_policy& p) noexcept;
[[nodiscard]] std::int64_t effective_aggregate_duration_seconds(
    const node_metric_collect_policy& p) noexcept;

// One sample: CPU in cores (float, as the metric cache stores it), memory in bytes.
struct usage_sample {
  event_time time{0};
  double cpu_cores = 0;
  double memory_bytes = 0;
};

// Samples of one series in time order (insertion keeps the order even if a sample is late).
class sample_window {
 public:
  void add_node(usage_sample s) { insert(node_, s); }
  void add_system(usage_sample s) { insert(system_, s); }
  void add_pod(std::string_view uid, usage_sample s);
  void add_host_app(std::string_view name, usage_sample s);

  // Node sample plus the derived system sample max(node - sum pods - sum host apps, 0) per field
  // (system_resource_collector.go). Pod and app values are those of the same collect tick.
  void add_node_and_system(usage_sample node, std::span<const usage_sample> pods,
                           std::span<const usage_sample> host_apps);

  // Drops samples older than `before` (keep the longest aggregate duration); forgets empty series.
  void trim(event_time before);
  // Drops pod and host-app samples older than `before` only. The builder averages those over the
  // aggregate duration alone, while node and system series must cover the longest aggregated
  // duration (30 min by default): a 1-s collector keeps 6x fewer pod samples this way.
  void trim_pods(event_time before);

  [[nodiscard]] std::span<const usage_sample> node() const { return node_; }
  [[nodiscard]] std::span<const usage_sample> system() const { return system_; }
  [[nodiscard]] std::span<const usage_sample> pod(std::string_view uid) const;
  [[nodiscard]] std::span<const usage_sample> host_app(std::string_view name) const;
  [[nodiscard]] std::size_t sample_count() const;

 private:
  static void insert(std::vector<usage_sample>& v, usage_sample s);
  std::vector<usage_sample> node_;
  std::vector<usage_sample> system_;
  std::map<std::string, std::vector<usage_sample>, std::less<>> pods_;
  std::map<std::string, std::vector<usage_sample>, std::less<>> apps_;
};

// Percentile of n values: sort ascending, index int(float32(n) x p) - 1, at least 0
// (fieldPercentileOfMetricList; float32 arithmetic kept on purpose). REQUIRES: !values.empty().
// Sorts `values` in place.
[[nodiscard]] double percentile_of(std::vector<double>& values, float p);

// ResourceMap with cpu (milli = int64(cores x 1000)) and memory (int64(bytes)).
struct resource_usage {
  std::int64_t cpu_milli = 0;
  std::int64_t memory_bytes = 0;
  bool operator==(const resource_usage&) const = default;
};

// One entry of aggregatedNodeUsages / aggregatedSystemUsages; an empty optional is an empty
// ResourceMap (no samples, or samples span < 50 % of the duration: cold start).
struct aggregated_usage {
  std::int64_t duration_seconds = 0;
  std::optional<resource_usage> avg, p50, p90, p95, p99;
};

struct pod_metric_info {
  std::string ns;
  std::string name;
  resource_usage pod_usage;
  priority_class priority = priority_class::none;  // class with default
  qos_class qos = qos_class::none;                 // QoS with default
};

struct host_app_metric_info {
  std::string name;
  resource_usage usage;
  priority_class priority = priority_class::none;
  qos_class qos = qos_class::none;
};

struct node_metric_info {
  std::optional<resource_usage> node_usage;  // average over the aggregate duration
  std::vector<aggregated_usage> aggregated_node_usages;
  std::optional<resource_usage> system_usage;
  std::vector<aggregated_usage> aggregated_system_usages;
};

struct node_metric_status {
  event_time update_time{0};
  node_metric_info node_metric;
  std::vector<pod_metric_info> pods_metric;           // sorted by namespace, then name
  std::vector<host_app_metric_info> host_app_metric;  // sorted by name
};

// collectMetric at time `now`. Pods without samples in the window are left out, as are host apps.
[[nodiscard]] node_metric_status build_node_metric_status(const sample_window& w,
                                                          std::span<const pod_info> pods,
                                                          std::span<const host_app_info> host_apps,
                                                          const node_metric_collect_policy& policy,
                                                          event_time now);

// When the next report is due after one written at `last` (syncNodeMetricWorker).
[[nodiscard]] event_time next_report_time(event_time last,
                                          const node_metric_collect_policy& p) noexcept;

}  // namespace colony::koordlet
