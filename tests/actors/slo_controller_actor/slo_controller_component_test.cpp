// slo_controller_component: envelopes in, NodeBatchResourceUpdated out. Values are checked
// against the pure policy (reconcile_node_resource + prepare + need_sync) over the component's
// own inputs; plus causation, the write threshold, config errors and determinism.
#include "actors/slo_controller/actor/slo_controller_component.hpp"

#include <map>

#include <gtest/gtest.h>

#include "messages/terms.hpp"
#include "tests/actors/slo_controller_actor/event_log.hpp"
#include "tests/support/component_feed.hpp"

namespace colony::slo_controller_actor {
namespace {

using namespace colony::testing;  // event_log, cpu_mem, feed, decoded, ...
using messages::byte_buffer;
using messages::to_string_view;
namespace sc = slo_controller;

constexpr std::string_view enabled_config =
    R"({"colocation-config": "{\"enable\": true, \"cpuReclaimThresholdPercent\": 60, \"memoryReclaimThresholdPercent\": 65}"})";

// What the component emitted, without the NodeSLOUpdated records that registrations and config
// changes also bring (node_slo_component_test.cpp checks those): this file is about
// NodeBatchResourceUpdated.
template <class Log>
std::vector<byte_buffer> feed_resources(slo_controller_component& c, const Log& log,
                                        std::uint64_t from = 0) {
  auto out = feed(c, log, from);
  std::erase_if(out, [](const byte_buffer& b) {
    return wire::GetEnvelope(b.data())->payload_type() == wire::Payload::NodeSLOUpdated;
  });
  return out;
}

// Recomputes the policy over the component's inputs for `node` at `now`.
struct expected {
  sc::node_resource_result r;
  sc::prepared_node_resources prepared;
};
expected policy(const slo_controller_component& c, std::string_view node, std::int64_t now) {
  const auto v = c.view(node);
  EXPECT_TRUE(v.has_value());
  sc::calculator_scratch scratch;
  expected e;
  e.r = sc::reconcile_node_resource(*c.config().colocation, v->node, v->pods,
                                    v->metric ? &*v->metric : nullptr, event_time{now}, scratch);
  e.prepared = sc::prepare_node_resource(e.r, v->node);
  return e;
}

std::map<std::string, std::int64_t> numeric_terms(const wire::NodeBatchResourceUpdated& u) {
  std::map<std::string, std::int64_t> m;
  for (const auto* t : *u.terms()) m[messages::term_name(*t)] = t->value();
  return m;
}

void expect_update_matches(const slo_controller_component& c, const byte_buffer& emitted,
                           std::string_view node, std::int64_t now, std::uint64_t cause) {
  const auto& env = decoded(emitted);
  ASSERT_EQ(env.payload_type(), wire::Payload::NodeBatchResourceUpdated);
  EXPECT_EQ(env.causation(), static_cast<std::int64_t>(cause));
  EXPECT_EQ(env.entity_kind(), wire::EntityKind::Node);
  EXPECT_EQ(to_string_view(env.entity_key()), node);
  EXPECT_EQ(to_string_view(env.source()), "slo-controller");
  EXPECT_EQ(env.event_time_ms(), now);
  const auto e = policy(c, node, now);
  const auto& u = *env.payload_as_NodeBatchResourceUpdated();
  EXPECT_EQ(u.batch_cpu_milli(), e.prepared.allocatable.batch_cpu.value_or(0));
  EXPECT_EQ(u.batch_memory_bytes(), e.prepared.allocatable.batch_memory.value_or(0));
  EXPECT_EQ(u.mid_cpu_milli(), e.prepared.allocatable.mid_cpu.value_or(0));
  EXPECT_EQ(u.mid_memory_bytes(), e.prepared.allocatable.mid_memory.value_or(0));
  EXPECT_EQ(to_string_view(u.cpu_policy()), e.r.batch_cpu.formula);
  EXPECT_EQ(to_string_view(u.memory_policy()), e.r.batch_memory.formula);
  EXPECT_EQ(u.degraded(), e.r.degraded);
  // A repeat (schema v6) lists no formula terms: they are those of the record it points at.
  if (u.terms_as_of_ms() >= 0) {
    EXPECT_LT(u.terms_as_of_ms(), now);
    return;
  }
  // Every term of the four formulas, under "<resource>.<name>", with the policy's value; a
  // numeric term is left out only when it is 0 (schema v6).
  const auto terms = numeric_terms(u);
  for (const auto* x : {&e.r.batch_cpu, &e.r.batch_memory, &e.r.mid_cpu, &e.r.mid_memory}) {
    std::string_view res = x->resource;
    res.remove_prefix(std::string_view("kubernetes.io/").size());
    for (const auto& t : x->terms) {
      const auto key = std::string(res) + "." + std::string(t.name);
      if (!terms.count(key)) {
        EXPECT_EQ(t.value, 0) << key;
        EXPECT_FALSE(t.unit.empty() && !t.text.empty()) << key << ": a text term is kept";
        continue;
      }
      EXPECT_EQ(terms.at(key), t.value) << key;
    }
  }
  EXPECT_TRUE(terms.count("sync.reason"));
  // Every term goes by vocabulary (schema v2: no name string), except a sync diff term, named
  // by the resource that changed ("sync.kubernetes.io/batch-cpu").
  std::size_t by_name = 0, by_vocabulary = 0;
  for (const auto* t : *u.terms()) {
    const auto name = messages::term_name(*t);
    if (t->name() == nullptr) {
      ++by_vocabulary;
      continue;
    }
    ++by_name;
    EXPECT_EQ(name.rfind("sync.kubernetes.io/", 0), 0u) << name;
  }
  EXPECT_GE(by_vocabulary, 15u);
  EXPECT_LE(by_name, 4u);
}

TEST(SloControllerComponent, RegisteredNodeWithoutMetricIsWrittenDegraded) {
  slo_controller_component c({.configmap_json = std::string(enabled_config)});
  ASSERT_TRUE(c.config_errors().empty());
  event_log log;
  const auto off = log.node(1000, "n1", cpu_mem(32000, 128 * gib), cpu_mem(31000, 120 * gib));
  const auto out = feed_resources(c, log);
  ASSERT_EQ(out.size(), 1u);
  expect_update_matches(c, out[0], "n1", 1000, off);
  const auto& u = *decoded(out[0]).payload_as_NodeBatchResourceUpdated();
  EXPECT_TRUE(u.degraded());
  EXPECT_EQ(u.batch_cpu_milli(), 0);
}

TEST(SloControllerComponent, MetricDrivesBatchFromUsage) {
  slo_controller_component c({.configmap_json = std::string(enabled_config)});
  event_log log;
  log.node(0, "n1", cpu_mem(32000, 128 * gib), cpu_mem(32000, 128 * gib));
  log.mutated(1, "default/prod-1", wire::QoSClass::LS, wire::PriorityClass::Prod, 9500,
              cpu_mem(8000, 32 * gib));
  log.scheduled(2, "default/prod-1", "n1", cpu_mem(8000, 32 * gib));
  const auto m = log.metric(
      60000, "n1", 6000, 40 * gib,
      {{"default/prod-1", 5000, 30 * gib, wire::PriorityClass::Prod, wire::QoSClass::LS}},
      cpu_mem(1000, 4 * gib));
  const auto out = feed_resources(c, log);
  ASSERT_EQ(out.size(), 2u);  // registration (degraded), then the metric
  expect_update_matches(c, out[1], "n1", 60000, m);
  const auto& u = *decoded(out[1]).payload_as_NodeBatchResourceUpdated();
  EXPECT_FALSE(u.degraded());
  EXPECT_EQ(to_string_view(u.cpu_policy()), "usage");
  // usage policy: 32000 * 60% - system 1000 - prod usage 5000 = 13200.
  EXPECT_EQ(u.batch_cpu_milli(), 32000 * 60 / 100 - 1000 - 5000);
  const auto terms = numeric_terms(u);
  EXPECT_EQ(terms.at("batch-cpu.result"), u.batch_cpu_milli());
  ASSERT_NE(c.published("n1"), nullptr);
  EXPECT_EQ(c.published("n1")->batch_cpu, u.batch_cpu_milli());
}

// In cluster mode the NodeMetric informer may deliver a node's report before the Node informer
// delivers the node: the registration reconciles with it (not degraded, usage policy), as
// Koordinator's controller reads the NodeMetric from its cache on the Node event.
TEST(SloControllerComponent, AMetricBeforeItsNodeIsUsedWhenTheNodeRegisters) {
  slo_controller_component c({.configmap_json = std::string(enabled_config)});
  event_log log;
  (void)log.metric(500, "n1", 6000, 40 * gib, {}, cpu_mem(1000, 4 * gib));
  const auto off = log.node(1000, "n1", cpu_mem(32000, 128 * gib), cpu_mem(32000, 128 * gib));
  const auto out = feed_resources(c, log);
  ASSERT_EQ(out.size(), 1u);  // nothing for the report alone; the registration, with it
  expect_update_matches(c, out[0], "n1", 1000, off);
  const auto& u = *decoded(out[0]).payload_as_NodeBatchResourceUpdated();
  EXPECT_FALSE(u.degraded());
  EXPECT_EQ(to_string_view(u.cpu_policy()), "usage");
  // usage policy, no pods: 32000 * 60% - system 1000.
  EXPECT_EQ(u.batch_cpu_milli(), 32000 * 60 / 100 - 1000);
}

TEST(SloControllerComponent, SmallChangeUnderDiffThresholdIsNotWritten) {
  slo_controller_component c({.configmap_json = std::string(enabled_config)});
  event_log log;
  log.node(0, "n1", cpu_mem(32000, 128 * gib), cpu_mem(32000, 128 * gib));
  log.metric(60000, "n1", 6000, 40 * gib, {}, cpu_mem(6000, 4 * gib));
  auto out = feed_resources(c, log);
  ASSERT_EQ(out.size(), 2u);
  const auto before = *c.published("n1");
  // 200m more system usage (batch-cpu 13200 -> 13000), 60 s later: |diff| under
  // resourceDiffThreshold (10 %) and under the 300-s update threshold: nothing written, but the
  // computation ran.
  auto from = log.records.size();
  log.metric(120000, "n1", 6200, 41 * gib, {}, cpu_mem(6200, 4 * gib));
  out = feed_resources(c, log, from);
  EXPECT_TRUE(out.empty());
  EXPECT_EQ(c.skipped_writes(), 1u);
  EXPECT_EQ(*c.published("n1"), before);
  const auto e = policy(c, "n1", 120000);
  EXPECT_NE(e.prepared.allocatable.batch_cpu, before.batch_cpu);  // it did move, a little
  const auto sync = sc::need_sync(sc::node_colocation_strategy(*c.config().colocation, {}), before,
                                  e.prepared.allocatable, event_time{60000}, event_time{120000});
  EXPECT_FALSE(sync.need_sync);
  // A big move is written, caused by its metric.
  from = log.records.size();
  const auto m = log.metric(180000, "n1", 16000, 41 * gib, {}, cpu_mem(16000, 4 * gib));
  out = feed_resources(c, log, from);
  ASSERT_EQ(out.size(), 1u);
  expect_update_matches(c, out[0], "n1", 180000, m);
  // And past updateTimeThresholdSeconds (300 s) an unchanged value is written again.
  from = log.records.size();
  const auto m2 = log.metric(180000 + 301000, "n1", 16000, 41 * gib, {}, cpu_mem(16000, 4 * gib));
  out = feed_resources(c, log, from);
  ASSERT_EQ(out.size(), 1u);
  expect_update_matches(c, out[0], "n1", 481000, m2);
  // The same decision again: written short, pointing at the complete record of 180 s.
  EXPECT_EQ(decoded(out[0]).payload_as_NodeBatchResourceUpdated()->terms_as_of_ms(), 180000);
}

// Schema v6: a write that repeats the node's last complete decision (republished because
// updateTimeThresholdSeconds passed) carries the values and no formula terms, and names the
// complete record's time; any change in a value or a term writes a complete record again.
TEST(SloControllerComponent, ARepeatedDecisionIsWrittenShortAndNamesTheCompleteRecord) {
  slo_controller_component c({.configmap_json = std::string(enabled_config)});
  event_log log;
  log.node(0, "n1", cpu_mem(32000, 128 * gib), cpu_mem(32000, 128 * gib));
  log.metric(60000, "n1", 6000, 40 * gib, {}, cpu_mem(1000, 4 * gib));
  auto out = feed_resources(c, log);
  ASSERT_EQ(out.size(), 2u);
  const byte_buffer full_record = out[1];  // out is reassigned below
  const auto* full = decoded(full_record).payload_as_NodeBatchResourceUpdated();
  EXPECT_EQ(full->terms_as_of_ms(), -1);
  ASSERT_NE(full->terms(), nullptr);
  const std::size_t full_terms = full->terms()->size();
  EXPECT_GE(full_terms, 10u);
  const auto full_bytes = full_record.size();
  // Every 301 s the same report: each write is a repeat of the record of 60 s.
  std::size_t repeats = 0;
  for (std::int64_t t = 60000 + 301000; t < 60000 + 5 * 301000; t += 301000) {
    const auto from = log.records.size();
    log.metric(t, "n1", 6000, 40 * gib, {}, cpu_mem(1000, 4 * gib));
    out = feed_resources(c, log, from);
    ASSERT_EQ(out.size(), 1u) << t;
    const auto* u = decoded(out[0]).payload_as_NodeBatchResourceUpdated();
    EXPECT_EQ(u->terms_as_of_ms(), 60000) << t;
    EXPECT_EQ(u->batch_cpu_milli(), full->batch_cpu_milli());
    EXPECT_EQ(u->batch_memory_bytes(), full->batch_memory_bytes());
    EXPECT_EQ(to_string_view(u->cpu_policy()), to_string_view(full->cpu_policy()));
    EXPECT_TRUE(u->terms() == nullptr || u->terms()->size() == 0);
    EXPECT_LT(out[0].size() * 3, full_bytes) << "a repeat is a fraction of the complete record";
    ++repeats;
  }
  EXPECT_EQ(repeats, 4u);
  // 100m more system usage after expiry: the value moves (under the diff threshold, written
  // because expired), so the record is complete again.
  const auto t = 60000 + 5 * 301000;
  const auto from = log.records.size();
  const auto m = log.metric(t, "n1", 6100, 40 * gib, {}, cpu_mem(1100, 4 * gib));
  out = feed_resources(c, log, from);
  ASSERT_EQ(out.size(), 1u);
  expect_update_matches(c, out[0], "n1", t, m);
  const auto* u = decoded(out[0]).payload_as_NodeBatchResourceUpdated();
  EXPECT_EQ(u->terms_as_of_ms(), -1);
  EXPECT_NE(u->batch_cpu_milli(), full->batch_cpu_milli());
}

// After a restart the component learns the complete decision from the log it replays, so the
// next repeat is still written short and points at the replayed record.
TEST(SloControllerComponent, ARestartRecognisesARepeatOfTheReplayedRecord) {
  event_log log;
  log.node(0, "n1", cpu_mem(32000, 128 * gib), cpu_mem(32000, 128 * gib));
  log.metric(60000, "n1", 6000, 40 * gib, {}, cpu_mem(1000, 4 * gib));
  slo_controller_component first({.configmap_json = std::string(enabled_config)});
  auto out = feed_resources(first, log);
  ASSERT_EQ(out.size(), 2u);
  event_log replay;
  replay.node(0, "n1", cpu_mem(32000, 128 * gib), cpu_mem(32000, 128 * gib));
  replay.append_bytes(out[0]);
  replay.append_bytes(out[1]);
  slo_controller_component second({.configmap_json = std::string(enabled_config)});
  (void)feed_resources(second, replay);
  const auto from = replay.records.size();
  replay.metric(60000 + 301000, "n1", 6000, 40 * gib, {}, cpu_mem(1000, 4 * gib));
  auto out2 = feed_resources(second, replay, from);
  ASSERT_EQ(out2.size(), 1u);
  EXPECT_EQ(decoded(out2[0]).payload_as_NodeBatchResourceUpdated()->terms_as_of_ms(), 60000);
}

TEST(SloControllerComponent, InvalidConfigKeepsTheLastValidAndNamesTheKey) {
  slo_controller_component c({.configmap_json = std::string(enabled_config)});
  const auto good = c.config();
  event_log log;
  log.node(0, "n1", cpu_mem(32000, 128 * gib), cpu_mem(32000, 128 * gib));
  log.config(10, config_kind_slo_controller,
             R"({"colocation-config": "{\"enable\": true, \"cpuReclaimThresholdPercent\": -5}"})");
  const auto out = feed_resources(c, log);
  EXPECT_EQ(out.size(), 1u);  // the registration only: the refused config reconciles nothing
  EXPECT_EQ(c.config(), good);
  ASSERT_EQ(c.config_errors().size(), 1u);
  // "log offset 1: colocation-config.cpuReclaimThresholdPercent: invalid value -5 (...)".
  const auto text = c.config_errors()[0].describe();
  EXPECT_NE(text.find("colocation-config.cpuReclaimThresholdPercent"), std::string::npos) << text;
  EXPECT_NE(text.find("-5"), std::string::npos) << text;
  EXPECT_EQ(c.config_errors()[0].where.rfind("log offset 1", 0), 0u) << text;
  // A constructor config that fails keeps the defaults and reports the key as well.
  slo_controller_component d({.configmap_json = R"({"colocation-config": "{\"enable\": 3}"})"});
  ASSERT_EQ(d.config_errors().size(), 1u);
  EXPECT_NE(d.config_errors()[0].describe().find("colocation-config"), std::string::npos);
  EXPECT_EQ(d.config().colocation, sc::colocation_config{});
}

TEST(SloControllerComponent, ValidConfigChangeReconcilesEveryNode) {
  slo_controller_component c({.configmap_json = std::string(enabled_config)});
  event_log log;
  log.node(0, "n1", cpu_mem(32000, 128 * gib), cpu_mem(32000, 128 * gib));
  log.node(0, "n2", cpu_mem(64000, 256 * gib), cpu_mem(64000, 256 * gib));
  log.metric(60000, "n1", 4000, 20 * gib, {}, cpu_mem(4000, gib));
  log.metric(60000, "n2", 4000, 20 * gib, {}, cpu_mem(4000, gib));
  auto out = feed_resources(c, log);
  ASSERT_EQ(out.size(), 4u);
  const auto from = log.records.size();
  const auto cfg = log.config(
      61000, config_kind_slo_controller,
      R"({"colocation-config": "{\"enable\": true, \"cpuReclaimThresholdPercent\": 85, \"memoryReclaimThresholdPercent\": 80}"})");
  out = feed_resources(c, log, from);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(c.config().colocation->cluster.cpu_reclaim_threshold_percent, 85);
  expect_update_matches(c, out[0], "n1", 61000, cfg);
  expect_update_matches(c, out[1], "n2", 61000, cfg);
  EXPECT_EQ(decoded(out[0]).payload_as_NodeBatchResourceUpdated()->batch_cpu_milli(),
            32000 * 85 / 100 - 4000);
  // Disabling co-location resets batch: the terms say why.
  const auto from2 = log.records.size();
  log.config(62000, config_kind_slo_controller, R"({"colocation-config": "{\"enable\": false}"})");
  out = feed_resources(c, log, from2);
  ASSERT_EQ(out.size(), 2u);
  const auto& u = *decoded(out[0]).payload_as_NodeBatchResourceUpdated();
  EXPECT_EQ(u.batch_cpu_milli(), 0);
  bool has_reason = false;
  for (const auto* t : *u.terms())
    if (messages::term_name(*t) == "batch.resetReason")
      has_reason = !to_string_view(t->text()).empty();
  EXPECT_TRUE(has_reason);
}

TEST(SloControllerComponent, RequestPolicyFollowsPodsPlacedAndFinished) {
  // memoryCalculatePolicy "request": batch-memory depends on prod requests, so pods arriving
  // and leaving move it; the component's view follows PodScheduled / PodFinished.
  slo_controller_component c(
      {.configmap_json =
           R"({"colocation-config": "{\"enable\": true, \"memoryCalculatePolicy\": \"request\", \"resourceDiffThreshold\": 0.01}"})"});
  ASSERT_TRUE(c.config_errors().empty()) << c.config_errors()[0].describe();
  event_log log;
  log.node(0, "n1", cpu_mem(32000, 128 * gib), cpu_mem(32000, 128 * gib));
  log.mutated(1, "default/a", wire::QoSClass::LS, wire::PriorityClass::Prod, 9500,
              cpu_mem(4000, 32 * gib));
  log.scheduled(2, "default/a", "n1", cpu_mem(4000, 32 * gib));
  const auto m1 = log.metric(60000, "n1", 3000, 10 * gib,
                             {{"default/a", 2000, 8 * gib, wire::PriorityClass::Prod}});
  log.finished(61000, "default/a", "n1");
  const auto m2 = log.metric(120000, "n1", 1000, 4 * gib, {});
  const auto out = feed_resources(c, log);
  ASSERT_EQ(out.size(), 3u);
  const auto& u1 = *decoded(out[1]).payload_as_NodeBatchResourceUpdated();
  const auto& u2 = *decoded(out[2]).payload_as_NodeBatchResourceUpdated();
  EXPECT_EQ(decoded(out[1]).causation(), static_cast<std::int64_t>(m1));
  EXPECT_EQ(decoded(out[2]).causation(), static_cast<std::int64_t>(m2));
  EXPECT_EQ(to_string_view(u1.memory_policy()), "request");
  EXPECT_EQ(u2.batch_memory_bytes() - u1.batch_memory_bytes(), 32 * gib);  // a's request freed
  expect_update_matches(c, out[2], "n1", 120000, m2);
  EXPECT_TRUE(c.view("n1")->pods.empty());
}

TEST(SloControllerComponent, PodBoundAgainElsewhereLeavesItsOldNode) {
  // A pod is on one node (spec.nodeName): a PodScheduled naming another node moves it, so the old
  // node's request-policy batch-memory gets the request back and the new node's loses it.
  slo_controller_component c(
      {.configmap_json =
           R"({"colocation-config": "{\"enable\": true, \"memoryCalculatePolicy\": \"request\", \"resourceDiffThreshold\": 0.01}"})"});
  ASSERT_TRUE(c.config_errors().empty());
  event_log log;
  log.node(0, "n1", cpu_mem(32000, 128 * gib), cpu_mem(32000, 128 * gib));
  log.node(0, "n2", cpu_mem(32000, 128 * gib), cpu_mem(32000, 128 * gib));
  log.mutated(1, "default/a", wire::QoSClass::LS, wire::PriorityClass::Prod, 9500,
              cpu_mem(4000, 32 * gib));
  log.scheduled(2, "default/a", "n1", cpu_mem(4000, 32 * gib));
  log.metric(60000, "n1", 3000, 10 * gib, {});
  log.metric(60000, "n2", 3000, 10 * gib, {});
  log.scheduled(61000, "default/a", "n2", cpu_mem(4000, 32 * gib));
  const auto m1 = log.metric(120000, "n1", 3000, 10 * gib, {});
  const auto m2 = log.metric(120000, "n2", 3000, 10 * gib, {});
  const auto out = feed_resources(c, log);
  ASSERT_EQ(out.size(), 6u);  // two registrations, two metrics, then both nodes move by 32 GiB
  EXPECT_TRUE(c.view("n1")->pods.empty());
  ASSERT_EQ(c.view("n2")->pods.size(), 1u);
  EXPECT_EQ(c.view("n2")->pods[0].name, "a");
  const auto mem = [&](std::size_t i) {
    return decoded(out[i]).payload_as_NodeBatchResourceUpdated()->batch_memory_bytes();
  };
  EXPECT_EQ(mem(4) - mem(2), 32 * gib);  // n1: a's request freed
  EXPECT_EQ(mem(3) - mem(5), 32 * gib);  // n2: a's request taken
  expect_update_matches(c, out[4], "n1", 120000, m1);
  expect_update_matches(c, out[5], "n2", 120000, m2);
  EXPECT_EQ(c.interned_keys(), 1u);
}

TEST(SloControllerComponent, SameEventsGiveSameBytes) {
  event_log log;
  for (int n = 0; n < 4; ++n)
    log.node(0, "n" + std::to_string(n), cpu_mem(16000 * (n + 1), 64 * gib * (n + 1)),
             cpu_mem(16000 * (n + 1), 64 * gib * (n + 1)));
  for (int i = 0; i < 12; ++i) {
    const std::string pod = "default/p" + std::to_string(i);
    log.mutated(1, pod, i % 2 ? wire::QoSClass::BE : wire::QoSClass::LS,
                i % 2 ? wire::PriorityClass::Batch : wire::PriorityClass::Prod, 9500,
                cpu_mem(1000, gib));
    log.scheduled(2, pod, "n" + std::to_string(i % 4), cpu_mem(1000, gib));
  }
  for (int t = 1; t <= 5; ++t)
    for (int n = 0; n < 4; ++n)
      log.metric(60000 * t, "n" + std::to_string(n), 1000 * t * (n + 1), gib * t, {});
  slo_controller_component a({.configmap_json = std::string(enabled_config)});
  slo_controller_component b({.configmap_json = std::string(enabled_config)});
  const auto x = feed_resources(a, log), y = feed_resources(b, log);
  EXPECT_GT(x.size(), 4u);
  EXPECT_EQ(x, y);
}

TEST(SloControllerComponent, RestartAdoptsWhatTheLogSaysWasWritten) {
  // A fresh component replaying a log that holds an earlier NodeBatchResourceUpdated does not
  // write the same values again.
  event_log log;
  log.node(0, "n1", cpu_mem(32000, 128 * gib), cpu_mem(32000, 128 * gib));
  log.metric(60000, "n1", 6000, 40 * gib, {});
  slo_controller_component first({.configmap_json = std::string(enabled_config)});
  auto out = feed_resources(first, log);
  ASSERT_EQ(out.size(), 2u);
  event_log replay;
  replay.node(0, "n1", cpu_mem(32000, 128 * gib), cpu_mem(32000, 128 * gib));
  replay.append_bytes(out[1]);
  replay.metric(90000, "n1", 6000, 40 * gib, {});
  slo_controller_component second({.configmap_json = std::string(enabled_config)});
  auto out2 = feed_resources(second, replay);
  ASSERT_EQ(out2.size(), 1u);  // its own degraded write at registration, then nothing
  EXPECT_TRUE(decoded(out2[0]).payload_as_NodeBatchResourceUpdated()->degraded());
  out2.clear();
  EXPECT_TRUE(out2.empty());
}

}  // namespace
}  // namespace colony::slo_controller_actor
