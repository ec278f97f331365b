// slo_controller.component_round: the slo-controller COMPONENT (actors/slo_controller/actor) over a
// cluster of 5,000 nodes x 110 pods (quick: 500 x 110) delivered as events: NodeRegistered, then
// per pod PodMutated + PodScheduled, then one NodeMetricReported per node (110 pod metrics, in an
// order other than the pods'). Building that state is not timed. Then two kinds of round, timed on
// one thread (median of several; thread-CPU besides wall time, since the box is shared):
//   .config_round  a ConfigUpdated whose colocation-config changed: every node is reconciled
//                  (strategy, mid/batch formulas, prepare, need_sync, NodeBatchResourceUpdated
//                  with every term when the write threshold is crossed — the thresholds alternate
//                  so every node writes);
//   .metric_round  one NodeMetricReported per node (the next koordlet report): decode the metric,
//                  match its pod keys, reconcile the node (writes only past the thresholds).
//   .idle_metric_round  the same number of nodes with no pod, each reporting a NodeMetric with
//                  no pod and zero usage (the sim's empty nodes): answered from the idle-node
//                  cache; .idle_metric_round_nocache is the same with cache_idle_nodes = false.
// Figures: median wall ms, median thread-CPU ms (".cpu"), and events written per round.
#include <algorithm>
#include <cstdint>
#include <ctime>
#include <random>
#include <string>
#include <vector>

#include "actors/slo_controller/actor/slo_controller_component.hpp"
#include "bench/registry.hpp"
#include "messages/codec.hpp"

namespace {

using namespace colony;
using messages::byte_buffer;

std::int64_t pick(std::mt19937_64& rng, std::int64_t lo, std::int64_t hi) {
  return lo + static_cast<std::int64_t>(rng() % static_cast<std::uint64_t>(hi - lo + 1));
}

resource_list cpu_mem(std::int64_t cpu, std::int64_t mem) {
  resource_list r;
  r.cpu_milli = cpu;
  r.memory_bytes = mem;
  return r;
}

// Encodes events with consecutive offsets, as the log assigns them.
struct event_source {
  messages::event_builder b;
  std::uint64_t next = 0;

  template <class T>
  byte_buffer make(std::int64_t t, wire::EntityKind kind, std::string_view key,
                   flatbuffers::Offset<T> payload) {
    messages::header h;
    h.time = event_time{t};
    h.kind = kind;
    h.key = key;
    h.source = "bench";
    auto bytes = b.finish(h, payload);
    if (!messages::patch_offset(bytes, log_offset{next++})) bytes.clear();
    return bytes;
  }
  byte_buffer node(const std::string& name, resource_list cap, resource_list alloc,
                   const std::vector<std::pair<std::string, std::string>>& labels) {
    auto& fbb = b.fbb();
    const auto c = b.resources(cap);
    const auto a = b.resources(alloc);
    const auto l = b.key_values(labels);
    const auto n = fbb.CreateString(name);
    return make(0, wire::EntityKind::Node, name,
                wire::CreateNodeRegistered(fbb, n, c, a, l, 0, 0, false));
  }
  byte_buffer mutated(const std::string& pod, wire::QoSClass qos, wire::PriorityClass pc,
                      resource_list req) {
    auto& fbb = b.fbb();
    const auto r = b.resources(req);
    const auto li = b.resources(req);
    const auto l = b.key_values({});
    const auto n = fbb.CreateString(pod);
    return make(1, wire::EntityKind::Pod, pod,
                wire::CreatePodMutated(fbb, n, 0, qos, pc, 0, 0, 0, r, li, l, 0));
  }
  byte_buffer scheduled(const std::string& pod, const std::string& node, resource_list req) {
    auto& fbb = b.fbb();
    const auto r = b.resources(req);
    const auto p = fbb.CreateString(pod);
    const auto n = fbb.CreateString(node);
    return make(2, wire::EntityKind::Node, node, wire::CreatePodScheduled(fbb, p, n, -1, r, 0, 0));
  }
  struct pod_usage {
    std::string pod;
    resource_list usage;
    wire::PriorityClass pc = wire::PriorityClass::None;
    wire::QoSClass qos = wire::QoSClass::None;
  };
  byte_buffer metric(std::int64_t t, const std::string& node, resource_list node_usage,
                     const std::vector<pod_usage>& pods, resource_list system) {
    auto& fbb = b.fbb();
    std::vector<flatbuffers::Offset<wire::PodMetric>> pms;
    pms.reserve(pods.size());
    for (const auto& p : pods) {
      const auto ru = b.resources(p.usage);
      const auto pn = fbb.CreateString(p.pod);
      pms.push_back(wire::CreatePodMetric(fbb, pn, ru, p.pc, p.qos));
    }
    const auto pv = fbb.CreateVector(pms);
    const auto nuo = b.resources(node_usage);
    const auto suo = b.resources(system);
    const auto n = fbb.CreateString(node);
    return make(t, wire::EntityKind::Node, node,
                wire::CreateNodeMetricReported(fbb, n, t, 300000, 60000, nuo, suo, 0, 0, pv, 0));
  }
  byte_buffer config(std::int64_t t, std::string_view spec) {
    auto& fbb = b.fbb();
    const auto k = fbb.CreateString(slo_controller_actor::config_kind_slo_controller);
    const auto n = fbb.CreateString("koordinator-system/slo-controller-config");
    const auto s = fbb.CreateString(spec);
    return make(t, wire::EntityKind::Cluster, "slo-controller",
                wire::CreateConfigUpdated(fbb, k, n, s, false));
  }
};

std::string config_json(int cpu_percent) {
  return R"({"colocation-config": "{\"enable\": true, \"cpuReclaimThresholdPercent\": )" +
         std::to_string(cpu_percent) +
         R"(, \"memoryReclaimThresholdPercent\": 65, \"resourceDiffThreshold\": 0.01}"})";
}

double thread_cpu_ms() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) * 1e3 + static_cast<double>(ts.tv_nsec) / 1e6;
}

// Delivers one event (decoded from its bytes, as the actor shell does); emitted events go to out.
bool deliver(slo_controller_actor::slo_controller_component& c, const byte_buffer& bytes,
             std::vector<byte_buffer>& out) {
  auto d = messages::decode(bytes, "bench");
  if (!d) return false;
  if (c.wants(d->type())) c.on_event(*d->envelope, out);
  return true;
}

}  // namespace

COLONY_BENCH("slo_controller.component_round",
             "slo-controller component: every node reconciled (config change) and one NodeMetric "
             "per node, 5,000 nodes x 110 pods delivered as events (one core)") {
  const int nodes = ctx.quick() ? 500 : 5000;
  const int pods_per_node = 110;
  const std::string size = ctx.quick() ? "500x110" : "5000x110";
  std::mt19937_64 rng(42);
  event_source src;
  slo_controller_actor::slo_controller_component c({.configmap_json = config_json(60)});
  std::vector<byte_buffer> out;
  bool ok = true;
  const wire::PriorityClass classes[] = {wire::PriorityClass::Prod, wire::PriorityClass::Prod,
                                         wire::PriorityClass::Mid, wire::PriorityClass::Batch,
                                         wire::PriorityClass::Free};
  const wire::QoSClass qoses[] = {wire::QoSClass::LS, wire::QoSClass::LSR, wire::QoSClass::LSE,
                                  wire::QoSClass::BE};
  struct pod_info {
    std::string key;
    wire::PriorityClass pc;
    wire::QoSClass qos;
  };
  std::vector<std::vector<pod_info>> pods(static_cast<std::size_t>(nodes));
  for (int n = 0; n < nodes; ++n) {
    const std::string name = "node-" + std::to_string(n);
    ok = ok && deliver(c,
                       src.node(name, cpu_mem(96000, 384 * gib), cpu_mem(94000, 370 * gib),
                                {{"kubernetes.io/hostname", name}}),
                       out);
    for (int p = 0; p < pods_per_node; ++p) {
      pod_info pi{"ns-" + std::to_string(p % 7) + "/" + name + "-pod-" + std::to_string(p),
                  classes[rng() % 5], qoses[rng() % 4]};
      const auto req = cpu_mem(pick(rng, 50, 1500), pick(rng, 64, 4096) * mib);
      ok = ok && deliver(c, src.mutated(pi.key, pi.qos, pi.pc, req), out);
      ok = ok && deliver(c, src.scheduled(pi.key, name, req), out);
      pods[static_cast<std::size_t>(n)].push_back(std::move(pi));
    }
  }
  // One koordlet report per node (10 % of pods without a metric yet, koordlet's order).
  auto metrics_at = [&](std::int64_t t) {
    std::vector<byte_buffer> round;
    round.reserve(static_cast<std::size_t>(nodes));
    for (int n = 0; n < nodes; ++n) {
      std::vector<event_source::pod_usage> pu;
      for (const auto& pi : pods[static_cast<std::size_t>(n)])
        if (rng() % 10 != 0)
          pu.push_back(
              {pi.key, cpu_mem(pick(rng, 0, 1500), pick(rng, 32, 4096) * mib), pi.pc, pi.qos});
      std::shuffle(pu.begin(), pu.end(), rng);
      round.push_back(src.metric(t, "node-" + std::to_string(n),
                                 cpu_mem(pick(rng, 10'000, 90'000), pick(rng, 50, 350) * gib), pu,
                                 cpu_mem(pick(rng, 1000, 6000), pick(rng, 4, 20) * gib)));
    }
    return round;
  };
  std::int64_t t = 60'000;
  for (const auto& m : metrics_at(t)) ok = ok && deliver(c, m, out);
  out.clear();

  auto measure = [&](auto&& one_round, const std::string& name) {
    std::vector<double> ms, cpu;
    std::size_t written = 0;
    const int rounds = ctx.quick() ? 3 : 7;
    for (int k = 0; k < rounds; ++k) {
      const double c0 = thread_cpu_ms();
      ms.push_back(colony::bench::seconds_of(one_round) * 1000.0);
      cpu.push_back(thread_cpu_ms() - c0);
      written = out.size();
      out.clear();
    }
    std::sort(ms.begin(), ms.end());
    std::sort(cpu.begin(), cpu.end());
    ctx.report(name, ms[ms.size() / 2], "ms");
    ctx.report(name + ".cpu", cpu[cpu.size() / 2], "ms");
    ctx.report(name + ".written", static_cast<double>(written), "events");
  };

  // Config rounds: the cpu threshold alternates, so every node is reconciled and written.
  std::vector<byte_buffer> configs;
  for (int k = 0; k < 8; ++k)
    configs.push_back(src.config(t + 1 + k, config_json(k % 2 ? 60 : 70)));
  std::size_t next_config = 0;
  measure([&] { ok = ok && deliver(c, configs[next_config++ % configs.size()], out); },
          "slo_controller.component_round_" + size + ".config_round");

  // Metric rounds: a fresh report per node each round, built before the timing.
  std::vector<std::vector<byte_buffer>> reports;
  for (int k = 0; k < (ctx.quick() ? 3 : 7); ++k) reports.push_back(metrics_at(t += 60'000));
  std::size_t next_report = 0;
  measure(
      [&] {
        for (const auto& m : reports[next_report]) ok = ok && deliver(c, m, out);
        ++next_report;
      },
      "slo_controller.component_round_" + size + ".metric_round");

  // Idle rounds: every node empty, every report the same but for its time (the idle-node
  // cache's case), with and without the cache; update-time threshold crossed every other round
  // so about half the rounds write.
  for (const bool cache : {true, false}) {
    slo_controller_actor::slo_controller_component idle(
        {.configmap_json = config_json(60), .cache_idle_nodes = cache});
    event_source isrc;
    for (int n = 0; n < nodes; ++n) {
      const std::string name = "node-" + std::to_string(n);
      ok = ok && deliver(idle,
                         isrc.node(name, cpu_mem(96000, 384 * gib), cpu_mem(94000, 370 * gib),
                                   {{"kubernetes.io/hostname", name}}),
                         out);
    }
    std::int64_t it = 60'000;
    auto idle_reports = [&] {
      std::vector<byte_buffer> round;
      round.reserve(static_cast<std::size_t>(nodes));
      for (int n = 0; n < nodes; ++n)
        round.push_back(
            isrc.metric(it, "node-" + std::to_string(n), cpu_mem(0, 0), {}, cpu_mem(0, 0)));
      return round;
    };
    for (const auto& m : idle_reports()) ok = ok && deliver(idle, m, out);
    out.clear();
    std::vector<std::vector<byte_buffer>> idle_rounds;
    for (int k = 0; k < (ctx.quick() ? 3 : 7); ++k) {
      it += 180'000;
      idle_rounds.push_back(idle_reports());
    }
    std::size_t next_idle = 0;
    measure(
        [&] {
          for (const auto& m : idle_rounds[next_idle]) ok = ok && deliver(idle, m, out);
          ++next_idle;
        },
        "slo_controller.component_round_" + size + ".idle_metric_round" +
            (cache ? "" : "_nocache"));
    if (cache) ok = ok && idle.idle_cache_hits() > 0;
  }
  ctx.report("slo_controller.component_round.ok", ok ? 1 : 0, "bool");
}
