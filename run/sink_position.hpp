// A sink's position beside its log (colony run's STATE.sink-position, colony koordlet's
// LOG.sink-position): the first offset whose decision has not been answered yet. One number in a
// text file, replaced by rename so a crash leaves the old or the new one.
#pragma once

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>

#include "messages/result.hpp"

namespace colony::run {

// The saved position; none when the file is missing or unreadable.
[[nodiscard]] inline std::optional<std::uint64_t> load_sink_position(const std::string& path) {
  std::ifstream in(path);
  std::uint64_t v = 0;
  if (in >> v) return v;
  return std::nullopt;
}

[[nodiscard]] inline result<void> save_sink_position(const std::string& path, std::uint64_t v) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << v << "\n";
    if (!out) return fail(errc::unavailable, "cannot write the sink position", tmp);
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) return fail(errc::unavailable, "cannot rename: " + ec.message(), path);
  return {};
}

}  // namespace colony::run
