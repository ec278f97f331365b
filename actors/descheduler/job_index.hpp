// The active (Pending or Running) PodMigrationJobs indexed the ways the migration controller's
// limits count them (pkg/descheduler/controllers/migration/arbitrator/filter.go
// filterMaxMigratingGlobally / PerNode / PerNamespace / PerWorkload, sort.go
// SortJobsByMigratingNum): in all, by the namespace of the job's pod key, by the node of its pod
// and by its pod's workload. Koordinator lists the jobs for every pod it judges; walking every job
// for every judged pod is quadratic at cluster scale (10,000 jobs x 10,000 pods), so the owner of
// the jobs keeps this index and each filter asks a count.
//
// Each count has two modes (migration_filter.hpp job_counts): outside an arbitration pass every
// active job counts; inside one a Pending job counts only once it has passed arbitration.
//
// Contract: the owner calls add() for a job as it becomes what it is now and remove() with the job
// exactly as it was added (a phase change or passing arbitration is a remove then an add), and
// pod_changed() whenever the pod under a key appears, moves to another node or goes away, so that
// the node and workload a job is filed under are those of the pod the filters would look up.
// Final jobs are ignored. Deterministic: the tables are hash maps that only answer lookups, and a
// workload's pods are walked in key order. Single owner.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <unordered_map>

#include "actors/descheduler/migration_job.hpp"

namespace colony::descheduler {

class job_index {
 public:
  // The job's pod as the filters would find it (nullptr: not found).
  void add(const job_info& j, const pod_info* pod);
  void remove(const job_info& j);
  // The same as remove(j), then add() of j marked passed arbitration, when j is Pending and not
  // passed: its filing is kept rather than redone (the contract keeps it current).
  // False, and nothing changed, when j is not Pending and unpassed with a filed entry: the owner
  // then does the remove and add itself.
  [[nodiscard]] bool mark_passed(const job_info& j);
  void pod_changed(std::string_view key, const pod_info* pod);
  void clear();

  // Counting jobs (non-distinct) in all.
  [[nodiscard]] std::int64_t counting(bool arbitrating) const;
  // Counting jobs of the pod under `key`.
  [[nodiscard]] std::int64_t counting_of_pod(std::string_view key, bool arbitrating) const;
  // Counting jobs whose pod key's namespace (before the first '/'; "" without one) is `ns`.
  [[nodiscard]] std::int64_t counting_in_namespace(std::string_view ns, bool arbitrating) const;
  // Distinct pods found on `node` with a counting job.
  [[nodiscard]] std::int64_t pods_counting_on_node(std::string_view node, bool arbitrating) const;
  // The node the pod under `key` is filed under ("" when it has no active job or no node).
  [[nodiscard]] std::string_view node_of(std::string_view key) const;
  // Calls fn(key) for each pod with a counting job whose key's namespace is `ns` and that is found
  // in namespace `ns` with controller `owner`.
  template <class F>
  void for_each_workload_pod(std::string_view ns, const owner_ref& owner, bool arbitrating,
                             F&& fn) const {
    const auto g = groups_.find(workload_ref{ns, owner.kind, owner.name});
    if (g == groups_.end()) return;
    for (const auto& [key, e] : g->second.members)
      if (e->key_in_ns && (arbitrating ? e->arbitrated : e->active) > 0) fn(key);
  }
  // Jobs (non-distinct) counting inside a pass whose pod key starts with "<ns>/" and whose pod is
  // found in namespace `ns` with controller `owner` (SortJobsByMigratingNum's count).
  [[nodiscard]] std::int64_t migrating_in_workload(std::string_view ns,
                                                   const owner_ref& owner) const;

 private:
  // Not noexcept: the tables then keep each key's hash (see joined_key_hash).
  struct string_hash {
    using is_transparent = void;
    std::size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  template <class V>
  using table = std::unordered_map<std::string, V, string_hash, std::equal_to<>>;
  struct entry {
    std::int64_t active = 0;      // its non-final jobs
    std::int64_t arbitrated = 0;  // of them Running, or Pending and passed arbitration
    std::string node;             // filed under; "" none
    std::string group;            // filed under; "" none
    bool key_in_ns = false;       // the key's namespace is the pod's
    bool key_prefixed = false;    // the key starts with "<pod's ns>/"
  };
  struct group {
    std::map<std::string_view, const entry*, std::less<>> members;  // keys live in entries_
    std::int64_t migrating = 0;  // arbitrated of the key_prefixed members
  };
  [[nodiscard]] static std::string group_key(std::string_view ns, const owner_ref& owner);
  void file(std::string_view key, entry& e, const pod_info* pod);
  void unfile(std::string_view key, entry& e);
  table<entry> entries_;                 // by pod key, while active > 0
  std::array<std::int64_t, 2> total_{};  // [arbitrating]
  table<std::array<std::int64_t, 2>> by_namespace_;
  table<std::array<std::int64_t, 2>> pods_by_node_;
  // By "<ns>\0<Kind>\0<name>", found from a pod's parts without building that key.
  std::unordered_map<std::string, group, joined_key_hash<'\0'>, joined_key_equal<'\0'>> groups_;
};

}  // namespace colony::descheduler
