// migration_controller_component fed envelopes directly, EvictDirectly mode: a job passes
// arbitration, goes Running/Evicting and evicts its pod, and succeeds when the PodEvicted comes
// back through the log; a job for a missing pod fails with MissingPod; a pod the non-retryable
// filter refuses fails with ForbiddenMigratePod; the eviction token bucket spaces evictions.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "actors/descheduler/actor/migration_controller_component.hpp"
#include "tests/actors/descheduler_actor/descheduler_log.hpp"
#include "tests/support/component_feed.hpp"

namespace colony::descheduler_actor {
namespace {

using testing::cpu_mem;
using testing::decoded;
using testing::descheduler_log;
using testing::gib;
using testing::loop_back;
using testing::text;

constexpr std::int64_t t0 = 1'000;

std::uint64_t job(descheduler_log& log, std::int64_t t, const std::string& name,
                  const std::string& pod, std::string_view mode = "EvictDirectly") {
  auto& fbb = log.b.fbb();
  const auto n = fbb.CreateString(name);
  const auto p = fbb.CreateString(pod);
  const auto m = fbb.CreateString(mode);
  const auto r = fbb.CreateString("node is overutilized");
  const auto c = fbb.CreateString("koord-descheduler");
  const auto tn = fbb.CreateString("trigger");
  const auto tv = fbb.CreateString("LowNodeLoad");
  wire::TermBuilder tb(fbb);
  tb.add_name(tn);
  tb.add_text(tv);
  const std::vector<flatbuffers::Offset<wire::Term>> terms{tb.Finish()};
  const auto in = fbb.CreateVector(terms);
  return log.append(t, wire::EntityKind::PodMigrationJob, name,
                    wire::CreateMigrationJobCreated(fbb, n, p, m, r, 300'000, c, in),
                    "koord-descheduler");
}

// Two nodes; four pods of rs-a on n1 (replicas 4), a DaemonSet pod on n1.
void cluster(descheduler_log& log) {
  for (const char* n : {"n1", "n2"})
    log.node(t0, n, cpu_mem(10'000, 100 * gib, 110), cpu_mem(10'000, 100 * gib, 110));
  for (int i = 1; i <= 4; ++i)
    log.pod(t0, "default/p" + std::to_string(i), "n1", "ReplicaSet/rs-a", 500);
  log.pod(t0, "default/ds", "n1", "DaemonSet/ds", 100);
}

migration_controller_options options() {
  migration_controller_options o;
  o.args.default_job_mode = "EvictDirectly";
  return o;
}

struct phase_change {
  std::string job, phase, reason, message;
  std::int64_t causation;
};

std::vector<phase_change> phases(const std::vector<messages::byte_buffer>& out) {
  std::vector<phase_change> v;
  for (const auto& b : out) {
    const auto& e = decoded(b);
    if (e.payload_type() != wire::Payload::MigrationJobPhaseChanged) continue;
    const auto* p = e.payload_as_MigrationJobPhaseChanged();
    v.push_back(
        {text(p->name()), text(p->phase()), text(p->reason()), text(p->message()), e.causation()});
  }
  return v;
}

std::vector<const wire::Envelope*> evictions(std::vector<messages::byte_buffer>&&) = delete;
std::vector<const wire::Envelope*> evictions(const std::vector<messages::byte_buffer>& out) {
  std::vector<const wire::Envelope*> v;
  for (const auto& b : out)
    if (const auto& e = decoded(b); e.payload_type() == wire::Payload::PodEvicted) v.push_back(&e);
  return v;
}

TEST(MigrationController, EvictDirectlyEvictsAndTheJobSucceeds) {
  descheduler_log log;
  cluster(log);
  const auto created = job(log, t0, "default.p1.1000", "default/p1");
  migration_controller_component c(options());
  EXPECT_TRUE(testing::feed(c, log).empty()) << "arbitration waits for its tick";
  ASSERT_EQ(c.next_wakeup_ms(), std::optional<std::int64_t>(1'500));
  std::vector<messages::byte_buffer> out;
  c.on_wakeup(1'500, out);

  const auto ph = phases(out);
  ASSERT_EQ(ph.size(), 1u);
  EXPECT_EQ(ph[0].job, "default.p1.1000");
  EXPECT_EQ(ph[0].phase, "Running");
  EXPECT_EQ(ph[0].reason, "Evicting");
  EXPECT_EQ(ph[0].causation, static_cast<std::int64_t>(created));
  const auto ev = evictions(out);
  ASSERT_EQ(ev.size(), 1u);
  const auto* e = ev[0]->payload_as_PodEvicted();
  EXPECT_EQ(text(e->pod()), "default/p1");
  EXPECT_EQ(text(e->node()), "n1");
  EXPECT_EQ(e->reason(), wire::EvictionReason::Descheduled);
  EXPECT_EQ(text(e->message()),
            "evicted by PodMigrationJob default.p1.1000 (LowNodeLoad): node is overutilized");
  EXPECT_EQ(testing::term(e->inputs(), "migrationJob"), "default.p1.1000");
  EXPECT_EQ(testing::term(e->inputs(), "trigger"), "LowNodeLoad");
  ASSERT_NE(e->released(), nullptr);
  EXPECT_EQ(messages::to_resource_list(e->released()).cpu_milli, 500);
  EXPECT_EQ(ev[0]->causation(), static_cast<std::int64_t>(created));
  EXPECT_EQ(ev[0]->event_time_ms(), 1'500);

  // The PodEvicted comes back through the log: the job succeeds, caused by it.
  const auto evicted_offset = static_cast<std::int64_t>(log.records.size()) + 1;
  const auto back = loop_back(c, log, std::move(out));
  const auto done = phases(back);
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0].phase, "Succeeded");
  EXPECT_EQ(done[0].reason, "EvictComplete");
  EXPECT_EQ(done[0].message, "Pod default/p1 has been evicted");
  EXPECT_EQ(done[0].causation, evicted_offset);
  EXPECT_EQ(c.stats().passed, 1u);
  EXPECT_EQ(c.stats().evictions, 1u);
  EXPECT_EQ(c.next_wakeup_ms(), std::nullopt) << "nothing left to do";
}

TEST(MigrationController, JobsThatCannotMigrateFailWithAReason) {
  struct row {
    const char* pod;
    const char* phase;
    const char* reason;
    const char* message;
  };
  const std::vector<row> rows = {
      {"default/ghost", "Failed", "MissingPod", "Pod default/ghost is not found"},
      {"default/ds", "Failed", "ForbiddenMigratePod", "pod is a DaemonSet pod"},
  };
  for (const auto& r : rows) {
    SCOPED_TRACE(r.pod);
    descheduler_log log;
    cluster(log);
    const auto created = job(log, t0, "job-1", r.pod);
    migration_controller_component c(options());
    (void)testing::feed(c, log);
    std::vector<messages::byte_buffer> out;
    c.on_wakeup(*c.next_wakeup_ms(), out);
    const auto ph = phases(out);
    ASSERT_EQ(ph.size(), 1u);
    EXPECT_EQ(ph[0].phase, r.phase);
    EXPECT_EQ(ph[0].reason, r.reason);
    EXPECT_EQ(ph[0].message, r.message);
    EXPECT_EQ(ph[0].causation, static_cast<std::int64_t>(created));
    EXPECT_TRUE(evictions(out).empty());
  }
}

TEST(MigrationController, ArbitrationLimitsAndTheTokenBucketSpaceEvictions) {
  // Three jobs on n1: maxMigratingPerNode 2 lets two pass (the third waits), and evictQPS 10 with
  // burst 1 evicts one per tick of 500 ms. The waiting one passes once a job ends.
  descheduler_log log;
  cluster(log);
  // Four more replicas on n2: the view counts a workload's live pods as its replicas, so the
  // evictions below would otherwise shrink rs-a to the ExpectedReplicas floor.
  for (int i = 5; i <= 8; ++i)
    log.pod(t0, "default/p" + std::to_string(i), "n2", "ReplicaSet/rs-a", 500);
  for (int i = 1; i <= 3; ++i)
    (void)job(log, t0, "job-" + std::to_string(i), "default/p" + std::to_string(i));
  auto o = options();
  o.args.max_unavailable_per_workload = descheduler::int_or_percent{3, false};
  o.args.max_migrating_per_workload = descheduler::int_or_percent{3, false};
  o.args.workload_limiter.reset();  // the object limiter has its own test below
  migration_controller_component c(o);
  (void)testing::feed(c, log);
  std::vector<messages::byte_buffer> first;
  c.on_wakeup(1'500, first);
  const auto ph = phases(first);
  ASSERT_EQ(ph.size(), 2u);
  EXPECT_EQ(ph[0].phase, "Running");
  EXPECT_EQ(ph[1].phase, "Running");
  ASSERT_EQ(evictions(first).size(), 1u) << "one token";
  EXPECT_EQ(c.stats().throttled, 1u);
  const std::string first_pod = text(evictions(first)[0]->payload_as_PodEvicted()->pod());

  // Next tick: the other Running job gets its token.
  std::vector<messages::byte_buffer> second;
  ASSERT_EQ(c.next_wakeup_ms(), std::optional<std::int64_t>(2'000));
  c.on_wakeup(2'000, second);
  EXPECT_TRUE(phases(second).empty());
  ASSERT_EQ(evictions(second).size(), 1u);
  EXPECT_NE(text(evictions(second)[0]->payload_as_PodEvicted()->pod()), first_pod);

  // Both evictions come back: two jobs succeed; the third then passes at its tick.
  auto back = loop_back(c, log, std::move(first));
  auto back2 = loop_back(c, log, std::move(second));
  EXPECT_EQ(phases(back).size() + phases(back2).size(), 2u);
  std::vector<messages::byte_buffer> third;
  c.on_wakeup(*c.next_wakeup_ms(), third);
  const auto ph3 = phases(third);
  ASSERT_EQ(ph3.size(), 1u);
  EXPECT_EQ(ph3[0].phase, "Running") << ph3[0].reason << ": " << ph3[0].message;
  EXPECT_EQ(evictions(third).size(), 1u);
}

// The default workload limiter (objectLimiters.workload: 5 min, maxMigrating =
// maxMigratingPerWorkload 3): each eviction of rs-a takes the bucket's one token, which comes back
// after 300 s / 3 = 100 s; a Running job of rs-a waits for it tick by tick, and a restarted
// controller learns the bucket from the PodEvicted it reads back.
TEST(MigrationController, TheWorkloadLimiterSpacesEvictionsOfOneWorkload) {
  descheduler_log log;
  cluster(log);
  for (int i = 5; i <= 8; ++i)
    log.pod(t0, "default/p" + std::to_string(i), "n2", "ReplicaSet/rs-a", 500);
  for (int i = 1; i <= 2; ++i)
    (void)job(log, t0, "job-" + std::to_string(i), "default/p" + std::to_string(i));
  auto o = options();
  o.args.max_unavailable_per_workload = descheduler::int_or_percent{3, false};
  o.args.max_migrating_per_workload = descheduler::int_or_percent{3, false};
  o.args.evict_qps = 0;  // no eviction token bucket: the object limiter alone spaces them
  migration_controller_component c(o);
  (void)testing::feed(c, log);
  std::vector<messages::byte_buffer> first;
  c.on_wakeup(1'500, first);
  ASSERT_EQ(phases(first).size(), 2u);
  ASSERT_EQ(evictions(first).size(), 1u) << "the second job of rs-a waits for a token";
  EXPECT_EQ(c.stats().object_limited, 1u);
  auto back = loop_back(c, log, std::move(first));  // read back: not tracked twice
  std::size_t held = 0;
  std::int64_t evicted_at = -1;
  for (std::int64_t t = 2'000; t <= 200'000 && evicted_at < 0; t += 500) {
    std::vector<messages::byte_buffer> out;
    c.on_wakeup(t, out);
    if (!evictions(out).empty()) {
      evicted_at = t;
      break;
    }
    ++held;
  }
  EXPECT_EQ(evicted_at, 101'500) << "one token per 100 s after the eviction at 1.5 s";
  EXPECT_GE(held, 190u);

  // A new controller replays a log with one eviction of rs-a: the bucket is empty for rs-a.
  descheduler_log log2;
  cluster(log2);
  for (int i = 5; i <= 8; ++i)
    log2.pod(t0, "default/p" + std::to_string(i), "n2", "ReplicaSet/rs-a", 500);
  migration_controller_component fresh(o);
  (void)job(log2, t0, "job-1", "default/p1");
  (void)testing::feed(fresh, log2);
  std::vector<messages::byte_buffer> a;
  fresh.on_wakeup(1'500, a);
  ASSERT_EQ(evictions(a).size(), 1u);
  (void)loop_back(fresh, log2, std::move(a));
  migration_controller_component replayed(o);
  (void)testing::feed(replayed, log2);
  (void)job(log2, 2'000, "job-3", "default/p3");
  (void)testing::feed(replayed, log2, log2.records.size() - 1);
  std::vector<messages::byte_buffer> b;
  replayed.on_wakeup(2'500, b);
  EXPECT_TRUE(evictions(b).empty()) << "the replayed eviction emptied rs-a's bucket";
  EXPECT_EQ(replayed.stats().object_limited, 1u);
}

}  // namespace
}  // namespace colony::descheduler_actor
