// Durations on the command line, as kube-scheduler's and the koordlet's flags take them: a
// decimal number and one unit of ms, s, m or h ("500ms", "15s", "1.5m"); a bare number is
// seconds. Must be positive. One parser for every colony command.
#pragma once

#include <chrono>
#include <string_view>

#include "messages/result.hpp"

namespace colony::cli {

// invalid_input (where = flag) for anything else.
[[nodiscard]] result<std::chrono::milliseconds> parse_duration_flag(std::string_view value,
                                                                    std::string_view flag);

}  // namespace colony::cli
