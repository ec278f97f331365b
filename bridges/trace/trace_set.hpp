// trace_set: every trace table found in one directory, loaded with one call.
//
// load_trace_set(dir) looks in dir and in its immediate subdirectories (the bundled layout:
// traces/alibaba-gpu-v2023-openb/, traces/alibaba-v2018-machine/, ...) for the file names
// the readers know, each either as published or with a "synthetic-" prefix (files written
// by `colony trace synth`):
//   openb_node_list_<node_list>.csv, openb_pod_list_<pod_list>.csv  (openb v2023)
//   machine_meta.csv, machine_usage.csv, container_meta.csv, container_usage.csv,
//   batch_task.csv, batch_instance.csv                            (Alibaba v2018)
//   server_event.csv                                              (Alibaba v2017)
// A folder holding server_event.csv is a v2017 folder: its batch_* / container_* files use
// v2017 columns and are not read as v2018 tables. A table found twice (two folders, or both
// real and synthetic) is an error rather than a silent pick. Folders are scanned in name
// order so the outcome never depends on directory iteration order.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "bridges/trace/alibaba_v2017.hpp"
#include "bridges/trace/alibaba_v2018.hpp"
#include "bridges/trace/openb.hpp"
#include "bridges/trace/read_options.hpp"
#include "messages/result.hpp"

namespace colony::trace {

struct trace_set_options {
  // Which openb pod list to load: openb_pod_list_<pod_list>.csv.
  // Default: "default" (the list the other variants are sampled from; upstream README).
  std::string pod_list = "default";
  // Which openb node list to load: openb_node_list_<node_list>.csv (the FGD authors publish
  // all_node and gpu_node, the GPU nodes alone). Default: "all_node" (the whole cluster).
  std::string node_list = "all_node";
  read_options read;
  // File names (e.g. "machine_usage.csv") not to read even when present: a caller that will not
  // use a table does not pay for parsing it. Skipped files are not listed in trace_set::files.
  std::vector<std::string> skip;
};

struct trace_set {
  std::string dir;
  bool synthetic = false;               // at least one table came from a synthetic-* file
  std::vector<std::string> files;       // every file loaded, in load order
  std::vector<std::string> pod_lists;   // openb pod-list variants present (sorted)
  std::vector<std::string> node_lists;  // openb node-list variants present (sorted)
  std::optional<trace_table<openb_node>> openb_nodes;
  std::optional<trace_table<openb_pod>> openb_pods;
  std::optional<trace_table<v2018_machine_meta>> machine_meta;
  std::optional<trace_table<v2018_machine_usage>> machine_usage;
  std::optional<trace_table<v2018_container_meta>> container_meta;
  std::optional<trace_table<v2018_container_usage>> container_usage;
  std::optional<trace_table<v2018_batch_task>> batch_task;
  std::optional<trace_table<v2018_batch_instance>> batch_instance;
  std::optional<trace_table<v2017_server_event>> server_event;

  // Warnings of every table (skip_bad_rows), in load order.
  [[nodiscard]] std::size_t warning_count() const;
};

// Errors: not_found if dir is missing or holds no known table, or if openb pods are present
// but not the requested pod_list, or node lists but not node_list (the message lists the
// variants found); invalid_input for
// ambiguous tables and for any reader error (its where is kept).
[[nodiscard]] result<trace_set> load_trace_set(const std::string& dir,
                                               const trace_set_options& opt = {});

}  // namespace colony::trace
