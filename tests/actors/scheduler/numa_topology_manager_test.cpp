// The NUMA topology manager and NodeNUMAResource's NUMA policies: Koordinator's
// frameworkext/topologymanager policy_test.go (commonPolicyMergeTestCases under the three
// policies, the Restricted and SingleNUMANode cases with their reasons, Test_checkExclusivePolicy),
// plugin_test.go TestFilterWithNUMANodeScoring, then the resource split and a node's NUMA
// accounting through whole cycles.
#include <gtest/gtest.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "actors/scheduler/node_numa_resource.hpp"
#include "actors/scheduler/numa/numa_resources.hpp"
#include "actors/scheduler/numa/topology_manager.hpp"

namespace colony::scheduler::numa {
namespace {

numa_hint h(std::initializer_list<int> ids, bool preferred) {
  std::vector<int> v(ids);
  return numa_hint{numa_mask(v), false, preferred, 0};
}
numa_hint none_hint(bool preferred) { return numa_hint{std::nullopt, false, preferred, 0}; }

struct merge_case {
  const char* name;
  std::vector<provider_hints> providers;
  numa_hint expected;
  std::vector<std::string> reasons;  // checked for Restricted and SingleNUMANode
};

std::vector<merge_case> common_cases() {
  return {
      {"Two providers, 1 hint each, same mask, both preferred 1/2",
       {{{"resource1", std::vector{h({0}, true)}}}, {{"resource2", std::vector{h({0}, true)}}}},
       h({0}, true),
       {}},
      {"Two providers, 1 hint each, same mask, both preferred 2/2",
       {{{"resource1", std::vector{h({1}, true)}}}, {{"resource2", std::vector{h({1}, true)}}}},
       h({1}, true),
       {}},
      {"Two providers, 1 no hints, 1 single hint preferred 1/2",
       {{}, {{"resource", std::vector{h({0}, true)}}}},
       h({0}, true),
       {}},
      {"Two providers, 1 no hints, 1 single hint preferred 2/2",
       {{}, {{"resource", std::vector{h({1}, true)}}}},
       h({1}, true),
       {}},
      {"Two providers, 1 with 2 hints, 1 with single hint matching 1/2",
       {{{"resource1", std::vector{h({0}, true), h({1}, true)}}},
        {{"resource2", std::vector{h({0}, true)}}}},
       h({0}, true),
       {}},
      {"Two providers, 1 with 2 hints, 1 with single hint matching 2/2",
       {{{"resource1", std::vector{h({0}, true), h({1}, true)}}},
        {{"resource2", std::vector{h({1}, true)}}}},
       h({1}, true),
       {}},
      {"Two providers, both with 2 hints, matching narrower preferred hint from both",
       {{{"resource1", std::vector{h({0}, true), h({1}, true)}}},
        {{"resource2", std::vector{h({0}, true), h({0, 1}, false)}}}},
       h({0}, true),
       {}},
      {"Ensure less narrow preferred hints are chosen over narrower non-preferred hints",
       {{{"resource1", std::vector{h({1}, true), h({0, 1}, false)}}},
        {{"resource2", std::vector{h({0}, true), h({1}, true), h({0, 1}, false)}}}},
       h({1}, true),
       {}},
      {"Multiple resources, same provider",
       {{{"resource1", std::vector{h({1}, true), h({0, 1}, false)}},
         {"resource2", std::vector{h({0}, true), h({1}, true), h({0, 1}, false)}}}},
       h({1}, true),
       {}},
  };
}

void check(numa_topology_policy policy, const std::vector<int>& nodes,
           const std::vector<merge_case>& cases, bool check_reasons) {
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    auto r = merge_numa_hints(policy, nodes, c.providers, numa_topology_exclusive::preferred, {});
    EXPECT_EQ(r.best.affinity, c.expected.affinity);
    EXPECT_EQ(r.best.preferred, c.expected.preferred);
    if (check_reasons) EXPECT_EQ(r.reasons, c.reasons);
  }
}

TEST(NUMATopologyManager, KoordinatorTestPolicyBestEffortMergeCommonCases) {
  check(numa_topology_policy::best_effort, {0, 1, 2, 3}, common_cases(), false);
}

TEST(NUMATopologyManager, KoordinatorTestPolicyRestrictedMerge) {
  const std::vector<int> nodes = {0, 1, 2, 3};
  auto cases = common_cases();
  const auto all = h({0, 1, 2, 3}, true);
  auto all_not = all;
  all_not.preferred = false;
  const std::vector<merge_case> own = {
      {"Two providers, 2 hints each, same mask (some with different bits), same preferred",
       {{{"resource1", std::vector{h({0, 1}, true), h({0, 2}, true)}}},
        {{"resource2", std::vector{h({0, 1}, true), h({0, 2}, true)}}}},
       h({0, 1}, true),
       {}},
      {"NUMATopologyHint not set", {}, all, {}},
      {"NUMATopologyHintProvider returns empty non-nil map[string][]NUMATopologyHint",
       {{}},
       all,
       {}},
      {"NUMATopologyHintProvider returns -nil map[string][]NUMATopologyHint from provider",
       {{{"resource", std::nullopt}}},
       all,
       {}},
      {"NUMATopologyHintProvider returns empty non-nil map[string][]NUMATopologyHint from provider",
       {{{"resource", std::vector<numa_hint>{}}}},
       all_not,
       {"Unsatisfied NUMA resource"}},
      {"Single NUMATopologyHint with Preferred as true and NUMANodeAffinity as nil",
       {{{"resource", std::vector{none_hint(true)}}}},
       all,
       {}},
      {"Single NUMATopologyHint with Preferred as false and NUMANodeAffinity as nil",
       {{{"resource", std::vector{none_hint(false)}}}},
       all_not,
       {"Unaligned NUMA Hint cause resource prefer [] among [<nil>]"}},
  };
  cases.insert(cases.end(), own.begin(), own.end());
  check(numa_topology_policy::restricted, nodes, cases, true);
}

TEST(NUMATopologyManager, KoordinatorTestPolicySingleNumaNodeMerge) {
  const std::vector<int> nodes = {0, 1};
  auto cases = common_cases();
  const std::vector<merge_case> own = {
      {"Single NUMA hint generation",
       {{{"resource1", std::vector{h({0, 1}, true)}},
         {"resource2", std::vector{h({0}, true), h({1}, true), h({0, 1}, false)}}}},
       none_hint(false),
       {"Unaligned NUMA Hint cause resource1 prefer [11] among [11],resource2 prefer [01 10] among "
        "[01 10 11]"}},
      {"One no-preference provider",
       {{{"resource1", std::vector{h({0}, true), h({1}, true), h({0, 1}, false)}}}, {}},
       h({0}, true),
       {}},
  };
  cases.insert(cases.end(), own.begin(), own.end());
  check(numa_topology_policy::single_numa_node, nodes, cases, true);
}

TEST(NUMATopologyManager, KoordinatorTestCheckExclusivePolicy) {
  using S = numa_node_status;
  using E = numa_topology_exclusive;
  struct row {
    const char* name;
    numa_hint hint;
    E exclusive;
    std::vector<S> status;
    bool want;
  };
  const std::vector<row> rows = {
      {"preferred policy 1", h({0}, true), E::preferred, {S::shared, S::shared}, true},
      {"preferred policy 2", h({0, 1}, true), E::preferred, {S::shared, S::shared}, true},
      {"preferred policy 3", h({0}, true), E::preferred, {S::idle, S::single}, true},
      {"preferred policy 4", h({0, 1}, true), E::preferred, {S::idle, S::single}, true},
      {"required policy 1", h({0}, true), E::required, {S::idle, S::single}, true},
      {"required policy 2", h({0}, true), E::required, {S::shared, S::single}, false},
      {"required policy 3", h({0}, true), E::required, {S::shared, S::shared}, false},
      {"required policy 4", h({0}, true), E::required, {S::single, S::shared}, true},
      {"required policy 5", h({0, 1}, true), E::required, {S::shared, S::single}, false},
      {"required policy 6", h({0, 1}, true), E::required, {S::shared, S::idle}, true},
      {"required policy 7", h({0, 1}, true), E::required, {S::shared, S::shared}, true},
  };
  for (const auto& r : rows) {
    SCOPED_TRACE(r.name);
    EXPECT_EQ(check_exclusive_policy(r.hint, r.exclusive, r.status), r.want);
  }
  EXPECT_FALSE(check_exclusive_policy(none_hint(true), E::preferred, {}));
}

TEST(NUMATopologyManager, MasksTextAndOrder) {
  EXPECT_EQ(numa_mask_string(1), "01");
  EXPECT_EQ(numa_mask_string(2), "10");
  EXPECT_EQ(numa_mask_string(3), "11");
  EXPECT_EQ(numa_mask_string(4), "100");  // bitMask.String: "> 1<<2" is strict
  EXPECT_EQ(numa_mask_string(5), "0101");
  // IterateBitMasks: singles, then pairs, ... in id order.
  const std::vector<int> ids = {0, 1, 2};
  EXPECT_EQ(numa_masks_of(ids), (std::vector<std::uint64_t>{1, 2, 4, 3, 5, 6, 7}));
  EXPECT_TRUE(numa_mask_narrower(1, 3));
  EXPECT_TRUE(numa_mask_narrower(1, 2));
  EXPECT_FALSE(numa_mask_narrower(2, 1));
}

// tryBestToDistributeEvenly: even shares over the hint's NUMA nodes, the emptier ones first;
// what does not fit is named.
TEST(NUMAResources, DistributeEvenly) {
  const std::vector<numa_amount> alloc = {{0, 26'000, 64 << 20}, {1, 26'000, 64 << 20}};
  const std::vector<numa_amount> avail = {{0, 26'000, 64 << 20}, {1, 10'000, 64 << 20}};
  const std::vector<int> both = {0, 1};
  numa_split_options plain;
  auto r = distribute_evenly({16'000, 32 << 20}, alloc, avail, both, plain);
  ASSERT_TRUE(r.has_value()) << r.error().message;
  // cpu: NUMA 1 (10 cpu free) is sorted first, takes 8 of 16; NUMA 0 the other 8.
  EXPECT_EQ(*r, (std::vector<numa_amount>{{0, 8'000, 16 << 20}, {1, 8'000, 16 << 20}}));
  r = distribute_evenly({30'000, 0}, alloc, avail, both, plain);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(*r, (std::vector<numa_amount>{{0, 20'000, 0}, {1, 10'000, 0}}));
  r = distribute_evenly({40'000, 0}, alloc, avail, both, plain);
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().message, "Insufficient NUMA cpu");
  // A cpuset under required FullPCPUs splits whole cores: 6 CPUs on two threads a core over two
  // nodes is 2 + 4 (per node 3 cores / 2 = 1 core first).
  numa_split_options full{true, true, cpu_bind_policy::full_pcpus, 2};
  r = distribute_evenly({6'000, 0}, alloc, avail, both, full);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(*r, (std::vector<numa_amount>{{0, 4'000, 0}, {1, 2'000, 0}}));
}

}  // namespace
}  // namespace colony::scheduler::numa

namespace colony::scheduler {
namespace {

// A node of `numa_nodes` NUMA nodes sharing 104 cpu and 256Gi evenly, with Koordinator's test
// CPU topology (buildCPUTopologyForTest(n, 1, cores, 2)), labelled with a NUMA policy.
node_info numa_node(int numa_nodes, std::string_view policy) {
  node_info n;
  n.name = "test-node-1";
  n.allocatable.cpu_milli = 104'000;
  n.allocatable.memory_bytes = std::int64_t{256} << 30;
  n.allocatable.pods = 110;
  auto o = std::make_shared<numa::topology_options>();
  const int cores = 104 / 2 / numa_nodes;
  o->topology = numa::build_cpu_topology_for_test(numa_nodes, 1, cores, 2);
  for (int i = 0; i < numa_nodes; ++i)
    o->numa_node_cpus.push_back({i, 104'000 / numa_nodes, (std::int64_t{256} << 30) / numa_nodes});
  n.numa.set_options(std::move(o));
  std::vector<std::pair<std::string, std::string>> labels = {
      {std::string(names::label_numa_topology_policy), std::string(policy)}};
  (void)n.numa.set_labels(labels);
  return n;
}

TEST(NodeNUMAResourceNUMAPolicies, KoordinatorTestFilterWithNUMANodeScoring) {
  const std::int64_t gi = std::int64_t{1} << 30;
  struct row {
    const char* name;
    int numa_nodes;
    std::string_view policy;
    std::vector<std::pair<int, std::int64_t>> existing;  // NUMA node, cpu (each with 8Gi)
    scoring_strategy_type strategy;
    int want;
  };
  const auto most = scoring_strategy_type::most_allocated;
  const auto least = scoring_strategy_type::least_allocated;
  const std::vector<row> rows = {
      {"single numa nodes and select most allocated",
       2,
       "SingleNUMANode",
       {{0, 4'000}, {1, 40'000}},
       most,
       1},
      {"single numa nodes and select least allocated",
       2,
       "SingleNUMANode",
       {{0, 4'000}, {1, 40'000}},
       least,
       0},
      {"single numa nodes and only one node can be used",
       2,
       "SingleNUMANode",
       {{0, 4'000}, {1, 52'000}},
       least,
       0},
      {"restricted numa nodes and select most allocated and preferred",
       4,
       "Restricted",
       {{0, 24'000}, {1, 23'000}, {2, 4'000}, {3, 8'000}},
       most,
       3},
      {"restricted numa nodes and select least allocated and preferred",
       4,
       "Restricted",
       {{0, 24'000}, {1, 23'000}, {2, 4'000}, {3, 8'000}},
       least,
       2},
  };
  for (const auto& r : rows) {
    SCOPED_TRACE(r.name);
    node_numa_resource_args args;
    args.numa_scoring_strategy = r.strategy;
    node_numa_resource plugin(args);
    node_info node = numa_node(r.numa_nodes, r.policy);
    int k = 0;
    for (const auto& [id, cpu] : r.existing)
      node.numa.add_numa("existing-" + std::to_string(k++), {{id, cpu, 8 * gi}});
    pod_info pod;
    pod.key = "default/p";
    pod.requests.cpu_milli = 4'000;
    pod.requests.memory_bytes = 40 * gi;
    auto s = numa_pre_filter(pod, numa::cpu_bind_policy::full_pcpus);
    ASSERT_TRUE(s.has_value());
    EXPECT_TRUE(plugin.filter_with(*s, pod, node).ok());
    numa::numa_hint best;
    ASSERT_TRUE(plugin.admit(*s, node, node.numa.topology_policy, best).ok());
    ASSERT_TRUE(best.affinity.has_value());
    EXPECT_EQ(*best.affinity, std::uint64_t{1} << r.want);
  }
}

// Through whole cycles: an LS pod on a SingleNUMANode node gets its cpu and memory on one NUMA
// node; the node holds them; a pod that no single NUMA node can hold is refused with
// Koordinator's reason; forgetting a pod gives its NUMA resources back.
TEST(NodeNUMAResourceNUMAPolicies, SingleNUMANodeCyclesHoldAndReleaseNUMAResources) {
  const std::int64_t gi = std::int64_t{1} << 30;
  framework fwk;
  fwk.add(std::make_shared<node_numa_resource>());
  std::vector<node_info> nodes = {numa_node(2, "SingleNUMANode")};
  cycle_state st;
  auto pod = [&](const char* key, std::int64_t cpu, std::int64_t mem) {
    pod_info p;
    p.key = key;
    p.requests.cpu_milli = cpu;
    p.requests.memory_bytes = mem;
    return p;
  };
  const auto a = pod("default/a", 40'000, 10 * gi);
  auto da = fwk.run_cycle(st, a, nodes, event_time{1});
  ASSERT_EQ(da.result, outcome::scheduled) << da.message;
  ASSERT_EQ(da.numa_resources.size(), 1u);
  EXPECT_EQ(da.numa_resources[0].cpu_milli, 40'000);
  EXPECT_EQ(da.numa_resources[0].memory_bytes, 10 * gi);
  EXPECT_TRUE(da.cpuset.empty());  // an LS pod gets no cpuset
  assume_pod(nodes[0], a, da, event_time{1});
  const int first = da.numa_resources[0].node;
  // 40 cpu more fit only on the other NUMA node (52 each).
  const auto b = pod("default/b", 40'000, 10 * gi);
  auto db = fwk.run_cycle(st, b, nodes, event_time{2});
  ASSERT_EQ(db.result, outcome::scheduled) << db.message;
  ASSERT_EQ(db.numa_resources.size(), 1u);
  EXPECT_NE(db.numa_resources[0].node, first);
  assume_pod(nodes[0], b, db, event_time{2});
  // 20 cpu: 12 free on each NUMA node, 24 on the node: no single NUMA node holds it.
  const auto c = pod("default/c", 20'000, gi);
  auto dc = fwk.run_cycle(st, c, nodes, event_time{3});
  EXPECT_EQ(dc.result, outcome::unschedulable);
  ASSERT_FALSE(dc.failures.empty());
  // Only both NUMA nodes together hold it: that hint is the narrowest, so preferred, and
  // SingleNUMANode drops it.
  EXPECT_EQ(dc.failures[0].reason,
            "Unaligned NUMA Hint cause cpu prefer [11] among [11],memory prefer [11] among [11]");
  // a leaves: its NUMA node has room again.
  ASSERT_TRUE(forget_pod(nodes[0], "default/a"));
  auto dc2 = fwk.run_cycle(st, c, nodes, event_time{4});
  ASSERT_EQ(dc2.result, outcome::scheduled) << dc2.message;
  EXPECT_EQ(dc2.numa_resources[0].node, first);
}

// An LSR pod on a Restricted node: its cpuset comes from the NUMA node its NUMA resources are on.
TEST(NodeNUMAResourceNUMAPolicies, RestrictedCpusetFollowsTheNUMAAllocation) {
  framework fwk;
  fwk.add(std::make_shared<node_numa_resource>());
  std::vector<node_info> nodes = {numa_node(2, "Restricted")};
  // NUMA node 0 is busier: the least-allocated NUMA strategy puts the pod on 1.
  nodes[0].numa.add_numa("busy", {{0, 30'000, 0}});
  pod_info p;
  p.key = "default/lsr";
  p.qos_label = qos_class::lsr;
  p.priority_class_label = priority_class::prod;
  p.priority = 9000;
  p.requests.cpu_milli = 8'000;
  p.requests.memory_bytes = std::int64_t{1} << 30;
  cycle_state st;
  auto d = fwk.run_cycle(st, p, nodes, event_time{1});
  ASSERT_EQ(d.result, outcome::scheduled) << d.message;
  ASSERT_EQ(d.numa_resources.size(), 1u);
  EXPECT_EQ(d.numa_resources[0].node, 1);
  EXPECT_EQ(d.cpuset.size(), 8);
  EXPECT_EQ(d.cpuset.intersection(nodes[0].numa.topology()->cpus_in_numa_node(1)).size(), 8)
      << d.cpuset.to_string();
}

}  // namespace
}  // namespace colony::scheduler
