// CPU sets and CPU topology (actors/scheduler/numa/{cpu_set,cpu_topology}.hpp): Koordinator's
// pkg/util/cpuset/cpuset_test.go TestCPUSetString / TestParse rows, buildCPUTopologyForTest and
// CPUTopologyBuilder (cpu_topology.go, cpu_accumulator_test.go), the machine model and the
// validation errors, and the node.koordinator.sh/cpu-topology annotation.
#include <gtest/gtest.h>

#include <string>

#include "actors/scheduler/numa/cpu_set.hpp"
#include "actors/scheduler/numa/cpu_topology.hpp"

namespace colony::scheduler::numa {
namespace {

TEST(CPUSet, StringKoordinator) {  // cpuset_test.go TestCPUSetString
  EXPECT_EQ(cpu_set{}.to_string(), "");
  EXPECT_EQ((cpu_set{5}).to_string(), "5");
  EXPECT_EQ((cpu_set{1, 2, 3, 4, 5}).to_string(), "1-5");
  EXPECT_EQ((cpu_set{1, 2, 3, 5, 6, 8}).to_string(), "1-3,5-6,8");
}

TEST(CPUSet, ParseKoordinator) {  // cpuset_test.go TestParse
  struct row {
    const char* in;
    cpu_set want;
    bool error;
  } rows[] = {
      {"", {}, false},
      {"5", {5}, false},
      {"1,2,3,4,5", {1, 2, 3, 4, 5}, false},
      {"1-5", {1, 2, 3, 4, 5}, false},
      {"1-2,3-5", {1, 2, 3, 4, 5}, false},
      {"3-5,1-2", {1, 2, 3, 4, 5}, false},
      {"1-3-4", {}, true},
  };
  for (const auto& r : rows) {
    auto got = cpu_set::parse(r.in);
    EXPECT_EQ(!got, r.error) << r.in;
    if (got) {
      EXPECT_EQ(*got, r.want) << r.in;
    }
  }
}

TEST(CPUSet, ParseErrorsNameTheElement) {
  for (const char* bad : {"a", "1,", "5-3", "-1", "1,,2", " 1", "70000"}) {
    auto got = cpu_set::parse(bad);
    ASSERT_FALSE(got) << bad;
    EXPECT_NE(got.error().where.find(bad), std::string::npos) << got.error().describe();
  }
  EXPECT_NE(cpu_set::parse("5-3").error().message.find("5 > 3"), std::string::npos);
}

TEST(CPUSet, SetAlgebra) {
  const cpu_set a{0, 1, 2, 64, 130};
  const cpu_set b{1, 64, 200};
  EXPECT_EQ(a.union_with(b).to_string(), "0-2,64,130,200");
  EXPECT_EQ(a.intersection(b).to_string(), "1,64");
  EXPECT_EQ(a.difference(b).to_string(), "0,2,130");
  EXPECT_EQ(a.size(), 5);
  cpu_set c = b;
  c.erase(200);
  EXPECT_EQ(c, (cpu_set{1, 64}));  // trailing zero words do not count
  EXPECT_TRUE(cpu_set{}.empty());
  EXPECT_FALSE(a.contains(-1));
}

// buildCPUTopologyForTest(2, 2, 4, 2): the counts and per-X figures the accumulator divides by.
TEST(CPUTopology, BuildForTestCounts) {
  const auto t = build_cpu_topology_for_test(2, 2, 4, 2);
  EXPECT_EQ(t.num_sockets(), 2);
  EXPECT_EQ(t.num_nodes(), 4);
  EXPECT_EQ(t.num_cores(), 16);
  EXPECT_EQ(t.num_cpus(), 32);
  EXPECT_EQ(t.cpus_per_core(), 2);
  EXPECT_EQ(t.cpus_per_node(), 8);
  EXPECT_EQ(t.cpus_per_socket(), 16);
  EXPECT_TRUE(t.is_valid());
  EXPECT_EQ(*t.find(9), (cpu_info{9, 4, 1, 0}));
  EXPECT_EQ(*t.find(17), (cpu_info{17, 8, 2, 1}));
  EXPECT_EQ(t.cpus_in_numa_node(1).to_string(), "8-15");
  EXPECT_EQ(t.cpus_in_socket(1).to_string(), "16-31");
  EXPECT_EQ(t.cpus_in_core(4).to_string(), "8-9");
  EXPECT_EQ(t.find(32), nullptr);
  // An empty topology is not valid (CPUTopology.IsValid) and divides to 0.
  const cpu_topology empty;
  EXPECT_FALSE(empty.is_valid());
  EXPECT_EQ(empty.cpus_per_core(), 0);
}

// x86 Linux numbering: sibling threads are N apart; core_id restarts per socket and the builder
// makes it node-unique (socket << 16 | core), as CPUTopologyBuilder.AddCPUInfo does.
TEST(CPUTopology, MachineModelLinuxNumbering) {
  auto t = build_topology({2, 1, 48, 2, machine_model::numbering::linux_x86});
  ASSERT_TRUE(t) << t.error().describe();
  EXPECT_EQ(t->num_cpus(), 192);
  EXPECT_EQ(t->num_cores(), 96);
  EXPECT_EQ(t->cpus_per_core(), 2);
  EXPECT_EQ(t->cpus_per_socket(), 96);
  EXPECT_EQ(*t->find(0), (cpu_info{0, 0, 0, 0}));
  EXPECT_EQ(*t->find(96), (cpu_info{96, 0, 0, 0}));        // sibling of cpu 0
  EXPECT_EQ(*t->find(48), (cpu_info{48, 1 << 16, 1, 1}));  // socket 1, core 0
  EXPECT_EQ(*t->find(191), (cpu_info{191, 1 << 16 | 47, 1, 1}));
  EXPECT_EQ(t->cpus_in_core(0).to_string(), "0,96");
  EXPECT_EQ(t->cpus_in_socket(0).to_string(), "0-47,96-143");
}

TEST(CPUTopology, MachineModelErrorsNameTheField) {
  EXPECT_NE(build_topology({0, 1, 1, 1}).error().message.find("sockets"), std::string::npos);
  EXPECT_NE(build_topology({1, 0, 1, 1}).error().message.find("numa_nodes_per_socket"),
            std::string::npos);
  EXPECT_NE(build_topology({1, 1, 0, 1}).error().message.find("cores_per_numa_node"),
            std::string::npos);
  EXPECT_NE(build_topology({1, 1, 1, 0}).error().message.find("threads_per_core"),
            std::string::npos);
  EXPECT_FALSE(build_topology({64, 8, 64, 4}));  // 131072 CPUs
}

TEST(CPUTopology, ValidationNamesWhatIsInconsistent) {
  auto msg = [](cpu_topology_builder& b) {
    auto r = b.build();
    return r ? std::string("ok") : r.error().message;
  };
  {
    cpu_topology_builder b;
    b.add_cpu({0, 0, 0, 0}).add_cpu({0, 1, 0, 0});
    EXPECT_EQ(msg(b), "cpu 0 listed twice: core 0 and core 1");
  }
  {
    cpu_topology_builder b;
    b.add_cpu({0, 0, 0, 0}).add_cpu({1, 0, 1, 0});
    EXPECT_EQ(msg(b), "core 0 spans NUMA nodes 0 (cpu 0) and 1 (cpu 1)");
  }
  {
    cpu_topology_builder b;
    b.add_cpu({0, 0, 0, 0}).add_cpu({1, 0, 0, 1});
    EXPECT_EQ(msg(b), "core 0 spans sockets 0 (cpu 0) and 1 (cpu 1)");
  }
  {
    cpu_topology_builder b;
    b.add_cpu({0, 0, 0, 0}).add_cpu({1, 1, 0, 1});
    EXPECT_EQ(msg(b), "NUMA node 0 spans sockets 0 and 1 (cpu 1)");
  }
  {  // counts that do not add up: a 3-thread core beside 2-thread ones
    cpu_topology_builder b;
    b.add_cpu({0, 0, 0, 0}).add_cpu({1, 0, 0, 0}).add_cpu({2, 1, 0, 0}).add_cpu({3, 1, 0, 0});
    b.add_cpu({4, 1, 0, 0});
    EXPECT_EQ(msg(b), "core 0 has 2 cpus, core 1 has 3: counts must be the same on every one");
  }
  {
    cpu_topology_builder b;
    b.add_cpu({0, 0, 0, 0}).add_cpu({1, 1, 0, 0}).add_cpu({2, 2, 1, 0});
    EXPECT_EQ(msg(b),
              "NUMA node 0 has 2 cores, NUMA node 1 has 1: counts must be the same on every one");
  }
  {
    cpu_topology_builder b;
    b.add_cpu({0, 0, 0, 0}).add_cpu({1, 1, 1, 0}).add_cpu({2, 2, 2, 1});
    EXPECT_EQ(msg(b),
              "socket 0 has 2 NUMA nodes, socket 1 has 1: counts must be the same on every one");
  }
  {
    cpu_topology_builder b;
    EXPECT_EQ(msg(b), "no CPUs");
    b.add_cpu({-1, 0, 0, 0});
    EXPECT_NE(msg(b).find("cpu -1"), std::string::npos);
  }
  {  // AddCPUInfo: core 0 of socket 0 and core 0 of socket 1 are two cores.
    cpu_topology_builder b;
    b.add_cpu_info(0, 0, 0, 0).add_cpu_info(1, 1, 0, 1);
    auto t = b.build();
    ASSERT_TRUE(t);
    EXPECT_EQ(t->num_cores(), 2);
    EXPECT_EQ(t->find(1)->core_id, 1 << 16);
  }
}

TEST(CPUTopology, Annotation) {
  auto t = parse_cpu_topology_annotation(
      R"({"detail":[{"id":0,"core":0,"socket":0,"node":0},{"id":1,"core":0,"socket":0,"node":0},)"
      R"({"id":2,"core":0,"socket":1,"node":1},{"id":3,"core":0,"socket":1,"node":1}]})");
  ASSERT_TRUE(t) << t.error().describe();
  EXPECT_EQ(t->num_cpus(), 4);
  EXPECT_EQ(t->num_cores(), 2);
  EXPECT_EQ(t->num_sockets(), 2);
  EXPECT_EQ(t->cpus_per_core(), 2);
  auto bad = parse_cpu_topology_annotation(R"({"detail":[{"id":"x"}]})");
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().where, "node.koordinator.sh/cpu-topology");
  EXPECT_EQ(bad.error().message, "detail[0].id: not an integer");
  EXPECT_FALSE(parse_cpu_topology_annotation("{"));
  EXPECT_EQ(parse_cpu_topology_annotation("{}").error().message, "no CPUs");
}

}  // namespace
}  // namespace colony::scheduler::numa
