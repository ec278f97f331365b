// NodeMetric report building (pkg/koordlet/statesinformer/impl/states_nodemetric.go).
#include <gtest/gtest.h>

#include "actors/koordlet/node_metric.hpp"
#include "tests/actors/koordlet/koordlet_test_util.hpp"

namespace colony::koordlet {
namespace {

// Test_fieldPercentileOfMetricList (pkg/koordlet/metriccache/util_test.go).
TEST(KoordletNodeMetric, FieldPercentileOfMetricList) {
  struct row {
    const char* name;
    std::vector<double> values;
    float p;
    double want;
  };
  const std::vector<row> rows = {
      {"calculate multi-element list of p90 (GC-NM-1)",
       {800, 100, 200, 600, 700, 0, 500, 400, 300},
       0.9f,
       700},
      {"calculate single-element list", {5}, 0.5f, 5},
      {"calculate two-element list of p50", {9, 1}, 0.5f, 1},
      {"index floored at 0", {3, 2, 1}, 0.1f, 1},
      {"p100 is the max", {3, 2, 1}, 1.0f, 3},
  };
  for (auto r : rows) {
    SCOPED_TRACE(r.name);
    EXPECT_EQ(percentile_of(r.values, r.p), r.want);
  }
}

sample_window steady_window(std::int64_t seconds, double node_cpu, double node_mem) {
  sample_window w;
  for (std::int64_t t = 0; t <= seconds; ++t) {
    usage_sample pod_a{event_time{t * 1000}, 1.0, 1e9};
    usage_sample pod_b{event_time{t * 1000}, 0.5, 5e8};
    w.add_pod("uid-a", pod_a);
    w.add_pod("uid-b", pod_b);
    usage_sample pods[] = {pod_a, pod_b};
    w.add_node_and_system({event_time{t * 1000}, node_cpu + double(t % 10) / 10, node_mem}, pods,
                          {});
  }
  return w;
}

TEST(KoordletNodeMetric, ReportAveragesSortsPodsAndFiltersColdStart) {
  auto w = steady_window(600, 4.0, 8e9);  // 10 minutes of 1 s samples
  std::vector<pod_info> pods = {test::make_pod("zeta", qos_class::be),
                                test::make_pod("alpha", qos_class::ls),
                                test::make_pod("no-samples", qos_class::ls)};
  pods[0].uid = "uid-a";
  pods[1].uid = "uid-b";
  pods[1].ns = "kube-system";
  node_metric_collect_policy policy;
  auto st = build_node_metric_status(w, pods, {}, policy, event_time{600000});
  EXPECT_EQ(st.update_time, event_time{600000});
  ASSERT_TRUE(st.node_metric.node_usage.has_value());
  // 301 samples over [300 s, 600 s]: cpu 4.0 + mean of (t % 10)/10.
  EXPECT_NEAR(double(st.node_metric.node_usage->cpu_milli), 4450, 5);
  EXPECT_EQ(st.node_metric.node_usage->memory_bytes, 8000000000);
  ASSERT_TRUE(st.node_metric.system_usage.has_value());
  EXPECT_NEAR(double(st.node_metric.system_usage->cpu_milli), 2950, 5);
  EXPECT_EQ(st.node_metric.system_usage->memory_bytes, 6500000000);

  ASSERT_EQ(st.pods_metric.size(), 2u);  // the pod without samples is left out
  EXPECT_EQ(st.pods_metric[0].ns, "default");
  EXPECT_EQ(st.pods_metric[0].name, "zeta");
  EXPECT_EQ(st.pods_metric[0].pod_usage.cpu_milli, 1000);
  EXPECT_EQ(st.pods_metric[0].priority, priority_class::batch);
  EXPECT_EQ(st.pods_metric[1].name, "alpha");
  EXPECT_EQ(st.pods_metric[1].qos, qos_class::ls);

  ASSERT_EQ(st.node_metric.aggregated_node_usages.size(), 3u);
  const auto& five = st.node_metric.aggregated_node_usages[0];
  const auto& ten = st.node_metric.aggregated_node_usages[1];
  const auto& thirty = st.node_metric.aggregated_node_usages[2];
  EXPECT_EQ(five.duration_seconds, 300);
  ASSERT_TRUE(five.avg && five.p50 && five.p90 && five.p95 && five.p99);
  EXPECT_EQ(five.p99->cpu_milli, 4900);
  EXPECT_EQ(five.p50->cpu_milli, 4400);
  ASSERT_TRUE(ten.avg.has_value());      // 600 s of samples cover 10 min
  EXPECT_FALSE(thirty.avg.has_value());  // 600 s < 50 % of 30 min: cold start
  EXPECT_FALSE(thirty.p99.has_value());
  EXPECT_FALSE(st.node_metric.aggregated_system_usages[2].avg.has_value());
}

TEST(KoordletNodeMetric, EmptyWindowGivesEmptyUsages) {
  sample_window w;
  auto st = build_node_metric_status(w, {}, {}, {}, event_time{1000});
  EXPECT_FALSE(st.node_metric.node_usage.has_value());
  EXPECT_EQ(st.node_metric.aggregated_node_usages.size(), 3u);
  EXPECT_FALSE(st.node_metric.aggregated_node_usages[0].avg.has_value());
}

TEST(KoordletNodeMetric, IntervalsFloorsTrimAndLateSamples) {
  node_metric_collect_policy p;
  p.report_interval_seconds = 10;
  p.aggregate_duration_seconds = 20;
  EXPECT_EQ(effective_report_interval_seconds(p), 30);
  EXPECT_EQ(effective_aggregate_duration_seconds(p), 60);
  p.report_interval_seconds.reset();
  EXPECT_EQ(next_report_time(event_time{1000}, p), event_time{61000});

  sample_window w;
  w.add_node({event_time{3000}, 3, 0});
  w.add_node({event_time{1000}, 1, 0});  // late sample keeps time order
  w.add_node({event_time{2000}, 2, 0});
  ASSERT_EQ(w.node().size(), 3u);
  EXPECT_EQ(w.node()[0].cpu_cores, 1);
  EXPECT_EQ(w.node()[2].cpu_cores, 3);
  w.add_pod("p", {event_time{1000}, 1, 1});
  w.trim(event_time{2000});
  EXPECT_EQ(w.node().size(), 2u);
  EXPECT_TRUE(w.pod("p").empty());
  EXPECT_EQ(w.sample_count(), 2u);
}

TEST(KoordletNodeMetric, HostAppsSortedByName) {
  sample_window w;
  for (int t = 0; t <= 300; ++t) {
    w.add_host_app("zz", {event_time{t * 1000}, 0.2, 100});
    w.add_host_app("aa", {event_time{t * 1000}, 0.1, 50});
  }
  std::vector<host_app_info> apps = {
      {"zz", priority_class::prod, qos_class::ls, false, cgroup_base::none, {}, {}},
      {"aa", priority_class::batch, qos_class::be, false, cgroup_base::none, {}, {}},
      {"none", priority_class::prod, qos_class::ls, false, cgroup_base::none, {}, {}}};
  auto st = build_node_metric_status(w, {}, apps, {}, event_time{300000});
  ASSERT_EQ(st.host_app_metric.size(), 2u);
  EXPECT_EQ(st.host_app_metric[0].name, "aa");
  EXPECT_EQ(st.host_app_metric[0].usage.cpu_milli, 100);
  EXPECT_EQ(st.host_app_metric[1].usage.memory_bytes, 100);
}

}  // namespace
}  // namespace colony::koordlet

namespace {

// trim_pods keeps node and system series whole and cuts pod and host-app series only.
TEST(NodeMetricWindow, TrimPodsLeavesNodeAndSystemSeries) {
  using namespace colony;
  using namespace colony::koordlet;
  sample_window w;
  for (std::int64_t s = 0; s < 10; ++s) {
    const usage_sample x{event_time{s * 1000}, 1.0, 1.0};
    w.add_pod("p", x);
    w.add_host_app("a", x);
    w.add_node_and_system(x, std::span<const usage_sample>(&x, 1), {});
  }
  w.trim_pods(event_time{7000});
  EXPECT_EQ(w.pod("p").size(), 3u);
  EXPECT_EQ(w.host_app("a").size(), 3u);
  EXPECT_EQ(w.node().size(), 10u);
  EXPECT_EQ(w.system().size(), 10u);
  w.trim_pods(event_time{20000});
  EXPECT_TRUE(w.pod("p").empty());
  EXPECT_EQ(w.sample_count(), 20u);
}

}  // namespace
