// Parse speed of the trace readers on the bundled real files (from memory, so the figure
// is the parser's, not the disk's), the usage-curve extraction, and the synthetic generator.
#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "bench/registry.hpp"
#include "bridges/trace/alibaba_v2018.hpp"
#include "bridges/trace/openb.hpp"
#include "bridges/trace/synth.hpp"
#include "bridges/trace/usage_curves.hpp"

namespace {

std::string traces_dir() {
  const char* env = std::getenv("COLONY_TRACES");
  return env != nullptr ? env : COLONY_TRACES_DIR;
}

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Best of `reps` timed runs of parse(text): rows per second.
template <class Parse>
double best_rows_per_s(const std::string& text, int reps, Parse parse) {
  double best = 1e30;
  std::size_t rows = 0;
  for (int i = 0; i < reps; ++i) {
    double s = colony::bench::seconds_of([&] {
      auto t = parse(text);
      rows = t ? t->rows.size() : 0;
      colony::bench::do_not_optimize(rows);
    });
    best = std::min(best, s);
  }
  return rows == 0 ? 0 : static_cast<double>(rows) / best;
}

}  // namespace

COLONY_BENCH("trace.openb_default", "parse openb_pod_list_default.csv (8,152 pods) from memory") {
  const std::string text =
      slurp(traces_dir() + "/alibaba-gpu-v2023-openb/openb_pod_list_default.csv");
  const int reps = ctx.quick() ? 3 : 20;
  double rps = best_rows_per_s(text, reps, [](const std::string& t) {
    return colony::trace::parse_openb_pods(t, "default");
  });
  ctx.report("trace.openb_default.rows_per_s", rps, "rows/s");
  ctx.report("trace.openb_default.ms", rps > 0 ? 8152.0 / rps * 1e3 : 0, "ms");
}

COLONY_BENCH("trace.v2018_machine_usage",
             "parse v2018 machine_usage.csv (51,362 rows) from memory") {
  const std::string text = slurp(traces_dir() + "/alibaba-v2018-machine/machine_usage.csv");
  const int reps = ctx.quick() ? 3 : 20;
  double rps = best_rows_per_s(text, reps, [](const std::string& t) {
    return colony::trace::parse_v2018_machine_usage(t, "usage");
  });
  ctx.report("trace.v2018_machine_usage.rows_per_s", rps, "rows/s");
  ctx.report("trace.v2018_machine_usage.ms", rps > 0 ? 51362.0 / rps * 1e3 : 0, "ms");
}

COLONY_BENCH("trace.usage_curves", "extract 60 s usage curves from v2018 machine_usage") {
  auto t = colony::trace::parse_v2018_machine_usage(
      slurp(traces_dir() + "/alibaba-v2018-machine/machine_usage.csv"), "usage");
  if (!t) return;
  double best = 1e30;
  for (int i = 0; i < (ctx.quick() ? 2 : 10); ++i)
    best = std::min(best, colony::bench::seconds_of([&] {
                      auto c = colony::trace::extract_usage_curves(t->rows);
                      colony::bench::do_not_optimize(c);
                    }));
  ctx.report("trace.usage_curves.rows_per_s", static_cast<double>(t->rows.size()) / best, "rows/s");
}

COLONY_BENCH("trace.synth", "synthesize nodes x 8 days and format its machine_usage rows") {
  using namespace colony::trace;
  const std::string dir = traces_dir();
  auto nodes = read_openb_nodes(dir + "/alibaba-gpu-v2023-openb/openb_node_list_all_node.csv");
  auto pods = read_openb_pods(dir + "/alibaba-gpu-v2023-openb/openb_pod_list_default.csv");
  auto usage = read_v2018_machine_usage(dir + "/alibaba-v2018-machine/machine_usage.csv");
  if (!nodes || !pods || !usage) return;
  auto calib = calibrate(*nodes, *pods, *usage);
  if (!calib) return;
  synth_params p;
  p.nodes = ctx.quick() ? 400 : 4034;
  p.pods = ctx.quick() ? 10'000 : 100'000;
  p.days = 8;
  std::size_t rows = 0;
  double s = colony::bench::seconds_of([&] {
    auto t = synthesize(*calib, p);
    if (!t) return;
    std::string buf;
    for (std::size_t i = 0; i < t->nodes.size(); ++i) {
      buf.clear();
      append_usage_rows(*t, *calib, i, buf);
      rows += static_cast<std::size_t>(std::count(buf.begin(), buf.end(), '\n'));
    }
    colony::bench::do_not_optimize(rows);
  });
  ctx.report("trace.synth.seconds", s, "s");
  ctx.report("trace.synth.usage_rows_per_s", static_cast<double>(rows) / s, "rows/s");
}
