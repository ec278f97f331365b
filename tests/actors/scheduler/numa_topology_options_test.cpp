// new_topology_options (actors/scheduler/numa/topology_options.hpp): Koordinator's
// topology_options_test.go TestTopologyOptionsManager (the NodeResourceTopology object it
// creates, then the same object without pod-cpu-allocs), and the error values for malformed
// annotations.
#include "actors/scheduler/numa/topology_options.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace colony::scheduler::numa {
namespace {

// The cpu-topology annotation of buildCPUTopologyForTest(2, 1, 4, 2), as the test marshals it
// (core & 0xffff, node & 0xffff).
std::string topology_annotation() {
  const auto t = build_cpu_topology_for_test(2, 1, 4, 2);
  nlohmann::json detail = nlohmann::json::array();
  for (const auto& c : t.details())
    detail.push_back({{"id", c.cpu_id},
                      {"core", c.core_id & 0xffff},
                      {"socket", c.socket_id},
                      {"node", c.node_id & 0xffff}});
  return nlohmann::json{{"detail", detail}}.dump();
}

label_map koordinator_annotations() {
  return {
      {std::string(annotation_node_cpu_topology), topology_annotation()},
      {std::string(annotation_kubelet_cpu_manager_policy),
       R"({"policy":"static","options":{"static":"true"},"reservedCPUs":"0-1"})"},
      {std::string(annotation_node_cpu_allocs),
       R"([{"namespace":"default","name":"pod-1","uid":"6f1c","cpuset":"0-3","managedByKubelet":true}])"},
      {std::string(annotation_node_system_qos_resource), R"({"cpuset":"4-5"})"},
      {std::string(annotation_node_reservation), R"({"reservedCPUs":"6-7"})"},
  };
}

const std::vector<nrt_zone> zones{{"node-0", "Node", 8000}, {"node-1", "Node", 8000}};

TEST(TopologyOptions, KoordinatorTopologyOptionsManager) {
  const auto o = new_topology_options(koordinator_annotations(), {}, zones);
  EXPECT_TRUE(o.problems.empty()) << o.problems.front().describe();
  // The topology equals buildCPUTopologyForTest's with core ids made socket << 16 | core.
  const auto want = build_cpu_topology_for_test(2, 1, 4, 2);
  ASSERT_EQ(o.topology.num_cpus(), want.num_cpus());
  for (const auto& c : want.details()) {
    auto composed = c;
    composed.core_id = c.socket_id << 16 | c.core_id;
    EXPECT_EQ(*o.topology.find(c.cpu_id), composed);
  }
  ASSERT_TRUE(o.policy);
  EXPECT_EQ(o.policy->policy, "static");
  EXPECT_EQ(o.policy->reserved_cpus.to_string(), "0-1");
  EXPECT_EQ(o.max_ref_count, 1);
  EXPECT_EQ(o.reserved_cpus.to_string(), "0-7");
  EXPECT_EQ(o.numa_node_cpus, (std::vector<numa_node_cpu>{{0, 0}, {1, 8000}}));
  EXPECT_EQ(o.topology_policy, numa_topology_policy::none);

  // The same object without pod-cpu-allocs.
  auto a = koordinator_annotations();
  a.erase(std::string(annotation_node_cpu_allocs));
  EXPECT_EQ(new_topology_options(a, {}, zones).reserved_cpus.to_string(), "0-1,4-7");
}

TEST(TopologyOptions, AllocsSystemQOSAndZones) {
  label_map a{
      {std::string(annotation_node_cpu_allocs),
       R"([{"uid":"a","cpuset":"8-9","managedByKubelet":true},)"
       R"({"uid":"b","cpuset":"10","managedByKubelet":false},)"
       R"({"uid":"","cpuset":"11","managedByKubelet":true},)"
       R"({"uid":"c","cpuset":"x","managedByKubelet":true}])"},
      {std::string(annotation_node_system_qos_resource),
       R"({"cpuset":"12","cpusetExclusive":false})"},
      {std::string(annotation_node_cpu_topology), topology_annotation()},
  };
  const std::vector<nrt_zone> z{{"node-1", "Node", 8000},
                                {"socket-0", "Socket", 16000},
                                {"node-0", "Node", 0},
                                {"node-x", "Node", 1000}};
  const auto o = new_topology_options(a, {"SingleNUMANodePodLevel"}, z);
  EXPECT_EQ(o.reserved_cpus.to_string(), "8-9");
  EXPECT_EQ(o.topology_policy, numa_topology_policy::single_numa_node);
  // Zero cpu stays zero; node 1 loses its two reserved CPUs; node-x is reported.
  EXPECT_EQ(o.numa_node_cpus, (std::vector<numa_node_cpu>{{0, 0}, {1, 6000}}));
  ASSERT_EQ(o.problems.size(), 1U);
  EXPECT_EQ(o.problems[0].message, "zone name \"node-x\" is not node-<id>");
}

TEST(TopologyOptions, MalformedAnnotationsAreReportedAndLeftOut) {
  label_map a{
      {std::string(annotation_node_cpu_allocs), R"({"uid":"a"})"},
      {std::string(annotation_kubelet_cpu_manager_policy), R"({"policy":1})"},
      {std::string(annotation_node_reservation), R"({"reservedCPUs":"2-1"})"},
      {std::string(annotation_node_system_qos_resource), R"({"cpusetExclusive":"yes"})"},
      {std::string(annotation_node_cpu_topology), R"({"detail":[{"id":0,"core":0},{"id":0}]})"},
  };
  const auto o = new_topology_options(a, {}, {});
  EXPECT_TRUE(o.reserved_cpus.empty());
  EXPECT_FALSE(o.policy);
  EXPECT_FALSE(o.topology.is_valid());
  ASSERT_EQ(o.problems.size(), 5U);
  EXPECT_EQ(o.problems[0].where, annotation_node_cpu_allocs);
  EXPECT_EQ(o.problems[0].message, "not a JSON array");
  EXPECT_EQ(o.problems[1].where, annotation_kubelet_cpu_manager_policy);
  EXPECT_EQ(o.problems[1].message, "policy: not a string");
  EXPECT_EQ(o.problems[2].where, annotation_node_reservation);
  EXPECT_EQ(o.problems[2].message.rfind("reservedCPUs: invalid range", 0), 0U);
  EXPECT_EQ(o.problems[3].message, "cpusetExclusive: not a boolean");
  EXPECT_EQ(o.problems[4].message, "cpu 0 listed twice: core 0 and core 0");
}

}  // namespace
}  // namespace colony::scheduler::numa
