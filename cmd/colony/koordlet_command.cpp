// colony koordlet: the koordlet on a real node (docs/koordlet.md). run/koordlet_agent does the
// work: the node's collectors (bridges/node) are the source, the koordlet component
// (actors/koordlet/actor) decides, every record goes to the embedded log at --log, and with
// --enforce the cgroup executor writes the component's decisions into the node's cgroups and
// logs what the files hold afterwards. Without --enforce (the default) it is a dry run: decisions
// are logged, no cgroup is written.
//
//   colony koordlet --node NAME --log DIR [--enforce] [--node-slo FILE] [--cgroup-root DIR]
//                   [--proc-root DIR] [--kube-parent DIR] [--interval 1s]
//                   [--report-interval 60s] [--pressure] [--once] [--json]
//
// The NodeMetric report is the component's NodeMetricReported, printed with --json as
// Koordinator's NodeMetric (apis/slo/v1alpha1/nodemetric_types.go): status.updateTime,
// status.nodeMetric.{nodeUsage,systemUsage,aggregatedNodeUsages,aggregatedSystemUsages},
// status.podsMetric[] {namespace, name, podUsage, priority, qos}. Cgroups carry no pod name:
// pods are reported with name = uid and namespace "" until uids are mapped to pods. Nothing is
// written to the API server yet.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <memory>
#include <string>
#include <thread>

#include <unistd.h>
#include <nlohmann/json.hpp>

#include "actors/slo_controller/node_slo.hpp"
#include "bridges/kubernetes/kube_time.hpp"
#include "cmd/colony/commands.hpp"
#include "cmd/colony/duration_flag.hpp"
#include "cmd/colony/exit_codes.hpp"
#include "messages/names.hpp"
#include "messages/quantity.hpp"
#include "run/koordlet_agent.hpp"
#include "stores/event_log.hpp"

namespace colony::cli {

namespace {

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
  std::string log;
  bool enforce = false;
  std::string node_slo;
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

json resource_map(const wire::Resources* r) {
  const auto u = messages::to_resource_list(r);
  return json{{"resources",
               {{std::string(names::cpu), k8s::format_milli(u.cpu_milli)},
                {std::string(names::memory), k8s::format_memory(u.memory_bytes)}}}};
}

json aggregated(const flatbuffers::Vector<flatbuffers::Offset<wire::AggregatedUsage>>* v) {
  json out = json::array();
  if (v == nullptr) return out;
  for (const auto* a : *v) {
    json usage = json::object();
    const std::pair<const char*, const wire::Resources*> kinds[] = {{"avg", a->avg()},
                                                                    {"p50", a->p50()},
                                                                    {"p90", a->p90()},
                                                                    {"p95", a->p95()},
                                                                    {"p99", a->p99()}};
    for (const auto& k : kinds) {
      if (k.second != nullptr) usage[k.first] = resource_map(k.second);
    }
    out.push_back({{"duration", go_duration(a->duration_ms() / 1000)}, {"usage", usage}});
  }
  return out;
}

// The component's NodeMetricReported as Koordinator's NodeMetric object.
json node_metric_json(const wire::NodeMetricReported& m) {
  json nm = json::object();
  if (m.node_usage() != nullptr) nm["nodeUsage"] = resource_map(m.node_usage());
  if (m.system_usage() != nullptr) nm["systemUsage"] = resource_map(m.system_usage());
  nm["aggregatedNodeUsages"] = aggregated(m.aggregated_node_usages());
  nm["aggregatedSystemUsages"] = aggregated(m.aggregated_system_usages());
  json pods = json::array();
  if (m.pods() != nullptr) {
    for (const auto* p : *m.pods()) {
      const auto key = messages::to_string_view(p->pod());
      const auto slash = key.find('/');
      const auto ns = slash == std::string_view::npos ? std::string_view() : key.substr(0, slash);
      const auto name = slash == std::string_view::npos ? key : key.substr(slash + 1);
      // Same numbering as the wire enums (messages/priority.hpp, messages/qos.hpp).
      pods.push_back(
          {{"namespace", std::string(ns)},
           {"name", std::string(name)},
           {"podUsage", resource_map(p->usage())},
           {"priority", std::string(to_string(static_cast<priority_class>(p->priority_class())))},
           {"qos", std::string(to_string(static_cast<qos_class>(p->qos_class())))}});
    }
  }
  return json{{"apiVersion", "slo.koordinator.sh/v1alpha1"},
              {"kind", "NodeMetric"},
              {"metadata", {{"name", std::string(messages::to_string_view(m.node()))}}},
              {"status",
               {{"updateTime", kube::rfc3339(m.update_time_ms())},
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

void print_problems(agent::koordlet_agent& a, bool& warned_no_pods) {
  for (const auto& e : a.take_problems()) {
    if (e.code == errc::not_found && e.message.find("kubepods") != std::string::npos) {
      if (!warned_no_pods) std::fprintf(stderr, "koordlet: no pods: %s\n", e.describe().c_str());
      warned_no_pods = true;
      continue;
    }
    std::fprintf(stderr, "koordlet: %s\n", e.describe().c_str());
  }
}

result<std::string> read_text(const std::string& path) {
  std::ifstream f(path);
  if (!f) return fail(errc::not_found, "cannot open", path);
  return std::string((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
}

int run_koordlet(const koordlet_args& a) {
  const auto interval = parse_duration_flag(a.interval, "--interval");
  if (!interval) return report_error(interval.error());
  const auto report_every = parse_duration_flag(a.report_interval, "--report-interval");
  if (!report_every) return report_error(report_every.error());
  agent::koordlet_agent_options o;
  o.source.cgroup_root = a.cgroup_root;
  o.source.proc_root = a.proc_root;
  o.source.kube_parent_dir = a.kube_parent;
  o.source.read_pressure = a.pressure;
  o.source.ticks_per_second = ::sysconf(_SC_CLK_TCK) > 0 ? ::sysconf(_SC_CLK_TCK) : 100;
  o.enforce = a.enforce;
  o.koordlet.node = a.node;
  o.koordlet.report_policy.report_interval_seconds =
      std::max<std::int64_t>(report_every->count() / 1000, 1);
  // --once reports after one interval of samples (two collections) instead of a full report
  // interval.
  if (a.once) o.koordlet.report_interval_ms = interval->count();
  if (!a.node_slo.empty()) {
    // The node's NodeSLO spec as the slo-controller would render it (no slo-controller runs on a
    // lone node): its strategies are the component's until a NodeSLOUpdated arrives in the log.
    auto text = read_text(a.node_slo);
    if (!text) return report_error(text.error());
    auto spec = slo_controller::parse_node_slo_spec(*text);
    if (!spec) {
      auto e = spec.error();
      e.where = a.node_slo + (e.where.empty() ? "" : ": ") + e.where;
      return report_error(e);
    }
    o.koordlet.threshold = koordlet_actor::to_koordlet(spec->resource_used_threshold_with_be);
    o.koordlet.cpu_burst = koordlet_actor::to_koordlet(spec->cpu_burst);
  }
  stores::log_options lo;
  auto log = stores::open_log(a.log, lo);
  if (!log) return report_error(log.error());
  auto ag = agent::koordlet_agent::open(o, **log, event_time{now_ms()});
  if (!ag) return report_error(ag.error());
  auto& agent = **ag;
  std::signal(SIGINT, on_koordlet_signal);
  std::signal(SIGTERM, on_koordlet_signal);
  bool warned = false;
  print_problems(agent, warned);
  std::fprintf(stderr, "koordlet: node %s log %s (%llu records replayed) %s\n", a.node.c_str(),
               (*log)->describe().c_str(), static_cast<unsigned long long>(agent.stats().replayed),
               a.enforce ? "enforcing: cgroups are written" : "dry run: decisions are logged only");
  std::uint64_t reported = agent.stats().reports;
  double cpu_seconds = 0;  // this process's CPU time spent in steps
  std::uint64_t steps = 0;
  for (;;) {
    sleep_ms(interval->count());
    if (koordlet_stop) break;
    const auto c0 = std::clock();
    if (auto r = agent.step(event_time{now_ms()}); !r) return report_error(r.error());
    cpu_seconds += static_cast<double>(std::clock() - c0) / CLOCKS_PER_SEC;
    ++steps;
    print_problems(agent, warned);
    if (agent.stats().reports == reported) continue;
    reported = agent.stats().reports;
    const auto& env = *wire::GetEnvelope(agent.last_report().data());
    const auto& m = *env.payload_as_NodeMetricReported();
    if (a.json_out) {
      std::printf("%s\n", node_metric_json(m).dump().c_str());
      std::fflush(stdout);
    }
    if (!a.once || !a.json_out) {
      const auto& u = *agent.last_usage();
      const auto& st = agent.stats();
      std::fprintf(stderr,
                   "koordlet: node %s %s cpu %s/%s memory %s/%s pods %zu samples %llu decisions "
                   "%llu files written %llu writes failed %llu step-cpu %.3f ms each\n",
                   a.node.c_str(), kube::rfc3339(m.update_time_ms()).c_str(),
                   k8s::format_milli(u.cpu.value).c_str(),
                   k8s::format_milli(u.cpu_capacity.value).c_str(),
                   k8s::format_memory(u.memory.value).c_str(),
                   k8s::format_memory(u.memory_capacity.value).c_str(), u.pods.size(),
                   static_cast<unsigned long long>(st.samples),
                   static_cast<unsigned long long>(st.decisions),
                   static_cast<unsigned long long>(st.files_written),
                   static_cast<unsigned long long>(st.writes_failed),
                   1000 * cpu_seconds / static_cast<double>(steps));
    }
    if (a.once) break;
  }
  return exit_ok;
}

}  // namespace

void add_koordlet_command(CLI::App& app) {
  auto args = std::make_shared<koordlet_args>();
  auto* cmd = app.add_subcommand(
      "koordlet",
      "The koordlet on this node: collectors feed the koordlet component, whose NodeMetric "
      "reports and QoS decisions go to the log; --enforce writes its cgroup decisions (default: "
      "dry run, nothing written)");
  cmd->add_option("--node", args->node, "This node's name (NodeMetric metadata.name)")->required();
  cmd->add_option("--log", args->log,
                  "The node's embedded event log directory (created if missing; replayed at start)")
      ->required();
  cmd->add_flag("--enforce", args->enforce,
                "Write the component's cgroup decisions (BE cfs quota, BE cpuset, cfs burst) and "
                "log what the files hold; without it a dry run: decisions are logged, no cgroup "
                "is written");
  cmd->add_option("--node-slo", args->node_slo,
                  "A NodeSLO spec JSON file (resourceUsedThresholdWithBE, cpuBurstStrategy): the "
                  "strategies in force until the log holds a NodeSLOUpdated for this node");
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
  cmd->add_flag("--once", args->once,
                "collect three times one interval apart, print the first report, exit");
  cmd->add_flag("--json", args->json_out, "print each report as a NodeMetric JSON line");
  cmd->callback([args] { exit_status() = run_koordlet(*args); });
}

}  // namespace colony::cli
