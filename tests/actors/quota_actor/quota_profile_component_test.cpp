// quota_profile_component fed built envelopes: the tree-root quota of each ElasticQuotaProfile
// against reconcile_quota_profile computed directly, emission only on change (its own record
// coming back changes nothing), nodes joining, leaving and going NotReady, an invalid profile
// named in the errors, a deleted profile leaving its quota.
#include "actors/quota/actor/quota_profile_component.hpp"

#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "actors/quota/actor/quota_events.hpp"
#include "tests/actors/quota_actor/quota_test_events.hpp"
#include "tests/actors/scheduler_actor/test_events.hpp"

namespace colony {
namespace {

using messages::to_string_view;
using testing::cpu_mem;
using testing::gib;

constexpr std::string_view kGpuModel = "node.koordinator.sh/gpu-model";

struct rig : testing::quota_component_rig<quota::quota_profile_component> {
  // An ElasticQuotaProfile as the Kubernetes source records it.
  messages::byte_buffer profile(std::int64_t t, const std::string& name, const std::string& spec,
                                const std::vector<std::pair<std::string, std::string>>& labels = {},
                                bool deleted = false) {
    auto& fb = q.b.fbb();
    auto av = fb.CreateString("quota.koordinator.sh/v1alpha1");
    auto kind = fb.CreateString(quota::kind_elastic_quota_profile);
    auto ns = fb.CreateString("team");
    auto n = fb.CreateString(name);
    auto uid = fb.CreateString("uid-" + name);
    auto rv = fb.CreateString("1");
    auto lv = q.b.key_values(labels);
    auto sj = fb.CreateString(deleted ? std::string() : spec);
    auto st = fb.CreateString("");
    auto p = wire::CreateObjectObserved(fb, av, kind, ns, n, uid, rv, lv, sj, st, deleted);
    return q.b.finish(messages::header{event_time{t}, wire::EntityKind::Object,
                                       "ElasticQuotaProfile/team/" + name, -1, "test"},
                      p);
  }
};

const char* const kGpuPool =
    R"({"quotaName":"gpu-root","quotaLabels":{"pool":"gpu"},"nodeSelector":{"matchExpressions":[{"key":"node.koordinator.sh/gpu-model","operator":"Exists"}]}})";

quota::quota_spec spec_in(const messages::byte_buffer& rec) {
  const auto* e = testing::env_of(rec).payload_as_QuotaUpserted();
  EXPECT_NE(e, nullptr);
  return e == nullptr ? quota::quota_spec{} : quota::spec_of(*e);
}

// Two GPU nodes and a CPU node; the profile selects the GPU nodes: one QuotaUpserted for
// gpu-root equal to reconcile_quota_profile over the same nodes, with Koordinator's labels.
TEST(QuotaProfileComponent, EmitsTheTreeRootReconcileComputes) {
  rig r;
  auto out = r.batch({r.f.gpu_node(0, "g1", 32000, 128 * gib, "A100", 4),
                      r.f.gpu_node(0, "g2", 16000, 64 * gib, "A100", 2),
                      r.f.node(0, "c1", 64000, 256 * gib), r.profile(1, "gpu-pool", kGpuPool)});
  ASSERT_TRUE(r.c.errors().empty()) << r.c.errors().front().describe();
  ASSERT_EQ(out.size(), 1u);
  const auto& env = testing::env_of(out[0]);
  EXPECT_EQ(env.entity_kind(), wire::EntityKind::ElasticQuota);
  EXPECT_EQ(to_string_view(env.entity_key()), "gpu-root");
  EXPECT_EQ(to_string_view(env.source()), "koord-manager/quota-profile");
  EXPECT_EQ(env.causation(), 3);  // the profile's record
  const auto got = spec_in(out[0]);

  ASSERT_EQ(r.c.profiles().size(), 1u);
  const auto& profile = r.c.profiles().begin()->second;
  std::vector<quota::profile_node> nodes(3);
  nodes[0].name = "c1";
  nodes[0].allocatable = cpu_mem(64000, 256 * gib);
  nodes[1].name = "g1";
  nodes[1].labels = {{std::string(kGpuModel), "A100"}};
  nodes[1].allocatable = cpu_mem(32000, 128 * gib);
  nodes[1].allocatable.gpu = 400;
  nodes[2].name = "g2";
  nodes[2].labels = {{std::string(kGpuModel), "A100"}};
  nodes[2].allocatable = cpu_mem(16000, 64 * gib);
  nodes[2].allocatable.gpu = 200;
  auto want = quota::reconcile_quota_profile(profile, nodes);
  ASSERT_TRUE(want.has_value()) << want.error().describe();
  want->namespace_name = "team";
  EXPECT_TRUE(quota::same_root_quota(got, *want));
  EXPECT_EQ(got.min.cpu_milli, 48000);
  EXPECT_EQ(got.min.memory_bytes, 192 * gib);
  EXPECT_TRUE(got.is_tree_root);
  EXPECT_EQ(got.tree_id, quota::profile_tree_id("team", "gpu-pool"));
  EXPECT_EQ(got.labels.at("pool"), "gpu");
  EXPECT_EQ(got.labels.at("quota.scheduling.koordinator.sh/profile"), "gpu-pool");
  EXPECT_EQ(got.namespace_name, "team");
}

// Its own record coming back changes nothing; a node joining, going NotReady and leaving each
// give one new root; an unrelated quota changes nothing.
TEST(QuotaProfileComponent, EmitsOnlyWhenTheRootChanges) {
  rig r;
  auto first = r.batch(
      {r.f.gpu_node(0, "g1", 32000, 128 * gib, "A100", 4), r.profile(1, "gpu-pool", kGpuPool)});
  ASSERT_EQ(first.size(), 1u);
  EXPECT_TRUE(r.batch({first[0]}).empty());  // the log hands it back
  EXPECT_TRUE(r.batch({r.q.quota(2, "other", cpu_mem(1000, gib), cpu_mem(2000, gib))}).empty());
  EXPECT_TRUE(r.batch({r.f.node(3, "c1", 8000, 8 * gib)}).empty());  // not selected

  auto joined = r.batch({r.f.gpu_node(4, "g2", 16000, 64 * gib, "A100", 2)});
  ASSERT_EQ(joined.size(), 1u);
  EXPECT_EQ(spec_in(joined[0]).min.cpu_milli, 48000);

  auto& fb = r.f.b.fbb();
  auto nn = fb.CreateString("g2");
  auto why = fb.CreateString("NotReady");
  auto nc = wire::CreateNodeConditionChanged(fb, nn, false, false, why);
  auto down = r.batch({r.f.b.finish(
      messages::header{event_time{5}, wire::EntityKind::Node, "g2", -1, "test"}, nc)});
  ASSERT_EQ(down.size(), 1u);
  const auto d = spec_in(down[0]);
  EXPECT_EQ(d.min.cpu_milli, 48000);  // total still counts it ...
  EXPECT_NE(d.annotations.at("quota.scheduling.koordinator.sh/unschedulable-resource")
                .find("\"cpu\":\"16\""),
            std::string::npos)
      << d.annotations.at("quota.scheduling.koordinator.sh/unschedulable-resource");

  auto rm = wire::CreateNodeRemovedDirect(fb, "g1", "gone");
  auto left = r.batch({r.f.b.finish(
      messages::header{event_time{6}, wire::EntityKind::Node, "g1", -1, "test"}, rm)});
  ASSERT_EQ(left.size(), 1u);
  EXPECT_EQ(spec_in(left[0]).min.cpu_milli, 16000);
}

// What the API server holds decides (Koordinator's reconciler reads the live object): when the
// Kubernetes source observes the root other than this controller wrote it (its write was
// refused, or an older version shows up), the controller writes it again; when the root is
// deleted, it is written again.
TEST(QuotaProfileComponent, AnObservedRootOtherThanWantedIsWrittenAgain) {
  rig r;
  auto first = r.batch(
      {r.f.gpu_node(0, "g1", 32000, 128 * gib, "A100", 4), r.profile(1, "gpu-pool", kGpuPool)});
  ASSERT_EQ(first.size(), 1u);
  const auto want = spec_in(first[0]);
  EXPECT_TRUE(r.batch({first[0]}).empty());  // its own record: nothing to do
  // The source observes the object as an earlier write left it: min 0.
  quota::quota_spec stale = want;
  stale.min = {};
  auto observed = quota::quota_upserted(r.q.b, stale);
  auto again = r.batch({r.q.b.finish(
      messages::header{event_time{2}, wire::EntityKind::ElasticQuota, "gpu-root", -1, "kube"},
      observed)});
  ASSERT_EQ(again.size(), 1u);
  EXPECT_TRUE(quota::same_root_quota(spec_in(again[0]), want));
  // The source then observes what was wanted: nothing more.
  auto as_wanted = quota::quota_upserted(r.q.b, want);
  EXPECT_TRUE(r.batch({r.q.b.finish(messages::header{event_time{3}, wire::EntityKind::ElasticQuota,
                                                     "gpu-root", -1, "kube"},
                                    as_wanted)})
                  .empty());
  // Deleted: written again.
  auto del = wire::CreateQuotaDeletedDirect(r.q.b.fbb(), "gpu-root");
  auto recreated = r.batch({r.q.b.finish(
      messages::header{event_time{4}, wire::EntityKind::ElasticQuota, "gpu-root", -1, "kube"},
      del)});
  ASSERT_EQ(recreated.size(), 1u);
  EXPECT_TRUE(quota::same_root_quota(spec_in(recreated[0]), want));
}

// The quota's other labels are kept, as the controller updates the existing object; a tree-id
// label on the profile is used as it is.
TEST(QuotaProfileComponent, KeepsTheQuotasOwnLabelsAndTheProfilesTreeId) {
  rig r;
  auto& fb = r.q.b.fbb();
  auto n = fb.CreateString("gpu-root");
  auto ns = fb.CreateString("team");
  auto lv = r.q.b.key_values({{"owner", "ml"}});
  wire::QuotaUpsertedBuilder qb(fb);
  qb.add_name(n);
  qb.add_namespace_(ns);
  qb.add_labels(lv);
  auto p = qb.Finish();
  auto existing = r.q.b.finish(
      messages::header{event_time{0}, wire::EntityKind::ElasticQuota, "gpu-root", -1, "test"}, p);
  auto out = r.batch({existing, r.f.gpu_node(0, "g1", 8000, 32 * gib, "V100", 1),
                      r.profile(1, "gpu-pool", kGpuPool,
                                {{"quota.scheduling.koordinator.sh/tree-id", "tree-7"}})});
  ASSERT_EQ(out.size(), 1u);
  const auto got = spec_in(out[0]);
  EXPECT_EQ(got.labels.at("owner"), "ml");
  EXPECT_EQ(got.tree_id, "tree-7");
}

// An invalid selector operator: no quota, an error naming the profile and the field; fixed, the
// root follows. A deleted profile leaves its quota and emits nothing more.
TEST(QuotaProfileComponent, InvalidProfileIsNamedAndDeletedProfileLeavesItsQuota) {
  rig r;
  const std::string bad =
      R"({"quotaName":"gpu-root","nodeSelector":{"matchExpressions":[{"key":"x","operator":"Near"}]}})";
  auto out =
      r.batch({r.f.gpu_node(0, "g1", 8000, 32 * gib, "V100", 1), r.profile(1, "gpu-pool", bad)});
  EXPECT_TRUE(out.empty());
  ASSERT_EQ(r.c.errors().size(), 1u);
  EXPECT_NE(r.c.errors()[0].describe().find("gpu-pool"), std::string::npos)
      << r.c.errors()[0].describe();
  EXPECT_NE(r.c.errors()[0].describe().find("Near"), std::string::npos)
      << r.c.errors()[0].describe();

  out = r.batch({r.profile(2, "gpu-pool", kGpuPool)});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_TRUE(r.c.errors().empty());
  EXPECT_TRUE(r.batch({r.profile(3, "gpu-pool", "", {}, true)}).empty());
  EXPECT_TRUE(r.c.profiles().empty());
  EXPECT_TRUE(r.batch({r.f.gpu_node(4, "g2", 8000, 32 * gib, "V100", 1)}).empty());
}

}  // namespace
}  // namespace colony
