// Golden cases of group identity and the BE cgroups, from Koordinator's tests.
#include <gtest/gtest.h>

#include "actors/koordlet/be_cgroup.hpp"
#include "actors/koordlet/group_identity.hpp"
#include "actors/koordlet/memory_qos.hpp"
#include "tests/actors/koordlet/koordlet_test_util.hpp"

namespace colony::koordlet {
namespace {

// Test_bvtPlugin_parseRule (runtimehooks/hooks/groupidentity/rule_test.go), GC-BVT-1.
TEST(KoordletGroupIdentity, BvtPluginParseRule) {
  resource_qos_cpu_strategy s;
  s.lsr_class = {true, 2};
  s.ls_class = {true, 2};
  s.be_class = {true, -1};
  {
    SCOPED_TRACE("parse default cpu qos policy");
    auto r = parse_bvt_rule(s);
    EXPECT_TRUE(r.enable);
    EXPECT_EQ(pod_bvt_value(r, qos_class::lse, kube_qos::guaranteed), 2);
    EXPECT_EQ(pod_bvt_value(r, qos_class::lsr, kube_qos::guaranteed), 2);
    EXPECT_EQ(pod_bvt_value(r, qos_class::ls, kube_qos::burstable), 2);
    EXPECT_EQ(pod_bvt_value(r, qos_class::be, kube_qos::best_effort), -1);
    EXPECT_EQ(kube_qos_dir_bvt_value(r, kube_qos::guaranteed), 0);
    EXPECT_EQ(kube_qos_dir_bvt_value(r, kube_qos::burstable), 2);
    EXPECT_EQ(kube_qos_dir_bvt_value(r, kube_qos::best_effort), -1);
    EXPECT_EQ(pod_bvt_value(r, qos_class::none, kube_qos::guaranteed), 2);
    EXPECT_EQ(pod_bvt_value(r, qos_class::none, kube_qos::burstable), 2);
    EXPECT_EQ(pod_bvt_value(r, qos_class::none, kube_qos::best_effort), -1);
  }
  {
    SCOPED_TRACE("parse different cpu qos policy");
    s.cpu_policy = cpu_qos_policy::core_sched;
    auto r = parse_bvt_rule(s);
    EXPECT_FALSE(r.enable);
    for (auto q : {qos_class::lse, qos_class::lsr, qos_class::ls, qos_class::be})
      EXPECT_EQ(pod_bvt_value(r, q, kube_qos::unset), 0);
    for (auto k : {kube_qos::guaranteed, kube_qos::burstable, kube_qos::best_effort}) {
      EXPECT_EQ(kube_qos_dir_bvt_value(r, k), 0);
      EXPECT_EQ(pod_bvt_value(r, qos_class::none, k), 0);
    }
  }
  {
    SCOPED_TRACE("defaults are disabled");
    auto r = parse_bvt_rule({});
    EXPECT_FALSE(r.enable);
    EXPECT_EQ(pod_bvt_value(r, qos_class::be, kube_qos::best_effort), 0);
  }
}

// Test_plugin_SetPodResources (runtimehooks/hooks/batchresource/batch_resource_test.go), GC-BECG-1.
TEST(KoordletBECgroup, PluginSetPodResources) {
  auto pod = test::make_pod("batch", qos_class::be, 5500);
  pod.containers = {{"main", {}, {}}};
  pod.containers[0].requests.batch_cpu_milli = 500;
  pod.containers[0].limits.batch_cpu_milli = 500;
  pod.containers[0].requests.batch_memory_bytes = 2 * test::Gi;
  pod.containers[0].limits.batch_memory_bytes = 2 * test::Gi;
  struct row {
    const char* name;
    bool quota_enabled;
    double ratio;
    std::int64_t want_quota;
  };
  const row rows[] = {{"a Batch pod with cpu memory requests", true, 1.0, 50000},
                      {"a Batch pod scaled with ratio", true, 1.2, 41667},
                      {"a Batch pod with cfs quota unset", false, 1.0, -1}};
  for (const auto& r : rows) {
    SCOPED_TRACE(r.name);
    auto s = be_pod_cgroup(pod, r.quota_enabled, r.ratio);
    ASSERT_TRUE(s.has_value());
    EXPECT_EQ(s->cpu_shares, 512);
    EXPECT_EQ(s->cfs_quota_us, r.want_quota);
    EXPECT_EQ(s->memory_limit_bytes, 2147483648);
  }
  EXPECT_FALSE(be_pod_cgroup(test::make_pod("ls", qos_class::ls), true, 1.0).has_value());
  resource_threshold_strategy cfg;
  cfg.enable = true;
  cfg.cpu_suppress_policy = cpu_suppress_policy_type::cfs_quota;
  EXPECT_FALSE(be_cfs_quota_enabled(cfg));
  EXPECT_EQ(milli_cpu_to_shares(0), 2);
  EXPECT_EQ(milli_cpu_to_shares(1000000), 262144);
  EXPECT_EQ(milli_cpu_to_quota(5), 1000);
}

// Memory QoS (cgreconcile calculatePodMemoryQoS): min and low from the request, low raised to
// min, high between request and limit (or the node's allocatable) by throttlingPercent, rounded
// down to pages, "max" (nullopt) at 0; a class without memoryQOS.enable gets nothing.
TEST(KoordletMemoryQoS, PodMemoryQoSTable) {
  constexpr std::int64_t alloc = 64 * test::Gi;
  struct row {
    const char* name;
    qos_class qos;
    std::int64_t request, limit;  // limit 0: none
    memory_qos cfg;
    std::optional<memory_qos_settings> want;
  };
  const row rows[] = {
      {"disabled class",
       qos_class::ls,
       test::Gi,
       2 * test::Gi,
       {false, 100, 100, 80},
       std::nullopt},
      {"min 100, low 0 raised to min, high 80 % of the way to the limit",
       qos_class::ls,
       test::Gi,
       2 * test::Gi,
       {true, 100, 0, 80},
       memory_qos_settings{test::Gi, test::Gi, 1932734464}},
      {"throttling 0 is max",
       qos_class::ls,
       test::Gi,
       2 * test::Gi,
       {true, 50, 80, 0},
       memory_qos_settings{test::Gi / 2, test::Gi * 80 / 100, std::nullopt}},
      {"no limit: the node's allocatable",
       qos_class::ls,
       test::Gi,
       0,
       {true, 0, 0, 50},
       memory_qos_settings{0, 0, test::Gi + (alloc - test::Gi) / 2}},
      {"LSR pods use lsrClass",
       qos_class::lsr,
       test::Gi,
       test::Gi,
       {true, 100, 100, 100},
       memory_qos_settings{test::Gi, test::Gi, test::Gi}},
  };
  for (const auto& r : rows) {
    SCOPED_TRACE(r.name);
    auto pod = test::make_pod("p", r.qos);
    pod.containers = {{"main", {}, {}}};
    pod.containers[0].requests.memory_bytes = r.request;
    pod.containers[0].limits.memory_bytes = r.limit;
    resource_qos_memory_strategy s;
    (r.qos == qos_class::lsr ? s.lsr_class : s.ls_class) = r.cfg;
    EXPECT_EQ(pod_memory_qos(s, pod, alloc), r.want);
  }
  // The classes: LSE shares lsrClass, BE beClass, SYSTEM systemClass.
  resource_qos_memory_strategy s;
  s.be_class.enable = true;
  EXPECT_TRUE(pod_memory_qos(s, test::make_pod("be", qos_class::be), alloc).has_value());
  EXPECT_FALSE(pod_memory_qos(s, test::make_pod("ls", qos_class::ls), alloc).has_value());
  EXPECT_EQ(&memory_qos_of(s, test::make_pod("lse", qos_class::lse)), &s.lsr_class);
  EXPECT_EQ(&memory_qos_of(s, test::make_pod("sys", qos_class::system)), &s.system_class);
}

// apis/extension/priority_utils_test.go cases used by evict sorting (GC-PRIO-1, 2, 4, 7).
TEST(KoordletQoS, PriorityDerivations) {
  auto p = test::make_pod("x", qos_class::none, 9499);
  EXPECT_EQ(pod_priority_class_with_default(p), priority_class::prod);
  p.priority_class_label = priority_class::prod;
  p.priority = 5499;
  EXPECT_EQ(pod_priority_class_with_default(p), priority_class::prod);
  auto be = test::make_pod("be", qos_class::be);
  EXPECT_EQ(pod_priority_class_with_default(be), priority_class::batch);
  auto lsr = test::make_pod("lsr", qos_class::lsr);
  EXPECT_EQ(pod_priority_value_with_default(lsr), 9500);
  auto g = test::make_pod("g", qos_class::none);
  g.kube_qos_class = kube_qos::guaranteed;
  EXPECT_EQ(pod_qos_with_default(g), qos_class::lsr);
}

}  // namespace
}  // namespace colony::koordlet
