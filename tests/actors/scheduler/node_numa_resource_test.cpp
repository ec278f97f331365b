// NodeNUMAResource as a framework plugin: Koordinator's plugin_test.go TestPlugin_Filter,
// TestPlugin_Reserve and scoring_test.go TestPlugin_Score rows of the NUMA topology policy None
// (the rows that need NUMA hints, reservations or designated allocations are the topology
// manager's and the Reservation plugin's, not modelled yet), then the plugin through a whole
// scheduling cycle and assume_pod / forget_pod.
#include <gtest/gtest.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "actors/scheduler/node_numa_resource.hpp"
#include "actors/scheduler/numa/cpu_topology.hpp"

namespace colony::scheduler {
namespace {

using numa::cpu_bind_policy;
using numa::cpu_set;

// The node Koordinator's tests use: test-node-1, 96 cpus (or the topology's CPUs for Score),
// 512Gi memory, the given labels, topology and kubelet policy.
node_info test_node(const std::optional<numa::cpu_topology>& topo, const numa::label_map& labels,
                    std::optional<numa::kubelet_cpu_manager_policy> kubelet = std::nullopt,
                    std::int64_t cpu_milli = 96'000) {
  node_info n;
  n.name = "test-node-1";
  n.allocatable.cpu_milli = cpu_milli;
  n.allocatable.memory_bytes = std::int64_t{512} << 30;
  n.allocatable.pods = 110;
  if (topo || kubelet) {
    auto o = std::make_shared<numa::topology_options>();
    if (topo) o->topology = *topo;
    o->policy = kubelet;
    n.numa.set_options(std::move(o));
  }
  std::vector<std::pair<std::string, std::string>> all(labels.begin(), labels.end());
  (void)n.numa.set_labels(all);
  n.numa.refresh();
  return n;
}

numa_pre_filter_state state(bool bind, int cpus, cpu_bind_policy required = cpu_bind_policy::unset,
                            cpu_bind_policy preferred = cpu_bind_policy::unset,
                            std::int64_t requested_milli = -1) {
  numa_pre_filter_state s;
  s.skip = false;
  s.request_cpu_bind = bind;
  s.num_cpus_needed = cpus;
  s.required_cpu_bind_policy = required;
  s.preferred_cpu_bind_policy = preferred;
  s.requested_milli_cpu = requested_milli >= 0 ? requested_milli : std::int64_t{cpus} * 1000;
  return s;
}

const std::string bind_label(names::label_node_cpu_bind_policy);
const std::string numa_label(names::label_numa_topology_policy);
const std::string strategy_label(names::label_node_numa_allocate_strategy);

numa::kubelet_cpu_manager_policy static_full_pcpus_only() {
  numa::kubelet_cpu_manager_policy k;
  k.policy = "static";
  k.options["full-pcpus-only"] = "true";
  return k;
}

struct filter_case {
  const char* name;  // the Go case
  numa::label_map labels;
  std::optional<numa::kubelet_cpu_manager_policy> kubelet;
  bool valid_topology;
  numa_pre_filter_state st;
  status_code want;
  std::string_view reason;
};

TEST(NodeNUMAResourceFilter, KoordinatorTestPluginFilterPolicyNoneRows) {
  using enum cpu_bind_policy;
  const auto ok = status_code::success;
  const auto unres = status_code::unschedulable_and_unresolvable;
  const std::vector<filter_case> cases = {
      {"error with invalid cpu topology",
       {},
       {},
       false,
       state(true, 0),
       unres,
       err_invalid_cpu_topology},
      {"succeed with valid cpu topology", {}, {}, true, state(true, 0), ok, {}},
      {"succeed with skip", {}, {}, false, state(false, 0), ok, {}},
      {"failed to verify Node FullPCPUsOnly with SMTAlignmentError",
       {{bind_label, "FullPCPUsOnly"}},
       {},
       true,
       state(true, 5, unset, full_pcpus),
       unres,
       err_smt_alignment},
      {"LS Pod failed to verify Node FullPCPUsOnly with SMTAlignmentError",
       {{bind_label, "FullPCPUsOnly"}},
       {},
       true,
       state(false, 5),
       unres,
       err_smt_alignment},
      {"LS Pod failed to verify Node FullPCPUsOnly with non-integer request",
       {{bind_label, "FullPCPUsOnly"}},
       {},
       true,
       state(false, 5, unset, unset, 5200),
       unres,
       numa::err_invalid_requested_cpus},
      {"verify Node FullPCPUsOnly",
       {{bind_label, "FullPCPUsOnly"}},
       {},
       true,
       state(true, 4, unset, full_pcpus),
       ok,
       {}},
      {"failed to verify required FullPCPUs SMTAlignmentError",
       {},
       {},
       true,
       state(true, 5, full_pcpus),
       unres,
       err_smt_alignment},
      {"verify required FullPCPUs", {}, {}, true, state(true, 4, full_pcpus), ok, {}},
      {"verify FullPCPUsOnly with preferred SpreadByPCPUs",
       {{bind_label, "FullPCPUsOnly"}},
       {},
       true,
       state(true, 4, unset, spread_by_pcpus),
       ok,
       {}},
      {"failed to verify FullPCPUsOnly with required SpreadByPCPUs",
       {{bind_label, "SpreadByPCPUs"}},
       {},
       true,
       state(true, 4, full_pcpus),
       unres,
       err_cpu_bind_policy_conflict},
      {"verify FullPCPUsOnly with required FullPCPUs",
       {{bind_label, "FullPCPUsOnly"}},
       {},
       true,
       state(true, 4, full_pcpus),
       ok,
       {}},
      {"verify Kubelet FullPCPUsOnly with SMTAlignmentError",
       {},
       static_full_pcpus_only(),
       true,
       state(true, 5, unset, full_pcpus),
       unres,
       err_smt_alignment},
      {"verify Kubelet FullPCPUsOnly with required SpreadByPCPUs",
       {},
       static_full_pcpus_only(),
       true,
       state(true, 4, spread_by_pcpus),
       unres,
       err_cpu_bind_policy_conflict},
      {"verify Kubelet FullPCPUsOnly with required FullPCPUs",
       {},
       static_full_pcpus_only(),
       true,
       state(true, 4, full_pcpus),
       ok,
       {}},
      {"verify required FullPCPUs with none NUMA topology policy",
       {},
       {},
       true,
       state(true, 4, full_pcpus, full_pcpus),
       ok,
       {}},
      {"verify FullPCPUs with None NUMA Topology Policy and amplification ratio",
       {{numa_label, ""}},
       {},
       true,
       state(true, 4, full_pcpus, full_pcpus),
       ok,
       {}},
  };
  node_numa_resource plugin;
  int checked = 0;
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    node_info node =
        test_node(c.valid_topology ? std::optional(numa::build_cpu_topology_for_test(2, 1, 4, 2))
                                   : std::optional<numa::cpu_topology>(),
                  c.labels, c.kubelet);
    if (!c.valid_topology && c.st.request_cpu_bind) {
      // Koordinator's case passes an empty CPUTopology: options without CPUs.
      node.numa.set_options(std::make_shared<numa::topology_options>());
    }
    if (std::string(c.name).find("amplification") != std::string::npos)
      node.numa.cpu_amplification_ratio = 1.5;
    pod_info pod;
    pod.key = "default/test";
    pod.requests.cpu_milli = c.st.requested_milli_cpu;
    const status got = plugin.filter_with(c.st, pod, node);
    EXPECT_EQ(got.code, c.want) << got.message();
    EXPECT_EQ(got.reason, c.reason);
    ++checked;
  }
  EXPECT_EQ(checked, 17);
}

TEST(NodeNUMAResourceFilter, PolicyAndLabelRefusalsNameWhatIsWrong) {
  node_numa_resource plugin;
  pod_info pod;
  pod.key = "default/p";
  pod.requests.cpu_milli = 4000;
  // An unknown numa-topology-policy label: refused, naming the label and its value.
  auto bad = test_node(numa::build_cpu_topology_for_test(2, 1, 4, 2), {{numa_label, "Strict"}});
  auto st = plugin.filter_with(state(true, 4, cpu_bind_policy::full_pcpus), pod, bad);
  EXPECT_EQ(st.code, status_code::unschedulable_and_unresolvable);
  EXPECT_EQ(st.reason, err_invalid_numa_topology_policy_label);
  EXPECT_NE(st.detail.find("node.koordinator.sh/numa-topology-policy"), std::string::npos);
  EXPECT_NE(st.detail.find("Strict"), std::string::npos);
  // A pod policy that differs from the node's: Koordinator's ErrNotMatchNUMATopology.
  auto single =
      test_node(numa::build_cpu_topology_for_test(2, 1, 4, 2), {{numa_label, "SingleNUMANode"}});
  auto s = state(true, 4, cpu_bind_policy::full_pcpus);
  s.pod_numa_topology_policy = numa::numa_topology_policy::restricted;
  EXPECT_EQ(plugin.filter_with(s, pod, single).reason, numa::err_not_match_numa_topology);
  // The same policy on both, on a node whose NodeResourceTopology has no NUMA zones.
  s.pod_numa_topology_policy = numa::numa_topology_policy::single_numa_node;
  EXPECT_EQ(plugin.filter_with(s, pod, single).reason, err_missing_numa_resources);
  // A required policy on a node without enough free CPUs: the accumulator's reason.
  auto small = test_node(numa::build_cpu_topology_for_test(1, 1, 2, 2), {});
  auto big = plugin.filter_with(state(true, 8, cpu_bind_policy::full_pcpus), pod, small);
  EXPECT_EQ(big.code, status_code::unschedulable);
  EXPECT_EQ(big.reason, numa::err_not_enough_cpus);
}

struct reserve_case {
  const char* name;
  numa::label_map labels;
  numa::cpu_topology topo;
  std::vector<int> allocated;
  numa_pre_filter_state st;
  bool ok;
  std::string want_cpuset;
};

TEST(NodeNUMAResourceReserve, KoordinatorTestPluginReservePolicyNoneRows) {
  using enum cpu_bind_policy;
  auto be = state(false, 4, unset, unset, 0);  // batch-cpu 4000 only: no cpu request
  const std::vector<reserve_case> cases = {
      {"succeed with valid cpu topology",
       {},
       numa::build_cpu_topology_for_test(2, 1, 4, 2),
       {},
       state(true, 4, unset, full_pcpus),
       true,
       "0-3"},
      {"allocated by node cpu bind policy",
       {{bind_label, "SpreadByPCPUs"}},
       numa::build_cpu_topology_for_test(2, 1, 4, 2),
       {},
       state(false, 4),
       true,
       "0,2,4,6"},
      {"BE Pod reserves with node cpu bind policy",
       {{bind_label, "SpreadByPCPUs"}},
       numa::build_cpu_topology_for_test(2, 1, 4, 2),
       {},
       be,
       true,
       ""},
      {"error with big request cpu",
       {},
       numa::build_cpu_topology_for_test(2, 1, 4, 2),
       {},
       state(true, 24),
       false,
       ""},
      {"succeed with valid cpu topology and node numa least allocate strategy",
       {{strategy_label, "LeastAllocated"}},
       numa::build_cpu_topology_for_test(2, 1, 8, 2),
       {0, 1, 2, 3},
       state(true, 4, unset, full_pcpus),
       true,
       "16-19"},
      {"succeed with valid cpu topology and node numa most allocate strategy",
       {{strategy_label, "MostAllocated"}},
       numa::build_cpu_topology_for_test(2, 1, 8, 2),
       {0, 1, 2, 3},
       state(true, 4, unset, full_pcpus),
       true,
       "4-7"},
  };
  node_numa_resource plugin;
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    node_info node = test_node(c.topo, c.labels);
    if (!c.allocated.empty()) {
      cpu_set held;
      for (int id : c.allocated) held.insert(id);
      node.numa.allocation.add_cpus("other-pod", held, numa::cpu_exclusive_policy::none);
    }
    cycle_state cs;
    plugin.set_slot(0);
    cs.slot<numa_pre_filter_state>(0) = c.st;
    pod_info pod;
    pod.key = "default/test";
    const status got = plugin.reserve(cs, pod, node, event_time{0});
    EXPECT_EQ(got.ok(), c.ok) << got.message();
    if (!c.ok) {
      EXPECT_EQ(got.code, status_code::unschedulable);
      EXPECT_EQ(got.reason, numa::err_not_enough_cpus);
      continue;
    }
    EXPECT_EQ(cs.cpuset.to_string(), c.want_cpuset);
  }
  // "error with invalid cpu topology": an Error status.
  node_info empty = test_node(std::nullopt, {});
  empty.numa.set_options(std::make_shared<numa::topology_options>());
  cycle_state cs;
  cs.slot<numa_pre_filter_state>(0) = state(true, 0);
  const status got = plugin.reserve(cs, pod_info{}, empty, event_time{0});
  EXPECT_EQ(got.code, status_code::error);
  EXPECT_EQ(got.message(), err_invalid_cpu_topology);
}

TEST(NodeNUMAResourceScore, KoordinatorTestPluginScorePolicyNoneRows) {
  using enum cpu_bind_policy;
  struct score_case {
    const char* name;
    numa::label_map labels;
    std::optional<numa::cpu_topology> topo;
    numa_pre_filter_state st;
    std::int64_t want;
  };
  const std::vector<score_case> cases = {
      {"error with missing allocationState", {}, std::nullopt, state(true, 0), 0},
      {"error with invalid cpu topology", {}, numa::cpu_topology{}, state(true, 0), 0},
      {"succeed with skip", {}, std::nullopt, state(false, 0), 0},
      {"score with full empty node FullPCPUs",
       {},
       numa::build_cpu_topology_for_test(2, 1, 4, 2),
       state(true, 4, unset, full_pcpus),
       25},
      {"score with satisfied node FullPCPUs",
       {},
       numa::build_cpu_topology_for_test(2, 1, 4, 2),
       state(true, 8, unset, full_pcpus),
       50},
      {"score with full empty node SpreadByPCPUs",
       {},
       numa::build_cpu_topology_for_test(2, 1, 4, 2),
       state(true, 4, unset, spread_by_pcpus),
       25},
      {"score with exceed socket FullPCPUs",
       {},
       numa::build_cpu_topology_for_test(2, 1, 4, 2),
       state(true, 16, unset, full_pcpus),
       100},
      {"score with satisfied socket FullPCPUs",
       {},
       numa::build_cpu_topology_for_test(2, 2, 4, 2),
       state(true, 16, unset, full_pcpus),
       50},
      {"score with full empty socket SpreadByPCPUs",
       {},
       numa::build_cpu_topology_for_test(2, 1, 4, 2),
       state(true, 4, unset, spread_by_pcpus),
       25},
      {"score with Node NUMA Allocate Strategy",
       {{strategy_label, "LeastAllocated"}},
       numa::build_cpu_topology_for_test(2, 1, 4, 2),
       state(true, 2, unset, spread_by_pcpus),
       12},
      {"score with Node CPU Bind Policy",
       {{bind_label, "FullPCPUsOnly"}},
       numa::build_cpu_topology_for_test(2, 1, 4, 2),
       state(true, 8, unset, spread_by_pcpus),
       50},
  };
  // The test suite's ScoringStrategy: MostAllocated over cpu, weight 1.
  node_numa_resource_args args;
  args.scoring_strategy = scoring_strategy_type::most_allocated;
  args.scoring_resources = {{resource_name::cpu, 1}};
  node_numa_resource plugin(args);
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    const int cpus = c.topo && c.topo->is_valid() ? c.topo->num_cpus() : 96;
    node_info node = test_node(c.topo, c.labels, std::nullopt, std::int64_t{cpus} * 1000);
    pod_info pod;
    pod.requests.cpu_milli = c.st.requested_milli_cpu;
    EXPECT_EQ(plugin.score_with(c.st, pod, node), c.want);
  }
}

// resourceAllocationScorer: scalar resources count only when the pod requests them, and a
// resource the node lacks is left out of the weights.
TEST(NodeNUMAResourceScore, ResourceAllocationScorerSkipsWhatIsNotThere) {
  const std::vector<resource_spec> weights = {
      {resource_name::cpu, 1}, {resource_name::memory, 1}, {resource_name::batch_cpu, 1}};
  resource_list alloc, requested, pod;
  alloc.cpu_milli = 10'000;
  alloc.memory_bytes = 100;
  alloc.batch_cpu_milli = 8'000;
  requested.cpu_milli = 2'000;
  pod.cpu_milli = 3'000;
  // cpu: (10-5)/10 = 50; memory: 100; batch-cpu not requested by the pod: skipped.
  EXPECT_EQ(numa_resource_allocation_score(scoring_strategy_type::least_allocated, weights,
                                           requested, alloc, pod),
            75);
  pod.batch_cpu_milli = 4'000;  // now counted: (8-4)/8 = 50
  EXPECT_EQ(numa_resource_allocation_score(scoring_strategy_type::least_allocated, weights,
                                           requested, alloc, pod),
            (50 + 100 + 50) / 3);
  alloc.memory_bytes = 0;  // a node without memory: left out
  EXPECT_EQ(numa_resource_allocation_score(scoring_strategy_type::most_allocated, weights,
                                           requested, alloc, pod),
            (50 + 50) / 2);
}

// The plugin in a profile: an LSR prod pod gets a cpuset in the decision; assume_pod holds its
// CPUs on the node; the next pod gets other CPUs; forget_pod gives them back.
TEST(NodeNUMAResourceCycle, CpusetsFollowDecisionsAssumeAndForget) {
  framework fwk;
  fwk.add(std::make_shared<node_numa_resource>());
  std::vector<node_info> nodes = {test_node(numa::build_cpu_topology_for_test(2, 1, 4, 2), {})};
  auto lsr = [](const char* key) {
    pod_info p;
    p.key = key;
    p.qos_label = qos_class::lsr;
    p.priority_class_label = priority_class::prod;
    p.priority = 9000;
    p.requests.cpu_milli = 4000;
    p.requests.memory_bytes = 1 << 30;
    return p;
  };
  cycle_state st;
  const pod_info a = lsr("default/a");
  auto da = fwk.run_cycle(st, a, nodes, event_time{1});
  ASSERT_EQ(da.result, outcome::scheduled) << da.message;
  EXPECT_EQ(da.cpuset.to_string(), "0-3");  // FullPCPUs (the default), NUMA node 0
  assume_pod(nodes[0], a, da, event_time{1});
  EXPECT_EQ(nodes[0].pods.back().cpuset.to_string(), "0-3");
  const pod_info b = lsr("default/b");
  auto db = fwk.run_cycle(st, b, nodes, event_time{2});
  ASSERT_EQ(db.result, outcome::scheduled);
  EXPECT_TRUE(db.cpuset.intersection(da.cpuset).empty()) << db.cpuset.to_string();
  EXPECT_EQ(db.cpuset.size(), 4);
  assume_pod(nodes[0], b, db, event_time{2});
  // A third 16-CPU pod does not fit the 8 CPUs left; a fractional LSR request is refused at
  // PreFilter with Koordinator's reason.
  pod_info c = lsr("default/c");
  c.requests.cpu_milli = 16'000;
  auto dc = fwk.run_cycle(st, c, nodes, event_time{3});
  EXPECT_NE(dc.result, outcome::scheduled);
  pod_info frac = lsr("default/frac");
  frac.requests.cpu_milli = 1500;
  auto df = fwk.run_cycle(st, frac, nodes, event_time{4});
  EXPECT_EQ(df.result, outcome::unschedulable);
  EXPECT_NE(df.message.find(numa::err_invalid_requested_cpus), std::string::npos) << df.message;
  // An LS pod gets no cpuset; forgetting a gives its CPUs back to the next LSR pod.
  pod_info ls = lsr("default/ls");
  ls.qos_label = qos_class::ls;
  auto dls = fwk.run_cycle(st, ls, nodes, event_time{5});
  ASSERT_EQ(dls.result, outcome::scheduled);
  EXPECT_TRUE(dls.cpuset.empty());
  ASSERT_TRUE(forget_pod(nodes[0], "default/a"));
  const auto avail =
      nodes[0].numa.allocation.available_cpus(*nodes[0].numa.topology(), 1, cpu_set{});
  EXPECT_EQ(avail.cpus.size(), 12);
  // A malformed resource-spec annotation fails PreFilter with the parse error.
  pod_info bad = lsr("default/bad");
  bad.numa_spec_error = "scheduling.koordinator.sh/resource-spec: not JSON";
  auto dbad = fwk.run_cycle(st, bad, nodes, event_time{6});
  EXPECT_EQ(dbad.result, outcome::error);
  EXPECT_NE(dbad.message.find("resource-spec"), std::string::npos) << dbad.message;
}

}  // namespace
}  // namespace colony::scheduler
