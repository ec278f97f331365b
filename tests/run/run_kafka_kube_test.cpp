// colony run with its log on a real Kafka broker (labels kafka and kube): the same pipeline as
// run_kube_test.cpp, the log being a topic (kafka://BOOTSTRAP/TOPIC) and colony run's own
// files under --state. A restarted run replays the topic and binds only what is new.
#include <chrono>
#include <map>
#include <string>

#include <gtest/gtest.h>

#include "run/cluster_run.hpp"
#include "sim/driver.hpp"
#include "tests/kafka/kafka_env.hpp"
#include "tests/run/colony_run_test.hpp"

namespace colony::run {
namespace {

class ColonyRunKafka : public colony::run::testing::colony_run_test {
 protected:
  void SetUp() override {
    const auto bootstrap = colony::testing::kafka_bootstrap();
    ASSERT_FALSE(bootstrap.empty()) << colony::testing::kafka_missing_message();
    log_ = "kafka://" + bootstrap + "/" + colony::testing::fresh_topic("colony-run");
    colony_run_test::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    state_ = work_ + "/state";
  }
};

TEST_F(ColonyRunKafka, BindsEveryPodAndResumesFromTheTopic) {
  // Without --state a Kafka log is refused before anything is contacted.
  {
    run_options o;
    o.kubeconfig = kubeconfig_;
    o.log_path = log_;
    auto r = run_cluster(o);
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().code, errc::invalid_input);
    EXPECT_EQ(r.error().where, "--state");
  }
  for (int i = 0; i < 3; ++i) make_node("n" + std::to_string(i));
  for (int i = 0; i < 18; ++i) make_pod("p" + std::to_string(i));
  auto s1 = run_until_bound(std::chrono::seconds(90));
  ASSERT_TRUE(s1) << s1.error().describe();
  const auto m = placements();
  ASSERT_EQ(m.size(), 18u);
  for (const auto& [p, n] : m) EXPECT_FALSE(n.empty()) << p << " not bound";
  EXPECT_EQ(s1->replayed, 0u);
  EXPECT_EQ(s1->write_failures, 0u);

  for (int i = 18; i < 24; ++i) make_pod("p" + std::to_string(i));
  auto s2 = run_until_bound(std::chrono::seconds(90));
  ASSERT_TRUE(s2) << s2.error().describe();
  EXPECT_GT(s2->replayed, 3u * 18u);  // the topic, replayed
  EXPECT_EQ(s2->carried_over, 0u);    // the position was saved under --state
  EXPECT_EQ(s2->write_failures, 0u);
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

  // The what-if reads the topic too: with the cluster's own configuration it makes the logged
  // decisions again, each where the topic holds it.
  sim::run_options so;
  so.log_path = work_ + "/resim";
  auto r = sim::run_log_simulation(log_, sim::recorded_configuration(), so);
  ASSERT_TRUE(r) << r.error().describe();
  EXPECT_EQ(r->summary["trace"]["decisions_not_in_log"].get<std::uint64_t>(), 0u);
  EXPECT_EQ(r->summary["pods"]["scheduled"].get<std::uint64_t>(), 24u);
}

}  // namespace
}  // namespace colony::run
