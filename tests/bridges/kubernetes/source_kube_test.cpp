// kube::observation_source against a real kube-apiserver + etcd (label kube): objects in, exactly
// one observation each in the log, across clean restarts and SIGKILLs. Each test starts its own
// apiserver through tools/peers/kube.sh (kube_peer.hpp). docs/kubernetes-bridge.md
// "The observation source".
#include <gtest/gtest.h>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <map>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "bridges/kubernetes/api_client.hpp"
#include "bridges/kubernetes/source.hpp"
#include "messages/codec.hpp"
#include "stores/rocksdb_log.hpp"
#include "tests/bridges/kubernetes/kube_peer.hpp"

namespace colony::kube {
namespace {

using json = nlohmann::json;
using std::chrono::milliseconds;
using std::chrono::seconds;
using testing::kube_peer;
namespace fs = std::filesystem;

bool wait_until(const std::function<bool()>& pred, seconds limit) {
  const auto end = std::chrono::steady_clock::now() + limit;
  while (!pred()) {
    if (std::chrono::steady_clock::now() > end) return false;
    std::this_thread::sleep_for(milliseconds(20));
  }
  return true;
}

double since_s(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

std::string kube_sh() {
  const char* v = std::getenv("COLONY_KUBE_SH");
  return v != nullptr && *v != '\0' ? v : COLONY_KUBE_SH_DEFAULT;
}

// (payload type, entity key) -> count, decoding every record of the log.
using tally = std::map<std::pair<std::string, std::string>, int>;

tally count_log(stores::event_log& log) {
  tally t;
  auto r = log.read(0, no_offset, [&](log_offset off, messages::bytes_view b) {
    auto d = messages::decode(b, "log offset " + std::to_string(off));
    EXPECT_TRUE(d) << d.error().describe();
    if (!d) return false;
    ++t[{std::string(messages::payload_name(d->type())),
         std::string(messages::to_string_view(d->envelope->entity_key()))}];
    return true;
  });
  EXPECT_TRUE(r) << r.error().describe();
  return t;
}

int total(const tally& t, const std::string& type) {
  int n = 0;
  for (const auto& [k, c] : t) n += k.first == type ? c : 0;
  return n;
}
int max_per_entity(const tally& t, const std::string& type) {
  int n = 0;
  for (const auto& [k, c] : t) n = k.first == type ? std::max(n, c) : n;
  return n;
}

json node_obj(const std::string& name) {
  return {{"apiVersion", "v1"},
          {"kind", "Node"},
          {"metadata", {{"name", name}, {"labels", {{"colony.test/pool", "a"}}}}},
          {"status",
           {{"capacity", {{"cpu", "32"}, {"memory", "128Gi"}, {"pods", "110"}}},
            {"allocatable", {{"cpu", "31500m"}, {"memory", "120Gi"}, {"pods", "110"}}},
            {"conditions", json::array({{{"type", "Ready"}, {"status", "True"}}})}}}};
}

json pod_obj(const std::string& ns, const std::string& name, const std::string& pc = {}) {
  json spec = {
      {"schedulerName", "koord-scheduler"},
      {"containers",
       json::array({{{"name", "c"},
                     {"image", "registry.invalid/pause:3.9"},
                     {"resources", {{"requests", {{"cpu", "100m"}, {"memory", "1Gi"}}}}}}})}};
  if (!pc.empty()) spec["priorityClassName"] = pc;
  return {{"apiVersion", "v1"},
          {"kind", "Pod"},
          {"metadata", {{"name", name}, {"namespace", ns}}},
          {"spec", spec}};
}

class KubeSource : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why;
    if (!kube_peer::binaries_installed(why)) GTEST_SKIP() << why;
    auto p = kube_peer::start();
    ASSERT_TRUE(p) << p.error().describe();
    peer_ = std::move(*p);
    auto c = api_client::open(peer_->conn());
    ASSERT_TRUE(c) << c.error().describe();
    client_ = std::make_unique<api_client>(std::move(*c));
    work_ = peer_->dir() + "/source";
    fs::create_directories(work_);
    log_dir_ = work_ + "/log";
    ckpt_ = work_ + "/source.ckpt";
    ASSERT_EQ(sh("priority-classes"), 0);
    // Koordinator's CRDs where the checkout has them beside it, else Colony's own (deploy/crds:
    // the same groups, kinds and scopes).
    auto crds = peer_->apply_crds({kube_peer::crds_folder()});
    ASSERT_TRUE(crds) << crds.error().describe();
    crds_ = true;
    post("/api/v1/namespaces", {{"apiVersion", "v1"},
                                {"kind", "Namespace"},
                                {"metadata", {{"name", "koordinator-system"}}}});
    post("/api/v1/namespaces",
         {{"apiVersion", "v1"}, {"kind", "Namespace"}, {"metadata", {{"name", "colony-src"}}}});
  }

  int sh(const std::string& cmd) {
    const std::string line = "bash '" + kube_sh() + "' " + cmd + " --dir '" + peer_->dir() +
                             "' >>'" + peer_->dir() + "/source-test.log' 2>&1";
    return std::system(line.c_str());
  }
  void post(const std::string& path, const json& body) {
    auto r = client_->post(path, body.dump());
    ASSERT_TRUE(r) << r.error().describe();
  }
  json get(const std::string& path) {
    auto r = client_->get(path);
    EXPECT_TRUE(r) << r.error().describe();
    return r ? json::parse(r->body) : json{};
  }
  void make_node(const std::string& name) { post("/api/v1/nodes", node_obj(name)); }
  void make_pod(const std::string& name, const std::string& pc = {}) {
    post("/api/v1/namespaces/colony-src/pods", pod_obj("colony-src", name, pc));
  }
  void make_config_objects() {
    post("/api/v1/namespaces/koordinator-system/configmaps",
         {{"apiVersion", "v1"},
          {"kind", "ConfigMap"},
          {"metadata", {{"name", "slo-controller-config"}, {"namespace", "koordinator-system"}}},
          {"data", {{"colocation-config", R"({"enable":true})"}}}});
    if (!crds_) return;
    post("/apis/config.koordinator.sh/v1alpha1/clustercolocationprofiles",
         {{"apiVersion", "config.koordinator.sh/v1alpha1"},
          {"kind", "ClusterColocationProfile"},
          {"metadata", {{"name", "colocation-profile"}}},
          {"spec",
           {{"selector", {{"matchLabels", {{"koordinator.sh/enable-colocation", "true"}}}}},
            {"qosClass", "BE"},
            {"priorityClassName", "koord-batch"},
            {"schedulerName", "koord-scheduler"}}}});
  }
  // ConfigUpdated expected: every PriorityClass (Koordinator's 4 + the built-in system ones),
  // the slo-controller ConfigMap, the profile.
  int config_objects() {
    auto r = client_->list("/apis/scheduling.k8s.io/v1/priorityclasses", {});
    EXPECT_TRUE(r);
    if (!r) return -1;
    return static_cast<int>(json::parse(r->body)["items"].size()) + 1 + (crds_ ? 1 : 0);
  }

  std::unique_ptr<stores::rocksdb_log> open_log() {
    auto l = stores::rocksdb_log::open(log_dir_, stores::log_options{});
    EXPECT_TRUE(l) << l.error().describe();
    return l ? std::move(*l) : nullptr;
  }
  log_offset log_end_read_only() {
    stores::log_options o;
    o.create_if_missing = false;
    o.read_only = true;
    auto l = stores::rocksdb_log::open(log_dir_, o);
    if (!l) return 0;
    auto e = (*l)->end_offset();
    return e ? *e : 0;
  }
  log_offset checkpoint_end() {
    std::ifstream in(ckpt_);
    if (!in) return 0;
    const json j = json::parse(in, nullptr, false);
    return j.is_object() ? j.value("end_offset", log_offset{0}) : 0;
  }
  std::unique_ptr<observation_source> open_source(stores::event_log& log) {
    source_options o;
    o.checkpoint_path = ckpt_;
    // A checkpoint after every batch that appended: the tests below count exact crash windows
    // (the rate-limited default is exercised by tests/run's SIGKILL test).
    o.checkpoint_interval = std::chrono::milliseconds(0);
    o.informer.backoff_initial = milliseconds(100);
    o.informer.backoff_max = milliseconds(1000);
    o.clock = [this] { return clock_ms_.fetch_add(1); };  // informer threads call it at once
    auto s = observation_source::open(peer_->conn(), log, std::move(o));
    EXPECT_TRUE(s) << s.error().describe();
    return s ? std::move(*s) : nullptr;
  }
  static void report(const observation_source& s, const char* what) {
    const auto c = s.counters();
    std::cout << what << ": informers " << c.informers << " skipped " << c.kinds_skipped << " adds "
              << c.adds << " updates " << c.updates << " deletes " << c.deletes << " unchanged "
              << c.unchanged << " bad " << c.bad_objects << " untranslated " << c.untranslated
              << " events " << c.events << " batches " << c.batches << " checkpoints "
              << c.checkpoints << " orphans " << c.orphans_found << "/" << c.orphans_matched
              << "\n";
  }
  // Waits until the log holds `n` records and then 300 ms pass with no more.
  static bool settle(stores::event_log& log, log_offset n, seconds limit = seconds(60)) {
    if (!wait_until([&] { return *log.end_offset() >= n; }, limit)) return false;
    std::this_thread::sleep_for(milliseconds(300));
    return *log.end_offset() == n;
  }

  std::unique_ptr<kube_peer> peer_;
  std::unique_ptr<api_client> client_;
  std::string work_, log_dir_, ckpt_;
  bool crds_ = false;
  std::atomic<std::int64_t> clock_ms_{1'700'000'000'000};
};

// (a) 50 nodes, 200 pods, the config objects: one observation each, via LIST and via WATCH.
TEST_F(KubeSource, AppendsOneObservationPerObject) {
  for (int i = 0; i < 50; ++i) make_node("node-" + std::to_string(i));
  const char* pcs[] = {"koord-prod", "koord-mid", "koord-batch", "koord-free", ""};
  for (int i = 0; i < 100; ++i) make_pod("pod-" + std::to_string(i), pcs[i % 5]);
  make_config_objects();
  const int configs = config_objects();

  auto log = open_log();
  ASSERT_TRUE(log);
  auto src = open_source(*log);
  ASSERT_TRUE(src);
  ASSERT_TRUE(src->start());
  ASSERT_TRUE(wait_until([&] { return src->synced(); }, seconds(30)));
  const log_offset listed = 50 + 100 + configs;
  ASSERT_TRUE(settle(*log, listed)) << *log->end_offset();

  // 100 more while watching: create-to-appended rate.
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 100; i < 200; ++i) make_pod("pod-" + std::to_string(i), pcs[i % 5]);
  ASSERT_TRUE(wait_until([&] { return *log->end_offset() >= listed + 100; }, seconds(60)));
  const double s = since_s(t0);
  std::cout << "100 pods created and appended while watching in " << s << " s (" << 100 / s
            << " pods/s)\n";
  ASSERT_TRUE(settle(*log, listed + 100));
  src->stop();
  report(*src, "source");
  std::cout << "checkpoint: " << fs::file_size(ckpt_) << " bytes for the objects above\n";

  const tally t = count_log(*log);
  EXPECT_EQ(total(t, "NodeRegistered"), 50);
  EXPECT_EQ(max_per_entity(t, "NodeRegistered"), 1);
  EXPECT_EQ(total(t, "PodSubmitted"), 200);
  EXPECT_EQ(max_per_entity(t, "PodSubmitted"), 1);
  EXPECT_EQ(total(t, "ConfigUpdated"), configs);
  EXPECT_EQ(t.at({"ConfigUpdated", "slo-controller"}), 1);  // PriorityClasses, profiles: admission
  EXPECT_EQ(t.size(), 50u + 200u + 2u)
      << "Node/*, Pod/*, Cluster/admission, Cluster/slo-controller";
  const auto c = src->counters();
  EXPECT_EQ(c.kinds_skipped, crds_ ? 0u : 9u);  // 4 translated + 5 recorded CRD kinds
  EXPECT_EQ(c.events, listed + 100);
  EXPECT_EQ(c.bad_objects, 0u);
  EXPECT_GE(c.adds, 250u);
}

// A node's NodeResourceTopology (v1alpha1, as Koordinator's koordlet writes it): listed, a zone
// changed while watching, a resourceVersion-only write (nothing), deleted: three
// NodeResourceTopologyUpdated keyed to the node, the last with deleted set.
TEST_F(KubeSource, NodeResourceTopologyFollowsTheObject) {
  const std::string path = "/apis/topology.node.k8s.io/v1alpha1/noderesourcetopologies";
  const std::string topo =
      R"({"detail":[{"id":0,"core":0,"socket":0,"node":0},{"id":1,"core":0,"socket":0,"node":0}]})";
  post(path, {{"apiVersion", "topology.node.k8s.io/v1alpha1"},
              {"kind", "NodeResourceTopology"},
              {"metadata",
               {{"name", "numa-1"}, {"annotations", {{"node.koordinator.sh/cpu-topology", topo}}}}},
              {"topologyPolicies", json::array({"None"})},
              {"zones", json::array({{{"name", "node-0"},
                                      {"type", "Node"},
                                      {"resources", json::array({{{"name", "cpu"},
                                                                  {"capacity", "2"},
                                                                  {"allocatable", "2"},
                                                                  {"available", "2"}}})}}})}});
  auto log = open_log();
  ASSERT_TRUE(log);
  auto src = open_source(*log);
  ASSERT_TRUE(src && src->start());
  ASSERT_TRUE(wait_until([&] { return src->synced(); }, seconds(30)));
  const log_offset base = *log->end_offset();
  ASSERT_GE(base, 1u);
  ASSERT_TRUE(client_->patch(path + "/numa-1", patch_type::merge,
                             R"({"zones":[{"name":"node-0","type":"Node","resources":[
                                 {"name":"cpu","capacity":"2","allocatable":"1500m",
                                  "available":"1500m"}]}]})"));
  ASSERT_TRUE(wait_until([&] { return *log->end_offset() >= base + 1; }, seconds(30)));
  ASSERT_TRUE(client_->del(path + "/numa-1"));
  ASSERT_TRUE(settle(*log, base + 2)) << *log->end_offset();
  src->stop();
  std::vector<std::pair<std::int64_t, bool>> seen;  // (zone cpu, deleted)
  auto r = log->read(0, no_offset, [&](log_offset off, messages::bytes_view b) {
    auto d = messages::decode(b, "log offset " + std::to_string(off));
    EXPECT_TRUE(d) << d.error().describe();
    if (!d) return false;
    if (const auto* e = d->envelope->payload_as_NodeResourceTopologyUpdated()) {
      EXPECT_EQ(messages::to_string_view(d->envelope->entity_key()), "numa-1");
      const std::int64_t cpu =
          e->zones() && e->zones()->size() == 1 ? e->zones()->Get(0)->cpu_allocatable_milli() : -1;
      seen.emplace_back(cpu, e->deleted());
    }
    return true;
  });
  ASSERT_TRUE(r);
  EXPECT_EQ(seen,
            (std::vector<std::pair<std::int64_t, bool>>{{2000, false}, {1500, false}, {-1, true}}));
}

// (b) Stopped, changed, restarted: only the differences are appended.
TEST_F(KubeSource, RestartAppendsOnlyTheDifferences) {
  for (int i = 0; i < 10; ++i) make_node("node-" + std::to_string(i));
  for (int i = 0; i < 20; ++i) make_pod("pod-" + std::to_string(i));
  make_config_objects();
  const int configs = config_objects();
  const log_offset first = 10 + 20 + configs;
  {
    auto log = open_log();
    ASSERT_TRUE(log);
    auto src = open_source(*log);
    ASSERT_TRUE(src && src->start());
    ASSERT_TRUE(settle(*log, first)) << *log->end_offset();
    src->stop();
    report(*src, "first");
  }
  // While no source runs: 3 pods created, 2 deleted, 2 relabelled (PodSubmitted again: labels
  // are carried), a node created, one deleted, one node's DiskPressure condition set (noise).
  for (int i = 20; i < 23; ++i) make_pod("pod-" + std::to_string(i));
  for (int i = 0; i < 2; ++i)
    ASSERT_TRUE(client_->del("/api/v1/namespaces/colony-src/pods/pod-" + std::to_string(i), 0));
  for (int i = 2; i < 4; ++i)
    ASSERT_TRUE(client_->patch("/api/v1/namespaces/colony-src/pods/pod-" + std::to_string(i),
                               patch_type::merge, R"({"metadata":{"labels":{"x":"y"}}})"));
  make_node("node-new");
  ASSERT_TRUE(client_->del("/api/v1/nodes/node-9"));
  ASSERT_TRUE(
      client_->patch("/api/v1/nodes/node-0/status", patch_type::strategic,
                     R"({"status":{"conditions":[{"type":"DiskPressure","status":"False"}]}})"));
  const log_offset expected = first + 3 + 2 + 2 + 1 + 1;
  {
    auto log = open_log();
    ASSERT_TRUE(log);
    auto src = open_source(*log);
    ASSERT_TRUE(src && src->start());
    ASSERT_TRUE(settle(*log, expected)) << *log->end_offset() << " vs " << expected;
    src->stop();
    report(*src, "second");
    const auto c = src->counters();
    EXPECT_EQ(c.adds, 4u);
    EXPECT_EQ(c.deletes, 3u);
    // 2 relabels, the node's condition, and the deletionTimestamp MODIFIED each deleted pod gets
    // before its DELETED: the last three are noise (change_kind none).
    EXPECT_EQ(c.updates, 5u);
    EXPECT_EQ(c.unchanged, 3u);
    EXPECT_EQ(c.events, 9u);
    const tally t = count_log(*log);
    EXPECT_EQ(total(t, "PodSubmitted"), 25);
    EXPECT_EQ(total(t, "PodFinished"), 2);
    EXPECT_EQ(total(t, "NodeRegistered"), 11);
    EXPECT_EQ(total(t, "NodeRemoved"), 1);
    EXPECT_EQ(total(t, "NodeConditionChanged"), 0);
  }
  {
    // A third source with nothing changed appends nothing.
    auto log = open_log();
    ASSERT_TRUE(log);
    auto src = open_source(*log);
    ASSERT_TRUE(src && src->start());
    ASSERT_TRUE(wait_until([&] { return src->synced(); }, seconds(30)));
    std::this_thread::sleep_for(milliseconds(500));
    src->stop();
    EXPECT_EQ(*log->end_offset(), expected);
    EXPECT_EQ(src->counters().events, 0u);
  }
}

// (c) SIGKILLed at random points while objects are created; restarted each time.
TEST_F(KubeSource, SurvivesKillsWithoutDuplicates) {
  const char* child = COLONY_KUBE_SOURCE_CHILD;
  const std::string kubeconfig = peer_->dir() + "/kubeconfig";
  std::mt19937_64 rng(20261126);
  const int kills = 12, per_round = 12;
  int pods = 0, nodes = 0, grew = 0, in_window = 0;
  log_offset last_end = 0;
  for (int k = 0; k <= kills; ++k) {
    const pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      ::execl(child, child, kubeconfig.c_str(), log_dir_.c_str(), ckpt_.c_str(),
              static_cast<char*>(nullptr));
      std::_Exit(127);
    }
    // Create objects while the child runs; kill it after a random delay (during the burst).
    const auto delay = milliseconds(std::uniform_int_distribution<int>(50, 700)(rng));
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < per_round; ++i) {
      make_pod("pod-" + std::to_string(pods++));
      if (i % 4 == 0) make_node("node-" + std::to_string(nodes++));
      if (k < kills && std::chrono::steady_clock::now() - t0 >= delay) break;
    }
    if (k < kills) {
      while (std::chrono::steady_clock::now() - t0 < delay)
        std::this_thread::sleep_for(milliseconds(5));
      ::kill(pid, SIGKILL);
    } else {
      std::this_thread::sleep_for(seconds(3));  // last round: let it catch up
      ::kill(pid, SIGKILL);
    }
    int status = 0;
    ::waitpid(pid, &status, 0);
    ASSERT_TRUE(WIFSIGNALED(status)) << "child exited by itself: " << status;
    // Where the kill landed: a log past its checkpoint is the append-then-crash window.
    const auto end = log_end_read_only();
    const auto ck = checkpoint_end();
    if (end > last_end) ++grew;
    if (end > ck) ++in_window;
    last_end = end;
  }
  std::cout << "kills after the log grew: " << grew
            << ", in the append-checkpoint window: " << in_window << "\n";
  EXPECT_GE(grew, 3);
  auto log = open_log();
  ASSERT_TRUE(log);
  // A last in-process source catches anything the last child missed.
  auto src = open_source(*log);
  ASSERT_TRUE(src && src->start());
  ASSERT_TRUE(wait_until([&] { return src->synced(); }, seconds(30)));
  std::this_thread::sleep_for(seconds(1));
  src->stop();
  report(*src, "final");
  const tally t = count_log(*log);
  std::cout << kills << " kills, " << pods << " pods, " << nodes << " nodes\n";
  EXPECT_EQ(total(t, "PodSubmitted"), pods);
  EXPECT_EQ(max_per_entity(t, "PodSubmitted"), 1);
  EXPECT_EQ(total(t, "NodeRegistered"), nodes);
  EXPECT_EQ(max_per_entity(t, "NodeRegistered"), 1);
  EXPECT_GE(pods, kills) << "the kills hit while objects were being created";
}

// The crash window made exact: the log holds batches its checkpoint does not (an older
// checkpoint put back). A new source finds them as orphans, re-derives the same observations,
// drops them, and appends nothing twice.
TEST_F(KubeSource, OrphansAfterTheCheckpointAreNotAppendedAgain) {
  for (int i = 0; i < 5; ++i) make_pod("pod-" + std::to_string(i));
  const int configs = config_objects() - 1 - (crds_ ? 1 : 0);
  const log_offset first = 5 + configs;
  const std::string saved = work_ + "/saved.ckpt";
  {
    auto log = open_log();
    ASSERT_TRUE(log);
    auto src = open_source(*log);
    ASSERT_TRUE(src && src->start());
    ASSERT_TRUE(settle(*log, first)) << *log->end_offset();
    fs::copy_file(ckpt_, saved);
    for (int i = 5; i < 10; ++i) make_pod("pod-" + std::to_string(i));  // 5 watch batches
    make_node("node-0");
    ASSERT_TRUE(settle(*log, first + 6));
    src->stop();
  }
  fs::copy_file(saved, ckpt_, fs::copy_options::overwrite_existing);
  make_pod("pod-10");  // and one change made while stopped
  auto log = open_log();
  ASSERT_TRUE(log);
  auto src = open_source(*log);
  ASSERT_TRUE(src && src->start());
  ASSERT_TRUE(settle(*log, first + 7)) << *log->end_offset();
  src->stop();
  report(*src, "after the old checkpoint");
  const auto c = src->counters();
  EXPECT_EQ(c.orphans_found, 6u);
  EXPECT_EQ(c.orphans_matched, 6u);
  EXPECT_EQ(c.events, 1u);
  const tally t = count_log(*log);
  EXPECT_EQ(total(t, "PodSubmitted"), 11);
  EXPECT_EQ(max_per_entity(t, "PodSubmitted"), 1);
  EXPECT_EQ(total(t, "NodeRegistered"), 1);
}

// (d) A bad object is refused, named, and appends only its ObjectRefused; the others go through.
// The apiserver refuses malformed quantities in built-in kinds, so the pod carries a label
// Koordinator's webhook refuses, and (with the CRDs) an ElasticQuota a negative quantity, which
// the CRD's pattern lets through.
TEST_F(KubeSource, BadObjectIsReportedAndSkipped) {
  for (int i = 0; i < 5; ++i) make_pod("good-" + std::to_string(i));
  json bad = pod_obj("colony-src", "bad-qos");
  bad["metadata"]["labels"] = {{"koordinator.sh/qosClass", "GOLD"}};
  post("/api/v1/namespaces/colony-src/pods", bad);
  if (crds_) {
    post("/apis/scheduling.sigs.k8s.io/v1alpha1/namespaces/colony-src/elasticquotas",
         {{"apiVersion", "scheduling.sigs.k8s.io/v1alpha1"},
          {"kind", "ElasticQuota"},
          {"metadata", {{"name", "team-a"}, {"namespace", "colony-src"}}},
          {"spec", {{"min", {{"cpu", "-1"}}}, {"max", {{"cpu", "4"}}}}}});
  }
  const int configs = config_objects() - 1 - (crds_ ? 1 : 0);  // no ConfigMap, no profile here
  const int refusals = crds_ ? 2 : 1;                          // one ObjectRefused each
  auto log = open_log();
  ASSERT_TRUE(log);
  auto src = open_source(*log);
  ASSERT_TRUE(src && src->start());
  ASSERT_TRUE(settle(*log, 5 + configs + refusals)) << *log->end_offset();
  for (int i = 5; i < 8; ++i) make_pod("good-" + std::to_string(i));  // after it, still fine
  ASSERT_TRUE(settle(*log, 8 + configs + refusals));
  src->stop();
  report(*src, "source");
  const tally t = count_log(*log);
  EXPECT_EQ(total(t, "PodSubmitted"), 8);
  EXPECT_EQ(t.count({"PodSubmitted", "colony-src/bad-qos"}), 0u);
  EXPECT_EQ(total(t, "QuotaUpserted"), 0);
  EXPECT_EQ(t.count({"ObjectRefused", "colony-src/bad-qos"}), 1u);
  EXPECT_EQ(total(t, "ObjectRefused"), refusals);
  const auto refused = src->refused();
  ASSERT_EQ(refused.size(), crds_ ? 2u : 1u);
  bool pod_named = false, quota_named = false;
  for (const auto& e : refused) {
    std::cout << "refused: " << e.describe() << "\n";
    pod_named |= e.where == "Pod colony-src/bad-qos: metadata.labels[koordinator.sh/qosClass]";
    quota_named |= e.where.find("ElasticQuota") != std::string::npos &&
                   e.where.find("spec.min.cpu") != std::string::npos;
  }
  EXPECT_TRUE(pod_named);
  EXPECT_EQ(quota_named, crds_);
  EXPECT_EQ(src->counters().bad_objects, refused.size());
}

// ObjectRefused records of a log, decoded.
struct refusal {
  wire::EntityKind entity_kind = wire::EntityKind::Unknown;
  std::string entity_key, source, api_kind, ns, name, uid, resource_version, field, reason, code;
  std::int64_t causation = 0;
};

std::string str(const flatbuffers::String* v) { return std::string(messages::to_string_view(v)); }

// Calls fn(envelope) for each record of `type` in the log, in order; a record that does not
// decode fails the test and ends the read.
template <class F>
void for_each_of(stores::event_log& log, wire::Payload type, F&& fn) {
  auto r = log.read(0, no_offset, [&](log_offset off, messages::bytes_view b) {
    auto d = messages::decode(b, "log offset " + std::to_string(off));
    EXPECT_TRUE(d) << d.error().describe();
    if (!d) return false;
    if (d->type() == type) fn(*d->envelope);
    return true;
  });
  EXPECT_TRUE(r) << r.error().describe();
}

std::vector<refusal> refusals_in(stores::event_log& log) {
  std::vector<refusal> out;
  for_each_of(log, wire::Payload::ObjectRefused, [&](const wire::Envelope& env) {
    const auto* o = env.payload_as_ObjectRefused();
    out.push_back({env.entity_kind(), str(env.entity_key()), str(env.source()), str(o->api_kind()),
                   str(o->namespace_()), str(o->name()), str(o->uid()), str(o->resource_version()),
                   str(o->field()), str(o->reason()), str(o->code()), env.causation()});
  });
  return out;
}

// Four bad objects (docs/kubernetes-bridge.md "Errors") through a real apiserver, each created
// beside a good object of its kind: one ObjectRefused each, naming the object, the version refused
// and the wrong field; nothing else appended for it; the good objects still observed; and neither a
// restart over the crash window (an older checkpoint put back: the refusals are orphans) nor a
// plain restart appends a refusal again. The apiserver refuses malformed quantity strings in
// built-in kinds, so the pod's quantity is one it accepts but no int64 of milli-cores holds ("1e30"
// cores).
TEST_F(KubeSource, RefusedObjectsAreLoggedOnceNamingObjectAndField) {
  struct bad_case {
    const char* name;
    bool crd;
    std::function<void()> make_good;
    std::function<void()> make_bad;
    std::string path;  // GET path of the bad object (its resourceVersion)
    wire::EntityKind entity_kind;
    std::string entity_key, api_kind, ns, name_of_object, field, reason;
  };
  const std::string quotas =
      "/apis/scheduling.sigs.k8s.io/v1alpha1/namespaces/colony-src/elasticquotas";
  const std::string profiles = "/apis/config.koordinator.sh/v1alpha1/clustercolocationprofiles";
  const std::string metrics = "/apis/slo.koordinator.sh/v1alpha1/nodemetrics";
  const auto quota = [&](const std::string& name, const std::string& min, const std::string& max) {
    post(quotas, {{"apiVersion", "scheduling.sigs.k8s.io/v1alpha1"},
                  {"kind", "ElasticQuota"},
                  {"metadata", {{"name", name}, {"namespace", "colony-src"}}},
                  {"spec", {{"min", {{"cpu", min}}}, {"max", {{"cpu", max}}}}}});
  };
  const auto profile = [&](const std::string& name, const std::string& op) {
    post(profiles,
         {{"apiVersion", "config.koordinator.sh/v1alpha1"},
          {"kind", "ClusterColocationProfile"},
          {"metadata", {{"name", name}}},
          {"spec",
           {{"selector",
             {{"matchExpressions",
               json::array(
                   {{{"key", "app"}, {"operator", op}, {"values", json::array({"batch"})}}})}}},
            {"qosClass", "BE"},
            {"priorityClassName", "koord-batch"}}}});
  };
  // koord-manager creates a NodeMetric; the koordlet reports through its status subresource.
  const auto node_metric = [&](const std::string& name, const std::string& cpu) {
    post(metrics, {{"apiVersion", "slo.koordinator.sh/v1alpha1"},
                   {"kind", "NodeMetric"},
                   {"metadata", {{"name", name}}},
                   {"spec", {{"metricCollectPolicy", {{"reportIntervalSeconds", 60}}}}}});
    const json status = {
        {"status",
         {{"updateTime", "2026-01-01T00:04:00Z"},
          {"nodeMetric", {{"nodeUsage", {{"resources", {{"cpu", cpu}, {"memory", "1Gi"}}}}}}}}}};
    auto r = client_->patch(metrics + "/" + name + "/status", patch_type::merge, status.dump());
    ASSERT_TRUE(r) << r.error().describe();
  };
  const auto pod_with_cpu = [&](const std::string& name, const std::string& cpu) {
    json p = pod_obj("colony-src", name);
    p["spec"]["containers"][0]["resources"]["requests"]["cpu"] = cpu;
    post("/api/v1/namespaces/colony-src/pods", p);
  };
  const std::vector<bad_case> cases = {
      {"PodWithAQuantityColonyCannotHold", false, [&] { pod_with_cpu("good-pod", "2"); },
       [&] { pod_with_cpu("bad-pod", "1e30"); }, "/api/v1/namespaces/colony-src/pods/bad-pod",
       wire::EntityKind::Pod, "colony-src/bad-pod", "Pod", "colony-src", "bad-pod",
       "spec.containers[0].resources.requests.cpu", R"("1e30" is out of range)"},
      {"QuotaMinOverMax", true, [&] { quota("good-quota", "10", "40"); },
       [&] { quota("bad-quota", "50", "40"); }, quotas + "/bad-quota",
       wire::EntityKind::ElasticQuota, "bad-quota", "ElasticQuota", "colony-src", "bad-quota",
       "spec.min.cpu", R"(exceeds spec.max.cpu ("50" > "40"))"},
      {"ProfileWithAnInvalidSelector", true, [&] { profile("good-profile", "In"); },
       [&] { profile("bad-profile", "Foo"); }, profiles + "/bad-profile", wire::EntityKind::Cluster,
       "admission", "ClusterColocationProfile", "", "bad-profile",
       "spec.selector.matchExpressions[0].operator",
       R"("Foo" is not In, NotIn, Exists, DoesNotExist)"},
      {"NodeMetricWithANegativeUsage", true, [&] { node_metric("good-node", "2"); },
       [&] { node_metric("bad-node", "-1"); }, metrics + "/bad-node", wire::EntityKind::Node,
       "bad-node", "NodeMetric", "", "bad-node", "status.nodeMetric.nodeUsage.resources.cpu",
       R"("-1" is negative)"},
  };
  ASSERT_EQ(cases.size(), 4u);
  std::vector<const bad_case*> run;
  for (const auto& c : cases)
    if (crds_ || !c.crd) run.push_back(&c);
  if (!crds_) std::cout << "Koordinator CRDs absent: only the pod case runs\n";
  const auto n = static_cast<log_offset>(run.size());

  // The good objects first; a checkpoint of them kept aside.
  for (const auto* c : run) c->make_good();
  const auto pcs = client_->list("/apis/scheduling.k8s.io/v1/priorityclasses", {});
  ASSERT_TRUE(pcs);
  const log_offset first = json::parse(pcs->body)["items"].size() + n;
  const std::string saved = work_ + "/saved.ckpt";
  std::map<std::string, std::string> bad_rv;
  {
    auto log = open_log();
    ASSERT_TRUE(log);
    auto src = open_source(*log);
    ASSERT_TRUE(src && src->start());
    ASSERT_TRUE(settle(*log, first)) << *log->end_offset() << " vs " << first;
    fs::copy_file(ckpt_, saved);
    // The bad objects while watching, and one more good pod after them.
    for (const auto* c : run) c->make_bad();
    make_pod("good-after");
    ASSERT_TRUE(settle(*log, first + n + 1)) << *log->end_offset() << " vs " << first + n + 1;
    src->stop();
    report(*src, "first");
    EXPECT_EQ(src->counters().refusals, n);
    for (const auto* c : run)
      bad_rv[c->name] = get(c->path)["metadata"].value("resourceVersion", std::string{});
  }
  const auto check = [&](const char* when) {
    SCOPED_TRACE(when);
    auto log = open_log();
    ASSERT_TRUE(log);
    const auto refused = refusals_in(*log);
    ASSERT_EQ(refused.size(), run.size());
    for (const auto* c : run) {
      SCOPED_TRACE(c->name);
      const auto it = std::find_if(refused.begin(), refused.end(),
                                   [&](const refusal& r) { return r.name == c->name_of_object; });
      ASSERT_NE(it, refused.end());
      EXPECT_EQ(it->entity_kind, c->entity_kind);
      EXPECT_EQ(it->entity_key, c->entity_key);
      EXPECT_EQ(it->source, "bridge/k8s");
      EXPECT_EQ(it->causation, -1);
      EXPECT_EQ(it->api_kind, c->api_kind);
      EXPECT_EQ(it->ns, c->ns);
      EXPECT_EQ(it->resource_version, bad_rv.at(c->name));
      EXPECT_FALSE(it->uid.empty());
      EXPECT_EQ(it->field, c->field);
      EXPECT_EQ(it->reason, c->reason);
      EXPECT_EQ(it->code, "invalid_input");
    }
    // Nothing else of the bad objects; the good ones observed.
    const tally t = count_log(*log);
    EXPECT_EQ(t.count({"PodSubmitted", "colony-src/bad-pod"}), 0u);
    EXPECT_EQ(t.count({"PodSubmitted", "colony-src/good-pod"}), 1u);
    EXPECT_EQ(t.count({"PodSubmitted", "colony-src/good-after"}), 1u);
    EXPECT_EQ(t.count({"QuotaUpserted", "bad-quota"}), 0u);
    EXPECT_EQ(t.count({"QuotaUpserted", "good-quota"}), crds_ ? 1u : 0u);
    EXPECT_EQ(t.count({"NodeMetricReported", "bad-node"}), 0u);
    EXPECT_EQ(t.count({"NodeMetricReported", "good-node"}), crds_ ? 1u : 0u);
    EXPECT_EQ(total(t, "ObjectRefused"), static_cast<int>(n));
    EXPECT_EQ(max_per_entity(t, "ObjectRefused"), 1);
    EXPECT_EQ(*log->end_offset(), first + n + 1);
  };
  check("after the first run");

  // The crash window: the checkpoint from before the bad objects put back. The restarted source
  // re-derives the refusals and the late pod, finds them among the orphans, appends nothing.
  fs::copy_file(saved, ckpt_, fs::copy_options::overwrite_existing);
  {
    auto log = open_log();
    ASSERT_TRUE(log);
    auto src = open_source(*log);
    ASSERT_TRUE(src && src->start());
    ASSERT_TRUE(wait_until([&] { return src->synced(); }, seconds(30)));
    ASSERT_TRUE(wait_until([&] { return src->counters().orphans_matched == n + 1; }, seconds(30)))
        << src->counters().orphans_matched;
    std::this_thread::sleep_for(milliseconds(500));
    src->stop();
    report(*src, "over the crash window");
    const auto c = src->counters();
    EXPECT_EQ(c.orphans_found, n + 1);
    EXPECT_EQ(c.events, 0u);
    EXPECT_EQ(c.refusals, n);  // re-derived, and dropped as the orphans they are
  }
  check("after a restart over the crash window");

  // A plain restart: the informers resume with the refused objects in their stores.
  {
    auto log = open_log();
    ASSERT_TRUE(log);
    auto src = open_source(*log);
    ASSERT_TRUE(src && src->start());
    ASSERT_TRUE(wait_until([&] { return src->synced(); }, seconds(30)));
    std::this_thread::sleep_for(milliseconds(500));
    src->stop();
    EXPECT_EQ(src->counters().events, 0u);
    EXPECT_EQ(src->counters().refusals, 0u);
  }
  check("after a plain restart");
}

// A pod accepted, then edited into a bad one: one ObjectRefused for the bad version, and the
// pod's accepted PodSubmitted stays the last word until an edit makes it good again.
TEST_F(KubeSource, AnAcceptedObjectEditedIntoABadOneKeepsItsAcceptedState) {
  make_pod("edited");
  const int configs = config_objects() - 1 - (crds_ ? 1 : 0);  // no ConfigMap, no profile here
  auto log = open_log();
  ASSERT_TRUE(log);
  auto src = open_source(*log);
  ASSERT_TRUE(src && src->start());
  ASSERT_TRUE(settle(*log, 1 + configs)) << *log->end_offset();
  const std::string path = "/api/v1/namespaces/colony-src/pods/edited";
  auto bad = client_->patch(path, patch_type::merge,
                            R"({"metadata":{"labels":{"koordinator.sh/qosClass":"GOLD"}}})");
  ASSERT_TRUE(bad) << bad.error().describe();
  const std::string bad_rv = json::parse(bad->body)["metadata"]["resourceVersion"];
  ASSERT_TRUE(settle(*log, 2 + configs)) << *log->end_offset();
  auto good = client_->patch(path, patch_type::merge,
                             R"({"metadata":{"labels":{"koordinator.sh/qosClass":"BE"}}})");
  ASSERT_TRUE(good) << good.error().describe();
  ASSERT_TRUE(settle(*log, 3 + configs)) << *log->end_offset();
  src->stop();
  const tally t = count_log(*log);
  EXPECT_EQ(t.at({"PodSubmitted", "colony-src/edited"}), 2);  // accepted, then good again
  EXPECT_EQ(t.at({"ObjectRefused", "colony-src/edited"}), 1);
  const auto refused = refusals_in(*log);
  ASSERT_EQ(refused.size(), 1u);
  EXPECT_EQ(refused[0].resource_version, bad_rv);
  EXPECT_EQ(refused[0].field, "metadata.labels[koordinator.sh/qosClass]");
  // In log order: submitted, refused, submitted again (with the BE label).
  std::vector<std::string> order;
  auto r = log->read(0, no_offset, [&](log_offset, messages::bytes_view b) {
    const auto& env = *wire::GetEnvelope(b.data());
    if (messages::to_string_view(env.entity_key()) == "colony-src/edited")
      order.emplace_back(messages::payload_name(env.payload_type()));
    return true;
  });
  ASSERT_TRUE(r) << r.error().describe();
  EXPECT_EQ(order, (std::vector<std::string>{"PodSubmitted", "ObjectRefused", "PodSubmitted"}));
}

// ObjectObserved records of a log, decoded, in log order.
struct observed {
  std::string key, api_version, kind, ns, name, uid, resource_version, spec, status;
  std::vector<std::pair<std::string, std::string>> labels;
  bool deleted = false;
};

std::vector<observed> observed_in(stores::event_log& log) {
  std::vector<observed> out;
  for_each_of(log, wire::Payload::ObjectObserved, [&](const wire::Envelope& env) {
    EXPECT_EQ(env.entity_kind(), wire::EntityKind::Object);
    EXPECT_EQ(env.causation(), -1);
    EXPECT_EQ(messages::to_string_view(env.source()), "bridge/k8s");
    const auto* o = env.payload_as_ObjectObserved();
    observed x{str(env.entity_key()),
               str(o->api_version()),
               str(o->kind()),
               str(o->namespace_()),
               str(o->name()),
               str(o->uid()),
               str(o->resource_version()),
               str(o->spec_json()),
               str(o->status_json()),
               {},
               o->deleted()};
    if (o->labels() != nullptr)
      for (const auto* kv : *o->labels()) x.labels.emplace_back(str(kv->key()), str(kv->value()));
    out.push_back(std::move(x));
  });
  return out;
}

// The three recorded kinds, the Reservation and a user's PodMigrationJob against Koordinator's
// CRDs: one object of each created before the source starts (LIST), a PodGroup's status written,
// a Reservation's status written and the PodMigrationJob deleted while it watches, and while it
// is stopped a PodGroup's spec changed, the Device deleted and a second Reservation created. Each
// write of a recorded kind the apiserver answered is exactly one ObjectObserved with that
// answer's resourceVersion, spec and status; each Reservation one ReservationUpserted, its status
// write (the scheduler's own, coming back) nothing; the job one MigrationJobCreated and, deleted
// before it ended, one MigrationJobPhaseChanged Aborted/Deleted; MODIFIEDs of metadata the
// records do not carry (annotations) append nothing; the restart appends only the three changes
// made while stopped, and a third start appends nothing.
TEST_F(KubeSource, RecordsTheKindsNoComponentReadsOnceAcrossARestart) {
  if (!crds_) GTEST_SKIP() << "Koordinator CRDs absent (kube.sh apply-crds, docs/peers.md)";
  const std::string eqps =
      "/apis/quota.koordinator.sh/v1alpha1/namespaces/colony-src/"
      "elasticquotaprofiles";
  const std::string reservations = "/apis/scheduling.koordinator.sh/v1alpha1/reservations";
  const std::string pmjs = "/apis/scheduling.koordinator.sh/v1alpha1/podmigrationjobs";
  const std::string podgroups =
      "/apis/scheduling.sigs.k8s.io/v1alpha1/namespaces/colony-src/"
      "podgroups";
  const std::string devices = "/apis/scheduling.koordinator.sh/v1alpha1/devices";
  // Each answer the apiserver gave, by entity key, in write order: what the log must hold.
  struct expected_record {
    std::string key;
    json object;  // the apiserver's answer; null for a deletion
    std::string uid;
  };
  std::vector<expected_record> expected;
  std::map<std::string, std::string> uid_of;
  const auto answered = [&](const std::string& key, const result<response>& r) {
    EXPECT_TRUE(r) << key << ": " << r.error().describe();
    if (!r) return;
    json o = json::parse(r->body);
    uid_of[key] = o["metadata"]["uid"];
    expected.push_back({key, std::move(o), uid_of[key]});
  };
  const auto create = [&](const std::string& key, const std::string& path, const json& body) {
    answered(key, client_->post(path, body.dump()));
  };
  const auto merge = [&](const std::string& key, const std::string& path, const json& patch) {
    answered(key, client_->patch(path, patch_type::merge, patch.dump()));
  };
  const auto noise = [&](const std::string& path) {
    auto r = client_->patch(path, patch_type::merge,
                            R"({"metadata":{"annotations":{"colony.test/touched":"1"}}})");
    ASSERT_TRUE(r) << r.error().describe();
  };
  const auto remove = [&](const std::string& key, const std::string& path) {
    auto r = client_->del(path);
    ASSERT_TRUE(r) << r.error().describe();
    expected.push_back({key, json(), uid_of[key]});
  };
  const auto reservation = [&](const std::string& name) {
    return json{
        {"apiVersion", "scheduling.koordinator.sh/v1alpha1"},
        {"kind", "Reservation"},
        {"metadata", {{"name", name}, {"labels", {{"colony.test/owner", "web"}}}}},
        {"spec",
         {{"template",
           {{"spec",
             {{"schedulerName", "koord-scheduler"},
              {"containers", json::array({{{"name", "c"},
                                           {"image", "registry.invalid/pause:3.9"},
                                           {"resources", {{"requests", {{"cpu", "1"}}}}}}})}}}}},
          {"owners", json::array({{{"object", {{"name", "web-1"}, {"namespace", "colony-src"}}}}})},
          {"ttl", "5m"}}}};
  };

  create("ElasticQuotaProfile/colony-src/pool-a", eqps,
         {{"apiVersion", "quota.koordinator.sh/v1alpha1"},
          {"kind", "ElasticQuotaProfile"},
          {"metadata", {{"name", "pool-a"}, {"namespace", "colony-src"}}},
          {"spec",
           {{"quotaName", "pool-a-root"},
            {"resourceRatio", "0.9"},
            {"nodeSelector", {{"matchLabels", {{"pool", "a"}}}}}}}});
  const auto r1 = client_->post(reservations, reservation("r1").dump());
  ASSERT_TRUE(r1) << r1.error().describe();
  post(pmjs, {{"apiVersion", "scheduling.koordinator.sh/v1alpha1"},
              {"kind", "PodMigrationJob"},
              {"metadata", {{"name", "pmj-1"}}},
              {"spec",
               {{"podRef", {{"namespace", "colony-src"}, {"name", "web-1"}}},
                {"mode", "ReservationFirst"}}}});
  create("PodGroup/colony-src/train-1", podgroups,
         {{"apiVersion", "scheduling.sigs.k8s.io/v1alpha1"},
          {"kind", "PodGroup"},
          {"metadata",
           {{"name", "train-1"}, {"namespace", "colony-src"}, {"labels", {{"team", "ml"}}}}},
          {"spec", {{"minMember", 2}, {"scheduleTimeoutSeconds", 600}}}});
  create("Device/node-1", devices,
         {{"apiVersion", "scheduling.koordinator.sh/v1alpha1"},
          {"kind", "Device"},
          {"metadata", {{"name", "node-1"}}},
          {"spec",
           {{"devices", json::array({{{"type", "gpu"},
                                      {"id", "GPU-0"},
                                      {"minor", 0},
                                      {"health", true},
                                      {"resources",
                                       {{"koordinator.sh/gpu-core", "100"},
                                        {"koordinator.sh/gpu-memory", "80Gi"},
                                        {"koordinator.sh/gpu-memory-ratio", "100"}}}}})}}}});
  ASSERT_EQ(expected.size(), 3u);
  const int configs = config_objects() - 1 - 1;  // PriorityClasses only: no ConfigMap, no profile
  const log_offset listed = configs + 5;  // with r1's ReservationUpserted, the MigrationJobCreated
  {
    auto log = open_log();
    ASSERT_TRUE(log);
    auto src = open_source(*log);
    ASSERT_TRUE(src && src->start());
    ASSERT_TRUE(wait_until([&] { return src->synced(); }, seconds(30)));
    ASSERT_TRUE(settle(*log, listed)) << *log->end_offset() << " vs " << listed;
    EXPECT_EQ(src->counters().kinds_skipped, 0u);
    EXPECT_TRUE(src->skipped().empty());
    // While watching: a status written (the Reservation's subresource: the scheduler's write
    // coming back, so nothing; the PodGroup's, without a subresource: recorded), an annotation
    // (noise), a deletion.
    auto st = client_->patch(reservations + "/r1/status", patch_type::merge,
                             R"({"status":{"phase":"Available","nodeName":"node-1"}})");
    ASSERT_TRUE(st) << st.error().describe();
    merge("PodGroup/colony-src/train-1", podgroups + "/train-1",
          {{"status", {{"phase", "Scheduled"}, {"scheduled", 2}}}});
    noise(podgroups + "/train-1");
    auto d = client_->del(pmjs + "/pmj-1");
    ASSERT_TRUE(d) << d.error().describe();
    ASSERT_TRUE(settle(*log, listed + 2)) << *log->end_offset() << " vs " << listed + 2;
    src->stop();
    report(*src, "first");
    const auto c = src->counters();
    EXPECT_EQ(c.updates, 3u);
    EXPECT_EQ(c.unchanged, 2u);
    EXPECT_EQ(c.deletes, 1u);
    EXPECT_EQ(c.bad_objects, 0u);
  }
  // While stopped: a spec changed, a deletion, a creation, and an annotation (noise).
  merge("PodGroup/colony-src/train-1", podgroups + "/train-1", {{"spec", {{"minMember", 3}}}});
  remove("Device/node-1", devices + "/node-1");
  const auto r2 = client_->post(reservations, reservation("r2").dump());
  ASSERT_TRUE(r2) << r2.error().describe();
  noise(eqps + "/pool-a");
  ASSERT_EQ(expected.size(), 6u);
  {
    auto log = open_log();
    ASSERT_TRUE(log);
    auto src = open_source(*log);
    ASSERT_TRUE(src && src->start());
    ASSERT_TRUE(wait_until([&] { return src->synced(); }, seconds(30)));
    ASSERT_TRUE(settle(*log, listed + 5)) << *log->end_offset() << " vs " << listed + 5;
    src->stop();
    report(*src, "after the restart");
    const auto c = src->counters();
    EXPECT_EQ(c.events, 3u);
    EXPECT_EQ(c.adds, 1u);
    EXPECT_EQ(c.deletes, 1u);
    EXPECT_EQ(c.updates, 2u);
    EXPECT_EQ(c.unchanged, 1u);
  }
  {
    auto log = open_log();
    ASSERT_TRUE(log);
    auto src = open_source(*log);
    ASSERT_TRUE(src && src->start());
    ASSERT_TRUE(wait_until([&] { return src->synced(); }, seconds(30)));
    std::this_thread::sleep_for(milliseconds(500));
    src->stop();
    EXPECT_EQ(src->counters().events, 0u);
    EXPECT_EQ(*log->end_offset(), listed + 5);
  }

  auto log = open_log();
  ASSERT_TRUE(log);
  const auto got = observed_in(*log);
  ASSERT_EQ(got.size(), expected.size());
  // Per object, the records in log order are its writes in write order (objects interleave
  // across informers, so only the per-key order is fixed).
  std::map<std::string, std::vector<const observed*>> by_key;
  for (const auto& o : got) by_key[o.key].push_back(&o);
  std::map<std::string, std::size_t> next;
  std::set<std::pair<std::string, std::string>> versions;
  for (const auto& e : expected) {
    SCOPED_TRACE(e.key + (e.object.is_null() ? " deleted" : " " + e.object.dump()));
    ASSERT_TRUE(by_key.count(e.key));
    const auto i = next[e.key]++;
    ASSERT_LT(i, by_key[e.key].size());
    const observed& o = *by_key[e.key][i];
    EXPECT_EQ(o.uid, e.uid);
    EXPECT_FALSE(o.resource_version.empty());
    EXPECT_TRUE(versions.emplace(o.key, o.resource_version).second) << "a version twice";
    EXPECT_EQ(o.deleted, e.object.is_null());
    if (o.deleted) {
      EXPECT_EQ(o.spec, "");
      EXPECT_EQ(o.status, "");
      continue;
    }
    const json& a = e.object;
    EXPECT_EQ(o.resource_version, a["metadata"]["resourceVersion"]);
    EXPECT_EQ(o.api_version, a["apiVersion"]);
    EXPECT_EQ(o.kind, a["kind"]);
    EXPECT_EQ(o.name, a["metadata"]["name"]);
    EXPECT_EQ(o.ns, a["metadata"].value("namespace", std::string{}));
    EXPECT_EQ(json::parse(o.spec), a["spec"]);  // CRD defaults included, as the server holds it
    EXPECT_EQ(o.spec, a["spec"].dump());        // compact, keys sorted
    EXPECT_EQ(o.status, a.contains("status") ? a["status"].dump() : "");
    std::vector<std::pair<std::string, std::string>> labels;
    const json md_labels = a["metadata"].value("labels", json::object());
    for (const auto& [k, v] : md_labels.items()) labels.emplace_back(k, v.get<std::string>());
    EXPECT_EQ(o.labels, labels);
  }
  for (const auto& [key, records] : by_key) EXPECT_EQ(next[key], records.size()) << key;
  // The PodGroup's status write is in the log.
  EXPECT_EQ(json::parse(by_key["PodGroup/colony-src/train-1"][1]->status)["phase"], "Scheduled");
  // One ReservationUpserted per Reservation created, none for the status write; the defaults
  // came from the CRD (allocateOnce, ttl as given).
  std::vector<std::string> upserted;
  for_each_of(*log, wire::Payload::ReservationUpserted, [&](const wire::Envelope& env) {
    EXPECT_EQ(env.entity_kind(), wire::EntityKind::Reservation);
    EXPECT_EQ(env.causation(), -1);
    const auto* u = env.payload_as_ReservationUpserted();
    upserted.push_back(str(u->name()));
    EXPECT_FALSE(u->deleted());
    EXPECT_TRUE(u->allocate_once());
    EXPECT_EQ(u->ttl_ms(), 5 * 60 * 1000);
    EXPECT_EQ(messages::to_resource_list(u->requests()).cpu_milli, 1000);
    ASSERT_EQ(u->owners()->size(), 1u);
    EXPECT_EQ(str(u->owners()->Get(0)->object_name()), "web-1");
  });
  EXPECT_EQ(upserted, (std::vector<std::string>{"r1", "r2"}));
  EXPECT_EQ(by_key.count("Reservation/r1"), 0u);
  // Cluster-scoped keys carry no namespace; namespaced ones do.
  EXPECT_EQ(by_key.count("Device/node-1"), 1u);
  EXPECT_EQ(by_key.count("PodGroup/colony-src/train-1"), 1u);
  // The user's job: created once, aborted once by its deletion, keyed to the job.
  EXPECT_EQ(by_key.count("PodMigrationJob/pmj-1"), 0u);
  std::vector<std::string> job_records;
  for (const auto type :
       {wire::Payload::MigrationJobCreated, wire::Payload::MigrationJobPhaseChanged})
    for_each_of(*log, type, [&](const wire::Envelope& env) {
      EXPECT_EQ(env.entity_kind(), wire::EntityKind::PodMigrationJob);
      EXPECT_EQ(str(env.entity_key()), "pmj-1");
      EXPECT_EQ(env.causation(), -1);
      if (type == wire::Payload::MigrationJobCreated) {
        const auto* c = env.payload_as_MigrationJobCreated();
        job_records.push_back("created " + str(c->pod()) + " " + str(c->mode()));
      } else {
        const auto* p = env.payload_as_MigrationJobPhaseChanged();
        job_records.push_back(str(p->phase()) + " " + str(p->reason()));
      }
    });
  EXPECT_EQ(job_records, (std::vector<std::string>{"created colony-src/web-1 ReservationFirst",
                                                   "Aborted Deleted"}));
}

// A recorded kind whose CRD is not installed is skipped, reported once, and the others are still
// recorded: PodGroup's CRD (scheduler-plugins') removed before the source starts.
TEST_F(KubeSource, RecordedKindWithoutItsCrdIsSkipped) {
  if (!crds_) GTEST_SKIP() << "Koordinator CRDs absent (kube.sh apply-crds, docs/peers.md)";
  auto d = client_->del(
      "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/podgroups.scheduling.sigs.k8s.io");
  ASSERT_TRUE(d) << d.error().describe();
  ASSERT_TRUE(wait_until(
      [&] {
        list_options lo;
        lo.limit = 1;
        auto r = client_->list("/apis/scheduling.sigs.k8s.io/v1alpha1/podgroups", lo);
        return !r && r.error().code == errc::not_found;
      },
      seconds(90)));  // a CRD's removal takes its time on a loaded machine
  post("/apis/scheduling.koordinator.sh/v1alpha1/devices",
       {{"apiVersion", "scheduling.koordinator.sh/v1alpha1"},
        {"kind", "Device"},
        {"metadata", {{"name", "node-1"}}},
        {"spec", {{"devices", json::array()}}}});
  const int configs = config_objects() - 1 - 1;
  auto log = open_log();
  ASSERT_TRUE(log);
  auto src = open_source(*log);
  ASSERT_TRUE(src && src->start());
  ASSERT_TRUE(wait_until([&] { return src->synced(); }, seconds(30)));
  ASSERT_TRUE(settle(*log, configs + 1)) << *log->end_offset();
  src->stop();
  EXPECT_EQ(src->counters().kinds_skipped, 1u);
  ASSERT_EQ(src->skipped().size(), 1u);
  EXPECT_EQ(src->skipped()[0].rfind("podgroups: ", 0), 0u) << src->skipped()[0];
  EXPECT_FALSE(src->failure().has_value());
  const auto got = observed_in(*log);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].key, "Device/node-1");
  EXPECT_EQ(got[0].spec, R"({"devices":[]})");
}

}  // namespace
}  // namespace colony::kube
