// descheduler_component fed envelopes directly: a hot node's pods get PodMigrationJobs (payload,
// causation, reason), the anomaly detector needs consecutive abnormal rounds, a cold cluster gets
// none, the migration limits and per-round limits hold, and the same input gives the same bytes.
#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

#include "actors/descheduler/actor/descheduler_component.hpp"
#include "tests/actors/descheduler_actor/descheduler_log.hpp"
#include "tests/support/component_feed.hpp"

namespace colony::descheduler_actor {
namespace {

using testing::cpu_mem;
using testing::decoded;
using testing::descheduler_log;
using testing::gib;

constexpr std::int64_t t0 = 1'000;

// A DeschedulerConfiguration with Koordinator's shipped thresholds (low cpu 45 / memory 55, high
// cpu 75 / memory 80), EvictDirectly jobs, and the given anomaly count and extra args.
descheduler::descheduler_config config(int consecutive_abnormalities = 1,
                                       const std::string& mc_extra = "",
                                       const std::string& top_extra = "") {
  const std::string yaml =
      "apiVersion: descheduler/v1alpha2\n"
      "kind: DeschedulerConfiguration\n"
      "deschedulingInterval: 10s\n" +
      top_extra +
      "profiles:\n"
      "- name: koord-descheduler\n"
      "  plugins:\n"
      "    balance:\n"
      "      enabled:\n"
      "      - name: LowNodeLoad\n"
      "  pluginConfig:\n"
      "  - name: MigrationController\n"
      "    args: {defaultJobMode: EvictDirectly" +
      mc_extra +
      "}\n"
      "  - name: LowNodeLoad\n"
      "    args:\n"
      "      evictableNamespaces: {exclude: [kube-system, koordinator-system]}\n"
      "      lowThresholds: {cpu: 45, memory: 55}\n"
      "      highThresholds: {cpu: 75, memory: 80}\n"
      "      anomalyCondition: {consecutiveAbnormalities: " +
      std::to_string(consecutive_abnormalities) + "}\n";
  auto c = descheduler::parse_descheduler_config(yaml);
  EXPECT_TRUE(c.has_value()) << c.error().describe();
  return c ? *c : descheduler::descheduler_config{};
}

struct pod_load {
  std::string key;
  std::int64_t cpu;  // usage, millicores
  std::string owner = "ReplicaSet/rs-a";
};

// Node "hot" (10 cores) carrying `hot` pods, and three cold nodes at 20 % cpu. Returns the offset
// of the hot node's NodeMetricReported. Memory stays at 10 % everywhere.
std::uint64_t cluster(descheduler_log& log, const std::vector<pod_load>& hot,
                      std::int64_t hot_system_cpu = 1'000) {
  for (const char* n : {"cold-1", "cold-2", "cold-3", "hot"})
    log.node(t0, n, cpu_mem(10'000, 100 * gib, 110), cpu_mem(10'000, 100 * gib, 110));
  std::vector<testing::event_log::pod_usage> hot_usage;
  std::int64_t hot_cpu = hot_system_cpu;
  for (const auto& p : hot) {
    log.pod(t0, p.key, "hot", p.owner, 500);
    hot_usage.push_back({p.key, p.cpu, gib});
    hot_cpu += p.cpu;
  }
  for (const char* n : {"cold-1", "cold-2", "cold-3"}) {
    const std::string key = std::string("other/") + n + "-pod";
    log.pod(t0, key, n, "ReplicaSet/rs-other", 500);
    (void)log.metric(t0, n, 2'000, 10 * gib, {{key, 1'000, gib}}, cpu_mem(1'000, 10 * gib - gib));
  }
  return log.metric(
      t0, "hot", hot_cpu, 10 * gib, hot_usage,
      cpu_mem(hot_system_cpu, 10 * gib - static_cast<std::int64_t>(hot.size()) * gib));
}

std::vector<const wire::Envelope*> of_type(std::vector<messages::byte_buffer>&&,
                                           wire::Payload) = delete;
std::vector<const wire::Envelope*> of_type(const std::vector<messages::byte_buffer>& out,
                                           wire::Payload type) {
  std::vector<const wire::Envelope*> v;
  for (const auto& b : out)
    if (const auto& e = decoded(b); e.payload_type() == type) v.push_back(&e);
  return v;
}

std::vector<std::string> job_pods(const std::vector<messages::byte_buffer>& out) {
  std::vector<std::string> v;
  for (const auto* e : of_type(out, wire::Payload::MigrationJobCreated))
    v.push_back(testing::text(e->payload_as_MigrationJobCreated()->pod()));
  return v;
}

// Four pods over 8.0 cores plus 1.0 of system usage: 90 % cpu against a 75 % high threshold, an
// excess of 1.5 cores. The pod whose usage is nearest above the excess scores highest
// (ResourceUsageScorerPod: 1 + excess/usage), so p4 (1.7 cores) goes first and is enough.
const std::vector<pod_load> four_pods = {
    {"default/p1", 2'500}, {"default/p2", 2'000}, {"default/p3", 1'800}, {"default/p4", 1'700}};

TEST(DeschedulerComponent, HotNodePodGetsAMigrationJob) {
  descheduler_log log;
  const auto metric_offset = cluster(log, four_pods);
  descheduler_component c({.config = config()});
  const auto out = testing::feed(c, log);
  const auto jobs = of_type(out, wire::Payload::MigrationJobCreated);
  ASSERT_EQ(jobs.size(), 1u);
  const auto& e = *jobs[0];
  const auto* j = e.payload_as_MigrationJobCreated();
  EXPECT_EQ(testing::text(j->pod()), "default/p4");
  EXPECT_EQ(testing::text(j->name()), "default.p4.1000");
  EXPECT_EQ(testing::text(e.entity_key()), "default.p4.1000");
  EXPECT_EQ(e.entity_kind(), wire::EntityKind::PodMigrationJob);
  EXPECT_EQ(testing::text(j->mode()), "EvictDirectly");
  EXPECT_EQ(j->ttl_ms(), 300'000);
  EXPECT_EQ(testing::text(j->creator()), "koord-descheduler");
  EXPECT_EQ(testing::text(e.source()), "koord-descheduler");
  EXPECT_EQ(testing::text(j->reason()),
            "node is overutilized, node cpu usage(90.00%)>threshold(75.00%)");
  EXPECT_EQ(testing::term(j->inputs(), "trigger"), "LowNodeLoad");
  EXPECT_EQ(testing::term(j->inputs(), "node"), "hot");
  EXPECT_EQ(testing::term(j->inputs(), "pool"), "__default_node_pool__");
  EXPECT_EQ(testing::term(j->inputs(), "scope"), "node");
  EXPECT_EQ(e.causation(), static_cast<std::int64_t>(metric_offset));
  EXPECT_EQ(e.event_time_ms(), t0);
  EXPECT_EQ(c.stats().rounds, 1u);
  EXPECT_EQ(c.stats().jobs_created, 1u);
  // The job counts at once: the next round (same, stale NodeMetric: the node still reads hot)
  // skips p4, which has an active job, and takes the next pod within maxMigratingPerNode 2.
  std::vector<messages::byte_buffer> next;
  ASSERT_EQ(c.next_wakeup_ms(), std::optional<std::int64_t>(10'000));
  c.on_wakeup(10'000, next);
  EXPECT_EQ(job_pods(next), std::vector<std::string>{"default/p3"});
  std::vector<messages::byte_buffer> third;
  c.on_wakeup(20'000, third);
  EXPECT_EQ(job_pods(third), std::vector<std::string>{}) << "two jobs on the node: the limit";
}

TEST(DeschedulerComponent, ColdClusterCreatesNothing) {
  descheduler_log log;
  // 1.0 + 4 x 0.5 cores = 30 %: under every threshold.
  (void)cluster(
      log, {{"default/p1", 500}, {"default/p2", 500}, {"default/p3", 500}, {"default/p4", 500}});
  descheduler_component c({.config = config()});
  auto out = testing::feed(c, log);
  for (int round = 0; round < 5; ++round) c.on_wakeup(*c.next_wakeup_ms(), out);
  EXPECT_TRUE(out.empty());
  EXPECT_EQ(c.stats().rounds, 6u);
  EXPECT_EQ(c.stats().jobs_created, 0u);
}

TEST(DeschedulerComponent, AnomalyNeedsConsecutiveAbnormalRounds) {
  // consecutiveAbnormalities = k: the detector enters Anomaly when the count is above k, so the
  // first job comes in round k + 1 (round 1 when k = 1: the golden cases' bypass).
  struct row {
    int k;
    int first_round;
  };
  for (const row r : {row{1, 1}, row{2, 3}, row{3, 4}, row{5, 6}}) {
    SCOPED_TRACE("consecutiveAbnormalities " + std::to_string(r.k));
    descheduler_log log;
    (void)cluster(log, four_pods);
    descheduler_component c({.config = config(r.k)});
    int first = 0;
    auto out = testing::feed(c, log);
    for (int round = 1; round <= 8 && first == 0; ++round) {
      if (round > 1) c.on_wakeup(*c.next_wakeup_ms(), out);
      if (!job_pods(out).empty()) first = round;
    }
    EXPECT_EQ(first, r.first_round);
    EXPECT_EQ(job_pods(out), std::vector<std::string>{"default/p4"});
  }
}

TEST(DeschedulerComponent, MigrationAndRoundLimitsHold) {
  // Ten pods of one ReplicaSet over 9.5 cores plus 0.3 of system: 98 %, an excess of 2.3 cores,
  // so three evictions of 0.95 are needed. Workload limits at 50 % (5 of 10) stay out of the way
  // unless a row lowers them.
  std::vector<pod_load> ten;
  for (int i = 0; i < 10; ++i) ten.push_back({"default/q" + std::to_string(i), 950});
  struct row {
    const char* name;
    std::string mc, top;
    std::size_t jobs;
  };
  const std::string wl = ", maxMigratingPerWorkload: 50%, maxUnavailablePerWorkload: 50%";
  const std::vector<row> rows = {
      {"per node default 2", wl, "", 2},
      {"per node 1", wl + ", maxMigratingPerNode: 1", "", 1},
      {"per node 5: the load decides", wl + ", maxMigratingPerNode: 5", "", 3},
      {"per namespace 1", wl + ", maxMigratingPerNode: 5, maxMigratingPerNamespace: 1", "", 1},
      {"globally 2", wl + ", maxMigratingPerNode: 5, maxMigratingGlobally: 2", "", 2},
      {"per workload 1",
       ", maxMigratingPerWorkload: 1, maxUnavailablePerWorkload: 50%"
       ", maxMigratingPerNode: 5",
       "", 1},
      {"round limit per node 1", wl + ", maxMigratingPerNode: 5", "maxNoOfPodsToEvictPerNode: 1\n",
       1},
      {"round limit per namespace 2", wl + ", maxMigratingPerNode: 5",
       "maxNoOfPodsToEvictPerNamespace: 2\n", 2},
  };
  for (const auto& r : rows) {
    SCOPED_TRACE(r.name);
    descheduler_log log;
    (void)cluster(log, ten, 300);
    descheduler_component c({.config = config(1, r.mc, r.top)});
    const auto out = testing::feed(c, log);
    const auto pods = job_pods(out);
    EXPECT_EQ(pods.size(), r.jobs);
    // Equal pods: the newest first, then the key order they were given in.
    for (std::size_t i = 0; i < pods.size(); ++i)
      EXPECT_EQ(pods[i], "default/q" + std::to_string(i));
  }
}

TEST(DeschedulerComponent, ExcludedAndUnevictablePodsAreNotChosen) {
  // The best candidate is a DaemonSet pod, the next one is in kube-system: p3 goes instead.
  descheduler_log log;
  (void)cluster(log,
                {{"default/p1", 2'000},
                 {"default/p2", 1'900},
                 {"default/p3", 1'800},
                 {"kube-system/p4", 1'700, "ReplicaSet/rs-sys"},
                 {"default/p5", 1'600, "DaemonSet/ds"}},
                0);  // 90 %
  descheduler_component c({.config = config()});
  EXPECT_EQ(job_pods(testing::feed(c, log)), std::vector<std::string>{"default/p3"});
}

TEST(DeschedulerComponent, SameInputGivesByteIdenticalOutput) {
  std::vector<pod_load> ten;
  for (int i = 0; i < 10; ++i) ten.push_back({"default/q" + std::to_string(i), 900 + 10 * i});
  auto run = [&] {
    descheduler_log log;
    (void)cluster(log, ten, 300);
    descheduler_component c({.config = config(2, ", maxMigratingPerNode: 5")});
    auto out = testing::feed(c, log);
    for (int round = 0; round < 4; ++round) c.on_wakeup(*c.next_wakeup_ms(), out);
    return out;
  };
  const auto a = run();
  const auto b = run();
  ASSERT_FALSE(a.empty());
  ASSERT_EQ(a.size(), b.size());
  for (std::size_t i = 0; i < a.size(); ++i) EXPECT_EQ(a[i], b[i]) << "record " << i;
}

}  // namespace
}  // namespace colony::descheduler_actor
