// colony::kube translation: Kubernetes objects (nlohmann::json, as the apiserver returns them)
// into Colony observation events (colony.fbs Envelopes), the cluster-mode counterpart of the
// sim's trace source (sim/trace_source.cpp).
//
// Pure functions: no I/O, no clock (the event time is an argument), no state. The same object,
// time and options give the same bytes: maps (labels, annotations, resource lists) are written
// sorted by key, every FlatBuffers string, vector and sub-table is created in a named local
// before the call that uses it. The three entry points mirror an informer's handlers
// (informer.hpp): translate_added, translate_modified (old and new object) and
// translate_deleted. Each returns the events to append, in order, or an error; an error means
// nothing is emitted for the object.
//
//   kind (object_kind)         event(s)
//   Node                       NodeRegistered (+ NodeConditionChanged when not Ready); a
//                              MODIFIED that changes only Ready/unschedulable:
//                              NodeConditionChanged; DELETED: NodeRemoved
//   Pod (schedulerName one of  unbound: PodSubmitted (requests/limits by Kubernetes' PodRequests
//   options.scheduler_names)   / PodLimits); Running after Colony bound it: PodStarted;
//                              Succeeded/Failed or DELETED: PodFinished
//   PriorityClass              ConfigUpdated kind "PriorityClass" (the admission component's)
//   ConfigMap slo-controller-  ConfigUpdated kind "slo-controller-config" (the data, as the sim
//   config                     writes its sloControllerConfig); other ConfigMaps: nothing
//   ClusterColocationProfile   ConfigUpdated kind "ClusterColocationProfile"
//   ElasticQuota               QuotaUpserted; DELETED: QuotaDeleted
//   NodeMetric                 NodeMetricReported (once status.updateTime is set)
//   NodeSLO (koordlet_node     NodeSLOUpdated keyed to its node (the slo-controller's rendering
//   set)                       as the koordlet reads it back); DELETED: nothing
//   Pod bound to koordlet_node PodSubmitted (its spec as the API server holds it, after
//   (koordlet_node set)        admission) then PodScheduled with proposal_offset -1 (a binding
//                              observed, not decided); relevant MODIFIED: PodSubmitted;
//                              Succeeded/Failed or DELETED: PodFinished
//   Reservation                ReservationUpserted (the spec koord-scheduler reads: the
//                              template's requests, node, priority, owners, ttl/expires, ...);
//                              DELETED: ReservationUpserted with deleted set. A Reservation
//                              Colony created (label managed_by_label = colony): nothing
//   PodMigrationJob            a user's job (no koordinator.sh/job-created-by): ADDED not final:
//                              MigrationJobCreated; MODIFIED to phase Aborted, or DELETED not
//                              final: MigrationJobPhaseChanged Aborted (also for Colony's own
//                              jobs, options.descheduler_name); anything else, and another
//                              descheduler's jobs: nothing (translate_migration_job.cpp)
//   NodeResourceTopology       NodeResourceTopologyUpdated (schema v10) keyed to its node: the
//                              annotations, topologyPolicies and the zones' allocatable cpu and
//                              memory (translate_nrt.cpp); DELETED: the same with deleted set
//   ElasticQuotaProfile,       ObjectObserved (schema v4): the object recorded as the apiserver
//   PodGroup,                  holds it (apiVersion, kind, namespace, name, uid,
//   Device                     resourceVersion, labels, .spec and .status as compact JSON);
//                              DELETED: ObjectObserved with deleted set. No component reads them
//                              yet (recorded_kind below).
//
// Not yet translated (errc::failed_precondition, message "<Kind> is not yet translated: ..."):
//   NodeSLO without koordlet_node (docs/kubernetes-bridge.md "Gaps");
//   a Pod first seen already bound, or bound by a scheduler not in scheduler_names: the schema
//   has no event for a binding Colony did not decide (PodScheduled is the node actor's
//   decision); a NodeMetric DELETED: no event clears a node's metric.
// docs/kubernetes-bridge.md "Translation to observation events" lists every field mapping.
//
// Errors: a malformed object is errc::invalid_input with `where` = "<Kind> <key>: <field>"
// ("Pod default/web-1: spec.containers[0].resources.requests.cpu") and a message saying what is
// wrong ("\"12x\" is not a quantity"). No exception escapes (nlohmann's are caught here).
// translate_refused turns such a refusal into the ObjectRefused record a bridge appends instead.
// Thread-safety: every function is reentrant.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "messages/codec.hpp"
#include "messages/result.hpp"
#include "messages/units.hpp"

namespace colony::kube {

// The kinds the bridge knows. Informers know what they list (LIST items carry no kind), so the
// kind is an argument rather than read from the object.
enum class object_kind : std::uint8_t {
  node,
  pod,
  priority_class,
  config_map,
  cluster_colocation_profile,
  elastic_quota,
  node_metric,
  // Custom resources listed by recorded_kind(): Reservation and PodMigrationJob are translated
  // (ReservationUpserted; MigrationJobCreated, MigrationJobPhaseChanged), the others recorded as
  // ObjectObserved.
  elastic_quota_profile,
  reservation,
  pod_migration_job,
  pod_group,
  device,
  // NodeResourceTopology (topology.node.k8s.io/v1alpha1): NodeResourceTopologyUpdated.
  node_resource_topology,
  // Known, not yet translated.
  node_slo,
};

// "Node", "Pod", ..., as the objects' `kind` field spells them.
[[nodiscard]] std::string_view to_string(object_kind k) noexcept;
// The inverse; invalid_input for a kind the bridge does not know ("Deployment").
[[nodiscard]] result<object_kind> parse_object_kind(std::string_view kind);

// A custom resource the bridge lists (recorded as ObjectObserved, or for Reservation translated):
// where its CRD serves it and its scope, as Koordinator's CRDs (config/crd/bases) and
// scheduler-plugins' PodGroup define them. The bridge's informer lists
// /apis/<api_version>/<plural> (every namespace for a namespaced kind).
struct recorded_kind_info {
  std::string_view api_version;  // "scheduling.koordinator.sh/v1alpha1"
  std::string_view plural;       // "reservations"
  bool namespaced = false;
};
// nullopt for a kind with a translation of its own (Node, Pod, ...) or none (NodeSLO).
[[nodiscard]] std::optional<recorded_kind_info> recorded_kind(object_kind k) noexcept;
// The label Colony's decision sink puts on a Reservation it creates for a component's
// ReservationUpserted (the descheduler's ReservationFirst migrations; sink_reservation.cpp), next
// to Koordinator's own labels (app.kubernetes.io/created-by: koord-descheduler). Its record is
// the component's decision, already in the log, so the bridge translates such an object to
// nothing, after a restart too (the mark is on the object). created-by alone cannot tell
// Colony's descheduler from a koord-descheduler whose reservations Colony must still schedule.
// Kubernetes' recommended label for the tool that manages an object.
inline constexpr std::string_view managed_by_label = "app.kubernetes.io/managed-by";
inline constexpr std::string_view managed_by_colony = "colony";

// The ObjectObserved entity key: "<Kind>/<namespace>/<name>", or "<Kind>/<name>" when ns is
// empty (a cluster-scoped object).
[[nodiscard]] std::string recorded_key(object_kind k, std::string_view ns, std::string_view name);

struct translate_options {
  // Pods Colony schedules: spec.schedulerName in this list. Empty = every pod.
  // Default: {"koord-scheduler"} (Koordinator's scheduler name,
  // config/manager/scheduler-config.yaml).
  std::vector<std::string> scheduler_names{"koord-scheduler"};
  // The envelope's source. Default: "bridge/k8s" (colony.fbs Envelope.source).
  std::string source = "bridge/k8s";
  // The slo-controller's ConfigMap. Default: koordinator-system/slo-controller-config
  // (pkg/util/sloconfig: ConfigNameSpace, SLOCtrlConfigMap).
  std::string slo_config_namespace = "koordinator-system";
  std::string slo_config_name = "slo-controller-config";
  // kubernetes.io/batch-* and mid-* in a Node's status are the slo-controller's output written
  // back; when Colony is that writer, a change in them alone is its own write coming back and
  // is no change (change_kind none). They are still carried when something else changed.
  // Default: true. Set false when another slo-controller (koord-manager) writes them.
  bool colocation_written_by_colony = true;
  // The node a koordlet runs on (`colony koordlet --kubeconfig`, docs/koordlet.md). When set,
  // Pods are translated as that node's koordlet sees them (Koordinator's statesinformer,
  // pkg/koordlet/statesinformer/impl/states_pods.go: the pods bound to its node, whoever bound
  // them): a pod bound to it is a PodSubmitted and an observed PodScheduled, so a node-scoped
  // component is delivered its spec (entities::node_routing) and knows it by namespace/name,
  // QoS and priority; pods of other nodes translate to nothing. NodeSLOs translate to
  // NodeSLOUpdated. Default: "" (colony run: pods are Colony's to schedule).
  std::string koordlet_node;
  // The koordinator.sh/job-created-by value of the PodMigrationJobs Colony's descheduler
  // creates (the sink writes its MigrationJobCreated's creator there): such a job is Colony's
  // own and translates to no MigrationJobCreated. Default: "koord-descheduler"
  // (actors/descheduler/actor/descheduler_component.hpp descheduler_component_name).
  std::string descheduler_name = "koord-descheduler";
};

// What a MODIFIED changed, as far as Colony's events go.
enum class change : std::uint8_t {
  none,       // nothing an event carries (resourceVersion, managedFields, heartbeats, status
              // conditions other than Node Ready, ...): emit nothing
  condition,  // Node only: Ready (status, reason) or spec.unschedulable, nothing else
  relevant,   // translate the new object
};

[[nodiscard]] std::string_view to_string(change c) noexcept;  // "none", "condition", "relevant"

// Whether a MODIFIED from old_object to new_object is worth an event. Compares only the fields
// the kind's translation reads; total (an object it cannot read counts as relevant, so the
// translation reports the error).
[[nodiscard]] change change_kind(object_kind kind, const nlohmann::json& old_object,
                                 const nlohmann::json& new_object,
                                 const translate_options& options = {});

using event_list = std::vector<messages::byte_buffer>;

// ADDED (or a MODIFIED of an object never seen before).
[[nodiscard]] result<event_list> translate_added(object_kind kind, const nlohmann::json& object,
                                                 event_time t,
                                                 const translate_options& options = {});
// MODIFIED: nothing when change_kind is none.
[[nodiscard]] result<event_list> translate_modified(object_kind kind,
                                                    const nlohmann::json& old_object,
                                                    const nlohmann::json& new_object, event_time t,
                                                    const translate_options& options = {});
// DELETED: `last` is the object as the DELETED event (or the informer's store) last had it.
[[nodiscard]] result<event_list> translate_deleted(object_kind kind, const nlohmann::json& last,
                                                   event_time t,
                                                   const translate_options& options = {});

// The record a bridge appends instead of an object's events when a translate_* call refused it
// (errc::invalid_input): ObjectRefused with the object's kind, namespace, name, uid and
// resourceVersion (read leniently: the refusal may be about them) and the field `refusal.where`
// names, keyed to the entity the kind's observations are keyed to (Node name for a Node or
// NodeMetric, Pod namespace/name, ElasticQuota name, Cluster slo-controller for the ConfigMap,
// Cluster admission for a PriorityClass or ClusterColocationProfile, Reservation name, Object
// recorded_key for a recorded kind). Same arguments, same bytes.
[[nodiscard]] messages::byte_buffer translate_refused(object_kind kind,
                                                      const nlohmann::json& object,
                                                      const error& refusal, event_time t,
                                                      const translate_options& options = {});

}  // namespace colony::kube
