#include "sim/cli.hpp"

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <iostream>
#include <set>

#include <fmt/format.h>

#include "bridges/trace/synth.hpp"
#include "bridges/trace/trace_set.hpp"
#include "sim/driver.hpp"
#include "sim/fgd_experiment.hpp"
#include "sim/report.hpp"
#include "sim/sim_config.hpp"

#ifndef COLONY_SIM_SOURCE_TRACES
#define COLONY_SIM_SOURCE_TRACES "traces"
#endif

namespace colony::sim {

namespace fs = std::filesystem;

std::string default_trace_dir() {
  if (const char* e = std::getenv("COLONY_TRACES"); e != nullptr && *e != 0) return e;
  std::error_code ec;
  if (fs::is_directory("traces", ec)) return "traces";
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    for (const auto& rel : {"../../traces", "../share/colony/traces", "../traces"}) {
      const fs::path p = exe.parent_path() / rel;
      if (fs::is_directory(p, ec)) return fs::weakly_canonical(p, ec).string();
    }
  }
  return COLONY_SIM_SOURCE_TRACES;
}

namespace {

// A progress bar with ETA on stderr, drawn only when stderr is a terminal.
class progress_bar {
 public:
  explicit progress_bar(std::string label)
      : label_(std::move(label)), tty_(isatty(fileno(stderr)) != 0) {}
  void update(std::int64_t done, std::int64_t total) {
    if (!tty_ || total <= 0) return;
    const double f = std::clamp(static_cast<double>(done) / static_cast<double>(total), 0.0, 1.0);
    const double el = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0_).count();
    const double eta = f > 0.001 ? el * (1 - f) / f : 0;
    const int width = 30;
    const int fill = static_cast<int>(f * width);
    std::fprintf(stderr, "\r%s [%s%s] %5.1f%%  day %.1f/%.1f  ETA %.0fs   ", label_.c_str(),
                 std::string(static_cast<std::size_t>(fill), '#').c_str(),
                 std::string(static_cast<std::size_t>(width - fill), ' ').c_str(), f * 100,
                 static_cast<double>(done) / 86.4e6, static_cast<double>(total) / 86.4e6, eta);
    if (done >= total) std::fprintf(stderr, "\n");
    std::fflush(stderr);
  }

 private:
  std::string label_;
  bool tty_;
  std::chrono::steady_clock::time_point t0_ = std::chrono::steady_clock::now();
};

}  // namespace

namespace {

// Several runs side by side: OUT/<config>/ each, then OUT/compare.txt and compare.json.
result<void> write_runs(
    const sim_args& a, const std::vector<sim_config>& configs,
    const std::function<result<run_result>(const sim_config&, const run_options&)>& simulate) {
  std::error_code ec;
  fs::create_directories(a.out, ec);
  if (ec) return fail(errc::unavailable, ec.message(), a.out);
  const bool compare = configs.size() > 1;
  // Started now so that gnuplot's start overlaps the simulation (sim/gnuplot.hpp).
  const auto format = a.plot_format == "png" ? plot_format::png : plot_format::svg;
  gnuplot_pool gnuplot(plot_processes(format));
  std::vector<run_result> results;
  results.reserve(configs.size());
  for (const auto& cfg : configs) {
    const fs::path out = compare ? fs::path(a.out) / cfg.name : fs::path(a.out);
    fs::create_directories(out, ec);
    run_options ro;
    ro.threads = a.threads;
    ro.release_in_background = true;  // joined when `results` goes, after every report
    ro.seed = a.seed;
    ro.log_path =
        a.log.empty() ? (out / "log").string() : (compare ? a.log + "-" + cfg.name : a.log);
    ro.from_ms = static_cast<std::int64_t>(a.from_days * 86.4e6);
    if (a.until_days >= 0) ro.until_ms = static_cast<std::int64_t>(a.until_days * 86.4e6);
    progress_bar bar("sim " + cfg.name);
    ro.progress = [&bar](std::int64_t d, std::int64_t t) { bar.update(d, t); };
    auto r = simulate(cfg, ro);
    if (!r) return tl::unexpected(r.error());
    auto files = write_report(out.string(), *r, gnuplot, format);
    if (!files) return tl::unexpected(files.error());
    if (!a.quiet) std::cout << summary_text(*r) << "Report: " << out.string() << "\n\n";
    results.push_back(std::move(*r));
  }
  if (compare) {
    std::vector<std::pair<std::string, const run_result*>> runs;
    for (std::size_t i = 0; i < configs.size(); ++i)
      runs.emplace_back(configs[i].name, &results[i]);
    auto files = write_compare(a.out, runs, gnuplot, format);
    if (!files) return tl::unexpected(files.error());
    if (!a.quiet) {
      std::FILE* f = std::fopen((fs::path(a.out) / "compare.txt").c_str(), "rb");
      if (f != nullptr) {
        char buf[4096];
        std::size_t n;
        while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) std::fwrite(buf, 1, n, stdout);
        std::fclose(f);
      }
    }
  }
  return {};
}

// Loads the configs named (checking that names, which pick output folders, differ); with no
// config, `fallback`.
result<std::vector<sim_config>> load_configs(const std::vector<std::string>& paths,
                                             const std::function<result<sim_config>()>& fallback,
                                             bool from_log) {
  std::vector<sim_config> configs;
  if (paths.empty()) {
    auto c = fallback();
    if (!c) return tl::unexpected(c.error());
    configs.push_back(std::move(*c));
  }
  std::set<std::string> names;
  for (const auto& path : paths) {
    auto c = from_log && path == recorded_config_spelling
                 ? result<sim_config>(recorded_configuration())
                 : load_sim_config(path);
    if (!c) return tl::unexpected(c.error());
    if (!names.insert(c->name).second)
      return fail(errc::invalid_input,
                  "two configs are named '" + c->name + "' (names pick output folders)", path);
    configs.push_back(std::move(*c));
  }
  return configs;
}

}  // namespace

result<void> run_sim_command(const sim_args& a) {
  if (a.threads == 0 || a.threads > 256)
    return fail(errc::invalid_input, "expected 1..256", "--threads");
  if (!a.from_log.empty()) {
    // A cluster's log: no trace, no usage model, no trace clock (docs/sim.md "Re-simulating a
    // cluster's log"); the CLI refuses those flags with --from-log.
    auto configs = load_configs(
        a.configs, [] { return result<sim_config>(recorded_configuration()); }, true);
    if (!configs) return tl::unexpected(configs.error());
    return write_runs(a, *configs, [&](const sim_config& cfg, const run_options& ro) {
      return run_log_simulation(a.from_log, cfg, ro);
    });
  }
  // Configs first: a typo in a config should not wait for the trace to load.
  auto loaded = load_configs(
      a.configs, [] { return default_sim_config(); }, false);
  if (!loaded) return tl::unexpected(loaded.error());
  const std::vector<sim_config>& configs = *loaded;
  std::optional<usage_model> um;
  if (!a.usage_model.empty()) {
    auto m = parse_usage_model(a.usage_model);
    if (!m) return fail(errc::invalid_input, m.error().message, "--usage-model");
    um = *m;
  }
  std::optional<pod_lifetime> lt;
  if (!a.lifetime.empty()) {
    auto m = parse_pod_lifetime(a.lifetime);
    if (!m) return fail(errc::invalid_input, m.error().message, "--lifetime");
    lt = *m;
  }

  const std::string dir = a.trace.empty() ? default_trace_dir() : a.trace;
  trace::trace_set_options topt;
  topt.pod_list = a.pod_list;
  topt.node_list = a.node_list;
  topt.read.skip_bad_rows = a.skip_bad_rows;
  // The sim reads the openb lists, and v2018 machine_usage for the usage curves only; the other
  // tables of the bundled traces (machine_meta, containers, batch jobs, v2017 server events) are
  // for `colony trace` and need not be parsed here.
  topt.skip = {"machine_meta.csv", "container_meta.csv", "container_usage.csv",
               "batch_task.csv",   "batch_instance.csv", "server_event.csv"};
  const bool curves = std::any_of(configs.begin(), configs.end(), [&](const sim_config& c) {
    return um.value_or(c.usage) == usage_model::v2018_curves;
  });
  if (!curves || a.until_saturated) topt.skip.emplace_back("machine_usage.csv");
  auto ts = trace::load_trace_set(dir, topt);
  if (!ts) return tl::unexpected(ts.error());
  if (ts->warning_count() > 0)
    std::fprintf(stderr,
                 "colony sim: warning: %zu bad trace rows skipped (listed in summary.json)\n",
                 ts->warning_count());

  if (a.until_saturated) {
    if (!ts->openb_nodes || !ts->openb_pods || ts->openb_pods->rows.empty())
      return fail(errc::invalid_input, "the trace has no openb node list and pod list", dir);
    fgd_experiment_options fo;
    fo.inflate = a.inflate;
    fo.seed = static_cast<std::int64_t>(a.seed);
    fo.seeds = a.seeds;
    return run_fgd_command(ts->openb_nodes->rows, ts->openb_pods->rows, configs, fo, a.out,
                           a.quiet);
  }
  return write_runs(a, configs, [&](const sim_config& cfg, run_options ro) {
    ro.usage_override = um;
    ro.lifetime_override = lt;
    return run_simulation(*ts, cfg, ro);
  });
}

result<void> run_trace_synth(const synth_args& a) {
  const std::string dir = a.calibration.empty() ? default_trace_dir() : a.calibration;
  auto ts = trace::load_trace_set(dir);
  if (!ts) return tl::unexpected(ts.error());
  if (!ts->openb_nodes || !ts->openb_pods || !ts->machine_usage)
    return fail(errc::invalid_input,
                "calibration needs openb node and pod lists and a v2018 machine_usage", dir);
  auto cal = trace::calibrate(*ts->openb_nodes, *ts->openb_pods, *ts->machine_usage);
  if (!cal) return tl::unexpected(cal.error());
  trace::synth_params p;
  p.nodes = a.nodes;
  p.pods = a.pods;
  p.days = a.days;
  p.seed = a.seed;
  auto t = trace::synthesize(*cal, p);
  if (!t) return tl::unexpected(t.error());
  auto files = trace::write_synthetic(a.out, *t, *cal);
  if (!files) return tl::unexpected(files.error());
  std::printf(
      "colony trace synth: SYNTHETIC trace (%lld nodes, %lld pods, %lld days, seed %llu) written "
      "to %s\n",
      static_cast<long long>(a.nodes), static_cast<long long>(a.pods),
      static_cast<long long>(a.days), static_cast<unsigned long long>(a.seed), a.out.c_str());
  for (const auto& f : *files) std::printf("  %s\n", f.c_str());
  return {};
}

}  // namespace colony::sim
