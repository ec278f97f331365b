// internal/strategy_json.hpp: the flat NodeSLO strategies (ResourceThresholdStrategy,
// CPUBurstStrategy, SystemStrategy) to and from JSON objects, with the field names of
// apis/slo/v1alpha1/nodeslo_types.go. Implemented in slo_controller_config.cpp beside the field
// tables the ConfigMap parser reads them with, so the names are written once.
// Private to colony::slo_controller_policies. No exception leaves these functions.
#pragma once

#include <string_view>

#include "actors/slo_controller/internal/json_fields.hpp"
#include "actors/slo_controller/slo_controller_config.hpp"

namespace colony::slo_controller::internal {

// The set fields only (Go's `omitempty` pointers); SystemStrategy always carries
// totalNetworkBandwidth (a resource.Quantity value field, which encoding/json never omits), in
// its canonical form.
[[nodiscard]] json to_json(const resource_threshold_strategy& s);
[[nodiscard]] json to_json(const cpu_burst_strategy& s);
[[nodiscard]] json to_json(const system_strategy& s);

// Go's json.Unmarshal of `obj` over `base` (util.MergeCfg: the fields obj sets replace base's),
// then the ConfigMap's validity checks; type and range errors name `where`.
[[nodiscard]] result<resource_threshold_strategy> read_resource_threshold_strategy(
    const json& obj, std::string_view where, const resource_threshold_strategy& base);
[[nodiscard]] result<cpu_burst_strategy> read_cpu_burst_strategy(const json& obj,
                                                                 std::string_view where,
                                                                 const cpu_burst_strategy& base);
[[nodiscard]] result<system_strategy> read_system_strategy(const json& obj, std::string_view where,
                                                           const system_strategy& base);

// canonical JSON text (object keys sorted, no whitespace).
[[nodiscard]] std::string canonical_dump(const json& doc);

}  // namespace colony::slo_controller::internal
