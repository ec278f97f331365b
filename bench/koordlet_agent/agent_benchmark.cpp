// koordlet.agent: `colony koordlet`'s whole loop on a 110-pod node (2 containers each, fake
// cgroup tree and /proc in a temporary directory, dry run): per 1-s collect interval the
// collection, the NodeUsageSampled observation appended (synced) to the embedded log, the koordlet
// component's round over it (its NodeMetric window, the QoS plugins) and, every report interval
// (60 s, Koordinator's default), its NodeMetricReported appended too. CPU burst policy none
// (Koordinator's default) on v1 cgroupfs and v2 systemd, and cfsQuotaBurstOnly on v1. The issue's
// target for collection plus decisions: <= 1 % of one core and <= 30 MiB RSS (docs/koordlet.md
// "Cost"). The window is filled first (warm-up steps, not timed) so the timed steps trim as a
// long-running agent does. CPU is the process's (all threads: RocksDB's too) over the timed step()
// calls.
#include <unistd.h>

#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <string>

#include "bench/registry.hpp"
#include "run/koordlet_agent.hpp"
#include "stores/event_log.hpp"
#include "tests/support/node_tree.hpp"

namespace {

using namespace colony;
using colony::testing::node_tree;
using colony::testing::write_pods_node;

double process_cpu_seconds() {
  timespec ts{};
  ::clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) / 1e9;
}

void run_case(bench::context& ctx, const std::string& name, koordlet::cgroup_version v,
              bool systemd, koordlet::cpu_burst_policy policy = koordlet::cpu_burst_policy::none,
              int throttled_one_in = 1) {
  std::string tmpl =
      (std::filesystem::temp_directory_path() / "colony-bench-agent-XXXXXX").string();
  if (::mkdtemp(tmpl.data()) == nullptr) return;
  const std::filesystem::path root = tmpl;
  {
    node_tree tree(root / "node", v);
    std::int64_t tick = 0;
    write_pods_node(tree, systemd, tick, 110, throttled_one_in);
    auto log = stores::open_log((root / "log").string(), agent::koordlet_log_options());
    if (!log) {
      std::fprintf(stderr, "%s: %s\n", name.c_str(), log.error().describe().c_str());
      std::filesystem::remove_all(root);
      return;
    }
    agent::koordlet_agent_options o;
    o.koordlet.node = "bench-node";
    o.koordlet.cpu_burst.config.policy = policy;
    o.source.cgroup_root = tree.cgroup_root();
    o.source.proc_root = tree.proc_root();
    const std::int64_t t0 = 1'700'000'000'000;
    auto ag = agent::koordlet_agent::open(o, **log, event_time{t0});
    if (!ag) {
      std::fprintf(stderr, "%s: %s\n", name.c_str(), ag.error().describe().c_str());
      std::filesystem::remove_all(root);
      return;
    }
    auto& a = **ag;
    // Warm-up steps leave the tree as it is (usage 0): rewriting ~1,300 files a step is the
    // harness's cost, not the agent's, and only the window's length matters here.
    auto step = [&](std::int64_t i) {
      auto r = a.step(event_time{t0 + i * 1000});
      if (!r) std::fprintf(stderr, "%s: %s\n", name.c_str(), r.error().describe().c_str());
      return r.has_value();
    };
    // Warm-up: the window's pod series (5 min) full; the node series fill to the 30 min the
    // longest aggregated duration keeps in a long run (quick: 2 min).
    const std::int64_t warm = ctx.quick() ? 120 : 1800;
    for (std::int64_t i = 1; i <= warm; ++i)
      if (!step(i)) break;
    const auto from = (*log)->end_offset();
    const std::int64_t n = ctx.quick() ? 60 : 300;
    double cpu = 0;
    for (std::int64_t i = warm + 1; i <= warm + n; ++i) {
      write_pods_node(tree, systemd, ++tick, 110, throttled_one_in);
      const double c0 = process_cpu_seconds();
      auto r = a.step(event_time{t0 + i * 1000});
      cpu += process_cpu_seconds() - c0;
      if (!r) {
        std::fprintf(stderr, "%s: %s\n", name.c_str(), r.error().describe().c_str());
        break;
      }
    }
    const auto& st = a.stats();
    ctx.report(name + ".cpu_per_step", cpu / static_cast<double>(n) * 1e3, "ms");
    ctx.report(name + ".core_share_at_1s", cpu / static_cast<double>(n) * 100, "% of one core");
    ctx.report(name + ".rss", bench::rss_mib(), "MiB");
    ctx.report(name + ".rss_anon", static_cast<double>(bench::status_kib("RssAnon")) / 1024, "MiB");
    ctx.report(name + ".rss_file", static_cast<double>(bench::status_kib("RssFile")) / 1024, "MiB");
    // What the timed steps appended (records as encoded; on disk they are compressed: the
    // log's size is reported as it stands).
    std::uint64_t appended = 0;
    if (from)
      (void)(*log)->read(*from, no_offset, [&](log_offset, messages::bytes_view b) {
        appended += b.size();
        return true;
      });
    ctx.report(name + ".log_record_bytes_per_step",
               static_cast<double>(appended) / static_cast<double>(n), "bytes");
    ctx.report(name + ".log_on_disk",
               static_cast<double>(bench::dir_bytes((root / "log").string())) / (1 << 20), "MiB");
    ctx.report(name + ".reports", static_cast<double>(st.reports), "reports");
    ctx.report(name + ".samples", static_cast<double>(st.samples), "samples");
  }
  std::filesystem::remove_all(root);
}

}  // namespace

COLONY_BENCH("koordlet.agent",
             "colony koordlet's loop (collect, log, koordlet component) on a 110-pod node per "
             "1-s interval, dry run; goal <= 1 % of a core, <= 30 MiB RSS") {
  ctx.report("koordlet.agent.rss_at_start", bench::rss_mib(), "MiB");  // the colony binary alone
  run_case(ctx, "koordlet.agent.v1_cgroupfs", koordlet::cgroup_version::v1, false);
  run_case(ctx, "koordlet.agent.v2_systemd", koordlet::cgroup_version::v2, true);
  // cfs-quota burst on: every container's quota and throttling read and logged. A dry run never
  // applies the quota it decides, so a throttled container is scaled up again every interval:
  // one pod in ten is throttled (7 of its 147 limited containers), the others are not.
  run_case(ctx, "koordlet.agent.v1_cgroupfs_cfs_quota_burst", koordlet::cgroup_version::v1, false,
           koordlet::cpu_burst_policy::cfs_quota_burst_only, 10);
}
