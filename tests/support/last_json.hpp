// The last JSON object line of a colony command's output (its summary), or a discarded value
// when there is none.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace colony::testing {

inline nlohmann::json last_json(const std::string& out) {
  auto p = out.rfind("\n{");
  auto line = out.substr(p == std::string::npos ? 0 : p + 1);
  line = line.substr(0, line.find('\n'));
  return nlohmann::json::parse(line, nullptr, false);
}

}  // namespace colony::testing
