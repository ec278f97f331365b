// A node's CPU topology from `colony koordlet` to `colony run` through a real kube-apiserver
// (label kube), both run as the colony binary, with Koordinator's NodeResourceTopology CRD:
//   - the koordlet reads this machine's /sys and /proc/cpuinfo and creates the node's
//     NodeResourceTopology (cpu-topology with one entry per online CPU, cpu-basic-info with the
//     machine's model, one "node-N" zone per NUMA node, topologyPolicies None);
//   - colony run (--cpu-normalization) reads it: an LSR pod asking 1 whole CPU is bound with a
//     scheduling.koordinator.sh/resource-status cpuset of one CPU of the reported topology, and the
//     slo-controller's ratio for the reported CPU model (cpu-normalization-config in
//     slo-controller-config) reaches the Node as node.koordinator.sh/cpu-normalization-ratio and
//     resource-amplification-ratio by a PATCH of its annotations.
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <thread>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/bridges/kubernetes/kube_api_test.hpp"
#include "tests/cli/drained_process.hpp"
#include "tests/support/node_tree.hpp"

namespace colony::agent::testing {
namespace {

using namespace std::chrono_literals;
using json = nlohmann::json;
using steady = std::chrono::steady_clock;

constexpr std::int64_t gib_kib = 1024 * 1024;

class KoordletTopology : public kube::testing::kube_api_test {
 protected:
  const std::string ns = "apps";
  const std::string node_ = "n1";

  void SetUp() override {
    start_peer(ns);
    if (IsSkipped() || HasFatalFailure()) return;
    using peer = kube::testing::kube_peer;
    auto crds = peer_->apply_crds(
        {peer::crd_file("topology.node.k8s.io_noderesourcetopologies.yaml",
                        "noderesourcetopologies.topology.node.k8s.io.yaml"),
         peer::crd_file("slo.koordinator.sh_nodemetrics.yaml",
                        "nodemetrics.slo.koordinator.sh.yaml"),
         peer::crd_file("slo.koordinator.sh_nodeslos.yaml", "nodeslos.slo.koordinator.sh.yaml")});
    ASSERT_TRUE(crds) << crds.error().describe();
    work_ = peer_->dir() + "/topology";
    std::filesystem::create_directories(work_);
    kubeconfig_ = peer_->dir() + "/kubeconfig";
    cpus_ = ::sysconf(_SC_NPROCESSORS_ONLN);
    const json res = {{"cpu", std::to_string(cpus_)}, {"memory", "8Gi"}, {"pods", "110"}};
    post("/api/v1/nodes",
         json{{"apiVersion", "v1"},
              {"kind", "Node"},
              {"metadata", {{"name", node_}}},
              {"status",
               {{"capacity", res},
                {"allocatable", res},
                {"conditions", json::array({{{"type", "Ready"}, {"status", "True"}}})}}}});
    // The fake node for the collectors (no pods); /proc/cpuinfo is this machine's.
    tree_ =
        std::make_unique<colony::testing::node_tree>(work_ + "/node", koordlet::cgroup_version::v1);
    tree_->write_proc(static_cast<int>(cpus_), 1000, 5000, 8 * gib_kib, 6 * gib_kib);
    tree_->write_cgroup("kubepods", {});
    std::ifstream in("/proc/cpuinfo");
    std::stringstream ss;
    ss << in.rdbuf();
    std::ofstream(tree_->proc_root() + "/cpuinfo") << ss.str();
  }

  // The CPUs of a cpu-shared-pools annotation ([{"socket","node","cpuset":"0-2,5"}], or null).
  static std::set<int> pool_cpus(const json& pools) {
    std::set<int> out;
    if (!pools.is_array()) return out;
    for (const auto& pool : pools) {
      std::stringstream s(pool.value("cpuset", std::string()));
      for (std::string part; std::getline(s, part, ',');) {
        const auto dash = part.find('-');
        const int lo = std::stoi(part.substr(0, dash));
        const int hi = dash == std::string::npos ? lo : std::stoi(part.substr(dash + 1));
        for (int c = lo; c <= hi; ++c) out.insert(c);
      }
    }
    return out;
  }

  json wait_get(const std::string& path, std::chrono::seconds limit) {
    const auto t0 = steady::now();
    while (steady::now() - t0 < limit) {
      if (auto r = client_->get(path); r) return json::parse(r->body);
      std::this_thread::sleep_for(200ms);
    }
    return json();
  }

  std::string work_, kubeconfig_;
  long cpus_ = 0;
  std::unique_ptr<colony::testing::node_tree> tree_;
};

TEST_F(KoordletTopology, TheKoordletsTopologyGivesColonyRunCpusetsAndTheNormalizationRatio) {
  if (IsSkipped() || HasFatalFailure()) return;
  ASSERT_GT(cpus_, 0);
  colony::testing::drained_process k({colony::testing::colony_binary(), "koordlet", "--node", node_,
                                      "--kubeconfig", kubeconfig_, "--log", work_ + "/koordlet-log",
                                      "--cgroup-root", tree_->cgroup_root(), "--proc-root",
                                      tree_->proc_root(), "--interval", "200ms"});
  // 1. The koordlet's NodeResourceTopology.
  const std::string nrt_path =
      "/apis/topology.node.k8s.io/v1alpha1/noderesourcetopologies/" + node_;
  const json nrt = wait_get(nrt_path, 90s);
  ASSERT_TRUE(nrt.is_object()) << k.output();
  const auto& ann = nrt["metadata"]["annotations"];
  const json topo = json::parse(ann.value("node.koordinator.sh/cpu-topology", std::string("{}")));
  ASSERT_EQ(topo["detail"].size(), static_cast<std::size_t>(cpus_)) << nrt.dump();
  for (std::size_t i = 0; i < topo["detail"].size(); ++i)
    EXPECT_EQ(topo["detail"][i]["id"].get<int>(), static_cast<int>(i)) << nrt.dump();
  const json basic =
      json::parse(ann.value("node.koordinator.sh/cpu-basic-info", std::string("{}")));
  std::string model;
  {
    std::ifstream in("/proc/cpuinfo");
    for (std::string line; std::getline(in, line);)
      if (line.rfind("model name", 0) == 0) {
        model = line.substr(line.find(':') + 1);
        model.erase(0, model.find_first_not_of(" \t"));
        break;
      }
  }
  EXPECT_EQ(basic.value("cpuModel", std::string()), model) << nrt.dump();
  EXPECT_EQ(nrt["topologyPolicies"], json::array({"None"}));
  ASSERT_GE(nrt["zones"].size(), 1u) << nrt.dump();
  EXPECT_EQ(nrt["zones"][0]["name"], "node-0");
  EXPECT_EQ(nrt["zones"][0]["type"], "Node");
  EXPECT_EQ(nrt["metadata"]["labels"]["app.kubernetes.io/managed-by"], "Koordinator");
  EXPECT_EQ(ann.value("node.koordinator.sh/pod-cpu-allocs", std::string()), "null");
  const json pools =
      json::parse(ann.value("node.koordinator.sh/cpu-shared-pools", std::string("null")));
  ASSERT_TRUE(pools.is_array()) << nrt.dump();

  // 2. colony run: the CPU model's ratio (cpu-normalization-config) and an LSR pod.
  const bool ht = basic.value("hyperThreadEnabled", false);
  const bool turbo = basic.value("turboEnabled", false);
  const std::string want_ratio = ht && turbo ? "1.60" : ht ? "1.20" : turbo ? "1.80" : "1.50";
  post("/api/v1/namespaces", json{{"apiVersion", "v1"},
                                  {"kind", "Namespace"},
                                  {"metadata", {{"name", "koordinator-system"}}}});
  const json norm = {{"enable", true},
                     {"ratioModel",
                      {{model,
                        {{"baseRatio", 1.5},
                         {"hyperThreadEnabledRatio", 1.2},
                         {"turboEnabledRatio", 1.8},
                         {"hyperThreadTurboEnabledRatio", 1.6}}}}}};
  post("/api/v1/namespaces/koordinator-system/configmaps",
       json{{"apiVersion", "v1"},
            {"kind", "ConfigMap"},
            {"metadata", {{"name", "slo-controller-config"}, {"namespace", "koordinator-system"}}},
            {"data",
             {{"colocation-config", R"({"enable":true})"},
              {"cpu-normalization-config", norm.dump()}}}});
  // LSR is for prod pods (the admission's QoS / priority check).
  post("/apis/scheduling.k8s.io/v1/priorityclasses", json{{"apiVersion", "scheduling.k8s.io/v1"},
                                                          {"kind", "PriorityClass"},
                                                          {"metadata", {{"name", "koord-prod"}}},
                                                          {"value", 9500}});
  post(
      "/api/v1/namespaces/" + ns + "/pods",
      json{{"apiVersion", "v1"},
           {"kind", "Pod"},
           {"metadata",
            {{"name", "lsr-1"},
             {"namespace", ns},
             {"labels", {{"koordinator.sh/qosClass", "LSR"}}}}},
           {"spec",
            {{"schedulerName", "koord-scheduler"},
             {"priorityClassName", "koord-prod"},
             {"containers", json::array({{{"name", "c"},
                                          {"image", "registry.invalid/pause:3.9"},
                                          {"resources",
                                           {{"requests", {{"cpu", "1"}, {"memory", "1Gi"}}},
                                            {"limits", {{"cpu", "1"}, {"memory", "1Gi"}}}}}}})}}}});
  colony::testing::drained_process run({colony::testing::colony_binary(), "run", "--kubeconfig",
                                        kubeconfig_, "--log", work_ + "/run-log",
                                        "--cpu-normalization"});
  std::string cpuset, ratio, amplification;
  const auto t0 = steady::now();
  while (steady::now() - t0 < 90s && (cpuset.empty() || ratio.empty())) {
    const json p = get("/api/v1/namespaces/" + ns + "/pods/lsr-1");
    const std::string rs = p["metadata"]
                               .value("annotations", json::object())
                               .value("scheduling.koordinator.sh/resource-status", std::string());
    if (!rs.empty()) cpuset = json::parse(rs).value("cpuset", std::string());
    const json n = get("/api/v1/nodes/" + node_);
    const json na = n["metadata"].value("annotations", json::object());
    ratio = na.value("node.koordinator.sh/cpu-normalization-ratio", std::string());
    amplification = na.value("node.koordinator.sh/resource-amplification-ratio", std::string());
    std::this_thread::sleep_for(250ms);
  }
  const json p = get("/api/v1/namespaces/" + ns + "/pods/lsr-1");
  EXPECT_EQ(p["spec"].value("nodeName", std::string()), node_) << run.output();
  // One CPU of the reported topology.
  ASSERT_FALSE(cpuset.empty()) << p.dump() << "\n" << run.output();
  const int cpu = std::stoi(cpuset);
  EXPECT_EQ(std::to_string(cpu), cpuset);
  EXPECT_GE(cpu, 0);
  EXPECT_LT(cpu, cpus_);
  EXPECT_EQ(ratio, want_ratio) << run.output();
  EXPECT_EQ(amplification, R"({"cpu":)" + want_ratio + "}") << run.output();
  EXPECT_EQ(run.stop(30s), 0) << run.output();

  // 3. The koordlet takes the LSR pod's CPU out of the LS share pool once it sees the binding.
  std::set<int> pooled = pool_cpus(pools);
  ASSERT_EQ(pooled.count(cpu), 1u) << pools.dump();
  const auto t1 = steady::now();
  while (steady::now() - t1 < 60s && pooled.count(cpu) != 0) {
    const json n = get(nrt_path);
    pooled = pool_cpus(json::parse(n["metadata"]["annotations"].value(
        "node.koordinator.sh/cpu-shared-pools", std::string("null"))));
    std::this_thread::sleep_for(250ms);
  }
  EXPECT_EQ(pooled.count(cpu), 0u) << "koordlet:\n" << k.output();
  EXPECT_EQ(pooled.size(), static_cast<std::size_t>(cpus_ - 1));
  EXPECT_EQ(k.stop(30s), 0) << k.output();
}

}  // namespace
}  // namespace colony::agent::testing
