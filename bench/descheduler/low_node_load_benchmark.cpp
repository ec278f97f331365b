// descheduler.low_node_load: one LowNodeLoad Balance round (low_node_load::balance, the call the
// descheduler component makes every deschedulingInterval) over a synthetic cluster of 5,000 nodes
// and 100,000 pods (quick: 500 x 10,000; synthetic_cluster.hpp), with the evictor the component
// gives it: the per-round eviction limiter, the MigrationController's filter (no active job, the
// non-retryable filter, the retryable filters counting every Pending job) and a new Pending job per
// eviction, which the later filters of the round count.
//
// Thresholds are Koordinator's shipped example (config/manager/descheduler-config.yaml: low cpu 45
// / memory 55, high cpu 75 / memory 80, kube-system and koordinator-system excluded) with prod
// thresholds under them (prodLow cpu 30 / memory 40, prodHigh cpu 55 / memory 65), and
// anomalyCondition.consecutiveAbnormalities 1, as the golden cases use it, so that every round
// acts on the hot nodes (with the default 5 only every sixth round would, and the rounds would
// differ). Building the cluster is not timed; each timed round starts from no jobs.
// Figures: median wall and thread-CPU ms per round after one warm-up round, and what the round
// did (nodes per class, abnormal sources, pods selected for eviction, jobs created, limited).
#include <algorithm>
#include <ctime>
#include <string>
#include <unordered_set>
#include <vector>

#include "actors/descheduler/descheduler_config.hpp"
#include "actors/descheduler/eviction_limiter.hpp"
#include "actors/descheduler/job_index.hpp"
#include "actors/descheduler/low_node_load.hpp"
#include "actors/descheduler/migration_filter.hpp"
#include "bench/descheduler/synthetic_cluster.hpp"
#include "bench/descheduler/timing.hpp"
#include "bench/registry.hpp"

namespace {

using namespace colony;
using namespace colony::descheduler;
using bench::descheduler::median;
using bench::descheduler::thread_cpu_ms;

constexpr std::int64_t now_ms = 10'000'000;

constexpr const char* config_yaml = R"(apiVersion: descheduler/v1alpha2
kind: DeschedulerConfiguration
deschedulingInterval: 10s
profiles:
- name: koord-descheduler
  plugins:
    balance:
      enabled:
      - name: LowNodeLoad
  pluginConfig:
  - name: MigrationController
    args:
      apiVersion: descheduler/v1alpha2
      kind: MigrationControllerArgs
      defaultJobMode: EvictDirectly
  - name: LowNodeLoad
    args:
      apiVersion: descheduler/v1alpha2
      kind: LowNodeLoadArgs
      evictableNamespaces:
        exclude: [kube-system, koordinator-system]
      lowThresholds: {cpu: 45, memory: 55}
      highThresholds: {cpu: 75, memory: 80}
      prodLowThresholds: {cpu: 30, memory: 40}
      prodHighThresholds: {cpu: 55, memory: 65}
      anomalyCondition: {consecutiveAbnormalities: 1}
)";

// The descheduler component's evictor over plain views (descheduler_component.cpp filter/evict).
struct component_evictor {
  const descheduler_config& cfg;
  const bench::descheduler::synthetic_cluster& c;
  std::vector<job_info> jobs;
  job_index index;  // the jobs, as the component's view keeps them
  // Pods with a job (the view's active_by_pod_).
  std::unordered_set<std::string, key_hash, std::equal_to<>> active;
  eviction_limiter limiter;
  std::size_t limited = 0, refused = 0;

  component_evictor(const descheduler_config& config,
                    const bench::descheduler::synthetic_cluster& cl)
      : cfg(config), c(cl), limiter(config.limits) {}

  void reset() {
    jobs.clear();
    index.clear();
    active.clear();
    limiter.reset();
    limited = refused = 0;
  }
  [[nodiscard]] migration_view view() const { return c.view(&jobs, &index); }
  [[nodiscard]] bool filter(const pod_info& p) const {
    const std::string key = p.key();
    if (active.count(key)) return false;
    return passes_migration_filters(p, key, cfg.migration, view());
  }
  bool evict(const eviction_request& r) {
    const auto& p = *r.pod;
    if (!limiter.allow(p)) {
      ++limited;
      return false;
    }
    if (!filter(p)) {
      ++refused;
      return false;
    }
    job_info j;
    j.name = p.ns + "." + p.name + "." + std::to_string(now_ms);
    j.pod = p.key();
    j.mode = cfg.migration.default_job_mode;
    j.created_ms = now_ms;
    j.ttl_ms = cfg.migration.default_job_ttl_ms;
    index.add(j, &p);
    jobs.push_back(std::move(j));
    active.insert(p.key());
    limiter.done(p);
    return true;
  }
};

}  // namespace

COLONY_BENCH("descheduler.low_node_load",
             "one LowNodeLoad round with the component's evictor, 5,000 nodes x 100,000 pods "
             "(quick: 500 x 10,000), a tenth of the nodes hot (one core)") {
  const std::size_t nodes = ctx.quick() ? 500 : 5000;
  const std::size_t pods = ctx.quick() ? 10'000 : 100'000;
  const std::string p = "descheduler.low_node_load";
  auto cfg = parse_descheduler_config(config_yaml);
  if (!cfg) {
    ctx.report(p + ".ok", 0, "bool");
    return;
  }
  const auto c = bench::descheduler::make_cluster(nodes, pods, 7, now_ms);
  low_node_load lnl(cfg->low_node_load);
  component_evictor ce(*cfg, c);

  low_node_load_input in;
  in.nodes = c.nodes;
  in.now_ms = now_ms;
  in.pods_on_node = [&c](const node_info& n) {
    return c.on_node[static_cast<std::size_t>(&n - c.nodes.data())];
  };
  in.node_metric = [&c](std::string_view n) -> const node_metric_info* {
    const auto it = c.metrics.find(n);
    return it == c.metrics.end() ? nullptr : &it->second;
  };
  evictor ev;
  ev.filter = [&ce](const pod_info& pod) { return ce.filter(pod); };
  ev.evict = [&ce](const eviction_request& r) { return ce.evict(r); };

  std::vector<double> ms, cpu;
  std::vector<pool_round> last;
  const int rounds = ctx.quick() ? 3 : 5;
  for (int k = 0; k <= rounds; ++k) {  // round 0 warms up
    ce.reset();
    const double c0 = thread_cpu_ms();
    const double s = bench::seconds_of([&] { last = lnl.balance(in, ev); });
    const double used = thread_cpu_ms() - c0;
    if (k == 0) continue;
    ms.push_back(s * 1000.0);
    cpu.push_back(used);
  }
  // The policy alone: the same round with an evictor that only applies the non-retryable filter
  // and accepts every eviction (the golden cases' evictor), so the migration limits' job scans
  // are out of the figure.
  std::vector<double> policy_ms;
  std::size_t policy_selected = 0;
  {
    const migration_view none = c.view(nullptr, nullptr);
    evictor plain;
    plain.filter = [&](const pod_info& pod) {
      return non_retryable_refusal(pod, cfg->migration, none).empty();
    };
    plain.evict = [](const eviction_request&) { return true; };
    for (int k = 0; k <= rounds; ++k) {
      std::vector<pool_round> pr;
      const double s = bench::seconds_of([&] { pr = lnl.balance(in, plain); });
      if (k == 0) continue;
      policy_ms.push_back(s * 1000.0);
      policy_selected = pr.empty() ? 0 : pr.front().evicted;
    }
  }
  const std::string size = ctx.quick() ? "500x10000" : "5000x100000";
  ctx.report(p + "_" + size + ".round_policy_only", median(policy_ms), "ms");
  ctx.report(p + ".policy_only.pods_selected", static_cast<double>(policy_selected), "pods");
  ctx.report(p + "_" + size + ".round", median(ms), "ms");
  ctx.report(p + "_" + size + ".round.cpu", median(cpu), "ms");
  pool_round r;
  if (!last.empty()) r = last.front();
  ctx.report(p + ".nodes", static_cast<double>(r.nodes), "nodes");
  ctx.report(p + ".nodes_high", static_cast<double>(r.high), "nodes");
  ctx.report(p + ".nodes_prod_high", static_cast<double>(r.prod_high), "nodes");
  ctx.report(p + ".nodes_low", static_cast<double>(r.low), "nodes");
  ctx.report(p + ".nodes_prod_low", static_cast<double>(r.prod_low), "nodes");
  ctx.report(p + ".nodes_both_low", static_cast<double>(r.both_low), "nodes");
  ctx.report(p + ".sources_abnormal", static_cast<double>(r.abnormal + r.abnormal_prod), "nodes");
  ctx.report(p + ".pods_selected", static_cast<double>(r.evicted), "pods");
  ctx.report(p + ".jobs_created", static_cast<double>(ce.jobs.size()), "jobs");
  // The victims in order, hashed (FNV-1a, 52 bits): equal across builds when the policy decides
  // the same.
  std::uint64_t h = 1469598103934665603ULL;
  for (const auto& j : ce.jobs)
    for (const char ch : j.pod + "\n") h = (h ^ static_cast<unsigned char>(ch)) * 1099511628211ULL;
  ctx.report(p + ".victims_digest", static_cast<double>(h >> 12), "hash");
  ctx.report(p + ".evictions_refused", static_cast<double>(ce.limited + ce.refused), "pods");
  ctx.report(p + ".ok", r.stopped.empty() && r.evicted > 0 ? 1 : 0, "bool");
}
