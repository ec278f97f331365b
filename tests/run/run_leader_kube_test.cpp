// Two `colony run --leader-elect` processes over one log directory and one Lease, against a
// real kube-apiserver (label kube):
//   - the leader is SIGKILLed: the standby takes the Lease once it has aged the lease duration,
//     opens the log, appends its term's Lease record after everything the dead leader wrote,
//     and binds what arrives after; every pod is bound once and the log passes the audit;
//   - the leader is SIGSTOPped: the standby takes the Lease but not the log (the paused
//     process still holds its lock), so nothing is appended and no pod is bound while both
//     think they may lead; on SIGCONT the old leader finds its Lease gone and exits 7 "leader
//     election lost", and only then does the successor append its first record.
#include <signal.h>
#include <sys/types.h>

#include <chrono>
#include <cstdio>
#include <future>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "actors/entities/audit.hpp"
#include "tests/cli/drained_process.hpp"
#include "tests/run/colony_run_test.hpp"

namespace colony::run::testing {
namespace {

using namespace std::chrono_literals;
using steady = std::chrono::steady_clock;

using candidate = colony::testing::drained_process;

class ColonyRunLeader : public colony_run_test {
 protected:
  const std::string lease_ns = "colony-system";

  void SetUp() override {
    colony_run_test::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    post("/api/v1/namespaces",
         json{{"apiVersion", "v1"}, {"kind", "Namespace"}, {"metadata", {{"name", lease_ns}}}});
  }
  std::unique_ptr<candidate> start(const std::string& id) {
    auto c = std::make_unique<candidate>(std::vector<std::string>{
        colony::testing::colony_binary(), "run", "--kubeconfig", kubeconfig_, "--log", log_,
        "--leader-elect", "--leader-elect-identity", id, "--leader-elect-resource-namespace",
        lease_ns, "--leader-elect-lease-duration", "4s", "--leader-elect-renew-deadline", "3s",
        "--leader-elect-retry-period", "500ms"});
    return c;
  }
  std::string holder() {
    auto r = client_->get("/apis/coordination.k8s.io/v1/namespaces/" + lease_ns +
                          "/leases/colony-manager");
    if (!r) return {};
    return json::parse(r->body)["spec"].value("holderIdentity", "");
  }
  bool wait_holder(const std::string& id, std::chrono::seconds limit) {
    const auto t0 = steady::now();
    while (steady::now() - t0 < limit) {
      if (holder() == id) return true;
      std::this_thread::sleep_for(50ms);
    }
    return false;
  }
  bool wait_bound(std::chrono::seconds limit) {
    const auto t0 = steady::now();
    while (steady::now() - t0 < limit) {
      if (all_bound()) return true;
      std::this_thread::sleep_for(200ms);
    }
    return false;
  }
  // Offsets of the log's Lease records, with their holders.
  std::vector<std::pair<std::size_t, std::string>> lease_records(
      const std::vector<messages::byte_buffer>& recs) {
    std::vector<std::pair<std::size_t, std::string>> v;
    for (std::size_t i = 0; i < recs.size(); ++i) {
      const auto& env = *wire::GetEnvelope(recs[i].data());
      if (env.payload_type() != wire::Payload::ConfigUpdated) continue;
      const auto* c = env.payload_as_ConfigUpdated();
      if (messages::to_string_view(c->kind()) != "Lease") continue;
      v.emplace_back(
          i, json::parse(messages::to_string_view(c->spec_json())).value("holderIdentity", ""));
    }
    return v;
  }
  // Three nodes; candidate a leads (it starts alone), then b starts as the standby; `pods` pods
  // are bound under a.
  std::pair<std::unique_ptr<candidate>, std::unique_ptr<candidate>> a_leads_b_waits(int pods) {
    for (int i = 0; i < 3; ++i) make_node("n" + std::to_string(i));
    auto a = start("a");
    EXPECT_TRUE(a->started()) << "set COLONY_BINARY";
    EXPECT_TRUE(wait_holder("a", 30s)) << a->output();
    auto b = start("b");
    for (int i = 0; i < pods; ++i) make_pod("p" + std::to_string(i));
    EXPECT_TRUE(wait_bound(90s)) << a->output();
    EXPECT_EQ(holder(), "a");
    return {std::move(a), std::move(b)};
  }
  void expect_each_pod_scheduled_once(std::size_t pods) {
    const auto sched = scheduled_in_log();
    EXPECT_EQ(sched.size(), pods);
    for (const auto& [p, k] : sched) EXPECT_EQ(k, 1) << p << " scheduled " << k << " times";
    entities::audit_options ao;
    ao.at_rest = true;
    const auto report = entities::audit_log(records(), ao);
    EXPECT_TRUE(report.clean()) << report.describe();
  }
};

TEST_F(ColonyRunLeader, SigkilledLeaderIsReplacedWithinTheLeaseDuration) {
  if (IsSkipped() || HasFatalFailure()) return;
  auto [a, b] = a_leads_b_waits(10);
  ASSERT_FALSE(HasFailure());

  const auto t0 = steady::now();
  a->kill9();
  const auto at_kill = records().size();
  for (int i = 10; i < 20; ++i) make_pod("p" + std::to_string(i));
  ASSERT_TRUE(wait_holder("b", 20s)) << b->output();
  const auto takeover = steady::now() - t0;
  ASSERT_TRUE(wait_bound(90s)) << b->output();
  b->signal(SIGTERM);
  EXPECT_EQ(b->wait_exit(30s), 0);
  const std::string out = b->finish();
  EXPECT_NE(out.find("\"led\":true"), std::string::npos) << out;

  // 4 s lease renewed every 0.5 s: the standby's clock must see the record unchanged for 4 s.
  EXPECT_GE(takeover, 3s);
  EXPECT_LE(takeover, 6s);
  std::printf("takeover after SIGKILL: %.2f s (lease 4 s, retry 0.5 s)\n",
              std::chrono::duration<double>(takeover).count());
  const auto recs = records();
  const auto leases = lease_records(recs);
  ASSERT_EQ(leases.size(), 2u);
  EXPECT_EQ(leases[0].second, "a");
  EXPECT_EQ(leases[1].second, "b");
  EXPECT_GE(leases[1].first, at_kill);  // the successor's term starts after all of a's records
  expect_each_pod_scheduled_once(20);
}

TEST_F(ColonyRunLeader, PausedLeaderIsFencedByTheLogLockUntilItKnowsItLost) {
  if (IsSkipped() || HasFatalFailure()) return;
  auto [a, b] = a_leads_b_waits(6);
  ASSERT_FALSE(HasFailure());

  a->signal(SIGSTOP);
  for (int i = 6; i < 12; ++i) make_pod("p" + std::to_string(i));
  ASSERT_TRUE(wait_holder("b", 20s)) << b->output();
  // b holds the Lease; the paused a holds the log: nothing moves.
  const auto held = records().size();
  std::this_thread::sleep_for(3s);
  EXPECT_EQ(records().size(), held);
  const auto placed = placements();
  for (int i = 6; i < 12; ++i) {
    const std::string p = "p" + std::to_string(i);
    ASSERT_EQ(placed.count(p), 1u) << p;
    EXPECT_EQ(placed.at(p), "") << p << " bound while both could lead";
  }

  a->signal(SIGCONT);
  const int code = a->wait_exit(30s);
  const std::string aout = a->finish();
  EXPECT_EQ(code, 7) << aout;  // failed_precondition
  EXPECT_NE(aout.find("leader election lost"), std::string::npos) << aout;
  const auto at_exit = records().size();
  ASSERT_TRUE(wait_bound(90s)) << b->output();
  b->signal(SIGTERM);
  EXPECT_EQ(b->wait_exit(30s), 0);
  const std::string bout = b->finish();
  // What kept b out was the lock of the log a still held.
  EXPECT_NE(bout.find("leading, waiting for the event log"), std::string::npos) << bout;

  const auto recs = records();
  const auto leases = lease_records(recs);
  ASSERT_EQ(leases.size(), 2u);
  EXPECT_EQ(leases[0].second, "a");
  EXPECT_EQ(leases[1].second, "b");
  EXPECT_GE(leases[1].first, at_exit);  // not one record of b before a had gone
  expect_each_pod_scheduled_once(12);
}

}  // namespace
}  // namespace colony::run::testing
