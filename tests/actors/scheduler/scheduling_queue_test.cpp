// Scheduling queue semantics (kube-scheduler internal/queue/scheduling_queue.go) with event
// time as an argument.
#include <gtest/gtest.h>

#include "actors/scheduler/coscheduling.hpp"
#include "actors/scheduler/scheduling_queue.hpp"
#include "tests/actors/scheduler/test_helpers.hpp"

namespace colony::scheduler {
namespace {

using namespace testing;

event_time at(std::int64_t ms) { return event_time{ms}; }

pod_info prio_pod(std::string key, std::int32_t prio) {
  pod_info p = make_pod(std::move(key));
  p.priority = prio;
  return p;
}

std::vector<std::string> drain(scheduling_queue& q, event_time now) {
  std::vector<std::string> out;
  while (auto p = q.pop(now)) out.push_back(p->pod.key);
  return out;
}

TEST(SchedulingQueue, ActiveQOrdersByPriorityThenEnqueueTimeThenKey) {
  scheduling_queue q;
  q.add(prio_pod("ns/late-high", 100), at(3));
  q.add(prio_pod("ns/b", 10), at(1));
  q.add(prio_pod("ns/a", 10), at(1));
  q.add(prio_pod("ns/early", 10), at(0));
  EXPECT_EQ(q.active_order(),
            (std::vector<std::string>{"ns/late-high", "ns/early", "ns/a", "ns/b"}));
  EXPECT_EQ(drain(q, at(5)),
            (std::vector<std::string>{"ns/late-high", "ns/early", "ns/a", "ns/b"}));
}

TEST(SchedulingQueue, BackoffDoublesFromOneSecondUpToTen) {
  scheduling_queue q;
  std::vector<std::int64_t> got;
  for (int a = 1; a <= 6; ++a) got.push_back(q.backoff_duration(a).value);
  EXPECT_EQ(got, (std::vector<std::int64_t>{1000, 2000, 4000, 8000, 10000, 10000}));
}

TEST(SchedulingQueue, UnschedulablePodsWaitForAnEventOrSixtySeconds) {
  scheduling_queue q;
  q.add(make_pod("ns/p"), at(0));
  auto p = q.pop(at(0));
  ASSERT_TRUE(p);
  EXPECT_EQ(p->attempts, 1);
  q.requeue(*p, at(100));
  EXPECT_EQ(q.unschedulable_size(), 1u);
  EXPECT_FALSE(q.pop(at(50'000)));
  EXPECT_FALSE(q.pop(at(60'100)));  // exactly 60 s: not yet (strictly longer)
  auto again = q.pop(at(60'101));
  ASSERT_TRUE(again);
  EXPECT_EQ(again->attempts, 2);
}

TEST(SchedulingQueue, ClusterEventMovesUnschedulableToBackoffThenActive) {
  scheduling_queue q;
  q.add(make_pod("ns/p"), at(0));
  auto p = q.pop(at(0));
  q.requeue(*p, at(0));  // attempts 1 -> backoff 1 s from t=0
  q.move_all_to_active_or_backoff(at(500));
  EXPECT_EQ(q.backoff_size(), 1u);
  EXPECT_FALSE(q.pop(at(999)));
  EXPECT_TRUE(q.pop(at(1000)));
  // After its backoff an event moves it straight to activeQ.
  q.add(make_pod("ns/r"), at(2000));
  auto r = q.pop(at(2000));
  q.requeue(*r, at(2000));
  q.move_all_to_active_or_backoff(at(5000));
  EXPECT_EQ(q.active_size(), 1u);
}

TEST(SchedulingQueue, MoveRequestDuringTheCycleSendsTheFailedPodToBackoff) {
  scheduling_queue q;
  q.add(make_pod("ns/p"), at(0));
  auto p = q.pop(at(0));
  q.move_all_to_active_or_backoff(at(10));  // a node was added while p was being scheduled
  q.requeue(*p, at(20));
  EXPECT_EQ(q.backoff_size(), 1u);
  EXPECT_EQ(q.unschedulable_size(), 0u);
  EXPECT_TRUE(q.pop(at(1020)));
  // An error always backs off.
  q.add(make_pod("ns/e"), at(2000));
  auto e = q.pop(at(2000));
  q.requeue(*e, at(2000), /*error=*/true);
  EXPECT_EQ(q.backoff_size(), 1u);
}

TEST(SchedulingQueue, RemoveAndUpdate) {
  scheduling_queue q;
  q.add(prio_pod("ns/a", 1), at(0));
  q.add(prio_pod("ns/b", 2), at(0));
  q.update(prio_pod("ns/a", 3), at(1));
  EXPECT_EQ(q.active_order(), (std::vector<std::string>{"ns/a", "ns/b"}));
  EXPECT_TRUE(q.remove("ns/a"));
  EXPECT_FALSE(q.remove("ns/a"));
  EXPECT_EQ(drain(q, at(2)), std::vector<std::string>{"ns/b"});
}

TEST(SchedulingQueue, GangMembersAreGatedThenReleasedTogether) {
  auto gang = std::make_shared<coscheduling>();
  pod_group pg;
  pg.namespace_name = "ns";
  pg.name = "g";
  pg.min_member = 3;
  gang->on_pod_group_add(pg);
  queue_options opts;
  opts.pre_enqueue = [gang](const pod_info& p, event_time now) {
    return gang->pre_enqueue(p, now);
  };
  opts.group_of = [gang](const pod_info& p) { return gang->gang_group_id_of(p); };
  scheduling_queue q(opts);
  q.add(prio_pod("ns/other", 0), at(0));
  for (int i = 0; i < 3; ++i) {
    pod_info p = prio_pod("ns/m" + std::to_string(i), 0);
    p.gang.name = "g";
    p.gang.pod_group_label = true;
    gang->on_pod_add(p);
    q.add(p, at(10 + i));
    if (i < 2) {
      EXPECT_EQ(q.active_size(), 1u) << "member " << i << " must stay gated";
    }
  }
  // The third member passes the gate; the gated two come along with the group's earliest time.
  EXPECT_EQ(q.active_size(), 4u);
  EXPECT_EQ(q.active_order(), (std::vector<std::string>{"ns/other", "ns/m0", "ns/m1", "ns/m2"}));
}

TEST(SchedulingQueue, GangMembersInBackoffMoveWithTheGroup) {
  queue_options opts;
  opts.group_of = [](const pod_info& p) {
    return p.gang.name.empty() ? std::string{} : "ns/" + p.gang.name;
  };
  scheduling_queue q(opts);
  pod_info a = make_pod("ns/a");
  a.gang.name = "g";
  pod_info b = make_pod("ns/b");
  b.gang.name = "g";
  q.add(a, at(0));
  q.add(b, at(0));
  auto pa = q.pop(at(0));
  auto pb = q.pop(at(0));
  q.requeue(*pa, at(0), true);  // backoff 1 s
  q.move_all_to_active_or_backoff(at(0));
  pb->attempts = 4;  // a long backoff (8 s)
  q.requeue(*pb, at(0), true);
  EXPECT_EQ(q.backoff_size(), 2u);
  // a's backoff ends at 1 s; b is released with it.
  auto first = q.pop(at(1000));
  auto second = q.pop(at(1000));
  ASSERT_TRUE(first && second);
  EXPECT_EQ(first->pod.key, "ns/a");
  EXPECT_EQ(second->pod.key, "ns/b");
}

// --- QueueingHints (scheduling_queue.go isPodWorthRequeuing) ----------------------------------

// A queue whose hint is the node-local fit of the pod's cpu on the changed node (what
// framework::filter_hint gives for NodeResourcesFit), counting the hint's calls.
struct hinted {
  int calls = 0;
  scheduling_queue q;
  explicit hinted(duration_ms timeout = duration_ms{0}) : q(make_opts(this, timeout)) {}
  static queue_options make_opts(hinted* self, duration_ms timeout) {
    queue_options o;
    o.unschedulable_timeout = timeout;
    o.hint = [self](const queued_pod& qp, const cluster_event& ev) {
      ++self->calls;
      const auto free = ev.node->allocatable.cpu_milli - ev.node->requested.cpu_milli;
      return qp.pod.requests.cpu_milli <= free ? queueing_hint::queue : queueing_hint::skip;
    };
    return o;
  }
  // Pops the pod and requeues it as a FitError from NodeResourcesFit.
  void fail(const std::string& key, event_time t) {
    auto p = q.pop(t);
    ASSERT_TRUE(p);
    ASSERT_EQ(p->pod.key, key);
    decision d;
    d.result = outcome::unschedulable;
    d.failed_at = ep_filter;
    d.failures = {{"NodeResourcesFit", "Insufficient cpu", 2}};
    set_rejection(*p, d);
    q.requeue(std::move(*p), t);
  }
};

TEST(SchedulingQueueHints, SetRejectionRecordsRejectorsAndFitError) {
  struct row {
    const char* name;
    outcome result;
    std::uint32_t failed_at;
    std::vector<failure_reason> failures;
    std::vector<std::string> plugins;
    bool fit_error;
  };
  const std::vector<row> rows = {
      {"FitError",
       outcome::unschedulable,
       ep_filter,
       {{"NodeResourcesFit", "Insufficient cpu", 3},
        {"DeviceShare", "Insufficient gpu devices", 1},
        {"NodeResourcesFit", "Insufficient memory", 1}},
       {"DeviceShare", "NodeResourcesFit"},
       true},
      {"PreFilter refusal",
       outcome::unschedulable,
       ep_pre_filter,
       {{"ElasticQuota", "over runtime", 4}},
       {"ElasticQuota"},
       false},
      {"Permit refusal (no failure listed)", outcome::unschedulable, ep_permit, {}, {}, false},
      {"error", outcome::error, 0, {}, {}, false},
  };
  for (const auto& r : rows) {
    queued_pod qp;
    qp.unschedulable_plugins = {"stale"};
    decision d;
    d.result = r.result;
    d.failed_at = r.failed_at;
    d.failures = r.failures;
    set_rejection(qp, d);
    EXPECT_EQ(qp.unschedulable_plugins, r.plugins) << r.name;
    EXPECT_EQ(qp.fit_error, r.fit_error) << r.name;
  }
}

TEST(SchedulingQueueHints, UnrelatedNodeEventDoesNotMoveAPodShortOfCpu) {
  hinted h;
  h.q.add(make_pod("ns/big", cpu_mem(3000, Gi)), at(0));
  h.fail("ns/big", at(0));
  ASSERT_EQ(h.q.unschedulable_size(), 1u);
  // Another node's pod finished, freeing 1000m: the pod still cannot fit there.
  node_info n1 = make_node("n1", 4000, 8 * Gi);
  n1.requested.cpu_milli = 3000;
  const cluster_event small{cluster_event_type::assigned_pod_delete, &n1, 0};
  h.q.move_all_to_active_or_backoff(at(5000), std::span(&small, 1));
  EXPECT_EQ(h.calls, 1);
  EXPECT_EQ(h.q.unschedulable_size(), 1u);
  EXPECT_FALSE(h.q.pop(at(6000)));
  // Without a flush timeout (0 = never) it stays, however long.
  EXPECT_FALSE(h.q.pop(at(24 * 3600 * 1000)));
  EXPECT_EQ(h.q.unschedulable_size(), 1u);
}

TEST(SchedulingQueueHints, NodeThatFreedEnoughMovesThePodAfterItsBackoff) {
  hinted h;
  h.q.add(make_pod("ns/big", cpu_mem(3000, Gi)), at(0));
  h.fail("ns/big", at(0));  // attempts 1: backoff 1 s from t=0
  node_info n1 = make_node("n1", 4000, 8 * Gi);
  n1.requested.cpu_milli = 3000;
  node_info n2 = make_node("n2", 4000, 8 * Gi);
  n2.requested.cpu_milli = 1000;
  const std::vector<cluster_event> evs = {{cluster_event_type::assigned_pod_delete, &n1, 0},
                                          {cluster_event_type::assigned_pod_delete, &n2, 1}};
  h.q.move_all_to_active_or_backoff(at(500), evs);
  EXPECT_EQ(h.calls, 2);  // n1 said skip, n2 said queue
  EXPECT_EQ(h.q.unschedulable_size(), 0u);
  EXPECT_EQ(h.q.backoff_size(), 1u);  // still backing off at 500 ms
  EXPECT_FALSE(h.q.pop(at(999)));
  auto p = h.q.pop(at(1000));
  ASSERT_TRUE(p);
  EXPECT_EQ(p->attempts, 2);
}

TEST(SchedulingQueueHints, WildcardsPodsWithoutRejectorsAndNonFitErrorsAlwaysMove) {
  node_info full = make_node("n1", 1000, Gi);
  full.requested.cpu_milli = 1000;
  const cluster_event ev{cluster_event_type::node_update, &full, 0};
  {  // a wildcard event: the hint is not asked
    hinted h;
    h.q.add(make_pod("ns/p", cpu_mem(3000, Gi)), at(0));
    h.fail("ns/p", at(0));
    const cluster_event wild{};
    h.q.move_all_to_active_or_backoff(at(5000), std::span(&wild, 1));
    EXPECT_EQ(h.calls, 0);
    EXPECT_EQ(h.q.active_size(), 1u);
  }
  {  // no rejector recorded (a plain requeue)
    hinted h;
    h.q.add(make_pod("ns/p", cpu_mem(3000, Gi)), at(0));
    auto p = h.q.pop(at(0));
    h.q.requeue(std::move(*p), at(0));
    h.q.move_all_to_active_or_backoff(at(5000), std::span(&ev, 1));
    EXPECT_EQ(h.calls, 0);
    EXPECT_EQ(h.q.active_size(), 1u);
  }
  {  // refused at PreFilter (not node-local): moves on any node event
    hinted h;
    h.q.add(make_pod("ns/p", cpu_mem(3000, Gi)), at(0));
    auto p = h.q.pop(at(0));
    decision d;
    d.result = outcome::unschedulable;
    d.failed_at = ep_pre_filter;
    d.failures = {{"ElasticQuota", "over runtime", 1}};
    set_rejection(*p, d);
    h.q.requeue(std::move(*p), at(0));
    h.q.move_all_to_active_or_backoff(at(5000), std::span(&ev, 1));
    EXPECT_EQ(h.calls, 0);
    EXPECT_EQ(h.q.active_size(), 1u);
  }
  {  // the wildcard overload moves everything even with a hint set
    hinted h;
    h.q.add(make_pod("ns/p", cpu_mem(3000, Gi)), at(0));
    h.fail("ns/p", at(0));
    h.q.move_all_to_active_or_backoff(at(5000));
    EXPECT_EQ(h.calls, 0);
    EXPECT_EQ(h.q.active_size(), 1u);
  }
}

TEST(SchedulingQueueHints, LeftoverFlushIgnoresHintsAndZeroDisablesIt) {
  hinted h(duration_ms{300'000});  // kube 1.34's podMaxInUnschedulablePodsDuration
  h.q.add(make_pod("ns/p", cpu_mem(3000, Gi)), at(0));
  h.fail("ns/p", at(0));
  EXPECT_FALSE(h.q.pop(at(300'000)));  // exactly 5 min: not yet
  auto p = h.q.pop(at(300'001));
  ASSERT_TRUE(p);
  EXPECT_EQ(h.calls, 0);
}

TEST(SchedulingQueueHints, WithoutAHintEveryEventMovesEveryPod) {
  scheduling_queue q;  // no hint: kube with SchedulerQueueingHints off
  q.add(make_pod("ns/p", cpu_mem(3000, Gi)), at(0));
  auto p = q.pop(at(0));
  decision d;
  d.result = outcome::unschedulable;
  d.failed_at = ep_filter;
  d.failures = {{"NodeResourcesFit", "Insufficient cpu", 1}};
  set_rejection(*p, d);
  q.requeue(std::move(*p), at(0));
  node_info full = make_node("n1", 1000, Gi);
  const cluster_event ev{cluster_event_type::node_update, &full, 0};
  q.move_all_to_active_or_backoff(at(5000), std::span(&ev, 1));
  EXPECT_EQ(q.active_size(), 1u);
}

}  // namespace
}  // namespace colony::scheduler
