// The live actor_host's binding protocol on hand-made proposals: pod stage (at most once),
// node stage (capacity with in-flight reservations), replay mode and arbitrate_from.
#include <gtest/gtest.h>

#include <mutex>

#include "actors/entities/entity_actors.hpp"
#include "tests/actors/scheduler_actor/test_events.hpp"

namespace colony {
namespace {

using messages::to_string_view;
using testing::event_factory;
using testing::gib;

struct answer {
  std::string type, pod, node, reason, source;
  std::int64_t proposal = -1;
};

struct live_rig {
  std::mutex m;
  std::vector<messages::byte_buffer> got;
  entities::actor_host host;
  testing::offset_stamper stamp;
  event_factory f;

  explicit live_rig(std::size_t threads, bool live = true)
      : host(live ? entities::actor_host(threads,
                                         [this](std::vector<messages::byte_buffer> v) {
                                           std::lock_guard lk(m);
                                           for (auto& r : v) got.push_back(std::move(r));
                                         })
                  : entities::actor_host(threads)) {}

  // Delivers records as one batch (offsets stamped), waits, returns the decoded answers.
  std::vector<answer> round(std::vector<messages::byte_buffer> recs) {
    auto b = std::make_shared<entities::record_batch>();
    for (auto& r : recs) b->add(stamp(std::move(r)));
    host.deliver(b);
    EXPECT_TRUE(host.sync().has_value());
    std::vector<messages::byte_buffer> out;
    {
      std::lock_guard lk(m);
      out.swap(got);
    }
    std::vector<answer> as;
    for (const auto& r : out) {
      const auto& env = testing::env_of(r);
      answer a;
      a.source = std::string(to_string_view(env.source()));
      if (const auto* s = env.payload_as_PodScheduled()) {
        a = {"PodScheduled",
             std::string(to_string_view(s->pod())),
             std::string(to_string_view(s->node())),
             "",
             a.source,
             s->proposal_offset()};
        EXPECT_EQ(env.causation(), s->proposal_offset());
      } else if (const auto* j = env.payload_as_PodBindRejected()) {
        a = {"PodBindRejected",
             std::string(to_string_view(j->pod())),
             std::string(to_string_view(j->node())),
             std::string(to_string_view(j->reason())),
             a.source,
             j->proposal_offset()};
      }
      as.push_back(a);
    }
    std::sort(as.begin(), as.end(),
              [](const answer& x, const answer& y) { return x.proposal < y.proposal; });
    return as;
  }
};

class HostArbitration : public ::testing::TestWithParam<std::size_t> {};

TEST_P(HostArbitration, NodeReservesInFlightBindsSoTheSecondProposalIsRejected) {
  live_rig r(GetParam());
  EXPECT_TRUE(r.round({r.f.node(0, "n1", 4000, 8 * gib), r.f.pod(1, "ns/a", 3000, gib),
                       r.f.pod(1, "ns/b", 3000, gib)})
                  .empty());
  // Both proposals in one batch: the fold has neither pod when the second is arbitrated.
  auto as = r.round({r.f.proposal(2, "ns/a", "n1", 3000, gib, "s1"),
                     r.f.proposal(2, "ns/b", "n1", 3000, gib, "s2")});
  ASSERT_EQ(as.size(), 2u);
  int accepted = 0;
  for (const auto& a : as) {
    EXPECT_EQ(a.source, "node");
    if (a.type == "PodScheduled")
      ++accepted;
    else
      EXPECT_EQ(a.reason, "Insufficient cpu: 1000 free, 3000 asked");
  }
  EXPECT_EQ(accepted, 1);
}

TEST_P(HostArbitration, PodIsBoundAtMostOnce) {
  live_rig r(GetParam());
  (void)r.round({r.f.node(0, "n1", 4000, 8 * gib), r.f.node(0, "n2", 4000, 8 * gib),
                 r.f.pod(1, "ns/a", 1000, gib)});
  // Offsets: 0..2 above; proposals at 3 and 4.
  auto as = r.round({r.f.proposal(2, "ns/a", "n1", 1000, gib, "s1"),
                     r.f.proposal(2, "ns/a", "n2", 1000, gib, "s2")});
  ASSERT_EQ(as.size(), 2u);
  EXPECT_EQ(as[0].type, "PodScheduled");
  EXPECT_EQ(as[0].node, "n1");
  EXPECT_EQ(as[0].proposal, 3);
  EXPECT_EQ(as[1].type, "PodBindRejected");
  EXPECT_EQ(as[1].source, "pod");
  EXPECT_EQ(as[1].reason, "pod has a proposal in flight (offset 3)");
  // Once the binding is in the log, a later proposal is refused by the pod too.
  auto bound = r.f.scheduled(2, "ns/a", "n1", 1000, gib, 3, "s1");
  as = r.round({std::move(bound), r.f.proposal(3, "ns/a", "n2", 1000, gib, "s2")});
  ASSERT_EQ(as.size(), 1u);
  EXPECT_EQ(as[0].reason, "pod already bound to n1");
}

TEST_P(HostArbitration, ARejectedClaimIsReleased) {
  live_rig r(GetParam());
  (void)r.round({r.f.node(0, "n1", 1000, 8 * gib), r.f.node(0, "n2", 4000, 8 * gib),
                 r.f.pod(1, "ns/a", 2000, gib)});
  auto as = r.round({r.f.proposal(2, "ns/a", "n1", 2000, gib, "s1")});  // offset 3
  ASSERT_EQ(as.size(), 1u);
  EXPECT_EQ(as[0].type, "PodBindRejected");
  EXPECT_EQ(as[0].source, "node");
  // The rejection comes back through the log; the pod is free to be proposed again.
  auto rej = r.f.rejected(2, "ns/a", "n1", 3, "s1");
  as = r.round({std::move(rej), r.f.proposal(3, "ns/a", "n2", 2000, gib, "s1")});
  ASSERT_EQ(as.size(), 1u);
  EXPECT_EQ(as[0].type, "PodScheduled");
  EXPECT_EQ(as[0].node, "n2");
}

TEST_P(HostArbitration, ReplayHostAndOldProposalsAreNotArbitrated) {
  {
    live_rig r(GetParam(), /*live=*/false);
    EXPECT_TRUE(r.round({r.f.node(0, "n1", 4000, 8 * gib), r.f.pod(1, "ns/a", 1000, gib),
                         r.f.proposal(2, "ns/a", "n1", 1000, gib, "s1")})
                    .empty());
  }
  live_rig r(GetParam());
  r.host.arbitrate_from(3);
  auto as = r.round({r.f.node(0, "n1", 4000, 8 * gib), r.f.pod(1, "ns/a", 1000, gib),
                     r.f.proposal(2, "ns/a", "n1", 1000, gib, "s1"),    // offset 2: history
                     r.f.proposal(3, "ns/a", "n1", 1000, gib, "s1")});  // offset 3: live
  ASSERT_EQ(as.size(), 1u);
  EXPECT_EQ(as[0].proposal, 3);
  EXPECT_EQ(as[0].type, "PodScheduled");
}

INSTANTIATE_TEST_SUITE_P(Threads, HostArbitration, ::testing::Values(1, 4));

}  // namespace
}  // namespace colony
