// Koordinator's NUMA-aware annotations and labels (actors/scheduler/numa/numa_aware.hpp): the
// resource-spec / numa-topology-spec / resource-status round trips, util_test.go
// Test_getCPUBindPolicy and Test_mergeTopologyPolicy rows (named), PreFilter's bind resolution,
// and the node label / kubelet policy mapping.
#include <gtest/gtest.h>

#include <string>

#include "actors/scheduler/numa/numa_aware.hpp"

namespace colony::scheduler::numa {
namespace {

TEST(NUMAAnnotations, ResourceSpec) {
  auto s = parse_resource_spec(
      R"({"requiredCPUBindPolicy":"FullPCPUs","preferredCPUBindPolicy":"SpreadByPCPUs",)"
      R"("preferredCPUExclusivePolicy":"PCPULevel"})");
  ASSERT_TRUE(s) << s.error().describe();
  EXPECT_EQ(*s, (resource_spec{cpu_bind_policy::full_pcpus, cpu_bind_policy::spread_by_pcpus,
                               cpu_exclusive_policy::pcpu_level}));
  auto e = parse_resource_spec("{}");
  ASSERT_TRUE(e);
  EXPECT_EQ(*e, resource_spec{});
  auto d = parse_resource_spec(R"({"preferredCPUBindPolicy":"Default"})");
  ASSERT_TRUE(d);
  EXPECT_EQ(d->preferred_cpu_bind_policy, cpu_bind_policy::default_policy);
  auto n = parse_resource_spec(R"({"preferredCPUExclusivePolicy":"NUMANodeLevel"})");
  ASSERT_TRUE(n);
  EXPECT_EQ(n->preferred_cpu_exclusive_policy, cpu_exclusive_policy::numa_node_level);
}

TEST(NUMAAnnotations, ResourceSpecErrorsNameTheField) {
  // An undefined policy string is kept (as Go's string type keeps it) and binds nothing.
  auto odd = parse_resource_spec(R"({"requiredCPUBindPolicy":"FullPCPU",)"
                                 R"("preferredCPUExclusivePolicy":"Core"})");
  ASSERT_TRUE(odd) << odd.error().describe();
  EXPECT_EQ(odd->required_cpu_bind_policy, cpu_bind_policy::unrecognized);
  EXPECT_EQ(odd->preferred_cpu_exclusive_policy, cpu_exclusive_policy::unrecognized);
  auto type = parse_resource_spec(R"({"preferredCPUExclusivePolicy":1})");
  ASSERT_FALSE(type);
  EXPECT_EQ(type.error().where, "scheduling.koordinator.sh/resource-spec");
  EXPECT_EQ(type.error().message, "preferredCPUExclusivePolicy: not a string");
  auto req = parse_resource_spec(R"({"requiredCPUBindPolicy":true})");
  ASSERT_FALSE(req);
  EXPECT_EQ(req.error().message, "requiredCPUBindPolicy: not a string");
  EXPECT_EQ(parse_resource_spec("[").error().message, "not JSON");
  EXPECT_EQ(parse_resource_spec("[]").error().message, "not a JSON object");
}

TEST(NUMAAnnotations, NUMATopologySpec) {
  auto s = parse_numa_topology_spec(
      R"({"numaTopologyPolicy":"SingleNUMANode","singleNUMANodeExclusive":"Preferred"})");
  ASSERT_TRUE(s) << s.error().describe();
  EXPECT_EQ(s->topology_policy, numa_topology_policy::single_numa_node);
  EXPECT_EQ(s->single_numa_node_exclusive, numa_topology_exclusive::preferred);
  auto bad = parse_numa_topology_spec(R"({"numaTopologyPolicy":"Strict"})");
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().message, "numaTopologyPolicy: unknown value \"Strict\"");
  EXPECT_EQ(bad.error().where, "scheduling.koordinator.sh/numa-topology-spec");
}

TEST(NUMAAnnotations, ResourceStatusRoundTrip) {
  const std::string text =
      R"({"cpuset":"0-3,8","numaNodeResources":[{"node":0,"resources":{"cpu":"4","memory":"8Gi"}},)"
      R"({"node":1}]})";
  auto s = parse_resource_status(text);
  ASSERT_TRUE(s) << s.error().describe();
  EXPECT_EQ(s->cpuset.to_string(), "0-3,8");
  ASSERT_EQ(s->numa_node_resources.size(), 2U);
  EXPECT_EQ(s->numa_node_resources[0].resources.at("memory"), "8Gi");
  EXPECT_EQ(s->numa_node_resources[1].node, 1);
  EXPECT_EQ(format_resource_status(*s), text);
  auto again = parse_resource_status(format_resource_status(*s));
  ASSERT_TRUE(again);
  EXPECT_EQ(*again, *s);
  // omitempty: nothing allocated is {}.
  EXPECT_EQ(format_resource_status({}), "{}");
}

// plugin_test.go TestPlugin_PreFilter "cpu set with LSR Prod Pod, designated allocation": the
// annotation writes the quantity as a JSON number.
TEST(NUMAAnnotations, ResourceStatusKoordinatorDesignatedAllocation) {
  auto s = parse_resource_status(
      R"({"cpuset": "35-36,67-68", "numaNodeResources": [{"node": 1, "resources": {"cpu": 4}}]})");
  ASSERT_TRUE(s) << s.error().describe();
  EXPECT_EQ(s->cpuset, (cpu_set{35, 36, 67, 68}));
  ASSERT_EQ(s->numa_node_resources.size(), 1U);
  EXPECT_EQ(s->numa_node_resources[0].node, 1);
  EXPECT_EQ(s->numa_node_resources[0].resources.at("cpu"), "4");
}

TEST(NUMAAnnotations, ResourceStatusErrorsNameTheField) {
  auto bad = parse_resource_status(R"({"cpuset":"3-1"})");
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().where, "scheduling.koordinator.sh/resource-status");
  EXPECT_EQ(bad.error().message.rfind("cpuset: invalid range", 0), 0U) << bad.error().message;
  auto node = parse_resource_status(R"({"numaNodeResources":[{"node":"0"}]})");
  ASSERT_FALSE(node);
  EXPECT_EQ(node.error().message, "numaNodeResources[0].node: not an integer");
  auto res = parse_resource_status(R"({"numaNodeResources":[{"node":0,"resources":{"cpu":[]}}]})");
  ASSERT_FALSE(res);
  EXPECT_EQ(res.error().message, "resources.cpu: not a string");
  EXPECT_NE(res.error().where.find("numaNodeResources[0]"), std::string::npos);
}

// util_test.go Test_getCPUBindPolicy.
TEST(NUMAPolicies, GetCPUBindPolicyKoordinator) {
  kubelet_cpu_manager_policy static_full{"static", {{"full-pcpus-only", "true"}}, {}};
  const label_map no_labels;
  const label_map full_only{{std::string(label_node_cpu_bind_policy), "FullPCPUsOnly"}};
  EXPECT_EQ(get_cpu_bind_policy(no_labels, &static_full, cpu_bind_policy::unset,
                                cpu_bind_policy::full_pcpus),
            (bind_decision{cpu_bind_policy::full_pcpus, true}))
      << "kubelet enables FullPCPUsOnly";
  EXPECT_EQ(
      get_cpu_bind_policy(full_only, nullptr, cpu_bind_policy::unset, cpu_bind_policy::full_pcpus),
      (bind_decision{cpu_bind_policy::full_pcpus, true}))
      << "node enables FullPCPUsOnly";
  EXPECT_EQ(
      get_cpu_bind_policy(no_labels, nullptr, cpu_bind_policy::full_pcpus, cpu_bind_policy::unset),
      (bind_decision{cpu_bind_policy::full_pcpus, true}))
      << "pod enables required FullPCPUsOnly";
  EXPECT_EQ(
      get_cpu_bind_policy(no_labels, nullptr, cpu_bind_policy::unset, cpu_bind_policy::full_pcpus),
      (bind_decision{cpu_bind_policy::full_pcpus, false}))
      << "pod enables preferred FullPCPUsOnly";
  // A node SpreadByPCPUs label overrides a preferred FullPCPUs and makes it required.
  const label_map spread{{std::string(label_node_cpu_bind_policy), "SpreadByPCPUs"}};
  EXPECT_EQ(
      get_cpu_bind_policy(spread, nullptr, cpu_bind_policy::unset, cpu_bind_policy::full_pcpus),
      (bind_decision{cpu_bind_policy::spread_by_pcpus, true}));
}

TEST(NUMAPolicies, NodeCPUBindPolicy) {
  const label_map none;
  EXPECT_EQ(get_node_cpu_bind_policy(none, nullptr), node_cpu_bind_policy::none);
  kubelet_cpu_manager_policy static_no{"static", {{"full-pcpus-only", "false"}}, {}};
  EXPECT_EQ(get_node_cpu_bind_policy(none, &static_no), node_cpu_bind_policy::none);
  kubelet_cpu_manager_policy none_full{"none", {{"full-pcpus-only", "true"}}, {}};
  EXPECT_EQ(get_node_cpu_bind_policy(none, &none_full), node_cpu_bind_policy::none);
  const label_map odd{{std::string(label_node_cpu_bind_policy), "Whatever"}};
  EXPECT_EQ(get_node_cpu_bind_policy(odd, nullptr), node_cpu_bind_policy::none);
}

// util_test.go Test_mergeTopologyPolicy.
TEST(NUMAPolicies, MergeTopologyPolicyKoordinator) {
  using p = numa_topology_policy;
  EXPECT_EQ(*merge_topology_policy(p::restricted, p::none), p::restricted) << "no policy on pod";
  EXPECT_EQ(*merge_topology_policy(p::restricted, p::restricted), p::restricted) << "policy on pod";
  auto err = merge_topology_policy(p::restricted, p::best_effort);
  ASSERT_FALSE(err) << "policy on pod not match policy on node";
  EXPECT_EQ(err.error().message, err_not_match_numa_topology);
  EXPECT_EQ(*merge_topology_policy(p::none, p::single_numa_node), p::single_numa_node);
}

TEST(NUMAPolicies, NodeNUMATopologyPolicyAndKubeletMapping) {
  using p = numa_topology_policy;
  EXPECT_EQ(numa_topology_policy_from_kubelet({"SingleNUMANodeContainerLevel", "Restricted"}),
            p::restricted);
  EXPECT_EQ(numa_topology_policy_from_kubelet({"SingleNUMANodePodLevel"}), p::single_numa_node);
  EXPECT_EQ(numa_topology_policy_from_kubelet({"BestEffort"}), p::best_effort);
  EXPECT_EQ(numa_topology_policy_from_kubelet({"None"}), p::none);
  EXPECT_EQ(numa_topology_policy_from_kubelet({"SingleNUMANodeContainerLevel"}), p::none);
  const label_map none;
  EXPECT_EQ(*get_numa_topology_policy(none, p::best_effort), p::best_effort);
  const label_map empty{{std::string(label_numa_topology_policy), ""}};
  EXPECT_EQ(*get_numa_topology_policy(empty, p::restricted), p::restricted);
  const label_map single{{std::string(label_numa_topology_policy), "SingleNUMANode"}};
  EXPECT_EQ(*get_numa_topology_policy(single, p::best_effort), p::single_numa_node);
  const label_map bad{{std::string(label_numa_topology_policy), "single"}};
  auto e = get_numa_topology_policy(bad, p::none);
  ASSERT_FALSE(e);
  EXPECT_EQ(e.error().where, "node.koordinator.sh/numa-topology-policy");
}

TEST(NUMAPolicies, NUMAAllocateStrategy) {
  using s = numa_allocate_strategy;
  const label_map none;
  EXPECT_EQ(*get_numa_allocate_strategy(none, false), s::least_allocated);
  EXPECT_EQ(*get_numa_allocate_strategy(none, true), s::most_allocated);
  const label_map most{{std::string(label_node_numa_allocate_strategy), "MostAllocated"}};
  EXPECT_EQ(*get_numa_allocate_strategy(most, false), s::most_allocated);
  const label_map even{{std::string(label_node_numa_allocate_strategy), "DistributeEvenly"}};
  EXPECT_EQ(*get_numa_allocate_strategy(even, true), s::distribute_evenly);
  const label_map bad{{std::string(label_node_numa_allocate_strategy), "Most"}};
  EXPECT_FALSE(get_numa_allocate_strategy(bad, true));
}

TEST(NUMAPolicies, KubeletCPUManagerPolicy) {
  auto k = parse_kubelet_cpu_manager_policy(
      R"({"policy":"static","options":{"full-pcpus-only":"true"},"reservedCPUs":"0-1"})");
  ASSERT_TRUE(k) << k.error().describe();
  EXPECT_EQ(k->policy, "static");
  EXPECT_EQ(k->reserved_cpus.to_string(), "0-1");
  EXPECT_EQ(get_node_cpu_bind_policy({}, &*k), node_cpu_bind_policy::full_pcpus_only);
  auto bad = parse_kubelet_cpu_manager_policy(R"({"reservedCPUs":"x"})");
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().where, "kubelet.koordinator.sh/cpu-manager-policy");
  EXPECT_EQ(bad.error().message.rfind("reservedCPUs:", 0), 0U);
}

// plugin.go PreFilter for a pod AllowUseCPUSet admits.
TEST(NUMAPolicies, ResolvePodCPUBind) {
  using b = cpu_bind_policy;
  // Preferred unset: the args default (FullPCPUs) binds 4 whole cpus.
  auto r = resolve_pod_cpu_bind({}, 4000, b::full_pcpus);
  ASSERT_TRUE(r);
  EXPECT_TRUE(r->request_cpu_bind);
  EXPECT_EQ(r->num_cpus_needed, 4);
  EXPECT_EQ(r->preferred_cpu_bind_policy, b::full_pcpus);
  EXPECT_EQ(r->required_cpu_bind_policy, b::unset);
  // Required Default becomes the default and wins over preferred.
  r = resolve_pod_cpu_bind({b::default_policy, b::full_pcpus, cpu_exclusive_policy::pcpu_level},
                           2000, b::spread_by_pcpus);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->required_cpu_bind_policy, b::spread_by_pcpus);
  EXPECT_EQ(r->preferred_cpu_bind_policy, b::spread_by_pcpus);
  EXPECT_EQ(r->preferred_cpu_exclusive_policy, cpu_exclusive_policy::pcpu_level);
  // Fractional cpu with a binding policy: the PreFilter error.
  auto frac = resolve_pod_cpu_bind({}, 1500, b::full_pcpus);
  ASSERT_FALSE(frac);
  EXPECT_EQ(frac.error().message, err_invalid_requested_cpus);
  // ConstrainedBurst does not bind (and fractions are fine then).
  r = resolve_pod_cpu_bind({b::unset, b::constrained_burst, cpu_exclusive_policy::unset}, 1500,
                           b::full_pcpus);
  ASSERT_TRUE(r);
  EXPECT_FALSE(r->request_cpu_bind);
  // No cpu requested: nothing to bind.
  r = resolve_pod_cpu_bind({}, 0, b::full_pcpus);
  ASSERT_TRUE(r);
  EXPECT_FALSE(r->request_cpu_bind);
}

// plugin_test.go TestPlugin_PreFilter: AllowUseCPUSet, then the bind resolution (plugin args
// default FullPCPUs). Rows name the Go sub-case.
TEST(NUMAPolicies, PreFilterKoordinator) {
  struct row {
    const char* name;
    qos_class qos;
    priority_class priority;
    const char* spec;
    std::int64_t milli_cpu;
    bool want_error;
    bool want_bind;
    cpu_bind_policy want_required;
    cpu_bind_policy want_preferred;
  } rows[] = {
      {"cpu set with LSR Prod Pod", qos_class::lsr, priority_class::prod,
       R"({"preferredCPUBindPolicy": "FullPCPUs"})", 4000, false, true, cpu_bind_policy::unset,
       cpu_bind_policy::full_pcpus},
      {"cpu set with LSE Prod Pod", qos_class::lse, priority_class::prod,
       R"({"preferredCPUBindPolicy": "FullPCPUs"})", 4000, false, true, cpu_bind_policy::unset,
       cpu_bind_policy::full_pcpus},
      {"cpu set with LSR Prod Pod and required CPUBindPolicy", qos_class::lsr, priority_class::prod,
       R"({"requiredCPUBindPolicy": "FullPCPUs"})", 4000, false, true, cpu_bind_policy::full_pcpus,
       cpu_bind_policy::full_pcpus},
      {"cpu set with LSR Prod Pod and required CPUBindPolicy by default", qos_class::lsr,
       priority_class::prod, R"({"requiredCPUBindPolicy": "Default"})", 4000, false, true,
       cpu_bind_policy::full_pcpus, cpu_bind_policy::full_pcpus},
      {"cpu set with LSR Prod Pod but not specified CPUBindPolicy", qos_class::lsr,
       priority_class::prod, "{}", 4000, false, true, cpu_bind_policy::unset,
       cpu_bind_policy::full_pcpus},
      {"skip BE Pod", qos_class::be, priority_class::batch,
       R"({"preferredCPUBindPolicy": "FullPCPUs"})", 4000, false, false, cpu_bind_policy::unset,
       cpu_bind_policy::unset},
      {"skip Pod without cpu", qos_class::lse, priority_class::prod,
       R"({"preferredCPUBindPolicy": "FullPCPUs"})", 0, false, false, cpu_bind_policy::unset,
       cpu_bind_policy::unset},
      {"error with non-integer pod", qos_class::lsr, priority_class::prod,
       R"({"preferredCPUBindPolicy": "FullPCPUs"})", 4500, true, false, cpu_bind_policy::unset,
       cpu_bind_policy::unset},
      {"skip Pod with unsupported bind policy", qos_class::lse, priority_class::prod,
       R"({"preferredCPUBindPolicy": "test"})", 4500, false, false, cpu_bind_policy::unset,
       cpu_bind_policy::unset},
  };
  for (const auto& r : rows) {
    SCOPED_TRACE(r.name);
    auto spec = parse_resource_spec(r.spec);
    ASSERT_TRUE(spec) << spec.error().describe();
    if (!allow_use_cpuset(r.qos, r.priority)) {
      EXPECT_FALSE(r.want_bind);
      continue;
    }
    auto got = resolve_pod_cpu_bind(*spec, r.milli_cpu, cpu_bind_policy::full_pcpus);
    EXPECT_EQ(!got, r.want_error);
    if (!got) {
      EXPECT_EQ(got.error().message, err_invalid_requested_cpus);
      continue;
    }
    EXPECT_EQ(got->request_cpu_bind, r.want_bind);
    EXPECT_EQ(got->required_cpu_bind_policy, r.want_required);
    EXPECT_EQ(got->preferred_cpu_bind_policy, r.want_preferred);
    if (r.want_bind) {
      EXPECT_EQ(got->num_cpus_needed, r.milli_cpu / 1000);
    }
  }
  EXPECT_FALSE(allow_use_cpuset(qos_class::ls, priority_class::prod));
  EXPECT_FALSE(allow_use_cpuset(qos_class::lsr, priority_class::mid));
}

TEST(NUMAPolicies, NamesRoundTrip) {
  for (auto p :
       {cpu_bind_policy::unset, cpu_bind_policy::default_policy, cpu_bind_policy::full_pcpus,
        cpu_bind_policy::spread_by_pcpus, cpu_bind_policy::constrained_burst})
    EXPECT_EQ(parse_cpu_bind_policy(to_string(p)), p);
  for (auto p : {cpu_exclusive_policy::unset, cpu_exclusive_policy::none,
                 cpu_exclusive_policy::pcpu_level, cpu_exclusive_policy::numa_node_level})
    EXPECT_EQ(parse_cpu_exclusive_policy(to_string(p)), p);
  for (auto p : {numa_topology_policy::none, numa_topology_policy::best_effort,
                 numa_topology_policy::restricted, numa_topology_policy::single_numa_node})
    EXPECT_EQ(parse_numa_topology_policy(to_string(p)), p);
  EXPECT_EQ(to_string(node_cpu_bind_policy::full_pcpus_only), "FullPCPUsOnly");
  EXPECT_EQ(to_string(numa_allocate_strategy::distribute_evenly), "DistributeEvenly");
  EXPECT_EQ(to_string(numa_topology_exclusive::required), "Required");
}

}  // namespace
}  // namespace colony::scheduler::numa
