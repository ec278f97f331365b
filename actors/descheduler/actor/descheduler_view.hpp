// descheduler_view: what koord-descheduler's informers hold, folded from the log: nodes
// (NodeRegistered, NodeConditionChanged, NodeRemoved), live pods (PodSubmitted, PodMutated,
// PodScheduled; PodEvicted, PodFinished and PodRejected remove them), each node's latest
// NodeMetric (NodeMetricReported) and every PodMigrationJob (MigrationJobCreated,
// MigrationJobPhaseChanged). Both descheduler components (descheduler_component,
// migration_controller_component) keep one; the policies read it as plain views
// (actors/descheduler/descheduler_types.hpp, migration_job.hpp).
//
// Colony's stand-ins: a pod is Ready once bound (the sim writes no readiness); a workload's
// desired replicas are its live pods (the log carries no workload objects); a pod's owner is
// PodSubmitted.owner ("Kind/name"); pods carry no volumes, so none has local storage or a PVC.
// Deterministic: walks are over ordered maps; the hash maps (pods by key, the workloads' states)
// only answer lookups. Single owner; not copyable (those hold views of the pods map's nodes).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "actors/descheduler/descheduler_types.hpp"
#include "actors/descheduler/job_index.hpp"
#include "actors/descheduler/migration_job.hpp"
#include "colony_generated.h"
#include "messages/resources.hpp"

namespace colony::descheduler_actor {

// Whether the view folds this payload type.
[[nodiscard]] bool view_wants(wire::Payload type);

// A Resources table as descheduler amounts (names from messages/names.hpp).
[[nodiscard]] descheduler::resource_amounts to_amounts(const resource_list& r);

struct view_job {
  descheduler::job_info info;
  std::string reason;   // the eviction reason it was created with
  std::string trigger;  // the plugin that created it ("LowNodeLoad")
  std::int64_t ttl_ms = 0;
  std::int64_t created_offset = -1;
  std::string status_reason;  // the latest phase change's reason
  bool paused = false;        // spec.paused: arbitration lets it pass, nothing reconciles it
};

class descheduler_view {
 public:
  descheduler_view() = default;
  descheduler_view(const descheduler_view&) = delete;
  descheduler_view& operator=(const descheduler_view&) = delete;
  descheduler_view(descheduler_view&&) = default;
  descheduler_view& operator=(descheduler_view&&) = default;
  ~descheduler_view() = default;

  // Folds one event. REQUIRES: env passed messages::decode().
  void on_event(const wire::Envelope& env);

  [[nodiscard]] const std::map<std::string, descheduler::pod_info, std::less<>>& pods() const {
    return pods_;
  }
  [[nodiscard]] const descheduler::pod_info* pod(std::string_view key) const;
  [[nodiscard]] const resource_list* requests(std::string_view key) const;
  [[nodiscard]] const std::map<std::string, descheduler::node_info, std::less<>>& nodes() const {
    return nodes_;
  }
  [[nodiscard]] const descheduler::node_metric_info* metric(std::string_view node) const;
  [[nodiscard]] std::int64_t metric_offset(std::string_view node) const;
  // Live pods bound to a node, by key.
  [[nodiscard]] std::vector<const descheduler::pod_info*> pods_on(std::string_view node) const;
  // The workload of a pod's controller (its live pods), nullopt for a pod without one.
  [[nodiscard]] std::optional<descheduler::workload_info> workload(
      const descheduler::pod_info& p) const;
  // The same workload's state (migration_filter.hpp workload_state_of), kept until one of its
  // pods comes or goes; nullptr for a pod without one. Valid until the next on_event.
  [[nodiscard]] const descheduler::workload_state* workload_state(
      const descheduler::pod_info& p) const;

  // Jobs by name, and the flat list of the non-final ones (the filters count from an index).
  [[nodiscard]] const std::map<std::string, view_job, std::less<>>& jobs() const { return jobs_; }
  [[nodiscard]] view_job* job(std::string_view name);
  [[nodiscard]] const std::vector<descheduler::job_info>& job_list() const;
  // A job a component decided on before it is in the log (so its next filter counts it).
  void add_job(view_job j);
  void set_phase(std::string_view name, descheduler::job_phase p, std::string_view reason);
  void mark_passed(std::string_view name);
  // The active (Pending or Running) job of a pod, if any.
  [[nodiscard]] const view_job* active_job_of(std::string_view pod) const;

  [[nodiscard]] descheduler::migration_view migration() const;

 private:
  void remove_pod(std::string_view key);
  // The listed copy of a job, nullptr when the list is stale or does not hold it.
  [[nodiscard]] descheduler::job_info* listed(std::string_view name) const;
  std::map<std::string, descheduler::pod_info, std::less<>> pods_;
  descheduler::pod_lookup pod_index_;  // pods_ by key, for lookups
  std::map<std::string, resource_list, std::less<>> requests_;
  std::map<std::string, std::set<std::string, std::less<>>, std::less<>> by_node_;
  std::map<std::string, std::set<std::string, std::less<>>, std::less<>> by_owner_;  // ns/Kind/name
  // by_owner_'s states, built at the first ask after a change (a pod of the owner comes or goes;
  // nothing else changes what they hold: a pod's readiness is fixed when it is submitted).
  mutable descheduler::workload_state_table workload_states_;
  std::map<std::string, descheduler::node_info, std::less<>> nodes_;
  std::map<std::string, descheduler::node_metric_info, std::less<>> metrics_;
  std::map<std::string, std::int64_t, std::less<>> metric_offsets_;
  std::map<std::string, view_job, std::less<>> jobs_;
  // pod -> its active job; a hash map: the descheduler's filter asks it for every pod it judges.
  std::unordered_map<std::string, std::string, descheduler::key_hash, std::equal_to<>>
      active_by_pod_;
  descheduler::job_index jobs_index_;  // the active jobs, as the filters count them
  // The non-final jobs by name; job_list_dirty_: rebuilt at the next job_list().
  mutable std::vector<descheduler::job_info> job_list_;
  mutable bool job_list_dirty_ = true;
};

}  // namespace colony::descheduler_actor
