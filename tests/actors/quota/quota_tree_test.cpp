// Golden cases of the runtime computation: Koordinator's
// pkg/scheduler/plugins/elasticquota/core/runtime_quota_calculator_test.go and
// group_quota_manager_test.go, replayed on colony::quota.
#include <algorithm>
#include <ostream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "actors/quota/quota_tree.hpp"
#include "tests/actors/quota/test_helpers.hpp"

namespace colony::quota {
namespace {

using namespace colony::quota::testing;
const std::string kRoot{quota_names::root_quota};

// ---- runtime_quota_calculator_test.go ------------------------------------------------

struct calculator_case {
  std::string name;  // Koordinator sub-case
  std::int64_t total;
  std::vector<runtime_node> nodes;
  std::vector<std::int64_t> expected;
  friend void PrintTo(const calculator_case& c, std::ostream* os) { *os << c.name; }
};

class RuntimeQuotaCalculatorIterationAdjustQuota
    : public ::testing::TestWithParam<calculator_case> {};

// TestRuntimeQuotaCalculator_IterationAdjustQuota (case1-no-guarantee, case2-node4.sharedWeight=0,
// case3-node4.guarantee>min) and
// TestRuntimeQuotaCalculator_IterationAdjustQuota_IntegerDistribution.
TEST_P(RuntimeQuotaCalculatorIterationAdjustQuota, Runtime) {
  auto c = GetParam();
  redistribution(c.total, c.nodes);
  ASSERT_EQ(c.nodes.size(), c.expected.size());
  for (std::size_t i = 0; i < c.nodes.size(); ++i) {
    EXPECT_EQ(c.nodes[i].runtime, c.expected[i]) << c.name << " node " << c.nodes[i].name;
  }
}

std::vector<calculator_case> calculator_cases() {
  auto node = [](std::string_view n, std::int64_t w, std::int64_t r, std::int64_t m,
                 std::int64_t g = 0) { return runtime_node{n, w, r, m, g, true, 0}; };
  std::vector<calculator_case> out;
  out.push_back({"case1-no-guarantee",
                 100,
                 {node("node1", 40, 5, 10), node("node2", 60, 20, 15), node("node3", 50, 40, 20),
                  node("node4", 80, 70, 15)},
                 {5, 20, 35, 40}});
  out.push_back({"case2-node4.sharedWeight=0",
                 100,
                 {node("node1", 40, 5, 10), node("node2", 60, 20, 15), node("node3", 50, 40, 20),
                  node("node4", 0, 70, 15)},
                 {5, 20, 40, 15}});
  out.push_back({"case3-node4.guarantee>min",
                 100,
                 {node("node1", 40, 5, 10), node("node2", 60, 20, 15), node("node3", 50, 40, 20),
                  node("node4", 0, 70, 15, 45)},
                 {5, 20, 30, 45}});
  // IntegerDistribution: donor w1 r0 m3; ten borrowers w1 r100, mins 8x8 + 7x2; total 81 GPUs.
  static const std::vector<std::string> names = [] {
    std::vector<std::string> v{"donor"};
    for (int i = 0; i < 10; ++i) v.push_back("borrower-0" + std::to_string(i));
    return v;
  }();
  calculator_case integer{"IntegerDistribution", 81, {node(names[0], 1, 0, 3)}, {0}};
  const std::int64_t mins[] = {8, 8, 8, 8, 8, 8, 8, 8, 7, 7};
  // The residual 3 goes to the three smallest names (equal remainders).
  const std::int64_t want[] = {9, 9, 9, 8, 8, 8, 8, 8, 7, 7};
  for (int i = 0; i < 10; ++i) {
    integer.nodes.push_back(node(names[static_cast<std::size_t>(i + 1)], 1, 100, mins[i]));
    integer.expected.push_back(want[i]);
  }
  out.push_back(integer);
  return out;
}

INSTANTIATE_TEST_SUITE_P(Golden, RuntimeQuotaCalculatorIterationAdjustQuota,
                         ::testing::ValuesIn(calculator_cases()), [](const auto& info) {
                           std::string n;
                           for (char ch : info.param.name)
                             n += std::isalnum(static_cast<unsigned char>(ch)) ? ch : 'X';
                           return n;
                         });

// IntegerDistribution's own assertions: nothing lost, donor clamped, borrowers >= min.
TEST(RuntimeQuotaCalculator, IterationAdjustQuotaIntegerDistributionConserves) {
  auto cases = calculator_cases();
  auto& c = cases.back();
  redistribution(c.total, c.nodes);
  std::int64_t sum = 0;
  for (const auto& n : c.nodes) sum += n.runtime;
  EXPECT_EQ(sum, 81);
  EXPECT_EQ(c.nodes[0].runtime, 0);
  for (std::size_t i = 1; i < c.nodes.size(); ++i) EXPECT_GE(c.nodes[i].runtime, c.nodes[i].min);
}

// TestRuntimeQuotaCalculator_UpdateOneGroupRequest: five quotas with request < min get
// runtime == request. A calculator test: autoScaleMin = min (no scaling), though Σmin > total.
TEST(RuntimeQuotaCalculator, UpdateOneGroupRequest) {
  elastic_quota_args args;
  args.enable_min_quota_scale = false;
  quota_tree t(args);
  t.set_cluster_total(res(50, 5000));
  for (int i = 1; i <= 5; ++i) {
    auto name = "test-" + std::to_string(i);
    add_quota(t, name, kRoot, i * 100, i * 10000, i * 80, i * 8000, true, false);
    add_request(t, name, res(i * 10, i * 1000));
  }
  t.refresh();
  for (int i = 1; i <= 5; ++i) {
    auto name = "test-" + std::to_string(i);
    EXPECT_EQ(t.status(name)->runtime, t.status(name)->request) << name;
    EXPECT_EQ(t.status(name)->runtime, res(i * 10, i * 1000)) << name;
  }
}

// TestRuntimeQuotaCalculator_UpdateOneGroupRuntimeQuota: the calculator with autoScaleMin = min
// (no scaling, so Σmin 110 > total 100 is honoured), shared weights 1.
TEST(RuntimeQuotaCalculator, UpdateOneGroupRuntimeQuota) {
  elastic_quota_args args;
  args.enable_min_quota_scale = false;
  quota_tree t(args);
  t.set_cluster_total(res(100, 1000));
  auto q1 = make_quota("test1", kRoot, 80, 800, 60, 600, true, false);
  auto q2 = make_quota("test2", kRoot, 100, 1000, 50, 500, true, false);
  q1.shared_weight = q2.shared_weight = res(1, 1);
  ASSERT_TRUE(t.upsert_quota(q1));
  ASSERT_TRUE(t.upsert_quota(q2));
  add_request(t, "test2", res(90, 900));
  EXPECT_EQ(runtime_of(t, "test1"), res(0, 0));
  EXPECT_EQ(runtime_of(t, "test2"), res(90, 900));

  add_request(t, "test1", res(30, 300));
  EXPECT_EQ(runtime_of(t, "test1"), res(30, 300));
  EXPECT_EQ(runtime_of(t, "test2"), res(70, 700));

  add_request(t, "test1", res(30, 300));  // request 60/600
  EXPECT_EQ(runtime_of(t, "test1"), res(60, 600));
  EXPECT_EQ(runtime_of(t, "test2"), res(50, 500));  // == autoScaleMin; Σ = 110 > total

  ASSERT_TRUE(t.delete_quota("test1"));
  EXPECT_EQ(runtime_of(t, "test2"), res(90, 900));
}

// TestRuntimeQuotaCalculator_UpdateOneGroupRuntimeQuota2.
TEST(RuntimeQuotaCalculator, UpdateOneGroupRuntimeQuota2) {
  quota_tree t;
  t.set_cluster_total(res(120, 1200));
  auto q1 = make_quota("test1", kRoot, 80, 800, 50, 500, true, false);
  q1.shared_weight = res(1, 1);
  ASSERT_TRUE(t.upsert_quota(q1));
  add_request(t, "test1", res(100, 1000));
  EXPECT_EQ(runtime_of(t, "test1"), res(80, 800));  // limited by max

  auto q2 = make_quota("test2", kRoot, 100, 1000, 50, 500, true, false);
  q2.shared_weight = res(1, 1);
  ASSERT_TRUE(t.upsert_quota(q2));
  add_request(t, "test2", res(150, 1500));
  EXPECT_EQ(runtime_of(t, "test1"), res(60, 600));
  EXPECT_EQ(runtime_of(t, "test2"), res(60, 600));
}

// ---- group_quota_manager_test.go -------------------------------------------------------

// TestGroupQuotaManager_UpdateQuotaRequest.
TEST(GroupQuotaManager, UpdateQuotaRequest) {
  quota_tree t;
  t.set_cluster_total(res(96, 160 * GigaByte));
  add_quota(t, "test1", kRoot, 96, 160 * GigaByte, 50, 80 * GigaByte, true, false);
  add_quota(t, "test2", kRoot, 96, 160 * GigaByte, 40, 80 * GigaByte, true, false);

  add_request(t, "test1", res(60, 100 * GigaByte));
  EXPECT_EQ(runtime_of(t, "test1"), res(60, 100 * GigaByte));

  add_request(t, "test1", res(60, 100 * GigaByte));  // request 120/200Gi → runtime == max
  EXPECT_EQ(runtime_of(t, "test1"), res(96, 160 * GigaByte));

  add_request(t, "test2", res(150, 210 * GigaByte));
  EXPECT_EQ(runtime_of(t, "test1"), res(53, 80 * GigaByte));
  EXPECT_EQ(runtime_of(t, "test2"), res(43, 80 * GigaByte));
}

// TestGroupQuotaManager_UpdateQuotaDeltaRequest.
TEST(GroupQuotaManager, UpdateQuotaDeltaRequest) {
  quota_tree t;
  t.set_cluster_total(res(96, 160 * GigaByte));
  add_quota(t, "test1", kRoot, 96, 160 * GigaByte, 50, 80 * GigaByte, true, false);
  add_quota(t, "test2", kRoot, 96, 160 * GigaByte, 40, 80 * GigaByte, true, false);
  add_request(t, "test1", res(120, 200 * GigaByte));
  EXPECT_EQ(runtime_of(t, "test1"), res(96, 160 * GigaByte));
  add_request(t, "test2", res(150, 210 * GigaByte));
  EXPECT_EQ(runtime_of(t, "test1"), res(53, 80 * GigaByte));
  EXPECT_EQ(runtime_of(t, "test2"), res(43, 80 * GigaByte));
}

// TestGroupQuotaManager_NotAllowLentResource.
TEST(GroupQuotaManager, NotAllowLentResource) {
  quota_tree t;
  t.set_cluster_total(res(100, 0));
  add_quota(t, "test1", kRoot, 96, 0, 60, 0, true, false);
  add_quota(t, "test2", kRoot, 96, 0, 40, 0, false, false);
  add_request(t, "test1", res(120, 0));
  EXPECT_EQ(runtime_of(t, "test1").cpu_milli, 60'000);
  EXPECT_EQ(runtime_of(t, "test2").cpu_milli, 40'000);
}

struct lent_step {
  std::int64_t add_child1;
  std::int64_t root, child1, child2;
};

void run_lent_case(bool root_lent, bool child1_lent, bool child2_lent,
                   const std::vector<lent_step>& steps) {
  quota_tree t;
  t.set_cluster_total(res(100, 0));
  add_quota(t, "test-root", kRoot, 96, 0, 60, 0, root_lent, true);
  add_quota(t, "test-child1", "test-root", 96, 0, 20, 0, child1_lent, false);
  add_quota(t, "test-child2", "test-root", 96, 0, 20, 0, child2_lent, false);
  int step = 0;
  for (const auto& s : steps) {
    if (s.add_child1 > 0) add_request(t, "test-child1", res(s.add_child1, 0));
    t.refresh();
    EXPECT_EQ(t.status("test-root")->runtime.cpu_milli, s.root * 1000) << "step " << step;
    EXPECT_EQ(t.status("test-child1")->runtime.cpu_milli, s.child1 * 1000) << "step " << step;
    EXPECT_EQ(t.status("test-child2")->runtime.cpu_milli, s.child2 * 1000) << "step " << step;
    ++step;
  }
}

// TestGroupQuotaManager_NotAllowLentResource_2: root, child1, child2 all not lent.
TEST(GroupQuotaManager, NotAllowLentResource2) {
  run_lent_case(false, false, false, {{0, 60, 20, 20}, {40, 60, 40, 20}, {20, 80, 60, 20}});
}
// TestGroupQuotaManager_NotAllowLentResource_3: root lent, child1 not lent, child2 lent.
TEST(GroupQuotaManager, NotAllowLentResource3) {
  run_lent_case(true, false, true, {{0, 20, 20, 0}, {40, 40, 40, 0}, {20, 60, 60, 0}});
}
// TestGroupQuotaManager_NotAllowLentResource_4: root lent, children not lent.
TEST(GroupQuotaManager, NotAllowLentResource4) {
  run_lent_case(true, false, false, {{0, 40, 20, 20}, {40, 60, 40, 20}, {20, 80, 60, 20}});
}

// TestGroupQuotaManager_MultiUpdateQuotaRequest: parent's request is Σ children's limited request.
TEST(GroupQuotaManager, MultiUpdateQuotaRequest) {
  quota_tree t;
  t.set_cluster_total(res(96, 160 * GigaByte));
  add_quota(t, "test1", kRoot, 96, 160 * GigaByte, 50, 80 * GigaByte, true, true);
  add_quota(t, "test1-a", "test1", 96, 160 * GigaByte, 50, 80 * GigaByte, true, true);
  add_quota(t, "a-123", "test1-a", 96, 160 * GigaByte, 50, 80 * GigaByte, true, false);
  const auto request = res(96, 130 * GigaByte);
  add_request(t, "a-123", request);
  EXPECT_EQ(runtime_of(t, "a-123"), request);
  EXPECT_EQ(runtime_of(t, "test1-a"), request);
  EXPECT_EQ(runtime_of(t, "test1"), request);

  add_quota(t, "a-123", "test1-a", 64, 128 * GigaByte, 50, 80 * GigaByte, true, false);
  t.refresh();
  EXPECT_EQ(t.status("a-123")->runtime, res(64, 128 * GigaByte));
  EXPECT_EQ(t.status("test1-a")->request, res(64, 128 * GigaByte));
  EXPECT_EQ(t.status("a-123")->request, request);

  add_quota(t, "a-123", "test1-a", 100, 200 * GigaByte, 90, 160 * GigaByte, true, false);
  t.refresh();
  EXPECT_EQ(t.status("test1-a")->request, res(96, 130 * GigaByte));
  EXPECT_EQ(t.status("a-123")->runtime, request);
}

// TestGroupQuotaManager_UpdateDefaultQuotaGroup: the default quota's runtime is its max.
TEST(GroupQuotaManager, UpdateDefaultQuotaGroup) {
  quota_tree t;
  auto q = make_quota(std::string(quota_names::default_quota), kRoot, 100, 1000, 0, 0, true, false);
  ASSERT_TRUE(t.upsert_quota(q));
  t.refresh();
  EXPECT_EQ(t.spec(quota_names::default_quota)->max, res(100, 1000));
  EXPECT_EQ(t.status(quota_names::default_quota)->runtime, res(100, 1000));
}

// TestGroupQuotaManager_MultiUpdateQuotaRequest2: request < min, min < request < max, max <
// request.
TEST(GroupQuotaManager, MultiUpdateQuotaRequest2) {
  quota_tree t;
  t.set_cluster_total(res(96, 160 * GigaByte));
  add_quota(t, "test1", kRoot, 96, 160 * GigaByte, 80, 80 * GigaByte, true, true);
  add_quota(t, "test1-a", "test1", 60, 80 * GigaByte, 50, 80 * GigaByte, true, true);
  add_quota(t, "a-123", "test1-a", 30, 60 * GigaByte, 20, 40 * GigaByte, true, false);

  add_request(t, "a-123", res(10, 30 * GigaByte));
  t.refresh();
  for (const char* q : {"a-123", "test1-a", "test1"})
    EXPECT_EQ(t.status(q)->runtime, res(10, 30 * GigaByte)) << q;

  add_request(t, "a-123", res(15, 15 * GigaByte));
  t.refresh();
  EXPECT_EQ(t.status("a-123")->runtime, res(25, 45 * GigaByte));
  EXPECT_EQ(t.status("test1-a")->request, res(25, 45 * GigaByte));
  EXPECT_EQ(t.status("test1")->request, res(25, 45 * GigaByte));

  add_request(t, "a-123", res(30, 30 * GigaByte));
  t.refresh();
  EXPECT_EQ(t.status("a-123")->runtime, res(30, 60 * GigaByte));
  EXPECT_EQ(t.status("test1-a")->request, res(30, 60 * GigaByte));
  EXPECT_EQ(t.status("test1")->request, res(30, 60 * GigaByte));
}

void add_scaled_tree(quota_tree& t) {
  add_quota(t, "p", kRoot, 1000, 1000 * GigaByte, 300, 300 * GigaByte, true, true);
  add_quota(t, "a", "p", 1000, 1000 * GigaByte, 100, 100 * GigaByte, true, false);
  add_quota(t, "b", "p", 1000, 1000 * GigaByte, 100, 100 * GigaByte, true, false);
  add_quota(t, "c", "p", 1000, 1000 * GigaByte, 100, 100 * GigaByte, true, false);
}

// TestGroupQuotaManager_MultiUpdateQuotaRequest_WithScaledMinQuota1.
TEST(GroupQuotaManager, MultiUpdateQuotaRequestWithScaledMinQuota1) {
  quota_tree t;
  add_scaled_tree(t);
  for (const char* q : {"a", "b", "c"}) add_request(t, q, res(200, 200 * GigaByte));
  t.set_cluster_total(res(200, 200 * GigaByte));
  t.refresh();
  EXPECT_EQ(t.status("p")->runtime, res(200, 200 * GigaByte));
  EXPECT_EQ(t.status("a")->runtime, res2(66667, 200 * GigaByte / 3 + 1));
  EXPECT_EQ(t.status("b")->runtime, res2(66667, 200 * GigaByte / 3 + 1));
  EXPECT_EQ(t.status("c")->runtime, res2(66666, 200 * GigaByte / 3));  // loses the name tie
  EXPECT_EQ(t.status("p")->auto_scale_min, res(200, 200 * GigaByte));
  for (const char* q : {"a", "b", "c"})
    EXPECT_EQ(t.status(q)->auto_scale_min, res2(66666, 200 * GigaByte / 3)) << q;

  t.set_cluster_total(res(600, 600 * GigaByte));
  t.refresh();
  EXPECT_EQ(t.status("p")->runtime, res(600, 600 * GigaByte));
  EXPECT_EQ(t.status("p")->auto_scale_min, res(300, 300 * GigaByte));
  for (const char* q : {"a", "b", "c"}) {
    EXPECT_EQ(t.status(q)->runtime, res(200, 200 * GigaByte)) << q;
    EXPECT_EQ(t.status(q)->auto_scale_min, res(100, 100 * GigaByte)) << q;
  }
}

// TestGroupQuotaManager_MultiUpdateQuotaRequest_WithScaledMinQuota2: one child asks nothing.
TEST(GroupQuotaManager, MultiUpdateQuotaRequestWithScaledMinQuota2) {
  quota_tree t;
  add_scaled_tree(t);
  add_request(t, "a", res(200, 200 * GigaByte));
  add_request(t, "c", res(200, 200 * GigaByte));
  t.set_cluster_total(res(200, 200 * GigaByte));
  t.refresh();
  EXPECT_EQ(t.status("p")->runtime, res(200, 200 * GigaByte));
  EXPECT_EQ(t.status("a")->runtime, res(100, 100 * GigaByte));
  EXPECT_EQ(t.status("b")->runtime, res(0, 0));
  EXPECT_EQ(t.status("c")->runtime, res(100, 100 * GigaByte));
  EXPECT_EQ(t.status("p")->auto_scale_min, res(200, 200 * GigaByte));
  for (const char* q : {"a", "b", "c"})
    EXPECT_EQ(t.status(q)->auto_scale_min, res2(66666, 200 * GigaByte / 3)) << q;
}

// TestGroupQuotaManager_MultiUpdateQuotaRequest_WithScaledMinQuota3: scaling off, mins honoured.
TEST(GroupQuotaManager, MultiUpdateQuotaRequestWithScaledMinQuota3) {
  elastic_quota_args args;
  args.enable_min_quota_scale = false;
  quota_tree t(args);
  add_scaled_tree(t);
  for (const char* q : {"a", "b", "c"}) add_request(t, q, res(200, 200 * GigaByte));
  t.set_cluster_total(res(200, 200 * GigaByte));
  t.refresh();
  EXPECT_EQ(t.status("p")->runtime, res(300, 300 * GigaByte));
  EXPECT_EQ(t.status("p")->auto_scale_min, res(300, 300 * GigaByte));
  for (const char* q : {"a", "b", "c"}) {
    EXPECT_EQ(t.status(q)->runtime, res(100, 100 * GigaByte)) << q;
    EXPECT_EQ(t.status(q)->auto_scale_min, res(100, 100 * GigaByte)) << q;
  }
}

// TestGroupQuotaManager_UpdateGroupDeltaUsedAndNonPreemptibleUsed.
TEST(GroupQuotaManager, UpdateGroupDeltaUsedAndNonPreemptibleUsed) {
  quota_tree t;
  add_quota(t, "test1", kRoot, 96, 160 * GigaByte, 50, 80 * GigaByte, true, false);
  quota_pod p{"ns/p1", "ns", "test1", res(100, 260 * GigaByte)};
  p.assigned = true;
  quota_pod np{"ns/p2", "ns", "test1", res(20, 30 * GigaByte)};
  np.assigned = true;
  np.non_preemptible = true;
  ASSERT_TRUE(t.upsert_pod(p));
  ASSERT_TRUE(t.upsert_pod(np));
  t.refresh();
  EXPECT_EQ(t.status("test1")->used, res(120, 290 * GigaByte));
  EXPECT_EQ(t.status("test1")->non_preemptible_used, res(20, 30 * GigaByte));
  // Shrinking a pod and removing one decreases used (never below zero).
  p.request = res(70, 70 * GigaByte);
  ASSERT_TRUE(t.upsert_pod(p));
  EXPECT_TRUE(t.remove_pod("ns/p2"));
  EXPECT_FALSE(t.remove_pod("ns/p2"));
  t.refresh();
  EXPECT_EQ(t.status("test1")->used, res(70, 70 * GigaByte));
  EXPECT_EQ(t.status("test1")->non_preemptible_used, res(0, 0));
}

// TestGroupQuotaManager_MultiUpdateQuotaUsedAndNonPreemptibleUsed: used reaches every ancestor.
TEST(GroupQuotaManager, MultiUpdateQuotaUsedAndNonPreemptibleUsed) {
  quota_tree t;
  add_quota(t, "test1", kRoot, 96, 160 * GigaByte, 50, 80 * GigaByte, true, true);
  add_quota(t, "test1-sub1", "test1", 96, 160 * GigaByte, 50, 80 * GigaByte, true, true);
  add_quota(t, "test1-sub1-1", "test1-sub1", 96, 160 * GigaByte, 50, 80 * GigaByte, true, false);
  quota_pod p{"ns/p", "ns", "test1-sub1-1", res(70, 190 * GigaByte)};
  p.assigned = true;
  quota_pod np{"ns/np", "ns", "test1-sub1-1", res(50, 100 * GigaByte)};
  np.assigned = true;
  np.non_preemptible = true;
  ASSERT_TRUE(t.upsert_pod(p));
  ASSERT_TRUE(t.upsert_pod(np));
  t.refresh();
  for (const char* q : {"test1-sub1-1", "test1-sub1", "test1"}) {
    EXPECT_EQ(t.status(q)->used, res(120, 290 * GigaByte)) << q;
    EXPECT_EQ(t.status(q)->non_preemptible_used, res(50, 100 * GigaByte)) << q;
  }
}

// TestGroupQuotaManager_MultiUpdateQuotaRequestAndNonPreemptibleRequest: the leaf keeps its raw
// request, ancestors see the limited one; non-preemptible request passes up unchanged.
TEST(GroupQuotaManager, MultiUpdateQuotaRequestAndNonPreemptibleRequest) {
  quota_tree t;
  add_quota(t, "test1", kRoot, 96, 160 * GigaByte, 50, 80 * GigaByte, true, true);
  add_quota(t, "test1-sub1", "test1", 96, 160 * GigaByte, 50, 80 * GigaByte, true, true);
  add_quota(t, "test1-sub1-1", "test1-sub1", 96, 160 * GigaByte, 50, 80 * GigaByte, true, false);
  add_request(t, "test1-sub1-1", res(70, 190 * GigaByte));
  add_request(t, "test1-sub1-1", res(50, 100 * GigaByte), /*non_preemptible=*/true);
  t.refresh();
  EXPECT_EQ(t.status("test1-sub1-1")->request, res(120, 290 * GigaByte));
  EXPECT_EQ(t.status("test1-sub1-1")->non_preemptible_request, res(50, 100 * GigaByte));
  for (const char* q : {"test1-sub1", "test1"}) {
    EXPECT_EQ(t.status(q)->request, res(96, 160 * GigaByte)) << q;
    EXPECT_EQ(t.status(q)->non_preemptible_request, res(50, 100 * GigaByte)) << q;
  }
}

// TestGroupQuotaManager_UpdateClusterTotalResource: system and default used leave the tree.
TEST(GroupQuotaManager, UpdateClusterTotalResource) {
  quota_tree t;
  t.set_cluster_total(res(96, 160 * GigaByte));
  t.refresh();
  EXPECT_EQ(t.tree_total(""), res(96, 160 * GigaByte));
  t.set_cluster_total(res(100, 540 * GigaByte));
  t.refresh();
  EXPECT_EQ(t.tree_total(""), res(100, 540 * GigaByte));

  quota_pod sys{"kube-system/a", "kube-system", std::string(quota_names::system_quota),
                res(10, 30 * GigaByte)};
  sys.assigned = true;
  ASSERT_TRUE(t.upsert_pod(sys));
  t.refresh();
  EXPECT_EQ(t.status(quota_names::system_quota)->used, res(10, 30 * GigaByte));
  EXPECT_EQ(t.tree_total(""), res(90, 510 * GigaByte));

  quota_pod sys2{"kube-system/b", "kube-system", std::string(quota_names::system_quota),
                 res2(10'000, 30)};
  sys2.assigned = true;
  ASSERT_TRUE(t.upsert_pod(sys2));
  t.refresh();
  EXPECT_EQ(t.tree_total(""), res(90, 510 * GigaByte) - res2(10'000, 30));

  quota_pod def{"ns/c", "ns", std::string(quota_names::default_quota), res2(10'000, 30)};
  def.assigned = true;
  ASSERT_TRUE(t.upsert_pod(def));
  t.refresh();
  EXPECT_EQ(t.status(quota_names::default_quota)->used, res2(10'000, 30));
  EXPECT_EQ(t.tree_total(""), res(90, 510 * GigaByte) - res2(20'000, 60));
}

// TestGroupQuotaManager_MultiChildMaxGreaterParentMax_MaxGreaterThanTotalRes.
TEST(GroupQuotaManager, MultiChildMaxGreaterParentMaxMaxGreaterThanTotalRes) {
  quota_tree t;
  t.set_cluster_total(res(300, 8000));
  add_quota(t, "test1", kRoot, 600, 4096, 100, 100, true, true);
  add_quota(t, "test1-sub1", "test1", 500, 2048, 100, 100, true, false);
  add_request(t, "test1-sub1", res(500, 4096));
  EXPECT_EQ(runtime_of(t, "test1-sub1"), res(300, 2048));
  add_request(t, "test1-sub1", res(550, 4096));
  t.refresh();
  EXPECT_EQ(t.status("test1")->request, res(500, 2048));
  EXPECT_EQ(t.status("test1")->limited_request, res(500, 2048));
  EXPECT_EQ(t.status("test1")->runtime, res(300, 2048));
  EXPECT_EQ(t.status("test1-sub1")->request, res(1050, 8192));
  EXPECT_EQ(t.status("test1-sub1")->limited_request, res(500, 2048));
  EXPECT_EQ(t.status("test1-sub1")->runtime, res(300, 2048));
}

// TestGroupQuotaManager_MultiChildMaxGreaterParentMax.
TEST(GroupQuotaManager, MultiChildMaxGreaterParentMax) {
  quota_tree t;
  t.set_cluster_total(res(350, 1800 * GigaByte));
  add_quota(t, "test1", kRoot, 300, 1024 * GigaByte, 176, 756 * GigaByte, true, true);
  add_quota(t, "test1-sub1", "test1", 500, 2048 * GigaByte, 100, 512 * GigaByte, true, false);
  add_request(t, "test1-sub1", res(400, 1500 * GigaByte));
  t.refresh();
  EXPECT_EQ(t.status("test1")->request, res(400, 1500 * GigaByte));
  EXPECT_EQ(t.status("test1-sub1")->request, res(400, 1500 * GigaByte));
  EXPECT_EQ(t.status("test1-sub1")->runtime, res(300, 1024 * GigaByte));
  add_request(t, "test1-sub1", res(400, 1500 * GigaByte));
  EXPECT_EQ(runtime_of(t, "test1-sub1"), res(300, 1024 * GigaByte));
}

// ---- Colony behaviour around the tree --------------------------------------------------

TEST(QuotaTree, RefreshReturnsOnlyChangedQuotasInNameOrder) {
  quota_tree t;
  t.set_cluster_total(res(100, 100 * GigaByte));
  add_quota(t, "zeta", kRoot, 100, 100 * GigaByte, 10, 10 * GigaByte, true, false);
  add_quota(t, "alpha", kRoot, 100, 100 * GigaByte, 10, 10 * GigaByte, true, false);
  auto first = t.refresh();
  std::vector<std::string> names;
  for (const auto& s : first) names.push_back(s.name);
  EXPECT_EQ(names, (std::vector<std::string>{"alpha", std::string(quota_names::default_quota),
                                             std::string(quota_names::system_quota), "zeta"}));
  EXPECT_TRUE(t.refresh().empty());
  add_request(t, "zeta", res(5, 0));
  auto second = t.refresh();
  ASSERT_EQ(second.size(), 1u);
  EXPECT_EQ(second[0].name, "zeta");
  EXPECT_EQ(second[0].runtime, res(5, 0));
}

TEST(QuotaTree, OrphanHasNoRuntimeUntilItsParentAppears) {
  quota_tree t;
  t.set_cluster_total(res(100, 0));
  add_quota(t, "child", "parent", 100, 0, 10, 0, true, false);
  add_request(t, "child", res(50, 0));
  t.refresh();
  EXPECT_FALSE(t.status("child")->in_tree);
  EXPECT_EQ(t.status("child")->runtime, res(0, 0));
  add_quota(t, "parent", kRoot, 100, 0, 10, 0, true, true);
  t.refresh();
  EXPECT_TRUE(t.status("child")->in_tree);
  EXPECT_EQ(t.status("child")->runtime, res(50, 0));
  EXPECT_EQ(t.ancestors("child"), (std::vector<std::string>{"parent"}));
}

TEST(QuotaTree, SpecialQuotasCannotBeDeletedAndRootIsVirtual) {
  quota_tree t;
  EXPECT_FALSE(t.delete_quota(quota_names::default_quota));
  EXPECT_FALSE(t.delete_quota(quota_names::system_quota));
  EXPECT_EQ(t.delete_quota("nope").error().code, errc::not_found);
  auto root = make_quota(kRoot, "", 1, 1, 0, 0, true, true);
  EXPECT_EQ(t.upsert_quota(root).error().code, errc::invalid_input);
}

// GetQuotaName: label, namespace-named quota, namespaces annotation, default.
TEST(QuotaTree, GetQuotaName) {
  quota_tree t;
  auto q = make_quota("team-a", kRoot, 10, 10, 0, 0, true, false);
  q.namespace_name = "team-a";
  ASSERT_TRUE(t.upsert_quota(q));
  auto shared = make_quota("shared", kRoot, 10, 10, 0, 0, true, false);
  shared.namespaces = {"ns-x", "ns-y"};
  ASSERT_TRUE(t.upsert_quota(shared));
  EXPECT_EQ(t.get_quota_name("whatever", "shared"), "shared");
  EXPECT_EQ(t.get_quota_name("whatever", "unknown"), quota_names::default_quota);
  EXPECT_EQ(t.get_quota_name("team-a", ""), "team-a");
  EXPECT_EQ(t.get_quota_name("ns-y", ""), "shared");
  EXPECT_EQ(t.get_quota_name("other", ""), quota_names::default_quota);
  elastic_quota_args args;
  args.disable_default_quota = true;
  quota_tree strict(args);
  EXPECT_EQ(strict.get_quota_name("other", ""), "");
  EXPECT_EQ(strict.get_quota_name("other", "unknown"), "");
}

// A tree root's total-resource is its tree's total and leaves the default tree.
TEST(QuotaTree, MultiTreeTotals) {
  quota_tree t;
  t.set_cluster_total(res(100, 100));
  auto tree_root = make_quota("tree-root", kRoot, 1000, 1000, 40, 40, true, true);
  tree_root.tree_id = "t1";
  tree_root.is_tree_root = true;
  tree_root.total_resource = res(40, 40);
  tree_root.total_resource_keys = key::cpu | key::memory;
  ASSERT_TRUE(t.upsert_quota(tree_root));
  auto leaf = make_quota("tree-leaf", "tree-root", 1000, 1000, 0, 0, true, false);
  leaf.tree_id = "t1";
  ASSERT_TRUE(t.upsert_quota(leaf));
  add_quota(t, "plain", kRoot, 1000, 1000, 0, 0, true, false);
  add_request(t, "tree-leaf", res(500, 500));
  add_request(t, "plain", res(500, 500));
  t.refresh();
  EXPECT_EQ(t.tree_total("t1"), res(40, 40));
  EXPECT_EQ(t.tree_total(""), res(60, 60));
  EXPECT_EQ(t.status("tree-leaf")->runtime, res(40, 40));
  EXPECT_EQ(t.status("tree-leaf")->tree_id, "t1");
  EXPECT_EQ(t.status("plain")->runtime, res(60, 60));

  tree_root.ignore_default_tree = true;
  ASSERT_TRUE(t.upsert_quota(tree_root));
  t.refresh();
  EXPECT_EQ(t.tree_total(""), res(100, 100));
  EXPECT_EQ(t.status("plain")->runtime, res(100, 100));
}

TEST(QuotaTree, RuntimeMaskedToMaxKeys) {
  quota_tree t;
  resource_list total = res(100, 100);
  total.gpu = 800;
  t.set_cluster_total(total);
  auto q = make_quota("cpu-only", kRoot, 100, 0, 0, 0, true, false);
  q.max_keys = key::cpu;
  q.min_keys = key::cpu;
  ASSERT_TRUE(t.upsert_quota(q));
  resource_list r = res(10, 10);
  r.gpu = 100;
  add_request(t, "cpu-only", r);
  t.refresh();
  EXPECT_EQ(t.status("cpu-only")->request, res(10, 0));  // pod amounts masked to max keys
  EXPECT_EQ(t.status("cpu-only")->runtime, res(10, 0));
  EXPECT_EQ(t.status("cpu-only")->runtime_keys, key::cpu);
}

// ---- ElasticQuotaIgnorePodOverhead -------------------------------------------------------------

struct overhead_case {
  std::string name;  // core/helper_test.go TestPodRequestsAndLimits sub-case
  bool ignore;
  resource_list want;
  friend void PrintTo(const overhead_case& c, std::ostream* os) { *os << c.name; }
};

class PodRequestsAndLimits : public ::testing::TestWithParam<overhead_case> {};

// One container requesting 4 cores / 8 GiB (limits 8 / 16 GiB), overhead 1 core / 1 GiB:
// Kubernetes' PodRequests is 5 cores / 9 GiB; the gate takes the overhead out again.
TEST_P(PodRequestsAndLimits, Requests) {
  const auto& c = GetParam();
  const resource_list overhead = res2(1000, 1 * GigaByte);
  const resource_list pod_requests = res2(4000, 8 * GigaByte) + overhead;
  EXPECT_EQ(quota_pod_requests(pod_requests, overhead, c.ignore), c.want) << c.name;
}

INSTANTIATE_TEST_SUITE_P(Golden, PodRequestsAndLimits,
                         ::testing::Values(overhead_case{"ElasticQuotaIgnorePodOverhead_false",
                                                         false, res2(5000, 9 * GigaByte)},
                                           overhead_case{"ElasticQuotaIgnorePodOverhead_true", true,
                                                         res2(4000, 8 * GigaByte)}),
                         [](const auto& info) { return info.param.name; });

// The tree books what quota_pod_requests gives under its gate: used and request leave the
// overhead out with the gate, keep it without; upserting a stored copy again changes nothing.
TEST(GroupQuotaManager, IgnorePodOverheadGateDecidesWhatPodsBook) {
  for (bool ignore : {false, true}) {
    elastic_quota_args args;
    args.elastic_quota_ignore_pod_overhead = ignore;
    quota_tree t(args);
    t.set_cluster_total(res(100, 1000 * GigaByte));
    ASSERT_TRUE(
        t.upsert_quota(make_quota("q", "", 100, 1000 * GigaByte, 10, 100 * GigaByte, true, false)));
    quota_pod p;
    p.name = "ns/p";
    p.quota = "q";
    p.overhead = res2(1000, 1 * GigaByte);
    p.request = res2(4000, 8 * GigaByte) + p.overhead;
    p.assigned = true;
    ASSERT_TRUE(t.upsert_pod(p));
    t.refresh();
    const resource_list want = ignore ? res2(4000, 8 * GigaByte) : res2(5000, 9 * GigaByte);
    EXPECT_EQ(t.status("q")->used, want) << ignore;
    EXPECT_EQ(t.status("q")->request, want) << ignore;
    quota_pod stored = *t.pod("ns/p");
    EXPECT_EQ(stored.request, want);
    ASSERT_TRUE(t.upsert_pod(stored));
    t.refresh();
    EXPECT_EQ(t.status("q")->used, want) << ignore;
  }
}

}  // namespace
}  // namespace colony::quota
