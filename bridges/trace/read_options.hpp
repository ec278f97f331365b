// read_options, row_warning, trace_table: what every trace reader takes and gives back.
//
// Readers are strict by default: the first malformed row stops the read with a
// colony::error whose where is "file:line:column" and whose message says what was
// expected. With skip_bad_rows the bad row is dropped and reported as a row_warning
// instead, so a long trace with a few damaged lines still loads (and says so).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "messages/units.hpp"

namespace colony::trace {

struct read_options {
  // Turn malformed rows into counted warnings instead of failing the read.
  // Default: false (Colony choice: a replay on silently damaged input is worse than none).
  bool skip_bad_rows = false;
  // Sort time-stamped rows by time; ties keep the original row order (stable sort), so the
  // output order is a pure function of the file. Node lists have no time and keep file order.
  // Default: true (Alibaba files are grouped by machine or renumbered, not time-ordered).
  bool sort_by_time = true;
  // Bytes that normalised memory 100 stands for in v2018 (machine_meta mem_size,
  // container_meta mem_size, batch plan_mem / mem_avg / mem_max). The trace publishes no
  // absolute size; this is a modelling choice that results must state.
  // Default: 512 GiB (Colony choice, not from the trace).
  std::int64_t v2018_memory_full_bytes = 512 * gib;
  // Bytes that normalised memory 1.0 stands for in v2017 server_event.
  // Default: 512 GiB (Colony choice, not from the trace).
  std::int64_t v2017_memory_full_bytes = 512 * gib;
};

// One skipped row: where = "file:line:column", message = what was expected.
struct row_warning {
  std::string where;
  std::string message;
};

template <class Row>
struct trace_table {
  std::string file;                   // the name used in diagnostics
  std::vector<Row> rows;              // accepted rows, time-sorted if asked
  std::vector<row_warning> warnings;  // one per skipped row (skip_bad_rows only)
  std::size_t missing_values = 0;     // empty optional fields read as missing (never as 0)
  std::size_t invalid_values = 0;     // documented invalid markers (-1 / 101) read as missing
  // What the reader assumed for columns the file does not have (a shorter published layout),
  // one sentence each; empty when the file has every column.
  std::vector<std::string> assumed;
};

// What a streaming scan (scan_* functions) reports: the rows themselves went to the caller.
struct scan_summary {
  std::string file;
  std::size_t rows = 0;               // rows handed to the callback
  std::vector<row_warning> warnings;  // one per skipped row (skip_bad_rows only)
  std::size_t missing_values = 0;
  std::size_t invalid_values = 0;
};

}  // namespace colony::trace
