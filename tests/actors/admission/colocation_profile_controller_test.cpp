// The background ClusterColocationProfile controller: rows of
// pkg/controller/colocationprofile/colocationprofile_util_test.go (Test_listPodsForProfile,
// Test_updatePodByClusterColocationProfile) and the Reconcile loop's cache and rate limit.
#include "actors/admission/colocation_profile_controller.hpp"

#include <gtest/gtest.h>

#include "messages/names.hpp"
#include "tests/actors/admission/test_pods.hpp"

namespace colony::admission {
namespace {

const std::string qos_label(names::label_qos_class);
const std::string priority_label(names::label_priority);

pod_patch go_patch() {
  return *parse_pod_patch(
      R"({"metadata":{"labels":{"test-patch-label":"patch-a"},"annotations":{"test-patch-annotation":"patch-b"}}})",
      "spec.patch");
}

cluster_colocation_profile managed_profile(std::optional<label_selector> selector) {
  cluster_colocation_profile c;
  c.name = "test-profile";
  c.metadata_labels = {{std::string(label_controller_managed), "true"}};
  c.selector = std::move(selector);
  c.labels = {{"testLabelA", "valueA"}};
  c.annotations = {{"testAnnotationA", "valueA"}};
  c.qos = qos_class::be;
  c.koordinator_priority = 1111;
  c.patch = go_patch();
  return c;
}

pod_spec pod_in(std::string ns, std::string name, string_map labels, std::int32_t priority) {
  pod_spec p;
  p.pod_namespace = std::move(ns);
  p.name = std::move(name);
  p.uid = p.pod_namespace + "/" + p.name;
  p.labels = std::move(labels);
  p.priority = priority;
  return p;
}

// Test_listPodsForProfile: which pods the controller lists for a profile.
TEST(TestListPodsForProfile, GoldenRows) {
  const string_map prod_ns = {{"env", "prod"}}, dev_ns = {{"env", "dev"}};
  const pod_spec test_pod = pod_in("test-ns", "test-pod", {{"test-selector-key", "test"}}, 0);
  const pod_spec test_pod_1 = pod_in("test-ns", "test-pod-1", {}, 9000);
  const pod_spec test_pod_in_dev =
      pod_in("test-ns-dev", "test-pod-in-dev", {{"test-selector-key", "test"}}, 0);
  const label_selector sel{{{"test-selector-key", "test"}}, {}};
  auto with_ns = managed_profile(sel);
  with_ns.name = "test-profile-ns";
  with_ns.namespace_selector = label_selector{{{"env", "prod"}}, {}};

  auto selected = [](const cluster_colocation_profile& p, const controller_pod& cp) {
    auto r = controller_selects_pod(p, cp);
    EXPECT_TRUE(r.has_value());
    return r.value_or(false);
  };
  // "select no pod": a nil selector selects nothing.
  EXPECT_FALSE(selected(managed_profile(std::nullopt), {&test_pod, &prod_ns}));
  EXPECT_FALSE(selected(managed_profile(std::nullopt), {&test_pod_1, &prod_ns}));
  // "select matched pods".
  EXPECT_TRUE(selected(managed_profile(sel), {&test_pod, &prod_ns}));
  EXPECT_FALSE(selected(managed_profile(sel), {&test_pod_1, &prod_ns}));
  // "select matched pods with namespace selector".
  EXPECT_TRUE(selected(with_ns, {&test_pod, &prod_ns}));
  EXPECT_FALSE(selected(with_ns, {&test_pod_in_dev, &dev_ns}));
  // "no pods match namespace selector": the prod Namespace does not exist.
  EXPECT_FALSE(selected(with_ns, {&test_pod, nullptr}));
}

TEST(TestListPodsForProfile, EmptySelectorSelectsAllUnboundPods) {
  pod_spec p = pod_in("default", "a", {}, 0);
  EXPECT_TRUE(*controller_selects_pod(managed_profile(label_selector{}), {&p, nullptr}));
  p.node_name = "node-1";
  EXPECT_FALSE(*controller_selects_pod(managed_profile(label_selector{}), {&p, nullptr}));
}

// Test_updatePodByClusterColocationProfile "mutating pod" and "mutate advanced attributes 1".
TEST(TestUpdatePodByClusterColocationProfile, MutatingPod) {
  cluster_colocation_profile c =
      managed_profile(label_selector{{{"koordinator-colocation-pod", "true"}}, {}});
  c.scheduler_name = "koordinator-scheduler";   // not applied by the controller
  c.priority_class_name = "koordinator-batch";  // not applied (and not looked up)
  pod_spec p = pod_in("default", "test-pod-1", {{"koordinator-colocation-pod", "true"}}, 5999);
  p.scheduler_name = "default-scheduler";
  p.containers = {testing::container("test-container-a", testing::cpu_mem(1000, 1 << 30), {})};
  pod_spec want = p;
  want.labels = {{"koordinator-colocation-pod", "true"},
                 {"testLabelA", "valueA"},
                 {"test-patch-label", "patch-a"},
                 {qos_label, "BE"},
                 {priority_label, "1111"}};
  want.annotations = {{"testAnnotationA", "valueA"}, {"test-patch-annotation", "patch-b"}};
  ASSERT_TRUE(controller_mutate_by_colocation_profile(p, c).has_value());
  EXPECT_EQ(p, want) << "no schedulerName, no priority class, no resource translation";
}

TEST(TestUpdatePodByClusterColocationProfile, MutateAdvancedAttributes1) {
  cluster_colocation_profile c = managed_profile(label_selector{});
  c.labels["koordinator.sh/scheduler-name"] = "koordinator-scheduler";
  c.label_keys_mapping = {{"label-key-to-load", "label-key-to-store"},
                          {"label-key-to-load-not-exist", "label-key-to-store-not-exist"}};
  c.annotation_keys_mapping = {{"annotation-key-to-load", "annotation-key-to-store"}};
  pod_spec p = pod_in("default", "test-pod-1", {}, 0);
  ASSERT_TRUE(controller_mutate_by_colocation_profile(p, c).has_value());
  EXPECT_EQ(p.labels, (string_map{{"testLabelA", "valueA"},
                                  {"test-patch-label", "patch-a"},
                                  {"label-key-to-store", ""},
                                  {"label-key-to-store-not-exist", ""},
                                  {qos_label, "BE"},
                                  {priority_label, "1111"},
                                  {"koordinator.sh/scheduler-name", "koordinator-scheduler"}}));
  EXPECT_EQ(p.annotations, (string_map{{"testAnnotationA", "valueA"},
                                       {"test-patch-annotation", "patch-b"},
                                       {"annotation-key-to-store", ""}}));
}

TEST(ColocationProfileController, ManagedOnlyUnlessByDefault) {
  cluster_colocation_profile c = managed_profile(label_selector{});
  c.metadata_labels.clear();
  pod_spec p = pod_in("default", "a", {}, 0);
  const std::vector<controller_pod> pods = {{&p, nullptr}};
  colocation_profile_controller ctl;
  auto r = ctl.reconcile(c, "1", pods, event_time{0}, 0);
  ASSERT_TRUE(r.has_value());
  EXPECT_FALSE(r->reconciled);
  EXPECT_TRUE(r->updated.empty());
  colocation_profile_controller_options o;
  o.reconcile_by_default = true;
  colocation_profile_controller all(o);
  auto r2 = all.reconcile(c, "1", pods, event_time{0}, 0);
  ASSERT_TRUE(r2.has_value());
  EXPECT_TRUE(r2->reconciled);
  EXPECT_EQ(r2->updated.size(), 1u);
  EXPECT_EQ(r2->requeue_after, duration_ms{30'000});
}

TEST(ColocationProfileController, CacheSkipsRecentPodsAndBucketLimitsUpdates) {
  const cluster_colocation_profile c = managed_profile(label_selector{});
  std::vector<pod_spec> storage;
  for (int i = 0; i < 150; ++i)
    storage.push_back(pod_in("default", "pod-" + std::to_string(i), {}, 0));
  pod_spec running = pod_in("default", "running", {}, 0);
  running.phase = pod_phase::running;
  std::vector<controller_pod> pods;
  for (const auto& p : storage) pods.push_back({&p, nullptr});
  pods.push_back({&running, nullptr});

  colocation_profile_controller ctl;
  auto first = ctl.reconcile(c, "7", pods, event_time{0}, 1);
  ASSERT_TRUE(first.has_value());
  // Burst 100: the first 100 pods go through, 50 are rate limited; the running pod is ignored.
  EXPECT_EQ(first->summary, (reconcile_summary{150, 100, 100, 50, 0, 0}));
  EXPECT_EQ(first->updated.size(), 100u);
  EXPECT_EQ(first->updated.front().name, "pod-0");

  // 30 s later: 300 tokens of refill, capped at 100. The 100 done pods are cached.
  auto second = ctl.reconcile(c, "7", pods, event_time{30'000}, 1);
  ASSERT_TRUE(second.has_value());
  EXPECT_EQ(second->summary, (reconcile_summary{50, 50, 50, 0, 0, 100}));

  // After force_update_pod_duration the cache expires and the pods are updated again
  // (unchanged now: succeeded but not changed).
  auto third = ctl.reconcile(c, "7", pods, event_time{30'000 + 300'000}, 1);
  ASSERT_TRUE(third.has_value());
  EXPECT_EQ(third->summary.cached, 50);
  EXPECT_EQ(third->summary.succeeded, 100);
  EXPECT_EQ(third->summary.changed, 100) << "the originals are passed again, so they change again";

  // A new profile resourceVersion is a new cache key.
  colocation_profile_controller fresh;
  ASSERT_TRUE(fresh.reconcile(c, "7", pods, event_time{0}, 1).has_value());
  auto bumped = fresh.reconcile(c, "8", pods, event_time{100'000}, 1);
  ASSERT_TRUE(bumped.has_value());
  EXPECT_EQ(bumped->summary.cached, 0);
}

TEST(ColocationProfileController, ProbabilityZeroSkipsEveryPod) {
  cluster_colocation_profile c = managed_profile(label_selector{});
  c.probability = 0;
  pod_spec p = pod_in("default", "a", {}, 0);
  const std::vector<controller_pod> pods = {{&p, nullptr}};
  colocation_profile_controller ctl;
  auto r = ctl.reconcile(c, "1", pods, event_time{0}, 0);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->summary.skipped, 1);
  EXPECT_TRUE(r->updated.empty());
}

TEST(ColocationProfileController, InvalidSelectorIsAnError) {
  cluster_colocation_profile c =
      managed_profile(label_selector{{}, {{"a", selector_operator::in, {}}}});
  pod_spec p = pod_in("default", "a", {}, 0);
  const std::vector<controller_pod> pods = {{&p, nullptr}};
  colocation_profile_controller ctl;
  EXPECT_FALSE(ctl.reconcile(c, "1", pods, event_time{0}, 0).has_value());
}

}  // namespace
}  // namespace colony::admission
