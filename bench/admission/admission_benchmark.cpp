// Admission throughput: the pod Create mutation with three profiles, as Koordinator's
// BenchmarkClusterColocationProfile_NoPatchNoNamespaceSelector sets it up
// (pkg/webhook/pod/mutating/cluster_colocation_profile_test.go), plus validation.
#include <string>
#include <vector>

#include "actors/admission/colocation_profile.hpp"
#include "actors/admission/validation.hpp"
#include "bench/registry.hpp"
#include "messages/units.hpp"

namespace colony::admission {
namespace {

profile_set bench_profiles() {
  cluster_colocation_profile batch;
  batch.name = "profile-batch-default";
  batch.selector = label_selector{{{"koordinator.sh/colocation", "batch"}}, {}};
  batch.labels = {{"koordinator.sh/qosClass", "BE"}};
  batch.annotations = {{"koordinator.sh/mutated-by", "profile-batch-default"}};
  batch.qos = qos_class::be;
  batch.priority_class_name = "koordinator-batch";
  batch.koordinator_priority = 1000;
  batch.scheduler_name = "koordinator-scheduler";
  cluster_colocation_profile midtier;
  midtier.name = "profile-midtier";
  midtier.selector = label_selector{{{"koordinator.sh/colocation", "mid"}}, {}};
  midtier.labels = {{"koordinator.sh/qosClass", "LS"}};
  midtier.scheduler_name = "koordinator-scheduler";
  cluster_colocation_profile catchall;
  catchall.name = "profile-catchall";
  catchall.labels = {{"koordinator.sh/managed", "true"}};
  catchall.annotations = {{"koordinator.sh/injected", "true"}};
  return *profile_set::make({batch, midtier, catchall});
}

pod_spec bench_pod(int i) {
  pod_spec p;
  p.pod_namespace = "default";
  p.name = "bench-pod-" + std::to_string(i);
  p.labels = {{"koordinator.sh/colocation", "batch"}, {"app", "my-service"}, {"version", "v1"}};
  resource_list main_req, main_lim, side_req, side_lim;
  main_req.cpu_milli = 2000;
  main_req.memory_bytes = 4 * gib;
  main_lim.cpu_milli = 4000;
  main_lim.memory_bytes = 8 * gib;
  side_req.cpu_milli = 500;
  side_req.memory_bytes = 256 * mib;
  side_lim.cpu_milli = 1000;
  side_lim.memory_bytes = 512 * mib;
  p.containers = {{"main", main_req, main_lim}, {"sidecar", side_req, side_lim}};
  return p;
}

COLONY_BENCH("admission.mutate",
             "ClusterColocationProfile mutation + extended-resource-spec, 3 profiles") {
  const int n = ctx.quick() ? 20'000 : 200'000;
  const profile_set profiles = bench_profiles();
  const priority_class_table pcs = {
      {"koordinator-batch",
       priority_class_info{"koordinator-batch", 5999, "PreemptLowerPriority"}}};
  const string_map ns;
  std::vector<pod_spec> pods;
  pods.reserve(1024);
  for (int i = 0; i < 1024; ++i) pods.push_back(bench_pod(i));
  std::int64_t translated = 0;
  const double s = bench::seconds_of([&] {
    for (int i = 0; i < n; ++i) {
      mutating_options opts;
      opts.seed = static_cast<std::uint64_t>(i);
      auto m =
          mutate_pod_on_create(pods[static_cast<std::size_t>(i) & 1023], profiles, &ns, pcs, opts);
      translated += m ? m->requests.batch_cpu_milli : 0;
      bench::do_not_optimize(m);
    }
  });
  bench::do_not_optimize(translated);
  ctx.report("admission.mutate.pods_per_s", n / s, "pods/s");
  ctx.report("admission.mutate.us_per_pod", s * 1e6 / n, "us");
}

COLONY_BENCH("admission.validate", "validating webhook QoS/priority rules") {
  const int n = ctx.quick() ? 100'000 : 1'000'000;
  pod_spec p = bench_pod(0);
  p.labels["koordinator.sh/qosClass"] = "BE";
  p.priority = 5999;
  std::size_t allowed = 0;
  const double s = bench::seconds_of([&] {
    for (int i = 0; i < n; ++i) {
      auto r = validate_cluster_colocation_profile_pod(admission_operation::create, p, nullptr);
      allowed += r.allowed();
      bench::do_not_optimize(r);
    }
  });
  bench::do_not_optimize(allowed);
  ctx.report("admission.validate.pods_per_s", n / s, "pods/s");
}

}  // namespace
}  // namespace colony::admission
