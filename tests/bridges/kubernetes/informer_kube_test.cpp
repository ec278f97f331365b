// The API client and informers against a real kube-apiserver + etcd (label kube).
//
// Each test starts its own apiserver in a fresh temporary folder through tools/peers/kube.sh
// (kube_peer.hpp), so faults (compaction, a killed apiserver) never leak between tests. A test
// is skipped only when kube.sh's binaries are not installed. docs/kubernetes-bridge.md.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <functional>
#include <iostream>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include <nlohmann/json.hpp>

#include "bridges/kubernetes/api_client.hpp"
#include "bridges/kubernetes/informer.hpp"
#include "tests/bridges/kubernetes/kube_peer.hpp"

namespace colony::kube {
namespace {

using json = nlohmann::json;
using std::chrono::milliseconds;
using std::chrono::seconds;
using testing::kube_peer;

// Polls `pred` every 20 ms until it holds or `limit` passes.
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

// What the handlers saw, in order: (kind A/U/D, key, resourceVersion of the new/last object).
class recorder {
 public:
  informer_handlers handlers() {
    informer_handlers h;
    h.on_add = [this](const std::string& key, const json& obj) { note('A', key, obj); };
    h.on_update = [this](const std::string& key, const json& old_obj, const json& obj) {
      std::lock_guard lk(mu_);
      log_.emplace_back('U', key, rv(obj));
      updates_.emplace_back(old_obj, obj);
    };
    h.on_delete = [this](const std::string& key, const json& obj) { note('D', key, obj); };
    return h;
  }
  std::size_t count(char kind, const std::string& key = {}) const {
    std::lock_guard lk(mu_);
    std::size_t n = 0;
    for (const auto& [k, name, v] : log_) n += (k == kind && (key.empty() || name == key)) ? 1 : 0;
    return n;
  }
  std::set<std::string> keys(char kind) const {
    std::lock_guard lk(mu_);
    std::set<std::string> s;
    for (const auto& [k, name, v] : log_)
      if (k == kind) s.insert(name);
    return s;
  }
  std::vector<std::pair<json, json>> updates() const {
    std::lock_guard lk(mu_);
    return updates_;
  }
  std::size_t size() const {
    std::lock_guard lk(mu_);
    return log_.size();
  }
  static std::string rv(const json& obj) {
    return obj.value("/metadata/resourceVersion"_json_pointer, std::string{});
  }

 private:
  void note(char kind, const std::string& key, const json& obj) {
    std::lock_guard lk(mu_);
    log_.emplace_back(kind, key, rv(obj));
  }
  mutable std::mutex mu_;
  std::vector<std::tuple<char, std::string, std::string>> log_;
  std::vector<std::pair<json, json>> updates_;
};

// An informer on its own thread; stopped and joined on destruction.
class running {
 public:
  explicit running(std::unique_ptr<informer> inf) : inf_(std::move(inf)) {}
  void start() {
    thread_ = std::thread([this] { inf_->run(); });
  }
  void stop() {
    inf_->stop();
    if (thread_.joinable()) thread_.join();
  }
  ~running() { stop(); }
  informer& operator*() { return *inf_; }
  informer* operator->() { return inf_.get(); }

 private:
  std::unique_ptr<informer> inf_;
  std::thread thread_;
};

std::string pod_json(const std::string& ns, const std::string& name) {
  return json{
      {"apiVersion", "v1"},
      {"kind", "Pod"},
      {"metadata", {{"name", name}, {"namespace", ns}, {"labels", {{"app", "colony-test"}}}}},
      {"spec",
       {{"containers",
         json::array({{{"name", "c"},
                       {"image", "registry.invalid/pause:3.9"},
                       {"resources", {{"requests", {{"cpu", "100m"}, {"memory", "16Gi"}}}}}}})}}}}
      .dump();
}

std::string node_json(const std::string& name) {
  return json{{"apiVersion", "v1"},
              {"kind", "Node"},
              {"metadata", {{"name", name}, {"labels", {{"colony.test/pool", "bench"}}}}},
              {"status",
               {{"capacity", {{"cpu", "32"}, {"memory", "128Gi"}, {"pods", "110"}}},
                {"allocatable", {{"cpu", "31500m"}, {"memory", "120Gi"}, {"pods", "110"}}}}}}
      .dump();
}

class Kube : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why;
    if (!kube_peer::binaries_installed(why)) GTEST_SKIP() << why;
    const auto t0 = std::chrono::steady_clock::now();
    auto p = kube_peer::start(apiserver_args_);
    ASSERT_TRUE(p) << p.error().describe();
    peer_ = std::move(*p);
    RecordProperty("apiserver_start_s", std::to_string(since_s(t0)));
    auto c = api_client::open(peer_->conn());
    ASSERT_TRUE(c) << c.error().describe();
    client_ = std::make_unique<api_client>(std::move(*c));
  }

  void make_namespace(const std::string& ns) {
    auto r = client_->post(
        "/api/v1/namespaces",
        json{{"apiVersion", "v1"}, {"kind", "Namespace"}, {"metadata", {{"name", ns}}}}.dump());
    ASSERT_TRUE(r) << r.error().describe();
  }
  void make_pod(const std::string& ns, const std::string& name) {
    auto r = client_->post("/api/v1/namespaces/" + ns + "/pods", pod_json(ns, name));
    ASSERT_TRUE(r) << r.error().describe();
  }
  void label_pod(const std::string& ns, const std::string& name, const std::string& value) {
    auto r = client_->patch("/api/v1/namespaces/" + ns + "/pods/" + name, patch_type::merge,
                            json{{"metadata", {{"labels", {{"colony.test/mark", value}}}}}}.dump());
    ASSERT_TRUE(r) << r.error().describe();
  }
  void delete_pod(const std::string& ns, const std::string& name) {
    // gracePeriodSeconds=0: no kubelet will confirm a graceful delete (docs/peers.md B.5).
    auto r = client_->del("/api/v1/namespaces/" + ns + "/pods/" + name, 0);
    ASSERT_TRUE(r) << r.error().describe();
  }
  // key -> resourceVersion of what the server holds now.
  std::map<std::string, std::string> server_state(const std::string& path) {
    std::map<std::string, std::string> m;
    auto r = client_->list(path, {});
    EXPECT_TRUE(r) << r.error().describe();
    if (!r) return m;
    const json body = json::parse(r->body);
    for (const auto& item : body["items"]) {
      m[*object_key(item)] = item["metadata"]["resourceVersion"].get<std::string>();
    }
    return m;
  }
  static std::map<std::string, std::string> versions(const object_store& s) {
    std::map<std::string, std::string> m;
    for (const auto& [k, v] : s) m[k] = v.resource_version;
    return m;
  }
  std::unique_ptr<informer> make_informer(const std::string& path, recorder& rec,
                                          informer_options o = {}) {
    auto inf = informer::create(peer_->conn(), path, rec.handlers(), std::move(o));
    EXPECT_TRUE(inf) << inf.error().describe();
    return inf ? std::move(*inf) : nullptr;
  }
  static informer_options fast_options() {
    informer_options o;
    o.backoff_initial = milliseconds(100);
    o.backoff_max = milliseconds(1000);
    o.seed = 7;
    return o;
  }
  static void report(const informer& inf, const char* what) {
    const auto c = inf.counters();
    std::cout << what << ": lists " << c.lists << " pages " << c.list_pages << " relists "
              << c.relists << " watches " << c.watches << " reconnects " << c.reconnects << " gone "
              << c.gone << " events " << c.events << " bookmarks " << c.bookmarks << " duplicates "
              << c.duplicates << " adds " << c.adds << " updates " << c.updates << " deletes "
              << c.deletes << " errors " << c.errors << "\n";
  }

  std::string apiserver_args_;
  std::unique_ptr<kube_peer> peer_;
  std::unique_ptr<api_client> client_;
};

// Suites by subject; one fixture (an apiserver per test).
using KubeInformer = Kube;
using KubeApiClient = Kube;
using KubeBench = Kube;

// (a) 250 nodes listed 100 at a time: three pages of one snapshot, every node seen once.
TEST_F(KubeInformer, ListsTwoHundredFiftyNodesInThreePages) {
  for (int i = 0; i < 250; ++i) {
    char name[32];
    std::snprintf(name, sizeof name, "node-%03d", i);
    auto r = client_->post("/api/v1/nodes", node_json(name));
    ASSERT_TRUE(r) << r.error().describe();
    ASSERT_EQ(r->status, 201);
  }
  EXPECT_EQ(client_->last_http_version(), 2) << "kube-apiserver speaks HTTP/2 over TLS";

  std::set<std::string> names;
  std::vector<std::size_t> page_sizes;
  std::set<std::string> snapshot_rvs;
  list_options o;
  o.limit = 100;
  do {
    auto page = client_->list("/api/v1/nodes", o);
    ASSERT_TRUE(page) << page.error().describe();
    const json body = json::parse(page->body);
    page_sizes.push_back(body["items"].size());
    for (const auto& item : body["items"])
      names.insert(item["metadata"]["name"].get<std::string>());
    snapshot_rvs.insert(body["metadata"]["resourceVersion"].get<std::string>());
    o.continue_token = body["metadata"].value("continue", std::string{});
    if (page_sizes.size() == 1) {
      EXPECT_EQ(body["metadata"].value("remainingItemCount", 0), 150);
    }
    ASSERT_LE(page_sizes.size(), 4u) << "paging does not end";
  } while (!o.continue_token.empty());
  EXPECT_EQ(page_sizes, (std::vector<std::size_t>{100, 100, 50}));
  EXPECT_EQ(names.size(), 250u);
  EXPECT_EQ(snapshot_rvs.size(), 1u) << "all pages come from one snapshot";

  // The informer pages the same way and hands every node over once.
  recorder rec;
  informer_options opt = fast_options();
  opt.page_size = 100;
  running inf(make_informer("/api/v1/nodes", rec, opt));
  inf.start();
  ASSERT_TRUE(wait_until([&] { return inf->synced(); }, seconds(30)));
  inf.stop();
  const auto c = inf->counters();
  report(*inf, "list informer");
  EXPECT_EQ(c.lists, 1u);
  EXPECT_EQ(c.list_pages, 3u);
  EXPECT_EQ(c.adds, 250u);
  EXPECT_EQ(rec.keys('A'), names);
  EXPECT_EQ(inf->store().size(), 250u);
  EXPECT_EQ(inf->resource_version(), *snapshot_rvs.begin());
}

// (b) Pods created, patched and deleted while the informer watches.
TEST_F(KubeInformer, SeesPodsAddedModifiedDeleted) {
  const std::string ns = "colony-b";
  make_namespace(ns);
  make_pod(ns, "before-0");
  make_pod(ns, "before-1");
  recorder rec;
  running inf(make_informer("/api/v1/namespaces/" + ns + "/pods", rec, fast_options()));
  inf.start();
  ASSERT_TRUE(wait_until([&] { return inf->synced(); }, seconds(30)));
  EXPECT_EQ(rec.keys('A'), (std::set<std::string>{ns + "/before-0", ns + "/before-1"}));

  for (int i = 0; i < 5; ++i) make_pod(ns, "p" + std::to_string(i));
  for (int i = 0; i < 3; ++i) label_pod(ns, "p" + std::to_string(i), "patched");
  delete_pod(ns, "p3");
  delete_pod(ns, "p4");
  delete_pod(ns, "before-0");
  ASSERT_TRUE(wait_until([&] { return rec.count('A') == 7 && rec.count('D') == 3; }, seconds(30)))
      << "adds " << rec.count('A') << " deletes " << rec.count('D');
  ASSERT_TRUE(wait_until(
      [&] {
        const auto c = inf->counters();
        return c.events >= 5 + 3 + 3;  // the watch delivered every write
      },
      seconds(10)));
  // Everything the server holds has been seen; nothing is pending.
  std::this_thread::sleep_for(milliseconds(500));
  inf.stop();
  report(*inf, "pod informer");
  const auto c = inf->counters();

  for (int i = 0; i < 5; ++i) EXPECT_EQ(rec.count('A', ns + "/p" + std::to_string(i)), 1u) << i;
  EXPECT_EQ(rec.keys('D'), (std::set<std::string>{ns + "/before-0", ns + "/p3", ns + "/p4"}));
  std::set<std::string> patched;
  for (const auto& [old_obj, new_obj] : rec.updates()) {
    if (new_obj["metadata"]["labels"].value("colony.test/mark", "") == "patched" &&
        old_obj["metadata"]["labels"].value("colony.test/mark", "") == "") {
      patched.insert(new_obj["metadata"]["name"].get<std::string>());
    }
  }
  EXPECT_EQ(patched, (std::set<std::string>{"p0", "p1", "p2"}));
  EXPECT_GE(c.events, 11u);
  EXPECT_EQ(c.lists, 1u);
  EXPECT_EQ(c.duplicates, 0u);
  EXPECT_EQ(c.errors, 0u) << (inf->last_error() ? inf->last_error()->describe() : "");
  EXPECT_EQ(versions(inf->store()), server_state("/api/v1/namespaces/" + ns + "/pods"));
}

// (c) Resume from an old resourceVersion after etcd compaction: 410, relist, and only the
// differences come out. The watch cache is off, so compaction alone expires the version.
class KubeInformerNoWatchCache : public Kube {
 protected:
  KubeInformerNoWatchCache() { apiserver_args_ = "--watch-cache=false"; }
};

TEST_F(KubeInformerNoWatchCache, RelistAfterCompactionEmitsOnlyTheDifferences) {
  const std::string ns = "colony-c";
  const std::string path = "/api/v1/namespaces/" + ns + "/pods";
  make_namespace(ns);
  for (const char* n : {"same-0", "same-1", "same-2", "same-3", "same-4", "same-5", "mod-0",
                        "mod-1", "del-0", "del-1"}) {
    make_pod(ns, n);
  }
  std::string old_rv;
  object_store old_store;
  {
    recorder rec;
    running first(make_informer(path, rec, fast_options()));
    first.start();
    ASSERT_TRUE(wait_until([&] { return first->synced(); }, seconds(30)));
    first.stop();
    EXPECT_EQ(rec.count('A'), 10u);
    old_rv = first->resource_version();
    old_store = first->store();
  }
  // While nobody watches: 3 adds, 2 modifications, 2 deletions; then compaction.
  for (const char* n : {"new-0", "new-1", "new-2"}) make_pod(ns, n);
  label_pod(ns, "mod-0", "changed");
  label_pod(ns, "mod-1", "changed");
  delete_pod(ns, "del-0");
  delete_pod(ns, "del-1");
  auto rev = peer_->compact();
  ASSERT_TRUE(rev) << rev.error().describe();
  EXPECT_GT(std::stoll(*rev), std::stoll(old_rv));

  recorder rec;
  running second(make_informer(path, rec, fast_options()));
  second->resume_from(old_rv, old_store);
  second.start();
  ASSERT_TRUE(
      wait_until([&] { return rec.size() >= 7 && second->counters().relists == 1; }, seconds(30)))
      << rec.size() << " changes";
  std::this_thread::sleep_for(milliseconds(1500));  // room for anything that should not come
  second.stop();
  report(*second, "resumed informer");
  const auto c = second->counters();
  EXPECT_GE(c.gone, 1u);
  EXPECT_EQ(c.relists, 1u);
  EXPECT_EQ(rec.keys('A'), (std::set<std::string>{ns + "/new-0", ns + "/new-1", ns + "/new-2"}));
  EXPECT_EQ(rec.keys('U'), (std::set<std::string>{ns + "/mod-0", ns + "/mod-1"}));
  EXPECT_EQ(rec.keys('D'), (std::set<std::string>{ns + "/del-0", ns + "/del-1"}));
  EXPECT_EQ(rec.size(), 7u) << "nothing unchanged is emitted again";
  for (const auto& [old_obj, new_obj] : rec.updates()) {
    EXPECT_EQ(recorder::rv(old_obj), old_store.at(*object_key(old_obj)).resource_version);
    EXPECT_EQ(new_obj["metadata"]["labels"].value("colony.test/mark", ""), "changed");
  }
  EXPECT_EQ(versions(second->store()), server_state(path));

  // A restart with the store kept and nothing compacted: no LIST, nothing emitted twice.
  recorder rec3;
  running third(make_informer(path, rec3, fast_options()));
  third->resume_from(second->resource_version(), second->store());
  third.start();
  ASSERT_TRUE(wait_until([&] { return third->counters().watches >= 1; }, seconds(10)));
  std::this_thread::sleep_for(milliseconds(500));
  make_pod(ns, "after-resume");
  ASSERT_TRUE(wait_until([&] { return rec3.size() >= 1; }, seconds(30)));
  std::this_thread::sleep_for(milliseconds(1000));
  third.stop();
  report(*third, "resumed again");
  EXPECT_EQ(third->counters().lists, 0u);
  EXPECT_EQ(rec3.size(), 1u);
  EXPECT_EQ(rec3.count('A', ns + "/after-resume"), 1u);

  // A process that saved its store after the last change but its resourceVersion before it
  // (it died in between): the server sends that change again and it is recognised, not re-emitted.
  recorder rec4;
  running fourth(make_informer(path, rec4, fast_options()));
  fourth->resume_from(second->resource_version(), third->store());
  fourth.start();
  ASSERT_TRUE(wait_until([&] { return fourth->counters().events >= 1; }, seconds(30)));
  std::this_thread::sleep_for(milliseconds(500));
  fourth.stop();
  report(*fourth, "resumed with a lagging resourceVersion");
  EXPECT_EQ(fourth->counters().duplicates, 1u);
  EXPECT_EQ(rec4.size(), 0u);
  EXPECT_EQ(fourth->resource_version(), third->resource_version());
}

// (d) The apiserver dies and comes back while the informer runs.
TEST_F(KubeInformer, ReconnectsAfterApiserverRestartWithoutDuplicateAdds) {
  const std::string ns = "colony-d";
  make_namespace(ns);
  for (int i = 0; i < 3; ++i) make_pod(ns, "p" + std::to_string(i));
  recorder rec;
  running inf(make_informer("/api/v1/namespaces/" + ns + "/pods", rec, fast_options()));
  inf.start();
  ASSERT_TRUE(wait_until([&] { return rec.count('A') == 3; }, seconds(30)));

  const auto t0 = std::chrono::steady_clock::now();
  ASSERT_TRUE(peer_->kill_apiserver());
  ASSERT_TRUE(wait_until([&] { return inf->counters().errors >= 2; }, seconds(30)))
      << "the informer noticed the apiserver is gone";
  ASSERT_TRUE(peer_->restart_apiserver());
  const double down_s = since_s(t0);
  const auto t1 = std::chrono::steady_clock::now();
  make_pod(ns, "after-restart");
  ASSERT_TRUE(wait_until([&] { return rec.count('A', ns + "/after-restart") == 1; }, seconds(60)));
  const double seen_s = since_s(t1);
  std::this_thread::sleep_for(milliseconds(1000));
  inf.stop();
  report(*inf, "restart informer");
  std::cout << "apiserver down for " << down_s << " s; new pod seen " << seen_s
            << " s after the restart\n";
  RecordProperty("new_pod_seen_after_restart_s", std::to_string(seen_s));
  const auto c = inf->counters();
  EXPECT_GE(c.reconnects, 1u);
  EXPECT_GE(c.watches, 2u);
  EXPECT_EQ(c.adds, 4u);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(rec.count('A', ns + "/p" + std::to_string(i)), 1u);
  EXPECT_EQ(rec.count('D'), 0u);
  ASSERT_TRUE(inf->last_error());
  EXPECT_EQ(inf->last_error()->code, errc::unavailable) << inf->last_error()->describe();
  EXPECT_EQ(versions(inf->store()), server_state("/api/v1/namespaces/" + ns + "/pods"));
}

// (e) Refusals are error values naming the URL, classified by what the caller does next.
TEST_F(KubeApiClient, BadTokenIsAnErrorNamingTheUrl) {
  connection bad = peer_->conn();
  bad.token = "not-a-token";
  auto client = api_client::open(bad);
  ASSERT_TRUE(client);
  auto r = client->get("/api/v1/nodes");
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, errc::failed_precondition);
  EXPECT_EQ(r.error().message.rfind("HTTP 401 Unauthorized", 0), 0u) << r.error().message;
  EXPECT_EQ(r.error().where, "GET " + peer_->conn().server + "/api/v1/nodes");

  connection viewer = peer_->conn();
  viewer.token = peer_->viewer_token();
  ASSERT_FALSE(viewer.token.empty());
  auto vc = api_client::open(viewer);
  ASSERT_TRUE(vc);
  auto forbidden = vc->list("/api/v1/nodes", {});
  ASSERT_FALSE(forbidden);
  EXPECT_EQ(forbidden.error().code, errc::failed_precondition);
  EXPECT_EQ(forbidden.error().message.rfind("HTTP 403 Forbidden", 0), 0u);

  auto missing = client_->get("/api/v1/nodes/absent");
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().code, errc::not_found);
  auto created = client_->post("/api/v1/nodes", node_json("twice"));
  ASSERT_TRUE(created) << created.error().describe();
  auto again = client_->post("/api/v1/nodes", node_json("twice"));
  ASSERT_FALSE(again);
  EXPECT_EQ(again.error().code, errc::already_exists) << again.error().describe();
  json stale = json::parse(created->body);
  auto moved = client_->patch("/api/v1/nodes/twice", patch_type::strategic,
                              R"({"metadata":{"labels":{"moved":"yes"}}})");
  ASSERT_TRUE(moved) << moved.error().describe();
  auto conflict = client_->put("/api/v1/nodes/twice", stale.dump());  // stale resourceVersion
  ASSERT_FALSE(conflict);
  EXPECT_EQ(conflict.error().code, errc::failed_precondition) << conflict.error().describe();
  auto applied = client_->patch(
      "/api/v1/nodes/twice", patch_type::apply,
      R"({"apiVersion":"v1","kind":"Node","metadata":{"name":"twice","labels":{"applied":"yes"}}})",
      "colony-tests", true);
  ASSERT_TRUE(applied) << applied.error().describe();
  EXPECT_EQ(json::parse(applied->body)["metadata"]["labels"].value("applied", ""), "yes");

  // TLS verification is on: without the test CA the server's certificate is refused.
  connection untrusted = peer_->conn();
  untrusted.ca_file.clear();
  auto uc = api_client::open(untrusted);
  ASSERT_TRUE(uc);
  auto tls = uc->get("/version");
  ASSERT_FALSE(tls);
  EXPECT_EQ(tls.error().code, errc::failed_precondition) << tls.error().describe();

  // A proxy in the environment is not used for a loopback server, as kubectl would not use it
  // (nothing listens on the discard port the proxy names, so a proxied request fails).
  ::setenv("https_proxy", "http://127.0.0.1:9", 1);
  ::setenv("HTTPS_PROXY", "http://127.0.0.1:9", 1);
  auto proxied = api_client::open(peer_->conn());
  ASSERT_TRUE(proxied);
  auto version = proxied->get("/version");
  ::unsetenv("https_proxy");
  ::unsetenv("HTTPS_PROXY");
  EXPECT_TRUE(version) << version.error().describe();

  // An informer with the bad token keeps retrying and says why; stop() still ends it at once.
  recorder rec;
  auto inf = informer::create(bad, "/api/v1/nodes", rec.handlers(), fast_options());
  ASSERT_TRUE(inf);
  running runner(std::move(*inf));
  runner.start();
  ASSERT_TRUE(wait_until([&] { return runner->counters().errors >= 3; }, seconds(30)));
  const auto t0 = std::chrono::steady_clock::now();
  runner.stop();
  EXPECT_LT(since_s(t0), 2.0);
  EXPECT_FALSE(runner->synced());
  EXPECT_EQ(rec.size(), 0u);
  ASSERT_TRUE(runner->last_error());
  EXPECT_NE(runner->last_error()->message.find("401"), std::string::npos);
  EXPECT_GE(runner->counters().reconnects, 2u);
}

// Figures for docs/kubernetes-bridge.md. COLONY_KUBE_BENCH_NODES nodes (default 1000) are
// created from two clients and listed by an informer (pages of 500). Then every node is
// patched while a second informer watches (live: bounded by the writers), and a third one
// resumes from before the patches, so the apiserver streams the whole backlog at once (the
// watch path's own rate).
TEST_F(KubeBench, MeasuresListAndWatchRates) {
  const char* env = std::getenv("COLONY_KUBE_BENCH_NODES");
  const int nodes = env != nullptr ? std::atoi(env) : 1000;
  ASSERT_GT(nodes, 0);
  const auto n = static_cast<std::size_t>(nodes);
  constexpr int writers = 2;
  const auto write_all = [&](const std::function<result<response>(api_client&, int)>& op) {
    std::vector<std::thread> ts;
    std::vector<std::string> errs(writers);
    for (int w = 0; w < writers; ++w) {
      ts.emplace_back([&, w] {
        auto c = api_client::open(peer_->conn());
        if (!c) {
          errs[w] = c.error().describe();
          return;
        }
        for (int i = w; i < nodes; i += writers) {
          if (auto r = op(*c, i); !r) {
            errs[w] = r.error().describe();
            return;
          }
        }
      });
    }
    for (auto& t : ts) t.join();
    for (const auto& e : errs) EXPECT_EQ(e, "");
  };
  const auto name = [](int i) {
    char b[32];
    std::snprintf(b, sizeof b, "bench-%05d", i);
    return std::string(b);
  };
  auto t0 = std::chrono::steady_clock::now();
  write_all([&](api_client& c, int i) { return c.post("/api/v1/nodes", node_json(name(i))); });
  const double create_s = since_s(t0);

  // LIST: a fresh informer until synced.
  std::string rv0;
  object_store store0;
  double list_s = 0;
  std::uint64_t pages = 0;
  {
    recorder rec;
    running inf(make_informer("/api/v1/nodes", rec, fast_options()));
    t0 = std::chrono::steady_clock::now();
    inf.start();
    ASSERT_TRUE(wait_until([&] { return inf->synced(); }, seconds(120)));
    list_s = since_s(t0);
    inf.stop();
    ASSERT_EQ(rec.count('A'), n);
    pages = inf->counters().list_pages;
    rv0 = inf->resource_version();
    store0 = inf->store();
  }

  // The same paginated LIST from one client over HTTP/2 and over HTTP/1.1 (best of 3 each).
  const auto list_time = [&](bool http2) {
    client_options co;
    co.http2 = http2;
    auto c = api_client::open(peer_->conn(), co);
    EXPECT_TRUE(c);
    double best = 1e9;
    for (int round = 0; round < 3 && c; ++round) {
      const auto t = std::chrono::steady_clock::now();
      list_options o;
      o.limit = 500;
      do {
        auto page = c->list("/api/v1/nodes", o);
        EXPECT_TRUE(page) << page.error().describe();
        if (!page) return best;
        o.continue_token = json::parse(page->body)["metadata"].value("continue", std::string{});
      } while (!o.continue_token.empty());
      best = std::min(best, since_s(t));
    }
    EXPECT_EQ(c->last_http_version(), http2 ? 2 : 11);
    return best;
  };
  const double list_h2_s = list_time(true);
  const double list_h1_s = list_time(false);

  // Live: patches while an informer watches.
  recorder live;
  running watcher(make_informer("/api/v1/nodes", live, fast_options()));
  watcher->resume_from(rv0, store0);
  watcher.start();
  t0 = std::chrono::steady_clock::now();
  write_all([&](api_client& c, int i) {
    return c.patch("/api/v1/nodes/" + name(i), patch_type::merge,
                   R"({"metadata":{"labels":{"colony.test/round":"2"}}})");
  });
  const double patch_s = since_s(t0);
  ASSERT_TRUE(wait_until([&] { return live.count('U') == n; }, seconds(120)));
  const double live_s = since_s(t0);
  watcher.stop();
  report(*watcher, "live informer");
  EXPECT_EQ(watcher->counters().updates, n);

  // Backlog: resume from before the patches; the server sends all of them at once.
  recorder backlog;
  running replay(make_informer("/api/v1/nodes", backlog, fast_options()));
  replay->resume_from(rv0, store0);
  t0 = std::chrono::steady_clock::now();
  replay.start();
  ASSERT_TRUE(wait_until([&] { return backlog.count('U') == n; }, seconds(120)));
  const double replay_s = since_s(t0);
  replay.stop();
  report(*replay, "backlog informer");
  EXPECT_EQ(backlog.size(), n) << "only the patched versions, each once";

  const json figures = {{"nodes", nodes},
                        {"create_per_s", nodes / create_s},
                        {"list_s", list_s},
                        {"list_pages", pages},
                        {"raw_list_http2_s", list_h2_s},
                        {"raw_list_http11_s", list_h1_s},
                        {"patch_per_s", nodes / patch_s},
                        {"live_events_per_s", nodes / live_s},
                        {"last_event_after_last_patch_s", live_s - patch_s},
                        {"backlog_events_per_s", nodes / replay_s},
                        {"backlog_relisted", replay->counters().relists > 0}};
  std::cout << "kube-bench " << figures.dump() << "\n";
  RecordProperty("figures", figures.dump());
}

}  // namespace
}  // namespace colony::kube
