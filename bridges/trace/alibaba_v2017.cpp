// Alibaba cluster-trace-v2017 server_event reader (see alibaba_v2017.hpp).
#include "bridges/trace/alibaba_v2017.hpp"

#include <algorithm>
#include <cmath>

#include "bridges/trace/detail/csv.hpp"

namespace colony::trace {

std::string_view to_string(v2017_server_event_type t) noexcept {
  switch (t) {
    case v2017_server_event_type::add:
      return "add";
    case v2017_server_event_type::softerror:
      return "softerror";
    case v2017_server_event_type::harderror:
      return "harderror";
  }
  return "add";
}

result<trace_table<v2017_server_event>> parse_v2017_server_event(std::string_view text,
                                                                 std::string_view file,
                                                                 const read_options& opt) {
  const std::int64_t full = opt.v2017_memory_full_bytes;
  auto t = detail::parse_rows<v2017_server_event>(
      text, file, opt, 7, {}, [full](detail::row_cursor& c, v2017_server_event& r) {
        std::int64_t ms = 0;
        if (!c.seconds_ms(0, "timestamp", ms) ||
            !c.non_negative_integer(1, "machine_id", r.machine_id))
          return false;
        r.time = event_time{ms};
        std::string_view type = c.text(2);
        if (type == "add")
          r.type = v2017_server_event_type::add;
        else if (type == "softerror")
          r.type = v2017_server_event_type::softerror;
        else if (type == "harderror")
          r.type = v2017_server_event_type::harderror;
        else
          return c.fail_expected(2, "event_type add, softerror or harderror");
        r.detail.assign(c.text(3));
        std::optional<std::int64_t> cpus;
        if (!c.optional_integer(4, "cpus", cpus) || !c.optional_number(5, "memory", r.memory) ||
            !c.optional_number(6, "disk", r.disk))
          return false;
        if (cpus && *cpus < 0) return c.fail_expected(4, "non-negative integer", "cpus");
        if (r.memory && (*r.memory < 0 || *r.memory > 1.0))
          return c.fail_expected(5, "normalised memory in [0, 1]");
        if (r.disk && (*r.disk < 0 || *r.disk > 1.0))
          return c.fail_expected(6, "normalised disk in [0, 1]");
        if (r.type != v2017_server_event_type::add) {
          // Error rows: 0 = "not given" (schema: capacity fields are not mandatory).
          if (cpus == 0) cpus.reset(), c.count_missing();
          if (r.memory == 0.0) r.memory.reset(), c.count_missing();
          if (r.disk == 0.0) r.disk.reset(), c.count_missing();
        }
        if (cpus) r.cpu_milli = *cpus * 1000;
        if (r.memory) r.memory_bytes = std::llround(*r.memory * static_cast<double>(full));
        return true;
      });
  if (t && opt.sort_by_time)
    detail::stable_sort_by(t->rows, [](const v2017_server_event& e) { return e.time.value; });
  return t;
}

result<trace_table<v2017_server_event>> read_v2017_server_event(const std::string& path,
                                                                const read_options& opt) {
  auto text = detail::slurp(path);
  if (!text) return tl::unexpected(text.error());
  return parse_v2017_server_event(*text, path, opt);
}

}  // namespace colony::trace
