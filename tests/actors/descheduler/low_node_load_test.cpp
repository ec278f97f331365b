// LowNodeLoad against Koordinator's golden cases
// (pkg/descheduler/framework/plugins/loadaware/low_node_load_test.go TestLowNodeLoad,
// Test_filterRealAbnormalNodes, Test_resetNodesAsNormal, Test_tryMarkNodesAsNormal;
// utilization_util_test.go TestResourceUsagePercentages, TestPodFitsAnyNodeWithThreshold).
#include <gtest/gtest.h>

#include <cmath>

#include "actors/descheduler/low_node_load.hpp"
#include "actors/descheduler/migration_filter.hpp"

namespace colony::descheduler {
namespace {

constexpr std::int64_t now = 1'000'000;

node_info node(const std::string& name, std::int64_t cpu, std::int64_t mem, std::int64_t pods,
               bool unschedulable = false, resource_amounts extra = {}) {
  node_info n;
  n.name = name;
  n.allocatable = {{"cpu", cpu}, {"memory", mem}, {"pods", pods}};
  for (const auto& [r, q] : extra) n.allocatable[r] = q;
  n.unschedulable = unschedulable;
  return n;
}

enum class kind { rs, ds, mirror_local, crit, pod_owner };

pod_info pod(const std::string& name, const std::string& node_name, resource_amounts req,
             kind k = kind::rs) {
  pod_info p;
  p.ns = "default";
  p.name = name;
  p.uid = name;
  p.node = node_name;
  p.requests = std::move(req);
  p.kube_qos = kube_qos_class::burstable;  // requests without limits
  p.owner = {"ReplicaSet", "rs-1"};
  switch (k) {
    case kind::rs:
      break;
    case kind::ds:
      p.owner = {"DaemonSet", "ds-1"};
      break;
    case kind::mirror_local:
      p.mirror = true;
      p.local_storage = true;
      break;
    case kind::crit:
      p.ns = "kube-system";
      p.priority = system_critical_priority;
      break;
    case kind::pod_owner:
      p.owner = {"Pod", "owner-pod"};
      break;
  }
  return p;
}

struct cluster {
  std::vector<node_info> nodes;
  std::vector<pod_info> pods;
  std::map<std::string, node_metric_info, std::less<>> metrics;

  // Pod usage = requests, system usage 0, updated now.
  void measure() {
    metrics.clear();
    for (const auto& n : nodes) metrics[n.name].update_time_ms = now;
    for (const auto& p : pods)
      metrics[p.node].pods.push_back(pod_metric_info{p.ns, p.name, p.requests});
  }
};

low_node_load_args args_of(resource_thresholds low, resource_thresholds high,
                           std::optional<resource_thresholds> prod_low = {},
                           std::optional<resource_thresholds> prod_high = {},
                           bool deviation = false) {
  low_node_load_args a;
  a.low_thresholds = std::move(low);
  a.high_thresholds = std::move(high);
  a.prod_low_thresholds = std::move(prod_low);
  a.prod_high_thresholds = std::move(prod_high);
  a.use_deviation_thresholds = deviation;
  a.anomaly = anomaly_condition{60'000, 1, 3};  // bypass
  a.node_metric_expiration_seconds = 1'000'000'000;
  set_defaults(a);
  EXPECT_TRUE(validate(a).has_value());
  return a;
}

// Runs one round with the default evictor (evictions.go constraints) and counts evictions.
std::size_t evictions(cluster& c, const low_node_load_args& a,
                      std::vector<std::string>* victims = nullptr) {
  c.measure();
  low_node_load lnl(a);
  migration_controller_args mc;
  mc.skip_eviction_gates = {"ExpectedReplicas"};
  std::map<std::string, pod_info, std::less<>> by_key;
  for (const auto& p : c.pods) by_key[p.key()] = p;
  std::vector<job_info> jobs;
  migration_view view{&by_key, &jobs, {}};
  low_node_load_input in;
  in.nodes = c.nodes;
  in.now_ms = now;
  in.pods_on_node = [&](const node_info& n) {
    std::vector<const pod_info*> v;
    for (const auto& p : c.pods)
      if (p.node == n.name) v.push_back(&p);
    return v;
  };
  in.node_metric = [&](std::string_view n) -> const node_metric_info* {
    const auto it = c.metrics.find(n);
    return it == c.metrics.end() ? nullptr : &it->second;
  };
  std::size_t n = 0;
  evictor ev;
  ev.filter = [&](const pod_info& p) { return non_retryable_refusal(p, mc, view).empty(); };
  ev.evict = [&](const eviction_request& r) {
    ++n;
    if (victims) victims->push_back(r.pod->name);
    return true;
  };
  (void)lnl.balance(in, ev);
  return n;
}

// The common fixture of L1-L7: n1 (4000 m, 3000, 9 pods), n2 (4000 m, 3000, 10), n3 like n2.
cluster l1_cluster(bool n3_unschedulable = true) {
  cluster c;
  c.nodes = {node("n1", 4000, 3000, 9), node("n2", 4000, 3000, 10),
             node("n3", 4000, 3000, 10, n3_unschedulable)};
  for (int i = 1; i <= 5; ++i) c.pods.push_back(pod("p" + std::to_string(i), "n1", {{"cpu", 400}}));
  c.pods.push_back(pod("p6", "n1", {{"cpu", 400}}, kind::ds));
  c.pods.push_back(pod("p7", "n1", {{"cpu", 400}}, kind::mirror_local));
  c.pods.push_back(pod("p8", "n1", {{"cpu", 400}}, kind::crit));
  c.pods.push_back(pod("p9", "n2", {{"cpu", 400}}));
  return c;
}

TEST(LowNodeLoad, L1WithoutPriorities) {
  auto c = l1_cluster();
  EXPECT_EQ(evictions(c, args_of({{"cpu", 30}, {"pods", 30}}, {{"cpu", 50}, {"pods", 50}})), 4u);
}

TEST(LowNodeLoad, L2StopWhenMemoryCapacityIsDepleted) {
  auto c = l1_cluster();
  for (auto& p : c.pods) p.requests["memory"] = p.name == "p9" ? 2100 : 300;
  EXPECT_EQ(evictions(c, args_of({{"cpu", 30}, {"pods", 30}}, {{"cpu", 50}, {"pods", 50}})), 3u);
}

TEST(LowNodeLoad, L3WithExtendedResource) {
  cluster c;
  c.nodes = {node("n1", 4000, 3000, 9, false, {{"example.com/foo", 8}}),
             node("n2", 4000, 3000, 10, false, {{"example.com/foo", 8}}),
             node("n3", 4000, 3000, 10, true)};
  const resource_amounts req{{"cpu", 0}, {"memory", 0}, {"example.com/foo", 1}};
  for (int i = 1; i <= 5; ++i) c.pods.push_back(pod("p" + std::to_string(i), "n1", req));
  c.pods.push_back(pod("p6", "n1", req, kind::pod_owner));
  c.pods.push_back(pod("p7", "n1", req, kind::mirror_local));
  c.pods.push_back(pod("p8", "n1", req, kind::crit));
  c.pods.push_back(pod("p9", "n2", req));
  EXPECT_EQ(evictions(c, args_of({{"pods", 30}, {"example.com/foo", 30}},
                                 {{"pods", 50}, {"example.com/foo", 50}})),
            3u);
}

TEST(LowNodeLoad, L4DeviationThresholds) {
  auto c = l1_cluster();
  EXPECT_EQ(
      evictions(c, args_of({{"cpu", 5}, {"pods", 5}}, {{"cpu", 5}, {"pods", 5}}, {}, {}, true)),
      2u);
}

TEST(LowNodeLoad, L5NodeUnderThresholdsButProdOver) {
  auto c = l1_cluster();
  for (auto& p : c.pods)
    if (p.name == "p3" || p.name == "p4" || p.name == "p5") {
      p.priority_class_label = priority_class::batch;
      p.has_priority_class_label = true;
    }
  EXPECT_EQ(evictions(c, args_of({{"cpu", 30}, {"pods", 30}}, {{"cpu", 90}, {"pods", 90}},
                                 resource_thresholds{{"cpu", 20}, {"pods", 20}},
                                 resource_thresholds{{"cpu", 40}, {"pods", 40}})),
            2u);
}

TEST(LowNodeLoad, L6BothNodeAndProdOverOnlyNodeUsageIsEvicted) {
  auto c = l1_cluster();
  for (auto& p : c.pods)
    if (p.name == "p4" || p.name == "p5") {
      p.priority_class_label = priority_class::batch;
      p.has_priority_class_label = true;
    }
  std::vector<std::string> victims;
  EXPECT_EQ(evictions(c,
                      args_of({{"cpu", 30}, {"pods", 30}}, {{"cpu", 70}, {"pods", 80}},
                              resource_thresholds{{"cpu", 20}, {"pods", 20}},
                              resource_thresholds{{"cpu", 40}, {"pods", 40}}),
                      &victims),
            1u);
  ASSERT_EQ(victims.size(), 1u);
  EXPECT_TRUE(victims[0] == "p4" || victims[0] == "p5") << victims[0];  // a batch pod first
}

TEST(LowNodeLoad, L7OnlyOtherNodeIsUnschedulable) {
  auto c = l1_cluster();
  c.nodes = {node("n1", 4000, 3000, 9), node("n2", 4000, 3000, 10, true)};
  c.pods.pop_back();  // no pod on n2
  EXPECT_EQ(evictions(c, args_of({{"cpu", 30}, {"pods", 30}}, {{"cpu", 50}, {"pods", 50}})), 0u);
}

// Anomaly detection on: the 6th consecutive over-threshold round is the first to evict, and an
// Anomaly lasts at most its timeout.
TEST(LowNodeLoad, AnomalyDetectionDelaysEvictionUntilConsecutiveAbnormalities) {
  auto c = l1_cluster();
  auto a = args_of({{"cpu", 30}, {"pods", 30}}, {{"cpu", 50}, {"pods", 50}});
  a.node_pools[0].anomaly = anomaly_condition{60'000, 5, 3};
  c.measure();
  low_node_load lnl(a);
  std::size_t evicted = 0;
  low_node_load_input in;
  in.nodes = c.nodes;
  in.pods_on_node = [&](const node_info& n) {
    std::vector<const pod_info*> v;
    for (const auto& p : c.pods)
      if (p.node == n.name && p.owner.kind == "ReplicaSet" && !p.mirror && p.ns == "default")
        v.push_back(&p);
    return v;
  };
  in.node_metric = [&](std::string_view n) { return &c.metrics.at(std::string(n)); };
  evictor ev;
  ev.evict = [&](const eviction_request&) {
    ++evicted;
    return true;
  };
  std::vector<std::size_t> per_round;
  for (int round = 0; round < 12; ++round) {
    in.now_ms = now + round * 10'000;
    const std::size_t before = evicted;
    (void)lnl.balance(in, ev);
    per_round.push_back(evicted - before);
  }
  // Rounds 1-5 mark, round 6 enters Anomaly and evicts until n1 is no longer over (3 pods: its
  // 5 pods against 4 and cpu against 2000 m), which resets its detector: the metrics do not
  // change here, so n1 needs 6 rounds again.
  EXPECT_EQ(per_round, (std::vector<std::size_t>{0, 0, 0, 0, 0, 3, 0, 0, 0, 0, 0, 3}));
}

TEST(LowNodeLoad, L11FilterRealAbnormalNodes) {
  const std::vector<std::string> ab{"A", "B"};
  {
    detector_cache cache;
    EXPECT_EQ(filter_real_abnormal_nodes(ab, cache, {60'000, 1, 1}, now), ab);
  }
  {
    detector_cache cache;
    EXPECT_TRUE(filter_real_abnormal_nodes(ab, cache, {60'000, 2, 1}, now).empty());
  }
  {
    detector_cache cache;
    std::vector<std::string> got;
    for (int i = 0; i < 3; ++i) got = filter_real_abnormal_nodes(ab, cache, {60'000, 2, 1}, now);
    EXPECT_EQ(got, ab);
  }
  {
    detector_cache cache;
    const std::vector<std::string> b{"B"};
    (void)filter_real_abnormal_nodes(b, cache, {60'000, 2, 1}, now);
    (void)filter_real_abnormal_nodes(b, cache, {60'000, 2, 1}, now);
    EXPECT_EQ(filter_real_abnormal_nodes(ab, cache, {60'000, 2, 1}, now), b);
  }
}

TEST(LowNodeLoad, L12ResetAndTryMarkNodesAsNormal) {
  const std::vector<std::string> a{"A"};
  {
    detector_cache cache;
    const anomaly_condition c{60'000, 2, 3};
    std::vector<std::string> got;
    for (int i = 0; i < 3; ++i) got = filter_real_abnormal_nodes(a, cache, c, now);
    EXPECT_EQ(got, a);
    cache.reset("A", now);
    EXPECT_TRUE(filter_real_abnormal_nodes(a, cache, c, now).empty());
  }
  {
    basic_detector d({60'000, 2, 2});
    for (int i = 0; i < 3; ++i) (void)d.mark(false, now);
    EXPECT_EQ(d.state(now), anomaly_state::anomaly);
    EXPECT_EQ(d.mark(true, now), anomaly_state::anomaly);
    EXPECT_EQ(d.mark(true, now), anomaly_state::anomaly);
    EXPECT_EQ(d.mark(true, now), anomaly_state::ok);
  }
}

TEST(LowNodeLoad, AnomalyExpiresTimeoutAfterEntryAndResetIsNoOpInOk) {
  basic_detector d({60'000, 2, 3});
  (void)d.mark(false, 0);
  (void)d.mark(false, 0);
  d.reset();  // OK: the partial count survives
  EXPECT_EQ(d.consecutive_abnormalities(), 2);
  EXPECT_EQ(d.mark(false, 0), anomaly_state::anomaly);
  EXPECT_EQ(d.mark(false, 60'000), anomaly_state::anomaly);  // expiry is strict
  EXPECT_EQ(d.mark(false, 60'001), anomaly_state::ok);       // expired, counting again
  EXPECT_EQ(d.consecutive_abnormalities(), 1);
}

TEST(LowNodeLoad, L13ResourceUsagePercentages) {
  const auto p =
      resource_usage_percentages({{"cpu", 1220}, {"memory", 3038982964}, {"pods", 11}},
                                 {{"cpu", 1930}, {"memory", 3287692LL * 1024}, {"pods", 29}});
  EXPECT_EQ(std::floor(p.at("cpu")), 63);
  EXPECT_EQ(std::floor(p.at("memory")), 90);
  EXPECT_EQ(std::floor(p.at("pods")), 37);
}

TEST(LowNodeLoad, L14PodFitsAnyNodeWithThresholdLeavesUsageWhenItDoesNot) {
  const node_info target = node("t", 4000, 8LL << 30, 110);
  std::map<std::string, node_usage, std::less<>> usages;
  usages["t"].node = &target;
  usages["t"].usage = {{"cpu", 1000}};
  std::map<std::string, node_thresholds, std::less<>> th;
  th["t"].high = {{"cpu", 2000}};
  pod_info p = pod("p", "src", {{"cpu", 100}});
  const std::vector<std::string> targets{"t"};
  EXPECT_FALSE(pod_fits_any_node_with_threshold(p, {{"cpu", 1500}}, targets, usages, th, false));
  EXPECT_EQ(usages["t"].usage.at("cpu"), 1000);
  EXPECT_TRUE(pod_fits_any_node_with_threshold(p, {{"cpu", 500}}, targets, usages, th, false));
  EXPECT_EQ(usages["t"].usage.at("cpu"), 1500);  // kept: capacity pre-reserved
}

TEST(LowNodeLoad, ThresholdsTruncateAndMemoryIsAlwaysChecked) {
  low_node_load_node_pool pool;
  pool.low_thresholds = resource_thresholds{{"pods", 50}};
  pool.high_thresholds = resource_thresholds{{"pods", 50}};
  const auto t = new_thresholds(pool);
  EXPECT_EQ(t.resources, (std::vector<std::string>{"memory", "pods"}));
  EXPECT_EQ(t.high.at("memory"), 100);
  EXPECT_EQ(resource_threshold({{"pods", 9}}, "pods", 50), 4);
}

TEST(LowNodeLoad, EvictionReasonNamesOverThresholdResources) {
  auto c = l1_cluster();
  c.measure();
  low_node_load lnl(args_of({{"cpu", 30}, {"pods", 30}}, {{"cpu", 50}, {"pods", 50}}));
  low_node_load_input in;
  in.nodes = c.nodes;
  in.now_ms = now;
  in.pods_on_node = [&](const node_info& n) {
    std::vector<const pod_info*> v;
    for (const auto& p : c.pods)
      if (p.node == n.name) v.push_back(&p);
    return v;
  };
  in.node_metric = [&](std::string_view n) { return &c.metrics.at(std::string(n)); };
  std::vector<std::string> reasons;
  evictor ev;
  ev.filter = [](const pod_info& p) { return p.owner.kind == "ReplicaSet" && !p.mirror; };
  ev.evict = [&](const eviction_request& r) {
    reasons.push_back(r.reason);
    return true;
  };
  (void)lnl.balance(in, ev);
  ASSERT_FALSE(reasons.empty());
  EXPECT_EQ(reasons[0],
            "node is overutilized, node cpu usage(80.00%)>threshold(50.00%), node pods "
            "usage(88.89%)>threshold(50.00%)");
}

}  // namespace
}  // namespace colony::descheduler
