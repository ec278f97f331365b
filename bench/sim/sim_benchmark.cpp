// colony bench sim.*: the simulator on the bundled openb trace (scheduling only; full
// co-location with 60-s NodeMetric) and on a synthetic 4,034-node x 8-day trace. Each run writes
// its event log to a temporary folder (removed after). Quick mode cuts the virtual time.
#include <sys/resource.h>
#include <unistd.h>

#include <filesystem>

#include "bench/registry.hpp"
#include "bridges/trace/synth.hpp"
#include "bridges/trace/trace_set.hpp"
#include "sim/cli.hpp"
#include "sim/driver.hpp"

namespace {

namespace fs = std::filesystem;
using namespace colony;

std::string temp_log(const char* name) {
  return (fs::temp_directory_path() /
          ("colony-bench-" + std::string(name) + "-" + std::to_string(::getpid())))
      .string();
}

double peak_rss_gib() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_maxrss) / (1024.0 * 1024.0);  // ru_maxrss is KiB on Linux
}

void run_and_report(bench::context& ctx, const char* name, const trace::trace_set& t,
                    const sim::sim_config& c, sim::run_options o) {
  o.log_path = temp_log(name);
  auto r = sim::run_simulation(t, c, o);
  std::error_code ec;
  fs::remove_all(o.log_path, ec);
  if (!r) {
    ctx.report(std::string(name) + ".error", 1, r.error().describe());
    return;
  }
  const std::string n(name);
  ctx.report(n + ".wall_s", r->timing["wall_seconds"].get<double>(), "s");
  ctx.report(n + ".events", static_cast<double>(r->timing["events"].get<std::uint64_t>()),
             "events");
  ctx.report(n + ".events_per_s", r->timing["events_per_second"].get<double>(), "events/s");
  ctx.report(n + ".time_compression", r->timing["time_compression"].get<double>(), "x");
  ctx.report(n + ".host_us_per_event", r->timing["host_us_per_event"].get<double>(), "us");
  ctx.report(n + ".peak_rss", peak_rss_gib(), "GiB");
}

}  // namespace

COLONY_BENCH("sim.openb_usage_none",
             "openb default trace, scheduling only (--usage-model none); goal < 1 s") {
  auto t = trace::load_trace_set(sim::default_trace_dir());
  auto c = sim::default_sim_config();
  if (!t || !c) return;
  sim::run_options o;
  o.usage_override = sim::usage_model::none;
  run_and_report(ctx, "sim.openb_usage_none", *t, *c, o);
}

COLONY_BENCH("sim.openb_colocation_60s",
             "openb default trace, co-location + 60-s NodeMetric (v2018-curves); goal >= 50,000x "
             "time compression") {
  auto t = trace::load_trace_set(sim::default_trace_dir());
  auto c = sim::default_sim_config();
  if (!t || !c) return;
  c->idle_node_report_interval_s = 0;  // every node reports every 60 s, as Koordinator does
  sim::run_options o;
  o.threads = 2;
  // The busy window (days 114-149; the first 114 days hold 33 pods); quick: one busy day.
  o.from_ms = (ctx.quick() ? 120LL : 114LL) * 86'400'000;
  if (ctx.quick()) o.until_ms = 121LL * 86'400'000;
  run_and_report(ctx, "sim.openb_colocation_60s", *t, *c, o);
}

COLONY_BENCH("sim.synthetic_4034x8",
             "synthetic 4,034 nodes x 8 days, 60-s NodeMetric; goal < 2 min, RSS < 4 GiB") {
  auto real = trace::load_trace_set(sim::default_trace_dir());
  auto c = sim::default_sim_config();
  if (!real || !c) return;
  auto cal = trace::calibrate(*real->openb_nodes, *real->openb_pods, *real->machine_usage);
  if (!cal) return;
  trace::synth_params p;
  p.nodes = 4034;
  p.days = ctx.quick() ? 1 : 8;
  p.pods = ctx.quick() ? 5000 : 40000;
  auto s = trace::synthesize(*cal, p);
  if (!s) return;
  trace::trace_set t;
  t.dir = "<synthetic in memory>";
  t.synthetic = true;
  t.openb_nodes.emplace();
  t.openb_nodes->rows = s->nodes;
  t.openb_pods.emplace();
  t.openb_pods->rows = s->pods;
  t.machine_usage = real->machine_usage;  // the real curves the synthetic usage is drawn from
  c->idle_node_report_interval_s = 0;     // 60-s NodeMetric from every node
  sim::run_options o;
  o.threads = 2;
  run_and_report(ctx, "sim.synthetic_4034x8", t, *c, o);
}
