// ElasticQuota benchmarks: the full runtime fixed point (quota_tree::refresh) over a 2,000-quota
// tree (20 top-level parents x 9 mid parents x 10 leaves, 3 pods per leaf), one pod changed
// between refreshes so every pass also finds a changed set. Goal: < 1 ms per refresh.
#include <algorithm>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "actors/quota/admission.hpp"
#include "actors/quota/quota_tree.hpp"
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

}  // namespace
