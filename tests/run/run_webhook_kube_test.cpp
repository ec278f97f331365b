// colony run --webhook-addr against a real kube-apiserver + etcd (tools/peers/kube.sh, with
// MutatingAdmissionWebhook and ValidatingAdmissionWebhook on, as by default): the apiserver
// itself calls Colony's webhooks over HTTPS on 127.0.0.1, with the CA Colony generated.
//   (a) a ClusterColocationProfile turns a created pod into a batch pod; an unlabelled pod is
//       untouched;
//   (b) an ElasticQuota that breaks the tree is refused with the webhook's message;
//   (d) an ElasticQuotaProfile gets its tree root: koord-manager's profile controller in colony
//       run writes the ElasticQuota (through the webhook), and a node joining the pool grows it;
//   (c) with colony run stopped (the registration stays), a pod create goes through unmutated
//       (failurePolicy Ignore, docs/operating.md "Admission webhooks"); restarted, it works again.
// The CRDs are Koordinator's own (config/crd/bases; kube.sh apply-crds, docs/peers.md).
#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <future>
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include "run/cluster_run.hpp"
#include "tests/run/colony_run_test.hpp"

namespace colony::run {
namespace {

using json = nlohmann::json;

class ColonyRunWebhook : public colony::run::testing::colony_run_test {
 protected:
  void SetUp() override {
    colony_run_test::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    // Koordinator's CRDs where the checkout has them beside it, else Colony's own (deploy/crds).
    using peer = kube::testing::kube_peer;
    auto a =
        peer_->apply_crds({peer::crd_file("config.koordinator.sh_clustercolocationprofiles.yaml",
                                          "clustercolocationprofiles.config.koordinator.sh.yaml"),
                           peer::crd_file("scheduling.sigs.k8s.io_elasticquotas.yaml",
                                          "elasticquotas.scheduling.sigs.k8s.io.yaml"),
                           peer::crd_file("quota.koordinator.sh_elasticquotaprofiles.yaml",
                                          "elasticquotaprofiles.quota.koordinator.sh.yaml")});
    ASSERT_TRUE(a) << a.error().describe();
  }
  void TearDown() override { stop_run(); }

  // Starts colony run with the webhooks on 127.0.0.1:0 and waits until it has registered them.
  void start_run() {
    stop_ = false;
    registered_ = std::promise<void>();
    auto reg = registered_.get_future();
    run_options o;
    o.kubeconfig = kubeconfig_;
    o.log_path = log_;
    o.webhook_addr = "127.0.0.1:0";
    o.webhook_cert_dir = work_ + "/certs";
    o.stop = [this] { return stop_.load(); };
    o.progress = [this](const std::string& s) {
      if (s.find("admission webhooks registered") != std::string::npos) registered_.set_value();
    };
    thread_ = std::thread([this, o] { out_ = run_cluster(o); });
    ASSERT_EQ(reg.wait_for(std::chrono::seconds(60)), std::future_status::ready)
        << "colony run did not register its webhooks";
  }
  void stop_run() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
  }
  result<kube::response> try_post(const std::string& path, const json& body) {
    return client_->post(path, body.dump());
  }
  json pod(const std::string& name, bool colocation) {
    json labels = {{"app", "web"}};
    if (colocation) labels["koordinator.sh/enable-colocation"] = "true";
    return {
        {"apiVersion", "v1"},
        {"kind", "Pod"},
        {"metadata", {{"name", name}, {"namespace", ns}, {"labels", labels}}},
        {"spec",
         {{"containers", json::array({{{"name", "c"},
                                       {"image", "registry.invalid/pause:3.9"},
                                       {"resources",
                                        {{"requests", {{"cpu", "500m"}, {"memory", "256Mi"}}},
                                         {"limits", {{"cpu", "1"}, {"memory", "512Mi"}}}}}}})}}}};
  }
  static bool is_batch(const json& p) {
    const json& res = p["spec"]["containers"][0]["resources"];
    return p["metadata"]["labels"].value("koordinator.sh/qosClass", "") == "BE" &&
           p["spec"].value("priorityClassName", "") == "koord-batch" &&
           p["spec"].value("priority", 0) == 5000 &&
           res["requests"] == json({{"kubernetes.io/batch-cpu", "500"},
                                    {"kubernetes.io/batch-memory", "256Mi"}}) &&
           res["limits"] ==
               json({{"kubernetes.io/batch-cpu", "1k"}, {"kubernetes.io/batch-memory", "512Mi"}});
  }

  std::atomic<bool> stop_{false};
  std::promise<void> registered_;
  std::thread thread_;
  result<run_stats> out_ = fail(errc::internal, "not run");
};

TEST_F(ColonyRunWebhook, ProfileMutatesPodsAndIgnoreLetsPodsThroughWhileDown) {
  post("/apis/scheduling.k8s.io/v1/priorityclasses", {{"apiVersion", "scheduling.k8s.io/v1"},
                                                      {"kind", "PriorityClass"},
                                                      {"metadata", {{"name", "koord-batch"}}},
                                                      {"value", 5000}});
  post("/apis/config.koordinator.sh/v1alpha1/clustercolocationprofiles",
       {{"apiVersion", "config.koordinator.sh/v1alpha1"},
        {"kind", "ClusterColocationProfile"},
        {"metadata", {{"name", "colocation"}}},
        {"spec",
         {{"selector", {{"matchLabels", {{"koordinator.sh/enable-colocation", "true"}}}}},
          {"qosClass", "BE"},
          {"priorityClassName", "koord-batch"}}}});
  ASSERT_NO_FATAL_FAILURE(start_run());
  const std::string pods = "/api/v1/namespaces/" + ns + "/pods";

  // (a) The created object is what the apiserver stored after calling /mutate-pod.
  const json batch = post(pods, pod("be-1", true));
  EXPECT_TRUE(is_batch(batch)) << batch.dump(2);
  const json plain = post(pods, pod("plain-1", false));
  EXPECT_FALSE(plain["metadata"]["labels"].contains("koordinator.sh/qosClass"));
  EXPECT_EQ(plain["spec"]["containers"][0]["resources"]["requests"],
            json({{"cpu", "500m"}, {"memory", "256Mi"}}));
  EXPECT_FALSE(plain["spec"].contains("priorityClassName")) << plain.dump(2);
  // kubectl-visible afterwards too.
  EXPECT_TRUE(is_batch(get(pods + "/be-1")));

  // (c) Stopped: the configurations stay, nothing answers on the port.
  stop_run();
  ASSERT_TRUE(out_.has_value()) << out_.error().describe();
  EXPECT_GE(out_->webhook_reviews, 4u);  // mutate + validate for each pod
  EXPECT_TRUE(client_
                  ->get("/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations/"
                        "colony-mutating-webhook-configuration")
                  .has_value());
  const auto t0 = std::chrono::steady_clock::now();
  auto down = try_post(pods, pod("be-down", true));
  const auto took = std::chrono::steady_clock::now() - t0;
  ASSERT_TRUE(down.has_value()) << "failurePolicy Ignore should admit: " << down.error().describe();
  const json d = json::parse(down->body);
  EXPECT_FALSE(is_batch(d));
  EXPECT_FALSE(d["metadata"]["labels"].contains("koordinator.sh/qosClass")) << d.dump(2);
  // Connection refused fails at once: well within timeoutSeconds (5 s).
  EXPECT_LT(took, std::chrono::seconds(5));
  std::fprintf(stderr, "pod create with the webhook down took %.1f ms\n",
               std::chrono::duration<double, std::milli>(took).count());

  // Restarted (same log, same certificate directory): mutating again.
  ASSERT_NO_FATAL_FAILURE(start_run());
  EXPECT_TRUE(is_batch(post(pods, pod("be-2", true))));
}

TEST_F(ColonyRunWebhook, ElasticQuotaThatBreaksTheTreeIsRefusedByTheApiserver) {
  ASSERT_NO_FATAL_FAILURE(start_run());
  const std::string quotas =
      "/apis/scheduling.sigs.k8s.io/v1alpha1/namespaces/" + ns + "/elasticquotas";
  auto quota = [&](const std::string& name, const std::string& parent, const std::string& min_cpu) {
    json labels = json::object();
    if (parent.empty())
      labels["quota.scheduling.koordinator.sh/is-parent"] = "true";
    else
      labels["quota.scheduling.koordinator.sh/parent"] = parent;
    return json{{"apiVersion", "scheduling.sigs.k8s.io/v1alpha1"},
                {"kind", "ElasticQuota"},
                {"metadata", {{"name", name}, {"namespace", ns}, {"labels", labels}}},
                {"spec",
                 {{"min", {{"cpu", min_cpu}, {"memory", "4Gi"}}},
                  {"max", {{"cpu", "100"}, {"memory", "100Gi"}}}}}};
  };
  post(quotas, quota("parent", "", "4"));
  // The webhook answers from the log: until the parent's QuotaUpserted has reached it, it
  // refuses the child for want of a parent. Retry until the answer is about min.
  std::string message;
  const auto t0 = std::chrono::steady_clock::now();
  while (std::chrono::steady_clock::now() - t0 < std::chrono::seconds(20)) {
    auto r = try_post(quotas, quota("child", "parent", "8"));
    ASSERT_FALSE(r.has_value()) << "created a child whose min exceeds its parent's: " << r->body;
    message = r.error().message;
    if (message.find("checkMinQuotaSum") != std::string::npos) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  EXPECT_NE(message.find("admission webhook \"velasticquota.colony.koordinator.sh\" denied the "
                         "request: checkMinQuotaSum all brothers' MinQuota > parent MinQuota, "
                         "parent: parent"),
            std::string::npos)
      << message;
  std::fprintf(stderr, "apiserver refusal: %s\n", message.c_str());
  // One that fits is created.
  auto ok = try_post(quotas, quota("child", "parent", "2"));
  EXPECT_TRUE(ok.has_value()) << ok.error().describe();
}

// (d) The profile selects the nodes labelled pool=gpu: the root quota appears with min = their
// allocatable (cpu 16 + 8), the labels Koordinator's controller sets, and follows a third node.
TEST_F(ColonyRunWebhook, ElasticQuotaProfileGetsItsTreeRootFromItsNodes) {
  auto node = [&](const std::string& name, const std::string& cpu, const std::string& pool) {
    const json res = {{"cpu", cpu}, {"memory", "64Gi"}, {"pods", "110"}};
    post("/api/v1/nodes",
         json{{"apiVersion", "v1"},
              {"kind", "Node"},
              {"metadata", {{"name", name}, {"labels", {{"pool", pool}}}}},
              {"status",
               {{"capacity", res},
                {"allocatable", res},
                {"conditions", json::array({{{"type", "Ready"}, {"status", "True"}}})}}}});
  };
  node("gpu-a", "16", "gpu");
  node("gpu-b", "8", "gpu");
  node("cpu-a", "32", "cpu");
  post("/apis/quota.koordinator.sh/v1alpha1/namespaces/" + ns + "/elasticquotaprofiles",
       {{"apiVersion", "quota.koordinator.sh/v1alpha1"},
        {"kind", "ElasticQuotaProfile"},
        {"metadata", {{"name", "gpu-pool"}, {"namespace", ns}}},
        {"spec",
         {{"quotaName", "gpu-root"},
          {"quotaLabels", {{"team", "ml"}}},
          {"nodeSelector", {{"matchLabels", {{"pool", "gpu"}}}}}}}});
  ASSERT_NO_FATAL_FAILURE(start_run());
  const std::string root =
      "/apis/scheduling.sigs.k8s.io/v1alpha1/namespaces/" + ns + "/elasticquotas/gpu-root";
  // The root once its min says `cpu` cores (or the last one read, when the wait runs out).
  auto wait_min = [&](const std::string& cpu) {
    json q;
    const auto t0 = std::chrono::steady_clock::now();
    while (std::chrono::steady_clock::now() - t0 < std::chrono::seconds(60)) {
      if (auto r = client_->get(root); r) {
        q = json::parse(r->body);
        if (q.value("/spec/min/cpu"_json_pointer, std::string()) == cpu) break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
    return q;
  };
  json q = wait_min("24");
  ASSERT_EQ(q.value("/spec/min/cpu"_json_pointer, std::string()), "24") << q.dump(2);
  const auto& labels = q["metadata"]["labels"];
  EXPECT_EQ(labels.value("quota.scheduling.koordinator.sh/is-root", ""), "true");
  EXPECT_EQ(labels.value("quota.scheduling.koordinator.sh/profile", ""), "gpu-pool");
  EXPECT_EQ(labels.value("team", ""), "ml");
  EXPECT_FALSE(labels.value("quota.scheduling.koordinator.sh/tree-id", "").empty());
  EXPECT_NE(q["metadata"]["annotations"]
                .value("quota.scheduling.koordinator.sh/total-resource", "")
                .find("\"cpu\":\"24\""),
            std::string::npos)
      << q.dump(2);

  node("gpu-c", "4", "gpu");
  q = wait_min("28");
  EXPECT_EQ(q.value("/spec/min/cpu"_json_pointer, std::string()), "28") << q.dump(2);
  stop_run();
  ASSERT_TRUE(out_.has_value()) << out_.error().describe();
}

}  // namespace
}  // namespace colony::run
