// koordlet_component with host applications (NodeSLO spec.hostApplications): their samples
// (NodeUsageSampled.host_apps) in cpusuppress's hostApps (helpers.CalculateFilterPodsUsed with
// NonBEHostAppFilter: a non-BE host app lowers BE's share; a BE one under KubepodsBesteffort
// does not), the system usage (node - pods - host apps), the NodeMetric report's host_apps, and
// group identity's bvt on their cgroups (SetHostAppBvtValue via the host-app reconciler).
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "actors/koordlet/actor/koordlet_component.hpp"
#include "tests/actors/slo_controller_actor/event_log.hpp"
#include "tests/support/component_feed.hpp"
#include "tests/support/resources.hpp"
#include "tests/support/wire_terms.hpp"

namespace colony::koordlet_actor {
namespace {

using namespace colony::testing;
using messages::to_string_view;
namespace kl = koordlet;

struct app_sample {
  std::string name;
  std::int64_t cpu_milli;
  std::int64_t memory;
};

// An LS pod (burstable tier) and a BE pod (besteffort tier), each 500 milli, 1 GiB.
std::uint64_t sample(event_log& log, std::int64_t t, std::int64_t node_cpu,
                     const std::vector<app_sample>& apps) {
  auto& fbb = log.b.fbb();
  std::vector<flatbuffers::Offset<wire::PodSample>> v;
  for (const auto& [pod, qos, kube] :
       {std::tuple{"be-1", wire::QoSClass::BE, wire::KubeQoSClass::BestEffort},
        std::tuple{"ls-1", wire::QoSClass::LS, wire::KubeQoSClass::Burstable}}) {
    const auto key = fbb.CreateString(pod);
    const auto uid = fbb.CreateString(pod);
    const auto u = log.b.resources(cpu_mem(500, gib));
    v.push_back(wire::CreatePodSample(fbb, key, uid, u, qos, kube));
  }
  const auto pv = fbb.CreateVector(v);
  std::vector<flatbuffers::Offset<wire::HostAppSample>> h;
  for (const auto& a : apps) {
    const auto n = fbb.CreateString(a.name);
    const auto u = log.b.resources(cpu_mem(a.cpu_milli, a.memory));
    h.push_back(wire::CreateHostAppSample(fbb, n, u));
  }
  const auto hv = fbb.CreateVector(h);
  const auto n = fbb.CreateString("n1");
  const auto nu = log.b.resources(cpu_mem(node_cpu, 6 * gib));
  return log.append(t, wire::EntityKind::Node, "n1",
                    wire::CreateNodeUsageSampled(fbb, n, 500, nu, pv, hv), "bridge/node");
}

std::uint64_t node_slo(event_log& log, std::int64_t t, const std::string& apps,
                       const std::string& extra = "") {
  auto& fbb = log.b.fbb();
  const auto s = fbb.CreateString(
      R"({"resourceUsedThresholdWithBE":{"enable":true,"cpuSuppressPolicy":"cfsQuota",)"
      R"("cpuSuppressThresholdPercent":65},"hostApplications":)" +
      apps + extra + "}");
  return log.append(t, wire::EntityKind::Node, "n1", wire::CreateNodeSLOUpdated(fbb, s),
                    "slo-controller");
}

const std::string nginx_ls =
    R"({"name":"nginx","qos":"LS","priority":"koord-prod","cgroupPath":{"base":"CgroupRoot",)"
    R"("relativePath":"host/nginx"}})";
const std::string logs_be_kubepods =
    R"({"name":"logs","qos":"BE","priority":"koord-batch","cgroupPath":)"
    R"({"base":"KubepodsBesteffort","relativePath":"logs"}})";
const std::string logs_be_root =
    R"({"name":"logs","qos":"BE","cgroupPath":{"base":"CgroupRoot","relativePath":"logs"}})";

const wire::BeSuppressed* first_suppress(std::vector<messages::byte_buffer>&&) = delete;
const wire::BeSuppressed* first_suppress(const std::vector<messages::byte_buffer>& out) {
  for (const auto& b : out)
    if (decoded(b).payload_type() == wire::Payload::BeSuppressed)
      return decoded(b).payload_as_BeSuppressed();
  return nullptr;
}

// 4 cores at 65 %: 2600 milli for everything but BE. The LS pod uses 500, the BE pod 500.
TEST(KoordletHostApps, NonBeHostAppsLowerBestEffortsShareBeHostAppsUnderBesteffortDoNot) {
  struct row {
    const char* name;
    std::string apps;  // spec.hostApplications
    std::int64_t node_cpu;
    std::vector<app_sample> samples;
    std::int64_t be_milli;          // calculateBESuppressCPU
    std::int64_t app_non_be_milli;  // hostAppNonBEUsed x 1000
  };
  const std::vector<row> rows{
      // node 1100 = pods 1000 + 100 system: 2600 - 500 - 0 - 100.
      {"idle LS host app", "[" + nginx_ls + "]", 1100, {{"nginx", 0, gib}}, 2000, 0},
      // node 2600 = pods 1000 + nginx 1500 + 100 system: 2600 - 500 - 1500 - 100.
      {"busy LS host app", "[" + nginx_ls + "]", 2600, {{"nginx", 1500, gib}}, 500, 1500},
      // A BE host app under kubepods-besteffort counts as BE: not subtracted, nor as system.
      {"busy BE host app under KubepodsBesteffort",
       "[" + logs_be_kubepods + "]",
       2600,
       {{"logs", 1500, gib}},
       2000,
       0},
      // BE but elsewhere: NonBEHostAppFilter keeps it (its cgroup is outside BE's quota).
      {"busy BE host app under CgroupRoot",
       "[" + logs_be_root + "]",
       2600,
       {{"logs", 1500, gib}},
       500,
       1500},
      // Undeclared, the same usage is the system's: 2600 - 500 - 1600.
      {"no host app declared", "[]", 2600, {{"nginx", 1500, gib}}, 500, 0},
  };
  for (const auto& r : rows) {
    event_log log;
    log.node(0, "n1", cpu_mem(4000, 8 * gib), cpu_mem(4000, 8 * gib));
    node_slo(log, 1, r.apps);
    koordlet_options o;
    o.node = "n1";
    o.report_interval_ms = 1000;
    koordlet_component c(o);
    (void)feed(c, log);
    ASSERT_TRUE(c.config_errors().empty()) << r.name << ": " << c.config_errors()[0].describe();
    const auto from = log.records.size();
    sample(log, 500, r.node_cpu, r.samples);
    const auto out = feed(c, log, from);
    const auto* be = first_suppress(out);
    ASSERT_NE(be, nullptr) << r.name;
    EXPECT_EQ(be->be_cpu_milli(), r.be_milli) << r.name;
    const auto t = terms_of(be->inputs());
    const auto it = t.find("hostAppNonBEUsed");
    EXPECT_EQ(it == t.end() ? 0 : it->second,
              r.app_non_be_milli / 1000 + (r.app_non_be_milli % 1000 >= 500 ? 1 : 0))
        << r.name << " (cores, rounded)";
  }
}

// Two samples then a report: host_apps lists each declared app with its average usage, priority
// and QoS; system usage leaves host apps out; a declared app never sampled is not listed.
TEST(KoordletHostApps, ReportListsHostAppsAndSystemUsageLeavesThemOut) {
  event_log log;
  log.node(0, "n1", cpu_mem(4000, 8 * gib), cpu_mem(4000, 8 * gib));
  node_slo(log, 1, "[" + nginx_ls + "," + logs_be_kubepods + "]");
  koordlet_options o;
  o.node = "n1";
  o.report_interval_ms = 1000;
  koordlet_component c(o);
  (void)feed(c, log);
  ASSERT_EQ(c.host_apps().size(), 2u);
  EXPECT_EQ(c.host_apps()[0].name, "nginx");
  EXPECT_EQ(c.host_apps()[1].base, kl::cgroup_base::kube_besteffort);
  const wire::NodeMetricReported* report = nullptr;
  std::vector<messages::byte_buffer> out;
  for (std::int64_t t = 500; t <= 1500 && report == nullptr; t += 500) {
    const auto from = log.records.size();
    sample(log, t, 2600, {{"nginx", t == 500 ? 1000 : 2000, 256 * mib}});
    out = feed(c, log, from);
    for (const auto& b : out)
      if (decoded(b).payload_type() == wire::Payload::NodeMetricReported)
        report = decoded(b).payload_as_NodeMetricReported();
  }
  ASSERT_NE(report, nullptr);
  ASSERT_NE(report->host_apps(), nullptr);
  ASSERT_EQ(report->host_apps()->size(), 1u) << "logs was never sampled";
  const auto* h = report->host_apps()->Get(0);
  EXPECT_EQ(to_string_view(h->name()), "nginx");
  EXPECT_EQ(h->priority_class(), wire::PriorityClass::Prod);
  EXPECT_EQ(h->qos_class(), wire::QoSClass::LS);
  const auto hu = messages::to_resource_list(h->usage());
  EXPECT_EQ(hu.cpu_milli, 1666) << "(1000 + 2000 + 2000) / 3";
  EXPECT_EQ(hu.memory_bytes, 256 * mib);
  // System per sample max(node - pods - host apps, 0): 600, 0, 0; averaged 200.
  const auto su = messages::to_resource_list(report->system_usage());
  EXPECT_EQ(su.cpu_milli, 200);
  EXPECT_EQ(su.memory_bytes, 6 * gib - 2 * gib - 256 * mib);
}

// Group identity on: each host app gets its class's bvt (LS 2, BE -1) on its own target, entity
// Node, once; a NodeSLO without it stops writing to it.
TEST(KoordletHostApps, GroupIdentityWritesEachHostAppsBvtByItsQos) {
  event_log log;
  log.node(0, "n1", cpu_mem(4000, 8 * gib), cpu_mem(4000, 8 * gib));
  node_slo(log, 1, "[" + nginx_ls + "," + logs_be_kubepods + "]",
           R"(,"resourceQOSStrategy":{"lsClass":{"cpuQOS":{"enable":true}},)"
           R"("beClass":{"cpuQOS":{"enable":true}}})");
  koordlet_options o;
  o.node = "n1";
  koordlet_component c(o);
  (void)feed(c, log);
  auto from = log.records.size();
  sample(log, 500, 1100, {});
  std::map<std::string, std::string> bvt;
  for (const auto& b : feed(c, log, from)) {
    const auto& env = decoded(b);
    if (env.payload_type() != wire::Payload::CgroupUpdated) continue;
    const auto& g = *env.payload_as_CgroupUpdated();
    const std::string target(to_string_view(g.target()));
    if (target.rfind(host_app_target_prefix, 0) != 0) continue;
    EXPECT_EQ(env.entity_kind(), wire::EntityKind::Node);
    EXPECT_EQ(to_string_view(env.entity_key()), "n1");
    ASSERT_EQ(g.settings()->size(), 1u);
    bvt[target] = std::string(to_string_view(g.settings()->Get(0)->value()));
  }
  EXPECT_EQ(bvt,
            (std::map<std::string, std::string>{{"host-app:nginx", "2"}, {"host-app:logs", "-1"}}));
  from = log.records.size();
  sample(log, 1000, 1100, {});
  for (const auto& b : feed(c, log, from))
    EXPECT_NE(decoded(b).payload_type(), wire::Payload::CgroupUpdated) << "unchanged: once";
}

}  // namespace
}  // namespace colony::koordlet_actor
