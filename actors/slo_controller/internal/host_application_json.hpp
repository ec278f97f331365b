// internal/host_application_json.hpp: HostApplicationSpec lists to and from JSON values (the
// ConfigMap's checker and the NodeSLO reader share them). Private to
// colony::slo_controller_policies. No exception leaves these functions.
#pragma once

#include <string_view>
#include <vector>

#include "actors/slo_controller/host_application.hpp"
#include "actors/slo_controller/internal/json_fields.hpp"

namespace colony::slo_controller::internal {

// A JSON array of HostApplicationSpec (null: empty); errors name where[i].field.
[[nodiscard]] result<std::vector<host_application_spec>> read_host_applications(
    const json& list, std::string_view where);

[[nodiscard]] json to_json(const std::vector<host_application_spec>& apps);

}  // namespace colony::slo_controller::internal
