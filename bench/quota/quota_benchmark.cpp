// ElasticQuota benchmarks:
//  - quota.refresh_2000: the full runtime fixed point (quota_tree::refresh) over a 2,000-quota
//    tree (20 top-level parents x 9 mid parents x 10 leaves, 3 pods per leaf), one pod changed
//    between refreshes so every pass also finds a changed set. Goal: < 1 ms per refresh.
//  - quota.preempt_victims_2000x50000: the ElasticQuota plugin's PostFilter (same-quota victim
//    selection on every node, then the candidate pick) over the same tree shape with 50,000
//    assigned pods on 1,000 full nodes. Goal: < 1 ms per preemptor pod.
#include <algorithm>
#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "actors/quota/admission.hpp"
#include "actors/quota/quota_tree.hpp"
#include "actors/scheduler/elastic_quota.hpp"
#include "bench/registry.hpp"
#include "messages/units.hpp"

namespace {

using colony::resource_list;
using namespace colony::quota;

resource_list cpu_mem(std::int64_t milli, std::int64_t bytes) {
  resource_list r;
  r.cpu_milli = milli;
  r.memory_bytes = bytes;
  return r;
}

struct bench_tree {
  quota_tree tree;
  std::vector<quota_pod> pods;
};

// Deterministic (seeded mt19937_64, raw output only).
void build(bench_tree& b, int tops, int mids, int leaves) {
  std::mt19937_64 rng(42);
  auto below = [&](std::uint64_t n) { return static_cast<std::int64_t>(rng() % n); };
  const std::int64_t gib = colony::gib;
  b.tree.set_cluster_total(cpu_mem(20'000'000, 80'000 * gib));
  auto add = [&](const std::string& name, const std::string& parent, std::int64_t min_cpu,
                 std::int64_t max_cpu) {
    quota_spec q;
    q.name = name;
    q.parent = parent;
    q.max = cpu_mem(max_cpu, max_cpu / 1000 * 4 * gib);
    q.min = cpu_mem(min_cpu, min_cpu / 1000 * 4 * gib);
    q.max_keys = q.min_keys = key::cpu | key::memory;
    q.allow_lent_resource = below(10) != 0;
    permit_unchecked(b.tree.upsert_quota(q));
  };
  int pod_serial = 0;
  for (int t = 0; t < tops; ++t) {
    const std::string top = "top-" + std::to_string(t);
    add(top, "", 800'000, 2'000'000);
    for (int m = 0; m < mids; ++m) {
      const std::string mid = top + "-mid-" + std::to_string(m);
      add(mid, top, 80'000, 400'000);
      for (int l = 0; l < leaves; ++l) {
        const std::string leaf = mid + "-leaf-" + std::to_string(l);
        add(leaf, mid, 6'000 + below(4'000), 40'000 + below(40'000));
        for (int p = 0; p < 3; ++p) {
          quota_pod pod;
          pod.name = "ns/pod-" + std::to_string(pod_serial++);
          pod.quota = leaf;
          pod.request = cpu_mem(1'000 + below(15'000), (1 + below(60)) * gib);
          pod.assigned = below(3) != 0;
          permit_unchecked(b.tree.upsert_pod(pod));
          b.pods.push_back(std::move(pod));
        }
      }
    }
  }
}

COLONY_BENCH("quota.refresh_2000",
             "ElasticQuota runtime fixed point over 2,000 quotas (goal < 1 ms)") {
  bench_tree b;
  build(b, 20, 9, 10);  // 20 * (1 + 9 + 90) = 2,000 quotas, also in quick mode (fewer samples)
  const double rebuild =
      colony::bench::seconds_of([&] { colony::bench::do_not_optimize(b.tree.refresh().size()); });
  const int iterations = ctx.quick() ? 50 : 500;
  std::vector<double> samples;
  samples.reserve(static_cast<std::size_t>(iterations));
  std::size_t changed = 0;
  for (int i = 0; i < iterations; ++i) {
    auto& pod = b.pods[static_cast<std::size_t>(i) * 7919 % b.pods.size()];
    pod.request.cpu_milli += (i % 2 == 0) ? 500 : -500;
    permit_unchecked(b.tree.upsert_pod(pod));
    samples.push_back(colony::bench::seconds_of([&] {
      auto c = b.tree.refresh();
      changed += c.size();
      colony::bench::do_not_optimize(c.size());
    }));
  }
  std::sort(samples.begin(), samples.end());
  const double median_ms = samples[samples.size() / 2] * 1e3;
  const double p99_ms = samples[samples.size() * 99 / 100] * 1e3;
  ctx.report("quota.refresh_2000", median_ms, "ms");
  ctx.report("quota.refresh_2000.p99", p99_ms, "ms");
  ctx.report("quota.refresh_2000.first_with_topology", rebuild * 1e3, "ms");
  ctx.report("quota.refresh_2000.changed_per_refresh", static_cast<double>(changed) / iterations,
             "quotas");
}

COLONY_BENCH("quota.prefilter", "ElasticQuota PreFilter on a refreshed 2,000-quota tree") {
  bench_tree b;
  build(b, 20, 9, 10);
  b.tree.refresh();
  const int n = ctx.quick() ? 2'000 : 20'000;
  int admitted = 0;
  const double s = colony::bench::seconds_of([&] {
    for (int i = 0; i < n; ++i) {
      const auto& pod = b.pods[static_cast<std::size_t>(i) % b.pods.size()];
      admitted += pre_filter(b.tree, pod.quota, pod.request, false).admitted() ? 1 : 0;
    }
  });
  colony::bench::do_not_optimize(admitted);
  ctx.report("quota.prefilter.ns_per_pod", s * 1e9 / n, "ns");
}

// ---- preemption -------------------------------------------------------------------------------

// The 2,000-quota tree with `pods` assigned pods spread over `node_count` nodes, booked both in
// the tree (as the quota actor does) and on the nodes (as the scheduler's cache holds them).
struct preempt_world {
  std::shared_ptr<quota_tree> tree = std::make_shared<quota_tree>();
  std::shared_ptr<colony::scheduler::elastic_quota> plugin;
  std::vector<colony::scheduler::node_info> nodes;
  std::vector<std::string> leaves;
};

void build_preempt_world(preempt_world& w, int node_count, int pod_count) {
  std::mt19937_64 rng(7);
  auto below = [&](std::uint64_t n) { return static_cast<std::int64_t>(rng() % n); };
  const std::int64_t gib = colony::gib;
  const std::int64_t node_cpu = 64'000, node_mem = 256 * gib;
  w.tree->set_cluster_total(cpu_mem(node_cpu * node_count, node_mem * node_count));
  auto add = [&](const std::string& name, const std::string& parent, std::int64_t min_cpu,
                 std::int64_t max_cpu) {
    quota_spec q;
    q.name = name;
    q.parent = parent;
    q.is_parent = parent.empty() || name.find("-leaf-") == std::string::npos;
    q.max = cpu_mem(max_cpu, max_cpu / 1000 * 4 * gib);
    q.min = cpu_mem(min_cpu, min_cpu / 1000 * 4 * gib);
    q.max_keys = q.min_keys = key::cpu | key::memory;
    permit_unchecked(w.tree->upsert_quota(q));
  };
  // 20 x 9 x 10: tops share the cluster (64,000 cores), leaves min ~30 cores, max ~90.
  for (int t = 0; t < 20; ++t) {
    const std::string top = "top-" + std::to_string(t);
    add(top, "", 2'800'000, 6'400'000);
    for (int m = 0; m < 9; ++m) {
      const std::string mid = top + "-mid-" + std::to_string(m);
      add(mid, top, 300'000, 900'000);
      for (int l = 0; l < 10; ++l) {
        w.leaves.push_back(mid + "-leaf-" + std::to_string(l));
        add(w.leaves.back(), mid, 20'000 + below(20'000), 60'000 + below(60'000));
      }
    }
  }
  w.plugin = std::make_shared<colony::scheduler::elastic_quota>(w.tree);
  for (int n = 0; n < node_count; ++n) {
    colony::scheduler::node_info node;
    node.name = "node-" + std::to_string(n);
    node.allocatable = cpu_mem(node_cpu, node_mem);
    node.allocatable.pods = 110;
    w.nodes.push_back(std::move(node));
  }
  // Koordinator's priority bands: koord-prod 9000, koord-mid 7000, koord-batch 5000,
  // koord-free 3000 (apis/extension/priority.go), with a spread inside each band.
  const std::int32_t bands[] = {3000, 5000, 7000, 9000};
  for (int i = 0; i < pod_count; ++i) {
    colony::scheduler::pod_info p;
    p.key = "ns-" + std::to_string(i % 50) + "/pod-" + std::to_string(i);
    p.quota_name =
        w.leaves[static_cast<std::size_t>(below(static_cast<std::uint64_t>(w.leaves.size())))];
    p.priority = bands[below(4)] + static_cast<std::int32_t>(below(100));
    // 50 pods per node fill 64 cores / 256 GiB: ~1.25 cores and ~5 GiB each.
    p.requests = cpu_mem(250 + below(2'000), (1 + below(9)) * gib);
    p.requests.pods = 1;
    p.limits = p.requests;
    p.non_preemptible = below(20) == 0;
    auto& node = w.nodes[static_cast<std::size_t>(i % node_count)];
    p.node_name = node.name;
    p.assigned_time = colony::event_time{1'000 + i};
    auto q = w.plugin->to_quota_pod(p, p.quota_name);
    q.assigned = false;
    permit_unchecked(w.tree->upsert_pod(std::move(q)));
    w.tree->update_pod_is_assigned(p.key, true, node.name);
    node.requested += p.requests;
    node.pods.push_back(std::move(p));
  }
  w.tree->refresh_runtime();
}

COLONY_BENCH("quota.preempt_victims_2000x50000",
             "ElasticQuota PostFilter victim selection, 2,000 quotas, 50,000 pods on 1,000 nodes "
             "(goal < 1 ms per preemptor pod)") {
  preempt_world w;
  const double setup = colony::bench::seconds_of([&] { build_preempt_world(w, 1'000, 50'000); });
  const int n = ctx.quick() ? 200 : 2'000;
  std::mt19937_64 rng(11);
  colony::scheduler::cycle_state st;
  std::vector<double> samples;
  samples.reserve(static_cast<std::size_t>(n));
  std::size_t nominated = 0, victims = 0;
  const colony::event_time now{10'000'000};
  for (int i = 0; i < n; ++i) {
    colony::scheduler::pod_info p;
    p.key = "ns-x/preemptor-" + std::to_string(i);
    p.quota_name = w.leaves[rng() % w.leaves.size()];
    p.priority = 9'500;
    p.requests = cpu_mem(4'000 + static_cast<std::int64_t>(rng() % 8'000),
                         static_cast<std::int64_t>(4 + rng() % 16) * colony::gib);
    p.requests.pods = 1;
    ++st.cycle;
    // PreFilter records the pod's quota for PostFilter (the tree is refreshed: no recompute).
    (void)w.plugin->pre_filter(st, p, w.nodes, now);
    samples.push_back(colony::bench::seconds_of([&] {
      auto r = w.plugin->post_filter(st, p, now);
      nominated += r.nominated_node.has_value() ? 1 : 0;
      victims += r.victims.size();
      colony::bench::do_not_optimize(r.victims.size());
    }));
  }
  // The first call builds every node's summary (what a cycle after a full node-list change pays).
  const double first = samples.front();
  std::sort(samples.begin(), samples.end());
  double total = 0;
  for (double s : samples) total += s;
  ctx.report("quota.preempt_victims_2000x50000.first_call", first * 1e6, "us");
  ctx.report("quota.preempt_victims_2000x50000.us_per_pod", total * 1e6 / n, "us");
  ctx.report("quota.preempt_victims_2000x50000.p50", samples[samples.size() / 2] * 1e6, "us");
  ctx.report("quota.preempt_victims_2000x50000.p99", samples[samples.size() * 99 / 100] * 1e6,
             "us");
  ctx.report("quota.preempt_victims_2000x50000.nominated_share", static_cast<double>(nominated) / n,
             "ratio");
  ctx.report("quota.preempt_victims_2000x50000.victims_per_nomination",
             nominated == 0 ? 0.0 : static_cast<double>(victims) / static_cast<double>(nominated),
             "pods");
  ctx.report("quota.preempt_victims_2000x50000.setup", setup * 1e3, "ms");
  // Worst case: every node changed since the previous PostFilter (each summary is rebuilt).
  const int cold = ctx.quick() ? 5 : 50;
  double cold_total = 0;
  for (int i = 0; i < cold; ++i) {
    for (auto& node : w.nodes) ++node.generation;
    colony::scheduler::pod_info p;
    p.key = "ns-x/cold-" + std::to_string(i);
    p.quota_name = w.leaves[rng() % w.leaves.size()];
    p.priority = 9'500;
    p.requests = cpu_mem(8'000, 16 * colony::gib);
    ++st.cycle;
    (void)w.plugin->pre_filter(st, p, w.nodes, now);
    cold_total += colony::bench::seconds_of(
        [&] { colony::bench::do_not_optimize(w.plugin->post_filter(st, p, now).victims.size()); });
  }
  ctx.report("quota.preempt_victims_2000x50000.all_nodes_changed", cold_total * 1e6 / cold, "us");
}

}  // namespace
