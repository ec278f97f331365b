// ClusterColocationProfile mutation: every row of
// pkg/webhook/pod/mutating/cluster_colocation_profile_test.go
// TestClusterColocationProfileMutatingPod, then Colony's own checks of the subtle cases.
#include "actors/admission/colocation_profile.hpp"

#include <functional>

#include <gtest/gtest.h>

#include "actors/admission/extended_resource_spec.hpp"
#include "messages/names.hpp"
#include "messages/units.hpp"
#include "tests/actors/admission/test_pods.hpp"

namespace colony::admission {
namespace {

using testing::batch;
using testing::container;
using testing::cpu_mem;

const std::string qos_label(names::label_qos_class);
const std::string priority_label(names::label_priority);
const std::string scheduler_name_label =
    "koordinator.sh/scheduler-name";  // extension.LabelSchedulerName

// ---- the Go test's fixture ----------------------------------------------------------------

// Pod "test-pod-1" of the Go test: init 500m/1Gi, main 1/4Gi (requests = limits), overhead
// 1/2Gi, schedulerName nonExistSchedulerName, priority 5999.
pod_spec go_pod() {
  pod_spec p;
  p.pod_namespace = "default";
  p.name = "test-pod-1";
  p.labels = {{"koordinator-colocation-pod", "true"}};
  p.init_containers = {container("test-init-container-a", cpu_mem(500, gib), cpu_mem(500, gib))};
  p.containers = {container("test-container-a", cpu_mem(1000, 4 * gib), cpu_mem(1000, 4 * gib))};
  p.overhead = cpu_mem(1000, 2 * gib);
  p.scheduler_name = "nonExistSchedulerName";
  p.priority = 5999;
  return p;
}

pod_patch go_patch() {
  auto p = parse_pod_patch(
      R"({"metadata":{"labels":{"test-patch-label":"patch-a"},"annotations":{"test-patch-annotation":"patch-b"}}})",
      "spec.patch");
  EXPECT_TRUE(p.has_value());
  return *p;
}

cluster_colocation_profile go_profile() {
  cluster_colocation_profile c;
  c.name = "test-profile";
  c.namespace_selector = label_selector{{{"enable-koordinator-colocation", "true"}}, {}};
  c.selector = label_selector{{{"koordinator-colocation-pod", "true"}}, {}};
  c.labels = {{"testLabelA", "valueA"}};
  c.annotations = {{"testAnnotationA", "valueA"}};
  c.scheduler_name = "koordinator-scheduler";
  c.qos = qos_class::be;
  c.priority_class_name = "koordinator-batch";
  c.koordinator_priority = 1111;
  c.patch = go_patch();
  return c;
}

const string_map go_namespace_labels = {{"enable-koordinator-colocation", "true"}};

priority_class_table go_priority_classes() {
  return {{"koordinator-batch",
           priority_class_info{"koordinator-batch", 5999, "fakePreemptionPolicy"}}};
}

// What "mutating pod" expects of metadata and scheduling fields.
void expect_profile_applied(pod_spec& p) {
  p.labels["testLabelA"] = "valueA";
  p.labels["test-patch-label"] = "patch-a";
  p.labels[qos_label] = "BE";
  p.labels[priority_label] = "1111";
  p.annotations["testAnnotationA"] = "valueA";
  p.annotations["test-patch-annotation"] = "patch-b";
  p.scheduler_name = "koordinator-scheduler";
  p.priority = 5999;
  p.priority_class_name = "koordinator-batch";
  p.preemption_policy = "fakePreemptionPolicy";
}

// What the translation to batch resources does to go_pod().
void expect_batch_resources(pod_spec& p) {
  p.init_containers = {container("test-init-container-a", batch(500, gib), batch(500, gib))};
  p.containers = {container("test-container-a", batch(1000, 4 * gib), batch(1000, 4 * gib))};
  p.overhead = batch(1000, 2 * gib);
}

// A seed whose deterministic draw for (go_pod, test-profile) equals `want`: stands in for the
// Go test's randIntnFn stub.
std::uint64_t seed_with_draw(const pod_spec& pod, std::string_view profile, std::int32_t want) {
  for (std::uint64_t seed = 0; seed < 100000; ++seed)
    if (probability_draw(seed, pod, profile) == want) return seed;
  ADD_FAILURE() << "no seed gives draw " << want;
  return 0;
}

struct mutating_row {
  const char* go_case;
  std::function<void(pod_spec&)> edit_pod;
  std::function<void(cluster_colocation_profile&)> edit_profile;
  std::optional<std::int64_t> percent;
  std::optional<std::int32_t> rand;  // the Go test's randIntnFn result
  bool default_skip_update_resource;
  std::function<void(pod_spec&)> expected;  // applied to go_pod() after edit_pod
};

void nothing(pod_spec&) {}
void nothing_profile(cluster_colocation_profile&) {}

void only_main_container(pod_spec& p, resource_list requests, resource_list limits) {
  p.init_containers.clear();
  p.overhead.reset();
  p.containers = {container("test-container-a", requests, limits)};
}

std::vector<mutating_row> golden_rows() {
  const auto applied_and_batch = [](pod_spec& p) {
    expect_profile_applied(p);
    expect_batch_resources(p);
  };
  return {
      // GC-CCP-1.
      {"mutating pod", nothing, nothing_profile, std::nullopt, std::nullopt, false,
       applied_and_batch},
      // GC-CCP-2.
      {"set default request to the limit",
       [](pod_spec& p) { only_main_container(p, {}, cpu_mem(1000, 4 * gib)); }, nothing_profile,
       std::nullopt, std::nullopt, false,
       [](pod_spec& p) {
         expect_profile_applied(p);
         p.containers = {container("test-container-a", batch(1000, 4 * gib), batch(1000, 4 * gib))};
       }},
      // GC-CCP-3.
      {"keep limit unset", [](pod_spec& p) { only_main_container(p, cpu_mem(1000, 4 * gib), {}); },
       nothing_profile, std::nullopt, std::nullopt, false,
       [](pod_spec& p) {
         expect_profile_applied(p);
         p.containers = {container("test-container-a", batch(1000, 4 * gib), {})};
       }},
      {"mutating pod, percent 100", nothing, nothing_profile, 100, std::nullopt, false,
       applied_and_batch},
      // GC-CCP-4: not applied, resources still translated (priority 5999 is Batch).
      {"mutating pod, percent 0", nothing, nothing_profile, 0, std::nullopt, false,
       expect_batch_resources},
      // GC-CCP-5.
      {"mutating pod, percent 50, rand=70", nothing, nothing_profile, 50, 70, false,
       expect_batch_resources},
      // GC-CCP-6.
      {"mutating pod, percent 50, rand=30", nothing, nothing_profile, 50, 30, false,
       applied_and_batch},
      // GC-CCP-7.
      {"mutating pod, skip update resource by profile annotation", nothing,
       [](cluster_colocation_profile& c) {
         c.metadata_annotations[std::string(annotation_skip_update_resource)] = "true";
       },
       std::nullopt, std::nullopt, false, expect_profile_applied},
      {"mutating pod, skip update resource by leveraging profile", nothing,
       [](cluster_colocation_profile& c) {
         c.annotations[std::string(annotation_skip_update_resource)] = "true";
       },
       std::nullopt, std::nullopt, /*feature gate ColocationProfileSkipMutatingResources*/ true,
       [](pod_spec& p) {
         expect_profile_applied(p);
         p.annotations[std::string(annotation_skip_update_resource)] = "true";
       }},
      {"mutate pod labels according to labels",
       [](pod_spec& p) { p.labels["label-key-to-load"] = "test-label-value"; },
       [](cluster_colocation_profile& c) {
         c.label_keys_mapping = {{"label-key-to-load", "label-key-to-store"}};
       },
       std::nullopt, std::nullopt, false,
       [=](pod_spec& p) {
         applied_and_batch(p);
         p.labels["label-key-to-store"] = "test-label-value";
       }},
      {"mutate pod labels according to labels 1",
       [](pod_spec& p) { p.labels["label-key-to-load"] = "test-label-value"; },
       [](cluster_colocation_profile& c) {
         c.labels[scheduler_name_label] = "koordinator-scheduler";
         c.label_keys_mapping = {{"label-key-to-load", "label-key-to-store"},
                                 {"label-key-to-load-not-exist", "label-key-to-store-not-exist"}};
         c.scheduler_name.clear();
       },
       std::nullopt, std::nullopt, false,
       [=](pod_spec& p) {
         applied_and_batch(p);
         p.scheduler_name =
             "nonExistSchedulerName";  // the profile sets the label, not spec.schedulerName
         p.labels[scheduler_name_label] = "koordinator-scheduler";
         p.labels["label-key-to-store"] = "test-label-value";
         p.labels["label-key-to-store-not-exist"] = "";  // a missing source key writes ""
       }},
      {"mutate pod annotations according to annotations",
       [](pod_spec& p) { p.annotations["annotation-key-to-load"] = "test-annotation-value"; },
       [](cluster_colocation_profile& c) {
         c.annotation_keys_mapping = {{"annotation-key-to-load", "annotation-key-to-store"}};
       },
       std::nullopt, std::nullopt, false,
       [=](pod_spec& p) {
         applied_and_batch(p);
         p.annotations["annotation-key-to-store"] = "test-annotation-value";
       }},
      {"mutate pod labels with labels and suffixes",
       [](pod_spec& p) {
         p.labels["label-key-to-load"] = "test-label-value";
         p.labels["label-key-1"] = "label-value-1";
       },
       [](cluster_colocation_profile& c) {
         c.labels[scheduler_name_label] = "koordinator-scheduler";
         c.label_keys_mapping = {{"label-key-to-load", "label-key-to-store"},
                                 {"label-key-to-load-not-exist", "label-key-to-store-not-exist"}};
         c.label_suffixes = {{"label-key-1", "suffix"},
                             {"label-key-to-store", "suffix-0"},
                             {"suffix-label-key-1", "suffix-1"}};
         c.scheduler_name.clear();
       },
       std::nullopt, std::nullopt, false,
       [=](pod_spec& p) {
         applied_and_batch(p);
         p.scheduler_name = "nonExistSchedulerName";
         p.labels[scheduler_name_label] = "koordinator-scheduler";
         p.labels["label-key-1"] = "label-value-1suffix";
         p.labels["label-key-to-store"] =
             "test-label-valuesuffix-0";  // mapping runs before suffixes
         p.labels["label-key-to-store-not-exist"] = "";
         // "suffix-label-key-1" is not on the pod: no label is created.
       }},
  };
}

// Rows print as their case name, not as bytes.
void PrintTo(const mutating_row& r, std::ostream* os) { *os << r.go_case; }

class TestClusterColocationProfileMutatingPod : public ::testing::TestWithParam<mutating_row> {};

TEST_P(TestClusterColocationProfileMutatingPod, MatchesKoordinator) {
  const mutating_row& r = GetParam();
  pod_spec pod = go_pod();
  r.edit_pod(pod);
  cluster_colocation_profile profile = go_profile();
  r.edit_profile(profile);
  profile.probability = r.percent;
  auto set = profile_set::make({profile});
  ASSERT_TRUE(set.has_value());

  mutating_options opts;
  opts.skip_mutating_resources = r.default_skip_update_resource;
  if (r.rand) opts.seed = seed_with_draw(pod, profile.name, *r.rand);

  auto got = cluster_colocation_profile_mutating_pod(pod, *set, &go_namespace_labels,
                                                     go_priority_classes(), opts);
  ASSERT_TRUE(got.has_value()) << got.error().describe();

  pod_spec want = pod;
  r.expected(want);
  EXPECT_EQ(got->pod.labels, want.labels);
  EXPECT_EQ(got->pod.annotations, want.annotations);
  EXPECT_EQ(got->pod.scheduler_name, want.scheduler_name);
  EXPECT_EQ(got->pod.priority, want.priority);
  EXPECT_EQ(got->pod.priority_class_name, want.priority_class_name);
  EXPECT_EQ(got->pod.preemption_policy, want.preemption_policy);
  EXPECT_EQ(got->pod.init_containers, want.init_containers);
  EXPECT_EQ(got->pod.containers, want.containers);
  EXPECT_EQ(got->pod.overhead, want.overhead);
  EXPECT_EQ(got->pod, want);  // nothing else moved

  // The event view agrees with the pod.
  ASSERT_EQ(got->matched.size(), 1u);
  const bool applied = got->pod.priority_class_name == "koordinator-batch";
  EXPECT_EQ(got->matched[0].applied, applied);
  EXPECT_EQ(got->applied_profiles,
            applied ? std::vector<std::string>{"test-profile"} : std::vector<std::string>{});
  if (r.rand) {
    EXPECT_EQ(got->matched[0].draw, *r.rand);
  }
  EXPECT_EQ(got->requests, get_pod_request(want));
  EXPECT_EQ(got->limits, get_pod_limits(want));
  EXPECT_EQ(got->priority, 5999);
  EXPECT_EQ(got->koord_priority_class, priority_class::batch);
}

INSTANTIATE_TEST_SUITE_P(GoldenCases, TestClusterColocationProfileMutatingPod,
                         ::testing::ValuesIn(golden_rows()),
                         [](const ::testing::TestParamInfo<mutating_row>& info) {
                           return testing::gtest_name(info.param.go_case);
                         });

// ---- Colony's own checks ------------------------------------------------------------------

result<pod_mutation> run(const pod_spec& pod, std::vector<cluster_colocation_profile> profiles,
                         const string_map* ns = &go_namespace_labels, mutating_options opts = {}) {
  auto set = profile_set::make(std::move(profiles));
  if (!set) return tl::unexpected(set.error());
  return cluster_colocation_profile_mutating_pod(pod, *set, ns, go_priority_classes(), opts);
}

TEST(ColocationProfileMutation, GCCCP1EventFieldsAreFilled) {
  auto got = run(go_pod(), {go_profile()});
  ASSERT_TRUE(got.has_value());
  EXPECT_TRUE(got->mutated);
  EXPECT_TRUE(got->resources_translated);
  EXPECT_EQ(got->koord_qos, qos_class::be);
  EXPECT_EQ(got->koord_priority_class, priority_class::batch);
  EXPECT_EQ(got->priority, 5999);
  // Pod request: main 1000/4Gi, init 500/1Gi is smaller, plus overhead 1000/2Gi.
  EXPECT_EQ(got->requests, batch(2000, 6 * gib));
  EXPECT_EQ(got->limits, batch(2000, 6 * gib));
  EXPECT_TRUE(got->ignored_patch_paths.empty());
}

TEST(ColocationProfileMutation, NoProfilesOrNoMatchMeansNoTranslation) {
  auto none = run(go_pod(), {});
  ASSERT_TRUE(none.has_value());
  EXPECT_EQ(none->pod, go_pod());
  EXPECT_FALSE(none->mutated);

  cluster_colocation_profile other = go_profile();
  other.selector = label_selector{{{"koordinator-colocation-pod", "false"}}, {}};
  auto unmatched = run(go_pod(), {other});
  ASSERT_TRUE(unmatched.has_value());
  EXPECT_EQ(unmatched->pod, go_pod()) << "a Batch pod no profile matches keeps cpu/memory";
  EXPECT_TRUE(unmatched->matched.empty());
}

TEST(ColocationProfileMutation, NamespaceSelector) {
  const string_map other_ns = {{"team", "a"}};
  auto miss = run(go_pod(), {go_profile()}, &other_ns);
  ASSERT_TRUE(miss.has_value());
  EXPECT_TRUE(miss->matched.empty());
  // Koordinator's quirk: a failed Namespace lookup counts as matched.
  auto unknown = run(go_pod(), {go_profile()}, nullptr);
  ASSERT_TRUE(unknown.has_value());
  EXPECT_EQ(unknown->applied_profiles, std::vector<std::string>{"test-profile"});
  // An empty namespace selector needs no lookup.
  cluster_colocation_profile any_ns = go_profile();
  any_ns.namespace_selector = label_selector{};
  auto empty_sel = run(go_pod(), {any_ns}, &other_ns);
  ASSERT_TRUE(empty_sel.has_value());
  EXPECT_EQ(empty_sel->applied_profiles.size(), 1u);
}

TEST(ColocationProfileMutation, InvalidSelectorCountsAsMatched) {
  cluster_colocation_profile broken = go_profile();
  broken.selector = label_selector{{}, {{"app", selector_operator::in, {}}}};  // In without values
  auto got = run(go_pod(), {broken});
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ(got->applied_profiles, std::vector<std::string>{"test-profile"});
}

TEST(ColocationProfileMutation, MatchExpressions) {
  struct row {
    const char* name;
    label_selector_requirement req;
    bool matches;
  };
  const std::vector<row> rows = {
      {"In hit", {"koordinator-colocation-pod", selector_operator::in, {"false", "true"}}, true},
      {"In miss", {"koordinator-colocation-pod", selector_operator::in, {"false"}}, false},
      {"In missing key", {"absent", selector_operator::in, {"x"}}, false},
      {"NotIn hit", {"koordinator-colocation-pod", selector_operator::not_in, {"true"}}, false},
      {"NotIn missing key matches", {"absent", selector_operator::not_in, {"x"}}, true},
      {"Exists", {"koordinator-colocation-pod", selector_operator::exists, {}}, true},
      {"Exists missing", {"absent", selector_operator::exists, {}}, false},
      {"DoesNotExist", {"absent", selector_operator::does_not_exist, {}}, true},
      {"DoesNotExist present",
       {"koordinator-colocation-pod", selector_operator::does_not_exist, {}},
       false},
  };
  for (const auto& r : rows) {
    SCOPED_TRACE(r.name);
    cluster_colocation_profile c = go_profile();
    c.selector = label_selector{{}, {r.req}};
    EXPECT_EQ(profile_matches(c, go_pod(), &go_namespace_labels), r.matches);
  }
}

TEST(ColocationProfileMutation, ProfilesApplyInNameOrderLaterWins) {
  cluster_colocation_profile a = go_profile();
  a.name = "b-second";
  a.scheduler_name = "from-b";
  a.labels = {{"who", "b"}};
  cluster_colocation_profile b = go_profile();
  b.name = "a-first";
  b.scheduler_name = "from-a";
  b.labels = {{"who", "a"}, {"only-a", "1"}};
  cluster_colocation_profile upper = go_profile();
  upper.name = "Z-upper";  // byte order: uppercase sorts before lowercase
  upper.labels = {{"who", "Z"}};
  auto got = run(go_pod(), {a, upper, b});
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ(got->applied_profiles, (std::vector<std::string>{"Z-upper", "a-first", "b-second"}));
  EXPECT_EQ(got->pod.scheduler_name, "from-b");
  EXPECT_EQ(got->pod.labels.at("who"), "b");
  EXPECT_EQ(got->pod.labels.at("only-a"), "1");
}

TEST(ColocationProfileMutation, SkipAnnotationCountsEvenWhenSkippedByProbability) {
  cluster_colocation_profile skipper = go_profile();
  skipper.name = "a-skipper";
  skipper.probability = 0;
  skipper.metadata_annotations[std::string(annotation_skip_update_resource)] = "";
  cluster_colocation_profile plain = go_profile();
  auto got = run(go_pod(), {skipper, plain});
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ(got->applied_profiles, std::vector<std::string>{"test-profile"});
  EXPECT_FALSE(got->resources_translated);
  EXPECT_EQ(got->pod.containers, go_pod().containers);
}

TEST(ColocationProfileMutation, MissingPriorityClassFailsAdmission) {
  cluster_colocation_profile c = go_profile();
  c.priority_class_name = "does-not-exist";
  auto got = run(go_pod(), {c});
  ASSERT_FALSE(got.has_value());
  EXPECT_EQ(got.error().code, errc::not_found);
  EXPECT_NE(got.error().where.find("test-profile"), std::string::npos);
  EXPECT_NE(got.error().message.find("does-not-exist"), std::string::npos);
}

TEST(ColocationProfileMutation, PriorityClassWithoutPolicyClearsIt) {
  priority_class_table t = {{"plain", priority_class_info{"plain", 7100, ""}}};
  cluster_colocation_profile c = go_profile();
  c.priority_class_name = "plain";
  c.qos = qos_class::ls;
  pod_spec p = go_pod();
  p.preemption_policy = "Never";
  auto set = profile_set::make({c});
  ASSERT_TRUE(set.has_value());
  auto got = cluster_colocation_profile_mutating_pod(p, *set, &go_namespace_labels, t, {});
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ(got->pod.preemption_policy, "");
  EXPECT_EQ(got->pod.priority, 7100);
  // 7100 is Mid: cpu/memory become mid-cpu / mid-memory.
  EXPECT_EQ(got->koord_priority_class, priority_class::mid);
  EXPECT_EQ(got->pod.containers[0].requests, testing::mid(1000, 4 * gib));
  EXPECT_EQ(got->pod.overhead, testing::mid(1000, 2 * gib));
}

TEST(ResourceTranslation, ProdNoneAndFreeAreLeftAlone) {
  for (std::int32_t prio : {9500, 3500}) {
    pod_spec p = go_pod();
    p.priority = prio;
    EXPECT_FALSE(mutate_pod_resource_spec(p)) << prio;
    EXPECT_EQ(p, [&] {
      pod_spec q = go_pod();
      q.priority = prio;
      return q;
    }()) << prio;
  }
  // No priority, no label, Guaranteed: LSR -> Prod.
  pod_spec g = go_pod();
  g.priority.reset();
  EXPECT_FALSE(mutate_pod_resource_spec(g));
  // Out-of-band priority and an unknown priority-class label with a QoS label LS: Prod.
  pod_spec ls = go_pod();
  ls.priority = 100;
  ls.labels[qos_label] = "LS";
  EXPECT_FALSE(mutate_pod_resource_spec(ls));
}

TEST(ResourceTranslation, ClassWithDefaultDecides) {
  // No spec.priority, QoS label BE: class-with-default is Batch, so resources move.
  pod_spec p = go_pod();
  p.priority.reset();
  p.labels[qos_label] = "BE";
  EXPECT_TRUE(mutate_pod_resource_spec(p));
  EXPECT_EQ(p.containers[0].requests, batch(1000, 4 * gib));
}

TEST(ResourceTranslation, PerContainerLimitDefaultsAndExistingBatchValues) {
  pod_spec p;
  p.priority = 5500;
  p.containers = {
      container("limit-only-cpu", cpu_mem(0, gib), cpu_mem(2000, 0)),
      container("already-batch", batch(300, 0), batch(300, 0)),
      container("both",
                [] {
                  resource_list r = cpu_mem(700, 0);
                  r.batch_cpu_milli = 100;
                  return r;
                }(),
                {}),
  };
  EXPECT_TRUE(mutate_pod_resource_spec(p));
  // cpu request missing, cpu limit 2000 -> batch-cpu request = limit; memory request only.
  EXPECT_EQ(p.containers[0].requests, batch(2000, gib));
  EXPECT_EQ(p.containers[0].limits, batch(2000, 0));
  EXPECT_EQ(p.containers[1].requests, batch(300, 0));
  // A cpu request overwrites a batch-cpu already there (replaceAndEraseResource).
  EXPECT_EQ(p.containers[2].requests, batch(700, 0));
  EXPECT_EQ(p.containers[2].limits, batch(0, 0));
}

TEST(ResourceTranslation, OtherResourcesAreKept) {
  pod_spec p;
  p.priority = 5500;
  resource_list r = cpu_mem(500, gib);
  r.gpu = 100;
  r.pods = 1;
  p.containers = {container("a", r, r)};
  EXPECT_TRUE(mutate_pod_resource_spec(p));
  resource_list want = batch(500, gib);
  want.gpu = 100;
  want.pods = 1;
  EXPECT_EQ(p.containers[0].requests, want);
  EXPECT_EQ(p.containers[0].limits, want);
}

TEST(KeysMapping, ChainsApplyInAscendingSourceKeyOrder) {
  cluster_colocation_profile c = go_profile();
  c.label_keys_mapping = {{"a", "b"}, {"b", "c"}};
  c.annotation_keys_mapping = {{"x", "t"}, {"y", "t"}};  // two sources, one target
  pod_spec p = go_pod();
  p.labels["a"] = "A";
  p.labels["b"] = "B";
  p.annotations["x"] = "X";
  p.annotations["y"] = "Y";
  auto got = run(p, {c});
  ASSERT_TRUE(got.has_value());
  // a->b first (b = "A"), then b->c reads the new b.
  EXPECT_EQ(got->pod.labels.at("b"), "A");
  EXPECT_EQ(got->pod.labels.at("c"), "A");
  EXPECT_EQ(got->pod.annotations.at("t"), "Y");  // the greater source key writes last
}

TEST(Patch, MapNullsReplaceAndScalarFields) {
  auto patch = parse_pod_patch(
      R"({"metadata":{"labels":{"drop":null,"add":"1"},"annotations":{"$patch":"replace","only":"this"}},
          "spec":{"schedulerName":"patched","priority":7777,"preemptionPolicy":null,"tolerations":[{"key":"k"}]},
          "status":{}})",
      "spec.patch");
  ASSERT_TRUE(patch.has_value()) << patch.error().describe();
  EXPECT_EQ(patch->unsupported_paths,
            (std::vector<std::string>{"spec.patch.spec.tolerations", "spec.patch.status"}));
  cluster_colocation_profile c;
  c.name = "p";
  c.patch = *patch;
  pod_spec p = go_pod();
  p.labels["drop"] = "x";
  p.annotations["gone"] = "x";
  p.preemption_policy = "Never";
  auto got = run(p, {c});
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ(got->pod.labels.count("drop"), 0u);
  EXPECT_EQ(got->pod.labels.at("add"), "1");
  EXPECT_EQ(got->pod.annotations, (string_map{{"only", "this"}}));
  EXPECT_EQ(got->pod.scheduler_name, "patched");
  EXPECT_EQ(got->pod.priority, 7777);
  EXPECT_EQ(got->pod.preemption_policy, "");
  EXPECT_EQ(got->ignored_patch_paths,
            (std::vector<std::string>{"p: spec.patch.spec.tolerations", "p: spec.patch.status"}));
  // The patch runs last: its priority (Mid) decides the translation.
  EXPECT_EQ(got->koord_priority_class, priority_class::mid);
  EXPECT_EQ(got->pod.containers[0].requests, testing::mid(1000, 4 * gib));
}

TEST(Patch, BadTypesAreErrors) {
  EXPECT_FALSE(parse_pod_patch(R"([1,2])", "spec.patch").has_value());
  EXPECT_FALSE(parse_pod_patch(R"({"metadata":{"labels":{"a":1}}})", "spec.patch").has_value());
  EXPECT_FALSE(parse_pod_patch(R"({"spec":{"priority":"high"}})", "spec.patch").has_value());
  EXPECT_FALSE(parse_pod_patch(R"({"spec":{"priority":4294967296}})", "spec.patch").has_value());
  auto e = parse_pod_patch(R"({"metadata":{"labels":{"a":true}}})", "spec.patch");
  ASSERT_FALSE(e.has_value());
  EXPECT_NE(e.error().message.find("spec.patch.metadata.labels.a"), std::string::npos)
      << e.error().message;
}

// ---- B.3: the extended-resource-spec annotation ------------------------------------------------

TEST(ExtendedResourceSpec, WrittenAfterTranslationForRegularContainersOnly) {
  auto set = profile_set::make({go_profile()});
  ASSERT_TRUE(set.has_value());
  auto got = mutate_pod_on_create(go_pod(), *set, &go_namespace_labels, go_priority_classes(), {});
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ(
      got->pod.annotations.at(std::string(annotation_extended_resource_spec)),
      R"({"containers":{"test-container-a":{"limits":{"kubernetes.io/batch-cpu":"1k","kubernetes.io/batch-memory":"4Gi"},)"
      R"("requests":{"kubernetes.io/batch-cpu":"1k","kubernetes.io/batch-memory":"4Gi"}}}})");
}

TEST(ExtendedResourceSpec, OmitsEmptyPartsAndLeavesPodsWithoutBatchAlone) {
  pod_spec p;
  p.containers = {container("b", batch(500, 0), {}), container("a", cpu_mem(100, 0), {})};
  EXPECT_EQ(extended_resource_spec_json(p),
            R"({"containers":{"b":{"requests":{"kubernetes.io/batch-cpu":"500"}}}})");
  pod_spec plain;
  plain.containers = {container("a", cpu_mem(100, 0), {})};
  EXPECT_EQ(extended_resource_spec_json(plain), "{}");
  auto changed = mutate_by_extended_resources(plain);
  ASSERT_TRUE(changed.has_value());
  EXPECT_FALSE(*changed);
  EXPECT_TRUE(plain.annotations.empty());
  // Unchanged annotation: no rewrite. Garbage: admission error.
  auto again = mutate_by_extended_resources(p);
  ASSERT_TRUE(again.has_value());
  EXPECT_TRUE(*again);
  EXPECT_FALSE(*mutate_by_extended_resources(p));
  p.annotations[std::string(annotation_extended_resource_spec)] = "{not json";
  EXPECT_FALSE(mutate_by_extended_resources(p).has_value());
}

TEST(ExtendedResourceSpec, DisabledByOption) {
  auto set = profile_set::make({go_profile()});
  ASSERT_TRUE(set.has_value());
  mutating_options opts;
  opts.disable_extended_resource_spec = true;
  auto got =
      mutate_pod_on_create(go_pod(), *set, &go_namespace_labels, go_priority_classes(), opts);
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ(got->pod.annotations.count(std::string(annotation_extended_resource_spec)), 0u);
}

TEST(ProfileSet, SortedUniqueUpsertErase) {
  cluster_colocation_profile a, b;
  a.name = "b";
  b.name = "a";
  auto set = profile_set::make({a, b});
  ASSERT_TRUE(set.has_value());
  EXPECT_EQ(set->profiles()[0].name, "a");
  EXPECT_FALSE(profile_set::make({a, a}).has_value());
  cluster_colocation_profile c;
  c.name = "aa";
  set->upsert(c);
  EXPECT_EQ(set->profiles()[1].name, "aa");
  c.scheduler_name = "changed";
  set->upsert(c);
  EXPECT_EQ(set->profiles().size(), 3u);
  EXPECT_EQ(set->find("aa")->scheduler_name, "changed");
  EXPECT_TRUE(set->erase("aa"));
  EXPECT_FALSE(set->erase("aa"));
  EXPECT_EQ(set->find("aa"), nullptr);
}

TEST(ProfileMetadata, SkipAndReconcileFlags) {
  cluster_colocation_profile c;
  EXPECT_FALSE(c.should_skip_update_resource());
  EXPECT_FALSE(c.should_reconcile());
  c.metadata_annotations[std::string(annotation_skip_update_resource)] =
      "false";  // presence is what counts
  c.metadata_labels[std::string(label_controller_managed)] = "yes";
  EXPECT_TRUE(c.should_skip_update_resource());
  EXPECT_FALSE(c.should_reconcile());
  c.metadata_labels[std::string(label_controller_managed)] = "true";
  EXPECT_TRUE(c.should_reconcile());
}

}  // namespace
}  // namespace colony::admission
