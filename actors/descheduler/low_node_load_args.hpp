// LowNodeLoadArgs (descheduler/v1alpha2, pkg/descheduler/apis/config/types_loadaware.go) with
// Koordinator's defaults (v1alpha2/defaults.go SetDefaults_LowNodeLoadArgs,
// SetDefaults_LowNodeLoadNodePools), the conversion that turns the top-level pool fields into the
// pool "__default_node_pool__" prepended to nodePools (v1alpha2/conversion_plugins.go), and the
// validation (validation/validation_loadaware.go). Plain values.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "actors/admission/label_selector.hpp"
#include "actors/descheduler/anomaly_detector.hpp"
#include "messages/result.hpp"

namespace colony::descheduler {

// Percent of capacity per resource name, 0..100.
using resource_thresholds = std::map<std::string, double, std::less<>>;
using weight_map = std::map<std::string, std::int64_t, std::less<>>;

inline constexpr std::string_view default_node_pool_name = "__default_node_pool__";

struct low_node_load_node_pool {
  std::string name;
  std::optional<admission::label_selector> node_selector;  // nullopt: every node
  bool use_deviation_thresholds = false;
  std::optional<resource_thresholds> low_thresholds, high_thresholds;
  std::optional<resource_thresholds> prod_low_thresholds, prod_high_thresholds;
  std::optional<weight_map> resource_weights;
  std::optional<anomaly_condition> anomaly;
};

struct pod_selector {
  std::string name;
  std::optional<admission::label_selector> selector;
};

struct low_node_load_args {
  bool paused = false;
  bool dry_run = false;
  // Act only when the number of low nodes is above it. Default: 0.
  std::int64_t number_of_nodes = 0;
  // Default: 180 (a NodeMetric older than this is skipped); nullopt after defaulting never.
  std::optional<std::int64_t> node_metric_expiration_seconds;
  std::vector<std::string> evictable_namespaces_include;
  std::vector<std::string> evictable_namespaces_exclude;
  std::vector<pod_selector> pod_selectors;
  // Default: true.
  std::optional<bool> node_fit;
  // Default: 5 min.
  std::optional<std::int64_t> detector_cache_timeout_ms;
  // The default pool's fields (top level); after convert_node_pools() they live in the pool.
  std::optional<admission::label_selector> node_selector;
  bool use_deviation_thresholds = false;
  std::optional<resource_thresholds> low_thresholds, high_thresholds;
  std::optional<resource_thresholds> prod_low_thresholds, prod_high_thresholds;
  std::optional<weight_map> resource_weights;
  std::optional<anomaly_condition> anomaly;
  std::vector<low_node_load_node_pool> node_pools;
};

// SetDefaults_LowNodeLoadArgs then the v1alpha2 conversion: every pool field set, the top-level
// pool prepended as "__default_node_pool__".
void set_defaults(low_node_load_args& a);
// ValidateLowLoadUtilizationArgs over defaulted args, plus Colony's bound of 100 on every
// percentage (Koordinator's thresholds are percentages of capacity; it does not reject more).
// The error names the field ("nodePools[0].lowThresholds[cpu]").
[[nodiscard]] result<void> validate(const low_node_load_args& a);

}  // namespace colony::descheduler
