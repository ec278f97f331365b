// The sim's report: summary.json (deterministic), timing.json (wall clock), summary.txt,
// metrics.csv and plots (gnuplot: SVG, or PNG on request) for one run; compare.txt / compare.json
// and overlaid plots for several configs on the same trace. Schemas: docs/sim.md ("Report").
#pragma once

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include "messages/result.hpp"
#include "sim/driver.hpp"
#include "sim/gnuplot.hpp"

namespace colony::sim {

// The plots' format: SVG (vector, drawn in a fraction of pngcairo's time) or PNG.
enum class plot_format { svg, png };

// Plots render in this many gnuplot processes at once; the CLI starts them before the run so
// that gnuplot's own start overlaps it. PNG: two (on a two-core machine more processes only add
// start-up work competing with the simulation); SVG: one draws them all in ~30 ms
// (docs/results.md).
[[nodiscard]] constexpr std::size_t plot_processes(plot_format f) {
  return f == plot_format::png ? 2 : 1;
}

// Writes OUT files of one run. Plots render in `gnuplot`'s processes; they are skipped (with a
// note in summary.txt) when gnuplot is not installed.
struct report_files {
  std::vector<std::string> written;
  std::vector<std::string> notes;
};
[[nodiscard]] result<report_files> write_report(const std::string& out_dir, const run_result& r,
                                                gnuplot_pool& gnuplot,
                                                plot_format format = plot_format::svg);

// The readable summary (also printed by the CLI).
[[nodiscard]] std::string summary_text(const run_result& r);

// OUT/compare.txt, OUT/compare.json and overlaid plots for runs named by config.
[[nodiscard]] result<report_files> write_compare(
    const std::string& out_dir, const std::vector<std::pair<std::string, const run_result*>>& runs,
    gnuplot_pool& gnuplot, plot_format format = plot_format::svg);

// quota.csv text (header + one row per quota per sample; only written when the config has quotas).
[[nodiscard]] std::string quota_csv(const std::vector<quota_row>& rows);

// metrics.csv text (header + one row per sample).
[[nodiscard]] std::string metrics_csv(const std::vector<metrics_row>& rows);

}  // namespace colony::sim
