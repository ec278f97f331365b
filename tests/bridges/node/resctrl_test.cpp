// resctrl on fake trees in a temporary directory: the machine's info (cbm_mask, min_cbm_bits,
// cache ids from the root schemata, MB granularity), a group made by mkdir and its schemata
// written and read back (the kernel's zero-padded masks compare equal), the tasks of a pod's
// cgroups moved into the group once, and "unsupported" where resctrl is not mounted.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "bridges/node/resctrl.hpp"
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

// A two-socket Intel machine as Koordinator's tests fake it (resctrl_test.go: cbm_mask "7ff",
// schemata "L3:0=7ff;1=7ff\nMB:0=100;1=100").
fs::path resctrl_tree(const fs::path& root) {
  put(root / "schemata", "    L3:0=7ff;1=7ff\n    MB:0=100;1=100\n");
  put(root / "info/L3/cbm_mask", "7ff\n");
  put(root / "info/L3/min_cbm_bits", "1\n");
  put(root / "info/MB/min_bandwidth", "10\n");
  put(root / "info/MB/bandwidth_gran", "10\n");
  put(root / "tasks", "1\n2\n");
  return root;
}

TEST(Resctrl, InfoFromTheRootSchemataAndInfoFiles) {
  colony::testing::temp_dir tmp;
  const auto root = resctrl_tree(tmp.path() / "resctrl");
  put(tmp.path() / "proc/cpuinfo", "processor\t: 0\nvendor_id\t: GenuineIntel\n");
  auto info = read_resctrl_info(root.string(), (tmp.path() / "proc").string());
  ASSERT_TRUE(info) << info.error().describe();
  EXPECT_TRUE(info->l3);
  EXPECT_EQ(info->cbm_mask, 0x7ffU);
  EXPECT_EQ(info->min_cbm_bits, 1);
  EXPECT_EQ(info->l3_ids, (std::vector<std::int32_t>{0, 1}));
  EXPECT_TRUE(info->mb);
  EXPECT_EQ(info->mb_ids, (std::vector<std::int32_t>{0, 1}));
  EXPECT_EQ(info->bandwidth_gran, 10);
  EXPECT_FALSE(info->amd);
  put(tmp.path() / "proc/cpuinfo", "processor\t: 0\nvendor_id\t: AuthenticAMD\n");
  EXPECT_TRUE(read_resctrl_info(root.string(), (tmp.path() / "proc").string())->amd);

  put(root / "info/L3/cbm_mask", "zz\n");
  const auto bad = read_resctrl_info(root.string(), (tmp.path() / "proc").string());
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().where, (root / "info/L3/cbm_mask").string());
  EXPECT_NE(bad.error().message.find("cbm_mask"), std::string::npos);
}

TEST(Resctrl, NotMountedIsNotFoundAndEveryDecisionIsReportedUnsupported) {
  colony::testing::temp_dir tmp;
  const auto root = tmp.path() / "resctrl";  // empty mount point: nothing mounted
  fs::create_directories(root);
  const auto info = read_resctrl_info(root.string(), "/proc");
  ASSERT_FALSE(info);
  EXPECT_EQ(info.error().code, errc::not_found);
  resctrl_executor ex({root.string(), (tmp.path() / "cgroup").string(), ""});
  const auto r = ex.apply_group("BE", {{"tasks", ""}});
  EXPECT_FALSE(r.failed);
  EXPECT_TRUE(r.done.empty());
  ASSERT_EQ(r.unsupported.size(), 1u);
  EXPECT_EQ(r.unsupported[0].where, root.string());
  EXPECT_EQ(r.unsupported[0].message.rfind("unsupported by this kernel: resctrl is not mounted", 0),
            0u);
  EXPECT_FALSE(fs::exists(root / "BE")) << "nothing created where resctrl is not mounted";
}

TEST(Resctrl, GroupMadeAndSchemataWrittenAndReadBack) {
  colony::testing::temp_dir tmp;
  const auto root = resctrl_tree(tmp.path() / "resctrl");
  resctrl_executor ex({root.string(), (tmp.path() / "cgroup").string(), ""});
  const auto r = ex.apply_group("BE", {{"schemata", "L3:0=f;1=f\nMB:0=90;1=90"}});
  ASSERT_FALSE(r.failed) << r.failed->describe();
  ASSERT_EQ(r.done.size(), 1u);
  EXPECT_EQ(r.done[0].key, "resctrl/BE/schemata");
  EXPECT_EQ(r.done[0].read_back, "L3:0=f;1=f\nMB:0=90;1=90");
  EXPECT_EQ(get(root / "BE/schemata"), "L3:0=f;1=f\nMB:0=90;1=90\n");

  EXPECT_TRUE(fs::is_directory(root / "BE")) << "the group is made by mkdir";
}

TEST(Resctrl, SchemataTheFileDoesNotHoldIsAnErrorNamingTheFile) {
  colony::testing::temp_dir tmp;
  const auto root = resctrl_tree(tmp.path() / "resctrl");
  fs::create_directories(root / "LS");
  fs::create_symlink("/dev/null", root / "LS/schemata");
  resctrl_executor ex({root.string(), (tmp.path() / "cgroup").string(), ""});
  const auto r = ex.apply_group("LS", {{"schemata", "L3:0=7ff;1=7ff"}});
  ASSERT_TRUE(r.failed);
  EXPECT_EQ(r.failed->code, errc::failed_precondition);
  EXPECT_EQ(r.failed->where, (root / "LS/schemata").string());
}

TEST(Resctrl, PodTasksMovedIntoTheGroupOnceV1Cgroupfs) {
  colony::testing::temp_dir tmp;
  const auto root = resctrl_tree(tmp.path() / "resctrl");
  const auto cg = tmp.path() / "cgroup";
  for (const char* c : {"cpu", "cpuacct", "memory"})
    fs::create_directories(cg / c / "kubepods/besteffort");
  const auto pod = cg / "cpu/kubepods/besteffort/pod1234-ab";
  put(pod / "tasks", "");
  put(pod / "c1/tasks", "100\n101\n");
  put(pod / "c2/tasks", "200\n");
  put(cg / "cpu/kubepods/besteffort/pod9999/c9/tasks", "900\n");  // another pod's
  fs::create_directories(root / "BE");
  put(root / "BE/tasks", "101\n");  // already in the group
  resctrl_executor ex({root.string(), cg.string(), ""});
  const auto r = ex.apply_group("BE", {{"tasks", "1234-ab"}});
  ASSERT_FALSE(r.failed) << r.failed->describe();
  ASSERT_EQ(r.done.size(), 1u);
  EXPECT_EQ(r.done[0].key, "resctrl/BE/tasks");
  EXPECT_EQ(r.done[0].written, "100 200");
  EXPECT_EQ(r.done[0].read_back, "100 200");
  EXPECT_EQ(get(root / "BE/tasks"), "101\n100\n200\n");
  const auto again = ex.apply_group("BE", {{"tasks", "1234-ab"}});
  ASSERT_FALSE(again.failed);
  EXPECT_EQ(again.done[0].written, "") << "no task written twice";
}

}  // namespace
