// descheduler.arbitration: one arbitration pass of the migration controller
// (pkg/descheduler/controllers/migration/arbitrator/arbitrator.go): 10,000 Pending
// PodMigrationJobs (quick: 1,000) sorted (sort_jobs: creation time, pod, Job grouping, migrating
// count) and judged in that order with the controller's filters (non_retryable_refusal, then
// retryable_refusal counting inside the pass), each passing job marked passed before the next is
// judged, as migration_controller_component does.
//
// The cluster is synthetic_cluster.hpp's (5,000 nodes x 100,000 pods; quick 500 x 10,000). The
// jobs: one per pod for 10,000 distinct pods drawn at random (DaemonSet and bare pods among them,
// which the non-retryable filter refuses; Job-owned pods, which the controller sort groups), 2 %
// of them for pods that are gone, created over the last minute; besides them 1,000 Running jobs
// (quick 100) that count toward every limit. Limits: Koordinator's defaults (maxMigratingPerNode
// 2, per workload 10 % of replicas / 2 for 4..10) and maxMigratingPerNamespace 100, so each of the
// retryable filters leaves jobs waiting. Building the jobs is not timed.
// Figures: median wall and thread-CPU ms per pass after one warm-up pass; jobs passed, failed
// (forbidden), waiting.
#include <algorithm>
#include <ctime>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "actors/descheduler/arbitration.hpp"
#include "actors/descheduler/job_index.hpp"
#include "actors/descheduler/migration_controller_args.hpp"
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

}  // namespace

COLONY_BENCH("descheduler.arbitration",
             "one arbitration pass over 10,000 pending PodMigrationJobs (quick: 1,000) with "
             "1,000 running, 5,000 nodes x 100,000 pods (one core)") {
  const std::size_t nodes = ctx.quick() ? 500 : 5000;
  const std::size_t pods = ctx.quick() ? 10'000 : 100'000;
  const std::size_t pending = ctx.quick() ? 1'000 : 10'000;
  const std::size_t running = ctx.quick() ? 100 : 1'000;
  const std::string p = "descheduler.arbitration";
  const auto c = bench::descheduler::make_cluster(nodes, pods, 11, now_ms);

  migration_controller_args args;
  args.default_job_mode = std::string(job_mode_evict_directly);
  args.max_migrating_per_namespace = 100;

  // Distinct pods for the jobs, drawn at random; a few gone (a key no pod has).
  std::vector<std::string> keys;
  keys.reserve(c.pods.size());
  for (const auto& [k, pod] : c.pods) keys.push_back(k);
  std::mt19937_64 rng(13);
  std::shuffle(keys.begin(), keys.end(), rng);
  std::vector<job_info> jobs;
  jobs.reserve(pending + running);
  for (std::size_t i = 0; i < pending + running && i < keys.size(); ++i) {
    job_info j;
    j.pod = i % 50 == 7 ? keys[i] + "-gone" : keys[i];
    j.name = fmt::format("job-{:06}", i);
    j.mode = args.default_job_mode;
    j.created_ms = now_ms - static_cast<std::int64_t>(rng() % 60'000);
    j.ttl_ms = args.default_job_ttl_ms;
    if (i >= pending) {
      j.phase = job_phase::running;
      j.passed_arbitration = true;
    }
    jobs.push_back(std::move(j));
  }
  // The jobs' index, as the controller's view keeps it (rebuilt untimed before each pass).
  job_index index;
  const migration_view view = c.view(&jobs, &index);

  std::vector<double> ms, cpu;
  arbitration_outcome last;
  const int passes = ctx.quick() ? 3 : 5;
  for (int k = 0; k <= passes; ++k) {  // pass 0 warms up
    for (std::size_t i = 0; i < pending && i < jobs.size(); ++i) jobs[i].passed_arbitration = false;
    index.clear();
    for (const auto& j : jobs) index.add(j, view.pod(j.pod));
    const double c0 = thread_cpu_ms();
    const double s = bench::seconds_of([&] {
      std::vector<arbitration_job> waiting;
      waiting.reserve(pending);
      for (std::size_t i = 0; i < pending && i < jobs.size(); ++i)
        waiting.push_back({&jobs[i], view.pod(jobs[i].pod)});
      sort_jobs(waiting, view);
      last = arbitrate_once(
          waiting,
          [&](const arbitration_job& a) { return non_retryable_refusal(*a.pod, args, view); },
          [&](const arbitration_job& a) { return retryable_refusal(*a.pod, args, view, true); },
          [&](const job_info& j) {
            // As descheduler_view::mark_passed.
            auto& passed = jobs[static_cast<std::size_t>(&j - jobs.data())];
            if (!index.mark_passed(passed)) {
              index.remove(passed);
              passed.passed_arbitration = true;
              index.add(passed, view.pod(passed.pod));
            }
            passed.passed_arbitration = true;
          });
    });
    const double used = thread_cpu_ms() - c0;
    if (k == 0) continue;
    ms.push_back(s * 1000.0);
    cpu.push_back(used);
  }
  const std::string size = ctx.quick() ? "1000" : "10000";
  ctx.report(p + "_" + size + ".pass", median(ms), "ms");
  ctx.report(p + "_" + size + ".pass.cpu", median(cpu), "ms");
  ctx.report(p + ".jobs_pending", static_cast<double>(std::min(pending, jobs.size())), "jobs");
  ctx.report(p + ".jobs_running", static_cast<double>(jobs.size() - std::min(pending, jobs.size())),
             "jobs");
  ctx.report(p + ".jobs_passed", static_cast<double>(last.passed.size()), "jobs");
  ctx.report(p + ".jobs_failed", static_cast<double>(last.failed.size()), "jobs");
  ctx.report(p + ".jobs_waiting", static_cast<double>(last.waiting.size()), "jobs");
  // The outcome in order (passed, failed with its refusal, waiting), hashed (FNV-1a, 52 bits):
  // equal across builds when the pass decides the same.
  std::uint64_t h = 1469598103934665603ULL;
  auto mix = [&h](std::string_view s) {
    for (const char ch : s) h = (h ^ static_cast<unsigned char>(ch)) * 1099511628211ULL;
    h = (h ^ '\n') * 1099511628211ULL;
  };
  for (const auto* j : last.passed) mix(j->name);
  mix("--");
  for (const auto& [j, why] : last.failed) {
    mix(j->name);
    mix(why);
  }
  mix("--");
  for (const auto* j : last.waiting) mix(j->name);
  ctx.report(p + ".outcome_digest", static_cast<double>(h >> 12), "hash");
  // Which limit keeps each waiting job (judged again after the pass, not timed).
  std::size_t by_node = 0, by_namespace = 0, by_workload = 0;
  for (const auto* j : last.waiting) {
    const auto why = retryable_refusal(*view.pod(j->pod), args, view, true);
    if (why.starts_with("maxMigratingPerNode"))
      ++by_node;
    else if (why.starts_with("maxMigratingPerNamespace"))
      ++by_namespace;
    else if (why.starts_with("workload"))
      ++by_workload;
  }
  ctx.report(p + ".waiting_per_node_limit", static_cast<double>(by_node), "jobs");
  ctx.report(p + ".waiting_per_namespace_limit", static_cast<double>(by_namespace), "jobs");
  ctx.report(p + ".waiting_workload_limit", static_cast<double>(by_workload), "jobs");
  ctx.report(p + ".ok",
             !last.passed.empty() && !last.failed.empty() && !last.waiting.empty() ? 1 : 0, "bool");
}
