// koordlet.retention: the node's log over hours of `colony koordlet` on the 110-pod node of
// koordlet.agent (dry run, 1-s interval, fake tree), with the default sample retention (1 h) and
// with none: the log's size on disk every simulated hour, how many records a restart replays and
// how long the open (replay included) takes at the end. Full: 4 h; quick: 40 min with a retention
// raised to the component's 30-min window.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <string>

#include "bench/registry.hpp"
#include "run/koordlet_agent.hpp"
#include "stores/event_log.hpp"
#include "tests/support/node_tree.hpp"

namespace {

using namespace colony;
using colony::testing::node_tree;
using colony::testing::write_pods_node;

void run_case(bench::context& ctx, const std::string& name, std::int64_t retention_ms) {
  std::string tmpl =
      (std::filesystem::temp_directory_path() / "colony-bench-retention-XXXXXX").string();
  if (::mkdtemp(tmpl.data()) == nullptr) return;
  const std::filesystem::path root = tmpl;
  {
    node_tree tree(root / "node", koordlet::cgroup_version::v1);
    write_pods_node(tree, false, 0);
    agent::koordlet_agent_options o;
    o.koordlet.node = "bench-node";
    o.source.cgroup_root = tree.cgroup_root();
    o.source.proc_root = tree.proc_root();
    o.sample_retention_ms = ctx.quick() && retention_ms > 0 ? 1'800'000 : retention_ms;
    const std::int64_t t0 = 1'700'000'000'000;
    const std::int64_t hours = ctx.quick() ? 1 : 4;
    const std::int64_t steps_per_hour = ctx.quick() ? 2400 : 3600;
    std::int64_t t = t0;
    {
      auto log = stores::open_log((root / "log").string(), agent::koordlet_log_options());
      if (!log) return;
      auto ag = agent::koordlet_agent::open(o, **log, event_time{t0});
      if (!ag) {
        std::fprintf(stderr, "%s: %s\n", name.c_str(), ag.error().describe().c_str());
        return;
      }
      // The tree is left as it is between steps (usage 0): rewriting ~1,300 files a step is the
      // harness's cost, and the records' size does not depend on the values.
      for (std::int64_t h = 1; h <= hours; ++h) {
        for (std::int64_t i = 0; i < steps_per_hour; ++i) {
          t += 1000;
          if (auto r = (*ag)->step(event_time{t}); !r) {
            std::fprintf(stderr, "%s: %s\n", name.c_str(), r.error().describe().c_str());
            return;
          }
        }
        ctx.report(name + ".log_mib_after_" + std::to_string(h) + "h",
                   static_cast<double>(bench::dir_bytes((root / "log").string())) / (1 << 20),
                   "MiB");
        std::fprintf(stderr, "  %s: %lld h simulated\n", name.c_str(), static_cast<long long>(h));
      }
      ctx.report(name + ".trimmed", static_cast<double>((*ag)->stats().trimmed), "records");
    }
    auto log = stores::open_log((root / "log").string(), agent::koordlet_log_options());
    if (!log) return;
    const auto w0 = std::chrono::steady_clock::now();
    auto ag = agent::koordlet_agent::open(o, **log, event_time{t + 1000});
    const double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - w0).count();
    if (!ag) return;
    ctx.report(name + ".replayed_at_open", static_cast<double>((*ag)->stats().replayed), "records");
    ctx.report(name + ".open_ms", ms, "ms");
  }
  std::filesystem::remove_all(root);
}

}  // namespace

COLONY_BENCH("koordlet.retention",
             "colony koordlet's node log over hours on a 110-pod node: size on disk and replay "
             "at open, with the default 1-h sample retention and with none") {
  run_case(ctx, "koordlet.retention.1h", 3'600'000);
  run_case(ctx, "koordlet.retention.none", 0);
}
