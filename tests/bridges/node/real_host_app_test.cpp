// A host application on real cgroups (label cgroup): the koordlet loop (run/koordlet_agent:
// collector -> koordlet component -> cgroup executor, embedded log) with a NodeSLO declaring a
// host application (spec.hostApplications: LS, koord-prod, cgroupPath base CgroupRoot, its
// relativePath under the test's subtree) next to a kubepods-like tree with a BE pod running two
// busy loops. When a busy loop starts in the host application's cgroup, the component's cfsQuota
// suppression (cpusuppress with hostApps, helpers.CalculateFilterPodsUsed: a non-BE host app
// subtracts from BE's share) must lower the BE tier's quota; the collector's host-app CPU
// (hostapplication collector) must match the loop's own CPU time from /proc/<pid>/stat; the
// NodeMetric report lists it (status.hostApplicationMetric); and the group identity write to its
// cgroup (cpu.bvt_warp_ns, the host-app reconciler) is reported unsupported where the kernel lacks
// the file, once per node as for pods (the log's WriteFailed), never created.
//
// The node the koordlet sees is the test's subtree (tests/bridges/node/real_cgroup_harness.hpp:
// write_node_proc), as in RealCgroupEnforce.CfsQuotaSuppressionHoldsBestEffortAtTheTargetAndRe-
// leasesIt, so other work on the shared machine is not the formula's system usage. Every cgroup
// made is removed, also when an assertion fails; skips, naming what is missing, where
// /sys/fs/cgroup/{cpu,cpuacct,memory} are not writable v1 controllers.
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <numeric>
#include <string>
#include <thread>
#include <vector>

#include "actors/slo_controller/node_slo.hpp"
#include "run/koordlet_agent.hpp"
#include "stores/event_log.hpp"
#include "tests/bridges/node/real_cgroup_harness.hpp"
#include "tests/support/temp_dir.hpp"

namespace {

using namespace colony;
using namespace colony::testing::cgroup_harness;
namespace fs = std::filesystem;

TEST(RealCgroupHostApp, BusyLsHostAppLowersBestEffortsQuotaAndIsReportedWithItsOwnCpu) {
  std::vector<std::string> ctrl;
  if (auto why = missing({"cpu", "cpuacct", "memory"}, ctrl); !why.empty()) GTEST_SKIP() << why;
  const std::string cpu_dir = ctrl[0], cpuacct_dir = ctrl[1];
  const bool bvt_supported = fs::exists(cpu_dir + "/cpu.bvt_warp_ns");

  const std::string parent = "colony-test-" + std::to_string(::getpid()) + "-hostapp";
  const std::string be_uid = "4d000000-0000-0000-0000-" + std::to_string(100000000000 + ::getpid());
  const std::string kp = parent + "/kubepods";
  const std::string be_tier = kp + "/besteffort";
  const std::string be_pod = be_tier + "/pod" + be_uid;
  const std::string app_dir = parent + "/host/nginx";  // relative to each controller
  cgroup_cleanup cleanup;
  if (auto why = cleanup.create(ctrl, {parent, kp, kp + "/burstable", be_tier, be_pod,
                                       be_pod + "/be", parent + "/host", app_dir});
      !why.empty())
    GTEST_SKIP() << why;
  ASSERT_TRUE(write_file(cpu_dir + "/" + parent + "/cpu.shares", "65536"));
  // The host app's loop must get its core (the load fits the machine: ~1 core plus BE's
  // target) so that the quota, not the scheduler's split of the subtree between kubepods and the
  // host app, holds BE: the host directory weighs more than kubepods (Koordinator sets no shares
  // for host applications; their owner does).
  ASSERT_TRUE(write_file(cpu_dir + "/" + parent + "/host/cpu.shares", "16384"));
  auto in_all = [&](const std::string& rel) {
    std::vector<std::string> d;
    for (const auto& c : ctrl) d.push_back(c + "/" + rel);
    return d;
  };
  children be_procs, app_procs;
  for (int i = 0; i < 2; ++i) {
    const pid_t p = spawn_spinner(in_all(be_pod + "/be"));
    ASSERT_GT(p, 0);
    be_procs.pids.push_back(p);
  }

  // The NodeSLO as the slo-controller renders it, read by the slo-controller's own parser (as
  // `colony koordlet --node-slo FILE` does): cfsQuota at 90 %, LS group identity, the host app.
  const std::string spec_json =
      R"({"resourceUsedThresholdWithBE":{"enable":true,"cpuSuppressPolicy":"cfsQuota",)"
      R"("cpuSuppressThresholdPercent":90},)"
      R"("resourceQOSStrategy":{"lsClass":{"cpuQOS":{"enable":true}}},)"
      R"("hostApplications":[{"name":"nginx","priority":"koord-prod","qos":"LS",)"
      R"("cgroupPath":{"base":"CgroupRoot","relativePath":")" +
      app_dir + R"("}}]})";
  auto spec = slo_controller::parse_node_slo_spec(spec_json);
  ASSERT_TRUE(spec) << spec.error().describe();
  auto qos = slo_controller::parse_resource_qos_strategy(spec->resource_qos_strategy_json);
  ASSERT_TRUE(qos) << qos.error().describe();

  colony::testing::temp_dir tmp;
  const std::string proc = tmp.sub("proc");
  const std::string node_usage = cpuacct_dir + "/" + parent + "/cpuacct.usage";
  const std::int64_t hz = ::sysconf(_SC_CLK_TCK);
  write_node_proc(proc, node_usage, hz);
  stores::log_options lo;
  auto log = stores::open_log(tmp.sub("log"), lo);
  ASSERT_TRUE(log) << log.error().describe();
  auto o = enforcing_agent(parent, proc, hz);
  o.koordlet.threshold = koordlet_actor::to_koordlet(spec->resource_used_threshold_with_be);
  o.koordlet.cpu_qos = koordlet_actor::to_koordlet(*qos);
  o.koordlet.host_apps = koordlet_actor::to_koordlet(spec->host_applications);
  o.koordlet.report_interval_ms = 1000;
  auto ag = agent::koordlet_agent::open(o, **log, event_time{now_ms()});
  ASSERT_TRUE(ag) << ag.error().describe();
  auto& a = **ag;

  // Each step: its time, the host app's sampled CPU (cores; -1 before it has two points) and
  // the busy loop's own CPU ticks right after the snapshot.
  struct step_rec {
    std::int64_t t = 0;
    double app_cores = -1;
    std::int64_t loop_ticks = 0;
  };
  std::vector<step_rec> steps;
  std::vector<error> problems;
  constexpr int step_ms = 300;
  auto run_steps = [&](int n) {
    for (int i = 0; i < n; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(step_ms));
      write_node_proc(proc, node_usage, hz);
      const std::int64_t t = now_ms();
      auto r = a.step(event_time{t});
      ASSERT_TRUE(r) << r.error().describe();
      step_rec s;
      s.t = t;
      s.loop_ticks = app_procs.pids.empty() ? 0 : process_ticks(app_procs.pids[0]);
      if (a.last_usage())
        for (const auto& h : a.last_usage()->host_apps)
          if (h.name == "nginx") s.app_cores = h.cpu_cores;
      steps.push_back(s);
      for (auto& e : a.take_problems()) problems.push_back(std::move(e));
    }
  };
  auto mean_target = [&](int n) {
    std::vector<double> targets;
    for (int i = 0; i < n; ++i) {
      run_steps(1);
      const auto q = a.desired().be_cfs_quota_us.value_or(-1);
      targets.push_back(q < 0 ? 2.0 : static_cast<double>(q) / 100000.0);
    }
    return std::accumulate(targets.begin(), targets.end(), 0.0) /
           static_cast<double>(targets.size());
  };

  // Phase A: the host app idle.
  run_steps(4);
  const double idle_target = mean_target(6);
  // Phase B: a busy loop in the host app's cgroup (~1 core).
  const pid_t loop = spawn_spinner(in_all(app_dir));
  ASSERT_GT(loop, 0);
  app_procs.pids.push_back(loop);
  run_steps(6);
  const std::size_t busy_from = steps.size();
  const double busy_target = mean_target(7);
  const std::size_t busy_to = steps.size();
  const std::string be_stat = cpu_dir + "/" + be_tier + "/cpu.stat";
  const auto throttled = stat_field(read_file(be_stat), "nr_throttled");

  // The collector's host-app CPU over the busy window against the loop's own CPU time.
  double sampled = 0;
  for (std::size_t i = busy_from; i < busy_to; ++i) sampled += steps[i].app_cores;
  sampled /= static_cast<double>(busy_to - busy_from);
  const double own =
      static_cast<double>(steps[busy_to - 1].loop_ticks - steps[busy_from - 1].loop_ticks) /
      static_cast<double>(hz) /
      (static_cast<double>(steps[busy_to - 1].t - steps[busy_from - 1].t) / 1000.0);

  // The last report: the host app listed, its usage the average of its samples in the window
  // (all of them: the aggregate duration is 5 min). Compared with the same average of the loop's
  // own rate per interval from /proc/<pid>/stat (0 before it started).
  const auto& rep = a.last_report();
  ASSERT_FALSE(rep.empty());
  const auto& m = *wire::GetEnvelope(rep.data())->payload_as_NodeMetricReported();
  ASSERT_NE(m.host_apps(), nullptr);
  ASSERT_EQ(m.host_apps()->size(), 1u);
  const auto* h = m.host_apps()->Get(0);
  EXPECT_EQ(messages::to_string_view(h->name()), "nginx");
  EXPECT_EQ(h->priority_class(), wire::PriorityClass::Prod);
  EXPECT_EQ(h->qos_class(), wire::QoSClass::LS);
  const double reported =
      static_cast<double>(messages::to_resource_list(h->usage()).cpu_milli) / 1000.0;
  double samples_mean = 0, own_mean = 0;
  int count = 0;
  for (std::size_t i = 1; i < steps.size(); ++i) {
    if (steps[i].app_cores < 0 || steps[i].t > m.update_time_ms()) continue;
    samples_mean += steps[i].app_cores;
    own_mean += static_cast<double>(steps[i].loop_ticks - steps[i - 1].loop_ticks) /
                static_cast<double>(hz) /
                (static_cast<double>(steps[i].t - steps[i - 1].t) / 1000.0);
    ++count;
  }
  ASSERT_GT(count, 0);
  samples_mean /= count;
  own_mean /= count;

  // The bvt write to the host app's cgroup.
  const std::string app_bvt = cpu_dir + "/" + app_dir + "/cpu.bvt_warp_ns";
  std::vector<std::string> unsupported_logged;
  auto n = (*log)->read(log_offset{0}, no_offset, [&](log_offset, messages::bytes_view bytes) {
    const auto& env = *wire::GetEnvelope(bytes.data());
    if (env.payload_type() != wire::Payload::WriteFailed) return true;
    const auto msg = messages::to_string_view(env.payload_as_WriteFailed()->message());
    if (msg.rfind("unsupported by this kernel", 0) == 0)
      unsupported_logged.emplace_back(
          messages::to_string_view(env.payload_as_WriteFailed()->object()));
    else
      ADD_FAILURE() << "unexpected WriteFailed: " << msg;
    return true;
  });
  ASSERT_TRUE(n) << n.error().describe();
  const auto it = a.desired().pods.find("host-app:nginx");
  ASSERT_NE(it, a.desired().pods.end()) << "no host-app bvt decision";
  EXPECT_EQ(it->second.settings,
            (std::vector<std::pair<std::string, std::string>>{{"cpu.bvt_warp_ns", "2"}}));

  std::printf(
      "BE target: host app idle %.3f cores, busy %.3f cores (BE throttled in %lld periods); host "
      "app CPU: collector %.3f cores vs /proc/%d/stat %.3f over the busy window, report %.3f "
      "(samples' mean %.3f, %d samples) vs /proc %.3f; bvt %s (%zu unsupported WriteFailed, %llu "
      "files skipped)\n",
      idle_target, busy_target, static_cast<long long>(throttled), sampled, loop, own, reported,
      samples_mean, count, own_mean, bvt_supported ? "written" : "unsupported",
      unsupported_logged.size(), static_cast<unsigned long long>(a.stats().unsupported));

  for (const auto& e : problems)
    if (e.message.rfind("unsupported by this kernel", 0) != 0) ADD_FAILURE() << e.describe();
  EXPECT_EQ(a.stats().writes_failed, 0u);
  // A busy LS host app takes its core out of BE's share.
  EXPECT_LT(busy_target, idle_target - 0.5);
  EXPECT_GT(throttled, 0);
  // The collector measures the loop: within 0.05 cores of its own CPU time (the interval ends
  // are read a few microseconds apart; USER_HZ ticks are 10 ms), and it did run.
  EXPECT_GT(own, 0.25);
  EXPECT_NEAR(sampled, own, 0.05);
  // The report is the mean of the samples (to the milli-core), and the loop's own mean rate.
  EXPECT_NEAR(reported, samples_mean, 0.002);
  EXPECT_NEAR(reported, own_mean, 0.05);
  if (bvt_supported) {
    EXPECT_EQ(read_file(app_bvt).substr(0, 1), "2");
  } else {
    // Never created; reported once per node (a pod's or QoS dir's file may have been first).
    EXPECT_FALSE(fs::exists(app_bvt));
    EXPECT_EQ(unsupported_logged.size(), 1u);
    EXPECT_GE(a.stats().unsupported, 5u) << "BE pod, three QoS dirs and the host app, at least";
  }
}

}  // namespace
