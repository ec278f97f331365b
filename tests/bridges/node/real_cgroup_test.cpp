// Real cgroups (label cgroup): a kubepods-like tree made under this machine's cgroup v1
// controllers, a busy-loop child process moved into a "container" of a BestEffort pod, and the
// collector measuring it. The child's own CPU time from /proc/<pid>/stat over the same interval
// is the independent reference. Every cgroup made is removed, also when an assertion fails.
// Skips, naming what is missing, where /sys/fs/cgroup/{cpu,cpuacct,memory} are not writable v1
// controllers.
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "bridges/node/collector.hpp"
#include "tests/bridges/node/real_cgroup_harness.hpp"

namespace {

using namespace colony;
using namespace colony::node;
namespace fs = std::filesystem;

constexpr const char* cgroup_root = "/sys/fs/cgroup";

// The v1 controller directories this test writes into; empty when usable, else what is missing.
std::string missing_controllers(std::vector<std::string>& dirs) {
  if (fs::exists(fs::path(cgroup_root) / "cgroup.controllers")) {
    return std::string(cgroup_root) + " is a cgroup v2 unified mount (this test drives v1)";
  }
  for (const char* c : {"cpu", "cpuacct", "memory"}) {
    const auto d = fs::path(cgroup_root) / c;
    if (!fs::is_directory(d)) return d.string() + " does not exist";
    if (::access(d.c_str(), W_OK) != 0) return d.string() + " is not writable";
    dirs.push_back(fs::canonical(d).string());  // cpu and cpuacct may be one co-mounted dir
  }
  return {};
}

// Removes the directories it was given, deepest first, in every controller.
struct cgroup_cleanup {
  std::vector<std::string> dirs;  // absolute, parents before children
  ~cgroup_cleanup() {
    for (auto it = dirs.rbegin(); it != dirs.rend(); ++it) {
      if (fs::exists(*it) && ::rmdir(it->c_str()) != 0) {
        std::fprintf(stderr, "could not remove cgroup %s: %s\n", it->c_str(), std::strerror(errno));
      }
    }
  }
};

using colony::testing::cgroup_harness::process_ticks;

// The memory controller's directory among the ones missing_controllers returned.
std::string ctrl_memory(const std::vector<std::string>& dirs) { return dirs.back(); }

// total_active_anon + total_inactive_anon of a v1 memory.stat, read by the test itself.
std::int64_t stat_anon(const std::string& path) {
  std::ifstream f(path);
  std::string key;
  std::int64_t value = 0, sum = 0;
  while (f >> key >> value) {
    if (key == "total_active_anon" || key == "total_inactive_anon") sum += value;
  }
  return sum;
}

TEST(RealCgroup, CollectorMeasuresABusyLoopInABestEffortPod) {
  std::vector<std::string> ctrl;
  if (auto why = missing_controllers(ctrl); !why.empty()) GTEST_SKIP() << why;

  const std::string parent = "colony-test-" + std::to_string(::getpid());
  const std::string uid = "0e6f2a1c-1111-2222-3333-" + std::to_string(100000000000 + ::getpid());
  const std::string pod_rel = parent + "/kubepods/besteffort/pod" + uid;
  const std::string ctr_rel = pod_rel + "/busy";
  cgroup_cleanup cleanup;
  for (const auto& c : ctrl) {
    for (const std::string& rel : std::vector<std::string>{
             parent, parent + "/kubepods", parent + "/kubepods/besteffort", pod_rel, ctr_rel}) {
      const std::string d = c + "/" + rel;
      if (fs::exists(d)) continue;  // co-mounted cpu,cpuacct: made through the other name
      if (::mkdir(d.c_str(), 0755) != 0) {
        GTEST_SKIP() << "cannot create cgroup " << d << ": " << std::strerror(errno);
      }
      cleanup.dirs.push_back(d);
    }
  }

  // The child waits for the go byte (sent once it is in the cgroups), then touches 64 MiB so
  // the pages are charged to its memory cgroup, then spins until killed.
  int go[2];
  ASSERT_EQ(::pipe(go), 0);
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    ::close(go[1]);
    char b = 0;
    if (::read(go[0], &b, 1) != 1) ::_exit(1);
    constexpr std::size_t n = 64u << 20;
    auto* p = static_cast<volatile char*>(std::malloc(n));
    for (std::size_t i = 0; i < n; i += 4096) p[i] = 1;
    for (std::uint64_t x = 0;; ++x) asm volatile("" : "+r"(x));  // spin
  }
  ::close(go[0]);
  struct child_guard {
    pid_t pid;
    ~child_guard() {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, nullptr, 0);
    }
  } guard{child};
  for (const auto& c : ctrl) {
    std::ofstream procs(c + "/" + ctr_rel + "/cgroup.procs");
    procs << child << std::flush;
    ASSERT_TRUE(procs.good()) << "cannot move pid " << child << " into " << c << "/" << ctr_rel;
  }
  ASSERT_EQ(::write(go[1], "g", 1), 1);
  ::close(go[1]);
  // The kernel charges the pages at once (memory.usage_in_bytes) but folds memory.stat's
  // per-cpu counters lazily (a periodic flush, about every 2 s), so wait until the file the
  // collector reads shows the 64 MiB before measuring.
  const std::string stat_path = ctrl_memory(ctrl) + "/" + ctr_rel + "/memory.stat";
  std::int64_t anon = 0;
  for (int i = 0; i < 100 && (anon = stat_anon(stat_path)) < 60 * mib; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ASSERT_GE(anon, 60 * mib) << stat_path << " never showed the child's 64 MiB within 10 s";

  source_config cfg;
  cfg.cgroup_root = cgroup_root;
  cfg.kube_parent_dir = parent;
  cfg.read_pressure = true;  // real cpu.stat (throttling) and PSI where the kernel has it
  cfg.ticks_per_second = ::sysconf(_SC_CLK_TCK);
  auto src = node_source::open(cfg);
  ASSERT_TRUE(src) << src.error().describe();
  using clock = std::chrono::steady_clock;
  const auto t0 = clock::now();
  const auto ticks0 = process_ticks(child);
  auto s0 = src->snapshot(event_time{0});
  ASSERT_TRUE(s0) << s0.error().describe();
  std::this_thread::sleep_for(std::chrono::milliseconds(1000));
  auto s1_time = clock::now();
  auto s1 = src->snapshot(
      event_time{std::chrono::duration_cast<std::chrono::milliseconds>(s1_time - t0).count()});
  const auto ticks1 = process_ticks(child);
  ASSERT_TRUE(s1) << s1.error().describe();
  for (const auto& e : s1->skipped) ADD_FAILURE() << e.describe();

  auto u = usage_between(*s0, *s1, cfg.ticks_per_second);
  ASSERT_TRUE(u) << u.error().describe();
  ASSERT_EQ(u->pods.size(), 1u);
  const auto& p = u->pods[0];
  EXPECT_EQ(p.uid, uid);
  EXPECT_EQ(p.qos, kube_qos_class::best_effort);
  const double secs = std::chrono::duration<double>(s1_time - t0).count();
  const double reference =
      static_cast<double>(ticks1 - ticks0) / static_cast<double>(cfg.ticks_per_second) / secs;
  std::printf(
      "busy loop: collector %.3f cores (pod), %.3f (container); /proc/%d/stat %.3f cores; "
      "memory %lld MiB (anon), working set %lld MiB; node %.3f cores\n",
      p.cpu_cores, p.containers.empty() ? -1.0 : p.containers[0].cpu_cores, child, reference,
      static_cast<long long>(p.memory.value >> 20),
      static_cast<long long>(p.working_set.value >> 20), u->cpu_cores);
  // ~1 core: one spinning thread gets a whole core unless the machine is loaded (the cgroup
  // tests run alone, RUN_SERIAL, but other work on the machine may still take a share); the
  // independent reference (the process's own ticks, 10 ms each) must agree within 0.05 cores,
  // and the loop must have run a good part of the time for that agreement to mean something.
  EXPECT_NEAR(p.cpu_cores, reference, 0.05);
  EXPECT_GE(p.cpu_cores, 0.25);
  EXPECT_LE(p.cpu_cores, 1.05);
  ASSERT_EQ(p.containers.size(), 1u);
  EXPECT_EQ(p.containers[0].id, "busy");
  EXPECT_NEAR(p.containers[0].cpu_cores, p.cpu_cores, 0.02);
  EXPECT_GE(p.memory.value, 60 * mib);  // 64 MiB touched
  EXPECT_GT(p.working_set.value, 0);
  EXPECT_GE(u->cpu_cores + 0.05, p.cpu_cores);  // the node includes the pod
  EXPECT_EQ(p.nr_throttled, 0);                 // no cfs quota set on the test cgroup
}

}  // namespace
