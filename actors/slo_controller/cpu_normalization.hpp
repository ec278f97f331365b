// cpu_normalization.hpp: Koordinator's CPU normalization and resource amplification as pure
// policy (koord-manager's noderesource plugins cpunormalization and resourceamplification).
//
// - cpu-normalization-config (apis/configuration/slo_controller_config.go CPUNormalizationCfg):
//   {enable, defaultRatio, ratioModel{"<cpu model>": {baseRatio, hyperThreadEnabledRatio,
//   turboEnabledRatio, hyperThreadTurboEnabledRatio}}, nodeConfigs[]}; node entries merged over
//   the cluster strategy, the cluster strategy over {enable: false, ratioModel: {}}
//   (plugins/cpunormalization/configmap_event_handler.go syncConfig; util.MergeCfg is a JSON
//   overlay, so a model named by a node entry replaces the cluster's model of that name whole).
// - the node's CPU basic info (apis/extension/cpu_normalization.go CPUBasicInfo, annotation
//   node.koordinator.sh/cpu-basic-info: {"cpuModel", "hyperThreadEnabled", "turboEnabled", ...}).
// - the ratio (plugins/cpunormalization/plugin.go Calculate): disabled (label
//   node.koordinator.sh/cpu-normalization-enabled overrides the strategy) -> "1.00"; otherwise the
//   model's ratio for the HT/turbo flags, else defaultRatio, validated in [1.0, 5.0], written as
//   strconv.FormatFloat(ratio, 'f', 2) in node.koordinator.sh/cpu-normalization-ratio.
// - resource-amplification-config and node.koordinator.sh/resource-amplification-ratio
//   (plugins/resourceamplification/plugin.go, apis/extension/node_resource_amplification.go):
//   {"cpu": strategy ratio (or 1) x cpu normalization ratio, other resources as configured},
//   each ratio written with 2 decimals, keys sorted (encoding/json of a map).
//
// Errors are values naming the field: `cpu-normalization-config.ratioModel["Intel
// Xeon"].baseRatio`. Pure; thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "actors/slo_controller/colocation_strategy.hpp"
#include "messages/names.hpp"
#include "messages/result.hpp"

namespace colony::slo_controller {

// apis/extension/cpu_normalization.go and node_resource_amplification.go.
using names::annotation_cpu_basic_info;
using names::annotation_resource_amplification_ratio;
using names::label_cpu_normalization_enabled;
// plugins/cpunormalization/plugin.go: defaultRatioStr, defaultMinRatio, defaultMaxRatio.
inline constexpr std::string_view cpu_normalization_default_ratio = "1.00";
inline constexpr double cpu_normalization_min_ratio = 1.0;
inline constexpr double cpu_normalization_max_ratio = 5.0;
// NormalizationRatioDiffEpsilon: two ratios closer than this are the same.
inline constexpr double normalization_ratio_diff_epsilon = 0.01;

struct model_ratio_cfg {
  std::optional<double> base_ratio;                        // HT off, turbo off
  std::optional<double> hyper_thread_enabled_ratio;        // HT on, turbo off
  std::optional<double> turbo_enabled_ratio;               // HT off, turbo on
  std::optional<double> hyper_thread_turbo_enabled_ratio;  // HT on, turbo on
  bool operator==(const model_ratio_cfg&) const = default;
};

struct cpu_normalization_strategy {
  std::optional<bool> enable;           // Default: false
  std::optional<double> default_ratio;  // Default: unset
  // Default: {} (DefaultCPUNormalizationCfg); nullopt only where a test builds a nil model.
  std::optional<std::map<std::string, model_ratio_cfg, std::less<>>> ratio_model =
      std::map<std::string, model_ratio_cfg, std::less<>>{};
  bool operator==(const cpu_normalization_strategy&) const = default;
};

struct resource_amplification_strategy {
  std::optional<bool> enable;  // Default: false
  // resourceAmplificationRatio: resource name -> ratio (Default: none).
  std::map<std::string, double, std::less<>> ratios;
  bool operator==(const resource_amplification_strategy&) const = default;
};

// CPUNormalizationCfg / ResourceAmplificationCfg: the cluster strategy and nodeConfigs[] (each
// merged over the cluster's); the first entry whose nodeSelector matches the node wins
// (GetStrategyCopy). An entry whose selector is empty or invalid never matches.
template <class Strategy>
struct node_config_list {
  Strategy cluster;
  struct entry {
    std::string name;
    label_selector node_selector;
    bool selector_valid = false;
    Strategy strategy;
    bool operator==(const entry&) const = default;
  };
  std::vector<entry> node_configs;
  bool operator==(const node_config_list&) const = default;
  [[nodiscard]] const Strategy& for_node(const node_labels& labels) const {
    for (const auto& e : node_configs)
      if (e.selector_valid && selector_matches(e.node_selector, labels)) return e.strategy;
    return cluster;
  }
};
using cpu_normalization_config = node_config_list<cpu_normalization_strategy>;
using resource_amplification_config = node_config_list<resource_amplification_strategy>;

// The key's text ("" = the defaults). Type errors and ratios outside [1.0, 5.0] (ratioModel,
// defaultRatio) or below 1 (resourceAmplificationRatio) are errors naming the field.
[[nodiscard]] result<cpu_normalization_config> parse_cpu_normalization_strategies(
    std::string_view text);
[[nodiscard]] result<resource_amplification_config> parse_resource_amplification_strategies(
    std::string_view text);

// CPUBasicInfo (the fields the ratio reads).
struct cpu_basic_info {
  std::string cpu_model;
  bool hyper_thread_enabled = false;
  bool turbo_enabled = false;
  bool operator==(const cpu_basic_info&) const = default;
};
// GetCPUBasicInfo: the annotation's JSON; malformed JSON or a wrong type is an error.
[[nodiscard]] result<cpu_basic_info> parse_cpu_basic_info(std::string_view annotation);

// getCPUNormalizationRatioFromModel: the model's ratio for the HT/turbo flags.
[[nodiscard]] result<double> cpu_normalization_ratio_from_model(
    const cpu_basic_info& info, const cpu_normalization_strategy& s);
// getCPUNormalizationRatio: the model's ratio, else defaultRatio.
[[nodiscard]] result<double> cpu_normalization_ratio(const cpu_basic_info& info,
                                                     const cpu_normalization_strategy& s);
// isCPUNormalizationRatioValid: in [1.0, 5.0].
[[nodiscard]] result<void> validate_cpu_normalization_ratio(double ratio);

// strconv.FormatFloat(ratio, 'f', 2, 64): "1.10".
[[nodiscard]] std::string format_ratio(double ratio);

// plugin.go Calculate: the annotation value to write, or an error (the annotation is then left
// as it is). enabled_label: the node's cpu-normalization-enabled label value, if any;
// basic_info: the cpu-basic-info annotation, if any.
[[nodiscard]] result<std::string> calculate_cpu_normalization(
    const cpu_normalization_strategy& s, std::optional<std::string_view> enabled_label,
    std::optional<std::string_view> basic_info);

// GetCPUNormalizationRatio: -1 when absent; unparsable or <= 0 is an error.
[[nodiscard]] result<double> parse_cpu_normalization_ratio(std::optional<std::string_view> v);

struct meta_sync {
  bool need_sync = false;
  std::string_view reason;
};
// cpunormalization Plugin.NeedSyncMeta over the old and new annotation values.
[[nodiscard]] meta_sync cpu_normalization_need_sync(std::optional<std::string_view> old_ratio,
                                                    std::optional<std::string_view> new_ratio);

// resourceamplification Plugin.Calculate: the annotation value to write; nullopt = none (the
// annotation is then removed, as Prepare does). cpu_normalization: the node's
// cpu-normalization-ratio annotation, if any (an unparsable one is an error).
[[nodiscard]] result<std::optional<std::string>> calculate_resource_amplification(
    const resource_amplification_strategy& s, std::optional<std::string_view> cpu_normalization);
// resourceamplification Plugin.NeedSyncMeta ("" = absent).
[[nodiscard]] meta_sync resource_amplification_need_sync(std::string_view old_ratio,
                                                         std::string_view new_ratio);

// The node annotations the two plugins manage, as the node carries them.
struct node_meta {
  std::optional<std::string>
      cpu_normalization_ratio;  // node.koordinator.sh/cpu-normalization-ratio
  std::optional<std::string> resource_amplification_ratio;  // .../resource-amplification-ratio
  std::optional<std::string> cpu_basic_info;  // .../cpu-basic-info (Koordinator: on the NRT)
  bool operator==(const node_meta&) const = default;
};

// One reconcile's metadata decision (resource_calculator.go updateNodeResource: Calculate, then
// Prepare, then NeedSyncMeta of each plugin, then a merge patch of the node's metadata).
struct node_meta_update {
  bool need_sync = false;
  // The JSON merge patch of metadata.annotations ({"<key>": "<value>" | null}, keys sorted);
  // "" when nothing changes.
  std::string patch;
  std::string reason;  // "<Plugin>: <NeedSyncMeta reason>", "; "-joined
  node_meta after;     // the annotations once the patch is applied
};

// cpu / amp: the configs in force, nullptr when unavailable (never parsed: Calculate fails, so
// the normalization ratio is kept and the amplification ratio removed, as Prepare does).
// colocation_disabled: the reset path (isColocationCfgDisabled): no Calculate runs; the
// normalization ratio stays and the amplification ratio is removed.
// The amplification uses the normalization ratio of this round's decision; Koordinator's
// Calculate reads the node as it was, and reaches the same value one reconcile later, when its
// own node patch comes back as a node update.
[[nodiscard]] node_meta_update update_node_meta(const cpu_normalization_config* cpu,
                                                const resource_amplification_config* amp,
                                                const node_labels& labels, const node_meta& now,
                                                bool colocation_disabled);

// Applies a node_meta_update's patch (as read back from the log) to m; keys other than the two
// ratios are ignored. A malformed patch is an error and changes nothing.
[[nodiscard]] result<void> apply_annotation_patch(std::string_view patch, node_meta& m);

// GetNodeResourceAmplificationRatios: resource -> ratio; a malformed value is an error.
[[nodiscard]] result<std::map<std::string, double, std::less<>>> parse_amplification_ratios(
    std::string_view annotation);
// extension.Amplify: ceil(origin * ratio) when ratio > 1, else origin.
[[nodiscard]] std::int64_t amplify(std::int64_t origin, double ratio) noexcept;

}  // namespace colony::slo_controller
