// Recovery: a real colony process appends a deterministic stream with snapshots; the test
// SIGKILLs it at random moments, restarts it, and checks that every acknowledged offset is
// present, that there are no gaps or duplicates, and that the state digest equals an
// uninterrupted run's. COLONY_RECOVERY_KILLS raises the number of kills (soak).
#include <chrono>
#include <random>
#include <set>
#include <thread>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "cmd/colony/synthetic.hpp"
#include "stores/event_log.hpp"
#include "tests/cli/process.hpp"
#include "tests/support/log_options.hpp"
#include "tests/support/synthetic_log.hpp"
#include "tests/support/temp_dir.hpp"

namespace colony::testing {
namespace {

std::string digest_of_replay(const std::string& log) {
  auto [rc, out] = run_colony({"replay", "--log", log, "--digest"});
  EXPECT_EQ(rc, 0) << out;
  return out.substr(0, out.find('\n'));
}

TEST(Recovery, SigkillAtRandomMomentsLosesNothingAcknowledged) {
  const std::uint64_t count = 60000;
  int kills = 24;
  if (const char* k = std::getenv("COLONY_RECOVERY_KILLS")) kills = std::atoi(k);
  temp_dir dir;
  const auto log = dir.sub("log");
  const auto snaps = dir.sub("snapshots");
  std::vector<std::string> args{
      colony_binary(), "log", "generate", "--log", log,           "--count", std::to_string(count),
      "--seed",        "7",   "--batch",  "32",    "--snapshots", snaps,     "--snapshot-every",
      "5000"};
  std::mt19937_64 rng(20261122);
  std::uint64_t max_acked = 0;
  bool any_acked = false;
  int done_kills = 0;
  bool finished = false;
  while (!finished) {
    child c(args);
    ASSERT_TRUE(c.started());
    const bool kill_this_one = done_kills < kills;
    // Kill after a random number of acknowledgements (0..40 batches), i.e. mid-stream, at
    // whatever the process is doing then: appending, applying or writing a snapshot.
    const std::uint64_t acks_before_kill = rng() % 40;
    std::uint64_t acks = 0;
    std::string line;
    while (c.read_line(line)) {
      if (line.rfind("acked ", 0) == 0) {
        const auto off = std::stoull(line.substr(6));
        if (any_acked) {
          ASSERT_GE(off, max_acked) << "acknowledged offsets went backwards";
        }
        max_acked = off;
        any_acked = true;
        if (kill_this_one && ++acks > acks_before_kill) {
          // A random delay so the kill lands anywhere in the next batch's work.
          std::this_thread::sleep_for(std::chrono::microseconds(rng() % 3000));
          c.kill9();
          break;
        }
      } else if (line.rfind("{", 0) == 0) {
        finished = true;
      }
    }
    int rc = c.wait();
    if (kill_this_one && !finished) {
      EXPECT_EQ(rc, 128 + SIGKILL);
      ++done_kills;
    } else {
      ASSERT_EQ(rc, 0);
      finished = true;
    }
  }
  EXPECT_GE(done_kills, kills);

  // Every acknowledged offset is present; offsets are contiguous; each record is exactly the
  // event the stream defines for its offset (so nothing was written twice or skipped).
  const auto ro = read_only_log_options();
  auto l = stores::open_log(log, ro);
  ASSERT_TRUE(l) << l.error().describe();
  auto end = (*l)->end_offset();
  ASSERT_TRUE(end);
  EXPECT_EQ(*end, count);
  EXPECT_GE(*end, max_acked + 1);
  messages::event_builder b;
  log_offset expect = 0;
  auto n = (*l)->read(0, no_offset, [&](log_offset off, messages::bytes_view bytes) {
    EXPECT_EQ(off, expect++);
    auto want = cli::synthetic_event(b, 7, off);
    EXPECT_TRUE(messages::patch_offset(want, off));
    EXPECT_TRUE(std::equal(want.begin(), want.end(), bytes.begin(), bytes.end()))
        << "record at offset " << off << " is not the stream's event " << off;
    return !::testing::Test::HasFailure();
  });
  ASSERT_TRUE(n) << n.error().describe();
  EXPECT_EQ(*n, count);
  l->reset();

  // The digest equals that of an uninterrupted writer.
  const auto clean_log = dir.sub("clean");
  auto [rc, out] = generate_log(clean_log, count, 7, 1000);
  ASSERT_EQ(rc, 0) << out;
  EXPECT_EQ(digest_of_replay(log), digest_of_replay(clean_log));
  // And replaying from the surviving snapshot gives the same digest as a full replay.
  auto [src, sout] = run_colony({"replay", "--log", log, "--snapshots", snaps});
  ASSERT_EQ(src, 0) << sout;
  auto j = nlohmann::json::parse(sout);
  EXPECT_GT(j["from_offset"].get<std::uint64_t>(), 0u);
  EXPECT_EQ(j["digest"].get<std::string>(), digest_of_replay(clean_log));
}

}  // namespace
}  // namespace colony::testing
