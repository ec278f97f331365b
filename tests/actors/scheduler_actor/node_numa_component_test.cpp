// scheduler_component with NodeNUMAResource (in Koordinator's shipped profile): a node's
// NodeResourceTopologyUpdated gives it a CPU topology; an LSR prod pod's PodBindProposed carries
// the cpuset; a PodScheduled with a cpuset (ours, another scheduler's, or replayed) holds those
// CPUs on the node; a node without a (valid) topology refuses cpuset pods with Koordinator's
// reason.
#include "actors/scheduler/actor/scheduler_component.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "actors/scheduler/numa/cpu_set.hpp"
#include "actors/scheduler/numa/cpu_topology.hpp"
#include "messages/names.hpp"
#include "tests/actors/scheduler_actor/component_rig.hpp"

namespace colony {
namespace {

using messages::to_string_view;
using testing::gib;
using rig = testing::component_rig;
using testing::proposal_for;
namespace numa = scheduler::numa;

// The NodeResourceTopology the koordlet reports for a machine of `m`; with `kubelet_policy`, the
// kubelet's topology policy and one zone per NUMA node (its CPUs, 16 GiB).
messages::byte_buffer nrt(rig& r, std::int64_t t, const std::string& node,
                          const numa::machine_model& m, const std::string& topology_override = {},
                          const std::string& kubelet_policy = {}) {
  auto topo = numa::format_cpu_topology_annotation(m);
  EXPECT_TRUE(topo.has_value());
  auto& f = r.f.b.fbb();
  auto n = f.CreateString(node);
  auto ann = r.f.b.key_values({{std::string(names::annotation_node_cpu_topology),
                                topology_override.empty() ? *topo : topology_override}});
  flatbuffers::Offset<flatbuffers::Vector<flatbuffers::Offset<flatbuffers::String>>> pol;
  flatbuffers::Offset<flatbuffers::Vector<flatbuffers::Offset<wire::TopologyZone>>> zones;
  if (!kubelet_policy.empty()) {
    auto ps = f.CreateString(kubelet_policy);
    pol = f.CreateVector(&ps, 1);
    std::vector<flatbuffers::Offset<wire::TopologyZone>> zv;
    const int nodes = m.sockets * m.numa_nodes_per_socket;
    for (int z = 0; z < nodes; ++z) {
      auto zn = f.CreateString("node-" + std::to_string(z));
      auto zt = f.CreateString("Node");
      zv.push_back(wire::CreateTopologyZone(
          f, zn, zt, std::int64_t{m.cores_per_numa_node} * m.threads_per_core * 1000, 16 * gib));
    }
    zones = f.CreateVector(zv);
  }
  auto p = wire::CreateNodeResourceTopologyUpdated(f, n, ann, pol, zones);
  return r.f.b.finish(messages::header{event_time{t}, wire::EntityKind::Node, node, -1, "test"}, p);
}

// An LSR prod pod: submitted, then mutated by the webhook (qosClass LSR, koord-prod).
std::vector<messages::byte_buffer> lsr_pod(rig& r, std::int64_t t, const std::string& name,
                                           std::int64_t cpu) {
  std::vector<messages::byte_buffer> out;
  out.push_back(r.f.pod(t, name, cpu, gib));
  const auto req = testing::cpu_mem(cpu, gib);
  auto& f = r.f.b.fbb();
  auto n = f.CreateString(name);
  auto sn = f.CreateString("koord-scheduler");
  auto rq = r.f.b.resources(req);
  auto lim = r.f.b.resources(req);
  wire::PodMutatedBuilder pb(f);
  pb.add_name(n);
  pb.add_scheduler_name(sn);
  pb.add_requests(rq);
  pb.add_limits(lim);
  pb.add_qos_class(wire::QoSClass::LSR);
  pb.add_priority_class(wire::PriorityClass::Prod);
  pb.add_priority(9000);
  auto p = pb.Finish();
  out.push_back(r.f.b.finish(
      messages::header{event_time{t}, wire::EntityKind::Pod, name, -1, "admission"}, p));
  return out;
}

const numa::machine_model two_by_four_ht{2, 1, 4, 2};  // 16 CPUs, core 0 = cpus 0 and 8

TEST(SchedulerNodeNUMAResource, LsrPodsGetDisjointCpusetsOnTheNodeWithATopology) {
  rig r;
  std::vector<messages::byte_buffer> in = {r.f.node(0, "plain", 16000, 64 * gib),
                                           r.f.node(0, "numa", 16000, 64 * gib),
                                           nrt(r, 0, "numa", two_by_four_ht)};
  for (auto& b : lsr_pod(r, 1000, "ns/a", 4000)) in.push_back(std::move(b));
  auto out = r.batch(std::move(in));
  const auto* a = proposal_for(out, "ns/a");
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(to_string_view(a->node()), "numa");  // "plain" has no CPU topology
  // FullPCPUs (the default bind policy): two whole cores of NUMA node 0.
  EXPECT_EQ(to_string_view(a->cpuset()), "0-1,8-9");

  std::vector<messages::byte_buffer> in2;
  for (auto& b : lsr_pod(r, 2000, "ns/b", 4000)) in2.push_back(std::move(b));
  out = r.batch(std::move(in2));
  const auto* b = proposal_for(out, "ns/b");
  ASSERT_NE(b, nullptr);
  auto sa = numa::cpu_set::parse("0-1,8-9");
  auto sb = numa::cpu_set::parse(to_string_view(b->cpuset()));
  ASSERT_TRUE(sb.has_value());
  EXPECT_EQ(sb->size(), 4);
  EXPECT_TRUE(sb->intersection(*sa).empty()) << to_string_view(b->cpuset());

  // An LS pod is placed without a cpuset and its proposal keeps the v9 bytes (no field).
  out = r.batch({r.f.pod(3000, "ns/ls", 1000, gib)});
  const auto* ls = proposal_for(out, "ns/ls");
  ASSERT_NE(ls, nullptr);
  EXPECT_EQ(ls->cpuset(), nullptr);
}

// The CPUs a PodScheduled names are held whoever proposed it: a replayed or foreign binding.
TEST(SchedulerNodeNUMAResource, ABoundPodsCpusetIsHeldOnItsNode) {
  rig r;
  auto out = r.batch({r.f.node(0, "numa", 16000, 64 * gib), nrt(r, 0, "numa", two_by_four_ht)});
  // Another scheduler's pod holds NUMA node 0's first two cores.
  auto& f = r.f.b.fbb();
  auto pn = f.CreateString("ns/other");
  auto nn = f.CreateString("numa");
  auto rq = r.f.b.resources(testing::cpu_mem(4000, gib, 1));
  auto sn = f.CreateString("koord-scheduler/b");
  auto cs = f.CreateString("0-1,8-9");
  auto ps = wire::CreatePodScheduled(f, pn, nn, -1, rq, 0, sn, 0, cs);
  std::vector<messages::byte_buffer> in = {r.f.b.finish(
      messages::header{event_time{500}, wire::EntityKind::Node, "numa", -1, "node"}, ps)};
  for (auto& b : lsr_pod(r, 1000, "ns/a", 4000)) in.push_back(std::move(b));
  out = r.batch(std::move(in));
  const auto* a = proposal_for(out, "ns/a");
  ASSERT_NE(a, nullptr);
  // LeastAllocated (numaScoringStrategy's default) prefers the emptier NUMA node 1.
  EXPECT_EQ(to_string_view(a->cpuset()), "4-5,12-13");
}

// Bad input: an inconsistent topology (a CPU on two cores) gives the node no topology; the LSR
// pod is unschedulable with Koordinator's reason, and an LS pod still fits there.
TEST(SchedulerNodeNUMAResource, AnInconsistentTopologyRefusesCpusetPodsOnly) {
  rig r;
  const std::string bad =
      R"({"detail":[{"id":0,"core":0,"socket":0,"node":0},{"id":0,"core":1,"socket":0,"node":0}]})";
  std::vector<messages::byte_buffer> in = {r.f.node(0, "numa", 16000, 64 * gib),
                                           nrt(r, 0, "numa", two_by_four_ht, bad)};
  for (auto& b : lsr_pod(r, 1000, "ns/a", 4000)) in.push_back(std::move(b));
  auto out = r.batch(std::move(in));
  ASSERT_EQ(proposal_for(out, "ns/a"), nullptr);
  bool reason = false;
  for (const auto& b : out)
    if (const auto* u = testing::env_of(b).payload_as_PodUnschedulable())
      if (u->reasons())
        for (const auto* x : *u->reasons())
          reason = reason || to_string_view(x->reason()) == "node(s) invalid CPU Topology";
  EXPECT_TRUE(reason);
  // What is wrong, and where, is kept with the node (the refusal's detail).
  const auto* n = r.s->node("numa");
  ASSERT_NE(n, nullptr);
  EXPECT_NE(n->numa.topology_problem.find("node.koordinator.sh/cpu-topology"), std::string::npos)
      << n->numa.topology_problem;
  EXPECT_NE(n->numa.topology_problem.find("cpu 0 listed twice"), std::string::npos)
      << n->numa.topology_problem;
  out = r.batch({r.f.pod(2000, "ns/ls", 1000, gib)});
  EXPECT_NE(proposal_for(out, "ns/ls"), nullptr);
}

// Under the kubelet's SingleNUMANodePodLevel policy an LS pod gets NUMA node resources on one
// NUMA node, carried by its proposal; a bound pod's NUMA resources (a PodScheduled, here another
// scheduler's) are held, so the next pod goes to the other NUMA node.
TEST(SchedulerNodeNUMAResource, SingleNUMANodePodsCarryAndHoldNUMAResources) {
  rig r;
  // 2 NUMA nodes x 4 cores x 2 threads: 8 cpu and 16 GiB each.
  auto out = r.batch({r.f.node(0, "numa", 16000, 32 * gib),
                      nrt(r, 0, "numa", two_by_four_ht, {}, "SingleNUMANodePodLevel")});
  auto& f = r.f.b.fbb();
  auto pn = f.CreateString("ns/other");
  auto nn = f.CreateString("numa");
  auto rq = r.f.b.resources(testing::cpu_mem(6000, gib, 1));
  auto sn = f.CreateString("koord-scheduler/b");
  std::vector<flatbuffers::Offset<wire::NumaNodeResource>> held = {
      wire::CreateNumaNodeResource(f, 0, 6000, gib)};
  auto hv = f.CreateVector(held);
  auto ps = wire::CreatePodScheduled(f, pn, nn, -1, rq, 0, sn, 0, 0, hv);
  out = r.batch(
      {r.f.b.finish(messages::header{event_time{500}, wire::EntityKind::Node, "numa", -1, "node"},
                    ps),
       r.f.pod(1000, "ns/ls", 4000, 2 * gib)});
  const auto* p = proposal_for(out, "ns/ls");
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(p->cpuset(), nullptr);  // LS: no cpuset
  ASSERT_NE(p->numa_resources(), nullptr);
  ASSERT_EQ(p->numa_resources()->size(), 1u);
  EXPECT_EQ(p->numa_resources()->Get(0)->node(), 1);  // NUMA node 0 has 2 cpu left
  EXPECT_EQ(p->numa_resources()->Get(0)->cpu_milli(), 4000);
  EXPECT_EQ(p->numa_resources()->Get(0)->memory_bytes(), 2 * gib);
  // A third pod of 5 cpu fits no single NUMA node (2 and 4 left): unschedulable, with the reason.
  out = r.batch({r.f.pod(2000, "ns/big", 5000, gib)});
  EXPECT_EQ(proposal_for(out, "ns/big"), nullptr);
  bool reason = false;
  for (const auto& b : out)
    if (const auto* u = testing::env_of(b).payload_as_PodUnschedulable())
      if (u->reasons())
        for (const auto* x : *u->reasons())
          reason = reason || to_string_view(x->reason()).find("Unaligned NUMA Hint") !=
                                 std::string_view::npos;
  EXPECT_TRUE(reason);
}

// The node's cpu amplification ratio amplifies its NUMA nodes too (amplifyNUMANodeResources),
// whichever of the ratio and the topology arrives first: 8 CPUs a NUMA node x 1.5 hold a 10-cpu
// pod on one NUMA node.
TEST(SchedulerNodeNUMAResource, TheAmplificationRatioAmplifiesTheNUMANodes) {
  for (const bool topology_first : {false, true}) {
    SCOPED_TRACE(topology_first ? "topology first" : "ratio first");
    rig r;
    std::vector<messages::byte_buffer> in;
    auto topo = nrt(r, 0, "numa", two_by_four_ht, {}, "SingleNUMANodePodLevel");
    auto node = r.f.amplified_node(0, "numa", 16000, 32 * gib, R"({"cpu":1.50})");
    if (topology_first) {
      in.push_back(std::move(topo));
      in.push_back(std::move(node));
    } else {
      in.push_back(std::move(node));
      in.push_back(std::move(topo));
    }
    in.push_back(r.f.pod(1000, "ns/ten", 10000, gib));
    auto out = r.batch(std::move(in));
    const auto* p = proposal_for(out, "ns/ten");
    ASSERT_NE(p, nullptr);
    ASSERT_NE(p->numa_resources(), nullptr);
    ASSERT_EQ(p->numa_resources()->size(), 1u);
    EXPECT_EQ(p->numa_resources()->Get(0)->cpu_milli(), 10000);
  }
}

}  // namespace
}  // namespace colony
