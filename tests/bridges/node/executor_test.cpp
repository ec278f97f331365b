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

TEST(CgroupExecutor, SameValueRoundsMemoryBytesToPagesAndKnowsV1Unlimited) {
  struct row {
    const char* file;
    const char* written;
    const char* read_back;
    bool same;
  };
  const row rows[] = {
      {"p/memory.limit_in_bytes", "2147483648", "2147483648\n", true},
      {"p/memory.limit_in_bytes", "1000000", "999424", true},  // rounded down to 4 KiB pages
      {"p/memory.limit_in_bytes", "1000000", "1003520", false},
      {"p/memory.limit_in_bytes", "-1", "9223372036854771712", true},  // v1 unlimited
      {"p/memory.limit_in_bytes", "-1", "1073741824", false},
      {"p/memory.high", "5000", "4096", true},
      {"p/memory.max", "max", "max", true},
      {"p/cpu.shares", "1000000", "999424", false},  // not a memory file
  };
  for (const auto& r : rows)
    EXPECT_EQ(same_cgroup_value(r.file, r.written, r.read_back), r.same)
        << r.file << " " << r.written << " -> " << r.read_back;
}

// A BE pod's BatchResource files: cpu files to the cpu controller, memory.limit_in_bytes to the
// memory controller (v1); cpu.weight, cpu.max and memory.max in the unified tree (v2).
TEST(CgroupExecutor, BatchResourceFilesGoToTheirControllersV1AndAreTranslatedV2) {
  const std::vector<std::pair<std::string, std::string>> batch{
      {"cpu.shares", "512"},
      {"cpu.cfs_quota_us", "50000"},
      {"memory.limit_in_bytes", "2147483648"}};
  {
    SCOPED_TRACE("v1 cgroupfs");
    colony::testing::temp_dir tmp;
    const auto root = v1_tree(tmp.path(), "");
    for (const char* c : {"cpu", "memory"})
      fs::create_directories(root / c / "kubepods/besteffort/podu-1");
    auto ex = open_executor(root, "");
    ASSERT_TRUE(ex) << ex.error().describe();
    const auto r = ex->apply_pod_settings("u-1", batch);
    ASSERT_FALSE(r.failed) << r.failed->describe();
    EXPECT_TRUE(r.unsupported.empty());
    ASSERT_EQ(r.done.size(), 3u);
    EXPECT_EQ(get(root / "cpu/kubepods/besteffort/podu-1/cpu.shares"), "512");
    EXPECT_EQ(get(root / "cpu/kubepods/besteffort/podu-1/cpu.cfs_quota_us"), "50000");
    EXPECT_EQ(get(root / "memory/kubepods/besteffort/podu-1/memory.limit_in_bytes"), "2147483648");
    EXPECT_FALSE(fs::exists(root / "cpu/kubepods/besteffort/podu-1/memory.limit_in_bytes"));
    EXPECT_EQ(r.done[2].key, "kubepods/besteffort/podu-1/memory.limit_in_bytes");
  }
  {
    SCOPED_TRACE("v2 systemd");
    colony::testing::temp_dir tmp;
    const auto root = tmp.path();
    put(root / "cgroup.controllers", "cpuset cpu io memory pids\n");
    const fs::path pod = root /
                         "kubepods.slice/kubepods-besteffort.slice/"
                         "kubepods-besteffort-podu_1.slice";
    fs::create_directories(pod);
    auto ex = open_executor(root, "");
    ASSERT_TRUE(ex) << ex.error().describe();
    auto r = ex->apply_pod_settings("u-1", batch);
    ASSERT_FALSE(r.failed) << r.failed->describe();
    ASSERT_EQ(r.done.size(), 3u);
    // runc/kubelet's shares -> weight: 1 + (512 - 2) x 9999 / 262142 = 20.
    EXPECT_EQ(get(pod / "cpu.weight"), "20");
    EXPECT_EQ(get(pod / "cpu.max"), "50000 100000");
    EXPECT_EQ(get(pod / "memory.max"), "2147483648");
    r = ex->apply_pod_settings("u-1",
                               {{"cpu.cfs_quota_us", "-1"}, {"memory.limit_in_bytes", "-1"}});
    ASSERT_FALSE(r.failed) << r.failed->describe();
    EXPECT_EQ(get(pod / "cpu.max"), "max 100000");
    EXPECT_EQ(get(pod / "memory.max"), "max");
  }
}

// Group identity where the kernel has cpu.bvt_warp_ns (a fake tree that has the files), and
// where it does not: each absent file is reported, never written, and the rest goes on.
TEST(CgroupExecutor, BvtIsWrittenWhereTheFileExistsAndReportedUnsupportedWhereItDoesNot) {
  colony::testing::temp_dir tmp;
  const auto root = v1_tree(tmp.path(), "");
  const fs::path cpu = root / "cpu/kubepods";
  fs::create_directories(cpu / "burstable/podb-1");
  fs::create_directories(cpu / "besteffort/pode-1");
  for (const auto& d : {cpu, cpu / "burstable", cpu / "besteffort", cpu / "burstable/podb-1"})
    put(d / "cpu.bvt_warp_ns", "0\n");
  auto ex = open_executor(root, "");
  ASSERT_TRUE(ex) << ex.error().describe();

  struct row {
    kube_qos_class tier;
    const char* value;
    fs::path file;
  };
  const row rows[] = {{kube_qos_class::guaranteed, "0", cpu / "cpu.bvt_warp_ns"},
                      {kube_qos_class::burstable, "2", cpu / "burstable/cpu.bvt_warp_ns"},
                      {kube_qos_class::best_effort, "-1", cpu / "besteffort/cpu.bvt_warp_ns"}};
  for (const auto& r : rows) {
    const auto out = ex->apply_qos_settings(r.tier, {{"cpu.bvt_warp_ns", r.value}});
    ASSERT_FALSE(out.failed) << out.failed->describe();
    EXPECT_TRUE(out.unsupported.empty());
    ASSERT_EQ(out.done.size(), 1u);
    EXPECT_EQ(out.done[0].file, r.file.string());
    EXPECT_EQ(get(r.file), r.value);
  }
  auto out = ex->apply_pod_settings("b-1", {{"cpu.bvt_warp_ns", "2"}});
  ASSERT_FALSE(out.failed) << out.failed->describe();
  EXPECT_EQ(get(cpu / "burstable/podb-1/cpu.bvt_warp_ns"), "2");

  // The BE pod's directory lacks the file: unsupported, nothing created, cpu.shares still set.
  out = ex->apply_pod_settings("e-1", {{"cpu.bvt_warp_ns", "-1"}, {"cpu.shares", "2"}});
  ASSERT_FALSE(out.failed) << out.failed->describe();
  ASSERT_EQ(out.unsupported.size(), 1u);
  const auto absent = cpu / "besteffort/pode-1/cpu.bvt_warp_ns";
  EXPECT_EQ(out.unsupported[0].where, absent.string());
  EXPECT_NE(out.unsupported[0].message.find("unsupported by this kernel: no cpu.bvt_warp_ns"),
            std::string::npos)
      << out.unsupported[0].message;
  EXPECT_FALSE(fs::exists(absent));
  ASSERT_EQ(out.done.size(), 1u);
  EXPECT_EQ(get(cpu / "besteffort/pode-1/cpu.shares"), "2");
}

// Memory QoS files: written on v2 where the kernel has them; on a v1 tree without them (no
// Anolis kernel) each is reported unsupported and nothing is created.
TEST(CgroupExecutor, MemoryQosWrittenOnV2AndUnsupportedWhereV1LacksTheFiles) {
  const std::vector<std::pair<std::string, std::string>> mem{
      {"memory.min", "1073741824"}, {"memory.low", "1073741824"}, {"memory.high", "max"}};
  {
    SCOPED_TRACE("v2");
    colony::testing::temp_dir tmp;
    const auto root = tmp.path();
    put(root / "cgroup.controllers", "cpuset cpu io memory pids\n");
    const fs::path pod = root / "kubepods/burstable/podm-1";
    for (const char* f : {"memory.min", "memory.low", "memory.high"}) put(pod / f, "0\n");
    auto ex = open_executor(root, "");
    ASSERT_TRUE(ex) << ex.error().describe();
    const auto r = ex->apply_pod_settings("m-1", mem);
    ASSERT_FALSE(r.failed) << r.failed->describe();
    EXPECT_TRUE(r.unsupported.empty());
    ASSERT_EQ(r.done.size(), 3u);
    EXPECT_EQ(get(pod / "memory.min"), "1073741824");
    EXPECT_EQ(get(pod / "memory.high"), "max");
  }
  {
    SCOPED_TRACE("v1 without the files");
    colony::testing::temp_dir tmp;
    const auto root = v1_tree(tmp.path(), "");
    for (const char* c : {"cpu", "memory"}) fs::create_directories(root / c / "kubepods/podm-1");
    auto ex = open_executor(root, "");
    ASSERT_TRUE(ex) << ex.error().describe();
    const auto r = ex->apply_pod_settings("m-1", mem);
    ASSERT_FALSE(r.failed) << r.failed->describe();
    EXPECT_TRUE(r.done.empty());
    ASSERT_EQ(r.unsupported.size(), 3u);
    EXPECT_EQ(r.unsupported[0].where, (root / "memory/kubepods/podm-1/memory.min").string());
    EXPECT_NE(r.unsupported[0].message.find("(cgroup v1)"), std::string::npos);
    EXPECT_FALSE(fs::exists(root / "memory/kubepods/podm-1/memory.min"));
  }
}

}  // namespace

// cpuburst's cfs-quota burst: a container's cpu.cfs_quota_us by its id and its pod's, in the
// decision's order (pod first when growing, container first when shrinking), each read back; v2
// writes cpu.max "QUOTA 100000".
TEST(CgroupExecutor, CfsQuotaBurstWritesTheContainerAndPodQuotaInOrder) {
  for (const bool v2 : {false, true}) {
    SCOPED_TRACE(v2 ? "v2 systemd" : "v1 cgroupfs");
    colony::testing::temp_dir tmp;
    const auto root = tmp.path();
    fs::path pod, ctr;
    if (v2) {
      put(root / "cgroup.controllers", "cpuset cpu io memory pids\n");
      pod = root / "kubepods.slice/kubepods-burstable.slice/kubepods-burstable-podq_1.slice";
      ctr = pod / "cri-containerd-c1.scope";
      fs::create_directories(ctr);
    } else {
      v1_tree(root, "");
      for (const char* c : {"cpuacct", "memory"})
        fs::create_directories(root / c / "kubepods/burstable/podq-1/c1");
      pod = root / "cpu/kubepods/burstable/podq-1";
      ctr = pod / "c1";
      fs::create_directories(ctr);
    }
    auto ex = open_executor(root, "");
    ASSERT_TRUE(ex) << ex.error().describe();
    const auto file = [&](const fs::path& d) { return d / (v2 ? "cpu.max" : "cpu.cfs_quota_us"); };
    const auto value = [&](std::int64_t q) {
      return v2 ? std::to_string(q) + " 100000" : std::to_string(q);
    };
    // Growing (x 1.2 from 50000): the pod first.
    auto r = ex->apply_pod_settings(
        "q-1", {{"cpu.cfs_quota_us", "60000"}, {"c1/cpu.cfs_quota_us", "60000"}});
    ASSERT_FALSE(r.failed) << r.failed->describe();
    ASSERT_EQ(r.done.size(), 2u);
    EXPECT_EQ(r.done[0].file, file(pod).string());
    EXPECT_EQ(r.done[1].file, file(ctr).string());
    EXPECT_EQ(r.done[1].read_back, value(60000));
    EXPECT_EQ(get(file(ctr)), value(60000));
    EXPECT_EQ(get(file(pod)), value(60000));
    // Shrinking (x 0.8): the container first.
    r = ex->apply_pod_settings("q-1",
                               {{"c1/cpu.cfs_quota_us", "48000"}, {"cpu.cfs_quota_us", "48000"}});
    ASSERT_FALSE(r.failed) << r.failed->describe();
    ASSERT_EQ(r.done.size(), 2u);
    EXPECT_EQ(r.done[0].file, file(ctr).string());
    EXPECT_EQ(get(file(ctr)), value(48000));
    EXPECT_EQ(get(file(pod)), value(48000));
    // A container id the pod does not have: not_found, nothing written.
    r = ex->apply_pod_settings("q-1", {{"c9/cpu.cfs_quota_us", "1000"}});
    ASSERT_TRUE(r.failed);
    EXPECT_EQ(r.failed->code, errc::not_found);
    EXPECT_TRUE(r.done.empty());
  }
}
