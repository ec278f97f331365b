// Golden cases of ElasticQuota admission and preemption: Koordinator's
// pkg/scheduler/plugins/elasticquota/ plugin_test.go (PreFilter), quota_overuse_revoke_test.go, and
// preempt.go's canPreempt rule.
#include <ostream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "actors/quota/admission.hpp"
#include "tests/actors/quota/test_helpers.hpp"

namespace colony::quota {
namespace {

using namespace colony::quota::testing;
const std::string kRoot{quota_names::root_quota};
const std::string kDefault{quota_names::default_quota};

resource_list with_gpu(resource_list r, std::int64_t devices) {
  r.gpu = devices * 100;
  return r;
}

// The default quota as the plugin creates it, with a hand-set Runtime (as the Go test does).
quota_view default_quota_view(const resource_list& runtime) {
  elastic_quota_args args;
  quota_view v;
  v.name = kDefault;
  v.parent = kRoot;
  v.max = args.default_quota_group_max;
  v.max_keys = key::cpu | key::memory;
  v.runtime = runtime;
  v.runtime_keys = key::cpu | key::memory;
  return v;
}

struct prefilter_case {
  std::string name;  // TestPlugin_PreFilter sub-case
  resource_list runtime;
  resource_list pod;
  bool disable_runtime_quota;
  admission_code code;
  std::string reason;
  friend void PrintTo(const prefilter_case& c, std::ostream* os) { *os << c.name; }
};

class PluginPreFilter : public ::testing::TestWithParam<prefilter_case> {};

// TestPlugin_PreFilter (plugin_test.go): only keys of the limit are compared, the pod request is
// masked to max's keys (gpu ignored).
TEST_P(PluginPreFilter, Status) {
  const auto& c = GetParam();
  elastic_quota_args args;
  args.enable_runtime_quota = !c.disable_runtime_quota;
  std::vector<quota_view> chain{default_quota_view(c.runtime)};
  auto r = pre_filter(chain, c.pod, false, args);
  EXPECT_EQ(r.code, c.code) << c.name;
  EXPECT_EQ(r.reason, c.reason) << c.name;
}

INSTANTIATE_TEST_SUITE_P(
    Golden, PluginPreFilter,
    ::testing::Values(
        prefilter_case{"default", res(0, 20), with_gpu(res(1, 2), 1), false,
                       admission_code::unschedulable,
                       "Insufficient quotas, quotaName: koordinator-default-quota, runtime: "
                       "cpu:0,memory:20, used: "
                       "<empty>, pod's request: cpu:1,memory:2, exceedDimensions: [cpu]"},
        prefilter_case{"valueNotEnough", res(1, 2), with_gpu(res(1, 3), 1), false,
                       admission_code::unschedulable,
                       "Insufficient quotas, quotaName: koordinator-default-quota, runtime: "
                       "cpu:1,memory:2, used: "
                       "<empty>, pod's request: cpu:1,memory:3, exceedDimensions: [memory]"},
        prefilter_case{"usedDimensionLargerThanRuntimeButValueIsEnough", res(10, 20),
                       with_gpu(res(1, 2), 1), false, admission_code::success, ""},
        prefilter_case{"runtimeNotEnoughButDisableRuntime", res(1, 2), with_gpu(res(1, 3), 1), true,
                       admission_code::success, ""}),
    [](const auto& info) { return info.param.name; });

// TestPlugin_PreFilter_CheckParent "parent reject": the child fits, its parent does not.
TEST(PluginPreFilterCheckParent, ParentReject) {
  elastic_quota_args args;
  args.enable_check_parent_quota = true;
  const resource_keys keys = key::cpu | key::memory | key::gpu;
  quota_view child{"test-child",           "test", {}, keys, with_gpu(res(10, 30), 10), keys,
                   with_gpu(res(1, 3), 1), keys,   {}, {}};
  quota_view parent{
      "test", kRoot, {}, keys, with_gpu(res(10, 30), 10), keys, with_gpu(res(1, 2), 1),
      keys,   {},    {}};
  std::vector<quota_view> chain{child, parent};
  const auto pod = with_gpu(res(1, 3), 1);
  auto r = check_quota_recursive(chain, {"test-child"}, pod, args);
  EXPECT_EQ(r.code, admission_code::unschedulable);
  EXPECT_EQ(r.quota, "test");
  EXPECT_EQ(r.exceed_dimensions, key::memory);
  EXPECT_EQ(r.reason,
            "Insufficient quotas, quotaNameTopo: [test test-child], runtime: "
            "cpu:1,memory:2,nvidia.com/gpu:1, used: "
            "<empty>, pod's request: cpu:1,memory:3,nvidia.com/gpu:1, exceedDimensions: [memory]");
  // PreFilter reaches the same verdict through the chain.
  auto pf = pre_filter(chain, pod, false, args);
  EXPECT_EQ(pf.code, admission_code::unschedulable);
  EXPECT_EQ(pf.quota, "test");
  args.enable_check_parent_quota = false;
  EXPECT_EQ(pre_filter(chain, pod, false, args).code, admission_code::success);
}

struct nonpreempt_pod {
  std::int64_t cpu, mem;
  bool non_preemptible;
};
struct nonpreempt_case {
  std::string name;  // TestPlugin_Prefilter_QuotaNonPreempt sub-case
  resource_list max, min, total;
  std::vector<nonpreempt_pod> assigned;
  nonpreempt_pod pod;
  admission_code code;
  std::string reason;
  friend void PrintTo(const nonpreempt_case& c, std::ostream* os) { *os << c.name; }
};

class PluginPrefilterQuotaNonPreempt : public ::testing::TestWithParam<nonpreempt_case> {};

// TestPlugin_Prefilter_QuotaNonPreempt: runtime computed by the tree, then PreFilter.
TEST_P(PluginPrefilterQuotaNonPreempt, Status) {
  const auto& c = GetParam();
  quota_tree t;
  t.set_cluster_total(c.total);
  quota_spec q;
  q.name = "test1";
  q.max = c.max;
  q.min = c.min;
  q.max_keys = q.min_keys = key::cpu | key::memory;
  ASSERT_TRUE(t.upsert_quota(q));
  int i = 0;
  for (const auto& p : c.assigned) {
    quota_pod pod{"ns/" + std::to_string(++i), "ns", "test1", res(p.cpu, p.mem)};
    pod.assigned = true;
    pod.non_preemptible = p.non_preemptible;
    ASSERT_TRUE(t.upsert_pod(pod));
  }
  quota_pod pending{"ns/new", "ns", "test1", res(c.pod.cpu, c.pod.mem)};
  pending.non_preemptible = c.pod.non_preemptible;
  ASSERT_TRUE(t.upsert_pod(pending));
  t.refresh();
  auto r = pre_filter(t, "test1", pending.request, pending.non_preemptible);
  EXPECT_EQ(r.code, c.code);
  EXPECT_EQ(r.reason, c.reason);
}

INSTANTIATE_TEST_SUITE_P(
    Golden, PluginPrefilterQuotaNonPreempt,
    ::testing::Values(
        nonpreempt_case{"default",
                        res(10, 10),
                        res(5, 5),
                        res(10, 10),
                        {{2, 1, false}, {1, 1, false}, {1, 1, false}},
                        {2, 2, true},
                        admission_code::success,
                        ""},
        nonpreempt_case{
            "nonPreemptiblePodUsedLargerThanMin",
            res(10, 8),
            res(5, 5),
            res(8, 5),
            {{2, 1, false}, {2, 1, true}, {2, 1, true}},
            {2, 2, true},
            admission_code::unschedulable,
            "Insufficient non-preemptible quotas, quotaName: test1, min: cpu:5,memory:5, "
            "nonPreemptibleUsed: cpu:4,memory:2, pod's request: cpu:2,memory:2, exceedDimensions: "
            "[cpu]"},
        nonpreempt_case{
            "nonPreemptiblePodWillNotBeEvicted",
            res(10, 8),
            res(5, 5),
            res(7, 5),
            {{2, 1, false}, {2, 1, false}, {2, 2, true}},
            {2, 1, true},
            admission_code::unschedulable,
            "Insufficient quotas, quotaName: test1, runtime: cpu:7,memory:5, used: cpu:6,memory:4, "
            "pod's request: cpu:2,memory:1, exceedDimensions: [cpu]"}),
    [](const auto& info) { return info.param.name; });

TEST(PluginPreFilter, SkipWithoutQuotaAndErrorForUnknownQuota) {
  quota_tree t;
  t.refresh();
  EXPECT_EQ(pre_filter(t, "", res(1, 1), false).code, admission_code::skip);
  EXPECT_EQ(pre_filter(t, "missing", res(1, 1), false).code, admission_code::error);
  // The default quota's runtime is its max: effectively unlimited.
  EXPECT_TRUE(pre_filter(t, kDefault, res(1'000'000, 1'000'000 * GigaByte), false).admitted());
}

TEST(PluginPreFilter, TreeChainChecksAncestorsWhenEnabled) {
  elastic_quota_args args;
  args.enable_check_parent_quota = true;
  quota_tree t(args);
  t.set_cluster_total(res(100, 100));
  add_quota(t, "parent", kRoot, 10, 100, 0, 0, true, true);
  add_quota(t, "child", "parent", 100, 100, 0, 0, true, false);
  quota_pod used{"ns/a", "ns", "child", res(8, 1)};
  used.assigned = true;
  ASSERT_TRUE(t.upsert_pod(used));
  add_request(t, "child", res(50, 1));
  t.refresh();
  auto r = pre_filter(t, "child", res(5, 1), false);
  EXPECT_EQ(r.code, admission_code::unschedulable);
  EXPECT_EQ(r.quota, "child");  // child's runtime is capped by parent's max 10
  EXPECT_EQ(r.exceed_dimensions, key::cpu);
}

// ---- preemption: preempt.go canPreempt / SelectVictimsOnNode ----------------------------------

struct can_preempt_case {
  std::string name;
  preemption_pod victim;
  bool disable_default_quota_preemption;
  bool expected;
  friend void PrintTo(const can_preempt_case& c, std::ostream* os) { *os << c.name; }
};

class PluginCanPreempt : public ::testing::TestWithParam<can_preempt_case> {};

TEST_P(PluginCanPreempt, Rule) {
  const auto& c = GetParam();
  elastic_quota_args args;
  args.disable_default_quota_preemption = c.disable_default_quota_preemption;
  preemption_pod pod{"p", "q", 10, 0, false, false, res(1, 1)};
  if (c.victim.quota == kDefault) pod.quota = kDefault;
  EXPECT_EQ(can_preempt(pod, c.victim, args), c.expected) << c.name;
}

INSTANTIATE_TEST_SUITE_P(
    Rules, PluginCanPreempt,
    ::testing::Values(
        can_preempt_case{"lowerPrioritySameQuota", {"v", "q", 5, 0, false, false, {}}, true, true},
        can_preempt_case{"nonPreemptibleVictim", {"v", "q", 5, 0, true, false, {}}, true, false},
        can_preempt_case{"samePriority", {"v", "q", 10, 0, false, false, {}}, true, false},
        can_preempt_case{"otherQuota", {"v", "other", 5, 0, false, false, {}}, true, false},
        can_preempt_case{
            "defaultQuotaProtected", {"v", kDefault, 5, 0, false, false, {}}, true, false},
        can_preempt_case{
            "defaultQuotaAllowed", {"v", kDefault, 5, 0, false, false, {}}, false, true}),
    [](const auto& info) { return info.param.name; });

// TestPlugin_canPreempt (preempt_test.go): the preemptor is "preemptor" (priority 10 unless
// noted), the victim "victim"; DisableDefaultQuotaPreemption keeps its default (true).
struct go_can_preempt_case {
  std::string name;
  std::int32_t pod_priority;
  std::string pod_quota;
  preemption_pod victim;
  bool want;
  friend void PrintTo(const go_can_preempt_case& c, std::ostream* os) { *os << c.name; }
};

class PluginCanPreemptGolden : public ::testing::TestWithParam<go_can_preempt_case> {};

TEST_P(PluginCanPreemptGolden, Rule) {
  const auto& c = GetParam();
  preemption_pod pod{"preemptor", c.pod_quota, c.pod_priority, 0, false, false, res(1, 1)};
  EXPECT_EQ(can_preempt(pod, c.victim, elastic_quota_args{}), c.want) << c.name;
}

INSTANTIATE_TEST_SUITE_P(
    Golden, PluginCanPreemptGolden,
    ::testing::Values(
        go_can_preempt_case{"victim_is_non_preemptible", 10, "q1",
                            preemption_pod{"victim", "q1", 5, 0, true, false, res(1, 1)}, false},
        // Neither pod has a quota label: both fall back to the default quota.
        go_can_preempt_case{
            "DisableDefaultQuotaPreemption_blocks_default_quota_victims", 10, kDefault,
            preemption_pod{"victim", kDefault, 5, 0, false, false, res(1, 1)}, false},
        go_can_preempt_case{"same_priority_cannot_preempt", 10, "q1",
                            preemption_pod{"victim", "q1", 10, 0, false, false, res(1, 1)}, false},
        go_can_preempt_case{"victim_priority_higher_cannot_preempt", 5, "q1",
                            preemption_pod{"victim", "q1", 15, 0, false, false, res(1, 1)}, false},
        go_can_preempt_case{"different_quota_names_cannot_preempt", 10, "q1",
                            preemption_pod{"victim", "q2", 5, 0, false, false, res(1, 1)}, false},
        go_can_preempt_case{"all_conditions_met_preempts", 10, "q1",
                            preemption_pod{"victim", "q1", 5, 0, false, false, res(1, 1)}, true}),
    [](const auto& info) { return info.param.name; });

// TestPlugin_PodEligibleToPreemptOthers (preempt_test.go): the preemptor has priority 10 and no
// quota label (the default quota); a terminating pod on node-1 has no label unless noted.
struct eligible_case {
  std::string name;
  preemptor_state state;
  bool node_known;
  std::vector<preemption_pod> terminating;
  bool want_eligible;
  std::string want_message;
  friend void PrintTo(const eligible_case& c, std::ostream* os) { *os << c.name; }
};

class PluginPodEligibleToPreemptOthers : public ::testing::TestWithParam<eligible_case> {};

TEST_P(PluginPodEligibleToPreemptOthers, Golden) {
  const auto& c = GetParam();
  const preemption_pod pod{"preemptor", kDefault, 10, 0, false, false, res(1, 1)};
  auto e = pod_eligible_to_preempt_others(pod, c.state, c.node_known, c.terminating);
  EXPECT_EQ(e.eligible, c.want_eligible) << c.name;
  EXPECT_EQ(e.message, c.want_message) << c.name;
}

INSTANTIATE_TEST_SUITE_P(
    Golden, PluginPodEligibleToPreemptOthers,
    ::testing::Values(
        eligible_case{"preemptionPolicy_Never_not_eligible",
                      {true, "", false},
                      false,
                      {},
                      false,
                      "not eligible due to preemptionPolicy=Never."},
        eligible_case{"no_nominated_node_always_eligible", {false, "", false}, false, {}, true, ""},
        eligible_case{"nominated_node_UnschedulableAndUnresolvable_eligible_to_try_again",
                      {false, "node-1", true},
                      true,
                      {},
                      true,
                      ""},
        eligible_case{
            "node_in_snapshot_but_no_pods_eligible", {false, "node-1", false}, true, {}, true, ""},
        eligible_case{"terminating_pod_on_node_same_quota_lower_priority_not_eligible",
                      {false, "node-1", false},
                      true,
                      {preemption_pod{"term-pod", kDefault, 5, 0, false, false, res(1, 1)}},
                      false,
                      "not eligible due to a terminating pod on the nominated node."},
        eligible_case{"terminating_pod_on_node_different_quota_eligible",
                      {false, "node-1", false},
                      true,
                      {preemption_pod{"term-pod", "other-quota", 5, 0, false, false, res(1, 1)}},
                      true,
                      ""},
        eligible_case{"terminating_pod_on_node_same_quota_higher_priority_eligible",
                      {false, "node-1", false},
                      true,
                      {preemption_pod{"term-pod", kDefault, 15, 0, false, false, res(1, 1)}},
                      true,
                      ""}),
    [](const auto& info) { return info.param.name; });

// TestPlugin_SelectVictimsOnNode (preempt_test.go): a preemptor of priority 10 asking 2 cores in
// quota svon-quota, one pod on the node, the quota's used 0 and usedLimit as the case says (the
// Go case's quota knows no pods, so removing/adding them leaves used at 0; here the victim's
// request is taken out and put back, which ends at the same used). The Go node has no
// resource filter, so every pod "fits": a large allocatable here.
struct go_select_case {
  std::string name;
  preemption_pod on_node;
  std::int64_t used_limit_cpu;
  std::size_t want_victims;
  int want_violating;
  bool want_feasible;  // false = UnschedulableAndUnresolvable
  friend void PrintTo(const go_select_case& c, std::ostream* os) { *os << c.name; }
};

class PluginSelectVictimsOnNodeGolden : public ::testing::TestWithParam<go_select_case> {};

TEST_P(PluginSelectVictimsOnNodeGolden, Victims) {
  const auto& c = GetParam();
  const std::string q = "svon-quota";
  const preemption_pod preemptor{"preemptor", q, 10, 0, false, false, res(2, 0)};
  quota_view view{q,
                  kRoot,
                  {},
                  key::cpu | key::memory,
                  res(1000, 0),
                  key::cpu | key::memory,
                  res(c.used_limit_cpu, 0),
                  key::cpu | key::memory,
                  res(0, 0),
                  {}};
  const std::vector<preemption_pod> node_pods{c.on_node};
  auto r = select_victims_on_node(preemptor, "test-select-node", node_pods, res(1000, 1000), view,
                                  elastic_quota_args{});
  EXPECT_EQ(r.feasible, c.want_feasible) << c.name;
  EXPECT_EQ(r.victims.size(), c.want_victims) << c.name;
  EXPECT_EQ(r.num_pdb_violating, c.want_violating) << c.name;
  if (!c.want_feasible) {
    EXPECT_EQ(r.reason, "No victims found on node test-select-node for preemptor pod preemptor");
  }
}

INSTANTIATE_TEST_SUITE_P(
    Golden, PluginSelectVictimsOnNodeGolden,
    ::testing::Values(
        go_select_case{"no_potential_victims_all_pods_have_higher_priority",
                       preemption_pod{"high-pri", "svon-quota", 20, 0, false, false, res(1, 0)},
                       100, 0, 0, false},
        go_select_case{"victims_found_quota_fits_all_reprieved_no_actual_victims",
                       preemption_pod{"low-pri", "svon-quota", 5, 0, false, false, res(1, 0)}, 100,
                       0, 0, true},
        // numViolatingVictim only counts filter failures, not quota-limit evictions.
        go_select_case{"victims_found_quota_exceeded_victim_becomes_actual_victim",
                       preemption_pod{"low-pri", "svon-quota", 5, 0, false, false, res(1, 0)}, 1, 1,
                       0, true},
        go_select_case{
            "non_preemptible_pod_on_node_skipped_as_victim",
            preemption_pod{"non-preemptible", "svon-quota", 5, 0, true, false, res(1, 0)}, 1, 0, 0,
            false}),
    [](const auto& info) { return info.param.name; });

TEST(PluginSelectVictimsOnNode, ReprievesWhileNodeAndQuotaFit) {
  elastic_quota_args args;
  std::vector<preemption_pod> node_pods{
      {"v1", "q", 1, 0, false, false, res(4, 0)},
      {"v2", "q", 2, 0, false, false, res(4, 0)},
      {"other", "o", 0, 0, false, false, res(2, 0)},
  };
  quota_view q{"q",
               kRoot,
               {},
               key::cpu | key::memory,
               res(100, 100),
               key::cpu | key::memory,
               res(8, 100),
               key::cpu | key::memory,
               res(8, 0),
               {}};
  preemption_pod pod{"p", "q", 10, 0, false, false, res(4, 0)};
  auto r = select_victims_on_node(pod, "n1", node_pods, res(10, 100), q, args);
  EXPECT_TRUE(r.feasible);
  EXPECT_EQ(r.victims, (std::vector<std::string>{"v1"}));  // v2 (more important) is reprieved

  // A tighter quota runtime evicts v2 as well: used + request must stay within runtime.
  q.runtime = res(4, 100);
  r = select_victims_on_node(pod, "n1", node_pods, res(100, 100), q, args);
  EXPECT_EQ(r.victims, (std::vector<std::string>{"v2", "v1"}));

  preemption_pod high{"h", "other-quota", 10, 0, false, false, res(4, 0)};
  r = select_victims_on_node(high, "n1", node_pods, res(10, 100), q, args);
  EXPECT_FALSE(r.feasible);
  EXPECT_EQ(r.reason, "No victims found on node n1 for preemptor pod h");
}

// plugin.go RemovePod / AddPod: a victim changes the quota's used only when the quota books it
// (IsPodExist), and removal stops at 0 (SubtractWithNonNegativeResult).
TEST(PluginSelectVictimsOnNode, UsedMovesOnlyForBookedVictimsAndStopsAtZero) {
  elastic_quota_args args;
  auto view = [](std::int64_t used_cpu, std::int64_t runtime_cpu) {
    return quota_view{"q",
                      kRoot,
                      {},
                      key::cpu,
                      res(100, 0),
                      key::cpu,
                      res(runtime_cpu, 0),
                      key::cpu,
                      res(used_cpu, 0),
                      {}};
  };
  const preemption_pod pod{"p", "q", 10, 0, false, false, res(4, 0)};
  // used 2 although the victims ask 4: removing both leaves 0, not -2, so only v1 is reprieved.
  std::vector<preemption_pod> both{{"v1", "q", 1, 0, false, false, res(2, 0)},
                                   {"v2", "q", 1, 0, false, false, res(2, 0)}};
  auto r = select_victims_on_node(pod, "n", both, res(100, 100), view(2, 6), args);
  EXPECT_EQ(r.victims, (std::vector<std::string>{"v2"}));
  // v2 is on the node but not booked in the quota: it neither frees nor takes quota.
  std::vector<preemption_pod> one_booked{{"v1", "q", 1, 0, false, false, res(4, 0)},
                                         {"v2", "q", 1, 0, false, false, res(4, 0)}};
  one_booked[1].booked = false;
  r = select_victims_on_node(pod, "n", one_booked, res(100, 100), view(4, 6), args);
  EXPECT_EQ(r.victims, (std::vector<std::string>{"v1"}));
  one_booked[1].booked = true;
  r = select_victims_on_node(pod, "n", one_booked, res(100, 100), view(4, 6), args);
  EXPECT_EQ(r.victims, (std::vector<std::string>{"v1", "v2"}));  // reprieve order
}

// ---- revocation: quota_overuse_revoke_test.go
// -----------------------------------------------------

revoke_pod rpod(std::string name, std::int32_t pri, std::int64_t cpu, std::int64_t mem,
                bool np = false) {
  // createResourceList always carries both keys, even at zero.
  return revoke_pod{std::move(name), pri, 0, np, res(cpu, mem), key::cpu | key::memory};
}

// TestQuotaOverUsedRevokeController_GetToRevokePodList.
TEST(QuotaOverUsedRevokeController, GetToRevokePodList) {
  const resource_keys keys = key::cpu | key::memory;
  std::vector<revoke_pod> pods{rpod("1", 10, 20, 0), rpod("2", 9, 10, 1), rpod("3", 8, 20, 0),
                               rpod("4", 7, 40, 0)};
  const resource_list used = res(90, 1);
  auto r = get_to_revoke_pod_list(used, keys, res(50, 0), keys, pods);
  EXPECT_EQ(r, (std::vector<std::string>{"2", "4"}));

  r = get_to_revoke_pod_list(used, keys, res(-1, 0), keys, pods);
  EXPECT_EQ(r.size(), 4u);

  pods.pop_back();  // pod 4 no longer assigned
  r = get_to_revoke_pod_list(res(50, 1), keys, res(-1, 0), keys, pods);
  EXPECT_EQ(r.size(), 3u);

  // Non-preemptible pods are never revoked.
  std::vector<revoke_pod> np{rpod("a", 1, 10, 0, true), rpod("b", 2, 10, 0)};
  r = get_to_revoke_pod_list(res(20, 0), keys, res(5, 0), keys, np);
  EXPECT_EQ(r, (std::vector<std::string>{"b"}));
}

// TestQuotaOverUsedGroupMonitor_Monitor: over-use must last longer than delayEvictTime.
TEST(QuotaOverUsedGroupMonitor, Monitor) {
  const resource_keys keys = key::cpu | key::memory;
  over_used_monitor m{0};
  const auto runtime = res(10, 10);
  EXPECT_FALSE(m.monitor(1'000, res(5, 5), keys, runtime, keys, 120'000));
  EXPECT_FALSE(m.monitor(2'000, res(11, 5), keys, runtime, keys, 120'000));    // over for 1 s
  EXPECT_FALSE(m.monitor(100'000, res(11, 5), keys, runtime, keys, 120'000));  // over for 99 s
  EXPECT_TRUE(m.monitor(122'000, res(11, 5), keys, runtime, keys, 120'000));   // over for 121 s
  EXPECT_FALSE(m.monitor(123'000, res(11, 5), keys, runtime, keys, 120'000));  // clock restarted
  EXPECT_FALSE(m.monitor(124'000, res(5, 5), keys, runtime, keys, 0));
  EXPECT_TRUE(m.monitor(124'001, res(11, 5), keys, runtime, keys, 0));
}

TEST(QuotaOverUsedRevokeController, RevokeStepOverTree) {
  elastic_quota_args args;
  args.monitor_all_quotas = true;
  args.delay_evict_time_ms = 0;
  quota_tree t(args);
  t.set_cluster_total(res(10, 100));
  add_quota(t, "q", kRoot, 100, 100, 0, 0, true, false);
  for (int i = 0; i < 3; ++i) {
    quota_pod p{"ns/p" + std::to_string(i), "ns", "q", res(5, 1)};
    p.assigned = true;
    p.priority = i;
    ASSERT_TRUE(t.upsert_pod(p));
  }
  t.refresh();  // used 15 > runtime 10
  revoke_controller_state state;
  EXPECT_TRUE(revoke_step(t, state, 1'000).empty());  // monitor starts: not over "for long" yet
  auto d = revoke_step(t, state, 1'001);
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].pod, "ns/p0");  // least important
  EXPECT_EQ(d[0].quota, "q");

  args.monitor_all_quotas = false;
  quota_tree off(args);
  revoke_controller_state s2;
  EXPECT_TRUE(revoke_step(off, s2, 5'000).empty());
}

}  // namespace
}  // namespace colony::quota
