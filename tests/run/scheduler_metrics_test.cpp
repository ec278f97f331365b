// The scheduler's metrics of `colony run`: the framework timings (run/scheduler_metrics.hpp:
// sampling, the live gate, concurrent observations) and the families run_metrics derives from
// logged decisions (Koordinator's evaluated/feasible node histograms, kube's
// scheduler_unschedulable_pods and scheduler_pod_scheduling_attempts).
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "messages/codec.hpp"
#include "run/run_metrics.hpp"
#include "run/scheduler_metrics.hpp"

namespace colony::run {
namespace {

using scheduler::status_code;

const metric_family* find(const std::vector<metric_family>& fs, std::string_view name) {
  for (const auto& f : fs)
    if (f.name == name) return &f;
  return nullptr;
}

std::uint64_t count(const histogram_sample& h) {
  std::uint64_t n = 0;
  for (auto b : h.buckets) n += b;
  return n;
}

std::string label(const metric_labels& ls, std::string_view k) {
  for (const auto& [n, v] : ls)
    if (n == k) return v;
  return {};
}

TEST(SchedulerMetrics, SamplesTheGivenShareOfCyclesEvenly) {
  for (const unsigned pct : {0u, 10u, 25u, 100u}) {
    scheduler_metrics m("koord-scheduler", pct);
    std::uint64_t sampled = 0;
    for (int i = 0; i < 1000; ++i) sampled += m.sample_cycle() ? 1 : 0;
    EXPECT_EQ(sampled, pct * 10) << pct << " %";
    EXPECT_EQ(m.sampled_cycles(), sampled);
    EXPECT_EQ(m.cycles(), 1000u);
  }
}

TEST(SchedulerMetrics, CountsNothingUntilLive) {
  scheduler_metrics m;
  m.set_live(false);
  EXPECT_FALSE(m.sample_cycle());
  m.extension_point(scheduler::ep_pre_filter, status_code::success, 1000);
  m.plugin(0, "NodeResourcesFit", scheduler::ep_filter, status_code::success, 1000);
  auto fs = m.families();
  ASSERT_EQ(fs.size(), 2u);
  EXPECT_TRUE(fs[0].histograms.empty());
  EXPECT_TRUE(fs[1].histograms.empty());
  m.set_live(true);
  m.extension_point(scheduler::ep_pre_filter, status_code::success, 1000);
  fs = m.families();
  ASSERT_EQ(fs[0].histograms.size(), 1u);
  EXPECT_EQ(count(fs[0].histograms[0]), 1u);
}

// Four threads report the same cells at once (as the parallel Filter does): one cell per
// (plugin, point, status), every observation counted, labels as kube-scheduler's.
TEST(SchedulerMetrics, ConcurrentObservationsAreAllCountedOncePerCell) {
  scheduler_metrics m("koord-scheduler", 100);
  constexpr int per_thread = 20'000;
  std::vector<std::thread> ts;
  for (int t = 0; t < 4; ++t)
    ts.emplace_back([&m, t] {
      for (int i = 0; i < per_thread; ++i) {
        m.plugin(static_cast<std::size_t>(i % 2),
                 i % 2 ? "LoadAwareScheduling" : "NodeResourcesFit", scheduler::ep_filter,
                 i % 3 ? status_code::success : status_code::unschedulable, 20'000 + t);
        if (i % 100 == 0) m.extension_point(scheduler::ep_score, status_code::success, 2'000'000);
      }
    });
  for (auto& t : ts) t.join();
  const auto fs = m.families();
  ASSERT_EQ(fs[1].name, "scheduler_plugin_execution_duration_seconds");
  ASSERT_EQ(fs[1].histograms.size(), 4u);  // 2 plugins x 2 statuses
  std::uint64_t total = 0;
  for (const auto& h : fs[1].histograms) {
    total += count(h);
    EXPECT_EQ(label(h.labels, "extension_point"), "Filter");
    EXPECT_TRUE(label(h.labels, "status") == "Success" ||
                label(h.labels, "status") == "Unschedulable");
    EXPECT_EQ(h.bounds.size(), 20u);  // ExponentialBuckets(0.00001, 1.5, 20)
    // 20 us falls in (1.52e-5, 2.28e-5]: bucket 2 (bounds 1e-5, 1.5e-5, 2.25e-5, ...).
    EXPECT_EQ(h.buckets[2], count(h));
  }
  EXPECT_EQ(total, 4u * per_thread);
  ASSERT_EQ(fs[0].name, "scheduler_framework_extension_point_duration_seconds");
  ASSERT_EQ(fs[0].histograms.size(), 1u);
  EXPECT_EQ(label(fs[0].histograms[0].labels, "extension_point"), "Score");
  EXPECT_EQ(label(fs[0].histograms[0].labels, "profile"), "koord-scheduler");
  EXPECT_EQ(count(fs[0].histograms[0]), 4u * per_thread / 100);
  EXPECT_NEAR(fs[0].histograms[0].sum, 0.002 * 4 * per_thread / 100, 1e-9);
}

// ---- run_metrics: families derived from the decisions the loop reads back

messages::byte_buffer proposal(const std::string& pod, std::int32_t attempt, int evaluated,
                               int feasible) {
  messages::event_builder b;
  auto& f = b.fbb();
  const auto p = f.CreateString(pod);
  const auto n = f.CreateString("node-a");
  const auto s = f.CreateString("koord-scheduler/0");
  wire::PodBindProposedBuilder pb(f);
  pb.add_pod(p);
  pb.add_node(n);
  pb.add_scheduler(s);
  pb.add_attempt(attempt);
  pb.add_evaluated_nodes(evaluated);
  pb.add_feasible_nodes(feasible);
  return b.finish({event_time{0}, wire::EntityKind::Pod, pod, 0, "koord-scheduler/0"}, pb.Finish());
}

messages::byte_buffer scheduled(const std::string& pod, std::int64_t proposal_offset) {
  messages::event_builder b;
  auto& f = b.fbb();
  const auto p = f.CreateString(pod);
  const auto n = f.CreateString("node-a");
  const auto s = f.CreateString("koord-scheduler/0");
  wire::PodScheduledBuilder sb(f);
  sb.add_pod(p);
  sb.add_node(n);
  sb.add_proposal_offset(proposal_offset);
  sb.add_scheduler(s);
  return b.finish({event_time{0}, wire::EntityKind::Node, "node-a", proposal_offset, "node"},
                  sb.Finish());
}

messages::byte_buffer unschedulable(const std::string& pod, std::vector<std::string> plugins) {
  messages::event_builder b;
  auto& f = b.fbb();
  std::vector<flatbuffers::Offset<wire::PluginReason>> rs;
  for (const auto& pl : plugins) {
    const auto name = f.CreateString(pl);
    const auto why = f.CreateString("Insufficient cpu");
    rs.push_back(wire::CreatePluginReason(f, name, why, 3));
  }
  const auto v = f.CreateVector(rs);
  const auto p = f.CreateString(pod);
  const auto s = f.CreateString("koord-scheduler/0");
  const auto u = wire::CreatePodUnschedulable(f, p, 1, v, s);
  return b.finish({event_time{0}, wire::EntityKind::Pod, pod, 0, "koord-scheduler/0"}, u);
}

TEST(RunMetrics, DerivesNodeCountsAttemptsAndUnschedulablePodsFromTheLog) {
  run_metrics m;
  const auto now = std::chrono::steady_clock::now();
  log_offset off = 10;
  const auto feed = [&](const messages::byte_buffer& rec) {
    m.observe_delivered(off, now);
    m.observe_record(off, *wire::GetEnvelope(rec.data()), now, true);
    return off++;
  };
  // pod a: proposed on its 1st attempt after filtering 40 nodes (12 fit), bound.
  const auto pa = feed(proposal("ns/a", 1, 40, 12));
  feed(scheduled("ns/a", static_cast<std::int64_t>(pa)));
  // pod b: unschedulable by two plugins (one reason listed twice), then bound on attempt 3.
  feed(unschedulable("ns/b", {"NodeResourcesFit", "LoadAwareScheduling", "NodeResourcesFit"}));
  auto fs = m.families(nullptr);
  const auto* u = find(fs, "scheduler_unschedulable_pods");
  ASSERT_NE(u, nullptr);
  ASSERT_EQ(u->samples.size(), 2u);
  for (const auto& s : u->samples) EXPECT_EQ(s.value, 1.0) << label(s.labels, "plugin");
  const auto pb = feed(proposal("ns/b", 3, 2000, 1));
  feed(scheduled("ns/b", static_cast<std::int64_t>(pb)));
  fs = m.families(nullptr);
  u = find(fs, "scheduler_unschedulable_pods");
  ASSERT_NE(u, nullptr);
  for (const auto& s : u->samples) EXPECT_EQ(s.value, 0.0) << label(s.labels, "plugin");

  const auto* e = find(fs, "scheduler_pod_scheduling_evaluated_nodes");
  const auto* fe = find(fs, "scheduler_pod_scheduling_feasible_nodes");
  const auto* at = find(fs, "scheduler_pod_scheduling_attempts");
  ASSERT_TRUE(e && fe && at);
  EXPECT_EQ(count(e->histograms[0]), 2u);
  EXPECT_EQ(e->histograms[0].sum, 2040.0);
  EXPECT_EQ(fe->histograms[0].sum, 13.0);
  EXPECT_EQ(count(at->histograms[0]), 2u);
  EXPECT_EQ(at->histograms[0].sum, 4.0);        // attempts 1 and 3
  EXPECT_EQ(at->histograms[0].buckets[0], 1u);  // le 1
  EXPECT_EQ(at->histograms[0].buckets[2], 1u);  // (2, 4]
  // The framework's families are part of the scrape, empty until the scheduler reports.
  EXPECT_NE(find(fs, "scheduler_framework_extension_point_duration_seconds"), nullptr);
  EXPECT_NE(find(fs, "scheduler_plugin_execution_duration_seconds"), nullptr);
}

}  // namespace
}  // namespace colony::run
