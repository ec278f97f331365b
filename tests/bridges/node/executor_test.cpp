// The cgroup executor on fake trees in a temporary directory: file names on cgroup v1 and v2
// under both drivers, the leveled BE cpuset update, pod settings by uid, and the reconcile of a
// file that does not hold what was written (a symlink to /dev/null reads back empty).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "bridges/node/cgroup_executor.hpp"
#include "tests/support/temp_dir.hpp"

namespace {

using namespace colony;
using namespace colony::node;
namespace fs = std::filesystem;

void put(const fs::path& p, const std::string& v) {
  fs::create_directories(p.parent_path());
  std::ofstream(p) << v;
}

std::string get(const fs::path& p) {
  std::ifstream f(p);
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

result<cgroup_executor> open_executor(const fs::path& root, const std::string& parent) {
  executor_config c;
  c.cgroup_root = root.string();
  c.kube_parent_dir = parent;
  return cgroup_executor::open(c);
}

// A v1 tree: cpu, cpuacct, memory and cpuset controllers with kubepods under `parent`.
fs::path v1_tree(const fs::path& root, const std::string& parent) {
  for (const char* c : {"cpu", "cpuacct", "memory", "cpuset"})
    fs::create_directories(root / c / parent / "kubepods" / "besteffort");
  return root;
}

TEST(CgroupExecutor, V1CfsQuotaGoesToTheBestEffortTierOfTheCpuController) {
  colony::testing::temp_dir tmp;
  const auto root = v1_tree(tmp.path(), "p");
  const auto file = root / "cpu/p/kubepods/besteffort/cpu.cfs_quota_us";
  put(file, "-1\n");
  auto ex = open_executor(root, "p");
  ASSERT_TRUE(ex) << ex.error().describe();
  const auto r = ex->apply_be_cfs_quota(25000);
  ASSERT_FALSE(r.failed) << r.failed->describe();
  ASSERT_EQ(r.done.size(), 1u);
  EXPECT_EQ(r.done[0].file, file.string());
  EXPECT_EQ(r.done[0].key, "kubepods/besteffort/cpu.cfs_quota_us");
  EXPECT_EQ(r.done[0].written, "25000");
  EXPECT_EQ(r.done[0].read_back, "25000");
  EXPECT_EQ(get(file), "25000");
}

TEST(CgroupExecutor, V2SystemdUsesCpuMaxAndCpuMaxBurst) {
  colony::testing::temp_dir tmp;
  const auto root = tmp.path();
  put(root / "cgroup.controllers", "cpuset cpu io memory pids\n");
  const fs::path be = root / "kubepods.slice/kubepods-besteffort.slice";
  const fs::path pod = root /
                       "kubepods.slice/kubepods-burstable.slice/"
                       "kubepods-burstable-poda_1.slice";
  fs::create_directories(be);
  fs::create_directories(pod / "cri-containerd-c1.scope");
  auto ex = open_executor(root, "");
  ASSERT_TRUE(ex) << ex.error().describe();
  EXPECT_EQ(ex->mounts().version, cgroup_version::v2);

  auto r = ex->apply_be_cfs_quota(30000);
  ASSERT_FALSE(r.failed) << r.failed->describe();
  ASSERT_EQ(r.done.size(), 1u);
  EXPECT_EQ(r.done[0].key, "kubepods.slice/kubepods-besteffort.slice/cpu.max");
  EXPECT_EQ(get(be / "cpu.max"), "30000 100000");
  r = ex->apply_be_cfs_quota(-1);
  ASSERT_FALSE(r.failed) << r.failed->describe();
  EXPECT_EQ(get(be / "cpu.max"), "max 100000");

  // The component's v1 names for a pod and one of its containers; v2 files written.
  r = ex->apply_pod_settings("a-1",
                             {{"c1/cpu.cfs_burst_us", "150000"}, {"cpu.cfs_burst_us", "300000"}});
  ASSERT_FALSE(r.failed) << r.failed->describe();
  ASSERT_EQ(r.done.size(), 2u);
  EXPECT_EQ(get(pod / "cri-containerd-c1.scope/cpu.max.burst"), "150000");
  EXPECT_EQ(get(pod / "cpu.max.burst"), "300000");
  EXPECT_FALSE(fs::exists(pod / "cpu.cfs_burst_us"));

  // v2 cpuset: the unified tree's cpuset.cpus.
  put(be / "cpuset.cpus", "");
  r = ex->apply_be_cpuset("1,0");
  ASSERT_FALSE(r.failed) << r.failed->describe();
  EXPECT_EQ(get(be / "cpuset.cpus"), "0-1");

  // A pod or container that is not there: not_found naming where it looked.
  r = ex->apply_pod_settings("zz", {{"cpu.cfs_burst_us", "1"}});
  ASSERT_TRUE(r.failed);
  EXPECT_EQ(r.failed->code, errc::not_found);
  EXPECT_NE(r.failed->message.find("zz"), std::string::npos);
  r = ex->apply_pod_settings("a-1", {{"nope/cpu.cfs_burst_us", "1"}});
  ASSERT_TRUE(r.failed);
  EXPECT_EQ(r.failed->code, errc::not_found);
  EXPECT_NE(r.failed->message.find("nope"), std::string::npos);
}

TEST(CgroupExecutor, V1CpusetIsLeveledParentsFirstWhenGrowingChildrenFirstWhenShrinking) {
  colony::testing::temp_dir tmp;
  const auto root = v1_tree(tmp.path(), "");
  const fs::path tier = root / "cpuset/kubepods/besteffort";
  const fs::path pod = tier / "podb-2";
  const fs::path ctr = pod / "c9";
  for (const auto& d : {tier, pod, ctr}) put(d / "cpuset.cpus", "0-3\n");
  fs::create_directories(root / "cpu/kubepods/besteffort");
  auto ex = open_executor(root, "");
  ASSERT_TRUE(ex) << ex.error().describe();

  // Shrink: the old set already holds the new one, so only the bottom-up pass writes.
  auto r = ex->apply_be_cpuset("2-3");
  ASSERT_FALSE(r.failed) << r.failed->describe();
  ASSERT_EQ(r.done.size(), 3u);
  EXPECT_EQ(r.done[0].file, (ctr / "cpuset.cpus").string());
  EXPECT_EQ(r.done[1].file, (pod / "cpuset.cpus").string());
  EXPECT_EQ(r.done[2].file, (tier / "cpuset.cpus").string());
  for (const auto& d : {tier, pod, ctr}) EXPECT_EQ(get(d / "cpuset.cpus"), "2-3");

  // Move: the union top down, then the new set bottom up.
  r = ex->apply_be_cpuset("0-1");
  ASSERT_FALSE(r.failed) << r.failed->describe();
  ASSERT_EQ(r.done.size(), 6u);
  EXPECT_EQ(r.done[0].file, (tier / "cpuset.cpus").string());
  EXPECT_EQ(r.done[0].written, "0-3");
  EXPECT_EQ(r.done[2].file, (ctr / "cpuset.cpus").string());
  EXPECT_EQ(r.done[3].file, (ctr / "cpuset.cpus").string());
  EXPECT_EQ(r.done[3].written, "0-1");
  EXPECT_EQ(r.done[5].file, (tier / "cpuset.cpus").string());
  for (const auto& d : {tier, pod, ctr}) EXPECT_EQ(get(d / "cpuset.cpus"), "0-1");

  // A cpuset the writer cannot parse is refused before any write.
  r = ex->apply_be_cpuset("0-x");
  ASSERT_TRUE(r.failed);
  EXPECT_EQ(r.failed->code, errc::invalid_input);
  EXPECT_TRUE(r.done.empty());
}

TEST(CgroupExecutor, AFileThatDoesNotHoldTheValueWrittenIsAnErrorNamingFileAndBothValues) {
  colony::testing::temp_dir tmp;
  const auto root = v1_tree(tmp.path(), "");
  const fs::path file = root / "cpu/kubepods/besteffort/cpu.cfs_quota_us";
  fs::create_symlink("/dev/null", file);  // takes any write, reads back empty
  auto ex = open_executor(root, "");
  ASSERT_TRUE(ex) << ex.error().describe();
  const auto r = ex->apply_be_cfs_quota(40000);
  ASSERT_TRUE(r.failed);
  EXPECT_TRUE(r.done.empty());
  EXPECT_EQ(r.failed->code, errc::failed_precondition);
  EXPECT_EQ(r.failed->where, file.string());
  EXPECT_NE(r.failed->message.find("\"40000\""), std::string::npos) << r.failed->message;
  EXPECT_NE(r.failed->message.find("holds \"\""), std::string::npos) << r.failed->message;
}

TEST(CgroupExecutor, MissingTierOrControllerIsNotFoundNamingTheDirectory) {
  colony::testing::temp_dir tmp;
  const auto root = tmp.path();
  for (const char* c : {"cpu", "cpuacct", "memory"}) fs::create_directories(root / c);
  auto ex = open_executor(root, "");
  ASSERT_TRUE(ex) << ex.error().describe();
  auto r = ex->apply_be_cfs_quota(10000);  // no kubepods at all
  ASSERT_TRUE(r.failed);
  EXPECT_EQ(r.failed->code, errc::not_found);
  EXPECT_EQ(r.failed->where, (root / "cpu").string());
  r = ex->apply_be_cpuset("0");  // no cpuset controller
  ASSERT_TRUE(r.failed);
  EXPECT_EQ(r.failed->code, errc::not_found);
  EXPECT_EQ(r.failed->where, (root / "cpuset").string());
  fs::create_directories(root / "cpu/kubepods");  // kubepods without its besteffort tier
  r = ex->apply_be_cfs_quota(10000);
  ASSERT_TRUE(r.failed);
  EXPECT_EQ(r.failed->code, errc::not_found);
  EXPECT_NE(r.failed->where.find("kubepods/besteffort"), std::string::npos) << r.failed->where;
}

TEST(CgroupExecutor, SameValueComparesCpusetsAsSetsAndTrimsWhitespace) {
  EXPECT_TRUE(same_cgroup_value("a/cpu.cfs_quota_us", "100", "100\n"));
  EXPECT_FALSE(same_cgroup_value("a/cpu.cfs_quota_us", "100", "1000"));
  EXPECT_TRUE(same_cgroup_value("a/cpuset.cpus", "1,0,2", "0-2\n"));
  EXPECT_FALSE(same_cgroup_value("a/cpuset.cpus", "0-2", "0-1"));
  EXPECT_FALSE(same_cgroup_value("a/cpu.max", "0,1", "0-1"));
}

}  // namespace
