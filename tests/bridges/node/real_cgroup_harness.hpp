// Real-cgroup test harness (label cgroup): the v1 controllers' check, cgroups made under them and
// removed (deepest first, also when an assertion fails), child processes moved into cgroups
// before they run, and the node's /proc as a koordlet under test sees it (the test subtree's CPU
// time as /proc/stat's used ticks). Shared by the real-cgroup tests of colony_node_cgroup_tests.
// Thread-safety: one test thread.
#pragma once

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

#include "run/koordlet_agent.hpp"

namespace colony::testing::cgroup_harness {

inline constexpr const char* cgroup_root = "/sys/fs/cgroup";

inline std::string missing(const std::vector<const char*>& controllers,
                           std::vector<std::string>& dirs) {
  if (std::filesystem::exists(std::filesystem::path(cgroup_root) / "cgroup.controllers"))
    return std::string(cgroup_root) + " is a cgroup v2 unified mount (this test drives v1)";
  for (const char* c : controllers) {
    const auto d = std::filesystem::path(cgroup_root) / c;
    if (!std::filesystem::is_directory(d)) return d.string() + " does not exist";
    if (::access(d.c_str(), W_OK) != 0) return d.string() + " is not writable";
    dirs.push_back(std::filesystem::canonical(d).string());
  }
  return {};
}

// Removes the directories it was given, deepest first. Declared before the process guards, so it
// runs after every child is dead (a cgroup with tasks cannot be removed).
struct cgroup_cleanup {
  std::vector<std::string> dirs;  // absolute, parents before children
  // Creates each of `rels` (parents first) under every controller directory, skipping one that
  // exists (co-mounted cpu,cpuacct), and remembers it for removal; `init` runs on each new one.
  // "" when done, else why not (the test skips).
  std::string create(const std::vector<std::string>& controllers,
                     const std::vector<std::string>& rels,
                     const std::function<bool(const std::string&, const std::string&)>& init = {}) {
    for (const auto& c : controllers) {
      for (const auto& rel : rels) {
        const std::string d = c + "/" + rel;
        if (std::filesystem::exists(d)) continue;
        if (::mkdir(d.c_str(), 0755) != 0)
          return "cannot create cgroup " + d + ": " + std::strerror(errno);
        dirs.push_back(d);
        if (init && !init(c, d)) return "cannot set up cgroup " + d;
      }
    }
    return {};
  }
  ~cgroup_cleanup() {
    for (auto it = dirs.rbegin(); it != dirs.rend(); ++it)
      if (std::filesystem::exists(*it) && ::rmdir(it->c_str()) != 0)
        std::fprintf(stderr, "could not remove cgroup %s: %s\n", it->c_str(), std::strerror(errno));
  }
};

struct children {
  std::vector<pid_t> pids;
  void kill_all() {
    for (pid_t p : pids) {
      ::kill(p, SIGKILL);
      ::waitpid(p, nullptr, 0);
    }
    pids.clear();
  }
  ~children() { kill_all(); }
};

inline bool write_file(const std::string& path, const std::string& v) {
  std::ofstream f(path);
  f << v << std::flush;
  return f.good();
}

inline std::string read_file(const std::string& path) {
  std::ifstream f(path);
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

inline std::int64_t stat_field(const std::string& cpu_stat, const std::string& key) {
  std::istringstream in(cpu_stat);
  std::string k;
  std::int64_t v = 0;
  while (in >> k >> v)
    if (k == key) return v;
  return -1;
}

// A child moved into `dirs` (one per controller) before it runs `body` (which never returns).
inline pid_t spawn_in(const std::vector<std::string>& dirs, const std::function<void()>& body) {
  int go[2];
  if (::pipe(go) != 0) return -1;
  const pid_t child = ::fork();
  if (child < 0) return -1;
  if (child == 0) {
    ::close(go[1]);
    char b = 0;
    if (::read(go[0], &b, 1) != 1) ::_exit(1);
    body();
    ::_exit(0);
  }
  ::close(go[0]);
  for (const auto& d : dirs) write_file(d + "/cgroup.procs", std::to_string(child));
  if (::write(go[1], "g", 1) != 1) return -1;
  ::close(go[1]);
  return child;
}

// A busy-loop child moved into `dirs` before it starts spinning.
inline pid_t spawn_spinner(const std::vector<std::string>& dirs) {
  return spawn_in(dirs, [] {
    for (std::uint64_t x = 0;; ++x) asm volatile("" : "+r"(x));  // spin
  });
}

// The node's /proc as the koordlet reads it: the subtree's CPU time as used ticks of /proc/stat.
inline void write_node_proc(const std::string& dir, const std::string& cpuacct_usage,
                            std::int64_t hz) {
  const std::int64_t ns = std::stoll(read_file(cpuacct_usage));
  std::string stat = "cpu  " + std::to_string(ns * hz / 1000000000) + " 0 0 0 0 0 0 0 0 0\n";
  std::istringstream real(read_file("/proc/stat"));
  for (std::string line; std::getline(real, line);)
    if (line.rfind("cpu", 0) == 0 && line.size() > 3 && line[3] != ' ') stat += line + "\n";
  std::filesystem::create_directories(dir);
  write_file(dir + "/stat.tmp", stat);
  std::filesystem::rename(dir + "/stat.tmp", dir + "/stat");
  write_file(dir + "/meminfo", read_file("/proc/meminfo"));
}

inline std::int64_t now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// utime + stime of a process in clock ticks (/proc/<pid>/stat fields 14 and 15).
inline std::int64_t process_ticks(pid_t pid) {
  std::ifstream f("/proc/" + std::to_string(pid) + "/stat");
  std::string s((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  std::istringstream rest(s.substr(s.rfind(')') + 2));
  std::string field;
  std::int64_t utime = 0, stime = 0;
  for (int i = 3; i <= 15 && rest >> field; ++i) {
    if (i == 14) utime = std::stoll(field);
    if (i == 15) stime = std::stoll(field);
  }
  return utime + stime;
}

// The agent every real-cgroup test runs: enforcing, on this machine's cgroups under `parent` (the
// test's kubepods parent), node "test-node"; with `proc` (write_node_proc's directory) and its
// ticks per second, the node it sees is the test's subtree.
inline agent::koordlet_agent_options enforcing_agent(const std::string& parent,
                                                     const std::string& proc = {},
                                                     std::int64_t hz = 0) {
  agent::koordlet_agent_options o;
  o.enforce = true;
  o.source.cgroup_root = cgroup_root;
  o.source.kube_parent_dir = parent;
  if (!proc.empty()) o.source.proc_root = proc;
  if (hz > 0) o.source.ticks_per_second = hz;
  o.koordlet.node = "test-node";
  return o;
}

}  // namespace colony::testing::cgroup_harness
