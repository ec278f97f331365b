// koordlet_component's NodeMetric memory under nodeMemoryCollectPolicy usageWithHotPageCache
// (Koordinator's states_nodemetric.go: the hot-page series where kidled runs, else usage without
// page cache), and the policy the report says its figures follow.
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "actors/koordlet/actor/koordlet_component.hpp"
#include "tests/actors/slo_controller_actor/event_log.hpp"
#include "tests/support/component_feed.hpp"
#include "tests/support/resources.hpp"

namespace colony::koordlet_actor {
namespace {

using namespace colony::testing;
using messages::to_string_view;

struct hot_pod {
  std::string pod;
  std::int64_t memory;  // usage without page cache
  std::int64_t hot;     // with hot page cache; -1: no idle page stats
};

std::uint64_t sample(event_log& log, std::int64_t t, std::int64_t node_mem, std::int64_t node_hot,
                     const std::vector<hot_pod>& pods) {
  auto& fbb = log.b.fbb();
  std::vector<flatbuffers::Offset<wire::PodSample>> v;
  for (const auto& p : pods) {
    const auto key = fbb.CreateString(p.pod);
    const auto uid = fbb.CreateString(p.pod);
    const auto u = log.b.resources(cpu_mem(100, p.memory));
    v.push_back(wire::CreatePodSample(fbb, key, uid, u, wire::QoSClass::LS,
                                      wire::KubeQoSClass::Burstable, 0, 0, -1, 0, -1, -1, p.hot));
  }
  const auto pv = fbb.CreateVector(v);
  const auto n = fbb.CreateString("n1");
  const auto nu = log.b.resources(cpu_mem(500, node_mem));
  return log.append(t, wire::EntityKind::Node, "n1",
                    wire::CreateNodeUsageSampled(fbb, n, 500, nu, pv, 0, node_hot), "bridge/node");
}

const wire::NodeMetricReported* last_report(std::vector<messages::byte_buffer>&&) = delete;
const wire::NodeMetricReported* last_report(const std::vector<messages::byte_buffer>& out) {
  const wire::NodeMetricReported* r = nullptr;
  for (const auto& b : out)
    if (decoded(b).payload_type() == wire::Payload::NodeMetricReported)
      r = decoded(b).payload_as_NodeMetricReported();
  return r;
}

TEST(KoordletColdPage, ReportUsesMemoryWithHotPageCacheWhereTheSamplesHaveIt) {
  struct row {
    const char* name;
    koordlet::node_memory_collect_policy policy;
    std::int64_t node_hot;
    std::int64_t want_node;
    std::int64_t want_a, want_b;
    const char* want_policy;
  };
  using mp = koordlet::node_memory_collect_policy;
  const row rows[] = {
      {"default policy: usage without page cache", mp::usage_without_page_cache, 5 * gib, 4 * gib,
       gib, gib, "usageWithoutPageCache"},
      {"hot page cache where sampled; a pod without idle page stats keeps its usage",
       mp::usage_with_hot_page_cache, 5 * gib, 5 * gib, 3 * gib / 2, gib, "usageWithHotPageCache"},
      {"no kidled on the node: usage without page cache", mp::usage_with_hot_page_cache, -1,
       4 * gib, gib, gib, "usageWithoutPageCache"},
  };
  for (const auto& r : rows) {
    SCOPED_TRACE(r.name);
    event_log log;
    log.node(0, "n1", cpu_mem(2000, 8 * gib), cpu_mem(2000, 8 * gib));
    koordlet_options o;
    o.node = "n1";
    o.report_interval_ms = 1000;
    o.report_policy.memory_policy = r.policy;
    koordlet_component c(o);
    (void)feed(c, log);
    const std::vector<hot_pod> pods{{"a", gib, 3 * gib / 2}, {"b", gib, -1}};
    const wire::NodeMetricReported* rep = nullptr;
    std::vector<messages::byte_buffer> out;
    for (std::int64_t t = 500; t <= 1500; t += 500) {
      const auto from = log.records.size();
      sample(log, t, 4 * gib, r.node_hot, pods);
      out = feed(c, log, from);
      if (const auto* x = last_report(out)) rep = x;
    }
    ASSERT_NE(rep, nullptr);
    EXPECT_EQ(rep->node_usage()->memory_bytes(), r.want_node);
    ASSERT_EQ(rep->pods()->size(), 2u);
    EXPECT_EQ(rep->pods()->Get(0)->usage()->memory_bytes(), r.want_a);
    EXPECT_EQ(rep->pods()->Get(1)->usage()->memory_bytes(), r.want_b);
    EXPECT_EQ(to_string_view(rep->memory_collect_policy()), r.want_policy);
  }
}

}  // namespace
}  // namespace colony::koordlet_actor
