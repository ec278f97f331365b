// colony koordlet on a fake node (tests/support/node_tree.hpp): one NodeMetric JSON report in
// Koordinator's shape with --once --json, and exit codes for bad input.
#include <gtest/gtest.h>

#include <string>

#include "messages/units.hpp"
#include "tests/cli/process.hpp"
#include "tests/support/last_json.hpp"
#include "tests/support/node_tree.hpp"
#include "tests/support/temp_dir.hpp"

namespace {

using colony::testing::fake_cgroup;
using colony::testing::last_json;
using colony::testing::node_tree;
using colony::testing::run_colony;

TEST(KoordletCli, OnceJsonPrintsANodeMetricStatus) {
  colony::testing::temp_dir tmp;
  node_tree tree(tmp.path(), colony::koordlet::cgroup_version::v2);
  tree.write_proc(4, 1000, 5000, 16 * 1024 * 1024, 12 * 1024 * 1024);
  fake_cgroup g;
  g.active_anon = 256 * colony::mib;
  fake_cgroup b;
  b.inactive_anon = 64 * colony::mib;
  tree.write_cgroup("kubepods.slice/kubepods-poda_1.slice", g);
  tree.write_cgroup("kubepods.slice/kubepods-poda_1.slice/cri-containerd-x.scope", g);
  tree.write_cgroup("kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-podb_2.slice", b);
  auto [rc, out] =
      run_colony({"koordlet", "--node", "n1", "--cgroup-root", tree.cgroup_root(), "--proc-root",
                  tree.proc_root(), "--interval", "100ms", "--once", "--json"});
  ASSERT_EQ(rc, 0) << out;
  const auto j = last_json(out);
  ASSERT_TRUE(j.is_object()) << out;
  EXPECT_EQ(j["kind"], "NodeMetric");
  EXPECT_EQ(j["metadata"]["name"], "n1");
  const auto& st = j["status"];
  EXPECT_TRUE(st["updateTime"].is_string());
  EXPECT_EQ(st["updateTime"].get<std::string>().back(), 'Z');
  // The fake counters do not move: no CPU used, memory MemTotal - MemAvailable.
  EXPECT_EQ(st["nodeMetric"]["nodeUsage"]["resources"]["cpu"], "0");
  EXPECT_EQ(st["nodeMetric"]["nodeUsage"]["resources"]["memory"], "4Gi");
  EXPECT_EQ(st["nodeMetric"]["aggregatedNodeUsages"].size(), 3u);  // 5m, 10m, 30m: cold start
  ASSERT_EQ(st["podsMetric"].size(), 2u) << st.dump();
  EXPECT_EQ(st["podsMetric"][0]["name"], "a-1");  // by uid until uids map to pods
  EXPECT_EQ(st["podsMetric"][0]["namespace"], "");
  EXPECT_EQ(st["podsMetric"][0]["qos"], "LSR");
  EXPECT_EQ(st["podsMetric"][0]["podUsage"]["resources"]["memory"], "256Mi");
  EXPECT_EQ(st["podsMetric"][1]["name"], "b-2");
  EXPECT_EQ(st["podsMetric"][1]["qos"], "BE");
  EXPECT_EQ(st["podsMetric"][1]["podUsage"]["resources"]["memory"], "64Mi");
}

TEST(KoordletCli, BadInputExitCodes) {
  colony::testing::temp_dir tmp;
  node_tree tree(tmp.path(), colony::koordlet::cgroup_version::v1);
  EXPECT_EQ(run_colony({"koordlet", "--once"}).first, 2);  // --node is required
  EXPECT_EQ(run_colony({"koordlet", "--node", "n", "--interval", "fast", "--once"}).first, 3);
  EXPECT_EQ(
      run_colony({"koordlet", "--node", "n", "--cgroup-root", tmp.sub("none"), "--once"}).first, 5);
  // /proc/stat missing under the fake proc root: not_found, naming the file.
  auto [rc, out] = run_colony({"koordlet", "--node", "n", "--cgroup-root", tree.cgroup_root(),
                               "--proc-root", tree.proc_root(), "--once"});
  EXPECT_EQ(rc, 5);
  EXPECT_NE(out.find(tree.proc_root() + "/stat"), std::string::npos) << out;
}

}  // namespace
