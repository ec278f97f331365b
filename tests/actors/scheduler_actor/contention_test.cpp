// Two koord-schedulers at once, over a real RocksDB log, with the node and pod actors
// arbitrating their proposals: no node is ever over-committed, no pod is bound twice, and
// every pod that fits somewhere ends bound or explained.
//
// The driver loop is the embedded deployment in miniature: read new records from the log,
// deliver them to the actor_host (entity actors + two scheduler components), wait (sync),
// append what the sink got, repeat; when a round emits nothing, the clock ticks 1 s (so
// backoffs expire) until 15 idle seconds pass.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <map>

#include "actors/entities/audit.hpp"
#include "actors/entities/entity_actors.hpp"
#include "actors/entities/world.hpp"
#include "actors/scheduler/actor/scheduler_component.hpp"
#include "stores/event_log.hpp"
#include "tests/actors/scheduler_actor/host_loop.hpp"
#include "tests/actors/scheduler_actor/test_events.hpp"

namespace colony {
namespace {

using messages::to_string_view;
using testing::event_factory;
using testing::gib;

struct temp_dir {
  std::filesystem::path path;
  temp_dir() {
    std::string tmpl =
        (std::filesystem::temp_directory_path() / "colony-contention-XXXXXX").string();
    path = ::mkdtemp(tmpl.data());
  }
  ~temp_dir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
};

// The shared log audit (actors/entities/audit.hpp) over the final log, and its end state.
struct audited {
  entities::audit_report report;
  entities::world final_world;
};

audited audit_log(const std::vector<messages::byte_buffer>& log) {
  audited a;
  a.report = entities::audit_log(log);
  for (const auto& rec : log) a.final_world.apply(testing::env_of(rec));
  return a;
}

struct run_result {
  std::vector<messages::byte_buffer> log;
  int rounds = 0;
  bool quiescent = false;
};

// The driver loop over a RocksDB log with two schedulers racing for a cluster too small.
run_result run_contention(std::size_t threads) {
  run_result res;
  temp_dir dir;
  stores::log_options lo;
  lo.sync = false;  // a test: durability is the log's own tests' business
  auto opened = stores::open_log((dir.path / "log").string(), lo);
  EXPECT_TRUE(opened.has_value()) << (opened ? "" : opened.error().message);
  if (!opened) return res;
  auto& log = **opened;

  auto append = [&](const std::vector<messages::byte_buffer>& recs) {
    std::vector<messages::bytes_view> views(recs.begin(), recs.end());
    auto r = log.append(views);
    EXPECT_TRUE(r.has_value()) << (r ? "" : r.error().message);
  };

  // Observations: 4 nodes of 4 cores, then 60 pods (45 cores asked of 16): "shared" pods are
  // seen by both schedulers (pod-level races), "a"/"b" pods by one each (node-level races:
  // each scheduler alone would fill the cluster).
  event_factory f;
  std::vector<messages::byte_buffer> obs;
  for (int n = 0; n < 4; ++n) obs.push_back(f.node(0, "node-" + std::to_string(n), 4000, 16 * gib));
  append(obs);
  obs.clear();
  static const char* names[] = {"shared", "a", "b"};
  for (int p = 0; p < 60; ++p)
    obs.push_back(
        f.pod(1000, "ns/pod-" + std::to_string(100 + p), 500 + 250 * (p % 3), gib, names[p % 3]));
  append(obs);

  testing::host_output written;
  entities::actor_host host(threads, written.sink());
  for (int s = 0; s < 2; ++s) {
    scheduler::scheduler_component_options o;
    o.id = s == 0 ? "a" : "b";
    o.seed = static_cast<std::uint64_t>(s) + 1;
    o.scheduler_names = {"shared", o.id};
    auto c = scheduler::scheduler_component::create(std::move(o));
    EXPECT_TRUE(c.has_value());
    if (!c) return res;
    host.add_component(std::move(*c));
  }

  const auto run = testing::run_host(log, host, written, f, 1000, 400, 15);
  res.rounds = run.rounds;
  res.quiescent = run.quiescent;
  auto rd = log.read(0, no_offset, [&](log_offset, messages::bytes_view b) {
    res.log.emplace_back(b.begin(), b.end());
    return true;
  });
  EXPECT_TRUE(rd.has_value());
  return res;
}

void expect_safe_and_live(std::size_t threads) {
  const auto run = run_contention(threads);
  ASSERT_TRUE(run.quiescent) << "no quiescence after " << run.rounds << " rounds";
  const auto a = audit_log(run.log);
  const auto& r = a.report;
  EXPECT_TRUE(r.clean()) << r.describe();
  EXPECT_EQ(r.pods, 60u);
  // Contention was exercised at both stages.
  EXPECT_GT(r.capacity_rejections, 0u) << "no node-level race happened";
  EXPECT_GT(r.pod_stage_rejections, 0u) << "no pod-level race happened";
  EXPECT_EQ(r.proposals, r.scheduled + r.bind_rejections);
  // Every pod is bound or explained (its last attempt was refused; none left unattempted); an
  // unbound pod fits no node's free room at the end.
  EXPECT_EQ(r.pending_not_attempted, 0u);
  EXPECT_EQ(r.pending_at_end, r.pending_unschedulable + r.pending_bind_rejected);
  for (const auto& [pod, ps] : a.final_world.pods) {
    if (ps.phase != entities::pod_phase::pending) continue;
    for (const auto& [name, n] : a.final_world.nodes) {
      const auto cap = n.effective_allocatable();
      const bool fits = ps.requests.cpu_milli <= cap.cpu_milli - n.allocated.cpu_milli &&
                        ps.requests.memory_bytes <= cap.memory_bytes - n.allocated.memory_bytes &&
                        n.allocated.pods + 1 <= cap.pods;
      EXPECT_FALSE(fits) << pod << " is unbound but fits " << name;
    }
  }
  // The cluster is (nearly) full: 16 cores, pods of 0.5-1 core.
  std::int64_t cpu = 0;
  for (const auto& [name, n] : a.final_world.nodes) cpu += n.allocated.cpu_milli;
  EXPECT_GE(cpu, 15000);
  std::printf(
      "threads %zu: %d rounds, %zu records, %zu proposals, %zu bound, %zu rejected "
      "(%zu capacity, %zu pod-stage), %zu unschedulable events\n",
      threads, run.rounds, run.log.size(), static_cast<std::size_t>(r.proposals),
      static_cast<std::size_t>(r.scheduled), static_cast<std::size_t>(r.bind_rejections),
      static_cast<std::size_t>(r.capacity_rejections),
      static_cast<std::size_t>(r.pod_stage_rejections), static_cast<std::size_t>(r.unschedulable));
}

TEST(SchedulerActorContention, TwoSchedulersNeverOverCommitOneThread) { expect_safe_and_live(1); }

TEST(SchedulerActorContention, TwoSchedulersNeverOverCommitFourThreads) { expect_safe_and_live(4); }

// The audit can fail: the same run with arbitration bypassed (every capacity rejection turned
// into the binding a rubber stamp would have granted) over-commits a node.
TEST(SchedulerActorContention, BypassingArbitrationIsCaught) {
  auto run = run_contention(1);
  ASSERT_TRUE(run.quiescent);
  event_factory f;
  std::vector<messages::byte_buffer> forged;
  std::map<std::int64_t, const wire::PodBindProposed*> props;
  for (const auto& rec : run.log) {
    const auto& env = testing::env_of(rec);
    if (env.payload_type() == wire::Payload::PodBindProposed)
      props[static_cast<std::int64_t>(env.offset())] = env.payload_as_PodBindProposed();
    const auto* rej = env.payload_as_PodBindRejected();
    if (rej != nullptr && to_string_view(rej->reason()).substr(0, 12) == "Insufficient") {
      const auto* p = props.at(rej->proposal_offset());
      auto r = f.scheduled(env.event_time_ms(), std::string(to_string_view(p->pod())),
                           std::string(to_string_view(p->node())), p->requests()->cpu_milli(),
                           p->requests()->memory_bytes(), rej->proposal_offset(),
                           std::string(to_string_view(p->scheduler())));
      (void)messages::patch_offset(r, env.offset());
      forged.push_back(std::move(r));
      continue;
    }
    forged.push_back(rec);
  }
  const auto a = entities::audit_log(forged);
  EXPECT_GT(a.count(entities::audit_check::over_allocatable), 0u) << a.describe();
}

}  // namespace
}  // namespace colony
