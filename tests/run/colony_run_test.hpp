// The fixture of the `colony run` tests: a real kube-apiserver (kube_api_test.hpp), helpers
// that create nodes and pods the way a user would, run colony run until every pod is bound, and
// read what it logged.
#pragma once

#include <atomic>
#include <chrono>
#include <filesystem>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "messages/codec.hpp"
#include "run/cluster_run.hpp"
#include "stores/event_log.hpp"
#include "tests/bridges/kubernetes/kube_api_test.hpp"
#include "tests/bridges/kubernetes/kube_peer.hpp"
#include "tests/support/log_records.hpp"

namespace colony::run::testing {

using json = nlohmann::json;

class colony_run_test : public kube::testing::kube_api_test {
 protected:
  const std::string ns = "colony-run";

  void SetUp() override {
    start_peer(ns, apiserver_args_);
    if (IsSkipped() || HasFatalFailure()) return;
    work_ = peer_->dir() + "/run";
    std::filesystem::create_directories(work_);
    // The kubeconfig kube.sh wrote for the admin user.
    kubeconfig_ = peer_->dir() + "/kubeconfig";
    if (log_.empty()) log_ = work_ + "/log";
  }

  // A Ready node with `cpu`, 256Gi, 110 pods and the `extra` resources (name -> quantity).
  void make_node(const std::string& name, const std::string& cpu = "4",
                 const json& extra = json::object()) {
    json res = {{"cpu", cpu}, {"memory", "256Gi"}, {"pods", "110"}};
    for (const auto& [k, v] : extra.items()) res[k] = v;
    post("/api/v1/nodes",
         json{{"apiVersion", "v1"},
              {"kind", "Node"},
              {"metadata", {{"name", name}}},
              {"status",
               {{"capacity", res},
                {"allocatable", res},
                {"conditions", json::array({{{"type", "Ready"}, {"status", "True"}}})}}}});
  }
  void make_pod(const std::string& name) {
    post("/api/v1/namespaces/" + ns + "/pods",
         json{{"apiVersion", "v1"},
              {"kind", "Pod"},
              {"metadata", {{"name", name}, {"namespace", ns}}},
              {"spec",
               {{"schedulerName", "koord-scheduler"},
                {"containers",
                 json::array({{{"name", "c"},
                               {"image", "registry.invalid/pause:3.9"},
                               {"resources",
                                {{"requests", {{"cpu", "500m"}, {"memory", "256Mi"}}}}}}})}}}});
  }
  // Koordinator's ElasticQuota CRD and one quota of the namespace (cpu min..max cores).
  void make_elastic_quota(const std::string& name, const std::string& min_cpu,
                          const std::string& max_cpu) {
    using peer = kube::testing::kube_peer;
    auto a = peer_->apply_crds({peer::crd_file("scheduling.sigs.k8s.io_elasticquotas.yaml",
                                               "elasticquotas.scheduling.sigs.k8s.io.yaml")});
    ASSERT_TRUE(a) << a.error().describe();
    post("/apis/scheduling.sigs.k8s.io/v1alpha1/namespaces/" + ns + "/elasticquotas",
         json{{"apiVersion", "scheduling.sigs.k8s.io/v1alpha1"},
              {"kind", "ElasticQuota"},
              {"metadata", {{"name", name}, {"namespace", ns}}},
              {"spec",
               {{"min", {{"cpu", min_cpu}, {"memory", "1Gi"}}},
                {"max", {{"cpu", max_cpu}, {"memory", "64Gi"}}}}}});
  }
  // Whether colony run's sink wrote the quota's runtime annotation within `limit`: it has listed
  // the quota. A pod created before that may be scheduled with no quota known (colony run does not
  // wait for its informers' first lists, kube-scheduler's WaitForCacheSync).
  bool quota_listed(const std::string& name, std::chrono::seconds limit) {
    const auto t0 = std::chrono::steady_clock::now();
    while (std::chrono::steady_clock::now() - t0 < limit) {
      const json q =
          get("/apis/scheduling.sigs.k8s.io/v1alpha1/namespaces/" + ns + "/elasticquotas/" + name);
      if (q["metadata"]
              .value("annotations", json::object())
              .contains("quota.scheduling.koordinator.sh/runtime"))
        return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
    return false;
  }
  // pod -> node for every pod of the namespace ("" = not bound).
  std::map<std::string, std::string> placements() {
    std::map<std::string, std::string> m;
    const auto l = get("/api/v1/namespaces/" + ns + "/pods");
    for (const auto& p : l.value("items", json::array()))
      m[p["metadata"]["name"].get<std::string>()] = p["spec"].value("nodeName", std::string{});
    return m;
  }
  bool all_bound() {
    const auto m = placements();
    for (const auto& [p, n] : m)
      if (n.empty()) return false;
    return !m.empty();
  }
  // Runs colony run until every pod is bound (or the limit), then stops it.
  result<run_stats> run_until_bound(std::chrono::seconds limit) {
    std::atomic<bool> stop{false};
    run_options o;
    o.kubeconfig = kubeconfig_;
    o.log_path = log_;
    o.state_path = state_;
    o.stop = [&] { return stop.load(); };
    result<run_stats> out = fail(errc::internal, "not run");
    std::thread t([&] { out = run_cluster(o); });
    const auto t0 = std::chrono::steady_clock::now();
    while (std::chrono::steady_clock::now() - t0 < limit && !all_bound())
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    std::this_thread::sleep_for(std::chrono::milliseconds(500));  // let late writes show
    stop = true;
    t.join();
    return out;
  }
  // Every record of the log, in order.
  std::vector<messages::byte_buffer> records() { return colony::testing::read_log_records(log_); }
  // PodScheduled records per pod in the log.
  std::map<std::string, int> scheduled_in_log() {
    std::map<std::string, int> m;
    for (const auto& r : records()) {
      const auto& env = *wire::GetEnvelope(r.data());
      if (env.payload_type() == wire::Payload::PodScheduled)
        ++m[std::string(messages::to_string_view(env.payload_as_PodScheduled()->pod()))];
    }
    return m;
  }

  std::string work_, kubeconfig_;
  std::string log_;             // "" = WORK/log (a derived fixture may name a Kafka topic)
  std::string state_;           // run_options::state_path ("" = the log's path)
  std::string apiserver_args_;  // extra kube-apiserver flags (e.g. "--watch-cache=false")
};

}  // namespace colony::run::testing
