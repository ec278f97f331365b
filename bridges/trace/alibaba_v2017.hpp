// Reader for Alibaba cluster-trace-v2017 server_event (headerless CSV).
//
// Columns (alibaba/clusterdata cluster-trace-v2017/schema.csv): timestamp, machine id,
// event type, event detail, number of cpus, normalised memory, normalised disk. Timestamp 0
// means "before the trace". Error rows (softerror, harderror) carry 0 in the capacity
// fields: those zeros mean "not given", so they read as missing, never as a capacity drop.
// The file is not time-ordered; rows are sorted by time (ties keep file order).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "bridges/trace/read_options.hpp"
#include "messages/result.hpp"
#include "messages/units.hpp"

namespace colony::trace {

enum class v2017_server_event_type : std::uint8_t {
  add,        // machine available
  softerror,  // temporarily unavailable: no new placements, running work may continue
  harderror,  // hardware failure
};
[[nodiscard]] std::string_view to_string(v2017_server_event_type t) noexcept;

struct v2017_server_event {
  event_time time{};
  std::int64_t machine_id = 0;
  v2017_server_event_type type = v2017_server_event_type::add;
  std::string detail;                        // error reason; empty for add
  std::optional<std::int64_t> cpu_milli;     // cpus x 1000 (absolute cores in the trace)
  std::optional<double> memory;              // normalised, 1.0 = largest machine
  std::optional<std::int64_t> memory_bytes;  // memory x v2017_memory_full_bytes
  std::optional<double> disk;                // normalised, 1.0 = largest
  std::uint32_t line = 0;
};

[[nodiscard]] result<trace_table<v2017_server_event>> parse_v2017_server_event(
    std::string_view text, std::string_view file, const read_options& opt = {});
[[nodiscard]] result<trace_table<v2017_server_event>> read_v2017_server_event(
    const std::string& path, const read_options& opt = {});

}  // namespace colony::trace
