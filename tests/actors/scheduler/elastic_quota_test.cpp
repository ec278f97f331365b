// ElasticQuota plugin: Koordinator's plugin_test.go PreFilter golden cases run through the
// plugin, Reserve/Unreserve bookkeeping, PostFilter same-quota preemption
//, and a framework with NodeResourcesFit + ElasticQuota over a small quota tree.
// Also: the batched/chunked scoring and DeviceShare's counting filter equal the per-node
// paths on seeded random inputs.
#include <limits>
#include <memory>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include <gtest/gtest.h>

#include "actors/scheduler/device_share.hpp"
#include "actors/scheduler/elastic_quota.hpp"
#include "actors/scheduler/load_aware.hpp"
#include "actors/scheduler/node_resources_fit.hpp"
#include "tests/actors/scheduler/test_helpers.hpp"

namespace colony::scheduler {
namespace {

using namespace colony::scheduler::testing;

// createResourceList(cpu cores, memory bytes) of the Go tests.
resource_list res(std::int64_t cores, std::int64_t mem) { return cpu_mem(cores * 1000, mem); }

quota::quota_spec make_quota(const std::string& name, const std::string& parent,
                             const resource_list& max, const resource_list& min) {
  quota::quota_spec s;
  s.name = name;
  s.parent = parent;
  s.max = max;
  s.min = min;
  s.max_keys = s.min_keys = quota::key::cpu | quota::key::memory;
  s.shared_weight = max;
  s.shared_weight_keys = quota::key::cpu | quota::key::memory;
  return s;
}

pod_info quota_pod(std::string key, const std::string& quota, const resource_list& req,
                   std::int32_t priority = 0, bool non_preemptible = false) {
  pod_info p = make_pod(std::move(key), req, req);
  p.quota_name = quota;
  p.priority = priority;
  p.non_preemptible = non_preemptible;
  return p;
}

struct nonpreempt_pod {
  std::int64_t cpu, mem;
  bool non_preemptible;
};
struct prefilter_case {
  std::string name;  // plugin_test.go TestPlugin_Prefilter_QuotaNonPreempt sub-case
  resource_list max, min, total;
  std::vector<nonpreempt_pod> assigned;
  nonpreempt_pod pod;
  status_code code;
  std::string message;
  friend void PrintTo(const prefilter_case& c, std::ostream* os) { *os << c.name; }
};

class ElasticQuotaPluginPrefilterQuotaNonPreempt : public ::testing::TestWithParam<prefilter_case> {
};

// TestPlugin_Prefilter_QuotaNonPreempt (plugin_test.go): assigned pods are booked through the
// plugin's Reserve; the new pod goes through the framework's PreFilter.
TEST_P(ElasticQuotaPluginPrefilterQuotaNonPreempt, Status) {
  const auto& c = GetParam();
  auto tree = std::make_shared<quota::quota_tree>();
  tree->set_cluster_total(c.total);
  ASSERT_TRUE(tree->upsert_quota(make_quota("test1", "", c.max, c.min)));
  auto plugin = std::make_shared<elastic_quota>(tree);
  framework fwk;
  fwk.add(plugin);
  cycle_state st;
  std::vector<node_info> nodes{make_node("n1", 1000'000, 1000 * Gi)};
  int i = 0;
  for (const auto& a : c.assigned) {
    auto p =
        quota_pod("ns/" + std::to_string(++i), "test1", res(a.cpu, a.mem), 0, a.non_preemptible);
    ++st.cycle;
    ASSERT_TRUE(plugin->reserve(st, p, nodes[0], kNow).ok());
  }
  auto pod = quota_pod("ns/new", "test1", res(c.pod.cpu, c.pod.mem), 0, c.pod.non_preemptible);
  // The quota actor books the pending pod (its request counts towards runtime).
  ASSERT_TRUE(tree->upsert_pod(plugin->to_quota_pod(pod, "test1")));
  auto d = fwk.run_cycle(st, pod, nodes, kNow);
  if (c.code == status_code::success) {
    EXPECT_EQ(d.result, outcome::scheduled) << d.message;
  } else {
    EXPECT_EQ(d.result, outcome::unschedulable);
    EXPECT_EQ(d.message, "ElasticQuota: " + c.message);
  }
}

INSTANTIATE_TEST_SUITE_P(
    Golden, ElasticQuotaPluginPrefilterQuotaNonPreempt,
    ::testing::Values(
        prefilter_case{"default",
                       res(10, 10),
                       res(5, 5),
                       res(10, 10),
                       {{2, 1, false}, {1, 1, false}, {1, 1, false}},
                       {2, 2, true},
                       status_code::success,
                       ""},
        prefilter_case{"nonPreemptiblePodWillNotBeEvicted",
                       res(10, 8),
                       res(5, 5),
                       res(7, 5),
                       {{2, 1, false}, {2, 1, false}, {2, 2, true}},
                       {2, 1, true},
                       status_code::unschedulable,
                       "Insufficient quotas, quotaName: test1, runtime: cpu:7,memory:5, used: "
                       "cpu:6,memory:4, pod's request: cpu:2,memory:1, exceedDimensions: [cpu]"},
        prefilter_case{"nonPreemptiblePodUsedLargerThanMin",
                       res(10, 8),
                       res(5, 5),
                       res(8, 5),
                       {{2, 1, false}, {2, 1, true}, {2, 1, true}},
                       {2, 2, true},
                       status_code::unschedulable,
                       "Insufficient non-preemptible quotas, quotaName: test1, min: "
                       "cpu:5,memory:5, nonPreemptibleUsed: cpu:4,memory:2, pod's request: "
                       "cpu:2,memory:2, exceedDimensions: [cpu]"}),
    [](const auto& info) { return info.param.name; });

// A small tree: root quotas a (min 4 cores) and b (min 4 cores), max 8 each, cluster 8 cores.
struct small_tree {
  std::shared_ptr<quota::quota_tree> tree = std::make_shared<quota::quota_tree>();
  std::shared_ptr<elastic_quota> plugin;
  framework fwk{{.percentage_of_nodes_to_score = 100, .seed = 1}};
  std::vector<node_info> nodes;
  cycle_state st;
  small_tree() {
    tree->set_cluster_total(res(8, 64 * Gi));
    EXPECT_TRUE(tree->upsert_quota(make_quota("a", "", res(8, 64 * Gi), res(4, 32 * Gi))));
    EXPECT_TRUE(tree->upsert_quota(make_quota("b", "", res(8, 64 * Gi), res(4, 32 * Gi))));
    plugin = std::make_shared<elastic_quota>(tree);
    fwk.add(std::make_shared<node_resources_fit>(node_resources_fit_args::koordinator_profile()));
    fwk.add(plugin);
    nodes.push_back(make_node("n1", 4000, 32 * Gi));
    nodes.push_back(make_node("n2", 4000, 32 * Gi));
  }
  // The quota actor books a pending pod (request), then the scheduler runs a cycle.
  decision schedule(const pod_info& p) {
    EXPECT_TRUE(tree->upsert_pod(plugin->to_quota_pod(p, plugin->quota_of(p))));
    auto d = fwk.run_cycle(st, p, nodes, kNow);
    if (d.result == outcome::scheduled) assume_pod(nodes[d.node_index], p, d, kNow);
    return d;
  }
};

// Integration: NodeResourcesFit + ElasticQuota. Quota a borrows b's idle min while b asks for
// nothing; once b's pods are pending, a's runtime shrinks back and a's next pod is refused.
TEST(ElasticQuotaFramework, BorrowsIdleQuotaAndStopsAtRuntime) {
  small_tree t;
  for (int i = 0; i < 6; ++i) {
    auto d = t.schedule(quota_pod("ns/a" + std::to_string(i), "a", res(1, Gi)));
    ASSERT_EQ(d.result, outcome::scheduled) << i << " " << d.message;
  }
  EXPECT_EQ(t.tree->status("a")->used, res(6, 6 * Gi));  // used without a refresh
  // b's pending pods raise b's request: a's runtime becomes its min share (4 cores) + what b
  // does not claim.
  for (int i = 0; i < 4; ++i)
    ASSERT_TRUE(t.tree->upsert_pod(
        t.plugin->to_quota_pod(quota_pod("ns/b" + std::to_string(i), "b", res(1, Gi)), "b")));
  auto d = t.schedule(quota_pod("ns/a6", "a", res(1, Gi)));
  EXPECT_EQ(d.result, outcome::unschedulable);
  EXPECT_EQ(d.failures.size(), 1u);
  EXPECT_EQ(d.failures[0].plugin, "ElasticQuota");
  EXPECT_EQ("ElasticQuota: " + d.failures[0].reason, d.message);
  EXPECT_TRUE(d.message.starts_with("ElasticQuota: Insufficient quotas, quotaName: a, runtime: "))
      << d.message;
  // b's pods fit its runtime.
  for (int i = 0; i < 2; ++i) {
    auto p = quota_pod("ns/b" + std::to_string(i), "b", res(1, Gi));
    auto db = t.fwk.run_cycle(t.st, p, t.nodes, kNow);
    EXPECT_EQ(db.result, outcome::scheduled) << db.message;
    if (db.result == outcome::scheduled) assume_pod(t.nodes[db.node_index], p, db, kNow);
  }
  EXPECT_EQ(t.tree->status("b")->used, res(2, 2 * Gi));
  // The report the quota actor reads still lists every change (refresh() was not consumed).
  auto changed = t.tree->refresh();
  EXPECT_EQ(changed.size(), t.tree->quota_names().size());
}

// Reserve then Unreserve leaves used as before, for a pod the tree booked and for one it
// did not know.
TEST(ElasticQuotaFramework, UnreserveRestoresUsed) {
  small_tree t;
  t.tree->refresh();
  auto known = quota_pod("ns/k", "a", res(1, Gi));
  ASSERT_TRUE(t.tree->upsert_pod(t.plugin->to_quota_pod(known, "a")));
  auto unknown = quota_pod("ns/u", "a", res(2, Gi));
  for (const auto* p : {&known, &unknown}) {
    ++t.st.cycle;
    // The unknown pod's request is not booked, so only the known one passes PreFilter; Reserve
    // works without it (a replayed assignment).
    if (p == &known) {
      ASSERT_TRUE(t.plugin->pre_filter(t.st, *p, t.nodes, kNow).ok());
    }
    ASSERT_TRUE(t.plugin->reserve(t.st, *p, t.nodes[0], kNow).ok());
    EXPECT_EQ(t.tree->status("a")->used, p->requests);
    t.plugin->unreserve(t.st, *p, t.nodes[0], kNow);
    EXPECT_EQ(t.tree->status("a")->used, resource_list{});
    t.tree->refresh_runtime();
    EXPECT_EQ(t.tree->status("a")->used, resource_list{});  // the full computation agrees
  }
  EXPECT_NE(t.tree->pod("ns/k"), nullptr);  // the actor's booking stays
  EXPECT_EQ(t.tree->pod("ns/u"), nullptr);  // the plugin's own booking is gone
}

// Same-quota preemption: a high-priority pod of quota a over its runtime preempts a's low-priority
// pods, never b's; the node with the lowest-priority victims is nominated.
TEST(ElasticQuotaPostFilter, PreemptsOnlySameQuotaLowerPriority) {
  small_tree t;
  // Both nodes full: n1 holds a's priority-10 pods, n2 holds a's priority-5 and b's pods.
  auto place = [&](std::size_t n, const pod_info& p) {
    ASSERT_TRUE(t.tree->upsert_pod(t.plugin->to_quota_pod(p, p.quota_name)));
    decision d;
    d.result = outcome::scheduled;
    assume_pod(t.nodes[n], p, d, kNow);
    t.tree->update_pod_is_assigned(p.key, true, t.nodes[n].name);
  };
  place(0, quota_pod("ns/a-hi-0", "a", res(2, Gi), 10));
  place(0, quota_pod("ns/a-hi-1", "a", res(2, Gi), 10));
  place(1, quota_pod("ns/a-lo-0", "a", res(2, Gi), 5));
  place(1, quota_pod("ns/b-0", "b", res(2, Gi), 0));
  auto pb = quota_pod("ns/b-1", "b", res(2, Gi), 0);
  ASSERT_TRUE(t.tree->upsert_pod(t.plugin->to_quota_pod(pb, "b")));
  auto p = quota_pod("ns/a-new", "a", res(2, Gi), 100);
  ASSERT_TRUE(t.tree->upsert_pod(t.plugin->to_quota_pod(p, "a")));
  auto d = t.fwk.run_cycle(t.st, p, t.nodes, kNow);
  EXPECT_EQ(d.result, outcome::unschedulable);
  ASSERT_TRUE(d.nominated_node.has_value()) << d.message;
  EXPECT_EQ(*d.nominated_node, "n2");
  EXPECT_EQ(d.victims, std::vector<std::string>{"ns/a-lo-0"});
  // Non-preemptible victims are never chosen.
  t.nodes[1].pods[0].non_preemptible = true;
  t.nodes[0].pods[0].non_preemptible = t.nodes[0].pods[1].non_preemptible = true;
  ++t.nodes[0].generation;  // node_info REQUIRES a bump on any change of its pods
  ++t.nodes[1].generation;
  auto d2 = t.fwk.run_cycle(t.st, p, t.nodes, kNow);
  EXPECT_FALSE(d2.nominated_node.has_value());
}

// pickOneNodeForPreemption's fifth rule: with equal victims' priorities and counts, the node whose
// highest-priority victims started latest is nominated (the other's have run longer).
TEST(ElasticQuotaPostFilter, TieGoesToTheLatestStartedVictims) {
  small_tree t;
  auto place = [&](std::size_t n, pod_info p, std::int64_t start) {
    p.assigned_time = event_time{start};
    ASSERT_TRUE(t.tree->upsert_pod(t.plugin->to_quota_pod(p, p.quota_name)));
    decision d;
    d.result = outcome::scheduled;
    assume_pod(t.nodes[n], p, d, event_time{start});
    t.tree->update_pod_is_assigned(p.key, true, t.nodes[n].name);
  };
  place(0, quota_pod("ns/a-old-0", "a", res(2, Gi), 5), 1'000);
  place(0, quota_pod("ns/a-old-1", "a", res(2, Gi), 5), 1'000);
  place(1, quota_pod("ns/a-new-0", "a", res(2, Gi), 5), 9'000);
  place(1, quota_pod("ns/a-new-1", "a", res(2, Gi), 5), 9'000);
  auto p = quota_pod("ns/a-hi", "a", res(2, Gi), 100);
  ASSERT_TRUE(t.tree->upsert_pod(t.plugin->to_quota_pod(p, "a")));
  auto d = t.fwk.run_cycle(t.st, p, t.nodes, kNow);
  ASSERT_TRUE(d.nominated_node.has_value()) << d.message;
  EXPECT_EQ(*d.nominated_node, "n2");
  ASSERT_EQ(d.victims.size(), 1u);
  EXPECT_TRUE(d.victims[0].starts_with("ns/a-new-")) << d.victims[0];
}

// ---- PostFilter's per-node summaries change no decision ---------------------------------------

// PostFilter as the plain loop: every node's pods are read on every call, every non-terminated
// pod of a node that may hold a victim is copied, and select_victims_on_node works over the
// node's whole pod list; the node is picked by kube's five rules, then node order. The
// reference the fast path must agree with (every pod of the random worlds is booked in the tree,
// so preemption_pod::booked keeps its default here).
post_filter_result reference_post_filter(const elastic_quota& plugin, const pod_info& pod,
                                         std::span<const node_info> nodes) {
  post_filter_result out;
  const std::string quota = plugin.quota_of(pod);
  quota::quota_view view;
  if (quota.empty() || !quota::view_of(*plugin.tree(), quota, view)) return out;
  auto start = [](const pod_info& p) {
    return p.scheduled_time ? p.scheduled_time->value
                            : (p.assigned_time ? p.assigned_time->value : 0);
  };
  auto to_pp = [&](const pod_info& p, std::string q) {
    quota::preemption_pod v;
    v.name = p.key;
    v.quota = std::move(q);
    v.priority = p.priority;
    v.start_time_ms = start(p);
    v.non_preemptible = p.non_preemptible;
    v.request = p.requests;
    return v;
  };
  const quota::preemption_pod preemptor = to_pp(pod, quota);
  struct candidate {
    std::size_t node;
    int pdb;
    std::int32_t highest;
    std::int64_t sum;
    std::int64_t earliest;  // start of the highest-priority victims
    std::vector<std::string> victims;
  };
  std::optional<candidate> best;
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    bool any = false;
    for (const auto& p : nodes[i].pods)
      any = any || (!p.terminated && p.priority < pod.priority && !p.non_preemptible &&
                    (p.quota_name == quota || p.quota_name.empty()));
    if (!any) continue;
    std::vector<quota::preemption_pod> node_pods;
    for (const auto& p : nodes[i].pods)
      if (!p.terminated)
        node_pods.push_back(to_pp(p, p.quota_name.empty() ? plugin.quota_of(p) : p.quota_name));
    auto r = quota::select_victims_on_node(preemptor, nodes[i].name, node_pods,
                                           nodes[i].allocatable, view, plugin.tree()->args());
    if (!r.feasible || r.victims.empty()) continue;
    candidate c{i, r.num_pdb_violating, std::numeric_limits<std::int32_t>::min(), 0, 0, {}};
    for (const auto& v : r.victims)
      for (const auto& p : node_pods)
        if (p.name == v) c.highest = std::max(c.highest, p.priority), c.sum += p.priority;
    c.earliest = std::numeric_limits<std::int64_t>::max();
    for (const auto& v : r.victims)
      for (const auto& p : node_pods)
        if (p.name == v && p.priority == c.highest)
          c.earliest = std::min(c.earliest, p.start_time_ms);
    c.victims = std::move(r.victims);
    auto key = [](const candidate& x) {
      return std::tuple(x.pdb, x.highest, x.sum, x.victims.size(), -x.earliest, x.node);
    };
    if (!best || key(c) < key(*best)) best = std::move(c);
  }
  if (!best) return out;
  out.st = {};
  out.nominated_node = nodes[best->node].name;
  out.victims = std::move(best->victims);
  return out;
}

// Seeded random worlds (a 3-level tree of 31 quotas, 40 full nodes, pods with and without a
// quota label, terminated and non-preemptible pods), mutated between preemptors the way the
// scheduler does (assume_pod, or a pod changed with a generation bump): the plugin's PostFilter
// nominates the same node and the same victims, in the same order, as the reference.
TEST(ElasticQuotaPostFilter, PerNodeSummariesPickTheSameVictims) {
  std::mt19937_64 rng(2024);
  auto below = [&](std::uint64_t n) { return static_cast<std::int64_t>(rng() % n); };
  int preemptors = 0, nominated = 0, multi_victim = 0, via_unlabeled = 0, mutations = 0;
  for (int world = 0; world < 6; ++world) {
    auto tree = std::make_shared<quota::quota_tree>();
    tree->set_cluster_total(res(40 * 32, 40 * 128 * Gi));
    std::vector<std::string> leaves;
    for (int t = 0; t < 3; ++t) {
      const std::string top = "t" + std::to_string(t);
      ASSERT_TRUE(
          tree->upsert_quota(make_quota(top, "", res(600, 2400 * Gi), res(400, 1600 * Gi))));
      for (int m = 0; m < 3; ++m) {
        const std::string mid = top + "-m" + std::to_string(m);
        ASSERT_TRUE(
            tree->upsert_quota(make_quota(mid, top, res(200, 800 * Gi), res(120, 480 * Gi))));
        for (int l = 0; l < 2; ++l) {
          leaves.push_back(mid + "-l" + std::to_string(l));
          auto q = make_quota(leaves.back(), mid, res(40 + below(60), 400 * Gi),
                              res(20 + below(40), 160 * Gi));
          // Pods of namespace <leaf> without a label resolve to this leaf (GetQuotaName).
          q.namespace_name = leaves.back();
          ASSERT_TRUE(tree->upsert_quota(q));
        }
      }
    }
    auto plugin = std::make_shared<elastic_quota>(tree);
    std::vector<node_info> nodes;
    for (int n = 0; n < 40; ++n)
      nodes.push_back(make_node("n" + std::to_string(n), 32'000, 128 * Gi));
    int serial = 0;
    std::set<std::string> unlabeled;  // pods whose quota comes from their namespace
    auto random_assigned = [&](std::size_t n) {
      const auto& leaf = leaves[static_cast<std::size_t>(below(leaves.size()))];
      pod_info p = quota_pod(leaf + "/p" + std::to_string(serial++), below(4) == 0 ? "" : leaf,
                             cpu_mem(500 + below(3'000), (1 + below(8)) * Gi),
                             static_cast<std::int32_t>(below(6) * 1000), below(15) == 0);
      p.assigned_time = event_time{below(1'000)};
      p.terminated = below(25) == 0;
      if (p.quota_name.empty()) unlabeled.insert(p.key);
      ASSERT_TRUE(tree->upsert_pod(plugin->to_quota_pod(p, plugin->quota_of(p))));
      decision d;
      d.result = outcome::scheduled;
      assume_pod(nodes[n], p, d, kNow);
      tree->update_pod_is_assigned(p.key, !p.terminated, nodes[n].name);
    };
    for (std::size_t n = 0; n < nodes.size(); ++n)
      for (int k = 0; k < 14; ++k) random_assigned(n);
    tree->refresh_runtime();
    cycle_state st;
    for (int i = 0; i < 60; ++i) {
      const auto& leaf = leaves[static_cast<std::size_t>(below(leaves.size()))];
      pod_info p = quota_pod(leaf + "/preemptor-" + std::to_string(i), below(3) == 0 ? "" : leaf,
                             cpu_mem(2'000 + below(12'000), (2 + below(30)) * Gi),
                             static_cast<std::int32_t>(1000 + below(6) * 1000));
      ++st.cycle;
      (void)plugin->pre_filter(st, p, nodes, kNow);
      auto got = plugin->post_filter(st, p, kNow);
      auto want = reference_post_filter(*plugin, p, nodes);
      ASSERT_EQ(got.nominated_node, want.nominated_node) << "world " << world << " pod " << i;
      ASSERT_EQ(got.victims, want.victims) << "world " << world << " pod " << i;
      ++preemptors;
      if (got.nominated_node) {
        ++nominated;
        multi_victim += got.victims.size() > 1 ? 1 : 0;
        for (const auto& v : got.victims) via_unlabeled += unlabeled.contains(v) ? 1 : 0;
      }
      // Mutate as the scheduler does: a new assigned pod, or a pod changed with a bump.
      auto& node = nodes[static_cast<std::size_t>(below(nodes.size()))];
      if (below(2) == 0 || node.pods.empty()) {
        random_assigned(static_cast<std::size_t>(&node - nodes.data()));
      } else {
        auto& q = node.pods[static_cast<std::size_t>(below(node.pods.size()))];
        switch (below(3)) {
          case 0:
            q.priority = static_cast<std::int32_t>(below(6) * 1000);
            break;
          case 1:
            q.non_preemptible = !q.non_preemptible;
            break;
          default:
            q.terminated = !q.terminated;
            break;
        }
        ++node.generation;
      }
      ++mutations;
    }
  }
  // What the randomized comparison exercised.
  EXPECT_EQ(preemptors, 360);
  EXPECT_GT(nominated, 200);              // 297 at this seed
  EXPECT_GT(preemptors - nominated, 20);  // 63: no node frees enough
  EXPECT_GT(multi_victim, 20);            // 49: more than one victim on the node
  EXPECT_GT(via_unlabeled, 40);           // 102 victims without a quota label
  EXPECT_EQ(mutations, 360);
}

// ---- cached / batched paths equal the per-node ones (seeded random inputs) -----------------

std::vector<node_info> random_nodes(std::mt19937_64& rng, std::size_t n) {
  std::vector<node_info> nodes;
  for (std::size_t i = 0; i < n; ++i) {
    auto node =
        make_node("node-" + std::to_string(i), 1000 + static_cast<std::int64_t>(rng() % 64000),
                  static_cast<std::int64_t>(1 + rng() % 256) * Gi,
                  static_cast<std::int64_t>(rng() % 4 == 0 ? 0 : 110));
    node.allocatable.batch_cpu_milli =
        static_cast<std::int64_t>(rng() % 3 == 0 ? 0 : rng() % 40000);
    node.allocatable.batch_memory_bytes = static_cast<std::int64_t>(rng() % 64) * Gi;
    node.requested.cpu_milli = static_cast<std::int64_t>(rng() % 70000);
    node.requested.memory_bytes = static_cast<std::int64_t>(rng() % 300) * Gi;
    node.requested.batch_cpu_milli = static_cast<std::int64_t>(rng() % 40000);
    node.requested.pods = static_cast<std::int64_t>(rng() % 120);
    node.non_zero_requested = node.requested;
    if (rng() % 2) {
      node_metric m;
      m.update_time = event_time{kNow.value - static_cast<std::int64_t>(rng() % 400'000)};
      m.node_usage.cpu_milli = static_cast<std::int64_t>(rng() % 64000);
      m.node_usage.memory_bytes = static_cast<std::int64_t>(rng() % 256) * Gi;
      node.metric = m;
    }
    const int g = static_cast<int>(rng() % 4);
    for (int k = 0; k < g; ++k) {
      gpu_device d;
      d.minor = k;
      d.memory_total_bytes = 16 * Gi;
      d.core_used = static_cast<std::int64_t>(rng() % 101);
      d.memory_used_bytes = static_cast<std::int64_t>(rng() % 17) * Gi;
      d.memory_ratio_used = static_cast<std::int64_t>(rng() % 101);
      d.healthy = rng() % 8 != 0;
      node.gpus.push_back(d);
    }
    nodes.push_back(std::move(node));
  }
  return nodes;
}

pod_info random_pod(std::mt19937_64& rng, int i) {
  pod_info p = make_pod("ns/p" + std::to_string(i));
  if (rng() % 3 == 0) {
    p.priority = 5000;
    p.requests.batch_cpu_milli = static_cast<std::int64_t>(rng() % 8000);
    p.requests.batch_memory_bytes = static_cast<std::int64_t>(rng() % 16) * Gi;
  } else {
    p.priority = 9000;
    p.requests.cpu_milli = static_cast<std::int64_t>(rng() % 8000);
    p.requests.memory_bytes = static_cast<std::int64_t>(rng() % 16) * Gi;
  }
  p.limits = p.requests;
  return p;
}

TEST(BatchedScoring, ScoreNodesEqualsScorePerNode) {
  std::mt19937_64 rng(12345);
  for (int round = 0; round < 20; ++round) {
    auto nodes = random_nodes(rng, 150);
    std::vector<std::shared_ptr<plugin>> plugins{
        std::make_shared<node_resources_fit>(node_resources_fit_args::koordinator_profile()),
        std::make_shared<node_resources_fit>(node_resources_fit_args{}),
        std::make_shared<load_aware_scheduling>(load_aware_args{})};
    for (auto& pl : plugins) {
      for (int i = 0; i < 5; ++i) {
        auto pod = random_pod(rng, i);
        cycle_state st;
        ++st.cycle;
        ASSERT_TRUE(pl->pre_filter(st, pod, nodes, kNow).ok() ||
                    pl->pre_filter(st, pod, nodes, kNow).code == status_code::skip);
        std::vector<std::uint32_t> idx;
        for (std::uint32_t j = 0; j < nodes.size(); ++j)
          if (rng() % 3) idx.push_back(j);
        std::vector<std::int64_t> out(idx.size(), -1);
        pl->score_nodes(st, pod, nodes, idx, out, kNow);
        for (std::size_t j = 0; j < idx.size(); ++j)
          EXPECT_EQ(out[j], pl->score(st, pod, nodes[idx[j]], kNow)) << pl->name() << " " << j;
      }
    }
  }
}

// A plugin that scores through the default (per-node) score_nodes, so the framework's
// chunked pass can be compared with a reference sequential computation.
class per_node_score final : public plugin {
 public:
  explicit per_node_score(std::shared_ptr<plugin> inner) : inner_(std::move(inner)) {}
  std::string_view name() const noexcept override { return inner_->name(); }
  std::uint32_t points() const noexcept override { return inner_->points(); }
  status pre_filter(cycle_state& st, const pod_info& p, std::span<const node_info> n,
                    event_time t) override {
    return inner_->pre_filter(st, p, n, t);
  }
  status filter(cycle_state& st, const pod_info& p, const node_info& n, event_time t) override {
    return inner_->filter(st, p, n, t);
  }
  std::int64_t score(cycle_state& st, const pod_info& p, const node_info& n,
                     event_time t) override {
    return inner_->score(st, p, n, t);
  }
  bool normalize_score(cycle_state& st, const pod_info& p, std::span<std::int64_t> s) override {
    return inner_->normalize_score(st, p, s);
  }

 private:
  std::shared_ptr<plugin> inner_;
};

TEST(BatchedScoring, FrameworkDecisionsEqualPerNodePlugins) {
  for (std::int32_t pct : {0, 100}) {
    std::mt19937_64 rng(777 + static_cast<std::uint64_t>(pct));
    auto nodes_a = random_nodes(rng, 400);
    auto nodes_b = nodes_a;
    framework a({.percentage_of_nodes_to_score = pct, .seed = 3});
    framework b({.percentage_of_nodes_to_score = pct, .seed = 3});
    a.add(std::make_shared<node_resources_fit>(node_resources_fit_args::koordinator_profile()));
    a.add(std::make_shared<load_aware_scheduling>(load_aware_args{}));
    b.add(std::make_shared<per_node_score>(
        std::make_shared<node_resources_fit>(node_resources_fit_args::koordinator_profile())));
    b.add(std::make_shared<per_node_score>(
        std::make_shared<load_aware_scheduling>(load_aware_args{})));
    cycle_state sa, sb;
    for (int i = 0; i < 300; ++i) {
      auto pod = random_pod(rng, i);
      auto da = a.run_cycle(sa, pod, nodes_a, kNow);
      auto db = b.run_cycle(sb, pod, nodes_b, kNow);
      ASSERT_EQ(da.result, db.result) << i;
      ASSERT_EQ(da.node, db.node) << i;
      ASSERT_EQ(da.total_score, db.total_score) << i;
      ASSERT_EQ(da.message, db.message) << i;
      ASSERT_EQ(da.alternatives.size(), db.alternatives.size()) << i;
      for (std::size_t k = 0; k < da.alternatives.size(); ++k)
        ASSERT_EQ(da.alternatives[k].total, db.alternatives[k].total) << i;
      if (da.result == outcome::scheduled) {
        assume_pod(nodes_a[da.node_index], pod, da, kNow);
        assume_pod(nodes_b[db.node_index], pod, db, kNow);
      }
    }
  }
}

// DeviceShare's filter counts fitting devices instead of allocating: same verdict as
// allocate() on random GPU states.
TEST(DeviceShareFilter, CountingEqualsAllocate) {
  std::mt19937_64 rng(99);
  auto nodes = random_nodes(rng, 300);
  device_share ds;
  for (int i = 0; i < 200; ++i) {
    pod_info pod = make_pod("ns/g" + std::to_string(i));
    switch (rng() % 3) {
      case 0:
        pod.devices.nvidia_gpu = static_cast<std::int64_t>(1 + rng() % 3);
        break;
      case 1:
        pod.devices.gpu_core = static_cast<std::int64_t>(rng() % 101);
        pod.devices.gpu_memory_ratio = pod.devices.gpu_core;
        break;
      default:
        pod.devices.gpu_shared = 1;
        pod.devices.gpu_core = static_cast<std::int64_t>(rng() % 101);
        pod.devices.gpu_memory = static_cast<std::int64_t>(rng() % 17) * Gi;
    }
    auto parsed = device_share::requirements_of(pod);
    if (!parsed || !*parsed) continue;
    const gpu_requirements& req = **parsed;
    cycle_state st;
    ++st.cycle;
    if (ds.pre_filter(st, pod, nodes, kNow).code != status_code::success) continue;
    for (const auto& n : nodes) {
      const bool by_filter = ds.filter(st, pod, n, kNow).ok();
      const bool by_allocate = ds.allocate(req, n).has_value();
      ASSERT_EQ(by_filter, by_allocate) << i << " " << n.name;
    }
  }
}

}  // namespace
}  // namespace colony::scheduler
