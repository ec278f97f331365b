// Golden cases of LoadAwareScheduling, from Koordinator's
// pkg/scheduler/plugins/loadaware/{load_aware_test.go, estimator/default_estimator_test.go}.
#include <gtest/gtest.h>

#include "actors/scheduler/load_aware.hpp"
#include "tests/actors/scheduler/test_helpers.hpp"

namespace colony::scheduler {
namespace {

using namespace testing;
using R = resource_name;

// --- estimator/default_estimator_test.go TestDefaultEstimatorEstimatePod ----------------------

struct estimate_row {
  const char* name;
  pod_info pod;
  resource_map factors;
  bool allow_customize;
  std::int64_t cpu;
  std::int64_t memory;
};

pod_info batch_pod() {
  pod_info p = make_pod("default/batch");
  p.qos_label = qos_class::be;
  p.priority = 5000;
  p.requests.batch_cpu_milli = 4000;
  p.requests.batch_memory_bytes = 8 * Gi;
  p.limits = p.requests;
  return p;
}

pod_info ls_request_only() {
  pod_info p = make_pod("default/ls", cpu_mem(4000, 8 * Gi));
  p.qos_label = qos_class::ls;
  p.priority = priority_prod_value_max;
  return p;
}

TEST(LoadAwareEstimator, TestDefaultEstimatorEstimatePod) {
  pod_info customized = ls_request_only();
  customized.custom_scaling_factors = {{R::cpu, 100}};
  const std::vector<estimate_row> rows = {
      {"estimate empty pod",
       make_pod("default/empty"),
       {{R::cpu, 85}, {R::memory, 70}},
       false,
       250,
       209715200},
      {"estimate guaranteed pod",
       make_pod("default/g", cpu_mem(4000, 8 * Gi), cpu_mem(4000, 8 * Gi)),
       {{R::cpu, 85}, {R::memory, 70}},
       false,
       3400,
       6012954214},
      {"estimate burstable pod",
       make_pod("default/b", cpu_mem(4000, 8 * Gi), cpu_mem(8000, 8 * Gi)),
       {{R::cpu, 85}, {R::memory, 70}},
       false,
       6800,
       6012954214},
      {"estimate guaranteed pod with zoomed memory factors",
       make_pod("default/z", cpu_mem(4000, 8 * Gi), cpu_mem(4000, 8 * Gi)),
       {{R::cpu, 85}, {R::memory, 110}},
       false,
       3400,
       8589934592},
      {"estimate Batch pod", batch_pod(), {{R::cpu, 85}, {R::memory, 70}}, false, 3400, 6012954214},
      {"estimate pod only has request",
       ls_request_only(),
       {{R::cpu, 80}, {R::memory, 80}},
       false,
       3200,
       6871947674},
      {"estimate pod with customized scaling factors",
       customized,
       {{R::cpu, 80}, {R::memory, 80}},
       true,
       4000,
       6871947674},
  };
  for (const auto& row : rows) {
    SCOPED_TRACE(row.name);
    auto est = estimate_pod(row.pod, row.factors, row.allow_customize);
    EXPECT_EQ(est[R::cpu], row.cpu);
    EXPECT_EQ(est[R::memory], row.memory);
  }
}

TEST(LoadAwareEstimator, TestDefaultEstimatorEstimateNode) {
  node_info n = make_node("n", 32000, 42 * Gi);
  n.raw_allocatable = {{R::cpu, 28000}, {R::memory, 32 * Gi}};
  auto a = estimate_node(n);
  EXPECT_EQ(a.cpu_milli, 28000);
  EXPECT_EQ(a.memory_bytes, 32 * Gi);
  node_info same = make_node("n", 32000, 42 * Gi);
  same.raw_allocatable = {{R::cpu, 32000}, {R::memory, 42 * Gi}};
  EXPECT_EQ(estimate_node(same), same.allocatable);
}

// --- load_aware_test.go TestFilterUsage -------------------------------------------------------

pod_metric reported(std::string key, std::int64_t cpu_cores, std::int64_t mem_gi, bool prod) {
  return {std::move(key), prod ? priority_class::prod : priority_class::none,
          cpu_mem(cpu_cores * 1000, mem_gi * Gi)};
}

node_metric fresh_metric(std::int64_t cpu_cores, std::int64_t mem_gi,
                         std::vector<pod_metric> pods = {}) {
  node_metric m;
  m.update_time = kNow;
  m.report_interval_seconds = 60;
  m.node_usage = cpu_mem(cpu_cores * 1000, mem_gi * Gi);
  m.pods = std::move(pods);
  return m;
}

// An assigned pod scheduled 10 s before the NodeMetric (PodScheduled condition).
pod_info assigned(std::string key, std::int32_t priority, resource_list req = {}) {
  pod_info p = make_pod(std::move(key), req);
  p.priority = priority;
  p.node_name = "test-node-1";
  p.scheduled_time = seconds_before(10);
  return p;
}

pod_info prod_pod(std::string key, resource_list req = {}) {
  pod_info p = make_pod(std::move(key), req);
  p.priority = priority_prod_value_max;
  return p;
}

pod_info mid_pod(std::string key, std::int64_t mid_cpu, std::int64_t mid_mem) {
  pod_info p = make_pod(std::move(key));
  p.priority = priority_mid_value_max;
  p.requests.mid_cpu_milli = mid_cpu;
  p.requests.mid_memory_bytes = mid_mem;
  return p;
}

struct filter_row {
  const char* name;
  resource_map usage_thresholds;
  resource_map prod_usage_thresholds;
  std::optional<load_aware_aggregated_args> aggregated;
  std::optional<custom_usage_thresholds> custom;
  std::optional<node_metric> metric;
  std::vector<pod_info> pods;
  pod_info test_pod;
  std::string want;  // "" = pass
};

TEST(LoadAwareFilter, TestFilterUsage) {
  const std::vector<pod_metric> prod_63 = {reported("default/prod-pod-1", 30, 200, true),
                                           reported("default/prod-pod-2", 33, 300, true)};
  const std::vector<pod_info> two_prod = {assigned("default/prod-pod-1", priority_prod_value_max),
                                          assigned("default/prod-pod-2", priority_prod_value_max)};
  node_metric p95 = fresh_metric(30, 100);
  p95.aggregated.push_back(
      {duration_ms{5 * 60 * 1000}, aggregation_type::p95, cpu_mem(70000, 256 * Gi)});
  load_aware_aggregated_args agg;
  agg.usage_thresholds = {{R::cpu, 60}};
  agg.usage_aggregation_type = aggregation_type::p95;
  agg.usage_aggregated_duration = duration_ms{5 * 60 * 1000};
  custom_usage_thresholds custom_mem;
  custom_mem.usage_thresholds = {{R::memory, 60}};
  custom_usage_thresholds custom_p95;
  custom_p95.aggregated_usage =
      custom_aggregated_usage{{{R::cpu, 60}}, aggregation_type::p95, duration_ms{5 * 60 * 1000}};
  custom_usage_thresholds custom_prod;
  custom_prod.prod_usage_thresholds = {{R::cpu, 100}, {R::memory, 50}};
  pod_info daemonset = prod_pod("default/test-pod");
  daemonset.daemonset_owned = true;

  const std::vector<filter_row> rows = {
      {"filter normal usage", {}, {}, {}, {}, fresh_metric(60, 256), {}, {}, ""},
      {"filter node missing NodeMetrics", {}, {}, {}, {}, std::nullopt, {}, {}, ""},
      {"filter exceed cpu usage",
       {},
       {},
       {},
       {},
       fresh_metric(70, 256),
       {},
       {},
       "node(s) cpu usage exceed threshold"},
      {"filter exceed p95 cpu usage",
       {},
       {},
       agg,
       {},
       p95,
       {},
       {},
       "node(s) cpu aggregated usage exceed threshold"},
      {"filter exceed memory usage",
       {},
       {},
       {},
       {},
       fresh_metric(30, 500),
       {},
       {},
       "node(s) memory usage exceed threshold"},
      {"filter exceed memory usage by custom usage thresholds",
       {},
       {},
       {},
       custom_mem,
       fresh_metric(30, 316),
       {},
       {},
       "node(s) memory usage exceed threshold"},
      {"filter exceed p95 cpu usage by custom usage",
       {},
       {},
       {},
       custom_p95,
       p95,
       {},
       {},
       "node(s) cpu aggregated usage exceed threshold"},
      {"disable filter exceed memory usage",
       {{R::memory, 0}},
       {},
       {},
       {},
       fresh_metric(30, 500),
       {},
       {},
       ""},
      {"prod usage filter is not enabled by default",
       {{R::cpu, 100}, {R::memory, 100}},
       {},
       {},
       {},
       fresh_metric(63, 500, prod_63),
       two_prod,
       {},
       ""},
      {"filter prod cpu usage",
       {{R::cpu, 100}, {R::memory, 100}},
       {{R::cpu, 50}, {R::memory, 100}},
       {},
       {},
       fresh_metric(63, 500, prod_63),
       two_prod,
       prod_pod("default/prod-pod-3"),
       "node(s) cpu usage exceed threshold"},
      {"filter prod memory usage",
       {{R::cpu, 100}, {R::memory, 100}},
       {{R::cpu, 100}, {R::memory, 50}},
       {},
       {},
       fresh_metric(63, 500, prod_63),
       two_prod,
       prod_pod("default/prod-pod-3"),
       "node(s) memory usage exceed threshold"},
      {"filter prod memory usage with custom usage configuration",
       {{R::cpu, 100}, {R::memory, 100}},
       {{R::cpu, 100}, {R::memory, 100}},
       {},
       custom_prod,
       fresh_metric(63, 500, prod_63),
       two_prod,
       prod_pod("default/prod-pod-3"),
       "node(s) memory usage exceed threshold"},
      {"filter daemonset pod exceed cpu usage",
       {},
       {},
       {},
       {},
       fresh_metric(70, 256),
       {},
       daemonset,
       ""},
      {"filter prod cpu usage with new pod request configuration",
       {{R::cpu, 65}, {R::memory, 100}},
       {{R::cpu, 60}, {R::memory, 100}},
       {},
       {},
       fresh_metric(53, 500,
                    {reported("default/prod-pod-1", 30, 100, true),
                     reported("default/prod-pod-2", 23, 200, true)}),
       two_prod,
       prod_pod("default/prod-pod-3", cpu_mem(20000, 100 * Gi)),
       "node(s) cpu usage exceed threshold"},
      {"filter mid cpu usage with new pod request configuration",
       {{R::cpu, 65}, {R::memory, 100}},
       {{R::cpu, 60}, {R::memory, 100}},
       {},
       {},
       fresh_metric(53, 300,
                    {reported("default/prod-pod-1", 30, 100, true),
                     reported("default/prod-pod-2", 23, 200, false)}),
       two_prod,
       mid_pod("default/prod-pod-3", 12000, 100 * Gi),
       "node(s) cpu usage exceed threshold"},
      {"filter memory usage with new pod request configuration",
       {{R::cpu, 65}, {R::memory, 85}},
       {{R::cpu, 60}, {R::memory, 80}},
       {},
       {},
       fresh_metric(53, 300,
                    {reported("default/prod-pod-1", 30, 100, true),
                     reported("default/prod-pod-2", 23, 200, true)}),
       two_prod,
       prod_pod("default/prod-pod-3", cpu_mem(1000, 165 * Gi)),
       "node(s) memory usage exceed threshold"},
      {"filter mid memory usage with new pod request configuration",
       {{R::cpu, 65}, {R::memory, 85}},
       {{R::cpu, 60}, {R::memory, 80}},
       {},
       {},
       fresh_metric(53, 300,
                    {reported("default/prod-pod-1", 30, 100, true),
                     reported("default/prod-pod-2", 23, 200, false)}),
       two_prod,
       mid_pod("default/prod-pod-3", 1000, 200 * Gi),
       "node(s) memory usage exceed threshold"},
      {"filter prod memory usage with assignedCache pod",
       {{R::cpu, 65}, {R::memory, 85}},
       {{R::cpu, 60}, {R::memory, 70}},
       {},
       {},
       fresh_metric(53, 300, {reported("default/prod-pod-1", 30, 100, true)}),
       {assigned("default/prod-pod-1", priority_prod_value_max),
        assigned("default/prod-pod-2", priority_prod_value_max, cpu_mem(1000, 200 * Gi))},
       prod_pod("default/prod-pod-3", cpu_mem(1000, 200 * Gi)),
       "node(s) memory usage exceed threshold"},
      {"filter mid cpu usage with assignedCache pod",
       {{R::cpu, 65}, {R::memory, 85}},
       {{R::cpu, 60}, {R::memory, 70}},
       {},
       {},
       fresh_metric(33, 110, {reported("default/prod-pod-1", 30, 100, true)}),
       {assigned("default/prod-pod-1", priority_prod_value_max),
        [] {
          pod_info p = mid_pod("default/mid-pod-2", 20000, 200 * Gi);
          p.node_name = "test-node-1";
          p.scheduled_time = seconds_before(10);
          return p;
        }()},
       mid_pod("default/mid-pod-3", 20000, 200 * Gi),
       "node(s) cpu usage exceed threshold"},
  };
  for (const auto& row : rows) {
    SCOPED_TRACE(row.name);
    auto args = load_aware_args::unset();
    args.filter_expired_node_metrics = false;
    args.usage_thresholds = row.usage_thresholds;
    args.prod_usage_thresholds = row.prod_usage_thresholds;
    args.aggregated = row.aggregated;
    args.apply_defaults();
    ASSERT_TRUE(validate(args, "args").has_value());
    load_aware_scheduling plugin(args);
    node_info node = make_node("test-node-1", 96000, 512 * Gi);
    node.metric = row.metric;
    node.custom_thresholds = row.custom;
    node.pods = row.pods;
    pod_info test_pod = row.test_pod;
    if (test_pod.key.empty()) test_pod.key = "default/empty";
    cycle_state st;
    std::vector<node_info> nodes{node};
    ASSERT_TRUE(plugin.pre_filter(st, test_pod, nodes, kNow).ok());
    auto s = plugin.filter(st, test_pod, nodes[0], kNow);
    if (row.want.empty()) {
      EXPECT_TRUE(s.ok()) << s.message();
    } else {
      EXPECT_EQ(s.code, status_code::unschedulable);
      EXPECT_EQ(s.message(), row.want);
    }
  }
}

// --- TestFilterExpiredNodeMetric / TestEnableScheduleWhenNodeMetricsExpired -----------------

struct expiry_row {
  const char* name;
  std::optional<event_time> update_time;
  std::optional<bool> enable_when_expired;
  bool want_pass;
};

void run_expiry(const std::vector<expiry_row>& rows) {
  for (const auto& row : rows) {
    SCOPED_TRACE(row.name);
    load_aware_args args;  // code defaults: filterExpiredNodeMetrics true, 180 s
    if (row.enable_when_expired)
      args.enable_schedule_when_node_metrics_expired = *row.enable_when_expired;
    load_aware_scheduling plugin(args);
    node_info node = make_node("test-node-1", 0, 0);
    node_metric m;
    m.update_time = row.update_time;
    m.has_node_metric = false;
    node.metric = m;
    cycle_state st;
    pod_info pod = make_pod("default/p");
    auto s = plugin.filter(st, pod, node, kNow);
    EXPECT_EQ(s.ok(), row.want_pass) << s.message();
    if (!row.want_pass) {
      EXPECT_EQ(s.message(), "node(s) nodeMetric expired");
    }
  }
}

TEST(LoadAwareFilter, TestFilterExpiredNodeMetric) {
  run_expiry(
      {{"filter healthy nodeMetrics", kNow, std::nullopt, true},
       {"filter unhealthy nodeMetric with nil updateTime", std::nullopt, std::nullopt, false},
       {"filter unhealthy nodeMetric with expired updateTime", seconds_before(180), std::nullopt,
        false}});
}

TEST(LoadAwareFilter, TestEnableScheduleWhenNodeMetricsExpired) {
  run_expiry(
      {{"filter healthy nodeMetrics", kNow, true, true},
       {"enable scheduling when nodeMetric with nil updateTime", std::nullopt, true, true},
       {"enable scheduling when nodeMetric with expired updateTime", seconds_before(180), true,
        true},
       {"disable scheduling when nodeMetric with nil updateTime", std::nullopt, false, false},
       {"disable scheduling when nodeMetric with expired updateTime", seconds_before(180), false,
        false}});
}

// --- load_aware_test.go TestScore ---------------------------------------------------------------

struct score_row {
  const char* name;
  pod_info pod;
  std::vector<pod_info> assigned;
  std::optional<node_metric> metric;
  std::int64_t dominant_resource_weight = 0;
  bool score_according_prod_usage = false;
  std::optional<load_aware_aggregated_args> aggregated;
  std::int64_t want;
};

pod_info guaranteed(std::string key, std::int64_t cores, std::int64_t gi) {
  return make_pod(std::move(key), cpu_mem(cores * 1000, gi * Gi), cpu_mem(cores * 1000, gi * Gi));
}

TEST(LoadAwareScore, TestScore) {
  const pod_info pod16 = guaranteed("default/test-pod-1", 16, 32);
  node_metric expired = fresh_metric(0, 0);
  expired.update_time = seconds_before(180);
  node_metric empty_usage = fresh_metric(0, 0);
  node_metric load = fresh_metric(32, 10);
  node_metric p95_load = fresh_metric(0, 0);
  p95_load.aggregated.push_back(
      {duration_ms{300000}, aggregation_type::p95, cpu_mem(32000, 10 * Gi)});
  p95_load.aggregated.push_back(
      {duration_ms{300000}, aggregation_type::p99, cpu_mem(50000, 70 * Gi)});
  load_aware_aggregated_args p95;
  p95.score_aggregation_type = aggregation_type::p95;
  p95.score_aggregated_duration = duration_ms{300000};
  node_metric unreported_with_pod =
      fresh_metric(0, 0, {{"default/assigned-pod-1", priority_class::none, cpu_mem(1000, 1 * Gi)}});

  auto assigned_at = [](std::optional<event_time> scheduled, std::optional<event_time> seen) {
    pod_info p = guaranteed("default/assigned-pod-1", 16, 32);
    p.node_name = "test-node-1";
    p.scheduled_time = scheduled;
    p.assigned_time = seen;
    return p;
  };
  node_metric load_before = load;
  load_before.update_time = seconds_before(10);

  pod_info batch = make_pod("default/test-pod-1");
  batch.priority = priority_batch_value_min;
  batch.requests.batch_cpu_milli = 16000;
  batch.requests.batch_memory_bytes = 32 * Gi;
  batch.limits = batch.requests;

  // "score prod Pod": cpu "16000" means 16000 cores in that Go test.
  pod_info prod = make_pod("default/prod-pod-1", cpu_mem(16000LL * 1000, 32 * Gi),
                           cpu_mem(16000LL * 1000, 32 * Gi));
  prod.priority = priority_prod_value_max;
  pod_info assigned_prod = guaranteed("default/assign-prod-pod-1", 16, 32);
  assigned_prod.priority = priority_prod_value_max;
  assigned_prod.node_name = "test-node-1";
  assigned_prod.assigned_time = kNow;
  node_metric prod_metric = fresh_metric(
      0, 0, {{"default/assign-prod-pod-1", priority_class::prod, cpu_mem(30000, 100 * Gi)}});

  pod_info req_less =
      make_pod("default/test-pod-1", cpu_mem(8000, 16 * Gi), cpu_mem(16000, 32 * Gi));

  const std::vector<score_row> rows = {
      {"score node with expired nodeMetric", pod16, {}, expired, 0, false, {}, 0},
      {"score empty node", pod16, {}, empty_usage, 0, false, {}, 90},
      {"score node missing NodeMetrics", pod16, {}, std::nullopt, 0, false, {}, 0},
      {"score load node", pod16, {}, load, 0, false, {}, 72},
      {"score load node with p95", pod16, {}, p95_load, 0, false, p95, 72},
      {"score load node with p95 but have not reported usage",
       pod16,
       {},
       empty_usage,
       0,
       false,
       p95,
       90},
      {"score load node with p95 but have not reported usage and have assigned pods",
       pod16,
       {assigned_at(std::nullopt, kNow)},
       unreported_with_pod,
       0,
       false,
       p95,
       81},
      {"score load node with just assigned pod",
       pod16,
       {assigned_at(std::nullopt, kNow)},
       load,
       0,
       false,
       {},
       63},
      {"score load node with just assigned pod where after updateTime",
       pod16,
       {assigned_at(std::nullopt, kNow)},
       load_before,
       0,
       false,
       {},
       63},
      {"score load node with just assigned pod where before updateTime",
       pod16,
       {assigned_at(std::nullopt, seconds_before(10))},
       load,
       0,
       false,
       {},
       63},
      {"score batch Pod", batch, {}, empty_usage, 0, false, {}, 90},
      {"score prod Pod", prod, {assigned_prod}, prod_metric, 0, true, {}, 38},
      {"score request less than limit", req_less, {}, empty_usage, 0, false, {}, 90},
      {"score with drf", pod16, {}, empty_usage, 10, false, {}, 85},
      {"score empty pod", make_pod("default/test-pod-1"), {}, empty_usage, 0, false, {}, 99},
  };
  for (const auto& row : rows) {
    SCOPED_TRACE(row.name);
    auto args = load_aware_args::unset();
    args.dominant_resource_weight = row.dominant_resource_weight;
    args.score_according_prod_usage = row.score_according_prod_usage;
    args.aggregated = row.aggregated;
    args.apply_defaults();
    load_aware_scheduling plugin(args);
    std::vector<node_info> nodes{make_node("test-node-1", 96000, 512 * Gi)};
    nodes[0].metric = row.metric;
    nodes[0].pods = row.assigned;
    cycle_state st;
    ASSERT_TRUE(plugin.pre_filter(st, row.pod, nodes, kNow).ok());
    EXPECT_EQ(plugin.score(st, row.pod, nodes[0], kNow), row.want);
  }
}

// The delta rule itself (pod_assign_cache.go addPod), checked on its own.
TEST(LoadAwareAssignCache, ReportedPodInsideReportIntervalCountsOnlyItsExcess) {
  load_aware_scheduling plugin{load_aware_args{}};
  node_info node = make_node("n", 96000, 512 * Gi);
  node.metric = fresh_metric(10, 10, {{"default/a", priority_class::none, cpu_mem(1000, 1 * Gi)}});
  pod_info a = guaranteed("default/a", 4, 4);  // estimate 3400m / 2.8Gi
  a.scheduled_time = seconds_before(30);       // newer than updateTime - 60 s
  node.pods = {a};
  auto s = plugin.summarize(node);
  EXPECT_EQ(s.node_delta[static_cast<std::size_t>(R::cpu)], 3400 - 1000);
  EXPECT_EQ(s.node_estimated[static_cast<std::size_t>(R::cpu)], 3400);
  node.pods[0].scheduled_time = seconds_before(120);  // metric has seen it: no delta
  s = plugin.summarize(node);
  EXPECT_EQ(s.node_delta[static_cast<std::size_t>(R::cpu)], 0);
  EXPECT_EQ(s.node_estimated[static_cast<std::size_t>(R::cpu)], 3400);
}

TEST(LoadAwareArgs, ShippedProfileDisablesFilterAndKeepsScore) {
  auto a = load_aware_args::shipped_profile();
  EXPECT_TRUE(validate(a, "").has_value());
  load_aware_scheduling plugin(a);
  std::vector<node_info> nodes{make_node("n", 96000, 512 * Gi)};
  nodes[0].metric = fresh_metric(95, 500);
  nodes[0].metric->update_time = seconds_before(250);  // expired under code defaults, not at 300 s
  cycle_state st;
  pod_info p = guaranteed("default/p", 1, 1);
  ASSERT_TRUE(plugin.pre_filter(st, p, nodes, kNow).ok());
  EXPECT_TRUE(plugin.filter(st, p, nodes[0], kNow).ok());
  EXPECT_GT(plugin.score(st, p, nodes[0], kNow), 0);
  load_aware_scheduling defaults{load_aware_args{}};
  cycle_state st2;
  ASSERT_TRUE(defaults.pre_filter(st2, p, nodes, kNow).ok());
  EXPECT_FALSE(defaults.filter(st2, p, nodes[0], kNow).ok());
  EXPECT_EQ(defaults.score(st2, p, nodes[0], kNow), 0);
}

TEST(LoadAwareArgs, ValidationNamesTheField) {
  load_aware_args a;
  a.resource_weights[R::cpu] = 0;
  auto r = validate(a, "args");
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().where, "args.resourceWeights[cpu]");
  load_aware_args b;
  b.resource_weights[R::batch_cpu] = 1;  // no scaling factor for it
  auto rb = validate(b, "args");
  ASSERT_FALSE(rb.has_value());
  EXPECT_EQ(rb.error().where, "args.estimatedScalingFactors");
  load_aware_args c;
  c.node_metric_expiration_seconds = 0;
  EXPECT_FALSE(validate(c, "args").has_value());
}

}  // namespace
}  // namespace colony::scheduler
