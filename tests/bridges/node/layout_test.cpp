// Kubepods layout discovery on fake trees: both drivers, cgroup v1 (separate and co-mounted
// controllers) and v2, the three QoS tiers, container ids. Names as kubelet writes them
// (pkg/kubelet/cm/cgroup_manager_linux.go) and Koordinator parses them
// (pkg/koordlet/util/system/cgroup_driver.go).
#include "bridges/node/cgroup_layout.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/support/node_tree.hpp"
#include "tests/support/temp_dir.hpp"

namespace {

using namespace colony;
using namespace colony::node;
using colony::testing::fake_cgroup;
using colony::testing::node_tree;

TEST(CgroupLayout, PodDirMatchesKubeletNaming) {
  const std::string uid = "7712555c-ce62-454a-9e18-9ff0217b8941";
  struct row {
    cgroup_driver d;
    kube_qos_class q;
    std::string want;
  };
  const std::vector<row> rows = {
      {cgroup_driver::cgroupfs, kube_qos_class::guaranteed, "kubepods/pod" + uid},
      {cgroup_driver::cgroupfs, kube_qos_class::burstable, "kubepods/burstable/pod" + uid},
      {cgroup_driver::cgroupfs, kube_qos_class::best_effort, "kubepods/besteffort/pod" + uid},
      {cgroup_driver::systemd, kube_qos_class::guaranteed,
       "kubepods.slice/kubepods-pod7712555c_ce62_454a_9e18_9ff0217b8941.slice"},
      {cgroup_driver::systemd, kube_qos_class::burstable,
       "kubepods.slice/kubepods-burstable.slice/"
       "kubepods-burstable-pod7712555c_ce62_454a_9e18_9ff0217b8941.slice"},
      {cgroup_driver::systemd, kube_qos_class::best_effort,
       "kubepods.slice/kubepods-besteffort.slice/"
       "kubepods-besteffort-pod7712555c_ce62_454a_9e18_9ff0217b8941.slice"},
  };
  for (const auto& r : rows) {
    EXPECT_EQ(pod_dir(r.d, r.q, uid), r.want) << to_string(r.d) << " " << to_string(r.q);
    const auto base = r.want.substr(r.want.rfind('/') + 1);
    EXPECT_EQ(parse_pod_dir_name(r.d, base), uid) << base;
  }
}

TEST(CgroupLayout, ParsesContainerDirNames) {
  struct row {
    cgroup_driver d;
    std::string name;
    bool ok;
    std::string id, runtime;
  };
  const std::vector<row> rows = {
      {cgroup_driver::systemd, "cri-containerd-abc123.scope", true, "abc123", "containerd"},
      {cgroup_driver::systemd, "docker-def456.scope", true, "def456", "docker"},
      {cgroup_driver::systemd, "crio-0a1b.scope", true, "0a1b", "cri-o"},
      {cgroup_driver::systemd, "pouch-99.scope", true, "99", "pouch"},
      {cgroup_driver::systemd, "crio-conmon-0a1b.scope", false, "", ""},
      {cgroup_driver::systemd, "cri-containerd-.scope", false, "", ""},
      {cgroup_driver::systemd, "docker-def456", false, "", ""},
      {cgroup_driver::systemd, "kubepods-burstable.slice", false, "", ""},
      {cgroup_driver::cgroupfs, "f00dcafe", true, "f00dcafe", ""},
  };
  for (const auto& r : rows) {
    auto c = parse_container_dir_name(r.d, r.name);
    ASSERT_EQ(c.has_value(), r.ok) << r.name;
    if (!r.ok) continue;
    EXPECT_EQ(c->id, r.id) << r.name;
    EXPECT_EQ(c->runtime, r.runtime) << r.name;
  }
  EXPECT_FALSE(parse_pod_dir_name(cgroup_driver::cgroupfs, "pod").has_value());
  EXPECT_FALSE(parse_pod_dir_name(cgroup_driver::cgroupfs, "burstable").has_value());
  EXPECT_FALSE(parse_pod_dir_name(cgroup_driver::systemd, "kubepods-besteffort.slice"));
  EXPECT_FALSE(parse_pod_dir_name(cgroup_driver::systemd, "kubepods-pod.slice"));
}

struct layout_case {
  std::string name;
  koordlet::cgroup_version v;
  bool comounted;
  cgroup_driver d;
};

class DiscoverLayout : public ::testing::TestWithParam<layout_case> {};

// Three pods, one per tier, with two containers each, plus directories that are neither pods
// nor containers; discovery must return exactly the pods, sorted by uid, with their tier.
TEST_P(DiscoverLayout, FindsEveryTierPodAndContainer) {
  const auto& c = GetParam();
  colony::testing::temp_dir tmp;
  node_tree tree(tmp.path(), c.v, c.comounted);
  const bool sd = c.d == cgroup_driver::systemd;
  struct pod {
    std::string uid;
    kube_qos_class q;
    std::string dir;
    std::vector<std::string> container_dirs;
    std::vector<container_cgroup> want;
  };
  const std::vector<pod> pods = {
      {"aaaaaaaa-0000-0000-0000-000000000001",
       kube_qos_class::guaranteed,
       sd ? "kubepods.slice/kubepods-podaaaaaaaa_0000_0000_0000_000000000001.slice"
          : "kubepods/podaaaaaaaa-0000-0000-0000-000000000001",
       sd ? std::vector<std::string>{"cri-containerd-c1.scope", "cri-containerd-c0.scope"}
          : std::vector<std::string>{"c1", "c0"},
       {{"c0", sd ? "containerd" : "", ""}, {"c1", sd ? "containerd" : "", ""}}},
      {"bbbbbbbb-0000-0000-0000-000000000002",
       kube_qos_class::burstable,
       sd ? "kubepods.slice/kubepods-burstable.slice/"
            "kubepods-burstable-podbbbbbbbb_0000_0000_0000_000000000002.slice"
          : "kubepods/burstable/podbbbbbbbb-0000-0000-0000-000000000002",
       sd ? std::vector<std::string>{"docker-d2.scope", "crio-conmon-d9.scope"}
          : std::vector<std::string>{"d2"},
       {{"d2", sd ? "docker" : "", ""}}},
      {"cccccccc-0000-0000-0000-000000000003",
       kube_qos_class::best_effort,
       sd ? "kubepods.slice/kubepods-besteffort.slice/"
            "kubepods-besteffort-podcccccccc_0000_0000_0000_000000000003.slice"
          : "kubepods/besteffort/podcccccccc-0000-0000-0000-000000000003",
       sd ? std::vector<std::string>{"crio-e3.scope", "crio-e4.scope"}
          : std::vector<std::string>{"e3", "e4"},
       {{"e3", sd ? "cri-o" : "", ""}, {"e4", sd ? "cri-o" : "", ""}}},
  };
  // Written in reverse to check the sort.
  for (auto it = pods.rbegin(); it != pods.rend(); ++it) {
    tree.write_cgroup(it->dir, fake_cgroup{});
    for (const auto& cd : it->container_dirs) tree.write_cgroup(it->dir + "/" + cd, {});
  }
  // Noise: another systemd unit and a stray directory that is no pod.
  tree.write_cgroup(sd ? "kubepods.slice/other.service" : "kubepods/notapod", {});

  auto m = detect_mounts(tree.cgroup_root());
  ASSERT_TRUE(m) << m.error().describe();
  EXPECT_EQ(m->version, c.v);
  auto l = discover_kubepods(m->cpuacct);
  ASSERT_TRUE(l) << l.error().describe();
  EXPECT_EQ(l->driver, c.d);
  EXPECT_EQ(l->kubepods_dir, sd ? "kubepods.slice" : "kubepods");
  ASSERT_EQ(l->pods.size(), pods.size());
  for (std::size_t i = 0; i < pods.size(); ++i) {
    const auto& got = l->pods[i];
    EXPECT_EQ(got.uid, pods[i].uid);
    EXPECT_EQ(got.qos, pods[i].q) << got.uid;
    EXPECT_EQ(got.dir, pods[i].dir);
    EXPECT_EQ(got.dir, pod_dir(c.d, pods[i].q, pods[i].uid));
    ASSERT_EQ(got.containers.size(), pods[i].want.size()) << got.uid;
    for (std::size_t k = 0; k < got.containers.size(); ++k) {
      EXPECT_EQ(got.containers[k].id, pods[i].want[k].id);
      EXPECT_EQ(got.containers[k].runtime, pods[i].want[k].runtime);
      EXPECT_EQ(got.containers[k].dir.substr(0, got.dir.size() + 1), got.dir + "/");
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    Layouts, DiscoverLayout,
    ::testing::Values(
        layout_case{"CgroupfsV1", koordlet::cgroup_version::v1, false, cgroup_driver::cgroupfs},
        layout_case{"CgroupfsV1Comounted", koordlet::cgroup_version::v1, true,
                    cgroup_driver::cgroupfs},
        layout_case{"SystemdV1", koordlet::cgroup_version::v1, false, cgroup_driver::systemd},
        layout_case{"SystemdV1Comounted", koordlet::cgroup_version::v1, true,
                    cgroup_driver::systemd},
        layout_case{"CgroupfsV2", koordlet::cgroup_version::v2, false, cgroup_driver::cgroupfs},
        layout_case{"SystemdV2", koordlet::cgroup_version::v2, false, cgroup_driver::systemd}),
    [](const ::testing::TestParamInfo<layout_case>& i) { return i.param.name; });

TEST(CgroupLayout, MissingControllersAndKubepodsAreNamed) {
  colony::testing::temp_dir tmp;
  auto none = detect_mounts(tmp.sub("nope"));
  ASSERT_FALSE(none);
  EXPECT_EQ(none.error().code, errc::not_found);
  EXPECT_EQ(none.error().where, tmp.sub("nope"));

  std::filesystem::create_directories(tmp.path() / "cg" / "cpu");
  std::filesystem::create_directories(tmp.path() / "cg" / "cpuacct");
  auto no_memory = detect_mounts(tmp.sub("cg"));
  ASSERT_FALSE(no_memory);
  EXPECT_EQ(no_memory.error().code, errc::not_found);
  EXPECT_EQ(no_memory.error().where, tmp.sub("cg") + "/memory");

  std::filesystem::create_directories(tmp.path() / "cg" / "memory");
  auto m = detect_mounts(tmp.sub("cg"));
  ASSERT_TRUE(m) << m.error().describe();
  auto l = discover_kubepods(m->cpuacct);
  ASSERT_FALSE(l);
  EXPECT_EQ(l.error().code, errc::not_found);
  EXPECT_NE(l.error().message.find("kubepods"), std::string::npos);
  EXPECT_EQ(l.error().where, m->cpuacct);
}

// Before its first Burstable or BestEffort pod kubelet may not have made the tier directory.
TEST(CgroupLayout, MissingTierDirectoryIsNoError) {
  colony::testing::temp_dir tmp;
  node_tree tree(tmp.path(), koordlet::cgroup_version::v2);
  tree.write_cgroup("kubepods/podu1", {});
  auto m = detect_mounts(tree.cgroup_root());
  ASSERT_TRUE(m);
  auto l = discover_kubepods(m->cpuacct);
  ASSERT_TRUE(l) << l.error().describe();
  ASSERT_EQ(l->pods.size(), 1u);
  EXPECT_EQ(l->pods[0].uid, "u1");
  EXPECT_EQ(l->pods[0].qos, kube_qos_class::guaranteed);
}

}  // namespace
