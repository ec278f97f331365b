// Broker faults: a real `colony log generate` appends to Kafka while the test crashes the
// broker (SIGKILL) and later shuts it down gracefully (TERM), restarting it each time on the
// same port with its data (kafka.sh kill/restart). The writer is never restarted: it must
// recover by itself, its waiting events must be delivered, nothing acknowledged may be lost
// and nothing may be written twice (every record equals the stream's event for its offset).
// Also: an unreachable broker at start is a clear error naming the bootstrap address and
// exit code 6 after the bounded connect wait.
#include <chrono>
#include <fstream>
#include <thread>

#include <gtest/gtest.h>

#include "cmd/colony/synthetic.hpp"
#include "stores/kafka_log.hpp"
#include "tests/cli/process.hpp"
#include "tests/kafka/kafka_env.hpp"
#include "tests/support/log_options.hpp"

namespace colony::testing {
namespace {

TEST(BrokerUnreachable, AtStartExitsSixNamingTheAddress) {
  for (const char* cmd : {"tail", "consume"}) {
    const auto t0 = std::chrono::steady_clock::now();
    std::vector<std::string> args;
    if (std::string(cmd) == "tail")
      args = {"log", "tail", "--log", "kafka://127.0.0.1:1/events?connect_timeout_ms=2000"};
    else  // the default bound, 10 s
      args = {"consume", "--log", "kafka://127.0.0.1:1/events", "--snapshots", "/nonexistent/x"};
    auto [rc, out] = run_colony(args);
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    EXPECT_EQ(rc, 6) << cmd << ": " << out;
    EXPECT_NE(out.find("cannot reach the Kafka broker at 127.0.0.1:1"), std::string::npos) << out;
    const double bound = std::string(cmd) == "tail" ? 2.0 : 10.0;
    EXPECT_GE(s, bound - 0.2) << cmd;
    EXPECT_LT(s, bound + 5.0) << cmd;
  }
}

class BrokerFaults : public ::testing::Test {
 protected:
  void SetUp() override {
    sh_ = kafka_sh();
    dir_ = kafka_faults_dir();
    ASSERT_FALSE(sh_.empty() || dir_.empty()) << "run through ctest (COLONY_KAFKA_SH, _FAULTS_DIR)";
    auto [rc, out] = shell("bash '" + sh_ + "' start --dir '" + dir_ + "' 2>&1");
    ASSERT_EQ(rc, 0) << out << "\n" << kafka_missing_message();
    std::ifstream f(dir_ + "/bootstrap");
    std::getline(f, bootstrap_);
    ASSERT_FALSE(bootstrap_.empty()) << out;
  }
  void TearDown() override {
    if (!dir_.empty()) permit(shell("bash '" + sh_ + "' stop --dir '" + dir_ + "' 2>&1"));
  }
  static void permit(const std::pair<int, std::string>&) {}
  std::pair<int, std::string> kafka(const std::string& verb) {
    return shell("bash '" + sh_ + "' " + verb + " --dir '" + dir_ + "' 2>&1");
  }
  std::string sh_, dir_, bootstrap_;
};

TEST_F(BrokerFaults, WriterSurvivesCrashAndGracefulRestartWithoutLossOrDuplicates) {
  const std::uint64_t count = 40000;
  const std::string log = "kafka://" + bootstrap_ + "/faults";
  child gen({colony_binary(), "log", "generate", "--log", log, "--count", std::to_string(count),
             "--seed", "11", "--batch", "20"});
  ASSERT_TRUE(gen.started());
  std::uint64_t max_acked = 0;
  std::string line;
  auto read_acks_until = [&](std::uint64_t at_least) {
    while (max_acked < at_least && gen.read_line(line))
      if (line.rfind("acked ", 0) == 0) max_acked = std::stoull(line.substr(6));
  };
  struct fault {
    const char* signal;
    std::uint64_t after;
  };
  for (const fault f : {fault{"KILL", 4000}, fault{"TERM", 16000}}) {
    read_acks_until(f.after);
    ASSERT_GE(max_acked, f.after) << "generate stopped early";
    ASSERT_LT(max_acked + 1, count) << "generate finished before the fault; make it longer";
    auto [krc, kout] = kafka(std::string("kill --signal ") + f.signal);
    ASSERT_EQ(krc, 0) << kout;
    const auto acked_at_fault = max_acked;
    std::this_thread::sleep_for(std::chrono::seconds(2));  // appends now wait for the broker
    auto [rrc, rout] = kafka("restart");
    ASSERT_EQ(rrc, 0) << rout;
    EXPECT_NE(rout.find(bootstrap_), std::string::npos) << "restart moved the broker: " << rout;
    // The same writer goes on by itself.
    read_acks_until(acked_at_fault + 200);
    EXPECT_GT(max_acked, acked_at_fault)
        << "no acknowledgement after the " << f.signal << " restart";
  }
  read_acks_until(count - 1);
  std::string rest = gen.read_all();
  ASSERT_EQ(gen.wait(), 0) << rest;
  EXPECT_EQ(max_acked, count - 1);

  const auto ro = read_only_log_options();
  auto l = stores::kafka_log::open(log, ro);
  ASSERT_TRUE(l) << l.error().describe();
  auto end = (*l)->end_offset();
  ASSERT_TRUE(end);
  EXPECT_EQ(*end, count);  // a duplicate would make it longer, a loss shorter
  messages::event_builder b;
  log_offset expect = 0;
  auto n = (*l)->read(0, no_offset, [&](log_offset off, messages::bytes_view bytes) {
    EXPECT_EQ(off, expect++);
    auto want = cli::synthetic_event(b, 11, off);
    EXPECT_TRUE(messages::patch_offset(want, off));
    EXPECT_TRUE(std::equal(want.begin(), want.end(), bytes.begin(), bytes.end()))
        << "record at offset " << off << " is not the stream's event " << off;
    return !::testing::Test::HasFailure();
  });
  ASSERT_TRUE(n) << n.error().describe();
  EXPECT_EQ(*n, count);
}

}  // namespace
}  // namespace colony::testing
