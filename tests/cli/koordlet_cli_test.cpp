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

// build/colony-koordlet (the DaemonSet's binary) is the same command: on the same node it
// reports the same NodeMetric as `colony koordlet` (but for its time), and a usage error is exit 2.
TEST(KoordletCli, ColonyKoordletBinaryReportsAsColonyKoordlet) {
  colony::testing::temp_dir tmp;
  node_tree tree(tmp.path(), colony::koordlet::cgroup_version::v1);
  tree.write_proc(4, 1000, 5000, 16 * 1024 * 1024, 12 * 1024 * 1024);
  fake_cgroup g;
  g.active_anon = 128 * colony::mib;
  tree.write_cgroup("kubepods/burstable/poda-1", g);
  const std::vector<std::string> args{
      "--node",         "n1",         "--cgroup-root", tree.cgroup_root(), "--proc-root",
      tree.proc_root(), "--interval", "100ms",         "--once",           "--json"};
  auto with_log = [&](std::vector<std::string> a, const std::string& log) {
    a.push_back("--log");
    a.push_back(log);
    return a;
  };
  auto full = with_log(args, tmp.sub("log1"));
  full.insert(full.begin(), "koordlet");
  auto [rc1, out1] = run_colony(full);
  auto [rc2, out2] = colony::testing::run_colony_koordlet(with_log(args, tmp.sub("log2")));
  ASSERT_EQ(rc1, 0) << out1;
  ASSERT_EQ(rc2, 0) << out2;
  auto j1 = last_json(out1);
  auto j2 = last_json(out2);
  ASSERT_TRUE(j1.is_object()) << out1;
  ASSERT_TRUE(j2.is_object()) << out2;
  EXPECT_EQ(j2["status"]["podsMetric"][0]["podUsage"]["resources"]["memory"], "128Mi");
  j1["status"].erase("updateTime");
  j2["status"].erase("updateTime");
  EXPECT_EQ(j1, j2);
  auto [rc3, out3] = colony::testing::run_colony_koordlet({"--once"});
  EXPECT_EQ(rc3, 2) << out3;
  EXPECT_NE(out3.find("--node is required"), std::string::npos) << out3;
  auto bad = with_log(args, tmp.sub("log3"));
  bad.insert(bad.end(), {"--sample-retention", "2x"});
  auto [rc4, out4] = colony::testing::run_colony_koordlet(bad);
  EXPECT_NE(rc4, 0) << out4;
  EXPECT_NE(out4.find("--sample-retention: '2x' is not a duration"), std::string::npos) << out4;
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

// RdtResctrl end to end on a fake resctrl tree (a two-socket Intel machine, 11 ways): the BE
// class enabled at 10-50 % and MBA 85 % gives BE "L3:0=3c;1=3c" / "MB:0=90;1=90", the other
// groups DefaultResctrlQOS's full range; the BE pod's container tasks join the BE group. Then on
// a log of its own over an empty mount point (resctrl not mounted, as on this machine): one
// WriteFailed "unsupported by this kernel", nothing created.
TEST(KoordletCli, ResctrlGroupsWrittenAndUnsupportedOnceWhereNotMounted) {
  namespace fs = std::filesystem;
  colony::testing::temp_dir tmp;
  node_tree tree(tmp.path(), colony::koordlet::cgroup_version::v1);
  tree.write_proc(4, 1000, 5000, 16 * 1024 * 1024, 12 * 1024 * 1024);
  fake_cgroup c;
  tree.write_cgroup("kubepods/burstable/poda-1", c);
  tree.write_cgroup("kubepods/besteffort/podb-2", c);
  std::ofstream(tree.cgroup_root() + "/cpu/kubepods/besteffort/podb-2/tasks") << "";
  fs::create_directories(tree.cgroup_root() + "/cpu/kubepods/besteffort/podb-2/c1");
  std::ofstream(tree.cgroup_root() + "/cpu/kubepods/besteffort/podb-2/c1/tasks") << "4242\n4243\n";
  const std::string rdt = tmp.sub("resctrl");
  fs::create_directories(rdt + "/info/L3");
  fs::create_directories(rdt + "/info/MB");
  std::ofstream(rdt + "/schemata") << "    L3:0=7ff;1=7ff\n    MB:0=100;1=100\n";
  std::ofstream(rdt + "/info/L3/cbm_mask") << "7ff\n";
  std::ofstream(rdt + "/info/L3/min_cbm_bits") << "1\n";
  std::ofstream(rdt + "/info/MB/min_bandwidth") << "10\n";
  std::ofstream(rdt + "/info/MB/bandwidth_gran") << "10\n";
  const std::string slo = tmp.sub("nodeslo.json");
  std::ofstream(slo) << R"({"resourceQOSStrategy":{"beClass":{"resctrlQOS":{"enable":true,)"
                        R"("catRangeStartPercent":10,"catRangeEndPercent":50,"mbaPercent":85}}}})";
  auto read = [](const std::string& p) {
    std::ifstream f(p);
    return std::string(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
  };
  std::vector<std::string> args{
      "koordlet",    "--node",         "n1",         "--cgroup-root",  tree.cgroup_root(),
      "--proc-root", tree.proc_root(), "--interval", "100ms",          "--once",
      "--enforce",   "--node-slo",     slo,          "--resctrl-root", rdt,
      "--log",       tmp.sub("log")};
  auto [rc, out] = run_colony(args);
  ASSERT_EQ(rc, 0) << out;
  EXPECT_EQ(read(rdt + "/BE/schemata"), "L3:0=3c;1=3c\nMB:0=90;1=90\n");
  EXPECT_EQ(read(rdt + "/LS/schemata"), "L3:0=7ff;1=7ff\nMB:0=100;1=100\n");
  EXPECT_EQ(read(rdt + "/LSR/schemata"), "L3:0=7ff;1=7ff\nMB:0=100;1=100\n");
  EXPECT_EQ(read(rdt + "/BE/tasks"), "4242\n4243\n");
  EXPECT_FALSE(fs::exists(rdt + "/LS/tasks")) << "LS is not enabled: its tasks are not moved";
  auto [drc, dump] = run_colony({"log", "dump", "--log", tmp.sub("log")});
  ASSERT_EQ(drc, 0) << dump;
  EXPECT_NE(dump.find(R"({"key":"resctrl/BE/tasks","value":"4242 4243"})"), std::string::npos)
      << dump;
  EXPECT_EQ(dump.find(R"("type":"WriteFailed")"), std::string::npos) << dump;

  const std::string none = tmp.sub("no-resctrl");
  fs::create_directories(none);
  args[args.size() - 3] = none;
  args.back() = tmp.sub("log2");
  std::tie(rc, out) = run_colony(args);
  ASSERT_EQ(rc, 0) << out;
  EXPECT_NE(out.find("unsupported by this kernel: resctrl is not mounted at " + none),
            std::string::npos)
      << out;
  std::tie(drc, dump) = run_colony({"log", "dump", "--log", tmp.sub("log2")});
  ASSERT_EQ(drc, 0) << dump;
  std::size_t failed = 0;
  for (auto at = dump.find(R"("type":"WriteFailed")"); at != std::string::npos;
       at = dump.find(R"("type":"WriteFailed")", at + 1))
    ++failed;
  EXPECT_EQ(failed, 1u) << dump;
  EXPECT_NE(dump.find("resctrl is not mounted"), std::string::npos) << dump;
  EXPECT_TRUE(fs::is_empty(none)) << "nothing created where resctrl is not mounted";
}

// kidled's memory.idle_page_stats with `cold` bytes of clean file pages idle for 60-120 scans
// (bucket 5, the first Koordinator counts as cold), in the kernel's 31-line layout.
std::string idle_page_stats(std::int64_t cold) {
  std::string s =
      "# version: 1.0\n# page_scans: 24\n# slab_scans: 0\n# scan_period_in_seconds: 120\n"
      "# use_hierarchy: 1\n# buckets: 1,2,5,15,30,60,120,240\n#\n#   _-----=> clean/dirty\n"
      "#  / _----=> swap/file\n# | / _---=> evict/unevict\n# || / _--=> inactive/active\n"
      "# ||| / _-=> slab\n# |||| /\n# |||||   [1,2) [2,5) [5,15) [15,30) [30,60) [60,120) "
      "[120,240) [240,+inf)\n";
  for (const char* row : {"csei", "dsei", "cfei", "dfei", "csui", "dsui", "cfui", "dfui", "csea",
                          "dsea", "cfea", "dfea", "csua", "dsua", "cfua", "dfua", "slab"})
    s += std::string("  ") + row + " 4096 0 0 0 0 " +
         (std::string(row) == "cfei" ? std::to_string(cold) : "0") + " 0 0\n";
  return s;
}

// ColdPageCollector with nodeMemoryCollectPolicy usageWithHotPageCache on a fake kidled kernel:
// the NodeMetric's memory is usage with hot page cache (node: MemTotal - MemFree - cold; pod:
// anon + file pages - cold) and its spec says usageWithHotPageCache. Without the files (this
// machine's kernel): one WriteFailed "unsupported by this kernel", the figures stay
// usageWithoutPageCache and the report says so.
TEST(KoordletCli, ColdPageCollectorReportsMemoryWithHotPageCacheOrSaysUnsupportedOnce) {
  colony::testing::temp_dir tmp;
  node_tree tree(tmp.path(), colony::koordlet::cgroup_version::v1);
  tree.write_proc(4, 1000, 5000, 16 * 1024 * 1024, 12 * 1024 * 1024);  // MemFree: 1000 KiB
  fake_cgroup b;
  b.active_anon = 256 * colony::mib;
  b.inactive_file = 128 * colony::mib;
  tree.write_cgroup("kubepods/besteffort/podb-2", b);
  std::vector<std::string> args{"koordlet",
                                "--node",
                                "n1",
                                "--cgroup-root",
                                tree.cgroup_root(),
                                "--proc-root",
                                tree.proc_root(),
                                "--interval",
                                "100ms",
                                "--once",
                                "--json",
                                "--feature-gates",
                                "ColdPageCollector=true",
                                "--node-memory-collect-policy",
                                "usageWithHotPageCache",
                                "--log",
                                tmp.sub("log")};
  auto count_failed = [](const std::string& dump) {
    std::size_t n = 0;
    for (auto at = dump.find(R"("type":"WriteFailed")"); at != std::string::npos;
         at = dump.find(R"("type":"WriteFailed")", at + 1))
      ++n;
    return n;
  };
  // No kidled: said once, usageWithoutPageCache figures.
  auto [rc, out] = run_colony(args);
  ASSERT_EQ(rc, 0) << out;
  EXPECT_NE(out.find("unsupported by this kernel: no memory.idle_page_stats"), std::string::npos)
      << out;
  auto j = last_json(out);
  ASSERT_TRUE(j.is_object()) << out;
  EXPECT_EQ(j["spec"]["metricCollectPolicy"]["nodeMemoryCollectPolicy"], "usageWithoutPageCache");
  EXPECT_EQ(j["status"]["nodeMetric"]["nodeUsage"]["resources"]["memory"], "4Gi");
  EXPECT_EQ(j["status"]["podsMetric"][0]["podUsage"]["resources"]["memory"], "256Mi");
  auto [drc, dump] = run_colony({"log", "dump", "--log", tmp.sub("log")});
  ASSERT_EQ(drc, 0) << dump;
  EXPECT_EQ(count_failed(dump), 1u) << dump;
  EXPECT_NE(dump.find(tree.cgroup_root() + "/memory/memory.idle_page_stats"), std::string::npos);
  // A restart on the same log says nothing again.
  std::tie(rc, out) = run_colony(args);
  ASSERT_EQ(rc, 0) << out;
  std::tie(drc, dump) = run_colony({"log", "dump", "--log", tmp.sub("log")});
  EXPECT_EQ(count_failed(dump), 1u) << dump;

  // A kidled kernel: 1 GiB of the node's page cache and 64 MiB of the pod's are cold.
  std::ofstream(tree.cgroup_root() + "/memory/memory.idle_page_stats")
      << idle_page_stats(colony::gib);
  std::ofstream(tree.cgroup_root() + "/memory/kubepods/besteffort/podb-2/memory.idle_page_stats")
      << idle_page_stats(64 * colony::mib);
  args.back() = tmp.sub("log2");
  std::tie(rc, out) = run_colony(args);
  ASSERT_EQ(rc, 0) << out;
  EXPECT_EQ(out.find("unsupported"), std::string::npos) << out;
  j = last_json(out);
  ASSERT_TRUE(j.is_object()) << out;
  EXPECT_EQ(j["spec"]["metricCollectPolicy"]["nodeMemoryCollectPolicy"], "usageWithHotPageCache");
  // 16 GiB - 1000 KiB (MemFree) - 1 GiB cold.
  EXPECT_EQ(j["status"]["nodeMetric"]["nodeUsage"]["resources"]["memory"], "15727640Ki");
  // 256 MiB anon + 128 MiB inactive file - 64 MiB cold.
  EXPECT_EQ(j["status"]["podsMetric"][0]["podUsage"]["resources"]["memory"], "320Mi");
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
