// koordlet_component's NodeResourceTopology report: a NodeTopologySampled of its node (the
// machine of Koordinator's Test_reportNodeTopology), the cpusets its pods hold (PodScheduled's
// cpuset) and the Node's reservation annotation become a NodeResourceTopologyUpdated, emitted
// again only when it changes; a replay emits the same bytes.
#include <map>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "actors/koordlet/actor/koordlet_component.hpp"
#include "actors/koordlet/koordlet_types.hpp"
#include "messages/names.hpp"
#include "tests/actors/slo_controller_actor/event_log.hpp"
#include "tests/support/component_feed.hpp"
#include "tests/support/resources.hpp"

namespace colony::koordlet_actor {
namespace {

using namespace colony::testing;
using messages::to_string_view;

std::uint64_t topology_sample(event_log& log, std::int64_t t, const std::string& node,
                              int numa_nodes = 2) {
  auto& fbb = log.b.fbb();
  std::vector<flatbuffers::Offset<wire::CpuTopologyEntry>> cpus;
  for (int id = 0; id < 8; ++id)
    cpus.push_back(wire::CreateCpuTopologyEntry(fbb, id, id / 2, id / 4, id / 4));
  const auto cv = fbb.CreateVector(cpus);
  std::vector<flatbuffers::Offset<wire::NumaNodeMemory>> mems;
  for (int n = 0; n < numa_nodes; ++n)
    mems.push_back(wire::CreateNumaNodeMemory(fbb, n, (n == 0 ? 263432804LL : 263432000LL) * 1024));
  const auto mv = fbb.CreateVector(mems);
  const auto nn = fbb.CreateString(node);
  const auto model = fbb.CreateString("XXX");
  const auto vendor = fbb.CreateString("");
  return log.append(t, wire::EntityKind::Node, node,
                    wire::CreateNodeTopologySampled(fbb, nn, cv, mv, model, vendor, true, true),
                    "bridge/node");
}

std::uint64_t scheduled_with_cpuset(event_log& log, std::int64_t t, const std::string& pod,
                                    const std::string& cpuset) {
  auto& fbb = log.b.fbb();
  const auto r = log.b.resources(cpu_mem(2000, gib));
  const auto p = fbb.CreateString(pod);
  const auto n = fbb.CreateString("n1");
  const auto cs = fbb.CreateString(cpuset);
  return log.append(t, wire::EntityKind::Node, "n1",
                    wire::CreatePodScheduled(fbb, p, n, -1, r, 0, 0, 0, cs));
}

struct nrt {
  std::map<std::string, std::string> annotations;
  std::vector<std::string> policies;
  std::vector<std::pair<std::string, std::int64_t>> zone_cpu;
  std::int64_t causation = 0;
};

std::vector<nrt> reports(const std::vector<messages::byte_buffer>& out) {
  std::vector<nrt> r;
  for (const auto& b : out) {
    const auto& env = decoded(b);
    if (env.payload_type() != wire::Payload::NodeResourceTopologyUpdated) continue;
    const auto& u = *env.payload_as_NodeResourceTopologyUpdated();
    EXPECT_EQ(to_string_view(u.node()), "n1");
    EXPECT_EQ(to_string_view(env.source()), "koordlet/n1");
    EXPECT_EQ(env.entity_kind(), wire::EntityKind::Node);
    nrt x;
    x.causation = env.causation();
    for (const auto* kv : *u.annotations())
      x.annotations[std::string(to_string_view(kv->key()))] =
          std::string(to_string_view(kv->value()));
    for (const auto* p : *u.topology_policies()) x.policies.emplace_back(to_string_view(p));
    for (const auto* z : *u.zones())
      x.zone_cpu.emplace_back(std::string(to_string_view(z->name())), z->cpu_allocatable_milli());
    r.push_back(std::move(x));
  }
  return r;
}

const std::string pools(names::annotation_node_cpu_shared_pools);
const std::string be_pools(names::annotation_node_be_cpu_shared_pools);

TEST(KoordletTopology, TheMachineAndThePodsCpusetsBecomeTheNodesNodeResourceTopology) {
  koordlet_options o;
  o.node = "n1";
  koordlet_component c(o);
  event_log log;
  log.node(1, "n1", cpu_mem(8000, 512 * gib), cpu_mem(8000, 512 * gib));
  log.mutated(2, "default/lsr", wire::QoSClass::LSR, wire::PriorityClass::Prod, 9000,
              cpu_mem(2000, gib));
  log.mutated(2, "default/lse", wire::QoSClass::LSE, wire::PriorityClass::Prod, 9000,
              cpu_mem(2000, gib));
  EXPECT_TRUE(reports(feed(c, log)).empty()) << "nothing before the machine is known";

  auto from = log.records.size();
  const auto sample = topology_sample(log, 3, "n1");
  auto r = reports(feed(c, log, from));
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].causation, static_cast<std::int64_t>(sample));
  EXPECT_EQ(r[0].annotations.at(pools),
            R"([{"socket":0,"node":0,"cpuset":"0-3"},{"socket":1,"node":1,"cpuset":"4-7"}])");
  EXPECT_EQ(r[0].annotations.at(std::string(names::annotation_cpu_basic_info)),
            R"({"cpuModel":"XXX","hyperThreadEnabled":true,"turboEnabled":true})");
  EXPECT_EQ(r[0].policies, std::vector<std::string>{"None"});
  EXPECT_EQ(r[0].zone_cpu, (std::vector<std::pair<std::string, std::int64_t>>{{"node-0", 4000},
                                                                              {"node-1", 4000}}));
  ASSERT_TRUE(c.topology_reported().has_value());

  // The same machine again: nothing new.
  from = log.records.size();
  topology_sample(log, 4, "n1");
  EXPECT_TRUE(reports(feed(c, log, from)).empty());

  // An LSR pod bound to CPUs 2-3, an LSE pod to 4-5: both leave the LS pool, the LSE one the BE.
  from = log.records.size();
  scheduled_with_cpuset(log, 5, "default/lsr", "2-3");
  scheduled_with_cpuset(log, 6, "default/lse", "4-5");
  r = reports(feed(c, log, from));
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(r[1].annotations.at(pools),
            R"([{"socket":0,"node":0,"cpuset":"0-1"},{"socket":1,"node":1,"cpuset":"6-7"}])");
  EXPECT_EQ(r[1].annotations.at(be_pools),
            R"([{"socket":0,"node":0,"cpuset":"0-3"},{"socket":1,"node":1,"cpuset":"6-7"}])");

  // The LSE pod finishes: its CPUs return to both pools.
  from = log.records.size();
  log.finished(7, "default/lse", "n1");
  r = reports(feed(c, log, from));
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].annotations.at(pools),
            R"([{"socket":0,"node":0,"cpuset":"0-1"},{"socket":1,"node":1,"cpuset":"4-7"}])");
  EXPECT_EQ(r[0].annotations.at(be_pools),
            R"([{"socket":0,"node":0,"cpuset":"0-3"},{"socket":1,"node":1,"cpuset":"4-7"}])");

  // A replay of the whole log by a new component emits the same records, byte for byte.
  koordlet_component again(o);
  std::vector<messages::byte_buffer> first, second;
  {
    koordlet_component once(o);
    first = feed(once, log);
  }
  second = feed(again, log);
  std::vector<messages::byte_buffer> nrt_first, nrt_second;
  for (auto& b : first)
    if (decoded(b).payload_type() == wire::Payload::NodeResourceTopologyUpdated)
      nrt_first.push_back(b);
  for (auto& b : second)
    if (decoded(b).payload_type() == wire::Payload::NodeResourceTopologyUpdated)
      nrt_second.push_back(b);
  EXPECT_EQ(nrt_first.size(), 4u);
  EXPECT_EQ(nrt_first, nrt_second);
}

TEST(KoordletTopology, TheNodesReservationLeavesThePoolsAndAnInconsistentMachineIsAnError) {
  koordlet_options o;
  o.node = "n1";
  koordlet_component c(o);
  event_log log;
  log.annotated_node(
      1, "n1", cpu_mem(8000, 512 * gib), cpu_mem(8000, 512 * gib), {},
      {{std::string(names::annotation_node_reservation), R"({"reservedCPUs":"0-1"})"}});
  topology_sample(log, 2, "n1");
  auto r = reports(feed(c, log));
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].annotations.at(std::string(names::annotation_node_reservation)),
            R"({"reservedCPUs":"0-1"})");
  EXPECT_EQ(r[0].annotations.at(pools),
            R"([{"socket":0,"node":0,"cpuset":"2-3"},{"socket":1,"node":1,"cpuset":"4-7"}])");

  // Another node's machine is not this koordlet's.
  auto from = log.records.size();
  topology_sample(log, 3, "n2", 1);
  EXPECT_TRUE(reports(feed(c, log, from)).empty());
  EXPECT_FALSE(c.topology_error().has_value());

  // A reading whose CPUs sit on a NUMA node without memory: no report, the error names it.
  from = log.records.size();
  topology_sample(log, 4, "n1", 1);
  EXPECT_TRUE(reports(feed(c, log, from)).empty());
  ASSERT_TRUE(c.topology_error().has_value());
  EXPECT_NE(c.topology_error()->message.find("NUMA node number not matched"), std::string::npos)
      << c.topology_error()->message;
}

// The cpuset suppress policy picks from the machine's CPUs once its topology is known (not the
// capacity-based guess), and leaves out the Node's reserved CPUs (cpusuppress's candidates).
TEST(KoordletTopology, BeCpusetSuppressionPicksFromTheMachineAndLeavesReservedCpusOut) {
  koordlet_options o;
  o.node = "n1";
  o.threshold.enable = true;
  o.gates.be_memory_evict = false;
  o.gates.batch_resource = false;
  koordlet_component c(o);
  event_log log;
  // The Node says 16 cores (the guess would be CPUs 0-15); the machine has 8.
  log.annotated_node(
      0, "n1", cpu_mem(16000, 64 * gib), cpu_mem(16000, 64 * gib), {},
      {{std::string(names::annotation_node_reservation), R"({"reservedCPUs":"0-1"})"}});
  log.mutated(1, "default/prod", wire::QoSClass::LS, wire::PriorityClass::Prod, 9500,
              cpu_mem(4000, 16 * gib), cpu_mem(4000, 16 * gib));
  log.mutated(2, "default/be", wire::QoSClass::BE, wire::PriorityClass::Batch, 5500, {});
  log.scheduled(3, "default/prod", "n1", cpu_mem(4000, 16 * gib));
  log.scheduled(4, "default/be", "n1", {});
  (void)feed(c, log);
  ASSERT_EQ(c.processors().size(), 16u);
  auto from = log.records.size();
  topology_sample(log, 5, "n1");
  (void)feed(c, log, from);
  const auto& procs = c.processors();
  ASSERT_EQ(procs.size(), 8u);
  EXPECT_EQ(procs[5].core_id, 2);
  EXPECT_EQ(procs[5].node_id, 1);
  from = log.records.size();
  log.metric(60000, "n1", 6000, 8 * gib, {{"default/prod", 5000, gib}, {"default/be", 1000, gib}});
  const auto out = feed(c, log, from);
  std::string cpuset;
  for (const auto& b : out)
    if (decoded(b).payload_type() == wire::Payload::BeSuppressed)
      cpuset = std::string(to_string_view(decoded(b).payload_as_BeSuppressed()->cpuset()));
  ASSERT_FALSE(cpuset.empty());
  auto cpus = koordlet::parse_cpuset(cpuset);
  ASSERT_TRUE(cpus);
  for (const auto id : *cpus) {
    EXPECT_GE(id, 2) << cpuset << ": a reserved CPU";
    EXPECT_LT(id, 8) << cpuset << ": not a CPU of the machine";
  }
}

}  // namespace
}  // namespace colony::koordlet_actor
