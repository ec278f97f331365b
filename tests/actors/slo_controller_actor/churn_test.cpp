// slo_controller_component under pod churn: thousands of pods created, mutated, finished and
// evicted, NodeMetrics listing live, dangling and duplicate keys, nodes removed and registered
// again, config changes. The component reads interned samples; every write it makes must equal the
// pod_input/pod_metric records path matched by namespace/name (key ids cleared), and its key
// interner must hold exactly the keys of live pod records and current pod metrics (bounded, and
// empty once the pods are gone and the NodeMetrics list none).
#include <cstdint>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include <cstdio>

#include "actors/slo_controller/actor/slo_controller_component.hpp"
#include "messages/terms.hpp"
#include "tests/actors/slo_controller_actor/event_log.hpp"

namespace colony::slo_controller_actor {
namespace {

using namespace colony::testing;  // event_log, cpu_mem, feed, decoded, ...
using messages::byte_buffer;
using messages::to_string_view;
namespace sc = slo_controller;

constexpr std::string_view churn_config =
    R"({"colocation-config": "{\"enable\": true, \"cpuReclaimThresholdPercent\": 70, \"memoryReclaimThresholdPercent\": 70, \"resourceDiffThreshold\": 0.01}"})";

std::uint64_t pick(std::mt19937_64& rng, std::uint64_t n) { return rng() % n; }

std::uint64_t evicted(event_log& log, std::int64_t t, const std::string& pod,
                      const std::string& node) {
  auto& fbb = log.b.fbb();
  const auto p = fbb.CreateString(pod);
  const auto n = fbb.CreateString(node);
  return log.append(t, wire::EntityKind::Pod, pod, wire::CreatePodEvicted(fbb, p, n));
}

std::uint64_t removed(event_log& log, std::int64_t t, const std::string& node) {
  auto& fbb = log.b.fbb();
  const auto n = fbb.CreateString(node);
  return log.append(t, wire::EntityKind::Node, node, wire::CreateNodeRemoved(fbb, n));
}

// The records path over the component's view, matched by name (key ids cleared).
void expect_write_equals_records_path(const slo_controller_component& c, const byte_buffer& b) {
  const auto& env = decoded(b);
  ASSERT_EQ(env.payload_type(), wire::Payload::NodeBatchResourceUpdated);
  const auto node = to_string_view(env.entity_key());
  auto v = c.view(node);
  ASSERT_TRUE(v.has_value()) << node;
  for (auto& p : v->pods) p.key_id = 0;
  if (v->metric)
    for (auto& m : v->metric->pod_metrics) m.key_id = 0;
  sc::calculator_scratch scratch;
  const auto r = sc::reconcile_node_resource(*c.config().colocation, v->node, v->pods,
                                             v->metric ? &*v->metric : nullptr,
                                             event_time{env.event_time_ms()}, scratch);
  const auto prepared = sc::prepare_node_resource(r, v->node);
  const auto& u = *env.payload_as_NodeBatchResourceUpdated();
  EXPECT_EQ(u.batch_cpu_milli(), prepared.allocatable.batch_cpu.value_or(0)) << node;
  EXPECT_EQ(u.batch_memory_bytes(), prepared.allocatable.batch_memory.value_or(0)) << node;
  EXPECT_EQ(u.mid_cpu_milli(), prepared.allocatable.mid_cpu.value_or(0)) << node;
  EXPECT_EQ(u.mid_memory_bytes(), prepared.allocatable.mid_memory.value_or(0)) << node;
  EXPECT_EQ(u.degraded(), r.degraded);
  // A repeat (schema v6) carries no formula terms: the complete record it names holds them.
  if (u.terms_as_of_ms() >= 0) return;
  // Every formula term, in order, with the records path's value (a numeric 0 is not written).
  std::vector<std::pair<std::string, std::int64_t>> want;
  for (const auto* x : {&r.batch_cpu, &r.batch_memory, &r.mid_cpu, &r.mid_memory}) {
    std::string_view res = x->resource;
    res.remove_prefix(std::string_view("kubernetes.io/").size());
    for (const auto& t : x->terms)
      if (t.value != 0 || (t.unit.empty() && !t.text.empty()))
        want.emplace_back(std::string(res) + "." + std::string(t.name), t.value);
  }
  ASSERT_GE(u.terms()->size(), want.size());
  for (std::size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(messages::term_name(*u.terms()->Get(static_cast<flatbuffers::uoffset_t>(i))),
              want[i].first);
    EXPECT_EQ(u.terms()->Get(static_cast<flatbuffers::uoffset_t>(i))->value(), want[i].second)
        << want[i].first;
  }
}

struct churn_state {
  std::map<std::string, std::string> live;                 // pod key -> node
  std::map<std::string, std::vector<std::string>> listed;  // node -> keys its NodeMetric lists
  std::set<std::string> registered;
  [[nodiscard]] std::size_t expected_keys() const {
    std::set<std::string> keys;
    for (const auto& [k, n] : live) keys.insert(k);
    for (const auto& [n, ks] : listed) keys.insert(ks.begin(), ks.end());
    return keys.size();
  }
};

TEST(SloControllerComponentChurn, InternerStaysBoundedAndWritesEqualTheRecordsPath) {
  constexpr int nodes = 12;
  constexpr int steps = 16000;
  std::mt19937_64 rng(20240611);
  slo_controller_component c({.configmap_json = std::string(churn_config)});
  ASSERT_TRUE(c.config_errors().empty());
  event_log log;
  churn_state st;
  std::vector<byte_buffer> out;
  std::uint64_t fed = 0;
  std::size_t writes = 0, max_keys = 0;
  // Feeds what was appended since the last call and checks every write and the interner.
  auto step = [&] {
    for (; fed < log.records.size(); ++fed) {
      const auto& env = log.at(fed);
      if (!c.wants(env.payload_type())) continue;
      out.clear();
      c.on_event(env, out);
      for (const auto& b : out) {
        // A registration's NodeSLO is node_slo_component_test.cpp's subject.
        if (decoded(b).payload_type() == wire::Payload::NodeSLOUpdated) continue;
        expect_write_equals_records_path(c, b);
        ++writes;
      }
    }
    ASSERT_EQ(c.interned_keys(), st.expected_keys());
    max_keys = std::max(max_keys, c.interned_keys());
  };
  auto node_name = [](std::uint64_t i) { return "n" + std::to_string(i); };
  auto register_node = [&](std::int64_t t, const std::string& n) {
    log.node(t, n, cpu_mem(64000, 256 * gib), cpu_mem(62000, 250 * gib));
    st.registered.insert(n);
  };
  for (int n = 0; n < nodes; ++n) register_node(0, node_name(static_cast<std::uint64_t>(n)));
  const wire::PriorityClass classes[] = {wire::PriorityClass::Prod, wire::PriorityClass::Mid,
                                         wire::PriorityClass::Batch, wire::PriorityClass::Free,
                                         wire::PriorityClass::None};
  const wire::QoSClass qoses[] = {wire::QoSClass::LS, wire::QoSClass::LSR, wire::QoSClass::LSE,
                                  wire::QoSClass::BE, wire::QoSClass::None};
  std::uint64_t created = 0, finished = 0;
  std::int64_t t = 1000;
  auto random_live = [&]() -> std::map<std::string, std::string>::iterator {
    auto it = st.live.begin();
    std::advance(it, static_cast<long>(pick(rng, st.live.size())));
    return it;
  };
  for (int s = 0; s < steps; ++s, t += 1000) {
    const auto action = pick(rng, 100);
    // A new pod, admitted then bound (about 150 live pods at a time).
    if ((action < 35 && st.live.size() < 150) || st.live.size() < 20) {
      const std::string key =
          "ns-" + std::to_string(created % 5) + "/pod-" + std::to_string(created);
      ++created;
      const auto req = cpu_mem(static_cast<std::int64_t>(100 + pick(rng, 4000)),
                               static_cast<std::int64_t>(1 + pick(rng, 8)) * gib);
      log.mutated(t, key, qoses[pick(rng, 5)], classes[pick(rng, 5)], 0, req);
      const auto node = node_name(pick(rng, nodes));
      log.scheduled(t, key, node, req);
      st.live[key] = node;
    } else if (action < 60) {  // a pod finishes or is evicted
      const auto it = random_live();
      if (pick(rng, 2) == 0) {
        log.finished(t, it->first, it->second);
      } else {
        evicted(log, t, it->first, it->second);
      }
      st.live.erase(it);
      ++finished;
    } else if (action < 68) {  // a pod's requests or classes change
      const auto it = random_live();
      log.mutated(t, it->first, qoses[pick(rng, 5)], classes[pick(rng, 5)], 0,
                  cpu_mem(static_cast<std::int64_t>(100 + pick(rng, 4000)), 2 * gib));
    } else if (action < 71) {  // bound again elsewhere: the pod moves
      const auto it = random_live();
      it->second = node_name(pick(rng, nodes));
      log.scheduled(t, it->first, it->second, cpu_mem(500, gib));
    } else if (action < 97) {  // a NodeMetric: most pods, some dangling keys, a duplicate
      const auto node = node_name(pick(rng, nodes));
      std::vector<event_log::pod_usage> pu;
      std::vector<std::string> keys;
      for (const auto& [k, n] : st.live) {
        if (n != node || pick(rng, 8) == 0) continue;
        pu.push_back({k, static_cast<std::int64_t>(pick(rng, 3000)),
                      static_cast<std::int64_t>(pick(rng, 6)) * gib, classes[pick(rng, 5)],
                      qoses[pick(rng, 5)]});
      }
      for (int d = 0; d < 2; ++d) {  // finished pods koordlet still reports, unknown pods
        const auto old = pick(rng, created + 10);
        pu.push_back({"ns-" + std::to_string(old % 5) + "/pod-" + std::to_string(old),
                      static_cast<std::int64_t>(pick(rng, 1000)), gib, classes[pick(rng, 5)]});
      }
      if (!pu.empty() && pick(rng, 4) == 0) pu.push_back(pu[pick(rng, pu.size())]);
      for (const auto& p : pu) keys.push_back(p.pod);
      log.metric(t, node, static_cast<std::int64_t>(8000 + pick(rng, 40000)),
                 static_cast<std::int64_t>(40 + pick(rng, 150)) * gib, pu,
                 cpu_mem(static_cast<std::int64_t>(pick(rng, 3000)), 2 * gib));
      if (st.registered.count(node)) st.listed[node] = std::move(keys);
    } else if (action < 99) {  // a node leaves (its pods stay, unbound) and comes back
      const auto node = node_name(pick(rng, nodes));
      removed(log, t, node);
      st.registered.erase(node);
      st.listed.erase(node);
      for (auto& [k, n] : st.live)
        if (n == node) n.clear();
      register_node(t, node);
    } else {  // a config change: every node reconciled
      log.config(
          t, config_kind_slo_controller,
          pick(rng, 2)
              ? churn_config
              : R"({"colocation-config": "{\"enable\": true, \"cpuReclaimThresholdPercent\": 55, \"resourceDiffThreshold\": 0.01}"})");
    }
    step();
    if (::testing::Test::HasFailure()) return;  // the first diverging step is enough
  }
  EXPECT_GT(created, 4000u);
  EXPECT_GT(finished, 3000u);
  EXPECT_GT(writes, 1000u);
  // Live pods + listed keys (a few finished or unknown ones), not every key ever seen.
  EXPECT_LT(max_keys, 300u);
  // Every pod goes and every node reports no pods: nothing is left interned.
  for (const auto& [k, n] : std::map<std::string, std::string>(st.live)) log.finished(t, k, n);
  st.live.clear();
  step();
  for (int n = 0; n < nodes; ++n)
    log.metric(t += 1000, node_name(static_cast<std::uint64_t>(n)), 1000, gib, {});
  st.listed.clear();
  step();
  EXPECT_EQ(c.interned_keys(), 0u);
}

// A NodeMetric whose status.updateTime is `updated` (earlier than the event time t: a stale
// report, degraded after degradeTimeMinutes).
std::uint64_t stale_metric(event_log& log, std::int64_t t, std::int64_t updated,
                           const std::string& node) {
  auto& fbb = log.b.fbb();
  const auto nuo = log.b.resources(cpu_mem(0, 0));
  const auto suo = log.b.resources(cpu_mem(0, 0));
  const auto pv = fbb.CreateVector(std::vector<flatbuffers::Offset<wire::PodMetric>>{});
  const auto n = fbb.CreateString(node);
  return log.append(
      t, wire::EntityKind::Node, node,
      wire::CreateNodeMetricReported(fbb, n, updated, 300000, 60000, nuo, suo, 0, 0, pv, 0),
      "koordlet");
}

// The idle-node cache changes nothing: two components, one with the cache and one without, fed
// the same churn stream (their own writes appended back to the log, as in a cluster) emit the
// same bytes at every step. The stream keeps many nodes idle (no pod, NodeMetrics with no pod
// and a few usage values) and changes everything the cache depends on: pods bound and gone,
// usage, system usage, stale (degraded) metrics, node re-registration with other capacity or
// labels, config changes that do and do not change the colocation config.
TEST(SloControllerComponentChurn, IdleNodeCacheGivesTheSameBytes) {
  constexpr int nodes = 24;
  constexpr int steps = 8000;
  std::mt19937_64 rng(20250107);
  slo_controller_component cached({.configmap_json = std::string(churn_config)});
  slo_controller_component plain(
      {.configmap_json = std::string(churn_config), .cache_idle_nodes = false});
  event_log log;
  std::vector<byte_buffer> out_cached, out_plain;
  std::uint64_t fed = 0;
  std::size_t writes = 0;
  auto step = [&] {
    for (; fed < log.records.size(); ++fed) {
      const auto& env = log.at(fed);
      out_cached.clear();
      out_plain.clear();
      if (cached.wants(env.payload_type())) cached.on_event(env, out_cached);
      if (plain.wants(env.payload_type())) plain.on_event(env, out_plain);
      ASSERT_EQ(out_cached.size(), out_plain.size()) << "offset " << fed;
      for (std::size_t i = 0; i < out_cached.size(); ++i)
        ASSERT_EQ(out_cached[i], out_plain[i]) << "offset " << fed << " output " << i;
      writes += out_cached.size();
      // The writes come back through the log (need_sync's last write).
      for (auto& b : out_cached) log.append_bytes(std::move(b));
    }
  };
  auto node_name = [](std::uint64_t i) { return "n" + std::to_string(i); };
  auto register_node = [&](std::int64_t t, const std::string& n, std::int64_t cpu,
                           const std::string& pool) {
    log.node(t, n, cpu_mem(cpu, 256 * gib), cpu_mem(cpu - 2000, 250 * gib), {{"pool", pool}});
  };
  for (int n = 0; n < nodes; ++n)
    register_node(0, node_name(static_cast<std::uint64_t>(n)), 64000, "a");
  std::map<std::string, std::string> live;  // pod -> node (only on the first 8 nodes)
  std::uint64_t created = 0;
  const std::int64_t usages[] = {0, 0, 0, 1500};
  const std::int64_t systems[] = {0, 0, 800};
  std::int64_t t = 1000;
  for (int s = 0; s < steps; ++s, t += 1000) {
    const auto action = pick(rng, 100);
    if (action < 50) {  // an idle-looking report: no pod, usage from a few values
      const auto node = node_name(pick(rng, nodes));
      bool has_pods = false;
      std::vector<event_log::pod_usage> pu;
      for (const auto& [k, n] : live)
        if (n == node) {
          has_pods = true;
          pu.push_back({k, 500, gib, wire::PriorityClass::Prod, wire::QoSClass::LS});
        }
      log.metric(t, node, has_pods ? 4000 : usages[pick(rng, 4)], has_pods ? 8 * gib : 0, pu,
                 cpu_mem(systems[pick(rng, 3)], 0));
    } else if (action < 62 && live.size() < 20) {  // a pod bound to one of the first 8 nodes
      const std::string key = "ns/pod-" + std::to_string(created++);
      const auto req = cpu_mem(static_cast<std::int64_t>(500 + pick(rng, 3000)), 2 * gib);
      log.mutated(t, key, wire::QoSClass::LS, wire::PriorityClass::Prod, 0, req);
      const auto node = node_name(pick(rng, 8));
      log.scheduled(t, key, node, req);
      live[key] = node;
    } else if (action < 75 && !live.empty()) {  // a pod goes: its node may be idle again
      auto it = live.begin();
      std::advance(it, static_cast<long>(pick(rng, live.size())));
      log.finished(t, it->first, it->second);
      live.erase(it);
    } else if (action < 80) {  // a stale report (degraded: updateTime 20 min back)
      stale_metric(log, t, t - 20 * 60 * 1000 - static_cast<std::int64_t>(pick(rng, 5)) * 1000,
                   node_name(pick(rng, nodes)));
    } else if (action < 83) {  // re-registered with other capacity or labels
      const auto node = node_name(pick(rng, nodes));
      register_node(t, node, pick(rng, 2) ? 64000 : 48000, pick(rng, 2) ? "a" : "b");
    } else if (action < 84) {  // a config change (sometimes the same colocation config)
      const auto k = pick(rng, 3);
      log.config(
          t, config_kind_slo_controller,
          k == 0 ? churn_config
          : k == 1
              ? R"({"colocation-config": "{\"enable\": true, \"cpuReclaimThresholdPercent\": 55, \"resourceDiffThreshold\": 0.01}"})"
              : R"({"colocation-config": "{\"enable\": true, \"cpuReclaimThresholdPercent\": 55, \"resourceDiffThreshold\": 0.01, \"nodeConfigs\": [{\"name\": \"b-pool\", \"nodeSelector\": {\"matchLabels\": {\"pool\": \"b\"}}, \"cpuReclaimThresholdPercent\": 40}]}"})");
    } else {  // time passes: the next report is later than the update-time threshold
      t += 60'000;
    }
    step();
    if (::testing::Test::HasFailure()) return;
  }
  // With this seed: 995 of the reconciles come from the cache.
  EXPECT_GT(writes, 500u);
  EXPECT_GT(cached.idle_cache_hits(), 900u);
  // Some of the cached writes reused their node's last record (time and causation rewritten),
  // and were still byte for byte what the uncached component built.
  EXPECT_GT(cached.record_reuses(), 0u);
  EXPECT_EQ(plain.record_reuses(), 0u);
  std::printf("idle cache hits %llu, record reuses %llu\n",
              static_cast<unsigned long long>(cached.idle_cache_hits()),
              static_cast<unsigned long long>(cached.record_reuses()));

  EXPECT_EQ(plain.idle_cache_hits(), 0u);
}

}  // namespace
}  // namespace colony::slo_controller_actor
