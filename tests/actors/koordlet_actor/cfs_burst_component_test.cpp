// cpuburst's cfs-quota burst through the koordlet component (cfs_quota_burst_round.hpp): a
// NodeUsageSampled whose pod lists its containers with their cfs quota and throttling makes the
// component emit a CgroupUpdated with the container's and the pod's cpu.cfs_quota_us.
// Golden cases GC-BURST-3 (Koordinator's pkg/koordlet/qosmanager/plugins/cpuburst/
// cpu_burst_test.go TestCPUBurst_applyCFSQuotaBurst) with the pod's spec in the log (its limit is
// the base), and the lone-node rule (the base is the container's first sampled quota).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "actors/koordlet/actor/koordlet_component.hpp"
#include "tests/actors/slo_controller_actor/event_log.hpp"
#include "tests/support/component_feed.hpp"
#include "tests/support/resources.hpp"
#include "tests/support/wire_terms.hpp"

namespace colony::koordlet_actor {
namespace {

using namespace colony::testing;
using messages::to_string_view;
namespace kl = koordlet;

struct container_sample {
  std::string id;
  std::int64_t quota = -1;
  std::int64_t periods = -1, throttled = -1;
  std::int64_t cpu_milli = 0;
};

struct pod_sample {
  std::string pod;
  wire::QoSClass qos = wire::QoSClass::LS;
  std::int64_t pod_quota = -1;
  std::vector<container_sample> containers;
  std::int64_t cpu_milli = 0;
};

std::uint64_t sample(event_log& log, std::int64_t t, std::int64_t node_cpu,
                     const std::vector<pod_sample>& pods) {
  auto& fbb = log.b.fbb();
  std::vector<flatbuffers::Offset<wire::PodSample>> v;
  for (const auto& p : pods) {
    std::vector<flatbuffers::Offset<wire::ContainerSample>> cs;
    for (const auto& c : p.containers) {
      const auto id = fbb.CreateString(c.id);
      const auto u = log.b.resources(cpu_mem(c.cpu_milli, gib));
      cs.push_back(wire::CreateContainerSample(fbb, id, 0, u, c.quota, c.quota > 0 ? 100000 : 0,
                                               c.periods, c.throttled));
    }
    const auto cv = fbb.CreateVector(cs);
    const auto key = fbb.CreateString(p.pod);
    const auto uid = fbb.CreateString(p.pod);
    const auto u = log.b.resources(cpu_mem(p.cpu_milli, gib));
    v.push_back(wire::CreatePodSample(fbb, key, uid, u, p.qos, wire::KubeQoSClass::Burstable,
                                      p.pod_quota > 0 ? p.pod_quota / 100 : 0, cv, p.pod_quota,
                                      p.pod_quota > 0 ? 100000 : 0, 10, 0));
  }
  const auto pv = fbb.CreateVector(v);
  const auto n = fbb.CreateString("n1");
  const auto nu = log.b.resources(cpu_mem(node_cpu, 4 * gib));
  return log.append(t, wire::EntityKind::Node, "n1",
                    wire::CreateNodeUsageSampled(fbb, n, 1000, nu, pv), "bridge/node");
}

// The component's cfs-quota decisions (not the cpu.cfs_burst_us of auto's cpu burst).
std::vector<const wire::CgroupUpdated*> cgroup_updates(
    const std::vector<messages::byte_buffer>& out,
    std::vector<const wire::Envelope*>* envs = nullptr) {
  std::vector<const wire::CgroupUpdated*> r;
  for (const auto& b : out)
    if (decoded(b).payload_type() == wire::Payload::CgroupUpdated &&
        to_string_view(decoded(b).payload_as_CgroupUpdated()->settings()->Get(0)->key())
                .find("cpu.cfs_quota_us") != std::string_view::npos) {
      r.push_back(decoded(b).payload_as_CgroupUpdated());
      if (envs != nullptr) envs->push_back(&decoded(b));
    }
  return r;
}

std::vector<std::pair<std::string, std::string>> settings_of(const wire::CgroupUpdated& e) {
  std::vector<std::pair<std::string, std::string>> s;
  if (e.settings() != nullptr)
    for (const auto* kv : *e.settings())
      s.emplace_back(to_string_view(kv->key()), to_string_view(kv->value()));
  return s;
}

std::string term_text(const wire::CgroupUpdated& e, std::string_view name) {
  if (e.inputs() != nullptr)
    for (const auto* t : *e.inputs())
      if (to_string_view(t->name()) == name) return std::string(to_string_view(t->text()));
  return {};
}

koordlet_options burst_options(kl::cpu_burst_policy policy) {
  koordlet_options o;
  o.node = "n1";
  o.report_interval_ms = 60000;
  o.cpu_burst.config.policy = policy;
  o.cpu_burst.config.cfs_quota_burst_percent = 300;
  return o;
}

// A lone 2-core node under cfsQuotaBurstOnly, the share pool's threshold at 100 % (never
// overloaded), registered with the component.
struct lone_node {
  event_log log;
  koordlet_component c{[] {
    auto o = burst_options(kl::cpu_burst_policy::cfs_quota_burst_only);
    o.cpu_burst.share_pool_threshold_percent = 100;
    return o;
  }()};
  lone_node() {
    log.node(0, "n1", cpu_mem(2000, 8 * gib), cpu_mem(2000, 8 * gib));
    (void)feed(c, log);
  }
};

// GC-BURST-3: container limit 2 cores (base 200000), cfsQuotaBurstPercent 300, the pod's spec in
// the log. The node has 8 processors; its CPU puts the share pool (no LSE/LSR/BE pods: all 8) in
// the case's state at the default threshold 50 %: idle 1 core (12.5 %), overload 6 (75 %),
// cooling 3.8 (47.5 %, at least 0.9 x 50 %).
TEST(KoordletCfsBurst, GoldenCasesThroughTheComponent) {
  struct golden {
    const char* name;  // Koordinator's case
    kl::cpu_burst_policy policy;
    std::int64_t node_cpu_milli;
    std::int64_t current;
    std::int64_t want;  // 0: nothing emitted
    const char* operation;
  };
  const std::vector<golden> cases{
      {"scale-up-from-base-on-idle-state", kl::cpu_burst_policy::auto_burst, 1000, 200000, 240000,
       "cfsScaleUp"},
      {"scale-down-for-throttled-pod-on-overload-state", kl::cpu_burst_policy::auto_burst, 6000,
       400000, 320000, "cfsScaleDown"},
      {"scale-remain-for-throttled-pod-on-cooling-state", kl::cpu_burst_policy::auto_burst, 3800,
       400000, 0, ""},
      {"scale-reset-for-burst-config-disabled-on-idle-state", kl::cpu_burst_policy::cpu_burst_only,
       1000, 400000, 200000, "cfsReset"},
  };
  for (const auto& g : cases) {
    SCOPED_TRACE(g.name);
    event_log log;
    log.node(0, "n1", cpu_mem(8000, 16 * gib), cpu_mem(8000, 16 * gib));
    log.mutated(1, "ns/p1", wire::QoSClass::LS, wire::PriorityClass::Prod, 9000, cpu_mem(1000, gib),
                cpu_mem(2000, 2 * gib));
    log.scheduled(2, "ns/p1", "n1", cpu_mem(1000, gib));
    koordlet_component c(burst_options(g.policy));
    (void)feed(c, log);
    const auto from = log.records.size();
    // The pod's quota is its container's plus 20000 (a second container without a limit would
    // leave it unlimited; kubelet sums the limits: here a sidecar of 0.2 cores).
    const auto s = sample(log, 1000, g.node_cpu_milli,
                          {{"ns/p1",
                            wire::QoSClass::LS,
                            g.current + 20000,
                            {{"pause", -1, -1, -1, 0}, {"c1", g.current, 10, 4, 1500}},
                            1500}});
    std::vector<const wire::Envelope*> envs;
    const auto out = feed(c, log, from);
    const auto u = cgroup_updates(out, &envs);
    if (g.want == 0) {
      EXPECT_TRUE(u.empty());
      continue;
    }
    ASSERT_EQ(u.size(), 1u);
    EXPECT_EQ(envs[0]->causation(), static_cast<std::int64_t>(s));
    EXPECT_EQ(to_string_view(u[0]->target()), "ns/p1");
    const auto pod = std::to_string(g.want + 20000);
    const auto ctr = std::to_string(g.want);
    // Growing: the pod first; shrinking: the container first (applyContainerCFSQuota).
    const std::vector<std::pair<std::string, std::string>> want =
        g.want > g.current
            ? std::vector<std::pair<std::string, std::string>>{{"cpu.cfs_quota_us", pod},
                                                               {"c1/cpu.cfs_quota_us", ctr}}
            : std::vector<std::pair<std::string, std::string>>{{"c1/cpu.cfs_quota_us", ctr},
                                                               {"cpu.cfs_quota_us", pod}};
    EXPECT_EQ(settings_of(*u[0]), want);
    EXPECT_EQ(term_text(*u[0], "operation"), g.operation);
    EXPECT_EQ(term_text(*u[0], "containerID"), "c1");
    const auto t = terms_of(u[0]->inputs());
    EXPECT_EQ(t.at("containerBaseCFS"), 200000);
    EXPECT_EQ(t.at("containerCeilCFS"), 600000);
    EXPECT_EQ(t.at("containerCurCFS"), g.current);
    EXPECT_EQ(t.at("containerTargetCFS"), g.want);
    EXPECT_EQ(t.at("nrThrottled"), 4);
    EXPECT_NE(term_text(*u[0], "containerBaseCFS").find("pod spec"), std::string::npos);
  }
}

// A lone node (the pod known from the samples only): the base is the container's quota in the
// first sample that listed it. Throttled rounds scale it by 1.2 up to base x 300 %, an overloaded
// node scales it down by 0.8, and a policy without cfs-quota burst resets it; the sampled quota
// is what the executor wrote (as on a node that enforces).
TEST(KoordletCfsBurst, LoneNodeScalesFromTheFirstSampledQuotaToTheCeilingAndBack) {
  lone_node n;
  auto& log = n.log;
  auto& c = n.c;
  std::int64_t pod = 50000, ctr = 50000, t = 0;
  std::vector<std::int64_t> seen;
  auto round = [&](std::int64_t node_cpu, std::int64_t throttled) {
    const auto from = log.records.size();
    t += 1000;
    sample(log, t, node_cpu,
           {{"uid-1", wire::QoSClass::LS, pod, {{"ctr", ctr, 10, throttled, 500}}, 500}});
    const auto out = feed(c, log, from);
    const auto u = cgroup_updates(out);
    if (u.empty()) return false;
    EXPECT_EQ(u.size(), 1u);
    for (const auto& [k, v] : settings_of(*u[0])) {
      if (k == "cpu.cfs_quota_us") pod = std::stoll(v);
      if (k == "ctr/cpu.cfs_quota_us") ctr = std::stoll(v);
    }
    EXPECT_NE(term_text(*u[0], "containerBaseCFS").find("first sampled quota"), std::string::npos);
    EXPECT_EQ(terms_of(u[0]->inputs()).at("containerBaseCFS"), 50000);
    seen.push_back(ctr);
    return true;
  };
  // Not throttled: remain.
  EXPECT_FALSE(round(500, 0));
  int ups = 0;
  while (round(600, 10) && ups < 20) ++ups;
  EXPECT_EQ(ups, 7);  // 60000 72000 86400 103680 124416 149299 150000
  EXPECT_EQ((std::vector<std::int64_t>{60000, 72000, 86400, 103680, 124416, 149299, 150000}), seen);
  EXPECT_EQ(ctr, 150000);
  EXPECT_EQ(pod, 150000);  // the pod's quota moves by the container's delta
  EXPECT_EQ(c.cfs_burst().first_quota("uid-1", "ctr"), 50000);

  auto node_slo = [&](std::string_view spec) {
    auto& fbb = log.b.fbb();
    const auto sp = fbb.CreateString(spec);
    const auto from = log.records.size();
    log.append(t + 1, wire::EntityKind::Node, "n1", wire::CreateNodeSLOUpdated(fbb, sp),
               "slo-controller");
    EXPECT_TRUE(cgroup_updates(feed(c, log, from)).empty());
  };
  // The share pool's threshold lowered to 20 % by the node's NodeSLO: 0.6 of 2 cores is an
  // overload. Down by 0.8 per round.
  seen.clear();
  node_slo(R"({"cpuBurstStrategy":{"policy":"cfsQuotaBurstOnly","sharePoolThresholdPercent":20}})");
  EXPECT_TRUE(round(600, 10));
  EXPECT_TRUE(round(600, 10));
  EXPECT_EQ((std::vector<std::int64_t>{120000, 96000}), seen);
  EXPECT_EQ(pod, 96000);

  // The policy switched to cpuBurstOnly by the node's NodeSLO: back to the base at once. Until
  // that reset the collector is asked for containers' quotas although the policy needs none.
  EXPECT_TRUE(c.wants_container_bandwidth());
  seen.clear();
  node_slo(R"({"cpuBurstStrategy":{"policy":"cpuBurstOnly","cpuBurstPercent":100}})");
  EXPECT_TRUE(c.wants_container_bandwidth()) << "96000 awaits its reset";
  EXPECT_TRUE(round(600, 10));
  EXPECT_EQ((std::vector<std::int64_t>{50000}), seen);
  EXPECT_EQ(ctr, 50000);
  EXPECT_EQ(pod, 50000);
  EXPECT_TRUE(c.wants_container_bandwidth()) << "the reset is not sampled yet";
  EXPECT_FALSE(round(600, 10));  // at the base: nothing more
  EXPECT_FALSE(c.wants_container_bandwidth()) << "back at the base";
}

// A log whose older samples were trimmed: the component reads the lone-node base back from its
// own decisions, so a sample that shows the raised quota first does not become the base.
TEST(KoordletCfsBurst, TheBaseIsReadBackFromOwnDecisionsWhenTheFirstSamplesAreGone) {
  lone_node n;
  auto from = n.log.records.size();
  sample(n.log, 1000, 600,
         {{"uid-1", wire::QoSClass::LS, 50000, {{"ctr", 50000, 10, 0, 500}}, 500}});
  (void)feed(n.c, n.log, from);
  from = n.log.records.size();
  sample(n.log, 2000, 600,
         {{"uid-1", wire::QoSClass::LS, 50000, {{"ctr", 50000, 10, 10, 500}}, 500}});
  auto decisions = feed(n.c, n.log, from);
  ASSERT_EQ(cgroup_updates(decisions).size(), 1u);  // 50000 -> 60000, base the first sample

  // The trimmed log: the node, the decision, then a sample showing 60000.
  lone_node m;
  for (auto& d : decisions) (void)m.log.append_bytes(std::move(d));
  from = m.log.records.size() - 1;
  sample(m.log, 3000, 600,
         {{"uid-1", wire::QoSClass::LS, 60000, {{"ctr", 60000, 10, 10, 500}}, 500}});
  const auto out = feed(m.c, m.log, from);
  EXPECT_EQ(m.c.cfs_burst().first_quota("uid-1", "ctr"), 50000);
  const auto u = cgroup_updates(out);
  ASSERT_EQ(u.size(), 1u);
  EXPECT_EQ(terms_of(u[0]->inputs()).at("containerBaseCFS"), 50000);
  EXPECT_EQ(terms_of(u[0]->inputs()).at("containerTargetCFS"), 72000);
}

// The collector reads containers' quotas and throttling only while cfs-quota burst needs them:
// the CPUBurst gate with a policy that has it, or a raised quota not yet reset, which is forgotten
// with its pod.
TEST(KoordletCfsBurst, ContainerBandwidthIsWantedOnlyWhileCfsQuotaBurstNeedsIt) {
  EXPECT_FALSE(
      koordlet_component(burst_options(kl::cpu_burst_policy::none)).wants_container_bandwidth());
  EXPECT_FALSE(koordlet_component(burst_options(kl::cpu_burst_policy::cpu_burst_only))
                   .wants_container_bandwidth());
  EXPECT_TRUE(koordlet_component(burst_options(kl::cpu_burst_policy::auto_burst))
                  .wants_container_bandwidth());
  auto gated = burst_options(kl::cpu_burst_policy::cfs_quota_burst_only);
  gated.gates.cpu_burst = false;
  EXPECT_FALSE(koordlet_component(gated).wants_container_bandwidth());

  lone_node n;
  auto& log = n.log;
  auto& c = n.c;
  EXPECT_TRUE(c.wants_container_bandwidth());
  // One scale-up, then the policy goes to none.
  auto from = log.records.size();
  sample(log, 1000, 600, {{"uid-1", wire::QoSClass::LS, 50000, {{"ctr", 50000, 10, 0, 500}}, 500}});
  (void)feed(c, log, from);
  from = log.records.size();
  sample(log, 2000, 600,
         {{"uid-1", wire::QoSClass::LS, 50000, {{"ctr", 50000, 10, 10, 500}}, 500}});
  ASSERT_EQ(cgroup_updates(feed(c, log, from)).size(), 1u);
  EXPECT_TRUE(c.cfs_burst().any_off_base());
  from = log.records.size();
  auto& fbb = log.b.fbb();
  const auto sp = fbb.CreateString(R"({"cpuBurstStrategy":{"policy":"none"}})");
  log.append(2001, wire::EntityKind::Node, "n1", wire::CreateNodeSLOUpdated(fbb, sp),
             "slo-controller");
  (void)feed(c, log, from);
  EXPECT_TRUE(c.wants_container_bandwidth());
  // A sample without the containers' quotas (the pod is there): still wanted.
  from = log.records.size();
  sample(log, 3000, 600, {{"uid-1", wire::QoSClass::LS, 60000, {}, 500}});
  EXPECT_TRUE(cgroup_updates(feed(c, log, from)).empty());
  EXPECT_TRUE(c.wants_container_bandwidth());
  // The pod gone from the samples: its raised quota went with it.
  from = log.records.size();
  sample(log, 4000, 600, {});
  (void)feed(c, log, from);
  EXPECT_FALSE(c.wants_container_bandwidth());
}

// Pods Koordinator does not handle (Raw QoS BE, LSR) and containers without a quota get nothing.
TEST(KoordletCfsBurst, BestEffortLsrAndUnlimitedContainersAreLeftAlone) {
  event_log log;
  log.node(0, "n1", cpu_mem(8000, 8 * gib), cpu_mem(8000, 8 * gib));
  koordlet_component c(burst_options(kl::cpu_burst_policy::auto_burst));
  (void)feed(c, log);
  for (int i = 1; i <= 3; ++i) {
    const auto from = log.records.size();
    sample(log, i * 1000, 1000,
           {{"be-1", wire::QoSClass::BE, 50000, {{"b", 50000, 10, 10, 500}}, 500},
            {"lsr-1", wire::QoSClass::LSR, 50000, {{"r", 50000, 10, 10, 500}}, 500},
            {"ls-1", wire::QoSClass::LS, -1, {{"u", -1, -1, -1, 500}}, 500}});
    EXPECT_TRUE(cgroup_updates(feed(c, log, from)).empty());
  }
}

}  // namespace
}  // namespace colony::koordlet_actor
