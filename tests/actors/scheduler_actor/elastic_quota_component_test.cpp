// scheduler_component with ElasticQuota enabled: pods over their quota's runtime are refused
// at PreFilter with ElasticQuota's reason while another quota's pods bind.
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "actors/scheduler/actor/scheduler_component.hpp"
#include "actors/scheduler/elastic_quota.hpp"
#include "messages/names.hpp"
#include "tests/actors/quota_actor/quota_test_events.hpp"
#include "tests/actors/scheduler_actor/component_rig.hpp"

namespace colony {
namespace {

using messages::to_string_view;
using testing::cpu_mem;
using testing::gib;

scheduler::scheduler_component_options quota_options(bool enable) {
  scheduler::scheduler_component_options o;
  o.elastic_quota = enable;
  return o;
}

struct quota_rig : testing::component_rig {
  testing::quota_event_factory q;
  explicit quota_rig(bool enable = true) : component_rig(quota_options(enable)) {}
};

struct outcome_of {
  std::map<std::string, std::string> proposed;       // pod -> node
  std::map<std::string, std::string> unschedulable;  // pod -> "plugin: reason"
};

outcome_of read(const std::vector<messages::byte_buffer>& out) {
  outcome_of o;
  for (const auto& r : out) {
    const auto& env = testing::env_of(r);
    if (const auto* p = env.payload_as_PodBindProposed())
      o.proposed[std::string(to_string_view(p->pod()))] = std::string(to_string_view(p->node()));
    if (const auto* u = env.payload_as_PodUnschedulable()) {
      std::string why;
      if (u->reasons() && u->reasons()->size() > 0)
        why = std::string(to_string_view(u->reasons()->Get(0)->plugin())) + ": " +
              std::string(to_string_view(u->reasons()->Get(0)->reason()));
      o.unschedulable[std::string(to_string_view(u->pod()))] = why;
    }
  }
  return o;
}

std::vector<messages::byte_buffer> two_quotas(quota_rig& r) {
  // 16 cores; qa may use at most 2 cores, qb 8.
  return {r.f.node(0, "n1", 8000, 32 * gib),
          r.f.node(0, "n2", 8000, 32 * gib),
          r.q.quota(0, "qa", cpu_mem(1000, gib), cpu_mem(2000, 64 * gib)),
          r.q.quota(0, "qb", cpu_mem(1000, gib), cpu_mem(8000, 64 * gib)),
          r.q.pod(1, "ns/a1", 1000, gib, "qa"),
          r.q.pod(1, "ns/a2", 1000, gib, "qa"),
          r.q.pod(1, "ns/a3", 1000, gib, "qa"),
          r.q.pod(1, "ns/b1", 3000, gib, "qb"),
          r.q.pod(1, "ns/b2", 3000, gib, "qb")};
}

TEST(SchedulerComponentElasticQuota, PodsBeyondTheirQuotaAreUnschedulableOthersBind) {
  quota_rig r;
  const auto o = read(r.batch(two_quotas(r)));
  // qa's runtime is 2000m (its max): two 1000m pods fit, the third does not.
  EXPECT_TRUE(o.proposed.count("ns/a1"));
  EXPECT_TRUE(o.proposed.count("ns/a2"));
  ASSERT_TRUE(o.unschedulable.count("ns/a3"));
  // The reason is Koordinator's message: "Insufficient quotas, quotaName: qa, runtime: ...".
  EXPECT_TRUE(o.unschedulable.at("ns/a3").starts_with(
      std::string("ElasticQuota: ") + std::string(scheduler::err_insufficient_quotas) +
      ", quotaName: qa"))
      << o.unschedulable.at("ns/a3");
  // qb's pods bind.
  EXPECT_TRUE(o.proposed.count("ns/b1"));
  EXPECT_TRUE(o.proposed.count("ns/b2"));
  EXPECT_EQ(o.unschedulable.size(), 1u);
  const auto* tree = r.s->quota_tree();
  ASSERT_NE(tree, nullptr);
  EXPECT_EQ(tree->status("qa")->used.cpu_milli, 2000);  // Reserve booked the two proposals
  EXPECT_EQ(tree->status("qb")->used.cpu_milli, 6000);
}

TEST(SchedulerComponentElasticQuota, WithoutTheOptionQuotasAreIgnored) {
  quota_rig r(false);
  const auto o = read(r.batch(two_quotas(r)));
  EXPECT_EQ(o.proposed.size(), 5u);
  EXPECT_TRUE(o.unschedulable.empty());
  EXPECT_EQ(r.s->quota_tree(), nullptr);
}

// A rejected proposal gives its quota back; a finished pod too: the refused pod then fits.
TEST(SchedulerComponentElasticQuota, RejectionAndFinishReleaseQuota) {
  quota_rig r;
  const auto first = r.batch(two_quotas(r));
  const auto o = read(first);
  ASSERT_TRUE(o.proposed.count("ns/a1"));
  // Rejection of a1's proposal (the handler matches pod, node and scheduler): qa's used drops.
  (void)r.batch({r.f.rejected(2, "ns/a1", o.proposed.at("ns/a1"), 0, "koord-scheduler/a")});
  EXPECT_EQ(r.s->quota_tree()->pod("ns/a1")->assigned, false);
  // a2 binds, then finishes: room in qa for the others after their backoff.
  (void)r.batch(
      {r.f.scheduled(3, "ns/a2", o.proposed.at("ns/a2"), 1000, gib, 0, "koord-scheduler/a"),
       r.q.finished(4, "ns/a2")});
  EXPECT_EQ(r.s->quota_tree()->pod("ns/a2"), nullptr);
  const auto later = read(r.batch({r.f.tick(60'000)}));
  EXPECT_TRUE(later.proposed.count("ns/a1"));
  EXPECT_TRUE(later.proposed.count("ns/a3"));
  EXPECT_TRUE(later.unschedulable.empty());
  EXPECT_EQ(r.s->quota_tree()->status("qa")->used.cpu_milli, 2000);
}

// The preemptible label: a non-preemptible pod is limited to its quota's min.
TEST(SchedulerComponentElasticQuota, NonPreemptiblePodsAreLimitedToMin) {
  quota_rig r;
  const auto o = read(
      r.batch({r.f.node(0, "n1", 8000, 32 * gib),
               r.q.quota(0, "qa", cpu_mem(1000, gib), cpu_mem(4000, 64 * gib)),
               r.q.pod(1, "ns/np1", 1000, gib, "qa", true),
               r.q.pod(1, "ns/np2", 1000, gib, "qa", true), r.q.pod(1, "ns/p3", 1000, gib, "qa")}));
  EXPECT_TRUE(o.proposed.count("ns/np1"));
  ASSERT_TRUE(o.unschedulable.count("ns/np2"));
  EXPECT_TRUE(o.unschedulable.at("ns/np2").starts_with(
      std::string("ElasticQuota: ") +
      std::string(scheduler::err_insufficient_non_preemptible_quotas) + ", quotaName: qa"))
      << o.unschedulable.at("ns/np2");
  EXPECT_TRUE(o.proposed.count("ns/p3"));
}

// PostFilter preemption (ElasticQuota in the shipped profile's postFilter): a high-priority pod
// its quota refuses evicts a lower-priority pod of the same quota (PodEvicted, Preempted, naming
// the preemptor and the node), once; when the eviction comes back, it binds.
TEST(SchedulerComponentElasticQuota, PreemptionEvictsALowerPriorityPodOfTheSameQuota) {
  quota_rig r;
  auto first =
      read(r.batch({r.f.node(0, "n1", 8000, 32 * gib),
                    r.q.quota(0, "qa", cpu_mem(1000, gib), cpu_mem(2000, 64 * gib)),
                    r.q.pod(1, "ns/a1", 1000, gib, "qa"), r.q.pod(1, "ns/a2", 1000, gib, "qa")}));
  ASSERT_EQ(first.proposed.size(), 2u);
  (void)r.batch({r.f.scheduled(2, "ns/a1", "n1", 1000, gib, 0, "koord-scheduler/a"),
                 r.f.scheduled(2, "ns/a2", "n1", 1000, gib, 1, "koord-scheduler/a")});
  // The preemptor: qa, priority 9000 (its webhook mutation), refused by the quota.
  auto& f = r.f.b.fbb();
  auto n = f.CreateString("ns/hi");
  auto sn = f.CreateString("koord-scheduler");
  auto rq = r.f.b.resources(cpu_mem(1000, gib));
  wire::PodMutatedBuilder mb(f);
  mb.add_name(n);
  mb.add_scheduler_name(sn);
  mb.add_requests(rq);
  mb.add_priority(9000);
  auto mut = mb.Finish();
  auto out = r.batch(
      {r.q.pod(3, "ns/hi", 1000, gib, "qa"),
       r.f.b.finish(
           messages::header{event_time{3}, wire::EntityKind::Pod, "ns/hi", -1, "admission"}, mut)});
  std::vector<std::string> evicted;
  bool unschedulable = false;
  for (const auto& rec : out) {
    const auto& env = testing::env_of(rec);
    if (const auto* e = env.payload_as_PodEvicted()) {
      EXPECT_EQ(e->reason(), wire::EvictionReason::Preempted);
      EXPECT_EQ(to_string_view(e->node()), "n1");
      EXPECT_NE(to_string_view(e->message()).find("preempted by ns/hi on node n1"),
                std::string_view::npos);
      EXPECT_EQ(e->released()->cpu_milli(), 1000);
      evicted.emplace_back(to_string_view(e->pod()));
    }
    if (env.payload_as_PodUnschedulable() != nullptr) unschedulable = true;
  }
  ASSERT_EQ(evicted.size(), 1u);  // one 1000m victim makes room
  EXPECT_TRUE(evicted[0] == "ns/a1" || evicted[0] == "ns/a2") << evicted[0];
  EXPECT_TRUE(unschedulable);
  // Retried before the eviction comes back: the same victim is not evicted twice.
  auto again = r.batch({r.f.tick(20'000)});
  for (const auto& rec : again)
    EXPECT_EQ(testing::env_of(rec).payload_as_PodEvicted(), nullptr) << "victim evicted twice";
  // The eviction comes back (the log hands the component its own record): the pod binds.
  std::vector<messages::byte_buffer> back;
  for (const auto& rec : out)
    if (testing::env_of(rec).payload_as_PodEvicted() != nullptr) back.push_back(rec);
  back.push_back(r.f.tick(60'000));
  const auto o = read(r.batch(std::move(back)));
  EXPECT_EQ(o.proposed.count("ns/hi"), 1u);
  EXPECT_EQ(r.s->quota_tree()->status("qa")->used.cpu_milli, 2000);
}

// ElasticQuotaIgnorePodOverhead (koord-scheduler --feature-gates): a pod asking 2 cores with
// 500m of spec.overhead (PodRequests 2500m) in a quota of at most 2 cores is refused by the
// quota with the gate off and binds with it on, booking 2000m.
TEST(SchedulerComponentElasticQuota, IgnorePodOverheadGateTakesTheOverheadOutOfTheQuota) {
  for (const bool gate : {false, true}) {
    SCOPED_TRACE(gate ? "gate on" : "gate off");
    auto o = quota_options(true);
    o.elastic_quota_ignore_pod_overhead = gate;
    testing::component_rig r(o);
    testing::quota_event_factory q;
    messages::event_builder b;
    auto& fbb = b.fbb();
    const auto name = fbb.CreateString("ns/o1");
    const auto uid = fbb.CreateString("uid-o1");
    const auto req = b.resources(cpu_mem(2500, 2 * gib));
    const auto lim = b.resources({});
    const auto labels = b.key_values({{std::string(names::label_quota_name), "qo"}});
    const auto sched = fbb.CreateString("koord-scheduler");
    const auto oh = b.resources(cpu_mem(500, 0));
    const auto payload =
        wire::CreatePodSubmitted(fbb, name, uid, req, lim, 0, false, 0, labels, 0, sched,
                                 wire::KubeQoSClass::Burstable, 0, 0, -1, oh);
    auto pod = b.finish(messages::header{event_time{1}, wire::EntityKind::Pod, "ns/o1", -1, "test"},
                        payload);
    const auto out = read(
        r.batch({r.f.node(0, "n1", 8000, 32 * gib),
                 q.quota(0, "qo", cpu_mem(1000, gib), cpu_mem(2000, 64 * gib)), std::move(pod)}));
    EXPECT_EQ(out.proposed.count("ns/o1"), gate ? 1u : 0u);
    EXPECT_EQ(out.unschedulable.count("ns/o1"), gate ? 0u : 1u);
    if (gate) EXPECT_EQ(r.s->quota_tree()->status("qo")->used.cpu_milli, 2000);
  }
}

TEST(SchedulerComponentElasticQuota, SameEventsGiveSameBytes) {
  auto run = [] {
    quota_rig r;
    auto out = r.batch(two_quotas(r));
    auto more = r.batch({r.q.finished(2, "ns/a1"), r.f.tick(60'000)});
    out.insert(out.end(), more.begin(), more.end());
    return out;
  };
  EXPECT_EQ(run(), run());
}

}  // namespace
}  // namespace colony
