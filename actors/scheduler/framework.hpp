// The scheduler's cluster view (plain structs), the plugin interface with kube-scheduler's
// extension points, and scheduling_cycle(): one pod through one profile over a node list.
//
// What it defines:
//   - resource_name: the resources a policy may name in config (Koordinator's names), mapped
//     onto colony::resource_list fields, ordered as Koordinator sorts them (by name).
//   - node_metric, gpu_device, pod_info, node_info: the read model a scheduler actor keeps.
//   - status, cycle_state, plugin: the framework contract (PreFilter, Filter, Score +
//     NormalizeScore, Reserve/Unreserve, Permit, PostFilter).
//   - framework: a profile (plugins, weights, percentageOfNodesToScore) plus the rotating
//     start index kube-scheduler keeps between cycles.
//   - scheduling_cycle(): filter, sample, score, select (seeded tie-break), reserve, permit;
//     returns a decision that explains itself.
//
// Ownership and threading: a framework owns its plugins (shared, so an actor can feed plugin
// caches such as the gang cache). One framework runs one cycle at a time (plugins keep caches
// and scratch); use one framework per thread. Nodes are read-only during a cycle; the caller
// applies a decision with assume_pod() afterwards. Within a cycle, Filter and Score may fan out
// over a caller-supplied parallelizer (kube-scheduler's Parallelizer) when every enabled
// Filter/Score plugin declares itself parallel_safe(); the decision is the same at any thread
// count (see run_cycle).
//
// Koordinator/Kubernetes sources: k8s.io/kubernetes pkg/scheduler/schedule_one.go
// (findNodesThatFitPod, numFeasibleNodesToFind, prioritizeNodes, selectHost),
// framework/runtime/framework.go (RunScorePlugins), framework/interface.go (Status codes).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "actors/scheduler/device/device_topology.hpp"
#include "actors/scheduler/numa/node_numa_state.hpp"
#include "actors/scheduler/priority.hpp"
#include "actors/scheduler/reservation_types.hpp"
#include "messages/resources.hpp"
#include "messages/result.hpp"
#include "messages/units.hpp"

namespace colony::scheduler {

// framework.MaxNodeScore.
inline constexpr std::int64_t max_node_score = 100;

// ---------------------------------------------------------------------------------------------
// Resource names
// ---------------------------------------------------------------------------------------------

// Declared in the byte order of their Koordinator names, so enum order == Koordinator's sorted
// ResourceVectorizer order ("cpu" < "koordinator.sh/..." < "kubernetes.io/..." < "memory").
enum class resource_name : std::uint8_t {
  cpu,               // cpu (milli-cores)
  gpu,               // koordinator.sh/gpu (percent of one device, 100 = whole)
  gpu_core,          // koordinator.sh/gpu-core
  gpu_memory,        // koordinator.sh/gpu-memory (bytes)
  gpu_memory_ratio,  // koordinator.sh/gpu-memory-ratio
  batch_cpu,         // kubernetes.io/batch-cpu (milli-cores)
  batch_memory,      // kubernetes.io/batch-memory
  mid_cpu,           // kubernetes.io/mid-cpu (milli-cores)
  mid_memory,        // kubernetes.io/mid-memory
  memory,            // memory (bytes)
  pods,              // pods
};
inline constexpr std::size_t resource_name_count = 11;

[[nodiscard]] std::string_view to_string(resource_name r) noexcept;
// Accepts Koordinator's names byte for byte; nullopt for names Colony does not model.
[[nodiscard]] std::optional<resource_name> parse_resource_name(std::string_view s) noexcept;
// The resource_list field of a resource (gpu = the x100 "nvidia.com/gpu | koordinator.sh/gpu").
[[nodiscard]] constexpr std::int64_t resource_list::*field_of(resource_name r) noexcept {
  switch (r) {
    case resource_name::cpu:
      return &resource_list::cpu_milli;
    case resource_name::gpu:
      return &resource_list::gpu;
    case resource_name::gpu_core:
      return &resource_list::gpu_core;
    case resource_name::gpu_memory:
      return &resource_list::gpu_memory_bytes;
    case resource_name::gpu_memory_ratio:
      return &resource_list::gpu_memory_ratio;
    case resource_name::batch_cpu:
      return &resource_list::batch_cpu_milli;
    case resource_name::batch_memory:
      return &resource_list::batch_memory_bytes;
    case resource_name::mid_cpu:
      return &resource_list::mid_cpu_milli;
    case resource_name::mid_memory:
      return &resource_list::mid_memory_bytes;
    case resource_name::memory:
      return &resource_list::memory_bytes;
    case resource_name::pods:
      return &resource_list::pods;
  }
  return &resource_list::pods;
}
[[nodiscard]] inline std::int64_t get(const resource_list& l, resource_name r) noexcept {
  return l.*field_of(r);
}
[[nodiscard]] inline std::int64_t& at(resource_list& l, resource_name r) noexcept {
  return l.*field_of(r);
}
// Kubernetes "scalar" (extended) resources: everything but cpu, memory and pods.
[[nodiscard]] constexpr bool is_scalar(resource_name r) noexcept {
  return r != resource_name::cpu && r != resource_name::memory && r != resource_name::pods;
}

// A map keyed by resource name, iterated in Koordinator's sorted order.
using resource_map = std::map<resource_name, std::int64_t>;

// TranslateResourceNameByPriorityClass (apis/extension/resource.go): prod/none keep the name;
// batch maps cpu/memory to batch-*; mid to mid-*; anything else (and every name for free)
// maps to the empty name (nullopt).
[[nodiscard]] std::optional<resource_name> translate_resource_name(priority_class pc,
                                                                   resource_name r) noexcept;

// ---------------------------------------------------------------------------------------------
// Node inputs
// ---------------------------------------------------------------------------------------------

// apis/extension AggregationType.
enum class aggregation_type : std::uint8_t { avg, p50, p90, p95, p99 };
[[nodiscard]] std::string_view to_string(aggregation_type t) noexcept;
[[nodiscard]] std::optional<aggregation_type> parse_aggregation_type(std::string_view s) noexcept;

// One (duration, type) entry of status.nodeMetric.aggregatedNodeUsages.
struct aggregated_usage {
  duration_ms duration{0};
  aggregation_type type = aggregation_type::avg;
  resource_list usage;  // all-zero = empty (skipped, as Koordinator skips empty maps)
};

// status.podsMetric[]: usage of one pod as koordlet reported it.
struct pod_metric {
  std::string key;                                 // "namespace/name"
  priority_class priority = priority_class::none;  // as reported (activeProd needs prod here)
  resource_list usage;                             // all-zero = not reported
};

// NodeMetric summary (slo.koordinator.sh/v1alpha1 NodeMetric).
struct node_metric {
  std::optional<event_time> update_time;      // status.updateTime; absent = expired
  std::int64_t report_interval_seconds = 60;  // spec.collectPolicy.reportIntervalSeconds
  bool has_node_metric = true;                // status.nodeMetric != nil
  resource_list node_usage;
  resource_list system_usage;
  std::vector<aggregated_usage> aggregated;
  std::vector<pod_metric> pods;
};

// Node annotation scheduling.koordinator.sh/usage-thresholds (extension.CustomUsageThresholds).
struct custom_aggregated_usage {
  resource_map usage_thresholds;
  std::optional<aggregation_type> usage_aggregation_type;
  duration_ms usage_aggregated_duration{0};
};
struct custom_usage_thresholds {
  resource_map usage_thresholds;
  resource_map prod_usage_thresholds;
  std::optional<custom_aggregated_usage> aggregated_usage;
};

// One GPU of a node (Device CR spec.devices[type=gpu]) with what is allocated on it. A shared
// GPU is one device with remaining core and memory; a whole-GPU request needs it fully free.
struct gpu_device {
  std::int32_t minor = 0;
  bool healthy = true;
  std::int64_t core_total = 100;          // koordinator.sh/gpu-core
  std::int64_t memory_total_bytes = 0;    // koordinator.sh/gpu-memory
  std::int64_t memory_ratio_total = 100;  // koordinator.sh/gpu-memory-ratio
  std::int64_t core_used = 0;
  std::int64_t memory_used_bytes = 0;
  std::int64_t memory_ratio_used = 0;
  std::string pcie_id;  // topology.pcieID (kept for later PCIe affinity)
};

// The result of a device allocation on one GPU (scheduling.koordinator.sh/device-allocated).
struct gpu_allocation {
  std::int32_t minor = 0;
  std::int64_t core = 0;
  std::int64_t memory_bytes = 0;
  std::int64_t memory_ratio = 0;
  bool operator==(const gpu_allocation&) const = default;
};

// ---------------------------------------------------------------------------------------------
// Pod inputs
// ---------------------------------------------------------------------------------------------

// Gang membership and raw gang annotations; parsed by the Coscheduling gang cache with
// Koordinator's fallbacks (invalid values fall back to defaults, as gang.go does).
struct pod_gang_info {
  // Label pod-group.scheduling.sigs.k8s.io, else the deprecated .../name label, else annotation
  // gang.scheduling.koordinator.sh/name. Empty = not a gang pod.
  std::string name;
  // True when the name came from the pod-group.scheduling.sigs.k8s.io label: the gang is then
  // configured by its PodGroup, never by pod annotations.
  bool pod_group_label = false;
  std::optional<std::string> min_available;  // annotation (or deprecated label, which wins)
  std::optional<std::string> total_number;
  std::optional<std::string> mode;          // Strict | NonStrict
  std::optional<std::string> waiting_time;  // Go duration
  std::optional<std::string> groups;        // JSON array of gang ids
  std::optional<std::string> match_policy;  // once-satisfied | only-waiting | waiting-and-running
};

// Device requests by Koordinator name (0 = absent, as a zero quantity is no request).
struct device_request {
  std::int64_t nvidia_gpu = 0;        // nvidia.com/gpu (whole devices)
  std::int64_t amd_gpu = 0;           // amd.com/gpu
  std::int64_t hygon_dcu = 0;         // dcu.com/gpu
  std::int64_t koord_gpu = 0;         // koordinator.sh/gpu (percent)
  std::int64_t gpu_shared = 0;        // koordinator.sh/gpu.shared
  std::int64_t gpu_core = 0;          // koordinator.sh/gpu-core
  std::int64_t gpu_memory = 0;        // koordinator.sh/gpu-memory (bytes)
  std::int64_t gpu_memory_ratio = 0;  // koordinator.sh/gpu-memory-ratio
  std::int64_t huawei_npu_core = 0;   // huawei.com/npu-core
  std::int64_t huawei_npu_cpu = 0;    // huawei.com/npu-cpu
  std::int64_t huawei_npu_dvpp = 0;   // huawei.com/npu-dvpp
  std::int64_t fpga = 0;              // koordinator.sh/fpga
  std::int64_t rdma = 0;              // koordinator.sh/rdma
  bool operator==(const device_request&) const = default;
  [[nodiscard]] bool empty() const { return *this == device_request{}; }
};

struct pod_info {
  std::string key;  // "namespace/name"; the identity used everywhere (queue, gang, metrics)
  std::int32_t priority = 0;                                   // spec.priority
  priority_class priority_class_label = priority_class::none;  // koordinator.sh/priority-class
  qos_class qos_label = qos_class::none;                       // koordinator.sh/qosClass
  std::optional<kube_qos> kube_qos_class;  // absent = derived from requests/limits
  resource_list requests;  // pod-level (init containers and overhead already folded in)
  resource_list limits;
  resource_list overhead;  // spec.overhead (part of requests; ElasticQuotaIgnorePodOverhead)
  device_request devices;
  bool daemonset_owned = false;  // an ownerReference of kind DaemonSet
  pod_gang_info gang;
  std::string quota_name;  // quota.scheduling.koordinator.sh/name (resolved by the quota actor)
  // LoadAwareScheduling customisation (used only with allowCustomizeEstimation):
  // scheduling.koordinator.sh/load-estimated-scaling-factors and -seconds-after-*.
  resource_map custom_scaling_factors;
  std::optional<std::int64_t> custom_seconds_after_pod_scheduled;
  std::optional<std::int64_t> custom_seconds_after_initialized;
  // State of an assigned pod (node_info::pods):
  std::string node_name;
  std::optional<event_time> scheduled_time;    // PodScheduled=True lastTransitionTime
  std::optional<event_time> initialized_time;  // Initialized=True lastTransitionTime
  std::optional<event_time> assigned_time;     // when the scheduler cache saw it (fallback)
  bool terminated = false;
  bool reserve_pod = false;
  std::vector<gpu_allocation> gpu_allocations;
  // DeviceShare's RDMA / FPGA devices of an assigned pod (device-allocated), sorted by (type,
  // minor); the GPU part is gpu_allocations.
  device::device_allocations device_allocations;
  // DeviceShare's annotations as the pod carries them ("" = absent):
  // scheduling.koordinator.sh/device-allocate-hint and device-joint-allocate.
  std::string device_allocate_hint;
  std::string device_joint_allocate;
  // Label quota.scheduling.koordinator.sh/preemptible == "false" (ElasticQuota: limited to
  // min, never a victim).
  bool non_preemptible = false;
  // GPU models the pod may run on (PodSubmitted.gpu_models: openb's gpu_spec); empty = any.
  // Read by GPUModelAffinity, only for a pod that requests a GPU (requests_gpu).
  std::vector<std::string> gpu_models;
  // uid, labels, owner references and reservation annotations, read by the Reservation plugin
  // (reservation.hpp); shared by the pod's copies. nullptr: a pod that matches no owner rule
  // but an empty one, and has no reservation affinity.
  std::shared_ptr<const pod_identity> identity;
  // NodeNUMAResource: the scheduling.koordinator.sh/resource-spec and numa-topology-spec
  // annotations as parsed; an annotation that does not parse leaves its error here instead
  // (PreFilter then fails the pod with it, as Koordinator's GetResourceSpec error does).
  numa::resource_spec cpu_resource_spec;
  numa::numa_topology_spec numa_spec;
  std::string numa_spec_error;
  // Assigned pods: the CPUs NodeNUMAResource gave the pod (resource-status cpuset); empty = none.
  numa::cpu_set cpuset;
  bool holds_numa_resources = false;  // NodeNUMAResource gave it NUMA node resources

  [[nodiscard]] std::string_view namespace_name() const noexcept;
  [[nodiscard]] kube_qos effective_kube_qos() const noexcept;
  [[nodiscard]] priority_class priority_class_with_default() const noexcept;
};

struct node_info {
  // Hot fields first (read for every node of every cycle): name, generation, capacity.
  std::string name;
  // REQUIRES: bumped by whoever mutates pods/metric/allocatable/gpus/annotations, so plugin
  // caches (load-aware per-node estimates) stay exact. assume_pod() and forget_pod() bump it.
  std::uint64_t generation = 0;
  resource_list allocatable;  // incl. batch-*/mid-* (published by the slo-controller) and pods
  resource_list requested;    // Σ requests of pods on the node; requested.pods = count
  resource_list non_zero_requested;  // the same with kube's non-zero defaults for cpu/memory
  // node.koordinator.sh/raw-allocatable: keys present override allocatable for load-aware.
  resource_map raw_allocatable;
  std::vector<pod_info> pods;  // assigned pods (kept for load-aware estimation)
  std::vector<gpu_device> gpus;
  // The node's Device object (scheduling.koordinator.sh/v1alpha1), nullptr when it has none.
  // With one, DeviceShare allocates jointly with NUMA / PCIe locality; gpus then mirror its
  // GPUs. device_usage holds what pods hold of its RDMA NICs and FPGAs (GPUs: gpus' *_used).
  std::shared_ptr<const device::device_model> device_model;
  device::node_device_usage device_usage;
  std::optional<node_metric> metric;
  std::optional<custom_usage_thresholds>
      custom_thresholds;  // scheduling.koordinator.sh/usage-thresholds
  // Label node.koordinator.sh/gpu-model ("" = none); read by GPUModelAffinity.
  std::string gpu_model;
  // Reservations scheduled on this node (status.nodeName), sorted by name; the host keeps the
  // accounting rule of reservation.hpp (requested includes what active ones still hold).
  std::vector<reservation_info> reservations;
  // NodeNUMAResource: topology options, labels, amplification and the CPUs pods hold.
  numa::node_numa_state numa;
};

// kube-scheduler's non-zero request defaults (schedutil.DefaultMilliCPURequest / MemoryRequest),
// used by NodeResourcesFit scoring and node_info::non_zero_requested.
inline constexpr std::int64_t default_milli_cpu_request = 100;
inline constexpr std::int64_t default_memory_request = 200 * 1024 * 1024;

// ---------------------------------------------------------------------------------------------
// Framework contract
// ---------------------------------------------------------------------------------------------

// framework.Code.
enum class status_code : std::uint8_t {
  success,
  error,
  unschedulable,
  unschedulable_and_unresolvable,
  wait,
  skip,
};
[[nodiscard]] std::string_view to_string(status_code c) noexcept;

struct status {
  status_code code = status_code::success;
  // Short reason used to aggregate failures over nodes. REQUIRES: static storage or storage
  // owned by the plugin for its lifetime (no per-node allocation on the hot path).
  std::string_view reason;
  std::string detail;  // optional owned message (PreFilter/Permit/Reserve)

  [[nodiscard]] bool ok() const noexcept { return code == status_code::success; }
  [[nodiscard]] std::string message() const {
    return detail.empty() ? std::string(reason) : detail;
  }
  static status success() { return {}; }
  static status unschedulable(std::string_view reason, std::string detail = {}) {
    return {status_code::unschedulable, reason, std::move(detail)};
  }
  static status unresolvable(std::string_view reason, std::string detail = {}) {
    return {status_code::unschedulable_and_unresolvable, reason, std::move(detail)};
  }
  static status fail(std::string detail) { return {status_code::error, {}, std::move(detail)}; }
  static status skip() { return {status_code::skip, {}, {}}; }
};

// Per-cycle data of one plugin (framework.StateData).
struct cycle_data {
  virtual ~cycle_data() = default;
};

// framework.CycleState: one slot per plugin of the profile. Reuse one cycle_state across
// cycles: slots keep their allocations, plugins overwrite them in PreFilter.
class cycle_state {
 public:
  template <class T>
  T& slot(std::size_t i) {
    if (i >= slots_.size()) slots_.resize(i + 1);
    if (!slots_[i]) slots_[i] = std::make_unique<T>();
    return static_cast<T&>(*slots_[i]);
  }
  template <class T>
  [[nodiscard]] T* find(std::size_t i) const {
    return i < slots_.size() ? static_cast<T*>(slots_[i].get()) : nullptr;
  }
  // What the framework learnt in this cycle, for plugins that run later (Reserve, Permit).
  std::uint64_t cycle = 0;
  // DeviceShare's allocation for the chosen node (copied into the decision).
  std::vector<gpu_allocation> gpu_allocations;
  device::device_allocations device_allocations;  // its RDMA / FPGA part
  // Waiting pods a plugin rejected from Unreserve (a Strict gang falls as a whole); the
  // framework moves them into decision::rejected_pods. run_unreserve() callers read them here.
  std::vector<std::string> rejected_pods;
  // The Reservation plugin's PreFilter: per node, what the reservations the pod matched there
  // still hold (pods included), which NodeResourcesFit adds back to the node's free resources
  // (Koordinator restores matched reservations into the NodeInfo). Sorted by node pointer;
  // empty for most pods.
  std::vector<std::pair<const node_info*, resource_list>> reservation_relief;
  // The reservation the pod consumes on the chosen node (Reservation's Reserve); "" = none.
  std::string reservation;
  // NodeNUMAResource's cpuset and NUMA node resources for the chosen node (Reserve; copied into
  // the decision).
  numa::cpu_set cpuset;
  std::vector<numa::numa_amount> numa_resources;
  [[nodiscard]] const resource_list* relief_for(const node_info& node) const noexcept;

 private:
  std::vector<std::unique_ptr<cycle_data>> slots_;
};

// Permit's answer (framework.Status + timeout). allowed/rejected name other waiting pods the
// plugin releases or rejects (Coscheduling allows or rejects the whole gang group).
struct permit_result {
  status st;
  duration_ms wait{0};
  std::vector<std::string> allowed_pods;
  std::vector<std::string> rejected_pods;
};

// PostFilter's answer: preemption (ElasticQuota, later) nominates a node and victims; gang
// plugins reject waiting members.
struct post_filter_result {
  status st = {status_code::unschedulable, {}, {}};
  std::optional<std::string> nominated_node;
  std::vector<std::string> victims;
  std::vector<std::string> rejected_pods;
};

// ---------------------------------------------------------------------------------------------
// Queueing hints (kube's QueueingHint, SchedulerQueueingHints; see scheduling_queue.hpp)
// ---------------------------------------------------------------------------------------------

// fwk.QueueingHint (k8s pkg/scheduler/framework/types.go, now staging/src/k8s.io/kube-scheduler/
// framework): QueueSkip = the event cannot make the rejected pod schedulable; Queue = it may.
enum class queueing_hint : std::uint8_t { skip, queue };

// fwk.ClusterEvent, reduced to what Colony's components see: what changed, on which node.
enum class cluster_event_type : std::uint8_t {
  node_add,             // NodeAdd: a node registered
  node_update,          // NodeUpdate: allocatable (incl. batch/mid), labels, GPUs, conditions
  assigned_pod_delete,  // AssignedPodDelete: a pod left the node (finished, evicted, unassumed)
  wildcard,             // WildCardEvent: anything; every rejected pod moves
};
struct cluster_event {
  cluster_event_type type = cluster_event_type::wildcard;
  // The node the event changed, in its state after the event, and its index in the node list
  // the cycles run over. nullptr for a wildcard event.
  const node_info* node = nullptr;
  std::size_t node_index = 0;
};

// Bit flags of the extension points a plugin implements.
enum extension_point : std::uint32_t {
  ep_pre_filter = 1u << 0,
  ep_filter = 1u << 1,
  ep_score = 1u << 2,
  ep_reserve = 1u << 3,
  ep_permit = 1u << 4,
  ep_post_filter = 1u << 5,
  ep_pre_enqueue = 1u << 6,
  // Not a plugin point of its own (Score plugins normalize): the recorder's label for
  // NormalizeScore calls.
  ep_score_normalize = 1u << 7,
};

// A scheduler plugin. Override the extension points listed by points(); the framework calls
// only those. Plugins may keep caches (they are single-threaded, see framework). ElasticQuota
// (PreFilter + Reserve/Unreserve + PostFilter), Reservation (PreFilter narrowing + Filter +
// Score + Reserve) and NodeNUMAResource (Filter + Score + Reserve writing cpusets) fit the same
// shape.
class plugin {
 public:
  virtual ~plugin() = default;
  [[nodiscard]] virtual std::string_view name() const noexcept = 0;
  [[nodiscard]] virtual std::uint32_t points() const noexcept = 0;

  // The framework assigns each plugin its cycle_state slot when the profile is built.
  void set_slot(std::size_t s) noexcept { slot_ = s; }
  [[nodiscard]] std::size_t slot() const noexcept { return slot_; }

  // PreEnqueue: may the pod enter activeQ at all (Coscheduling's gang gate)?
  virtual status pre_enqueue(const pod_info&, event_time) { return {}; }
  // PreFilter: per-pod checks and precomputation. skip = this plugin's Filter is skipped.
  // Status unschedulable fails the pod on every node. nodes = the whole node list.
  virtual status pre_filter(cycle_state&, const pod_info&, std::span<const node_info>, event_time) {
    return {};
  }
  virtual status filter(cycle_state&, const pod_info&, const node_info&, event_time) { return {}; }
  // Raw score of one feasible node. REQUIRES: depends only on the pod, this node and what
  // PreFilter stored (the framework scores nodes in chunks while it is still filtering).
  virtual std::int64_t score(cycle_state&, const pod_info&, const node_info&, event_time) {
    return 0;
  }
  // Score of many feasible nodes at once: out[j] = score(nodes[indices[j]]). The framework
  // calls this one; plugins override it to hoist per-pod work and the virtual call out of the
  // node loop. REQUIRES: out.size() == indices.size(); same results as score() per node.
  virtual void score_nodes(cycle_state& st, const pod_info& pod, std::span<const node_info> nodes,
                           std::span<const std::uint32_t> indices, std::span<std::int64_t> out,
                           event_time now) {
    for (std::size_t j = 0; j < indices.size(); ++j)
      out[j] = score(st, pod, nodes[indices[j]], now);
  }
  // ScoreExtensions.NormalizeScore over the raw scores of all scored nodes (in place).
  // Return false when the plugin has none (the framework then skips the call).
  virtual bool normalize_score(cycle_state&, const pod_info&, std::span<std::int64_t>) {
    return false;
  }
  virtual status reserve(cycle_state&, const pod_info&, const node_info&, event_time) { return {}; }
  virtual void unreserve(cycle_state&, const pod_info&, const node_info&, event_time) {}
  virtual permit_result permit(cycle_state&, const pod_info&, const node_info&, event_time) {
    return {};
  }
  virtual post_filter_result post_filter(cycle_state&, const pod_info&, event_time) { return {}; }

  // QueueingHintFn for node events, in Colony's node-local form: after `ev` changed ev.node,
  // could the pod now pass this plugin's Filter on that node? Answer skip only when it certainly
  // cannot. Called outside a cycle: it must be cheap and may not read PreFilter state. Default:
  // queue (no hint, as a kube plugin that registers no QueueingHintFn for the event).
  [[nodiscard]] virtual queueing_hint filter_hint(const pod_info&, const cluster_event&) const {
    return queueing_hint::queue;
  }

  // True when Filter and score_nodes may run concurrently on different nodes of one cycle, once
  // PreFilter has returned (on the cycle's thread): they then read the pod, the node, PreFilter's
  // state and the plugin's own settings, and write nothing but per-node slots no other node
  // uses. Default: false (the framework then filters and scores on one thread).
  [[nodiscard]] virtual bool parallel_safe() const noexcept { return false; }

 private:
  std::size_t slot_ = 0;
};

// helper.DefaultNormalizeScore: scale so the highest score becomes max; reverse flips.
void default_normalize_score(std::int64_t max_priority, bool reverse,
                             std::span<std::int64_t> scores) noexcept;

// ---------------------------------------------------------------------------------------------
// Profile + cycle
// ---------------------------------------------------------------------------------------------

struct plugin_entry {
  std::shared_ptr<plugin> impl;
  std::uint32_t enabled = 0;  // subset of impl->points() the profile enables
  std::int64_t weight = 1;    // score weight
};

// Times the framework's extension points and plugin calls for metrics: kube-scheduler's
// FrameworkExtensionPointDuration and PluginExecutionDuration (pkg/scheduler/metrics/metrics.go,
// recorded in pkg/scheduler/framework/runtime/framework.go). The host supplies the clock, so the
// policy library reads none; what a recorder measures never reaches a decision, and a cycle
// decides the same with or without one.
//
// Extension points timed every cycle: PreFilter, PostFilter, Score (every score_nodes and
// NormalizeScore call of the cycle, summed: Colony scores feasible nodes in chunks while it
// filters), Reserve, Permit. Filter has no extension-point figure, as in kube (it runs per node).
// Plugin calls are timed only in cycles the recorder samples (kube: 10 %,
// pluginMetricsSamplePercent): pre_filter, filter (one call per node), score_nodes (one call per
// chunk of nodes), normalize_score ("ScoreExtensionNormalize"), reserve, permit, post_filter.
// plugin() may be called from the parallelizer's threads at once; the rest from the cycle's
// thread.
class framework_recorder {
 public:
  virtual ~framework_recorder() = default;
  // A monotonic clock in nanoseconds.
  [[nodiscard]] virtual std::int64_t now_ns() noexcept = 0;
  // Whether this cycle's plugin calls are timed; asked once at the start of each cycle.
  [[nodiscard]] virtual bool sample_cycle() noexcept = 0;
  // ep: an extension_point bit, or ep_score_normalize.
  virtual void extension_point(std::uint32_t ep, status_code code, std::int64_t ns) noexcept = 0;
  // index: the plugin's position in framework::plugins(); name: its name.
  virtual void plugin(std::size_t index, std::string_view name, std::uint32_t ep, status_code code,
                      std::int64_t ns) noexcept = 0;
};

// kube's label for an extension point ("PreFilter", "Filter", "Score",
// "ScoreExtensionNormalize", "Reserve", "Permit", "PostFilter", "PreEnqueue"); "" for others.
[[nodiscard]] std::string_view extension_point_label(std::uint32_t ep) noexcept;

// How selectHost picks among the feasible nodes with the best total score.
enum class tie_break : std::uint8_t {
  // The lowest tie_break_key(seed, pod key, node name): Colony's deterministic stand-in for
  // kube-scheduler's reservoir sampling (pkg/scheduler/schedule_one.go selectHost), which draws
  // at random.
  seeded,
  // The node with the smallest name: the FGD authors' vendored kube-scheduler
  // (hkust-adsl/kubernetes-scheduler-simulator vendor/k8s.io/kubernetes/pkg/scheduler/core/
  // generic_scheduler.go selectHost, "for reproducibility, choose the smallest lexicographical
  // order"), so their runs are reproduced decision for decision (docs/results.md E).
  node_name,
};
[[nodiscard]] std::string_view to_string(tie_break t) noexcept;
// "seeded" or "nodeName"; invalid_input otherwise.
[[nodiscard]] result<tie_break> parse_tie_break(std::string_view s);

// koord-scheduler's --feature-gates that Colony's scheduler reads.
struct scheduler_feature_gates {
  bool elastic_quota_ignore_pod_overhead = false;  // ElasticQuotaIgnorePodOverhead
};
// "ElasticQuotaIgnorePodOverhead=true,..." (component-base's --feature-gates syntax); invalid_input
// naming an unknown gate or a value other than true / false.
[[nodiscard]] result<scheduler_feature_gates> parse_scheduler_feature_gates(std::string_view s);

struct framework_options {
  std::string scheduler_name = "koord-scheduler";
  // 0 = adaptive (50 - nodes/125, at least 5 %); 100 = every node. Default: 0 (kube-scheduler
  // KubeSchedulerConfiguration.percentageOfNodesToScore unset).
  std::int32_t percentage_of_nodes_to_score = 0;
  // Seed of the tie-break between equally scored nodes (see tie_break_key).
  std::uint64_t seed = 0;
  // The rule among equally scored nodes. Default: seeded.
  tie_break ties = tie_break::seeded;
  // How many runner-up nodes a decision lists.
  std::size_t top_n = 3;
  // kube-scheduler's Parallelizer: calls fn(i) for every i in [0, n), on any threads, and
  // returns once all calls have returned. Empty: one thread. Default: empty.
  std::function<void(std::size_t n, const std::function<void(std::size_t)>& fn)> parallelizer;
  // Nodes per parallel Filter / Score task. Default: 64 (Colony choice: a task is then a few
  // microseconds, well above the cost of handing it to a thread).
  std::size_t parallel_chunk = 64;
  // Timing for metrics (framework_recorder). Default: none (nothing is timed).
  std::shared_ptr<framework_recorder> recorder;
};

// One plugin's contribution to a node's total.
struct plugin_score {
  std::string_view plugin;
  std::int64_t raw = 0;         // from Score
  std::int64_t normalized = 0;  // after NormalizeScore (== raw without one)
  std::int64_t weighted = 0;    // normalized * weight
};

struct node_candidate {
  std::string node;
  std::size_t node_index = 0;
  std::int64_t total = 0;
  std::uint64_t tie_key = 0;  // tie_break_key (seeded); 0 under tie_break::node_name
  std::vector<plugin_score> scores;
};

struct failure_reason {
  std::string plugin;
  std::string reason;
  std::size_t nodes = 0;
};

enum class outcome : std::uint8_t {
  scheduled,      // Permit allowed: bind now
  waiting,        // Permit said wait (gang): reserved, waiting for the rest of the group
  unschedulable,  // no feasible node, or PreFilter/Permit refused
  error,          // a plugin failed (Reserve, score out of range)
};
[[nodiscard]] std::string_view to_string(outcome o) noexcept;

struct decision {
  outcome result = outcome::unschedulable;
  std::string pod_key;
  event_time time{0};
  // Chosen node (scheduled / waiting).
  std::string node;
  std::size_t node_index = 0;
  std::int64_t total_score = 0;
  std::vector<plugin_score> scores;          // of the chosen node, in profile order
  std::vector<node_candidate> alternatives;  // up to top_n runners-up, best first
  // Unschedulable: reasons with the number of nodes that gave each, most frequent first.
  std::vector<failure_reason> failures;
  // The extension point that refused the pod (ep_pre_filter, ep_filter = kube's FitError: every
  // node evaluated and rejected, ep_reserve, ep_permit); 0 when nothing refused it or there
  // were no nodes.
  std::uint32_t failed_at = 0;
  std::string message;  // PreFilter / Reserve / Permit message, or kube's FitError summary
  std::size_t evaluated_nodes = 0;  // nodes filtered in this cycle
  std::size_t feasible_nodes = 0;   // nodes that passed every filter (the scored sample)
  std::size_t total_nodes = 0;
  // Permit / PostFilter effects.
  duration_ms wait{0};
  std::vector<std::string> allowed_pods;   // waiting pods to bind now (gang released)
  std::vector<std::string> rejected_pods;  // waiting pods to unreserve (gang rejected)
  std::optional<std::string> nominated_node;
  std::vector<std::string> victims;
  std::vector<gpu_allocation> gpu_allocations;    // DeviceShare's per-device allocation
  device::device_allocations device_allocations;  // its RDMA / FPGA devices (with VFs)
  std::string reservation;  // the reservation the pod consumes (Reservation's Reserve); "" none
  numa::cpu_set cpuset;     // NodeNUMAResource's CPUs for the pod (resource-status); empty none
  // NodeNUMAResource's NUMA node resources for the pod (resource-status numaNodeResources),
  // ascending node id; empty none.
  std::vector<numa::numa_amount> numa_resources;
};

// numFeasibleNodesToFind (schedule_one.go): fewer than 100 nodes -> all; percentage 0 ->
// 50 - n/125 clamped at 5; n * pct / 100, at least 100.
[[nodiscard]] std::size_t num_feasible_nodes_to_find(std::int32_t percentage,
                                                     std::size_t num_all_nodes) noexcept;

// The documented tie-break (tie_break::seeded): among nodes with the same total score, the lowest
// tie_break_key(seed, pod key, node name) wins (splitmix64 over FNV-1a of both strings);
// equal keys fall back to the lower node index. Same inputs -> same choice, no hash-map order.
// Under tie_break::node_name the smallest name wins, then the lower node index.
[[nodiscard]] std::uint64_t tie_break_key(std::uint64_t seed, std::string_view pod_key,
                                          std::string_view node_name) noexcept;
[[nodiscard]] std::uint64_t fnv1a64(std::string_view s) noexcept;
[[nodiscard]] std::uint64_t mix64(std::uint64_t x) noexcept;

class framework {
 public:
  explicit framework(framework_options opts = {}) : opts_(std::move(opts)) {}

  // Adds a plugin; enabled defaults to every point it implements.
  void add(std::shared_ptr<plugin> p, std::int64_t score_weight = 1,
           std::optional<std::uint32_t> enabled = std::nullopt);

  [[nodiscard]] const framework_options& options() const noexcept { return opts_; }
  framework_options& options() noexcept { return opts_; }
  [[nodiscard]] const std::vector<plugin_entry>& plugins() const noexcept { return plugins_; }
  [[nodiscard]] plugin* find(std::string_view name) const noexcept;
  template <class T>
  [[nodiscard]] T* find_as(std::string_view name) const noexcept {
    return dynamic_cast<T*>(find(name));
  }

  // kube-scheduler's nextStartNodeIndex: where the next cycle starts filtering.
  [[nodiscard]] std::size_t next_start_node_index() const noexcept { return next_start_; }
  void set_next_start_node_index(std::size_t i) noexcept { next_start_ = i; }

  // Runs every enabled PreEnqueue plugin (the queue's gate).
  [[nodiscard]] status run_pre_enqueue(const pod_info& pod, event_time now);

  // The node-local QueueingHint of the whole profile for a pod that Filter rejected on every
  // node (a FitError): skip as soon as one enabled Filter plugin's filter_hint says the pod
  // cannot pass it on ev.node, else queue. Sound because a node event changes only ev.node, and
  // the pod can become schedulable there only by passing every Filter there. Stricter than
  // kube, which asks only the rejecting plugins (a pod rejected for cpu on one node and for GPUs
  // on another is not retried when cpu alone frees up on the GPU-less one). Wildcard events and
  // a null node: queue.
  [[nodiscard]] queueing_hint filter_hint(const pod_info& pod, const cluster_event& ev) const;

  // Undoes Reserve for a pod that was waiting at Permit and got rejected or timed out.
  void run_unreserve(cycle_state& st, const pod_info& pod, const node_info& node, event_time now);

  [[nodiscard]] decision run_cycle(cycle_state& st, const pod_info& pod,
                                   std::span<const node_info> nodes, event_time now);

 private:
  framework_options opts_;
  std::vector<plugin_entry> plugins_;
  std::size_t next_start_ = 0;
  // Scratch reused across cycles (no per-cycle allocation on the hot path).
  std::vector<std::uint32_t> feasible_;
  std::vector<std::uint32_t> reserved_first_;  // nodes holding the pod's matched reservations
  std::vector<std::size_t> score_plugins_;
  std::vector<std::size_t> filter_plugins_;
  std::vector<std::int64_t> raw_;    // [score plugin][feasible node]
  std::vector<std::int64_t> norm_;   // same shape, after NormalizeScore
  std::vector<std::int64_t> total_;  // per feasible node
  std::vector<std::pair<std::size_t, std::string_view>> fail_scratch_;
  // Parallel Filter: per node of the current window, the first failing plugin (or npos) and
  // its status.
  struct filter_verdict {
    std::size_t plugin = 0;
    status st;
  };
  std::vector<filter_verdict> window_;
  [[nodiscard]] bool parallel_ok(const std::vector<std::size_t>& score_plugins) const noexcept;
};

// Runs a profile over a node list (the function the brief names): PreFilter, Filter with
// percentageOfNodesToScore from the rotating start index, Score x weight (NormalizeScore
// first), selection with the seeded tie-break, Reserve and Permit on the chosen node; PostFilter
// when nothing fits. `now` is the event time (ms) of the cycle.
[[nodiscard]] inline decision scheduling_cycle(framework& fwk, cycle_state& st, const pod_info& pod,
                                               std::span<const node_info> nodes, event_time now) {
  return fwk.run_cycle(st, pod, nodes, now);
}

// Applies a scheduled/waiting decision to the read model, as the scheduler cache's AssumePod
// does: requests, non-zero requests, the pod (with assigned_time = now), GPU allocations, the
// cpuset (NodeNUMAResource's node allocation, under the pod's key and exclusive policy).
void assume_pod(node_info& node, const pod_info& pod, const decision& d, event_time now);
// Removes a pod from a node (delete, unreserve, forget); returns false if it was not there.
bool forget_pod(node_info& node, std::string_view pod_key);

// Non-zero cpu/memory of a pod (schedutil.GetNonzeroRequests).
[[nodiscard]] resource_list non_zero_requests(const pod_info& pod) noexcept;

}  // namespace colony::scheduler
