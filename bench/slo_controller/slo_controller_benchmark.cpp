// slo_controller.batch_round: one full slo-controller round over a cluster, as
// NodeResourceReconciler runs it for every node: resolve the node's strategy (nodeConfigs +
// labels), calculate mid and batch resources (with explanations), prepare the node values and
// decide whether to write. Size: 5,000 nodes x 110 pods (quick: 500 x 110). Inputs are built once,
// outside the timing; the figure is the median of several rounds on one thread.
//
// Two input forms of the same cluster, both matched by interned namespace/name ids (podMetricMap):
// the main figure reads the hot/cold split (pod_sample / pod_metric_sample, 32 bytes each, which an
// actor would refresh when a pod or a NodeMetric arrives, as it interns keys); ".records" reads
// whole pod_input / pod_metric records (256 / 168 bytes: names, limits, full resource lists
// inline), the form the slo-controller actor and the simulator passed before they kept samples (the
// component's own round is slo_controller.component_round). A round's inputs do not
// fit in cache, so both figures include the memory traffic of every node's inputs; nothing is
// carried from one round to the next. "forms_agree" is 1 when both forms computed the same sums.
#include <algorithm>
#include <cstdint>
#include <ctime>
#include <random>
#include <string>
#include <vector>

#include "actors/slo_controller/node_resource.hpp"
#include "bench/registry.hpp"

namespace {

using namespace colony;
using namespace colony::slo_controller;

struct cluster {
  colocation_config cfg;
  std::vector<node_input> nodes;
  std::vector<std::vector<pod_input>> pods;
  std::vector<node_metric_input> metrics;
  std::vector<node_extended_resources> current;
  // The same pods and metrics as samples; metric_headers are `metrics` without pod_metrics.
  std::vector<std::vector<pod_sample>> pod_samples;
  std::vector<std::vector<pod_metric_sample>> metric_samples;
  std::vector<node_metric_input> metric_headers;
};

std::int64_t pick(std::mt19937_64& rng, std::int64_t lo, std::int64_t hi) {
  return lo + static_cast<std::int64_t>(rng() % static_cast<std::uint64_t>(hi - lo + 1));
}

cluster make_cluster(int nodes, int pods_per_node, event_time now) {
  cluster c;
  pod_key_interner keys;
  std::mt19937_64 rng(42);
  c.cfg.cluster.enable = true;
  c.cfg.cluster.cpu_reclaim_threshold_percent = 65;
  c.cfg.cluster.memory_reclaim_threshold_percent = 65;
  node_colocation_config gpu;
  gpu.name = "gpu-pool";
  gpu.node_selector.present = true;
  gpu.node_selector.has_match_labels = true;
  gpu.node_selector.match_labels["pool"] = "gpu";
  gpu.strategy = c.cfg.cluster;
  gpu.strategy.memory_calculate_policy = calculate_policy::request;
  c.cfg.node_configs.push_back(gpu);
  const priority_class classes[] = {priority_class::prod, priority_class::prod, priority_class::mid,
                                    priority_class::batch, priority_class::free};
  const qos_class qoses[] = {qos_class::ls, qos_class::lsr, qos_class::lse, qos_class::be};
  for (int n = 0; n < nodes; ++n) {
    node_input node;
    node.name = "node-" + std::to_string(n);
    node.capacity.cpu_milli = 96000;
    node.capacity.memory_bytes = 384 * gib;
    node.allocatable.cpu_milli = 94000;
    node.allocatable.memory_bytes = 370 * gib;
    node.labels = {{"kubernetes.io/hostname", node.name}, {"pool", n % 4 == 0 ? "gpu" : "cpu"}};
    node_metric_input m;
    m.update_time = event_time{now.value - pick(rng, 0, 60'000)};
    m.node_usage = {pick(rng, 10'000, 90'000), pick(rng, 50, 350) * gib};
    m.system_usage.cpu_milli = pick(rng, 1000, 6000);
    m.system_usage.memory_bytes = pick(rng, 4, 20) * gib;
    m.prod_reclaimable = resource_list{};
    m.prod_reclaimable->cpu_milli = pick(rng, 0, 20'000);
    m.prod_reclaimable->memory_bytes = pick(rng, 0, 40) * gib;
    std::vector<pod_input> pods;
    pods.reserve(static_cast<std::size_t>(pods_per_node));
    m.pod_metrics.reserve(static_cast<std::size_t>(pods_per_node));
    for (int p = 0; p < pods_per_node; ++p) {
      pod_input pod;
      pod.ns = "ns-" + std::to_string(p % 7);
      pod.name = node.name + "-pod-" + std::to_string(p);
      pod.priority = classes[rng() % 5];
      pod.qos = qoses[rng() % 4];
      pod.phase = rng() % 20 == 0 ? pod_phase::succeeded : pod_phase::running;
      pod.requests.cpu_milli = pick(rng, 50, 1500);
      pod.requests.memory_bytes = pick(rng, 64, 4096) * mib;
      pod.limits = pod.requests;
      if (rng() % 10 != 0) {  // 10 % of pods have no metric yet
        pod_metric pm;
        pm.ns = pod.ns;
        pm.name = pod.name;
        pm.usage.cpu_milli = pick(rng, 0, 1500);
        pm.usage.memory_bytes = pick(rng, 32, 4096) * mib;
        pm.priority = pod.priority;
        m.pod_metrics.push_back(std::move(pm));
      }
      pods.push_back(std::move(pod));
    }
    std::shuffle(m.pod_metrics.begin(), m.pod_metrics.end(),
                 rng);  // koordlet order differs from the pod list
    std::vector<pod_sample> ps;
    ps.reserve(pods.size());
    for (const auto& pod : pods) ps.push_back(sample_of(pod));
    std::vector<pod_metric_sample> ms;
    ms.reserve(m.pod_metrics.size());
    for (const auto& pm : m.pod_metrics) ms.push_back(sample_of(pm));
    node_metric_input header = m;
    header.pod_metrics.clear();
    header.pod_metrics.shrink_to_fit();
    c.pod_samples.push_back(std::move(ps));
    c.metric_samples.push_back(std::move(ms));
    c.metric_headers.push_back(std::move(header));
    c.nodes.push_back(std::move(node));
    c.pods.push_back(std::move(pods));
    c.metrics.push_back(std::move(m));
    node_extended_resources cur;
    cur.batch_cpu = pick(rng, 0, 50'000);
    cur.batch_memory = pick(rng, 0, 200) * gib;
    c.current.push_back(cur);
  }
  // Key ids as an actor assigns them: once, when a pod enters, and pods enter over time onto any
  // node, so a node's ids are scattered over the whole range (not consecutive, which would make
  // any multiplicative hash look collision-free). A metric's key is interned when its NodeMetric
  // is ingested and finds the pod's id.
  std::vector<std::pair<std::size_t, std::size_t>> arrival;
  for (std::size_t n = 0; n < c.pods.size(); ++n)
    for (std::size_t p = 0; p < c.pods[n].size(); ++p) arrival.emplace_back(n, p);
  std::shuffle(arrival.begin(), arrival.end(), rng);
  for (const auto& [n, p] : arrival) {
    auto& pod = c.pods[n][p];
    pod.key_id = keys.intern(pod.ns, pod.name);
    c.pod_samples[n][p].key_id = pod.key_id;
  }
  for (std::size_t n = 0; n < c.metrics.size(); ++n) {
    auto& pms = c.metrics[n].pod_metrics;
    for (std::size_t m = 0; m < pms.size(); ++m) {
      pms[m].key_id = keys.intern(pms[m].ns, pms[m].name);
      c.metric_samples[n][m].key_id = pms[m].key_id;
    }
  }
  return c;
}

COLONY_BENCH(
    "slo_controller.batch_round",
    "slo-controller batch/mid calculation, one round over 5,000 nodes x 110 pods (one core)") {
  const int nodes = ctx.quick() ? 500 : 5000;
  const int pods = 110;
  const event_time now{1'700'000'000'000};
  const cluster c = make_cluster(nodes, pods, now);
  calculator_scratch scratch;
  std::int64_t checksum = 0;
  std::size_t writes = 0;
  auto finish = [&](std::size_t i, const node_resource_result& r) {
    const auto p = prepare_node_resource(r, c.nodes[i]);
    const colocation_strategy& s = c.cfg.cluster;
    const auto d = need_sync(s, c.current[i], p.allocatable, event_time{now.value - 60'000}, now);
    checksum += r.batch_cpu_milli + r.batch_memory_bytes + r.mid_cpu_milli;
    writes += d.need_sync ? 1 : 0;
  };
  auto round = [&] {
    for (std::size_t i = 0; i < c.nodes.size(); ++i) {
      finish(i, reconcile_node_resource(c.cfg, c.nodes[i], c.pod_samples[i], &c.metric_headers[i],
                                        c.metric_samples[i], now, scratch));
    }
  };
  auto round_records = [&] {
    for (std::size_t i = 0; i < c.nodes.size(); ++i) {
      finish(i, reconcile_node_resource(c.cfg, c.nodes[i], c.pods[i], &c.metrics[i], now, scratch));
    }
  };
  // Thread CPU time besides wall time: on a shared machine wall time also counts time spent waiting
  // for a core.
  auto cpu_ms = [] {
    timespec ts{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return static_cast<double>(ts.tv_sec) * 1e3 + static_cast<double>(ts.tv_nsec) / 1e6;
  };
  const std::string size = ctx.quick() ? "500x110" : "5000x110";
  auto measure = [&](auto&& one_round, const std::string& name) {
    one_round();  // warm-up: page in inputs, size the scratch buffers
    std::vector<double> ms;
    std::vector<double> cpu;
    const int rounds = ctx.quick() ? 3 : 7;
    for (int k = 0; k < rounds; ++k) {
      const double c0 = cpu_ms();
      ms.push_back(colony::bench::seconds_of(one_round) * 1000.0);
      cpu.push_back(cpu_ms() - c0);
    }
    std::sort(ms.begin(), ms.end());
    std::sort(cpu.begin(), cpu.end());
    ctx.report(name, ms[ms.size() / 2], "ms");
    ctx.report(name + ".min", ms.front(), "ms");
    ctx.report(name + ".cpu", cpu[cpu.size() / 2], "ms");
    return ms[ms.size() / 2];
  };
  const double median = measure(round, "slo_controller.batch_round_" + size);
  ctx.report("slo_controller.nodes_per_s", static_cast<double>(nodes) / (median / 1000.0),
             "nodes/s");
  const std::int64_t samples_checksum = checksum;
  const std::size_t samples_writes = writes;
  checksum = 0;
  writes = 0;
  measure(round_records, "slo_controller.batch_round_" + size + ".records");
  // Both forms ran the same number of rounds over the same cluster: 1 when their sums agree.
  ctx.report("slo_controller.batch_round.forms_agree",
             checksum == samples_checksum && writes == samples_writes ? 1 : 0, "bool");
  colony::bench::do_not_optimize(checksum);
  colony::bench::do_not_optimize(writes);
}

}  // namespace
