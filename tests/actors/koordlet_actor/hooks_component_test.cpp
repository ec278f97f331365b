// koordlet_component's runtime-hook writes: BatchResource (a BE pod's cgroups from its batch
// resources, GC-BECG-1 through the component) and GroupIdentity (cpu.bvt_warp_ns of pods and kube
// QoS dirs from the NodeSLO's resourceQOSStrategy, GC-BVT-1) and memory QoS (memory.min/low/high),
// each emitted as a CgroupUpdated when
// it changes.
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "actors/koordlet/actor/koordlet_component.hpp"
#include "tests/actors/slo_controller_actor/event_log.hpp"
#include "tests/support/component_feed.hpp"
#include "tests/support/resources.hpp"

namespace colony::koordlet_actor {
namespace {

using namespace colony::testing;
using messages::to_string_view;
namespace kl = koordlet;

using settings_map = std::map<std::string, std::string>;

struct update {
  std::string target;
  wire::EntityKind kind;
  settings_map settings;
  std::map<std::string, std::string> texts;  // term name -> text
};

std::vector<update> cgroup_updates(const std::vector<messages::byte_buffer>& out) {
  std::vector<update> r;
  for (const auto& b : out) {
    const auto& env = decoded(b);
    if (env.payload_type() != wire::Payload::CgroupUpdated) continue;
    const auto& g = *env.payload_as_CgroupUpdated();
    update u{std::string(to_string_view(g.target())), env.entity_kind(), {}, {}};
    if (g.settings() != nullptr)
      for (const auto* kv : *g.settings())
        u.settings[std::string(to_string_view(kv->key()))] =
            std::string(to_string_view(kv->value()));
    if (g.inputs() != nullptr)
      for (const auto* t : *g.inputs())
        u.texts[std::string(to_string_view(t->name()))] = std::string(to_string_view(t->text()));
    r.push_back(std::move(u));
  }
  return r;
}

std::uint64_t node_with(event_log& log, std::int64_t t,
                        const std::vector<std::pair<std::string, std::string>>& annotations) {
  auto& fbb = log.b.fbb();
  const auto c = log.b.resources(cpu_mem(16000, 64 * gib));
  const auto a = log.b.resources(cpu_mem(16000, 64 * gib));
  const auto an = log.b.key_values(annotations);
  const auto n = fbb.CreateString("n1");
  return log.append(t, wire::EntityKind::Node, "n1",
                    wire::CreateNodeRegistered(fbb, n, c, a, 0, an, 0, false));
}

std::uint64_t node_slo(event_log& log, std::int64_t t, std::string_view spec) {
  auto& fbb = log.b.fbb();
  const auto s = fbb.CreateString(spec);
  return log.append(t, wire::EntityKind::Node, "n1", wire::CreateNodeSLOUpdated(fbb, s),
                    "slo-controller");
}

// GC-BECG-1 (Test_plugin_SetPodResources): one container, batch-cpu 500 request and limit,
// batch-memory 2 GiB, through the component: the node's ratio annotation and the suppress policy
// reach the written files.
TEST(KoordletHooks, BatchResourceGoldenCaseThroughTheComponent) {
  struct row {
    const char* name;
    std::optional<std::string> ratio;  // node.koordinator.sh/cpu-normalization-ratio
    bool suppress_by_cfs_quota;
    const char* want_quota;
  };
  const row rows[] = {
      {"a Batch pod with cpu memory requests", std::nullopt, false, "50000"},
      {"a Batch pod scaled with ratio", "1.20", false, "41667"},
      {"a Batch pod with cfs quota unset", std::nullopt, true, "-1"},
      {"a ratio out of range is not used", "7.0", false, "50000"},
  };
  for (const auto& r : rows) {
    SCOPED_TRACE(r.name);
    event_log log;
    std::vector<std::pair<std::string, std::string>> ann;
    if (r.ratio) ann.emplace_back("node.koordinator.sh/cpu-normalization-ratio", *r.ratio);
    node_with(log, 0, ann);
    resource_list batch;
    batch.batch_cpu_milli = 500;
    batch.batch_memory_bytes = 2 * gib;
    log.mutated(1, "default/batch", wire::QoSClass::BE, wire::PriorityClass::Batch, 5500, batch,
                batch);
    log.mutated(2, "default/ls", wire::QoSClass::LS, wire::PriorityClass::Prod, 9500,
                cpu_mem(1000, gib), cpu_mem(1000, gib));
    log.scheduled(3, "default/batch", "n1", batch);
    log.scheduled(4, "default/ls", "n1", cpu_mem(1000, gib));
    koordlet_options o;
    o.node = "n1";
    o.threshold.enable = r.suppress_by_cfs_quota;
    o.threshold.cpu_suppress_policy = r.suppress_by_cfs_quota
                                          ? kl::cpu_suppress_policy_type::cfs_quota
                                          : kl::cpu_suppress_policy_type::cpuset;
    koordlet_component c(o);
    EXPECT_TRUE(feed(c, log).empty());
    const auto from = log.records.size();
    const auto m = log.metric(10000, "n1", 1000, gib, {{"default/batch", 100, gib}});
    const auto out = feed(c, log, from);
    const auto u = cgroup_updates(out);
    ASSERT_EQ(u.size(), 1u) << "only the BE pod with batch resources";
    EXPECT_EQ(u[0].target, "default/batch");
    EXPECT_EQ(u[0].kind, wire::EntityKind::Pod);
    EXPECT_EQ(u[0].settings, (settings_map{{"cpu.shares", "512"},
                                           {"cpu.cfs_quota_us", r.want_quota},
                                           {"memory.limit_in_bytes", "2147483648"}}));
    for (const auto& b : out) EXPECT_EQ(decoded(b).causation(), static_cast<std::int64_t>(m));
    EXPECT_EQ(u[0].texts.count("podUID"), 0u) << "the PodMutated's pod is named by its key";

    // Unchanged inputs: nothing new.
    const auto from2 = log.records.size();
    log.metric(11000, "n1", 1000, gib, {{"default/batch", 100, gib}});
    EXPECT_TRUE(cgroup_updates(feed(c, log, from2)).empty());
  }
}

TEST(KoordletHooks, BatchResourceFollowsTheGateAndSkipsPodsWithoutBatchResources) {
  for (const bool gate : {true, false}) {
    SCOPED_TRACE(gate ? "BatchResource on" : "BatchResource off");
    event_log log;
    node_with(log, 0, {});
    // A BE pod whose spec has no batch resources keeps the kubelet's cgroups (Koordinator: no
    // extended-resource-spec, no change).
    log.mutated(1, "default/plain-be", wire::QoSClass::BE, wire::PriorityClass::Batch, 5500, {});
    resource_list batch;
    batch.batch_cpu_milli = 1000;  // request only: no limit, quota and memory unlimited
    log.mutated(2, "default/be", wire::QoSClass::BE, wire::PriorityClass::Batch, 5500, batch);
    log.scheduled(3, "default/plain-be", "n1", {});
    log.scheduled(4, "default/be", "n1", batch);
    koordlet_options o;
    o.node = "n1";
    o.gates.batch_resource = gate;
    koordlet_component c(o);
    feed(c, log);
    const auto from = log.records.size();
    log.metric(10000, "n1", 1000, gib, {});
    const auto u = cgroup_updates(feed(c, log, from));
    if (!gate) {
      EXPECT_TRUE(u.empty());
      continue;
    }
    ASSERT_EQ(u.size(), 1u);
    EXPECT_EQ(u[0].target, "default/be");
    EXPECT_EQ(u[0].settings, (settings_map{{"cpu.shares", "1024"},
                                           {"cpu.cfs_quota_us", "-1"},
                                           {"memory.limit_in_bytes", "-1"}}));
  }
}

// GC-BVT-1 through the component: the NodeSLO enables LSR 2, LS 2, BE -1; pods get their class's
// value and the kube QoS dirs G 0, Bu 2, BE -1. Disabling writes 0 back; a policy of coreSched is
// disabled too.
TEST(KoordletHooks, GroupIdentityFromTheNodeSloToPodsAndQosDirs) {
  event_log log;
  node_with(log, 0, {});
  log.mutated(1, "default/lsr", wire::QoSClass::LSR, wire::PriorityClass::Prod, 9500,
              cpu_mem(2000, gib), cpu_mem(2000, gib));
  log.mutated(2, "default/ls", wire::QoSClass::LS, wire::PriorityClass::Prod, 9500,
              cpu_mem(1000, gib));
  log.mutated(3, "default/be", wire::QoSClass::BE, wire::PriorityClass::Batch, 5500, {});
  log.scheduled(4, "default/lsr", "n1", cpu_mem(2000, gib));
  log.scheduled(5, "default/ls", "n1", cpu_mem(1000, gib));
  log.scheduled(6, "default/be", "n1", {});
  koordlet_options o;
  o.node = "n1";
  koordlet_component c(o);
  feed(c, log);
  auto from = log.records.size();
  log.metric(10000, "n1", 1000, gib, {});
  EXPECT_TRUE(cgroup_updates(feed(c, log, from)).empty()) << "every class disabled by default";

  node_slo(log, 10500,
           R"({"resourceQOSStrategy":{"lsrClass":{"cpuQOS":{"enable":true,"groupIdentity":2}},)"
           R"("lsClass":{"cpuQOS":{"enable":true}},"beClass":{"cpuQOS":{"enable":true}}}})");
  feed(c, log, log.records.size() - 1);
  ASSERT_TRUE(c.config_errors().empty()) << c.config_errors()[0].describe();
  EXPECT_TRUE(c.cpu_qos().ls_class.enable);
  EXPECT_EQ(c.cpu_qos().be_class.group_identity, -1) << "DefaultCPUQOS where the NodeSLO is silent";

  from = log.records.size();
  log.metric(11000, "n1", 1000, gib, {});
  auto u = cgroup_updates(feed(c, log, from));
  std::map<std::string, std::string> bvt;
  for (const auto& x : u) {
    EXPECT_EQ(x.kind,
              x.target.rfind("qos/", 0) == 0 ? wire::EntityKind::Node : wire::EntityKind::Pod);
    bvt[x.target] = x.settings.at("cpu.bvt_warp_ns");
  }
  EXPECT_EQ(bvt, (std::map<std::string, std::string>{{"default/lsr", "2"},
                                                     {"default/ls", "2"},
                                                     {"default/be", "-1"},
                                                     {"qos/guaranteed", "0"},
                                                     {"qos/burstable", "2"},
                                                     {"qos/besteffort", "-1"}}));

  from = log.records.size();
  log.metric(12000, "n1", 1000, gib, {});
  EXPECT_TRUE(cgroup_updates(feed(c, log, from)).empty()) << "unchanged: not written again";

  node_slo(log, 12500, R"({"resourceQOSStrategy":{"policies":{"cpuPolicy":"coreSched"}}})");
  feed(c, log, log.records.size() - 1);
  from = log.records.size();
  log.metric(13000, "n1", 1000, gib, {});
  u = cgroup_updates(feed(c, log, from));
  bvt.clear();
  for (const auto& x : u) bvt[x.target] = x.settings.at("cpu.bvt_warp_ns");
  EXPECT_EQ(bvt, (std::map<std::string, std::string>{{"default/lsr", "0"},
                                                     {"default/ls", "0"},
                                                     {"qos/burstable", "0"},
                                                     {"default/be", "0"},
                                                     {"qos/besteffort", "0"}}))
      << "coreSched: the values go back to 0 (guaranteed's dir was 0 already)";
}

// Memory QoS from the NodeSLO's lsClass.memoryQOS: the LS pod (request 1 GiB, limit 2 GiB) gets
// min = low = 1 GiB and high 80 % of the way to its limit; the BE pod's class is disabled.
TEST(KoordletHooks, MemoryQosFromTheNodeSloForTheEnabledClassOnly) {
  event_log log;
  node_with(log, 0, {});
  log.mutated(1, "default/ls", wire::QoSClass::LS, wire::PriorityClass::Prod, 9500,
              cpu_mem(1000, gib), cpu_mem(1000, 2 * gib));
  log.mutated(2, "default/be", wire::QoSClass::BE, wire::PriorityClass::Batch, 5500, {});
  log.scheduled(3, "default/ls", "n1", cpu_mem(1000, gib));
  log.scheduled(4, "default/be", "n1", {});
  node_slo(log, 5,
           R"({"resourceQOSStrategy":{"lsClass":{"memoryQOS":{"enable":true,)"
           R"("minLimitPercent":100,"lowLimitPercent":0,"throttlingPercent":80}}}})");
  koordlet_options o;
  o.node = "n1";
  koordlet_component c(o);
  feed(c, log);
  ASSERT_TRUE(c.config_errors().empty()) << c.config_errors()[0].describe();
  EXPECT_TRUE(c.memory_qos().ls_class.enable);
  EXPECT_FALSE(c.memory_qos().be_class.enable);
  const auto from = log.records.size();
  log.metric(10000, "n1", 1000, gib, {});
  const auto u = cgroup_updates(feed(c, log, from));
  ASSERT_EQ(u.size(), 1u);
  EXPECT_EQ(u[0].target, "default/ls");
  EXPECT_EQ(u[0].settings, (settings_map{{"memory.min", std::to_string(gib)},
                                         {"memory.low", std::to_string(gib)},
                                         {"memory.high", "1932734464"}}));
}

TEST(KoordletHooks, AMalformedResourceQosStrategyKeepsTheCpuQosInForceAndNamesTheField) {
  event_log log;
  node_with(log, 0, {});
  koordlet_options o;
  o.node = "n1";
  o.cpu_qos.ls_class.enable = true;
  koordlet_component c(o);
  feed(c, log);
  node_slo(log, 1,
           R"({"resourceQOSStrategy":{"lsClass":{"cpuQOS":{"enable":"yes"}}},)"
           R"("cpuBurstStrategy":{"policy":"cpuBurstOnly"}})");
  feed(c, log, log.records.size() - 1);
  ASSERT_EQ(c.config_errors().size(), 1u);
  const auto& e = c.config_errors()[0];
  EXPECT_NE(e.where.find("resourceQOSStrategy.lsClass.cpuQOS"), std::string::npos) << e.describe();
  EXPECT_NE(e.where.find("log offset 1"), std::string::npos) << e.describe();
  EXPECT_TRUE(c.cpu_qos().ls_class.enable) << "the cpu QoS in force is kept";
  ASSERT_TRUE(c.cpu_burst().config.policy);
  EXPECT_EQ(*c.cpu_burst().config.policy, kl::cpu_burst_policy::cpu_burst_only)
      << "the other strategies still apply";
}

TEST(KoordletHooks, ResourceQosStrategyParseErrorsNameTheField) {
  struct row {
    const char* json;
    const char* where;
  };
  const row rows[] = {
      {R"({"beClass":{"memoryQOS":{"throttlingPercent":120}}})",
       "resourceQOSStrategy.beClass.memoryQOS"},
      {R"({"lsrClass":{"cpuQOS":{"groupIdentity":1.5}}})", "resourceQOSStrategy.lsrClass.cpuQOS"},
      {R"({"lsClass":[]})", "resourceQOSStrategy"},
      {R"({"policies":{"cpuPolicy":7}})", "resourceQOSStrategy.policies"},
  };
  for (const auto& r : rows) {
    SCOPED_TRACE(r.json);
    const auto q = slo_controller::parse_resource_qos_strategy(r.json);
    ASSERT_FALSE(q.has_value());
    EXPECT_NE(q.error().where.find(r.where), std::string::npos) << q.error().describe();
  }
  const auto ok = slo_controller::parse_resource_qos_strategy(
      R"({"policies":{"cpuPolicy":"groupIdentity"},"systemClass":{"cpuQOS":{"enable":true}}})");
  ASSERT_TRUE(ok.has_value()) << ok.error().describe();
  EXPECT_EQ(ok->cpu_policy, "groupIdentity");
  EXPECT_EQ(ok->system.cpu_enable, true);
  EXPECT_FALSE(ok->ls.cpu_enable.has_value());
}

}  // namespace
}  // namespace colony::koordlet_actor
