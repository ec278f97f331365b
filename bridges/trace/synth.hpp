// trace synth: a synthetic trace in openb and v2018 formats, calibrated on the real
// extracts, for cluster sizes the public samples do not reach (e.g. 4,034 nodes x 8 days).
//
// Two steps, both pure and deterministic for a seed:
//  1. calibrate(): collect the empirical distributions from real tables: node shapes
//     (openb node list), pod rows (openb pod list: requests, GPU, gpu_spec, qos, phase,
//     lifetime and scheduling delay drawn jointly so their correlations survive),
//     inter-arrival gaps (successive creation times inside the pod list's busy window),
//     and usage curves (v2018 machine_usage via extract_usage_curves).
//  2. synthesize(): draw nodes, pods and a per-node usage source from those distributions.
// Random numbers come from std::mt19937_64 raw output only (one stream per purpose, seeded
// by splitmix64(seed + stream tag), so changing the pod count never changes the nodes).
// write_synthetic() writes synthetic-openb_node_list_all_node.csv,
// synthetic-openb_pod_list_default.csv, synthetic-machine_usage.csv, SYNTHETIC.md and
// PROVENANCE.md; load_trace_set() reads that folder back (synthetic = true).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "bridges/trace/alibaba_v2018.hpp"
#include "bridges/trace/openb.hpp"
#include "bridges/trace/usage_curves.hpp"
#include "messages/result.hpp"

namespace colony::trace {

struct synth_params {
  std::int64_t nodes = 1523;  // Default: 1,523 (openb node list size)
  std::int64_t pods = 8152;   // Default: 8,152 (openb default pod list size)
  std::int64_t days = 8;      // Default: 8 (cluster-trace-v2018's span)
  std::uint64_t seed = 1;     // Default: 1
  // machine_usage sampling step of the output. Default: 300 s (Colony choice: 4,034 nodes
  // x 8 days = 9.3 M rows; v2018 itself averages ~100 s).
  std::int64_t usage_step_s = 300;
};

struct synth_calibration {
  std::vector<openb_node> node_shapes;        // drawn uniformly with replacement
  std::vector<openb_pod> pod_shapes;          // drawn uniformly with replacement (joint rows)
  std::vector<std::int64_t> inter_arrival_s;  // empirical gaps, seconds
  std::vector<usage_curve> curves;            // real usage curves
  std::vector<std::string> sources;           // "file (N rows)" lines for PROVENANCE.md
};

// REQUIRES nothing; fails (invalid_input) when a table is empty or no usage curve can be
// extracted. The busy window starts at the first deletion time in the pod list (before it,
// only a handful of long-lived pods were created: 33 in openb default); gaps are taken
// between successive creation times at or after that instant.
[[nodiscard]] result<synth_calibration> calibrate(const trace_table<openb_node>& nodes,
                                                  const trace_table<openb_pod>& pods,
                                                  const trace_table<v2018_machine_usage>& usage,
                                                  const usage_curve_options& curve_opt = {});

// Where a synthetic node's usage comes from: real curve `curve`, read from `shift_ms` on.
struct synth_usage_source {
  std::uint32_t curve = 0;
  std::int64_t shift_ms = 0;
};

struct synth_trace {
  synth_params params;
  std::vector<openb_node> nodes;          // names synth-node-NNNN (short: no heap string)
  std::vector<openb_pod> pods;            // names synth-pod-NNNN, sorted by creation
  std::vector<synth_usage_source> usage;  // one per node, same order
};

// Pods: arrival times are a cumulative sum of pods+1 empirical gaps, rescaled so that the
// sum spans exactly `days` (shape of the arrival process kept, rate set by pods/days).
// Each pod copies a drawn real row's requests, GPU, gpu_spec, qos, phase, lifetime and
// scheduling delay. Deletion is clipped at the end of the span; a clipped Succeeded or
// Failed pod becomes Running (as openb marks pods still alive at trace end); a pod whose
// scheduling delay passes the end becomes Pending with no scheduled time. Nodes: drawn
// node shapes. Usage: each node draws a curve and a start shift within it.
// Errors: invalid_input for non-positive nodes/pods/days/usage_step_s or an empty
// calibration.
[[nodiscard]] result<synth_trace> synthesize(const synth_calibration& calib,
                                             const synth_params& params);

// v2018-format machine_usage rows of node i, appended to out: one row per usage_step_s
// from 0 to the end of the span, cpu/mem integer percent from the node's curve; the other
// columns are left empty (not modelled). Rows are grouped by node like Alibaba's file.
void append_usage_rows(const synth_trace& t, const synth_calibration& calib, std::size_t node,
                       std::string& out);

// The three CSV files in openb / v2018 formats.
[[nodiscard]] std::string format_openb_nodes(const std::vector<openb_node>& nodes);
[[nodiscard]] std::string format_openb_pods(const std::vector<openb_pod>& pods);

// Writes the synthetic trace into dir (created if needed): synthetic-*.csv, SYNTHETIC.md and
// PROVENANCE.md (seed, parameters, calibration sources, "synthetic, not real data").
// machine_usage is streamed node by node, so memory stays flat at any size.
[[nodiscard]] result<std::vector<std::string>> write_synthetic(const std::string& dir,
                                                               const synth_trace& t,
                                                               const synth_calibration& calib);

}  // namespace colony::trace
