// koord-scheduler's ElasticQuotaIgnorePodOverhead through a real kube-apiserver (label kube): a
// RuntimeClass with a pod overhead of 500m (the apiserver's RuntimeClass admission copies it into
// the pod's spec.overhead), an ElasticQuota of at most 2 cores (Koordinator's CRD) and a pod of
// that quota asking 2 cores under that RuntimeClass (PodRequests 2500m), created once colony run
// has listed the quota.
//   - colony run without the gate: the quota refuses the pod (2500m > 2000m), which stays
//     pending with ElasticQuota's reason;
//   - colony run --feature-gates ElasticQuotaIgnorePodOverhead=true (run_options::scheduler_gates):
//     the pod is bound; the quota's used (its status the sink writes) is 2 cores, not 2.5.
#include <atomic>
#include <chrono>
#include <string>
#include <thread>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/bridges/kubernetes/kube_peer.hpp"
#include "tests/run/colony_run_test.hpp"

namespace colony::run {
namespace {

using json = nlohmann::json;

class ColonyRunQuotaOverhead : public colony::run::testing::colony_run_test {
 protected:
  void SetUp() override {
    colony_run_test::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    make_node("n1", "8");
    post("/apis/node.k8s.io/v1/runtimeclasses",
         json{{"apiVersion", "node.k8s.io/v1"},
              {"kind", "RuntimeClass"},
              {"metadata", {{"name", "kata"}}},
              {"handler", "kata"},
              {"overhead", {{"podFixed", {{"cpu", "500m"}, {"memory", "128Mi"}}}}}});
    make_elastic_quota("qo", "1", "2");
  }

  // A pod of quota qo asking 2 cores under the RuntimeClass (spec.overhead 500m).
  void make_overhead_pod(const std::string& name) {
    const json p =
        post("/api/v1/namespaces/" + ns + "/pods",
             json{{"apiVersion", "v1"},
                  {"kind", "Pod"},
                  {"metadata",
                   {{"name", name},
                    {"namespace", ns},
                    {"labels", {{"quota.scheduling.koordinator.sh/name", "qo"}}}}},
                  {"spec",
                   {{"schedulerName", "koord-scheduler"},
                    {"runtimeClassName", "kata"},
                    {"containers",
                     json::array(
                         {{{"name", "c"},
                           {"image", "registry.invalid/pause:3.9"},
                           {"resources", {{"requests", {{"cpu", "2"}, {"memory", "1Gi"}}}}}}})}}}});
    ASSERT_EQ(p["spec"]["overhead"]["cpu"], "500m") << p.dump();
  }

  // colony run with `gates` until the pod is bound or `limit` passes; the pod's node, and its
  // PodScheduled condition message.
  std::pair<std::string, std::string> run_with(const scheduler::scheduler_feature_gates& gates,
                                               const std::string& pod_name,
                                               std::chrono::seconds limit) {
    std::atomic<bool> stop{false};
    run_options o;
    o.kubeconfig = kubeconfig_;
    o.log_path = log_;
    o.scheduler_gates = gates;
    o.stop = [&] { return stop.load(); };
    result<run_stats> out = fail(errc::internal, "not run");
    std::thread t([&] { out = run_cluster(o); });
    std::string node, message;
    EXPECT_TRUE(quota_listed("qo", std::chrono::seconds(60)));
    make_overhead_pod(pod_name);
    const auto t0 = std::chrono::steady_clock::now();
    while (std::chrono::steady_clock::now() - t0 < limit) {
      const json p = get("/api/v1/namespaces/" + ns + "/pods/" + pod_name);
      node = p["spec"].value("nodeName", std::string());
      for (const auto& c : p["status"].value("conditions", json::array()))
        if (c.value("type", "") == "PodScheduled" && c.value("status", "") == "False")
          message = c.value("message", "");
      if (!node.empty() || !message.empty()) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1500));  // let the quota status land
    stop = true;
    t.join();
    EXPECT_TRUE(out) << out.error().describe();
    return {node, message};
  }
};

TEST_F(ColonyRunQuotaOverhead, TheGateTakesTheRuntimeClassOverheadOutOfTheQuota) {
  if (IsSkipped() || HasFatalFailure()) return;
  {
    const auto [node, message] = run_with({}, "o1", std::chrono::seconds(60));
    EXPECT_EQ(node, "");
    EXPECT_NE(message.find("Insufficient quotas"), std::string::npos) << message;
    EXPECT_NE(message.find("pod's request: cpu:2500m"), std::string::npos) << message;
  }
  ASSERT_TRUE(client_->del("/api/v1/namespaces/" + ns + "/pods/o1", 0));
  // The first run's runtime annotation goes, so that quota_listed waits for the second run's.
  ASSERT_TRUE(client_->patch(
      "/apis/scheduling.sigs.k8s.io/v1alpha1/namespaces/" + ns + "/elasticquotas/qo",
      kube::patch_type::merge,
      R"({"metadata":{"annotations":{"quota.scheduling.koordinator.sh/runtime":null}}})"));
  // A second colony run on a log of its own (a new deployment with the gate on), a new pod.
  log_ = work_ + "/log-gated";
  scheduler::scheduler_feature_gates gates;
  gates.elastic_quota_ignore_pod_overhead = true;
  const auto [node, message] = run_with(gates, "o2", std::chrono::seconds(60));
  EXPECT_EQ(node, "n1") << message;
  const json q =
      get("/apis/scheduling.sigs.k8s.io/v1alpha1/namespaces/" + ns + "/elasticquotas/qo");
  const std::string used =
      q.value("status", json::object()).value("used", json::object()).value("cpu", std::string());
  EXPECT_EQ(used, "2") << q.dump();
}

}  // namespace
}  // namespace colony::run
