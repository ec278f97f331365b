// Host applications on the node: the cgroup directory rule (GetHostAppCgroupRelativePath,
// pkg/koordlet/util/host_application.go, and its Go test Test_getHostCgroupRelativePath's
// cases) for both drivers, the collector reading declared host applications' cgroups on fake
// v1 and v2 trees (metricsadvisor/collectors/hostapplication), and the executor writing a host
// application's cgroup (the host-app reconciler's bvt).
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "bridges/node/cgroup_executor.hpp"
#include "bridges/node/collector.hpp"
#include "bridges/node/host_app_cgroup.hpp"
#include "tests/support/node_tree.hpp"
#include "tests/support/temp_dir.hpp"

namespace {

using namespace colony;
using namespace colony::node;
using colony::testing::fake_cgroup;
using colony::testing::node_tree;
namespace fs = std::filesystem;
namespace kl = colony::koordlet;

kl::host_app_info app(std::string name, kl::qos_class q) {
  kl::host_app_info a;
  a.name = std::move(name);
  a.qos = q;
  return a;
}

kl::host_app_info app_at(std::string name, kl::qos_class q, kl::cgroup_base b, std::string parent,
                         std::string rel) {
  auto a = app(std::move(name), q);
  a.has_cgroup_path = true;
  a.base = b;
  a.parent_dir = std::move(parent);
  a.relative_path = std::move(rel);
  return a;
}

TEST(HostAppCgroup, RelativePathTable) {
  struct row {
    const char* name;  // Test_getHostCgroupRelativePath's case where it has one
    kl::host_app_info app;
    const char* cgroupfs;
    const char* systemd;
  };
  using kl::cgroup_base;
  using kl::qos_class;
  // Test_getHostCgroupRelativePath's cases (named as there), then Colony's own.
  const std::vector<row> rows{
      {"ls app with no cgroup", app("ls-app", qos_class::ls), "host-latency-sensitive/ls-app",
       "host-latency-sensitive/ls-app"},
      {"be app with no cgroup", app("be-app", qos_class::be), "host-best-effort/be-app",
       "host-best-effort/be-app"},
      {"app with cgroup root base",
       app_at("test-app", qos_class::ls, cgroup_base::cgroup_root, "host-ls-app", "test-app"),
       "host-ls-app/test-app", "host-ls-app/test-app"},
      {"app with kubepods cgroup base",
       app_at("test-app", qos_class::ls, cgroup_base::kube_qos_guaranteed, "host-ls-app",
              "test-app"),
       "kubepods/host-ls-app/test-app", "kubepods.slice/host-ls-app/test-app"},
      {"app with burstable cgroup base",
       app_at("test-app", qos_class::ls, cgroup_base::kube_burstable, "host-ls-app", "test-app"),
       "kubepods/burstable/host-ls-app/test-app",
       "kubepods.slice/kubepods-burstable.slice/host-ls-app/test-app"},
      {"app with besteffort cgroup base",
       app_at("test-app", qos_class::be, cgroup_base::kube_besteffort, "host-be-app", "test-app"),
       "kubepods/besteffort/host-be-app/test-app",
       "kubepods.slice/kubepods-besteffort.slice/host-be-app/test-app"},
      {"lsr app with no cgroup", app("nginx", qos_class::lsr), "host-latency-sensitive/nginx",
       "host-latency-sensitive/nginx"},
      {"app without qos or cgroup", app("nginx", qos_class::none), "nginx", "nginx"},
      {"empty base is the root", app_at("n", qos_class::ls, cgroup_base::none, "", "n"), "n", "n"},
  };
  for (const auto& r : rows) {
    EXPECT_EQ(host_app_cgroup_dir(r.app, cgroup_driver::cgroupfs, ""), r.cgroupfs) << r.name;
    EXPECT_EQ(host_app_cgroup_dir(r.app, cgroup_driver::systemd, ""), r.systemd) << r.name;
    // kubelet's --cgroup-root moves the kubepods bases only.
    const std::string under = host_app_cgroup_dir(r.app, cgroup_driver::cgroupfs, "custom");
    EXPECT_EQ(under, host_app_under_kubepods(r.app) ? "custom/" + std::string(r.cgroupfs)
                                                    : std::string(r.cgroupfs))
        << r.name;
  }
}

fake_cgroup cg(std::int64_t cpu_ns, std::int64_t anon) {
  fake_cgroup c;
  c.cpu_ns = cpu_ns;
  c.active_anon = anon;
  c.usage_bytes = anon + 8 * mib;
  c.inactive_file = 4 * mib;
  return c;
}

struct layout_case {
  const char* name;
  kl::cgroup_version v;
  bool systemd;
};

class HostAppCollector : public ::testing::TestWithParam<layout_case> {};

// Two host applications, one under the root and one under the BestEffort tier (the tier's name
// by the driver), and a third declared without a cgroup: usage over the interval for the two
// seen twice, the missing one skipped and named.
TEST_P(HostAppCollector, DeclaredHostAppsAreReadUnderBothBases) {
  const auto& p = GetParam();
  colony::testing::temp_dir tmp;
  node_tree tree(tmp.path(), p.v);
  const std::string tier =
      p.systemd ? "kubepods.slice/kubepods-besteffort.slice" : "kubepods/besteffort";
  tree.write_proc(4, 1000, 5000, 16 * 1024 * 1024, 8 * 1024 * 1024);
  tree.write_cgroup(tier, cg(0, 0));
  tree.write_cgroup("host/nginx", cg(1'000'000'000, 30 * mib));
  tree.write_cgroup(tier + "/logs/agent", cg(500'000'000, 10 * mib));
  const std::vector<kl::host_app_info> apps{
      app_at("nginx", kl::qos_class::ls, kl::cgroup_base::cgroup_root, "host", "nginx"),
      app_at("agent", kl::qos_class::be, kl::cgroup_base::kube_besteffort, "logs", "agent"),
      app("missing", kl::qos_class::ls)};
  auto src = node_source::open({tree.cgroup_root(), tree.proc_root()});
  ASSERT_TRUE(src) << src.error().describe();
  auto s0 = src->snapshot(event_time{10'000}, apps);
  ASSERT_TRUE(s0) << s0.error().describe();
  ASSERT_EQ(s0->host_apps.size(), 2u);
  EXPECT_EQ(s0->host_apps[0].name, "agent");
  EXPECT_EQ(s0->host_apps[0].dir, tier + "/logs/agent");
  ASSERT_EQ(s0->skipped.size(), 1u);
  EXPECT_NE(s0->skipped[0].where.find("host-latency-sensitive/missing"), std::string::npos)
      << s0->skipped[0].describe();

  tree.write_proc(4, 1400, 5000, 16 * 1024 * 1024, 8 * 1024 * 1024);
  tree.write_cgroup("host/nginx", cg(2'500'000'000, 40 * mib));        // 1.5 s of CPU in 2 s
  tree.write_cgroup(tier + "/logs/agent", cg(700'000'000, 12 * mib));  // 0.2 s
  auto s1 = src->snapshot(event_time{12'000}, apps);
  ASSERT_TRUE(s1) << s1.error().describe();
  auto u = usage_between(*s0, *s1);
  ASSERT_TRUE(u) << u.error().describe();
  ASSERT_EQ(u->host_apps.size(), 2u);
  EXPECT_EQ(u->host_apps[0].name, "agent");
  EXPECT_EQ(u->host_apps[0].cpu, milli_cpu{100});
  EXPECT_EQ(u->host_apps[0].memory, bytes{12 * mib});
  EXPECT_EQ(u->host_apps[1].name, "nginx");
  EXPECT_EQ(u->host_apps[1].cpu, milli_cpu{750});
  EXPECT_EQ(u->host_apps[1].memory, bytes{40 * mib});

  // Into the window: system = node - pods - host apps (2 cores - 0 - 0.85).
  kl::sample_window w;
  add_to_window(w, *u);
  EXPECT_EQ(w.host_app("nginx").size(), 1u);
  auto st = kl::build_node_metric_status(w, {}, apps, {}, u->time);
  ASSERT_TRUE(st.node_metric.system_usage);
  EXPECT_EQ(st.node_metric.system_usage->cpu_milli, 1150);
  ASSERT_EQ(st.host_app_metric.size(), 2u);
  EXPECT_EQ(st.host_app_metric[1].name, "nginx");
  EXPECT_EQ(st.host_app_metric[1].usage.cpu_milli, 750);
  EXPECT_EQ(st.host_app_metric[1].qos, kl::qos_class::ls);
}

INSTANTIATE_TEST_SUITE_P(Layouts, HostAppCollector,
                         ::testing::Values(layout_case{"CgroupfsV1", kl::cgroup_version::v1, false},
                                           layout_case{"SystemdV1", kl::cgroup_version::v1, true},
                                           layout_case{"CgroupfsV2", kl::cgroup_version::v2, false},
                                           layout_case{"SystemdV2", kl::cgroup_version::v2, true}),
                         [](const ::testing::TestParamInfo<layout_case>& i) {
                           return std::string(i.param.name);
                         });

TEST(HostAppCollector, UnderKubepodsWithoutKubepodsIsSkippedAndNamed) {
  colony::testing::temp_dir tmp;
  node_tree tree(tmp.path(), kl::cgroup_version::v2);
  tree.write_proc(2, 10, 10, 1024, 512);
  tree.write_cgroup("host/a", cg(1, 1));
  const std::vector<kl::host_app_info> apps{
      app_at("a", kl::qos_class::ls, kl::cgroup_base::cgroup_root, "host", "a"),
      app_at("b", kl::qos_class::ls, kl::cgroup_base::kube_burstable, "", "b")};
  auto src = node_source::open({tree.cgroup_root(), tree.proc_root()});
  ASSERT_TRUE(src);
  auto s = src->snapshot(event_time{1}, apps);
  ASSERT_TRUE(s) << s.error().describe();
  ASSERT_EQ(s->host_apps.size(), 1u);  // the root one is read without kubepods
  ASSERT_EQ(s->skipped.size(), 2u);    // b, then the missing kubepods
  EXPECT_NE(s->skipped[0].message.find("host application b"), std::string::npos);
}

void put(const fs::path& p, const std::string& v) {
  fs::create_directories(p.parent_path());
  std::ofstream(p, std::ios::trunc) << v;
}
std::string get(const fs::path& p) {
  std::ifstream in(p);
  std::string s;
  std::getline(in, s);
  return s;
}

// The host-app reconciler's bvt: written in the host application's directory under the
// controller itself (not under kubelet's --cgroup-root), where the file exists; reported
// unsupported and not created where it does not; a kubepods base follows the driver.
TEST(HostAppExecutor, BvtGoesToTheHostAppCgroupOrIsReportedUnsupported) {
  colony::testing::temp_dir tmp;
  const fs::path root = tmp.path();
  for (const char* c : {"cpu", "cpuacct", "memory"})
    fs::create_directories(root / c / "custom/kubepods.slice/kubepods-burstable.slice");
  put(root / "cpu/host/nginx/cpu.bvt_warp_ns", "0\n");
  fs::create_directories(root / "cpu/custom/kubepods.slice/kubepods-burstable.slice/web");
  auto ex = cgroup_executor::open({root.string(), "custom"});
  ASSERT_TRUE(ex) << ex.error().describe();

  auto r = ex->apply_host_app_settings(
      app_at("nginx", kl::qos_class::ls, kl::cgroup_base::cgroup_root, "host", "nginx"),
      {{"cpu.bvt_warp_ns", "2"}});
  ASSERT_FALSE(r.failed) << r.failed->describe();
  ASSERT_EQ(r.done.size(), 1u);
  EXPECT_EQ(r.done[0].key, "host/nginx/cpu.bvt_warp_ns");
  EXPECT_EQ(get(root / "cpu/host/nginx/cpu.bvt_warp_ns"), "2");

  const auto web = app_at("web", kl::qos_class::ls, kl::cgroup_base::kube_burstable, "", "web");
  r = ex->apply_host_app_settings(web, {{"cpu.bvt_warp_ns", "2"}});
  ASSERT_FALSE(r.failed) << r.failed->describe();
  ASSERT_EQ(r.unsupported.size(), 1u);
  const auto absent =
      root / "cpu/custom/kubepods.slice/kubepods-burstable.slice/web/cpu.bvt_warp_ns";
  EXPECT_EQ(r.unsupported[0].where, absent.string());
  EXPECT_FALSE(fs::exists(absent));

  r = ex->apply_host_app_settings(app("gone", kl::qos_class::be), {{"cpu.bvt_warp_ns", "-1"}});
  ASSERT_TRUE(r.failed);
  EXPECT_EQ(r.failed->code, errc::not_found);
  EXPECT_NE(r.failed->where.find("host-best-effort/gone"), std::string::npos);
}

}  // namespace
