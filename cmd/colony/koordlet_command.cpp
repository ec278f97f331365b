// colony koordlet: the node agent's collectors on a real node (bridges/node).
//
//   colony koordlet --node NAME [--cgroup-root DIR] [--proc-root DIR] [--kube-parent DIR]
//                   [--interval 1s] [--report-interval 60s] [--pressure] [--once]
//                   [--json]
//
// Collects /proc and every kubepods cgroup each --interval, keeps the samples in
// actors/koordlet/node_metric's window and, each report interval (Koordinator's
// reportIntervalSeconds, at least 30 s), builds the NodeMetric status with its builder: on stdout
// as one JSON line with --json, and a progress line on stderr. --once collects twice, one
// interval apart, prints one report and exits.
//
// The JSON is Koordinator's NodeMetric (apis/slo/v1alpha1/nodemetric_types.go): status.updateTime,
// status.nodeMetric.{nodeUsage,systemUsage,aggregatedNodeUsages,aggregatedSystemUsages},
// status.podsMetric[] {namespace, name, podUsage, priority, qos}. Cgroups carry no pod name:
// pods are reported with name = uid and namespace "" until the koordlet maps uids to pods
// through the API server or the log. Nothing is written to the API server yet.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <ctime>
#include <memory>
#include <string>
#include <thread>

#include <unistd.h>
#include <nlohmann/json.hpp>

#include "actors/koordlet/node_metric.hpp"
#include "bridges/kubernetes/kube_time.hpp"
#include "bridges/node/collector.hpp"
#include "cmd/colony/commands.hpp"
#include "cmd/colony/duration_flag.hpp"
#include "cmd/colony/exit_codes.hpp"
#include "messages/names.hpp"
#include "messages/quantity.hpp"

namespace colony::cli {

namespace {

namespace kl = colony::koordlet;
using nlohmann::json;

struct koordlet_args {
  std::string node;
  std::string cgroup_root = "/sys/fs/cgroup";
  std::string proc_root = "/proc";
  std::string kube_parent;
  std::string interval = "1s";
  std::string report_interval = "60s";
  bool pressure = false;
  bool once = false;
  bool json_out = false;
};

std::atomic<bool> koordlet_stop{false};
extern "C" void on_koordlet_signal(int) { koordlet_stop = true; }

int report_error(const error& e) {
  std::fprintf(stderr, "colony: %s\n", e.describe().c_str());
  return exit_code_for(e);
}

// metav1.Duration as Go prints it: "5m0s", "1h0m0s", "30s".
std::string go_duration(std::int64_t secs) {
  std::string out;
  if (secs >= 3600) out += std::to_string(secs / 3600) + "h";
  if (secs >= 60) out += std::to_string(secs % 3600 / 60) + "m";
  return out + std::to_string(secs % 60) + "s";
}

json resource_map(const kl::resource_usage& u) {
  return json{{"resources",
               {{std::string(names::cpu), k8s::format_milli(u.cpu_milli)},
                {std::string(names::memory), k8s::format_memory(u.memory_bytes)}}}};
}

json aggregated(const std::vector<kl::aggregated_usage>& v) {
  json out = json::array();
  for (const auto& a : v) {
    json usage = json::object();
    const std::pair<const char*, const std::optional<kl::resource_usage>*> kinds[] = {
        {"avg", &a.avg}, {"p50", &a.p50}, {"p90", &a.p90}, {"p95", &a.p95}, {"p99", &a.p99}};
    for (const auto& k : kinds) {
      if (*k.second) usage[k.first] = resource_map(**k.second);
    }
    out.push_back({{"duration", go_duration(a.duration_seconds)}, {"usage", usage}});
  }
  return out;
}

json node_metric_json(const std::string& node, const kl::node_metric_status& st) {
  json nm = json::object();
  if (st.node_metric.node_usage) nm["nodeUsage"] = resource_map(*st.node_metric.node_usage);
  if (st.node_metric.system_usage) nm["systemUsage"] = resource_map(*st.node_metric.system_usage);
  nm["aggregatedNodeUsages"] = aggregated(st.node_metric.aggregated_node_usages);
  nm["aggregatedSystemUsages"] = aggregated(st.node_metric.aggregated_system_usages);
  json pods = json::array();
  for (const auto& p : st.pods_metric) {
    pods.push_back({{"namespace", p.ns},
                    {"name", p.name},
                    {"podUsage", resource_map(p.pod_usage)},
                    {"priority", std::string(to_string(p.priority))},
                    {"qos", std::string(to_string(p.qos))}});
  }
  return json{{"apiVersion", "slo.koordinator.sh/v1alpha1"},
              {"kind", "NodeMetric"},
              {"metadata", {{"name", node}}},
              {"status",
               {{"updateTime", kube::rfc3339(st.update_time.value)},
                {"nodeMetric", nm},
                {"podsMetric", pods},
                {"hostApplicationMetric", json::array()}}}};
}

std::int64_t now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// Sleeps until `ms` of wall time have passed or a signal asks to stop.
void sleep_ms(std::int64_t ms) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
  while (!koordlet_stop && std::chrono::steady_clock::now() < until) {
    std::this_thread::sleep_for(std::min<std::chrono::steady_clock::duration>(
        until - std::chrono::steady_clock::now(), std::chrono::milliseconds(100)));
  }
}

void warn_skipped(const node::node_snapshot& s, bool& warned_no_pods) {
  for (const auto& e : s.skipped) {
    if (e.code == errc::not_found && !s.driver) {
      if (!warned_no_pods) std::fprintf(stderr, "koordlet: no pods: %s\n", e.describe().c_str());
      warned_no_pods = true;
      continue;
    }
    std::fprintf(stderr, "koordlet: skipped: %s\n", e.describe().c_str());
  }
}

int run_koordlet(const koordlet_args& a) {
  const auto interval = parse_duration_flag(a.interval, "--interval");
  if (!interval) return report_error(interval.error());
  const auto report_every = parse_duration_flag(a.report_interval, "--report-interval");
  if (!report_every) return report_error(report_every.error());
  node::source_config cfg;
  cfg.cgroup_root = a.cgroup_root;
  cfg.proc_root = a.proc_root;
  cfg.kube_parent_dir = a.kube_parent;
  cfg.read_pressure = a.pressure;
  cfg.ticks_per_second = ::sysconf(_SC_CLK_TCK) > 0 ? ::sysconf(_SC_CLK_TCK) : 100;
  auto src = node::node_source::open(cfg);
  if (!src) return report_error(src.error());

  kl::node_metric_collect_policy policy;
  policy.report_interval_seconds = std::max<std::int64_t>(report_every->count() / 1000, 1);
  const std::int64_t report_ms = kl::effective_report_interval_seconds(policy) * 1000;
  const std::int64_t keep_ms =
      std::max(kl::effective_aggregate_duration_seconds(policy),
               *std::max_element(policy.aggregate_durations_seconds.begin(),
                                 policy.aggregate_durations_seconds.end())) *
      1000;

  const std::int64_t pod_keep_ms = kl::effective_aggregate_duration_seconds(policy) * 1000;
  std::signal(SIGINT, on_koordlet_signal);
  std::signal(SIGTERM, on_koordlet_signal);
  bool warned = false;
  auto prev = src->snapshot(event_time{now_ms()});
  if (!prev) return report_error(prev.error());
  warn_skipped(*prev, warned);
  kl::sample_window window;
  std::int64_t next_report = prev->time.value + report_ms;
  std::uint64_t collections = 0;
  double cpu_seconds = 0;  // this process's CPU time spent collecting
  for (;;) {
    sleep_ms(interval->count());
    if (koordlet_stop) break;
    const auto c0 = std::clock();
    auto cur = src->snapshot(event_time{now_ms()});
    if (!cur) return report_error(cur.error());
    warn_skipped(*cur, warned);
    auto u = node::usage_between(*prev, *cur, cfg.ticks_per_second);
    if (!u) return report_error(u.error());
    node::add_to_window(window, *u);
    window.trim(cur->time + duration_ms{-keep_ms});
    window.trim_pods(cur->time + duration_ms{-pod_keep_ms});
    cpu_seconds += static_cast<double>(std::clock() - c0) / CLOCKS_PER_SEC;
    ++collections;
    const std::int64_t t = cur->time.value;
    prev = std::move(cur);
    if (!a.once && t < next_report) continue;
    next_report = t + report_ms;
    const auto pods = node::pods_by_uid(*u);
    const auto st = kl::build_node_metric_status(window, pods, {}, policy, event_time{t});
    if (a.json_out) {
      std::printf("%s\n", node_metric_json(a.node, st).dump().c_str());
      std::fflush(stdout);
    }
    if (!a.once || !a.json_out) {
      std::fprintf(stderr,
                   "koordlet: node %s %s cpu %s/%s memory %s/%s pods %zu samples %zu "
                   "collections %llu collect-cpu %.3f ms each\n",
                   a.node.c_str(), kube::rfc3339(t).c_str(),
                   k8s::format_milli(u->cpu.value).c_str(),
                   k8s::format_milli(u->cpu_capacity.value).c_str(),
                   k8s::format_memory(u->memory.value).c_str(),
                   k8s::format_memory(u->memory_capacity.value).c_str(), u->pods.size(),
                   window.sample_count(), static_cast<unsigned long long>(collections),
                   1000 * cpu_seconds / static_cast<double>(collections));
    }
    if (a.once) break;
  }
  return exit_ok;
}

}  // namespace

void add_koordlet_command(CLI::App& app) {
  auto args = std::make_shared<koordlet_args>();
  auto* cmd = app.add_subcommand(
      "koordlet", "Node agent collectors: /proc and kubepods cgroups into NodeMetric reports");
  cmd->add_option("--node", args->node, "This node's name (NodeMetric metadata.name)")->required();
  cmd->add_option("--cgroup-root", args->cgroup_root, "cgroup mount root")->capture_default_str();
  cmd->add_option("--proc-root", args->proc_root, "proc mount root")->capture_default_str();
  cmd->add_option("--kube-parent", args->kube_parent,
                  "kubelet's --cgroup-root under each controller (kubepods' parent)");
  cmd->add_option("--interval", args->interval, "collect interval (500ms, 1s, ...)")
      ->capture_default_str();
  cmd->add_option("--report-interval", args->report_interval,
                  "NodeMetric report interval (Koordinator's floor: 30s)")
      ->capture_default_str();
  cmd->add_flag("--pressure", args->pressure,
                "also read cpu.stat throttling and PSI of every cgroup (not in NodeMetric)");
  cmd->add_flag("--once", args->once, "collect twice one interval apart, report once, exit");
  cmd->add_flag("--json", args->json_out, "print each report as a NodeMetric JSON line");
  cmd->callback([args] { exit_status() = run_koordlet(*args); });
}

}  // namespace colony::cli
