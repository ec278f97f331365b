// gnuplot_pool (sim/gnuplot.hpp): scripts render in waiting processes and on demand, a failing
// script is an error naming where and gnuplot's message, and without gnuplot on PATH the pool
// says so instead of failing later.
#include "sim/gnuplot.hpp"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#include <gtest/gtest.h>

namespace colony::sim {
namespace {

namespace fs = std::filesystem;

bool have_gnuplot() { return std::system("gnuplot --version >/dev/null 2>&1") == 0; }

std::string png_script(const fs::path& out) {
  return "set terminal pngcairo size 200,100\nset output '" + out.string() +
         "'\nplot '-' using 1:2 with lines\n0 1\n1 2\ne\n";
}

class GnuplotPool : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!have_gnuplot()) GTEST_SKIP() << "gnuplot is not installed";
    dir_ = fs::temp_directory_path() / ("colony-gnuplot-test-" + std::to_string(::getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  fs::path dir_;
};

TEST_F(GnuplotPool, RendersMoreScriptsThanWaitingProcesses) {
  gnuplot_pool pool(1);
  ASSERT_TRUE(pool.available());
  std::vector<std::string> scripts;
  for (int i = 0; i < 3; ++i)
    scripts.push_back(png_script(dir_ / ("p" + std::to_string(i) + ".png")));
  auto r = pool.render(scripts, "test.gp");
  ASSERT_TRUE(r) << r.error().describe();
  for (int i = 0; i < 3; ++i) {
    const auto p = dir_ / ("p" + std::to_string(i) + ".png");
    ASSERT_TRUE(fs::exists(p)) << p;
    EXPECT_GT(fs::file_size(p), 100u);
  }
  // The pool starts more processes once its waiting ones are used.
  auto again = pool.render({png_script(dir_ / "again.png")}, "again.gp");
  ASSERT_TRUE(again) << again.error().describe();
  EXPECT_TRUE(fs::exists(dir_ / "again.png"));
}

TEST_F(GnuplotPool, FailingScriptNamesWhereAndGnuplotsMessage) {
  gnuplot_pool pool(2);
  auto r = pool.render({png_script(dir_ / "ok.png"), "plot no_such_function(x)\n"}, "OUT/plots.gp");
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().where, "OUT/plots.gp");
  EXPECT_NE(r.error().message.find("no_such_function"), std::string::npos) << r.error().message;
  EXPECT_TRUE(fs::exists(dir_ / "ok.png"));  // the other script still ran
}

TEST_F(GnuplotPool, WithoutGnuplotOnPathThePoolIsUnavailable) {
  const std::string path = std::getenv("PATH") != nullptr ? std::getenv("PATH") : "";
  ::setenv("PATH", dir_.c_str(), 1);
  gnuplot_pool pool(2);
  ::setenv("PATH", path.c_str(), 1);
  EXPECT_FALSE(pool.available());
  auto r = pool.render({png_script(dir_ / "x.png")}, "x.gp");
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, errc::not_found);
}

}  // namespace
}  // namespace colony::sim
