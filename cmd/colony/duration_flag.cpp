#include "cmd/colony/duration_flag.hpp"

#include <charconv>
#include <string>

namespace colony::cli {

result<std::chrono::milliseconds> parse_duration_flag(std::string_view value,
                                                      std::string_view flag) {
  const auto bad = [&](std::string_view why) {
    return fail(
        errc::invalid_input,
        "'" + std::string(value) + "' " + std::string(why) + " (a duration like 500ms, 15s, 2m)",
        std::string(flag));
  };
  double v = 0;
  const char* end = value.data() + value.size();
  const auto [p, ec] = std::from_chars(value.data(), end, v);
  if (ec != std::errc{} || p == value.data()) return bad("is not a duration");
  const std::string_view unit(p, static_cast<std::size_t>(end - p));
  double ms = 0;
  if (unit.empty() || unit == "s")
    ms = v * 1000;
  else if (unit == "ms")
    ms = v;
  else if (unit == "m")
    ms = v * 60'000;
  else if (unit == "h")
    ms = v * 3'600'000;
  else
    return bad("is not a duration");
  if (!(ms >= 1) || ms > 1e15) return bad("is not a positive duration of at least 1 ms");
  return std::chrono::milliseconds(static_cast<std::int64_t>(ms));
}

}  // namespace colony::cli
