// The /proc and cgroup readers on fake files: the values Koordinator's readers take
// (pkg/koordlet/util/cpu.go readTotalCPUStat, util/meminfo.go, resourceexecutor/reader.go), and
// malformed or missing files giving errors that name the file (where) and the field (message).
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "bridges/node/cgroup_reader.hpp"
#include "bridges/node/proc_reader.hpp"
#include "messages/units.hpp"
#include "tests/support/node_tree.hpp"
#include "tests/support/temp_dir.hpp"

namespace {

using namespace colony;
using namespace colony::node;
using colony::testing::fake_cgroup;
using colony::testing::node_tree;
using v = koordlet::cgroup_version;

TEST(ProcReader, CountsUserNiceSystemIrqSoftirqAndCpus) {
  colony::testing::temp_dir tmp;
  node_tree::write(tmp.path() / "stat",
                   "cpu  10 20 30 1000 50 60 70 80 90 100\n"
                   "cpu0 5 10 15 500 25 30 35 40 45 50\n"
                   "cpu1 5 10 15 500 25 30 35 40 45 50\n"
                   "intr 12\n");
  auto t = read_proc_stat(tmp.path().string());
  ASSERT_TRUE(t) << t.error().describe();
  EXPECT_EQ(t->used, 10 + 20 + 30 + 60 + 70);  // idle, iowait, steal, guest left out
  EXPECT_EQ(t->cpus, 2);

  node_tree::write(tmp.path() / "meminfo",
                   "MemTotal:       16384 kB\nMemFree:    1 kB\nMemAvailable:    4096 kB\n");
  auto mi = read_meminfo(tmp.path().string());
  ASSERT_TRUE(mi) << mi.error().describe();
  EXPECT_EQ(mi->total_bytes, 16384 * 1024);
  EXPECT_EQ(mi->used_bytes(), (16384 - 4096) * 1024);
}

TEST(ProcReader, MalformedFilesNameFileAndField) {
  struct row {
    std::string file, content, field;
    errc code;
  };
  const std::vector<row> rows = {
      {"stat", "cpu0 1 2 3 4 5 6 7\n", "field cpu: line missing", errc::invalid_input},
      {"stat", "cpu  1 2 3 4 5 6\ncpu0 1 2 3 4 5 6 7\n", "field cpu:", errc::invalid_input},
      {"stat", "cpu  1 x 3 4 5 6 7\ncpu0 1\n", "field cpu.nice", errc::invalid_input},
      {"stat", "cpu  1 2 3 4 5 6 -7\ncpu0 1\n", "field cpu.softirq", errc::invalid_input},
      {"stat", "cpu  1 2 3 4 5 6 7\n", "field cpuN", errc::invalid_input},
      {"stat", "cpu  99999999999999999999 2 3 4 5 6 7\ncpu0\n", "field cpu.user",
       errc::invalid_input},
      {"meminfo", "MemTotal: 10 kB\n", "field MemAvailable: missing", errc::invalid_input},
      {"meminfo", "MemTotal: abc kB\nMemAvailable: 1 kB\n", "field MemTotal:", errc::invalid_input},
      {"meminfo", "MemTotal: 1 kB\nMemAvailable: 2 kB\n", "larger than MemTotal",
       errc::invalid_input},
      {"meminfo", "", "field MemTotal: missing", errc::invalid_input},
  };
  for (const auto& r : rows) {
    colony::testing::temp_dir tmp;
    node_tree::write(tmp.path() / r.file, r.content);
    auto e = r.file == "stat" ? read_proc_stat(tmp.path().string()).error()
                              : read_meminfo(tmp.path().string()).error();
    EXPECT_EQ(e.code, r.code) << r.content;
    EXPECT_EQ(e.where, (tmp.path() / r.file).string()) << r.content;
    EXPECT_NE(e.message.find(r.field), std::string::npos) << e.message << " / want " << r.field;
  }
  colony::testing::temp_dir empty;
  auto missing = read_proc_stat(empty.path().string());
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().code, errc::not_found);
  EXPECT_EQ(missing.error().where, (empty.path() / "stat").string());
}

class CgroupReaders : public ::testing::TestWithParam<v> {};

TEST_P(CgroupReaders, ReadCpuMemoryThrottlingAndPsi) {
  colony::testing::temp_dir tmp;
  node_tree tree(tmp.path(), GetParam());
  fake_cgroup c;
  c.cpu_ns = 123'456'000;  // a multiple of 1000: v2 keeps microseconds
  c.usage_bytes = 100 * mib;
  c.inactive_file = 30 * mib;
  c.inactive_anon = 10 * mib;
  c.active_anon = 40 * mib;
  c.unevictable = 1 * mib;
  c.nr_periods = 50;
  c.nr_throttled = 7;
  c.throttled_ns = 9'000'000;
  c.psi = true;
  tree.write_cgroup("kubepods/podx", c);
  tree.write_cgroup("kubepods/pody", fake_cgroup{});
  auto m = detect_mounts(tree.cgroup_root());
  ASSERT_TRUE(m) << m.error().describe();

  auto cpu = read_cpu_usage_ns(*m, "kubepods/podx");
  ASSERT_TRUE(cpu) << cpu.error().describe();
  EXPECT_EQ(*cpu, 123'456'000);
  auto mem = read_memory(*m, "kubepods/podx");
  ASSERT_TRUE(mem) << mem.error().describe();
  EXPECT_EQ(mem->usage_bytes, 100 * mib);
  EXPECT_EQ(mem->working_set_bytes(), 70 * mib);  // usage - inactive_file
  EXPECT_EQ(mem->anon_bytes, 51 * mib);           // total_* fields, not the per-cgroup ones
  auto thr = read_cpu_throttling(*m, "kubepods/podx");
  ASSERT_TRUE(thr) << thr.error().describe();
  EXPECT_EQ(*thr, (cpu_throttling{50, 7, 9'000'000}));

  auto psi = read_psi(*m, "kubepods/podx", psi_resource::cpu);
  ASSERT_TRUE(psi) << psi.error().describe();
  ASSERT_TRUE(psi->has_value());
  EXPECT_DOUBLE_EQ((*psi)->some.avg10, 1.5);
  EXPECT_DOUBLE_EQ((*psi)->some.avg300, 0.25);
  EXPECT_EQ((*psi)->some.total_us, 12345);
  ASSERT_TRUE((*psi)->full.has_value());
  auto io = read_psi(*m, "kubepods/podx", psi_resource::io);
  ASSERT_TRUE(io && io->has_value());
  EXPECT_FALSE((*io)->full.has_value());
  EXPECT_EQ((*io)->some.total_us, 99);
  // No pressure files: PSI is optional, not an error.
  auto absent = read_psi(*m, "kubepods/pody", psi_resource::memory);
  ASSERT_TRUE(absent) << absent.error().describe();
  EXPECT_FALSE(absent->has_value());
}

// The pod's CPU limit from its cfs quota (kubelet's MilliCPUToQuota inverted): v1
// cpu.cfs_quota_us / cpu.cfs_period_us, v2 cpu.max; no quota or no files: none.
TEST_P(CgroupReaders, CpuLimitFromTheCfsQuota) {
  colony::testing::temp_dir tmp;
  node_tree tree(tmp.path(), GetParam());
  tree.write_cgroup("kubepods/podq", fake_cgroup{});
  tree.write_cgroup("kubepods/podn", fake_cgroup{});
  tree.write_cgroup("kubepods/pode", fake_cgroup{});
  auto m = detect_mounts(tree.cgroup_root());
  ASSERT_TRUE(m) << m.error().describe();
  const bool v1 = GetParam() == v::v1;
  auto set = [&](const std::string& rel, std::int64_t quota, std::int64_t period) {
    if (v1) {
      node_tree::write(tree.file_path(rel, "cpu.cfs_quota_us"), std::to_string(quota) + "\n");
      node_tree::write(tree.file_path(rel, "cpu.cfs_period_us"), std::to_string(period) + "\n");
    } else {
      node_tree::write(tree.file_path(rel, "cpu.max"),
                       (quota < 0 ? std::string("max") : std::to_string(quota)) + " " +
                           std::to_string(period) + "\n");
    }
  };
  set("kubepods/podq", 150000, 100000);
  set("kubepods/podn", -1, 100000);
  auto q = read_cpu_limit_milli(*m, "kubepods/podq");
  ASSERT_TRUE(q) << q.error().describe();
  EXPECT_EQ(*q, std::optional<std::int64_t>{1500});
  auto n = read_cpu_limit_milli(*m, "kubepods/podn");
  ASSERT_TRUE(n) << n.error().describe();
  EXPECT_FALSE(n->has_value());
  auto e = read_cpu_limit_milli(*m, "kubepods/pode");  // no quota files
  ASSERT_TRUE(e) << e.error().describe();
  EXPECT_FALSE(e->has_value());
  node_tree::write(tree.file_path("kubepods/pode", v1 ? "cpu.cfs_quota_us" : "cpu.max"), "x\n");
  auto bad = read_cpu_limit_milli(*m, "kubepods/pode");
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().code, errc::invalid_input);
  EXPECT_NE(bad.error().where.find(v1 ? "cpu.cfs_quota_us" : "cpu.max"), std::string::npos);
}

INSTANTIATE_TEST_SUITE_P(Versions, CgroupReaders, ::testing::Values(v::v1, v::v2),
                         [](const ::testing::TestParamInfo<v>& i) {
                           return i.param == v::v1 ? "V1" : "V2";
                         });

struct malformed_case {
  v version;
  std::string file;     // which file to overwrite
  std::string content;  // with what (empty string and no file: see `remove`)
  bool remove;
  std::string field;  // expected in the message
  errc code;
};

TEST(CgroupReaders, MalformedAndMissingFilesNameFileAndField) {
  const std::vector<malformed_case> rows = {
      {v::v1, "cpuacct.usage", "abc\n", false, "field cpuacct.usage", errc::invalid_input},
      {v::v1, "cpuacct.usage", "-5\n", false, "field cpuacct.usage", errc::invalid_input},
      {v::v1, "cpuacct.usage", "", false, "field cpuacct.usage", errc::invalid_input},
      {v::v1, "cpuacct.usage", "", true, "cannot open", errc::not_found},
      {v::v1, "memory.usage_in_bytes", "12 34\n", false, "field memory.usage_in_bytes",
       errc::invalid_input},
      {v::v1, "memory.stat", "total_inactive_anon 1\n", false, "field total_inactive_file missing",
       errc::invalid_input},
      {v::v1, "memory.stat", "", true, "cannot open", errc::not_found},
      {v::v1, "cpu.stat", "nr_periods 1\nnr_throttled x\n", false, "field nr_throttled",
       errc::invalid_input},
      {v::v1, "cpu.stat", "nr_periods 1\nnr_throttled 1\n", false, "field throttled_time missing",
       errc::invalid_input},
      {v::v1, "cpu.pressure", "full avg10=0 avg60=0 avg300=0 total=0\n", false,
       "field some missing", errc::invalid_input},
      {v::v2, "cpu.stat", "user_usec 5\n", false, "field usage_usec missing", errc::invalid_input},
      {v::v2, "cpu.stat", "usage_usec 99999999999999999\n", false, "field usage_usec",
       errc::invalid_input},
      {v::v2, "memory.current", "max\n", false, "field memory.current", errc::invalid_input},
      {v::v2, "memory.stat", "inactive_file 1\ninactive_anon 1\nactive_anon 1\n", false,
       "field unevictable missing", errc::invalid_input},
      {v::v2, "cpu.pressure", "some avg10=x avg60=0 avg300=0 total=0\n", false, "field some.avg10",
       errc::invalid_input},
      {v::v2, "memory.pressure", "some avg10=0.1 avg60=0 total=0\n", false,
       "field some.avg300 missing", errc::invalid_input},
      {v::v2, "io.pressure", "some avg10=0 avg60=0 avg300=0 total=1.5\n", false, "field some.total",
       errc::invalid_input},
  };
  for (const auto& r : rows) {
    colony::testing::temp_dir tmp;
    node_tree tree(tmp.path(), r.version);
    fake_cgroup c;
    c.psi = true;
    tree.write_cgroup("kubepods/podz", c);
    const auto path = tree.file_path("kubepods/podz", r.file);
    if (r.remove) {
      std::filesystem::remove(path);
    } else {
      node_tree::write(path, r.content);
    }
    auto m = detect_mounts(tree.cgroup_root());
    ASSERT_TRUE(m);
    error e;
    if (r.file == "cpuacct.usage" || (r.version == v::v2 && r.file == "cpu.stat")) {
      auto x = read_cpu_usage_ns(*m, "kubepods/podz");
      ASSERT_FALSE(x) << r.file << ": " << r.content;
      e = x.error();
    } else if (r.file == "cpu.stat") {
      auto x = read_cpu_throttling(*m, "kubepods/podz");
      ASSERT_FALSE(x) << r.file << ": " << r.content;
      e = x.error();
    } else if (r.file.find("pressure") != std::string::npos) {
      const auto res = r.file[0] == 'c'   ? psi_resource::cpu
                       : r.file[0] == 'm' ? psi_resource::memory
                                          : psi_resource::io;
      auto x = read_psi(*m, "kubepods/podz", res);
      ASSERT_FALSE(x) << r.file << ": " << r.content;
      e = x.error();
    } else {
      auto x = read_memory(*m, "kubepods/podz");
      ASSERT_FALSE(x) << r.file << ": " << r.content;
      e = x.error();
    }
    EXPECT_EQ(e.code, r.code) << r.file << ": " << r.content;
    EXPECT_EQ(e.where, path.string()) << r.file;
    EXPECT_NE(e.message.find(r.field), std::string::npos)
        << r.file << ": '" << e.message << "' lacks '" << r.field << "'";
  }
}

// Random bytes in every file a reader touches: each read either succeeds or fails with
// invalid_input naming that file; never a crash (run under ASan/UBSan too).
TEST(CgroupReaders, RandomContentNeverCrashes) {
  std::mt19937_64 rng(20240915);
  colony::testing::temp_dir tmp;
  node_tree tree(tmp.path(), v::v2);
  fake_cgroup c;
  c.psi = true;
  tree.write_cgroup("kubepods/podr", c);
  auto m = detect_mounts(tree.cgroup_root());
  ASSERT_TRUE(m);
  const std::vector<std::string> files = {"cpu.stat", "memory.current", "memory.stat",
                                          "cpu.pressure"};
  const std::string alphabet = "0123456789 \n\t=.-abcdefgilmnoprstuvx_";
  int accepted = 0, rejected = 0;
  for (int i = 0; i < 2000; ++i) {
    const auto& f = files[rng() % files.size()];
    // Half the time random text, half the time a valid file with 1 to 3 bytes changed.
    std::string content;
    if (rng() % 2 == 0) {
      const auto len = rng() % 64;
      for (std::uint64_t k = 0; k < len; ++k) content += alphabet[rng() % alphabet.size()];
    } else {
      content = f == "cpu.stat" ? "usage_usec 12\nnr_periods 2\nnr_throttled 1\nthrottled_usec 3\n"
                : f == "memory.current" ? "4096\n"
                : f == "memory.stat"
                    ? "inactive_file 1\ninactive_anon 2\nactive_anon 3\nunevictable 4\n"
                    : "some avg10=0.50 avg60=0.25 avg300=0.10 total=77\n";
      for (std::uint64_t k = 0, n = 1 + rng() % 3; k < n && !content.empty(); ++k) {
        const auto at = rng() % content.size();
        switch (rng() % 3) {
          case 0:
            content[at] = alphabet[rng() % alphabet.size()];
            break;
          case 1:
            content.erase(at, 1);
            break;
          default:
            content.insert(at, 1, alphabet[rng() % alphabet.size()]);
        }
      }
    }
    const auto path = tree.file_path("kubepods/podr", f);
    node_tree::write(path, content);
    error e;
    bool ok = false;
    if (f == "cpu.stat") {
      auto a = read_cpu_usage_ns(*m, "kubepods/podr");
      auto b = read_cpu_throttling(*m, "kubepods/podr");
      ok = a && b;
      if (!ok) e = !a ? a.error() : b.error();
    } else if (f == "cpu.pressure") {
      auto a = read_psi(*m, "kubepods/podr", psi_resource::cpu);
      ok = a.has_value();
      if (!ok) e = a.error();
    } else {
      auto a = read_memory(*m, "kubepods/podr");
      ok = a.has_value();
      if (!ok) e = a.error();
    }
    if (ok) {
      ++accepted;
    } else {
      ++rejected;
      EXPECT_EQ(e.code, errc::invalid_input) << e.describe();
      EXPECT_EQ(e.where, path.string());
      EXPECT_EQ(e.message.rfind("field ", 0), 0u) << e.message;
    }
    tree.write_cgroup("kubepods/podr", c);  // restore every file
  }
  std::printf("random cgroup files: %d accepted, %d rejected with a named field\n", accepted,
              rejected);
  EXPECT_EQ(accepted + rejected, 2000);
  EXPECT_GT(rejected, 500);
  EXPECT_GT(accepted, 100);
}

}  // namespace
