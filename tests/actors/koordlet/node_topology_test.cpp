// The koordlet's NodeResourceTopology report (calc_node_topology) on the machine of Koordinator's
// pkg/koordlet/statesinformer/impl/states_noderesourcetopology_test.go Test_reportNodeTopology:
// 2 sockets x 2 cores x 2 hyper-threads, one NUMA node per socket.
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "actors/koordlet/node_topology.hpp"
#include "messages/names.hpp"

namespace colony::koordlet {
namespace {

machine_info koordinator_machine() {
  machine_info m;
  for (std::int32_t id = 0; id < 8; ++id)
    m.cpus.push_back({.id = id, .core = id / 2, .socket = id / 4, .numa_node = id / 4});
  // MemTotal 263432804 kB and 263432000 kB.
  m.numa_nodes = {{0, 263432804LL * 1024}, {1, 263432000LL * 1024}};
  m.cpu_model = "XXX";
  m.hyper_thread_enabled = true;
  m.turbo_enabled = true;
  return m;
}

std::map<std::string, std::string> annotations_of(const node_topology_report& r) {
  return {r.annotations.begin(), r.annotations.end()};
}

TEST(KoordletNodeTopology, ReportTopologyAsKoordinatorsKoordletMarshalsIt) {
  const auto m = koordinator_machine();
  node_topology_inputs in;
  in.machine = &m;
  // pod1 LSR on CPU 4, pod2 (no Koordinator QoS) on 3, pod3 LSE on 5.
  in.pods = {{qos_class::lsr, {4}}, {qos_class::none, {3}}, {qos_class::lse, {5}}};
  auto r = calc_node_topology(in);
  ASSERT_TRUE(r) << r.error().describe();
  auto a = annotations_of(*r);
  EXPECT_EQ(
      a.at(std::string(names::annotation_node_cpu_topology)),
      R"({"detail":[{"id":0,"core":0,"socket":0,"node":0},{"id":1,"core":0,"socket":0,"node":0},)"
      R"({"id":2,"core":1,"socket":0,"node":0},{"id":3,"core":1,"socket":0,"node":0},)"
      R"({"id":4,"core":2,"socket":1,"node":1},{"id":5,"core":2,"socket":1,"node":1},)"
      R"({"id":6,"core":3,"socket":1,"node":1},{"id":7,"core":3,"socket":1,"node":1}]})");
  // Koordinator's expectedCPUSharedPool: every pod's cpuset leaves the LS pool.
  EXPECT_EQ(a.at(std::string(names::annotation_node_cpu_shared_pools)),
            R"([{"socket":0,"node":0,"cpuset":"0-2"},{"socket":1,"node":1,"cpuset":"6-7"}])");
  // Only the LSE pod's CPUs leave the BE pool.
  EXPECT_EQ(a.at(std::string(names::annotation_node_be_cpu_shared_pools)),
            R"([{"socket":0,"node":0,"cpuset":"0-3"},{"socket":1,"node":1,"cpuset":"4,6-7"}])");
  EXPECT_EQ(a.at(std::string(names::annotation_cpu_basic_info)),
            R"({"cpuModel":"XXX","hyperThreadEnabled":true,"turboEnabled":true})");
  EXPECT_EQ(a.at(std::string(names::annotation_kubelet_cpu_manager_policy)),
            R"({"policy":"none"})");
  EXPECT_EQ(a.at(std::string(names::annotation_node_cpu_allocs)), "null");
  EXPECT_EQ(a.at(std::string(names::annotation_node_reservation)), "{}");
  EXPECT_EQ(a.size(), 7u);
  EXPECT_TRUE(std::is_sorted(r->annotations.begin(), r->annotations.end()));
  EXPECT_EQ(r->topology_policies, std::vector<std::string>{"None"});
  // expectedZones: cpu 4 per node, memory MemTotal in bytes.
  ASSERT_EQ(r->zones.size(), 2u);
  EXPECT_EQ(r->zones[0], (nrt_zone{"node-0", "Node", 4000, 269755191296}));
  EXPECT_EQ(r->zones[1], (nrt_zone{"node-1", "Node", 4000, 269754368000}));
}

TEST(KoordletNodeTopology, NodeReservationLeavesBothPoolsAndIsReported) {
  const auto m = koordinator_machine();
  node_topology_inputs in;
  in.machine = &m;
  in.node_reservation = R"({"resources":{"cpu":"2"},"reservedCPUs":"1,0"})";
  in.kubelet_cpu_manager_policy = "static";
  in.topology_policy = "SingleNUMANodePodLevel";
  in.pods = {{qos_class::lse, {6, 7}}};
  auto r = calc_node_topology(in);
  ASSERT_TRUE(r) << r.error().describe();
  auto a = annotations_of(*r);
  EXPECT_EQ(a.at(std::string(names::annotation_node_reservation)), R"({"reservedCPUs":"0-1"})");
  EXPECT_EQ(a.at(std::string(names::annotation_node_cpu_shared_pools)),
            R"([{"socket":0,"node":0,"cpuset":"2-3"},{"socket":1,"node":1,"cpuset":"4-5"}])");
  EXPECT_EQ(a.at(std::string(names::annotation_node_be_cpu_shared_pools)),
            R"([{"socket":0,"node":0,"cpuset":"2-3"},{"socket":1,"node":1,"cpuset":"4-5"}])");
  EXPECT_EQ(a.at(std::string(names::annotation_kubelet_cpu_manager_policy)),
            R"({"policy":"static"})");
  EXPECT_EQ(r->topology_policies, std::vector<std::string>{"SingleNUMANodePodLevel"});
}

TEST(KoordletNodeTopology, EveryCpuHeldLeavesAnEmptyPoolListAndBasicInfoOmitsFalseFields) {
  machine_info m;
  m.cpus = {{0, 0, 0, 0}, {1, 1, 0, 0}};
  m.numa_nodes = {{0, 1 << 30}};
  m.vendor_id = "GenuineIntel";
  node_topology_inputs in;
  in.machine = &m;
  in.pods = {{qos_class::lse, {0, 1}}};
  auto r = calc_node_topology(in);
  ASSERT_TRUE(r) << r.error().describe();
  auto a = annotations_of(*r);
  EXPECT_EQ(a.at(std::string(names::annotation_node_cpu_shared_pools)), "null");
  EXPECT_EQ(a.at(std::string(names::annotation_node_be_cpu_shared_pools)), "null");
  EXPECT_EQ(a.at(std::string(names::annotation_cpu_basic_info)), R"({"vendorID":"GenuineIntel"})");
  ASSERT_EQ(r->zones.size(), 1u);
  EXPECT_EQ(r->zones[0].cpu_milli, 2000);
}

TEST(KoordletNodeTopology, InconsistentMachinesAndBadReservationsAreRefusedNamingWhat) {
  struct row {
    const char* name;
    machine_info m;
    std::string reservation;
    const char* want;  // in the message
  };
  auto two_nodes = koordinator_machine();
  auto no_memory_for_node_1 = two_nodes;
  no_memory_for_node_1.numa_nodes.pop_back();
  auto repeated = two_nodes;
  repeated.cpus[1].id = 0;
  const row rows[] = {
      {"no cpus", machine_info{}, "", "no CPUs"},
      {"a NUMA node without memory", no_memory_for_node_1, "", "NUMA node number not matched"},
      {"a repeated cpu", repeated, "", "cpu 0 is out of order or repeated"},
      {"reservation not JSON", two_nodes, "{", "node.koordinator.sh/reservation is not a JSON"},
      {"reservedCPUs not a list", two_nodes, R"({"reservedCPUs":"0-x"})",
       "node.koordinator.sh/reservation.reservedCPUs"},
      {"reservedCPUs not a string", two_nodes, R"({"reservedCPUs":3})", "must be a string"},
  };
  for (const auto& r : rows) {
    node_topology_inputs in;
    in.machine = &r.m;
    in.node_reservation = r.reservation;
    auto got = calc_node_topology(in);
    ASSERT_FALSE(got) << r.name;
    EXPECT_NE(got.error().message.find(r.want), std::string::npos)
        << r.name << ": " << got.error().message;
  }
}

}  // namespace
}  // namespace colony::koordlet
