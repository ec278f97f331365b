// colocation_strategy.hpp: Koordinator's ColocationStrategy
// (apis/configuration/slo_controller_config.go), its defaults
// (pkg/util/sloconfig/colocation_config.go DefaultColocationStrategy), its validity check
// (IsColocationStrategyValid), the JSON overlay merge (util.MergeCfg) and the choice of the
// strategy for one node (GetNodeColocationStrategy + UpdateColocationStrategyForNode).
//
// Every field is optional as in Go (pointer fields): a strategy is an overlay; "unset" means
// "inherit". A strategy merged over defaults() has every field set except mid_reclaim_mode and the
// batch caps. Pure value types and functions; thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "messages/names.hpp"
#include "messages/result.hpp"

namespace colony::slo_controller {

// CalculatePolicy. Koordinator stores any string; strings it does not know behave as "usage" in
// CalculateBatchResourceByPolicy. `other` keeps that behaviour for node annotations (never
// validated in Koordinator); the ConfigMap parser rejects it.
enum class calculate_policy : std::uint8_t { usage, request, max_usage_request, other };
[[nodiscard]] std::string_view to_string(calculate_policy p) noexcept;
[[nodiscard]] calculate_policy calculate_policy_from(std::string_view s) noexcept;

// MidReclaimMode (Koordinator type name): "static" or unset (dynamic). `other` = an unknown string
// (behaves as dynamic).
enum class reclaim_mode : std::uint8_t { static_mode, other };

// Label selector (metav1.LabelSelector) used by nodeConfigs / nodeStrategies.
struct label_selector_requirement {
  std::string key;
  std::string op;  // In, NotIn, Exists, DoesNotExist
  std::vector<std::string> values;
  bool operator==(const label_selector_requirement&) const = default;
};
struct label_selector {
  bool present = false;           // nodeSelector given at all
  bool has_match_labels = false;  // matchLabels key given (IsNodeColocationCfgValid)
  std::map<std::string, std::string> match_labels;  // sorted: deterministic
  std::vector<label_selector_requirement> match_expressions;
  bool operator==(const label_selector&) const = default;
};
using node_labels = std::map<std::string, std::string, std::less<>>;

// metav1.LabelSelectorAsSelector + Matches. An invalid selector (unknown operator, In/NotIn with no
// values, Exists with values) matches nothing, as Koordinator skips configs whose selector fails to
// parse.
[[nodiscard]] bool selector_matches(const label_selector& s, const node_labels& labels);
[[nodiscard]] result<void> validate_selector(const label_selector& s, std::string_view where);

struct colocation_strategy {
  std::optional<bool> enable;                                     // Default: false
  std::optional<std::int64_t> metric_aggregate_duration_seconds;  // Default: 300, > 0
  std::optional<std::int64_t> metric_report_interval_seconds;     // Default: 60, > 0
  std::optional<std::vector<std::string>>
      metric_aggregate_durations;                                  // Default: ["5m","10m","30m"]
  std::optional<std::string> metric_memory_collect_policy;         // Default: usageWithoutPageCache
  std::optional<std::int64_t> cpu_reclaim_threshold_percent;       // Default: 60, >= 0
  std::optional<calculate_policy> cpu_calculate_policy;            // Default: usage
  std::optional<std::int64_t> memory_reclaim_threshold_percent;    // Default: 65, >= 0
  std::optional<calculate_policy> memory_calculate_policy;         // Default: usage
  std::optional<std::int64_t> degrade_time_minutes;                // Default: 15, > 0
  std::optional<std::int64_t> update_time_threshold_seconds;       // Default: 300, > 0
  std::optional<double> resource_diff_threshold;                   // Default: 0.1, (0, 1]
  std::optional<reclaim_mode> mid_reclaim_mode;                    // Default: unset (dynamic)
  std::optional<std::int64_t> mid_cpu_threshold_percent;           // Default: 100, 0..100
  std::optional<std::int64_t> mid_memory_threshold_percent;        // Default: 100, 0..100
  std::optional<std::int64_t> mid_unallocated_percent;             // Default: 0, 0..100
  std::optional<std::int64_t> mid_static_cpu_reserved_percent;     // Default: 0, 0..100
  std::optional<std::int64_t> mid_static_memory_reserved_percent;  // Default: 0, 0..100
  std::optional<std::int64_t> batch_cpu_threshold_percent;         // Default: unset, >= 0
  std::optional<std::int64_t> batch_memory_threshold_percent;      // Default: unset, >= 0

  bool operator==(const colocation_strategy&) const = default;

  // DefaultColocationStrategy (pkg/util/sloconfig/colocation_config.go).
  [[nodiscard]] static colocation_strategy defaults();
  // True if no field is set (reflect.DeepEqual(&s, &ColocationStrategy{})).
  [[nodiscard]] bool empty() const { return *this == colocation_strategy{}; }
};

// util.MergeCfg(base, overlay): every field set in overlay replaces base's (slices wholesale).
[[nodiscard]] colocation_strategy merge(colocation_strategy base,
                                        const colocation_strategy& overlay);

// IsColocationStrategyValid plus the ConfigMap webhook's struct-tag ranges (validate:"..."):
// returns the first offending field as "<where>.<jsonKey>: invalid value <v> (<rule>)".
[[nodiscard]] result<void> validate(const colocation_strategy& s, std::string_view where);

// One nodeConfigs[] entry; `strategy` is already merged over the cluster strategy (as Koordinator
// stores it after syncConfig).
struct node_colocation_config {
  std::string name;
  label_selector node_selector;
  colocation_strategy strategy;
  bool operator==(const node_colocation_config&) const = default;
};

// ColocationCfg: the cluster strategy (merged over defaults) and the node configs.
struct colocation_config {
  colocation_strategy cluster = colocation_strategy::defaults();
  std::vector<node_colocation_config> node_configs;
  bool operator==(const colocation_config&) const = default;
};

// Node metadata that selects and overrides a strategy (C.7).
struct node_strategy_inputs {
  const node_labels* labels = nullptr;  // may be null: no labels
  // Raw JSON of annotation node.koordinator.sh/colocation-strategy, if present. Unparsable JSON is
  // ignored as Koordinator does (GetColocationStrategyOnNode error path).
  std::optional<std::string_view> colocation_strategy_annotation;
};

// Koordinator's node label and annotation names read by UpdateColocationStrategyForNode
// (apis/extension/node_colocation.go), defined once in messages/names.hpp.
using names::annotation_node_colocation_strategy;
using names::label_cpu_reclaim_ratio;
using names::label_memory_reclaim_ratio;
using names::label_mid_static_cpu_reserved_ratio;
using names::label_mid_static_memory_reserved_ratio;

// GetNodeColocationStrategy: cluster strategy, overlaid by the FIRST matching nodeConfigs entry,
// then by the node annotation, then by the four ratio labels (int64(v*100), negative/unparsable
// ignored).
[[nodiscard]] colocation_strategy node_colocation_strategy(const colocation_config& cfg,
                                                           const node_strategy_inputs& node);

// getNodeReclaimPercent: strconv.ParseFloat then int64(v*100); nullopt if absent, unparsable or <
// 0. (NaN/Inf/overflow are also ignored: Go would produce an amd64-specific garbage value.)
[[nodiscard]] std::optional<std::int64_t> node_reclaim_percent(const node_labels* labels,
                                                               std::string_view key);

// isColocationCfgDisabled (noderesource/resource_calculator.go).
[[nodiscard]] bool is_colocation_disabled(const colocation_config& cfg,
                                          const colocation_strategy& node_strategy);

}  // namespace colony::slo_controller
