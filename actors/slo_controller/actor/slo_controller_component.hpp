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
// Config: the ConfigMap data as JSON (constructor, or ConfigUpdated spec_json). A key that fails
// keeps its last valid value (the defaults if none) and the error, naming the key, is kept in
// config_errors(); the schema has no event for it (see the report).
// Single-threaded; deterministic: ordered maps only, strings built in a fixed order.
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "actors/entities/component.hpp"
#include "actors/slo_controller/node_resource.hpp"
#include "actors/slo_controller/slo_controller_config.hpp"
#include "messages/result.hpp"

namespace colony::slo_controller_actor {

inline constexpr std::string_view config_kind_slo_controller = "slo-controller-config";

struct slo_controller_options {
  // Default: "slo-controller" (the source the sim writes).
  std::string name = "slo-controller";
  // The ConfigMap's data as JSON ({"colocation-config": "{...}", ...}); "" = no ConfigMap.
  std::string configmap_json;
};

class slo_controller_component final : public entities::component {
 public:
  explicit slo_controller_component(slo_controller_options opt);

  [[nodiscard]] std::string_view name() const override { return opt_.name; }
  [[nodiscard]] bool wants(wire::Payload type) const override;
  void on_event(const wire::Envelope& env, std::vector<messages::byte_buffer>& out) override;

  [[nodiscard]] const slo_controller::slo_controller_config& config() const { return cfg_; }
  // Refused configuration (constructor first, then in log order).
  [[nodiscard]] const std::vector<error>& config_errors() const { return config_errors_; }
  // What was last written for a node (nullptr for an unknown node).
  [[nodiscard]] const slo_controller::node_extended_resources* published(
      std::string_view node) const;
  // Reconciles that computed values but did not write them (under the write thresholds).
  [[nodiscard]] std::uint64_t skipped_writes() const { return skipped_writes_; }

  // The policy inputs the component builds from events (also used by tests to recompute).
  [[nodiscard]] static slo_controller::node_input node_from_event(const wire::NodeRegistered& e);
  [[nodiscard]] static slo_controller::node_metric_input metric_from_event(
      const wire::NodeMetricReported& e);
  // The node's current inputs (nullopt for an unknown node).
  struct node_view {
    slo_controller::node_input node;
    std::vector<slo_controller::pod_input> pods;  // ascending pod key
    std::optional<slo_controller::node_metric_input> metric;
    std::optional<event_time> last_sync;
  };
  [[nodiscard]] std::optional<node_view> view(std::string_view node) const;

 private:
  struct pod_rec {
    slo_controller::pod_input input;
    std::string node;
  };
  struct node_rec {
    bool registered = false;
    slo_controller::node_input input;
    std::set<std::string, std::less<>> pods;
    std::optional<slo_controller::node_metric_input> metric;
    slo_controller::node_extended_resources published;
    std::optional<event_time> last_sync;
  };

  void on_config(const wire::Envelope& env, const wire::ConfigUpdated& c,
                 std::vector<messages::byte_buffer>& out);
  void reconcile(const std::string& node, node_rec& n, const wire::Envelope& cause,
                 std::vector<messages::byte_buffer>& out);
  pod_rec& pod(std::string_view key);
  void unbind(std::string_view pod_key);
  [[nodiscard]] std::vector<slo_controller::pod_input> pods_of(const node_rec& n) const;

  slo_controller_options opt_;
  slo_controller::slo_controller_config cfg_;
  std::vector<error> config_errors_;
  std::map<std::string, node_rec, std::less<>> nodes_;
  std::map<std::string, pod_rec, std::less<>> pods_;
  slo_controller::calculator_scratch scratch_;
  messages::event_builder b_;
  std::uint64_t skipped_writes_ = 0;
};

}  // namespace colony::slo_controller_actor
