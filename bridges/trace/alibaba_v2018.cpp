// Alibaba cluster-trace-v2018 readers (see alibaba_v2018.hpp).
#include "bridges/trace/alibaba_v2018.hpp"

#include <algorithm>
#include <cmath>

#include "bridges/trace/detail/csv.hpp"

namespace colony::trace {

namespace {

using detail::row_cursor;

bool time_ms(row_cursor& c, std::size_t i, std::string_view name, event_time& out) {
  std::int64_t ms = 0;
  if (!c.seconds_ms(i, name, ms)) return false;
  out = event_time{ms};
  return true;
}

bool optional_time_ms(row_cursor& c, std::size_t i, std::string_view name,
                      std::optional<event_time>& out) {
  std::optional<std::int64_t> ms;
  if (!c.optional_seconds_ms(i, name, ms)) return false;
  if (ms) out = event_time{*ms};
  return true;
}

// A normalised memory size in [0, 100] (-1/101 invalid) and its bytes.
bool normalised_memory(row_cursor& c, std::size_t i, std::string_view name, std::int64_t full_bytes,
                       std::optional<double>& norm, std::optional<std::int64_t>* bytes) {
  if (!c.percent(i, name, norm)) return false;
  if (bytes != nullptr && norm)
    *bytes = std::llround(*norm / 100.0 * static_cast<double>(full_bytes));
  return true;
}

// CPU in 1/100 core (100 = one core) to milli-cores.
bool centi_cores(row_cursor& c, std::size_t i, std::string_view name,
                 std::optional<std::int64_t>& milli) {
  std::optional<double> v;
  if (!c.optional_number(i, name, v)) return false;
  if (!v) return true;
  if (*v < 0 || *v > 1e15) return c.fail_expected(i, "non-negative", name);
  milli = std::llround(*v * 10.0);
  return true;
}

template <class Row, class Key>
void sort_rows(trace_table<Row>& t, const read_options& opt, Key key) {
  if (!opt.sort_by_time) return;
  detail::stable_sort_by(t.rows, key);
}

template <class Parse>
auto read_file(const std::string& path, const read_options& opt, Parse parse)
    -> decltype(parse("", "", opt)) {
  auto text = detail::slurp(path);
  if (!text) return tl::unexpected(text.error());
  return parse(*text, path, opt);
}

std::int64_t start_key(const std::optional<event_time>& t) { return t ? t->value : -1; }

bool machine_usage_row(row_cursor& c, v2018_machine_usage& r) {
  return c.required_text(0, "machine_id", r.machine_id) && time_ms(c, 1, "time_stamp", r.time) &&
         c.percent(2, "cpu_util_percent", r.cpu_util_percent) &&
         c.percent(3, "mem_util_percent", r.mem_util_percent) &&
         c.optional_number(4, "mem_gps", r.mem_gps) && c.optional_number(5, "mkpi", r.mkpi) &&
         c.optional_number(6, "net_in", r.net_in) && c.optional_number(7, "net_out", r.net_out) &&
         c.percent(8, "disk_io_percent", r.disk_io_percent);
}

// container_usage cpu/mem may exceed 100 (no upper bound checked; -1/101 still invalid).
bool container_usage_row(row_cursor& c, v2018_container_usage& r) {
  return c.required_text(0, "container_id", r.container_id) &&
         c.required_text(1, "machine_id", r.machine_id) && time_ms(c, 2, "time_stamp", r.time) &&
         c.percent(3, "cpu_util_percent", r.cpu_util_percent, true) &&
         c.percent(4, "mem_util_percent", r.mem_util_percent, true) &&
         c.optional_number(5, "cpi", r.cpi) && c.optional_number(6, "mem_gps", r.mem_gps) &&
         c.optional_number(7, "mpki", r.mpki) && c.optional_number(8, "net_in", r.net_in) &&
         c.optional_number(9, "net_out", r.net_out) &&
         c.percent(10, "disk_io_percent", r.disk_io_percent);
}

bool batch_instance_row(row_cursor& c, v2018_batch_instance& r) {
  if (!c.required_text(0, "instance_name", r.instance_name) ||
      !c.required_text(1, "task_name", r.task_name) ||
      !c.required_text(2, "job_name", r.job_name) ||
      !optional_time_ms(c, 5, "start_time", r.start) ||
      !optional_time_ms(c, 6, "end_time", r.end) || !c.optional_integer(8, "seq_no", r.seq_no) ||
      !c.optional_integer(9, "total_seq_no", r.total_seq_no) ||
      !centi_cores(c, 10, "cpu_avg", r.cpu_avg_milli) ||
      !centi_cores(c, 11, "cpu_max", r.cpu_max_milli) ||
      !normalised_memory(c, 12, "mem_avg", 0, r.mem_avg, nullptr) ||
      !normalised_memory(c, 13, "mem_max", 0, r.mem_max, nullptr))
    return false;
  r.task_type.assign(c.text(3));
  r.status.assign(c.text(4));
  r.machine_id.assign(c.text(7));
  if (r.machine_id.empty()) c.count_missing();
  return true;
}

}  // namespace

v2018_task_dag parse_task_name(std::string_view s) {
  v2018_task_dag d;
  std::size_t i = 0;
  while (i < s.size() && ((s[i] >= 'A' && s[i] <= 'Z') || (s[i] >= 'a' && s[i] <= 'z'))) ++i;
  if (i == 0 || i == s.size()) return d;
  std::vector<std::int64_t> nums;
  std::size_t p = i;
  for (;;) {
    std::int64_t v = 0;
    auto [e, ec] = std::from_chars(s.data() + p, s.data() + s.size(), v);
    if (ec != std::errc{} || e == s.data() + p || *(s.data() + p) == '-') return d;
    nums.push_back(v);
    p = static_cast<std::size_t>(e - s.data());
    if (p == s.size()) break;
    if (s[p] != '_' || p + 1 == s.size()) return d;
    ++p;
  }
  d.in_dag = true;
  d.kind.assign(s.substr(0, i));
  d.id = nums.front();
  d.depends_on.assign(nums.begin() + 1, nums.end());
  return d;
}

result<trace_table<v2018_machine_meta>> parse_v2018_machine_meta(std::string_view text,
                                                                 std::string_view file,
                                                                 const read_options& opt) {
  const std::int64_t full = opt.v2018_memory_full_bytes;
  auto t = detail::parse_rows<v2018_machine_meta>(
      text, file, opt, 7, {}, [full](row_cursor& c, v2018_machine_meta& r) {
        std::optional<std::int64_t> cpus;
        if (!c.required_text(0, "machine_id", r.machine_id) ||
            !time_ms(c, 1, "time_stamp", r.time) ||
            !c.optional_integer(2, "failure_domain_1", r.failure_domain_1) ||
            !c.optional_integer(4, "cpu_num", cpus) ||
            !normalised_memory(c, 5, "mem_size", full, r.mem_size, &r.memory_bytes))
          return false;
        if (c.empty(3)) c.count_missing();
        r.failure_domain_2.assign(c.text(3));
        if (cpus) {
          if (*cpus < 0 || *cpus > 1'000'000)
            return c.fail_expected(4, "non-negative integer", "cpu_num");
          r.cpu_milli = *cpus * 1000;
        }
        r.status.assign(c.text(6));
        return true;
      });
  if (t) sort_rows(*t, opt, [](const v2018_machine_meta& r) { return r.time.value; });
  return t;
}

result<trace_table<v2018_machine_usage>> parse_v2018_machine_usage(std::string_view text,
                                                                   std::string_view file,
                                                                   const read_options& opt) {
  auto t = detail::parse_rows<v2018_machine_usage>(text, file, opt, 9, {}, machine_usage_row);
  if (t) sort_rows(*t, opt, [](const v2018_machine_usage& r) { return r.time.value; });
  return t;
}

result<trace_table<v2018_container_meta>> parse_v2018_container_meta(std::string_view text,
                                                                     std::string_view file,
                                                                     const read_options& opt) {
  const std::int64_t full = opt.v2018_memory_full_bytes;
  auto t = detail::parse_rows<v2018_container_meta>(
      text, file, opt, 8, {}, [full](row_cursor& c, v2018_container_meta& r) {
        if (!c.required_text(0, "container_id", r.container_id) ||
            !c.required_text(1, "machine_id", r.machine_id) ||
            !time_ms(c, 2, "time_stamp", r.time) ||
            !centi_cores(c, 5, "cpu_request", r.cpu_request_milli) ||
            !centi_cores(c, 6, "cpu_limit", r.cpu_limit_milli) ||
            !normalised_memory(c, 7, "mem_size", full, r.mem_size, &r.memory_bytes))
          return false;
        r.app_du.assign(c.text(3));
        r.status.assign(c.text(4));
        if (r.app_du.empty()) c.count_missing();
        return true;
      });
  if (t) sort_rows(*t, opt, [](const v2018_container_meta& r) { return r.time.value; });
  return t;
}

result<trace_table<v2018_container_usage>> parse_v2018_container_usage(std::string_view text,
                                                                       std::string_view file,
                                                                       const read_options& opt) {
  auto t = detail::parse_rows<v2018_container_usage>(text, file, opt, 11, {}, container_usage_row);
  if (t) sort_rows(*t, opt, [](const v2018_container_usage& r) { return r.time.value; });
  return t;
}

result<trace_table<v2018_batch_task>> parse_v2018_batch_task(std::string_view text,
                                                             std::string_view file,
                                                             const read_options& opt) {
  const std::int64_t full = opt.v2018_memory_full_bytes;
  auto t = detail::parse_rows<v2018_batch_task>(
      text, file, opt, 9, {}, [full](row_cursor& c, v2018_batch_task& r) {
        if (!c.required_text(0, "task_name", r.task_name) ||
            !c.optional_integer(1, "instance_num", r.instance_num) ||
            !c.required_text(2, "job_name", r.job_name) ||
            !optional_time_ms(c, 5, "start_time", r.start) ||
            !optional_time_ms(c, 6, "end_time", r.end) ||
            !centi_cores(c, 7, "plan_cpu", r.plan_cpu_milli) ||
            !normalised_memory(c, 8, "plan_mem", full, r.plan_mem, &r.plan_memory_bytes))
          return false;
        if (r.instance_num && *r.instance_num < 0)
          return c.fail_expected(1, "non-negative integer", "instance_num");
        r.task_type.assign(c.text(3));
        r.status.assign(c.text(4));
        r.dag = parse_task_name(r.task_name);
        return true;
      });
  if (t) sort_rows(*t, opt, [](const v2018_batch_task& r) { return start_key(r.start); });
  return t;
}

result<trace_table<v2018_batch_instance>> parse_v2018_batch_instance(std::string_view text,
                                                                     std::string_view file,
                                                                     const read_options& opt) {
  auto t = detail::parse_rows<v2018_batch_instance>(text, file, opt, 14, {}, batch_instance_row);
  if (t) sort_rows(*t, opt, [](const v2018_batch_instance& r) { return start_key(r.start); });
  return t;
}

result<trace_table<v2018_machine_meta>> read_v2018_machine_meta(const std::string& path,
                                                                const read_options& opt) {
  return read_file(path, opt, [](std::string_view t, std::string_view f, const read_options& o) {
    return parse_v2018_machine_meta(t, f, o);
  });
}
result<trace_table<v2018_machine_usage>> read_v2018_machine_usage(const std::string& path,
                                                                  const read_options& opt) {
  return read_file(path, opt, [](std::string_view t, std::string_view f, const read_options& o) {
    return parse_v2018_machine_usage(t, f, o);
  });
}
result<trace_table<v2018_container_meta>> read_v2018_container_meta(const std::string& path,
                                                                    const read_options& opt) {
  return read_file(path, opt, [](std::string_view t, std::string_view f, const read_options& o) {
    return parse_v2018_container_meta(t, f, o);
  });
}
result<trace_table<v2018_container_usage>> read_v2018_container_usage(const std::string& path,
                                                                      const read_options& opt) {
  return read_file(path, opt, [](std::string_view t, std::string_view f, const read_options& o) {
    return parse_v2018_container_usage(t, f, o);
  });
}
result<trace_table<v2018_batch_task>> read_v2018_batch_task(const std::string& path,
                                                            const read_options& opt) {
  return read_file(path, opt, [](std::string_view t, std::string_view f, const read_options& o) {
    return parse_v2018_batch_task(t, f, o);
  });
}
result<trace_table<v2018_batch_instance>> read_v2018_batch_instance(const std::string& path,
                                                                    const read_options& opt) {
  return read_file(path, opt, [](std::string_view t, std::string_view f, const read_options& o) {
    return parse_v2018_batch_instance(t, f, o);
  });
}

result<scan_summary> scan_v2018_machine_usage(
    const std::string& path, const read_options& opt,
    const std::function<void(const v2018_machine_usage&)>& fn) {
  return detail::scan_rows<v2018_machine_usage>(path, opt, 9, machine_usage_row, fn);
}
result<scan_summary> scan_v2018_container_usage(
    const std::string& path, const read_options& opt,
    const std::function<void(const v2018_container_usage&)>& fn) {
  return detail::scan_rows<v2018_container_usage>(path, opt, 11, container_usage_row, fn);
}
result<scan_summary> scan_v2018_batch_instance(
    const std::string& path, const read_options& opt,
    const std::function<void(const v2018_batch_instance&)>& fn) {
  return detail::scan_rows<v2018_batch_instance>(path, opt, 14, batch_instance_row, fn);
}

}  // namespace colony::trace
