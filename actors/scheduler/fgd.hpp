// Fragmentation Gradient Descent (FGD) and the FGD paper's BestFit baseline as Score plugins
// (Weng et al., "Beware of Fragmentation: Scheduling GPU-Sharing Workloads with Fragmentation
// Gradient Descent", USENIX ATC '23). Koordinator has neither; they are Colony's, written from
// the paper's definitions and the authors' simulator (hkust-adsl/kubernetes-scheduler-simulator:
// pkg/utils/frag.go, pkg/simulator/plugin/fgd_score.go, best_fit_score.go, open_gpu_share.go).
//
// Fragmentation of a node n for a task class m (GetNodePodFrag, NodeGpuShareFragAmount):
//   - m asks for no GPU, or n's GPU model is not one m accepts, or m cannot run on n (too little
//     free CPU, or fewer than m's GPU count of GPUs with m's per-GPU share free): every free
//     GPU share of n is fragmented for m;
//   - otherwise the free share of each GPU with less free than m's per-GPU share is.
// The node's fragmentation is F_n = sum over classes of popularity(m) x frag(n, m), in milli-GPU.
//
// FGD's score of placing pod p on node n: (int) 100 x sigmoid((F_n - F_n') / 1000), where n' is
// n with p placed; a GPU-sharing pod (one GPU, less than a whole one) is tried on every GPU
// with room and the best one counts (the first on ties), whole-GPU pods take the lowest fully
// free GPUs, CPU pods only take CPU. No NormalizeScore.
// BestFit's score: (int) 100 x (1 - 0.5 x (cpu_free - cpu_req) / 128 cores - 0.5 x (gpu_free -
// gpu_req) / 8 GPUs), then min-max normalised to [0, 100] over the scored nodes.
//
// Each plugin also chooses the GPU of a GPU-sharing pod at Reserve (it must come after
// DeviceShare in the profile's reserve list, whose allocation it moves): FGD the GPU its score
// picked, BestFit the fitting GPU with the least free share (the first on ties). Whole-GPU pods
// keep DeviceShare's choice, the lowest fully free minors, which is the authors' choice too.
//
// Units: a GPU's share in milli-GPU = (core_total - core_used) x 10 (koordinator.sh/gpu-core is
// a percent of one device). Configured through the scheduler config:
//   pluginConfig:
//   - name: FGDScore
//     args:
//       taskClasses:     # the workload's typical tasks (the sim fills them from the trace)
//       - {cpuMilli: 4000, gpuMilli: 1000, gpuCount: 1, popularity: 0.45}
//       - {cpuMilli: 8000, gpuMilli: 500, gpuCount: 1, gpuModels: [T4], popularity: 0.55}
// Thread-safety: a plugin keeps a cache of node fragmentation and scratch nodes; one cycle at a
// time (not parallel_safe).
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "actors/scheduler/framework.hpp"
#include "messages/result.hpp"

namespace colony::scheduler {

// One task class of the workload (FGD's "typical pod"): what it asks for and how often it
// comes. gpu_milli is the share of each GPU (1000 = a whole one); gpu_count 0 = a CPU task.
struct fgd_task_class {
  std::int64_t cpu_milli = 0;
  std::int64_t gpu_milli = 0;
  std::int64_t gpu_count = 0;
  std::vector<std::string> gpu_models;  // empty = any model
  double popularity = 0;                // share of the workload's tasks, the classes sum to 1
  bool operator==(const fgd_task_class&) const = default;
};

struct fgd_args {
  std::vector<fgd_task_class> task_classes;
};

// Parses the args YAML ("taskClasses: [...]"); path names the field in errors.
[[nodiscard]] result<fgd_args> parse_fgd_args(std::string_view yaml, const std::string& path);

// A node as FGD sees it: free CPU, each GPU's free share (in minor order), its GPU model.
struct fgd_node {
  std::int64_t cpu_free_milli = 0;
  std::vector<std::int64_t> gpu_free_milli;
  std::string_view gpu_model;
};

// The fragmentation of one node for one class, in milli-GPU (see above).
[[nodiscard]] double fgd_class_fragmentation(const fgd_node& n, const fgd_task_class& m);
// F_n: the popularity-weighted sum over the classes, in milli-GPU.
[[nodiscard]] double fgd_node_fragmentation(const fgd_node& n,
                                            const std::vector<fgd_task_class>& classes);
// The node as FGD sees it (free CPU from allocatable - requested; GPU shares from its devices).
[[nodiscard]] fgd_node fgd_node_of(const node_info& node);
// The pod as a task: CPU request and (count, per-GPU share) of its device request.
[[nodiscard]] fgd_task_class fgd_task_of(const pod_info& pod);
// FGD's score and the GPU index it picks for a GPU-sharing task (-1 otherwise).
struct fgd_choice {
  std::int64_t score = 0;
  int gpu = -1;
};
// REQUIRES: the task fits the node (Filter passed).
[[nodiscard]] fgd_choice fgd_score(const fgd_node& n, const fgd_task_class& task,
                                   const std::vector<fgd_task_class>& classes);
// BestFit's raw score (before normalisation). REQUIRES: the task fits the node.
[[nodiscard]] std::int64_t best_fit_raw_score(const fgd_node& n, const fgd_task_class& task);
// BestFit's GPU for a GPU-sharing task: the fitting GPU with the least free share (first on
// ties); -1 when none fits.
[[nodiscard]] int best_fit_gpu(const fgd_node& n, const fgd_task_class& task);

class fgd_score_plugin final : public plugin {
 public:
  static constexpr std::string_view plugin_name = "FGDScore";
  explicit fgd_score_plugin(fgd_args args) : args_(std::move(args)) {}
  [[nodiscard]] std::string_view name() const noexcept override { return plugin_name; }
  [[nodiscard]] std::uint32_t points() const noexcept override { return ep_score | ep_reserve; }
  [[nodiscard]] const fgd_args& args() const noexcept { return args_; }
  std::int64_t score(cycle_state& st, const pod_info& pod, const node_info& node,
                     event_time now) override;
  // score() over many nodes, the pod's task read once.
  void score_nodes(cycle_state& st, const pod_info& pod, std::span<const node_info> nodes,
                   std::span<const std::uint32_t> indices, std::span<std::int64_t> out,
                   event_time now) override;
  status reserve(cycle_state& st, const pod_info& pod, const node_info& node,
                 event_time now) override;
  // Node states whose fragmentation was computed, and lookups answered from the cache.
  [[nodiscard]] std::size_t cache_misses() const noexcept { return misses_; }
  [[nodiscard]] std::size_t cache_hits() const noexcept { return hits_; }

  // A node state as the cache keys it: the model (interned), the free CPU and the GPU shares
  // sorted, since F depends on the multiset of shares only (a free total, counts and sums over
  // the GPUs). Nodes with more than max_key_gpus GPUs are not cached.
  static constexpr std::size_t max_key_gpus = 8;
  struct state_key {
    std::int64_t cpu_free_milli = 0;
    std::uint32_t model = 0;
    std::uint32_t gpus = 0;
    std::array<std::int32_t, max_key_gpus> free{};
    bool operator==(const state_key&) const = default;
  };
  struct state_key_hash {
    std::size_t operator()(const state_key& k) const noexcept;
  };

 private:
  struct cycle_task;  // the pod's task, per cycle (cycle_state slot)
  [[nodiscard]] const fgd_task_class& task_of(cycle_state& st, const pod_info& pod);
  // The index of model in models_, added when new.
  [[nodiscard]] std::uint32_t model_id(std::string_view model);
  // F of n, whose model has index model.
  [[nodiscard]] double fragmentation(const fgd_node& n, std::uint32_t model);
  [[nodiscard]] fgd_choice choose(const fgd_node& n, const fgd_task_class& task);
  fgd_args args_;
  // F_n by node state: the same state has the same F.
  std::unordered_map<state_key, double, state_key_hash> cache_;
  std::vector<std::string> models_;  // interned GPU models (few per cluster)
  fgd_node node_, placed_;           // scratch: the scored node, the node with the task placed
  std::size_t misses_ = 0, hits_ = 0;
};

class best_fit_score_plugin final : public plugin {
 public:
  static constexpr std::string_view plugin_name = "BestFitScore";
  [[nodiscard]] std::string_view name() const noexcept override { return plugin_name; }
  [[nodiscard]] std::uint32_t points() const noexcept override { return ep_score | ep_reserve; }
  [[nodiscard]] bool parallel_safe() const noexcept override { return true; }
  std::int64_t score(cycle_state& st, const pod_info& pod, const node_info& node,
                     event_time now) override;
  bool normalize_score(cycle_state& st, const pod_info& pod,
                       std::span<std::int64_t> scores) override;
  status reserve(cycle_state& st, const pod_info& pod, const node_info& node,
                 event_time now) override;
};

}  // namespace colony::scheduler
