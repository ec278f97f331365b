// node_resource.hpp: Koordinator's slo-controller "noderesource" computation of the co-location
// resources kubernetes.io/batch-cpu, batch-memory, mid-cpu and mid-memory for one node, with the
// formula terms that produced each value, and the decision whether to write the node.
//
// Koordinator sources (commit a7a1b76), cited per function below:
//   pkg/slo-controller/noderesource/plugins/batchresource/plugin.go   (Calculate, calculateOnNode,
//                                                                      isDegradeNeeded, Prepare,
//                                                                      NeedSync)
//   pkg/slo-controller/noderesource/plugins/midresource/plugin.go     (Calculate, getUnallocated,
//   ...) pkg/slo-controller/noderesource/plugins/util/util.go (CalculateBatchResourceByPolicy,
//                                                                      CalculateMidResourceBy*,
//                                                                      Prepare...)
//   pkg/slo-controller/noderesource/resource_calculator.go            (isNodeResourceSyncNeeded)
//   pkg/util/resource.go, pkg/util/node.go                            (quantity arithmetic,
//   reservations)
//
// Everything here is a pure function of plain structs: time (`now`) is an argument, nothing is read
// from a clock. Output order is fixed (batch-cpu, batch-memory, mid-cpu, mid-memory; terms in
// formula order). Thread-safe: no shared state; a calculator_scratch must not be shared between
// threads.
//
// Units: CPU in milli-cores, memory in bytes (messages/resources.hpp). The batch-cpu / mid-cpu
// extended resources are integer quantities whose value IS the milli-core count.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "actors/slo_controller/colocation_strategy.hpp"
#include "messages/priority.hpp"
#include "messages/qos.hpp"
#include "messages/quantity.hpp"
#include "messages/resources.hpp"
#include "messages/result.hpp"
#include "messages/units.hpp"

namespace colony::slo_controller {

// --- vocabulary (apis/extension/priority.go, qos.go) ---

// Koordinator priority and QoS classes, their names and GetDefaultPriorityByPriorityClass: one
// definition in messages/priority.hpp, messages/qos.hpp, named here. Pods carry their
// class-with-default (GetPodPriorityClassWithDefault) and QoS-with-default
// (GetPodQoSClassWithDefault, A.2) already derived by the caller (admission owns the derivation).
using colony::get_default_priority_by_priority_class;
using colony::get_pod_priority_class_by_name;
using colony::priority_class;
using colony::qos_class;
using colony::to_string;

enum class pod_phase : std::uint8_t { pending, running, succeeded, failed, unknown };

// --- inputs ---

// Annotation node.koordinator.sh/reservation, parsed (apis/extension/node_reservation.go):
// `resources` plus `reservedCPUs`; a non-empty cpuset replaces the cpu entry by its CPU count.
struct node_reservation {
  std::optional<std::int64_t> cpu_milli;     // resources.cpu
  std::optional<std::int64_t> memory_bytes;  // resources.memory
  std::string reserved_cpus;                 // e.g. "0-3,8"; "" = none
};

// One entry of annotation node.koordinator.sh/thirdPartyAllocations (apis/slo/v1alpha1/node.go).
struct third_party_allocation {
  std::string name;  // e.g. "hadoop-yarn"
  priority_class priority = priority_class::none;
  resource_list resources;  // batch_cpu_milli / batch_memory_bytes are read
};

struct node_input {
  std::string name;
  resource_list capacity;     // status.capacity: cpu_milli, memory_bytes (the formula's base)
  resource_list allocatable;  // status.allocatable: cpu_milli, memory_bytes (kubelet reservation)
  node_labels labels;         // for nodeConfigs selection and the *-ratio labels (C.7)
  // Parsed node.koordinator.sh/reservation; nullopt if absent or unparsable (Koordinator ignores
  // it).
  std::optional<node_reservation> annotation_reservation;
  // Raw node.koordinator.sh/colocation-strategy annotation, if any.
  std::optional<std::string> colocation_strategy_annotation;
  // node.koordinator.sh/cpu-normalization-ratio, parsed; applied to batch-cpu only when > 1.0.
  std::optional<double> cpu_normalization_ratio;
  // node.koordinator.sh/thirdPartyAllocations; nullopt if absent or unparsable.
  std::optional<std::vector<third_party_allocation>> third_party_allocations;
};

// Pods and pod metrics are matched by namespace/name, exactly as Koordinator's podMetricMap. To
// keep a round over thousands of nodes from chasing every name string, callers may intern the keys
// once (when a pod or a metric enters the system) and pass the ids: when EVERY pod and metric of a
// node carries a non-zero key_id, matching compares ids only; otherwise it compares the strings.
// Ids must come from one pod_key_interner, so equal ids <=> equal keys, and the two paths agree
// exactly. Not thread-safe (one interner per actor).
//
// Reference counted, so that a long-running actor does not grow as pods churn: each intern() takes
// one reference to the key, release(id) gives one back, and a key is forgotten when its last
// reference goes. Id rule (deterministic): a key that is not held gets the next id of a counter
// that starts at 1 and only grows; freed ids are NEVER reused, so a key that is forgotten and
// interned again gets a new id. Without release() this is 1, 2, ... in first-intern order. Results
// never depend on id values (ids are only compared for equality), and ids never reach the log.
class pod_key_interner {
 public:
  // The id of ns/name, taking one reference to it.
  [[nodiscard]] std::uint64_t intern(std::string_view ns, std::string_view name);
  // The id of ns/name if it is held, else 0; takes no reference.
  [[nodiscard]] std::uint64_t find(std::string_view ns, std::string_view name);
  // find() for a batch: ids[i] = find(keys[i]) (ids.size() >= keys.size()). Faster than one find()
  // per key when the keys are cold: the batch's memory accesses overlap.
  void find_many(std::span<const std::pair<std::string_view, std::string_view>> keys,
                 std::span<std::uint64_t> ids);
  // Takes one more reference to a held id (what intern() would take); false if id is not held.
  bool retain(std::uint64_t id);
  // Gives back one reference taken by intern() or retain(); the key is forgotten with its last
  // reference. Ignores 0 and ids not held (so a caller may release "no id").
  void release(std::uint64_t id);
  // Keys held now.
  [[nodiscard]] std::size_t size() const noexcept { return held_; }
  // References held to id's key (0 if not held).
  [[nodiscard]] std::uint64_t references(std::uint64_t id) const;
  // The namespace and name of a held id (views into the interner, valid until the key is
  // forgotten), or nullopt.
  [[nodiscard]] std::optional<std::pair<std::string_view, std::string_view>> key_of(
      std::uint64_t id) const;
  // The id the next new key gets.
  [[nodiscard]] std::uint64_t next_id() const noexcept { return next_; }

 private:
  // Two open-addressing tables (linear probing, at most half full, backward-shift deletion) over
  // one entry store: a lookup touches one slot run and one entry instead of a chain of list nodes
  // (a round's lookups are cache misses). Lookup only, never iterated: layout and storage reuse
  // affect no result and no id. Sized for the most keys ever held at once (they do not shrink).
  struct entry {
    std::uint64_t id = 0;  // 0 = free storage
    std::uint64_t refs = 0;
    std::uint64_t hash = 0;
    std::string key;  // "<ns length>:<ns><name>"
  };
  struct key_slot {
    std::uint64_t hash = 0;
    std::uint32_t entry = 0;  // index + 1; 0 = empty
  };
  struct id_slot {
    std::uint64_t id = 0;  // 0 = empty
    std::uint32_t entry = 0;
  };
  [[nodiscard]] std::size_t find_entry(std::uint64_t hash) const;  // entries_.size() if absent
  [[nodiscard]] std::size_t entry_of(std::uint64_t id) const;      // entries_.size() if absent
  void grow();
  void erase(std::size_t e);

  std::vector<entry> entries_;
  std::vector<std::uint32_t> free_;  // free entry storage (LIFO)
  std::vector<key_slot> by_key_;     // power-of-two size
  std::vector<id_slot> by_id_;       // same size
  std::size_t held_ = 0;
  std::uint64_t next_ = 1;
  std::string buf_;  // the length-prefixed key of the last lookup (no allocation per lookup)
  // find_many's buffers: the batch's keys back to back, their ends, hashes and candidates.
  std::string batch_keys_;
  std::vector<std::size_t> batch_ends_;
  std::vector<std::uint64_t> batch_hashes_;
  std::vector<std::size_t> batch_entries_;
};

// Field order is deliberate: what every round reads (key hash, classes, phase, request) sits in the
// first cache line; the names are read only when keys are not interned.
struct pod_input {
  std::uint64_t key_id = 0;                        // pod_key_interner id of ns/name, or 0
  priority_class priority = priority_class::none;  // class-with-default
  qos_class qos = qos_class::none;                 // QoS-with-default
  pod_phase phase = pod_phase::running;
  // Pod request by Kubernetes rules (sum of containers, max with init containers, plus overhead):
  // cpu_milli and memory_bytes. See pod_request().
  resource_list requests;
  std::string ns;  // namespace
  std::string name;
  resource_list limits;  // carried for explanation/actors; the formulas read requests only
};

// Kubernetes pod-request rules (k8s.io/component-helpers resource.PodRequests), cpu and memory:
// max(sum(containers), max(init containers)) + overhead.
[[nodiscard]] resource_list pod_request(const std::vector<resource_list>& containers,
                                        const std::vector<resource_list>& init_containers,
                                        const resource_list& overhead);

// Field order: what a round reads (key, priority, usage cpu/memory) sits in the first 32 bytes.
struct pod_metric {
  std::uint64_t key_id = 0;  // pod_key_interner id of ns/name, or 0
  // The metric's own `priority` field (class-with-default as koordlet saw it); used only for
  // metrics whose pod is not in the pod list ("dangling").
  priority_class priority = priority_class::none;
  qos_class qos = qos_class::none;
  resource_list usage;  // podUsage cpu_milli / memory_bytes
  std::string ns;
  std::string name;
};

// The fields of a pod that a round reads, without its strings (hot/cold split). An actor that keeps
// these beside its pod records (refreshed when a pod changes) streams 32 bytes per pod per round
// instead of a whole pod_input (256 bytes: names, limits, full resource lists). Matching is by
// key_id only, so key_id must be the pod_key_interner id of ns/name (the same interner as the pod
// metrics'); results are then exactly those of the pod_input path.
struct pod_sample {
  std::uint64_t key_id = 0;
  std::int64_t cpu_milli = 0;  // request (pod_input::requests)
  std::int64_t memory_bytes = 0;
  priority_class priority = priority_class::none;
  qos_class qos = qos_class::none;
  pod_phase phase = pod_phase::running;
};
[[nodiscard]] pod_sample sample_of(const pod_input& p) noexcept;

// The fields of a pod metric that a round reads (see pod_sample).
struct pod_metric_sample {
  std::uint64_t key_id = 0;
  std::int64_t cpu_milli = 0;  // usage (pod_metric::usage)
  std::int64_t memory_bytes = 0;
  priority_class priority = priority_class::none;
  qos_class qos = qos_class::none;
};
[[nodiscard]] pod_metric_sample sample_of(const pod_metric& m) noexcept;

struct host_app_metric {
  std::string name;
  resource_list usage;
  priority_class priority = priority_class::none;
};

// status.nodeMetric.aggregatedNodeUsages[] entry. Carried for the actor; the batch/mid formulas do
// not read it (Koordinator's calculateOnNode reads nodeUsage and systemUsage only).
struct aggregated_usage {
  duration_ms duration{};
  resource_list avg, p50, p90, p95, p99;
};

// A ResourceList that may lack the cpu or the memory key (IsValidNodeUsage distinguishes).
struct usage_pair {
  std::optional<std::int64_t> cpu_milli;
  std::optional<std::int64_t> memory_bytes;
};

// NodeMetric (apis/slo/v1alpha1/nodemetric_types.go), the parts the slo-controller reads.
struct node_metric_input {
  std::optional<event_time> update_time;  // status.updateTime; absent => degrade
  usage_pair node_usage;                  // status.nodeMetric.nodeUsage
  resource_list system_usage;             // status.nodeMetric.systemUsage (absent keys = 0)
  std::vector<aggregated_usage> aggregated_node_usages;
  std::vector<pod_metric> pod_metrics;            // status.podsMetric
  std::vector<host_app_metric> host_app_metrics;  // status.hostApplicationMetric
  std::optional<resource_list> prod_reclaimable;  // status.prodReclaimableMetric.resource
};

// --- outputs ---

// One term of an explanation: a named quantity the formula used, in its unit, with a short text.
// Names, units and texts are static strings (no allocation per term).
struct term {
  std::string_view name;   // e.g. "nodeCapacity", "nodeSafetyMargin", "cpuReclaimThresholdPercent"
  std::int64_t value = 0;  // milli-cores, bytes, percent or 0 for textual terms
  std::string_view unit;   // "milli-cpu", "bytes", "percent", "minutes", "" (textual)
  std::string_view text;   // what it is / the policy name
};

// A fixed-capacity list of terms: explanations are produced for every node on every round, so they
// must not allocate. Capacity covers the longest formula (mid: 17 terms); extra terms are dropped
// and counted in `dropped` (a bug if ever non-zero).
class term_list {
 public:
  static constexpr std::size_t capacity = 24;
  term_list() noexcept {}  // leaves the storage uninitialised: only [0, size) is ever read
  void push_back(const term& t) noexcept {
    if (size_ < capacity) {
      store_.items[size_++] = t;
    } else {
      ++dropped_;
    }
  }
  void clear() noexcept {
    size_ = 0;
    dropped_ = 0;
  }
  void reserve(std::size_t) noexcept {}
  [[nodiscard]] std::size_t size() const noexcept { return size_; }
  [[nodiscard]] bool empty() const noexcept { return size_ == 0; }
  [[nodiscard]] std::size_t dropped() const noexcept { return dropped_; }
  [[nodiscard]] const term& operator[](std::size_t i) const noexcept { return store_.items[i]; }
  [[nodiscard]] const term& back() const noexcept { return store_.items[size_ - 1]; }
  [[nodiscard]] const term* begin() const noexcept { return store_.items; }
  [[nodiscard]] const term* end() const noexcept { return store_.items + size_; }

 private:
  // A union so that constructing a list does not construct `capacity` terms (results are built for
  // every node on every round). term is trivially copyable, so copying the union is well-defined.
  union storage {
    storage() noexcept {}
    term items[capacity];
  } store_;
  std::size_t size_ = 0;
  std::size_t dropped_ = 0;
};

// The ordered terms of the formula that produced one resource, plus whether it was reset.
struct explanation {
  std::string_view resource;  // kubernetes.io/batch-cpu, ...
  std::string_view formula;   // "usage", "request", "maxUsageRequest", "static", "dynamic", "reset"
  term_list terms;            // in formula order; the last term is always "result"
};

// Koordinator's log/test message for the explanation, byte for byte as Go formats it, e.g.
// "batchAllocatable[CPU(Milli-Core)]:25000 = nodeCapacity:100000 - nodeSafetyMargin:35000 - ...".
[[nodiscard]] std::string koordinator_message(const explanation& e);
// A human-readable multi-line rendering ("name = value unit  (text)" per term).
[[nodiscard]] std::string describe(const explanation& e);

// framework.NodeResource for the four co-location resources. A reset resource is removed from the
// node (degraded NodeMetric or co-location disabled); its quantity is then 0 and meaningless.
struct node_resource_result {
  std::int64_t batch_cpu_milli = 0;
  std::int64_t batch_memory_bytes = 0;
  std::int64_t mid_cpu_milli = 0;
  std::int64_t mid_memory_bytes = 0;
  bool batch_reset = false;
  bool mid_reset = false;
  bool degraded = false;          // NodeMetric missing or stale (isDegradeNeeded)
  bool disabled = false;          // co-location disabled for this node (isColocationCfgDisabled)
  std::string_view batch_reason;  // Koordinator's reset message, "" if calculated
  std::string_view mid_reason;
  explanation batch_cpu, batch_memory, mid_cpu, mid_memory;
};

// Reusable buffers for calculate_node_resource (no allocation in steady state). Not thread-safe.
struct calculator_scratch {
  // Open-addressing table from pod key to metric index. A slot is live only when its generation is
  // the current node's, so the table is never cleared between nodes.
  struct slot {
    std::uint64_t key = 0;  // interned id, or the hash of namespace/name
    std::uint32_t metric = 0;
    std::uint32_t generation = 0;
  };
  std::vector<slot> slots;
  std::uint32_t generation = 0;
  // Per metric: shadowed by a later duplicate key (Go's map keeps the last) / matched by a
  // Running or Pending pod.
  std::vector<std::uint8_t> metric_state;
};

// isDegradeNeeded (batchresource and midresource plugins): NodeMetric missing, updateTime missing,
// or now strictly after updateTime + degradeTimeMinutes.
[[nodiscard]] bool is_degrade_needed(const colocation_strategy& strategy,
                                     const node_metric_input* metric, event_time now);

// The calculate phase of the noderesource reconcile for one node: MidResource then BatchResource.
// `strategy` is the node's merged strategy (node_colocation_strategy); `metric` may be null (no
// NodeMetric object). Batch and mid are reset when degraded. The co-location enable switch is NOT
// checked here; see reconcile_node_resource.
[[nodiscard]] node_resource_result calculate_node_resource(
    const colocation_strategy& strategy, const node_input& node, const std::vector<pod_input>& pods,
    const node_metric_input* metric, event_time now, calculator_scratch& scratch);

// The same on the hot/cold split inputs: `pod_metrics` stands for metric->pod_metrics (which is not
// read). Identical results to the pod_input overload when the ids are interned as pod_sample says.
[[nodiscard]] node_resource_result calculate_node_resource(
    const colocation_strategy& strategy, const node_input& node, std::span<const pod_sample> pods,
    const node_metric_input* metric, std::span<const pod_metric_sample> pod_metrics, event_time now,
    calculator_scratch& scratch);

// Reconcile for one node (NodeResourceReconciler.Reconcile): resolves the node's strategy from the
// config, resets everything if co-location is disabled, else calculate_node_resource.
[[nodiscard]] node_resource_result reconcile_node_resource(
    const colocation_config& cfg, const node_input& node, const std::vector<pod_input>& pods,
    const node_metric_input* metric, event_time now, calculator_scratch& scratch);
// The same on the hot/cold split inputs (see calculate_node_resource).
[[nodiscard]] node_resource_result reconcile_node_resource(
    const colocation_config& cfg, const node_input& node, std::span<const pod_sample> pods,
    const node_metric_input* metric, std::span<const pod_metric_sample> pod_metrics, event_time now,
    calculator_scratch& scratch);

// --- writing to the node (Prepare) and the sync decision (NeedSync) ---

// The four extended resources as they stand in node status allocatable (= capacity). nullopt =
// absent.
struct node_extended_resources {
  std::optional<std::int64_t> batch_cpu;     // value = milli-cores
  std::optional<std::int64_t> batch_memory;  // bytes
  std::optional<std::int64_t> mid_cpu;
  std::optional<std::int64_t> mid_memory;
  bool operator==(const node_extended_resources&) const = default;
};

struct prepared_node_resources {
  node_extended_resources allocatable;  // what the node's status gets (capacity = allocatable)
  // annotation node.koordinator.sh/originExtendedAllocatable: batch values before third-party
  // subtraction (0 when reset).
  std::int64_t origin_batch_cpu = 0;
  std::int64_t origin_batch_memory = 0;
  term_list terms;  // normalization ratio and third-party terms actually applied
};

// PrepareNodeForResource + batch Prepare: batch-cpu scaled by cpu-normalization-ratio (> 1.0 only,
// as int64(milli*ratio) then rounded up to an integer), third-party koord-batch allocations
// subtracted and clamped at 0.
[[nodiscard]] prepared_node_resources prepare_node_resource(const node_resource_result& r,
                                                            const node_input& node);

// The reason of a write because the last one is older than updateTimeThresholdSeconds.
inline constexpr std::string_view sync_reason_expired = "node resource expired";

struct sync_decision {
  bool need_sync = false;
  std::string_view
      reason;       // "", "node resource expired", "batch resource diff is big than threshold", ...
  term_list terms;  // elapsed time / threshold, or the diff that triggered
};

// isNodeResourceSyncNeeded (status part): write when never written or more than
// updateTimeThresholdSeconds since the last successful write (strictly), or when batch/mid
// allocatable changed: present on one side only or |new-old| > old*resourceDiffThreshold in milli.
[[nodiscard]] sync_decision need_sync(const colocation_strategy& strategy,
                                      const node_extended_resources& old_alloc,
                                      const node_extended_resources& new_alloc,
                                      std::optional<event_time> last_update, event_time now);

// --- annotation parsers (inputs come from Kubernetes strings) ---

// Kubernetes resource.Quantity string -> value in milli units (so "1" -> 1000, "100m" -> 100,
// "1Gi" -> 1073741824000), and Quantity.Value(): messages/quantity.hpp's, rounding away from
// zero like MilliValue / Value. Errors name the text.
using k8s::parse_quantity_milli;
using k8s::parse_quantity_value;
// cpuset.Parse(...).Size(): "0-3,8" -> 5. Error for malformed lists.
[[nodiscard]] result<std::int64_t> cpuset_size(std::string_view text);
// GetNodeReservationFromAnnotation: JSON {"resources": {...}, "reservedCPUs": "..."}.
[[nodiscard]] result<node_reservation> parse_node_reservation(std::string_view json_text);
// GetThirdPartyAllocations: JSON {"allocations": [{"name", "priority", "resources": {...}}]}.
[[nodiscard]] result<std::vector<third_party_allocation>> parse_third_party_allocations(
    std::string_view json_text);

}  // namespace colony::slo_controller
