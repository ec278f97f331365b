// scheduling_cycle(): percentageOfNodesToScore, rotating start index, weights, failure
// diagnosis, the seeded tie-break rule, determinism and gang Permit through the framework.
#include <gtest/gtest.h>

#include <random>
#include <set>

#include "actors/scheduler/coscheduling.hpp"
#include "actors/scheduler/framework.hpp"
#include "actors/scheduler/load_aware.hpp"
#include "actors/scheduler/node_resources_fit.hpp"
#include "tests/actors/scheduler/test_helpers.hpp"

namespace colony::scheduler {
namespace {

using namespace testing;

// schedule_one.go numFeasibleNodesToFind (kube's TestNumFeasibleNodesToFind cases).
TEST(Framework, NumFeasibleNodesToFind) {
  struct row {
    const char* name;
    std::int32_t pct;
    std::size_t nodes;
    std::size_t want;
  };
  for (const auto& r :
       {row{"not set percentageOfNodesToScore and nodes number not more than 50", 0, 10, 10},
        row{"set percentageOfNodesToScore and nodes number not more than 50", 40, 10, 10},
        row{"not set percentageOfNodesToScore and nodes number more than 50", 0, 1000, 420},
        row{"set percentageOfNodesToScore and nodes number more than 50", 40, 1000, 400},
        row{"not set percentageOfNodesToScore and nodes number more than 50*125", 0, 6000, 300},
        row{"set percentageOfNodesToScore and nodes number more than 50*125", 40, 6000, 2400},
        row{"adaptive at 5000 nodes", 0, 5000, 500}, row{"100 percent", 100, 5000, 5000},
        row{"at least 100 nodes", 10, 500, 100}}) {
    SCOPED_TRACE(r.name);
    EXPECT_EQ(num_feasible_nodes_to_find(r.pct, r.nodes), r.want);
  }
}

std::vector<node_info> uniform_nodes(std::size_t n) {
  std::vector<node_info> nodes;
  for (std::size_t i = 0; i < n; ++i)
    nodes.push_back(make_node("node-" + std::to_string(i), 8000, 32 * Gi));
  return nodes;
}

TEST(Framework, RotatingStartIndexCoversTheClusterInTurn) {
  framework fwk;
  fwk.add(std::make_shared<node_resources_fit>());
  auto nodes = uniform_nodes(250);  // adaptive: 50 - 2 = 48 % -> 120 nodes
  cycle_state st;
  pod_info p = make_pod("ns/p", cpu_mem(100, Mi));
  auto d1 = scheduling_cycle(fwk, st, p, nodes, kNow);
  EXPECT_EQ(d1.evaluated_nodes, 120u);
  EXPECT_EQ(d1.feasible_nodes, 120u);
  EXPECT_EQ(fwk.next_start_node_index(), 120u);
  EXPECT_LT(d1.node_index, 120u);
  auto d2 = scheduling_cycle(fwk, st, p, nodes, kNow);
  EXPECT_EQ(fwk.next_start_node_index(), 240u);
  EXPECT_GE(d2.node_index, 120u);
  EXPECT_LT(d2.node_index, 240u);
  auto d3 = scheduling_cycle(fwk, st, p, nodes, kNow);
  EXPECT_EQ(fwk.next_start_node_index(), (240u + 120u) % 250u);
  (void)d3;
  // Infeasible nodes are counted as processed too.
  framework all({.percentage_of_nodes_to_score = 100});
  all.add(std::make_shared<node_resources_fit>());
  auto d = scheduling_cycle(all, st, p, nodes, kNow);
  EXPECT_EQ(d.evaluated_nodes, 250u);
  EXPECT_EQ(all.next_start_node_index(), 0u);
}

TEST(Framework, UnschedulableReportsReasonsWithNodeCounts) {
  framework fwk;
  fwk.add(std::make_shared<node_resources_fit>());
  std::vector<node_info> nodes = {make_node("a", 1000, 64 * Gi), make_node("b", 1000, 64 * Gi),
                                  make_node("c", 1000, 64 * Gi), make_node("d", 8000, Gi),
                                  make_node("e", 8000, Gi)};
  cycle_state st;
  auto d = scheduling_cycle(fwk, st, make_pod("ns/big", cpu_mem(4000, 4 * Gi)), nodes, kNow);
  EXPECT_EQ(d.result, outcome::unschedulable);
  ASSERT_EQ(d.failures.size(), 2u);
  EXPECT_EQ(d.failures[0].reason, "Insufficient cpu");
  EXPECT_EQ(d.failures[0].nodes, 3u);
  EXPECT_EQ(d.failures[0].plugin, "NodeResourcesFit");
  EXPECT_EQ(d.failures[1].reason, "Insufficient memory");
  EXPECT_EQ(d.failures[1].nodes, 2u);
  EXPECT_EQ(d.message, "0/5 nodes are available: 2 Insufficient memory, 3 Insufficient cpu.");
}

// A score plugin that returns a fixed score per node name (for weights and tie tests).
class fixed_score final : public plugin {
 public:
  fixed_score(std::string name, std::map<std::string, std::int64_t> s)
      : name_(std::move(name)), s_(std::move(s)) {}
  std::string_view name() const noexcept override { return name_; }
  std::uint32_t points() const noexcept override { return ep_score; }
  std::int64_t score(cycle_state&, const pod_info&, const node_info& n, event_time) override {
    auto it = s_.find(n.name);
    return it == s_.end() ? 0 : it->second;
  }

 private:
  std::string name_;
  std::map<std::string, std::int64_t> s_;
};

TEST(Framework, WeightsMultiplyNormalizedScores) {
  framework fwk({.top_n = 2});
  fwk.add(
      std::make_shared<fixed_score>("A", std::map<std::string, std::int64_t>{{"x", 100}, {"y", 0}}),
      1);
  fwk.add(
      std::make_shared<fixed_score>("B", std::map<std::string, std::int64_t>{{"x", 0}, {"y", 60}}),
      2);
  std::vector<node_info> nodes = {make_node("x", 1000, Gi), make_node("y", 1000, Gi)};
  cycle_state st;
  auto d = scheduling_cycle(fwk, st, make_pod("ns/p"), nodes, kNow);
  ASSERT_EQ(d.result, outcome::scheduled);
  EXPECT_EQ(d.node, "y");
  EXPECT_EQ(d.total_score, 120);
  ASSERT_EQ(d.scores.size(), 2u);
  EXPECT_EQ(d.scores[1].plugin, "B");
  EXPECT_EQ(d.scores[1].weighted, 120);
  ASSERT_EQ(d.alternatives.size(), 1u);
  EXPECT_EQ(d.alternatives[0].node, "x");
  EXPECT_EQ(d.alternatives[0].total, 100);
}

TEST(Framework, TieBreakPicksLowestSeededKey) {
  auto nodes = uniform_nodes(20);
  std::set<std::string> chosen_over_seeds;
  for (std::uint64_t seed = 0; seed < 8; ++seed) {
    framework fwk({.seed = seed, .top_n = 5});
    fwk.add(std::make_shared<node_resources_fit>());
    cycle_state st;
    pod_info p = make_pod("ns/tie", cpu_mem(100, Mi));
    auto d = scheduling_cycle(fwk, st, p, nodes, kNow);
    ASSERT_EQ(d.result, outcome::scheduled);
    // Every node scores the same: the winner is the node with the lowest key.
    std::string best;
    std::uint64_t best_key = ~0ull;
    for (const auto& n : nodes) {
      auto k = tie_break_key(seed, p.key, n.name);
      if (k < best_key) {
        best_key = k;
        best = n.name;
      }
    }
    EXPECT_EQ(d.node, best);
    ASSERT_EQ(d.alternatives.size(), 5u);
    std::uint64_t prev = tie_break_key(seed, p.key, d.node);
    for (const auto& a : d.alternatives) {
      EXPECT_EQ(a.total, d.total_score);
      EXPECT_GT(a.tie_key, prev);
      prev = a.tie_key;
    }
    chosen_over_seeds.insert(d.node);
  }
  EXPECT_GT(chosen_over_seeds.size(), 1u);  // the seed really decides ties
}

TEST(Framework, NodeNameTieBreakPicksTheSmallestName) {
  // The FGD authors' selectHost (vendor/k8s.io/kubernetes/pkg/scheduler/core/
  // generic_scheduler.go): the best total wins; among equal totals the smallest name, whatever
  // the node order, the pod or the seed. Cases by hand; alternatives follow the same order.
  struct row {
    const char* name;
    std::vector<std::string> nodes;              // in node-list order
    std::map<std::string, std::int64_t> scores;  // absent = 0
    std::string want;
    std::vector<std::string> alternatives;
  };
  const std::vector<row> rows = {
      {"all tie", {"0713-n0", "0002-n1", "0100-n2"}, {}, "0002-n1", {"0100-n2", "0713-n0"}},
      {"higher score beats a smaller name",
       {"0713-n0", "0002-n1", "0100-n2"},
       {{"0713-n0", 7}},
       "0713-n0",
       {"0002-n1", "0100-n2"}},
      {"tie among the best only",
       {"c", "b", "a", "d"},
       {{"c", 5}, {"d", 5}, {"b", 1}},
       "c",
       {"d", "b", "a"}},
      {"byte order, not number order", {"10000-x", "9999-x"}, {}, "10000-x", {"9999-x"}},
  };
  for (const auto& r : rows) {
    for (std::uint64_t seed : {0ull, 7ull}) {
      framework fwk({.seed = seed, .ties = tie_break::node_name, .top_n = 3});
      fwk.add(std::make_shared<fixed_score>("S", r.scores));
      std::vector<node_info> nodes;
      for (const auto& n : r.nodes) nodes.push_back(make_node(n, 1000, Gi));
      cycle_state st;
      pod_info p = make_pod("ns/p" + std::to_string(seed), cpu_mem(100, Mi));
      auto d = scheduling_cycle(fwk, st, p, nodes, kNow);
      ASSERT_EQ(d.result, outcome::scheduled) << r.name;
      EXPECT_EQ(d.node, r.want) << r.name;
      std::vector<std::string> alt;
      for (const auto& a : d.alternatives) {
        alt.push_back(a.node);
        EXPECT_EQ(a.tie_key, 0u) << r.name;
      }
      EXPECT_EQ(alt, r.alternatives) << r.name;
    }
  }
}

TEST(Framework, ParsesSchedulerFeatureGates) {
  struct row {
    const char* text;
    bool ok;
    bool ignore_overhead;
    const char* error;  // in the message
  };
  const row rows[] = {
      {"", true, false, ""},
      {"ElasticQuotaIgnorePodOverhead=true", true, true, ""},
      {"ElasticQuotaIgnorePodOverhead=false", true, false, ""},
      {" ElasticQuotaIgnorePodOverhead=true , ", true, true, ""},
      {"ElasticQuotaIgnorePodOverhead", false, false, "expected =true or =false"},
      {"ElasticQuotaIgnorePodOverhead=yes", false, false, "expected =true or =false"},
      {"Gang=true", false, false, "unknown scheduler feature gate 'Gang'"},
  };
  for (const auto& r : rows) {
    auto g = parse_scheduler_feature_gates(r.text);
    ASSERT_EQ(g.has_value(), r.ok) << r.text;
    if (r.ok) {
      EXPECT_EQ(g->elastic_quota_ignore_pod_overhead, r.ignore_overhead) << r.text;
    } else {
      EXPECT_EQ(g.error().where, "feature-gates");
      EXPECT_NE(g.error().message.find(r.error), std::string::npos) << g.error().message;
    }
  }
}

TEST(Framework, ParsesTieBreakNames) {
  struct row {
    const char* text;
    bool ok;
    tie_break want;
  };
  const row rows[] = {{"seeded", true, tie_break::seeded},
                      {"nodeName", true, tie_break::node_name},
                      {"nodename", false, tie_break::seeded},
                      {"", false, tie_break::seeded}};
  for (const auto& r : rows) {
    auto t = parse_tie_break(r.text);
    ASSERT_EQ(t.has_value(), r.ok) << r.text;
    if (r.ok) {
      EXPECT_EQ(*t, r.want);
      EXPECT_EQ(to_string(*t), r.text);
    } else {
      EXPECT_EQ(t.error().code, errc::invalid_input);
      EXPECT_NE(t.error().message.find("seeded, nodeName"), std::string::npos);
    }
  }
}

// Random cluster from a seed (raw mt19937_64 output, no std distributions).
std::vector<node_info> random_cluster(std::uint64_t seed, std::size_t n) {
  std::mt19937_64 rng(seed);
  std::vector<node_info> nodes;
  for (std::size_t i = 0; i < n; ++i) {
    node_info node =
        make_node("node-" + std::to_string(i), 8000 + static_cast<std::int64_t>(rng() % 8) * 4000,
                  (16 + static_cast<std::int64_t>(rng() % 8) * 16) * Gi);
    node.requested.cpu_milli =
        static_cast<std::int64_t>(rng() % static_cast<std::uint64_t>(node.allocatable.cpu_milli));
    node.non_zero_requested.cpu_milli = node.requested.cpu_milli;
    node.requested.memory_bytes = static_cast<std::int64_t>(
        rng() % static_cast<std::uint64_t>(node.allocatable.memory_bytes));
    node.non_zero_requested.memory_bytes = node.requested.memory_bytes;
    node_metric m;
    m.update_time = seconds_before(static_cast<std::int64_t>(rng() % 240));
    m.node_usage = cpu_mem(
        static_cast<std::int64_t>(rng() % static_cast<std::uint64_t>(node.allocatable.cpu_milli)),
        static_cast<std::int64_t>(rng() %
                                  static_cast<std::uint64_t>(node.allocatable.memory_bytes)));
    node.metric = m;
    nodes.push_back(std::move(node));
  }
  return nodes;
}

decision run_once(std::uint64_t seed, const std::vector<node_info>& nodes, const pod_info& p) {
  framework fwk({.seed = seed});
  fwk.add(std::make_shared<node_resources_fit>(node_resources_fit_args::koordinator_profile()));
  fwk.add(std::make_shared<load_aware_scheduling>(load_aware_args{}));
  cycle_state st;
  return scheduling_cycle(fwk, st, p, nodes, kNow);
}

TEST(Framework, SameInputSameDecision) {
  for (std::uint64_t seed = 1; seed <= 20; ++seed) {
    SCOPED_TRACE(seed);
    auto nodes = random_cluster(seed, 150);
    pod_info p = make_pod("ns/p-" + std::to_string(seed), cpu_mem(2000, 4 * Gi));
    auto a = run_once(seed, nodes, p);
    auto b = run_once(seed, nodes, p);
    EXPECT_EQ(a.result, b.result);
    EXPECT_EQ(a.node, b.node);
    EXPECT_EQ(a.total_score, b.total_score);
    ASSERT_EQ(a.alternatives.size(), b.alternatives.size());
    for (std::size_t i = 0; i < a.alternatives.size(); ++i)
      EXPECT_EQ(a.alternatives[i].node, b.alternatives[i].node);
    EXPECT_EQ(a.message, b.message);
    // Invariants: the chosen node is at least as good as every listed alternative and fits.
    if (a.result == outcome::scheduled) {
      for (const auto& alt : a.alternatives) EXPECT_GE(a.total_score, alt.total);
      node_resources_fit fit;
      EXPECT_TRUE(fit.fits_request(p, nodes[a.node_index]).ok());
    }
  }
}

TEST(Framework, GangWaitsAtPermitUntilMinAvailableThenReleasesAll) {
  auto gang = std::make_shared<coscheduling>();
  framework fwk;
  fwk.add(std::make_shared<node_resources_fit>());
  fwk.add(gang);
  pod_group pg;
  pg.namespace_name = "ns";
  pg.name = "g";
  pg.min_member = 3;
  gang->on_pod_group_add(pg);
  auto nodes = uniform_nodes(3);
  std::vector<pod_info> pods;
  for (int i = 0; i < 3; ++i) {
    pod_info p = make_pod("ns/m" + std::to_string(i), cpu_mem(1000, Gi));
    p.gang.name = "g";
    p.gang.pod_group_label = true;
    gang->on_pod_add(p);
    pods.push_back(p);
  }
  cycle_state st;
  auto d0 = scheduling_cycle(fwk, st, pods[0], nodes, kNow);
  EXPECT_EQ(d0.result, outcome::waiting);
  EXPECT_EQ(d0.wait.value, 600000);
  assume_pod(nodes[d0.node_index], pods[0], d0, kNow);
  auto d1 = scheduling_cycle(fwk, st, pods[1], nodes, kNow);
  EXPECT_EQ(d1.result, outcome::waiting);
  assume_pod(nodes[d1.node_index], pods[1], d1, kNow);
  auto d2 = scheduling_cycle(fwk, st, pods[2], nodes, kNow);
  EXPECT_EQ(d2.result, outcome::scheduled);
  EXPECT_EQ(d2.allowed_pods, (std::vector<std::string>{"ns/m0", "ns/m1"}));
}

TEST(Framework, StrictGangMemberThatFitsNowhereRejectsTheWaitingOnes) {
  auto gang = std::make_shared<coscheduling>();
  framework fwk;
  fwk.add(std::make_shared<node_resources_fit>());
  fwk.add(gang);
  pod_group pg;
  pg.namespace_name = "ns";
  pg.name = "g";
  pg.min_member = 2;
  gang->on_pod_group_add(pg);
  auto nodes = uniform_nodes(2);
  pod_info small = make_pod("ns/small", cpu_mem(1000, Gi));
  pod_info huge = make_pod("ns/huge", cpu_mem(64000, Gi));
  for (auto* p : {&small, &huge}) {
    p->gang.name = "g";
    p->gang.pod_group_label = true;
    gang->on_pod_add(*p);
  }
  cycle_state st;
  auto d0 = scheduling_cycle(fwk, st, small, nodes, kNow);
  ASSERT_EQ(d0.result, outcome::waiting);
  auto d1 = scheduling_cycle(fwk, st, huge, nodes, kNow);
  EXPECT_EQ(d1.result, outcome::unschedulable);
  EXPECT_EQ(d1.rejected_pods, std::vector<std::string>{"ns/small"});
}

TEST(Framework, AssumeAndForgetKeepTheReadModelConsistent) {
  node_info n = make_node("n", 8000, 8 * Gi);
  pod_info p = make_pod("ns/p", cpu_mem(1000, Gi));
  decision d;
  assume_pod(n, p, d, kNow);
  EXPECT_EQ(n.requested.cpu_milli, 1000);
  EXPECT_EQ(n.requested.pods, 1);
  EXPECT_EQ(n.pods.size(), 1u);
  EXPECT_EQ(n.pods[0].assigned_time, kNow);
  EXPECT_EQ(n.generation, 1u);
  EXPECT_TRUE(forget_pod(n, "ns/p"));
  EXPECT_TRUE(n.requested.is_zero());
  EXPECT_FALSE(forget_pod(n, "ns/p"));
}

}  // namespace
}  // namespace colony::scheduler
