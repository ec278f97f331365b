// Koordinator's descheduler sorters against its golden cases
// (pkg/descheduler/framework/plugins/loadaware/utilization_util_test.go
// TestSortPodsOnOneOverloadedNode, TestSortNodesByUsageDescendingOrder / AscendingOrder;
// pkg/descheduler/utils/sorter/pod_test.go TestSortPods2) and the order's keys.
#include <gtest/gtest.h>

#include <cmath>

#include "actors/descheduler/low_node_load.hpp"
#include "actors/descheduler/pod_sorter.hpp"

namespace colony::descheduler {
namespace {

constexpr std::int64_t gi = 1LL << 30;

pod_info named(const std::string& n) {
  pod_info p;
  p.ns = "default";
  p.name = n;
  return p;
}

std::vector<std::string> names_of(const std::vector<const pod_info*>& v) {
  std::vector<std::string> out;
  for (const auto* p : v) out.push_back(p->name);
  return out;
}

TEST(PodSorter, L8SortPodsOnOneOverloadedNode) {
  const resource_amounts usage{{"cpu", 30000}, {"memory", 998244353}};
  const resource_amounts high{{"cpu", 20000}, {"memory", 27487790694}};
  const weight_map pool_weights{{"cpu", 1}, {"memory", 1}};
  // Only cpu is over: memory's weight is 0.
  const auto over = overutilized(usage, high);
  weight_map w;
  resource_amounts excess;
  for (const auto& [r, u] : over) {
    w[r] = pool_weights.at(r);
    excess[r] = u - high.at(r);
  }
  std::vector<pod_info> pods{named("pod1"), named("pod2"), named("pod3"), named("pod4")};
  const std::map<std::string, resource_amounts> metric{
      {"pod1", {{"cpu", 1000}, {"memory", 27487790694}}},
      {"pod2", {{"cpu", 3000}, {"memory", 27487790694}}},
      {"pod3", {{"cpu", 2000}, {"memory", 1}}},
      {"pod4", {{"cpu", 4000}, {"memory", 1}}}};
  std::vector<const pod_info*> v;
  for (const auto& p : pods) v.push_back(&p);
  sort_pods_by_usage(v, excess, w, [&](const pod_info& p) { return &metric.at(p.name); });
  EXPECT_EQ(names_of(v), (std::vector<std::string>{"pod4", "pod2", "pod3", "pod1"}));
  EXPECT_DOUBLE_EQ(pod_usage_score(metric.at("pod4"), excess, w), 0.4);
}

TEST(PodSorter, L9SortNodesByUsage) {
  const resource_amounts alloc{{"cpu", 32000}, {"memory", 32 * gi}, {"pods", 110}};
  const weight_map w{{"cpu", 1}, {"memory", 1}, {"pods", 1}};
  node_info n1{"node1", {}, alloc}, n2{"node2", {}, alloc}, n3{"node3", {}, alloc};
  node_usage u1, u2, u3;
  u1.node = &n1;
  u1.usage = {{"cpu", 1730}, {"memory", 3038982964}, {"pods", 25}};
  u2.node = &n2;
  u2.usage = {{"cpu", 1220}, {"memory", 3038982964}, {"pods", 11}};
  u3.node = &n3;
  u3.usage = {{"cpu", 1530}, {"memory", 5038982964}, {"pods", 20}};
  EXPECT_EQ(node_usage_score(u1.usage, alloc, w), 123);
  EXPECT_EQ(node_usage_score(u2.usage, alloc, w), 75);
  EXPECT_EQ(node_usage_score(u3.usage, alloc, w), 124);
  std::vector<const node_usage*> v{&u1, &u2, &u3};
  sort_nodes_by_usage(v, w, false, false);
  EXPECT_EQ(v[0]->node->name, "node3");
  EXPECT_EQ(v[1]->node->name, "node1");
  EXPECT_EQ(v[2]->node->name, "node2");
  sort_nodes_by_usage(v, w, true, false);
  EXPECT_EQ(v[0]->node->name, "node2");
  EXPECT_EQ(v[1]->node->name, "node1");
  EXPECT_EQ(v[2]->node->name, "node3");
}

TEST(PodSorter, L10SortPods2) {
  std::vector<pod_info> pods;
  for (const char* n : {"test-1", "test-2", "test-3", "test-4"}) {
    auto p = named(n);
    p.priority = 5000;
    p.kube_qos = kube_qos_class::best_effort;
    p.qos_label = qos_class::be;
    p.priority_class_label = priority_class::batch;
    p.has_priority_class_label = true;
    pods.push_back(p);
  }
  const std::map<std::string, resource_amounts> metric{
      {"test-1", {{"cpu", 2000}, {"memory", 5 * gi}}},
      {"test-2", {{"cpu", 3000}, {"memory", 4 * gi}}},
      {"test-3", {{"cpu", 4000}, {"memory", 3 * gi}}},
      {"test-4", {{"cpu", 5000}, {"memory", 2 * gi}}}};
  const resource_amounts excess{{"cpu", 4000}, {"memory", 4 * gi}};
  const weight_map w{{"cpu", 1}, {"memory", 2}};
  std::vector<const pod_info*> v;
  for (const auto& p : pods) v.push_back(&p);
  sort_pods_by_usage(v, excess, w, [&](const pod_info& p) { return &metric.at(p.name); });
  EXPECT_EQ(names_of(v), (std::vector<std::string>{"test-2", "test-1", "test-3", "test-4"}));
  EXPECT_NEAR(pod_usage_score(metric.at("test-2"), excess, w), 1.583, 1e-3);
  EXPECT_NEAR(pod_usage_score(metric.at("test-1"), excess, w), 1.367, 1e-3);
  EXPECT_NEAR(pod_usage_score(metric.at("test-3"), excess, w), 1.167, 1e-3);
  EXPECT_NEAR(pod_usage_score(metric.at("test-4"), excess, w), 0.933, 1e-3);
}

// One row per key of the order: a goes before b.
struct order_row {
  const char* what;
  pod_info a, b;
};

TEST(PodSorter, EveryKeyOfTheOrder) {
  std::vector<order_row> rows;
  auto base = [] {
    pod_info p = named("x");
    p.kube_qos = kube_qos_class::burstable;
    return p;
  };
  {
    auto a = base(), b = base();
    a.priority_class_label = priority_class::free;
    a.has_priority_class_label = true;
    b.priority_class_label = priority_class::batch;
    b.has_priority_class_label = true;
    rows.push_back({"free before batch", a, b});
  }
  {
    auto a = base(), b = base();
    a.priority = 9000;           // prod by band
    b.priority = 2'000'000'000;  // no band, Burstable: prod too, but higher priority
    rows.push_back({"lower spec.priority first", a, b});
  }
  {
    auto a = base(), b = base();
    a.kube_qos = kube_qos_class::best_effort;
    a.qos_label = qos_class::ls;  // same class (prod from LS), lower Kubernetes QoS
    rows.push_back({"BestEffort before Burstable", a, b});
  }
  {
    auto a = base(), b = base();
    a.qos_label = qos_class::ls;
    b.qos_label = qos_class::lsr;
    rows.push_back({"LS before LSR", a, b});
  }
  {
    auto a = base(), b = base();
    a.annotations[std::string(annotation_pod_deletion_cost)] = "-5";
    rows.push_back({"lower deletion cost first", a, b});
  }
  {
    auto a = base(), b = base();
    b.annotations[std::string(annotation_eviction_cost)] = "7";
    rows.push_back({"lower eviction cost first", a, b});
  }
  {
    auto a = base(), b = base();
    a.creation_ms = 2000;
    b.creation_ms = 1000;
    rows.push_back({"newer first", a, b});
  }
  for (const auto& r : rows) {
    std::vector<const pod_info*> v{&r.b, &r.a};
    sort_pods_by_usage(v, {}, {},
                       [](const pod_info&) -> const resource_amounts* { return nullptr; });
    EXPECT_EQ(v[0], &r.a) << r.what;
  }
}

TEST(PodSorter, PodsWithoutAMetricGoLast) {
  auto a = named("a"), b = named("b");
  const resource_amounts m{{"cpu", 1}};
  std::vector<const pod_info*> v{&a, &b};
  sort_pods_by_usage(v, {{"cpu", 10}}, {{"cpu", 1}},
                     [&](const pod_info& p) { return p.name == "b" ? &m : nullptr; });
  EXPECT_EQ(v[0], &b);
}

TEST(PodSorter, EffectivePriorityClassFromQoS) {
  auto p = named("p");
  p.kube_qos = kube_qos_class::burstable;
  EXPECT_EQ(effective_priority_class(p), priority_class::prod);  // unlabelled Burstable
  p.priority = 2'000'000'000;
  EXPECT_EQ(effective_priority_class(p), priority_class::prod);
  p.kube_qos = kube_qos_class::best_effort;
  EXPECT_EQ(effective_priority_class(p), priority_class::batch);
  p.priority = 3500;
  EXPECT_EQ(effective_priority_class(p), priority_class::free);
}

}  // namespace
}  // namespace colony::descheduler
