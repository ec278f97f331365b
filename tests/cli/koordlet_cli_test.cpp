// colony koordlet on a fake node (tests/support/node_tree.hpp): one NodeMetric JSON report in
// Koordinator's shape with --once --json (the koordlet component's report, from its log), the
// dry run that logs a BE suppression without writing it, --enforce that writes it on start from
// the logged decision (reconcile) and logs what the file holds, and exit codes for bad input.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <tuple>
#include <vector>

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
  auto [rc, out] = run_colony({"koordlet", "--node", "n1", "--cgroup-root", tree.cgroup_root(),
                               "--proc-root", tree.proc_root(), "--interval", "100ms", "--once",
                               "--json", "--log", tmp.sub("log")});
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
  EXPECT_EQ(st["podsMetric"][0]["qos"], "LS");  // not BestEffort: LS until uids map to pods
  EXPECT_EQ(st["podsMetric"][0]["podUsage"]["resources"]["memory"], "256Mi");
  EXPECT_EQ(st["podsMetric"][1]["name"], "b-2");
  EXPECT_EQ(st["podsMetric"][1]["qos"], "BE");
  EXPECT_EQ(st["podsMetric"][1]["podUsage"]["resources"]["memory"], "64Mi");
}

TEST(KoordletCli, DryRunLogsTheSuppressionAndEnforceWritesItOnStart) {
  colony::testing::temp_dir tmp;
  node_tree tree(tmp.path(), colony::koordlet::cgroup_version::v1);
  tree.write_proc(4, 1000, 5000, 16 * 1024 * 1024, 12 * 1024 * 1024);
  fake_cgroup c;
  tree.write_cgroup("kubepods/burstable/poda-1", c);
  tree.write_cgroup("kubepods/besteffort/podb-2", c);
  const std::string slo = tmp.sub("nodeslo.json");
  std::ofstream(slo) << R"({"resourceUsedThresholdWithBE":{"enable":true,)"
                        R"("cpuSuppressPolicy":"cfsQuota","cpuSuppressThresholdPercent":65}})";
  const std::string quota_file = tree.cgroup_root() + "/cpu/kubepods/besteffort/cpu.cfs_quota_us";
  const std::vector<std::string> base{"koordlet",
                                      "--node",
                                      "n1",
                                      "--cgroup-root",
                                      tree.cgroup_root(),
                                      "--proc-root",
                                      tree.proc_root(),
                                      "--interval",
                                      "100ms",
                                      "--once",
                                      "--log",
                                      tmp.sub("log"),
                                      "--node-slo",
                                      slo};
  auto [rc, out] = run_colony(base);
  ASSERT_EQ(rc, 0) << out;
  EXPECT_NE(out.find("dry run"), std::string::npos) << out;
  EXPECT_FALSE(std::filesystem::exists(quota_file));  // nothing written
  auto [drc, dump] = run_colony({"log", "dump", "--log", tmp.sub("log")});
  ASSERT_EQ(drc, 0) << dump;
  // The fake counters do not move: no usage, so BE may use 65 % of 4 cores = 2600 milli.
  EXPECT_NE(dump.find(R"("type":"BeSuppressed")"), std::string::npos) << dump;
  EXPECT_NE(dump.find(R"("be_cpu_milli":2600)"), std::string::npos) << dump;
  EXPECT_EQ(dump.find(R"("type":"CgroupUpdated")"), std::string::npos) << dump;

  // --enforce on the same log: the logged decision is written at start and read back.
  auto enforce = base;
  enforce.push_back("--enforce");
  std::tie(rc, out) = run_colony(enforce);
  ASSERT_EQ(rc, 0) << out;
  EXPECT_NE(out.find("enforcing"), std::string::npos) << out;
  std::ifstream f(quota_file);
  std::string v;
  f >> v;
  EXPECT_EQ(v, "260000");
  std::tie(drc, dump) = run_colony({"log", "dump", "--log", tmp.sub("log")});
  ASSERT_EQ(drc, 0) << dump;
  EXPECT_NE(dump.find(R"("type":"CgroupUpdated")"), std::string::npos) << dump;
  EXPECT_NE(dump.find(R"("source":"bridge/node")"), std::string::npos) << dump;
  EXPECT_NE(dump.find(R"({"key":"kubepods/besteffort/cpu.cfs_quota_us","value":"260000"})"),
            std::string::npos)
      << dump;
}

// --node-slo with spec.hostApplications: the collector reads the host app's cgroup (systemd
// driver: KubepodsBurstable is kubepods.slice/kubepods-burstable.slice) and the report lists it
// in status.hostApplicationMetric (HostApplicationMetricInfo: name, usage, priority, qos); an
// invalid entry is exit code 3 naming the file and the field.
TEST(KoordletCli, NodeSloHostApplicationsAreReportedInHostApplicationMetric) {
  colony::testing::temp_dir tmp;
  node_tree tree(tmp.path(), colony::koordlet::cgroup_version::v2);
  tree.write_proc(4, 1000, 5000, 16 * 1024 * 1024, 12 * 1024 * 1024);
  fake_cgroup app;
  app.active_anon = 96 * colony::mib;
  tree.write_cgroup("kubepods.slice/kubepods-burstable.slice/agents/logd", app);
  const std::string slo = tmp.sub("slo.json");
  std::ofstream(slo) << R"({"hostApplications":[{"name":"logd","qos":"LS",)"
                        R"("priority":"koord-mid","cgroupPath":{"base":"KubepodsBurstable",)"
                        R"("parentDir":"agents","relativePath":"logd"}}]})";
  auto [rc, out] = run_colony({"koordlet", "--node", "n1", "--cgroup-root", tree.cgroup_root(),
                               "--proc-root", tree.proc_root(), "--interval", "100ms", "--once",
                               "--json", "--node-slo", slo, "--log", tmp.sub("log")});
  ASSERT_EQ(rc, 0) << out;
  const auto j = last_json(out);
  ASSERT_TRUE(j.is_object()) << out;
  const auto& apps = j["status"]["hostApplicationMetric"];
  ASSERT_EQ(apps.size(), 1u) << j.dump();
  EXPECT_EQ(apps[0]["name"], "logd");
  EXPECT_EQ(apps[0]["qos"], "LS");
  EXPECT_EQ(apps[0]["priority"], "koord-mid");
  EXPECT_EQ(apps[0]["usage"]["resources"]["memory"], "96Mi");
  EXPECT_EQ(apps[0]["usage"]["resources"]["cpu"], "0");  // the fake counters do not move

  std::ofstream(slo) << R"({"hostApplications":[{"name":"logd","qos":"LS",)"
                        R"("cgroupPath":{"base":"Root"}}]})";
  std::tie(rc, out) =
      run_colony({"koordlet", "--node", "n1", "--cgroup-root", tree.cgroup_root(), "--proc-root",
                  tree.proc_root(), "--once", "--node-slo", slo, "--log", tmp.sub("log2")});
  EXPECT_EQ(rc, 3) << out;
  EXPECT_NE(out.find("NodeSLO.spec.hostApplications[0].cgroupPath.base"), std::string::npos) << out;
}

TEST(KoordletCli, BadInputExitCodes) {
  colony::testing::temp_dir tmp;
  node_tree tree(tmp.path(), colony::koordlet::cgroup_version::v1);
  const std::string log = tmp.sub("log");
  EXPECT_EQ(run_colony({"koordlet", "--once", "--log", log}).first, 2);   // --node is required
  EXPECT_EQ(run_colony({"koordlet", "--node", "n", "--once"}).first, 2);  // --log is required
  EXPECT_EQ(
      run_colony({"koordlet", "--node", "n", "--interval", "fast", "--once", "--log", log}).first,
      3);
  EXPECT_EQ(run_colony({"koordlet", "--node", "n", "--cgroup-root", tmp.sub("none"), "--once",
                        "--log", log})
                .first,
            5);
  // /proc/stat missing under the fake proc root: not_found, naming the file.
  auto [rc, out] = run_colony({"koordlet", "--node", "n", "--cgroup-root", tree.cgroup_root(),
                               "--proc-root", tree.proc_root(), "--once", "--log", log});
  EXPECT_EQ(rc, 5);
  EXPECT_NE(out.find(tree.proc_root() + "/stat"), std::string::npos) << out;
}

}  // namespace
