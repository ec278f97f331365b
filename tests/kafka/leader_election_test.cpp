// Singleton leader election with fenced decisions (stores/kafka_leader.hpp, `colony elect`;
// docs/cluster.md, "Singletons"), against the fixture broker, with real `colony elect`
// processes:
//   - three candidates: exactly one leads, and only it writes decisions;
//   - SIGKILL of the leader: another leads within a bound (printed), leadership intervals by
//     the processes' own reports never overlap;
//   - SIGSTOP of the leader past its session: a successor leads and writes; on SIGCONT the old
//     leader's next decision is rejected by the fence and it reports "fenced"; the decision
//     topic holds no decision of the old term after the successor's first one;
//   - SIGTERM of the leader: the successor leads without waiting out the session (printed).
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "messages/codec.hpp"
#include "stores/kafka_leader.hpp"
#include "tests/cli/process.hpp"
#include "tests/kafka/kafka_env.hpp"

extern char** environ;

namespace colony::testing {
namespace {

using clock_type = std::chrono::steady_clock;
using std::chrono::milliseconds;
using std::chrono::seconds;

// One `colony elect` process; its stdout+stderr lines with their arrival times.
class candidate {
 public:
  candidate(const std::string& log, const std::string& id, int emit_ms) : id_(id) {
    std::vector<std::string> args{colony_binary(),
                                  "elect",
                                  "--log",
                                  log,
                                  "--name",
                                  "scheduler",
                                  "--id",
                                  id,
                                  "--emit-every-ms",
                                  std::to_string(emit_ms)};
    int out[2];
    if (pipe(out) != 0) return;
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, out[1], 1);
    posix_spawn_file_actions_adddup2(&fa, out[1], 2);
    posix_spawn_file_actions_addclose(&fa, out[0]);
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    if (posix_spawn(&pid_, argv[0], &fa, nullptr, argv.data(), environ) != 0) pid_ = -1;
    posix_spawn_file_actions_destroy(&fa);
    close(out[1]);
    reader_ = std::thread([this, fd = out[0]] {
      std::string buf;
      char tmp[4096];
      for (;;) {
        ssize_t n = ::read(fd, tmp, sizeof(tmp));
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        buf.append(tmp, static_cast<std::size_t>(n));
        for (auto nl = buf.find('\n'); nl != std::string::npos; nl = buf.find('\n')) {
          std::lock_guard<std::mutex> lk(mu_);
          lines_.push_back({clock_type::now(), buf.substr(0, nl)});
          buf.erase(0, nl + 1);
        }
      }
      close(fd);
    });
  }
  ~candidate() {
    if (pid_ > 0 && !reaped_) {
      ::kill(pid_, SIGCONT);
      ::kill(pid_, SIGKILL);
    }
    wait();
  }
  candidate(const candidate&) = delete;
  candidate& operator=(const candidate&) = delete;

  struct stamped {
    clock_type::time_point at;
    std::string text;
  };
  std::vector<stamped> lines() {
    std::lock_guard<std::mutex> lk(mu_);
    return lines_;
  }
  const std::string& id() const { return id_; }
  void signal(int sig) {
    if (pid_ > 0 && !reaped_) ::kill(pid_, sig);  // never signal a reaped (reusable) pid
  }
  int wait() {
    if (pid_ <= 0) return -1;
    if (!reaped_) {
      int st = 0;
      while (waitpid(pid_, &st, 0) < 0 && errno == EINTR) {
      }
      reaped_ = true;
      status_ = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    }
    if (reader_.joinable()) reader_.join();
    return status_;
  }
  // Time of the first line at or after `from` that starts with `prefix`.
  std::optional<clock_type::time_point> first(const std::string& prefix,
                                              clock_type::time_point from = {}) {
    for (const auto& l : lines())
      if (l.at >= from && l.text.rfind(prefix, 0) == 0) return l.at;
    return std::nullopt;
  }
  bool leads() {  // by its own last transition
    bool on = false;
    for (const auto& l : lines()) {
      if (l.text.rfind("elect: leader ", 0) == 0) on = true;
      if (l.text.rfind("elect: follower ", 0) == 0 || l.text.rfind("elect: fenced ", 0) == 0 ||
          l.text.rfind("elect: left ", 0) == 0)
        on = false;
    }
    return on;
  }
  std::string text() {
    std::string t;
    for (const auto& l : lines()) t += l.text + "\n";
    return t;
  }

  // Leadership intervals by its own reports: from "leader" to the next follower / fenced /
  // left line, or to `end` (a kill, or the end of the test). ended_by: the line that ended it.
  struct interval {
    clock_type::time_point from, to;
    std::string ended_by;
  };
  std::vector<interval> intervals(clock_type::time_point end) {
    std::vector<interval> out;
    std::optional<clock_type::time_point> open;
    for (const auto& l : lines()) {
      if (l.at > end) break;
      if (l.text.rfind("elect: leader ", 0) == 0 && !open) open = l.at;
      const bool stop = l.text.rfind("elect: follower ", 0) == 0 ||
                        l.text.rfind("elect: fenced ", 0) == 0 ||
                        l.text.rfind("elect: left ", 0) == 0;
      if (stop && open) {
        out.push_back({*open, l.at, l.text});
        open.reset();
      }
    }
    if (open) out.push_back({*open, end, "end"});
    return out;
  }

 private:
  std::string id_;
  pid_t pid_ = -1;
  std::thread reader_;
  std::mutex mu_;
  std::vector<stamped> lines_;
  bool reaped_ = false;
  int status_ = -1;
};

struct decision {
  log_offset offset;
  std::string holder;
  std::int64_t generation;
  std::uint64_t seq;
};

std::vector<decision> read_all(const std::string& log, bool committed_only) {
  std::vector<decision> out;
  auto n = stores::read_decisions(
      log, "scheduler", committed_only, [&](log_offset off, messages::bytes_view rec) {
        auto d = messages::decode(rec, "decision");
        if (!d) return;
        const auto* cu = d->envelope->payload_as_ConfigUpdated();
        if (!cu || !cu->spec_json()) return;
        auto j = nlohmann::json::parse(cu->spec_json()->str());
        out.push_back({off, j["holderIdentity"].get<std::string>(),
                       j["generation"].get<std::int64_t>(), j["seq"].get<std::uint64_t>()});
      });
  EXPECT_TRUE(n) << (n ? "" : n.error().describe());
  return out;
}

class LeaderElection : public ::testing::Test {
 protected:
  void SetUp() override {
    bootstrap_ = kafka_bootstrap();
    ASSERT_FALSE(bootstrap_.empty()) << kafka_missing_message();
    log_ = "kafka://" + bootstrap_ + "/" + fresh_topic("elect");
  }
  // Starts n candidates (c0, c1, ...) and waits until one reports leading and has written a
  // decision; returns its index.
  int start(int n, int emit_ms = 200) {
    for (int i = 0; i < n; ++i)
      c_.push_back(std::make_unique<candidate>(log_, "c" + std::to_string(i), emit_ms));
    const auto deadline = clock_type::now() + seconds(60);
    while (clock_type::now() < deadline) {
      for (int i = 0; i < n; ++i)
        if (c_[static_cast<std::size_t>(i)]->leads() &&
            c_[static_cast<std::size_t>(i)]->first("elect: decision "))
          return i;
      std::this_thread::sleep_for(milliseconds(20));
    }
    return -1;
  }
  // The candidate other than `except` that reports leading, waiting up to `limit`.
  int successor(int except, seconds limit) {
    const auto deadline = clock_type::now() + limit;
    while (clock_type::now() < deadline) {
      for (std::size_t i = 0; i < c_.size(); ++i)
        if (static_cast<int>(i) != except && c_[i]->leads()) return static_cast<int>(i);
      std::this_thread::sleep_for(milliseconds(10));
    }
    return -1;
  }
  std::string all_text() {
    std::string t;
    for (auto& c : c_) t += "--- " + c->id() + "\n" + c->text();
    return t;
  }
  // No two candidates' leadership intervals overlap, except one that the fence ended
  // (ended by "fenced" or a lost session).
  void expect_no_overlap(clock_type::time_point end, bool allow_fenced) {
    std::vector<std::pair<std::string, candidate::interval>> all;
    for (auto& c : c_)
      for (const auto& iv : c->intervals(end)) all.emplace_back(c->id(), iv);
    for (std::size_t i = 0; i < all.size(); ++i)
      for (std::size_t j = i + 1; j < all.size(); ++j) {
        const auto& [a, x] = all[i];
        const auto& [b, y] = all[j];
        if (a == b || !(x.from < y.to && y.from < x.to)) continue;
        const bool fenced = [](const candidate::interval& v) {
          return v.ended_by.find("fenced") != std::string::npos ||
                 v.ended_by.find("session lost") != std::string::npos;
        }(x.from < y.from ? x : y);
        EXPECT_TRUE(allow_fenced && fenced) << a << " and " << b << " lead at the same time\n"
                                            << all_text();
      }
  }

  std::string bootstrap_;
  std::string log_;
  std::vector<std::unique_ptr<candidate>> c_;
};

TEST_F(LeaderElection, ThreeCandidatesElectExactlyOneLeader) {
  const int l = start(3);
  ASSERT_GE(l, 0) << all_text();
  std::this_thread::sleep_for(seconds(4));  // a stable group keeps its leader
  int leaders = 0;
  for (auto& c : c_) leaders += c->leads() ? 1 : 0;
  EXPECT_EQ(leaders, 1) << all_text();
  EXPECT_TRUE(c_[static_cast<std::size_t>(l)]->leads()) << all_text();
  for (auto& c : c_) c->signal(SIGTERM);
  for (auto& c : c_) EXPECT_EQ(c->wait(), 0) << all_text();
  expect_no_overlap(clock_type::now(), false);
  // Only the leader wrote, in order. (Its SIGTERM handed over; a successor may have written
  // before stopping too: every decision after the first change of holder is the successor's.)
  auto ds = read_all(log_, true);
  ASSERT_FALSE(ds.empty());
  EXPECT_EQ(ds.front().holder, c_[static_cast<std::size_t>(l)]->id());
  for (std::size_t i = 1; i < ds.size(); ++i) {
    EXPECT_LT(ds[i - 1].offset, ds[i].offset);
    if (ds[i].holder == ds[i - 1].holder) {
      EXPECT_EQ(ds[i].seq, ds[i - 1].seq + 1);
    }
  }
}

TEST_F(LeaderElection, SigkilledLeaderIsReplacedWithinTheSessionTimeout) {
  const int l = start(3);
  ASSERT_GE(l, 0) << all_text();
  auto& victim = *c_[static_cast<std::size_t>(l)];
  const auto killed = clock_type::now();
  victim.signal(SIGKILL);
  EXPECT_EQ(victim.wait(), 128 + SIGKILL);
  const int s = successor(l, seconds(30));
  ASSERT_GE(s, 0) << "no successor within 30 s\n" << all_text();
  const auto took = *c_[static_cast<std::size_t>(s)]->first("elect: leader ", killed) - killed;
  const auto ms = std::chrono::duration_cast<milliseconds>(took).count();
  std::printf("[ measure ] SIGKILL takeover: %lld ms (session.timeout.ms=6000)\n",
              static_cast<long long>(ms));
  EXPECT_LT(ms, 30000);
  EXPECT_GE(ms, 3000) << "a killed leader is only noticed when its session expires";
  // Wait for the successor's first decision, then compare intervals and the topic.
  const auto deadline = clock_type::now() + seconds(20);
  while (!c_[static_cast<std::size_t>(s)]->first("elect: decision ", killed) &&
         clock_type::now() < deadline)
    std::this_thread::sleep_for(milliseconds(20));
  const auto end = clock_type::now();
  if (auto first = c_[static_cast<std::size_t>(s)]->first("elect: decision ", killed))
    std::printf(
        "[ measure ] SIGKILL to the successor's first decision: %lld ms\n",
        static_cast<long long>(std::chrono::duration_cast<milliseconds>(*first - killed).count()));
  // The victim's interval ends at its kill, by the test's clock.
  for (auto& iv : victim.intervals(end)) EXPECT_LE(iv.from, killed);
  std::vector<std::pair<std::string, candidate::interval>> ivs;
  for (std::size_t i = 0; i < c_.size(); ++i)
    for (auto iv : c_[i]->intervals(end)) {
      if (static_cast<int>(i) == l) iv.to = std::min(iv.to, killed);
      for (const auto& [who, other] : ivs)
        EXPECT_FALSE(iv.from < other.to && other.from < iv.to)
            << who << " and " << c_[i]->id() << " overlap\n"
            << all_text();
      ivs.emplace_back(c_[i]->id(), iv);
    }
  auto ds = read_all(log_, true);
  bool successor_seen = false;
  for (const auto& d : ds) {
    if (d.holder == c_[static_cast<std::size_t>(s)]->id()) successor_seen = true;
    if (successor_seen) {
      EXPECT_NE(d.holder, victim.id()) << "victim's decision after successor's";
    }
  }
  EXPECT_TRUE(successor_seen);
}

TEST_F(LeaderElection, PausedLeaderIsFencedAfterTakeover) {
  const int l = start(2);
  ASSERT_GE(l, 0) << all_text();
  auto& old = *c_[static_cast<std::size_t>(l)];
  const auto stopped = clock_type::now();
  old.signal(SIGSTOP);
  const int s = successor(l, seconds(30));
  ASSERT_GE(s, 0) << "no successor within 30 s of SIGSTOP\n" << all_text();
  auto& next = *c_[static_cast<std::size_t>(s)];
  const auto elected = *next.first("elect: leader ", stopped);
  std::printf(
      "[ measure ] SIGSTOP takeover: %lld ms\n",
      static_cast<long long>(std::chrono::duration_cast<milliseconds>(elected - stopped).count()));
  // The successor has written a decision: its fence is up (init_transactions ran first).
  auto deadline = clock_type::now() + seconds(20);
  while (!next.first("elect: decision ", stopped) && clock_type::now() < deadline)
    std::this_thread::sleep_for(milliseconds(20));
  ASSERT_TRUE(next.first("elect: decision ", stopped)) << all_text();
  EXPECT_TRUE(old.leads()) << "a stopped process reports nothing: it still believes it leads\n"
                           << all_text();
  const auto resumed = clock_type::now();
  old.signal(SIGCONT);
  deadline = clock_type::now() + seconds(30);
  while (!old.first("elect: fenced ", resumed) && clock_type::now() < deadline)
    std::this_thread::sleep_for(milliseconds(20));
  ASSERT_TRUE(old.first("elect: fenced ", resumed)) << "old leader not fenced\n" << all_text();
  EXPECT_FALSE(old.first("elect: decision ", resumed)) << "old leader wrote after resuming\n"
                                                       << all_text();
  EXPECT_FALSE(old.leads()) << all_text();
  EXPECT_TRUE(next.leads()) << all_text();
  std::this_thread::sleep_for(milliseconds(500));
  expect_no_overlap(clock_type::now(), true);

  // The topic: no decision of the old term after the successor's first decision, whether
  // read committed or every stored record (aborted transactions included).
  for (bool committed : {true, false}) {
    auto ds = read_all(log_, committed);
    std::optional<std::int64_t> old_gen;
    for (const auto& d : ds)
      if (d.holder == old.id()) old_gen = d.generation;
    ASSERT_TRUE(old_gen);
    bool successor_seen = false;
    std::size_t old_after = 0, next_count = 0;
    for (const auto& d : ds) {
      if (d.holder == next.id()) {
        successor_seen = true;
        ++next_count;
      }
      if (successor_seen && d.holder == old.id() && d.generation == *old_gen) ++old_after;
    }
    EXPECT_TRUE(successor_seen);
    EXPECT_EQ(old_after, 0u) << (committed ? "committed" : "uncommitted") << " read";
    EXPECT_GT(next_count, 0u);
  }
}

TEST_F(LeaderElection, SigtermedLeaderHandsOverWithoutSessionWait) {
  const int l = start(3);
  ASSERT_GE(l, 0) << all_text();
  auto& old = *c_[static_cast<std::size_t>(l)];
  const auto termed = clock_type::now();
  old.signal(SIGTERM);
  const int s = successor(l, seconds(30));
  ASSERT_GE(s, 0) << all_text();
  EXPECT_EQ(old.wait(), 0) << all_text();
  EXPECT_TRUE(old.first("elect: left ", termed)) << all_text();
  const auto took = *c_[static_cast<std::size_t>(s)]->first("elect: leader ", termed) - termed;
  const auto ms = std::chrono::duration_cast<milliseconds>(took).count();
  std::printf("[ measure ] SIGTERM takeover: %lld ms\n", static_cast<long long>(ms));
  EXPECT_LT(ms, 6000) << "a leader that leaves must not make the group wait out its session";
  expect_no_overlap(clock_type::now(), false);
}

// In process: why decisions have their own topic (each transaction's commit marker takes a
// Kafka offset), and a term that was handed over cleanly writes nothing more.
TEST_F(LeaderElection, CommitMarkersTakeOffsetsAndAClosedTermWritesNothing) {
  std::optional<stores::leader_term> elected;
  std::vector<bool> revoked;
  stores::leader_callbacks cbs;
  cbs.on_elected = [&](const stores::leader_term& t) { elected = t; };
  cbs.on_revoked = [&](const stores::leader_term&, bool lost) { revoked.push_back(lost); };
  stores::leader_options o;
  o.id = "solo";
  auto el = stores::kafka_leader_elector::open(log_, "scheduler", o, cbs);
  ASSERT_TRUE(el) << el.error().describe();
  EXPECT_EQ((*el)->control_topic(), log_.substr(log_.rfind('/') + 1) + ".leader.scheduler");
  const auto deadline = clock_type::now() + seconds(30);
  while (!elected && clock_type::now() < deadline) ASSERT_TRUE((*el)->poll(milliseconds(100)));
  ASSERT_TRUE(elected);
  EXPECT_TRUE((*el)->leading());
  EXPECT_EQ(elected->id, "solo");
  EXPECT_EQ(elected->term, 1u);
  EXPECT_GE(elected->generation, 1);

  messages::event_builder b;
  auto event = [&](int i) {
    messages::header h;
    h.kind = wire::EntityKind::Cluster;
    h.source = "scheduler";
    const std::string spec =
        R"({"holderIdentity":"solo","generation":0,"seq":)" + std::to_string(i) + "}";
    return b.finish(h,
                    wire::CreateConfigUpdatedDirect(b.fbb(), "Lease", "scheduler", spec.c_str()));
  };
  std::vector<log_offset> firsts;
  for (std::size_t batch : {1u, 1u, 3u, 1u}) {
    std::vector<messages::byte_buffer> bufs;
    std::vector<messages::bytes_view> views;
    for (std::size_t i = 0; i < batch; ++i) bufs.push_back(event(static_cast<int>(firsts.size())));
    for (const auto& x : bufs) views.emplace_back(x);
    auto r = (*el)->append_fenced(elected->term, views);
    ASSERT_TRUE(r) << r.error().describe();
    firsts.push_back(*r);
  }
  // One record + its commit marker per transaction; three records + one marker.
  EXPECT_EQ(firsts, (std::vector<log_offset>{0, 2, 4, 8}));
  EXPECT_EQ(read_all(log_, true).size(), 6u);

  (*el)->leave();
  EXPECT_EQ(revoked, std::vector<bool>{false});
  EXPECT_FALSE((*el)->leading());
  auto one = event(99);
  const messages::bytes_view v(one);
  auto late = (*el)->append_fenced(elected->term, std::span<const messages::bytes_view>(&v, 1));
  ASSERT_FALSE(late);
  EXPECT_EQ(late.error().code, errc::failed_precondition);
  EXPECT_NE(late.error().message.find("not the leader of scheduler"), std::string::npos)
      << late.error().describe();
  EXPECT_EQ(read_all(log_, false).size(), 6u);
}

}  // namespace
}  // namespace colony::testing
