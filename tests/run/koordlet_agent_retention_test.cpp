// The koordlet agent's sample retention: on a fake node (tests/support/node_tree.hpp) two agents
// see the same snapshots at the same event times, one keeping every record and one dropping
// samples older than its retention. The trimmed log holds fewer records and replays fewer at
// open, and after a restart both append byte-identical records: what the component reads back
// from the retained samples is what it read from all of them.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "messages/codec.hpp"
#include "run/koordlet_agent.hpp"
#include "stores/event_log.hpp"
#include "tests/support/node_tree.hpp"
#include "tests/support/temp_dir.hpp"

namespace colony::testing {
namespace {

constexpr std::int64_t t0 = 1'700'000'000'000;
constexpr std::int64_t step_ms = 10'000;

agent::koordlet_agent_options options(const node_tree& tree, std::int64_t retention_ms) {
  agent::koordlet_agent_options o;
  o.koordlet.node = "retention-node";
  o.source.cgroup_root = tree.cgroup_root();
  o.source.proc_root = tree.proc_root();
  // One-minute NodeMetric windows and a report every 30 s: the component's longest window is
  // then its 10-min cfs-quota base memory.
  o.koordlet.report_policy.aggregate_duration_seconds = 60;
  o.koordlet.report_policy.aggregate_durations_seconds = {60};
  o.koordlet.report_interval_ms = 30'000;
  o.sample_retention_ms = retention_ms;
  return o;
}

struct node_log {
  std::unique_ptr<stores::event_log> log;
  std::unique_ptr<agent::koordlet_agent> agent;
};

node_log open_node(const std::string& dir, const node_tree& tree, std::int64_t retention_ms,
                   std::int64_t t) {
  node_log n;
  auto l = stores::open_log(dir, agent::koordlet_log_options());
  EXPECT_TRUE(l) << l.error().describe();
  if (!l) return n;
  n.log = std::move(*l);
  auto a = agent::koordlet_agent::open(options(tree, retention_ms), *n.log, event_time{t});
  EXPECT_TRUE(a) << a.error().describe();
  if (a) n.agent = std::move(*a);
  return n;
}

std::vector<messages::byte_buffer> records_from(stores::event_log& l, log_offset from) {
  std::vector<messages::byte_buffer> v;
  auto n = l.read(from, no_offset, [&](log_offset, messages::bytes_view b) {
    v.emplace_back(b.begin(), b.end());
    return true;
  });
  EXPECT_TRUE(n) << n.error().describe();
  return v;
}

std::size_t count_of(stores::event_log& l, wire::Payload type) {
  std::size_t n = 0;
  auto r = l.read(0, no_offset, [&](log_offset, messages::bytes_view b) {
    n += wire::GetEnvelope(b.data())->payload_type() == type;
    return true;
  });
  EXPECT_TRUE(r) << r.error().describe();
  return n;
}

TEST(KoordletAgentRetention, TrimmedLogReplaysToTheSameDecisionsAsTheWholeOne) {
  temp_dir tmp;
  node_tree tree(tmp.sub("node"), koordlet::cgroup_version::v1);
  std::int64_t tick = 0;
  write_pods_node(tree, false, tick, 12);
  const std::int64_t retention = 60'000;  // raised to the component's 10 min
  std::int64_t t = t0;
  std::size_t kept_steps = 0;
  {
    auto all = open_node(tmp.sub("all"), tree, 0, t);
    auto trimmed = open_node(tmp.sub("trimmed"), tree, retention, t);
    ASSERT_TRUE(all.agent && trimmed.agent);
    EXPECT_EQ(trimmed.agent->component().longest_window_ms(), 600'000);
    // 40 min of 10-s steps: four times the retention.
    for (int i = 0; i < 240; ++i) {
      write_pods_node(tree, false, ++tick, 12);
      t += step_ms;
      ASSERT_TRUE(all.agent->step(event_time{t}));
      ASSERT_TRUE(trimmed.agent->step(event_time{t}));
    }
    EXPECT_EQ(all.agent->stats().trimmed, 0u);
    EXPECT_GT(trimmed.agent->stats().trimmed, 150u);
    EXPECT_EQ(*all.log->end_offset(), *trimmed.log->end_offset()) << "offsets do not move";
    EXPECT_GT(trimmed.log->sparse_before(), 0u);
    const auto samples_all = count_of(*all.log, wire::Payload::NodeUsageSampled);
    const auto samples_kept = count_of(*trimmed.log, wire::Payload::NodeUsageSampled);
    EXPECT_EQ(samples_all, 240u);
    // The retention (600 s = 60 steps) plus at most a sixth of it not yet trimmed.
    EXPECT_GE(samples_kept, 60u);
    EXPECT_LE(samples_kept, 71u);
    kept_steps = samples_kept;
    // Every report but the newest trimmed one and those inside the retention went too.
    EXPECT_LT(count_of(*trimmed.log, wire::Payload::NodeMetricReported),
              count_of(*all.log, wire::Payload::NodeMetricReported) / 2);
    EXPECT_EQ(all.agent->last_report(), trimmed.agent->last_report());
  }
  // Restart both: the trimmed one replays fewer records, then both decide the same.
  auto all = open_node(tmp.sub("all"), tree, 0, t);
  auto trimmed = open_node(tmp.sub("trimmed"), tree, retention, t);
  ASSERT_TRUE(all.agent && trimmed.agent);
  EXPECT_LT(trimmed.agent->stats().replayed + 150, all.agent->stats().replayed);
  EXPECT_EQ(all.agent->last_report(), trimmed.agent->last_report());
  const auto from = *all.log->end_offset();
  ASSERT_EQ(from, *trimmed.log->end_offset());
  for (int i = 0; i < 30; ++i) {
    write_pods_node(tree, false, ++tick, 12);
    t += step_ms;
    auto ra = all.agent->step(event_time{t});
    ASSERT_TRUE(ra) << ra.error().describe();
    auto rb = trimmed.agent->step(event_time{t});
    ASSERT_TRUE(rb) << rb.error().describe();
  }
  const auto a = records_from(*all.log, from);
  const auto b = records_from(*trimmed.log, from);
  ASSERT_EQ(a.size(), b.size());
  std::size_t reports = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (a[i] != b[i]) {
      ADD_FAILURE() << "record " << from + i << " differs:\n"
                    << messages::to_json(a[i]).value_or("?") << "\n"
                    << messages::to_json(b[i]).value_or("?");
      break;
    }
    reports += wire::GetEnvelope(a[i].data())->payload_type() == wire::Payload::NodeMetricReported;
  }
  EXPECT_GE(a.size(), 30u);
  EXPECT_GE(reports, 9u) << "the comparison covers reports built from the replayed window";
  EXPECT_GT(kept_steps, 0u);
}

}  // namespace
}  // namespace colony::testing
