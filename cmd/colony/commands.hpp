// Subcommands of the colony binary. Each registers itself on the CLI11 app and returns, via
// the callback, an exit code (exit_codes.hpp).
#pragma once

#include <CLI/CLI.hpp>

namespace colony::cli {

// Every subcommand stores its exit code here; main returns it.
int& exit_status();

// Parses the command line (running the chosen subcommand's callback) and returns its exit code:
// exit_usage for a parse error, exit_internal (naming `program`) for an escaped exception.
int parse_and_run(CLI::App& app, int argc, char** argv, const char* program);

void add_log_commands(CLI::App& app);
void add_replay_command(CLI::App& app);
void add_bench_command(CLI::App& app);
void add_sim_command(CLI::App& app);
void add_trace_command(CLI::App& app);
void add_kafka_commands(CLI::App& app);
void add_explain_command(CLI::App& app);
void add_elect_command(CLI::App& app);
void add_run_command(CLI::App& app);
void add_koordlet_command(CLI::App& app);

}  // namespace colony::cli
