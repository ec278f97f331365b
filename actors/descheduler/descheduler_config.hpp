// DeschedulerConfiguration (descheduler/v1alpha2, pkg/descheduler/apis/config/v1alpha2/types.go)
// as koord-descheduler reads it: deschedulingInterval, dryRun, the global nodeSelector, the
// per-round eviction limits, and the first profile's Balance plugins with the pluginConfig args of
// LowNodeLoad (low_node_load_args.hpp) and MigrationController (migration_controller_args.hpp).
// Parsed with yaml-cpp; defaults applied; every error names the field path
// ("profiles[0].pluginConfig[1].args.lowThresholds[cpu]") and line:column for YAML syntax.
// Colony's scope: one profile; Balance plugin LowNodeLoad (others are refused by name).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "actors/admission/label_selector.hpp"
#include "actors/descheduler/eviction_limiter.hpp"
#include "actors/descheduler/low_node_load_args.hpp"
#include "actors/descheduler/migration_controller_args.hpp"
#include "messages/result.hpp"

namespace colony::descheduler {

struct descheduler_config {
  // No default in Koordinator (0 = run once); Colony requires a positive interval.
  std::int64_t descheduling_interval_ms = 0;
  bool dry_run = false;
  std::optional<admission::label_selector> node_selector;
  eviction_limits limits;
  std::string profile_name = "koord-descheduler";
  bool low_node_load_enabled = false;  // plugins.balance.enabled names LowNodeLoad
  low_node_load_args low_node_load;    // defaulted (set_defaults) and validated
  migration_controller_args migration;
};

// A Go duration ("10s", "5m", "1m30s", "500ms", "1h"): milliseconds.
[[nodiscard]] result<std::int64_t> parse_go_duration(std::string_view text, std::string_view field);

[[nodiscard]] result<descheduler_config> parse_descheduler_config(std::string_view yaml);

}  // namespace colony::descheduler
