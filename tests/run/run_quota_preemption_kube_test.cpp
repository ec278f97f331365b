// ElasticQuota preemption in cluster mode (label kube): colony run over a real kube-apiserver with
// Koordinator's ElasticQuota CRD. A quota of at most 2 cores holds a koord-batch pod (priority
// 5500) of 2 cores; a koord-prod pod (9500) of the same quota asking 1 core does not fit the
// quota, so the ElasticQuota plugin's PostFilter picks the batch pod as its victim (same quota,
// lower priority) and the sink evicts it through the Eviction API (the pod gets a
// deletionTimestamp); once the eviction is in the log the prod pod is retried and bound.
#include <atomic>
#include <chrono>
#include <functional>
#include <string>
#include <thread>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/bridges/kubernetes/kube_peer.hpp"
#include "tests/run/colony_run_test.hpp"

namespace colony::run {
namespace {

using json = nlohmann::json;

class ColonyRunQuotaPreemption : public colony::run::testing::colony_run_test {
 protected:
  void SetUp() override {
    colony_run_test::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    for (const auto& [name, value] :
         {std::pair{"koord-prod", 9500}, std::pair{"koord-batch", 5500}})
      post("/apis/scheduling.k8s.io/v1/priorityclasses",
           json{{"apiVersion", "scheduling.k8s.io/v1"},
                {"kind", "PriorityClass"},
                {"metadata", {{"name", name}}},
                {"value", value}});
    make_node("n1", "8");
    make_elastic_quota("qp", "1", "2");
  }

  void make_quota_pod(const std::string& name, const std::string& priority_class,
                      const std::string& cpu) {
    post("/api/v1/namespaces/" + ns + "/pods",
         json{{"apiVersion", "v1"},
              {"kind", "Pod"},
              {"metadata",
               {{"name", name},
                {"namespace", ns},
                {"labels", {{"quota.scheduling.koordinator.sh/name", "qp"}}}}},
              {"spec",
               {{"schedulerName", "koord-scheduler"},
                {"priorityClassName", priority_class},
                {"containers",
                 json::array(
                     {{{"name", "c"},
                       {"image", "registry.invalid/pause:3.9"},
                       {"resources", {{"requests", {{"cpu", cpu}, {"memory", "1Gi"}}}}}}})}}}});
  }
  json pod(const std::string& name) { return get("/api/v1/namespaces/" + ns + "/pods/" + name); }
};

TEST_F(ColonyRunQuotaPreemption, AProdPodPreemptsTheBatchPodOfItsQuotaThroughTheEvictionApi) {
  if (IsSkipped() || HasFatalFailure()) return;
  std::atomic<bool> stop{false};
  run_options o;
  o.kubeconfig = kubeconfig_;
  o.log_path = log_;
  o.stop = [&] { return stop.load(); };
  result<run_stats> out = fail(errc::internal, "not run");
  std::thread t([&] { out = run_cluster(o); });
  auto wait = [&](const std::function<bool()>& done, std::chrono::seconds limit) {
    const auto t0 = std::chrono::steady_clock::now();
    while (std::chrono::steady_clock::now() - t0 < limit) {
      if (done()) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
    return false;
  };
  // Once colony run has listed the quota (colony_run_test::quota_listed).
  EXPECT_TRUE(quota_listed("qp", std::chrono::seconds(60)));
  make_quota_pod("batch-1", "koord-batch", "2");
  const bool batch_bound =
      wait([&] { return pod("batch-1")["spec"].value("nodeName", std::string()) == "n1"; },
           std::chrono::seconds(60));
  make_quota_pod("prod-1", "koord-prod", "1");
  const bool prod_bound =
      batch_bound &&
      wait([&] { return pod("prod-1")["spec"].value("nodeName", std::string()) == "n1"; },
           std::chrono::seconds(90));
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  stop = true;
  t.join();
  ASSERT_TRUE(out) << out.error().describe();
  ASSERT_TRUE(batch_bound) << pod("batch-1").dump();
  EXPECT_TRUE(prod_bound) << pod("prod-1").dump();
  // The victim was evicted (graceful deletion: no kubelet here finishes it).
  EXPECT_TRUE(pod("batch-1")["metadata"].contains("deletionTimestamp")) << pod("batch-1").dump();
  EXPECT_FALSE(pod("prod-1")["metadata"].contains("deletionTimestamp"));
  // The log: one PodEvicted of the batch pod, by the scheduler, reason Preempted.
  int evictions = 0;
  for (const auto& r : records()) {
    const auto& env = *wire::GetEnvelope(r.data());
    if (const auto* e = env.payload_as_PodEvicted()) {
      EXPECT_EQ(messages::to_string_view(e->pod()), ns + "/batch-1");
      EXPECT_EQ(e->reason(), wire::EvictionReason::Preempted);
      ++evictions;
    }
  }
  EXPECT_EQ(evictions, 1);
  EXPECT_EQ(out->write_failures, 0u);
}

// A pod that exists when colony run starts is listed after its quota (the source holds the pods'
// first list until every other informer has listed, as kube-scheduler waits for its caches):
// the quota, at most 2 cores, refuses a pod of 3 and the log has the quota before the pod.
TEST_F(ColonyRunQuotaPreemption, APodThereAtStartIsHeldByItsQuota) {
  if (IsSkipped() || HasFatalFailure()) return;
  make_quota_pod("big", "koord-batch", "3");
  std::atomic<bool> stop{false};
  run_options o;
  o.kubeconfig = kubeconfig_;
  o.log_path = log_;
  o.stop = [&] { return stop.load(); };
  result<run_stats> out = fail(errc::internal, "not run");
  std::thread t([&] { out = run_cluster(o); });
  std::string message;
  const auto t0 = std::chrono::steady_clock::now();
  while (std::chrono::steady_clock::now() - t0 < std::chrono::seconds(60) && message.empty()) {
    for (const auto& c : pod("big")["status"].value("conditions", json::array()))
      if (c.value("type", "") == "PodScheduled" && c.value("status", "") == "False")
        message = c.value("message", "");
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  stop = true;
  t.join();
  ASSERT_TRUE(out) << out.error().describe();
  EXPECT_EQ(pod("big")["spec"].value("nodeName", std::string()), "");
  EXPECT_NE(message.find("Insufficient quotas, quotaName: qp"), std::string::npos) << message;
  std::int64_t quota_at = -1, pod_at = -1, off = 0;
  for (const auto& r : records()) {
    const auto type = wire::GetEnvelope(r.data())->payload_type();
    if (type == wire::Payload::QuotaUpserted && quota_at < 0) quota_at = off;
    if (type == wire::Payload::PodSubmitted && pod_at < 0) pod_at = off;
    ++off;
  }
  ASSERT_GE(quota_at, 0);
  ASSERT_GE(pod_at, 0);
  EXPECT_LT(quota_at, pod_at);
}

}  // namespace
}  // namespace colony::run
