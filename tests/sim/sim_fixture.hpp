// The sim tests' fixture: cuts of the bundled openb trace and the shipped configs.
//
// The cut: every 15th node of the openb node list, the pods created in days 115-117 (the
// trace's busy window) with times shifted to start at 0 and run times clipped to 1 day, and the
// first 8,000 rows of the v2018 machine_usage extract. Written once per test process into a
// temporary directory. Other cuts (cut_spec) take other nodes and days the same way.
#pragma once

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "actors/quota/webhook.hpp"
#include "bridges/trace/trace_set.hpp"
#include "sim/sim_config.hpp"

#ifndef COLONY_TEST_SOURCE_DIR
#error "COLONY_TEST_SOURCE_DIR must name the source tree"
#endif

namespace colony::sim_fixture {

namespace fs = std::filesystem;

inline std::string repo_root() { return fs::path(COLONY_TEST_SOURCE_DIR).string(); }
inline std::string traces_dir() { return repo_root() + "/traces"; }

inline std::vector<std::string> lines_of(const std::string& path) {
  std::ifstream in(path);
  std::vector<std::string> out;
  for (std::string l; std::getline(in, l);) out.push_back(l);
  return out;
}

inline std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> f;
  std::stringstream ss(s);
  for (std::string x; std::getline(ss, x, ',');) f.push_back(x);
  if (!s.empty() && s.back() == ',') f.emplace_back();
  return f;
}

// Which nodes (every node_step-th) and which pods (created in [first_day, stop_day)) a cut keeps.
struct cut_spec {
  std::size_t node_step = 15;
  long first_day = 115, stop_day = 117;
  // The openb pod list variant read (written as the cut's "default" list).
  std::string pod_list = "default";
};

// Writes a cut trace (see the file comment) into dir.
inline void write_cut_trace(const fs::path& dir, const cut_spec& cut = {}) {
  fs::create_directories(dir);
  const auto nodes =
      lines_of(traces_dir() + "/alibaba-gpu-v2023-openb/openb_node_list_all_node.csv");
  {
    std::ofstream o(dir / "openb_node_list_all_node.csv");
    o << nodes[0] << "\n";
    for (std::size_t i = 1; i < nodes.size(); i += cut.node_step) o << nodes[i] << "\n";
  }
  const auto pods =
      lines_of(traces_dir() + "/alibaba-gpu-v2023-openb/openb_pod_list_" + cut.pod_list + ".csv");
  {
    std::ofstream o(dir / "openb_pod_list_default.csv");
    o << pods[0] << "\n";
    const long base = cut.first_day * 86400, stop = cut.stop_day * 86400, clip = 86400;
    for (std::size_t i = 1; i < pods.size(); ++i) {
      auto f = split(pods[i]);
      const long c = std::stol(f[8]);
      if (c < base || c >= stop) continue;
      long d = std::stol(f[9]);
      const long nc = c - base;
      long nd = std::min(d - base, nc + clip);
      f[8] = std::to_string(nc);
      f[9] = std::to_string(nd);
      if (!f[10].empty()) {
        long s = std::stol(f[10]) - base;
        if (s > nd) s = nd;
        f[10] = std::to_string(s);
      }
      for (std::size_t k = 0; k < f.size(); ++k) o << (k ? "," : "") << f[k];
      o << "\n";
    }
  }
  const auto usage = lines_of(traces_dir() + "/alibaba-v2018-machine/machine_usage.csv");
  std::ofstream o(dir / "machine_usage.csv");
  for (std::size_t i = 0; i < usage.size() && i < 8000; ++i) o << usage[i] << "\n";
}

struct fixture_dir {
  fs::path root;
  fixture_dir() {
    root = fs::temp_directory_path() / ("colony-sim-test-" + std::to_string(::getpid()));
    fs::remove_all(root);
    write_cut_trace(root / "trace");
  }
  ~fixture_dir() {
    std::error_code ec;
    fs::remove_all(root, ec);
  }
};

inline const fixture_dir& fixture() {
  static fixture_dir f;
  return f;
}

inline trace::trace_set load_cut() {
  auto t = trace::load_trace_set((fixture().root / "trace").string());
  EXPECT_TRUE(t.has_value()) << (t ? "" : t.error().describe());
  return *t;
}

inline sim::sim_config shipped(const std::string& name) {
  auto c = sim::load_sim_config(repo_root() + "/sim/configs/" + name + ".yaml");
  EXPECT_TRUE(c.has_value()) << (c ? "" : c.error().describe());
  return *c;
}

// The shipped elastic-quota config with limits scaled to the cut trace (~100 nodes, two busy
// days): online pods may hold at most 60 cores, batch pods 10 batch cores.
inline sim::sim_config small_quotas() {
  auto c = shipped("elastic-quota");
  constexpr std::string_view yaml = R"(kind: ElasticQuota
metadata:
  name: tenants
  labels: {quota.scheduling.koordinator.sh/is-parent: "true"}
spec:
  min: {cpu: "60", memory: 1Ti, kubernetes.io/batch-cpu: "10000", kubernetes.io/batch-memory: 256Gi}
  max: {cpu: "60", memory: 1Ti, kubernetes.io/batch-cpu: "10000", kubernetes.io/batch-memory: 256Gi}
---
kind: ElasticQuota
metadata:
  name: online
  labels: {quota.scheduling.koordinator.sh/parent: tenants}
spec:
  min: {cpu: "40", memory: 512Gi}
  max: {cpu: "60", memory: 1Ti}
---
kind: ElasticQuota
metadata:
  name: batch
  labels: {quota.scheduling.koordinator.sh/parent: tenants}
spec:
  min: {kubernetes.io/batch-cpu: "5000", kubernetes.io/batch-memory: 128Gi}
  max: {kubernetes.io/batch-cpu: "10000", kubernetes.io/batch-memory: 256Gi}
)";
  auto q = quota::load_elastic_quotas_yaml(yaml, "small-quotas.yaml");
  EXPECT_TRUE(q.has_value()) << (q ? "" : q.error().describe());
  c.quotas = q->quotas;
  return c;
}

}  // namespace colony::sim_fixture
