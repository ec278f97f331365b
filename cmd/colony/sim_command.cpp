// colony sim: replay a trace, or re-simulate a cluster's event log (--from-log), on a virtual
// clock under one or several policy configs (sim/cli.hpp does the work; docs/sim.md documents
// options, outputs and exit codes).
#include <cstdio>
#include <vector>

#include "cmd/colony/commands.hpp"
#include "cmd/colony/exit_codes.hpp"
#include "sim/cli.hpp"

namespace colony::cli {

void add_sim_command(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "sim",
      "Simulate a cluster trace, or re-simulate a cluster's event log (what-if), on a virtual "
      "clock under policy configs and report");
  auto a = std::make_shared<sim::sim_args>();
  auto* trace = cmd->add_option("--trace", a->trace,
                                "Trace directory (default: $COLONY_TRACES, ./traces, "
                                "<binary>/../../traces, the source tree's traces)");
  auto* from_log = cmd->add_option(
      "--from-log", a->from_log,
      "Re-simulate the observations of a cluster's event log (colony run --log DIR) instead of "
      "a trace; a config replaces the cluster's configuration of the kinds it gives, "
      "builtin:recorded keeps the cluster's own (the default)");
  from_log->excludes(trace);
  auto* pod_list = cmd->add_option("--pod-list", a->pod_list,
                                   "openb pod list variant: openb_pod_list_<NAME>.csv")
                       ->capture_default_str();
  auto* node_list = cmd->add_option("--node-list", a->node_list,
                                    "openb node list variant: openb_node_list_<NAME>.csv "
                                    "(all_node, or gpu_node: the GPU nodes alone)")
                        ->capture_default_str();
  cmd->add_option("--config", a->configs,
                  "Sim config YAML (repeat to compare configs side by side; with --from-log, "
                  "builtin:recorded names the cluster's own configuration)");
  cmd->add_option("--out", a->out, "Output directory")->capture_default_str();
  cmd->add_option("--log", a->log, "Event log path (default: OUT/log)");
  cmd->add_option("--plot-format", a->plot_format,
                  "Plots as svg (vector; drawn in a fraction of png's time) or png")
      ->check(CLI::IsMember({"svg", "png"}))
      ->capture_default_str();
  cmd->add_option("--threads", a->threads,
                  "Worker threads (node-scoped components; the log is the same at any count)")
      ->capture_default_str();
  // Trace-only flags: a log has its own usage (NodeMetric), lifetimes, seeds and clock.
  std::vector<CLI::Option*> trace_only{pod_list, node_list};
  trace_only.push_back(
      cmd->add_option("--usage-model", a->usage_model,
                      "Override the configs' usage model: none|v2018-curves|trace"));
  trace_only.push_back(cmd->add_option("--lifetime", a->lifetime,
                                       "Override the configs' pod lifetime: trace|running-stays"));
  trace_only.push_back(cmd->add_flag("--skip-bad-rows", a->skip_bad_rows,
                                     "Skip malformed trace rows (counted in the report)"));
  trace_only.push_back(
      cmd->add_option("--seed", a->seed, "Seed of every random choice")->capture_default_str());
  trace_only.push_back(
      cmd->add_option("--from-days", a->from_days,
                      "Start the virtual clock at this day (earlier pods are submitted then)"));
  trace_only.push_back(cmd->add_option("--until-days", a->until_days,
                                       "Stop the virtual clock after this many days"));
  trace_only.push_back(cmd->add_flag(
      "--until-saturated", a->until_saturated,
      "The FGD paper's experiment: the pod list (inflated, shuffled per seed as the FGD authors' "
      "simulator does) submitted pod after pod until the cluster saturates; GPU allocation and "
      "fragmentation by arrived GPU request (docs/results.md)"));
  trace_only.push_back(
      cmd->add_option("--inflate", a->inflate,
                      "With --until-saturated: the total GPU request as a multiple of the "
                      "cluster's GPUs (the FGD paper's tune ratio)")
          ->capture_default_str());
  trace_only.push_back(
      cmd->add_option("--seeds", a->seeds,
                      "With --until-saturated: how many seeds, from --seed on (the paper: "
                      "--seed 42 --seeds 10)")
          ->capture_default_str());
  for (auto* o : trace_only) from_log->excludes(o);
  cmd->add_flag("--quiet", a->quiet, "Do not print the summary");
  cmd->callback([a] {
    auto r = sim::run_sim_command(*a);
    if (!r) {
      std::fprintf(stderr, "colony sim: %s\n", r.error().describe().c_str());
      exit_status() = exit_code_for(r.error());
      return;
    }
    exit_status() = exit_ok;
  });
}

}  // namespace colony::cli
