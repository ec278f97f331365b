// NodeResourceTopology -> NodeResourceTopologyUpdated (translate_nrt.cpp): what NodeNUMAResource
// reads, the same bytes twice, deletion, which MODIFIEDs are news, refusals naming the field, and
// the scheduler's conversion of the event (the CPU topology and NUMA zones arrive whole).
#include <gtest/gtest.h>

#include <functional>

#include "actors/scheduler/numa/topology_options.hpp"
#include "tests/bridges/kubernetes/translate/translate_fixtures.hpp"

namespace colony::kube {
namespace {

using testing::decode_all;
using testing::json;
using testing::kvs;
using testing::load;
using testing::str;
using testing::t0;

TEST(KubeTranslateNodeResourceTopology, AddedBecomesNodeResourceTopologyUpdated) {
  const json nrt = load("noderesourcetopology-numa-node-1.json");
  auto r = translate_added(object_kind::node_resource_topology, nrt, t0);
  ASSERT_TRUE(r.has_value()) << r.error().describe();
  auto envs = decode_all(*r);
  ASSERT_EQ(envs.size(), 1u);
  EXPECT_EQ(envs[0]->entity_kind(), wire::EntityKind::Node);
  EXPECT_EQ(str(envs[0]->entity_key()), "numa-node-1");
  EXPECT_EQ(envs[0]->compat_version(), 10);
  const auto* e = envs[0]->payload_as_NodeResourceTopologyUpdated();
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(str(e->node()), "numa-node-1");
  EXPECT_FALSE(e->deleted());
  const auto ann = kvs(e->annotations());
  ASSERT_EQ(ann.size(), 2u);  // sorted by key
  EXPECT_EQ(ann[0].first, "kubelet.koordinator.sh/cpu-manager-policy");
  EXPECT_EQ(ann[1].first, "node.koordinator.sh/cpu-topology");
  ASSERT_EQ(e->topology_policies()->size(), 1u);
  EXPECT_EQ(str(e->topology_policies()->Get(0)), "None");
  ASSERT_EQ(e->zones()->size(), 2u);
  const auto* z0 = e->zones()->Get(0);
  EXPECT_EQ(str(z0->name()), "node-0");
  EXPECT_EQ(str(z0->type()), "Node");
  EXPECT_EQ(z0->cpu_allocatable_milli(), 4000);
  EXPECT_EQ(z0->memory_allocatable_bytes(), std::int64_t{15} << 30);  // allocatable, not capacity
  EXPECT_EQ(e->zones()->Get(1)->cpu_allocatable_milli(), 3500);

  // Same object, same bytes.
  auto again = translate_added(object_kind::node_resource_topology, nrt, t0);
  ASSERT_TRUE(again.has_value());
  EXPECT_EQ(*again, *r);

  // What the scheduler makes of it: 2 sockets x 2 cores x 2 threads, the zones' cpu per NUMA node.
  scheduler::numa::label_map a;
  for (const auto& [k, v] : ann) a.insert_or_assign(k, v);
  std::vector<scheduler::numa::nrt_zone> zones;
  for (const auto* z : *e->zones()) {
    scheduler::numa::nrt_zone nz;
    nz.name = str(z->name());
    nz.type = str(z->type());
    nz.cpu_allocatable_milli = z->cpu_allocatable_milli();
    nz.memory_allocatable_bytes = z->memory_allocatable_bytes();
    zones.push_back(std::move(nz));
  }
  auto o = scheduler::numa::new_topology_options(a, {"None"}, zones);
  EXPECT_TRUE(o.problems.empty());
  EXPECT_EQ(o.topology.num_cpus(), 8);
  EXPECT_EQ(o.topology.num_nodes(), 2);
  EXPECT_EQ(o.topology.cpus_per_core(), 2);
  ASSERT_EQ(o.numa_node_cpus.size(), 2u);
  EXPECT_EQ(o.numa_node_cpus[1].cpu_milli, 3500);
  EXPECT_EQ(o.numa_node_cpus[0].memory_bytes, std::int64_t{15} << 30);
}

TEST(KubeTranslateNodeResourceTopology, DeletedAndModified) {
  const json nrt = load("noderesourcetopology-numa-node-1.json");
  auto d = translate_deleted(object_kind::node_resource_topology, nrt, t0);
  ASSERT_TRUE(d.has_value());
  auto envs = decode_all(*d);
  ASSERT_EQ(envs.size(), 1u);
  const auto* e = envs[0]->payload_as_NodeResourceTopologyUpdated();
  ASSERT_NE(e, nullptr);
  EXPECT_TRUE(e->deleted());
  EXPECT_EQ(str(e->node()), "numa-node-1");

  json bumped = nrt;
  bumped["metadata"]["resourceVersion"] = "5200";
  EXPECT_EQ(change_kind(object_kind::node_resource_topology, nrt, bumped), change::none);
  json zone = nrt;
  zone["zones"][1]["resources"][0]["allocatable"] = "4";
  EXPECT_EQ(change_kind(object_kind::node_resource_topology, nrt, zone), change::relevant);
  json policy = nrt;
  policy["topologyPolicies"] = json::array({"SingleNUMANodePodLevel"});
  EXPECT_EQ(change_kind(object_kind::node_resource_topology, nrt, policy), change::relevant);
  json ann = nrt;
  ann["metadata"]["annotations"]["node.koordinator.sh/pod-cpu-allocs"] = "[]";
  EXPECT_EQ(change_kind(object_kind::node_resource_topology, nrt, ann), change::relevant);
  auto m = translate_modified(object_kind::node_resource_topology, nrt, zone, t0);
  ASSERT_TRUE(m.has_value());
  auto menvs = decode_all(*m);
  ASSERT_EQ(menvs.size(), 1u);
  EXPECT_EQ(
      menvs[0]->payload_as_NodeResourceTopologyUpdated()->zones()->Get(1)->cpu_allocatable_milli(),
      4000);
}

TEST(KubeTranslateNodeResourceTopology, RefusalsNameObjectAndField) {
  const json nrt = load("noderesourcetopology-numa-node-1.json");
  struct row {
    const char* name;
    std::function<void(json&)> edit;
    std::string where;
  };
  const std::vector<row> rows = {
      {"quantity", [](json& o) { o["zones"][0]["resources"][1]["allocatable"] = "15Gx"; },
       "NodeResourceTopology numa-node-1: zones[0].resources[1].allocatable"},
      {"missing allocatable", [](json& o) { o["zones"][1]["resources"][0].erase("allocatable"); },
       "NodeResourceTopology numa-node-1: zones[1].resources[0].allocatable"},
      {"policies", [](json& o) { o["topologyPolicies"] = "None"; },
       "NodeResourceTopology numa-node-1: topologyPolicies"},
      {"zone type", [](json& o) { o["zones"][0]["type"] = 3; },
       "NodeResourceTopology numa-node-1: zones[0].type"},
  };
  for (const auto& r : rows) {
    SCOPED_TRACE(r.name);
    json bad = nrt;
    r.edit(bad);
    auto t = translate_added(object_kind::node_resource_topology, bad, t0);
    ASSERT_FALSE(t.has_value());
    EXPECT_EQ(t.error().code, errc::invalid_input);
    EXPECT_EQ(t.error().where, r.where) << t.error().describe();
  }
}

}  // namespace
}  // namespace colony::kube
