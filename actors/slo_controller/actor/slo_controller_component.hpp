// slo_controller_component: Koordinator's slo-controller noderesource reconciler
// (pkg/slo-controller/noderesource/noderesource_controller.go, resource_calculator.go and the
// batchresource / midresource plugins) as a component over the log.
//
// State (all from events): node capacity/allocatable/labels/annotations, the pods bound to each
// node (requests, QoS and priority class after admission), the latest NodeMetric of each node,
// what was last written (batch/mid allocatable and when), and the slo-controller-config in force.
//
// Reconciles a node, as Koordinator's controller is triggered, on: NodeRegistered (node
// create/update), NodeMetricReported (NodeMetric update), and a ConfigUpdated of kind
// "slo-controller-config" whose colocation-config changed (every node). Pod events only update
// the view: Koordinator lists pods at reconcile time and does not watch them.
//
// Emits NodeBatchResourceUpdated (keyed by the node, causation = the triggering offset) only when
// need_sync says so (first write, update time threshold, or a diff above
// resourceDiffThreshold), with every term of the formulas: "<resource>.<term>" for batch-cpu,
// batch-memory, mid-cpu and mid-memory (resource without "kubernetes.io/"), "prepare.<term>" for
// the normalization / third-party step, "sync.<term>" and "sync.reason" for the write decision,
// "<batch|mid>.resetReason" when reset. Numeric terms carry value + unit, textual ones text (the
// sim's encoding).
//
// NodeSLO (pkg/slo-controller/nodeslo): on NodeRegistered, and on a ConfigUpdated that changes
// a NodeSLO key (resource-threshold-config, resource-qos-config, cpu-burst-config,
// system-config: every node), renders the node's NodeSLO spec (node_slo.hpp) and emits
// NodeSLOUpdated (keyed by the node, causation = the triggering offset, spec_json = the spec)
// when the spec differs from the one it last emitted for the node; NodeRemoved forgets it (a
// node registered again gets its NodeSLO again). Koordinator's controller compares with the
// NodeSLO object (reflect.DeepEqual of the specs); Colony compares with its own last decision,
// which the log holds. Records of one node stay together in a config round (the batch record,
// then the NodeSLO), so a node shard emits what the cluster-wide component emits for that node.
//
// CPU normalization and resource amplification (plugins/cpunormalization, resourceamplification;
// cpu_normalization.hpp; with options.cpu_normalization): every reconcile also decides the node
// annotations
// node.koordinator.sh/cpu-normalization-ratio and node.koordinator.sh/resource-amplification-ratio
// from cpu-normalization-config, resource-amplification-config, the node's labels and its
// node.koordinator.sh/cpu-basic-info annotation (Koordinator reads it from the node's
// NodeResourceTopology, NodeResourceTopologyUpdated, as the koordlet reports it; a Node carrying
// the annotation itself, as the sim's nodes do, is read where no NodeResourceTopology has it). When
// a plugin's NeedSyncMeta says so, the NodeBatchResourceUpdated record carries the metadata patch
// Koordinator sends (a JSON merge patch of metadata.annotations) as the text term
// "meta.annotationsPatch", and is written even when the status write is not due ("sync.reason" then
// "meta: <reasons>"; the record's allocatable is the round's, where Koordinator's metadata-only
// patch leaves the status as it is). The patch is applied to the component's view of the node at
// once (and again when the record comes back), so batch-cpu uses the new normalization ratio from
// the next round on. A change of either key reconciles every node (their configHandlers enqueue all
// nodes).
//
// Config: the ConfigMap data as JSON (constructor, or ConfigUpdated spec_json). A key that fails
// keeps its last valid value (the defaults if none) and the error, naming the key, is kept in
// config_errors(); the schema has no event for it (see the report).
// Single-threaded; deterministic: ordered maps only, strings built in a fixed order.
//
// Hot/cold split: beside its pod records, each node keeps the pods' pod_sample (refreshed when a
// pod event changes the pod) and its NodeMetric's pod metrics as pod_metric_sample, all keyed by
// pod_key_interner ids, and every reconcile reads those (the sample overload of
// reconcile_node_resource), not copies of the records. Keys are interned when a pod record is made
// (one reference per record) and when a NodeMetric lists them (one reference per listed metric);
// the references are given back when the pod record goes (PodFinished, PodEvicted) and when the
// node's next NodeMetric replaces the list or the node is removed, so the interner holds exactly
// the keys of live pod records and current pod metrics. Ids follow pod_key_interner's rule (never
// reused); they are only compared for equality, so what the component emits does not depend on
// them. A pod is bound to one node: a PodScheduled naming another node moves it there.
//
// Idle-node cache (options.cache_idle_nodes): a node that hosts no pod and whose NodeMetric
// lists no pod is reconciled on every NodeMetric with the same inputs but the metric's update
// time (the sim's case: thousands of empty nodes reporting every minute). While the NodeMetric
// is fresh (not degraded: update time and `now` enter the formulas only through the degraded
// reset's terms), the result (batch/mid formulas and prepare) depends only on the config, the
// node (capacity, allocatable, labels, annotations), the pods (none) and the metric's usage
// fields (node usage, system usage, prod reclaimable, host applications; pod metrics none).
// The component keeps the result last computed for such a node (and the node's strategy),
// with those metric fields and the config generation, and reuses it while the node is idle and
// they are equal; NodeRegistered drops it. A NodeMetric with other usage, a bound pod or a listed
// pod metric computes again. need_sync and the record are evaluated every time, as without the
// cache.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "actors/entities/component.hpp"
#include "actors/slo_controller/cpu_normalization.hpp"
#include "actors/slo_controller/node_resource.hpp"
#include "actors/slo_controller/node_slo.hpp"
#include "actors/slo_controller/slo_controller_config.hpp"
#include "messages/result.hpp"

namespace colony::slo_controller_actor {

inline constexpr std::string_view config_kind_slo_controller = "slo-controller-config";

// The constructor's reading of a ConfigMap: the config in force, its NodeSLO renderer and the
// keys refused. The sim host runs one slo-controller shard per node over the same ConfigMap, so
// it reads the ConfigMap once and shares the result (slo_controller_options::initial).
struct slo_controller_initial_config {
  slo_controller::slo_controller_config cfg;
  slo_controller::node_slo_renderer renderer;
  std::vector<error> errors;
};
[[nodiscard]] std::shared_ptr<const slo_controller_initial_config> read_initial_config(
    const std::string& configmap_json);

struct slo_controller_options {
  // Default: "slo-controller" (the source the sim writes).
  std::string name = "slo-controller";
  // The ConfigMap's data as JSON ({"colocation-config": "{...}", ...}); "" = no ConfigMap.
  std::string configmap_json;
  // Reuses a node's last computed result while the node is idle and its inputs are those the
  // result was computed from (see "Idle-node cache" above). What the component emits is byte
  // for byte the same either way (tested); false computes every time. Default: true.
  bool cache_idle_nodes = true;
  // The noderesource plugins cpunormalization and resourceamplification (the node annotations
  // above). Koordinator enables both by default (pkg/slo-controller/noderesource/
  // plugins_profile.go), which writes "1.00" on every node at its first reconcile even with the
  // feature off; Colony's default is off until the sim and the Kubernetes sink apply the patch, so
  // that the records of existing runs stay as they are. Default: false.
  bool cpu_normalization = false;
  // read_initial_config(configmap_json), when the caller has it already; null: the constructor
  // reads configmap_json itself.
  std::shared_ptr<const slo_controller_initial_config> initial;
};

class slo_controller_component final : public entities::component {
 public:
  explicit slo_controller_component(slo_controller_options opt);
  // Not copyable: last_node_ points into its own nodes_.
  slo_controller_component(const slo_controller_component&) = delete;
  slo_controller_component& operator=(const slo_controller_component&) = delete;

  [[nodiscard]] std::string_view name() const override { return opt_.name; }
  [[nodiscard]] bool wants(wire::Payload type) const override;
  void on_event(const wire::Envelope& env, std::vector<messages::byte_buffer>& out) override;

  [[nodiscard]] const slo_controller::slo_controller_config& config() const { return cfg_; }
  // Refused configuration (constructor first, then in log order).
  [[nodiscard]] const std::vector<error>& config_errors() const { return config_errors_; }
  // What was last written for a node (nullptr for an unknown node).
  [[nodiscard]] const slo_controller::node_extended_resources* published(
      std::string_view node) const;
  // The NodeSLO spec last emitted for a node ("" for none, or an unknown node).
  [[nodiscard]] std::string_view node_slo(std::string_view node) const;
  // Reconciles that computed values but did not write them (under the write thresholds).
  [[nodiscard]] std::uint64_t skipped_writes() const { return skipped_writes_; }
  // Reconciles answered from the idle-node cache.
  [[nodiscard]] std::uint64_t idle_cache_hits() const { return idle_hits_; }
  // Writes of an idle node that reused its last record (time and causation rewritten).
  [[nodiscard]] std::uint64_t record_reuses() const { return record_reuses_; }
  // Pod keys interned now (live pod records and current pod metrics; bounded by them).
  [[nodiscard]] std::size_t interned_keys() const { return keys_.size(); }

  // The policy inputs the component builds from events (also used by tests to recompute).
  [[nodiscard]] static slo_controller::node_input node_from_event(const wire::NodeRegistered& e);
  [[nodiscard]] static slo_controller::node_metric_input metric_from_event(
      const wire::NodeMetricReported& e);
  // The node's current inputs (nullopt for an unknown node).
  struct node_view {
    slo_controller::node_input node;
    std::vector<slo_controller::pod_input> pods;              // ascending pod key; key_id interned
    std::optional<slo_controller::node_metric_input> metric;  // pod_metrics in report order
    std::optional<event_time> last_sync;
  };
  [[nodiscard]] std::optional<node_view> view(std::string_view node) const;

 private:
  struct node_rec;
  struct pod_rec {
    slo_controller::pod_input input;   // key_id: this record's reference in keys_
    const std::string* key = nullptr;  // its key in pods_
    node_rec* bound = nullptr;         // the node it is bound to, or none
    std::uint32_t slot = 0;            // its index in bound->samples / bound->owners
  };
  struct node_rec {
    bool registered = false;
    slo_controller::node_input input;
    // The pods bound here: at one index, a pod's sample (what a round reads) and its record.
    // Order is the order of binding with swap-removal; results do not depend on it (the pod sums
    // are integer sums and a node's pods have distinct keys).
    std::vector<slo_controller::pod_sample> samples;
    std::vector<pod_rec*> owners;
    // The latest NodeMetric without its pod metrics, which are kept as samples (in the report's
    // order: a later duplicate key wins) and hold one key reference each.
    std::optional<slo_controller::node_metric_input> metric;
    std::vector<slo_controller::pod_metric_sample> metric_samples;
    slo_controller::node_extended_resources published;
    std::optional<event_time> last_sync;
    std::string slo_spec;  // the NodeSLO spec last emitted ("" none)
    // The annotations the cpunormalization / resourceamplification plugins manage, as the node
    // carries them (NodeRegistered, then our own patches).
    slo_controller::node_meta meta;
    // node.koordinator.sh/cpu-basic-info as the node's NodeResourceTopology carries it (where
    // Koordinator's koordlet reports it); it wins over the Node's own annotation.
    std::optional<std::string> nrt_cpu_basic_info;
    // The idle-node cache: a result computed while the node was idle and its metric fresh, with
    // the config generation and metric fields it was computed from; reset by NodeRegistered.
    struct idle_result {
      std::uint64_t config_generation = 0;
      slo_controller::colocation_strategy strategy;  // the node's, for this config
      bool computed = false;                         // r and prepared hold a result
      slo_controller::usage_pair node_usage;
      resource_list system_usage;
      std::optional<resource_list> prod_reclaimable;
      slo_controller::node_resource_result r;
      slo_controller::prepared_node_resources prepared;
      // The last NodeBatchResourceUpdated written from this result, and the write decision's
      // reason and terms then: a later write with the same decision differs only in event time
      // and causation, so it is this record with those two fields rewritten in place.
      messages::byte_buffer record;
      std::string_view sync_reason;
      std::vector<slo_controller::term> sync_terms;
      bool record_repeat = false;  // the record is a repeat, naming the complete one of
      std::int64_t record_as_of = -1;
      // The result's decision key (publish), once computed.
      bool has_key = false;
      std::string key;
    };
    // Out of line: ~5 KB that most nodes never use would otherwise sit in every record a
    // round walks (measured: +6 % on the config round).
    std::unique_ptr<idle_result> idle;
    // The node's last complete NodeBatchResourceUpdated (terms_as_of_ms -1): its event time and
    // its decision as a key (decision_key); a repeat of that decision is written in the short
    // form that points back to it. Empty key: none known (then the next record is complete).
    std::optional<event_time> full_time;
    std::string full_key;
  };

  void on_config(const wire::Envelope& env, const wire::ConfigUpdated& c,
                 std::vector<messages::byte_buffer>& out);
  void on_metric(node_rec& n, const wire::NodeMetricReported& e);
  void reconcile(const std::string& node, node_rec& n, const wire::Envelope& cause,
                 std::vector<messages::byte_buffer>& out);
  // NodeSLOUpdated for n when its rendered spec changed.
  void render_slo(const std::string& node, node_rec& n, const wire::Envelope& cause,
                  std::vector<messages::byte_buffer>& out);
  // The node's colocation strategy (nodeConfigs, annotation, ratio labels) under the config.
  [[nodiscard]] slo_controller::colocation_strategy strategy_of(const node_rec& n) const;
  // The idle-node cache's result for n now (computed on a miss), or nullptr when n is not idle
  // or its metric is degraded.
  node_rec::idle_result* idle_result_of(node_rec& n, event_time now);
  // need_sync and the NodeBatchResourceUpdated record for a computed (or cached) result.
  // idle: the cached result r and prepared come from (nullptr: computed this round).
  void publish(const std::string& node, node_rec& n, const wire::Envelope& cause,
               const slo_controller::colocation_strategy& strategy,
               const slo_controller::node_resource_result& r,
               const slo_controller::prepared_node_resources& prepared,
               std::vector<messages::byte_buffer>& out, node_rec::idle_result* idle = nullptr,
               const slo_controller::node_meta_update* meta = nullptr);
  // The metadata decision for n this round (cpu_normalization.hpp update_node_meta).
  [[nodiscard]] slo_controller::node_meta_update meta_of(const node_rec& n, bool disabled) const;
  // Applies a metadata patch to n's view (annotations and the batch-cpu normalization input).
  static void apply_meta(node_rec& n, const slo_controller::node_meta& after);
  void reparse_meta_configs();
  pod_rec& pod(std::string_view key);
  void bind(pod_rec& p, node_rec& n);
  void unlink(pod_rec& p);
  void unbind(std::string_view pod_key);
  [[nodiscard]] std::vector<slo_controller::pod_input> pods_of(const node_rec& n) const;
  [[nodiscard]] slo_controller::node_metric_input metric_of(const node_rec& n) const;

  slo_controller_options opt_;
  slo_controller::slo_controller_config cfg_;
  slo_controller::node_slo_renderer slo_;  // cfg_'s NodeSLO keys
  // cfg_'s cpu-normalization-config and resource-amplification-config, typed (nullopt:
  // unavailable).
  std::optional<slo_controller::cpu_normalization_config> cpu_norm_;
  std::optional<slo_controller::resource_amplification_config> amp_;
  std::vector<error> config_errors_;
  std::map<std::string, node_rec, std::less<>> nodes_;
  // The node looked up last (a node shard has one): its reports skip the map walk, whose nodes
  // are cold by the next report. Map iterators stay valid until that node is erased.
  using node_iter = std::map<std::string, node_rec, std::less<>>::iterator;
  [[nodiscard]] node_iter find_node(std::string_view name);
  std::string last_node_name_;
  node_iter last_node_ = nodes_.end();
  std::map<std::string, pod_rec, std::less<>> pods_;
  slo_controller::pod_key_interner keys_;
  // on_metric's buffers (reused): the new samples, ids to take and to give back a reference.
  std::vector<slo_controller::pod_metric_sample> fresh_;
  std::vector<std::uint64_t> taken_, given_;
  std::vector<std::pair<std::string_view, std::string_view>> split_;  // the report's keys
  std::vector<std::uint64_t> found_;
  slo_controller::calculator_scratch scratch_;
  messages::event_builder b_;
  std::uint64_t skipped_writes_ = 0;
  std::uint64_t config_generation_ = 0;  // + 1 whenever the colocation config changes
  std::uint64_t idle_hits_ = 0;
  std::uint64_t record_reuses_ = 0;
  std::string key_scratch_;  // publish's decision key, kept for its capacity
};

}  // namespace colony::slo_controller_actor
