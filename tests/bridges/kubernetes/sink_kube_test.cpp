// decision_sink against a real kube-apiserver + etcd (label kube): decisions become bindings,
// pod conditions, Events, node status and evictions, and a replay of the same records changes
// nothing. Each test starts its own apiserver (kube_peer.hpp). docs/kubernetes-bridge.md "Sinks".
#include <gtest/gtest.h>

#include <stdio.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "bridges/kubernetes/api_client.hpp"
#include "bridges/kubernetes/sink.hpp"
#include "messages/quantity.hpp"
#include "tests/bridges/kubernetes/kube_api_test.hpp"
#include "tests/bridges/kubernetes/kube_peer.hpp"
#include "tests/bridges/kubernetes/sink_records.hpp"

namespace colony::kube {
namespace {

using json = nlohmann::json;
using std::chrono::milliseconds;
using testing::kube_peer;
namespace rec = testing;

double since_s(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// stdout of a shell command; rc in *rc.
std::string run_sh(const std::string& cmd, int* rc = nullptr) {
  FILE* p = ::popen(cmd.c_str(), "r");
  if (p == nullptr) return {};
  std::string out;
  char buf[4096];
  while (std::size_t n = std::fread(buf, 1, sizeof buf, p)) out.append(buf, n);
  const int st = ::pclose(p);
  if (rc != nullptr) *rc = st;
  return out;
}

std::string kube_sh() {
  const char* v = std::getenv("COLONY_KUBE_SH");
  return v != nullptr && *v != '\0' ? v : COLONY_KUBE_SH_DEFAULT;
}

class KubeSink : public testing::kube_api_test {
 protected:
  const std::string ns = "colony-sink";

  // The ElasticQuota CRD: a minimal one of Colony's (the group, kind and scope of Koordinator's,
  // no schema: the sink's writes are what is under test, and Koordinator's CRDs need not be
  // beside the checkout).
  void create_elastic_quota_crd() {
    post("/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
         json::parse(R"({"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition",
         "metadata":{"name":"elasticquotas.scheduling.sigs.k8s.io",
           "annotations":{"api-approved.kubernetes.io":
             "https://github.com/kubernetes-sigs/scheduler-plugins/pull/52"}},
         "spec":{"group":"scheduling.sigs.k8s.io","scope":"Namespaced",
           "names":{"plural":"elasticquotas","singular":"elasticquota","kind":"ElasticQuota",
                    "listKind":"ElasticQuotaList"},
           "versions":[{"name":"v1alpha1","served":true,"storage":true,
             "schema":{"openAPIV3Schema":{"type":"object",
                                          "x-kubernetes-preserve-unknown-fields":true}}}]}})"));
  }

  void SetUp() override {
    start_peer(ns);
    if (IsSkipped() || HasFatalFailure()) return;
    // Koordinator's PriorityClasses (koord-prod 9000 ... koord-free 3000), as a cluster has them.
    int rc = 0;
    const std::string pcs = run_sh("PYENV_VERSION=system bash '" + kube_sh() +
                                       "' priority-classes --dir '" + peer_->dir() + "' 2>&1",
                                   &rc);
    ASSERT_EQ(rc, 0) << pcs;
    ASSERT_NE(pcs.find("koord-batch 5000"), std::string::npos) << pcs;
    // kubectl and the kubeconfig, for the checks a user would make.
    std::istringstream env(
        run_sh("PYENV_VERSION=system bash '" + kube_sh() + "' env --dir '" + peer_->dir() + "'"));
    for (std::string l; std::getline(env, l);) {
      if (l.rfind("KUBECTL=", 0) == 0) kubectl_ = l.substr(8);
      if (l.rfind("KUBECONFIG=", 0) == 0) kubeconfig_ = l.substr(11);
    }
  }

  void make_node(const std::string& name) {
    post("/api/v1/nodes",
         json{{"apiVersion", "v1"},
              {"kind", "Node"},
              {"metadata", {{"name", name}}},
              {"status",
               {{"capacity", {{"cpu", "32"}, {"memory", "128Gi"}, {"pods", "110"}}},
                {"allocatable", {{"cpu", "31"}, {"memory", "120Gi"}, {"pods", "110"}}}}}});
  }
  // A koord-batch BE pod for koord-scheduler, as Koordinator's webhook leaves it.
  void make_pod(const std::string& name, const std::string& app = "colony-sink") {
    post("/api/v1/namespaces/" + ns + "/pods",
         json{{"apiVersion", "v1"},
              {"kind", "Pod"},
              {"metadata",
               {{"name", name},
                {"namespace", ns},
                {"labels", {{"app", app}, {"koordinator.sh/qosClass", "BE"}}}}},
              {"spec",
               {{"schedulerName", "koord-scheduler"},
                {"priorityClassName", "koord-batch"},
                {"containers", json::array({{{"name", "c"},
                                             {"image", "registry.invalid/pause:3.9"},
                                             {"resources",
                                              {{"requests",
                                                {{"kubernetes.io/batch-cpu", "100"},
                                                 {"kubernetes.io/batch-memory", "64Mi"}}},
                                               {"limits",
                                                {{"kubernetes.io/batch-cpu", "100"},
                                                 {"kubernetes.io/batch-memory", "64Mi"}}}}}}})}}}});
  }
  std::string pod_path(const std::string& name) const {
    return "/api/v1/namespaces/" + ns + "/pods/" + name;
  }
  std::string node_of(const std::string& pod) {
    return get(pod_path(pod)).value("/spec/nodeName"_json_pointer, std::string{});
  }
  // What a kubelet would write once the containers run and are ready (no kubelet here,
  // docs/peers.md B.5). Ready matters: a budget lets a not-ready pod go while it is healthy
  // (eviction.go, unhealthyPodEvictionPolicy IfHealthyBudget).
  void set_running(const std::string& pod) {
    auto r = client_->patch(
        pod_path(pod) + "/status", patch_type::strategic,
        R"({"status":{"phase":"Running","conditions":[{"type":"Ready","status":"True"}]}})");
    ASSERT_TRUE(r) << r.error().describe();
  }
  std::string kubectl(const std::string& args) {
    if (kubectl_.empty()) return "(no kubectl)";
    return run_sh("'" + kubectl_ + "' --kubeconfig '" + kubeconfig_ + "' " + args + " 2>&1");
  }
  static sink_options fast() {
    sink_options o;
    o.backoff_initial = milliseconds(50);
    o.backoff_cap = milliseconds(200);
    o.seed = 3;
    return o;
  }
  decision_sink open_sink(sink_options o = fast()) {
    auto s = decision_sink::open(peer_->conn(), std::move(o));
    EXPECT_TRUE(s) << s.error().describe();
    return std::move(*s);
  }
  static std::vector<write_outcome> apply(decision_sink& s, const messages::byte_buffer& b) {
    auto r = s.apply(b);
    EXPECT_TRUE(r) << r.error().describe();
    return r ? *r : std::vector<write_outcome>{};
  }
  static std::int64_t q(const json& obj, const std::string& ptr) {
    auto v = k8s::parse_quantity_value(obj.value(json::json_pointer(ptr), std::string{"-1"}));
    return v ? *v : -2;
  }

  std::string kubectl_, kubeconfig_;
};

TEST_F(KubeSink, BindsPodsAndAReplayBindsNothingTwice) {
  make_node("n1");
  make_node("n2");
  std::vector<messages::byte_buffer> log;
  std::map<std::string, std::string> want;
  for (int i = 0; i < 6; ++i) {
    const std::string pod = "p" + std::to_string(i);
    make_pod(pod);
    want[pod] = i % 2 == 0 ? "n1" : "n2";
    log.push_back(rec::pod_scheduled(10 + 2 * i, ns + "/" + pod, want[pod]));
    log.push_back(rec::pod_started(11 + 2 * i, ns + "/" + pod, want[pod]));  // ignored
  }
  auto sink = open_sink();
  for (const auto& r : log) {
    for (const auto& o : apply(sink, r)) {
      EXPECT_TRUE(o.ok) << o.message;
      EXPECT_TRUE(o.wrote);
      EXPECT_EQ(o.http_status, 201);
      EXPECT_EQ(o.kind, write_kind::binding);
    }
  }
  EXPECT_EQ(sink.counters().writes, 6u);
  EXPECT_EQ(sink.counters().ignored, 6u);
  std::map<std::string, std::string> rvs;
  for (const auto& [pod, node] : want) {
    const json p = get(pod_path(pod));
    EXPECT_EQ(p["spec"]["nodeName"], node) << pod;
    rvs[pod] = p["metadata"]["resourceVersion"];
  }
  const std::string table = kubectl("get pods -n " + ns +
                                    " -o custom-columns=NAME:.metadata.name,NODE:.spec.nodeName "
                                    "--no-headers");
  std::cout << "kubectl get pods:\n" << table;
  if (!kubectl_.empty()) {
    std::istringstream lines(table);
    std::map<std::string, std::string> shown;
    for (std::string name, node; lines >> name >> node;) shown[name] = node;
    EXPECT_EQ(shown, want) << table;
  }

  // A restarted sink replays from the start: every binding is found done, nothing written.
  auto again = open_sink();
  for (const auto& r : log) {
    for (const auto& o : apply(again, r)) {
      EXPECT_TRUE(o.ok) << o.message;
      EXPECT_FALSE(o.wrote);
      EXPECT_EQ(o.http_status, 409);
      EXPECT_NE(o.message.find("already bound to"), std::string::npos) << o.message;
    }
  }
  EXPECT_EQ(again.counters().writes, 0u);
  EXPECT_EQ(again.counters().skipped, 6u);
  for (const auto& [pod, node] : want)
    EXPECT_EQ(get(pod_path(pod))["metadata"]["resourceVersion"], rvs[pod])
        << "replay changed " << pod;

  // A decision to bind a pod that is bound elsewhere is a failed outcome naming both nodes.
  const auto out = apply(again, rec::pod_scheduled(99, ns + "/p0", "n2"));
  ASSERT_EQ(out.size(), 1u);
  EXPECT_FALSE(out[0].ok);
  EXPECT_EQ(out[0].offset, 99u);
  EXPECT_EQ(out[0].http_status, 409);
  EXPECT_EQ(out[0].message, "pod " + ns + "/p0 is bound to node n1, not to node n2 as decided");
  EXPECT_EQ(node_of("p0"), "n1");
  EXPECT_EQ(again.counters().failed, 1u);

  // A pod that does not exist: failed, 404.
  const auto missing = apply(again, rec::pod_scheduled(100, ns + "/nope", "n1"));
  ASSERT_EQ(missing.size(), 1u);
  EXPECT_FALSE(missing[0].ok);
  EXPECT_EQ(missing[0].http_status, 404);
}

// NodeNUMAResource's allocation reaches the pod with its binding: the API server copies the
// Binding's scheduling.koordinator.sh/resource-status annotation onto the pod (as Koordinator's
// PreBind leaves it there), in the same write.
TEST_F(KubeSink, TheBindingCarriesTheCpusetAsResourceStatus) {
  make_node("n1");
  make_pod("lsr");
  messages::event_builder b;
  auto& fbb = b.fbb();
  auto pod = fbb.CreateString(ns + "/lsr");
  auto node = fbb.CreateString("n1");
  auto rq = b.resources({});
  auto sched = fbb.CreateString("koord-scheduler/a");
  auto cpus = fbb.CreateString("0-1,96-97");
  std::vector<flatbuffers::Offset<wire::NumaNodeResource>> v = {
      wire::CreateNumaNodeResource(fbb, 0, 4000, std::int64_t{8} << 30)};
  auto numa = fbb.CreateVector(v);
  auto ps = wire::CreatePodScheduled(fbb, pod, node, 1, rq, 0, sched, 0, cpus, numa);
  const auto rec = rec::with_offset(
      b.finish(messages::header{event_time{2}, wire::EntityKind::Node, "n1", 1, "node"}, ps), 2);
  auto sink = open_sink();
  const auto out = apply(sink, rec);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_TRUE(out[0].ok) << out[0].message;
  const json p = get(pod_path("lsr"));
  EXPECT_EQ(p["spec"]["nodeName"], "n1");
  const std::string rs =
      p.value("/metadata/annotations/scheduling.koordinator.sh~1resource-status"_json_pointer,
              std::string{});
  ASSERT_FALSE(rs.empty()) << p.dump();
  EXPECT_EQ(json::parse(rs), json::parse(R"({"cpuset":"0-1,96-97","numaNodeResources":[
              {"node":0,"resources":{"cpu":"4","memory":"8Gi"}}]})"));
}

TEST_F(KubeSink, UnschedulableSetsTheConditionAndAFailedSchedulingEvent) {
  make_node("n1");
  make_pod("big");
  make_pod("later-bound");
  const std::vector<rec::reason_row> rows = {
      {"NodeResourcesFit", "Insufficient kubernetes.io/batch-cpu", 1}};
  const std::string msg = "0/1 nodes are available: 1 Insufficient kubernetes.io/batch-cpu.";
  auto sink = open_sink();
  const auto out = apply(sink, rec::pod_unschedulable(20, ns + "/big", rows));
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].kind, write_kind::pod_condition);
  EXPECT_TRUE(out[0].ok && out[0].wrote) << out[0].message;
  EXPECT_EQ(out[1].kind, write_kind::event);
  EXPECT_TRUE(out[1].ok && out[1].wrote) << out[1].message;
  EXPECT_EQ(out[1].http_status, 201);

  const json pod = get(pod_path("big"));
  bool found = false;
  for (const auto& c : pod["status"]["conditions"]) {
    if (c["type"] != "PodScheduled") continue;
    found = true;
    EXPECT_EQ(c["status"], "False");
    EXPECT_EQ(c["reason"], "Unschedulable");
    EXPECT_EQ(c["message"], msg);
  }
  EXPECT_TRUE(found) << pod["status"].dump();
  const std::string rv = pod["metadata"]["resourceVersion"];

  std::string sel = "/api/v1/namespaces/" + ns + "/events";
  add_query(sel, "fieldSelector", "involvedObject.name=big,reason=FailedScheduling");
  const json events = get(sel);
  ASSERT_EQ(events["items"].size(), 1u) << events.dump();
  const json& ev = events["items"][0];
  EXPECT_EQ(ev["type"], "Warning");
  EXPECT_EQ(ev["message"], msg);
  EXPECT_EQ(ev["involvedObject"]["kind"], "Pod");
  EXPECT_EQ(ev["involvedObject"]["uid"], pod["metadata"]["uid"]);
  EXPECT_EQ(ev["reportingComponent"], "koord-scheduler");
  EXPECT_EQ(ev["source"]["component"], "koord-scheduler");
  const std::string described = kubectl("get events -n " + ns +
                                        " --field-selector "
                                        "involvedObject.name=big -o wide");
  std::cout << "kubectl get events:\n" << described;
  if (!kubectl_.empty()) {
    EXPECT_NE(described.find("FailedScheduling"), std::string::npos) << described;
    EXPECT_NE(described.find(msg), std::string::npos) << described;
  }

  // Replay: the condition is there and the Event exists: nothing written.
  auto again = open_sink();
  const auto replay = apply(again, rec::pod_unschedulable(20, ns + "/big", rows));
  ASSERT_EQ(replay.size(), 2u);
  for (const auto& o : replay) {
    EXPECT_TRUE(o.ok) << o.message;
    EXPECT_FALSE(o.wrote) << o.message;
  }
  EXPECT_EQ(replay[1].http_status, 409);
  EXPECT_EQ(get(pod_path("big"))["metadata"]["resourceVersion"], rv);
  EXPECT_EQ(get(sel)["items"].size(), 1u);

  // A newer attempt with another message updates the condition and adds its own Event.
  const std::vector<rec::reason_row> rows2 = {
      {"NodeResourcesFit", "Insufficient kubernetes.io/batch-memory", 1}};
  const auto upd = apply(again, rec::pod_unschedulable(30, ns + "/big", rows2));
  ASSERT_EQ(upd.size(), 2u);
  EXPECT_TRUE(upd[0].wrote && upd[1].wrote);
  EXPECT_TRUE(has_unschedulable_condition(
      get(pod_path("big")), "0/1 nodes are available: 1 Insufficient kubernetes.io/batch-memory."));
  EXPECT_EQ(get(sel)["items"].size(), 2u);

  // An old record for a pod bound since: nothing that would undo the binding's condition.
  ASSERT_FALSE(apply(again, rec::pod_scheduled(40, ns + "/later-bound", "n1")).empty());
  const auto stale = apply(again, rec::pod_unschedulable(21, ns + "/later-bound", rows));
  ASSERT_EQ(stale.size(), 2u);
  EXPECT_TRUE(stale[0].ok && !stale[0].wrote && stale[1].ok && !stale[1].wrote);
  EXPECT_FALSE(has_unschedulable_condition(get(pod_path("later-bound")), msg));
  EXPECT_GE(sink.counters().writes + again.counters().writes, 5u);
}

TEST_F(KubeSink, NodeStatusCarriesBatchResources) {
  make_node("n1");
  auto sink = open_sink();
  const std::int64_t mem = 17'236'565'027;
  const auto out = apply(sink, rec::node_batch(50, "n1", 8000, mem));
  ASSERT_EQ(out.size(), 1u);
  EXPECT_TRUE(out[0].ok && out[0].wrote) << out[0].message;
  EXPECT_EQ(out[0].http_status, 200);
  json node = get("/api/v1/nodes/n1");
  for (const char* f : {"capacity", "allocatable"}) {
    const std::string base = std::string("/status/") + f + "/kubernetes.io~1";
    // The server renders canonical quantities: 8000 comes back as "8k".
    EXPECT_EQ(node.value(json::json_pointer(base + "batch-cpu"), std::string{}), "8k") << f;
    EXPECT_EQ(q(node, base + "batch-cpu"), 8000) << f;
    EXPECT_EQ(q(node, base + "batch-memory"), mem) << f;
    EXPECT_FALSE(node["status"][f].contains("kubernetes.io/mid-cpu")) << f;
    EXPECT_EQ(node["status"][f]["cpu"].is_string(), true) << "other resources stay";
  }
  const std::string shown =
      kubectl("get node n1 -o 'jsonpath={.status.allocatable.kubernetes\\.io/batch-cpu}'");
  std::cout << "kubectl batch-cpu: " << shown << "\n";
  if (!kubectl_.empty()) {
    EXPECT_EQ(shown, "8k");
  }
  const std::string rv = node["metadata"]["resourceVersion"];

  // Replay: same values, no write.
  auto again = open_sink();
  const auto replay = apply(again, rec::node_batch(50, "n1", 8000, mem));
  ASSERT_EQ(replay.size(), 1u);
  EXPECT_TRUE(replay[0].ok);
  EXPECT_FALSE(replay[0].wrote);
  EXPECT_EQ(get("/api/v1/nodes/n1")["metadata"]["resourceVersion"], rv);

  // New values with mid resources: written; mid then follows, to 0 included.
  const auto mid = apply(again, rec::node_batch(60, "n1", 6500, 8ll << 30, 1500, 2ll << 30));
  ASSERT_EQ(mid.size(), 1u);
  EXPECT_TRUE(mid[0].wrote) << mid[0].message;
  node = get("/api/v1/nodes/n1");
  EXPECT_EQ(q(node, "/status/allocatable/kubernetes.io~1batch-cpu"), 6500);
  EXPECT_EQ(q(node, "/status/capacity/kubernetes.io~1mid-cpu"), 1500);
  EXPECT_EQ(q(node, "/status/allocatable/kubernetes.io~1mid-memory"), 2ll << 30);
  const auto zero = apply(again, rec::node_batch(70, "n1", 6500, 8ll << 30));
  ASSERT_EQ(zero.size(), 1u);
  EXPECT_TRUE(zero[0].wrote);
  EXPECT_EQ(q(get("/api/v1/nodes/n1"), "/status/allocatable/kubernetes.io~1mid-cpu"), 0);
  const auto missing = apply(again, rec::node_batch(80, "nope", 1, 1));
  ASSERT_EQ(missing.size(), 1u);
  EXPECT_FALSE(missing[0].ok);
  EXPECT_EQ(missing[0].http_status, 404);
}

// NodeSLOUpdated -> the NodeSLO named after the node (slo.koordinator.sh/v1alpha1), created, then
// updated when the spec changes, untouched when it does not; without the CRD the write is done
// (nothing to write to) and no failure. Koordinator's own CRD (config/crd/bases in
// koordinator-sh/koordinator, applied by kube.sh apply-crds; docs/peers.md), so that its schema's
// pruning and validation see the spec.
TEST_F(KubeSink, NodeSloIsCreatedThenUpdatedAndWithoutItsCrdSkipped) {
  make_node("n1");
  const std::string spec1 =
      R"({"cpuBurstStrategy":{"cfsQuotaBurstPercent":300,"cfsQuotaBurstPeriodSeconds":-1,)"
      R"("cpuBurstPercent":1000,"policy":"none","sharePoolThresholdPercent":50},)"
      R"("resourceQOSStrategy":{"lsClass":{"cpuQOS":{"enable":true,"groupIdentity":2}}},)"
      R"("resourceUsedThresholdWithBE":{"cpuEvictPolicy":"evictByRealLimit",)"
      R"("cpuSuppressPolicy":"cpuset","cpuSuppressThresholdPercent":65,"enable":true,)"
      R"("memoryEvictThresholdPercent":70},"systemStrategy":{"totalNetworkBandwidth":"0"}})";
  {
    auto none = open_sink();
    const auto o = apply(none, rec::node_slo_updated(20, "n1", spec1));
    ASSERT_EQ(o.size(), 1u);
    EXPECT_TRUE(o[0].ok) << o[0].message;
    EXPECT_FALSE(o[0].wrote);
    EXPECT_EQ(o[0].http_status, 404);
    EXPECT_EQ(o[0].kind, write_kind::node_slo);
    // Remembered: the next record asks nothing.
    const auto requests = none.counters().requests;
    const auto o2 = apply(none, rec::node_slo_updated(21, "n1", spec1));
    ASSERT_EQ(o2.size(), 1u);
    EXPECT_TRUE(o2[0].ok);
    EXPECT_EQ(none.counters().requests, requests);
    EXPECT_EQ(none.counters().failed, 0u);
  }
  const std::string crd =
      kube_peer::crd_file("slo.koordinator.sh_nodeslos.yaml", "nodeslos.slo.koordinator.sh.yaml");
  auto applied = peer_->apply_crds({crd});
  ASSERT_TRUE(applied) << applied.error().describe();

  auto sink = open_sink();
  const std::string path = "/apis/slo.koordinator.sh/v1alpha1/nodeslos/n1";
  auto o = apply(sink, rec::node_slo_updated(30, "n1", spec1));
  ASSERT_EQ(o.size(), 1u);
  EXPECT_TRUE(o[0].ok && o[0].wrote) << o[0].message;
  EXPECT_EQ(o[0].http_status, 201);
  json got = get(path);
  EXPECT_EQ(got["spec"], json::parse(spec1));
  EXPECT_FALSE(got["metadata"].contains("namespace"));
  const std::string rv = got["metadata"]["resourceVersion"];
  const std::string shown = kubectl(
      "get nodeslo n1 -o "
      "'jsonpath={.spec.resourceUsedThresholdWithBE.cpuSuppressThresholdPercent}'");
  std::cout << "kubectl nodeslo n1 cpuSuppressThresholdPercent: " << shown << "\n";
  if (!kubectl_.empty()) {
    EXPECT_EQ(shown, "65");
  }

  // The same spec again (a replay): read, equal, nothing written.
  o = apply(sink, rec::node_slo_updated(30, "n1", spec1));
  ASSERT_EQ(o.size(), 1u);
  EXPECT_TRUE(o[0].ok);
  EXPECT_FALSE(o[0].wrote) << o[0].message;
  EXPECT_EQ(get(path)["metadata"]["resourceVersion"], rv);

  // A changed spec: an update of the whole spec (a field gone is gone).
  json spec2 = json::parse(spec1);
  spec2["resourceUsedThresholdWithBE"]["cpuSuppressThresholdPercent"] = 40;
  spec2["resourceQOSStrategy"] = json::object();
  o = apply(sink, rec::node_slo_updated(31, "n1", spec2.dump()));
  ASSERT_EQ(o.size(), 1u);
  EXPECT_TRUE(o[0].ok && o[0].wrote) << o[0].message;
  EXPECT_EQ(o[0].http_status, 200);
  got = get(path);
  EXPECT_EQ(got["spec"]["resourceUsedThresholdWithBE"]["cpuSuppressThresholdPercent"], 40);
  EXPECT_EQ(got["spec"]["resourceQOSStrategy"], json::object());

  // Created meanwhile by someone else (a sink that last saw no CRD, a second controller): the
  // create answers 409 AlreadyExists and the sink updates instead. Here: another node's NodeSLO
  // made by hand between two applies is found and updated.
  post("/apis/slo.koordinator.sh/v1alpha1/nodeslos",
       json{{"apiVersion", "slo.koordinator.sh/v1alpha1"},
            {"kind", "NodeSLO"},
            {"metadata", {{"name", "n2"}}},
            {"spec", {{"cpuBurstStrategy", {{"policy", "auto"}}}}}});
  o = apply(sink, rec::node_slo_updated(32, "n2", spec1));
  ASSERT_EQ(o.size(), 1u);
  EXPECT_TRUE(o[0].ok && o[0].wrote) << o[0].message;
  EXPECT_EQ(get("/apis/slo.koordinator.sh/v1alpha1/nodeslos/n2")["spec"], json::parse(spec1));
  EXPECT_EQ(sink.counters().failed, 0u);
}

// A tree root written by koord-manager's profile controller -> the ElasticQuota created in its
// namespace; the same record again writes nothing; a changed min and a new annotation are one
// merge patch that keeps what others set; the bridge's observation of the object is not written.
TEST_F(KubeSink, ProfileControllersTreeRootIsCreatedThenUpdated) {
  create_elastic_quota_crd();
  const std::string path =
      "/apis/scheduling.sigs.k8s.io/v1alpha1/namespaces/" + ns + "/elasticquotas/gpu-root";
  resource_list min, max;
  min.cpu_milli = 48'000;
  min.memory_bytes = 192ll << 30;
  max.cpu_milli = 4'000'000;
  max.memory_bytes = 1ll << 40;
  const std::vector<std::pair<std::string, std::string>> labels = {
      {"quota.scheduling.koordinator.sh/is-root", "true"},
      {"quota.scheduling.koordinator.sh/tree-id", "7"}};
  std::vector<std::pair<std::string, std::string>> ann = {
      {"quota.scheduling.koordinator.sh/total-resource", R"({"cpu":"48","memory":"192Gi"})"}};
  // The CRD is served a moment after it is created.
  const auto t0 = std::chrono::steady_clock::now();
  while (
      !client_->get("/apis/scheduling.sigs.k8s.io/v1alpha1/namespaces/" + ns + "/elasticquotas")) {
    ASSERT_LT(since_s(t0), 30.0);
    std::this_thread::sleep_for(milliseconds(200));
  }
  auto sink = open_sink();
  auto o = apply(sink, rec::quota_root(20, "gpu-root", ns, labels, ann, min, max));
  ASSERT_EQ(o.size(), 1u);
  ASSERT_TRUE(o[0].ok) << o[0].message;
  EXPECT_TRUE(o[0].wrote) << o[0].message;
  EXPECT_EQ(o[0].kind, write_kind::quota);
  EXPECT_EQ(o[0].http_status, 201);
  json got = get(path);
  EXPECT_EQ(got["metadata"]["labels"]["quota.scheduling.koordinator.sh/tree-id"], "7");
  EXPECT_EQ(got["spec"]["min"]["cpu"], "48");
  EXPECT_EQ(q(got, "/spec/min/memory"), 192ll << 30);
  const std::string rv = got["metadata"]["resourceVersion"];

  // A replay: nothing written.
  o = apply(sink, rec::quota_root(20, "gpu-root", ns, labels, ann, min, max));
  ASSERT_EQ(o.size(), 1u);
  EXPECT_TRUE(o[0].ok);
  EXPECT_FALSE(o[0].wrote) << o[0].message;
  EXPECT_EQ(get(path)["metadata"]["resourceVersion"], rv);

  // Someone else's label stays; a new node makes min grow and changes the annotation.
  ASSERT_TRUE(client_->patch(path, patch_type::merge, R"({"metadata":{"labels":{"owner":"ml"}}})"));
  min.cpu_milli = 64'000;
  ann[0].second = R"({"cpu":"64","memory":"192Gi"})";
  o = apply(sink, rec::quota_root(21, "gpu-root", ns, labels, ann, min, max));
  ASSERT_EQ(o.size(), 1u);
  EXPECT_TRUE(o[0].ok && o[0].wrote) << o[0].message;
  got = get(path);
  EXPECT_EQ(got["spec"]["min"]["cpu"], "64");
  EXPECT_EQ(got["metadata"]["labels"]["owner"], "ml");
  EXPECT_EQ(got["metadata"]["annotations"]["quota.scheduling.koordinator.sh/total-resource"],
            R"({"cpu":"64","memory":"192Gi"})");

  // The bridge's record of the object: an observation, nothing to write.
  o = apply(sink, rec::quota_root(22, "gpu-root", ns, labels, ann, min, max, true));
  EXPECT_TRUE(o.empty());
  EXPECT_EQ(sink.counters().failed, 0u);
}

// QuotaRuntimeUpdated -> the ElasticQuota's runtime/request/non-preemptible-used annotations
// and status.used, as Koordinator's ElasticQuota plugin writes them back.
TEST_F(KubeSink, QuotaStatusCarriesRuntimeRequestAndUsed) {
  create_elastic_quota_crd();
  const std::string eq =
      "/apis/scheduling.sigs.k8s.io/v1alpha1/namespaces/" + ns + "/elasticquotas";
  const json quota = {
      {"apiVersion", "scheduling.sigs.k8s.io/v1alpha1"},
      {"kind", "ElasticQuota"},
      {"metadata", {{"name", "team-a"}, {"namespace", ns}}},
      {"spec",
       {{"min", {{"cpu", "4"}, {"memory", "8Gi"}}}, {"max", {{"cpu", "8"}, {"memory", "16Gi"}}}}}};
  // The CRD is served a moment after it is created.
  const auto t0 = std::chrono::steady_clock::now();
  for (;;) {
    auto r = client_->post(eq, quota.dump());
    if (r) break;
    ASSERT_LT(since_s(t0), 30.0) << r.error().describe();
    std::this_thread::sleep_for(milliseconds(200));
  }
  auto sink = open_sink();
  resource_list runtime, used, request;
  runtime.cpu_milli = 6'500;
  runtime.memory_bytes = 12ll << 30;
  used.cpu_milli = 1'500;
  used.memory_bytes = 3ll << 30;
  used.pods = 3;
  request.cpu_milli = 2'000;
  request.memory_bytes = 4ll << 30;
  auto o = apply(sink, rec::quota_runtime(10, "team-a", runtime, used, request));
  ASSERT_EQ(o.size(), 1u);
  EXPECT_TRUE(o[0].ok && o[0].wrote) << o[0].message;
  EXPECT_EQ(o[0].kind, write_kind::quota_status);
  EXPECT_EQ(o[0].object, "team-a");  // Colony's key of the quota (names are cluster-unique)
  json got = get(eq + "/team-a");
  const auto& ann = got["metadata"]["annotations"];
  EXPECT_EQ(ann.value("quota.scheduling.koordinator.sh/runtime", ""),
            R"({"cpu":"6500m","memory":"12884901888"})");
  EXPECT_EQ(ann.value("quota.scheduling.koordinator.sh/request", ""),
            R"({"cpu":"2","memory":"4294967296"})");
  EXPECT_EQ(ann.value("quota.scheduling.koordinator.sh/non-preemptible-used", ""),
            R"({"cpu":"0","memory":"0"})");
  EXPECT_EQ(q(got, "/status/used/memory"), 3ll << 30);
  EXPECT_EQ(got.value("/status/used/cpu"_json_pointer, std::string{}), "1500m");
  EXPECT_EQ(q(got, "/status/used/pods"), 3);
  EXPECT_EQ(got["spec"]["max"]["cpu"], "8");  // the spec is untouched

  // The same record again (a replay): nothing written.
  o = apply(sink, rec::quota_runtime(10, "team-a", runtime, used, request));
  ASSERT_EQ(o.size(), 1u);
  EXPECT_TRUE(o[0].ok);
  EXPECT_FALSE(o[0].wrote) << o[0].message;
  // Pods gone: status.used loses the pods entry, not just its value.
  used.pods = 0;
  used.cpu_milli = 500;
  o = apply(sink, rec::quota_runtime(11, "team-a", runtime, used, request));
  ASSERT_EQ(o.size(), 1u);
  EXPECT_TRUE(o[0].ok && o[0].wrote) << o[0].message;
  got = get(eq + "/team-a");
  EXPECT_FALSE(got["status"]["used"].contains("pods")) << got["status"].dump();
  EXPECT_EQ(got.value("/status/used/cpu"_json_pointer, std::string{}), "500m");
  // A quota that does not exist (deleted meanwhile): done, nothing to write.
  o = apply(sink, rec::quota_runtime(12, "team-gone", runtime, used, request));
  ASSERT_EQ(o.size(), 1u);
  EXPECT_TRUE(o[0].ok);
  EXPECT_FALSE(o[0].wrote);
  EXPECT_EQ(o[0].http_status, 404);
  EXPECT_EQ(sink.counters().failed, 0u);
}

TEST_F(KubeSink, EvictionHonoursADisruptionBudget) {
  make_node("n1");
  make_pod("guarded", "guarded");
  make_pod("free");
  auto sink = open_sink();
  for (const char* p : {"guarded", "free"}) {
    const auto b = apply(sink, rec::pod_scheduled(1, ns + "/" + p, "n1"));
    ASSERT_TRUE(!b.empty() && b[0].ok);
    // A Pending pod's eviction ignores budgets (eviction.go canIgnorePDB): make them Running.
    set_running(p);
  }
  post(
      "/apis/policy/v1/namespaces/" + ns + "/poddisruptionbudgets",
      json{{"apiVersion", "policy/v1"},
           {"kind", "PodDisruptionBudget"},
           {"metadata", {{"name", "guard"}, {"namespace", ns}}},
           {"spec", {{"minAvailable", 1}, {"selector", {{"matchLabels", {{"app", "guarded"}}}}}}}});
  // No disruption controller here: write the status it would (1 healthy, 0 allowed).
  auto st = client_->patch(
      "/apis/policy/v1/namespaces/" + ns + "/poddisruptionbudgets/guard/status", patch_type::merge,
      json{{"status",
            {{"observedGeneration", 1},
             {"disruptionsAllowed", 0},
             {"currentHealthy", 1},
             {"desiredHealthy", 1},
             {"expectedPods", 1}}}}
          .dump());
  ASSERT_TRUE(st) << st.error().describe();

  sink_options o = fast();
  o.eviction_max_attempts = 4;
  auto ev = open_sink(o);
  const auto t0 = std::chrono::steady_clock::now();
  const auto out = apply(ev, rec::pod_evicted(200, ns + "/guarded", "n1"));
  const double took = since_s(t0);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_FALSE(out[0].ok);
  EXPECT_EQ(out[0].kind, write_kind::eviction);
  EXPECT_EQ(out[0].http_status, 429);
  EXPECT_EQ(out[0].attempts, 4u);
  EXPECT_NE(out[0].message.find("disruption budget"), std::string::npos) << out[0].message;
  EXPECT_NE(out[0].message.find(ns + "/guarded"), std::string::npos) << out[0].message;
  EXPECT_EQ(ev.waits().size(), 3u);
  std::cout << "429 message: " << out[0].message << "\nretries took " << took << " s\n";
  EXPECT_FALSE(get(pod_path("guarded"))["metadata"].contains("deletionTimestamp"));

  // Unprotected: evicted; with no kubelet the pod stays Terminating (deletionTimestamp).
  const auto freed = apply(ev, rec::pod_evicted(201, ns + "/free", "n1"));
  ASSERT_EQ(freed.size(), 1u);
  EXPECT_TRUE(freed[0].ok && freed[0].wrote) << freed[0].message;
  EXPECT_EQ(freed[0].http_status, 201);
  EXPECT_TRUE(get(pod_path("free"))["metadata"].contains("deletionTimestamp"));
  // Replay: the pod is already terminating; harmless.
  const auto again = apply(ev, rec::pod_evicted(201, ns + "/free", "n1"));
  ASSERT_EQ(again.size(), 1u);
  EXPECT_TRUE(again[0].ok) << again[0].message;
  std::cout << "eviction replay: HTTP " << again[0].http_status << " " << again[0].message << "\n";
  // Gone: 404 is success.
  ASSERT_TRUE(client_->del(pod_path("free"), 0));
  const auto gone = apply(ev, rec::pod_evicted(201, ns + "/free", "n1"));
  ASSERT_EQ(gone.size(), 1u);
  EXPECT_TRUE(gone[0].ok);
  EXPECT_FALSE(gone[0].wrote);
  EXPECT_EQ(gone[0].http_status, 404);
}

// Bindings per second from one thread (COLONY_KUBE_SINK_BENCH_PODS, default 1,000).
TEST_F(KubeSink, BindsAThousandPodsOnOneThread) {
  const char* env = std::getenv("COLONY_KUBE_SINK_BENCH_PODS");
  const int n = env != nullptr ? std::atoi(env) : 1000;
  for (int i = 0; i < 10; ++i) make_node("n" + std::to_string(i));
  auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < n; ++i) make_pod("b" + std::to_string(i));
  const double create_s = since_s(t0);
  std::vector<messages::byte_buffer> log;
  for (int i = 0; i < n; ++i)
    log.push_back(
        rec::pod_scheduled(1000 + i, ns + "/b" + std::to_string(i), "n" + std::to_string(i % 10)));
  auto sink = open_sink();
  t0 = std::chrono::steady_clock::now();
  std::size_t ok = 0;
  for (const auto& r : log)
    for (const auto& o : apply(sink, r)) ok += o.ok && o.wrote ? 1 : 0;
  const double bind_s = since_s(t0);
  EXPECT_EQ(ok, static_cast<std::size_t>(n));
  auto again = open_sink();
  t0 = std::chrono::steady_clock::now();
  std::size_t skipped = 0;
  for (const auto& r : log)
    for (const auto& o : apply(again, r)) skipped += o.ok && !o.wrote ? 1 : 0;
  const double replay_s = since_s(t0);
  EXPECT_EQ(skipped, static_cast<std::size_t>(n));
  std::cout << n << " pods: create " << n / create_s << " /s; bind " << n / bind_s << " /s ("
            << bind_s << " s); replay (409 + GET) " << n / replay_s << " /s\n";
  RecordProperty("bindings_per_s", std::to_string(n / bind_s));
  // Spot check.
  EXPECT_EQ(node_of("b" + std::to_string(n - 1)), "n" + std::to_string((n - 1) % 10));
}

}  // namespace
}  // namespace colony::kube
