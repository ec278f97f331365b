// koordlet benchmarks: the per-node decisions of one QoS tick (CPU suppress + memory evict +
// CPU evict) and the NodeMetric report of one node. Inputs come from a fixed seed.
#include <cstdint>
#include <random>
#include <vector>

#include "actors/koordlet/cpu_evict.hpp"
#include "actors/koordlet/cpu_suppress.hpp"
#include "actors/koordlet/memory_evict.hpp"
#include "actors/koordlet/node_metric.hpp"
#include "bench/registry.hpp"

namespace {

using namespace colony;
using namespace colony::koordlet;

struct node_case {
  node_info node;
  std::vector<pod_info> pods;
  std::vector<processor_info> procs;
  std::vector<std::int32_t> old_cpuset;
  double node_cpu = 0;
  double node_mem = 0;
  be_cpu_window be;
};

std::uint64_t draw(std::mt19937_64& e, std::uint64_t n) { return e() % n; }

// A 64-CPU, 256 GiB node with 40 pods: LS/LSR online pods and BE batch pods.
node_case make_case(std::mt19937_64& e) {
  node_case c;
  c.node.name = "node";
  c.node.capacity.cpu_milli = 64000;
  c.node.capacity.memory_bytes = 256 * gib;
  c.node.allocatable = c.node.capacity;
  c.node.allocatable.batch_cpu_milli = 20000;
  c.node.allocatable.batch_memory_bytes = 64 * gib;
  c.node.reserved_cpu_milli = 1000;
  for (std::int32_t i = 0; i < 64; ++i) c.procs.push_back({i, i / 2, i / 32, i / 32});
  for (std::int32_t i = 0; i < 24; ++i) c.old_cpuset.push_back(i);
  double pod_cpu = 0, pod_mem = 0;
  for (int i = 0; i < 40; ++i) {
    pod_info p;
    p.ns = i % 2 ? "online" : "batch";
    p.name = "pod-" + std::to_string(i);
    p.uid = "uid-" + std::to_string(i);
    const bool be = i % 3 == 0;
    p.qos = be ? qos_class::be : (i % 5 == 0 ? qos_class::lsr : qos_class::ls);
    p.priority = be ? 5500 : 9500;
    p.eviction_enabled = be;
    p.containers.push_back({"main", {}, {}});
    if (be) {
      p.containers[0].requests.batch_cpu_milli = 1000 + std::int64_t(draw(e, 3000));
      p.containers[0].requests.batch_memory_bytes = (1 + std::int64_t(draw(e, 4))) * gib;
    } else {
      p.requests.cpu_milli = 2000;
      p.requests.memory_bytes = 4 * gib;
    }
    p.cpu_used_cores = double(draw(e, 3000)) / 1000;
    p.memory_used_bytes = double((1 + draw(e, 6)) * gib);
    pod_cpu += *p.cpu_used_cores;
    pod_mem += *p.memory_used_bytes;
    c.pods.push_back(std::move(p));
  }
  c.node_cpu = pod_cpu + 2.0;
  c.node_mem =
      pod_mem + double(8 * gib) + double(draw(e, 64)) * double(gib);  // some nodes cross 70 %
  c.be = {60, 9000, 30000, 20000, 9500, 30000, 20000};
  return c;
}

COLONY_BENCH("koordlet.decide",
             "CPU suppress + memory evict + CPU evict decisions per node per tick") {
  std::mt19937_64 e(42);
  const int nodes = ctx.quick() ? 64 : 512;
  const int rounds = ctx.quick() ? 20 : 200;
  std::vector<node_case> cases;
  for (int i = 0; i < nodes; ++i) cases.push_back(make_case(e));
  resource_threshold_strategy cfg;
  cfg.enable = true;
  cfg.cpu_evict_be_satisfaction_lower_percent = 30;
  cfg.cpu_evict_be_satisfaction_upper_percent = 40;
  koordlet_feature_gates gates;
  gates.be_memory_evict = true;
  gates.be_cpu_evict = true;
  qos_manager_timing timing;
  std::int64_t sink = 0;
  const double s = bench::seconds_of([&] {
    for (int r = 0; r < rounds; ++r) {
      const event_time now{100000 + std::int64_t(r) * 1000};
      for (auto& c : cases) {
        cpu_suppress_input in;
        in.node = &c.node;
        in.pods = c.pods;
        in.node_cpu_used_cores = c.node_cpu;
        in.cpuset = {c.procs, c.old_cpuset, {}, {}};
        auto sup = suppress_be_cpu(in, cfg, gates, {});
        auto mem = memory_evict({&c.node, c.pods, c.node_mem}, cfg, gates, timing, {}, now);
        cpu_evict_input ci;
        ci.node = &c.node;
        ci.pods = c.pods;
        ci.be = c.be;
        auto cpu = cpu_evict(ci, cfg, gates, timing, {}, now);
        sink += sup.suppress.suppress_milli + std::int64_t(mem.round.victims.size()) +
                std::int64_t(cpu.round.victims.size());
      }
    }
  });
  bench::do_not_optimize(sink);
  ctx.report("koordlet.decide_per_node", s * 1e9 / (double(nodes) * rounds), "ns");
}

COLONY_BENCH("koordlet.node_metric",
             "NodeMetric report building per node (30 min of 1 s node samples, 40 pods)") {
  std::mt19937_64 e(7);
  const int nodes = ctx.quick() ? 2 : 8;
  const int reports = ctx.quick() ? 3 : 10;
  std::vector<sample_window> windows(static_cast<std::size_t>(nodes));
  std::vector<pod_info> pods;
  for (int i = 0; i < 40; ++i) {
    pod_info p;
    p.ns = "default";
    p.name = "pod-" + std::to_string(i);
    p.uid = "uid-" + std::to_string(i);
    p.qos = i % 3 ? qos_class::ls : qos_class::be;
    pods.push_back(p);
  }
  const std::int64_t horizon = 1800;
  for (auto& w : windows) {
    std::vector<usage_sample> tick(pods.size());
    for (std::int64_t t = 0; t <= horizon; ++t) {
      const event_time at{t * 1000};
      for (std::size_t i = 0; i < pods.size(); ++i) {
        tick[i] = {at, double(draw(e, 2000)) / 1000, double(draw(e, 4 * gib))};
        if (t >= horizon - 300) w.add_pod(pods[i].uid, tick[i]);
      }
      w.add_node_and_system(
          {at, 30 + double(draw(e, 20000)) / 1000, double(100 * gib + draw(e, 50 * gib))}, tick,
          {});
    }
  }
  node_metric_collect_policy policy;
  std::int64_t sink = 0;
  const double s = bench::seconds_of([&] {
    for (int r = 0; r < reports; ++r)
      for (auto& w : windows) {
        auto st = build_node_metric_status(w, pods, {}, policy, event_time{horizon * 1000});
        sink += st.node_metric.node_usage ? st.node_metric.node_usage->cpu_milli : 0;
        sink += std::int64_t(st.pods_metric.size());
      }
  });
  bench::do_not_optimize(sink);
  ctx.report("koordlet.node_metric_report_per_node", s * 1e9 / (double(nodes) * reports), "ns");
}

}  // namespace
