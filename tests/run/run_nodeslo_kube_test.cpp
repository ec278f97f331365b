// colony run writes one NodeSLO per node (label kube): with a slo-controller-config ConfigMap
// whose resource-threshold-config has a nodeStrategies entry, the NodeSLOs differ by node label;
// when the ConfigMap, or a node's labels, change, the NodeSLOs follow. The NodeSLO CRD is
// Koordinator's own (config/crd/bases in koordinator-sh/koordinator; kube.sh apply-crds,
// docs/peers.md), as a Koordinator cluster has it. docs/kubernetes-bridge.md "Sinks".
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <string>
#include <thread>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "messages/codec.hpp"
#include "run/cluster_run.hpp"
#include "tests/run/colony_run_test.hpp"

namespace colony::run {
namespace {

using json = nlohmann::json;

std::string nodeslo_crd() {
  return kube::testing::kube_peer::crd_file("slo.koordinator.sh_nodeslos.yaml",
                                            "nodeslos.slo.koordinator.sh.yaml");
}

// The slo-controller-config data: a cluster strategy and one node strategy for pool=batch.
json slo_config(int cluster_suppress, int batch_suppress) {
  const json threshold = {
      {"clusterStrategy", {{"enable", true}, {"cpuSuppressThresholdPercent", cluster_suppress}}},
      {"nodeStrategies", json::array({{{"name", "batch-pool"},
                                       {"nodeSelector", {{"matchLabels", {{"pool", "batch"}}}}},
                                       {"cpuSuppressThresholdPercent", batch_suppress}}})}};
  return {{"resource-threshold-config", threshold.dump()}};
}

class ColonyRunNodeSlo : public colony::run::testing::colony_run_test {
 protected:
  void label_node(const std::string& name, const std::string& pool) {
    make_node(name);
    auto r = client_->patch("/api/v1/nodes/" + name, kube::patch_type::merge,
                            json{{"metadata", {{"labels", {{"pool", pool}}}}}}.dump());
    ASSERT_TRUE(r) << r.error().describe();
  }
  // cpuSuppressThresholdPercent of every NodeSLO (-1: no such field).
  std::map<std::string, std::int64_t> suppress_by_node() {
    std::map<std::string, std::int64_t> m;
    auto r = client_->get("/apis/slo.koordinator.sh/v1alpha1/nodeslos");
    if (!r) return m;
    const auto l = json::parse(r->body, nullptr, false);
    if (!l.is_object()) return m;
    for (const auto& o : l.value("items", json::array()))
      m[o["metadata"]["name"].get<std::string>()] =
          o.value("/spec/resourceUsedThresholdWithBE/cpuSuppressThresholdPercent"_json_pointer,
                  std::int64_t{-1});
    return m;
  }
  // Polls until want holds (or 60 s); returns the last state seen.
  std::map<std::string, std::int64_t> wait_for(const std::map<std::string, std::int64_t>& want) {
    const auto t0 = std::chrono::steady_clock::now();
    auto got = suppress_by_node();
    while (got != want && std::chrono::steady_clock::now() - t0 < std::chrono::seconds(60)) {
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
      got = suppress_by_node();
    }
    return got;
  }
};

TEST_F(ColonyRunNodeSlo, NodeSlosFollowNodeLabelsAndTheConfigMap) {
  const std::string crd = nodeslo_crd();
  if (!std::ifstream(crd).good()) GTEST_SKIP() << "no " << crd << " (docs/peers.md)";
  auto applied = peer_->apply_crds({crd});
  ASSERT_TRUE(applied) << applied.error().describe();
  post("/api/v1/namespaces", json{{"apiVersion", "v1"},
                                  {"kind", "Namespace"},
                                  {"metadata", {{"name", "koordinator-system"}}}});
  const std::string cm_path =
      "/api/v1/namespaces/koordinator-system/configmaps/slo-controller-config";
  post("/api/v1/namespaces/koordinator-system/configmaps",
       json{{"apiVersion", "v1"},
            {"kind", "ConfigMap"},
            {"metadata", {{"name", "slo-controller-config"}, {"namespace", "koordinator-system"}}},
            {"data", slo_config(60, 30)}});
  label_node("n-online", "online");
  label_node("n-batch", "batch");
  if (HasFatalFailure()) return;

  std::atomic<bool> stop{false};
  run_options o;
  o.kubeconfig = kubeconfig_;
  o.log_path = log_;
  o.stop = [&] { return stop.load(); };
  result<run_stats> stats = fail(errc::internal, "not run");
  std::thread t([&] { stats = run_cluster(o); });
  struct stopper {  // stops the run on every exit path, ASSERTs included
    std::atomic<bool>& stop;
    std::thread& t;
    ~stopper() {
      stop = true;
      if (t.joinable()) t.join();
    }
  } guard{stop, t};

  // The cluster strategy for the online node, the node strategy for the batch node.
  EXPECT_EQ(wait_for({{"n-online", 60}, {"n-batch", 30}}),
            (std::map<std::string, std::int64_t>{{"n-online", 60}, {"n-batch", 30}}));
  auto full = client_->get("/apis/slo.koordinator.sh/v1alpha1/nodeslos/n-batch");
  ASSERT_TRUE(full) << full.error().describe();
  const auto batch = json::parse(full->body);
  // Merged over Koordinator's defaults: the cluster strategy's enable, the default policy.
  EXPECT_EQ(batch["spec"]["resourceUsedThresholdWithBE"]["enable"], true);
  EXPECT_EQ(batch["spec"]["resourceUsedThresholdWithBE"]["cpuSuppressPolicy"], "cpuset");
  EXPECT_EQ(batch["spec"]["cpuBurstStrategy"]["policy"], "none");

  // The ConfigMap changes: both NodeSLOs follow.
  auto put =
      client_->patch(cm_path, kube::patch_type::merge, json{{"data", slo_config(50, 20)}}.dump());
  ASSERT_TRUE(put) << put.error().describe();
  EXPECT_EQ(wait_for({{"n-online", 50}, {"n-batch", 20}}),
            (std::map<std::string, std::int64_t>{{"n-online", 50}, {"n-batch", 20}}));

  // A node's labels change: its NodeSLO takes the node strategy.
  auto relabel = client_->patch("/api/v1/nodes/n-online", kube::patch_type::merge,
                                R"({"metadata":{"labels":{"pool":"batch"}}})");
  ASSERT_TRUE(relabel) << relabel.error().describe();
  EXPECT_EQ(wait_for({{"n-online", 20}, {"n-batch", 20}}),
            (std::map<std::string, std::int64_t>{{"n-online", 20}, {"n-batch", 20}}));

  stop = true;
  t.join();
  ASSERT_TRUE(stats) << stats.error().describe();
  EXPECT_EQ(stats->write_failures, 0u);
  // The log: one NodeSLOUpdated per change, each caused by an earlier record (the node's
  // registration, the ConfigMap, the relabel), none repeated without a change.
  std::map<std::string, std::vector<std::string>> specs;
  for (const auto& r : records()) {
    const auto& env = *wire::GetEnvelope(r.data());
    if (env.payload_type() != wire::Payload::NodeSLOUpdated) continue;
    EXPECT_GE(env.causation(), 0);
    EXPECT_LT(env.causation(), static_cast<std::int64_t>(env.offset()));
    EXPECT_EQ(messages::to_string_view(env.source()), "slo-controller");
    auto& v = specs[std::string(messages::to_string_view(env.entity_key()))];
    const std::string spec(messages::to_string_view(env.payload_as_NodeSLOUpdated()->spec_json()));
    if (!v.empty()) {
      EXPECT_NE(spec, v.back()) << "a NodeSLOUpdated without a change";
    }
    v.push_back(spec);
  }
  // Registered (and the ConfigMap, if its informer came after the node's), the ConfigMap
  // changed, (for n-online) relabelled.
  EXPECT_GE(specs["n-batch"].size(), 2u);
  EXPECT_LE(specs["n-batch"].size(), 3u);
  EXPECT_GE(specs["n-online"].size(), 3u);
  EXPECT_LE(specs["n-online"].size(), 4u);
}

}  // namespace
}  // namespace colony::run
