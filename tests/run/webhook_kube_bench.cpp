// The admission webhooks' latency as the apiserver sees it (the target and the figures:
// docs/results.md "session 10", admission webhooks): pod creates at a fixed rate against a kube.sh
// apiserver, first with colony run serving no webhook, then with its webhooks registered (a
// ClusterColocationProfile selecting every created pod, so each create is mutated and validated),
// and the server-side handling time of admission_webhooks::serve alone. Not a ctest:
// tools/webhook-bench.sh runs it.
//
//   colony_webhook_kube_bench [PODS_PER_PHASE=2000] [RATE=1000] [CLIENTS=16]
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <future>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "bridges/kubernetes/admission_review.hpp"
#include "bridges/kubernetes/api_client.hpp"
#include "bridges/kubernetes/translate.hpp"
#include "bridges/kubernetes/webhook_registration.hpp"
#include "run/admission_webhooks.hpp"
#include "run/cluster_run.hpp"
#include "tests/bridges/kubernetes/kube_peer.hpp"

using json = nlohmann::json;
using namespace colony;
using clk = std::chrono::steady_clock;

namespace {

double pct(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<std::size_t>(p * static_cast<double>(v.size())))];
}

json pod(const std::string& ns, const std::string& name) {
  return {
      {"apiVersion", "v1"},
      {"kind", "Pod"},
      {"metadata",
       {{"name", name},
        {"namespace", ns},
        {"labels", {{"koordinator.sh/enable-colocation", "true"}}}}},
      {"spec",
       {{"containers",
         json::array({{{"name", "c"},
                       {"image", "registry.invalid/pause:3.9"},
                       {"resources", {{"requests", {{"cpu", "500m"}, {"memory", "256Mi"}}}}}}})}}}};
}

struct phase_result {
  std::vector<double> ms;  // create latencies
  std::size_t failed = 0;
  double seconds = 0;
};

// n creates at `rate`/s (open loop: create i is due at t0 + i/rate) on `clients` connections.
phase_result creates(const kube::connection& conn, const std::string& ns, const std::string& prefix,
                     int n, double rate, int clients) {
  phase_result r;
  std::atomic<int> next{0};
  std::mutex mu;
  const auto t0 = clk::now() + std::chrono::milliseconds(100);
  std::vector<std::thread> ts;
  for (int c = 0; c < clients; ++c)
    ts.emplace_back([&] {
      auto cl = kube::api_client::open(conn);
      if (!cl) return;
      std::vector<double> mine;
      std::size_t failed = 0;
      for (int i = next++; i < n; i = next++) {
        std::this_thread::sleep_until(
            t0 + std::chrono::microseconds(static_cast<std::int64_t>(i * 1e6 / rate)));
        const auto s = clk::now();
        auto res = cl->post("/api/v1/namespaces/" + ns + "/pods",
                            pod(ns, prefix + std::to_string(i)).dump());
        mine.push_back(std::chrono::duration<double, std::milli>(clk::now() - s).count());
        if (!res) ++failed;
      }
      std::lock_guard lk(mu);
      r.ms.insert(r.ms.end(), mine.begin(), mine.end());
      r.failed += failed;
    });
  for (auto& t : ts) t.join();
  r.seconds = std::chrono::duration<double>(clk::now() - t0).count();
  return r;
}

void report(const char* what, const phase_result& r) {
  std::printf("%-28s n=%zu failed=%zu achieved=%.0f/s p50=%.2f ms p99=%.2f ms max=%.2f ms\n", what,
              r.ms.size(), r.failed, static_cast<double>(r.ms.size()) / r.seconds, pct(r.ms, 0.5),
              pct(r.ms, 0.99), pct(r.ms, 1.0));
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  const int n = argc > 1 ? std::atoi(argv[1]) : 2000;
  const double rate = argc > 2 ? std::atof(argv[2]) : 1000;
  const int clients = argc > 3 ? std::atoi(argv[3]) : 16;

  // Server side: serve() alone on the review of a selected pod (decode, translate, the
  // component's mutation and validation, JSONPatch, encode).
  {
    run::admission_webhooks hooks;
    for (const auto& [k, o] :
         {std::pair{kube::object_kind::priority_class, json{{"apiVersion", "scheduling.k8s.io/v1"},
                                                            {"kind", "PriorityClass"},
                                                            {"metadata", {{"name", "koord-batch"}}},
                                                            {"value", 5000}}},
          std::pair{kube::object_kind::cluster_colocation_profile,
                    json{{"apiVersion", "config.koordinator.sh/v1alpha1"},
                         {"kind", "ClusterColocationProfile"},
                         {"metadata", {{"name", "colocation"}}},
                         {"spec",
                          {{"selector",
                            {{"matchLabels", {{"koordinator.sh/enable-colocation", "true"}}}}},
                           {"qosClass", "BE"},
                           {"priorityClassName", "koord-batch"}}}}}}) {
      auto evs = kube::translate_added(k, o, event_time{1});
      for (const auto& b : *evs) hooks.feed(b);
    }
    const json rv = {{"apiVersion", "admission.k8s.io/v1"},
                     {"kind", "AdmissionReview"},
                     {"request",
                      {{"uid", "u"},
                       {"kind", {{"group", ""}, {"version", "v1"}, {"kind", "Pod"}}},
                       {"operation", "CREATE"},
                       {"namespace", "bench"},
                       {"object", pod("bench", "p")}}}};
    const std::string body = rv.dump();
    for (const char* path : {"/mutate-pod", "/validate-pod"}) {
      std::vector<double> us;
      for (int i = 0; i < 20000; ++i) {
        const auto s = clk::now();
        auto a = hooks.serve(path, body);
        us.push_back(std::chrono::duration<double, std::micro>(clk::now() - s).count());
        if (a.status != 200) return 1;
      }
      std::printf("server-side serve(%s) n=20000 p50=%.1f us p99=%.1f us\n", path, pct(us, 0.5),
                  pct(us, 0.99));
    }
  }

  std::string why;
  if (!kube::testing::kube_peer::binaries_installed(why)) {
    std::fprintf(stderr, "%s\n", why.c_str());
    return 2;
  }
  auto peer = kube::testing::kube_peer::start("");
  if (!peer) {
    std::fprintf(stderr, "%s\n", peer.error().describe().c_str());
    return 2;
  }
  const auto& conn = (*peer)->conn();
  auto admin = kube::api_client::open(conn);
  for (const char* ns : {"without", "with"})
    (void)admin->post(
        "/api/v1/namespaces",
        json{{"apiVersion", "v1"}, {"kind", "Namespace"}, {"metadata", {{"name", ns}}}}.dump());
  (void)admin->post("/apis/scheduling.k8s.io/v1/priorityclasses",
                    json{{"apiVersion", "scheduling.k8s.io/v1"},
                         {"kind", "PriorityClass"},
                         {"metadata", {{"name", "koord-batch"}}},
                         {"value", 5000}}
                        .dump());
  const std::string crds =
      std::getenv("COLONY_KOORDINATOR_CRDS") ? std::getenv("COLONY_KOORDINATOR_CRDS") : "";
  if (!crds.empty()) {
    const std::string cmd =
        "PYENV_VERSION=system bash tools/peers/kube.sh apply-crds --dir '" + (*peer)->dir() +
        "' '" + crds + "/config.koordinator.sh_clustercolocationprofiles.yaml' >/dev/null 2>&1";
    if (std::system(cmd.c_str()) != 0) std::fprintf(stderr, "apply-crds failed\n");
    (void)admin->post(
        "/apis/config.koordinator.sh/v1alpha1/clustercolocationprofiles",
        json{{"apiVersion", "config.koordinator.sh/v1alpha1"},
             {"kind", "ClusterColocationProfile"},
             {"metadata", {{"name", "colocation"}}},
             {"spec",
              {{"selector", {{"matchLabels", {{"koordinator.sh/enable-colocation", "true"}}}}},
               {"qosClass", "BE"},
               {"priorityClassName", "koord-batch"}}}}
            .dump());
  }
  // Both phases with colony run running (its informers watch every pod either way); only the
  // second serves and registers the webhooks.
  auto run_phase = [&](bool webhooks, const char* ns, const char* label) {
    std::atomic<bool> stop{false};
    std::promise<void> ready;
    auto ready_f = ready.get_future();
    run::run_options o;
    o.kubeconfig = (*peer)->dir() + "/kubeconfig";
    o.log_path = (*peer)->dir() + "/log-" + ns;
    o.stop = [&] { return stop.load(); };
    bool fired = false;
    if (webhooks) {
      o.webhook_addr = "127.0.0.1:0";
      o.webhook_cert_dir = (*peer)->dir() + "/certs";
      o.progress = [&](const std::string& s) {
        if (!fired && s.find("admission webhooks registered") != std::string::npos) {
          fired = true;
          ready.set_value();
        }
      };
    } else {
      ready.set_value();
    }
    result<run::run_stats> out = fail(errc::internal, "not run");
    std::thread t([&] { out = run::run_cluster(o); });
    ready_f.wait();
    std::this_thread::sleep_for(std::chrono::seconds(2));  // informers synced, quiet
    (void)creates(conn, ns, "warm-", 200, rate, clients);
    report(label, creates(conn, ns, "p-", n, rate, clients));
    stop = true;
    t.join();
    if (webhooks && out)
      std::printf("  webhook reviews answered: %llu\n",
                  static_cast<unsigned long long>(out->webhook_reviews));
  };
  run_phase(false, "without", "without webhook");
  run_phase(true, "with", "with webhooks registered");
  return 0;
}
