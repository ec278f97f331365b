// colony bench [NAME...]: runs registered benchmarks, one JSON line per figure.
#include <cstdio>
#include <iostream>

#include <nlohmann/json.hpp>

#include "bench/registry.hpp"
#include "cmd/colony/commands.hpp"
#include "cmd/colony/exit_codes.hpp"

namespace colony::cli {

void add_bench_command(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "bench", "Run benchmarks and print one JSON line per figure: {\"name\",\"value\",\"unit\"}");
  auto names = std::make_shared<std::vector<std::string>>();
  auto list = std::make_shared<bool>(false);
  auto quick = std::make_shared<bool>(false);
  cmd->add_option("names", *names, "Benchmarks to run (prefix match); default: all");
  cmd->add_flag("--list", *list, "List the benchmarks");
  cmd->add_flag("--quick", *quick, "Smaller sizes (for CI smoke runs)");
  cmd->callback([names, list, quick] {
    auto& reg = bench::registry();
    std::sort(reg.begin(), reg.end(),
              [](const bench::entry& a, const bench::entry& b) { return a.name < b.name; });
    if (*list) {
      for (const auto& e : reg) std::cout << e.name << "\t" << e.description << "\n";
      exit_status() = exit_ok;
      return;
    }
    std::size_t ran = 0;
    for (const auto& e : reg) {
      bool want = names->empty();
      for (const auto& n : *names) want = want || e.name.rfind(n, 0) == 0;
      if (!want) continue;
      ++ran;
      std::fprintf(stderr, "bench: %s ...\n", e.name.c_str());
      bench::context ctx(*quick);
      e.run(ctx);
      for (const auto& f : ctx.figures()) {
        nlohmann::ordered_json j;
        j["name"] = f.name;
        j["value"] = f.value;
        j["unit"] = f.unit;
        std::cout << j.dump() << std::endl;
      }
    }
    if (ran == 0) {
      std::fprintf(stderr, "colony: no benchmark matches (see colony bench --list)\n");
      exit_status() = exit_usage;
      return;
    }
    exit_status() = exit_ok;
  });
}

}  // namespace colony::cli
