// allocate_cpuset (actors/scheduler/numa/cpuset_allocation.hpp): the cpuset half of Koordinator's
// resource_manager_test.go TestResourceManagerAllocate and TestAllocateDistributeEvenly, one row
// per Go sub-case that binds CPUs. Every case: buildCPUTopologyForTest(2, 1, 26, 2) (104 CPUs),
// MaxRefCount 1, resource manager strategy LeastAllocated, requiredCPUBindPolicy true; the
// "allocated" pod recorded with no exclusive policy; the NUMA split is the case's wanted
// numaNodeResources (what the hint produced).
#include "actors/scheduler/numa/cpuset_allocation.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace colony::scheduler::numa {
namespace {

struct alloc_case {
  const char* name;
  cpu_bind_policy bind;
  const char* allocated;
  int needed;
  std::vector<cpuset_request::numa_share> numa;
  const char* want;  // nullptr: an error
};

struct topo_shape {
  int sockets, nodes_per_socket, cores_per_node, cpus_per_core;
};
constexpr cpu_exclusive_policy pcpu_level() { return cpu_exclusive_policy::pcpu_level; }

constexpr auto full = cpu_bind_policy::full_pcpus;
constexpr auto spread = cpu_bind_policy::spread_by_pcpus;

const std::vector<alloc_case>& cases() {
  static const std::vector<alloc_case> c = {
      {"TestResourceManagerAllocate/allocate with required CPUBindPolicyFullPCPUs",
       full,
       "",
       4,
       {{0, 4}},
       "0-3"},
      {"TestResourceManagerAllocate/allocate with required CPUBindPolicyFullPCPUs and allocated",
       full,
       "4-104",
       4,
       {{0, 4}},
       "0-3"},
      {"TestResourceManagerAllocate/failed to allocate with required CPUBindPolicyFullPCPUs and "
       "allocated",
       full,
       "1,3,5,7-104",
       4,
       {{0, 4}},
       nullptr},
      {"TestResourceManagerAllocate/allocate with required CPUBindPolicySpreadByPCPUs",
       spread,
       "",
       4,
       {{0, 4}},
       "0,2,4,6"},
      {"TestResourceManagerAllocate/allocate with required CPUBindPolicySpreadByPCPUs and "
       "allocated",
       spread,
       "1,3,5,7-104",
       4,
       {{0, 4}},
       "0,2,4,6"},
      {"TestResourceManagerAllocate/failed to allocate with required CPUBindPolicySpreadByPCPUs "
       "and allocated",
       spread,
       "4-104",
       4,
       {{0, 4}},
       nullptr},
      {"TestResourceManagerAllocate/allocate with required CPUBindPolicySpreadByPCPUs and "
       "amplified requests",
       spread,
       "",
       4,
       {{0, 4}},
       "0,2,4,6"},
      {"TestResourceManagerAllocate/allocate with required CPUBindPolicySpreadByPCPUs and "
       "allocated and amplified requests",
       spread,
       "1,3,5,7-104",
       4,
       {{0, 4}},
       "0,2,4,6"},
      {"TestResourceManagerAllocate/allocate by numa hint on mixed cpuset/share node",
       full,
       "0-43,53-96",
       8,
       {{0, 4}, {1, 4}},
       "44-47,98-101"},
      {"TestAllocateDistributeEvenly/allocate with required CPUBindPolicyFullPCPUs",
       full,
       "",
       4,
       {{0, 2}, {1, 2}},
       "0-1,52-53"},
      {"TestAllocateDistributeEvenly/allocate with required CPUBindPolicyFullPCPUs and allocated",
       full,
       "4-101",
       4,
       {{0, 2}, {1, 2}},
       "0-1,102-103"},
      {"TestAllocateDistributeEvenly/failed to allocate with required CPUBindPolicyFullPCPUs and "
       "allocated",
       full,
       "1,3,5,7-104",
       4,
       {{0, 4}},
       nullptr},
      {"TestAllocateDistributeEvenly/allocate with required CPUBindPolicySpreadByPCPUs",
       spread,
       "",
       4,
       {{0, 2}, {1, 2}},
       "0,2,52,54"},
      {"TestAllocateDistributeEvenly/allocate with required CPUBindPolicySpreadByPCPUs and "
       "allocated, plural numCPUsNeeded, not balanced",
       spread,
       "1,3,5,7-101,103",
       4,
       {{0, 3}, {1, 1}},
       "0,2,4,102"},
      {"TestAllocateDistributeEvenly/allocate with required CPUBindPolicySpreadByPCPUs and "
       "allocated, plural numCPUsNeeded, balanced",
       spread,
       "4-100",
       4,
       {{0, 2}, {1, 2}},
       "0,2,101-102"},
      {"TestAllocateDistributeEvenly/allocate with required CPUBindPolicySpreadByPCPUs and "
       "allocated, singular num cpus needed",
       spread,
       "1,3,5,7-97,103",
       5,
       {{0, 3}, {1, 2}},
       "0,2,4,98,100"},
      {"TestAllocateDistributeEvenly/failed to allocate with required CPUBindPolicySpreadByPCPUs "
       "and allocated",
       spread,
       "4-104",
       4,
       {{0, 2}, {1, 2}},
       nullptr},
      {"TestAllocateDistributeEvenly/allocate with required CPUBindPolicySpreadByPCPUs and "
       "amplified requests",
       spread,
       "",
       4,
       {{0, 2}, {1, 2}},
       "0,2,52,54"},
      {"TestAllocateDistributeEvenly/allocate with required CPUBindPolicySpreadByPCPUs and "
       "allocated and amplified requests",
       spread,
       "1,3,5,7-101",
       4,
       {{0, 3}, {1, 1}},
       "0,2,4,102"},
  };
  return c;
}

TEST(AllocateCPUSet, KoordinatorResourceManagerCases) {
  const auto t = build_cpu_topology_for_test(2, 1, 26, 2);
  int ran = 0;
  for (const auto& c : cases()) {
    SCOPED_TRACE(c.name);
    node_cpu_allocation state;
    auto held = cpu_set::parse(c.allocated);
    ASSERT_TRUE(held);
    if (!held->empty()) state.add_cpus("123456", *held, cpu_exclusive_policy::unset);
    // GetAvailableCPUs(node, preferredCPUs, preemptibleCPUs): both empty here.
    const std::vector<cpu_set> back{cpu_set{}, cpu_set{}};
    const auto av = state.available_cpus(t, 1, {}, back);
    cpuset_request req;
    req.num_cpus_needed = c.needed;
    req.policy = {c.bind, cpu_exclusive_policy::unset, numa_allocate_strategy::least_allocated, 1};
    req.required = true;
    req.numa_nodes = c.numa;
    auto got = allocate_cpuset(t, av.cpus, av.allocated, req);
    if (c.want == nullptr) {
      EXPECT_FALSE(got) << "got " << (got ? got->to_string() : "");
    } else {
      ASSERT_TRUE(got) << got.error().describe();
      EXPECT_EQ(got->to_string(), cpu_set::parse(c.want)->to_string());
    }
    ++ran;
  }
  EXPECT_EQ(ran, 19);
}

// plugin_test.go TestPlugin_Reserve, the rows that reduce to one cpuset allocation: the node
// labels pick the bind policy (getCPUBindPolicy) and the NUMA strategy (plugin default
// LeastAllocated); a reservation's remaining CPUs are held by it and handed back as preferred.
TEST(AllocateCPUSet, KoordinatorReserveCases) {
  struct row {
    const char* name;
    topo_shape topology;
    label_map labels;
    const char* allocated;
    const char* reservation;  // remainedCPUs of a matched reservation ("" none)
    int needed;
    cpu_bind_policy preferred;
    const char* want;  // nullptr: err_not_enough_cpus
  };
  const row rows[] = {
      {"succeed with valid cpu topology", {2, 1, 4, 2}, {}, "", "", 4, full, "0-3"},
      {"allocated by node cpu bind policy",
       {2, 1, 4, 2},
       {{std::string(label_node_cpu_bind_policy), "SpreadByPCPUs"}},
       "",
       "",
       4,
       cpu_bind_policy::unset,
       "0,2,4,6"},
      {"error with big request cpu", {2, 1, 4, 2}, {}, "", "", 24, cpu_bind_policy::unset, nullptr},
      {"succeed with valid cpu topology and node numa least allocate strategy",
       {2, 1, 8, 2},
       {{std::string(label_node_numa_allocate_strategy), "LeastAllocated"}},
       "0-3",
       "",
       4,
       full,
       "16-19"},
      {"succeed with valid cpu topology and node numa most allocate strategy",
       {2, 1, 8, 2},
       {{std::string(label_node_numa_allocate_strategy), "MostAllocated"}},
       "0-3",
       "",
       4,
       full,
       "4-7"},
      {"succeed allocate from reservation reserved cpus;default allocate policy",
       {2, 1, 4, 2},
       {},
       "",
       "4-10",
       4,
       full,
       "4-7"},
  };
  for (const auto& r : rows) {
    SCOPED_TRACE(std::string("TestPlugin_Reserve/") + r.name);
    const auto t = build_cpu_topology_for_test(r.topology.sockets, r.topology.nodes_per_socket,
                                               r.topology.cores_per_node, r.topology.cpus_per_core);
    node_cpu_allocation state;
    if (*r.allocated != 0) state.add_cpus("pod", *cpu_set::parse(r.allocated), pcpu_level());
    cpu_set reserved_by_reservation;
    if (*r.reservation != 0) {
      reserved_by_reservation = *cpu_set::parse(r.reservation);
      state.add_cpus("reservation", reserved_by_reservation, cpu_exclusive_policy::unset);
    }
    const std::vector<cpu_set> back{reserved_by_reservation};
    const auto av = state.available_cpus(t, 1, {}, back);
    const auto bind = get_cpu_bind_policy(r.labels, nullptr, cpu_bind_policy::unset, r.preferred);
    auto strategy = get_numa_allocate_strategy(r.labels, false);
    ASSERT_TRUE(strategy);
    cpuset_request req;
    req.num_cpus_needed = r.needed;
    req.policy = {bind.policy, cpu_exclusive_policy::unset, *strategy, 1};
    req.required = bind.required;
    req.preferred = reserved_by_reservation;
    auto got = allocate_cpuset(t, av.cpus, av.allocated, req);
    if (r.want == nullptr) {
      ASSERT_FALSE(got);
      EXPECT_EQ(got.error().message, err_not_enough_cpus);
    } else {
      ASSERT_TRUE(got) << got.error().describe();
      EXPECT_EQ(got->to_string(), cpu_set::parse(r.want)->to_string());
    }
  }
}

TEST(AllocateCPUSet, RequiredPolicyFilterAndCheck) {
  const auto t = build_cpu_topology_for_test(1, 1, 4, 2);
  const auto avail = *cpu_set::parse("1-6");
  EXPECT_EQ(filter_cpus_by_required_cpu_bind_policy(full, avail, t).to_string(), "2-5");
  EXPECT_EQ(filter_cpus_by_required_cpu_bind_policy(spread, avail, t).to_string(), "1-2,4,6");
  EXPECT_EQ(filter_cpus_by_required_cpu_bind_policy(cpu_bind_policy::unset, avail, t), avail);
  EXPECT_TRUE(satisfied_required_cpu_bind_policy(full, *cpu_set::parse("2-5"), t));
  auto bad = satisfied_required_cpu_bind_policy(full, *cpu_set::parse("1-2"), t);
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().message, "insufficient CPUs to satisfy required cpu bind policy FullPCPUs");
  EXPECT_TRUE(satisfied_required_cpu_bind_policy(spread, *cpu_set::parse("0,2,4"), t));
  EXPECT_FALSE(satisfied_required_cpu_bind_policy(spread, *cpu_set::parse("0-1"), t));
}

// Without a NUMA split the request is taken anywhere; not required: no filtering, so a
// FullPCPUs preference may still land on split cores.
TEST(AllocateCPUSet, NoNUMASplitAndPreferred) {
  const auto t = build_cpu_topology_for_test(2, 1, 4, 2);
  cpuset_request req;
  req.num_cpus_needed = 4;
  req.policy = {full, cpu_exclusive_policy::none, numa_allocate_strategy::most_allocated, 1};
  req.preferred = cpu_set{10, 11};
  auto got = allocate_cpuset(t, t.cpus(), {}, req);
  ASSERT_TRUE(got) << got.error().describe();
  EXPECT_EQ(got->to_string(), "8-11");
  req.num_cpus_needed = 17;
  EXPECT_EQ(allocate_cpuset(t, t.cpus(), {}, req).error().message, err_not_enough_cpus);
}

}  // namespace
}  // namespace colony::scheduler::numa
