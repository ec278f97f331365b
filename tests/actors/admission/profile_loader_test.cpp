// Loading ClusterColocationProfile objects from YAML files and JSON, and the errors for bad ones
// (field path in the message, file:line in `where`).
#include "actors/admission/profile_loader.hpp"

#include <cstdio>
#include <fstream>

#include <gtest/gtest.h>

namespace colony::admission {
namespace {

// The example profile of Koordinator's documentation (docs/user-manuals/colocation-profile.md).
constexpr const char* doc_example = R"(apiVersion: config.koordinator.sh/v1alpha1
kind: ClusterColocationProfile
metadata:
  name: colocation-profile-example
  annotations:
    config.koordinator.sh/skip-update-resources: ""
spec:
  namespaceSelector:
    matchLabels:
      koordinator.sh/enable-colocation: "true"
  selector:
    matchLabels:
      koordinator.sh/enable-colocation: "true"
    matchExpressions:
      - key: app
        operator: NotIn
        values: [db, cache]
      - {key: tier, operator: Exists}
  probability: "50%"
  qosClass: BE
  priorityClassName: koord-batch
  koordinatorPriority: 1000
  schedulerName: koord-scheduler
  labels:
    koordinator.sh/mutated: "true"
  annotations:
    koordinator.sh/intercepted: "true"
  labelKeysMapping:
    app: app.kubernetes.io/name
  annotationKeysMapping:
    old: new
  labelSuffixes:
    app: -batch
  patch:
    metadata:
      labels:
        patched: "yes"
    spec:
      terminationGracePeriodSeconds: 30
)";

TEST(ProfileLoaderYaml, LoadsEveryField) {
  auto got = parse_profiles_yaml(doc_example, "example.yaml");
  ASSERT_TRUE(got.has_value()) << got.error().describe();
  ASSERT_EQ(got->size(), 1u);
  const cluster_colocation_profile& p = got->front();
  EXPECT_EQ(p.name, "colocation-profile-example");
  EXPECT_TRUE(p.should_skip_update_resource());
  ASSERT_TRUE(p.namespace_selector.has_value());
  EXPECT_EQ(p.namespace_selector->match_labels,
            (string_map{{"koordinator.sh/enable-colocation", "true"}}));
  ASSERT_TRUE(p.selector.has_value());
  ASSERT_EQ(p.selector->match_expressions.size(), 2u);
  EXPECT_EQ(p.selector->match_expressions[0],
            (label_selector_requirement{"app", selector_operator::not_in, {"db", "cache"}}));
  EXPECT_EQ(p.selector->match_expressions[1],
            (label_selector_requirement{"tier", selector_operator::exists, {}}));
  EXPECT_EQ(p.probability, 50);
  EXPECT_EQ(p.qos, qos_class::be);
  EXPECT_EQ(p.priority_class_name, "koord-batch");
  EXPECT_EQ(p.koordinator_priority, 1000);
  EXPECT_EQ(p.scheduler_name, "koord-scheduler");
  EXPECT_EQ(p.labels, (string_map{{"koordinator.sh/mutated", "true"}}));
  EXPECT_EQ(p.annotations, (string_map{{"koordinator.sh/intercepted", "true"}}));
  EXPECT_EQ(p.label_keys_mapping, (string_map{{"app", "app.kubernetes.io/name"}}));
  EXPECT_EQ(p.annotation_keys_mapping, (string_map{{"old", "new"}}));
  EXPECT_EQ(p.label_suffixes, (string_map{{"app", "-batch"}}));
  ASSERT_TRUE(p.patch.has_value());
  EXPECT_EQ(p.patch->labels.set, (string_map{{"patched", "yes"}}));
  EXPECT_EQ(p.patch->unsupported_paths,
            std::vector<std::string>{"spec.patch.spec.terminationGracePeriodSeconds"});
}

TEST(ProfileLoaderYaml, SameProfileFromJson) {
  auto y = parse_profiles_yaml(doc_example, "example.yaml");
  const char* json_text =
      R"({"apiVersion":"config.koordinator.sh/v1alpha1","kind":"ClusterColocationProfile",
    "metadata":{"name":"colocation-profile-example","uid":"1234","resourceVersion":"9",
                "annotations":{"config.koordinator.sh/skip-update-resources":""}},
    "spec":{"namespaceSelector":{"matchLabels":{"koordinator.sh/enable-colocation":"true"}},
            "selector":{"matchLabels":{"koordinator.sh/enable-colocation":"true"},
                        "matchExpressions":[{"key":"app","operator":"NotIn","values":["db","cache"]},
                                            {"key":"tier","operator":"Exists"}]},
            "probability":"50%","qosClass":"BE","priorityClassName":"koord-batch","koordinatorPriority":1000,
            "schedulerName":"koord-scheduler","labels":{"koordinator.sh/mutated":"true"},
            "annotations":{"koordinator.sh/intercepted":"true"},
            "labelKeysMapping":{"app":"app.kubernetes.io/name"},"annotationKeysMapping":{"old":"new"},
            "labelSuffixes":{"app":"-batch"},
            "patch":{"metadata":{"labels":{"patched":"yes"}},"spec":{"terminationGracePeriodSeconds":30}}},
    "status":{}})";
  auto j = parse_profile_json(json_text, "watch-event");
  ASSERT_TRUE(y.has_value() && j.has_value()) << (j ? "" : j.error().describe());
  EXPECT_EQ(y->front(), *j);
}

TEST(ProfileLoaderYaml, MultipleDocumentsListsAndFile) {
  const char* text = R"(
apiVersion: config.koordinator.sh/v1alpha1
kind: ClusterColocationProfile
metadata: {name: b}
spec: {probability: 30}
---
kind: ClusterColocationProfileList
items:
  - metadata: {name: a}
  - metadata: {name: c}
    spec:
      selector: {}
      namespaceSelector: null
---
)";
  const std::string file = ::testing::TempDir() + "/colony_profiles_test.yaml";
  {
    std::ofstream out(file);
    out << text;
  }
  auto got = load_profiles_yaml_file(file);
  std::remove(file.c_str());
  ASSERT_TRUE(got.has_value()) << got.error().describe();
  ASSERT_EQ(got->size(), 3u);
  EXPECT_EQ((*got)[0].name, "b");
  EXPECT_EQ((*got)[0].probability, 30);
  EXPECT_EQ((*got)[1].name, "a");
  EXPECT_FALSE((*got)[1].selector.has_value());
  ASSERT_TRUE((*got)[2].selector.has_value());
  EXPECT_TRUE((*got)[2].selector->empty());
  EXPECT_FALSE((*got)[2].namespace_selector.has_value());
  auto set = profile_set::make(*got);
  ASSERT_TRUE(set.has_value());
  EXPECT_EQ(set->profiles()[0].name, "a");

  auto missing = load_profiles_yaml_file("/nonexistent/profiles.yaml");
  ASSERT_FALSE(missing.has_value());
  EXPECT_EQ(missing.error().code, errc::not_found);
  EXPECT_EQ(missing.error().where, "/nonexistent/profiles.yaml");
}

struct bad_yaml_row {
  const char* name;
  const char* yaml;
  const char* message_has;  // a substring of the message (names the field)
  int line;                 // the line `where` must name
};

// Rows print as their case name, not as bytes.
void PrintTo(const bad_yaml_row& r, std::ostream* os) { *os << r.name; }

class ProfileLoaderYamlErrors : public ::testing::TestWithParam<bad_yaml_row> {};

TEST_P(ProfileLoaderYamlErrors, NamesFieldAndLine) {
  const auto& r = GetParam();
  auto got = parse_profiles_yaml(r.yaml, "bad.yaml");
  ASSERT_FALSE(got.has_value());
  EXPECT_EQ(got.error().code, errc::invalid_input);
  EXPECT_NE(got.error().message.find(r.message_has), std::string::npos) << got.error().describe();
  EXPECT_EQ(got.error().where, "bad.yaml:" + std::to_string(r.line)) << got.error().describe();
}

INSTANTIATE_TEST_SUITE_P(
    Rows, ProfileLoaderYamlErrors,
    ::testing::Values(
        bad_yaml_row{"QosClassNotInEnum", "metadata:\n  name: p\nspec:\n  qosClass: GOLD\n",
                     "spec.qosClass: Unsupported value: \"GOLD\"", 4},
        bad_yaml_row{
            "ProbabilityNotPercent", "metadata:\n  name: p\nspec:\n  probability: \"50\"\n",
            "spec.probability: Invalid value: \"50\": invalid type: string is not a percentage", 4},
        bad_yaml_row{"ProbabilityGarbage", "metadata:\n  name: p\nspec:\n  probability: \"x%\"\n",
                     "spec.probability", 4},
        bad_yaml_row{"ProbabilityFloat", "metadata:\n  name: p\nspec:\n  probability: 0.5\n",
                     "spec.probability", 4},
        bad_yaml_row{"KoordinatorPriorityRange",
                     "metadata:\n  name: p\nspec:\n  koordinatorPriority: 3000000000\n",
                     "spec.koordinatorPriority", 4},
        bad_yaml_row{"MissingName", "metadata:\n  labels: {}\nspec: {}\n",
                     "metadata.name: Required value", 1},
        bad_yaml_row{"BadName", "metadata:\n  name: Bad_Name\n",
                     "metadata.name: Invalid value: \"Bad_Name\"", 2},
        bad_yaml_row{"UnknownSpecField", "metadata:\n  name: p\nspec:\n  qosclass: BE\n",
                     "spec.qosclass: unknown field", 4},
        bad_yaml_row{"UnquotedBoolLabel",
                     "metadata:\n  name: p\nspec:\n  labels:\n    enabled: true\n",
                     "spec.labels[enabled]: Invalid value: must be a string, got boolean", 5},
        bad_yaml_row{"BadOperator",
                     "metadata:\n  name: p\nspec:\n  selector:\n    matchExpressions:\n      - "
                     "key: a\n        "
                     "operator: Equals\n        values: [x]\n",
                     "spec.selector.matchExpressions[0].operator: Unsupported value: \"Equals\"",
                     7},
        bad_yaml_row{"InWithoutValues",
                     "metadata:\n  name: p\nspec:\n  selector:\n    matchExpressions:\n      - "
                     "key: a\n        "
                     "operator: In\n",
                     "spec.selector.matchExpressions[0].values: Required value", 4},
        bad_yaml_row{"ExistsWithValues",
                     "metadata:\n  name: p\nspec:\n  selector:\n    matchExpressions:\n      - "
                     "key: a\n        "
                     "operator: Exists\n        values: [x]\n",
                     "spec.selector.matchExpressions[0].values: Forbidden", 4},
        bad_yaml_row{"BadMatchLabelKey",
                     "metadata:\n  name: p\nspec:\n  namespaceSelector:\n    matchLabels:\n      "
                     "\"bad key\": x\n",
                     "spec.namespaceSelector.matchLabels: Invalid value: \"bad key\"", 4},
        bad_yaml_row{"PatchNotObject", "metadata:\n  name: p\nspec:\n  patch: [1]\n", "spec.patch",
                     4},
        bad_yaml_row{"PatchLabelNotString",
                     "metadata:\n  name: p\nspec:\n  patch:\n    metadata:\n      labels:\n  "
                     "      a: 1\n",
                     "spec.patch.metadata.labels.a", 4},
        bad_yaml_row{"WrongKind", "kind: Pod\nmetadata:\n  name: p\n",
                     "kind: Unsupported value: \"Pod\"", 1},
        bad_yaml_row{"WrongApiVersion", "apiVersion: v1\nmetadata:\n  name: p\n",
                     "apiVersion: Unsupported value", 1},
        bad_yaml_row{"DuplicateName", "metadata:\n  name: p\n---\nmetadata:\n  name: p\n",
                     "metadata.name: Duplicate value: \"p\"", 5},
        bad_yaml_row{
            "ListItemError",
            "kind: List\nitems:\n- metadata: {name: a}\n- metadata: {name: b}\n  spec:\n    "
            "schedulerName: [x]\n",
            "items[1].spec.schedulerName: Invalid value: must be a string", 6},
        bad_yaml_row{"SyntaxError", "metadata:\n  name: p\nspec: {qosClass: BE\n", "YAML syntax",
                     4}),
    [](const ::testing::TestParamInfo<bad_yaml_row>& info) {
      return std::string(info.param.name);
    });

TEST(ProfileLoaderJson, ErrorsNameFieldAndSource) {
  auto syntax =
      parse_profile_json("{\n\"metadata\": {\"name\": \"p\"},\n\"spec\": {,}\n}", "event@42");
  ASSERT_FALSE(syntax.has_value());
  EXPECT_EQ(syntax.error().where, "event@42:3");
  EXPECT_NE(syntax.error().message.find("JSON syntax"), std::string::npos);

  auto bad_qos =
      parse_profile_json(R"({"metadata":{"name":"p"},"spec":{"qosClass":"LSX"}})", "event@43");
  ASSERT_FALSE(bad_qos.has_value());
  EXPECT_EQ(bad_qos.error().where, "event@43");
  EXPECT_NE(bad_qos.error().message.find("spec.qosClass"), std::string::npos);

  auto not_object = parse_profile_json("[]", "event@44");
  ASSERT_FALSE(not_object.has_value());
  EXPECT_EQ(not_object.error().code, errc::invalid_input);

  auto list = parse_profiles_json(
      R"({"kind":"List","items":[{"metadata":{"name":"x"}},{"metadata":{"name":"y"}}]})", "list");
  ASSERT_TRUE(list.has_value()) << list.error().describe();
  EXPECT_EQ(list->size(), 2u);
  auto prob_int = parse_profile_json(
      R"({"metadata":{"name":"p"},"spec":{"probability":70,"qosClass":""}})", "e");
  ASSERT_TRUE(prob_int.has_value());
  EXPECT_EQ(prob_int->probability, 70);
  EXPECT_EQ(prob_int->qos, qos_class::none) << "empty qosClass is unset";
}

TEST(PriorityClassLoader, ReadsValuesAndPolicies) {
  const char* text = R"(
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: koord-batch}
value: 5999
preemptionPolicy: Never
---
kind: List
items:
- {kind: PriorityClass, metadata: {name: koord-prod}, value: 9999}
)";
  auto got = parse_priority_classes_yaml(text, "pc.yaml");
  ASSERT_TRUE(got.has_value()) << got.error().describe();
  EXPECT_EQ(got->at("koord-batch"), (priority_class_info{"koord-batch", 5999, "Never"}));
  EXPECT_EQ(got->at("koord-prod"), (priority_class_info{"koord-prod", 9999, ""}));
  auto bad = parse_priority_classes_yaml("kind: PriorityClass\nmetadata: {name: x}\nvalue: high\n",
                                         "pc.yaml");
  ASSERT_FALSE(bad.has_value());
  EXPECT_EQ(bad.error().where, "pc.yaml:3");
}

}  // namespace
}  // namespace colony::admission
