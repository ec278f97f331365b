// colony run against a real kube-apiserver + etcd (tools/peers/kube.sh): pods created through
// the API are admitted, scheduled and bound by Colony's components, and a restarted run over
// the same log binds what came meanwhile without binding anything twice.
#include <atomic>
#include <csignal>
#include <cstdio>
#include <random>

#include <sys/wait.h>
#include <unistd.h>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <thread>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "actors/entities/audit.hpp"
#include "bridges/kubernetes/api_client.hpp"
#include "messages/codec.hpp"
#include "messages/quantity.hpp"
#include "run/cluster_run.hpp"
#include "sim/driver.hpp"
#include "stores/event_log.hpp"
#include "tests/bridges/kubernetes/kube_peer.hpp"
#include "tests/run/colony_run_test.hpp"

namespace colony::run {
namespace {

using json = nlohmann::json;
using kube::api_client;
using kube::testing::kube_peer;

class ColonyRun : public colony::run::testing::colony_run_test {};

// The apiserver without its watch cache, so that compacting etcd expires an informer's
// resourceVersion (with the cache, the apiserver would serve the old version from memory).
class ColonyRunNoWatchCache : public colony::run::testing::colony_run_test {
 protected:
  ColonyRunNoWatchCache() { apiserver_args_ = "--watch-cache=false"; }
};

TEST_F(ColonyRun, BindsEveryPodWithinCapacityAndNothingTwiceAcrossARestart) {
  for (int i = 0; i < 3; ++i) make_node("n" + std::to_string(i));
  for (int i = 0; i < 18; ++i) make_pod("p" + std::to_string(i));

  auto s1 = run_until_bound(std::chrono::seconds(90));
  ASSERT_TRUE(s1) << s1.error().describe();
  auto m = placements();
  ASSERT_EQ(m.size(), 18u);
  std::map<std::string, int> per_node;
  for (const auto& [p, n] : m) {
    EXPECT_FALSE(n.empty()) << p << " not bound";
    ++per_node[n];
  }
  for (const auto& [n, k] : per_node) EXPECT_LE(k * 500, 4000) << n << " over its 4 cores";
  EXPECT_GE(s1->writes, 18u);  // one binding per pod at least
  EXPECT_EQ(s1->write_failures, 0u);
  EXPECT_GE(s1->decisions, 3u * 18u);  // PodMutated, PodBindProposed, PodScheduled per pod

  // Stopped: six more pods; a new run over the same log replays it and binds only those. The
  // sink's saved position is set back to the start, as after a crash right after the appends:
  // the restart carries the logged decisions out again, and the writes are idempotent.
  for (int i = 18; i < 24; ++i) make_pod("p" + std::to_string(i));
  {
    std::ofstream pos(work_ + "/log.sink-position", std::ios::trunc);
    pos << 0 << "\n";
  }
  auto s2 = run_until_bound(std::chrono::seconds(90));
  ASSERT_TRUE(s2) << s2.error().describe();
  EXPECT_GT(s2->replayed, 0u);
  EXPECT_EQ(s2->recovered, 0u);           // a clean stop leaves nothing to re-derive
  EXPECT_GE(s2->carried_over, 3u * 18u);  // the first run's decisions, carried out again
  EXPECT_EQ(s1->carried_over, 0u);
  EXPECT_EQ(s2->write_failures, 0u);  // the 18 earlier bindings again: same node, no failure
  EXPECT_GE(s2->writes, 6u);
  const auto m2 = placements();
  ASSERT_EQ(m2.size(), 24u);
  for (const auto& [p, n] : m2) {
    EXPECT_FALSE(n.empty()) << p << " not bound after the restart";
    if (m.count(p) != 0) {
      EXPECT_EQ(n, m.at(p)) << p << " moved";
    }
  }
  const auto sched = scheduled_in_log();
  EXPECT_EQ(sched.size(), 24u);
  for (const auto& [p, k] : sched) EXPECT_EQ(k, 1) << p << " scheduled " << k << " times";
}

// The reliability test: colony run (tests/run/run_child.cpp, run_cluster in a process)
// SIGKILLed at random points, at least
// 20 times, while 2,000 pods are created; after each restart it resumes from the log. At the
// end every pod is bound, no pod was scheduled twice, and the log passes the control plane's
// safety audit (no node over capacity at any prefix, every proposal answered once, ...).
TEST_F(ColonyRun, SurvivesTwentySigkillsWhilePlacingTwoThousandPods) {
  constexpr int nodes = 25, pods = 2000, min_kills = 20;
  // 25 nodes x 48 cores for 2,000 pods of 500m (1,000 cores): every pod fits.
  for (int i = 0; i < nodes; ++i) make_node("n" + std::to_string(i), "48");
  std::atomic<int> created{0};
  std::thread creator([&] {
    for (int i = 0; i < pods; ++i) {
      make_pod("p" + std::to_string(i));
      created = i + 1;
      std::this_thread::sleep_for(std::chrono::milliseconds(4));  // ~12 s of creation
    }
  });
  std::mt19937_64 rng(20261126);
  auto spawn = [&] {
    const pid_t pid = ::fork();
    if (pid == 0) {
      const std::string out = work_ + "/run.out", err = work_ + "/run.err";
      std::freopen(out.c_str(), "a", stdout);
      std::freopen(err.c_str(), "a", stderr);
      ::execl(COLONY_RUN_CHILD, COLONY_RUN_CHILD, kubeconfig_.c_str(), (work_ + "/log").c_str(),
              static_cast<char*>(nullptr));
      ::_exit(127);
    }
    return pid;
  };
  int kills = 0;
  while (kills < min_kills || created.load() < pods) {
    const pid_t pid = spawn();
    ASSERT_GT(pid, 0);
    std::this_thread::sleep_for(std::chrono::milliseconds(150 + rng() % 550));
    ::kill(pid, SIGKILL);
    int st = 0;
    ::waitpid(pid, &st, 0);
    ASSERT_TRUE(WIFSIGNALED(st)) << "colony run exited by itself (status " << st << "): see "
                                 << work_ << "/run.err";
    ++kills;
  }
  creator.join();
  // A last run, left alone until every pod is bound.
  const pid_t last = spawn();
  const auto t0 = std::chrono::steady_clock::now();
  while (std::chrono::steady_clock::now() - t0 < std::chrono::seconds(180) && !all_bound())
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  ::kill(last, SIGTERM);
  int st = 0;
  ::waitpid(last, &st, 0);
  EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0) << "status " << st;

  EXPECT_GE(kills, min_kills);
  const auto m = placements();
  ASSERT_EQ(m.size(), static_cast<std::size_t>(pods));
  int unbound = 0;
  for (const auto& [p, n] : m) unbound += n.empty() ? 1 : 0;
  EXPECT_EQ(unbound, 0);
  const auto sched = scheduled_in_log();
  EXPECT_EQ(sched.size(), static_cast<std::size_t>(pods));
  int twice = 0;
  for (const auto& [p, k] : sched) twice += k > 1 ? 1 : 0;
  EXPECT_EQ(twice, 0);
  const auto recs = records();
  EXPECT_GT(recs.size(), static_cast<std::size_t>(4 * pods));
  entities::audit_options ao;
  ao.at_rest = true;
  const auto report = entities::audit_log(recs, ao);
  EXPECT_TRUE(report.clean()) << report.describe();
}

// The informer faults, while colony run (a process) places pods: (1) the apiserver is
// restarted while pods are being created; (2) colony run is frozen (SIGSTOP), the apiserver is
// restarted, pods are created and deleted and etcd is compacted, then colony run resumes: its
// watches come back with a compacted resourceVersion, get 410 Gone and relist. Afterwards every
// pod is bound, every pod was observed once (no duplicate PodSubmitted), the deleted pods'
// deletions were observed, nothing was scheduled twice, and the log passes the audit.
TEST_F(ColonyRunNoWatchCache, ApiserverRestartAndCompactionLoseNothingAndDuplicateNothing) {
  for (int i = 0; i < 3; ++i) make_node("n" + std::to_string(i), "48");
  for (int i = 0; i < 30; ++i) make_pod("a" + std::to_string(i));
  const std::string out = work_ + "/run.out", err = work_ + "/run.err";
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    std::freopen(out.c_str(), "a", stdout);
    std::freopen(err.c_str(), "a", stderr);
    ::execl(COLONY_RUN_CHILD, COLONY_RUN_CHILD, kubeconfig_.c_str(), log_.c_str(),
            static_cast<char*>(nullptr));
    ::_exit(127);
  }
  auto wait_bound = [&](std::size_t pods) {
    const auto t0 = std::chrono::steady_clock::now();
    while (std::chrono::steady_clock::now() - t0 < std::chrono::seconds(120)) {
      if (placements().size() == pods && all_bound()) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(300));
    }
    return false;
  };
  ASSERT_TRUE(wait_bound(30)) << "see " << err;

  // (1) Restart mid-stream: a creator keeps posting (retrying while the apiserver is down).
  std::atomic<int> created{0};
  std::thread creator([&] {
    for (int i = 0; i < 60; ++i) {
      const json pod = {
          {"apiVersion", "v1"},
          {"kind", "Pod"},
          {"metadata", {{"name", "b" + std::to_string(i)}, {"namespace", ns}}},
          {"spec",
           {{"schedulerName", "koord-scheduler"},
            {"containers", json::array({{{"name", "c"},
                                         {"image", "registry.invalid/pause:3.9"},
                                         {"resources", {{"requests", {{"cpu", "500m"}}}}}}})}}}};
      for (int tries = 0; tries < 200; ++tries) {
        auto r = client_->post("/api/v1/namespaces/" + ns + "/pods", pod.dump());
        if (r || r.error().code == errc::already_exists) break;
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
      }
      created = i + 1;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  });
  while (created.load() < 20) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  ASSERT_TRUE(peer_->kill_apiserver());  // SIGKILL: a crash
  std::this_thread::sleep_for(std::chrono::seconds(1));
  ASSERT_TRUE(peer_->restart_apiserver());
  creator.join();
  ASSERT_TRUE(wait_bound(90)) << "not all bound after the apiserver restart; see " << err;

  // (2) Frozen through a restart (its watches die with the old apiserver, so the changes below
  // reach it through no open stream), changes and a compaction: it resumes its watches from
  // versions etcd no longer has.
  ASSERT_EQ(::kill(pid, SIGSTOP), 0);
  ASSERT_TRUE(peer_->kill_apiserver());
  ASSERT_TRUE(peer_->restart_apiserver());
  for (int i = 0; i < 30; ++i) make_pod("c" + std::to_string(i));
  for (int i = 0; i < 5; ++i) {
    auto d = client_->del("/api/v1/namespaces/" + ns + "/pods/a" + std::to_string(i), 0);
    ASSERT_TRUE(d) << d.error().describe();
  }
  auto rev = peer_->compact();
  ASSERT_TRUE(rev) << rev.error().describe();
  ASSERT_EQ(::kill(pid, SIGCONT), 0);
  ASSERT_TRUE(wait_bound(115)) << "not all bound after the relist; see " << err;
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  ::kill(pid, SIGTERM);
  int st = 0;
  ::waitpid(pid, &st, 0);
  ASSERT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0) << "status " << st << ", see " << err;

  // The child's summary: at least one watch resumed into a 410, answered with a relist.
  std::ifstream summary(out);
  std::string line, last;
  while (std::getline(summary, line))
    if (!line.empty()) last = line;
  unsigned long long reconnects = 0, gone = 0, relists = 0;
  const auto at = last.find("reconnects");
  ASSERT_NE(at, std::string::npos) << last;
  ASSERT_EQ(std::sscanf(last.c_str() + at, "reconnects %llu gone %llu relists %llu", &reconnects,
                        &gone, &relists),
            3)
      << last;
  RecordProperty("watch_reconnects", std::to_string(reconnects));
  EXPECT_GE(gone, 1u) << last;
  EXPECT_GE(relists, 1u) << last;

  std::map<std::string, int> submitted, deleted;
  const auto recs = records();
  for (const auto& r : recs) {
    const auto& env = *wire::GetEnvelope(r.data());
    if (env.payload_type() == wire::Payload::PodSubmitted)
      ++submitted[std::string(messages::to_string_view(env.entity_key()))];
    if (env.payload_type() == wire::Payload::PodFinished &&
        env.payload_as_PodFinished()->phase() == wire::PodPhase::Deleted)
      ++deleted[std::string(messages::to_string_view(env.entity_key()))];
  }
  EXPECT_EQ(submitted.size(), 120u);
  for (const auto& [p, k] : submitted) EXPECT_EQ(k, 1) << p << " observed " << k << " times";
  EXPECT_EQ(deleted.size(), 5u);
  for (int i = 0; i < 5; ++i) EXPECT_EQ(deleted[ns + "/a" + std::to_string(i)], 1) << i;
  const auto sched = scheduled_in_log();
  EXPECT_EQ(sched.size(), 120u);
  for (const auto& [p, k] : sched) EXPECT_EQ(k, 1) << p << " scheduled " << k << " times";
  entities::audit_options ao;
  ao.at_rest = true;
  const auto report = entities::audit_log(recs, ao);
  EXPECT_TRUE(report.clean()) << report.describe();
}

// A write the sink gives up becomes one WriteFailed record caused by its decision. The pod Colony
// bound is deleted and created again bound to the other node while colony run is stopped, and
// the sink's position is set back (a crash between the appends and the writes): the restart
// carries the binding out again and the apiserver answers 409, bound elsewhere. A second such
// restart fails the same write again but logs no second WriteFailed, and the WriteFailed record
// itself is never handed to the sink as a decision to carry out.
TEST_F(ColonyRun, AFailedWriteIsLoggedOnceAndNeverCarriedOut) {
  make_node("n0");
  make_node("n1");
  make_pod("p0");
  auto s1 = run_until_bound(std::chrono::seconds(90));
  ASSERT_TRUE(s1) << s1.error().describe();
  EXPECT_EQ(s1->write_failures, 0u);
  EXPECT_EQ(s1->failures_logged, 0u);
  const std::string decided = placements()["p0"];
  ASSERT_FALSE(decided.empty());
  const std::string other = decided == "n0" ? "n1" : "n0";
  std::int64_t binding_offset = -1;
  for (const auto& rec : records()) {
    const auto& env = *wire::GetEnvelope(rec.data());
    if (env.payload_type() == wire::Payload::PodScheduled)
      binding_offset = static_cast<std::int64_t>(env.offset());
  }
  ASSERT_GE(binding_offset, 0);

  auto del = client_->del("/api/v1/namespaces/" + ns + "/pods/p0", 0);
  ASSERT_TRUE(del) << del.error().describe();
  for (int i = 0; i < 100 && client_->get("/api/v1/namespaces/" + ns + "/pods/p0"); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  post("/api/v1/namespaces/" + ns + "/pods",
       json{{"apiVersion", "v1"},
            {"kind", "Pod"},
            {"metadata", {{"name", "p0"}, {"namespace", ns}}},
            {"spec",
             {{"schedulerName", "koord-scheduler"},
              {"nodeName", other},
              {"containers",
               json::array({{{"name", "c"}, {"image", "registry.invalid/pause:3.9"}}})}}}});
  ASSERT_EQ(placements()["p0"], other);

  const auto set_back = [&] {
    std::ofstream pos(work_ + "/log.sink-position", std::ios::trunc);
    pos << 0 << "\n";
  };
  // What the log says went wrong: its WriteFailed records.
  struct failure {
    std::int64_t causation;
    wire::EntityKind kind;
    std::string key, source, object, message;
    wire::WriteKind write;
    int status, attempts;
  };
  const auto failures = [&] {
    std::vector<failure> v;
    for (const auto& rec : records()) {
      auto d = messages::decode(rec, "log");
      EXPECT_TRUE(d) << d.error().describe();
      if (!d || d->type() != wire::Payload::WriteFailed) continue;
      const auto& env = *d->envelope;
      const auto* w = env.payload_as_WriteFailed();
      v.push_back({env.causation(), env.entity_kind(),
                   std::string(messages::to_string_view(env.entity_key())),
                   std::string(messages::to_string_view(env.source())),
                   std::string(messages::to_string_view(w->object())),
                   std::string(messages::to_string_view(w->message())), w->write(),
                   w->http_status(), w->attempts()});
    }
    return v;
  };
  // Decisions the log holds for the sink (a restart from position 0 carries out each once).
  const auto decisions_in_log = [&] {
    std::uint64_t n = 0;
    for (const auto& rec : records()) {
      const auto& env = *wire::GetEnvelope(rec.data());
      n += env.causation() >= 0 && env.payload_type() != wire::Payload::WriteFailed ? 1 : 0;
    }
    return n;
  };

  set_back();
  auto s2 = run_until_bound(std::chrono::seconds(30));
  ASSERT_TRUE(s2) << s2.error().describe();
  EXPECT_EQ(s2->write_failures, 1u);
  EXPECT_EQ(s2->failures_logged, 1u);
  auto f = failures();
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].causation, binding_offset);
  EXPECT_EQ(f[0].kind, wire::EntityKind::Pod);
  EXPECT_EQ(f[0].key, ns + "/p0");
  EXPECT_EQ(f[0].source, "kube-sink");
  EXPECT_EQ(f[0].write, wire::WriteKind::binding);
  EXPECT_EQ(f[0].object, ns + "/p0");
  EXPECT_EQ(f[0].status, 409);
  EXPECT_GE(f[0].attempts, 1);
  EXPECT_NE(f[0].message.find("is bound to node " + other + ", not to node " + decided),
            std::string::npos)
      << f[0].message;

  const auto decisions = decisions_in_log();
  set_back();
  auto s3 = run_until_bound(std::chrono::seconds(30));
  ASSERT_TRUE(s3) << s3.error().describe();
  EXPECT_EQ(s3->write_failures, 1u);   // the same write, failing again
  EXPECT_EQ(s3->failures_logged, 0u);  // already in the log
  EXPECT_EQ(s3->carried_over, decisions) << "the WriteFailed was handed to the sink";
  EXPECT_EQ(failures().size(), 1u);

  entities::audit_options ao;
  ao.at_rest = true;
  const auto report = entities::audit_log(records(), ao);
  EXPECT_TRUE(report.clean()) << report.describe();
  EXPECT_EQ(report.writes_failed, 1u);
}

// The what-if's ground truth: `colony sim --from-log` over the log of a real colony run, with
// the cluster's own configuration, makes the decisions colony run made, in its order. Pods
// arrive in bursts while colony run decides (its loop reads observations between decisions, and
// its components append as their threads finish), one pod waits for room, bound pods are
// deleted, and a node joins.
TEST_F(ColonyRun, ReSimulatingItsLogGivesItsDecisions) {
  for (int i = 0; i < 3; ++i) make_node("n" + std::to_string(i));
  std::atomic<bool> stop{false};
  run_options o;
  o.kubeconfig = kubeconfig_;
  o.log_path = work_ + "/log";
  o.stop = [&] { return stop.load(); };
  result<run_stats> out = fail(errc::internal, "not run");
  std::thread t([&] { out = run_cluster(o); });
  auto wait_bound = [&](const std::vector<std::string>& pods, std::chrono::seconds limit) {
    const auto t0 = std::chrono::steady_clock::now();
    while (std::chrono::steady_clock::now() - t0 < limit) {
      const auto m = placements();
      bool all = true;
      for (const auto& p : pods) all = all && m.count(p) != 0 && !m.at(p).empty();
      if (all) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    return false;
  };
  std::vector<std::string> first;
  for (int i = 0; i < 10; ++i) first.push_back("p" + std::to_string(i));
  for (const auto& p : first) make_pod(p);  // a burst
  EXPECT_TRUE(wait_bound(first, std::chrono::seconds(60)));
  // Too large for any node (the pod's single container asks for 6 of 4 cores).
  {
    json big = {
        {"apiVersion", "v1"},
        {"kind", "Pod"},
        {"metadata", {{"name", "big"}, {"namespace", ns}}},
        {"spec",
         {{"schedulerName", "koord-scheduler"},
          {"containers",
           json::array({{{"name", "c"},
                         {"image", "registry.invalid/pause:3.9"},
                         {"resources", {{"requests", {{"cpu", "6"}, {"memory", "1Gi"}}}}}}})}}}};
    post("/api/v1/namespaces/" + ns + "/pods", big);
  }
  std::vector<std::string> second;
  for (int i = 10; i < 22; ++i) second.push_back("p" + std::to_string(i));
  for (const auto& p : second) make_pod(p);
  EXPECT_TRUE(wait_bound(second, std::chrono::seconds(60)));
  for (int i = 0; i < 4; ++i)
    EXPECT_TRUE(client_->del("/api/v1/namespaces/" + ns + "/pods/p" + std::to_string(i), 0));
  make_node("n3", "8");  // now "big" fits
  EXPECT_TRUE(wait_bound({"big"}, std::chrono::seconds(60)));
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  stop = true;
  t.join();
  ASSERT_TRUE(out) << out.error().describe();

  // Re-simulated with the cluster's own configuration.
  sim::run_options so;
  so.log_path = work_ + "/resim";
  so.threads = 2;
  const auto t0 = std::chrono::steady_clock::now();
  auto r = sim::run_log_simulation(work_ + "/log", sim::recorded_configuration(), so);
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ASSERT_TRUE(r) << r.error().describe();
  auto decisions = [](const std::string& path) {
    std::vector<std::string> v;
    for (const auto& b : colony::testing::read_log_records(path)) {
      const auto& env = *wire::GetEnvelope(b.data());
      if (env.causation() < 0) continue;
      std::string d = std::string(messages::payload_name(env.payload_type())) + " " +
                      std::string(messages::to_string_view(env.entity_key())) + " by " +
                      std::string(messages::to_string_view(env.source()));
      if (env.payload_type() == wire::Payload::PodScheduled)
        d += " on " + std::string(messages::to_string_view(env.payload_as_PodScheduled()->node()));
      if (env.payload_type() == wire::Payload::PodBindProposed)
        d += " on " +
             std::string(messages::to_string_view(env.payload_as_PodBindProposed()->node()));
      v.push_back(std::move(d));
    }
    return v;
  };
  const auto live = decisions(work_ + "/log");
  const auto again = decisions(work_ + "/resim");
  ASSERT_GE(live.size(), 3u * 23u);  // admitted, proposed, bound: each pod
  std::size_t same_place = 0;
  for (std::size_t i = 0; i < std::min(live.size(), again.size()); ++i)
    same_place += live[i] == again[i] ? 1 : 0;
  std::printf(
      "colony run logged %zu decisions; the re-simulation made %zu, %zu at the same "
      "position; re-simulated in %.3f s\n",
      live.size(), again.size(), same_place, wall);
  // The same decisions (type, entity, decider, node), in the same order; in fact the same log,
  // byte for byte (offsets, times, causations, every field).
  EXPECT_EQ(again, live);
  EXPECT_TRUE(colony::testing::read_log_records(work_ + "/log") ==
              colony::testing::read_log_records(work_ + "/resim"));
  EXPECT_EQ(r->summary["trace"]["decisions_not_in_log"].get<std::uint64_t>(), 0u);
  EXPECT_EQ(r->summary["pods"]["scheduled"].get<std::uint64_t>(), 23u);
}

}  // namespace
}  // namespace colony::run
