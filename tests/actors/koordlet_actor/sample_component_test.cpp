// koordlet_component fed by a node's collectors (NodeUsageSampled): pods taken from the samples,
// one plugin round per sample (the cfsQuota suppression checked against the policy over the same
// inputs), the NodeMetric report every report interval from the samples' window, and its own
// report not run as a second round.
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

struct pod_sample {
  std::string pod;
  wire::QoSClass qos;
  wire::KubeQoSClass kube;
  std::int64_t cpu_milli;
  std::int64_t memory;
};

std::uint64_t sample(event_log& log, std::int64_t t, std::int64_t node_cpu, std::int64_t node_mem,
                     const std::vector<pod_sample>& pods) {
  auto& fbb = log.b.fbb();
  std::vector<flatbuffers::Offset<wire::PodSample>> v;
  for (const auto& p : pods) {
    const auto key = fbb.CreateString(p.pod);
    const auto uid = fbb.CreateString(p.pod);
    const auto u = log.b.resources(cpu_mem(p.cpu_milli, p.memory));
    v.push_back(wire::CreatePodSample(fbb, key, uid, u, p.qos, p.kube));
  }
  const auto pv = fbb.CreateVector(v);
  const auto n = fbb.CreateString("n1");
  const auto nu = log.b.resources(cpu_mem(node_cpu, node_mem));
  return log.append(t, wire::EntityKind::Node, "n1",
                    wire::CreateNodeUsageSampled(fbb, n, 500, nu, pv), "bridge/node");
}

koordlet_options cfs_options() {
  koordlet_options o;
  o.node = "n1";
  o.threshold.enable = true;
  o.threshold.cpu_suppress_policy = kl::cpu_suppress_policy_type::cfs_quota;
  o.threshold.cpu_suppress_threshold_percent = 90;
  o.report_interval_ms = 1000;
  return o;
}

std::vector<const wire::Envelope*> of_type(std::vector<messages::byte_buffer>&&,
                                           wire::Payload) = delete;
std::vector<const wire::Envelope*> of_type(const std::vector<messages::byte_buffer>& out,
                                           wire::Payload t) {
  std::vector<const wire::Envelope*> r;
  for (const auto& b : out)
    if (decoded(b).payload_type() == t) r.push_back(&decoded(b));
  return r;
}

TEST(KoordletSamples, EachSampleRunsTheCfsQuotaPolicyOverThePodsItLists) {
  event_log log;
  log.node(0, "n1", cpu_mem(2000, 8 * gib), cpu_mem(2000, 8 * gib));
  koordlet_component c(cfs_options());
  EXPECT_TRUE(feed(c, log).empty());
  // LS (burstable tier) uses 1 core, BE 0.8; the node 1.9 (0.1 system).
  const std::vector<pod_sample> pods{
      {"ls-1", wire::QoSClass::LS, wire::KubeQoSClass::Burstable, 1000, gib},
      {"be-1", wire::QoSClass::BE, wire::KubeQoSClass::BestEffort, 800, gib}};
  const auto from = log.records.size();
  const auto s = sample(log, 500, 1900, 3 * gib, pods);
  const auto out = feed(c, log, from);
  ASSERT_EQ(c.pods().size(), 2u);
  EXPECT_EQ(c.pods()[0].kube_qos_class, kl::kube_qos::best_effort);
  EXPECT_EQ(c.pods()[0].qos, kl::qos_class::be);
  EXPECT_EQ(c.pods()[1].qos, kl::qos_class::ls);

  // The policy over the same inputs: 2000 x 90 % - 1000 (LS) - 100 (system) = 700 milli (701:
  // system = 1.9 - 1.8 cores in floating point, truncated to milli as Go's int64() does).
  kl::cpu_suppress_input in;
  const auto node = c.node();
  const auto pv = c.pods();
  in.node = &node;
  in.pods = pv;
  in.node_cpu_used_cores = 1.9;
  const auto d = kl::suppress_be_cpu(in, c.threshold(), {}, {});
  ASSERT_EQ(d.action, kl::suppress_action::cfs_quota);
  EXPECT_NEAR(static_cast<double>(d.suppress.suppress_milli), 700, 1);
  EXPECT_EQ(d.cfs_quota.quota_us, d.suppress.suppress_milli * 100);

  const auto be = of_type(out, wire::Payload::BeSuppressed);
  ASSERT_EQ(be.size(), 1u);
  EXPECT_EQ(be[0]->causation(), static_cast<std::int64_t>(s));
  EXPECT_EQ(to_string_view(be[0]->payload_as_BeSuppressed()->policy()), "cfsQuota");
  EXPECT_EQ(be[0]->payload_as_BeSuppressed()->be_cpu_milli(), d.suppress.suppress_milli);
  EXPECT_EQ(terms_of(be[0]->payload_as_BeSuppressed()->inputs()).at("cfsQuotaUs"),
            d.cfs_quota.quota_us);
  EXPECT_TRUE(of_type(out, wire::Payload::NodeMetricReported).empty());  // not due yet

  // LS load gone: the quota grows by at most 10 % of the node per round (20000 us on 2 cores).
  const auto from2 = log.records.size();
  sample(log, 1000, 900, 3 * gib,
         {{"ls-1", wire::QoSClass::LS, wire::KubeQoSClass::Burstable, 0, gib},
          {"be-1", wire::QoSClass::BE, wire::KubeQoSClass::BestEffort, 800, gib}});
  const auto out2 = feed(c, log, from2);
  const auto be2 = of_type(out2, wire::Payload::BeSuppressed);
  ASSERT_EQ(be2.size(), 1u);
  EXPECT_EQ(terms_of(be2[0]->payload_as_BeSuppressed()->inputs()).at("cfsQuotaUs"),
            d.cfs_quota.quota_us + 20000);
  EXPECT_EQ(terms_of(be2[0]->payload_as_BeSuppressed()->inputs()).at("stepLimited"), 1);
}

TEST(KoordletSamples, ReportsNodeMetricEveryIntervalAndItsOwnReportIsNoRound) {
  event_log log;
  log.node(0, "n1", cpu_mem(2000, 8 * gib), cpu_mem(2000, 8 * gib));
  koordlet_component c(cfs_options());
  (void)feed(c, log);
  const std::vector<pod_sample> pods{
      {"ls-1", wire::QoSClass::LS, wire::KubeQoSClass::Burstable, 600, gib},
      {"be-1", wire::QoSClass::BE, wire::KubeQoSClass::BestEffort, 200, 2 * gib}};
  std::size_t reports = 0, samples = 0;
  for (std::int64_t t = 500; t <= 5000; t += 500) {
    const auto from = log.records.size();
    const auto s = sample(log, t, 900, 4 * gib, pods);
    ++samples;
    const auto out = feed(c, log, from);
    const auto r = of_type(out, wire::Payload::NodeMetricReported);
    // The first report a report interval (1 s) after the first sample, then every second.
    const bool due = t >= 1500 && (t - 1500) % 1000 == 0;
    ASSERT_EQ(r.size(), due ? 1u : 0u) << "t=" << t;
    if (!due) continue;
    ++reports;
    EXPECT_EQ(r[0]->causation(), static_cast<std::int64_t>(s));
    EXPECT_EQ(to_string_view(r[0]->source()), "koordlet/n1");
    const auto& m = *r[0]->payload_as_NodeMetricReported();
    EXPECT_EQ(m.update_time_ms(), t);
    EXPECT_EQ(m.report_interval_ms(), 1000);
    ASSERT_NE(m.node_usage(), nullptr);
    EXPECT_EQ(m.node_usage()->cpu_milli(), 900);
    EXPECT_EQ(m.node_usage()->memory_bytes(), 4 * gib);
    ASSERT_NE(m.pods(), nullptr);
    ASSERT_EQ(m.pods()->size(), 2u);
    EXPECT_EQ(to_string_view(m.pods()->Get(0)->pod()), "be-1");
    EXPECT_EQ(m.pods()->Get(0)->qos_class(), wire::QoSClass::BE);
    EXPECT_EQ(m.pods()->Get(0)->usage()->memory_bytes(), 2 * gib);
    EXPECT_EQ(m.pods()->Get(1)->qos_class(), wire::QoSClass::LS);
    EXPECT_EQ(m.pods()->Get(1)->usage()->cpu_milli(), 600);
    // The report comes back through the log: no second round, nothing emitted.
    const auto back = log.append_bytes(out.back());
    EXPECT_TRUE(feed(c, log, back).empty());
  }
  EXPECT_EQ(samples, 10u);
  EXPECT_EQ(reports, 4u);  // 1.5, 2.5, 3.5, 4.5 s
}

TEST(KoordletSamples, APodNoLongerSampledIsDroppedButAPlacedPodStays) {
  event_log log;
  log.node(0, "n1", cpu_mem(2000, 8 * gib), cpu_mem(2000, 8 * gib));
  log.mutated(1, "default/placed", wire::QoSClass::LS, wire::PriorityClass::Prod, 9000,
              cpu_mem(500, gib), cpu_mem(500, gib));
  log.scheduled(2, "default/placed", "n1", cpu_mem(500, gib));
  koordlet_component c(cfs_options());
  (void)feed(c, log);
  ASSERT_EQ(c.pods().size(), 1u);
  auto from = log.records.size();
  sample(log, 500, 900, 4 * gib,
         {{"default/placed", wire::QoSClass::LS, wire::KubeQoSClass::Guaranteed, 300, gib},
          {"u-2", wire::QoSClass::BE, wire::KubeQoSClass::BestEffort, 200, gib}});
  (void)feed(c, log, from);
  ASSERT_EQ(c.pods().size(), 2u);
  EXPECT_EQ(c.pods()[0].cpu_used_cores, 0.3);  // the placed pod's usage from the sample
  from = log.records.size();
  sample(log, 1000, 900, 4 * gib, {});
  (void)feed(c, log, from);
  ASSERT_EQ(c.pods().size(), 1u);
  EXPECT_EQ(c.pods()[0].name, "placed");
}

}  // namespace
}  // namespace colony::koordlet_actor
