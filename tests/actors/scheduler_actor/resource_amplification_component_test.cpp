// scheduler_component over nodes that carry node.koordinator.sh/resource-amplification-ratio:
// the node's cpu allocatable is amplified as Koordinator's node webhook does
// (pkg/webhook/node/plugins/resourceamplification), from NodeRegistered's annotation and from the
// slo-controller's metadata patch (the meta.annotationsPatch term of NodeBatchResourceUpdated).
#include "actors/scheduler/actor/scheduler_component.hpp"

#include <gtest/gtest.h>

#include "tests/actors/scheduler_actor/component_rig.hpp"

namespace colony {
namespace {

using messages::to_string_view;
using testing::gib;
using rig = testing::component_rig;

// A 40-core pod on 32-core nodes: only the node amplified by 1.5 (48 cores) holds it.
TEST(SchedulerResourceAmplification, TheAmplifiedNodeHoldsWhatThePlainOneCannot) {
  rig r;
  auto out = r.batch({r.f.node(0, "plain", 32000, 64 * gib),
                      r.f.amplified_node(0, "amplified", 32000, 64 * gib, R"({"cpu":1.50})"),
                      r.f.pod(1000, "ns/p", 40000, gib)});
  ASSERT_EQ(out.size(), 1u);
  const auto* p = testing::env_of(out[0]).payload_as_PodBindProposed();
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(to_string_view(p->node()), "amplified");
  EXPECT_EQ(p->feasible_nodes(), 1);
}

// The slo-controller's patch sets the ratio on a node that had none; a later patch that removes
// it (null) brings the node back to its own allocatable.
TEST(SchedulerResourceAmplification, TheSloControllerPatchAmplifiesAndRemoves) {
  rig r;
  auto out = r.batch({r.f.node(0, "n1", 32000, 64 * gib), r.f.pod(1000, "ns/big", 40000, gib)});
  ASSERT_EQ(out.size(), 1u);
  ASSERT_NE(testing::env_of(out[0]).payload_as_PodUnschedulable(), nullptr);

  out = r.batch({r.f.meta_patch(
      2000, "n1",
      R"({"node.koordinator.sh/cpu-normalization-ratio":"1.50","node.koordinator.sh/resource-amplification-ratio":"{\"cpu\":1.50}"})")});
  // The node update retries the pod, which now fits (48 cores).
  const wire::PodBindProposed* p = nullptr;
  for (const auto& b : out)
    if (const auto* x = testing::env_of(b).payload_as_PodBindProposed()) p = x;
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(to_string_view(p->node()), "n1");

  // Ratio removed: 48 - 40 = 8 cores left becomes 32 - 40 < 0: a 1-core pod does not fit.
  out = r.batch(
      {r.f.meta_patch(3000, "n1", R"({"node.koordinator.sh/resource-amplification-ratio":null})"),
       r.f.pod(4000, "ns/small", 1000, gib)});
  bool unschedulable = false;
  for (const auto& b : out)
    unschedulable = unschedulable || testing::env_of(b).payload_as_PodUnschedulable() != nullptr;
  EXPECT_TRUE(unschedulable);
}

}  // namespace
}  // namespace colony
