// Cold memory (kidled's memory.idle_page_stats) on fake trees: Koordinator's golden file contents
// (pkg/koordlet/util/system/kidled_util_test.go Test_ParseMemoryIdlePageStats,
// Test_GetColdPageTotalBytes), memory with hot page cache of the node and a pod
// (pkg/koordlet/util/cold_page.go), and the collector reading them only when asked and saying
// "unsupported" where the kernel lacks the file.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "bridges/node/cold_page.hpp"
#include "bridges/node/collector.hpp"
#include "tests/support/node_tree.hpp"
#include "tests/support/temp_dir.hpp"

namespace {

using namespace colony;
using namespace colony::node;
namespace fs = std::filesystem;

// Test_ParseMemoryIdlePageStats's idleInfoContentStr (Go raw string: leading tabs kept).
constexpr std::string_view idle_info = R"(# version: 1.0
	# page_scans: 24
	# slab_scans: 0
	# scan_period_in_seconds: 120
	# use_hierarchy: 1
	# buckets: 1,2,5,15,30,60,120,240
	#
	#   _-----=> clean/dirty
	#  / _----=> swap/file
	# | / _---=> evict/unevict
	# || / _--=> inactive/active
	# ||| / _-=> slab
	# |||| /
	# |||||             [1,2)          [2,5)         [5,15)        [15,30)        [30,60)       [60,120)      [120,240)     [240,+inf)
	  csei            2613248        4657152       18182144      293683200              0              0              0              0
	  dsei            2568192        5140480       15306752       48648192              0              0              0              0
	  cfei            2633728        4640768       66531328      340172800              0              0              0              0
	  dfei                  0              0           4096              0              0              0              0              0
	  csui                  0              0              0              0              0              0              0              0
	  dsui                  0              0              0              0              0              0              0              0
	  cfui                  0              0              0              0              0              0              0              0
	  dfui                  0              0              0              0              0              0              0              0
	  csea             765952        1044480        3784704       52834304              0              0              0              0
	  dsea             286720         270336        1564672        5390336              0              0              0              0
	  cfea            9273344       16609280      152109056      315121664              0              0              0              0
	  dfea                  0              0              0              0              0              0              0              0
	  csua                  0              0              0              0              0              0              0              0
	  dsua                  0              0              0              0              0              0              0              0
	  cfua                  0              0              0              0              0              0              0              0
	  dfua                  0              0              0              0              0              0              0              0
	  slab                  0              0              0              0              0              0              0              0)";

// Test_ParseMemoryIdlePageStats's invalidIdleInfoContentStr1: 20 lines.
constexpr std::string_view invalid_idle_info = R"(# version: 1.0
	  # page_scans: 24
	  # slab_scans: 0
	  # scan_period_in_seconds: 120
	  # use_hierarchy: 1
	  # buckets: 1,2,5,15,30,60,120,240
	  #
	  #   _-----=> clean/dirty
	          0              0              0              0              0              0              0              0
		cfui                  0              0              0              0              0              0              0              0
		dfui                  0              0              0              0              0              0              0              0
		csea             765952        1044480        3784704       52834304              0              0              0              0
		dsea             286720         270336        1564672        5390336              0              0              0              0
		cfea            9273344       16609280      152109056      315121664              0              0              0              0
		dfea                  0              0              0              0              0              0              0              0
		csua                  0              0              0              0              0              0              0              0
		dsua                  0              0              0              0              0              0              0              0
		cfua                  0              0              0              0              0              0              0              0
		dfua                  0              0              0              0              0              0              0              0
		slab                  0              0              0              0              0              0              0              0)";

// Test_GetColdPageTotalBytes's coldPageInfoContentStr: 52834304 cold bytes (cfei's [60,120)).
std::string cold_info() {
  std::string s(idle_info);
  auto swap = [&](std::string_view from, std::string_view to) {
    const auto at = s.find(from);
    ASSERT_NE(at, std::string::npos);
    s.replace(at, from.size(), to);
  };
  swap(
      "dsei            2568192        5140480       15306752       48648192              0         "
      "     0",
      "dsei            2568192        5140480       15306752       48648192       52834304       "
      "52834304");
  swap(
      "cfei            2633728        4640768       66531328      340172800              0         "
      "     0",
      "cfei            2633728        4640768       66531328      340172800       52834304       "
      "52834304");
  swap("csea             765952        1044480        3784704       52834304              0",
       "csea             765952        1044480        3784704       52834304       52834304");
  swap("dsea             286720         270336        1564672        5390336              0",
       "dsea             286720         270336        1564672        5390336       52834304");
  return s;
}

TEST(ColdPage, ParseMemoryIdlePageStatsTable) {
  {
    SCOPED_TRACE("read illegal idle empty stat1");
    const auto r = parse_idle_page_stats("", "f");
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().code, errc::invalid_input);
    EXPECT_EQ(r.error().where, "f");
  }
  {
    SCOPED_TRACE("read illegal idle empty stat2");
    EXPECT_FALSE(parse_idle_page_stats(invalid_idle_info, "f"));
  }
  SCOPED_TRACE("read test idle stat path");
  const auto r = parse_idle_page_stats(std::string(idle_info) + "\n", "f");
  ASSERT_TRUE(r) << r.error().describe();
  EXPECT_EQ(r->version, "1.0");
  EXPECT_EQ(r->page_scans, 24u);
  EXPECT_EQ(r->slab_scans, 0u);
  EXPECT_EQ(r->scan_period_in_seconds, 120u);
  EXPECT_EQ(r->use_hierarchy, 1u);
  EXPECT_EQ(r->buckets, (std::vector<std::uint64_t>{1, 2, 5, 15, 30, 60, 120, 240}));
  using v = std::vector<std::uint64_t>;
  EXPECT_EQ(r->rows.at("csei"), (v{2613248, 4657152, 18182144, 293683200, 0, 0, 0, 0}));
  EXPECT_EQ(r->rows.at("dsei"), (v{2568192, 5140480, 15306752, 48648192, 0, 0, 0, 0}));
  EXPECT_EQ(r->rows.at("cfei"), (v{2633728, 4640768, 66531328, 340172800, 0, 0, 0, 0}));
  EXPECT_EQ(r->rows.at("dfei"), (v{0, 0, 4096, 0, 0, 0, 0, 0}));
  EXPECT_EQ(r->rows.at("csea"), (v{765952, 1044480, 3784704, 52834304, 0, 0, 0, 0}));
  EXPECT_EQ(r->rows.at("dsea"), (v{286720, 270336, 1564672, 5390336, 0, 0, 0, 0}));
  EXPECT_EQ(r->rows.at("cfea"), (v{9273344, 16609280, 152109056, 315121664, 0, 0, 0, 0}));
  for (const char* row :
       {"csui", "dsui", "cfui", "dfui", "dfea", "csua", "dsua", "cfua", "dfua", "slab"})
    EXPECT_EQ(r->rows.at(row), v(8, 0)) << row;
  EXPECT_EQ(r->rows.size(), 17u);
  EXPECT_EQ(cold_page_bytes(*r), 0u) << "nothing idle for 5 buckets or more";
}

TEST(ColdPage, GetColdPageTotalBytes) {
  const auto r = parse_idle_page_stats(cold_info(), "f");
  ASSERT_TRUE(r) << r.error().describe();
  EXPECT_EQ(cold_page_bytes(*r), 52834304u);
  EXPECT_EQ(cold_page_bytes(*r, 4), 2u * 52834304u) << "a lower boundary counts [30,60) too";
}

// GetNodeMemUsageWithHotPageCache and GetCgroupMemUsageWithHotPageCache on a v1 tree.
TEST(ColdPage, MemoryWithHotPageOfTheNodeAndAPod) {
  colony::testing::temp_dir tmp;
  const auto root = tmp.path() / "cgroup";
  for (const char* c : {"cpu", "cpuacct", "memory"})
    fs::create_directories(root / c / "kubepods/besteffort/podb-2");
  auto mounts = detect_mounts(root.string());
  ASSERT_TRUE(mounts) << mounts.error().describe();
  std::ofstream(root / "memory/memory.idle_page_stats") << cold_info();
  fs::create_directories(tmp.path() / "proc");
  std::ofstream(tmp.path() / "proc/meminfo")
      << "MemTotal:       16777216 kB\nMemFree:         4194304 kB\nMemAvailable:    8388608 kB\n";
  const auto node = node_memory_with_hot_page(*mounts, (tmp.path() / "proc").string());
  ASSERT_TRUE(node) << node.error().describe();
  EXPECT_EQ(*node, 12LL * 1024 * 1024 * 1024 - 52834304);  // MemTotal - MemFree - cold

  const auto pod = root / "memory/kubepods/besteffort/podb-2";
  std::ofstream(pod / "memory.stat")
      << "total_inactive_anon 1000000\ntotal_active_anon 2000000\ntotal_unevictable 0\n"
         "total_active_file 60000000\ntotal_inactive_file 40000000\n";
  EXPECT_EQ(cgroup_memory_with_hot_page(*mounts, "kubepods/besteffort/podb-2").error().code,
            errc::not_found)
      << "no idle_page_stats: the kernel lacks kidled";
  std::ofstream(pod / "memory.idle_page_stats") << cold_info();
  const auto hot = cgroup_memory_with_hot_page(*mounts, "kubepods/besteffort/podb-2");
  ASSERT_TRUE(hot) << hot.error().describe();
  EXPECT_EQ(*hot, 103000000 - 52834304);
}

TEST(ColdPage, CollectorReadsThemOnlyWhenAskedAndSaysUnsupportedWithoutKidled) {
  colony::testing::temp_dir tmp;
  colony::testing::node_tree tree(tmp.path(), colony::koordlet::cgroup_version::v1);
  tree.write_proc(4, 1000, 5000, 16 * 1024 * 1024, 12 * 1024 * 1024);
  colony::testing::fake_cgroup c;
  tree.write_cgroup("kubepods/besteffort/podb-2", c);
  source_config cfg;
  cfg.cgroup_root = tree.cgroup_root();
  cfg.proc_root = tree.proc_root();
  {
    auto src = node_source::open(cfg);
    ASSERT_TRUE(src) << src.error().describe();
    const auto snap = src->snapshot(colony::event_time{1000});
    ASSERT_TRUE(snap);
    EXPECT_FALSE(snap->memory_with_hot_page_bytes);
    EXPECT_FALSE(snap->cold_pages_unsupported) << "the gate is off: nothing read, nothing said";
  }
  cfg.read_cold_pages = true;
  auto src = node_source::open(cfg);
  ASSERT_TRUE(src);
  auto snap = src->snapshot(colony::event_time{1000});
  ASSERT_TRUE(snap);
  ASSERT_TRUE(snap->cold_pages_unsupported);
  EXPECT_EQ(snap->cold_pages_unsupported->where,
            tree.cgroup_root() + "/memory/memory.idle_page_stats");
  EXPECT_EQ(snap->cold_pages_unsupported->message.rfind("unsupported by this kernel", 0), 0u);
  EXPECT_FALSE(snap->memory_with_hot_page_bytes);

  // A kidled kernel: the node's and the pod's files.
  std::ofstream(tree.cgroup_root() + "/memory/memory.idle_page_stats") << cold_info();
  std::ofstream(tree.cgroup_root() + "/memory/kubepods/besteffort/podb-2/memory.idle_page_stats")
      << cold_info();
  snap = src->snapshot(colony::event_time{1000});
  ASSERT_TRUE(snap);
  EXPECT_FALSE(snap->cold_pages_unsupported);
  for (const auto& e : snap->skipped) ADD_FAILURE() << e.describe();
  ASSERT_TRUE(snap->memory_with_hot_page_bytes);
  // node_tree's meminfo: MemTotal 16 GiB, MemFree 1000 KiB.
  EXPECT_EQ(*snap->memory_with_hot_page_bytes, 16LL * 1024 * 1024 * 1024 - 1000 * 1024 - 52834304);
  ASSERT_EQ(snap->pods.size(), 1u);
  EXPECT_TRUE(snap->pods[0].memory_with_hot_page_bytes.has_value());
}

}  // namespace
