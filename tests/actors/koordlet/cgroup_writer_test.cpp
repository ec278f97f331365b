// cgroup_writer: translation to v1/v2 files and writes into a real temporary directory tree.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "actors/koordlet/cgroup_writer.hpp"

namespace colony::koordlet {
namespace {

namespace fs = std::filesystem;

class temp_root {
 public:
  temp_root() {
    path_ = fs::temp_directory_path() /
            ("colony-koordlet-cgroup-" +
             std::to_string(::testing::UnitTest::GetInstance()->random_seed()) + "-" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(path_);
    fs::create_directories(path_);
  }
  ~temp_root() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  [[nodiscard]] const fs::path& path() const { return path_; }
  [[nodiscard]] std::string read(const std::string& rel) const {
    std::ifstream f(path_ / rel);
    std::stringstream ss;
    ss << f.rdbuf();
    return ss.str();
  }

 private:
  fs::path path_;
};

cgroup_settings be_settings() {
  cgroup_settings s;
  s.dir = "kubepods.slice/kubepods-besteffort.slice";
  s.cfs_quota_us = 220000;
  s.cpu_shares = 512;
  s.cpuset_cpus = "2-4";
  s.memory_limit_bytes = -1;
  s.memory_high_bytes = 1073741824;
  s.memory_min_bytes = 0;
  s.bvt_warp_ns = -1;
  s.cpu_idle = true;
  return s;
}

TEST(KoordletCgroupWriter, TranslatesToCgroupV2Names) {
  auto s = be_settings();
  auto w = translate_cgroup_settings({&s, 1}, cgroup_version::v2);
  const std::string d = "kubepods.slice/kubepods-besteffort.slice/";
  std::vector<cgroup_file_write> want = {
      {d + "cpuset.cpus", "2-4"}, {d + "cpu.max", "220000 100000"},
      {d + "cpu.weight", "20"},   {d + "cpu.bvt_warp_ns", "-1"},
      {d + "cpu.idle", "1"},      {d + "memory.max", "max"},
      {d + "memory.min", "0"},    {d + "memory.high", "1073741824"},
  };
  EXPECT_EQ(w, want);
}

TEST(KoordletCgroupWriter, TranslatesToCgroupV1Names) {
  auto s = be_settings();
  s.cfs_quota_us = -1;
  s.memory_limit_bytes = 2147483648;
  auto w = translate_cgroup_settings({&s, 1}, cgroup_version::v1);
  const std::string d = "kubepods.slice/kubepods-besteffort.slice/";
  std::vector<cgroup_file_write> want = {
      {d + "cpuset.cpus", "2-4"},
      {d + "cpu.cfs_quota_us", "-1"},
      {d + "cpu.shares", "512"},
      {d + "cpu.bvt_warp_ns", "-1"},
      {d + "memory.limit_in_bytes", "2147483648"},
      {d + "memory.min", "0"},
      {d + "memory.high", "1073741824"},
  };
  EXPECT_EQ(w, want);
}

TEST(KoordletCgroupWriter, SharesToWeightMatchesKubelet) {
  EXPECT_EQ(cpu_shares_to_weight(2), 1);
  EXPECT_EQ(cpu_shares_to_weight(1024), 39);
  EXPECT_EQ(cpu_shares_to_weight(262144), 10000);
}

TEST(KoordletCgroupWriter, WritesFilesUnderRoot) {
  temp_root root;
  fs::create_directories(root.path() / "kubepods.slice/kubepods-besteffort.slice");
  auto s = be_settings();
  auto w = translate_cgroup_settings({&s, 1}, cgroup_version::v2);
  auto n = write_cgroup_files(root.path().string(), w);
  ASSERT_TRUE(n.has_value()) << n.error().describe();
  EXPECT_EQ(*n, w.size());
  EXPECT_EQ(root.read("kubepods.slice/kubepods-besteffort.slice/cpu.max"), "220000 100000");
  EXPECT_EQ(root.read("kubepods.slice/kubepods-besteffort.slice/cpuset.cpus"), "2-4");
  // A second write truncates, as a cgroup file does.
  s.cpuset_cpus = "2";
  auto w2 = translate_cgroup_settings({&s, 1}, cgroup_version::v2);
  ASSERT_TRUE(write_cgroup_files(root.path().string(), w2).has_value());
  EXPECT_EQ(root.read("kubepods.slice/kubepods-besteffort.slice/cpuset.cpus"), "2");
}

TEST(KoordletCgroupWriter, MissingDirectoryIsAnErrorNamingThePath) {
  temp_root root;
  std::vector<cgroup_file_write> w = {{"kubepods.slice/pod-x/cpu.max", "max 100000"}};
  auto r = write_cgroup_files(root.path().string(), w);
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code, errc::not_found);
  EXPECT_NE(r.error().where.find("kubepods.slice/pod-x"), std::string::npos);
}

TEST(KoordletCgroupWriter, UnwritableFileIsUnavailable) {
  temp_root root;
  fs::create_directories(root.path() / "cg" / "cpu.max");  // a directory where the file should be
  std::vector<cgroup_file_write> w = {{"cg/cpu.max", "max 100000"}};
  auto r = write_cgroup_files(root.path().string(), w);
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code, errc::unavailable);
  EXPECT_NE(r.error().where.find("cg/cpu.max"), std::string::npos);
}

}  // namespace
}  // namespace colony::koordlet
