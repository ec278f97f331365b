// A synthetic cluster for the descheduler benchmarks, as koord-descheduler's informers would hold
// it: nodes (32 cores, 128 GiB, 110 pods), pods spread over them by ReplicaSets and Jobs in 50
// namespaces plus one DaemonSet pod per node in kube-system, Koordinator priority classes
// (koord-prod / mid / batch / free with their spec.priority bands), and one fresh NodeMetric per
// node. Node load comes in four kinds so that a LowNodeLoad round has work at every step:
//   hot       10 %: cpu 80-95 %, memory 50-85 %   (over highThresholds)
//   prod-hot   5 %: cpu 60-72 %, prod share 90 %  (under high, over prodHighThresholds)
//   warm      25 %: cpu 50-70 %, prod share 30 %  (prod-low targets)
//   cold      60 %: cpu 10-40 %, memory 20-50 %   (low and both-low targets)
// Deterministic for a seed. Pods live in `pods` (a std::map, so pointers stay valid).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "actors/descheduler/descheduler_types.hpp"
#include "actors/descheduler/migration_job.hpp"

namespace colony::bench::descheduler {

struct synthetic_cluster {
  std::vector<colony::descheduler::node_info> nodes;                       // by name
  std::map<std::string, colony::descheduler::pod_info, std::less<>> pods;  // by key
  std::vector<std::vector<const colony::descheduler::pod_info*>> on_node;  // per node, by key
  std::map<std::string, colony::descheduler::node_metric_info, std::less<>> metrics;
  // Workload pods by "<ns>/<Kind>/<name>" (the view's stand-in: replicas = live pods).
  std::map<std::string, colony::descheduler::workload_info, std::less<>> workloads;
  std::size_t hot = 0, prod_hot = 0, warm = 0, cold = 0;
  // What the component's view keeps for lookups: pods by key, and each workload's state.
  colony::descheduler::pod_lookup pod_index;
  colony::descheduler::workload_state_table workload_states;

  [[nodiscard]] std::optional<colony::descheduler::workload_info> workload(
      const colony::descheduler::pod_info& p) const;
  [[nodiscard]] const colony::descheduler::workload_state* workload_state(
      const colony::descheduler::pod_info& p) const;
  // The view the component's filters get (descheduler_view::migration): the jobs counted from
  // `index`, pods and workloads looked up as above.
  [[nodiscard]] colony::descheduler::migration_view view(
      const std::vector<colony::descheduler::job_info>* jobs,
      const colony::descheduler::job_index* index) const;
};

// `nodes` nodes and `pods` pods (one DaemonSet pod per node among them); metrics updated at
// now_ms - 10 s.
[[nodiscard]] synthetic_cluster make_cluster(std::size_t nodes, std::size_t pods,
                                             std::uint64_t seed, std::int64_t now_ms);

}  // namespace colony::bench::descheduler
