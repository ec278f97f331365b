// Golden cases of the ElasticQuota webhook: Koordinator's pkg/webhook/elasticquota/
// quota_topology_test.go, plus ElasticQuotaProfile mapping and CRD YAML loading.
#include <ostream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "actors/quota/webhook.hpp"
#include "messages/names.hpp"
#include "tests/actors/quota/test_helpers.hpp"

namespace colony::quota {
namespace {

using namespace colony::quota::testing;
const std::string kRoot{quota_names::root_quota};

keyed_resources cpu_mem(std::int64_t cpu, std::int64_t mem) {
  return {res(cpu, mem), key::cpu | key::memory};
}
keyed_resources cpu_only(std::int64_t cpu) { return {res(cpu, 0), key::cpu}; }
keyed_resources mem_only(std::int64_t mem) { return {res(0, mem), key::memory}; }

// MakeQuota(...) of Koordinator's webhook tests.
struct make_quota_t {
  std::string name;
  string_map labels, annotations;
  keyed_resources min, max, used;
  make_quota_t& Max(keyed_resources r) {
    max = r;
    return *this;
  }
  make_quota_t& Min(keyed_resources r) {
    min = r;
    return *this;
  }
  make_quota_t& Used(keyed_resources r) {
    used = r;
    return *this;
  }
  make_quota_t& ParentName(const std::string& p) {
    labels[std::string(names::label_quota_parent)] = p;
    return *this;
  }
  make_quota_t& IsParent(bool b) {
    labels[std::string(names::label_quota_is_parent)] = b ? "true" : "false";
    return *this;
  }
  make_quota_t& TreeID(const std::string& t) {
    labels[std::string(names::label_quota_tree_id)] = t;
    return *this;
  }
  make_quota_t& SharedWeight(keyed_resources r) {
    annotations[std::string(names::annotation_shared_weight)] =
        resource_list_to_json(r.values, r.keys);
    return *this;
  }
  make_quota_t& IsRoot(bool b) {
    labels[std::string(names::label_quota_is_root)] = b ? "true" : "false";
    return *this;
  }
  make_quota_t& Guaranteed(keyed_resources r) {
    annotations[std::string(names::annotation_guaranteed)] =
        resource_list_to_json(r.values, r.keys);
    return *this;
  }
  make_quota_t& Annotation(std::string_view k, std::string v) {
    annotations[std::string(k)] = std::move(v);
    return *this;
  }
  [[nodiscard]] quota_spec Obj() const {
    return decode_quota(name, "", labels, annotations, min, max, used);
  }
};
make_quota_t MakeQuota(std::string name) {
  return make_quota_t{std::move(name), {}, {}, {}, {}, {}};
}

const std::string kStrict{quota_names::annotation_max_strict_check_resource_keys};

struct item_case {
  std::string name;  // TestQuotaTopology_basicItemCheck sub-case
  quota_spec quota;
  std::string err;  // "" = admitted
  friend void PrintTo(const item_case& c, std::ostream* os) { *os << c.name; }
};

class QuotaTopologyBasicItemCheck : public ::testing::TestWithParam<item_case> {};

TEST_P(QuotaTopologyBasicItemCheck, Error) {
  auto c = GetParam();
  quota_topology qt;
  ASSERT_TRUE(qt.fill_quota_default_information(c.quota));
  auto r = quota_topology::validate_quota_self_item(c.quota);
  if (c.err.empty()) {
    EXPECT_TRUE(r) << c.name << ": " << r.error().describe();
  } else {
    ASSERT_FALSE(r) << c.name;
    EXPECT_EQ(r.error().message, c.err) << c.name;
    EXPECT_FALSE(r.error().where.empty());
  }
}

INSTANTIATE_TEST_SUITE_P(
    Golden, QuotaTopologyBasicItemCheck,
    ::testing::Values(
        item_case{"admit", MakeQuota("temp").Max(cpu_mem(120, 1048576)).Obj(), ""},
        item_case{"maxLessThanZero", MakeQuota("temp").Max(cpu_mem(-1, 1048576)).Obj(),
                  "temp quota.Spec.Max's value < 0, in dimensions :[cpu]"},
        item_case{"minLessThanZero",
                  MakeQuota("temp").Min(cpu_mem(-1, 1048576)).Max(cpu_mem(1, 1048576)).Obj(),
                  "temp quota.Spec.Min's value < 0, in dimensions :[cpu]"},
        item_case{
            "minDimensionLargerThanMax",
            MakeQuota("temp").Min(cpu_mem(1, 1048576)).Max(cpu_only(10)).Obj(),
            "resourceKey memory of quota temp is included in min, which is not included in max"},
        item_case{"minGreaterThanMax", MakeQuota("temp").Min(cpu_only(12)).Max(cpu_only(10)).Obj(),
                  "resourceKey cpu of quota temp min 12 > max 10"},
        item_case{
            "annotationSharedWeightLessThanZero",
            MakeQuota("temp").SharedWeight(cpu_mem(-1, 1048576)).Max(cpu_mem(0, 1048576)).Obj(),
            "temp quota.Annotation[quota.scheduling.koordinator.sh/shared-weight]'s value < 0, in "
            "dimension :[cpu]"},
        item_case{"annotationCheckMaxGreaterEqualUsed",
                  MakeQuota("temp")
                      .Annotation(kStrict, R"(["cpu","memory"])")
                      .Max(cpu_mem(0, 1048576))
                      .Used(cpu_mem(0, 10485760))
                      .Obj(),
                  "resourceKey memory of quota temp max 1048576 < used 10485760"},
        item_case{"annotationCheckIgnoreOtherResources",
                  MakeQuota("temp")
                      .Annotation(kStrict, R"(["cpu"])")
                      .Max(cpu_mem(0, 1048576))
                      .Used(cpu_mem(0, 10485760))
                      .Obj(),
                  ""},
        item_case{"annotationCheckIgnoreEmptyUsed",
                  MakeQuota("temp")
                      .Annotation(kStrict, R"(["cpu","memory"])")
                      .Max(cpu_mem(0, 1048576))
                      .Used(cpu_only(0))
                      .Obj(),
                  ""},
        item_case{"annotationCheckEmptyMax",
                  MakeQuota("temp")
                      .Annotation(kStrict, R"(["cpu","memory"])")
                      .Max(cpu_only(0))
                      .Used(cpu_mem(0, 10485760))
                      .Obj(),
                  "resourceKey memory of quota temp is included in used, which is not included in "
                  "max but should check max >= used"}),
    [](const auto& info) { return info.param.name; });

struct fill_step {
  quota_spec quota;
  std::string parent, shared_weight, tree_id;
};
struct fill_case {
  std::string name;  // TestQuotaTopology_fillQuotaDefaultInformation sub-case
  std::vector<fill_step> steps;
  friend void PrintTo(const fill_case& c, std::ostream* os) { *os << c.name; }
};

class QuotaTopologyFillQuotaDefaultInformation : public ::testing::TestWithParam<fill_case> {};

TEST_P(QuotaTopologyFillQuotaDefaultInformation, Labels) {
  auto c = GetParam();
  quota_topology qt;
  for (auto& s : c.steps) {
    ASSERT_TRUE(qt.fill_quota_default_information(s.quota)) << c.name;
    EXPECT_EQ(s.quota.labels[std::string(names::label_quota_parent)], s.parent) << c.name;
    EXPECT_EQ(s.quota.annotations[std::string(names::annotation_shared_weight)], s.shared_weight)
        << c.name;
    EXPECT_EQ(s.quota.labels[std::string(names::label_quota_tree_id)], s.tree_id) << c.name;
    EXPECT_EQ(s.quota.tree_id, s.tree_id) << c.name;
    qt.on_quota_add(s.quota);
  }
}

const std::string kSw120 = R"({"cpu":"120","memory":"1048576"})";
INSTANTIATE_TEST_SUITE_P(
    Golden, QuotaTopologyFillQuotaDefaultInformation,
    ::testing::Values(
        fill_case{"parentQuotaWithoutTreeID",
                  {{MakeQuota("temp2").Max(cpu_mem(120, 1048576)).Obj(), kRoot, kSw120, ""},
                   {MakeQuota("temp2-bu1").ParentName("temp2").Max(cpu_mem(120, 1048576)).Obj(),
                    "temp2", kSw120, ""}}},
        fill_case{"parentQuotaWithTreeID",
                  {{MakeQuota("temp2").Max(cpu_mem(120, 1048576)).TreeID("tree-1").Obj(), kRoot,
                    kSw120, "tree-1"},
                   {MakeQuota("temp2-bu1").ParentName("temp2").Max(cpu_mem(120, 1048576)).Obj(),
                    "temp2", kSw120, "tree-1"}}},
        fill_case{"sharedWeightKeysEqualMaxKeys",
                  {{MakeQuota("temp2")
                        .SharedWeight(cpu_mem(0, 0))
                        .Max(cpu_mem(120, 1048576))
                        .TreeID("tree-1")
                        .Obj(),
                    kRoot, R"({"cpu":"0","memory":"0"})", "tree-1"}}},
        fill_case{"sharedWeightKeysMoreThanMaxKeys",
                  {{MakeQuota("temp2")
                        .SharedWeight(cpu_mem(0, 0))
                        .Max(mem_only(1048576))
                        .TreeID("tree-1")
                        .Obj(),
                    kRoot, R"({"memory":"0"})", "tree-1"}}},
        fill_case{"sharedWeightKeysFewerThanMaxKeys",
                  {{MakeQuota("temp2")
                        .SharedWeight(cpu_only(0))
                        .Max(cpu_mem(120, 1048576))
                        .TreeID("tree-1")
                        .Obj(),
                    kRoot, R"({"cpu":"0","memory":"1048576"})", "tree-1"}}},
        fill_case{"sharedWeightKeysDifferFromMaxKeys",
                  {{MakeQuota("temp2")
                        .SharedWeight(cpu_only(0))
                        .Max(mem_only(1048576))
                        .TreeID("tree-1")
                        .Obj(),
                    kRoot, R"({"memory":"1048576"})", "tree-1"}}}),
    [](const auto& info) { return info.param.name; });

TEST(QuotaTopology, FillQuotaDefaultInformationUnknownParent) {
  quota_topology qt;
  auto q = MakeQuota("child").ParentName("missing").Max(cpu_only(1)).Obj();
  auto r = qt.fill_quota_default_information(q);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().message, "fill quota child failed, parent not exist");
  EXPECT_EQ(r.error().where, "metadata.labels[quota.scheduling.koordinator.sh/parent]");
}

struct key_case {
  std::string name;  // TestQuotaTopology_checkSubAndParentGroupMaxQuotaKeySame sub-case
  std::optional<quota_spec> parent, quota, sub;
  bool enable_update_resource_key;
  bool want_error;
  bool erase_sub = false;
  friend void PrintTo(const key_case& c, std::ostream* os) { *os << c.name; }
};

class QuotaTopologyCheckSubAndParentGroupMaxQuotaKeySame
    : public ::testing::TestWithParam<key_case> {};

TEST_P(QuotaTopologyCheckSubAndParentGroupMaxQuotaKeySame, Error) {
  const auto& c = GetParam();
  quota_topology qt;
  qt.set_features({c.enable_update_resource_key});
  for (const auto* q : {&c.parent, &c.quota, &c.sub}) {
    if (*q) qt.on_quota_add(**q);
  }
  if (c.erase_sub) qt.erase_quota_info(c.sub->name);
  auto r = qt.check_sub_and_parent_group_quota_key(*c.quota);
  EXPECT_EQ(!r, c.want_error) << c.name;
}

INSTANTIATE_TEST_SUITE_P(
    Golden, QuotaTopologyCheckSubAndParentGroupMaxQuotaKeySame,
    ::testing::Values(
        key_case{"noTree", std::nullopt,
                 MakeQuota("temp").Max(cpu_mem(120, 1048576)).IsParent(true).Obj(),
                 MakeQuota("temp-bu1")
                     .ParentName("temp")
                     .Max(cpu_mem(120, 1048576))
                     .IsParent(false)
                     .Obj(),
                 false, false},
        key_case{"parentIsRoot", std::nullopt,
                 MakeQuota("temp-bu1")
                     .ParentName(kRoot)
                     .Max(cpu_mem(120, 1048576))
                     .IsParent(false)
                     .Obj(),
                 std::nullopt, false, false},
        key_case{"childMaxDifferentButIncludedNoUpdate", std::nullopt,
                 MakeQuota("temp").Max(cpu_mem(10, 120)).IsParent(true).Obj(),
                 MakeQuota("temp-bu1").ParentName("temp").Max(cpu_only(120)).IsParent(false).Obj(),
                 false, true},
        key_case{"childMaxSameNoUpdate", std::nullopt,
                 MakeQuota("temp").Max(cpu_only(10)).IsParent(true).Obj(),
                 MakeQuota("temp-bu1").ParentName("temp").Max(cpu_only(120)).IsParent(false).Obj(),
                 false, false},
        key_case{"childMaxDifferentButIncludedUpdate", std::nullopt,
                 MakeQuota("temp").Max(cpu_mem(10, 120)).IsParent(true).Obj(),
                 MakeQuota("temp-bu1").ParentName("temp").Max(cpu_only(120)).IsParent(false).Obj(),
                 true, false},
        key_case{"childMaxNotIncludedUpdate", std::nullopt,
                 MakeQuota("temp").Max(mem_only(120)).IsParent(true).Obj(),
                 MakeQuota("temp-bu1").ParentName("temp").Max(cpu_only(120)).IsParent(false).Obj(),
                 true, true},
        key_case{"maxDifferentFromParentNoUpdate",
                 MakeQuota("temp").Max(cpu_mem(10, 120)).IsParent(true).Obj(),
                 MakeQuota("temp-bu1").ParentName("temp").Max(cpu_only(120)).IsParent(false).Obj(),
                 std::nullopt, false, true},
        key_case{"maxSameAsParentNoUpdate",
                 MakeQuota("temp").Max(cpu_only(10)).IsParent(true).Obj(),
                 MakeQuota("temp-bu1").ParentName("temp").Max(cpu_only(120)).IsParent(false).Obj(),
                 std::nullopt, false, false},
        key_case{"maxIncludedInParentUpdate",
                 MakeQuota("temp").Max(cpu_mem(10, 120)).IsParent(true).Obj(),
                 MakeQuota("temp-bu1").ParentName("temp").Max(cpu_only(120)).IsParent(false).Obj(),
                 std::nullopt, true, false},
        key_case{"maxNotIncludedInParentUpdate",
                 MakeQuota("temp").Max(mem_only(120)).IsParent(true).Obj(),
                 MakeQuota("temp-bu1").ParentName("temp").Max(cpu_only(120)).IsParent(false).Obj(),
                 std::nullopt, true, true},
        key_case{"minIncludedNoUpdate",
                 MakeQuota("temp").Min(cpu_mem(10, 120)).IsParent(true).Obj(),
                 MakeQuota("temp-bu1").ParentName("temp").Min(cpu_only(120)).IsParent(false).Obj(),
                 std::nullopt, false, false},
        key_case{
            "minNotIncludedNoUpdate", MakeQuota("temp").Min(cpu_only(10)).IsParent(true).Obj(),
            MakeQuota("temp-bu1").ParentName("temp").Min(cpu_mem(120, 120)).IsParent(false).Obj(),
            std::nullopt, false, true},
        key_case{"minIncludedUpdate", MakeQuota("temp").Min(cpu_mem(10, 120)).IsParent(true).Obj(),
                 MakeQuota("temp-bu1").ParentName("temp").Min(cpu_only(120)).IsParent(false).Obj(),
                 std::nullopt, true, false},
        key_case{
            "minNotIncludedUpdate", MakeQuota("temp").Min(cpu_only(10)).IsParent(true).Obj(),
            MakeQuota("temp-bu1").ParentName("temp").Min(cpu_mem(120, 120)).IsParent(false).Obj(),
            std::nullopt, true, true},
        key_case{"bug", std::nullopt,
                 MakeQuota("temp").Max(cpu_mem(120, 1048576)).IsParent(true).Obj(),
                 MakeQuota("temp-bu1")
                     .ParentName("temp")
                     .Max(cpu_mem(120, 1048576))
                     .IsParent(false)
                     .Obj(),
                 false, true, true}),
    [](const auto& info) { return info.param.name; });

struct tree_case {
  std::string name;  // TestQuotaTopology_checkTreeID sub-case
  std::string parent_tree, tree, child_tree;
  bool want_error;
  friend void PrintTo(const tree_case& c, std::ostream* os) { *os << c.name; }
};

class QuotaTopologyCheckTreeID : public ::testing::TestWithParam<tree_case> {};

TEST_P(QuotaTopologyCheckTreeID, Error) {
  const auto& c = GetParam();
  auto with_tree = [](make_quota_t q, const std::string& t) {
    return t.empty() ? q.Obj() : q.TreeID(t).Obj();
  };
  quota_topology qt;
  qt.on_quota_add(with_tree(
      MakeQuota("parent").Max(cpu_mem(10, 20)).Min(cpu_mem(10, 20)).IsParent(true), c.parent_tree));
  auto q = with_tree(MakeQuota("temp")
                         .ParentName("parent")
                         .Max(cpu_mem(10, 20))
                         .Min(cpu_mem(10, 20))
                         .IsParent(true),
                     c.tree);
  qt.on_quota_add(q);
  qt.on_quota_add(with_tree(MakeQuota("child")
                                .ParentName("temp")
                                .Max(cpu_mem(10, 20))
                                .Min(cpu_mem(10, 20))
                                .IsParent(false),
                            c.child_tree));
  EXPECT_EQ(!qt.check_tree_id(nullptr, q), c.want_error) << c.name;
}

INSTANTIATE_TEST_SUITE_P(
    Golden, QuotaTopologyCheckTreeID,
    ::testing::Values(tree_case{"satisfyNoTreeID", "", "", "", false},
                      tree_case{"satisfyWithTreeID", "tree-1", "tree-1", "tree-1", false},
                      tree_case{"parentNoTreeID", "", "tree-1", "tree-1", true},
                      tree_case{"selfNoTreeID", "tree-1", "", "tree-1", true},
                      tree_case{"childNoTreeID", "tree-1", "tree-1", "", true}),
    [](const auto& info) { return info.param.name; });

struct min_case {
  std::string name;  // TestQuotaTopology_checkMinQuotaSum sub-case
  std::optional<quota_spec> parent;
  quota_spec quota;
  std::optional<quota_spec> sub;
  bool want_error;
  bool erase_sub = false;
  friend void PrintTo(const min_case& c, std::ostream* os) { *os << c.name; }
};

class QuotaTopologyCheckMinQuotaSum : public ::testing::TestWithParam<min_case> {};

TEST_P(QuotaTopologyCheckMinQuotaSum, Error) {
  const auto& c = GetParam();
  quota_topology qt;
  if (c.parent) qt.on_quota_add(*c.parent);
  qt.on_quota_add(c.quota);
  if (c.sub) qt.on_quota_add(*c.sub);
  if (c.erase_sub) qt.erase_quota_info(c.sub->name);
  EXPECT_EQ(!qt.check_min_quota_validate(c.quota), c.want_error) << c.name;
}

INSTANTIATE_TEST_SUITE_P(Golden, QuotaTopologyCheckMinQuotaSum,
                         ::testing::Values(min_case{"quotaInfoNotSatisfy", std::nullopt,
                                                    MakeQuota("temp")
                                                        .Max(cpu_mem(120, 1048576))
                                                        .Min(cpu_mem(10, 51200))
                                                        .IsParent(true)
                                                        .Obj(),
                                                    MakeQuota("sub-1")
                                                        .ParentName("temp")
                                                        .Max(cpu_mem(120, 1048576))
                                                        .Min(cpu_mem(16, 12800))
                                                        .IsParent(false)
                                                        .Obj(),
                                                    true},
                                           min_case{"parentQuotaInfoNotSatisfy",
                                                    MakeQuota("temp")
                                                        .Max(cpu_mem(120, 1048576))
                                                        .Min(cpu_mem(10, 51200))
                                                        .IsParent(true)
                                                        .Obj(),
                                                    MakeQuota("sub-1")
                                                        .ParentName("temp")
                                                        .Max(cpu_mem(120, 1048576))
                                                        .Min(cpu_mem(16, 12800))
                                                        .IsParent(false)
                                                        .Obj(),
                                                    std::nullopt, true},
                                           min_case{"childQuotaInfoNotSatisfy", std::nullopt,
                                                    MakeQuota("temp")
                                                        .Max(cpu_mem(120, 1048576))
                                                        .Min(cpu_mem(16, 12800))
                                                        .IsParent(false)
                                                        .Obj(),
                                                    MakeQuota("sub-1")
                                                        .ParentName("temp")
                                                        .Max(cpu_mem(120, 12800))
                                                        .Min(cpu_mem(16, 12801))
                                                        .IsParent(false)
                                                        .Obj(),
                                                    true},
                                           min_case{"satisfy", std::nullopt,
                                                    MakeQuota("temp")
                                                        .Max(cpu_mem(120, 1048576))
                                                        .Min(cpu_mem(19, 51200))
                                                        .IsParent(true)
                                                        .Obj(),
                                                    MakeQuota("sub-1")
                                                        .ParentName("temp")
                                                        .Max(cpu_mem(120, 1048576))
                                                        .Min(cpu_mem(16, 12800))
                                                        .IsParent(false)
                                                        .Obj(),
                                                    false},
                                           min_case{"bug", std::nullopt,
                                                    MakeQuota("temp")
                                                        .Max(cpu_mem(120, 1048576))
                                                        .Min(cpu_mem(19, 51200))
                                                        .IsParent(true)
                                                        .Obj(),
                                                    MakeQuota("sub-1")
                                                        .ParentName("temp")
                                                        .Max(cpu_mem(120, 1048576))
                                                        .Min(cpu_mem(16, 12800))
                                                        .IsParent(false)
                                                        .Obj(),
                                                    true, true},
                                           min_case{"parentNoResource",
                                                    MakeQuota("temp-no-min").IsParent(true).Obj(),
                                                    MakeQuota("sub-1")
                                                        .ParentName("temp-no-min")
                                                        .Max(cpu_mem(120, 1048576))
                                                        .Min(cpu_mem(19, 51200))
                                                        .IsParent(false)
                                                        .Obj(),
                                                    std::nullopt, true}),
                         [](const auto& info) { return info.param.name; });

// TestQuotaTopology_checkParentQuotaInfoExist.
TEST(QuotaTopology, CheckParentQuotaInfoExist) {
  quota_topology qt;
  qt.on_quota_add(
      MakeQuota("temp").Max(cpu_mem(120, 1048576)).Min(cpu_mem(64, 51200)).IsParent(false).Obj());
  EXPECT_EQ(qt.check_parent_quota_info("", "temp").error().message,
            " has parentName temp but the parentQuotaInfo's IsParent is false");
  qt.erase_hierarchy_info("temp");
  EXPECT_EQ(qt.check_parent_quota_info("", "temp").error().message,
            " has parentName temp but not find parentInfo in quotaHierarchyInfo");
  qt.erase_quota_info("temp");
  EXPECT_EQ(qt.check_parent_quota_info("", "temp").error().message,
            " has parentName temp but not find parentInfo in quotaInfoMap");
}

quota_spec filled(const quota_topology& qt, quota_spec q) {
  EXPECT_TRUE(qt.fill_quota_default_information(q));
  return q;
}

// TestQuotaTopology_ValidAddQuota.
TEST(QuotaTopology, ValidAddQuota) {
  quota_topology qt;
  auto quota = filled(
      qt,
      MakeQuota("temp").Max(cpu_mem(120, 1048576)).Min(cpu_mem(64, 51200)).IsParent(true).Obj());
  ASSERT_TRUE(qt.valid_add_quota(quota));
  EXPECT_EQ(quota.labels[std::string(names::label_quota_parent)], kRoot);
  EXPECT_EQ(quota.annotations[std::string(names::annotation_shared_weight)], kSw120);
  EXPECT_EQ(qt.valid_add_quota(quota).error().code, errc::already_exists);
  auto sub1 = filled(qt, MakeQuota("sub-1")
                             .ParentName("temp")
                             .Max(cpu_mem(120, 1048576))
                             .Min(cpu_mem(16, 12800))
                             .IsParent(false)
                             .Obj());
  EXPECT_TRUE(qt.valid_add_quota(sub1));
  auto sub2 = filled(qt, MakeQuota("sub-2")
                             .ParentName("temp")
                             .Max(cpu_mem(120, 1048576))
                             .Min(cpu_mem(16, 12800))
                             .IsParent(false)
                             .Obj());
  EXPECT_TRUE(qt.valid_add_quota(sub2));
  auto quota2 = filled(qt, MakeQuota("temp2")
                               .Max(cpu_mem(120, 1048576))
                               .Min(cpu_mem(64, 51200))
                               .IsParent(true)
                               .TreeID("tree-1")
                               .Obj());
  EXPECT_TRUE(qt.valid_add_quota(quota2));
  // Child without the parent's tree id (not filled): refused.
  auto sub3 = MakeQuota("sub-3")
                  .ParentName("temp2")
                  .Max(cpu_mem(120, 1048576))
                  .Min(cpu_mem(64, 51200))
                  .IsParent(true)
                  .Obj();
  EXPECT_FALSE(qt.valid_add_quota(sub3));
  // A third child whose min overflows the parent's.
  auto sub4 = filled(qt, MakeQuota("sub-4")
                             .ParentName("temp")
                             .Max(cpu_mem(120, 1048576))
                             .Min(cpu_mem(40, 12800))
                             .Obj());
  auto r = qt.valid_add_quota(sub4);
  ASSERT_FALSE(r);
  // Koordinator's text, then what exceeds where.
  EXPECT_EQ(r.error().message,
            "checkMinQuotaSum all brothers' MinQuota > parent MinQuota, parent: temp; cpu: "
            "children's min 72 (sub-1 16, sub-2 16, sub-4 40) > temp's min 64");
  EXPECT_EQ(r.error().where, "spec.min[cpu]");
  // allow-force-update skips the min-sum check.
  auto forced = sub4;
  forced.allow_force_update = true;
  EXPECT_TRUE(qt.valid_add_quota(forced));
}

// TestQuotaTopology_ValidUpdateQuota (the parts that need no pod lister: bound pods are an
// argument).
TEST(QuotaTopology, ValidUpdateQuota) {
  quota_topology qt;
  auto quota = filled(
      qt,
      MakeQuota("temp").Max(cpu_mem(120, 1048576)).Min(cpu_mem(64, 51200)).IsParent(true).Obj());
  ASSERT_TRUE(qt.valid_add_quota(quota));
  EXPECT_TRUE(qt.valid_update_quota(quota, quota, false));
  auto quota1 = filled(
      qt,
      MakeQuota("temp2").Max(cpu_mem(120, 1048576)).Min(cpu_mem(64, 51200)).IsParent(true).Obj());
  ASSERT_TRUE(qt.valid_add_quota(quota1));
  auto sub1 = filled(qt, MakeQuota("sub-1")
                             .ParentName("temp")
                             .Max(cpu_mem(120, 1048576))
                             .Min(cpu_mem(60, 12800))
                             .IsParent(false)
                             .Obj());
  ASSERT_TRUE(qt.valid_add_quota(sub1));

  auto moved = sub1;
  moved.parent = "temp2";
  moved.labels[std::string(names::label_quota_parent)] = "temp2";
  EXPECT_TRUE(qt.valid_update_quota(sub1, moved, false));

  auto too_big = moved;
  too_big.parent = "temp";
  too_big.min = res(121, 1048576);
  EXPECT_FALSE(qt.valid_update_quota(moved, too_big, false));

  auto unknown = too_big;
  unknown.name = "tmp";
  EXPECT_EQ(qt.valid_update_quota(moved, unknown, false).error().message,
            "UpdateQuota quota not exist in quotaInfoMap:tmp");
  auto root = too_big;
  root.name = kRoot;
  EXPECT_EQ(qt.valid_update_quota(quota, root, false).error().message,
            "invalid quota koordinator-root-quota");

  auto no_parent1 = quota1;
  no_parent1.is_parent = false;
  EXPECT_EQ(qt.valid_update_quota(quota1, no_parent1, false).error().message,
            "quota has children, isParent is forbidden to modify as false, quotaName:temp2");

  auto sub_parent = moved;
  sub_parent.is_parent = true;
  EXPECT_EQ(qt.valid_update_quota(moved, sub_parent, true).error().message,
            "quota has bound pods, isParent is forbidden to modify as true, quotaName: sub-1");

  auto with_tree = moved;
  with_tree.tree_id = "tree-1";
  EXPECT_EQ(qt.valid_update_quota(moved, with_tree, false).error().message,
            "sub-1 tree id changed [] vs [tree-1]");
}

// TestQuotaTopology_AnnotationNamespaces.
TEST(QuotaTopology, AnnotationNamespaces) {
  const std::string ns_key{quota_names::annotation_quota_namespaces};
  quota_topology qt;
  auto quota = MakeQuota("temp").Annotation(ns_key, R"(["test1","test2"])").Obj();
  ASSERT_TRUE(qt.valid_add_quota(quota));
  auto q2 = quota;
  q2.name = "temp2";
  EXPECT_EQ(qt.valid_add_quota(q2).error().message,
            "AddQuota quota temp2's annotation namespace test1 is already bound to quota temp");
  auto updated = MakeQuota("temp").Annotation(ns_key, R"(["test2","test3"])").Obj();
  EXPECT_TRUE(qt.valid_update_quota(quota, updated, false));
  auto temp5 = MakeQuota("temp5").Obj();
  ASSERT_TRUE(qt.valid_add_quota(temp5));
  auto temp5b = MakeQuota("temp5").Annotation(ns_key, R"(["test2"])").Obj();
  EXPECT_EQ(qt.valid_update_quota(temp5, temp5b, false).error().message,
            "UpdadteQuota, quota temp5 update namespaces, but namespace test2 is already bound to "
            "quota temp");
  EXPECT_TRUE(qt.valid_delete_quota(updated, 0));
  EXPECT_TRUE(qt.valid_add_quota(MakeQuota("temp6").Annotation(ns_key, R"(["test2"])").Obj()));
}

// TestQuotaTopology_ValidDeleteQuota.
TEST(QuotaTopology, ValidDeleteQuota) {
  quota_topology qt;
  auto quota = filled(
      qt,
      MakeQuota("temp").Max(cpu_mem(120, 1048576)).Min(cpu_mem(64, 51200)).IsParent(true).Obj());
  ASSERT_TRUE(qt.valid_add_quota(quota));
  auto quota1 = filled(
      qt,
      MakeQuota("temp2").Max(cpu_mem(120, 1048576)).Min(cpu_mem(64, 51200)).IsParent(true).Obj());
  ASSERT_TRUE(qt.valid_add_quota(quota1));
  auto sub1 = filled(qt, MakeQuota("sub-1")
                             .ParentName("temp")
                             .Max(cpu_mem(120, 1048576))
                             .Min(cpu_mem(60, 12800))
                             .IsParent(false)
                             .Obj());
  ASSERT_TRUE(qt.valid_add_quota(sub1));
  EXPECT_EQ(qt.valid_delete_quota(quota, 0).error().message,
            "delete quota failed, quota temp has 1 child quotas");
  EXPECT_TRUE(qt.valid_delete_quota(quota1, 0));
  EXPECT_EQ(qt.valid_delete_quota(sub1, 1).error().message,
            "delete quota failed, quota sub-1 has 1 child pods");
  EXPECT_TRUE(qt.valid_delete_quota(sub1, 0));
  EXPECT_TRUE(qt.valid_delete_quota(quota, 0));
  EXPECT_EQ(qt.find("temp"), nullptr);
  for (auto name :
       {quota_names::system_quota, quota_names::root_quota, quota_names::default_quota}) {
    EXPECT_FALSE(qt.valid_delete_quota(MakeQuota(std::string(name)).Obj(), 0)) << name;
  }
  EXPECT_EQ(qt.valid_delete_quota(MakeQuota("notFound").Max(cpu_only(1)).Obj(), 0).error().code,
            errc::not_found);
}

TEST(QuotaTopology, ValidatePod) {
  quota_topology qt;
  qt.on_quota_add(MakeQuota("parent").IsParent(true).Obj());
  qt.on_quota_add(MakeQuota("leaf").ParentName("parent").Obj());
  EXPECT_FALSE(qt.validate_pod("parent", nullptr, nullptr));
  EXPECT_TRUE(qt.validate_pod("leaf", nullptr, nullptr));
  const std::string f = "false", t = "true";
  EXPECT_TRUE(qt.validate_pod("leaf", &f, &f));
  EXPECT_FALSE(qt.validate_pod("leaf", &f, &t));
  EXPECT_FALSE(qt.validate_pod("leaf", nullptr, &f));
}

// ---- ElasticQuotaProfile (profile_controller.go)
// ---------------------------------------------------

TEST(QuotaProfileReconciler, RootQuotaFromProfile) {
  elastic_quota_profile p;
  p.name = "gpu-pool";
  p.namespace_name = "default";
  p.quota_name = "gpu-root";
  p.quota_labels = {{"team", "ml"}};
  p.resource_ratio = "0.5";
  p.match_labels = {{"pool", "gpu"}};
  p.match_expressions = {{"zone", "In", {"a", "b"}}};
  std::vector<profile_node> nodes{
      {"n1", {{"pool", "gpu"}, {"zone", "a"}}, res(10, 100), false, true},
      {"n2", {{"pool", "gpu"}, {"zone", "b"}}, res(20, 200), true, true},   // unschedulable
      {"n3", {{"pool", "gpu"}, {"zone", "c"}}, res(40, 400), false, true},  // zone not selected
      {"n4", {{"pool", "cpu"}, {"zone", "a"}}, res(80, 800), false, true},  // pool not selected
      {"n5", {{"pool", "gpu"}, {"zone", "a"}}, res(2, 20), false, false},   // NotReady
  };
  auto q = reconcile_quota_profile(p, nodes);
  ASSERT_TRUE(q) << q.error().describe();
  EXPECT_EQ(q->name, "gpu-root");
  EXPECT_EQ(q->namespace_name, "default");
  EXPECT_EQ(q->tree_id, "6286266270934497240");  // FNV-64a("default/gpu-pool")
  EXPECT_EQ(q->tree_id, profile_tree_id("default", "gpu-pool"));
  EXPECT_TRUE(q->is_tree_root);
  EXPECT_EQ(q->labels.at(std::string(quota_names::label_quota_profile)), "gpu-pool");
  EXPECT_EQ(q->labels.at("team"), "ml");
  EXPECT_EQ(q->min, res(16, 160));  // (10+20+2) * 0.5
  EXPECT_EQ(q->min_keys, key::cpu | key::memory);
  EXPECT_EQ(q->max.cpu_milli, std::numeric_limits<std::int64_t>::max() / 2000 * 1000);
  EXPECT_EQ(q->max.memory_bytes, std::numeric_limits<std::int64_t>::max() / 2000);
  EXPECT_EQ(q->total_resource, res(16, 160));
  EXPECT_EQ(q->annotations.at(std::string(quota_names::annotation_unschedulable_resource)),
            R"({"cpu":"11","memory":"110"})");

  // An explicit tree id wins; a ratio outside (0,1] counts as 1; resource-keys picks the keys.
  p.labels[std::string(names::label_quota_tree_id)] = "tree-x";
  p.resource_ratio = "1.5";
  p.annotations[std::string(quota_names::annotation_resource_keys)] = R"(["cpu"])";
  q = reconcile_quota_profile(p, nodes);
  ASSERT_TRUE(q);
  EXPECT_EQ(q->tree_id, "tree-x");
  EXPECT_EQ(q->min, res(32, 0));
  EXPECT_EQ(q->min_keys, key::cpu);

  p.match_expressions = {{"zone", "Near", {"a"}}};
  EXPECT_FALSE(reconcile_quota_profile(p, nodes));
}

// ---- YAML
// ------------------------------------------------------------------------------------------

TEST(ElasticQuotaYaml, LoadsCrdShape) {
  const std::string text = R"(apiVersion: scheduling.sigs.k8s.io/v1alpha1
kind: ElasticQuota
metadata:
  name: team-a
  namespace: team-a
  labels:
    quota.scheduling.koordinator.sh/parent: org
    quota.scheduling.koordinator.sh/allow-lent-resource: "false"
  annotations:
    quota.scheduling.koordinator.sh/shared-weight: '{"cpu":"2","memory":"4Gi"}'
    quota.scheduling.koordinator.sh/namespaces: '["ns-1","ns-2"]'
spec:
  min:
    cpu: 500m
    memory: 1Gi
  max:
    cpu: 4
    memory: 8Gi
    nvidia.com/gpu: 2
    ephemeral-storage: 10Gi
---
apiVersion: scheduling.sigs.k8s.io/v1alpha1
kind: ElasticQuotaList
items:
- apiVersion: scheduling.sigs.k8s.io/v1alpha1
  kind: ElasticQuota
  metadata:
    name: org
    labels:
      quota.scheduling.koordinator.sh/is-parent: "true"
  spec:
    max: {cpu: "10", memory: 16Gi}
)";
  auto r = load_elastic_quotas_yaml(text, "quotas.yaml");
  ASSERT_TRUE(r) << r.error().describe();
  ASSERT_EQ(r->quotas.size(), 2u);
  const auto& a = r->quotas[0];
  EXPECT_EQ(a.name, "team-a");
  EXPECT_EQ(a.parent, "org");
  EXPECT_FALSE(a.allow_lent_resource);
  EXPECT_EQ(a.min.cpu_milli, 500);
  EXPECT_EQ(a.min.memory_bytes, GigaByte);
  EXPECT_EQ(a.max.cpu_milli, 4000);
  EXPECT_EQ(a.max.gpu, 200);
  EXPECT_EQ(a.max_keys, key::cpu | key::memory | key::gpu);
  EXPECT_EQ(a.shared_weight, res(2, 4 * GigaByte));
  EXPECT_EQ(a.namespaces, (std::vector<std::string>{"ns-1", "ns-2"}));
  ASSERT_EQ(r->ignored.size(), 1u);
  EXPECT_EQ(r->ignored[0], "quotas.yaml:20 spec.max[ephemeral-storage] ignored (no Colony field)");
  EXPECT_TRUE(r->quotas[1].is_parent);
  EXPECT_EQ(r->quotas[1].max, res(10, 16 * GigaByte));
  EXPECT_EQ(r->quotas[1].shared_weight, res(10, 16 * GigaByte));  // absent → max
}

struct yaml_error_case {
  std::string name;
  std::string text;
  std::string where;
  friend void PrintTo(const yaml_error_case& c, std::ostream* os) { *os << c.name; }
};

class ElasticQuotaYamlErrors : public ::testing::TestWithParam<yaml_error_case> {};

TEST_P(ElasticQuotaYamlErrors, NameFileLineAndField) {
  const auto& c = GetParam();
  auto r = load_elastic_quotas_yaml(c.text, "q.yaml");
  ASSERT_FALSE(r) << c.name;
  EXPECT_EQ(r.error().where, c.where) << c.name << ": " << r.error().describe();
}

INSTANTIATE_TEST_SUITE_P(
    Errors, ElasticQuotaYamlErrors,
    ::testing::Values(
        yaml_error_case{"badQuantity",
                        "kind: ElasticQuota\nmetadata:\n  name: a\nspec:\n  max:\n    cpu: 4x\n",
                        "q.yaml:6 spec.max[cpu]"},
        yaml_error_case{"missingName", "kind: ElasticQuota\nmetadata:\n  namespace: a\n",
                        "q.yaml:3 metadata.name"},
        yaml_error_case{"wrongKind", "kind: Pod\nmetadata:\n  name: a\n", "q.yaml:1 kind"},
        yaml_error_case{
            "badSharedWeight",
            "kind: ElasticQuota\nmetadata:\n  name: a\n  annotations:\n    "
            "quota.scheduling.koordinator.sh/shared-weight: '{bad'\n",
            "q.yaml:3 metadata.annotations[quota.scheduling.koordinator.sh/shared-weight]"},
        yaml_error_case{"syntax", "kind: ElasticQuota\nmetadata: [\n", "q.yaml:3"}),
    [](const auto& info) { return info.param.name; });

TEST(ElasticQuotaProfileYaml, Loads) {
  const std::string text = R"(apiVersion: quota.koordinator.sh/v1alpha1
kind: ElasticQuotaProfile
metadata:
  name: gpu-pool
  namespace: default
spec:
  quotaName: gpu-root
  resourceRatio: "0.9"
  quotaLabels:
    team: ml
  nodeSelector:
    matchLabels:
      pool: gpu
    matchExpressions:
    - key: zone
      operator: In
      values: [a, b]
)";
  auto r = load_elastic_quota_profiles_yaml(text, "p.yaml");
  ASSERT_TRUE(r) << r.error().describe();
  ASSERT_EQ(r->size(), 1u);
  const auto& p = (*r)[0];
  EXPECT_EQ(p.quota_name, "gpu-root");
  EXPECT_EQ(p.resource_ratio, std::optional<std::string>("0.9"));
  EXPECT_EQ(p.match_labels.at("pool"), "gpu");
  ASSERT_EQ(p.match_expressions.size(), 1u);
  EXPECT_EQ(p.match_expressions[0].values, (std::vector<std::string>{"a", "b"}));
  auto bad = load_elastic_quota_profiles_yaml(
      "kind: ElasticQuotaProfile\nmetadata:\n  name: x\nspec:\n  quotaName: q\n", "p.yaml");
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().where, "p.yaml:5 spec.nodeSelector");
}

TEST(Quantity, ParsesKubernetesForms) {
  EXPECT_EQ(*parse_quantity("500m", true), 500);
  EXPECT_EQ(*parse_quantity("1.5", true), 1500);
  EXPECT_EQ(*parse_quantity("2", true), 2000);
  EXPECT_EQ(*parse_quantity("1Gi", false), GigaByte);
  EXPECT_EQ(*parse_quantity("1.5Gi", false), GigaByte * 3 / 2);
  EXPECT_EQ(*parse_quantity("1e3", false), 1000);
  EXPECT_EQ(*parse_quantity("1k", false), 1000);
  EXPECT_EQ(*parse_quantity("100m", false), 1);  // Value() rounds up
  EXPECT_EQ(*parse_quantity("-1", true), -1000);
  EXPECT_FALSE(parse_quantity("abc", false));
  EXPECT_FALSE(parse_quantity("1Zi", false));
  EXPECT_EQ(parse_quantity("100E", false).error().code, errc::out_of_range);
}

// ---- ElasticQuotaGuaranteeUsage
// ------------------------------------------------------------------

struct guarantee_case {
  std::string name;  // TestQuotaTopology_checkGuaranteeForMin sub-case
  std::int64_t quota_min_cpu;
  std::int64_t sibling_guaranteed_cpu;
  bool want_error;
  friend void PrintTo(const guarantee_case& c, std::ostream* os) { *os << c.name; }
};

class QuotaTopologyCheckGuaranteeForMin : public ::testing::TestWithParam<guarantee_case> {
 protected:
  // The Go case's three quotas: tree root "temp" (min = guaranteed = 10 cores), test1
  // (guaranteed 6 cores, 35600 bytes) and its sibling test2 (min 2 cores).
  static quota_topology topology(const guarantee_case& c, quota_spec& quota) {
    quota_topology qt;
    qt.on_quota_add(MakeQuota("temp")
                        .Max(cpu_mem(120, 1048576))
                        .Min(cpu_mem(10, 51200))
                        .IsParent(true)
                        .TreeID("tree1")
                        .IsRoot(true)
                        .Guaranteed(cpu_mem(10, 51200))
                        .Obj());
    quota = MakeQuota("test1")
                .ParentName("temp")
                .Max(cpu_mem(120, 1048576))
                .Min(cpu_mem(c.quota_min_cpu, 25600))
                .TreeID("tree1")
                .Guaranteed(cpu_mem(6, 35600))
                .Obj();
    qt.on_quota_add(quota);
    qt.on_quota_add(MakeQuota("test2")
                        .ParentName("temp")
                        .Max(cpu_mem(120, 1048576))
                        .Min(cpu_mem(2, 10000))
                        .TreeID("tree1")
                        .Guaranteed(cpu_mem(c.sibling_guaranteed_cpu, 10000))
                        .Obj());
    return qt;
  }
};

TEST_P(QuotaTopologyCheckGuaranteeForMin, Error) {
  const auto& c = GetParam();
  quota_spec quota;
  const quota_topology qt = topology(c, quota);
  auto r = qt.check_guaranteed_for_min(quota);
  EXPECT_EQ(!r, c.want_error) << c.name;
  if (!r) {
    EXPECT_EQ(r.error().message, "tree root quota temp can't guarantee for min");
    EXPECT_EQ(r.error().where, "spec.min");
  }
}

// The gate decides whether validation runs the check (validateQuotaTopology); the min sums pass
// in every case, so only the guarantee can refuse.
TEST_P(QuotaTopologyCheckGuaranteeForMin, OnlyWithTheGate) {
  const auto& c = GetParam();
  quota_spec quota;
  quota_topology qt = topology(c, quota);
  EXPECT_TRUE(qt.validate_quota_topology(nullptr, quota, false)) << c.name;
  qt.set_features(webhook_features{.elastic_quota_guarantee_usage = true});
  auto r = qt.validate_quota_topology(nullptr, quota, false);
  EXPECT_EQ(!r, c.want_error) << c.name;
  if (!r) {
    EXPECT_EQ(r.error().message, "tree root quota temp can't guarantee for min test1");
  }
}

INSTANTIATE_TEST_SUITE_P(Golden, QuotaTopologyCheckGuaranteeForMin,
                         ::testing::Values(guarantee_case{"normal", 5, 2, false},
                                           guarantee_case{"not_exceed_guarantee", 7, 3, false},
                                           guarantee_case{"exceed_guarantee", 8, 3, true}),
                         [](const auto& info) { return info.param.name; });

// A guarantee the parent cannot cover climbs to the grandparent, adding the parent's siblings'
// guarantees on the way (checkParentGuaranteed's recursion): covered there, it is admitted.
TEST(QuotaTopologyGuaranteedForMin, ClimbsToTheAncestorThatCovers) {
  quota_topology qt;
  qt.on_quota_add(MakeQuota("root")
                      .Max(cpu_mem(120, 1048576))
                      .Min(cpu_mem(20, 51200))
                      .IsParent(true)
                      .TreeID("t")
                      .IsRoot(true)
                      .Guaranteed(cpu_mem(20, 51200))
                      .Obj());
  qt.on_quota_add(MakeQuota("mid")
                      .ParentName("root")
                      .Max(cpu_mem(120, 1048576))
                      .Min(cpu_mem(10, 25600))
                      .IsParent(true)
                      .TreeID("t")
                      .Guaranteed(cpu_mem(10, 25600))
                      .Obj());
  qt.on_quota_add(MakeQuota("other")
                      .ParentName("root")
                      .Max(cpu_mem(120, 1048576))
                      .Min(cpu_mem(4, 1000))
                      .TreeID("t")
                      .Guaranteed(cpu_mem(4, 1000))
                      .Obj());
  auto leaf = [&](std::int64_t min_cpu) {
    return MakeQuota("leaf")
        .ParentName("mid")
        .Max(cpu_mem(120, 1048576))
        .Min(cpu_mem(min_cpu, 1000))
        .TreeID("t")
        .Obj();
  };
  qt.on_quota_add(leaf(1));
  // mid needs 12 > its guarantee 10; root then needs max(20, 12 + 4) = 20 <= 20.
  EXPECT_TRUE(qt.check_guaranteed_for_min(leaf(12)));
  // 17 + 4 = 21 > 20: root has no parent to ask.
  auto r = qt.check_guaranteed_for_min(leaf(17));
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().message, "tree root quota root can't guarantee for min");
}

// ---- a whole tree at once (bad input) ----------------------------------------------------------

// A tree whose children's min exceeds the parent's min is refused with the parent, the resource,
// the sum, each child's share and the parent's min; the webhook's update of a parent below its
// children's sum says the same after Koordinator's text.
TEST(ValidateQuotaTree, ChildrenMinOverParentNamesWhatAndWhere) {
  std::vector<quota_spec> tree{
      MakeQuota("tenants").Max(cpu_mem(400, 4096)).Min(cpu_mem(400, 4096)).IsParent(true).Obj(),
      MakeQuota("online")
          .ParentName("tenants")
          .Max(cpu_mem(400, 4096))
          .Min(cpu_mem(300, 1024))
          .Obj(),
      MakeQuota("batch")
          .ParentName("tenants")
          .Max(cpu_mem(400, 4096))
          .Min(cpu_mem(100, 1024))
          .Obj()};
  EXPECT_TRUE(validate_quota_tree(tree));
  tree[2] = MakeQuota("batch")
                .ParentName("tenants")
                .Max(cpu_mem(400, 4096))
                .Min(cpu_mem(150, 1024))
                .Obj();
  auto r = validate_quota_tree(tree);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, errc::invalid_input);
  EXPECT_EQ(r.error().message,
            "ElasticQuota tenants: its children's min exceeds its own min; cpu: children's min "
            "450 (batch 150, online 300) > tenants's min 400");
  EXPECT_EQ(r.error().where, "tenants.spec.min[cpu]");
  // allow-force-update on a child: Koordinator admits it whatever the sum.
  tree[2].allow_force_update = true;
  EXPECT_TRUE(validate_quota_tree(tree));
  tree[2].allow_force_update = false;
  // A quota's own bad item comes first, named by the quota.
  tree[1] = MakeQuota("online")
                .ParentName("tenants")
                .Max(cpu_mem(10, 4096))
                .Min(cpu_mem(300, 1024))
                .Obj();
  auto self = validate_quota_tree(tree);
  ASSERT_FALSE(self);
  EXPECT_TRUE(self.error().where.starts_with("online.")) << self.error().where;

  // The webhook, updating the parent's min below its children's sum (memory this time).
  quota_topology qt;
  tree[1] = MakeQuota("online")
                .ParentName("tenants")
                .Max(cpu_mem(400, 4096))
                .Min(cpu_mem(300, 1024))
                .Obj();
  tree[2] = MakeQuota("batch")
                .ParentName("tenants")
                .Max(cpu_mem(400, 4096))
                .Min(cpu_mem(100, 1024))
                .Obj();
  for (const auto& q : tree) qt.on_quota_add(q);
  auto lowered =
      MakeQuota("tenants").Max(cpu_mem(400, 4096)).Min(cpu_mem(400, 1536)).IsParent(true).Obj();
  auto u = qt.check_min_quota_validate(lowered);
  ASSERT_FALSE(u);
  EXPECT_EQ(u.error().message,
            "checkMinQuotaSum all children's MinQuota > current MinQuota, current: tenants; "
            "memory: children's min 2048 (batch 1024, online 1024) > tenants's min 1536");
  EXPECT_EQ(u.error().where, "spec.min[memory]");
}

}  // namespace
}  // namespace colony::quota
