// colony-koordlet-bench: the koordlet.agent benchmark in a binary that links what
// colony-koordlet links (the agent, its sources and sinks, the store) and nothing else, so the
// resident set it reports is the node agent's; in `colony bench` the colony binary's other
// components are resident too. Usage: colony-koordlet-bench [--quick] [NAME...] (default: all)
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "bench/registry.hpp"

int main(int argc, char** argv) {
  const bool quick = argc > 1 && std::strcmp(argv[1], "--quick") == 0;
  std::vector<std::string> names;
  for (int i = quick ? 2 : 1; i < argc; ++i) names.emplace_back(argv[i]);
  for (auto& e : colony::bench::registry()) {
    if (!names.empty() && std::find(names.begin(), names.end(), e.name) == names.end()) continue;
    std::fprintf(stderr, "bench: %s ...\n", e.name.c_str());
    colony::bench::context ctx(quick);
    e.run(ctx);
    for (const auto& f : ctx.figures())
      std::printf("{\"name\":\"%s\",\"value\":%.6g,\"unit\":\"%s\"}\n", f.name.c_str(), f.value,
                  f.unit.c_str());
  }
  return 0;
}
