// colony: Koordinator's co-location control plane as an event-sourced actor system.
#include <cstdio>

#include "cmd/colony/commands.hpp"
#include "cmd/colony/exit_codes.hpp"

#ifndef COLONY_VERSION
#define COLONY_VERSION "0.0.0"
#endif

int main(int argc, char** argv) {
  using namespace colony::cli;
  CLI::App app{"colony: Koordinator co-location as an event-sourced actor system"};
  app.add_flag_callback(
      "--version",
      [] {
        std::printf("colony %s\n", COLONY_VERSION);
        throw CLI::Success();
      },
      "Print the version and exit");
  app.require_subcommand(1);
  app.footer(
      "Exit codes: 0 ok, 1 check failed, 2 usage, 3 invalid input, 4 corrupt data, 5 not found,\n"
      "6 unavailable, 7 failed precondition, 70 internal error (docs/operating.md).");
  add_sim_command(app);
  add_trace_command(app);
  add_log_commands(app);
  add_replay_command(app);
  add_bench_command(app);
  add_kafka_commands(app);
  add_explain_command(app);
  add_elect_command(app);
  add_run_command(app);
  add_koordlet_command(app);
  return parse_and_run(app, argc, argv, "colony");
}
