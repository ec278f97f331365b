// colony koordlet: the koordlet on a real node (docs/koordlet.md). run/koordlet_agent does the
// work: the node's collectors (bridges/node) are the source, the koordlet component
// (actors/koordlet/actor) decides, every record goes to the embedded log at --log, and with
// --enforce the cgroup executor writes the component's decisions into the node's cgroups and
// logs what the files hold afterwards. Without --enforce (the default) it is a dry run: decisions
// are logged, no cgroup is written.
//
//   colony koordlet --node NAME --log DIR [--enforce] [--node-slo FILE] [--cgroup-root DIR]
//                   [--proc-root DIR] [--sys-root DIR] [--kube-parent DIR] [--interval 1s]
//                   [--report-interval 60s] [--report-every D] [--pressure] [--once] [--json]
//                   [--kubeconfig FILE [--context C] [--server URL] | --in-cluster]
//
// The NodeMetric report is the component's NodeMetricReported, printed with --json as
// Koordinator's NodeMetric (apis/slo/v1alpha1/nodemetric_types.go): status.updateTime,
// status.nodeMetric.{nodeUsage,systemUsage,aggregatedNodeUsages,aggregatedSystemUsages},
// status.podsMetric[] {namespace, name, podUsage, priority, qos}. On a lone node cgroups carry no
// pod name: pods are reported with name = uid and namespace "". In cluster mode (--kubeconfig,
// --in-cluster; run/koordlet_agent_cluster.hpp) the API server's Node, pods and NodeSLO are
// observations too (pods named by the uid their cgroup carries), each report is written as the
// node's NodeMetric status and each eviction goes through the Eviction API.
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
#include "bridges/kubernetes/kubeconfig.hpp"
#include "bridges/kubernetes/sink.hpp"
#include "cmd/colony/commands.hpp"
#include "cmd/colony/duration_flag.hpp"
#include "cmd/colony/exit_codes.hpp"
#include "messages/names.hpp"
#include "messages/quantity.hpp"
#include "run/koordlet_agent.hpp"
#include "run/koordlet_agent_cluster.hpp"
#include "stores/event_log.hpp"

namespace colony::cli {

namespace {

using nlohmann::json;

struct koordlet_args {
  std::string node;
  std::string cgroup_root = "/sys/fs/cgroup";
  std::string proc_root = "/proc";
  std::string sys_root = "/sys";
  std::string resctrl_root = "/sys/fs/resctrl";
  std::string kube_parent;
  std::string interval = "1s";
  std::string report_interval = "60s";
  bool pressure = false;
  bool once = false;
  bool json_out = false;
  std::string log;
  bool enforce = false;
  std::string node_slo;
  std::string kubeconfig;
  std::string context;
  std::string server;
  bool in_cluster = false;
  std::string report_every;
  std::string feature_gates;
  std::string memory_collect_policy;
  std::string sample_retention = "1h";
};

std::atomic<bool> koordlet_stop{false};
extern "C" void on_koordlet_signal(int) { koordlet_stop = true; }

int report_error(const error& e) {
  std::fprintf(stderr, "colony: %s\n", e.describe().c_str());
  return exit_code_for(e);
}

// The component's NodeMetricReported as Koordinator's NodeMetric object (the status the sink
// writes in a cluster).
json node_metric_json(const wire::NodeMetricReported& m) {
  // spec.metricCollectPolicy as the kube sink creates it, nodeMemoryCollectPolicy included.
  auto j = kube::node_metric_object(m);
  j["status"] = kube::node_metric_status(m);
  return j;
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

std::string cluster_server(const koordlet_args& a) {
  return a.server.empty() ? (a.in_cluster ? std::string("in-cluster") : a.kubeconfig) : a.server;
}

// One API write's outcome, as a line: what was written or why not.
void print_outcome(const kube::write_outcome& w) {
  std::fprintf(stderr, "koordlet: %s %s %s: %s (HTTP %ld, %u attempts, decision at offset %llu)\n",
               std::string(kube::to_string(w.kind)).c_str(), w.object.c_str(),
               w.ok ? (w.wrote ? "written" : "unchanged") : "FAILED", w.message.c_str(),
               w.http_status, w.attempts, static_cast<unsigned long long>(w.offset));
}

// --feature-gates "BEMemoryEvict=true,CPUBurst=false": the koordlet's gates by Koordinator's
// names (pkg/features/koordlet_features.go), over their defaults.
result<koordlet::koordlet_feature_gates> parse_feature_gates(std::string_view text) {
  koordlet::koordlet_feature_gates g;
  const std::pair<std::string_view, bool koordlet::koordlet_feature_gates::*> known[] = {
      {"BECPUSuppress", &koordlet::koordlet_feature_gates::be_cpu_suppress},
      {"CPUBurst", &koordlet::koordlet_feature_gates::cpu_burst},
      {"BECPUEvict", &koordlet::koordlet_feature_gates::be_cpu_evict},
      {"CPUEvict", &koordlet::koordlet_feature_gates::cpu_evict},
      {"CPUAllocatableEvict", &koordlet::koordlet_feature_gates::cpu_allocatable_evict},
      {"BEMemoryEvict", &koordlet::koordlet_feature_gates::be_memory_evict},
      {"MemoryEvict", &koordlet::koordlet_feature_gates::memory_evict},
      {"MemoryAllocatableEvict", &koordlet::koordlet_feature_gates::memory_allocatable_evict},
      {"GroupIdentity", &koordlet::koordlet_feature_gates::group_identity},
      {"BatchResource", &koordlet::koordlet_feature_gates::batch_resource},
      {"RdtResctrl", &koordlet::koordlet_feature_gates::rdt_resctrl},
      {"ColdPageCollector", &koordlet::koordlet_feature_gates::cold_page_collector},
  };
  while (!text.empty()) {
    const auto comma = text.find(',');
    const auto item = text.substr(0, comma);
    text = comma == std::string_view::npos ? std::string_view() : text.substr(comma + 1);
    const auto eq = item.find('=');
    const auto name = item.substr(0, eq);
    const auto value = eq == std::string_view::npos ? std::string_view() : item.substr(eq + 1);
    if (value != "true" && value != "false")
      return fail(errc::invalid_input,
                  "\"" + std::string(item) + "\" is not NAME=true or NAME=false",
                  "--feature-gates");
    bool found = false;
    for (const auto& [n, field] : known) {
      if (n != name) continue;
      g.*field = value == "true";
      found = true;
    }
    if (!found)
      return fail(errc::invalid_input,
                  "unknown koordlet feature gate \"" + std::string(name) + "\"", "--feature-gates");
  }
  return g;
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
  o.source.sys_root = a.sys_root;
  o.source.resctrl_root = a.resctrl_root;
  o.source.kube_parent_dir = a.kube_parent;
  o.source.read_pressure = a.pressure;
  o.source.ticks_per_second = ::sysconf(_SC_CLK_TCK) > 0 ? ::sysconf(_SC_CLK_TCK) : 100;
  o.enforce = a.enforce;
  if (a.sample_retention == "0") {
    o.sample_retention_ms = 0;
  } else {
    const auto keep = parse_duration_flag(a.sample_retention, "--sample-retention");
    if (!keep) return report_error(keep.error());
    o.sample_retention_ms = keep->count();
  }
  o.koordlet.node = a.node;
  // In a cluster the Node's status carries the batch allocatable the slo-controller wrote.
  o.koordlet.batch_from_node_status = !a.kubeconfig.empty() || a.in_cluster;
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
    auto qos = slo_controller::parse_resource_qos_strategy(spec->resource_qos_strategy_json);
    if (!qos) {
      auto e = qos.error();
      e.where = a.node_slo + ": " + e.where;
      return report_error(e);
    }
    o.koordlet.cpu_qos = koordlet_actor::to_koordlet(*qos);
    o.koordlet.memory_qos = koordlet_actor::to_koordlet_memory(*qos);
    o.koordlet.resctrl_qos = koordlet_actor::to_koordlet_resctrl(*qos);
    o.koordlet.host_apps = koordlet_actor::to_koordlet(spec->host_applications);
  }
  if (!a.feature_gates.empty()) {
    auto g = parse_feature_gates(a.feature_gates);
    if (!g) return report_error(g.error());
    o.koordlet.gates = *g;
  }
  o.source.read_cold_pages = o.koordlet.gates.cold_page_collector;
  if (!a.memory_collect_policy.empty()) {
    // NodeMetric spec.metricCollectPolicy.nodeMemoryCollectPolicy (koord-manager sets it from
    // the colocation strategy's metricMemoryCollectPolicy; a lone node takes it from the flag).
    using mp = koordlet::node_memory_collect_policy;
    if (a.memory_collect_policy == "usageWithoutPageCache")
      o.koordlet.report_policy.memory_policy = mp::usage_without_page_cache;
    else if (a.memory_collect_policy == "usageWithHotPageCache")
      o.koordlet.report_policy.memory_policy = mp::usage_with_hot_page_cache;
    else
      return report_error(error{errc::invalid_input,
                                "\"" + a.memory_collect_policy +
                                    "\": want usageWithoutPageCache or usageWithHotPageCache",
                                "--node-memory-collect-policy"});
  }
  if (!a.report_every.empty()) {
    const auto every = parse_duration_flag(a.report_every, "--report-every");
    if (!every) return report_error(every.error());
    o.koordlet.report_interval_ms = every->count();
  }
  // Cluster mode: the API server's informers and sink (run/koordlet_agent_cluster.hpp).
  std::unique_ptr<agent::koordlet_cluster> cluster;
  const bool cluster_mode = !a.kubeconfig.empty() || a.in_cluster;
  std::signal(SIGINT, on_koordlet_signal);
  std::signal(SIGTERM, on_koordlet_signal);
  if (cluster_mode) {
    if (!a.kubeconfig.empty() && a.in_cluster)
      return report_error(error{errc::invalid_input, "--kubeconfig and --in-cluster are exclusive",
                                "--in-cluster"});
    auto conn = a.in_cluster ? kube::in_cluster() : kube::load_kubeconfig(a.kubeconfig, a.context);
    if (!conn) return report_error(conn.error());
    if (!a.server.empty()) conn->server = a.server;
    agent::koordlet_cluster_options co;
    co.conn = std::move(*conn);
    co.node = a.node;
    // Koordinator's evictor tries an eviction once per round (evictor.go evictPod); a refusal
    // (a PodDisruptionBudget's 429) is a WriteFailed, not retried here.
    co.sink.eviction_max_attempts = 1;
    auto c = agent::koordlet_cluster::start(std::move(co));
    if (!c) return report_error(c.error());
    cluster = std::move(*c);
    o.cluster = cluster.get();
  } else if (!a.server.empty() || !a.context.empty()) {
    return report_error(error{errc::invalid_input, "--server and --context need --kubeconfig",
                              a.server.empty() ? "--context" : "--server"});
  }
  auto log = stores::open_log(a.log, agent::koordlet_log_options());
  if (!log) return report_error(log.error());
  // Evictions logged and not yet answered by the API when it stopped are carried out again
  // (LOG.sink-position, as colony run's).
  if (cluster && a.enforce) o.position_path = a.log + ".sink-position";
  auto ag = agent::koordlet_agent::open(o, **log, event_time{now_ms()});
  if (!ag) return report_error(ag.error());
  auto& agent = **ag;
  bool warned = false;
  print_problems(agent, warned);
  const std::string api =
      cluster ? "; API server " + cluster_server(a) + ": NodeMetric status written" +
                    (a.enforce ? ", evictions through the Eviction API" : ", evictions logged only")
              : std::string();
  std::fprintf(stderr, "koordlet: node %s log %s (%llu records replayed) %s%s\n", a.node.c_str(),
               (*log)->describe().c_str(), static_cast<unsigned long long>(agent.stats().replayed),
               a.enforce ? "enforcing: cgroups are written" : "dry run: decisions are logged only",
               api.c_str());
  // What the API server's informers and writes say, printed when it changes.
  std::string last_api_problem;
  auto observe = [&]() -> result<void> {
    if (!cluster) return {};
    auto done = agent.observe(event_time{now_ms()});
    if (!done) return tl::unexpected(done.error());
    for (const auto& w : *done) print_outcome(w);
    // Printed when the set of informers in trouble changes, with the first one's error.
    const auto problems = cluster->problems();
    std::string names;
    for (const auto& p : problems) names += (names.empty() ? "" : ", ") + p.substr(0, p.find(':'));
    if (names != last_api_problem) {
      if (names.empty())
        std::fprintf(stderr, "koordlet: API server answers again: every informer is watching\n");
      else
        std::fprintf(stderr, "koordlet: API server not reachable or refusing (%s): %s\n",
                     names.c_str(), problems.front().c_str());
      last_api_problem = names;
    }
    return {};
  };
  // Koordinator's qosmanager starts once the statesinformer has synced (pkg/koordlet/koordlet.go):
  // the component decides over the pods the API server names.
  if (cluster) {
    while (!koordlet_stop && !cluster->synced()) {
      if (auto r = observe(); !r) return report_error(r.error());
      sleep_ms(100);
    }
    if (auto r = observe(); !r) return report_error(r.error());
  }
  std::uint64_t reported = agent.stats().reports;
  double cpu_seconds = 0;  // this process's CPU time spent in steps
  std::uint64_t steps = 0;
  for (;;) {
    // The informers' records and the writes' outcomes between two collections.
    const auto until =
        std::chrono::steady_clock::now() + std::chrono::milliseconds(interval->count());
    while (!koordlet_stop && std::chrono::steady_clock::now() < until) {
      if (auto r = observe(); !r) return report_error(r.error());
      sleep_ms(std::min<std::int64_t>(100, std::chrono::duration_cast<std::chrono::milliseconds>(
                                               until - std::chrono::steady_clock::now())
                                               .count()));
    }
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
  if (cluster) {
    // The writes of what is logged, then their outcomes into the log (a failure as WriteFailed).
    if (!cluster->wait_idle(10'000))
      std::fprintf(stderr, "koordlet: API writes still in flight after 10 s; stopping\n");
    if (auto r = observe(); !r) return report_error(r.error());
    cluster->stop();
    const auto st = agent.stats();
    std::fprintf(stderr,
                 "koordlet: stopped: %llu API observations logged (%llu duplicates dropped), "
                 "%llu decisions carried out (%llu carried over from before a stop), %llu API "
                 "writes failed, %llu dropped at stop\n",
                 static_cast<unsigned long long>(st.observed),
                 static_cast<unsigned long long>(st.duplicates),
                 static_cast<unsigned long long>(st.carried_out),
                 static_cast<unsigned long long>(st.carried_over),
                 static_cast<unsigned long long>(st.api_writes_failed),
                 static_cast<unsigned long long>(cluster->dropped()));
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
                "log what the files hold, and in cluster mode evict through the Eviction API; "
                "without it a dry run: decisions are logged, no cgroup is written, no pod "
                "evicted (the NodeMetric status is written either way)");
  cmd->add_option("--node-slo", args->node_slo,
                  "A NodeSLO spec JSON file (resourceUsedThresholdWithBE, cpuBurstStrategy): the "
                  "strategies in force until the log holds a NodeSLOUpdated for this node");
  cmd->add_option("--cgroup-root", args->cgroup_root, "cgroup mount root")->capture_default_str();
  cmd->add_option("--proc-root", args->proc_root, "proc mount root")->capture_default_str();
  cmd->add_option("--sys-root", args->sys_root,
                  "sysfs mount root (the machine's CPU and NUMA topology)")
      ->capture_default_str();
  cmd->add_option("--resctrl-root", args->resctrl_root,
                  "resctrl mount root (RdtResctrl: L3 CAT and MBA groups LSR, LS, BE)")
      ->capture_default_str();
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
  cmd->add_option("--kubeconfig", args->kubeconfig,
                  "cluster mode: watch this node's Node, its pods and its NodeSLO, write its "
                  "NodeMetric status and carry evictions out through the Eviction API");
  cmd->add_option("--context", args->context, "the kubeconfig context (default: current)");
  cmd->add_option("--server", args->server, "the API server's URL, instead of the kubeconfig's");
  cmd->add_flag("--in-cluster", args->in_cluster,
                "cluster mode with the pod's ServiceAccount (a DaemonSet)");
  cmd->add_option("--feature-gates", args->feature_gates,
                  "koordlet feature gates, Koordinator's names: BEMemoryEvict=true,BECPUEvict=true,"
                  "MemoryEvict, CPUEvict, CPUAllocatableEvict, MemoryAllocatableEvict, "
                  "BECPUSuppress, CPUBurst, GroupIdentity, BatchResource, RdtResctrl, "
                  "ColdPageCollector (Koordinator's defaults: evictions, ColdPageCollector off)");
  cmd->add_option("--node-memory-collect-policy", args->memory_collect_policy,
                  "NodeMetric memory: usageWithoutPageCache (default) or usageWithHotPageCache "
                  "(page cache that kidled does not report cold; needs ColdPageCollector=true)");
  cmd->add_option("--sample-retention", args->sample_retention,
                  "drop samples and reports older than this from the node's log (never less than "
                  "the longest NodeMetric window, 30m by default); 0 keeps everything")
      ->capture_default_str();
  cmd->add_option("--report-every", args->report_every,
                  "report at exactly this cadence, below Koordinator's 30-s floor (tests, demos)");
  cmd->callback([args] { exit_status() = run_koordlet(*args); });
}

}  // namespace colony::cli
