// framework_recorder: the framework times its extension points every cycle and its plugin calls
// in sampled cycles, and a recorder changes no decision. A counting recorder checks what a cycle
// reports against the decision it made (evaluated nodes, outcome, the point that refused it).
#include <gtest/gtest.h>

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "actors/scheduler/scheduler_config.hpp"
#include "tests/actors/scheduler/test_helpers.hpp"

namespace colony::scheduler {
namespace {

using testing::Gi;
using testing::kNow;

// Counts every report; the clock advances 1 us per reading, so every duration is > 0.
class counting_recorder final : public framework_recorder {
 public:
  explicit counting_recorder(std::size_t sample_every) : every_(sample_every) {}
  std::int64_t now_ns() noexcept override { return clock_.fetch_add(1000) + 1000; }
  bool sample_cycle() noexcept override {
    std::lock_guard lk(mu_);
    ++cycles;
    sampled_now = every_ != 0 && cycles % every_ == 0;
    return sampled_now;
  }
  void extension_point(std::uint32_t ep, status_code code, std::int64_t ns) noexcept override {
    std::lock_guard lk(mu_);
    ++points[{ep, code}];
    if (ns <= 0) ++bad_durations;
  }
  void plugin(std::size_t index, std::string_view name, std::uint32_t ep, status_code code,
              std::int64_t ns) noexcept override {
    std::lock_guard lk(mu_);
    ++plugins[{std::string(name), ep, code}];
    if (!sampled_now) ++outside_sample;
    if (ns <= 0) ++bad_durations;
    if (index >= 64) ++bad_index;
  }
  std::uint64_t point(std::uint32_t ep) const {
    std::uint64_t n = 0;
    for (const auto& [k, v] : points)
      if (k.first == ep) n += v;
    return n;
  }
  std::uint64_t plugin_calls(std::uint32_t ep) const {
    std::uint64_t n = 0;
    for (const auto& [k, v] : plugins)
      if (std::get<1>(k) == ep) n += v;
    return n;
  }
  std::uint64_t at(std::uint32_t ep, status_code code) const {
    auto it = points.find({ep, code});
    return it == points.end() ? 0 : it->second;
  }
  std::uint64_t plugin_at(const std::string& name, std::uint32_t ep, status_code code) const {
    auto it = plugins.find({name, ep, code});
    return it == plugins.end() ? 0 : it->second;
  }
  void reset_counts() {
    points.clear();
    plugins.clear();
  }

  std::size_t every_;
  std::atomic<std::int64_t> clock_{0};
  std::mutex mu_;
  std::uint64_t cycles = 0, outside_sample = 0, bad_durations = 0, bad_index = 0;
  bool sampled_now = false;
  std::map<std::pair<std::uint32_t, status_code>, std::uint64_t> points;
  std::map<std::tuple<std::string, std::uint32_t, status_code>, std::uint64_t> plugins;
};

std::vector<node_info> some_nodes(std::mt19937_64& rng, std::size_t n) {
  std::vector<node_info> nodes;
  for (std::size_t i = 0; i < n; ++i) {
    auto node = testing::make_node("node-" + std::to_string(i), 8'000 + 1000 * (rng() % 24),
                                   (32 + rng() % 96) * Gi);
    if (rng() % 3 == 0) {  // nearly full: Filter fails here
      node.requested.cpu_milli = node.allocatable.cpu_milli - 250 * (rng() % 3);
      node.non_zero_requested.cpu_milli = node.requested.cpu_milli;
    }
    nodes.push_back(std::move(node));
  }
  return nodes;
}

pod_info some_pod(std::mt19937_64& rng, std::size_t i) {
  // Every 7th pod asks for more cpu than any node has: a FitError, then PostFilter.
  const std::int64_t cpu = i % 7 == 6 ? 64'000 : 250 * static_cast<std::int64_t>(1 + rng() % 16);
  auto pod = testing::make_pod("default/pod-" + std::to_string(i),
                               testing::cpu_mem(cpu, (1 + rng() % 8) * Gi));
  pod.requests.pods = 1;
  return pod;
}

// One framework with a recorder that samples every cycle, one without, same pods and nodes:
// the same decisions, and each cycle's reports match its decision.
TEST(FrameworkRecorder, ReportsEachCycleAndChangesNoDecision) {
  auto cfg = parse_scheduler_config(koord_scheduler_shipped_config(), "shipped");
  ASSERT_TRUE(cfg) << cfg.error().describe();
  for (const bool parallel : {false, true}) {
    SCOPED_TRACE(parallel ? "parallel" : "one thread");
    std::mt19937_64 rng(7);
    auto plain = build_framework(*cfg, 0, plugin_registry::with_builtin(), 7);
    auto timed = build_framework(*cfg, 0, plugin_registry::with_builtin(), 7);
    ASSERT_TRUE(plain && timed);
    auto rec = std::make_shared<counting_recorder>(1);
    timed->fwk->options().recorder = rec;
    if (parallel) {
      const auto par = [](std::size_t n, const std::function<void(std::size_t)>& fn) {
        std::vector<std::thread> ts;
        for (std::size_t w = 0; w < 3; ++w)
          ts.emplace_back([&, w] {
            for (std::size_t i = w; i < n; i += 3) fn(i);
          });
        for (auto& t : ts) t.join();
      };
      plain->fwk->options().parallelizer = par;
      timed->fwk->options().parallelizer = par;
      plain->fwk->options().parallel_chunk = 8;
      timed->fwk->options().parallel_chunk = 8;
    }
    std::size_t filter_plugins = 0;
    for (const auto& e : timed->fwk->plugins())
      if (e.enabled & ep_filter) ++filter_plugins;
    auto nodes_a = some_nodes(rng, 40);
    auto nodes_b = nodes_a;
    cycle_state sa, sb;
    std::size_t scheduled = 0, fit_errors = 0;
    for (std::size_t i = 0; i < 120; ++i) {
      SCOPED_TRACE("cycle " + std::to_string(i));
      const auto pod = some_pod(rng, i);
      const auto now = event_time{kNow.value + static_cast<std::int64_t>(i) * 1000};
      rec->reset_counts();
      auto da = plain->fwk->run_cycle(sa, pod, nodes_a, now);
      auto db = timed->fwk->run_cycle(sb, pod, nodes_b, now);
      ASSERT_EQ(da.result, db.result);
      ASSERT_EQ(da.node, db.node);
      ASSERT_EQ(da.total_score, db.total_score);
      ASSERT_EQ(da.evaluated_nodes, db.evaluated_nodes);
      EXPECT_EQ(rec->point(ep_pre_filter), 1u);
      // Filter: at least one plugin per evaluated node, at most all of them (the parallel path
      // may filter nodes past the ones the decision takes).
      const auto filters = rec->plugin_calls(ep_filter);
      EXPECT_GE(filters, db.evaluated_nodes);
      if (!parallel) {
        EXPECT_LE(filters, db.evaluated_nodes * filter_plugins);
      }
      EXPECT_EQ(rec->point(ep_filter), 0u);  // none per cycle, as in kube
      if (db.result == outcome::scheduled) {
        ++scheduled;
        EXPECT_EQ(rec->at(ep_score, status_code::success), 1u);
        EXPECT_EQ(rec->at(ep_reserve, status_code::success), 1u);
        EXPECT_EQ(rec->at(ep_permit, status_code::success), 1u);
        EXPECT_EQ(rec->point(ep_post_filter), 0u);
        EXPECT_GT(rec->plugin_calls(ep_score), 0u);
        EXPECT_GT(rec->plugin_calls(ep_score_normalize), 0u);
        assume_pod(nodes_a[da.node_index], pod, da, now);
        assume_pod(nodes_b[db.node_index], pod, db, now);
      } else if (db.failed_at == ep_filter) {
        ++fit_errors;
        EXPECT_EQ(rec->point(ep_score), 0u);
        EXPECT_EQ(rec->point(ep_reserve), 0u);
        EXPECT_EQ(rec->at(ep_post_filter, status_code::unschedulable), 1u);
        EXPECT_GT(rec->plugin_at("NodeResourcesFit", ep_filter, status_code::unschedulable), 0u);
      }
    }
    EXPECT_GT(scheduled, 60u);
    EXPECT_GE(fit_errors, 17u);  // every 7th pod
    EXPECT_EQ(rec->outside_sample, 0u);
    EXPECT_EQ(rec->bad_durations, 0u);
    EXPECT_EQ(rec->bad_index, 0u);
    EXPECT_EQ(rec->cycles, 120u);
  }
}

// Plugin calls are reported only in the cycles the recorder samples; extension points always.
TEST(FrameworkRecorder, PluginCallsOnlyInSampledCycles) {
  auto cfg = parse_scheduler_config(koord_scheduler_shipped_config(), "shipped");
  ASSERT_TRUE(cfg);
  auto b = build_framework(*cfg, 0, plugin_registry::with_builtin(), 1);
  ASSERT_TRUE(b);
  auto rec = std::make_shared<counting_recorder>(10);
  b->fwk->options().recorder = rec;
  std::mt19937_64 rng(3);
  auto nodes = some_nodes(rng, 20);
  cycle_state st;
  std::uint64_t with_plugins = 0;
  for (std::size_t i = 0; i < 50; ++i) {
    rec->reset_counts();
    auto d = b->fwk->run_cycle(st, some_pod(rng, i), nodes, kNow);
    EXPECT_EQ(rec->point(ep_pre_filter), 1u);
    if (!rec->plugins.empty()) ++with_plugins;
    EXPECT_EQ(!rec->plugins.empty(), rec->sampled_now) << "cycle " << i;
  }
  EXPECT_EQ(with_plugins, 5u);  // cycles 10, 20, 30, 40, 50
  EXPECT_EQ(rec->outside_sample, 0u);
}

}  // namespace
}  // namespace colony::scheduler
