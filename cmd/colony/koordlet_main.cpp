// colony-koordlet: `colony koordlet` alone, the binary a node's DaemonSet runs. The same command
// code as the colony binary's subcommand; without the control plane, the sim and the benchmarks
// linked in, a node keeps less of it resident (docs/koordlet.md "Cost").
#include <string>
#include <vector>

#include "cmd/colony/commands.hpp"
#include "cmd/colony/exit_codes.hpp"

int main(int argc, char** argv) {
  using namespace colony::cli;
  CLI::App app{"colony-koordlet: Colony's koordlet for one node (the same as `colony koordlet`)"};
  add_koordlet_command(app);
  // `colony-koordlet --node N ...` is `colony koordlet --node N ...`.
  std::vector<std::string> args{argv[0], "koordlet"};
  for (int i = 1; i < argc; ++i) args.emplace_back(argv[i]);
  std::vector<char*> av;
  av.reserve(args.size());
  for (auto& a : args) av.push_back(a.data());
  return parse_and_run(app, static_cast<int>(av.size()), av.data(), "colony-koordlet");
}
