// scheduler_component fed built envelopes; what it emits is decoded and checked.
#include "actors/scheduler/actor/scheduler_component.hpp"

#include <gtest/gtest.h>

#include "tests/actors/scheduler_actor/component_rig.hpp"

namespace colony {
namespace {

using messages::to_string_view;
using testing::event_factory;
using testing::gib;

using rig = testing::component_rig;

const wire::PodBindProposed* proposal(const messages::byte_buffer& r) {
  return testing::env_of(r).payload_as_PodBindProposed();
}

TEST(SchedulerComponent, ProposesTheFittingNodeWithScoresAndAlternatives) {
  rig r;
  auto out = r.batch({r.f.node(0, "n-small", 1000, 4 * gib), r.f.node(0, "n-big", 8000, 32 * gib),
                      r.f.node(0, "n-mid", 4000, 16 * gib), r.f.pod(1000, "ns/p", 2000, gib)});
  ASSERT_EQ(out.size(), 1u);
  const auto& env = testing::env_of(out[0]);
  EXPECT_EQ(to_string_view(env.source()), "koord-scheduler/a");
  EXPECT_EQ(env.entity_kind(), wire::EntityKind::Pod);
  EXPECT_EQ(env.event_time_ms(), 1000);
  const auto* p = proposal(out[0]);
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(to_string_view(p->pod()), "ns/p");
  EXPECT_EQ(to_string_view(p->node()), "n-big");  // LeastAllocated: the emptiest node
  EXPECT_EQ(to_string_view(p->scheduler()), "koord-scheduler/a");
  EXPECT_EQ(p->requests()->cpu_milli(), 2000);
  EXPECT_EQ(p->requests()->pods(), 1);
  EXPECT_EQ(p->feasible_nodes(), 2);  // n-small cannot hold 2000m
  ASSERT_NE(p->scores(), nullptr);
  bool fit = false;
  for (const auto* s : *p->scores()) fit = fit || to_string_view(s->plugin()) == "NodeResourcesFit";
  EXPECT_TRUE(fit);
  ASSERT_NE(p->alternatives(), nullptr);
  ASSERT_EQ(p->alternatives()->size(), 1u);
  EXPECT_EQ(to_string_view(p->alternatives()->Get(0)->node()), "n-mid");
  EXPECT_LE(p->alternatives()->Get(0)->total(), p->total_score());
  EXPECT_EQ(r.s->proposed(), 1u);
}

TEST(SchedulerComponent, UnschedulableNamesPluginReasonAndNodeCount) {
  rig r;
  auto out = r.batch({r.f.node(0, "n1", 1000, 4 * gib), r.f.node(0, "n2", 1000, 4 * gib),
                      r.f.pod(5, "ns/huge", 3000, gib)});
  ASSERT_EQ(out.size(), 1u);
  const auto* u = testing::env_of(out[0]).payload_as_PodUnschedulable();
  ASSERT_NE(u, nullptr);
  EXPECT_EQ(to_string_view(u->pod()), "ns/huge");
  EXPECT_EQ(u->attempt(), 1);
  ASSERT_NE(u->reasons(), nullptr);
  ASSERT_GE(u->reasons()->size(), 1u);
  EXPECT_EQ(to_string_view(u->reasons()->Get(0)->plugin()), "NodeResourcesFit");
  EXPECT_EQ(to_string_view(u->reasons()->Get(0)->reason()), "Insufficient cpu");
  EXPECT_EQ(u->reasons()->Get(0)->nodes(), 2);
  // Nothing changed: no retry without a cluster event.
  EXPECT_TRUE(r.batch({r.f.tick(10'000)}).empty());
  // A new node is a cluster event: the pod is tried again and fits.
  auto again = r.batch({r.f.node(20'000, "n3", 4000, 4 * gib)});
  ASSERT_EQ(again.size(), 1u);
  ASSERT_NE(proposal(again[0]), nullptr);
  EXPECT_EQ(to_string_view(proposal(again[0])->node()), "n3");
}

TEST(SchedulerComponent, ViewIsOptimisticAssumesItsOwnProposals) {
  rig r;
  // One node with room for one 3000m pod: the second is unschedulable in the same round
  // because the first is assumed there.
  auto out = r.batch({r.f.node(0, "n1", 4000, 8 * gib), r.f.pod(1, "ns/a", 3000, gib),
                      r.f.pod(1, "ns/b", 3000, gib)});
  ASSERT_EQ(out.size(), 2u);
  ASSERT_NE(proposal(out[0]), nullptr);
  EXPECT_EQ(to_string_view(proposal(out[0])->pod()), "ns/a");
  EXPECT_NE(testing::env_of(out[1]).payload_as_PodUnschedulable(), nullptr);
  ASSERT_NE(r.s->node("n1"), nullptr);
  EXPECT_EQ(r.s->node("n1")->requested.cpu_milli, 3000);
}

TEST(SchedulerComponent, RejectionForgetsRequeuesWithBackoffAndFreesRoom) {
  rig r;
  auto out = r.batch({r.f.node(0, "n1", 4000, 8 * gib), r.f.pod(1, "ns/a", 3000, gib),
                      r.f.pod(1, "ns/b", 3000, gib)});
  ASSERT_EQ(out.size(), 2u);
  const auto prop_offset = static_cast<std::int64_t>(r.kept.size());  // next offset
  r.kept.push_back(r.stamp(std::move(out[0])));
  // The node rejects ns/a's proposal (someone else took the room). ns/a backs off (error
  // path); the forgotten room moves ns/b too, but it is still backing off from its attempt.
  out = r.batch({r.f.rejected(1, "ns/a", "n1", prop_offset, "koord-scheduler/a")});
  EXPECT_TRUE(out.empty());
  EXPECT_EQ(r.s->node("n1")->requested.cpu_milli, 0);
  EXPECT_EQ(r.s->queued(), 2u);
  // After the 1-s backoff both are tried, in queue order: ns/a fits again, ns/b does not.
  out = r.batch({r.f.tick(1001)});
  ASSERT_EQ(out.size(), 2u);
  ASSERT_NE(proposal(out[0]), nullptr);
  EXPECT_EQ(to_string_view(proposal(out[0])->pod()), "ns/a");
  EXPECT_EQ(proposal(out[0])->attempt(), 2);
  const auto* u = testing::env_of(out[1]).payload_as_PodUnschedulable();
  ASSERT_NE(u, nullptr);
  EXPECT_EQ(to_string_view(u->pod()), "ns/b");
  EXPECT_EQ(r.s->node("n1")->requested.cpu_milli, 3000);
}

TEST(SchedulerComponent, BindingByAnotherSchedulerMovesTheAssumption) {
  rig r;
  auto out = r.batch({r.f.node(0, "n1", 4000, 8 * gib), r.f.node(0, "n2", 4000, 8 * gib),
                      r.f.pod(1, "ns/a", 1000, gib)});
  ASSERT_EQ(out.size(), 1u);
  const std::string mine(to_string_view(proposal(out[0])->node()));
  const std::string other = mine == "n1" ? "n2" : "n1";
  // Another scheduler's proposal won: the pod is bound elsewhere.
  out = r.batch({r.f.scheduled(2, "ns/a", other, 1000, gib, 3, "koord-scheduler/b")});
  EXPECT_TRUE(out.empty());
  EXPECT_EQ(r.s->node(mine)->requested.cpu_milli, 0);
  EXPECT_EQ(r.s->node(other)->requested.cpu_milli, 1000);
  EXPECT_EQ(r.s->proposed(), 0u);
  // Our proposal's rejection arrives later: the pod stays bound, nothing is requeued.
  out = r.batch({r.f.rejected(3, "ns/a", mine, 4, "koord-scheduler/a"), r.f.tick(60'000)});
  EXPECT_TRUE(out.empty());
  EXPECT_EQ(r.s->queued(), 0u);
}

TEST(SchedulerComponent, ServesOnlyItsSchedulerNames) {
  scheduler::scheduler_component_options o;
  o.scheduler_names = {"mine"};
  rig r(std::move(o));
  auto out = r.batch({r.f.node(0, "n1", 4000, 8 * gib), r.f.pod(1, "ns/x", 1000, gib, "theirs"),
                      r.f.pod(1, "ns/y", 1000, gib, "mine")});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(to_string_view(proposal(out[0])->pod()), "ns/y");
}

// With await_admission a submitted pod waits for the webhook: it is scheduled with the
// mutated requests (here translated to batch-cpu/batch-memory), never with the submitted ones.
TEST(SchedulerComponent, AwaitsAdmissionAndSchedulesTheMutatedRequests) {
  scheduler::scheduler_component_options o;
  o.await_admission = true;
  rig r(std::move(o));
  auto n = r.f.node(0, "n1", 8000, 32 * gib);
  auto out =
      r.batch({std::move(n), r.f.pod(1, "ns/be", 2000, gib), r.f.pod(1, "ns/gone", 500, gib)});
  EXPECT_TRUE(out.empty()) << "nothing is scheduled before admission answers";
  resource_list be;
  be.batch_cpu_milli = 2000;
  be.batch_memory_bytes = gib;
  out = r.batch({r.f.mutated(2, "ns/be", be)});
  ASSERT_EQ(out.size(), 1u);
  const auto* u = testing::env_of(out[0]).payload_as_PodUnschedulable();
  ASSERT_NE(u, nullptr) << "no batch allocatable yet: the mutated (BE) requests cannot fit";
  EXPECT_EQ(to_string_view(u->pod()), "ns/be");
  EXPECT_EQ(r.s->proposed(), 0u);
}

TEST(SchedulerComponent, SameEventsGiveSameBytes) {
  auto run = [] {
    rig r;
    std::vector<messages::byte_buffer> recs;
    for (int n = 0; n < 5; ++n) recs.push_back(r.f.node(0, "n" + std::to_string(n), 4000, 8 * gib));
    for (int p = 0; p < 30; ++p)
      recs.push_back(r.f.pod(1, "ns/p" + std::to_string(p), 300 + 100 * (p % 7), gib));
    return r.batch(std::move(recs));
  };
  const auto a = run();
  const auto b = run();
  ASSERT_EQ(a.size(), 30u);
  EXPECT_EQ(a, b);
}

TEST(SchedulerComponent, RejectsAProfileThatDoesNotExist) {
  scheduler::scheduler_component_options o;
  o.profile = 7;
  auto c = scheduler::scheduler_component::create(std::move(o));
  ASSERT_FALSE(c.has_value());
  EXPECT_EQ(c.error().code, errc::invalid_input);
}

// --- GPUModelAffinity -------------------------------------------------------------------------

// Where a pod lands on {n-t4: T4, n-v100: V100, n-cpu: no GPU}, or "" when unschedulable.
std::string gpu_placement(scheduler::scheduler_component_options o, std::int64_t gpu,
                          const std::vector<std::string>& models) {
  rig r(std::move(o));
  // n-t4 is the roomiest, so LeastAllocated prefers it whenever it is allowed.
  auto out = r.batch({r.f.gpu_node(0, "n-t4", 32000, 128 * gib, "T4", 2),
                      r.f.gpu_node(0, "n-v100", 8000, 32 * gib, "V100", 2),
                      r.f.gpu_node(0, "n-cpu", 64000, 256 * gib, "", 0),
                      r.f.gpu_pod(1, "ns/p", 1000, gib, gpu, models)});
  EXPECT_EQ(out.size(), 1u);
  if (out.size() != 1u || proposal(out[0]) == nullptr) return "";
  return std::string(to_string_view(proposal(out[0])->node()));
}

TEST(SchedulerComponent, GpuModelAffinityTable) {
  struct row {
    const char* name;
    bool option;
    std::int64_t gpu;
    std::vector<std::string> models;
    std::string want;
  };
  const std::vector<row> rows = {
      {"V100 only", true, 100, {"V100"}, "n-v100"},
      {"T4 or V100: the roomier T4 node", true, 100, {"V100", "T4"}, "n-t4"},
      {"any model", true, 100, {}, "n-t4"},
      {"a model no node has", true, 100, {"A100"}, ""},
      {"a shared GPU (50 %) is restricted too", true, 50, {"V100"}, "n-v100"},
      {"no GPU request: models are not read", true, 0, {"V100"}, "n-cpu"},
      {"option off: the model list is ignored", false, 100, {"V100"}, "n-t4"},
  };
  for (const auto& r : rows) {
    scheduler::scheduler_component_options o;
    o.gpu_model_affinity = r.option;
    EXPECT_EQ(gpu_placement(std::move(o), r.gpu, r.models), r.want) << r.name;
  }
}

TEST(SchedulerComponent, GpuModelAffinityNamesItsReasonAndAProfileMayDisableIt) {
  {
    rig r;
    auto out = r.batch({r.f.gpu_node(0, "n-t4", 32000, 128 * gib, "T4", 2),
                        r.f.gpu_pod(1, "ns/p", 1000, gib, 100, {"V100"})});
    ASSERT_EQ(out.size(), 1u);
    const auto* u = testing::env_of(out[0]).payload_as_PodUnschedulable();
    ASSERT_NE(u, nullptr);
    EXPECT_EQ(to_string_view(u->reasons()->Get(0)->plugin()), "GPUModelAffinity");
    EXPECT_EQ(to_string_view(u->reasons()->Get(0)->reason()),
              "node(s) didn't match the pod's GPU model (gpu_spec)");
  }
  // A profile with DeviceShare; the component adds GPUModelAffinity unless the profile
  // disables it.
  auto placement = [](bool disable) {
    const std::string yaml = std::string(R"(apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
  - schedulerName: koord-scheduler
    plugins:
      preFilter:
        enabled:
          - name: DeviceShare
      filter:
        enabled:
          - name: DeviceShare
)") + (disable ? "        disabled:\n          - name: GPUModelAffinity\n" : "") +
                             R"(      reserve:
        enabled:
          - name: DeviceShare
)";
    auto cfg = scheduler::parse_scheduler_config(yaml);
    EXPECT_TRUE(cfg) << cfg.error().message;
    scheduler::scheduler_component_options o;
    o.config = std::move(*cfg);
    return gpu_placement(std::move(o), 100, {"V100"});
  };
  EXPECT_EQ(placement(false), "n-v100");
  EXPECT_EQ(placement(true), "n-t4");
}

// --- QueueingHints ----------------------------------------------------------------------------

// Counts what a batch emitted: every scheduling cycle emits exactly one PodBindProposed or
// PodUnschedulable.
struct cycles {
  std::size_t proposed = 0, unschedulable = 0;
  std::vector<std::pair<std::string, std::string>> bound;  // (pod, node) proposals in order
  void add(const std::vector<messages::byte_buffer>& out) {
    for (const auto& b : out) {
      const auto& env = testing::env_of(b);
      if (const auto* p = env.payload_as_PodBindProposed()) {
        ++proposed;
        bound.emplace_back(to_string_view(p->pod()), to_string_view(p->node()));
      } else if (env.payload_as_PodUnschedulable() != nullptr) {
        ++unschedulable;
      }
    }
  }
  [[nodiscard]] std::size_t total() const { return proposed + unschedulable; }
};

// The scripted scenario: 3 nodes of 4000m filled by six 2000m pods, then four 3000m pods that
// fit nowhere; then, 20 s apart (past every backoff): batch resources grow on a full node, one
// 2000m pod finishes, a second pod on the same node finishes (4000m free there), a node of
// 8000m registers. Returns the cycles per step.
std::vector<cycles> scripted(bool hints) {
  scheduler::scheduler_component_options o;
  o.queueing_hints = hints;
  rig r(std::move(o));
  std::vector<cycles> steps(6);
  std::vector<messages::byte_buffer> recs;
  for (int n = 1; n <= 3; ++n) recs.push_back(r.f.node(0, "n" + std::to_string(n), 4000, 16 * gib));
  for (int p = 1; p <= 6; ++p) recs.push_back(r.f.pod(0, "ns/a" + std::to_string(p), 2000, gib));
  steps[0].add(r.batch(std::move(recs)));
  recs.clear();
  for (int p = 1; p <= 4; ++p)
    recs.push_back(r.f.pod(1000, "ns/big" + std::to_string(p), 3000, gib));
  steps[1].add(r.batch(std::move(recs)));
  // Two small pods on one node (LeastAllocated spread them two per node).
  std::string node;
  std::vector<std::string> there;
  for (const auto& [pod, n] : steps[0].bound) {
    if (node.empty()) node = n;
    if (n == node) there.push_back(pod);
  }
  EXPECT_EQ(there.size(), 2u);
  std::string other = node == "n1" ? "n2" : "n1";
  steps[2].add(r.batch({r.f.batch(20'000, other, 8000, 8 * gib)}));  // no cpu: unrelated
  steps[3].add(r.batch({r.f.finished(40'000, there[0], node)}));     // 2000m free: too little
  steps[4].add(r.batch({r.f.finished(60'000, there[1], node)}));     // 4000m free: one big fits
  steps[5].add(r.batch({r.f.node(80'000, "n4", 8000, 16 * gib)}));   // two more fit
  EXPECT_EQ(steps[4].proposed, 1u);
  if (steps[4].proposed == 1u) {
    EXPECT_EQ(steps[4].bound[0].second, node);
  }
  EXPECT_EQ(steps[5].proposed, 2u);
  for (const auto& [pod, n] : steps[5].bound) EXPECT_EQ(n, "n4");
  return steps;
}

TEST(SchedulerComponent, HintsRetryOnlyWhenANodeCouldNowFitThePod) {
  const auto s = scripted(true);
  const std::vector<std::size_t> want = {6, 4, 0, 0, 4, 3};
  std::size_t total = 0;
  for (std::size_t i = 0; i < s.size(); ++i) {
    EXPECT_EQ(s[i].total(), want[i]) << "step " << i;
    total += s[i].total();
  }
  EXPECT_EQ(total, 17u);
}

TEST(SchedulerComponent, WithoutHintsEveryNodeEventRetriesEveryPod) {
  const auto s = scripted(false);
  const std::vector<std::size_t> want = {6, 4, 4, 4, 4, 3};
  std::size_t total = 0;
  for (std::size_t i = 0; i < s.size(); ++i) {
    EXPECT_EQ(s[i].total(), want[i]) << "step " << i;
    total += s[i].total();
  }
  EXPECT_EQ(total, 25u);
}

TEST(SchedulerComponent, UnschedulablePodsAreFlushedAfterFiveMinutesWithoutAnEvent) {
  rig r;
  auto out = r.batch({r.f.node(0, "n1", 1000, 4 * gib), r.f.pod(0, "ns/big", 3000, gib)});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_TRUE(r.batch({r.f.tick(299'000)}).empty());
  EXPECT_TRUE(r.batch({r.f.tick(300'000)}).empty());  // exactly 5 min: not yet
  out = r.batch({r.f.tick(300'001)});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_NE(testing::env_of(out[0]).payload_as_PodUnschedulable(), nullptr);
  // 0 = never: the pod waits for an event.
  scheduler::scheduler_component_options o;
  o.pod_max_in_unschedulable_pods_duration = duration_ms{0};
  rig never(std::move(o));
  out = never.batch({never.f.node(0, "n1", 1000, 4 * gib), never.f.pod(0, "ns/big", 3000, gib)});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_TRUE(never.batch({never.f.tick(24 * 3600 * 1000)}).empty());
}

}  // namespace
}  // namespace colony
