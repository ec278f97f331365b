// `colony koordlet --kubeconfig` against a real kube-apiserver (label kube): a Node, its NodeSLO
// (as Colony's slo-controller renders it), an LS and a BE pod bound to it, and a fake node (a
// cgroup tree in a temporary folder whose pod directories are named by the pods' uids).
//   - the koordlet's NodeMetric (created by it, status by UpdateStatus) names both pods by
//     namespace/name with the QoS and priority of their labels;
//   - memory pressure on the fake node (MemAvailable drops) makes the component evict the BE pod,
//     carried out through the Eviction API with the pod's uid as precondition: the pod gets a
//     deletionTimestamp, the LS pod does not;
//   - the apiserver killed mid-run: the next NodeMetric write fails with an error naming the URL
//     (stderr and a WriteFailed record caused by the report), the collection goes on, and after a
//     restart the writes succeed again; every report written before the kill is in the log;
//   - a second koordlet on the same log appends no second observation of the same pods and
//     evicts nothing again; the log passes the control plane's audit.
#include <signal.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <future>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "actors/entities/audit.hpp"
#include "bridges/kubernetes/kube_time.hpp"
#include "messages/codec.hpp"
#include "messages/units.hpp"
#include "tests/bridges/kubernetes/kube_api_test.hpp"
#include "tests/cli/drained_process.hpp"
#include "tests/support/log_records.hpp"
#include "tests/support/node_tree.hpp"

namespace colony::agent::testing {
namespace {

using namespace std::chrono_literals;
using json = nlohmann::json;
using steady = std::chrono::steady_clock;
using colony::testing::fake_cgroup;
using colony::testing::node_tree;
using messages::to_string_view;

constexpr std::int64_t gib_kib = 1024 * 1024;

using koordlet_process = colony::testing::drained_process;

class KoordletCluster : public kube::testing::kube_api_test {
 protected:
  const std::string ns = "apps";

  void SetUp() override {
    start_peer(ns);
    if (IsSkipped() || HasFatalFailure()) return;
    using peer = kube::testing::kube_peer;
    auto crds = peer_->apply_crds(
        {peer::crd_file("slo.koordinator.sh_nodemetrics.yaml",
                        "nodemetrics.slo.koordinator.sh.yaml"),
         peer::crd_file("slo.koordinator.sh_nodeslos.yaml", "nodeslos.slo.koordinator.sh.yaml")});
    ASSERT_TRUE(crds) << crds.error().describe();
    work_ = peer_->dir() + "/koordlet";
    std::filesystem::create_directories(work_);
    kubeconfig_ = peer_->dir() + "/kubeconfig";
    log_ = work_ + "/log";
    // The Koordinator PriorityClasses the pods name (the Priority admission plugin resolves them).
    for (const auto& [name, value] :
         {std::pair{"koord-prod", 9500}, std::pair{"koord-batch", 5500}})
      post("/apis/scheduling.k8s.io/v1/priorityclasses",
           json{{"apiVersion", "scheduling.k8s.io/v1"},
                {"kind", "PriorityClass"},
                {"metadata", {{"name", name}}},
                {"value", value}});
    // 4 cores, 8 GiB, with the batch resources Colony's slo-controller would have written.
    const json res = {{"cpu", "4"},
                      {"memory", "8Gi"},
                      {"pods", "110"},
                      {"kubernetes.io/batch-cpu", "2000"},
                      {"kubernetes.io/batch-memory", "4Gi"}};
    post("/api/v1/nodes",
         json{{"apiVersion", "v1"},
              {"kind", "Node"},
              {"metadata", {{"name", node_}}},
              {"status",
               {{"capacity", res},
                {"allocatable", res},
                {"conditions", json::array({{{"type", "Ready"}, {"status", "True"}}})}}}});
    // Colony's slo-controller's rendering for this node (cfsQuota suppression, BE memory evict
    // at 70 %).
    post("/apis/slo.koordinator.sh/v1alpha1/nodeslos",
         json{{"apiVersion", "slo.koordinator.sh/v1alpha1"},
              {"kind", "NodeSLO"},
              {"metadata", {{"name", node_}}},
              {"spec",
               {{"resourceUsedThresholdWithBE",
                 {{"enable", true},
                  {"cpuSuppressPolicy", "cfsQuota"},
                  {"cpuSuppressThresholdPercent", 65},
                  {"memoryEvictThresholdPercent", 70}}}}}});
    ls_uid_ =
        make_pod("ls-1", "LS", "koord-prod", json{{"requests", {{"cpu", "1"}, {"memory", "1Gi"}}}});
    be_uid_ = make_pod(
        "be-1", "BE", "koord-batch",
        json{{"requests",
              {{"kubernetes.io/batch-cpu", "1000"}, {"kubernetes.io/batch-memory", "1Gi"}}},
             {"limits",
              {{"kubernetes.io/batch-cpu", "1000"}, {"kubernetes.io/batch-memory", "1Gi"}}}});
    // The fake node: the pods' cgroups named by their uids (kubelet's cgroupfs names).
    tree_ = std::make_unique<node_tree>(work_ + "/node", koordlet::cgroup_version::v1);
    tree_->write_proc(4, 1000, 5000, 8 * gib_kib, 6 * gib_kib);
    fake_cgroup ls;
    ls.active_anon = 1024 * colony::mib;
    fake_cgroup be;
    be.active_anon = 512 * colony::mib;
    tree_->write_cgroup("kubepods", {});
    tree_->write_cgroup("kubepods/burstable", {});
    tree_->write_cgroup("kubepods/besteffort", {});
    tree_->write_cgroup("kubepods/burstable/pod" + ls_uid_, ls);
    tree_->write_cgroup("kubepods/besteffort/pod" + be_uid_, be);
  }

  std::string make_pod(const std::string& name, const std::string& qos, const std::string& pc,
                       const json& resources) {
    const json p = post(
        "/api/v1/namespaces/" + ns + "/pods",
        json{{"apiVersion", "v1"},
             {"kind", "Pod"},
             {"metadata",
              {{"name", name}, {"namespace", ns}, {"labels", {{"koordinator.sh/qosClass", qos}}}}},
             {"spec",
              {{"nodeName", node_},
               {"priorityClassName", pc},
               {"containers", json::array({{{"name", "c"},
                                            {"image", "registry.invalid/pause:3.9"},
                                            {"resources", resources}}})}}}});
    return p.value("/metadata/uid"_json_pointer, std::string{});
  }

  std::vector<std::string> koordlet_args() {
    return {colony::testing::colony_binary(),
            "koordlet",
            "--node",
            node_,
            "--kubeconfig",
            kubeconfig_,
            "--log",
            log_,
            "--cgroup-root",
            tree_->cgroup_root(),
            "--proc-root",
            tree_->proc_root(),
            "--interval",
            "200ms",
            "--report-every",
            "1s",
            "--feature-gates",
            "BEMemoryEvict=true",
            "--enforce"};
  }

  // The NodeMetric once its status lists `pods` pods (null json when not within the limit).
  json wait_node_metric(std::size_t pods, std::chrono::seconds limit) {
    const auto t0 = steady::now();
    while (steady::now() - t0 < limit) {
      auto r = client_->get("/apis/slo.koordinator.sh/v1alpha1/nodemetrics/" + node_);
      if (r) {
        const json nm = json::parse(r->body);
        if (nm.contains("status") && nm["status"].value("podsMetric", json::array()).size() == pods)
          return nm;
      }
      std::this_thread::sleep_for(200ms);
    }
    return json();
  }
  bool wait_deletion(const std::string& pod, std::chrono::seconds limit) {
    const auto t0 = steady::now();
    while (steady::now() - t0 < limit) {
      if (get("/api/v1/namespaces/" + ns + "/pods/" + pod)["metadata"].contains(
              "deletionTimestamp"))
        return true;
      std::this_thread::sleep_for(200ms);
    }
    return false;
  }
  std::vector<messages::byte_buffer> records() { return colony::testing::read_log_records(log_); }

  const std::string node_ = "n1";
  std::string work_, kubeconfig_, log_, ls_uid_, be_uid_;
  std::unique_ptr<node_tree> tree_;
};

TEST_F(KoordletCluster, ReportsPodsByNameEvictsTheBestEffortPodAndSurvivesTheApiServerGoing) {
  if (IsSkipped() || HasFatalFailure()) return;
  ASSERT_FALSE(ls_uid_.empty());
  ASSERT_FALSE(be_uid_.empty());
  std::string written_update_time;
  {
    koordlet_process k(koordlet_args());
    // 1. The NodeMetric names the pods the cgroups show, by the API server's names.
    const json nm = wait_node_metric(2, 90s);
    ASSERT_TRUE(nm.is_object()) << k.output();
    EXPECT_EQ(nm["spec"]["metricCollectPolicy"]["aggregateDurationSeconds"], 300);
    const auto& pods = nm["status"]["podsMetric"];
    ASSERT_EQ(pods.size(), 2u) << nm.dump();
    // Sorted by namespace/name: apps/be-1, apps/ls-1.
    EXPECT_EQ(pods[0]["namespace"], ns);
    EXPECT_EQ(pods[0]["name"], "be-1");
    EXPECT_EQ(pods[0]["qos"], "BE");
    EXPECT_EQ(pods[0]["priority"], "koord-batch");
    EXPECT_EQ(pods[0]["podUsage"]["resources"]["memory"], "512Mi");
    EXPECT_EQ(pods[1]["namespace"], ns);
    EXPECT_EQ(pods[1]["name"], "ls-1");
    EXPECT_EQ(pods[1]["qos"], "LS");
    EXPECT_EQ(pods[1]["priority"], "koord-prod");
    EXPECT_EQ(pods[1]["podUsage"]["resources"]["memory"], "1Gi");
    EXPECT_EQ(nm["status"]["nodeMetric"]["nodeUsage"]["resources"]["memory"], "2Gi");
    // 25 % of memory in use: nobody evicted.
    EXPECT_FALSE(
        get("/api/v1/namespaces/" + ns + "/pods/be-1")["metadata"].contains("deletionTimestamp"));

    // 2. Memory pressure: 7 of 8 GiB in use, above the NodeSLO's 70 %.
    tree_->write_proc(4, 1000, 5000, 8 * gib_kib, 1 * gib_kib);
    ASSERT_TRUE(wait_deletion("be-1", 60s)) << k.output();
    EXPECT_FALSE(
        get("/api/v1/namespaces/" + ns + "/pods/ls-1")["metadata"].contains("deletionTimestamp"));
    const auto evicted_at =
        k.wait_output("eviction " + ns + "/be-1 written: evicted (HTTP 201", 0, 30s);
    EXPECT_NE(evicted_at, std::string::npos) << k.output();

    // 3. The API server goes away mid-run.
    auto before = client_->get("/apis/slo.koordinator.sh/v1alpha1/nodemetrics/" + node_);
    ASSERT_TRUE(before) << before.error().describe();
    written_update_time = json::parse(before->body)["status"]["updateTime"].get<std::string>();
    const std::size_t mark = k.output().size();
    ASSERT_TRUE(peer_->kill_apiserver());
    const auto failed_at = k.wait_output(
        "node-metric " + node_ + " FAILED: NodeMetric " + node_ + " status: ", mark, 90s);
    ASSERT_NE(failed_at, std::string::npos) << k.output();
    EXPECT_NE(k.output().find("(unavailable)", failed_at), std::string::npos) << k.output();
    EXPECT_NE(k.output().find("API server not reachable or refusing", mark), std::string::npos)
        << k.output();
    // Back: the reports are written again.
    ASSERT_TRUE(peer_->restart_apiserver());
    EXPECT_NE(k.wait_output("node-metric " + node_ + " written", failed_at, 90s), std::string::npos)
        << k.output();
    EXPECT_EQ(k.stop(30s), 0) << k.output();
  }

  const auto recs = records();
  std::size_t submitted = 0, scheduled = 0, evicted = 0, failed = 0, reports = 0;
  bool written_report_logged = false;
  std::vector<std::uint64_t> report_offsets;
  for (const auto& r : recs) {
    const auto& env = *wire::GetEnvelope(r.data());
    switch (env.payload_type()) {
      case wire::Payload::PodSubmitted:
        ++submitted;
        EXPECT_EQ(to_string_view(env.source()), "bridge/k8s");
        break;
      case wire::Payload::PodScheduled:
        ++scheduled;
        EXPECT_EQ(env.payload_as_PodScheduled()->proposal_offset(), -1);  // observed, not decided
        break;
      case wire::Payload::PodEvicted: {
        ++evicted;
        const auto* e = env.payload_as_PodEvicted();
        EXPECT_EQ(to_string_view(e->pod()), ns + "/be-1");
        EXPECT_EQ(e->reason(), wire::EvictionReason::MemoryEvict);
        EXPECT_EQ(to_string_view(e->message()), "trigger by koordlet feature BEMemoryEvict");
        EXPECT_EQ(to_string_view(env.source()), "koordlet/" + node_);
        break;
      }
      case wire::Payload::NodeMetricReported:
        ++reports;
        report_offsets.push_back(env.offset());
        if (kube::rfc3339(env.payload_as_NodeMetricReported()->update_time_ms()) ==
            written_update_time)
          written_report_logged = true;
        break;
      case wire::Payload::WriteFailed: {
        const auto* w = env.payload_as_WriteFailed();
        if (w->write() != wire::WriteKind::node_metric) break;
        ++failed;
        EXPECT_NE(to_string_view(w->message())
                      .find("/apis/slo.koordinator.sh/v1alpha1/nodemetrics/" + node_),
                  std::string_view::npos)
            << to_string_view(w->message());
        // Caused by a report of this log, logged before it.
        EXPECT_TRUE(std::binary_search(report_offsets.begin(), report_offsets.end(),
                                       static_cast<std::uint64_t>(env.causation())));
        break;
      }
      default:
        break;
    }
  }
  EXPECT_EQ(submitted, 2u);
  EXPECT_EQ(scheduled, 2u);
  EXPECT_EQ(evicted, 1u);
  EXPECT_GE(failed, 1u);
  EXPECT_GE(reports, 3u);
  EXPECT_TRUE(written_report_logged) << "the report the API server held before the kill ("
                                     << written_update_time << ") is not in the log";

  // 4. A second koordlet over the same log: the pods are not observed twice, nothing is evicted
  // again.
  {
    koordlet_process k(koordlet_args());
    EXPECT_NE(k.wait_output("node-metric " + node_ + " written", 0, 90s), std::string::npos)
        << k.output();
    EXPECT_EQ(k.stop(30s), 0) << k.output();
  }
  const auto again = records();
  ASSERT_GT(again.size(), recs.size());
  std::size_t submitted2 = 0, scheduled2 = 0, evicted2 = 0;
  for (const auto& r : again) {
    const auto t = wire::GetEnvelope(r.data())->payload_type();
    submitted2 += t == wire::Payload::PodSubmitted ? 1 : 0;
    scheduled2 += t == wire::Payload::PodScheduled ? 1 : 0;
    evicted2 += t == wire::Payload::PodEvicted ? 1 : 0;
  }
  EXPECT_EQ(submitted2, 2u);
  EXPECT_EQ(scheduled2, 2u);
  EXPECT_EQ(evicted2, 1u);

  // The control plane's invariants over the node's log (its bindings are observed: no proposal
  // answers them, and no decision-less observation breaks a rule).
  entities::audit_options ao;
  ao.decisions_need_causation = false;  // the observed bindings are PodScheduled without cause
  ao.at_rest = false;
  const auto rep = entities::audit_log(again, ao);
  EXPECT_TRUE(rep.clean()) << rep.describe();
  EXPECT_EQ(rep.unproposed_bindings, 2u);
  EXPECT_EQ(rep.evictions, 1u);
}

// An eviction logged but never carried out (a stop between the append and the write) is carried
// out at the next start: here a dry run logs it under memory pressure, and the sink position file
// says nothing after offset 0 was answered, as after a crash. The pressure is gone before the
// restart, so only the carried-over decision can evict the pod; the restart logs no second
// PodEvicted, and a third start (position saved) carries out nothing again.
TEST_F(KoordletCluster, AnEvictionLoggedBeforeAStopIsCarriedOutAtTheNextStart) {
  if (IsSkipped() || HasFatalFailure()) return;
  auto dry = koordlet_args();
  dry.pop_back();  // no --enforce: decisions logged, nothing carried out
  tree_->write_proc(4, 1000, 5000, 8 * gib_kib, 1 * gib_kib);  // 7 of 8 GiB: above 70 %
  {
    koordlet_process k(dry);
    auto evicted = [&] {
      if (!std::filesystem::exists(log_ + "/CURRENT")) return false;  // not created yet
      for (const auto& r : records())
        if (wire::GetEnvelope(r.data())->payload_type() == wire::Payload::PodEvicted) return true;
      return false;
    };
    const auto t0 = steady::now();
    while (steady::now() - t0 < 60s && !evicted()) std::this_thread::sleep_for(200ms);
    EXPECT_EQ(k.stop(30s), 0) << k.output();
    ASSERT_TRUE(evicted()) << k.output();
  }
  EXPECT_FALSE(
      get("/api/v1/namespaces/" + ns + "/pods/be-1")["metadata"].contains("deletionTimestamp"));
  tree_->write_proc(4, 1000, 5000, 8 * gib_kib, 6 * gib_kib);  // the pressure is gone
  std::ofstream(log_ + ".sink-position") << "0\n";             // as a crash leaves it
  {
    koordlet_process k(koordlet_args());
    EXPECT_TRUE(wait_deletion("be-1", 60s)) << k.output();
    EXPECT_NE(k.wait_output("eviction " + ns + "/be-1 written: evicted (HTTP 201", 0, 30s),
              std::string::npos)
        << k.output();
    EXPECT_EQ(k.stop(30s), 0) << k.output();
    EXPECT_NE(k.output().find("(1 carried over from before a stop)"), std::string::npos)
        << k.output();
  }
  std::size_t evictions = 0;
  for (const auto& r : records())
    evictions += wire::GetEnvelope(r.data())->payload_type() == wire::Payload::PodEvicted ? 1 : 0;
  EXPECT_EQ(evictions, 1u);
  {
    koordlet_process k(koordlet_args());
    EXPECT_NE(k.wait_output("node-metric " + node_ + " written", 0, 90s), std::string::npos)
        << k.output();
    EXPECT_EQ(k.stop(30s), 0) << k.output();
    EXPECT_NE(k.output().find("(0 carried over from before a stop)"), std::string::npos)
        << k.output();
  }
}

}  // namespace
}  // namespace colony::agent::testing
