// colony::kube::decision_sink: Colony decision records carried out against a kube-apiserver.
//
// The sink is handed verified-on-entry log records (colony.fbs Envelopes, in log order) and
// performs the API write each decision implies, the way the Kubernetes component Colony stands
// in for would have written it:
//
//   PodScheduled             POST pods/NAME/binding (v1 Binding to the node)
//   PodUnschedulable         PATCH pods/NAME/status (condition PodScheduled=False, Unschedulable)
//                            + a core/v1 Event FailedScheduling (kube-scheduler's
//                            handleSchedulingFailure, pkg/scheduler/schedule_one.go)
//   NodeBatchResourceUpdated PATCH nodes/N/status (merge): kubernetes.io/batch-* (and mid-*)
//                            in capacity and allocatable, as Koordinator's slo-controller does
//   PodEvicted               POST pods/NAME/eviction (policy/v1 Eviction; with
//                            deleteOptions.preconditions.uid when options.pod_uid knows the pod,
//                            as Koordinator's koordlet evictor sends it,
//                            pkg/koordlet/qosmanager/plugins/util/evictor.go)
//   NodeMetricReported       a koordlet's own report (causation set, `colony koordlet`): the
//   (a decision)             NodeMetric named after the node is created when missing (spec from
//                            the report's collect policy) and its status replaced with PUT
//                            nodemetrics/N/status (UpdateStatus, as the koordlet's
//                            statesinformer does, pkg/koordlet/statesinformer/impl/
//                            states_nodemetric.go sync; a 409 reads it again and retries, as
//                            RetryOnConflict). A report observed from a cluster (causation -1,
//                            colony run) is never written back.
//   QuotaRuntimeUpdated      PATCH elasticquotas/NAME (merge): the runtime, request and
//                            non-preemptible-used annotations and status.used, as Koordinator's
//                            ElasticQuota plugin writes them back (elasticquota/quota_handler.go)
//   NodeSLOUpdated           create or update slo.koordinator.sh/v1alpha1 NodeSLO N (named after
//                            the node, cluster-scoped) with the spec, as Koordinator's nodeslo
//                            controller does (Create when absent, else Update when the spec
//                            differs; pkg/slo-controller/nodeslo/nodeslo_controller.go)
//   ReservationPhaseChanged  PUT reservations/N/status (scheduling.koordinator.sh/v1alpha1):
//                            phase, nodeName, allocatable, conditions Scheduled / Ready and
//                            currentOwners, as koord-scheduler writes them (UpdateStatus under
//                            RetryOnConflict; pkg/util/reservation SetReservationAvailable,
//                            SetReservationSucceeded, SetReservationExpired,
//                            setReservationUnschedulable); a reservation gone is done
//   ReservationUpserted      a component's (causation set, not the bridge's): POST reservations
//   (a decision)             with the template, owners, ttl and labels, marked
//                            managed_by_label = colony (translate.hpp); deleted: DELETE
//   QuotaUpserted            a component's (causation set, not the bridge's: koord-manager's
//   (a decision)             ElasticQuotaProfile controller's tree root): GET, then POST
//                            elasticquotas when missing, else a merge PATCH of the labels,
//                            annotations and spec.min/max that differ (profile_controller.go
//                            Get, then Create or Update)
//   MigrationJobCreated,     the PodMigrationJob object and its status, as koord-descheduler's
//   MigrationJobPhaseChanged migration controller writes them (sink_migration_job.hpp); a job
//   (decisions)              or abort observed from the cluster is not written back
//   anything else            ignored (counted)
//
// Every write is idempotent, so a sink restarted from an older offset replays harmlessly: a
// 409 on a binding to the same node is success, a status already holding the values is not
// written, an Event's name is derived from the record's offset (a second create is 409), and
// evicting a pod that is gone (404) or already terminating is success, a NodeSLO already holding
// the spec is not written (a create answered 409 AlreadyExists reads the object and updates it; an
// update answered 409 Conflict reads it again, up to max_attempts). Without the NodeSLO CRD (the
// API answers 404 to the create) the write is skipped as done, like an ElasticQuota status
// without its CRD, and the API is not asked again for node_slo_recheck. A write that fails after
// its retries is an outcome with ok = false, never dropped: the caller appends it to the log as
// a WriteFailed record caused by the decision (write_failed.hpp; colony run does, once per
// decision and write kind; docs/kubernetes-bridge.md "Sinks"). A WriteFailed handed back to
// apply() is ignored like any payload with nothing to write.
//
//   auto sink = kube::decision_sink::open(conn, {});
//   for (auto& rec : records) for (auto& o : *sink->apply(rec)) if (!o.ok) report(o);
//
// Thread-safety: none; one thread drives a sink (it owns one api_client).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "bridges/kubernetes/api_client.hpp"
#include "messages/codec.hpp"
#include "messages/result.hpp"

namespace colony::kube {

enum class write_kind : std::uint8_t {
  binding,             // POST pods/NAME/binding
  pod_condition,       // PATCH pods/NAME/status
  event,               // POST events (core/v1)
  node_resources,      // PATCH nodes/N/status
  eviction,            // POST pods/NAME/eviction
  quota_status,        // PATCH elasticquotas/NAME (annotations and status.used)
  node_slo,            // POST nodeslos / PUT nodeslos/N (slo.koordinator.sh/v1alpha1)
  node_metric,         // POST nodemetrics when missing, PUT nodemetrics/N/status
  reservation_status,  // PUT reservations/N/status (sink_reservation.cpp)
  reservation,         // POST reservations / DELETE reservations/N (a component's decision)
  migration_job,       // POST podmigrationjobs (sink_migration_job.hpp)
  // PUT podmigrationjobs/NAME/status (sink_migration_job.hpp)
  migration_job_status,
  quota,  // GET, POST elasticquotas or PATCH elasticquotas/NAME (a component's tree root)
  // GET noderesourcetopologies/N, POST when missing, else a merge PATCH (colony koordlet's)
  node_topology,
  // PATCH nodes/N metadata.annotations (the slo-controller's meta.annotationsPatch)
  node_annotations,
};
[[nodiscard]] std::string_view to_string(write_kind k) noexcept;

// What became of one write a record asked for.
struct write_outcome {
  std::uint64_t offset = 0;  // the record's log offset
  write_kind kind = write_kind::binding;
  bool ok = false;
  // True when the sink changed the server (a 2xx to a write); false for a write found already
  // applied (binding 409 to the same node, equal status, Event 409, pod gone) or a failure.
  bool wrote = false;
  long http_status = 0;  // of the last answer; 0: no answer (transport failure, or no request)
  std::uint32_t attempts = 0;
  std::string object;   // "ns/name" or node name
  std::string message;  // why (failures name the pod and the nodes)
};

struct sink_counters {
  std::uint64_t records = 0;
  std::uint64_t ignored = 0;   // payloads the sink has nothing to write for
  std::uint64_t requests = 0;  // HTTP requests sent (reads included)
  std::uint64_t writes = 0;    // writes the server took (2xx)
  std::uint64_t skipped = 0;   // writes found already applied
  std::uint64_t retries = 0;
  std::uint64_t failed = 0;
};

struct sink_options {
  // kube-scheduler's component name: Event source and reportingComponent.
  std::string scheduler_name = "koord-scheduler";
  std::string reporting_instance = "colony";
  // Capped exponential backoff between tries of a write answered errc::unavailable (429,
  // 5xx, transport). A Retry-After is waited for when longer, up to backoff_cap.
  std::chrono::milliseconds backoff_initial{200};
  std::chrono::milliseconds backoff_cap{5'000};
  double jitter = 0.2;
  std::uint64_t seed = 1;
  std::uint32_t max_attempts = 6;  // tries of one write, the first included
  // Tries of an eviction refused by a PodDisruptionBudget (429), the first included.
  std::uint32_t eviction_max_attempts = 5;
  // The pod's uid for an eviction's preconditions ("" = none: the eviction names the pod
  // alone). Default: unset (colony run).
  std::function<std::string(std::string_view pod_key)> pod_uid;
  // Waits between tries; tests replace it to run without sleeping. Default: sleep_for.
  std::function<void(std::chrono::milliseconds)> sleep;
  client_options client;
};

class decision_sink {
 public:
  [[nodiscard]] static result<decision_sink> open(connection conn, sink_options options = {});

  // Carries out one record. The bytes are verified (messages::decode); an error means they are
  // not a readable record (nothing was written). Otherwise one outcome per write the record
  // asked for (none for an ignored payload), failures included.
  [[nodiscard]] result<std::vector<write_outcome>> apply(std::span<const std::uint8_t> record);

  [[nodiscard]] const sink_counters& counters() const noexcept { return counters_; }
  // The retry waits asked for so far, in order (for tests and reports).
  [[nodiscard]] const std::vector<std::chrono::milliseconds>& waits() const noexcept {
    return waits_;
  }

 private:
  decision_sink(api_client c, sink_options o);
  // The last answer of a write and how many tries it took (send; sink_migration_job.cpp).
  struct attempt_result {
    result<response> last;
    std::uint32_t attempts = 0;
  };
  attempt_result send(const std::function<result<response>()>& call, std::uint32_t limit);
  // The slo-controller's meta.annotationsPatch as a merge PATCH of the Node's annotations
  // (cur: the Node as just read), unless the Node already has them.
  write_outcome node_annotations(const std::string& node, std::string_view patch,
                                 const nlohmann::json& cur);
  // One round of a read-modify-write (RetryOnConflict): `cur` (the object as read) already has
  // `want` at `field` (ok, `unchanged` as the message), or gets it and is PUT to `path` (ok,
  // `written`; the resourceVersion read makes a concurrent change a 409). true: read again and
  // retry (a 409 before the last round); false: `o` is final.
  bool replace_field(write_outcome& o, nlohmann::json& cur, const char* field,
                     const nlohmann::json& want, const std::string& path, bool last_round,
                     const char* unchanged, std::string written);
  // sink_reservation.cpp: a ReservationPhaseChanged as the Reservation's status; a component's
  // ReservationUpserted as the object's create or delete (nullopt: an observation, nothing to
  // write).
  write_outcome reservation_status_write(const wire::Envelope& env);
  std::optional<write_outcome> reservation_object_write(const wire::Envelope& env);
  // sink_quota.cpp: a component's QuotaUpserted as the ElasticQuota's create or update (nullopt:
  // an observation, nothing to write).
  std::optional<write_outcome> quota_object_write(const wire::Envelope& env);
  // GET path as JSON (send's retries); not_found and the rest as errors.
  result<nlohmann::json> get_object(const std::string& path, std::uint32_t& attempts);

  api_client client_;
  sink_options opt_;
  sink_counters counters_;
  // ElasticQuota name -> namespace (Koordinator's quota names are cluster-unique; the decision
  // names the quota alone). "" = not an API object when last looked for (Koordinator's root and
  // system quotas, a quota not created yet, or no ElasticQuota CRD): looked for again after
  // quota_recheck.
  struct quota_place {
    std::string ns;
    std::chrono::steady_clock::time_point checked;
  };
  std::map<std::string, quota_place, std::less<>> quota_namespace_;
  // When the NodeSLO API was last found missing (no CRD); none = present or not asked yet.
  std::optional<std::chrono::steady_clock::time_point> no_node_slo_api_;
  std::vector<std::chrono::milliseconds> waits_;

  // MigrationJobCreated / MigrationJobPhaseChanged (sink_migration_job.cpp). nullopt: nothing to
  // write (a record observed from the cluster, causation -1).
  std::optional<write_outcome> migration_job_write(const wire::Envelope& env);
};

// ---- The bodies, as pure functions (tested without a server) ----------------------------

// Koordinator's write-back of an ElasticQuota: the runtime, request and non-preemptible-used
// annotations (JSON ResourceLists) and status.used, for a merge patch. Resources named in
// runtime_keys (bit i = colony.fbs Resources field i) or non-zero are listed; a resource that
// `current` (the object as read) lists in status.used and the new value does not is removed
// (null in a merge patch).
[[nodiscard]] nlohmann::json quota_status_patch(const wire::QuotaRuntimeUpdated& q,
                                                const nlohmann::json& current);
// True when `current` already carries everything quota_status_patch would write.
[[nodiscard]] bool quota_has_status(const nlohmann::json& current, const nlohmann::json& patch);

// "ns/name" -> {ns, name}; a key without '/' is in "default".
[[nodiscard]] std::pair<std::string, std::string> split_pod_key(std::string_view key);

// v1 Binding of pod ns/name to node; a non-empty resource_status (NodeNUMAResource's,
// resource_status_annotation) rides as the scheduling.koordinator.sh/resource-status annotation,
// a non-empty device_allocated (DeviceShare's, device_allocated_annotation) as
// scheduling.koordinator.sh/device-allocated.
[[nodiscard]] nlohmann::json binding_body(std::string_view ns, std::string_view name,
                                          std::string_view node,
                                          std::string_view resource_status = {},
                                          std::string_view device_allocated = {});
// The resource-status JSON of a binding's cpuset and NUMA node resources; "" when it has none.
[[nodiscard]] std::string resource_status_annotation(const wire::PodScheduled& p);
// The device-allocated JSON of a binding's devices (apiext.DeviceAllocations: by device type,
// each with minor, resources and an RDMA NIC's VF under extension.vfs); "" when it has none.
[[nodiscard]] std::string device_allocated_annotation(const wire::PodScheduled& p);

// kube-scheduler's FitError text from PodUnschedulable's reasons ("0/N nodes are available:
// 2 Insufficient cpu, 1 node(s) didn't match ...."), truncated to an Event note's 1024 bytes.
struct unschedulable_reason {
  std::string plugin;
  std::string reason;
  std::int64_t nodes = 0;
};
[[nodiscard]] std::string fit_error_message(std::span<const unschedulable_reason> reasons);

// Strategic-merge patch of pod status: condition PodScheduled=False, reason Unschedulable.
// transition_time: RFC 3339, or empty to keep the pod's.
[[nodiscard]] nlohmann::json unschedulable_condition_patch(std::string_view message,
                                                           std::string_view transition_time);

// Whether `pod` already carries that condition (type, status, reason, message: what
// podutil.UpdatePodCondition compares, times aside).
[[nodiscard]] bool has_unschedulable_condition(const nlohmann::json& pod, std::string_view message);

// core/v1 Event FailedScheduling about the pod, named "<pod>.<offset as 16 hex digits>" so a
// replay of the same record creates nothing new.
struct event_fields {
  std::string ns, pod, uid, message, component, instance;
  std::uint64_t offset = 0;
  std::int64_t time_ms = 0;
};
[[nodiscard]] nlohmann::json failed_scheduling_event(const event_fields& f);

// Merge patch of node status: batch (and mid, when include_mid) in capacity and allocatable.
// batch-cpu and mid-cpu are milli-cores as a plain integer quantity, as Koordinator writes
// them (resource.NewQuantity(milli, DecimalSI)); memory in bytes.
struct node_batch_values {
  std::int64_t batch_cpu_milli = 0, batch_memory_bytes = 0;
  std::int64_t mid_cpu_milli = 0, mid_memory_bytes = 0;
  bool include_mid = false;
};
[[nodiscard]] nlohmann::json node_resources_patch(const node_batch_values& v);
// Whether the node's capacity and allocatable already hold exactly these values.
[[nodiscard]] bool node_has_resources(const nlohmann::json& node, const node_batch_values& v);

// slo.koordinator.sh/v1alpha1 NodeSLO named after the node, with this spec (Create's body).
[[nodiscard]] nlohmann::json node_slo_object(std::string_view node, const nlohmann::json& spec);

// policy/v1 Eviction of pod ns/name; with a uid, deleteOptions.preconditions.uid (the pod
// evicted is the pod the decision was about, not a new one of the same name).
[[nodiscard]] nlohmann::json eviction_body(std::string_view ns, std::string_view name,
                                           std::string_view uid = {});

// Koordinator's NodeMetric status (apis/slo/v1alpha1/nodemetric_types.go NodeMetricStatus) from
// a koordlet's NodeMetricReported: updateTime, nodeMetric {nodeUsage, systemUsage,
// aggregatedNodeUsages, aggregatedSystemUsages}, podsMetric [{namespace, name, podUsage,
// priority, qos}], hostApplicationMetric []. Quantities in Kubernetes' canonical form.
[[nodiscard]] nlohmann::json node_metric_status(const wire::NodeMetricReported& m);
// The NodeMetric object a koordlet creates when its node has none: name = the node, spec
// metricCollectPolicy from the report (aggregateDurationSeconds, reportIntervalSeconds,
// nodeAggregatePolicy durations: Koordinator's defaults, pkg/util/sloconfig;
// nodeMemoryCollectPolicy: the report's memory_collect_policy, usageWithoutPageCache where empty).
[[nodiscard]] nlohmann::json node_metric_object(const wire::NodeMetricReported& m);

// The NodeResourceTopology a koordlet reports (states_noderesourcetopology.go newNodeTopo and
// calcNodeTopo): metadata {name: the node, labels app.kubernetes.io/managed-by: Koordinator,
// annotations}, topologyPolicies, zones [{name, type, resources [cpu, memory] with capacity =
// allocatable = available}] (Koordinator's required fields).
[[nodiscard]] nlohmann::json node_topology_object(const wire::NodeResourceTopologyUpdated& t);

// ---- Reservation (sink_reservation.cpp) -------------------------------------------------

// A Resources table as a Kubernetes ResourceList (canonical quantities; zero fields left out):
// cpu, memory, kubernetes.io/batch-* and mid-*, koordinator.sh/gpu (Colony's x100 count),
// gpu-core, gpu-memory, gpu-memory-ratio, pods and the extended resources by name.
[[nodiscard]] nlohmann::json resource_list_json(const wire::Resources* r);

// What a ReservationPhaseChanged writes into a Reservation's status.
struct reservation_phase_write {
  std::string phase;   // Available | Pending | Succeeded | Failed
  std::string node;    // Available: status.nodeName
  std::string reason;  // Scheduled | Unschedulable | Succeeded | Expired | Deleted
  nlohmann::json allocatable = nlohmann::json::object();  // Available: a ResourceList
  std::string owner_ns, owner_name, owner_uid;            // Succeeded: the owner pod
  std::string time;  // RFC 3339: the record's event time, for the conditions' times
};
// The status koord-scheduler writes for that phase over `current` (the status as read; null when
// none): Available sets phase, nodeName, allocatable and the conditions Scheduled=True/Scheduled,
// Ready=True/Available; Pending adds or updates Scheduled=False/<reason> and keeps the phase
// unless empty (a scheduled reservation keeps Scheduled=True); Succeeded sets the phase, Ready=
// False/Succeeded and currentOwners [{namespace, name, uid}]; Failed sets the phase and Ready=
// False/<reason>. A condition keeps its lastTransitionTime unless its status changes.
[[nodiscard]] nlohmann::json reservation_status(const nlohmann::json& current,
                                                const reservation_phase_write& w);
// Whether `current` already says what `want` says: phase, nodeName, allocatable (as quantities),
// currentOwners, and each condition's type, status, reason and message (times aside).
[[nodiscard]] bool reservation_status_holds(const nlohmann::json& current,
                                            const nlohmann::json& want);
// A record older than what the status says: the status is Succeeded or Failed and the record
// another phase, or the status is Available and the record Pending (a phase never goes back;
// only a replay from an older sink position brings such a record).
[[nodiscard]] bool reservation_phase_is_stale(const nlohmann::json& current,
                                              std::string_view record_phase);

// The Reservation object a component's ReservationUpserted creates: the record's labels plus
// managed_by_label = colony; a template whose one container requests the record's requests,
// with schedulerName, nodeName, priority (left out when MaxInt32, the default it derives to)
// and, for not_in_nodes, the required node affinity term matchFields metadata.name NotIn (as
// koord-descheduler writes it); owners (a controller owner always names apiVersion, kind, name
// and uid, which Koordinator's CRD requires); ttl as a Go duration, or expires; allocateOnce,
// allocatePolicy, unschedulable.
[[nodiscard]] nlohmann::json reservation_object(const wire::ReservationUpserted& r);

// The ElasticQuota object a component's QuotaUpserted writes: name, namespace ("default" when
// empty), the record's labels and annotations, spec.min/max with the record's keys (a key set
// of 0 with values: the non-zero values).
[[nodiscard]] nlohmann::json elastic_quota_object(const wire::QuotaUpserted& q);

}  // namespace colony::kube
