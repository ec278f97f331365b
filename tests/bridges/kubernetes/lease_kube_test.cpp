// lease_elector and leader_election against a real kube-apiserver: one holder at a time, a
// holder that stops renewing is replaced once its record has aged lease_duration on the
// successor's clock (not before), a release hands over at once, and racing candidates never
// lead at the same time.
#include <atomic>
#include <chrono>
#include <memory>
#include <thread>
#include <vector>

#include "bridges/kubernetes/lease.hpp"
#include "tests/bridges/kubernetes/kube_api_test.hpp"

namespace colony::kube {
namespace {

using namespace std::chrono_literals;
using steady = std::chrono::steady_clock;

class LeaseKube : public testing::kube_api_test {
 protected:
  void SetUp() override { start_peer("colony-lease"); }
  lease_options opts(const std::string& id) {
    lease_options o;
    o.lease_namespace = "colony-lease";
    o.name = "colony-manager";
    o.identity = id;
    o.lease_duration = 2s;
    o.renew_deadline = 1500ms;
    o.retry_period = 200ms;
    return o;
  }
  json lease() {
    return get("/apis/coordination.k8s.io/v1/namespaces/colony-lease/leases/" +
               std::string("colony-manager"));
  }
};

TEST_F(LeaseKube, OneHolderAndATakeoverOnlyAfterTheLeaseAged) {
  if (IsSkipped() || HasFatalFailure()) return;
  auto a = lease_elector::open(peer_->conn(), opts("a"));
  auto b = lease_elector::open(peer_->conn(), opts("b"));
  ASSERT_TRUE(a && b);
  auto ra = a->try_acquire_or_renew(steady::now());
  ASSERT_TRUE(ra) << ra.error().describe();
  EXPECT_TRUE(*ra);  // created the Lease
  EXPECT_EQ(lease()["spec"].value("holderIdentity", ""), "a");
  EXPECT_EQ(lease()["spec"].value("leaseDurationSeconds", 0), 2);
  auto rb = b->try_acquire_or_renew(steady::now());
  ASSERT_TRUE(rb);
  EXPECT_FALSE(*rb);
  // a renews for a while: b never gets it.
  for (int i = 0; i < 8; ++i) {
    std::this_thread::sleep_for(300ms);
    auto r1 = a->try_acquire_or_renew(steady::now());
    ASSERT_TRUE(r1 && *r1);
    auto r2 = b->try_acquire_or_renew(steady::now());
    ASSERT_TRUE(r2);
    EXPECT_FALSE(*r2) << "round " << i;
  }
  // a stops renewing: b takes over no sooner than 2 s after it last saw the record change.
  const auto stopped = steady::now();
  bool won = false;
  int rounds = 0;
  while (!won && steady::now() - stopped < 10s) {
    auto r = b->try_acquire_or_renew(steady::now());
    ASSERT_TRUE(r) << r.error().describe();
    won = *r;
    ++rounds;
    if (!won) std::this_thread::sleep_for(100ms);
  }
  const auto took = steady::now() - stopped;
  ASSERT_TRUE(won);
  EXPECT_GE(took, 1800ms);  // b's last observation of a change was <= 300 ms before the stop
  EXPECT_LE(took, 3s);
  EXPECT_GT(rounds, 10);
  const auto l = lease();
  EXPECT_EQ(l["spec"].value("holderIdentity", ""), "b");
  EXPECT_EQ(l["spec"].value("leaseTransitions", 0), 1);
  // a comes back: b holds it now, a does not win.
  auto back = a->try_acquire_or_renew(steady::now());
  ASSERT_TRUE(back);
  EXPECT_FALSE(*back);
  std::printf("takeover after the holder stopped renewing: %.2f s (lease 2 s)\n",
              std::chrono::duration<double>(took).count());
}

TEST_F(LeaseKube, ReleaseHandsOverAtOnce) {
  if (IsSkipped() || HasFatalFailure()) return;
  auto a = lease_elector::open(peer_->conn(), opts("a"));
  auto b = lease_elector::open(peer_->conn(), opts("b"));
  ASSERT_TRUE(a && b);
  ASSERT_TRUE(*a->try_acquire_or_renew(steady::now()));
  ASSERT_FALSE(*b->try_acquire_or_renew(steady::now()));
  ASSERT_TRUE(a->release());
  EXPECT_EQ(lease()["spec"].value("holderIdentity", "x"), "");
  auto r = b->try_acquire_or_renew(steady::now());
  ASSERT_TRUE(r);
  EXPECT_TRUE(*r);
  EXPECT_EQ(lease()["spec"].value("holderIdentity", ""), "b");
}

// Three leader_election loops race for one Lease; sampled every 5 ms for 6 s, at most one
// leads at any moment; stopping the leader (which releases) lets another lead soon after.
TEST_F(LeaseKube, RacingCandidatesNeverLeadTogether) {
  if (IsSkipped() || HasFatalFailure()) return;
  std::vector<std::unique_ptr<leader_election>> cs;
  for (const char* id : {"x", "y", "z"}) {
    auto c = leader_election::start(peer_->conn(), opts(id));
    ASSERT_TRUE(c) << c.error().describe();
    cs.push_back(std::move(*c));
  }
  int samples = 0, led = 0, both = 0;
  const auto t0 = steady::now();
  std::size_t first = cs.size();
  while (steady::now() - t0 < 6s) {
    int n = 0;
    for (std::size_t i = 0; i < cs.size(); ++i)
      if (cs[i] && cs[i]->leading()) {
        ++n;
        if (first == cs.size()) first = i;
      }
    ++samples;
    if (n > 0) ++led;
    if (n > 1) ++both;
    std::this_thread::sleep_for(5ms);
  }
  EXPECT_EQ(both, 0);
  EXPECT_GT(led, samples / 2);
  ASSERT_LT(first, cs.size());
  EXPECT_FALSE(cs[first]->lost());
  // The leader stops (releases); one of the other two leads within a couple of retry periods.
  const auto t1 = steady::now();
  cs[first].reset();
  bool someone = false;
  while (!someone && steady::now() - t1 < 5s) {
    for (auto& c : cs)
      if (c && c->leading()) someone = true;
    std::this_thread::sleep_for(5ms);
  }
  EXPECT_TRUE(someone);
  EXPECT_LT(steady::now() - t1, 1s);
}

}  // namespace
}  // namespace colony::kube
