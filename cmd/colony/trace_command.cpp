// colony trace synth: write a synthetic trace calibrated on the bundled real extracts
// (bridges/trace/synth.hpp; docs/sim.md "trace synth").
#include <cstdio>

#include "cmd/colony/commands.hpp"
#include "cmd/colony/exit_codes.hpp"
#include "sim/cli.hpp"

namespace colony::cli {

void add_trace_command(CLI::App& app) {
  auto* trace = app.add_subcommand("trace", "Trace tools");
  trace->require_subcommand(1);
  auto* synth =
      trace->add_subcommand("synth", "Write a SYNTHETIC trace calibrated on the real extracts");
  auto a = std::make_shared<sim::synth_args>();
  synth->add_option("--nodes", a->nodes, "Nodes")->capture_default_str();
  synth->add_option("--pods", a->pods, "Pods")->capture_default_str();
  synth->add_option("--days", a->days, "Days spanned by pod arrivals")->capture_default_str();
  synth->add_option("--seed", a->seed, "Seed")->capture_default_str();
  synth->add_option("--out", a->out, "Output directory")->capture_default_str();
  synth->add_option("--calibration", a->calibration,
                    "Trace directory to calibrate on (default: bundled traces)");
  synth->callback([a] {
    auto r = sim::run_trace_synth(*a);
    if (!r) {
      std::fprintf(stderr, "colony trace synth: %s\n", r.error().describe().c_str());
      exit_status() = exit_code_for(r.error());
      return;
    }
    exit_status() = exit_ok;
  });
}

}  // namespace colony::cli
