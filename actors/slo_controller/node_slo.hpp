// node_slo.hpp: the NodeSLO spec the slo-controller renders for each node
// (pkg/slo-controller/nodeslo: nodeslo_controller.go getNodeSLOSpec, resource_strategy.go,
// nodeslo_cm_event_handler.go), and its reading back by the koordlet.
//
// Rendering, per NodeSLO key of the slo-controller-config ConfigMap: the first nodeStrategies
// entry whose nodeSelector matches the node's labels, else the cluster strategy; each entry merged
// over the cluster strategy, the cluster strategy over Koordinator's defaults (the merge
// slo_controller_config.hpp's parser does). Keys and their defaults (DefaultSLOCfg):
//   resourceUsedThresholdWithBE  resource-threshold-config over DefaultResourceThresholdStrategy
//   resourceQOSStrategy          resource-qos-config over an EMPTY strategy: the slo-controller
//                                leaves the QoS defaults to the koordlet (DefaultSLOCfg's
//                                ResourceQOSCfgMerged.ClusterStrategy is &ResourceQOSStrategy{})
//   cpuBurstStrategy             cpu-burst-config over DefaultCPUBurstStrategy
//   systemStrategy               system-config over DefaultSystemStrategy
// A key that is unavailable (nullopt: never parsed) renders its defaults, as Koordinator's cache
// starts from DefaultSLOCfg. resourceQOSStrategy is merged as util.MergeCfg does (encoding/json
// into the existing value: objects merge key by key, arrays and scalars are replaced), with the
// node entry's own "name" and "nodeSelector" dropped.
//   hostApplications             host-application-config: the first matching nodeConfigs entry's
//                                applications, else the cluster's (host_application.hpp); left
//                                out of the spec when empty (omitempty)
// Not rendered (Colony has no model of them): extensions and systemStrategy.schedFeatures. Unknown
// keys inside resourceQOSStrategy's classes are kept (Go's typed structs would drop them).
//
// The spec is JSON with object keys sorted and no whitespace, so equal specs are equal bytes:
// the slo-controller writes a node's NodeSLOUpdated only when these bytes change.
// Pure; no I/O, no clock. Thread-safety: const methods may run concurrently.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "actors/slo_controller/colocation_strategy.hpp"
#include "actors/slo_controller/host_application.hpp"
#include "actors/slo_controller/slo_controller_config.hpp"
#include "messages/result.hpp"

namespace colony::slo_controller {

// NodeSLOSpec field names (apis/slo/v1alpha1/nodeslo_types.go).
inline constexpr std::string_view node_slo_threshold_field = "resourceUsedThresholdWithBE";
inline constexpr std::string_view node_slo_qos_field = "resourceQOSStrategy";
inline constexpr std::string_view node_slo_cpu_burst_field = "cpuBurstStrategy";
inline constexpr std::string_view node_slo_system_field = "systemStrategy";

// One node's NodeSLO spec, typed where Colony models the strategy.
struct node_slo_spec {
  resource_threshold_strategy resource_used_threshold_with_be =
      resource_threshold_strategy::defaults();
  std::string resource_qos_strategy_json = "{}";  // canonical JSON object
  cpu_burst_strategy cpu_burst = cpu_burst_strategy::defaults();
  system_strategy system = system_strategy::defaults();
  std::vector<host_application_spec> host_applications;  // Default: none
  bool operator==(const node_slo_spec&) const = default;
};

// The NodeSLO keys of one slo-controller-config, each strategy (cluster and node entries)
// serialised once: rendering a node picks one text per key by its labels and joins them, so a
// config change re-renders every node cheaply.
class node_slo_renderer {
 public:
  node_slo_renderer() : node_slo_renderer(slo_controller_config{}) {}
  explicit node_slo_renderer(const slo_controller_config& cfg);

  // The spec JSON for a node with these labels (pure; equal inputs give equal bytes).
  [[nodiscard]] std::string spec_json(const node_labels& labels) const;
  // The same spec, typed (the strategies as the config holds them, merged).
  [[nodiscard]] node_slo_spec spec(const node_labels& labels) const;

 private:
  struct key_texts {
    std::string cluster;
    std::vector<std::pair<label_selector, std::string>> nodes;  // in nodeStrategies order
    [[nodiscard]] const std::string& for_node(const node_labels& labels) const;
  };
  slo_controller_config cfg_;
  key_texts threshold_, qos_, burst_, system_;
  host_application_config host_apps_;
  key_texts host_apps_text_;  // "[]" renders nothing
};

// Whether the NodeSLO keys of two configs are the same (the rendered specs then are too).
[[nodiscard]] bool same_node_slo_keys(const slo_controller_config& a,
                                      const slo_controller_config& b);

// The spec as JSON (the bytes node_slo_renderer::spec_json gives for it).
[[nodiscard]] std::string node_slo_spec_json(const node_slo_spec& s);

// A NodeSLO spec as the koordlet reads it (pkg/koordlet/statesinformer/impl/states_nodeslo.go):
// each strategy merged over Koordinator's defaults (mergeNodeSLOSpec), so an absent strategy or
// field has its default. A malformed document, a wrong type or an out-of-range value is an error
// naming the field (the koordlet then keeps the NodeSLO it had).
[[nodiscard]] result<node_slo_spec> parse_node_slo_spec(std::string_view spec_json);

// One class of a ResourceQOSStrategy (lsrClass, lsClass, beClass, systemClass) as far as the
// koordlet's cgroup writers read it: cpuQOS {enable, groupIdentity}, memoryQOS {enable,
// minLimitPercent, lowLimitPercent, throttlingPercent} and resctrlQOS {enable,
// catRangeStartPercent, catRangeEndPercent, mbaPercent} (apis/slo/v1alpha1/nodeslo_types.go).
// Unset: the strategy leaves it to the koordlet's default.
struct resource_qos_class {
  std::optional<bool> cpu_enable;
  std::optional<std::int64_t> group_identity;
  std::optional<bool> memory_enable;
  std::optional<std::int64_t> min_limit_percent, low_limit_percent, throttling_percent;
  std::optional<bool> resctrl_enable;
  std::optional<std::int64_t> cat_range_start_percent, cat_range_end_percent, mba_percent;
  bool operator==(const resource_qos_class&) const = default;
};

struct resource_qos_strategy {
  std::optional<std::string> cpu_policy;  // policies.cpuPolicy: groupIdentity | coreSched
  resource_qos_class lsr, ls, be, system;
  bool operator==(const resource_qos_strategy&) const = default;
};

// The typed view of a node_slo_spec's resource_qos_strategy_json. A wrong type or a percent
// outside [0, 100] is an error naming the field (NodeSLO.spec.resourceQOSStrategy.<class>...).
[[nodiscard]] result<resource_qos_strategy> parse_resource_qos_strategy(std::string_view json);

}  // namespace colony::slo_controller
