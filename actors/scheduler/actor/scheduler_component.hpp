// scheduler_component: one koord-scheduler as a component (actors/entities/component.hpp),
// run by actor_host as its own actor over the log.
//
// What it does:
//   - keeps the scheduler's read model from events: nodes (NodeRegistered, NodeConditionChanged,
//     NodeRemoved, NodeMetricReported, NodeBatchResourceUpdated for batch/mid allocatable),
//     pods (PodSubmitted, PodMutated, PodRejected, PodScheduled, PodBindRejected, PodEvicted,
//     PodFinished); ClockTicked only advances time;
//   - at the end of every delivered batch, pops the scheduling queue at the latest event time
//     and runs the profile's framework (NodeResourcesFit, LoadAwareScheduling, DeviceShare, ...
//     as build_framework makes it from the config, plus NodeUnschedulable) on each pod;
//   - emits PodBindProposed (chosen node's per-plugin scores, best alternatives, requests,
//     GPU allocations) or PodUnschedulable (per-plugin reasons with node counts).
//
// Optimistic view: a proposed pod is assumed on its node at once (the scheduler cache's
// AssumePod). PodScheduled confirms it (or moves it to the node another scheduler bound it to);
// PodBindRejected of its own proposal forgets it and requeues the pod with backoff
// (scheduling_queue, error path), and frees capacity for unschedulable pods as kube's
// AssignedPodDelete event does.
//
// Retries (options.queueing_hints, pod_max_in_unschedulable_pods_duration): node events of a
// batch are collected per node and, at the batch's end, offered to the queue with the
// profile's node-local QueueingHint (scheduling_queue.hpp); an unschedulable pod moves only
// when one of those nodes could now pass every Filter for it, or after 5 min without one. The node
// actors arbitrate, so a stale view costs a rejection, never an over-commit (docs/architecture.md
// "Binding").
//
// GPU models: NodeRegistered's label node.koordinator.sh/gpu-model is the node's model and
// PodSubmitted.gpu_models the pod's allowed ones; GPUModelAffinity (options.gpu_model_affinity)
// filters on them.
//
// Which pods: those whose schedulerName (PodSubmitted, or PodMutated when admission set one)
// is in options.scheduler_names; empty = every pod (several schedulers then race for the
// same pods, which the pod actor arbitrates).
//
// ElasticQuota (options.elastic_quota): the component keeps its own quota_tree, fed by a
// quota_book from the same quota, node and pod events as the quota component, and adds the
// ElasticQuota plugin (actors/scheduler/elastic_quota.hpp) at PreFilter and Reserve after
// the profile's plugins: a pod whose quota's used + request exceeds its runtime gets
// PodUnschedulable with ElasticQuota's reason. Reserve marks the pod used in the tree at once
// (assumed); a rejected proposal unmarks it; PodScheduled, PodFinished, PodEvicted update it.
// A pod's quota comes from its label quota.scheduling.koordinator.sh/name (else its
// namespace), non-preemptible from quota.scheduling.koordinator.sh/preemptible == "false".
// PostFilter preemption (when the profile enables ElasticQuota at postFilter, as Koordinator's
// shipped profile does): a pod the quota refuses may nominate a node where evicting lower-
// priority pods of its own quota makes room (Koordinator's victim choice, elastic_quota.hpp);
// the component then writes a PodEvicted (reason Preempted, naming the preemptor and the node)
// for each victim not already being preempted, and requeues the pod, which is retried when the
// victims' evictions come back (AssignedPodDelete). The Kubernetes sink carries each eviction
// out through the Eviction API.
//
// Reservations (schema v7; actors/scheduler/reservation.hpp, docs/reservation.md): a
// ReservationUpserted adds the Reservation plugin to the profile (weight 5000, Koordinator's
// shipped profile, unless the profile gives one) so runs without reservations decide and log as
// before. A pending reservation is scheduled as a reserve pod (key "Reservation/<name>",
// requests of its template, only on the template's node when it names one); placed, the
// component writes ReservationPhaseChanged Available with the node and holds the reservation
// there. Pods' owner rules read PodSubmitted's uid, labels, owner and reservation annotations.
// An owner's proposal names the reservation it consumes (PodBindProposed.reservation, checked by
// the node actor); once bound, an allocate-once reservation is Succeeded. As Koordinator's
// reservation controller (part of koord-scheduler), the component fails reservations whose
// ttl or expires passed (Failed / Expired) at their wake-up, and a placed reservation that is
// deleted Failed / Deleted (the node's fold then releases its hold). Reserve pods are not
// arbitrated by a node actor: two schedulers placing reservations at once can over-commit a node
// (one scheduler per cluster is the supported set-up for reservations).
//
// Determinism: time is event time (the maximum seen); the framework's tie-break is seeded; the
// queue and node list have total orders. Same events in the same order -> same bytes.
// Thread-safety: none (one owner: its actor).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "actors/entities/component.hpp"
#include "actors/quota/actor/quota_events.hpp"
#include "actors/scheduler/framework.hpp"
#include "actors/scheduler/reservation.hpp"
#include "actors/scheduler/resource_amplification.hpp"
#include "actors/scheduler/scheduler_config.hpp"
#include "actors/scheduler/scheduling_queue.hpp"
#include "messages/result.hpp"
#include "messages/string_map.hpp"

namespace colony::scheduler {

struct scheduler_component_options {
  // The component is named "koord-scheduler/<id>" (envelope source and the payloads'
  // scheduler field). Default: "0".
  std::string id = "0";
  // Default: Koordinator's shipped configuration (config/manager/scheduler-config.yaml).
  std::optional<scheduler_config> config;
  // Default: 0 (the first profile).
  std::size_t profile = 0;
  // Seed of the framework's tie-break. Default: 0.
  std::uint64_t seed = 0;
  // The framework's rule among equally scored nodes (framework_options::ties). Default: seeded.
  tie_break ties = tie_break::seeded;
  // schedulerName values served; empty = all pods. Default: empty.
  std::set<std::string, std::less<>> scheduler_names;
  // Runs the ElasticQuota plugin over the component's own quota tree. Default: false (the
  // shipped profile names ElasticQuota; Colony enables it explicitly so deployments without
  // quota events keep the plain framework).
  bool elastic_quota = false;
  // ElasticQuotaArgs of that tree when the profile's pluginConfig gives none. Default:
  // Koordinator's defaults (quota_tree.hpp).
  quota::elastic_quota_args elastic_quota_args;
  // koord-scheduler's feature gate ElasticQuotaIgnorePodOverhead (pkg/features, default off): a
  // pod's spec.overhead is left out of what it books in its quota. Applies over either args.
  bool elastic_quota_ignore_pod_overhead = false;
  // Colony's GPUModelAffinity filter (actors/scheduler/gpu_model_affinity.hpp): a pod that
  // requests a GPU and lists PodSubmitted.gpu_models runs only on nodes whose label
  // node.koordinator.sh/gpu-model is one of them. A profile that names the plugin gets it where
  // it names it; otherwise, with this option, the component adds it at Filter after the
  // profile's plugins, so Koordinator's shipped profile stays as shipped (it cannot name a
  // plugin Koordinator does not have). A profile that disables it (filter or multiPoint) wins.
  // It changes nothing for pods without gpu_models. Default: true.
  bool gpu_model_affinity = true;
  // kube's QueueingHints: a pod rejected by Filter on every node is retried (after its
  // backoff) only when a node event makes it possibly fit that node by the Filter plugins' own
  // arithmetic (framework::filter_hint: NodeResourcesFit's fitsRequest incl. batch/mid and the
  // pod count, DeviceShare's free devices, GPUModelAffinity, NodeUnschedulable's flags). Node
  // events: NodeRegistered (add/update), NodeConditionChanged, NodeBatchResourceUpdated, and a
  // pod leaving a node (PodFinished, PodEvicted, a rejected proposal, a binding elsewhere).
  // Pods refused at PreFilter/Reserve/Permit (ElasticQuota, Coscheduling) move on every node
  // event, as without hints. false = every node event moves every unschedulable pod (kube with
  // SchedulerQueueingHints off). Default: true.
  bool queueing_hints = true;
  // podMaxInUnschedulablePodsDuration: an unschedulable pod is retried after this long even
  // without an event (flushUnschedulablePodsLeftover, kube's safety net for what no event
  // signals: LoadAwareScheduling's usage, which NodeMetricReported changes without an event
  // here, and estimates that age). 0 = never. Default: 5 min (kube 1.34's
  // DefaultPodMaxInUnschedulablePodsDuration; k8s pkg/scheduler/backend/queue/scheduling_queue.go).
  duration_ms pod_max_in_unschedulable_pods_duration{300000};
  // Waits for admission: a submitted pod is queued only when its PodMutated arrives (and
  // dropped on PodRejected), as in Kubernetes, where the webhook mutates a pod before any
  // scheduler sees it. Set it when an admission component writes to the same log; without
  // one, pods would wait forever. Default: false.
  bool await_admission = false;
  // framework_options::parallelizer of the profile's framework: the host's threads for Filter
  // and Score (the decision is the same at any thread count). Default: empty (one thread).
  std::function<void(std::size_t n, const std::function<void(std::size_t)>& fn)> parallelizer;
  // framework_options::recorder: times extension points and plugins for the host's metrics
  // (never read by a decision). Default: none.
  std::shared_ptr<framework_recorder> recorder;
};

// What NodeNUMAResource and DeviceShare gave a bound pod (PodScheduled's cpuset, NUMA node
// resources and, schema v11, RDMA NICs / FPGAs).
struct bind_grant {
  numa::cpu_set cpuset;
  std::vector<numa::numa_amount> numa_resources;
  device::device_allocations devices;
};

class scheduler_component final : public entities::component {
 public:
  [[nodiscard]] static result<std::unique_ptr<scheduler_component>> create(
      scheduler_component_options opts = {});

  [[nodiscard]] std::string_view name() const override { return name_; }
  [[nodiscard]] bool wants(wire::Payload type) const override;
  void on_event(const wire::Envelope& env, std::vector<messages::byte_buffer>& out) override;
  void on_batch_end(std::vector<messages::byte_buffer>& out) override;
  // Wakes when a backoff ends, so a pod in backoff is retried then even if no event comes.
  [[nodiscard]] std::optional<std::int64_t> next_wakeup_ms() const override;
  void on_wakeup(std::int64_t now_ms, std::vector<messages::byte_buffer>& out) override;

  // Inspection (tests, explain).
  [[nodiscard]] std::size_t queued() const { return queue_->size(); }
  [[nodiscard]] std::size_t proposed() const;  // proposals without an answer yet
  [[nodiscard]] const node_info* node(std::string_view name) const;
  [[nodiscard]] event_time now() const { return now_; }
  // Plugins the profile names that Colony does not implement (skipped), sorted.
  [[nodiscard]] const std::vector<std::string>& skipped_plugins() const { return skipped_plugins_; }
  // The ElasticQuotaArgs its quota tree runs with (the profile's, else the option's), for the
  // quota controller a host runs beside it.
  [[nodiscard]] const quota::elastic_quota_args& quota_args() const { return quota_args_; }
  // The ElasticQuota tree; nullptr unless options.elastic_quota.
  [[nodiscard]] const quota::quota_tree* quota_tree() const {
    return quota_ ? quota_->tree().get() : nullptr;
  }
  // Device objects that did not parse (the field named), in log order.
  [[nodiscard]] const std::vector<error>& device_errors() const { return device_errors_; }

 private:
  enum class pod_phase : std::uint8_t { queued, proposed, bound, done };
  struct pod_rec {
    pod_info info;
    pod_phase phase = pod_phase::queued;
    std::string node;              // assumed (proposed) or bound node
    std::optional<queued_pod> qp;  // while proposed: what to requeue on rejection
    bool ours = true;              // served by this scheduler
    bool admitted = true;          // false while awaiting admission (options.await_admission)
    bool reserve = false;          // a Reservation's reserve pod
    std::string reservation;       // the reservation its outstanding proposal consumes
  };
  struct rsv_rec {
    reservation_info info;  // phase, node, owners as the log says
    std::string pin;        // template.spec.nodeName
    // The template's required affinity `metadata.name NotIn` (a migration keeps its
    // reservation off the pod's node); sorted.
    std::vector<std::string> not_in;
    std::int32_t priority = 0;
    bool ours = true;
    bool expiry_sent = false;
    bool deleted = false;  // its object was deleted: a later upsert is a new reservation
  };
  struct node_flags {
    bool ready = false;
    bool unschedulable = false;
    bool removed = false;
    bool registered = false;  // a NodeRegistered was seen (the next one is an update)
  };
  class node_unschedulable;

  explicit scheduler_component(scheduler_component_options opts);

  std::size_t node_slot(std::string_view name);
  void node_event(std::size_t i, cluster_event_type type) { events_.try_emplace(i, type); }
  void schedule_one(queued_pod qp, std::vector<messages::byte_buffer>& out);
  void unassume(pod_rec& p);
  void on_bound(std::string_view pod, std::string_view node, const resource_list& requests,
                std::vector<gpu_allocation> gpus, std::string_view reservation,
                bind_grant grant = {});
  // PostFilter's nomination: PodEvicted (Preempted) for each victim not already on its way out.
  void preempt(const pod_info& preemptor, const std::string& node,
               const std::vector<std::string>& victims, std::vector<messages::byte_buffer>& out);
  void enable_reservations();
  // A Device object (ObjectObserved kind Device): the node's device model, its GPUs mirrored
  // into node_info::gpus; a deleted one, or one that does not parse, leaves the node none.
  void observe_device(const wire::ObjectObserved& o);
  void on_reservation_upserted(const wire::ReservationUpserted& e);
  void on_reservation_phase(const wire::ReservationPhaseChanged& e);
  void hold_on_node(const rsv_rec& r);
  void release_from_node(std::string_view name, std::string_view node);
  void schedule_reserve_pod(pod_rec& p, queued_pod qp, std::vector<messages::byte_buffer>& out);
  void emit_reservation_phase(const rsv_rec& r, std::string_view phase, std::string_view reason,
                              std::string_view owner, std::vector<messages::byte_buffer>& out);
  void expire_reservations(std::vector<messages::byte_buffer>& out);

  scheduler_component_options opts_;
  std::string name_;
  std::unique_ptr<framework> fwk_;
  std::vector<std::string> skipped_plugins_;
  quota::elastic_quota_args quota_args_;
  std::shared_ptr<node_unschedulable> unsched_;
  std::unique_ptr<quota::quota_book> quota_;  // with options.elastic_quota
  // Victims whose PodEvicted (Preempted) this component wrote and has not seen come back.
  std::set<std::string, std::less<>> preempting_;
  std::map<std::string, std::int64_t, std::less<>> weights_;
  cycle_state cycle_;
  std::unique_ptr<scheduling_queue> queue_;
  std::vector<node_info> nodes_;  // in registration order (framework node order)
  std::vector<node_flags> flags_;
  // Per node (same index): the node's own allocatable cpu/memory and its
  // node.koordinator.sh/resource-amplification-ratio, from which nodes_[i].allocatable's cpu and
  // memory are amplified (resource_amplification.hpp).
  struct node_amplification {
    resource_list raw;
    amplification_ratios ratios;
  };
  std::vector<node_amplification> amp_;
  void amplify_node(std::size_t i);
  string_map<std::size_t> node_index_;  // lookup only, never iterated
  std::map<std::string, pod_rec, std::less<>> pods_;
  std::map<std::string, rsv_rec, std::less<>> reservations_;  // by name
  std::shared_ptr<owner_classes> owner_classes_;
  std::shared_ptr<reservation_plugin> reservation_plugin_;  // once a reservation was seen
  // Succeeded phases to write at the batch's end: (reservation, owner pod).
  std::vector<std::pair<std::string, std::string>> succeeded_;
  // Placed reservations deleted in this batch: written Failed / Deleted at its end, so the
  // node's fold releases what they held.
  std::vector<std::string> deleted_;
  event_time now_{0};
  std::int64_t last_offset_ = -1;
  // Cluster events of the current batch, by node index (ordered: deterministic move order);
  // the value is the first event's type. Moved on at the batch's end.
  std::map<std::size_t, cluster_event_type> events_;
  std::vector<error> device_errors_;
  messages::event_builder b_;
};

}  // namespace colony::scheduler
