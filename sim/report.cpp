#include "sim/report.hpp"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>
#include <string_view>
#include <vector>

#include <fmt/format.h>

namespace colony::sim {

namespace fs = std::filesystem;

namespace {

result<void> write_file(const fs::path& p, const std::string& text) {
  std::ofstream f(p, std::ios::binary | std::ios::trunc);
  if (!f) return fail(errc::unavailable, "cannot write file", p.string());
  f << text;
  if (!f) return fail(errc::unavailable, "write failed", p.string());
  return {};
}

double pct(std::int64_t a, std::int64_t b) {
  return b > 0 ? 100.0 * static_cast<double>(a) / static_cast<double>(b) : 0.0;
}

// The terminal, and `ext` (the plots' file extension, which every `set output` appends).
std::string plot_header(plot_format f) {
  std::string h = f == plot_format::png
                      ? "set terminal pngcairo size 1100,520 font 'Sans,11'\next = 'png'\n"
                      : "set terminal svg size 1100,520 font 'Sans,11' background "
                        "rgb 'white'\next = 'svg'\n";
  return h +
         "set datafile separator ','\n"
         "set key outside right top\n"
         "set grid\n"
         "set xlabel 'virtual time (days)'\n";
}

const char* extension(plot_format f) { return f == plot_format::png ? "png" : "svg"; }

// Each plot's block sets everything it relies on, so any split over plot_processes() draws the
// same pictures as plots.gp run as one script.

// Writes the whole script (for a user to re-run or edit) and starts rendering its blocks, dealt
// round-robin over plot_processes() gnuplots; gnuplot.wait() collects them.
result<void> start_plots(gnuplot_pool& gnuplot, const fs::path& script,
                         const std::vector<std::string>& blocks, plot_format format) {
  std::string whole = plot_header(format);
  std::vector<std::string> parts(std::min(plot_processes(format), blocks.size()), whole);
  for (std::size_t i = 0; i < blocks.size(); ++i) {
    whole += blocks[i];
    parts[i % parts.size()] += blocks[i];
  }
  if (auto w = write_file(script, whole); !w) return w;
  gnuplot.start(parts);
  return {};
}

// A gnuplot datablock named `name`: one line per row, x then the series, comma-separated. A row
// whose series equal both neighbours' is left out: drawn "with lines", the segments through it
// are one straight segment anyway, so the picture is the same while gnuplot parses and strokes a
// fraction of the points (most metrics hold still for hours of virtual time).
std::string datablock(std::string_view name, const std::vector<std::vector<std::string>>& rows) {
  std::string s = fmt::format("${} << EOD\n", name);
  auto same_series = [&](std::size_t a, std::size_t b) {
    return std::equal(rows[a].begin() + 1, rows[a].end(), rows[b].begin() + 1, rows[b].end());
  };
  for (std::size_t i = 0; i < rows.size(); ++i) {
    if (i > 0 && i + 1 < rows.size() && same_series(i, i - 1) && same_series(i, i + 1)) continue;
    for (std::size_t c = 0; c < rows[i].size(); ++c) {
      if (c != 0) s += ',';
      s += rows[i][c];
    }
    s += '\n';
  }
  return s + "EOD\n";
}

// The datablock of one plot: x = virtual day, then one column per series.
template <class F>
std::string metrics_block(std::string_view name, const std::vector<metrics_row>& rows, F series) {
  std::vector<std::vector<std::string>> t;
  t.reserve(rows.size());
  for (const auto& r : rows) {
    std::vector<std::string> line{
        fmt::format("{:.4f}", static_cast<double>(r.time_ms) / 86'400'000.0)};
    series(r, line);
    t.push_back(std::move(line));
  }
  return datablock(name, t);
}

}  // namespace

std::string quota_csv(const std::vector<quota_row>& rows) {
  std::string s =
      "time_s,time_days,quota,min_cpu_milli,runtime_cpu_milli,used_cpu_milli,request_cpu_milli,"
      "max_cpu_milli,runtime_memory_bytes,used_memory_bytes\n";
  for (const auto& r : rows)
    s += fmt::format("{},{:.4f},{},{},{},{},{},{},{},{}\n", r.time_ms / 1000,
                     static_cast<double>(r.time_ms) / 86'400'000.0, r.quota, r.min_cpu,
                     r.runtime_cpu, r.used_cpu, r.request_cpu, r.max_cpu, r.runtime_memory,
                     r.used_memory);
  return s;
}

std::string metrics_csv(const std::vector<metrics_row>& rows) {
  std::string s =
      "time_s,day,pods_running,pods_pending,cpu_capacity_milli,cpu_requested_milli,cpu_allocated_"
      "milli,"
      "cpu_used_milli,mem_capacity_bytes,mem_requested_bytes,mem_allocated_bytes,mem_used_bytes,"
      "batch_cpu_allocatable_milli,batch_cpu_allocated_milli,batch_cpu_used_milli,batch_mem_"
      "allocatable_bytes,"
      "batch_mem_allocated_bytes,batch_mem_used_bytes,gpu_total_x100,gpu_allocated_x100,gpu_"
      "allocated_pct,"
      "gpu_frag_gpus,gpu_frag_pct,cpu_requested_pct,cpu_allocated_pct,cpu_used_pct,mem_allocated_"
      "pct,mem_used_pct,"
      "evictions_total,unschedulable_events_total,cpu_used_spread_pct,migrations_total\n";
  for (const auto& r : rows) {
    const double gfrag_pct =
        r.gpu_total > 0 ? r.gpu_frag * 10000.0 / static_cast<double>(r.gpu_total) : 0.0;
    s += fmt::format(
        "{},{:.4f},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{:.3f},{:.3f},{:.3f},{:."
        "3f},{:.3f},{:.3f},{:.3f},{:.3f},{},{},{:.3f},{}\n",
        r.time_ms / 1000, static_cast<double>(r.time_ms) / 86'400'000.0, r.pods_running,
        r.pods_pending, r.cpu_capacity, r.cpu_requested, r.cpu_allocated, r.cpu_used,
        r.mem_capacity, r.mem_requested, r.mem_allocated, r.mem_used, r.batch_cpu_allocatable,
        r.batch_cpu_allocated, r.batch_cpu_used, r.batch_mem_allocatable, r.batch_mem_allocated,
        r.batch_mem_used, r.gpu_total, r.gpu_allocated, pct(r.gpu_allocated, r.gpu_total),
        r.gpu_frag, gfrag_pct, pct(r.cpu_requested, r.cpu_capacity),
        pct(r.cpu_allocated, r.cpu_capacity), pct(r.cpu_used, r.cpu_capacity),
        pct(r.mem_allocated, r.mem_capacity), pct(r.mem_used, r.mem_capacity), r.evictions,
        r.unschedulable, r.cpu_used_spread_pct, r.migrations);
  }
  return s;
}

std::string summary_text(const run_result& r) {
  const auto& j = r.summary;
  const auto& t = r.timing;
  std::ostringstream o;
  const auto& p = j["pods"];
  if (j["trace"].contains("log")) {
    // A re-simulation of a cluster's log (--from-log).
    const auto& tr = j["trace"];
    o << fmt::format("colony sim: config '{}' ({}), re-simulating the log {}\n",
                     j["config"]["name"].get<std::string>(),
                     j["config"]["source"].get<std::string>(), tr["log"].get<std::string>());
    o << fmt::format(
        "  {} nodes, {} pods, {} observations fed ({} configuration records replaced), {:.2f} "
        "virtual hours\n",
        tr["nodes"].get<std::uint64_t>(), tr["pods"].get<std::uint64_t>(),
        tr["observations_fed"].get<std::uint64_t>(),
        tr["configuration_replaced"].get<std::uint64_t>(),
        j["virtual_seconds"].get<double>() / 3600.0);
    o << fmt::format(
        "  the log holds {} decisions; this run made {} of them again and {} the log does not "
        "hold\n",
        tr["decisions"].get<std::uint64_t>(), tr["decisions_also_in_log"].get<std::uint64_t>(),
        tr["decisions_not_in_log"].get<std::uint64_t>());
  } else {
    o << fmt::format(
        "colony sim: config '{}' ({}), usage model {}, trace {}{}\n",
        j["config"]["name"].get<std::string>(), j["config"]["source"].get<std::string>(),
        j["config"]["usage_model"].get<std::string>(), j["trace"]["dir"].get<std::string>(),
        j["trace"]["synthetic"].get<bool>() ? " (SYNTHETIC)" : "");
    o << fmt::format("  {} nodes, {} pods in trace, {:.1f} virtual days\n",
                     j["trace"]["nodes"].get<std::uint64_t>(),
                     j["trace"]["pods"].get<std::uint64_t>(),
                     j["virtual_seconds"].get<double>() / 86400.0);
  }
  if (j["trace"]["bad_rows_skipped"].get<std::uint64_t>() > 0) {
    o << fmt::format("  WARNING: {} bad trace rows skipped (--skip-bad-rows):\n",
                     j["trace"]["bad_rows_skipped"].get<std::uint64_t>());
    for (const auto& w : j["trace"]["bad_row_warnings"])
      o << "    " << w.get<std::string>() << "\n";
  }
  if (j["trace"].contains("assumed")) {
    o << "  Columns missing from the pod list, assumed:\n";
    for (const auto& w : j["trace"]["assumed"]) o << "    " << w.get<std::string>() << "\n";
  }
  o << "\nPods\n";
  o << fmt::format(
      "  submitted {}  scheduled {}  pending at end {}  rejected {}  withdrawn while pending {}\n",
      p["submitted"].get<std::uint64_t>(), p["scheduled"].get<std::uint64_t>(),
      p["pending_at_end"].get<std::uint64_t>(), p["rejected"].get<std::uint64_t>(),
      p["withdrawn_while_pending"].get<std::uint64_t>());
  o << fmt::format("  running at end {}  completed {}  evicted {}  conservation {}\n",
                   p["running_at_end"].get<std::uint64_t>(), p["completed"].get<std::uint64_t>(),
                   p["evicted"].get<std::uint64_t>(),
                   p["conservation_ok"].get<bool>() ? "ok" : "VIOLATED");
  for (const auto& [k, v] : p["evicted_by_reason"].items())
    o << "    evicted: " << k << ": " << v << "\n";
  for (const auto& [k, v] : p["pending_at_end_by_last_reason"].items())
    o << "    pending: " << k << ": " << v << "\n";
  if (j.contains("migrations") && j["migrations"]["created"].get<std::uint64_t>() > 0) {
    const auto& m = j["migrations"];
    o << fmt::format(
        "  migrations (PodMigrationJobs): created {}  started {}  succeeded {}  failed {}  "
        "aborted {}\n",
        m["created"].get<std::uint64_t>(), m["started"].get<std::uint64_t>(),
        m["succeeded"].get<std::uint64_t>(), m["failed"].get<std::uint64_t>(),
        m["aborted"].get<std::uint64_t>());
    for (const auto& [k, v] : m["by_phase_and_reason"].items())
      o << "    migration: " << k << ": " << v << "\n";
  }
  o << fmt::format("  unschedulable attempts {} (bind rejections {})\n",
                   p["unschedulable_events"].get<std::uint64_t>(),
                   p["bind_rejections"].get<std::uint64_t>());
  const auto& l = j["scheduling_latency_virtual"];
  o << "\nScheduling latency (virtual, submit -> bind)\n";
  for (const char* cls : {"all", "prod", "batch"}) {
    const auto& x = l[cls];
    o << fmt::format("  {:5} n={:<6} p50 {:.1f}s  p90 {:.1f}s  p99 {:.1f}s  max {:.1f}s\n", cls,
                     x["count"].get<std::uint64_t>(), x["p50_ms"].get<std::int64_t>() / 1000.0,
                     x["p90_ms"].get<std::int64_t>() / 1000.0,
                     x["p99_ms"].get<std::int64_t>() / 1000.0,
                     x["max_ms"].get<std::int64_t>() / 1000.0);
  }
  const auto& res = j["resources"];
  o << "\nResources (time averages, % of cluster capacity)\n";
  o << fmt::format(
      "  CPU     requested {:.1f}%  allocated {:.1f}%  used {:.1f}%  (peak allocated {:.1f}%)\n",
      res["avg_cpu_requested_pct"].get<double>(), res["avg_cpu_allocated_pct"].get<double>(),
      res["avg_cpu_used_pct"].get<double>(), res["peak_cpu_allocated_pct"].get<double>());
  o << fmt::format("  memory  requested {:.1f}%  allocated {:.1f}%  used {:.1f}%\n",
                   res["avg_memory_requested_pct"].get<double>(),
                   res["avg_memory_allocated_pct"].get<double>(),
                   res["avg_memory_used_pct"].get<double>());
  const auto& b = j["batch"];
  o << fmt::format(
      "  batch CPU reclaimed {:.1f}% of capacity; BE allocated {:.1f}% and used {:.1f}% of it\n",
      b["avg_batch_cpu_reclaimed_pct_of_capacity"].get<double>(),
      b["avg_batch_cpu_allocated_pct_of_reclaimed"].get<double>(),
      b["avg_batch_cpu_used_pct_of_reclaimed"].get<double>());
  const auto& g = j["gpu"];
  o << fmt::format(
      "  GPU ({} devices) allocation {:.1f}% avg, {:.1f}% at end; fragmentation (FGD) {:.1f}% of "
      "GPUs avg\n",
      g["gpu_devices"].get<std::int64_t>(), g["avg_gpu_allocation_pct"].get<double>(),
      g["final_gpu_allocation_pct"].get<double>(),
      g["avg_gpu_fragmentation_pct_of_total"].get<double>());
  if (j.contains("devices")) {
    const auto& d = j["devices"];
    o << fmt::format(
        "  Devices: {} nodes with a Device object; {} RDMA pods got {} NICs ({} VFs); NIC on a "
        "GPU's PCIe switch {}, on a GPU's NUMA node {}\n",
        d["nodes_with_device_object"].get<std::uint64_t>(),
        d["rdma_pods_scheduled"].get<std::uint64_t>(),
        d["rdma_nics_allocated"].get<std::uint64_t>(), d["rdma_vfs_allocated"].get<std::uint64_t>(),
        d["rdma_pods_nic_on_gpu_pcie_switch"].get<std::uint64_t>(),
        d["rdma_pods_nic_on_gpu_numa_node"].get<std::uint64_t>());
  }
  if (const auto& q = j["quota"]; q.contains("by_quota")) {
    o << "\nElasticQuota (CPU cores: min / max, runtime and used averaged over time)\n";
    for (const auto& x : q["by_quota"]) {
      if (!x.contains("max_cpu")) {
        o << fmt::format("  {:<16} attempts refused {}\n", x["name"].get<std::string>(),
                         x["attempts_refused"].get<std::uint64_t>());
        continue;
      }
      // A tree root's max is MaxInt64/2000 cores (the profile controller's "no limit").
      const auto max_cpu = x["max_cpu"].get<std::int64_t>();
      const std::string max_text =
          max_cpu >= std::numeric_limits<std::int64_t>::max() / 2000
              ? std::string("none")
              : fmt::format("{:.1f}", static_cast<double>(max_cpu) / 1000.0);
      o << fmt::format(
          "  {:<16} min {:.1f}  max {}  runtime {:.1f}  used {:.1f} (peak {:.1f})  attempts "
          "refused {}\n",
          x["name"].get<std::string>(), x["min_cpu"].get<std::int64_t>() / 1000.0, max_text,
          x["runtime_cpu_avg"].get<std::int64_t>() / 1000.0,
          x["used_cpu_avg"].get<std::int64_t>() / 1000.0,
          x["used_cpu_peak"].get<std::int64_t>() / 1000.0,
          x["attempts_refused"].get<std::uint64_t>());
      if (x.contains("preempted_pods"))
        o << fmt::format("  {:<16} preempted {} pods for {} higher-priority pods of the quota\n",
                         "", x["preempted_pods"].get<std::uint64_t>(),
                         x["preemptors"].get<std::uint64_t>());
    }
  }
  const auto& inv = j["invariants"];
  o << fmt::format(
      "\nInvariants: over-capacity binds {}, negative batch allocatable {}, evictions without "
      "reason {}\n",
      inv["over_capacity_binds"].get<std::uint64_t>(),
      inv["negative_batch_allocatable"].get<std::uint64_t>(),
      inv["evictions_without_reason"].get<std::uint64_t>());
  const auto& ev = j["events"];
  o << fmt::format("Events: {} ({} MB), log byte digest {}, state digest {}\n",
                   ev["count"].get<std::uint64_t>(), ev["bytes"].get<std::uint64_t>() / 1000000,
                   ev["log_byte_digest"].get<std::string>(), ev["state_digest"].get<std::string>());
  if (!t.is_null() && t.contains("wall_seconds")) {
    // The host times whole instants (every component), not one component's work, so the
    // figure is host time per event.
    o << fmt::format(
        "Wall: {:.2f} s, {:.0f} events/s, time compression {:.0f}x, {:.1f} us of component host "
        "per event, {} threads\n",
        t["wall_seconds"].get<double>(), t["events_per_second"].get<double>(),
        t["time_compression"].get<double>(), t.value("host_us_per_event", 0.0),
        t["threads"].get<std::size_t>());
  }
  return o.str();
}

result<report_files> write_report(const std::string& out_dir, const run_result& r,
                                  gnuplot_pool& gnuplot, plot_format format) {
  report_files files;
  const fs::path out(out_dir);
  std::error_code ec;
  fs::create_directories(out, ec);
  if (ec) return fail(errc::unavailable, ec.message(), out_dir);
  auto put = [&](const char* name, const std::string& text) -> result<void> {
    auto w = write_file(out / name, text);
    if (w) files.written.push_back((out / name).string());
    return w;
  };
  std::string txt = summary_text(r);
  // The plots first: they draw from the script's own data while the other files are written.
  std::vector<std::string> plot_names;  // file names without the extension
  bool plotting = false;
  if (!gnuplot.available()) {
    files.notes.push_back("gnuplot not found: no plots written");
  } else {
    const std::string title = r.summary["config"]["name"].get<std::string>();
    // The plotted series travel inside the script as datablocks (plots.gp renders on its own);
    // metrics.csv holds every column for other tools.
    auto f3 = [](double v) { return fmt::format("{:.3f}", v); };
    auto cores = [&](std::int64_t milli) { return f3(static_cast<double>(milli) / 1000.0); };
    std::vector<std::string> blocks;
    blocks.push_back(
        metrics_block("utilisation", r.rows,
                      [&](const metrics_row& m, std::vector<std::string>& l) {
                        l.push_back(f3(pct(m.cpu_requested, m.cpu_capacity)));
                        l.push_back(f3(pct(m.cpu_allocated, m.cpu_capacity)));
                        l.push_back(f3(pct(m.cpu_used, m.cpu_capacity)));
                        l.push_back(f3(pct(m.mem_allocated, m.mem_capacity)));
                        l.push_back(f3(pct(m.mem_used, m.mem_capacity)));
                      }) +
        fmt::format(
            "set output '{0}/utilisation.'.ext\nset title 'Cluster utilisation: {1}'\nset ylabel "
            "'% of cluster capacity'\n"
            "set yrange [0:*]\n"
            "plot $utilisation using 1:2 with lines lw 2 title 'CPU requested', "
            "'' using 1:3 with lines lw 2 title 'CPU allocated', "
            "'' using 1:4 with lines lw 2 title 'CPU used', "
            "'' using 1:5 with lines lw 2 dt 2 title 'memory allocated', "
            "'' using 1:6 with lines lw 2 dt 2 title 'memory used'\n",
            out.string(), title));
    blocks.push_back(
        metrics_block("batch", r.rows,
                      [&](const metrics_row& m, std::vector<std::string>& l) {
                        l.push_back(cores(m.batch_cpu_allocatable));
                        l.push_back(cores(m.batch_cpu_allocated));
                        l.push_back(cores(m.batch_cpu_used));
                      }) +
        fmt::format(
            "set output '{0}/batch.'.ext\nset title 'Batch CPU reclaimed vs used by BE pods: "
            "{1}'\nset ylabel 'cores'\n"
            "plot $batch using 1:2 with lines lw 2 title 'batch-cpu allocatable (reclaimed)', "
            "'' using 1:3 with lines lw 2 title 'batch-cpu allocated to BE', "
            "'' using 1:4 with lines lw 2 title 'CPU used by BE'\n",
            out.string(), title));
    blocks.push_back(
        metrics_block("pods", r.rows,
                      [&](const metrics_row& m, std::vector<std::string>& l) {
                        l.push_back(std::to_string(m.pods_pending));
                        l.push_back(std::to_string(m.pods_running));
                      }) +
        fmt::format("set output '{0}/pending.'.ext\nset title 'Pods: {1}'\nset ylabel 'pods'\n"
                    "plot $pods using 1:2 with lines lw 2 title 'pending', "
                    "'' using 1:3 with lines lw 2 title 'running'\n",
                    out.string(), title));
    blocks.push_back(
        metrics_block("gpu", r.rows,
                      [&](const metrics_row& m, std::vector<std::string>& l) {
                        l.push_back(f3(pct(m.gpu_allocated, m.gpu_total)));
                        l.push_back(f3(m.gpu_total > 0
                                           ? m.gpu_frag * 10000.0 / static_cast<double>(m.gpu_total)
                                           : 0.0));
                      }) +
        fmt::format("set output '{0}/gpu.'.ext\nset title 'GPU allocation and fragmentation "
                    "(FGD): {1}'\nset ylabel '% of GPUs'\n"
                    "set yrange [0:100]\n"
                    "plot $gpu using 1:2 with lines lw 2 title 'GPU allocated', "
                    "'' using 1:3 with lines lw 2 title 'GPU fragmented'\n",
                    out.string(), title));
    plot_names = {"utilisation", "batch", "pending", "gpu"};
    // The node CPU spread is the descheduler's figure: drawn for runs that have one (the column
    // is in metrics.csv for every run, and compare-spread sets runs side by side).
    if (r.summary["config"].value("descheduler", false)) {
      plot_names.push_back("spread");
      blocks.push_back(
          metrics_block("spread", r.rows,
                        [&](const metrics_row& m, std::vector<std::string>& l) {
                          l.push_back(f3(m.cpu_used_spread_pct));
                          l.push_back(std::to_string(m.migrations));
                        }) +
          fmt::format(
              "set output '{0}/spread.'.ext\nset title 'Node CPU usage spread: {1}'\n"
              "set ylabel 'p90 - p10 of node cpu used (points)'\nset yrange [0:*]\n"
              "set y2label 'PodMigrationJobs created'\nset y2range [0:*]\nset ytics nomirror\n"
              "set y2tics\n"
              "plot $spread using 1:2 with lines lw 2 title 'node CPU used p90 - p10', "
              "'' using 1:3 axes x1y2 with lines lw 2 dt 2 title 'migrations (total)'\n"
              "unset y2tics\nunset y2label\nset ytics mirror\n",
              out.string(), title));
    }
    if (!r.quota_rows.empty()) {
      // quota.csv holds one block per quota (quota-major, time order within): plot each quota's
      // used and runtime by filtering on the quota column.
      std::vector<std::string> names;
      for (const auto& q : r.quota_rows)
        if (std::find(names.begin(), names.end(), q.quota) == names.end()) names.push_back(q.quota);
      const std::string qcsv = (out / "quota.csv").string();
      std::string plots;
      for (std::size_t i = 0; i < names.size(); ++i) {
        plots += fmt::format(
            "{0}'{1}' every ::1 using 2:(strcol(3) eq '{2}' ? $6/1000 : NaN) with lines lw 2 lc "
            "{3} "
            "title '{2} used', "
            "'' every ::1 using 2:(strcol(3) eq '{2}' ? $5/1000 : NaN) with lines lw 2 dt 2 lc {3} "
            "title '{2} runtime'",
            i == 0 ? "" : ", ", qcsv, names[i], i + 1);
      }
      blocks.push_back(fmt::format(
          "set output '{0}/quota.'.ext\nset title 'ElasticQuota CPU: used vs runtime: {1}'\n"
          "set ylabel 'cores'\nset yrange [0:*]\nplot {2}\n",
          out.string(), title, plots));
      plot_names.push_back("quota");
    }
    if (auto g = start_plots(gnuplot, out / "plots.gp", blocks, format); !g)
      files.notes.push_back(g.error().describe());
    else
      plotting = true;
  }
  // Every return below comes after gnuplot.wait(): a started plot is always collected.
  result<void> written = put("summary.json", r.summary.dump(2) + "\n");
  if (written) written = put("timing.json", r.timing.dump(2) + "\n");
  if (written) written = put("metrics.csv", metrics_csv(r.rows));
  if (written && !r.quota_rows.empty()) written = put("quota.csv", quota_csv(r.quota_rows));
  if (plotting) {
    if (auto g = gnuplot.wait((out / "plots.gp").string()); !g) {
      files.notes.push_back(g.error().describe());
    } else {
      for (const auto& n : plot_names)
        files.written.push_back((out / (n + "." + extension(format))).string());
    }
  }
  if (!written) return tl::unexpected(written.error());
  for (const auto& n : files.notes) txt += "note: " + n + "\n";
  if (auto w = put("summary.txt", txt); !w) return tl::unexpected(w.error());
  return files;
}

result<report_files> write_compare(
    const std::string& out_dir, const std::vector<std::pair<std::string, const run_result*>>& runs,
    gnuplot_pool& gnuplot, plot_format format) {
  report_files files;
  const fs::path out(out_dir);
  nlohmann::ordered_json cj;
  cj["schema"] = "colony.sim.compare/v1";
  struct rowdef {
    const char* label;
    std::function<std::string(const nlohmann::ordered_json&)> get;
  };
  auto u = [](const char* a, const char* b) {
    return [a, b](const nlohmann::ordered_json& j) { return j[a][b].dump(); };
  };
  const std::vector<rowdef> defs = {
      {"pods scheduled", u("pods", "scheduled")},
      {"pods pending at end", u("pods", "pending_at_end")},
      {"pods evicted", u("pods", "evicted")},
      {"unschedulable attempts", u("pods", "unschedulable_events")},
      {"latency p50 (s)",
       [](const auto& j) {
         return fmt::format(
             "{:.1f}",
             j["scheduling_latency_virtual"]["all"]["p50_ms"].template get<std::int64_t>() /
                 1000.0);
       }},
      {"latency p99 (s)",
       [](const auto& j) {
         return fmt::format(
             "{:.1f}",
             j["scheduling_latency_virtual"]["all"]["p99_ms"].template get<std::int64_t>() /
                 1000.0);
       }},
      {"batch latency p90 (s)",
       [](const auto& j) {
         return fmt::format(
             "{:.1f}",
             j["scheduling_latency_virtual"]["batch"]["p90_ms"].template get<std::int64_t>() /
                 1000.0);
       }},
      {"avg CPU allocated %", u("resources", "avg_cpu_allocated_pct")},
      {"avg CPU used %", u("resources", "avg_cpu_used_pct")},
      {"avg memory used %", u("resources", "avg_memory_used_pct")},
      {"batch CPU reclaimed % cap", u("batch", "avg_batch_cpu_reclaimed_pct_of_capacity")},
      {"BE used % of reclaimed", u("batch", "avg_batch_cpu_used_pct_of_reclaimed")},
      {"avg GPU allocation %", u("gpu", "avg_gpu_allocation_pct")},
      {"avg GPU fragmentation %", u("gpu", "avg_gpu_fragmentation_pct_of_total")},
      {"over-capacity binds", u("invariants", "over_capacity_binds")},
      {"events", u("events", "count")},
  };
  std::string txt = fmt::format("{:28}", "metric");
  for (const auto& [n, r] : runs) txt += fmt::format(" {:>20}", n);
  txt += "\n";
  for (const auto& d : defs) {
    txt += fmt::format("{:28}", d.label);
    nlohmann::ordered_json row;
    for (const auto& [n, r] : runs) {
      const std::string v = d.get(r->summary);
      txt += fmt::format(" {:>20}", v);
      row[n] = nlohmann::json::parse(v, nullptr, false).is_discarded() ? nlohmann::json(v)
                                                                       : nlohmann::json::parse(v);
    }
    cj["rows"][d.label] = row;
    txt += "\n";
  }
  txt += fmt::format("{:28}", "wall seconds");
  for (const auto& [n, r] : runs)
    txt += fmt::format(" {:>20.2f}", r->timing.value("wall_seconds", 0.0));
  txt += "\n";
  for (const auto& [n, r] : runs) cj["summaries"][n] = r->summary;
  if (auto w = write_file(out / "compare.txt", txt); !w) return tl::unexpected(w.error());
  files.written.push_back((out / "compare.txt").string());
  if (auto w = write_file(out / "compare.json", cj.dump(2) + "\n"); !w)
    return tl::unexpected(w.error());
  files.written.push_back((out / "compare.json").string());
  if (!gnuplot.available()) {
    files.notes.push_back("gnuplot not found: no plots written");
    return files;
  }
  std::vector<std::string> blocks;
  struct ov {
    const char* file;
    const char* title;
    const char* ylabel;
    const char* expr;
  };
  const ov plots[] = {
      {"compare-cpu-used", "CPU used (% of capacity)", "%", "26"},
      {"compare-cpu-allocated", "CPU allocated (% of capacity)", "%", "25"},
      {"compare-batch-reclaimed", "batch-cpu allocatable (reclaimed, cores)", "cores",
       "($13/1000)"},
      {"compare-pending", "pending pods", "pods", "4"},
      {"compare-gpu", "GPU allocated (%)", "%", "21"},
      {"compare-spread", "node CPU used, p90 - p10 across nodes (points)", "points", "31"},
  };
  for (const auto& p : plots) {
    std::string gp = fmt::format("set output '{}/{}.'.ext\nset title '{}'\nset ylabel '{}'\nplot ",
                                 out.string(), p.file, p.title, p.ylabel);
    // One dash type per config, so equal curves stay visible on top of each other.
    std::size_t k = 0;
    for (const auto& [n, r] : runs) {
      if (k != 0) gp += ", ";
      gp += fmt::format("'{}' every ::1 using 2:{} with lines lw {} dt {} title '{}'",
                        (out / n / "metrics.csv").string(), p.expr, k == 0 ? 3 : 2, k + 1, n);
      ++k;
    }
    gp += "\n";
    blocks.push_back(std::move(gp));
  }
  if (auto g = start_plots(gnuplot, out / "compare.gp", blocks, format).and_then([&] {
        return gnuplot.wait((out / "compare.gp").string());
      });
      !g) {
    files.notes.push_back(g.error().describe());
  } else {
    for (const auto& p : plots)
      files.written.push_back((out / (std::string(p.file) + "." + extension(format))).string());
  }
  return files;
}

}  // namespace colony::sim
