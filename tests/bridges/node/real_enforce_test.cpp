// The koordlet loop on real cgroups (label cgroup): collector -> koordlet component -> cgroup
// executor, through run/koordlet_agent and an embedded log, on a kubepods-like tree made under
// this machine's cgroup v1 controllers. An LS pod (burstable tier) and a BE pod (besteffort tier)
// run busy-loop child processes; the component's cfsQuota suppression (Koordinator's
// pkg/koordlet/qosmanager/plugins/cpusuppress) must bring the BE tier's measured CPU to the
// quota it computed when the LS load rises (nr_throttled grows, usage within a stated tolerance
// of the target) and let it rise again when the LS load stops.
//
// The machine has 2 cores and is shared with other work (a compiler can take both). In the
// suppression formula everything outside the pods is the node's system usage, so on a shared
// machine other people's processes would decide the BE target. The node the koordlet sees is
// therefore the test's own subtree: its /proc is a directory the test writes before each step, a
// /proc/stat whose used ticks are the subtree's cpuacct.usage and whose cpuN lines are this
// machine's, and this machine's /proc/meminfo. Everything else (cgroups, processes, quota,
// throttling, the collector's pod readings) is real. The subtree gets a large cpu.shares so that
// its loops get the CPU they ask for, and the tiers keep the default shares: kubelet's 2 for
// besteffort would, under v1 group scheduling, also cut the subtree's weight on the CPU where BE
// runs to below one ordinary process, so other work would starve BE and the scheduler, not the
// quota, would hold it down. The loads fit the machine (LS 1 core + BE's target), so the quota is
// what holds BE at its target. Every cgroup made is removed, also when an assertion
// fails. Skips, naming what is missing, where /sys/fs/cgroup/{cpu,cpuacct,memory} are not writable
// v1 controllers.
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <numeric>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "run/koordlet_agent.hpp"
#include "stores/event_log.hpp"
#include "tests/bridges/node/real_cgroup_harness.hpp"
#include "tests/support/temp_dir.hpp"

namespace {

using namespace colony;
namespace fs = std::filesystem;

using namespace colony::testing::cgroup_harness;

TEST(RealCgroupEnforce, CfsQuotaSuppressionHoldsBestEffortAtTheTargetAndReleasesIt) {
  std::vector<std::string> ctrl;
  if (auto why = missing({"cpu", "cpuacct", "memory"}, ctrl); !why.empty()) GTEST_SKIP() << why;
  const std::string cpu_dir = ctrl[0], cpuacct_dir = ctrl[1];

  const std::string parent = "colony-test-" + std::to_string(::getpid());
  const std::string ls_uid = "1a000000-0000-0000-0000-" + std::to_string(100000000000 + ::getpid());
  const std::string be_uid = "2b000000-0000-0000-0000-" + std::to_string(100000000000 + ::getpid());
  const std::string kp = parent + "/kubepods";
  const std::string ls_pod = kp + "/burstable/pod" + ls_uid;
  const std::string be_tier = kp + "/besteffort";
  const std::string be_pod = be_tier + "/pod" + be_uid;
  cgroup_cleanup cleanup;
  if (auto why = cleanup.create(ctrl, {parent, kp, kp + "/burstable", ls_pod, ls_pod + "/ls",
                                       be_tier, be_pod, be_pod + "/be"});
      !why.empty())
    GTEST_SKIP() << why;
  ASSERT_TRUE(write_file(cpu_dir + "/" + parent + "/cpu.shares", "65536"));

  auto in_all = [&](const std::string& rel) {
    std::vector<std::string> d;
    for (const auto& c : ctrl) d.push_back(c + "/" + rel);
    return d;
  };
  children be_procs, ls_procs;
  for (int i = 0; i < 2; ++i) {
    const pid_t p = spawn_spinner(in_all(be_pod + "/be"));
    ASSERT_GT(p, 0);
    be_procs.pids.push_back(p);
  }

  colony::testing::temp_dir tmp;
  const std::string proc = tmp.sub("proc");
  const std::string node_usage = cpuacct_dir + "/" + parent + "/cpuacct.usage";
  const std::int64_t hz = ::sysconf(_SC_CLK_TCK);
  write_node_proc(proc, node_usage, hz);
  stores::log_options lo;
  auto log = stores::open_log(tmp.sub("log"), lo);
  ASSERT_TRUE(log) << log.error().describe();
  auto o = enforcing_agent(parent, proc, hz);
  o.koordlet.threshold.enable = true;
  o.koordlet.threshold.cpu_suppress_policy = koordlet::cpu_suppress_policy_type::cfs_quota;
  o.koordlet.threshold.cpu_suppress_threshold_percent = 90;
  o.koordlet.report_interval_ms = 1000;
  auto ag = agent::koordlet_agent::open(o, **log, event_time{now_ms()});
  ASSERT_TRUE(ag) << ag.error().describe();
  auto& a = **ag;

  const std::string be_stat = cpu_dir + "/" + be_tier + "/cpu.stat";
  const std::string be_usage = cpuacct_dir + "/" + be_tier + "/cpuacct.usage";
  const std::string quota_file = cpu_dir + "/" + be_tier + "/cpu.cfs_quota_us";
  constexpr int step_ms = 300;
  std::uint64_t steps = 0;
  auto run_steps = [&](int n) {
    for (int i = 0; i < n; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(step_ms));
      write_node_proc(proc, node_usage, hz);
      auto r = a.step(event_time{now_ms()});
      ASSERT_TRUE(r) << r.error().describe();
      ++steps;
      for (const auto& e : a.take_problems()) ADD_FAILURE() << e.describe();
    }
  };
  // Steps n intervals and measures the BE tier over them: cores used, periods throttled, and the
  // mean of the quota in force after each step (the policy's target, in cores).
  struct window {
    double be_cores = 0;
    std::int64_t throttled = 0;
    double target_cores = 0;
  };
  auto measure = [&](int n) {
    window w;
    const auto u0 = std::stoll(read_file(be_usage));
    const auto th0 = stat_field(read_file(be_stat), "nr_throttled");
    const auto t0 = std::chrono::steady_clock::now();
    std::vector<double> targets;
    for (int i = 0; i < n; ++i) {
      run_steps(1);
      const auto q = a.desired().be_cfs_quota_us.value_or(-1);
      targets.push_back(q < 0 ? 2.0 : static_cast<double>(q) / 100000.0);
    }
    const double secs =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    w.be_cores = static_cast<double>(std::stoll(read_file(be_usage)) - u0) / 1e9 / secs;
    w.throttled = stat_field(read_file(be_stat), "nr_throttled") - th0;
    w.target_cores =
        std::accumulate(targets.begin(), targets.end(), 0.0) / static_cast<double>(targets.size());
    return w;
  };

  // Phase A: LS idle. BE may use 90 % of the node minus system usage.
  run_steps(4);
  const auto idle = measure(6);
  // Phase B: LS load rises (one busy loop: ~1 core).
  const pid_t ls = spawn_spinner(in_all(ls_pod + "/ls"));
  ASSERT_GT(ls, 0);
  ls_procs.pids.push_back(ls);
  run_steps(6);  // a few intervals to settle
  const auto loaded = measure(7);
  // Phase C: LS load stops; the quota grows by at most 10 % of the node per interval.
  ls_procs.kill_all();
  run_steps(8);
  const auto released = measure(5);

  std::printf(
      "BE tier: idle LS %.3f cores (target %.3f), LS busy %.3f cores (target %.3f, %lld periods "
      "throttled), LS stopped %.3f cores (target %.3f); %llu steps, %llu decisions, %llu files "
      "written\n",
      idle.be_cores, idle.target_cores, loaded.be_cores, loaded.target_cores,
      static_cast<long long>(loaded.throttled), released.be_cores, released.target_cores,
      static_cast<unsigned long long>(steps), static_cast<unsigned long long>(a.stats().decisions),
      static_cast<unsigned long long>(a.stats().files_written));

  // The loop ran: samples, decisions, and files written and read back without a failure.
  EXPECT_GE(a.stats().samples, steps);
  EXPECT_GE(a.stats().decisions, 3u);
  EXPECT_GE(a.stats().files_written, 3u);
  EXPECT_EQ(a.stats().writes_failed, 0u);
  EXPECT_EQ(std::stoll(read_file(quota_file)), a.desired().be_cfs_quota_us.value_or(-2));

  // LS load suppresses BE: the target drops by most of the core LS took, BE is throttled, and its
  // measured usage is the target within 0.15 cores (CFS enforces the quota per 100-ms period;
  // the quota changes a little between intervals as LS and system usage move).
  EXPECT_LT(loaded.target_cores, idle.target_cores - 0.5);
  EXPECT_GT(loaded.throttled, 0);
  EXPECT_NEAR(loaded.be_cores, loaded.target_cores, 0.15);
  // LS stopped: the target and BE's usage rise again.
  EXPECT_GT(released.target_cores, loaded.target_cores + 0.4);
  EXPECT_GT(released.be_cores, loaded.be_cores + 0.3);
  EXPECT_NEAR(released.be_cores, released.target_cores, 0.25);
}

// The executor's leveled BE cpuset on the real v1 cpuset controller, where a child's cpus must
// stay inside its parent's: shrink, move to the other CPU, restore, each read back by the kernel.
TEST(RealCgroupEnforce, BestEffortCpusetIsWrittenLeveledOnTheCpusetController) {
  std::vector<std::string> ctrl;
  if (auto why = missing({"cpu", "cpuacct", "memory", "cpuset"}, ctrl); !why.empty())
    GTEST_SKIP() << why;
  const std::string cpuset_dir = ctrl[3];
  const std::string all = [&] {
    std::string s = read_file(cpuset_dir + "/cpuset.cpus");
    while (!s.empty() && s.back() == '\n') s.pop_back();
    return s;
  }();
  const std::string mems = read_file(cpuset_dir + "/cpuset.mems");
  auto cpus = koordlet::parse_cpuset(all);
  ASSERT_TRUE(cpus) << all;
  if (cpus->size() < 2) GTEST_SKIP() << cpuset_dir << "/cpuset.cpus has fewer than 2 CPUs: " << all;

  const std::string parent = "colony-test-" + std::to_string(::getpid()) + "-cpuset";
  const std::string kp = parent + "/kubepods";
  const std::string tier = kp + "/besteffort";
  const std::string pod = tier + "/pod3c000000-0000-0000-0000-000000000001";
  const std::string ctr = pod + "/c1";
  cgroup_cleanup cleanup;
  // A new v1 cpuset is empty: it gets every CPU and memory node.
  const auto why = cleanup.create(
      ctrl, {parent, kp, tier, pod, ctr}, [&](const std::string& c, const std::string& d) {
        return c != cpuset_dir ||
               (write_file(d + "/cpuset.cpus", all) && write_file(d + "/cpuset.mems", mems));
      });
  ASSERT_EQ(why.find("cannot set up"), std::string::npos) << why;
  if (!why.empty()) GTEST_SKIP() << why;
  node::executor_config ec;
  ec.cgroup_root = cgroup_root;
  ec.kube_parent_dir = parent;
  auto ex = node::cgroup_executor::open(ec);
  ASSERT_TRUE(ex) << ex.error().describe();
  const std::string first = std::to_string(cpus->front());
  const std::string last = std::to_string(cpus->back());
  for (const std::string& target : {last, first, all}) {
    const auto r = ex->apply_be_cpuset(target);
    ASSERT_FALSE(r.failed) << "cpuset " << target << ": " << r.failed->describe();
    EXPECT_FALSE(r.done.empty());
    for (const std::string& rel : {tier, pod, ctr}) {
      std::string text = read_file(cpuset_dir + "/" + rel + "/cpuset.cpus");
      while (!text.empty() && text.back() == '\n') text.pop_back();
      const auto got = koordlet::parse_cpuset(text);
      ASSERT_TRUE(got);
      EXPECT_EQ(*got, *koordlet::parse_cpuset(target)) << rel << " after " << target;
    }
  }
}

// A child that runs bursts of `burst_cpu_ms` of its own CPU time separated by `gap_ms` of sleep,
// moved into `dirs` before it starts. After each burst it writes the burst's wall time (ns, an
// int64) to `report_fd`: CPU time over wall time is the rate the burst achieved.
pid_t spawn_bursty(const std::vector<std::string>& dirs, int burst_cpu_ms, int gap_ms,
                   int report_fd) {
  return spawn_in(dirs, [=] {
    auto ns = [](clockid_t c) {
      timespec t{};
      ::clock_gettime(c, &t);
      return std::int64_t{t.tv_sec} * 1000000000 + t.tv_nsec;
    };
    const timespec gap{gap_ms / 1000, (gap_ms % 1000) * 1000000L};
    for (;;) {
      const std::int64_t w0 = ns(CLOCK_MONOTONIC);
      const std::int64_t c0 = ns(CLOCK_THREAD_CPUTIME_ID);
      while (ns(CLOCK_THREAD_CPUTIME_ID) - c0 < std::int64_t{burst_cpu_ms} * 1000000) {
        for (int i = 0; i < 1000; ++i) asm volatile("" : "+r"(i));  // spin
      }
      const std::int64_t wall = ns(CLOCK_MONOTONIC) - w0;
      if (::write(report_fd, &wall, sizeof wall) != sizeof wall) ::_exit(2);
      ::nanosleep(&gap, nullptr);
    }
  });
}

// CPU burst (Koordinator's pkg/koordlet/qosmanager/plugins/cpuburst, cpuBurstStrategy
// cpuBurstOnly) through the whole loop: an LS pod (burstable tier) whose pod cgroup has a cfs
// quota of 0.5 cores (50000 us per 100000 us) runs a bursty child: 90 ms of CPU, then 177 ms of
// sleep, at most 0.34 cores on average. Under the bare quota a 90-ms burst overruns the 50 ms a
// period allows unless it happens to straddle two periods evenly (it starts 40-50 ms before a
// period ends), so most bursts are throttled; the cycle is no multiple of the period, so the
// bursts start at every phase of it. The
// agent first runs with Koordinator's default policy (none): nothing is written and the pod's
// cpu.cfs_burst_us stays 0 (the baseline). Then an agent with cpuBurstOnly and cpuBurstPercent
// 100 (on a log of its own), the component reads the pod's limit from the pod cgroup's quota (what
// the collector reports on a lone node), emits a CgroupUpdated with cpu.cfs_burst_us = 0.5 cores x
// 100 % = 50000, and the executor writes it and reads it back. The kernel then lets the pod bank
// up to 50 ms of unused quota (a 90-ms burst after a sleep fits), so the bursts are throttled in
// at most half as many periods as in the baseline, each burst runs faster, and the average stays
// within the quota plus one burst budget over the window. The child runs in a container cgroup
// without a quota of its own: the component knows a sampled pod's limit, not its containers', so
// it sets the pod's file only (docs/koordlet.md). cpuBurstPercent is 100 because the kernel
// refuses a cpu.cfs_burst_us above the quota. Skips, naming what is missing, where the v1
// controllers are not writable or the kernel has no cpu.cfs_burst_us.
TEST(RealCgroupEnforce, CpuBurstLetsABurstyLsProcessExceedItsQuotaWithinTheBurstBudget) {
  std::vector<std::string> ctrl;
  if (auto why = missing({"cpu", "cpuacct", "memory"}, ctrl); !why.empty()) GTEST_SKIP() << why;
  const std::string cpu_dir = ctrl[0], cpuacct_dir = ctrl[1];
  if (!fs::exists(cpu_dir + "/cpu.cfs_burst_us"))
    GTEST_SKIP() << cpu_dir << "/cpu.cfs_burst_us does not exist (kernel without CFS burst)";

  const std::string parent = "colony-test-" + std::to_string(::getpid()) + "-burst";
  const std::string uid = "4d000000-0000-0000-0000-" + std::to_string(100000000000 + ::getpid());
  const std::string kp = parent + "/kubepods";
  const std::string pod = kp + "/burstable/pod" + uid;
  cgroup_cleanup cleanup;
  if (auto why = cleanup.create(ctrl, {parent, kp, kp + "/burstable", pod, pod + "/ls"});
      !why.empty())
    GTEST_SKIP() << why;
  ASSERT_TRUE(write_file(cpu_dir + "/" + parent + "/cpu.shares", "65536"));
  constexpr std::int64_t quota_us = 50000, period_us = 100000;
  ASSERT_TRUE(write_file(cpu_dir + "/" + pod + "/cpu.cfs_period_us", std::to_string(period_us)));
  ASSERT_TRUE(write_file(cpu_dir + "/" + pod + "/cpu.cfs_quota_us", std::to_string(quota_us)));
  const std::string burst_file = cpu_dir + "/" + pod + "/cpu.cfs_burst_us";
  ASSERT_EQ(std::stoll(read_file(burst_file)), 0);

  int report[2];
  ASSERT_EQ(::pipe2(report, O_NONBLOCK | O_CLOEXEC), 0);
  struct fds {
    int r, w;
    ~fds() {
      ::close(r);
      ::close(w);
    }
  } report_fds{report[0], report[1]};
  children procs;
  std::vector<std::string> in_all;
  for (const auto& c : ctrl) in_all.push_back(c + "/" + pod + "/ls");
  constexpr int burst_cpu_ms = 90, gap_ms = 177;
  const pid_t p = spawn_bursty(in_all, burst_cpu_ms, gap_ms, report[1]);
  ASSERT_GT(p, 0);
  procs.pids.push_back(p);

  // One log per phase: the component's options are not in the log, so a restart under other
  // options would replay the baseline's samples into decisions nobody carries out.
  colony::testing::temp_dir tmp;
  stores::log_options lo;
  auto base_log = stores::open_log(tmp.sub("base-log"), lo);
  ASSERT_TRUE(base_log) << base_log.error().describe();
  auto log = stores::open_log(tmp.sub("log"), lo);
  ASSERT_TRUE(log) << log.error().describe();
  auto o = enforcing_agent(parent);
  o.koordlet.report_interval_ms = 1000;

  const std::string pod_stat = cpu_dir + "/" + pod + "/cpu.stat";
  const std::string pod_usage = cpuacct_dir + "/" + pod + "/cpuacct.usage";
  struct window {
    double avg_cores = 0, secs = 0;
    std::int64_t periods = 0, throttled = 0, throttled_ms = 0;
    double mean_burst_rate = 0, median_burst_rate = 0;  // CPU time / wall time of a burst
    std::size_t bursts = 0;
  };
  auto drain = [&] {
    std::vector<std::int64_t> walls;
    std::int64_t w = 0;
    while (::read(report[0], &w, sizeof w) == sizeof w) walls.push_back(w);
    return walls;
  };
  // Steps the agent every 300 ms for n steps and measures the pod over them.
  auto measure = [&](agent::koordlet_agent& a, int n) {
    window w;
    drain();
    const auto u0 = std::stoll(read_file(pod_usage));
    const auto st0 = read_file(pod_stat);
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < n; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(300));
      auto r = a.step(event_time{now_ms()});
      EXPECT_TRUE(r) << r.error().describe();
      for (const auto& e : a.take_problems()) ADD_FAILURE() << e.describe();
    }
    w.secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const auto st1 = read_file(pod_stat);
    w.avg_cores = static_cast<double>(std::stoll(read_file(pod_usage)) - u0) / 1e9 / w.secs;
    w.periods = stat_field(st1, "nr_periods") - stat_field(st0, "nr_periods");
    w.throttled = stat_field(st1, "nr_throttled") - stat_field(st0, "nr_throttled");
    w.throttled_ms =
        (stat_field(st1, "throttled_time") - stat_field(st0, "throttled_time")) / 1000000;
    auto walls = drain();
    w.bursts = walls.size();
    if (!walls.empty()) {
      std::sort(walls.begin(), walls.end());
      const double median = static_cast<double>(walls[walls.size() / 2]);
      w.median_burst_rate = burst_cpu_ms * 1e6 / median;
      double sum = 0;
      for (const auto x : walls) sum += burst_cpu_ms * 1e6 / static_cast<double>(x);
      w.mean_burst_rate = sum / static_cast<double>(walls.size());
    }
    return w;
  };

  // Baseline: Koordinator's default cpuBurstStrategy (policy none): no burst is written.
  window base;
  {
    auto ag = agent::koordlet_agent::open(o, **base_log, event_time{now_ms()});
    ASSERT_TRUE(ag) << ag.error().describe();
    base = measure(**ag, 2);  // the first step has no usage yet; settle
    base = measure(**ag, 20);
    EXPECT_EQ((*ag)->stats().files_written, 0u);
    EXPECT_EQ(std::stoll(read_file(burst_file)), 0);
  }

  // The node's koordlet with cpuBurstOnly at 100 %.
  o.koordlet.cpu_burst.config.policy = koordlet::cpu_burst_policy::cpu_burst_only;
  o.koordlet.cpu_burst.config.cpu_burst_percent = 100;
  auto ag = agent::koordlet_agent::open(o, **log, event_time{now_ms()});
  ASSERT_TRUE(ag) << ag.error().describe();
  auto& a = **ag;
  (void)measure(a, 3);  // two snapshots: the pod is sampled, its burst decided and written
  const auto want = std::to_string(quota_us * 100 / 100);
  ASSERT_EQ(std::stoll(read_file(burst_file)), quota_us) << "cpu.cfs_burst_us not written";
  EXPECT_GE(a.stats().decisions, 1u);
  EXPECT_GE(a.stats().files_written, 1u);
  EXPECT_EQ(a.stats().writes_failed, 0u);
  const auto d = a.desired().pods.find(uid);
  ASSERT_NE(d, a.desired().pods.end()) << "no desired settings for the pod";
  EXPECT_NE(std::find(d->second.settings.begin(), d->second.settings.end(),
                      std::pair<std::string, std::string>{"cpu.cfs_burst_us", want}),
            d->second.settings.end());
  const auto burst = measure(a, 20);

  std::printf(
      "LS pod (quota %.2f cores, %d-ms bursts of CPU, %d-ms sleeps): without burst %lld of %lld "
      "periods "
      "throttled (%lld ms), burst rate mean %.2f median %.2f cores, %.3f cores average over "
      "%.1f s (%zu bursts); with cpu.cfs_burst_us %s: %lld of %lld periods throttled (%lld ms), "
      "burst rate mean %.2f median %.2f cores, %.3f cores average over %.1f s (%zu bursts)\n",
      static_cast<double>(quota_us) / static_cast<double>(period_us), burst_cpu_ms, gap_ms,
      static_cast<long long>(base.throttled), static_cast<long long>(base.periods),
      static_cast<long long>(base.throttled_ms), base.mean_burst_rate, base.median_burst_rate,
      base.avg_cores, base.secs, base.bursts, want.c_str(), static_cast<long long>(burst.throttled),
      static_cast<long long>(burst.periods), static_cast<long long>(burst.throttled_ms),
      burst.mean_burst_rate, burst.median_burst_rate, burst.avg_cores, burst.secs, burst.bursts);

  // The baseline is throttled (bursts overrun the quota); with burst, at most half as many
  // periods are throttled and the bursts run faster.
  EXPECT_GE(base.throttled, 5);
  EXPECT_LE(burst.throttled * 2, base.throttled);
  EXPECT_GT(burst.mean_burst_rate, base.mean_burst_rate);
  // The average stays within the quota plus one burst budget over the window (0.02 cores for
  // reading the counters a few ms apart).
  const double cap = static_cast<double>(quota_us) / static_cast<double>(period_us) +
                     static_cast<double>(quota_us) / 1e6 / burst.secs;
  EXPECT_LE(burst.avg_cores, cap + 0.02);
  EXPECT_GE(burst.bursts, 5u);
}

// The runtime hooks through the whole loop on this machine's v1 controllers: a BE pod whose spec
// (placed on the node by the log, as colony run places pods) has batch-cpu 500 request and limit
// and batch-memory 2 GiB (GC-BECG-1) gets cpu.shares 512, cpu.cfs_quota_us 50000 and
// memory.limit_in_bytes 2147483648 in its pod cgroups, read back from the kernel. Group identity
// is enabled for LS and BE: where the kernel has cpu.bvt_warp_ns (Anolis) the values are written;
// where it lacks it, every bvt write is skipped and reported exactly once for the node as a
// WriteFailed "unsupported by this kernel: no cpu.bvt_warp_ns", also across a restart on the same
// log, while the batch files are still written. Skips, naming what is missing, where the v1
// controllers are not writable.
TEST(RealCgroupEnforce, BatchResourceFilesAreWrittenAndAMissingBvtFileIsReportedOnce) {
  std::vector<std::string> ctrl;
  if (auto why = missing({"cpu", "cpuacct", "memory"}, ctrl); !why.empty()) GTEST_SKIP() << why;
  const std::string cpu_dir = ctrl[0], mem_dir = ctrl[2];
  const bool bvt_supported = fs::exists(cpu_dir + "/cpu.bvt_warp_ns");

  const std::string parent = "colony-test-" + std::to_string(::getpid()) + "-hooks";
  const std::string uid = "5e000000-0000-0000-0000-" + std::to_string(100000000000 + ::getpid());
  const std::string kp = parent + "/kubepods";
  const std::string pod = kp + "/besteffort/pod" + uid;
  cgroup_cleanup cleanup;
  if (auto why = cleanup.create(ctrl, {parent, kp, kp + "/burstable", kp + "/besteffort", pod});
      !why.empty())
    GTEST_SKIP() << why;

  colony::testing::temp_dir tmp;
  stores::log_options lo;
  auto log = stores::open_log(tmp.sub("log"), lo);
  ASSERT_TRUE(log) << log.error().describe();
  {
    // The pod as the log holds it (named by its uid: the collector's key on a lone node).
    messages::event_builder b;
    auto& fbb = b.fbb();
    resource_list batch;
    batch.batch_cpu_milli = 500;
    batch.batch_memory_bytes = 2147483648;
    std::vector<messages::byte_buffer> recs;
    messages::header h;
    h.time = event_time{now_ms()};
    h.kind = wire::EntityKind::Pod;
    h.key = uid;
    h.source = "test";
    {
      const auto r = b.resources(batch);
      const auto l = b.resources(batch);
      const auto n = fbb.CreateString(uid);
      recs.push_back(
          b.finish(h, wire::CreatePodMutated(fbb, n, 0, wire::QoSClass::BE,
                                             wire::PriorityClass::Batch, 5500, 0, 0, r, l, 0, 0)));
    }
    {
      const auto r = b.resources(batch);
      const auto p = fbb.CreateString(uid);
      const auto n = fbb.CreateString("test-node");
      recs.push_back(b.finish(h, wire::CreatePodScheduled(fbb, p, n, -1, r, 0, 0)));
    }
    std::vector<messages::bytes_view> views(recs.begin(), recs.end());
    ASSERT_TRUE((*log)->append(views));
  }
  auto o = enforcing_agent(parent);
  o.koordlet.report_interval_ms = 1000;
  o.koordlet.cpu_qos.ls_class.enable = true;
  o.koordlet.cpu_qos.be_class.enable = true;

  // The WriteFailed records the log holds for unsupported files, by file.
  auto unsupported_in_log = [&] {
    std::vector<std::string> files;
    auto n = (*log)->read(log_offset{0}, no_offset, [&](log_offset, messages::bytes_view bytes) {
      const auto& env = *wire::GetEnvelope(bytes.data());
      if (env.payload_type() != wire::Payload::WriteFailed) return true;
      const auto& w = *env.payload_as_WriteFailed();
      const auto msg = messages::to_string_view(w.message());
      EXPECT_EQ(w.write(), wire::WriteKind::cgroup);
      if (msg.rfind("unsupported by this kernel", 0) == 0)
        files.emplace_back(messages::to_string_view(w.object()));
      else
        ADD_FAILURE() << "unexpected WriteFailed: " << msg;
      return true;
    });
    EXPECT_TRUE(n) << n.error().describe();
    return files;
  };
  auto run = [&](agent::koordlet_agent& a, int steps, std::vector<error>& problems) {
    for (int i = 0; i < steps; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
      auto r = a.step(event_time{now_ms()});
      ASSERT_TRUE(r) << r.error().describe();
      for (auto& e : a.take_problems()) problems.push_back(std::move(e));
    }
  };
  const std::string pod_cpu = cpu_dir + "/" + pod;
  {
    auto ag = agent::koordlet_agent::open(o, **log, event_time{now_ms()});
    ASSERT_TRUE(ag) << ag.error().describe();
    std::vector<error> problems;
    run(**ag, 4, problems);
    EXPECT_EQ(std::stoll(read_file(pod_cpu + "/cpu.shares")), 512);
    EXPECT_EQ(std::stoll(read_file(pod_cpu + "/cpu.cfs_quota_us")), 50000);
    EXPECT_EQ(std::stoll(read_file(mem_dir + "/" + pod + "/memory.limit_in_bytes")), 2147483648);
    EXPECT_EQ((*ag)->stats().writes_failed, 0u);
    if (bvt_supported) {
      EXPECT_EQ(std::stoll(read_file(pod_cpu + "/cpu.bvt_warp_ns")), -1);
      EXPECT_EQ(std::stoll(read_file(cpu_dir + "/" + kp + "/burstable/cpu.bvt_warp_ns")), 2);
      EXPECT_TRUE(unsupported_in_log().empty());
      EXPECT_TRUE(problems.empty());
    } else {
      // The pod and the three QoS dirs each skipped the file; one report for the node.
      EXPECT_GE((*ag)->stats().unsupported, 4u);
      const auto files = unsupported_in_log();
      ASSERT_EQ(files.size(), 1u);
      EXPECT_NE(files[0].find("cpu.bvt_warp_ns"), std::string::npos) << files[0];
      ASSERT_EQ(problems.size(), 1u);
      EXPECT_EQ(problems[0].where, files[0]);
      EXPECT_FALSE(fs::exists(pod_cpu + "/cpu.bvt_warp_ns"));
      std::printf("this kernel lacks cpu.bvt_warp_ns: %llu bvt writes skipped, reported once: %s\n",
                  static_cast<unsigned long long>((*ag)->stats().unsupported),
                  problems[0].describe().c_str());
    }
  }
  // A restart on the same log: the desired state is written again (reconcile on start), and the
  // missing file is not reported a second time.
  ASSERT_TRUE(write_file(pod_cpu + "/cpu.shares", "1024"));
  {
    auto ag = agent::koordlet_agent::open(o, **log, event_time{now_ms()});
    ASSERT_TRUE(ag) << ag.error().describe();
    EXPECT_EQ(std::stoll(read_file(pod_cpu + "/cpu.shares")), 512) << "reconciled at open";
    std::vector<error> problems;
    run(**ag, 2, problems);
    EXPECT_TRUE(problems.empty()) << problems.front().describe();
    if (!bvt_supported) {
      EXPECT_EQ(unsupported_in_log().size(), 1u);
    }
  }
}

}  // namespace
