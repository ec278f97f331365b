// The FGD paper's experiment (Weng et al., USENIX ATC '23, "Beware of Fragmentation"; its
// artifact: hkust-adsl/kubernetes-scheduler-simulator experiments/README.md): the pod list,
// inflated to a target share of the cluster's GPU capacity, is submitted pod after pod until the
// cluster saturates; after each pod the GPU allocation ratio and the fragmentation are recorded
// against the GPU request that has arrived, and reported at whole percents of it, over several
// seeds. `colony sim --until-saturated --inflate R --seeds N` runs it (docs/results.md).
//
// The workload, as the authors' simulator draws it (pkg/simulator/core.go Simulate with
// shufflePod and workloadTuningConfig, as experiments/run_scripts/generate_run_scripts.py runs
// it), with Go's math/rand seeded with the seed (sim/go_rand.hpp), so a seed gives the same pods
// in the same order: one Int() drawn; the pods sorted by name and shuffled (SortClusterPods);
// then pods drawn uniformly from the list (sorted by name) and appended, named
// "<name>-tuned-<i>", while the total GPU request stays within R x the cluster's GPUs (their
// check adds the drawn pod's per-GPU share, not its total; kept), or, when the list already asks
// for more, pods drawn and removed until it fits (tuneUpPods, tuneDownPods).
//
// The run: the scheduler component (actors/scheduler/actor) alone in the step host, the
// configuration, the nodes, then one pod per virtual second; a pod the scheduler could not place
// in its instant is deleted in that instant (the authors' simulator deletes a pod it failed to
// schedule: simulator.go assumePod), so nothing is retried later. Figures are folded from the
// records the host writes (PodScheduled's node and GPU allocations), never from a policy.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "actors/scheduler/fgd.hpp"
#include "bridges/trace/openb.hpp"
#include "messages/result.hpp"
#include "sim/sim_config.hpp"

namespace colony::sim {

// The workload's task classes as the authors' simulator computes them (pkg/utils/frag.go
// GetTypicalPods with typicalPodsConfig isInvolvedCpuPods true, podPopularityThreshold 95): pods
// grouped by (cpu, per-GPU share, GPU count, GPU models), the most frequent first; equally
// frequent ones in decreasing (cpu, share, count, models) order, as their sort.Reverse of
// TargetPodList.Less orders them (pkg/type/resource.go: a total order, so Go's map order never
// shows); taken until they cover 95 % of the pods, popularities renormalised to sum to 1 with
// their arithmetic ((n / total) / (covered / total)).
[[nodiscard]] std::vector<scheduler::fgd_task_class> fgd_typical_pods(
    const std::vector<trace::openb_pod>& pods);

// Draws of Go's global generator between the workload's tune draws and the node renaming in the
// FGD authors' simulator: one rand.Float64 (one Int63) per informer of the scheduler's informer
// factory as it starts its watch (k8s.io/client-go tools/cache/reflector.go). Measured, not
// read: with 10, the node prefixes their simulator logs for seed 42 ("is scheduled to
// node(0000-openb-node-0260)") are those of rand.Perm, all 233 seen (docs/results.md E).
inline constexpr int fgd_informer_draws = 10;

// The pods to submit, in order: indices into `pods` and the name each goes by.
struct fgd_workload {
  std::vector<std::uint32_t> rows;
  std::vector<std::string> names;
  std::int64_t requested_gpu_milli = 0;  // their total GPU request
  // The FGD authors' simulator renames node i of the name-sorted node list
  // fmt.Sprintf("%04d-", node_prefixes[i]) + name (pkg/simulator/simulator.go
  // syncClusterResourceList: rand.Perm after the tune draws); their kube-scheduler breaks score
  // ties by the smallest name, so this permutation is their tie order. Empty when node_count is 0.
  std::vector<std::int64_t> node_prefixes;
};
// REQUIRES: pods non-empty. cluster_gpu_milli: the node list's GPUs x 1000.
[[nodiscard]] fgd_workload draw_fgd_workload(const std::vector<trace::openb_pod>& pods,
                                             std::int64_t cluster_gpu_milli, double inflate,
                                             std::int64_t seed, std::size_t node_count = 0);

// Pods a node may hold in the experiment: the FGD authors' node list allocates 1001
// (data/node_yaml/openb_node_list_gpu_node.yaml status.allocatable.pods), not kubelet's 110.
inline constexpr std::int64_t fgd_pods_per_node = 1001;

struct fgd_experiment_options {
  double inflate = 1.3;    // the tune ratio: total GPU request / cluster GPUs
  std::int64_t seed = 42;  // first seed (the authors use 42 ... 51)
  std::int64_t seeds = 1;  // how many seeds
};

// One pod's sample (the authors' ClusterGpuFragReport after each pod).
struct fgd_sample {
  std::int64_t arrived_gpu_milli = 0;
  std::int64_t used_gpu_milli = 0;
  double frag_gpu_milli = 0;  // sum over nodes of F_n
  double idle_gpu_milli = 0;
};

struct fgd_run {
  std::string config;
  std::int64_t seed = 0;
  std::size_t pods = 0, scheduled = 0, failed = 0;
  std::int64_t total_gpu_milli = 0;
  std::vector<fgd_sample> samples;
  // The names the nodes went by (fgd_workload::node_prefixes applied), in node-list order, and
  // per submitted pod the index of its node there (-1: not placed): the decisions, to set
  // beside the authors' log ("pod(...) is scheduled to node(...)").
  std::vector<std::string> node_names;
  std::vector<std::int32_t> placed_on;
  std::uint64_t events = 0;
  double wall_seconds = 0;
};

// FNV-1a (64 bits) of the run's decisions: per submitted pod, in order, the name of its node
// and a newline ("-" when it was not placed). Equal digests, equal decisions.
[[nodiscard]] std::uint64_t fgd_placements_digest(const fgd_run& r);

// Runs one config and one seed.
[[nodiscard]] result<fgd_run> run_fgd_experiment(const std::vector<trace::openb_node>& nodes,
                                                 const std::vector<trace::openb_pod>& pods,
                                                 const sim_config& cfg, std::int64_t seed,
                                                 double inflate);

// The authors' discrete figures (experiments/analysis/merge_*_discrete.py) at arrived levels
// 0 .. round(100 x inflate) %: the samples whose arrived request rounds (half to even) to the
// level, or failing that those within one level, averaged. NaN where no sample is near.
struct fgd_levels {
  std::vector<double> alloc;       // GPU allocation, % of the cluster's GPUs
  std::vector<double> frag;        // fragmented GPU share, % of the cluster's GPUs
  std::vector<double> frag_ratio;  // fragmented share, % of the idle GPU share
};
[[nodiscard]] fgd_levels fgd_discrete_levels(const fgd_run& r, double inflate);

// The whole command: every config x seed, the report in out (docs/results.md).
[[nodiscard]] result<void> run_fgd_command(const std::vector<trace::openb_node>& nodes,
                                           const std::vector<trace::openb_pod>& pods,
                                           const std::vector<sim_config>& configs,
                                           const fgd_experiment_options& opt,
                                           const std::string& out, bool quiet);

}  // namespace colony::sim
