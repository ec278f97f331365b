// slo_controller_component's NodeSLO (pkg/slo-controller/nodeslo): one NodeSLOUpdated per node
// whose rendered spec changes (registration, labels, config), none when nothing changed; the
// spec is the pure rendering's; causation is the triggering record.
#include <map>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "actors/slo_controller/actor/slo_controller_component.hpp"
#include "actors/slo_controller/node_slo.hpp"
#include "tests/actors/slo_controller_actor/event_log.hpp"
#include "tests/support/component_feed.hpp"

namespace colony::slo_controller_actor {
namespace {

using namespace colony::testing;  // event_log, feed, decoded, ...
using messages::byte_buffer;
using messages::to_string_view;
using json = nlohmann::json;
namespace sc = slo_controller;

// A node strategy for pool=batch nodes; the cluster strategy for the others.
std::string configmap(int batch_suppress, int cluster_suppress = 55) {
  const json threshold = {
      {"clusterStrategy", {{"enable", true}, {"cpuSuppressThresholdPercent", cluster_suppress}}},
      {"nodeStrategies", json::array({{{"name", "batch"},
                                       {"nodeSelector", {{"matchLabels", {{"pool", "batch"}}}}},
                                       {"cpuSuppressThresholdPercent", batch_suppress}}})}};
  return json{{"resource-threshold-config", threshold.dump()}}.dump();
}

struct slo_record {
  std::string node;
  std::int64_t causation = -1;
  std::int64_t time = 0;
  json spec;
};

std::vector<slo_record> node_slos(const std::vector<byte_buffer>& out) {
  std::vector<slo_record> v;
  for (const auto& b : out) {
    const auto& env = decoded(b);
    if (env.payload_type() != wire::Payload::NodeSLOUpdated) continue;
    EXPECT_EQ(env.entity_kind(), wire::EntityKind::Node);
    EXPECT_EQ(to_string_view(env.source()), "slo-controller");
    v.push_back({std::string(to_string_view(env.entity_key())), env.causation(),
                 env.event_time_ms(),
                 json::parse(to_string_view(env.payload_as_NodeSLOUpdated()->spec_json()))});
  }
  return v;
}

std::int64_t suppress_of(const slo_record& r) {
  return r.spec.at("resourceUsedThresholdWithBE").at("cpuSuppressThresholdPercent");
}

const resource_list cap = cpu_mem(16000, 64 * gib);

TEST(SloControllerNodeSlo, EmitsOncePerNodeOnRegistrationWithItsLabels) {
  event_log log;
  slo_controller_component c({.configmap_json = configmap(40)});
  const auto a = log.node(1000, "n-a", cap, cap, {{"pool", "online"}});
  const auto b = log.node(1000, "n-b", cap, cap, {{"pool", "batch"}});
  const auto out = feed(c, log);
  const auto slos = node_slos(out);
  ASSERT_EQ(slos.size(), 2u);
  EXPECT_EQ(slos[0].node, "n-a");
  EXPECT_EQ(slos[0].causation, static_cast<std::int64_t>(a));
  EXPECT_EQ(slos[0].time, 1000);
  EXPECT_EQ(suppress_of(slos[0]), 55);  // cluster strategy
  EXPECT_EQ(slos[1].node, "n-b");
  EXPECT_EQ(slos[1].causation, static_cast<std::int64_t>(b));
  EXPECT_EQ(suppress_of(slos[1]), 40);  // the pool=batch node strategy
  // The bytes are the pure rendering's, and what the component keeps as its last decision.
  const sc::node_slo_renderer r(c.config());
  EXPECT_EQ(slos[1].spec.dump(), r.spec_json({{"pool", "batch"}}));
  EXPECT_EQ(c.node_slo("n-b"), r.spec_json({{"pool", "batch"}}));
}

TEST(SloControllerNodeSlo, NothingWhenTheSpecIsUnchanged) {
  event_log log;
  slo_controller_component c({.configmap_json = configmap(40)});
  log.node(1000, "n-a", cap, cap, {{"pool", "online"}});
  ASSERT_EQ(node_slos(feed(c, log)).size(), 1u);
  // The node again (a status change), with other labels that select the same strategy.
  auto from = log.records.size();
  log.node(2000, "n-a", cap, cap, {{"pool", "online"}, {"zone", "z1"}});
  EXPECT_TRUE(node_slos(feed(c, log, from)).empty());
  // A ConfigMap whose NodeSLO keys are the same (only colocation-config differs).
  from = log.records.size();
  auto data = json::parse(configmap(40));
  data["colocation-config"] = json{{"enable", true}}.dump();
  log.config(3000, "slo-controller-config", data.dump());
  EXPECT_TRUE(node_slos(feed(c, log, from)).empty());
  // A ConfigMap that changes only the node strategy of a pool this node is not in.
  from = log.records.size();
  log.config(4000, "slo-controller-config", configmap(30));
  EXPECT_TRUE(node_slos(feed(c, log, from)).empty());
  // Metrics and pods never render NodeSLOs.
  from = log.records.size();
  log.metric(5000, "n-a", 4000, 8 * gib, {});
  EXPECT_TRUE(node_slos(feed(c, log, from)).empty());
}

TEST(SloControllerNodeSlo, LabelChangeMovesANodeToAnotherStrategy) {
  event_log log;
  slo_controller_component c({.configmap_json = configmap(40)});
  log.node(1000, "n-a", cap, cap, {{"pool", "online"}});
  feed(c, log);
  const auto from = log.records.size();
  const auto relabel = log.node(2000, "n-a", cap, cap, {{"pool", "batch"}});
  const auto slos = node_slos(feed(c, log, from));
  ASSERT_EQ(slos.size(), 1u);
  EXPECT_EQ(slos[0].causation, static_cast<std::int64_t>(relabel));
  EXPECT_EQ(suppress_of(slos[0]), 40);
}

TEST(SloControllerNodeSlo, ConfigChangeReRendersEveryNodeWhoseSpecChanges) {
  event_log log;
  slo_controller_component c({.configmap_json = configmap(40)});
  log.node(1000, "n-c", cap, cap, {{"pool", "batch"}});
  log.node(1000, "n-a", cap, cap, {{"pool", "online"}});
  log.node(1000, "n-b", cap, cap, {{"pool", "batch"}});
  feed(c, log);
  struct row {
    const char* what;
    std::string configmap;
    std::vector<std::pair<std::string, std::int64_t>> want;  // (node, suppress) in node order
  };
  const std::vector<row> rows{
      {"node strategy changes: the batch nodes", configmap(35), {{"n-b", 35}, {"n-c", 35}}},
      {"cluster strategy changes: the other node", configmap(35, 60), {{"n-a", 60}}},
      {"same again: nothing", configmap(35, 60), {}},
      // Deleted ConfigMap: every key back to defaults (65 for everyone).
      {"deleted", "", {{"n-a", 65}, {"n-b", 65}, {"n-c", 65}}},
  };
  for (const auto& r : rows) {
    const auto from = log.records.size();
    const auto cause = r.configmap.empty() ? log.config(5000, "slo-controller-config", "", true)
                                           : log.config(5000, "slo-controller-config", r.configmap);
    const auto slos = node_slos(feed(c, log, from));
    ASSERT_EQ(slos.size(), r.want.size()) << r.what;
    for (std::size_t i = 0; i < slos.size(); ++i) {
      EXPECT_EQ(slos[i].node, r.want[i].first) << r.what;
      EXPECT_EQ(suppress_of(slos[i]), r.want[i].second) << r.what;
      EXPECT_EQ(slos[i].causation, static_cast<std::int64_t>(cause)) << r.what;
    }
  }
}

TEST(SloControllerNodeSlo, ARemovedNodeGetsItsNodeSloAgainWhenItReturns) {
  event_log log;
  slo_controller_component c({.configmap_json = configmap(40)});
  log.node(1000, "n-a", cap, cap, {{"pool", "online"}});
  feed(c, log);
  auto from = log.records.size();
  {
    auto& fbb = log.b.fbb();
    const auto n = fbb.CreateString("n-a");
    log.append(2000, wire::EntityKind::Node, "n-a", wire::CreateNodeRemoved(fbb, n));
  }
  EXPECT_TRUE(node_slos(feed(c, log, from)).empty());
  EXPECT_EQ(c.node_slo("n-a"), "");
  from = log.records.size();
  log.node(3000, "n-a", cap, cap, {{"pool", "online"}});
  EXPECT_EQ(node_slos(feed(c, log, from)).size(), 1u);
}

// Two components over the same records write the same bytes (ordered maps, event time only).
TEST(SloControllerNodeSlo, SameEventsGiveSameBytes) {
  event_log log;
  for (int i = 0; i < 6; ++i)
    log.node(1000, "n-" + std::to_string(5 - i), cap, cap,
             {{"pool", i % 2 == 0 ? "batch" : "online"}});
  log.config(2000, "slo-controller-config", configmap(20, 70));
  slo_controller_component a({.configmap_json = configmap(40)});
  slo_controller_component b({.configmap_json = configmap(40)});
  const auto x = feed(a, log);
  const auto y = feed(b, log);
  EXPECT_EQ(node_slos(x).size(), 12u);
  EXPECT_EQ(x, y);
}

}  // namespace
}  // namespace colony::slo_controller_actor

namespace colony::slo_controller_actor {
namespace {

// host-application-config through the component: a ConfigMap that adds it re-renders every node
// (nodeslo_cm_event_handler.go triggerAllNodeEnqueue) with the node's hostApplications (the
// first matching nodeConfigs entry's, else the cluster's); a node whose list is empty keeps the
// field out; a rejected key renders nothing new.
TEST(SloControllerNodeSlo, HostApplicationConfigRendersEachNodesHostApplications) {
  event_log log;
  slo_controller_component c({.configmap_json = configmap(40)});
  log.node(1000, "n-a", cap, cap, {{"pool", "online"}});
  log.node(1000, "n-b", cap, cap, {{"pool", "batch"}});
  (void)feed(c, log);
  const json apps = {
      {"applications",
       json::array({{{"name", "nginx"},
                     {"qos", "LS"},
                     {"priority", "koord-prod"},
                     {"cgroupPath", {{"base", "CgroupRoot"}, {"relativePath", "host/nginx"}}}}})},
      {"nodeConfigs", json::array({{{"name", "batch"},
                                    {"nodeSelector", {{"matchLabels", {{"pool", "batch"}}}}},
                                    {"applications", json::array()}}})}};
  auto data = json::parse(configmap(40));
  data["host-application-config"] = apps.dump();
  auto from = log.records.size();
  const auto cfg = log.config(2000, "slo-controller-config", data.dump());
  const auto slos = node_slos(feed(c, log, from));
  ASSERT_EQ(slos.size(), 1u) << "n-b's list is empty: its spec is unchanged";
  EXPECT_EQ(slos[0].node, "n-a");
  EXPECT_EQ(slos[0].causation, static_cast<std::int64_t>(cfg));
  EXPECT_EQ(slos[0].spec.at("hostApplications"),
            json::parse(R"([{"name":"nginx","qos":"LS","priority":"koord-prod",
                "cgroupPath":{"base":"CgroupRoot","relativePath":"host/nginx"}}])"));
  // The koordlet reads it back.
  auto spec = sc::parse_node_slo_spec(slos[0].spec.dump());
  ASSERT_TRUE(spec) << spec.error().describe();
  ASSERT_EQ(spec->host_applications.size(), 1u);
  EXPECT_EQ(spec->host_applications[0].cgroup_path->relative_path, "host/nginx");

  // An invalid entry: the key is rejected, the one in force stays, nothing is rendered.
  data["host-application-config"] =
      json{{"applications", json::array({{{"name", "nginx"}, {"qos", "Gold"}}})}}.dump();
  from = log.records.size();
  log.config(3000, "slo-controller-config", data.dump());
  EXPECT_TRUE(node_slos(feed(c, log, from)).empty());
}

}  // namespace
}  // namespace colony::slo_controller_actor
