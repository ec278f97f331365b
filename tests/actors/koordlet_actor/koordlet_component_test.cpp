// koordlet_component: one node's events in, BeSuppressed / PodEvicted / CgroupUpdated out.
// Values are checked against the pure policies over the same inputs; plus causation, reasons
// and inputs of evictions, determinism, and the strategies taken from the node's NodeSLOUpdated.
#include "actors/koordlet/actor/koordlet_component.hpp"

#include <algorithm>
#include <cmath>
#include <map>

#include <gtest/gtest.h>

#include "tests/actors/slo_controller_actor/event_log.hpp"
#include "tests/support/component_feed.hpp"
#include "tests/support/resources.hpp"
#include "tests/support/wire_terms.hpp"

namespace colony::koordlet_actor {
namespace {

using namespace colony::testing;  // event_log, cpu_mem, feed, decoded, ...
using messages::byte_buffer;
using messages::to_string_view;
namespace kl = koordlet;

// Node n1: 16 cores, 64 GiB; a prod LS pod and two BE pods placed on it; another node's pod
// admitted but placed elsewhere.
event_log scenario() {
  event_log log;
  log.node(0, "n1", cpu_mem(16000, 64 * gib), cpu_mem(16000, 64 * gib));
  log.mutated(1, "default/prod", wire::QoSClass::LS, wire::PriorityClass::Prod, 9500,
              cpu_mem(4000, 16 * gib), cpu_mem(4000, 16 * gib));
  log.mutated(2, "default/be-a", wire::QoSClass::BE, wire::PriorityClass::Batch, 5500,
              batch_req(2000, 8 * gib));
  log.mutated(3, "default/be-b", wire::QoSClass::BE, wire::PriorityClass::Batch, 5100,
              batch_req(2000, 8 * gib));
  log.mutated(4, "default/elsewhere", wire::QoSClass::BE, wire::PriorityClass::Batch, 5500,
              batch_req(1000, gib));
  log.scheduled(5, "default/prod", "n1", cpu_mem(4000, 16 * gib));
  log.scheduled(6, "default/be-a", "n1", batch_req(2000, 8 * gib));
  log.scheduled(7, "default/be-b", "n1", batch_req(2000, 8 * gib));
  log.scheduled(8, "default/elsewhere", "n2", batch_req(1000, gib));
  return log;
}

koordlet_options options() {
  koordlet_options o;
  o.node = "n1";
  o.threshold.enable = true;
  o.threshold.memory_evict_threshold_percent = 70;
  o.gates.be_memory_evict = true;
  return o;
}

TEST(KoordletComponent, MemoryPressureEvictsBEPodsInPolicyOrder) {
  auto log = scenario();
  koordlet_component c(options());
  EXPECT_EQ(c.name(), "koordlet/n1");
  auto out = feed(c, log);
  EXPECT_TRUE(out.empty());
  ASSERT_EQ(c.pods().size(), 3u);  // the pod placed on n2 is not kept
  // The policy over the same inputs, before the metric changes anything.
  auto pods = c.pods();
  const std::map<std::string, std::pair<std::int64_t, std::int64_t>> usage{
      {"prod", {3000, 14 * gib}}, {"be-a", {1500, 20 * gib}}, {"be-b", {1800, 16 * gib}}};
  for (auto& p : pods) {
    p.cpu_used_cores = static_cast<double>(usage.at(p.name).first) / 1000.0;
    p.memory_used_bytes = static_cast<double>(usage.at(p.name).second);
  }
  const auto node = c.node();
  const std::int64_t t = 60000, used = 55 * gib;  // 86 % of 64 GiB > 70 %
  kl::memory_evict_input in;
  in.node = &node;
  in.pods = pods;
  in.node_memory_used_bytes = static_cast<double>(used);
  const auto d = kl::memory_evict(in, c.threshold(), options().gates, {}, {}, event_time{t});
  ASSERT_TRUE(d.ran);
  ASSERT_FALSE(d.round.victims.empty());

  const auto from = log.records.size();
  const auto m = log.metric(t, "n1", 6300, used,
                            {{"default/prod", 3000, 14 * gib},
                             {"default/be-a", 1500, 20 * gib},
                             {"default/be-b", 1800, 16 * gib}});
  out = feed(c, log, from);
  std::vector<const wire::Envelope*> evictions;
  for (const auto& b : out)
    if (decoded(b).payload_type() == wire::Payload::PodEvicted) evictions.push_back(&decoded(b));
  ASSERT_EQ(evictions.size(), d.round.victims.size());
  resource_list released_so_far;
  for (std::size_t i = 0; i < evictions.size(); ++i) {
    const auto& v = d.round.victims[i];
    const auto& env = *evictions[i];
    EXPECT_EQ(env.causation(), static_cast<std::int64_t>(m));
    EXPECT_EQ(to_string_view(env.source()), "koordlet/n1");
    EXPECT_EQ(env.entity_kind(), wire::EntityKind::Pod);
    const auto& e = *env.payload_as_PodEvicted();
    EXPECT_EQ(to_string_view(e.pod()), "default/" + v.name);
    EXPECT_EQ(to_string_view(e.node()), "n1");
    EXPECT_EQ(e.reason(), wire::EvictionReason::MemoryEvict);
    EXPECT_EQ(to_string_view(e.message()), kl::evict_round::reason(v.feature));
    EXPECT_EQ(to_string_view(e.message()), "trigger by koordlet feature BEMemoryEvict");
    EXPECT_EQ(messages::to_resource_list(e.released()), pods[v.pod].requests);
    const auto terms = terms_of(e.inputs());
    released_so_far += v.released_used;
    EXPECT_EQ(terms.at("victimOrder"), static_cast<std::int64_t>(i + 1));
    EXPECT_EQ(terms.at("released"), v.released_used.memory_bytes);
    EXPECT_EQ(terms.at("releasedInRound"), released_so_far.memory_bytes);
    EXPECT_EQ(terms.at("toRelease"), d.tasks.front().to_release.memory_bytes);
    EXPECT_EQ(terms.at("nodeMemoryUsed"), used);
    EXPECT_EQ(terms.at("nodeMemoryCapacity"), 64 * gib);
    EXPECT_EQ(terms.at("memoryEvictThresholdPercent"), 70);
    EXPECT_EQ(terms.at("priority"), v.inputs.priority);
    EXPECT_EQ(terms.at("podUsed"), v.inputs.used);
  }
  // (86 - 68) % of 64 GiB = 11.5 GiB must go; BE pods go lowest priority first: be-b (5100,
  // 16 GiB) covers it alone, so be-a stays.
  ASSERT_EQ(evictions.size(), 1u);
  EXPECT_EQ(to_string_view(evictions[0]->payload_as_PodEvicted()->pod()), "default/be-b");
  // Within the cool-down (4 s) no new round runs; the evicted pod is not evicted twice.
  const auto from2 = log.records.size();
  log.metric(t + 1000, "n1", 6300, used, {});
  out = feed(c, log, from2);
  for (const auto& b : out) EXPECT_NE(decoded(b).payload_type(), wire::Payload::PodEvicted);
}

// An eviction the API refused (WriteFailed, as colony koordlet's sink appends it) puts the pod
// back: under the same pressure the next round evicts it again. Without the refusal the pod stays
// evicted, and its samples are not taken back.
TEST(KoordletComponent, AnEvictionTheApiRefusedPutsThePodBack) {
  const std::vector<std::pair<std::string, std::int64_t>> usage{
      {"default/prod", 14 * gib}, {"default/be-a", 20 * gib}, {"default/be-b", 16 * gib}};
  const std::int64_t used = 55 * gib;  // 86 % of 64 GiB > 70 %
  auto metric = [&](event_log& log, std::int64_t t) {
    return log.metric(t, "n1", 6300, used,
                      {{"default/prod", 3000, usage[0].second},
                       {"default/be-a", 1500, usage[1].second},
                       {"default/be-b", 1800, usage[2].second}});
  };
  auto evicted_pods = [](const std::vector<byte_buffer>& out) {
    std::vector<std::string> v;
    for (const auto& b : out)
      if (decoded(b).payload_type() == wire::Payload::PodEvicted)
        v.emplace_back(to_string_view(decoded(b).payload_as_PodEvicted()->pod()));
    return v;
  };
  for (const bool refused : {true, false}) {
    auto log = scenario();
    koordlet_component c(options());
    (void)feed(c, log);
    (void)metric(log, 60000);
    auto out = feed(c, log, log.records.size() - 1);
    ASSERT_EQ(evicted_pods(out), std::vector<std::string>{"default/be-b"}) << refused;
    // The decision comes back through the log, then (or not) the sink's failure.
    std::uint64_t eviction = 0;
    for (auto& b : out)
      if (decoded(b).payload_type() == wire::Payload::PodEvicted)
        eviction = log.append_bytes(std::move(b));
    if (refused) {
      messages::event_builder b;
      auto& fbb = b.fbb();
      const auto obj = fbb.CreateString("default/be-b");
      const auto msg = fbb.CreateString("eviction of pod default/be-b refused: HTTP 429");
      const auto wf = wire::CreateWriteFailed(fbb, wire::WriteKind::eviction, obj, 429, 3, msg);
      log.append_bytes(b.finish({event_time{60500}, wire::EntityKind::Pod, "default/be-b",
                                 static_cast<std::int64_t>(eviction), "koordlet-sink"},
                                wf));
    }
    const auto from = log.records.size();
    (void)metric(log, 90000);  // past the cool-down, the same pressure, be-b still running
    out = feed(c, log, from - (refused ? 2 : 1));
    const auto again = evicted_pods(out);
    if (refused) {
      EXPECT_EQ(again, std::vector<std::string>{"default/be-b"});
    } else {
      EXPECT_TRUE(std::find(again.begin(), again.end(), "default/be-b") == again.end());
    }
  }
}

// The batch allocatable a koordlet weighs: from the slo-controller's records on a log that has
// them (the sim, colony run's log), from the Node's status in a cluster (a node's own log holds
// only what the API server says), where a reset (no batch in the status) is 0 again.
TEST(KoordletComponent, BatchAllocatableComesFromTheNodeStatusInAClusterOnly) {
  for (const bool from_status : {false, true}) {
    auto o = options();
    o.batch_from_node_status = from_status;
    koordlet_component c(o);
    event_log log;
    resource_list alloc = cpu_mem(16000, 64 * gib);
    alloc.batch_cpu_milli = 9000;
    alloc.batch_memory_bytes = 30 * gib;
    log.node(0, "n1", cpu_mem(16000, 64 * gib), alloc);
    (void)feed(c, log);
    EXPECT_EQ(c.node().allocatable.batch_cpu_milli, from_status ? 9000 : 0) << from_status;
    EXPECT_EQ(c.node().allocatable.batch_memory_bytes, from_status ? 30 * gib : 0) << from_status;
    // The Node's status without batch resources (the slo-controller reset them).
    const auto from = log.records.size();
    log.node(10, "n1", cpu_mem(16000, 64 * gib), cpu_mem(16000, 64 * gib));
    (void)feed(c, log, from);
    EXPECT_EQ(c.node().allocatable.batch_cpu_milli, 0) << from_status;
    EXPECT_EQ(c.node().allocatable.cpu_milli, 16000);
  }
}

TEST(KoordletComponent, CpuSuppressEmitsThePolicyCpusetOnlyWhenItChanges) {
  auto log = scenario();
  auto opt = options();
  opt.gates.be_memory_evict = false;
  opt.gates.batch_resource = false;  // the BE pods' own cgroups: KoordletHooks tests
  koordlet_component c(opt);
  feed(c, log);
  auto pods = c.pods();
  for (auto& p : pods) {
    p.cpu_used_cores = p.name == "prod" ? 8.0 : 1.0;
    p.memory_used_bytes = static_cast<double>(gib);
  }
  const auto node = c.node();
  const auto procs = c.processors();
  ASSERT_EQ(procs.size(), 16u);
  kl::cpu_suppress_input in;
  in.node = &node;
  in.pods = pods;
  in.node_cpu_used_cores = 10.5;
  in.cpuset.processors = procs;
  const auto d = kl::suppress_be_cpu(in, c.threshold(), opt.gates, {});
  ASSERT_EQ(d.action, kl::suppress_action::cpuset);
  ASSERT_FALSE(d.cpuset.cpus.empty());

  const auto from = log.records.size();
  const auto m = log.metric(
      60000, "n1", 10500, 3 * gib,
      {{"default/prod", 8000, gib}, {"default/be-a", 1000, gib}, {"default/be-b", 1000, gib}});
  auto out = feed(c, log, from);
  ASSERT_EQ(out.size(), 1u);
  const auto& env = decoded(out[0]);
  ASSERT_EQ(env.payload_type(), wire::Payload::BeSuppressed);
  EXPECT_EQ(env.causation(), static_cast<std::int64_t>(m));
  EXPECT_EQ(env.entity_kind(), wire::EntityKind::Node);
  const auto& s = *env.payload_as_BeSuppressed();
  EXPECT_EQ(to_string_view(s.policy()), "cpuset");
  EXPECT_EQ(to_string_view(s.cpuset()), kl::format_cpuset(d.cpuset.cpus));
  EXPECT_EQ(s.be_cpu_milli(), std::max<std::int64_t>(0, d.suppress.suppress_milli));
  const auto terms = terms_of(s.inputs());
  // Schema v6: the policy's terms go by number, without unit or text, and a 0 is left out.
  std::size_t zero = 0;
  for (const auto& x : d.suppress.explain) {
    const auto want = static_cast<std::int64_t>(std::llround(x.value));
    if (want == 0 && !terms.count(std::string(x.name))) {
      ++zero;
      continue;
    }
    EXPECT_EQ(terms.at(std::string(x.name)), want) << x.name;
  }
  EXPECT_LT(zero, d.suppress.explain.size());
  for (const auto* t : *s.inputs()) {
    EXPECT_EQ(t->name(), nullptr) << messages::term_name(*t);
    EXPECT_EQ(t->unit(), nullptr) << messages::term_name(*t);
    EXPECT_EQ(t->text(), nullptr) << messages::term_name(*t);
    EXPECT_NE(kl::find_suppress_term(messages::term_name(*t)), nullptr) << messages::term_name(*t);
  }
  EXPECT_EQ(terms.at("targetCPUs"), d.cpuset.target_cpus);
  // The same usage again: the same cpuset, nothing new to write.
  const auto from2 = log.records.size();
  log.metric(
      61000, "n1", 10500, 3 * gib,
      {{"default/prod", 8000, gib}, {"default/be-a", 1000, gib}, {"default/be-b", 1000, gib}});
  out = feed(c, log, from2);
  EXPECT_TRUE(out.empty());
}

// A NodeSLOUpdated for `node` as the slo-controller emits it.
std::uint64_t node_slo(event_log& log, std::int64_t t, const std::string& node,
                       std::string_view spec) {
  auto& fbb = log.b.fbb();
  const auto s = fbb.CreateString(spec);
  return log.append(t, wire::EntityKind::Node, node, wire::CreateNodeSLOUpdated(fbb, s),
                    "slo-controller");
}

// The spec the slo-controller renders for an unlabelled node under this ConfigMap.
std::string rendered_spec(std::string_view configmap) {
  const auto u = slo_controller::update(std::nullopt, configmap);
  EXPECT_FALSE(u.error.has_value());
  return slo_controller::node_slo_renderer(u.in_force).spec_json({});
}

TEST(KoordletComponent, NodeSloSelectsCfsQuotaAndCpuBurst) {
  auto log = scenario();
  koordlet_options opt;
  opt.node = "n1";
  koordlet_component c(opt);
  const auto spec = rendered_spec(
      R"({"resource-threshold-config": "{\"clusterStrategy\": {\"enable\": true, \"cpuSuppressThresholdPercent\": 50, \"cpuSuppressPolicy\": \"cfsQuota\"}}",
          "cpu-burst-config": "{\"clusterStrategy\": {\"policy\": \"cpuBurstOnly\", \"cpuBurstPercent\": 200}}"})");
  // Another node's NodeSLO is not this koordlet's.
  node_slo(log, 9, "n2", rendered_spec("{}"));
  feed(c, log);
  EXPECT_FALSE(c.threshold().enable);
  const auto from0 = log.records.size();
  node_slo(log, 10, "n1", spec);
  feed(c, log, from0);
  ASSERT_TRUE(c.config_errors().empty()) << c.config_errors()[0].describe();
  EXPECT_TRUE(c.threshold().enable);
  EXPECT_EQ(c.threshold().cpu_suppress_policy, kl::cpu_suppress_policy_type::cfs_quota);
  EXPECT_EQ(c.threshold().cpu_suppress_threshold_percent, 50);
  ASSERT_TRUE(c.cpu_burst().config.policy);
  EXPECT_EQ(*c.cpu_burst().config.policy, kl::cpu_burst_policy::cpu_burst_only);

  const auto from = log.records.size();
  const auto m = log.metric(
      60000, "n1", 7000, 3 * gib,
      {{"default/prod", 4000, gib}, {"default/be-a", 1500, gib}, {"default/be-b", 1500, gib}});
  const auto out = feed(c, log, from);
  std::size_t suppressed = 0, cgroups = 0, batch = 0;
  for (const auto& b : out) {
    const auto& env = decoded(b);
    EXPECT_EQ(env.causation(), static_cast<std::int64_t>(m));
    if (env.payload_type() == wire::Payload::BeSuppressed) {
      ++suppressed;
      const auto& s = *env.payload_as_BeSuppressed();
      EXPECT_EQ(to_string_view(s.policy()), "cfsQuota");
      const auto terms = terms_of(s.inputs());
      auto pods = c.pods();
      const auto node = c.node();
      const auto be = kl::calculate_be_suppress_cpu(node, 7.0, pods, {}, {}, 50, std::nullopt);
      EXPECT_EQ(s.be_cpu_milli(), std::max<std::int64_t>(0, be.suppress_milli));
      const auto q = kl::adjust_by_cfs_quota(be.suppress_milli, 16000, kl::be_unset_quota);
      EXPECT_EQ(terms.at("cfsQuotaUs"), q.quota_us);
    }
    if (env.payload_type() == wire::Payload::CgroupUpdated) {
      const auto& g = *env.payload_as_CgroupUpdated();
      std::map<std::string, std::string> settings;
      for (const auto* kv : *g.settings())
        settings[std::string(to_string_view(kv->key()))] = std::string(to_string_view(kv->value()));
      if (settings.count("cpu.cfs_burst_us") == 0) {
        // BatchResource: suppression by cfsQuota owns the BE quota, so the pods' is -1.
        ++batch;
        EXPECT_NE(to_string_view(g.target()), "default/prod");
        EXPECT_EQ(settings.at("cpu.cfs_quota_us"), "-1");
        EXPECT_EQ(settings.at("cpu.shares"), "2048");
        continue;
      }
      ++cgroups;
      // Only the LS prod pod is burstable (BE is not); 4 cores x 200 % x 100000.
      EXPECT_EQ(to_string_view(g.target()), "default/prod");
      const auto pods = c.pods();
      const auto v = kl::apply_cpu_burst(pods.front().name == "prod" ? pods.front() : pods.back(),
                                         c.cpu_burst().config);
      EXPECT_EQ(settings.at("cpu.cfs_burst_us"), std::to_string(v.pod));
      EXPECT_EQ(settings.at("cpu.cfs_burst_us"), std::to_string(4 * 2 * 100000));
    }
  }
  EXPECT_EQ(suppressed, 1u);
  EXPECT_EQ(cgroups, 1u);
  EXPECT_EQ(batch, 2u);
}

TEST(KoordletComponent, AnUnreadableNodeSloKeepsTheStrategiesInForce) {
  auto log = scenario();
  koordlet_component c(options());
  node_slo(log, 10, "n1", R"({"resourceUsedThresholdWithBE":{"cpuSuppressThresholdPercent":"x"}})");
  feed(c, log);
  ASSERT_EQ(c.config_errors().size(), 1u);
  EXPECT_NE(c.config_errors()[0].describe().find("cpuSuppressThresholdPercent"), std::string::npos);
  EXPECT_TRUE(c.threshold().enable);  // options() in force still
  EXPECT_EQ(c.threshold().memory_evict_threshold_percent, 70);
}

TEST(KoordletComponent, SameEventsGiveSameBytes) {
  auto log = scenario();
  for (int i = 1; i <= 10; ++i)
    log.metric(60000 * i, "n1", 5000 + 800 * i, (40 + 2 * i) * gib,
               {{"default/prod", 3000 + 300 * i, 14 * gib},
                {"default/be-a", 1000, (10 + i) * gib},
                {"default/be-b", 1000 + 200 * i, (8 + i) * gib}});
  koordlet_component a(options()), b(options());
  const auto x = feed(a, log), y = feed(b, log);
  EXPECT_FALSE(x.empty());
  EXPECT_EQ(x, y);
}

TEST(KoordletComponent, IgnoresOtherNodesAndForgetsFinishedPods) {
  auto log = scenario();
  koordlet_component c(options());
  log.metric(60000, "n2", 15000, 63 * gib, {{"default/elsewhere", 1000, 60 * gib}});
  log.finished(61000, "default/be-b", "n1");
  const auto out = feed(c, log);
  EXPECT_TRUE(out.empty());
  ASSERT_EQ(c.pods().size(), 2u);
  EXPECT_FALSE(c.node_memory_used_bytes().has_value());  // n2's metric is not ours
}

}  // namespace
}  // namespace colony::koordlet_actor
