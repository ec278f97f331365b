// koordlet.collect: one collection of a 110-pod node (2 containers each) from a fake cgroup tree
// and /proc in a temporary directory: the snapshot (discover kubepods; read every pod and
// container cgroup's CPU and memory, plus throttling and PSI in the _pressure case), the usage
// between two snapshots, the window append and trims, and the NodeMetric build once per 60
// collections. The target for collection plus decisions at a 1-s interval (docs/koordlet.md
// "Cost"): <= 1 % of one core and <= 30 MiB RSS. The window starts full: 30 min of 1-s node samples
// (the longest aggregated duration) and 5 min of pod samples (the aggregate duration), so RSS
// includes it.
#include <sys/resource.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>

#include "bench/registry.hpp"
#include "bridges/node/collector.hpp"
#include "tests/support/node_tree.hpp"

namespace {

using namespace colony;
using colony::testing::node_tree;
using colony::testing::write_pods_node;

double cpu_seconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

void run_case(bench::context& ctx, const std::string& name, koordlet::cgroup_version v,
              bool systemd, bool pressure) {
  std::string tmpl = (std::filesystem::temp_directory_path() / "colony-bench-node-XXXXXX").string();
  if (::mkdtemp(tmpl.data()) == nullptr) return;
  const std::filesystem::path root = tmpl;
  {
    node_tree tree(root, v);
    write_pods_node(tree, systemd, 0);
    node::source_config cfg;
    cfg.cgroup_root = tree.cgroup_root();
    cfg.proc_root = tree.proc_root();
    cfg.read_pressure = pressure;
    auto src = node::node_source::open(cfg);
    if (!src) {
      std::fprintf(stderr, "%s\n", src.error().describe().c_str());
      std::filesystem::remove_all(root);
      return;
    }
    // 30 min of 1-s samples already in the window (node, system, 110 pods).
    koordlet::node_metric_collect_policy policy;
    koordlet::sample_window w;
    auto prev = src->snapshot(event_time{0});
    write_pods_node(tree, systemd, 1);
    auto cur = src->snapshot(event_time{1000});
    auto u = node::usage_between(*prev, *cur);
    if (!u || u->pods.size() != 110) {
      std::fprintf(stderr, "%s: expected 110 pods\n", name.c_str());
      std::filesystem::remove_all(root);
      return;
    }
    const std::int64_t window_s = 1800;
    const std::int64_t pod_keep_s = koordlet::effective_aggregate_duration_seconds(policy);
    for (std::int64_t s = 0; s < window_s; ++s) {  // trimmed as the command trims
      u->time = event_time{s * 1000};
      node::add_to_window(w, *u);
      w.trim_pods(event_time{(s - pod_keep_s) * 1000});
    }
    const auto pods = node::pods_by_uid(*u);
    const double rss_before_loop = bench::rss_mib();
    const int n = ctx.quick() ? 30 : 300;
    const double c0 = cpu_seconds();
    std::size_t reports = 0;
    for (int i = 0; i < n; ++i) {
      const event_time t{(window_s + i) * 1000};
      auto next = src->snapshot(t);
      auto d = node::usage_between(*prev, *next);
      bench::do_not_optimize(d);
      if (d) {
        node::add_to_window(w, *d);
        w.trim(t + duration_ms{-window_s * 1000});
        w.trim_pods(t + duration_ms{-pod_keep_s * 1000});
      }
      if (i % 60 == 0) {
        auto st = koordlet::build_node_metric_status(w, pods, {}, policy, t);
        reports += st.pods_metric.size();
      }
      prev = std::move(next);
    }
    const double per = (cpu_seconds() - c0) / n;
    bench::do_not_optimize(reports);
    ctx.report(name + ".cpu_per_collection", per * 1e3, "ms");
    ctx.report(name + ".core_share_at_1s", per * 100, "% of one core");
    ctx.report(name + ".window_samples", static_cast<double>(w.sample_count()), "samples");
    ctx.report(name + ".rss", bench::rss_mib(), "MiB");
    ctx.report(name + ".rss_growth_in_loop", bench::rss_mib() - rss_before_loop, "MiB");
  }
  std::filesystem::remove_all(root);
}

}  // namespace

COLONY_BENCH("koordlet.collect",
             "110 pods x 2 containers: cgroup + /proc collection and NodeMetric window per 1-s "
             "interval; goal <= 1 % of a core, <= 30 MiB RSS") {
  ctx.report("koordlet.collect.rss_at_start", bench::rss_mib(), "MiB");  // the colony binary alone
  run_case(ctx, "koordlet.collect.v1_cgroupfs", koordlet::cgroup_version::v1, false, false);
  run_case(ctx, "koordlet.collect.v2_systemd", koordlet::cgroup_version::v2, true, false);
  // With cpu.stat throttling and PSI of every pod and container (not needed for NodeMetric).
  run_case(ctx, "koordlet.collect.v2_systemd_pressure", koordlet::cgroup_version::v2, true, true);
}
