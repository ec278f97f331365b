// Readers for Alibaba cluster-trace-v2018 tables (headerless CSV).
//
// Column order follows alibaba/clusterdata cluster-trace-v2018/schema.txt. Units out are
// Colony's: times in milliseconds of event time (seconds x 1000; 0 means "before or after
// the 8-day window" in the schema and is kept as 0), CPU in milli-cores (cpu_num cores x 1000;
// cpu_request/limit, plan_cpu, cpu_avg/max are 1/100 core, x 10), memory in bytes where the
// trace gives a normalised size (value / 100 x read_options::v2018_memory_full_bytes; the
// normalised value is kept too). Utilisation stays in percent of the machine/container.
// Empty fields are missing (std::nullopt / empty string), never 0. Usage metrics are float
// (7 significant digits; a full machine_usage table has tens of millions of rows). The documented
// invalid markers -1 and 101 in percent fields read as missing and are counted as invalid_values.
// machine_meta and machine_usage are bundled in traces/alibaba-v2018-machine/; the other
// four tables are for users who hold the full download (not bundled: no public extract).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "bridges/trace/read_options.hpp"
#include "messages/result.hpp"
#include "messages/units.hpp"

namespace colony::trace {

// machine_meta: machine_id, time_stamp, failure_domain_1, failure_domain_2, cpu_num,
// mem_size, status. One row per machine event / snapshot.
struct v2018_machine_meta {
  std::string machine_id;
  event_time time{};
  std::optional<std::int64_t> failure_domain_1;
  std::string failure_domain_2;              // enumerated; empty = missing
  std::optional<std::int64_t> cpu_milli;     // cpu_num x 1000
  std::optional<double> mem_size;            // normalised [0, 100]
  std::optional<std::int64_t> memory_bytes;  // mem_size / 100 x v2018_memory_full_bytes
  std::string status;                        // USING, IMPORT_INSTALLING, ...
  std::uint32_t line = 0;
};

// machine_usage: machine_id, time_stamp, cpu_util_percent, mem_util_percent, mem_gps, mkpi,
// net_in, net_out, disk_io_percent.
struct v2018_machine_usage {
  std::string machine_id;
  event_time time{};
  std::optional<double> cpu_util_percent;  // [0, 100] of the whole machine
  std::optional<double> mem_util_percent;  // [0, 100] of the whole machine
  std::optional<double> mem_gps;           // normalised memory bandwidth
  std::optional<double> mkpi;              // cache misses per kilo-instruction
  std::optional<double> net_in;            // normalised (behaves like a counter)
  std::optional<double> net_out;
  std::optional<double> disk_io_percent;  // [0, 100]
  std::uint32_t line = 0;
};

// container_meta: container_id, machine_id, time_stamp, app_du, status, cpu_request,
// cpu_limit, mem_size.
struct v2018_container_meta {
  std::string container_id;
  std::string machine_id;
  event_time time{};
  std::string app_du;  // deploy unit (application group)
  std::string status;
  std::optional<std::int64_t> cpu_request_milli;  // cpu_request (1/100 core) x 10
  std::optional<std::int64_t> cpu_limit_milli;    // cpu_limit (1/100 core) x 10
  std::optional<double> mem_size;                 // normalised [0, 100]
  std::optional<std::int64_t> memory_bytes;
  std::uint32_t line = 0;
};

// container_usage: container_id, machine_id, time_stamp, cpu_util_percent,
// mem_util_percent, cpi, mem_gps, mpki, net_in, net_out, disk_io_percent.
struct v2018_container_usage {
  std::string container_id;
  std::string machine_id;
  event_time time{};
  std::optional<double> cpu_util_percent;  // >= 0; may exceed 100 (no upper bound checked)
  std::optional<double> mem_util_percent;
  std::optional<double> cpi;
  std::optional<double> mem_gps;
  std::optional<double> mpki;
  std::optional<double> net_in;
  std::optional<double> net_out;
  std::optional<double> disk_io_percent;
  std::uint32_t line = 0;
};

// The DAG a batch task_name encodes (trace_2018.md section 2.3): "M5_3_4" is task 5 of its
// job, depending on tasks 3 and 4; the leading letters carry no dependency meaning. Names
// that do not follow the pattern ("task_Nzg3...", "MergeTask") are independent tasks.
struct v2018_task_dag {
  bool in_dag = false;  // name follows <letters><id>(_<dep>)*
  std::string kind;     // leading letters, e.g. "M", "R"
  std::int64_t id = 0;
  std::vector<std::int64_t> depends_on;
};
[[nodiscard]] v2018_task_dag parse_task_name(std::string_view task_name);

// batch_task: task_name, instance_num, job_name, task_type, status, start_time, end_time,
// plan_cpu, plan_mem.
struct v2018_batch_task {
  std::string task_name;
  std::optional<std::int64_t> instance_num;
  std::string job_name;
  std::string task_type;
  std::string status;
  std::optional<event_time> start;
  std::optional<event_time> end;
  std::optional<std::int64_t> plan_cpu_milli;  // plan_cpu (1/100 core) x 10
  std::optional<double> plan_mem;              // normalised [0, 100]
  std::optional<std::int64_t> plan_memory_bytes;
  v2018_task_dag dag;  // parsed from task_name
  std::uint32_t line = 0;
};

// batch_instance: instance_name, task_name, job_name, task_type, status, start_time,
// end_time, machine_id, seq_no, total_seq_no, cpu_avg, cpu_max, mem_avg, mem_max.
struct v2018_batch_instance {
  std::string instance_name;
  std::string task_name;
  std::string job_name;
  std::string task_type;
  std::string status;
  std::optional<event_time> start;
  std::optional<event_time> end;
  std::string machine_id;  // empty = not placed
  std::optional<std::int64_t> seq_no;
  std::optional<std::int64_t> total_seq_no;
  std::optional<std::int64_t> cpu_avg_milli;  // cpu_avg (1/100 core) x 10
  std::optional<std::int64_t> cpu_max_milli;
  std::optional<double> mem_avg;  // normalised [0, 100]
  std::optional<double> mem_max;
  std::uint32_t line = 0;
};

// Sorting (read_options::sort_by_time): machine_meta, machine_usage, container_meta and
// container_usage by time_stamp; batch_task and batch_instance by start_time (missing
// first). Ties keep file order.
[[nodiscard]] result<trace_table<v2018_machine_meta>> parse_v2018_machine_meta(
    std::string_view text, std::string_view file, const read_options& opt = {});
[[nodiscard]] result<trace_table<v2018_machine_usage>> parse_v2018_machine_usage(
    std::string_view text, std::string_view file, const read_options& opt = {});
[[nodiscard]] result<trace_table<v2018_container_meta>> parse_v2018_container_meta(
    std::string_view text, std::string_view file, const read_options& opt = {});
[[nodiscard]] result<trace_table<v2018_container_usage>> parse_v2018_container_usage(
    std::string_view text, std::string_view file, const read_options& opt = {});
[[nodiscard]] result<trace_table<v2018_batch_task>> parse_v2018_batch_task(
    std::string_view text, std::string_view file, const read_options& opt = {});
[[nodiscard]] result<trace_table<v2018_batch_instance>> parse_v2018_batch_instance(
    std::string_view text, std::string_view file, const read_options& opt = {});

[[nodiscard]] result<trace_table<v2018_machine_meta>> read_v2018_machine_meta(
    const std::string& path, const read_options& opt = {});
[[nodiscard]] result<trace_table<v2018_machine_usage>> read_v2018_machine_usage(
    const std::string& path, const read_options& opt = {});
[[nodiscard]] result<trace_table<v2018_container_meta>> read_v2018_container_meta(
    const std::string& path, const read_options& opt = {});
[[nodiscard]] result<trace_table<v2018_container_usage>> read_v2018_container_usage(
    const std::string& path, const read_options& opt = {});
[[nodiscard]] result<trace_table<v2018_batch_task>> read_v2018_batch_task(
    const std::string& path, const read_options& opt = {});
[[nodiscard]] result<trace_table<v2018_batch_instance>> read_v2018_batch_instance(
    const std::string& path, const read_options& opt = {});

// Streaming scans for the tables that do not fit in memory at full size (the full
// download's machine_usage, container_usage and batch_instance run to tens of GB): the file
// is read in 4 MiB chunks and every accepted row goes to fn, in file order (read_options::
// sort_by_time does not apply). Same checks, errors and warnings as the read_* functions.
[[nodiscard]] result<scan_summary> scan_v2018_machine_usage(
    const std::string& path, const read_options& opt,
    const std::function<void(const v2018_machine_usage&)>& fn);
[[nodiscard]] result<scan_summary> scan_v2018_container_usage(
    const std::string& path, const read_options& opt,
    const std::function<void(const v2018_container_usage&)>& fn);
[[nodiscard]] result<scan_summary> scan_v2018_batch_instance(
    const std::string& path, const read_options& opt,
    const std::function<void(const v2018_batch_instance&)>& fn);

}  // namespace colony::trace
