// scheduler.cycle: pods/s and per-pod decision latency of scheduling_cycle() with
// NodeResourcesFit (Koordinator's shipped scoring) + LoadAwareScheduling (code defaults) +
// ElasticQuota (16 quotas under 4 parents, every pod's request booked in advance as the quota
// actor does) over 5,000 nodes, with adaptive percentageOfNodesToScore (10 % at 5,000 nodes)
// and with 100 %. Every decision is applied with assume_pod(), so load-aware caches see real
// churn, and Reserve books used into the quota tree.
//
// Figures: scheduler.pods_per_s_default (goal >= 10,000), scheduler.pods_per_s_all_nodes
// (goal >= 3,000), scheduler.decision_p99_us (default percentage; goal < 1,000). Latency is
// per decision over every sample (20,000 / 5,000), as wall time and as this thread's CPU time
// (on a shared machine wall time includes waiting for a core); p50, p99 and max of each.
//
// scheduler.numa: NodeNUMAResource added to NodeResourcesFit + LoadAwareScheduling over 5,000
// nodes of 2 sockets x 1 NUMA node x 48 Hyper-Threaded cores (192 CPUs, 192 cpu allocatable,
// Linux numbering; one shared topology), a quarter of the pods LSR prod with 2-16 whole CPUs
// (FullPCPUs, so every one is allocated a cpuset at Reserve), the rest LS prod / batch as in
// scheduler.cycle. Figures: scheduler.pods_per_s_numa (goal >= 5,000 at the default
// percentage), how many LSR pods got a cpuset, the CPUs they hold; the same with every node's
// NUMA topology policy SingleNUMANode (two NUMA zones of 96 CPUs; every pod then gets NUMA
// hints and one NUMA node's resources): scheduler.pods_per_s_numa_single_numa_node.
//
// scheduler.reservations: the same at the default percentage with the Reservation plugin
// (weight 5000, as Koordinator's shipped profile) and 5,000 reservations present, one Available
// on every node (2 cpu, 8 GiB, owners: label app=web, allocate-once); every tenth pod is an
// owner. The reservations share one owner spec (owner_classes), as a workload's do. Each owner's
// decision is applied with assume_reservation_owner. Figures: scheduler.pods_per_s_reservations
// (goal >= 10,000) and how many pods used a reservation.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include <time.h>

#include "actors/quota/quota_tree.hpp"
#include "actors/scheduler/elastic_quota.hpp"
#include "actors/scheduler/framework.hpp"
#include "actors/scheduler/load_aware.hpp"
#include "actors/scheduler/node_numa_resource.hpp"
#include "actors/scheduler/node_resources_fit.hpp"
#include "actors/scheduler/numa/cpu_topology.hpp"
#include "actors/scheduler/reservation.hpp"
#include "bench/registry.hpp"
#include "messages/names.hpp"

namespace {

using namespace colony;
using namespace colony::scheduler;

constexpr std::int64_t gib = 1024LL * 1024 * 1024;
constexpr event_time bench_now{1'700'000'000'000};

std::vector<node_info> make_cluster(std::size_t n, std::mt19937_64& rng, owner_classes* classes) {
  std::vector<node_info> nodes;
  nodes.reserve(n);
  for (std::size_t i = 0; i < n; ++i) {
    node_info node;
    node.name = "node-" + std::to_string(i);
    node.allocatable.cpu_milli = 64000;
    node.allocatable.memory_bytes = 256 * gib;
    node.allocatable.batch_cpu_milli = 20000 + static_cast<std::int64_t>(rng() % 20000);
    node.allocatable.batch_memory_bytes = 64 * gib;
    node.allocatable.pods = 110;
    // A few running pods that NodeMetric partly reports (exercises the delta rule).
    node_metric m;
    m.update_time = event_time{bench_now.value - static_cast<std::int64_t>(rng() % 30'000)};
    for (int k = 0; k < 8; ++k) {
      pod_info p;
      p.key = "running/" + node.name + "-" + std::to_string(k);
      p.priority = (k % 2 == 0) ? 9000 : 5000;
      const std::int64_t cpu = 500 + static_cast<std::int64_t>(rng() % 3500);
      if (p.priority == 9000) {
        p.requests.cpu_milli = cpu;
        p.requests.memory_bytes = cpu * 4 * 1024 * 1024;
      } else {
        p.requests.batch_cpu_milli = cpu;
        p.requests.batch_memory_bytes = cpu * 4 * 1024 * 1024;
      }
      p.limits = p.requests;
      p.node_name = node.name;
      p.scheduled_time = event_time{bench_now.value - static_cast<std::int64_t>(rng() % 600'000)};
      node.requested += p.requests;
      node.requested.pods += 1;
      auto nz = non_zero_requests(p);
      node.non_zero_requested.cpu_milli += nz.cpu_milli;
      node.non_zero_requested.memory_bytes += nz.memory_bytes;
      if (k % 3 != 0)
        m.pods.push_back(
            {p.key, p.priority == 9000 ? priority_class::prod : priority_class::batch, [&] {
               resource_list u;
               u.cpu_milli = cpu / 2;
               u.memory_bytes = cpu * 2 * 1024 * 1024;
               return u;
             }()});
      node.pods.push_back(std::move(p));
    }
    m.node_usage.cpu_milli = 4000 + static_cast<std::int64_t>(rng() % 30000);
    m.node_usage.memory_bytes = (16 + static_cast<std::int64_t>(rng() % 128)) * gib;
    node.metric = std::move(m);
    if (classes != nullptr) {
      reservation_info r;
      r.name = "rsv-" + std::to_string(i);
      r.uid = "uid-" + r.name;
      r.node = node.name;
      r.phase = reservation_phase::available;
      r.allocatable.cpu_milli = 2000;
      r.allocatable.memory_bytes = 8 * gib;
      reservation_owner o;
      o.label_selector.emplace();
      o.label_selector->match_labels.emplace("app", "web");
      r.owners.push_back(std::move(o));
      r.owner_class = classes->intern(r.owners);
      node.reservations.push_back(std::move(r));
      node.requested = reservations_requested(node);
    }
    nodes.push_back(std::move(node));
  }
  return nodes;
}

std::vector<pod_info> make_pods(std::size_t n, std::mt19937_64& rng, bool owners) {
  auto web = std::make_shared<pod_identity>();
  web->labels.emplace("app", "web");
  auto other = std::make_shared<pod_identity>();
  other->labels.emplace("app", "batch");
  std::vector<pod_info> pods;
  pods.reserve(n);
  for (std::size_t i = 0; i < n; ++i) {
    pod_info p;
    p.key = "bench/pod-" + std::to_string(i);
    const std::int64_t cpu = 250 + static_cast<std::int64_t>(rng() % 3750);
    if (rng() % 3 == 0) {
      p.priority = 5000;
      p.requests.batch_cpu_milli = cpu;
      p.requests.batch_memory_bytes = cpu * 4 * 1024 * 1024;
    } else {
      p.priority = 9000;
      p.requests.cpu_milli = cpu;
      p.requests.memory_bytes = cpu * 4 * 1024 * 1024;
    }
    p.limits = p.requests;
    p.quota_name = "team-" + std::to_string(i % 16);
    if (owners) p.identity = i % 10 == 0 ? web : other;
    pods.push_back(std::move(p));
  }
  return pods;
}

// CPU time of this thread: on a shared machine it shows the work itself, wall time the wait too.
double thread_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

struct run_result {
  double cpu_pods_per_s = 0;
  double pods_per_s = 0;
  double p50_us = 0, p99_us = 0, max_us = 0;              // wall time per decision
  double cpu_p50_us = 0, cpu_p99_us = 0, cpu_max_us = 0;  // thread CPU time per decision
  std::size_t scheduled = 0;
  std::size_t into_reservations = 0;
  std::size_t cpuset_pods = 0;  // decisions with a NodeNUMAResource cpuset
  std::size_t cpuset_cpus = 0;  // CPUs in them
};

// 4 parents x 4 children ("team-0".."team-15"), max well above the cluster so the quota
// check runs on every pod without refusing it; mins split the cluster.
std::shared_ptr<quota::quota_tree> make_quota_tree(const std::vector<node_info>& nodes,
                                                   const std::vector<pod_info>& pods) {
  auto tree = std::make_shared<quota::quota_tree>();
  resource_list total;
  for (const auto& n : nodes) total += n.allocatable;
  tree->set_cluster_total(total);
  auto spec = [&](std::string name, std::string parent, bool is_parent, std::int64_t share) {
    quota::quota_spec s;
    s.name = std::move(name);
    s.parent = std::move(parent);
    s.is_parent = is_parent;
    s.max = total;
    s.min.cpu_milli = total.cpu_milli / share;
    s.min.memory_bytes = total.memory_bytes / share;
    s.max_keys = s.min_keys = quota::key::cpu | quota::key::memory;
    return s;
  };
  for (int p = 0; p < 4; ++p) {
    (void)tree->upsert_quota(spec("org-" + std::to_string(p), "", true, 4));
    for (int c = 0; c < 4; ++c)
      (void)tree->upsert_quota(
          spec("team-" + std::to_string(p * 4 + c), "org-" + std::to_string(p), false, 16));
  }
  elastic_quota booker(tree);
  for (const auto& p : pods) (void)tree->upsert_pod(booker.to_quota_pod(p, p.quota_name));
  tree->refresh();
  return tree;
}

enum class bench_profile : std::uint8_t { plain, reservations, numa, numa_single_numa_node };

// scheduler.numa's machines: 192 CPUs each, one topology shared by all nodes; a quarter of the
// pods LSR prod asking 2, 4, 8 or 16 whole CPUs.
void make_numa(std::vector<node_info>& nodes, std::vector<pod_info>& pods, std::mt19937_64& rng,
               bool single_numa_node) {
  auto topo = colony::scheduler::numa::build_topology({2, 1, 48, 2});
  auto options = std::make_shared<numa::topology_options>();
  options->topology = std::move(*topo);
  // Two NUMA zones of 96 CPUs and 384 GiB each.
  options->numa_node_cpus = {{0, 96'000, 384 * gib}, {1, 96'000, 384 * gib}};
  const std::vector<std::pair<std::string, std::string>> labels = {
      {std::string(names::label_numa_topology_policy), "SingleNUMANode"}};
  for (auto& n : nodes) {
    n.allocatable.cpu_milli = 192'000;
    n.allocatable.memory_bytes = 768 * gib;
    n.numa.set_options(options);
    if (single_numa_node) (void)n.numa.set_labels(labels);
  }
  for (std::size_t i = 0; i < pods.size(); i += 4) {
    auto& p = pods[i];
    p.qos_label = qos_class::lsr;
    p.priority = 9000;
    p.priority_class_label = priority_class::prod;
    const std::int64_t cpus = std::int64_t{2} << (rng() % 4);
    p.requests = {};
    p.requests.cpu_milli = cpus * 1000;
    p.requests.memory_bytes = cpus * 4 * gib;
    p.limits = p.requests;
  }
}

run_result run(std::int32_t percentage, std::size_t num_nodes, std::size_t num_pods,
               bench_profile profile = bench_profile::plain) {
  const bool reservations = profile == bench_profile::reservations;
  std::mt19937_64 rng(42);
  auto classes = std::make_shared<owner_classes>();
  auto nodes = make_cluster(num_nodes, rng, reservations ? classes.get() : nullptr);
  auto pods = make_pods(num_pods, rng, reservations);
  const bool numa =
      profile == bench_profile::numa || profile == bench_profile::numa_single_numa_node;
  if (numa) make_numa(nodes, pods, rng, profile == bench_profile::numa_single_numa_node);
  framework fwk({.percentage_of_nodes_to_score = percentage, .seed = 7});
  fwk.add(std::make_shared<node_resources_fit>(node_resources_fit_args::koordinator_profile()));
  fwk.add(std::make_shared<load_aware_scheduling>(load_aware_args{}));
  if (numa)
    fwk.add(std::make_shared<node_numa_resource>());
  else
    fwk.add(std::make_shared<elastic_quota>(make_quota_tree(nodes, pods)));
  if (reservations) fwk.add(std::make_shared<reservation_plugin>(classes), 5000);
  cycle_state st;
  std::vector<double> lat, cpu_lat;
  lat.reserve(pods.size());
  cpu_lat.reserve(pods.size());
  run_result r;
  // Warm-up: one cycle per node window fills the load-aware cache, as a live scheduler would be.
  for (std::size_t i = 0; i < 64; ++i) {
    auto d = scheduling_cycle(fwk, st, pods[i % pods.size()], nodes, bench_now);
    colony::bench::do_not_optimize(d.total_score);
  }
  const double cpu0 = thread_cpu_seconds();
  const double total = colony::bench::seconds_of([&] {
    for (std::size_t i = 0; i < pods.size(); ++i) {
      const auto now = event_time{bench_now.value + static_cast<std::int64_t>(i)};
      const double c0 = thread_cpu_seconds();
      auto t0 = std::chrono::steady_clock::now();
      auto d = scheduling_cycle(fwk, st, pods[i], nodes, now);
      if (d.result == outcome::scheduled) {
        auto& node = nodes[d.node_index];
        assume_pod(node, pods[i], d, now);
        ++r.scheduled;
        if (!d.cpuset.empty()) {
          ++r.cpuset_pods;
          r.cpuset_cpus += static_cast<std::size_t>(d.cpuset.size());
        }
        if (!d.reservation.empty()) {
          for (std::size_t k = 0; k < node.reservations.size(); ++k)
            if (node.reservations[k].name == d.reservation)
              assume_reservation_owner(node, k, pods[i]);
          ++r.into_reservations;
        }
      }
      lat.push_back(
          std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count());
      cpu_lat.push_back((thread_cpu_seconds() - c0) * 1e6);
    }
  });
  r.cpu_pods_per_s = static_cast<double>(pods.size()) / (thread_cpu_seconds() - cpu0);
  r.pods_per_s = static_cast<double>(pods.size()) / total;
  auto pct = [](std::vector<double>& v, double& p50, double& p99, double& mx) {
    std::sort(v.begin(), v.end());
    p50 = v[v.size() / 2];
    p99 = v[std::min(v.size() - 1, v.size() * 99 / 100)];
    mx = v.back();
  };
  pct(lat, r.p50_us, r.p99_us, r.max_us);
  pct(cpu_lat, r.cpu_p50_us, r.cpu_p99_us, r.cpu_max_us);
  return r;
}

}  // namespace

COLONY_BENCH(
    "scheduler.cycle",
    "scheduling_cycle over 5,000 nodes (NodeResourcesFit + LoadAwareScheduling + ElasticQuota): "
    "pods/s at default percentageOfNodesToScore and at 100 %, p50/p99/max decision latency") {
  const std::size_t nodes = 5000;
  const std::size_t pods = ctx.quick() ? 2000 : 20000;
  auto def = run(0, nodes, pods);
  ctx.report("scheduler.pods_per_s_default", def.pods_per_s, "pods/s");
  ctx.report("scheduler.decision_p99_us", def.p99_us, "us");
  ctx.report("scheduler.decision_p50_us", def.p50_us, "us");
  ctx.report("scheduler.decision_max_us", def.max_us, "us");
  ctx.report("scheduler.decision_cpu_p50_us", def.cpu_p50_us, "us");
  ctx.report("scheduler.decision_cpu_p99_us", def.cpu_p99_us, "us");
  ctx.report("scheduler.decision_cpu_max_us", def.cpu_max_us, "us");
  ctx.report("scheduler.cpu_pods_per_s_default", def.cpu_pods_per_s, "pods/cpu-s");
  ctx.report("scheduler.scheduled_default", static_cast<double>(def.scheduled), "pods");
  auto all = run(100, nodes, ctx.quick() ? 500 : 5000);
  ctx.report("scheduler.pods_per_s_all_nodes", all.pods_per_s, "pods/s");
  ctx.report("scheduler.decision_p50_us_all_nodes", all.p50_us, "us");
  ctx.report("scheduler.decision_p99_us_all_nodes", all.p99_us, "us");
  ctx.report("scheduler.decision_cpu_p99_us_all_nodes", all.cpu_p99_us, "us");
  ctx.report("scheduler.cpu_pods_per_s_all_nodes", all.cpu_pods_per_s, "pods/cpu-s");
}

COLONY_BENCH("scheduler.reservations",
             "scheduling_cycle over 5,000 nodes with 5,000 reservations (Reservation plugin added "
             "to scheduler.cycle's profile): pods/s at default percentageOfNodesToScore") {
  const std::size_t pods = ctx.quick() ? 2000 : 20000;
  auto r = run(0, 5000, pods, bench_profile::reservations);
  ctx.report("scheduler.pods_per_s_reservations", r.pods_per_s, "pods/s");
  ctx.report("scheduler.cpu_pods_per_s_reservations", r.cpu_pods_per_s, "pods/cpu-s");
  ctx.report("scheduler.decision_cpu_p99_us_reservations", r.cpu_p99_us, "us");
  ctx.report("scheduler.scheduled_reservations", static_cast<double>(r.scheduled), "pods");
  ctx.report("scheduler.into_reservations", static_cast<double>(r.into_reservations), "pods");
}

COLONY_BENCH(
    "scheduler.numa",
    "scheduling_cycle over 5,000 nodes of 2 NUMA nodes x 48 HT cores with NodeNUMAResource, "
    "a quarter of the pods LSR (cpusets): pods/s at default percentageOfNodesToScore") {
  const std::size_t pods = ctx.quick() ? 2000 : 20000;
  auto r = run(0, 5000, pods, bench_profile::numa);
  ctx.report("scheduler.pods_per_s_numa", r.pods_per_s, "pods/s");
  ctx.report("scheduler.cpu_pods_per_s_numa", r.cpu_pods_per_s, "pods/cpu-s");
  ctx.report("scheduler.decision_p99_us_numa", r.p99_us, "us");
  ctx.report("scheduler.decision_cpu_p99_us_numa", r.cpu_p99_us, "us");
  ctx.report("scheduler.scheduled_numa", static_cast<double>(r.scheduled), "pods");
  ctx.report("scheduler.cpuset_pods_numa", static_cast<double>(r.cpuset_pods), "pods");
  ctx.report("scheduler.cpuset_cpus_numa", static_cast<double>(r.cpuset_cpus), "cpus");
  // The same with every node's NUMA topology policy SingleNUMANode: every pod (LS and batch
  // too) gets its NUMA hints and a NUMA node's resources.
  auto s = run(0, 5000, pods, bench_profile::numa_single_numa_node);
  ctx.report("scheduler.pods_per_s_numa_single_numa_node", s.pods_per_s, "pods/s");
  ctx.report("scheduler.cpu_pods_per_s_numa_single_numa_node", s.cpu_pods_per_s, "pods/cpu-s");
  ctx.report("scheduler.decision_cpu_p99_us_numa_single_numa_node", s.cpu_p99_us, "us");
  ctx.report("scheduler.scheduled_numa_single_numa_node", static_cast<double>(s.scheduled), "pods");
  ctx.report("scheduler.cpuset_pods_numa_single_numa_node", static_cast<double>(s.cpuset_pods),
             "pods");
}
