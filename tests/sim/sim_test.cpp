// colony sim: end-to-end runs on a cut of the bundled openb trace (and one on the full default
// trace), config parsing, determinism across thread counts, log = state, and the CLI's bad-row
// handling. The cut: every 15th node of the openb node list, the pods created in days 115-117
// (the trace's busy window) with times shifted to start at 0 and run times clipped to 1 day,
// and the first 8,000 rows of the v2018 machine_usage extract.
#include <sys/wait.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <set>
#include <sstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "actors/entities/audit.hpp"
#include "actors/entities/world.hpp"
#include "actors/quota/actor/quota_events.hpp"
#include "actors/quota/webhook.hpp"
#include "bridges/trace/trace_set.hpp"
#include "messages/codec.hpp"
#include "messages/names.hpp"
#include "sim/cli.hpp"
#include "sim/driver.hpp"
#include "sim/report.hpp"
#include "sim/sim_config.hpp"
#include "stores/event_log.hpp"
#include "tests/sim/sim_fixture.hpp"

namespace fs = std::filesystem;
using namespace colony;
using namespace colony::sim_fixture;

namespace {

sim::run_result run(const trace::trace_set& t, const sim::sim_config& c, std::size_t threads,
                    const std::string& log = {}) {
  sim::run_options o;
  o.threads = threads;
  o.log_path = log;
  auto r = sim::run_simulation(t, c, o);
  EXPECT_TRUE(r.has_value()) << (r ? "" : r.error().describe());
  return *r;
}

// Every record of a log the sim wrote, in offset order.
std::vector<messages::byte_buffer> read_log(const std::string& path) {
  std::vector<messages::byte_buffer> out;
  stores::log_options lo;
  lo.create_if_missing = false;
  lo.read_only = true;
  auto log = stores::open_log(path, lo);
  EXPECT_TRUE(log.has_value()) << (log ? "" : log.error().describe());
  if (!log) return out;
  auto rd = (*log)->read(0, no_offset, [&](log_offset, messages::bytes_view b) {
    out.emplace_back(b.begin(), b.end());
    return true;
  });
  EXPECT_TRUE(rd.has_value()) << (rd ? "" : rd.error().describe());
  return out;
}

void expect_invariants(const nlohmann::ordered_json& s) {
  const auto& p = s["pods"];
  EXPECT_TRUE(p["conservation_ok"].get<bool>());
  EXPECT_EQ(p["submitted"].get<std::uint64_t>(),
            p["scheduled"].get<std::uint64_t>() + p["pending_at_end"].get<std::uint64_t>() +
                p["rejected"].get<std::uint64_t>() +
                p["withdrawn_while_pending"].get<std::uint64_t>());
  EXPECT_EQ(s["invariants"]["over_capacity_binds"].get<std::uint64_t>(), 0u);
  EXPECT_EQ(s["invariants"]["negative_batch_allocatable"].get<std::uint64_t>(), 0u);
  EXPECT_EQ(s["invariants"]["evictions_without_reason"].get<std::uint64_t>(), 0u);
  std::uint64_t by_reason = 0;
  for (const auto& [k, v] : p["evicted_by_reason"].items()) {
    EXPECT_FALSE(k.empty());
    by_reason += v.get<std::uint64_t>();
  }
  EXPECT_EQ(by_reason, p["evicted"].get<std::uint64_t>());
  for (const char* cls : {"all", "prod", "batch"}) {
    const auto& l = s["scheduling_latency_virtual"][cls];
    EXPECT_LE(l["p50_ms"].get<std::int64_t>(), l["p90_ms"].get<std::int64_t>()) << cls;
    EXPECT_LE(l["p90_ms"].get<std::int64_t>(), l["p99_ms"].get<std::int64_t>()) << cls;
    EXPECT_LE(l["p99_ms"].get<std::int64_t>(), l["max_ms"].get<std::int64_t>()) << cls;
    EXPECT_GE(l["p50_ms"].get<std::int64_t>(), 0) << cls;
  }
}

int run_cli(const std::string& args, std::string* err = nullptr) {
  const char* bin = std::getenv("COLONY_BINARY");
#ifdef COLONY_BINARY_PATH
  if (bin == nullptr) bin = COLONY_BINARY_PATH;
#endif
  if (bin == nullptr) return -1;
  const std::string errf = (fixture().root / "stderr.txt").string();
  const std::string cmd = std::string(bin) + " " + args + " >/dev/null 2>" + errf;
  const int st = std::system(cmd.c_str());
  if (err != nullptr) {
    std::ifstream in(errf);
    std::stringstream ss;
    ss << in.rdbuf();
    *err = ss.str();
  }
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

}  // namespace

TEST(SimConfig, ShippedConfigsParse) {
  for (const char* n : {"koordinator-defaults", "no-colocation", "aggressive-reclaim",
                        "elastic-quota", "elastic-quota-preemption", "descheduler",
                        "descheduler-reservation", "numa-lsr", "cpu-normalization"}) {
    auto c = sim::load_sim_config(repo_root() + "/sim/configs/" + n + ".yaml");
    ASSERT_TRUE(c.has_value()) << n << ": " << c.error().describe();
    EXPECT_EQ(c->name, n);
  }
  auto q = shipped("elastic-quota");
  ASSERT_EQ(q.quotas.size(), 3u);
  EXPECT_EQ(q.quotas[0].name, "tenants");
  EXPECT_TRUE(q.quotas[0].is_parent);
  EXPECT_EQ(q.quotas[1].parent, "tenants");
  EXPECT_EQ(q.quotas[2].max.batch_cpu_milli, 100'000);
  EXPECT_TRUE(shipped("koordinator-defaults").quotas.empty());
  EXPECT_FALSE(shipped("koordinator-defaults").descheduler.has_value());
  const auto d = shipped("descheduler");
  ASSERT_TRUE(d.descheduler.has_value());
  EXPECT_TRUE(d.descheduler->low_node_load_enabled);
  EXPECT_EQ(d.descheduler->descheduling_interval_ms, 60'000);
  EXPECT_EQ(d.descheduler->migration.default_job_mode, "EvictDirectly");
  EXPECT_EQ(d.workloads, sim::workload_model::none);
  const auto r = shipped("descheduler-reservation");
  ASSERT_TRUE(r.descheduler.has_value());
  EXPECT_EQ(r.descheduler->migration.default_job_mode, "ReservationFirst");
  EXPECT_EQ(r.workloads, sim::workload_model::shape);
}

TEST(SimConfig, NumaTopologyAndCpuModels) {
  const auto n = shipped("numa-lsr");
  ASSERT_TRUE(n.numa_topology.has_value());
  EXPECT_EQ(n.numa_topology->sockets, 2);
  EXPECT_EQ(n.numa_topology->threads_per_core, 2);
  EXPECT_FALSE(n.cpu_normalization_plugins);
  EXPECT_FALSE(shipped("koordinator-defaults").numa_topology.has_value());
  const auto c = shipped("cpu-normalization");
  EXPECT_TRUE(c.cpu_normalization_plugins);
  ASSERT_EQ(c.cpu_models.size(), 3u);
  EXPECT_EQ(c.cpu_models[0].cpus, 104);
  EXPECT_EQ(c.cpu_models[2].cpus, 0);
  // The machine model of a node by its CPU count (numa_topology_config's documented rule).
  sim::numa_topology_config t;  // 2 sockets x 1 NUMA node, 2 threads a core
  auto m = sim::numa_machine_model(96, t);
  ASSERT_TRUE(m.has_value());
  EXPECT_EQ(m->sockets, 2);
  EXPECT_EQ(m->cores_per_numa_node, 24);
  m = sim::numa_machine_model(82, t);  // 82 = 2 x 41: one socket, 41 cores of 2 threads
  ASSERT_TRUE(m.has_value());
  EXPECT_EQ(m->sockets, 1);
  EXPECT_EQ(m->cores_per_numa_node, 41);
  m = sim::numa_machine_model(7, t);  // odd: one thread a core
  ASSERT_TRUE(m.has_value());
  EXPECT_EQ(m->threads_per_core, 1);
  EXPECT_EQ(m->cores_per_numa_node, 7);
  EXPECT_FALSE(sim::numa_machine_model(0, t).has_value());
  // Errors name the field.
  struct row {
    const char* yaml;
    const char* field;
  };
  const row rows[] = {
      {"name: x\nnumaTopology: {sockets: 0}\n", "numaTopology.sockets"},
      {"name: x\nnumaTopology: {kubeletTopologyPolicy: Strict}\n",
       "numaTopology.kubeletTopologyPolicy"},
      {"name: x\nnumaTopology: {nodeCPUBindPolicy: Pinned}\n", "numaTopology.nodeCPUBindPolicy"},
      {"name: x\nnumaTopology: {cores: 4}\n", "numaTopology.cores"},
      {"name: x\ncpuModels: [{cpus: 8}]\n", "cpuModels[0].model"},
      {"name: x\ncpuModels: [{cpus: -1, model: m}]\n", "cpuModels[0].cpus"},
      {"name: x\ncpuModels: [{model: m, turboEnabled: maybe}]\n", "cpuModels[0].turboEnabled"},
  };
  for (const auto& r : rows) {
    auto bad = sim::parse_sim_config(r.yaml, "cfg.yaml");
    ASSERT_FALSE(bad.has_value()) << r.yaml;
    EXPECT_NE(bad.error().message.find(r.field), std::string::npos) << bad.error().describe();
  }
}

// numa-lsr on the cut: every node reports a topology, the whole-CPU online pods become LSR and
// get exclusive cpusets, and the run keeps its invariants and is the same at 1 and 4 threads.
TEST(Sim, NumaLsrGivesWholeCpuPodsCpusets) {
  const auto t = load_cut();
  const auto dir = fixture().root;
  const auto r = run(t, shipped("numa-lsr"), 1, (dir / "numa1").string());
  expect_invariants(r.summary);
  ASSERT_TRUE(r.summary.contains("numa")) << r.summary.dump();
  const auto& n = r.summary["numa"];
  EXPECT_GT(n["nodes_with_topology"].get<std::uint64_t>(), 50u);
  EXPECT_GT(n["cpuset_pods"].get<std::uint64_t>(), 10u);
  EXPECT_GE(n["cpuset_cpus"].get<std::uint64_t>(), 2 * n["cpuset_pods"].get<std::uint64_t>());
  EXPECT_FALSE(run(t, shipped("koordinator-defaults"), 1).summary.contains("numa"));
  const auto r4 = run(t, shipped("numa-lsr"), 4, (dir / "numa4").string());
  EXPECT_EQ(r4.summary["events"]["log_byte_digest"], r.summary["events"]["log_byte_digest"]);
}

// cpu-normalization on the cut: the slo-controller writes each model's ratio on its nodes.
TEST(Sim, CpuNormalizationAnnotatesNodesByModel) {
  const auto t = load_cut();
  const auto r = run(t, shipped("cpu-normalization"), 1);
  expect_invariants(r.summary);
  ASSERT_TRUE(r.summary.contains("cpu_normalization")) << r.summary.dump();
  const auto& by = r.summary["cpu_normalization"]["nodes_by_ratio"];
  EXPECT_TRUE(by.contains("1.29")) << by.dump();  // the 104-CPU nodes' model, HT on
  EXPECT_TRUE(by.contains("1.00")) << by.dump();  // the 96-CPU nodes' baseline
  EXPECT_FALSE(run(t, shipped("koordinator-defaults"), 1).summary.contains("cpu_normalization"));
}

TEST(SimConfig, BuiltInDefaultIsTheShippedFile) {
  std::ifstream in(repo_root() + "/sim/configs/koordinator-defaults.yaml");
  std::stringstream ss;
  ss << in.rdbuf();
  EXPECT_EQ(std::string(sim::default_config_text()), ss.str());
}

TEST(SimConfig, AggressiveReclaimReadsSloKeys) {
  auto c = shipped("aggressive-reclaim");
  ASSERT_TRUE(c.slo.colocation.has_value());
  EXPECT_EQ(c.slo.colocation->cluster.cpu_reclaim_threshold_percent.value_or(0), 85);
  EXPECT_TRUE(c.gates.be_memory_evict);
}

TEST(SimConfig, SchedulerTieBreakIsSeededUnlessTheFgdConfigsAskForNames) {
  // The FGD paper's BestFit and FGD runs break ties as the authors' scheduler does (smallest
  // node name); every other shipped config keeps Colony's seeded tie-break.
  struct row {
    const char* config;
    scheduler::tie_break want;
  };
  const row rows[] = {{"koordinator-defaults", scheduler::tie_break::seeded},
                      {"fgd-bestfit", scheduler::tie_break::node_name},
                      {"fgd-fgd", scheduler::tie_break::node_name}};
  for (const auto& r : rows) EXPECT_EQ(shipped(r.config).scheduler_tie_break, r.want) << r.config;
  auto c = sim::parse_sim_config("name: x\nschedulerTieBreak: seeded\n", "cfg.yaml");
  ASSERT_TRUE(c.has_value()) << c.error().describe();
  EXPECT_TRUE(c->gives("schedulerTieBreak"));
  EXPECT_FALSE(c->scheduler_gates.elastic_quota_ignore_pod_overhead);
  auto g = sim::parse_sim_config(
      "name: x\nschedulerFeatureGates: ElasticQuotaIgnorePodOverhead=true\n", "cfg.yaml");
  ASSERT_TRUE(g.has_value()) << g.error().describe();
  EXPECT_TRUE(g->scheduler_gates.elastic_quota_ignore_pod_overhead);
}

TEST(SimConfig, ErrorsNameFileAndField) {
  struct row {
    const char* name;
    const char* yaml;
    const char* where;
    const char* message;
  };
  const row rows[] = {
      {"unknown field", "name: x\nusageModle: none\n", "cfg.yaml:2:1", "usageModle: unknown field"},
      {"bad usage model", "name: x\nusageModel: curves\n", "cfg.yaml:2:13",
       "usageModel: expected one of"},
      {"bad interval", "name: x\nnodeMetricReportIntervalSeconds: -5\n", "cfg.yaml:2:34",
       "positive integer"},
      {"missing name", "usageModel: none\n", "cfg.yaml", "name: required"},
      {"bad tie break", "name: x\nschedulerTieBreak: name\n", "cfg.yaml:2:20",
       "schedulerTieBreak: expected one of seeded, nodeName"},
      {"unknown scheduler gate", "name: x\nschedulerFeatureGates: Gang=true\n", "cfg.yaml:2:24",
       "schedulerFeatureGates: unknown scheduler feature gate 'Gang'"},
      {"bad workload model", "name: x\nworkloadModel: deployment\n", "cfg.yaml:2:16",
       "workloadModel: expected one of none, shape"},
      {"bad slo key",
       "name: x\nsloControllerConfig:\n  colocation-config: '{\"cpuReclaimThresholdPercent\": "
       "-5}'\n",
       "cfg.yaml:3:3", "cpuReclaimThresholdPercent"},
      {"bad ratio", "name: x\nusageRatios:\n  prod: {cpu: abc}\n", "cfg.yaml:3:15",
       "usageRatios.prod.cpu"},
      {"bad quota",
       "name: x\nelasticQuotas: |\n  kind: ElasticQuota\n  metadata: {name: a}\n  spec:\n    max: "
       "{cpu: 4x}\n",
       "cfg.yaml:2:16: elasticQuotas:4 spec.max[cpu]", "unknown suffix"},
      {"quota key Colony cannot book",
       "name: x\nelasticQuotas: |\n  kind: ElasticQuota\n  metadata: {name: a}\n  spec:\n    max: "
       "{ephemeral-storage: 1Gi}\n",
       "cfg.yaml", "spec.max[ephemeral-storage]"},
      {"children's min above the parent's",
       "name: x\nelasticQuotas: |\n  kind: ElasticQuota\n  metadata: {name: p, labels: "
       "{quota.scheduling.koordinator.sh/is-parent: \"true\"}}\n  spec: {min: {cpu: 4}, max: {cpu: "
       "8}}\n  ---\n  kind: ElasticQuota\n  metadata: {name: c, labels: "
       "{quota.scheduling.koordinator.sh/parent: p}}\n  spec: {min: {cpu: 6}, max: {cpu: 8}}\n",
       "spec.min[cpu]", "children's min"},
      {"priority class redefined",
       "name: x\npriorityClasses: |\n  kind: PriorityClass\n  metadata: {name: koord-prod}\n  "
       "value: 9100\n",
       "cfg.yaml:2:18: priorityClasses", "may not redefine"},
      {"priority class without a value",
       "name: x\npriorityClasses: |\n  kind: PriorityClass\n  metadata: {name: p}\n",
       "cfg.yaml:2:18: priorityClasses:1", "value: Required value"},
      {"profile naming a missing priority class",
       "name: x\ncolocationProfiles: |\n  kind: ClusterColocationProfile\n  metadata: {name: "
       "a}\n  spec: {priorityClassName: koord-critical}\n",
       "ClusterColocationProfile a spec.priorityClassName", "\"koord-critical\" not found"},
      {"config quota that is a profile's root",
       "name: x\nelasticQuotaProfiles: |\n  kind: ElasticQuotaProfile\n  metadata: {name: p, "
       "namespace: default}\n  spec: {quotaName: root, nodeSelector: {matchLabels: {a: b}}}\n"
       "elasticQuotas: |\n  kind: "
       "ElasticQuota\n  metadata: {name: root}\n",
       "cfg.yaml:2:23: elasticQuotaProfiles", "tree root of profile 'p'"},
      {"profile without quotaName",
       "name: x\nelasticQuotaProfiles: |\n  kind: ElasticQuotaProfile\n  metadata: {name: p}\n  "
       "spec: {nodeSelector: {matchLabels: {a: b}}}\n",
       "spec.quotaName", "quotaName"},
      {"quota twice",
       "name: x\nelasticQuotas: |\n  kind: ElasticQuota\n  metadata: {name: a}\n  ---\n  kind: "
       "ElasticQuota\n  metadata: {name: a}\n",
       "cfg.yaml:2:16", "listed twice"},
  };
  for (const auto& r : rows) {
    auto c = sim::parse_sim_config(r.yaml, "cfg.yaml");
    ASSERT_FALSE(c.has_value()) << r.name;
    EXPECT_EQ(c.error().code, errc::invalid_input) << r.name;
    EXPECT_NE(c.error().where.find(r.where), std::string::npos)
        << r.name << ": " << c.error().describe();
    EXPECT_NE(c.error().message.find(r.message), std::string::npos)
        << r.name << ": " << c.error().describe();
  }
}

TEST(Sim, CutTraceKoordinatorDefaultsKeepsInvariants) {
  const auto t = load_cut();
  const auto r = run(t, shipped("koordinator-defaults"), 1);
  expect_invariants(r.summary);
  EXPECT_GT(r.summary["pods"]["scheduled"].get<std::uint64_t>(), 100u);
  EXPECT_GT(r.summary["batch"]["batch_updates"].get<std::uint64_t>(), 0u);
  EXPECT_GT(r.summary["events"]["node_metric_reports"].get<std::uint64_t>(), 0u);
  EXPECT_FALSE(r.rows.empty());
  for (const auto& row : r.rows) {
    EXPECT_GE(row.batch_cpu_allocatable, 0);
    EXPECT_GE(row.batch_mem_allocatable, 0);
    EXPECT_LE(row.gpu_allocated, row.gpu_total);
  }
}

TEST(Sim, CutTraceEveryShippedConfigKeepsInvariants) {
  const auto t = load_cut();
  for (const char* n : {"no-colocation", "aggressive-reclaim"}) {
    const auto r = run(t, shipped(n), 1);
    SCOPED_TRACE(n);
    expect_invariants(r.summary);
  }
}

TEST(Sim, ElasticQuotaCapsUsedAtMaxAndRefusesTheRest) {
  const auto t = load_cut();
  const auto c = small_quotas();
  const auto r = run(t, c, 2);
  expect_invariants(r.summary);
  const auto& q = r.summary["quota"];
  ASSERT_EQ(q["quotas"].get<std::size_t>(), 3u);
  std::map<std::string, nlohmann::ordered_json> by;
  for (const auto& x : q["by_quota"]) by[x["name"].get<std::string>()] = x;
  ASSERT_EQ(by.size(), 3u);
  // Demand exceeds both quotas on these days: the plugin refuses pods, and they wait.
  EXPECT_GT(by["online"]["attempts_refused"].get<std::uint64_t>(), 0u);
  EXPECT_GT(by["batch"]["attempts_refused"].get<std::uint64_t>(), 0u);
  EXPECT_GT(r.summary["pods"]["unschedulable_events"].get<std::uint64_t>(), 0u);
  // Never more used than max, at any sample; and the quotas were used at all.
  ASSERT_FALSE(r.quota_rows.empty());
  std::int64_t online_peak = 0;
  for (const auto& row : r.quota_rows) {
    EXPECT_LE(row.used_cpu, row.max_cpu) << row.quota << " at " << row.time_ms;
    EXPECT_LE(row.used_cpu, row.runtime_cpu + 1) << row.quota << " at " << row.time_ms;
    if (row.quota == "online") online_peak = std::max(online_peak, row.used_cpu);
  }
  EXPECT_GT(online_peak, 40'000);  // beyond min: online borrowed up to its max
  EXPECT_EQ(by["online"]["used_cpu_peak"].get<std::int64_t>(), online_peak);
  // The quotas and their status are in the log.
  EXPECT_EQ(r.summary["events"]["by_type"]["QuotaUpserted"].get<std::uint64_t>(), 3u);
  EXPECT_GT(r.summary["events"]["by_type"]["QuotaRuntimeUpdated"].get<std::uint64_t>(), 0u);
  // Without quotas the same pods are not refused by anything.
  auto free = shipped("elastic-quota");
  free.quotas.clear();
  const auto f = run(t, free, 2);
  EXPECT_EQ(f.summary["quota"]["quotas"].get<std::size_t>(), 0u);
  EXPECT_GT(f.summary["pods"]["scheduled"].get<std::uint64_t>(),
            r.summary["pods"]["scheduled"].get<std::uint64_t>());
}

// elastic-quota-preemption on the cut, its online quota scaled down so that it binds: the
// critical pods (koord-prod-critical, 9500) the quota refuses preempt ordinary online pods
// (koord-prod, 9000) of the same quota. Every victim is checked against the log: of the
// preemptor's quota, of lower priority, preemptible, bound at the time, evicted once.
TEST(Sim, ElasticQuotaPreemptionEvictsOnlyLowerPriorityPodsOfTheQuota) {
  const auto t = load_cut();
  auto c = shipped("elastic-quota-preemption");
  ASSERT_EQ(c.extra_priority_classes.size(), 1u);
  EXPECT_EQ(c.priority_classes.at("koord-prod-critical").value, 9500);
  auto small = small_quotas();
  c.quotas = small.quotas;
  for (auto& q : c.quotas)
    if (q.name == "online") q.max.cpu_milli = q.min.cpu_milli;  // 40 cores: no borrowing
  const auto dir = fixture().root;
  const auto r = run(t, c, 1, (dir / "eq-preempt1").string());
  expect_invariants(r.summary);
  struct pod_rec {
    std::int32_t priority = 0;
    std::string quota, node;
    bool evicted = false;
  };
  std::map<std::string, pod_rec, std::less<>> pods;
  std::size_t preempted = 0, priority_classes_logged = 0;
  std::set<std::string> preemptors, preemptors_bound;
  for (const auto& rec : read_log((dir / "eq-preempt1").string())) {
    const auto& env = *wire::GetEnvelope(rec.data());
    switch (env.payload_type()) {
      case wire::Payload::ConfigUpdated:
        if (messages::to_string_view(env.payload_as_ConfigUpdated()->kind()) == "PriorityClass")
          ++priority_classes_logged;
        break;
      case wire::Payload::PodMutated: {
        const auto* e = env.payload_as_PodMutated();
        auto& p = pods[std::string(messages::to_string_view(e->name()))];
        p.priority = e->priority();
        if (e->labels() != nullptr)
          for (const auto* kv : *e->labels())
            if (messages::to_string_view(kv->key()) == "quota.scheduling.koordinator.sh/name")
              p.quota = std::string(messages::to_string_view(kv->value()));
        break;
      }
      case wire::Payload::PodScheduled: {
        const auto* e = env.payload_as_PodScheduled();
        const std::string pod(messages::to_string_view(e->pod()));
        pods[pod].node = std::string(messages::to_string_view(e->node()));
        if (preemptors.count(pod) != 0) preemptors_bound.insert(pod);
        break;
      }
      case wire::Payload::PodEvicted: {
        const auto* e = env.payload_as_PodEvicted();
        if (e->reason() != wire::EvictionReason::Preempted) break;
        ++preempted;
        auto& victim = pods[std::string(messages::to_string_view(e->pod()))];
        std::string preemptor;
        ASSERT_NE(e->inputs(), nullptr);
        for (const auto* in : *e->inputs())
          if (messages::to_string_view(in->name()) == "preemptor")
            preemptor = std::string(messages::to_string_view(in->text()));
        ASSERT_TRUE(pods.count(preemptor)) << preemptor;
        const auto& by = pods[preemptor];
        EXPECT_FALSE(victim.evicted) << messages::to_string_view(e->pod());
        EXPECT_FALSE(victim.node.empty()) << "a preempted pod was bound";
        EXPECT_EQ(victim.quota, by.quota);
        EXPECT_EQ(by.quota, "online");
        EXPECT_LT(victim.priority, by.priority);
        EXPECT_EQ(by.priority, 9500);
        victim.evicted = true;
        preemptors.insert(preemptor);
        break;
      }
      default:
        break;
    }
  }
  EXPECT_EQ(priority_classes_logged, 1u);
  EXPECT_GT(preempted, 0u);
  EXPECT_FALSE(preemptors_bound.empty());  // a preemptor got its place
  std::cout << "preempted " << preempted << " pods for " << preemptors.size() << " preemptors, "
            << preemptors_bound.size() << " of them bound\n";
  const auto& online = r.summary["quota"]["by_quota"][1];
  ASSERT_EQ(online["name"], "online");
  EXPECT_EQ(online["preempted_pods"].get<std::size_t>(), preempted);
  EXPECT_EQ(online["preemptors"].get<std::size_t>(), preemptors.size());
  EXPECT_EQ(r.summary["pods"]["evicted_by_reason"]["Preempted (ElasticQuota PostFilter)"]
                .get<std::size_t>(),
            preempted);
  const auto r4 = run(t, c, 4, (dir / "eq-preempt4").string());
  EXPECT_EQ(r4.summary["events"]["log_byte_digest"], r.summary["events"]["log_byte_digest"]);
}

// elastic-quota-profiles on the cut: the profile controller writes one root per pool whose min
// is its nodes' allocatable x resourceRatio; each child quota joins its profile's tree and its
// used never passes its tree's total; the log is the same at 1 and 4 threads.
// deviceTopology: every GPU node has a Device object; whole-GPU pods ask for an RDMA VF jointly
// (SamePCIe). Each such pod's NIC is on one of its GPUs' PCIe switches, no VF is handed out twice
// on a node at once, the log is the same at 4 threads; without device-joint-allocate
// (device-joint-none) the same pods get NICs but not all on their GPUs' switches.
TEST(Sim, DeviceJointAllocationPutsEachNicOnItsGpusPcieSwitch) {
  const auto t = load_cut();
  const auto dir = fixture().root;
  const auto c = shipped("device-joint");
  ASSERT_TRUE(c.device_topology.has_value());
  const auto r = run(t, c, 1, (dir / "devices1").string());
  expect_invariants(r.summary);
  ASSERT_TRUE(r.summary.contains("devices")) << r.summary.dump();
  const auto& d = r.summary["devices"];
  const auto rdma_pods = d["rdma_pods_scheduled"].get<std::uint64_t>();
  EXPECT_GT(d["nodes_with_device_object"].get<std::uint64_t>(), 50u);
  EXPECT_EQ(d["device_objects_refused"].get<std::uint64_t>(), 0u);
  EXPECT_GT(rdma_pods, 50u);
  // SamePCIe: one NIC per PCIe switch the pod's GPUs span (Koordinator raises the count), each
  // with its VF.
  const auto nics = d["rdma_nics_allocated"].get<std::uint64_t>();
  EXPECT_GE(nics, rdma_pods);
  EXPECT_EQ(d["rdma_vfs_allocated"].get<std::uint64_t>(), nics);
  EXPECT_EQ(d["rdma_pods_nic_on_gpu_pcie_switch"].get<std::uint64_t>(), rdma_pods);
  EXPECT_EQ(d["rdma_pods_nic_on_gpu_numa_node"].get<std::uint64_t>(), rdma_pods);
  // From the log: every RDMA binding names a VF no pod on that node holds at the time.
  std::map<std::string, std::set<std::string>> held;    // node -> VF bus IDs
  std::map<std::string, std::vector<std::string>> vfs;  // pod -> its VFs
  std::map<std::string, std::string> node_of;
  std::size_t bindings = 0;
  for (const auto& rec : read_log((dir / "devices1").string())) {
    const auto& env = *wire::GetEnvelope(rec.data());
    if (const auto* s = env.payload_as_PodScheduled(); s != nullptr && s->devices() != nullptr) {
      const std::string pod(messages::to_string_view(s->pod()));
      const std::string node(messages::to_string_view(s->node()));
      for (const auto* x : *s->devices()) {
        if (messages::to_string_view(x->type()) != "rdma") continue;
        const std::string vf(messages::to_string_view(x->vf_bus_id()));
        ASSERT_FALSE(vf.empty()) << pod;
        EXPECT_TRUE(held[node].insert(vf).second) << pod << " got " << vf << " twice on " << node;
        vfs[pod].push_back(vf);
        node_of[pod] = node;
        ++bindings;
      }
    }
    auto release = [&](std::string_view pod_key) {
      const std::string pod(pod_key);
      auto it = vfs.find(pod);
      if (it == vfs.end()) return;
      for (const auto& vf : it->second) held[node_of[pod]].erase(vf);
      vfs.erase(it);
    };
    if (const auto* f = env.payload_as_PodFinished()) release(messages::to_string_view(f->pod()));
    if (const auto* e = env.payload_as_PodEvicted()) release(messages::to_string_view(e->pod()));
  }
  EXPECT_EQ(bindings, nics);
  const auto r4 = run(t, c, 4, (dir / "devices4").string());
  EXPECT_EQ(r4.summary["events"]["log_byte_digest"], r.summary["events"]["log_byte_digest"]);

  const auto none = run(t, shipped("device-joint-none"), 1);
  expect_invariants(none.summary);
  const auto& n = none.summary["devices"];
  EXPECT_GT(n["rdma_pods_scheduled"].get<std::uint64_t>(), 50u);
  EXPECT_LT(n["rdma_pods_nic_on_gpu_pcie_switch"].get<std::uint64_t>(),
            n["rdma_pods_scheduled"].get<std::uint64_t>());
  // Without Device objects no pod asks for RDMA and the summary has no devices section.
  EXPECT_FALSE(run(t, shipped("koordinator-defaults"), 1).summary.contains("devices"));
}

TEST(Sim, ElasticQuotaProfilesMakeOneTreePerNodePool) {
  const auto t = load_cut();
  auto c = shipped("elastic-quota-profiles");
  ASSERT_EQ(c.quota_profiles.size(), 2u);
  for (const auto& q : c.quotas) {
    const std::string pool = q.name == "online" ? "gpu-pool" : "cpu-pool";
    EXPECT_EQ(q.tree_id, quota::profile_tree_id("default", pool)) << q.name;
  }
  const auto dir = fixture().root;
  const auto r = run(t, c, 1, (dir / "eq-profiles1").string());
  expect_invariants(r.summary);
  resource_list gpu_pool, cpu_pool;
  std::size_t profiles_logged = 0;
  std::map<std::string, quota::quota_spec> roots;  // as the controller last wrote them
  for (const auto& rec : read_log((dir / "eq-profiles1").string())) {
    const auto& env = *wire::GetEnvelope(rec.data());
    if (const auto* o = env.payload_as_ObjectObserved();
        o != nullptr && messages::to_string_view(o->kind()) == "ElasticQuotaProfile")
      ++profiles_logged;
    if (const auto* n = env.payload_as_NodeRegistered(); n != nullptr) {
      bool gpu = false;
      if (n->labels() != nullptr)
        for (const auto* kv : *n->labels())
          gpu = gpu || messages::to_string_view(kv->key()) == "node.koordinator.sh/gpu-model";
      (gpu ? gpu_pool : cpu_pool) += messages::to_resource_list(n->allocatable());
    }
    if (const auto* q = env.payload_as_QuotaUpserted();
        q != nullptr && messages::to_string_view(env.source()) == "koord-manager/quota-profile") {
      auto spec = quota::spec_of(*q);
      roots[spec.name] = std::move(spec);
    }
  }
  EXPECT_EQ(profiles_logged, 2u);
  ASSERT_EQ(roots.size(), 2u);
  ASSERT_GT(gpu_pool.cpu_milli, 0);
  ASSERT_GT(cpu_pool.cpu_milli, 0);
  EXPECT_EQ(roots["gpu-root"].min.cpu_milli,
            static_cast<std::int64_t>(static_cast<double>(gpu_pool.cpu_milli) * 0.005));
  EXPECT_EQ(roots["cpu-root"].min.cpu_milli,
            static_cast<std::int64_t>(static_cast<double>(cpu_pool.cpu_milli) * 0.005));
  EXPECT_TRUE(roots["gpu-root"].is_tree_root);
  EXPECT_EQ(roots["gpu-root"].tree_id, quota::profile_tree_id("default", "gpu-pool"));
  std::map<std::string, std::int64_t> peak;
  for (const auto& q : r.summary["quota"]["by_quota"])
    peak[q["name"].get<std::string>()] = q["used_cpu_peak"].get<std::int64_t>();
  EXPECT_GT(peak["online"], 0);
  EXPECT_LE(peak["online"], roots["gpu-root"].min.cpu_milli);
  EXPECT_LE(peak["batch"], roots["cpu-root"].min.cpu_milli);
  const auto r4 = run(t, c, 4, (dir / "eq-profiles4").string());
  EXPECT_EQ(r4.summary["events"]["log_byte_digest"], r.summary["events"]["log_byte_digest"]);
}

TEST(Sim, ElasticQuotaRunIsDeterministicAcrossThreadCounts) {
  const auto t = load_cut();
  const auto c = small_quotas();
  const auto a = run(t, c, 1);
  const auto b = run(t, c, 4);
  EXPECT_EQ(a.summary.dump(2), b.summary.dump(2));
  EXPECT_EQ(sim::quota_csv(a.quota_rows), sim::quota_csv(b.quota_rows));
}

// Usage model none: pods use exactly what they request, and a node's collector reports only when
// the node registers or its pods change (no periodic reports), so the slo-controller sees every
// change of the node's requests.
TEST(Sim, UsageModelNoneReportsRequestsWhenPodsChange) {
  const auto t = load_cut();
  auto c = shipped("koordinator-defaults");
  sim::run_options o;
  o.usage_override = sim::usage_model::none;
  o.log_path = (fixture().root / "usage-none").string();
  auto r = sim::run_simulation(t, c, o);
  ASSERT_TRUE(r.has_value()) << r.error().describe();
  expect_invariants(r->summary);
  EXPECT_GT(r->summary["pods"]["scheduled"].get<std::uint64_t>(), 100u);
  const auto log = read_log(o.log_path);
  ASSERT_FALSE(log.empty());
  auto all_cpu = [](const resource_list& x) {
    return x.cpu_milli + x.batch_cpu_milli + x.mid_cpu_milli;
  };
  auto all_memory = [](const resource_list& x) {
    return x.memory_bytes + x.batch_memory_bytes + x.mid_memory_bytes;
  };
  std::map<std::string, resource_list, std::less<>> requests;  // pod -> after admission
  std::size_t changes = 0, reports = 0, pod_metrics = 0;
  for (const auto& rec : log) {
    const auto& env = *wire::GetEnvelope(rec.data());
    switch (env.payload_type()) {
      case wire::Payload::PodMutated: {
        const auto* e = env.payload_as_PodMutated();
        requests[std::string(messages::to_string_view(e->name()))] =
            messages::to_resource_list(e->requests());
        break;
      }
      case wire::Payload::NodeRegistered:
      case wire::Payload::PodScheduled:
      case wire::Payload::PodEvicted:
        ++changes;
        break;
      case wire::Payload::PodFinished:
        if (!messages::to_string_view(env.payload_as_PodFinished()->node()).empty()) ++changes;
        break;
      case wire::Payload::NodeMetricReported: {
        ++reports;
        const auto* e = env.payload_as_NodeMetricReported();
        std::int64_t memory = 0;
        if (e->pods() != nullptr)
          for (const auto* pm : *e->pods()) {
            const auto it = requests.find(messages::to_string_view(pm->pod()));
            ASSERT_NE(it, requests.end()) << messages::to_string_view(pm->pod());
            const auto used = messages::to_resource_list(pm->usage());
            EXPECT_EQ(used.memory_bytes, all_memory(it->second)) << it->first;
            // CPU is the request unless BE suppression caps the node's BE pods.
            EXPECT_LE(used.cpu_milli, all_cpu(it->second)) << it->first;
            memory += used.memory_bytes;
            ++pod_metrics;
          }
        EXPECT_EQ(messages::to_resource_list(e->node_usage()).memory_bytes, memory);
        break;
      }
      default:
        break;
    }
  }
  std::printf("usage none: %zu NodeMetric reports for %zu node or pod changes, %zu pod metrics\n",
              reports, changes, pod_metrics);
  EXPECT_GT(pod_metrics, 100u);
  EXPECT_GT(reports, 0u);
  EXPECT_LE(reports, changes);  // never a report without a change
  EXPECT_EQ(reports, r->summary["events"]["node_metric_reports"].get<std::uint64_t>());
}

TEST(Sim, DeterministicAcrossThreadCounts) {
  const auto t = load_cut();
  const auto c = shipped("aggressive-reclaim");
  const auto dir = fixture().root;
  const auto a = run(t, c, 1, (dir / "log1").string());
  const auto b = run(t, c, 2, (dir / "log2").string());
  const auto d = run(t, c, 8, (dir / "log8").string());
  EXPECT_EQ(a.summary.dump(2), b.summary.dump(2));
  EXPECT_EQ(a.summary.dump(2), d.summary.dump(2));
  EXPECT_EQ(sim::metrics_csv(a.rows), sim::metrics_csv(d.rows));
  EXPECT_EQ(a.summary["events"]["log_byte_digest"], d.summary["events"]["log_byte_digest"]);
}

// Every figure the report must carry is in summary.json (deterministic) or timing.json (wall
// clock), under the names docs/sim.md ("Report (OUT/)") documents.
TEST(Sim, SummaryCarriesEveryReportedFigure) {
  const auto t = load_cut();
  const auto r = run(t, shipped("koordinator-defaults"), 1);
  const auto& s = r.summary;
  for (const char* k : {"submitted", "scheduled", "unschedulable_events_by_reason",
                        "pending_at_end_by_last_reason", "evicted", "evicted_by_reason"})
    EXPECT_TRUE(s["pods"].contains(k)) << k;
  for (const char* k :
       {"avg_cpu_requested_pct", "avg_cpu_allocated_pct", "avg_cpu_used_pct",
        "avg_memory_requested_pct", "avg_memory_allocated_pct", "avg_memory_used_pct"})
    EXPECT_TRUE(s["resources"].contains(k)) << k;
  for (const char* k : {"avg_batch_cpu_allocatable_milli", "avg_batch_cpu_used_milli",
                        "avg_batch_cpu_used_pct_of_reclaimed", "avg_batch_memory_used_bytes"})
    EXPECT_TRUE(s["batch"].contains(k)) << k;
  for (const char* k : {"all", "prod", "batch"})
    EXPECT_TRUE(s["scheduling_latency_virtual"].contains(k)) << k;
  EXPECT_TRUE(s.contains("quota"));
  for (const char* k :
       {"avg_gpu_allocation_pct", "avg_gpu_fragmentation_pct_of_total", "final_gpu_allocation_pct"})
    EXPECT_TRUE(s["gpu"].contains(k)) << k;
  for (const char* k : {"count", "log_byte_digest", "state_digest"})
    EXPECT_TRUE(s["events"].contains(k)) << k;
  for (const char* k : {"wall_seconds", "time_compression", "host_us_per_event", "events"})
    EXPECT_TRUE(r.timing.contains(k)) << k;
  EXPECT_EQ(r.timing["events"].get<std::uint64_t>(), s["events"]["count"].get<std::uint64_t>());
  // metrics.csv is the over-time view of the same figures.
  ASSERT_FALSE(r.rows.empty());
  EXPECT_GT(r.rows.back().cpu_capacity, 0);
}

// A node that hosts no pod reuses its slo-controller result (computed once) instead of
// reconciling every round: the log and the summary must be the same byte for byte as when every
// round recomputes, with usage (NodeMetric rounds) and without (request-based rounds).
TEST(Sim, IdleNodeCacheKeepsTheLogByteForByte) {
  const auto t = load_cut();
  for (const char* n : {"koordinator-defaults", "aggressive-reclaim"}) {
    for (const bool none : {false, true}) {
      SCOPED_TRACE(std::string(n) + (none ? " usage none" : " v2018-curves"));
      auto c = shipped(n);
      c.idle_node_report_interval_s = 0;  // every idle node reports every round
      sim::run_options o;
      if (none) o.usage_override = sim::usage_model::none;
      auto cached = sim::run_simulation(t, c, o);
      o.cache_idle_nodes = false;
      auto fresh = sim::run_simulation(t, c, o);
      ASSERT_TRUE(cached.has_value() && fresh.has_value());
      EXPECT_GT(cached->summary["batch"]["batch_updates"].get<std::uint64_t>(), 0u);
      EXPECT_EQ(cached->summary["events"]["log_byte_digest"],
                fresh->summary["events"]["log_byte_digest"]);
      EXPECT_EQ(cached->summary.dump(2), fresh->summary.dump(2));
    }
  }
}

// The state the actors folded equals a plain fold of the stored log, and every PodEvicted in it
// carries a reason.
TEST(Sim, LogFoldEqualsStateDigest) {
  const auto t = load_cut();
  const auto path = (fixture().root / "logfold").string();
  const auto r = run(t, shipped("aggressive-reclaim"), 2, path);
  stores::log_options lo;
  lo.create_if_missing = false;
  lo.read_only = true;
  auto log = stores::open_log(path, lo);
  ASSERT_TRUE(log.has_value()) << log.error().describe();
  entities::world w;
  std::uint64_t n = 0, evictions = 0;
  auto rd = (*log)->read(0, no_offset, [&](log_offset, messages::bytes_view b) {
    auto d = messages::decode(b, "test");
    EXPECT_TRUE(d.has_value());
    w.apply(*d->envelope);
    if (d->type() == wire::Payload::PodEvicted) {
      ++evictions;
      EXPECT_NE(d->envelope->payload_as_PodEvicted()->reason(), wire::EvictionReason::Unknown);
      EXPECT_GT(messages::to_string_view(d->envelope->payload_as_PodEvicted()->message()).size(),
                0u);
    }
    ++n;
    return true;
  });
  ASSERT_TRUE(rd.has_value());
  EXPECT_EQ(n, r.summary["events"]["count"].get<std::uint64_t>());
  EXPECT_EQ(evictions, r.summary["pods"]["evicted"].get<std::uint64_t>());
  char buf[32];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(w.digest()));
  EXPECT_EQ(std::string(buf), r.summary["events"]["state_digest"].get<std::string>());
  for (const auto& [name, node] : w.nodes) {
    EXPECT_GE(node.colocation.batch_cpu_milli, 0) << name;
    EXPECT_LE(node.allocated.cpu_milli, node.allocatable.cpu_milli) << name;
    EXPECT_LE(node.allocated.memory_bytes, node.allocatable.memory_bytes) << name;
  }
}

TEST(SimCli, BadRowStopsWithFileLineColumnAndExitCode3) {
  const auto dir = fixture().root / "bad";
  fs::create_directories(dir);
  fs::copy_file(fixture().root / "trace" / "openb_node_list_all_node.csv",
                dir / "openb_node_list_all_node.csv", fs::copy_options::overwrite_existing);
  auto pods = lines_of((fixture().root / "trace" / "openb_pod_list_default.csv").string());
  {
    std::ofstream o(dir / "openb_pod_list_default.csv");
    for (std::size_t i = 0; i < pods.size(); ++i) {
      if (i == 2) {
        auto f = split(pods[i]);
        f[1] = "abc";  // cpu_milli: documented case "non-integer"
        for (std::size_t k = 0; k < f.size(); ++k) o << (k ? "," : "") << f[k];
        o << "\n";
      } else {
        o << pods[i] << "\n";
      }
    }
  }
  std::string err;
  const std::string base = "sim --trace " + dir.string() + " --usage-model none --quiet --out " +
                           (fixture().root / "bad-out").string();
  const int rc = run_cli(base, &err);
  if (rc == -1) GTEST_SKIP() << "COLONY_BINARY not set";
  EXPECT_EQ(rc, 3) << err;
  EXPECT_NE(err.find("openb_pod_list_default.csv:3:"), std::string::npos) << err;
  EXPECT_NE(err.find("expected integer cpu_milli, got 'abc'"), std::string::npos) << err;
  EXPECT_EQ(run_cli(base + " --skip-bad-rows", &err), 0) << err;
  std::ifstream in(fixture().root / "bad-out" / "summary.json");
  const auto s = nlohmann::json::parse(in);
  EXPECT_EQ(s["trace"]["bad_rows_skipped"].get<std::uint64_t>(), 1u);
  ASSERT_EQ(s["trace"]["bad_row_warnings"].size(), 1u);
  EXPECT_NE(s["trace"]["bad_row_warnings"][0].get<std::string>().find(":3:"), std::string::npos);
}

TEST(SimCli, CompareWritesSideBySideTable) {
  const auto out = fixture().root / "cmp";
  const std::string args = "sim --trace " + (fixture().root / "trace").string() +
                           " --quiet --out " + out.string() + " --config " + repo_root() +
                           "/sim/configs/koordinator-defaults.yaml --config " + repo_root() +
                           "/sim/configs/no-colocation.yaml --until-days 0.5";
  std::string err;
  const int rc = run_cli(args, &err);
  if (rc == -1) GTEST_SKIP() << "COLONY_BINARY not set";
  ASSERT_EQ(rc, 0) << err;
  EXPECT_TRUE(fs::exists(out / "compare.txt"));
  EXPECT_TRUE(fs::exists(out / "compare.json"));
  EXPECT_TRUE(fs::exists(out / "koordinator-defaults" / "summary.json"));
  EXPECT_TRUE(fs::exists(out / "no-colocation" / "metrics.csv"));
  std::ifstream in(out / "compare.json");
  const auto j = nlohmann::json::parse(in);
  EXPECT_TRUE(j["rows"]["pods scheduled"].contains("no-colocation"));
}

// --plot-format png draws the same plots with pngcairo.
TEST(SimCli, PlotFormatPngWritesPngs) {
  const auto out = fixture().root / "plots-png";
  const std::string args = "sim --trace " + (fixture().root / "trace").string() +
                           " --usage-model none --quiet --plot-format png --out " + out.string();
  std::string err;
  const int rc = run_cli(args, &err);
  if (rc == -1) GTEST_SKIP() << "COLONY_BINARY not set";
  ASSERT_EQ(rc, 0) << err;
  if (!fs::exists(out / "plots.gp")) GTEST_SKIP() << "gnuplot is not installed: no plots";
  for (const char* n : {"utilisation", "batch", "pending", "gpu"}) {
    const auto png = out / (std::string(n) + ".png");
    ASSERT_TRUE(fs::exists(png)) << png;
    std::ifstream f(png, std::ios::binary);
    char magic[4] = {};
    f.read(magic, 4);
    EXPECT_EQ(std::string(magic + 1, 3), "PNG") << png;
    EXPECT_FALSE(fs::exists(out / (std::string(n) + ".svg")));
  }
  // A format that is neither is a usage error.
  EXPECT_EQ(run_cli("sim --plot-format gif --out " + out.string(), &err), 2);
}

// The report's plots carry their own data (datablocks in plots.gp): the utilisation block is
// metrics.csv's columns with the rows whose series equal both neighbours' left out, which draws
// the same lines. The log is complete when the command returns (the simulation is released on a
// thread of its own while the report is written).
TEST(SimCli, PlotDataIsMetricsWithFlatRunsLeftOut) {
  const auto out = fixture().root / "plots";
  const std::string args = "sim --trace " + (fixture().root / "trace").string() +
                           " --usage-model none --quiet --out " + out.string();
  std::string err;
  const int rc = run_cli(args, &err);
  if (rc == -1) GTEST_SKIP() << "COLONY_BINARY not set";
  ASSERT_EQ(rc, 0) << err;
  if (!fs::exists(out / "plots.gp")) GTEST_SKIP() << "gnuplot is not installed: no plots";
  // SVG by default: a text file gnuplot wrote, with the plot's title.
  ASSERT_TRUE(fs::exists(out / "utilisation.svg"));
  EXPECT_GT(fs::file_size(out / "utilisation.svg"), 1000u);
  const auto svg = lines_of((out / "utilisation.svg").string());
  EXPECT_TRUE(std::any_of(svg.begin(), svg.end(), [](const std::string& l) {
    return l.find("<svg") != std::string::npos;
  }));
  EXPECT_FALSE(fs::exists(out / "utilisation.png"));
  // metrics.csv: day, then the utilisation series (cpu requested/allocated/used, memory
  // allocated/used %, columns 24-28 counted from 1).
  std::vector<std::vector<std::string>> metrics;
  const auto csv = lines_of((out / "metrics.csv").string());
  for (std::size_t i = 1; i < csv.size(); ++i) {
    const auto f = split(csv[i]);
    ASSERT_GE(f.size(), 28u) << csv[i];
    metrics.push_back({f[1], f[23], f[24], f[25], f[26], f[27]});
  }
  std::vector<std::vector<std::string>> block;
  bool in = false;
  for (const auto& l : lines_of((out / "plots.gp").string())) {
    if (l == "$utilisation << EOD") {
      in = true;
    } else if (in && l == "EOD") {
      break;
    } else if (in) {
      block.push_back(split(l));
    }
  }
  ASSERT_GE(metrics.size(), 10u);
  ASSERT_GE(block.size(), 2u);
  EXPECT_LT(block.size(), metrics.size());  // flat runs were left out
  // The block is a subsequence of metrics.csv holding its first and last row; every row left
  // out has the series of the kept rows before and after it.
  std::size_t k = 0, left_out = 0;
  const auto series = [](const std::vector<std::string>& r) {
    return std::vector<std::string>(r.begin() + 1, r.end());
  };
  for (std::size_t i = 0; i < metrics.size(); ++i) {
    if (k < block.size() && block[k] == metrics[i]) {
      ++k;
      continue;
    }
    ASSERT_GT(k, 0u) << "the first row was left out";
    ASSERT_LT(k, block.size()) << "row " << i << " (day " << metrics[i][0] << ") is missing";
    EXPECT_EQ(series(metrics[i]), series(block[k - 1])) << "day " << metrics[i][0];
    EXPECT_EQ(series(metrics[i]), series(block[k])) << "day " << metrics[i][0];
    ++left_out;
  }
  EXPECT_EQ(k, block.size());
  EXPECT_EQ(left_out + block.size(), metrics.size());
  // The log is closed and whole: it holds every event the run reports.
  std::ifstream tin(out / "timing.json");
  const auto timing = nlohmann::json::parse(tin);
  EXPECT_EQ(read_log((out / "log").string()).size(), timing["events"].get<std::size_t>());
}

// A release in the background (the CLI's) leaves the same log once joined.
TEST(Sim, BackgroundReleaseLeavesTheWholeLog) {
  const auto t = load_cut();
  const auto path = (fixture().root / "bg-release").string();
  sim::run_options o;
  o.usage_override = sim::usage_model::none;
  o.threads = 2;
  o.log_path = path;
  o.until_ms = 6 * 3'600'000;
  o.release_in_background = true;
  auto r = sim::run_simulation(t, shipped("koordinator-defaults"), o);
  ASSERT_TRUE(r.has_value()) << r.error().describe();
  ASSERT_NE(r->release, nullptr);
  r->release.reset();  // joins
  const auto events = r->timing["events"].get<std::size_t>();
  EXPECT_GT(events, 100u);
  EXPECT_EQ(read_log(path).size(), events);
}

// One end-to-end run on the full bundled default trace (scheduling only, fast).
TEST(Sim, FullBundledTraceUsageNone) {
  auto t = trace::load_trace_set(traces_dir());
  ASSERT_TRUE(t.has_value()) << t.error().describe();
  auto c = shipped("koordinator-defaults");
  sim::run_options o;
  o.usage_override = sim::usage_model::none;
  o.threads = 2;
  auto r = sim::run_simulation(*t, c, o);
  ASSERT_TRUE(r.has_value()) << r.error().describe();
  expect_invariants(r->summary);
  EXPECT_EQ(r->summary["pods"]["submitted"].get<std::uint64_t>(), 8152u);
  EXPECT_GT(r->summary["gpu"]["avg_gpu_allocation_pct"].get<double>(), 0.0);
}

// ---- One control plane: colony sim hosts the components ---------------------------------------
// The component host runs the same components as `colony run` (docs/architecture.md "One control
// plane, two hosts"): here on the cut, with co-location, ElasticQuota and BE memory evictions
// switched on together, through the deterministic step host at several thread counts and through
// the live actor_host.

namespace {

// elastic-quota.yaml with the v2018-curves usage model, pods that stay and BEMemoryEvict at a
// low threshold, so one run has co-location, quota refusals and evictions.
sim::sim_config busy_config() {
  auto c = shipped("elastic-quota");
  c.usage = sim::usage_model::v2018_curves;
  c.lifetime = sim::pod_lifetime::running_stays;
  c.gates.be_memory_evict = true;
  // openb nodes have far more memory than their pods use: a low threshold makes it bind. Set in
  // the ConfigMap, the one source of the NodeSLO the koordlets read.
  auto data = nlohmann::json::parse(c.slo_configmap_json);
  auto threshold = data.contains("resource-threshold-config")
                       ? nlohmann::json::parse(data["resource-threshold-config"].get<std::string>())
                       : nlohmann::json::object();
  threshold["clusterStrategy"]["memoryEvictThresholdPercent"] = 3;
  threshold["clusterStrategy"]["memoryEvictLowerPercent"] = 2;
  data["resource-threshold-config"] = threshold.dump();
  c.slo_configmap_json = data.dump();
  auto u = slo_controller::update(std::nullopt, c.slo_configmap_json);
  EXPECT_FALSE(u.error.has_value()) << u.error->describe();
  c.slo = std::move(u.in_force);
  return c;
}

struct component_run {
  sim::run_result result;
  std::vector<messages::byte_buffer> log;
};

component_run run_components(const trace::trace_set& t, const sim::sim_config& c,
                             std::size_t threads, bool actor_host, std::int64_t until_ms) {
  component_run out;
  const auto dir = fixture().root /
                   ("components-" + std::to_string(threads) + (actor_host ? "-actors" : "-step"));
  sim::run_options o;
  o.threads = threads;
  o.log_path = (dir / "log").string();
  o.actor_host_reference = actor_host;
  o.until_ms = until_ms;
  auto r = sim::run_simulation(t, c, o);
  EXPECT_TRUE(r.has_value()) << (r ? "" : r.error().describe());
  if (!r) return out;
  out.result = std::move(*r);
  out.log = read_log(o.log_path);
  return out;
}

std::map<wire::Payload, std::size_t> count_types(const std::vector<messages::byte_buffer>& log) {
  std::map<wire::Payload, std::size_t> n;
  for (const auto& r : log) ++n[wire::GetEnvelope(r.data())->payload_type()];
  return n;
}

constexpr std::int64_t busy_until_ms = -1;  // the whole cut

}  // namespace

TEST(SimComponents, CutRunsEveryComponentAndKeepsInvariants) {
  const auto t = load_cut();
  const auto run = run_components(t, busy_config(), 2, false, busy_until_ms);
  ASSERT_FALSE(run.log.empty());
  expect_invariants(run.result.summary);
  auto n = count_types(run.log);
  // What the run exercised: every component decided something.
  EXPECT_GT(n.count(wire::Payload::PodMutated) ? n.at(wire::Payload::PodMutated) : 0, 100u);
  EXPECT_GT(n.count(wire::Payload::PodScheduled) ? n.at(wire::Payload::PodScheduled) : 0, 100u);
  EXPECT_GT(n.count(wire::Payload::PodUnschedulable) ? n.at(wire::Payload::PodUnschedulable) : 0,
            0u);
  EXPECT_GT(n.count(wire::Payload::NodeBatchResourceUpdated)
                ? n.at(wire::Payload::NodeBatchResourceUpdated)
                : 0,
            10u);
  EXPECT_GT(
      n.count(wire::Payload::QuotaRuntimeUpdated) ? n.at(wire::Payload::QuotaRuntimeUpdated) : 0,
      0u);
  EXPECT_GT(n.count(wire::Payload::PodEvicted) ? n.at(wire::Payload::PodEvicted) : 0, 0u);
  // The shared audit (actors/entities/audit.hpp) over the written log: every decision has an
  // earlier cause, no node over its allocatable at any prefix, no pod bound twice, every
  // eviction with a reason, every pod pending at the end explained.
  const auto audit = entities::audit_log(run.log);
  EXPECT_TRUE(audit.clean()) << audit.describe();
  EXPECT_GT(audit.evictions, 0u);
  std::printf("components cut: %zu records, %zu bound, %zu evicted, %zu batch updates\n",
              run.log.size(), n[wire::Payload::PodScheduled], n[wire::Payload::PodEvicted],
              n[wire::Payload::NodeBatchResourceUpdated]);
}

TEST(SimComponents, LogAndSummaryAreByteIdenticalAtOneTwoFourAndEightThreads) {
  const auto t = load_cut();
  const auto one = run_components(t, busy_config(), 1, false, busy_until_ms);
  ASSERT_GT(one.log.size(), 1000u);
  for (const std::size_t threads : {2, 4, 8}) {
    const auto again = run_components(t, busy_config(), threads, false, busy_until_ms);
    ASSERT_EQ(again.log.size(), one.log.size()) << threads << " threads";
    EXPECT_TRUE(again.log == one.log) << threads << " threads: the log differs";
    EXPECT_EQ(again.result.summary.dump(), one.result.summary.dump()) << threads << " threads";
  }
}

// The differential test of the two hosts on the trace: the step host and the live actor_host
// (each round's output in the step host's merge order) write the same log, byte for byte.
TEST(SimComponents, StepHostAndActorHostWriteTheSameLog) {
  const auto t = load_cut();
  const auto stepped = run_components(t, busy_config(), 2, false, busy_until_ms);
  const auto actors = run_components(t, busy_config(), 2, true, busy_until_ms);
  ASSERT_GT(stepped.log.size(), 1000u);
  const std::size_t n = std::min(stepped.log.size(), actors.log.size());
  for (std::size_t i = 0; i < n; ++i) {
    if (stepped.log[i] == actors.log[i]) continue;
    const auto& a = *wire::GetEnvelope(stepped.log[i].data());
    const auto& b = *wire::GetEnvelope(actors.log[i].data());
    FAIL() << "offset " << i << ": step host " << wire::EnumNamePayload(a.payload_type()) << " "
           << messages::to_string_view(a.entity_key()) << " from "
           << messages::to_string_view(a.source()) << ", actor host "
           << wire::EnumNamePayload(b.payload_type()) << " "
           << messages::to_string_view(b.entity_key()) << " from "
           << messages::to_string_view(b.source());
  }
  EXPECT_EQ(stepped.log.size(), actors.log.size());
  const auto types = count_types(stepped.log);
  EXPECT_GT(types.count(wire::Payload::PodEvicted) ? types.at(wire::Payload::PodEvicted) : 0, 0u);
}

// What the components decide, read from the sim's log (the points where the sim's old hand-made
// driver diverged from them; docs/results.md "2026-11-26"). Each check is asserted on a run that
// exercises it, and flags a forged variant of the log where a field can be forged in place (so
// it can fail):
//   - weights: every PluginScore carries its plugin's configured weight (one value per plugin,
//     never 0);
//   - binding: no PodStarted (the cluster path writes none); bindings come from the node stage;
//   - GPU models: every bound pod with gpu_models sits on a node of one of its models
//     (GPUModelAffinity is the scheduler's plugin);
//   - BE suppression: the cpuset policy writes a cpuset;
//   - evictions: every PodEvicted carries the koordlet's full inputs (victimOrder, toRelease,
//     ...);
//   - causes: every decision names an earlier event as its cause.
namespace {

struct divergences {
  std::size_t proposals = 0, bad_weights = 0, pod_started = 0, gpu_pods = 0, gpu_misplaced = 0;
  std::size_t suppressions = 0, suppressions_without_cpuset = 0, evictions = 0;
  std::size_t evictions_without_order = 0, decisions = 0, decisions_without_cause = 0;
};

divergences find_divergences(const std::vector<messages::byte_buffer>& log) {
  using messages::to_string_view;
  divergences d;
  std::map<std::string, std::int64_t> weight_of;
  std::map<std::string, std::string> model_of;                // node -> GPU model
  std::map<std::string, std::vector<std::string>> models_of;  // pod -> allowed models
  for (const auto& rec : log) {
    const auto& env = *wire::GetEnvelope(rec.data());
    if (entities::is_decision(env.payload_type())) {
      ++d.decisions;
      if (env.causation() < 0) ++d.decisions_without_cause;
    }
    switch (env.payload_type()) {
      case wire::Payload::NodeRegistered: {
        const auto* e = env.payload_as_NodeRegistered();
        if (e->labels())
          for (const auto* kv : *e->labels())
            if (to_string_view(kv->key()) == names::label_gpu_model)
              model_of[std::string(to_string_view(e->name()))] = to_string_view(kv->value());
        break;
      }
      case wire::Payload::PodSubmitted: {
        const auto* e = env.payload_as_PodSubmitted();
        if (e->gpu_models() && e->requests() && e->requests()->gpu() > 0) {
          auto& v = models_of[std::string(to_string_view(e->name()))];
          for (const auto* m : *e->gpu_models()) v.emplace_back(to_string_view(m));
        }
        break;
      }
      case wire::Payload::PodBindProposed: {
        ++d.proposals;
        const auto* e = env.payload_as_PodBindProposed();
        if (e->scores())
          for (const auto* sc : *e->scores()) {
            const std::string plugin(to_string_view(sc->plugin()));
            const auto [it, fresh] = weight_of.emplace(plugin, sc->weight());
            if (sc->weight() <= 0 || (!fresh && it->second != sc->weight())) ++d.bad_weights;
          }
        break;
      }
      case wire::Payload::PodScheduled: {
        const auto* e = env.payload_as_PodScheduled();
        const auto it = models_of.find(std::string(to_string_view(e->pod())));
        if (it == models_of.end()) break;
        ++d.gpu_pods;
        const auto m = model_of[std::string(to_string_view(e->node()))];
        if (std::find(it->second.begin(), it->second.end(), m) == it->second.end())
          ++d.gpu_misplaced;
        break;
      }
      case wire::Payload::PodStarted:
        ++d.pod_started;
        break;
      case wire::Payload::BeSuppressed: {
        const auto* e = env.payload_as_BeSuppressed();
        if (to_string_view(e->policy()) != "cpuset") break;
        ++d.suppressions;
        if (to_string_view(e->cpuset()).empty() && e->be_cpu_milli() >= 0)
          ++d.suppressions_without_cpuset;
        break;
      }
      case wire::Payload::PodEvicted: {
        ++d.evictions;
        bool order = false;
        if (const auto* in = env.payload_as_PodEvicted()->inputs())
          for (const auto* t : *in) order = order || to_string_view(t->name()) == "victimOrder";
        if (!order) ++d.evictions_without_order;
        break;
      }
      default:
        break;
    }
  }
  return d;
}

}  // namespace

TEST(SimComponents, DecisionsFollowTheComponentsRules) {
  // The cut from the gpuspec33 pod list, where a third of the GPU pods name their GPU models.
  const auto dir = fixture().root / "gpuspec-cut";
  cut_spec spec;
  spec.pod_list = "gpuspec33";
  write_cut_trace(dir, spec);
  auto loaded = trace::load_trace_set(dir.string());
  ASSERT_TRUE(loaded.has_value()) << loaded.error().describe();
  const auto& t = *loaded;
  const auto comp = run_components(t, busy_config(), 2, false, busy_until_ms);
  const auto d = find_divergences(comp.log);
  // What the run exercised.
  EXPECT_GT(d.proposals, 100u);
  EXPECT_GT(d.gpu_pods, 0u);
  EXPECT_GT(d.suppressions, 0u);
  EXPECT_GT(d.evictions, 0u);
  EXPECT_GT(d.decisions, 0u);
  // The components' behaviour.
  EXPECT_EQ(d.bad_weights, 0u);
  EXPECT_EQ(d.pod_started, 0u);
  EXPECT_EQ(d.gpu_misplaced, 0u);
  EXPECT_EQ(d.suppressions_without_cpuset, 0u);
  EXPECT_EQ(d.evictions_without_order, 0u);
  EXPECT_EQ(d.decisions_without_cause, 0u);
  std::printf("components: %zu proposals, %zu GPU pods, %zu suppressions, %zu evictions\n",
              d.proposals, d.gpu_pods, d.suppressions, d.evictions);

  // The checks flag forged logs: a plugin score with weight 0, a decision without a cause.
  auto find = [&](wire::Payload type, auto pred) {
    for (std::size_t i = 0; i < comp.log.size(); ++i) {
      const auto& env = *wire::GetEnvelope(comp.log[i].data());
      if (env.payload_type() == type && pred(env)) return i;
    }
    return comp.log.size();
  };
  {
    auto log = comp.log;
    const auto i = find(wire::Payload::PodBindProposed, [](const wire::Envelope& env) {
      const auto* sc = env.payload_as_PodBindProposed()->scores();
      return sc != nullptr && sc->size() > 0;
    });
    ASSERT_LT(i, log.size());
    auto* p = static_cast<wire::PodBindProposed*>(
        wire::GetMutableEnvelope(log[i].data())->mutable_payload());
    ASSERT_TRUE(p->mutable_scores()->GetMutableObject(0)->mutate_weight(0));
    EXPECT_GT(find_divergences(log).bad_weights, 0u);
  }
  {
    auto log = comp.log;
    const auto i = find(wire::Payload::PodEvicted, [](const wire::Envelope&) { return true; });
    ASSERT_LT(i, log.size());
    ASSERT_TRUE(wire::GetMutableEnvelope(log[i].data())->mutate_causation(-1));
    EXPECT_EQ(find_divergences(log).decisions_without_cause, 1u);
  }
}

// koord-descheduler in the sim (sim/configs/descheduler.yaml on the cut, pods of Running rows
// staying): LowNodeLoad creates PodMigrationJobs, the migration controller arbitrates and evicts
// them (EvictDirectly), each evicted pod's replacement is placed again, and the log is the same
// at 1 and 4 threads and in both hosts.
TEST(SimComponents, DeschedulerMigratesPodsAndTheLogIsTheSameAtOneAndFourThreads) {
  const auto t = load_cut();
  auto c = shipped("descheduler");
  c.lifetime = sim::pod_lifetime::running_stays;
  const auto one = run_components(t, c, 1, false, busy_until_ms);
  ASSERT_GT(one.log.size(), 1000u);
  expect_invariants(one.result.summary);
  const auto audit = entities::audit_log(one.log);
  EXPECT_TRUE(audit.clean()) << audit.describe();
  auto n = count_types(one.log);
  const std::size_t created = n[wire::Payload::MigrationJobCreated];
  // What the run exercised: migrations, each carried out, each evicted pod replaced and bound.
  EXPECT_GE(created, 20u);
  std::size_t descheduled = 0, succeeded = 0, replacements_bound = 0;
  std::set<std::string> evicted_pods;
  for (const auto& rec : one.log) {
    const auto* env = wire::GetEnvelope(rec.data());
    if (env->payload_type() == wire::Payload::PodEvicted &&
        env->payload_as_PodEvicted()->reason() == wire::EvictionReason::Descheduled) {
      ++descheduled;
      evicted_pods.insert(
          std::string(messages::to_string_view(env->payload_as_PodEvicted()->pod())));
    }
    if (env->payload_type() == wire::Payload::MigrationJobPhaseChanged &&
        messages::to_string_view(env->payload_as_MigrationJobPhaseChanged()->phase()) ==
            "Succeeded")
      ++succeeded;
    if (env->payload_type() == wire::Payload::PodScheduled &&
        messages::to_string_view(env->payload_as_PodScheduled()->pod()).find("-r") !=
            std::string_view::npos)
      ++replacements_bound;
  }
  EXPECT_EQ(descheduled, created);
  EXPECT_EQ(succeeded, created);
  EXPECT_GT(evicted_pods.size(), 5u);
  EXPECT_GE(replacements_bound + 5, descheduled);  // nearly every replacement placed again
  const auto& m = one.result.summary["migrations"];
  EXPECT_EQ(m["created"].get<std::size_t>(), created);
  EXPECT_EQ(m["succeeded"].get<std::size_t>(), created);
  EXPECT_EQ(one.result.summary["pods"]["evicted_by_reason"]["Descheduled (LowNodeLoad)"]
                .get<std::size_t>(),
            created);
  bool spread = false;
  for (const auto& row : one.result.rows) spread = spread || row.cpu_used_spread_pct > 0;
  EXPECT_TRUE(spread);
  std::printf("descheduler cut: %zu records, %zu migrations of %zu pods, %zu replacements bound\n",
              one.log.size(), created, evicted_pods.size(), replacements_bound);

  const auto four = run_components(t, c, 4, false, busy_until_ms);
  ASSERT_EQ(four.log.size(), one.log.size());
  EXPECT_TRUE(four.log == one.log) << "4 threads: the log differs";
  EXPECT_EQ(four.result.summary.dump(), one.result.summary.dump());
  const auto actors = run_components(t, c, 2, true, busy_until_ms);
  ASSERT_EQ(actors.log.size(), one.log.size());
  EXPECT_TRUE(actors.log == one.log) << "actor_host: the log differs";
}

// ReservationFirst in the sim (sim/configs/descheduler-reservation.yaml on the cut): every job
// that evicts first has its Reservation placed on another node than its pod's, and every job
// that succeeds does so because its pod's replacement (a pod of the same ReplicaSet) was bound
// into that Reservation on that node; the log audits clean and is the same at 1 and 4 threads
// and in both hosts.
TEST(SimComponents, ReservationFirstMigrationsBindTheReplacementIntoTheReservation) {
  const auto t = load_cut();
  auto c = shipped("descheduler-reservation");
  c.lifetime = sim::pod_lifetime::running_stays;
  const auto one = run_components(t, c, 1, false, busy_until_ms);
  ASSERT_GT(one.log.size(), 1000u);
  expect_invariants(one.result.summary);
  const auto audit = entities::audit_log(one.log);
  EXPECT_TRUE(audit.clean()) << audit.describe();
  using messages::to_string_view;
  std::map<std::string, std::string> pod_node;    // pod -> node it is bound to now
  std::map<std::string, std::string> job_pod;     // job -> pod
  std::map<std::string, std::string> placed;      // reservation -> node (Available)
  std::map<std::string, std::string> bound_into;  // reservation -> pod bound into it
  std::map<std::string, std::string> bound_node;  // reservation -> that pod's node
  std::size_t created = 0, reservations = 0, evicted = 0, succeeded = 0, bad_place = 0,
              evicted_before_placed = 0, wrong_success = 0;
  std::map<std::string, std::size_t> by_reason;
  for (const auto& rec : one.log) {
    const auto* env = wire::GetEnvelope(rec.data());
    switch (env->payload_type()) {
      case wire::Payload::PodScheduled: {
        const auto* e = env->payload_as_PodScheduled();
        const std::string pod(to_string_view(e->pod()));
        pod_node[pod] = std::string(to_string_view(e->node()));
        if (const auto r = to_string_view(e->reservation()); !r.empty()) {
          bound_into[std::string(r)] = pod;
          bound_node[std::string(r)] = pod_node[pod];
        }
        break;
      }
      case wire::Payload::MigrationJobCreated: {
        const auto* e = env->payload_as_MigrationJobCreated();
        ++created;
        job_pod[std::string(to_string_view(e->name()))] = std::string(to_string_view(e->pod()));
        break;
      }
      case wire::Payload::ReservationUpserted:
        if (!env->payload_as_ReservationUpserted()->deleted()) ++reservations;
        break;
      case wire::Payload::ReservationPhaseChanged: {
        const auto* e = env->payload_as_ReservationPhaseChanged();
        if (to_string_view(e->phase()) != "Available") break;
        const std::string name(to_string_view(e->name()));
        const std::string node(to_string_view(e->node()));
        placed[name] = node;
        if (const auto j = job_pod.find(name); j != job_pod.end() && pod_node[j->second] == node)
          ++bad_place;
        break;
      }
      case wire::Payload::PodEvicted: {
        const auto* e = env->payload_as_PodEvicted();
        if (e->reason() != wire::EvictionReason::Descheduled) break;
        ++evicted;
        std::string job;
        if (e->inputs() != nullptr)
          for (const auto* term : *e->inputs())
            if (to_string_view(term->name()) == "migrationJob")
              job = std::string(to_string_view(term->text()));
        if (placed.count(job) == 0) ++evicted_before_placed;
        break;
      }
      case wire::Payload::MigrationJobPhaseChanged: {
        const auto* e = env->payload_as_MigrationJobPhaseChanged();
        const std::string job(to_string_view(e->name()));
        ++by_reason[std::string(to_string_view(e->phase())) + "/" +
                    std::string(to_string_view(e->reason()))];
        if (to_string_view(e->phase()) != "Succeeded") break;
        ++succeeded;
        const std::string pod(to_string_view(e->pod()));
        if (bound_into[job] != pod || bound_node[job] != placed[job] ||
            to_string_view(e->node()) != placed[job])
          ++wrong_success;
        break;
      }
      default:
        break;
    }
  }
  std::string reasons;
  for (const auto& [k, v] : by_reason) reasons += k + "=" + std::to_string(v) + " ";
  std::printf(
      "ReservationFirst cut: %zu records, %zu jobs, %zu reservations, %zu placed, %zu "
      "evictions, %zu succeeded; %s\n",
      one.log.size(), created, reservations, placed.size(), evicted, succeeded, reasons.c_str());
  // What the run exercised.
  EXPECT_GE(created, 10u);
  EXPECT_GE(reservations, 10u);
  EXPECT_GE(succeeded, 5u);
  // The rules.
  EXPECT_EQ(bad_place, 0u) << "a reservation on its pod's own node";
  EXPECT_EQ(evicted_before_placed, 0u) << "an eviction before the reservation was placed";
  EXPECT_EQ(wrong_success, 0u) << "a job succeeded without its replacement in its reservation";
  EXPECT_LE(succeeded, evicted);
  EXPECT_EQ(one.result.summary["migrations"]["succeeded"].get<std::size_t>(), succeeded);

  const auto four = run_components(t, c, 4, false, busy_until_ms);
  EXPECT_TRUE(four.log == one.log) << "4 threads: the log differs";
  const auto actors = run_components(t, c, 2, true, busy_until_ms);
  EXPECT_TRUE(actors.log == one.log) << "actor_host: the log differs";
}

// Without deschedulerConfig no descheduler runs: no job, no descheduled eviction.
TEST(SimComponents, NoDeschedulerWithoutItsConfig) {
  const auto t = load_cut();
  auto c = shipped("koordinator-defaults");
  c.lifetime = sim::pod_lifetime::running_stays;
  const auto run = run_components(t, c, 2, false, 12 * 3'600'000);
  auto n = count_types(run.log);
  EXPECT_EQ(n[wire::Payload::MigrationJobCreated], 0u);
  EXPECT_EQ(run.result.summary["migrations"]["created"].get<std::size_t>(), 0u);
}
