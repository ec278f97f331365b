// The whole co-location control plane as thin actors over one RocksDB log (docs/architecture.md
// "One control plane, two hosts"):
// the ClusterColocationProfile webhook, the slo-controller, one koordlet per node and the
// koord-scheduler run as components in a live actor_host, whose node and pod actors arbitrate
// the scheduler's proposals.
//
// The driver is the embedded deployment in miniature (as in
// tests/actors/scheduler_actor/contention_test.cpp): it appends observation events (config,
// nodes, pods, and every 60 s of event time one NodeMetric per node, like the sim's koordlet
// reports), then reads the new records, delivers them, waits (sync), appends what the sink got,
// and repeats until a round emits nothing; only then does event time move on. Time is event
// time only.
//
// Scenario: 4 nodes; 8 LS/prod pods bound; 8 pods labelled koordinator.sh/enable-colocation
// become BE with batch-cpu/batch-memory (the webhook), are unschedulable until the
// slo-controller publishes batch allocatable from the first NodeMetric, then bound; memory
// pressure on one node makes its koordlet evict BE pods (BEMemoryEvict, Koordinator's order);
// CPU pressure on another makes CPU suppress shrink the BE cpuset (BeSuppressed), and the BE
// pods there, starved, are evicted by BE CPU satisfaction (BECPUEvict).
//
// The final log is folded in order and audited at 1 and 4 CAF threads: the shared log audit
// (causation, capacity, bindings, answers, batch allocatable, evictions, pending pods) plus this
// scenario's checks (batch terms, eviction inputs and causes). Which logs are byte-identical: see
// the Determinism tests at the end.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <set>

#include "actors/admission/actor/colocation_profile_component.hpp"
#include "actors/entities/audit.hpp"
#include "actors/entities/entity_actors.hpp"
#include "actors/entities/step_host.hpp"
#include "actors/entities/world.hpp"
#include "actors/koordlet/actor/koordlet_component.hpp"
#include "actors/scheduler/actor/scheduler_component.hpp"
#include "actors/slo_controller/actor/slo_controller_component.hpp"
#include "stores/event_log.hpp"
#include "tests/actors/slo_controller_actor/event_log.hpp"
#include "tests/support/priority_classes.hpp"
#include "tests/support/wire_terms.hpp"

namespace colony {
namespace {

using messages::byte_buffer;
using messages::to_string_view;
using testing::gib;
using testing::terms_of;

constexpr std::int64_t period_ms = 60000;
constexpr int nodes = 4, ls_pods = 8, be_pods = 8, periods = 10;
constexpr int memory_pressure_from = 4, cpu_pressure_from = 6;  // metric periods

// Koordinator's sample profile (docs: colocation profile): pods that ask for co-location
// become BE batch pods and go to koord-scheduler; an "online" profile routes the LS pods.
constexpr std::string_view profiles_yaml = R"(apiVersion: config.koordinator.sh/v1alpha1
kind: ClusterColocationProfile
metadata:
  name: colocation-profile-example
spec:
  selector:
    matchLabels:
      koordinator.sh/enable-colocation: "true"
  qosClass: BE
  priorityClassName: koord-batch
  koordinatorPriority: 1000
  schedulerName: koord-scheduler
  labels:
    koordinator.sh/mutated: "true"
---
apiVersion: config.koordinator.sh/v1alpha1
kind: ClusterColocationProfile
metadata:
  name: online
spec:
  selector:
    matchLabels:
      app-tier: online
  qosClass: LS
  priorityClassName: koord-prod
  schedulerName: koord-scheduler
)";

constexpr std::string_view priority_classes_yaml = testing::koord_batch_prod_priority_classes_yaml;

// slo-controller-config as the ConfigMap's data: co-location on; koordlet thresholds (the
// NodeSLO the slo-controller renders) with BE CPU satisfaction eviction configured.
constexpr std::string_view slo_config_json =
    R"({"colocation-config": "{\"enable\": true, \"cpuReclaimThresholdPercent\": 65, \"memoryReclaimThresholdPercent\": 65}",
        "resource-threshold-config": "{\"clusterStrategy\": {\"enable\": true, \"cpuSuppressThresholdPercent\": 65, \"cpuSuppressPolicy\": \"cpuset\", \"memoryEvictThresholdPercent\": 70, \"cpuEvictBESatisfactionLowerPercent\": 40, \"cpuEvictBESatisfactionUpperPercent\": 80, \"cpuEvictTimeWindowSeconds\": 120}}"})";

struct temp_dir {
  std::filesystem::path path;
  temp_dir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "colony-cluster-XXXXXX").string();
    path = ::mkdtemp(tmpl.data());
  }
  ~temp_dir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
};

std::string write_file(const std::filesystem::path& p, std::string_view text) {
  std::ofstream(p) << text;
  return p.string();
}

std::string node_name(int i) { return "node-" + std::to_string(i); }
bool is_be(std::string_view pod) { return pod.starts_with("default/batch-"); }
int pod_index(std::string_view pod) {
  return std::atoi(std::string(pod.substr(pod.rfind('-') + 1)).c_str());
}

std::uint64_t submit(testing::event_log& el, std::int64_t t, const std::string& name,
                     std::int64_t cpu, std::int64_t mem,
                     const std::vector<std::pair<std::string, std::string>>& labels) {
  resource_list r;
  r.cpu_milli = cpu;
  r.memory_bytes = mem;
  auto& f = el.b.fbb();
  const auto n = f.CreateString(name);
  const auto uid = f.CreateString(name);
  const auto rq = el.b.resources(r);
  const auto lim = el.b.resources(r);
  const auto lab = el.b.key_values(labels);
  const auto sn = f.CreateString("default-scheduler");
  wire::PodSubmittedBuilder pb(f);
  pb.add_name(n);
  pb.add_uid(uid);
  pb.add_requests(rq);
  pb.add_limits(lim);
  pb.add_labels(lab);
  pb.add_scheduler_name(sn);
  pb.add_kube_qos(wire::KubeQoSClass::Guaranteed);
  return el.append(t, wire::EntityKind::Pod, name, pb.Finish());
}

// ---- the run --------------------------------------------------------------------------------

struct run_options {
  std::size_t threads = 1;
  // Stable-sort each round's output by (source, proposal answered) before appending
  // (see the Determinism tests).
  bool canonical_rounds = false;
  // Run the same components in the deterministic step_host (colony sim's host) instead of the
  // live actor_host; threads = its node-scoped workers.
  bool step_host = false;
  // actor_host only: order each round's output as step_host merges it (arbitration answers by
  // proposal, then components in the order added, koordlets by node), so the two hosts' logs
  // can be compared byte for byte.
  bool step_order = false;
};

struct run_result {
  std::vector<byte_buffer> log;
  bool quiescent = true;
  std::string memory_node, cpu_node;  // where pressure was applied
  std::vector<std::uint64_t> metric_offsets_of_cpu_node;
};

// Usage the driver reports for a pod at a metric period on its node (the sim's usage model in
// miniature). BE CPU is throttled to the BE CPU the koordlet last allowed there.
struct usage_model {
  std::string memory_node, cpu_node;
  resource_list pod(std::string_view key, const std::string& node, int period) const {
    resource_list u;
    const int i = pod_index(key);
    if (is_be(key)) {
      u.cpu_milli = 2500;
      u.memory_bytes = 3 * gib + (i % 4) * 256 * 1024 * 1024;  // distinct-ish: an eviction order
    } else {
      const bool mem = node == memory_node && period >= memory_pressure_from;
      const bool cpu = node == cpu_node && period >= cpu_pressure_from;
      u.cpu_milli = cpu ? 4000 : 1500;
      u.memory_bytes = mem ? 20 * gib : 8 * gib;
    }
    return u;
  }
};

run_result run_cluster(const run_options& ro) {
  run_result res;
  temp_dir dir;
  stores::log_options lo;
  lo.sync = false;  // durability is the log's own tests' business
  auto opened = stores::open_log((dir.path / "log").string(), lo);
  EXPECT_TRUE(opened.has_value()) << (opened ? "" : opened.error().message);
  if (!opened) return res;
  auto& log = **opened;
  std::optional<entities::step_host> stepped;
  std::int64_t observed_at = -1;  // step_host: the time of the observations not yet run

  auto append = [&](const std::vector<byte_buffer>& recs) {
    if (recs.empty()) return;
    if (stepped) {
      for (const auto& r : recs) {
        stepped->observe(r);
        observed_at = wire::GetEnvelope(r.data())->event_time_ms();
      }
      return;
    }
    std::vector<messages::bytes_view> views(recs.begin(), recs.end());
    auto r = log.append(views);
    EXPECT_TRUE(r.has_value()) << (r ? "" : r.error().message);
  };

  std::mutex m;
  std::vector<byte_buffer> got;
  std::optional<entities::actor_host> live;
  if (ro.step_host) {
    entities::step_host_options so;
    so.threads = ro.threads;
    stepped.emplace(so, [&](const entities::record_batch& round) -> result<void> {
      std::vector<messages::bytes_view> views;
      for (std::size_t i = 0; i < round.size(); ++i) views.push_back(round.record(i));
      auto r = log.append(views);
      if (!r) return tl::unexpected(r.error());
      return {};
    });
  } else {
    live.emplace(ro.threads, [&](std::vector<byte_buffer> v) {
      std::lock_guard lk(m);
      for (auto& r : v) got.push_back(std::move(r));
    });
  }
  auto add_component = [&](std::unique_ptr<entities::component> c) {
    if (stepped)
      stepped->add_component(std::move(c));
    else
      live->add_component(std::move(c));
  };

  // The webhook, from YAML files in the CRD's shape.
  const auto profiles = write_file(dir.path / "profiles.yaml", profiles_yaml);
  const auto classes = write_file(dir.path / "priority-classes.yaml", priority_classes_yaml);
  auto webhook =
      admission_actor::colocation_profile_component::from_files({profiles}, {classes}, {});
  EXPECT_TRUE(webhook.has_value()) << (webhook ? "" : webhook.error().describe());
  if (!webhook) return res;
  EXPECT_EQ(webhook->profiles().profiles().size(), 2u);
  add_component(
      std::make_unique<admission_actor::colocation_profile_component>(std::move(*webhook)));
  add_component(std::make_unique<slo_controller_actor::slo_controller_component>(
      slo_controller_actor::slo_controller_options{}));
  scheduler::scheduler_component_options so;
  so.id = "0";
  so.scheduler_names = {"koord-scheduler"};
  auto sched = scheduler::scheduler_component::create(std::move(so));
  EXPECT_TRUE(sched.has_value());
  if (!sched) return res;
  add_component(std::move(*sched));

  entities::world own;  // the driver's own fold: where pods are, what the koordlets allowed
  const entities::world& w = stepped ? stepped->state() : own;
  auto make_koordlet = [](std::string_view node) {
    koordlet_actor::koordlet_options ko;
    ko.node = std::string(node);
    ko.gates.be_memory_evict = true;
    ko.gates.be_cpu_evict = true;
    // One report per period: the BE CPU window holds one sample per report.
    ko.timing.collect_res_used_interval = duration_ms{period_ms};
    return std::make_unique<koordlet_actor::koordlet_component>(std::move(ko));
  };
  if (stepped)
    stepped->on_new_node([&](std::string_view node) {
      std::vector<std::unique_ptr<entities::component>> v;
      v.push_back(make_koordlet(node));
      return v;
    });
  std::set<std::string> koordlets;
  log_offset next = 0;

  // Rounds until one emits nothing. Koordlets are created here, on a node's NodeRegistered,
  // before the batch that carries it is delivered (the host has no hook to do it).
  auto pump = [&] {
    if (stepped) {
      if (observed_at < 0) return;
      auto r = stepped->run_instant(observed_at);
      EXPECT_TRUE(r.has_value()) << (r ? "" : r.error().describe());
      observed_at = -1;
      return;
    }
    auto& host = *live;
    for (int round = 0; round < 200; ++round) {
      auto batch = std::make_shared<entities::record_batch>();
      auto rd = log.read(next, no_offset, [&](log_offset, messages::bytes_view b) {
        batch->add(b);
        return true;
      });
      EXPECT_TRUE(rd.has_value());
      next += batch->size();
      for (std::size_t i = 0; i < batch->size(); ++i) {
        const auto& env = batch->envelope(i);
        own.apply(env);
        if (env.payload_type() != wire::Payload::NodeRegistered) continue;
        std::string node(to_string_view(env.payload_as_NodeRegistered()->name()));
        if (!koordlets.insert(node).second) continue;
        host.add_component(make_koordlet(node));
      }
      if (batch->size() > 0) host.deliver(batch);
      EXPECT_TRUE(host.sync().has_value());
      std::vector<byte_buffer> out;
      {
        std::lock_guard lk(m);
        out.swap(got);
      }
      if (out.empty() && batch->size() == 0) return;
      if (ro.step_order) {
        // step_host's merge order: arbitration answers by the proposal they answer, then the
        // components in the order added (webhook, slo-controller, scheduler), then koordlets by
        // node name; each component's own order kept.
        auto key = [](const byte_buffer& b) {
          const auto& env = *wire::GetEnvelope(b.data());
          const auto src = to_string_view(env.source());
          if (src == "node" || src == "pod")
            return std::tuple(0, std::string_view{}, env.causation());
          if (src == "admission") return std::tuple(1, std::string_view{}, std::int64_t{0});
          if (src == "slo-controller") return std::tuple(2, std::string_view{}, std::int64_t{0});
          if (src.starts_with("koord-scheduler")) return std::tuple(3, src, std::int64_t{0});
          return std::tuple(4, src, std::int64_t{0});  // koordlet/<node>
        };
        std::stable_sort(out.begin(), out.end(),
                         [&](const auto& a, const auto& b) { return key(a) < key(b); });
      } else if (ro.canonical_rounds) {
        // Components: by source, each one's own order kept. Arbitration answers (source
        // "node" / "pod", one step per proposal, steps of one actor in arrival order): by the
        // proposal they answer.
        auto key = [](const byte_buffer& b) {
          const auto& env = *wire::GetEnvelope(b.data());
          const auto src = to_string_view(env.source());
          const bool arbiter = src == "node" || src == "pod";
          return std::tuple(src, arbiter ? env.causation() : std::int64_t{-1});
        };
        std::stable_sort(out.begin(), out.end(),
                         [&](const auto& a, const auto& b) { return key(a) < key(b); });
      }
      append(out);
    }
    res.quiescent = false;
  };

  // Config and nodes (16 cores, 64 GiB).
  testing::event_log el;
  el.config(0, slo_controller_actor::config_kind_slo_controller, slo_config_json);
  auto node_cap = testing::cpu_mem(16000, 64 * gib);
  node_cap.pods = 110;
  for (int n = 0; n < nodes; ++n) el.node(0, node_name(n), node_cap, node_cap);
  append(el.records);
  pump();
  // LS/prod pods: 4 cores, 24 GiB (two per node fit).
  el.records.clear();
  for (int p = 0; p < ls_pods; ++p)
    submit(el, 1000, "default/web-" + std::to_string(p), 4000, 24 * gib, {{"app-tier", "online"}});
  append(el.records);
  pump();
  // Co-location pods (3 cores, 4 GiB; two per node fit the batch allocatable) before any batch
  // allocatable exists.
  el.records.clear();
  for (int p = 0; p < be_pods; ++p)
    submit(el, 30000, "default/batch-" + std::to_string(p), 3000, 4 * gib,
           {{"koordinator.sh/enable-colocation", "true"}});
  append(el.records);
  pump();

  usage_model um;
  for (int k = 1; k <= periods; ++k) {
    const std::int64_t t = k * period_ms;
    if (k == memory_pressure_from) {
      // Pressure goes where BE pods are: the nodes with most BE pods, ties by name.
      std::vector<std::pair<int, std::string>> by_be;
      for (const auto& [name, n] : w.nodes) {
        int c = 0;
        for (const auto& p : n.pods) c += is_be(p.pod) ? 1 : 0;
        by_be.emplace_back(-c, name);
      }
      std::sort(by_be.begin(), by_be.end());
      um.memory_node = res.memory_node = by_be[0].second;
      um.cpu_node = res.cpu_node = by_be[1].second;
    }
    el.records.clear();
    for (const auto& [name, n] : w.nodes) {
      std::vector<testing::event_log::pod_usage> pu;
      resource_list total;
      total.cpu_milli = 500;  // system
      total.memory_bytes = 2 * gib;
      std::int64_t be_demand = 0;
      for (const auto& p : n.pods)
        if (is_be(p.pod)) be_demand += um.pod(p.pod, name, k).cpu_milli;
      // Throttling: BE pods share the BE CPU the koordlet last allowed (BeSuppressed).
      const double be_cap = n.be_cpu_milli >= 0 ? static_cast<double>(n.be_cpu_milli)
                                                : static_cast<double>(be_demand);
      const double be_scale =
          be_demand > 0 ? std::min(1.0, be_cap / static_cast<double>(be_demand)) : 1.0;
      for (const auto& p : n.pods) {
        auto u = um.pod(p.pod, name, k);
        if (is_be(p.pod))
          u.cpu_milli = static_cast<std::int64_t>(static_cast<double>(u.cpu_milli) * be_scale);
        total.cpu_milli += u.cpu_milli;
        total.memory_bytes += u.memory_bytes;
        pu.push_back({p.pod, u.cpu_milli, u.memory_bytes,
                      is_be(p.pod) ? wire::PriorityClass::Batch : wire::PriorityClass::Prod,
                      is_be(p.pod) ? wire::QoSClass::BE : wire::QoSClass::LS});
      }
      const auto off = el.metric(t, name, total.cpu_milli, total.memory_bytes, pu,
                                 testing::cpu_mem(500, 2 * gib));
      (void)off;
    }
    const std::uint64_t base = log.end_offset().value_or(0);
    append(el.records);
    if (!res.cpu_node.empty())
      for (std::size_t i = 0; i < el.records.size(); ++i)
        if (to_string_view(wire::GetEnvelope(el.records[i].data())->entity_key()) == res.cpu_node)
          res.metric_offsets_of_cpu_node.push_back(base + i);
    pump();
  }

  auto rd = log.read(0, no_offset, [&](log_offset, messages::bytes_view b) {
    res.log.emplace_back(b.begin(), b.end());
    return true;
  });
  EXPECT_TRUE(rd.has_value());
  return res;
}

// ---- the audit: the final log folded in order -----------------------------------------------
// The shared invariants (causation, capacity at every prefix and batch at bind time, bindings,
// answers, eviction reasons, batch/mid allocatable, pending pods explained) are the shared log
// audit's (actors/entities/audit.hpp); this scenario adds its own checks and collects what its
// assertions read.

struct eviction {
  std::uint64_t offset;
  std::int64_t causation;
  std::string pod, node, source, message;
  wire::EvictionReason reason;
  std::map<std::string, std::int64_t> terms;
};

struct audit {
  entities::audit_report shared;
  std::vector<std::string> violations;            // this scenario's own checks
  std::map<std::string, std::uint64_t> bound_at;  // pod -> PodScheduled offset
  std::map<std::string, std::uint64_t> first_unschedulable;
  std::map<std::string, const wire::PodMutated*> mutated;
  std::optional<std::uint64_t> first_batch;  // first NodeBatchResourceUpdated with batch > 0
  std::vector<eviction> evictions;
  std::map<std::string, std::vector<std::pair<std::uint64_t, const wire::BeSuppressed*>>>
      suppressed;  // node -> in log order
  entities::world world;
  [[nodiscard]] bool clean() const { return shared.clean() && violations.empty(); }
};

audit audit_log(const std::vector<byte_buffer>& log) {
  audit a;
  a.shared = entities::audit_log(log);
  auto& w = a.world;
  for (const auto& rec : log) {
    auto d = messages::decode(rec, "cluster log");
    if (!d) continue;  // the shared audit reports it
    const auto& env = *d->envelope;
    const auto off = env.offset();
    w.apply(env);
    switch (env.payload_type()) {
      case wire::Payload::PodMutated: {
        const auto* e = env.payload_as_PodMutated();
        a.mutated[std::string(to_string_view(e->name()))] = e;
        break;
      }
      case wire::Payload::PodScheduled:
        a.bound_at[std::string(to_string_view(env.payload_as_PodScheduled()->pod()))] = off;
        break;
      case wire::Payload::PodUnschedulable:
        a.first_unschedulable.emplace(
            std::string(to_string_view(env.payload_as_PodUnschedulable()->pod())), off);
        break;
      case wire::Payload::NodeBatchResourceUpdated: {
        const auto* e = env.payload_as_NodeBatchResourceUpdated();
        if (e->terms() == nullptr || e->terms()->size() == 0)
          a.violations.push_back("batch allocatable without terms at " + std::to_string(off));
        if (!a.first_batch && e->batch_cpu_milli() > 0) a.first_batch = off;
        break;
      }
      case wire::Payload::BeSuppressed: {
        const auto* e = env.payload_as_BeSuppressed();
        a.suppressed[std::string(to_string_view(e->node()))].emplace_back(off, e);
        break;
      }
      case wire::Payload::PodEvicted: {
        const auto* e = env.payload_as_PodEvicted();
        eviction ev{off,
                    env.causation(),
                    std::string(to_string_view(e->pod())),
                    std::string(to_string_view(e->node())),
                    std::string(to_string_view(env.source())),
                    std::string(to_string_view(e->message())),
                    e->reason(),
                    terms_of(e->inputs())};
        if (ev.terms.empty() || e->released() == nullptr)
          a.violations.push_back("eviction of " + ev.pod + " without inputs");
        // The cause is the node's metric report.
        if (env.causation() >= 0 && static_cast<std::size_t>(env.causation()) < log.size()) {
          const auto& c = *wire::GetEnvelope(log[static_cast<std::size_t>(env.causation())].data());
          if (c.payload_type() != wire::Payload::NodeMetricReported ||
              to_string_view(c.entity_key()) != ev.node)
            a.violations.push_back("eviction of " + ev.pod + " not caused by its node's metric");
        }
        a.evictions.push_back(std::move(ev));
        break;
      }
      default:
        break;
    }
  }
  return a;
}

// ---- the scenario's assertions ----------------------------------------------------------------

void expect_scenario(const run_result& run) {
  ASSERT_TRUE(run.quiescent) << "a round never went quiet";
  ASSERT_FALSE(run.memory_node.empty());
  if (std::getenv("COLONY_CLUSTER_DUMP") != nullptr)  // the log, one line per event
    for (const auto& rec : run.log) {
      const auto& env = *wire::GetEnvelope(rec.data());
      std::printf("%4llu t=%-7lld %-22s %-26s %-18s cause=%lld\n",
                  static_cast<unsigned long long>(env.offset()),
                  static_cast<long long>(env.event_time_ms()),
                  std::string(to_string_view(env.source())).c_str(),
                  wire::EnumNamePayload(env.payload_type()),
                  std::string(to_string_view(env.entity_key())).c_str(),
                  static_cast<long long>(env.causation()));
    }
  const auto a = audit_log(run.log);
  EXPECT_TRUE(a.shared.clean()) << a.shared.describe();
  for (const auto& v : a.violations) ADD_FAILURE() << v;
  EXPECT_EQ(a.shared.proposals, a.shared.scheduled + a.shared.bind_rejections);
  EXPECT_EQ(a.shared.pending_at_end, 0u);

  // LS pods: mutated by the "online" profile, bound.
  for (int p = 0; p < ls_pods; ++p) {
    const std::string pod = "default/web-" + std::to_string(p);
    ASSERT_TRUE(a.mutated.count(pod)) << pod;
    EXPECT_EQ(a.mutated.at(pod)->qos_class(), wire::QoSClass::LS);
    EXPECT_EQ(a.mutated.at(pod)->priority(), 9500);
    EXPECT_TRUE(a.bound_at.count(pod)) << pod << " never bound";
  }
  // BE pods: mutated into batch resources; unschedulable before any batch allocatable, bound
  // after it, on batch resources only.
  ASSERT_TRUE(a.first_batch.has_value()) << "the slo-controller published no batch allocatable";
  for (int p = 0; p < be_pods; ++p) {
    const std::string pod = "default/batch-" + std::to_string(p);
    ASSERT_TRUE(a.mutated.count(pod)) << pod;
    const auto* m = a.mutated.at(pod);
    EXPECT_EQ(m->qos_class(), wire::QoSClass::BE);
    EXPECT_EQ(m->priority_class(), wire::PriorityClass::Batch);
    EXPECT_EQ(m->priority(), 5500);
    ASSERT_NE(m->profiles(), nullptr);
    EXPECT_EQ(to_string_view(m->profiles()->Get(0)), "colocation-profile-example");
    const auto req = messages::to_resource_list(m->requests());
    EXPECT_EQ(req.cpu_milli, 0);
    EXPECT_EQ(req.memory_bytes, 0);
    EXPECT_EQ(req.batch_cpu_milli, 3000);
    EXPECT_EQ(req.batch_memory_bytes, 4 * gib);
    ASSERT_TRUE(a.first_unschedulable.count(pod)) << pod << " was never unschedulable";
    EXPECT_LT(a.first_unschedulable.at(pod), *a.first_batch) << pod;
    ASSERT_TRUE(a.bound_at.count(pod)) << pod << " never bound";
    EXPECT_GT(a.bound_at.at(pod), *a.first_batch) << pod;
  }

  // Memory pressure: the koordlet of that node evicted BE pods, largest memory user first
  // (equal priorities: getSortedBEPodInfos sorts by usage), until the release target was met.
  std::vector<const eviction*> mem, cpu;
  for (const auto& e : a.evictions) {
    EXPECT_TRUE(is_be(e.pod)) << "only BE pods are evicted: " << e.pod;
    EXPECT_EQ(e.source, "koordlet/" + e.node);
    if (e.reason == wire::EvictionReason::MemoryEvict) mem.push_back(&e);
    if (e.reason == wire::EvictionReason::CPUEvict) cpu.push_back(&e);
  }
  ASSERT_GE(mem.size(), 2u) << "expected a multi-victim memory eviction round";
  std::int64_t prev_used = std::numeric_limits<std::int64_t>::max();
  for (std::size_t i = 0; i < mem.size(); ++i) {
    const auto& e = *mem[i];
    EXPECT_EQ(e.node, run.memory_node);
    EXPECT_EQ(e.message, "trigger by koordlet feature BEMemoryEvict");
    EXPECT_EQ(e.causation, mem[0]->causation) << "one round";
    EXPECT_EQ(e.terms.at("victimOrder"), static_cast<std::int64_t>(i + 1));
    EXPECT_EQ(e.terms.at("memoryEvictThresholdPercent"), 70);
    EXPECT_GT(e.terms.at("nodeMemoryUsed") * 100, 70 * e.terms.at("nodeMemoryCapacity"));
    EXPECT_LE(e.terms.at("podUsed"), prev_used) << "victims in usage order";
    prev_used = e.terms.at("podUsed");
    // Minimal prefix: each victim was needed (the round had not released enough before it).
    EXPECT_LT(e.terms.at("releasedInRound") - e.terms.at("released"), e.terms.at("toRelease"));
  }
  // Every BE pod of that node still running used no more memory than the last victim.
  for (const auto& p : a.world.nodes.at(run.memory_node).pods)
    if (is_be(p.pod)) {
      EXPECT_LE(3 * gib + (pod_index(p.pod) % 4) * 256 * 1024 * 1024, prev_used);
    }

  // CPU pressure: suppression shrank the BE cpuset there, caused by that node's metric.
  ASSERT_TRUE(a.suppressed.count(run.cpu_node));
  const auto& sup = a.suppressed.at(run.cpu_node);
  ASSERT_GE(sup.size(), 2u);
  const std::set<std::uint64_t> cpu_metrics(run.metric_offsets_of_cpu_node.begin(),
                                            run.metric_offsets_of_cpu_node.end());
  bool shrank = false;
  for (std::size_t i = 1; i < sup.size(); ++i) {
    const auto* s = sup[i].second;
    if (s->be_cpu_milli() >= 0 && s->be_cpu_milli() < sup[i - 1].second->be_cpu_milli()) {
      shrank = true;
      const auto& env = *wire::GetEnvelope(run.log[sup[i].first].data());
      EXPECT_TRUE(cpu_metrics.count(static_cast<std::uint64_t>(env.causation())))
          << "suppression caused by the node's metric under pressure";
      EXPECT_EQ(to_string_view(s->policy()), "cpuset");
      EXPECT_FALSE(terms_of(s->inputs()).empty());
    }
  }
  EXPECT_TRUE(shrank) << "CPU pressure did not shrink the BE cpuset";
  // ... and BE CPU satisfaction fell below 40 %: the starved BE pods there were evicted.
  ASSERT_FALSE(cpu.empty()) << "no BECPUEvict";
  for (const auto* e : cpu) {
    EXPECT_EQ(e->node, run.cpu_node);
    EXPECT_EQ(e->message, "trigger by koordlet feature BECPUEvict");
    EXPECT_GT(e->terms.at("milliRelease"), 0);
    EXPECT_LE(e->terms.at("cpuEvictBESatisfactionLowerPercent"), 40);
    EXPECT_LE(e->terms.at("avgBECPUMilliLimit") * 100, 40 * e->terms.at("avgBECPUMilliRequest"));
  }
  std::printf(
      "%zu records, %zu proposals, %zu batch updates (%zu below allocated), %zu memory and %zu "
      "cpu evictions, memory node %s, cpu node %s\n",
      run.log.size(), static_cast<std::size_t>(a.shared.proposals),
      static_cast<std::size_t>(a.shared.batch_updates),
      static_cast<std::size_t>(a.shared.batch_below_allocated), mem.size(), cpu.size(),
      run.memory_node.c_str(), run.cpu_node.c_str());
}

TEST(ClusterEndToEnd, WebhookSloControllerKoordletsAndSchedulerOneThread) {
  expect_scenario(run_cluster({.threads = 1}));
}

TEST(ClusterEndToEnd, WebhookSloControllerKoordletsAndSchedulerFourThreads) {
  expect_scenario(run_cluster({.threads = 4}));
}

// The audit can fail: a second binding of a bound pod, and a decision whose causation points
// forward, are both caught by the shared audit.
TEST(ClusterEndToEnd, AuditCatchesForgedLogs) {
  const auto run = run_cluster({.threads = 1});
  ASSERT_TRUE(run.quiescent);
  ASSERT_TRUE(audit_log(run.log).clean());
  // Causation forward: point the last decision at itself.
  auto forged = run.log;
  for (auto it = forged.rbegin(); it != forged.rend(); ++it) {
    auto* env = wire::GetMutableEnvelope(it->data());
    if (!entities::is_decision(env->payload_type())) continue;
    ASSERT_TRUE(env->mutate_causation(static_cast<std::int64_t>(env->offset())));
    break;
  }
  EXPECT_EQ(audit_log(forged).shared.count(entities::audit_check::causation_not_earlier), 1u);
  // A second binding of a bound pod.
  forged = run.log;
  for (std::size_t i = 0; i < forged.size(); ++i) {
    const auto& env = *wire::GetEnvelope(forged[i].data());
    if (env.payload_type() != wire::Payload::PodScheduled) continue;
    auto dup = forged[i];
    (void)messages::patch_offset(dup, log_offset{forged.size()});
    forged.push_back(std::move(dup));
    break;
  }
  const auto twice = audit_log(forged).shared;
  EXPECT_EQ(twice.count(entities::audit_check::bound_twice), 1u) << twice.describe();
  EXPECT_EQ(twice.count(entities::audit_check::answered_twice), 1u) << twice.describe();
}

// ---- Determinism ------------------------------------------------------------------------------
// What the design guarantees (docs/architecture.md "Binding", "Components"):
//  - Each component is single-threaded over the log prefix it was delivered, so what one
//    component emits in a round is the same at any thread count; so is the order within one
//    actor's step (one sink call).
//  - Across actors, sink calls follow message arrival. With one CAF thread (one FIFO job queue,
//    and the driver's deliver/sync going through the router) the arrival order is the same on
//    every run: the raw log is byte-identical across runs.
//  - With 4 threads the order of the actors' steps within a round varies, so the raw log's order
//    (and every later offset) may differ between runs. If the driver orders each round's output
//    by source (stable: each component's own order is kept) and the arbitration answers by the
//    proposal they answer (a node actor's steps arrive in any order), the log is byte-identical at
//    any thread count -- as long as no arbitration in a round depends on the interleaving, i.e. no
//    proposal shares a batch with another proposal for the same room or with an event that
//    changes the node's allocatable. This scenario has one scheduler, whose proposals are
//    delivered in a round of their own, so it holds here; two racing schedulers
//    (tests/actors/scheduler_actor/contention_test.cpp) do not have it.
//  - Either way the folded end state is the same at 1 and 4 threads here: the rounds hold the
//    same decisions, and folding them commutes within a round.

std::uint64_t final_digest(const std::vector<byte_buffer>& log) {
  entities::world w;
  for (const auto& rec : log) w.apply(*wire::GetEnvelope(rec.data()));
  return w.digest();
}

TEST(ClusterDeterminism, OneThreadRawLogIsByteIdenticalAcrossRuns) {
  const auto first = run_cluster({.threads = 1});
  ASSERT_TRUE(first.quiescent);
  for (int i = 0; i < 3; ++i) {
    const auto again = run_cluster({.threads = 1});
    ASSERT_EQ(again.log.size(), first.log.size());
    EXPECT_TRUE(again.log == first.log) << "run " << i << " differs";
  }
}

TEST(ClusterDeterminism, CanonicalRoundsAreByteIdenticalAtOneAndFourThreads) {
  const auto one = run_cluster({.threads = 1, .canonical_rounds = true});
  ASSERT_TRUE(one.quiescent);
  expect_scenario(one);
  for (int i = 0; i < 3; ++i) {
    const auto four = run_cluster({.threads = 4, .canonical_rounds = true});
    ASSERT_EQ(four.log.size(), one.log.size());
    EXPECT_TRUE(four.log == one.log) << "run " << i << " differs";
  }
}

TEST(ClusterDeterminism, RawFourThreadRunsReachTheSameEndState) {
  const auto one = run_cluster({.threads = 1});
  const auto want = final_digest(one.log);
  for (int i = 0; i < 3; ++i) {
    const auto four = run_cluster({.threads = 4});
    ASSERT_EQ(four.log.size(), one.log.size());
    EXPECT_EQ(final_digest(four.log), want) << "run " << i;
  }
}

// ---- The two hosts ---------------------------------------------------------------------------
// step_host (colony sim's deterministic host) runs the same components over the same
// observations as the live actor_host, and must decide the same things in the same order.

TEST(StepHost, RunsTheWholeScenario) {
  const auto run = run_cluster({.threads = 1, .step_host = true});
  ASSERT_TRUE(run.quiescent);
  expect_scenario(run);
}

TEST(StepHost, LogIsByteIdenticalAtOneTwoFourAndEightThreads) {
  const auto one = run_cluster({.threads = 1, .step_host = true});
  ASSERT_GT(one.log.size(), 100u);
  for (const std::size_t threads : {2, 4, 8}) {
    const auto again = run_cluster({.threads = threads, .step_host = true});
    ASSERT_EQ(again.log.size(), one.log.size()) << threads << " threads";
    EXPECT_TRUE(again.log == one.log) << threads << " threads: the log differs";
  }
}

// The differential test of the hosts: the live actor_host (one CAF thread, each round's output
// in step_host's merge order) and step_host write the same log, byte for byte: every decision,
// its source, causation, offset and payload.
TEST(StepHost, WritesTheSameLogAsTheActorHost) {
  const auto actors = run_cluster({.threads = 1, .step_order = true});
  const auto stepped = run_cluster({.threads = 2, .step_host = true});
  ASSERT_TRUE(actors.quiescent);
  ASSERT_TRUE(stepped.quiescent);
  std::size_t decisions = 0;
  const std::size_t n = std::min(actors.log.size(), stepped.log.size());
  for (std::size_t i = 0; i < n; ++i) {
    const auto& a = *wire::GetEnvelope(actors.log[i].data());
    const auto& b = *wire::GetEnvelope(stepped.log[i].data());
    ASSERT_EQ(a.payload_type(), b.payload_type())
        << "offset " << i << ": " << wire::EnumNamePayload(a.payload_type()) << " from "
        << to_string_view(a.source()) << " vs " << wire::EnumNamePayload(b.payload_type())
        << " from " << to_string_view(b.source());
    ASSERT_EQ(to_string_view(a.entity_key()), to_string_view(b.entity_key())) << "offset " << i;
    ASSERT_EQ(to_string_view(a.source()), to_string_view(b.source())) << "offset " << i;
    ASSERT_TRUE(actors.log[i] == stepped.log[i]) << "offset " << i << ": payload differs";
    if (entities::is_decision(a.payload_type())) ++decisions;
  }
  EXPECT_EQ(actors.log.size(), stepped.log.size());
  // What the comparison covered: every kind of decision of the scenario.
  EXPECT_GT(decisions, 60u);
}

}  // namespace
}  // namespace colony
