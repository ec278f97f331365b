// quota_tree: Koordinator's ElasticQuota group quota manager (pkg/scheduler/plugins/
// elasticquota/core/group_quota_manager.go, quota_info.go, runtime_quota_calculator.go,
// scale_minquota_when_over_root_res.go) as a pure, deterministic value type.
//
// What it holds: ElasticQuota specs (one or more trees keyed by the tree-id label, each under
// a virtual koordinator-root-quota; koordinator-system-quota and koordinator-default-quota
// always exist), pods with their quota, and the cluster total (Σ node allocatable).
//
// What refresh() computes, for every quota, as ONE deterministic fixed point:
//   bottom-up  request / child-request / limited request / used / non-preemptible used
//              (pod amounts masked to the quota's max keys; Request = ChildRequest,
//              max(ChildRequest, min) when allow-lent-resource=false; the parent receives
//              min(Request, max) per key of max);
//   top-down   per parent, per resource: min scaling when Σ children's min > parent total
//             , then the weighted Hamilton redistribution; a child's runtime is
//              the total of its own children.
// Difference from Koordinator: Koordinator refreshes lazily, one quota at a
// time along the path root → quota, so a sibling's scaled min is only updated when that
// sibling itself is refreshed and results can depend on refresh order. Colony scales every
// sibling with the same parent total before dividing, which is what Koordinator converges
// to once all siblings have been refreshed (its tests refresh all siblings first). Because
// request flows only upward and runtime only downward, one bottom-up pass then one top-down
// pass reaches the fixed point; insertion order never matters (children are visited by
// name and the Hamilton tie rule is by name).
//
// Other documented choices:
//  - System and default quotas are outside the calculation; their used is subtracted from
//    the default tree's total; their runtime is their max (RefreshRuntime returns max), so
//    admission against them is effectively unlimited.
//  - A quota whose parent does not exist (or that sits in a parent cycle) is an orphan:
//    no runtime (0) and excluded from its would-be parent's division until the parent appears.
//  - Parent totals are computed over every resource field; Koordinator skips min scaling
//    for a resource key the cluster total lacks entirely, Colony treats it as total 0.
//  - ElasticQuotaGuaranteeUsage (guarantee) is off: guarantee is 0 in the tree (the
//    calculator function below still takes one, for Koordinator's calculator tests).
//
// Thread-safety: none; one owner (the quota actor) mutates and reads it.
#pragma once

#include <cstdint>
#include <limits>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "actors/quota/quota_resources.hpp"
#include "messages/names.hpp"
#include "messages/resources.hpp"
#include "messages/result.hpp"

namespace colony::quota {

// Short aliases for the ElasticQuota names; each is defined once, in messages/names.hpp.
namespace quota_names {
inline constexpr std::string_view root_quota = names::root_quota_name;
inline constexpr std::string_view system_quota = names::system_quota_name;
inline constexpr std::string_view default_quota = names::default_quota_name;
using names::annotation_allocated;
using names::annotation_child_request;
using names::annotation_guaranteed;
using names::annotation_max_strict_check_resource_keys;
using names::annotation_non_preemptible_request;
using names::annotation_non_preemptible_used;
using names::annotation_quota_namespaces;
using names::annotation_resource_keys;
using names::annotation_total_resource;
using names::annotation_unschedulable_resource;
using names::label_allow_force_update;
using names::label_quota_ignore_default_tree;
using names::label_quota_profile;
}  // namespace quota_names

using string_map = std::map<std::string, std::string, std::less<>>;

// ElasticQuotaArgs (pkg/scheduler/apis/config/v1beta3/defaults.go SetDefaults_ElasticQuotaArgs)
// plus the feature gates the quota code reads.
struct elastic_quota_args {
  std::int64_t delay_evict_time_ms = 120'000;    // Default: 120 s (delayEvictTime)
  std::int64_t revoke_pod_interval_ms = 1'000;   // Default: 1 s (revokePodInterval)
  bool monitor_all_quotas = false;               // Default: false; revoke controller off
  bool enable_check_parent_quota = false;        // Default: false
  bool enable_runtime_quota = true;              // Default: true; false compares with max
  bool enable_min_quota_scale = true;            // Default: true
  bool disable_default_quota_preemption = true;  // Default: true
  std::string quota_group_namespace = "koordinator-system";  // Default: koordinator-system
  // Default: MaxInt64/5 for cpu and memory (cpu held in milli-cores: MaxInt64/5 milli,
  // Koordinator's MaxInt64/5 cores does not fit an int64 of milli-cores).
  resource_list system_quota_group_max{std::numeric_limits<std::int64_t>::max() / 5,
                                       std::numeric_limits<std::int64_t>::max() / 5};
  resource_list default_quota_group_max{std::numeric_limits<std::int64_t>::max() / 5,
                                        std::numeric_limits<std::int64_t>::max() / 5};
  bool disable_default_quota = false;  // Default: false (feature gate DisableDefaultQuota)
  // Feature gate ElasticQuotaIgnorePodOverhead (pkg/features/features.go, Default: false):
  // pod.spec.overhead is left out of what a pod books (core/helper.go PodRequests).
  bool elastic_quota_ignore_pod_overhead = false;
};

// core.PodRequests (pkg/scheduler/plugins/elasticquota/core/helper.go): the pod's requests as
// quota accounting counts them. requests is Kubernetes' PodRequests, overhead included;
// overhead is pod.spec.overhead. With ElasticQuotaIgnorePodOverhead the overhead is taken out
// (PodResourcesOptions{ExcludeOverhead: true} adds it last, so subtracting it is exact).
[[nodiscard]] resource_list quota_pod_requests(const resource_list& requests,
                                               const resource_list& overhead,
                                               bool ignore_pod_overhead);

// One ElasticQuota as the quota code reads it: spec plus the decoded koordinator labels and
// annotations. The raw labels/annotations stay for the webhook and for round trips.
struct quota_spec {
  std::string name;
  std::string namespace_name;
  std::string parent;                // label parent; empty = koordinator-root-quota
  std::string tree_id;               // label tree-id
  bool is_parent = false;            // label is-parent == "true"
  bool allow_lent_resource = true;   // label allow-lent-resource != "false"
  bool is_tree_root = false;         // label is-root == "true"
  bool ignore_default_tree = false;  // label ignore-default-tree == "true"
  bool allow_force_update = false;   // label allow-force-update == "true"
  resource_list min;
  resource_list max;
  resource_list shared_weight;  // annotation shared-weight; absent/bad/all-zero = max
  resource_keys min_keys = keys_from_values;
  resource_keys max_keys = keys_from_values;
  resource_keys shared_weight_keys = keys_from_values;
  resource_list used;  // status.used (the webhook's strict max >= used check)
  resource_keys used_keys = keys_from_values;
  resource_list total_resource;  // annotation total-resource (tree roots)
  resource_keys total_resource_keys = no_keys;
  // annotation guaranteed (GetGuaranteed; unparsable reads as empty): what the scheduler last
  // reported as guaranteed, read by the webhook's ElasticQuotaGuaranteeUsage checks.
  resource_list guaranteed;
  resource_keys guaranteed_keys = no_keys;
  std::vector<std::string> namespaces;  // annotation namespaces (JSON list)
  string_map labels;
  string_map annotations;
};

// Builds a quota_spec from an object's metadata and spec, decoding every label/annotation of
// the way apis/extension/elastic_quota.go does (lenient: an unparsable shared-weight
// falls back to max, an unparsable namespaces list reads as none).
[[nodiscard]] quota_spec decode_quota(std::string name, std::string namespace_name,
                                      string_map labels, string_map annotations,
                                      keyed_resources min, keyed_resources max,
                                      keyed_resources used = {});

// A pod as the quota manager books it (PodInfo in quota_info.go).
struct quota_pod {
  std::string name;  // "namespace/name", unique
  std::string namespace_name;
  std::string quota;                              // the associated quota (get_quota_name)
  resource_list request;                          // pod-level requests, overhead included
  resource_keys request_keys = keys_from_values;  // the request's ResourceList keys
  // pod.spec.overhead (part of request). upsert_pod() applies quota_pod_requests() with the
  // tree's ElasticQuotaIgnorePodOverhead gate, then clears it: a stored pod's request is what
  // it books, and upserting a stored copy again changes nothing.
  resource_list overhead;
  bool assigned = false;         // nodeName set and not terminated, or reserved
  bool non_preemptible = false;  // label preemptible == "false"
  std::int32_t priority = 0;
  std::int64_t start_time_ms = 0;  // for MoreImportantPod's tie rule
  std::string node;
};

// A quota's computed state (the annotations the scheduler writes back).
struct quota_status {
  std::string name;
  std::string parent;  // resolved parent (koordinator-root-quota at the top)
  std::string tree_id;
  bool in_tree = false;   // false: orphan, system or default (no computed runtime)
  resource_list runtime;  // masked to the max keys
  resource_keys runtime_keys = no_keys;
  resource_list used;
  resource_list request;
  resource_list non_preemptible_used;
  resource_list non_preemptible_request;
  resource_list child_request;
  resource_list limited_request;  // min(request, max) per max key: what the parent sees
  resource_list auto_scale_min;   // min after ScaleMinQuotaManager scaling
  bool operator==(const quota_status&) const = default;
};

// One child of a parent in one resource dimension (runtime_quota_calculator.go quotaNode).
struct runtime_node {
  std::string_view name;
  std::int64_t shared_weight = 0;
  std::int64_t request = 0;
  std::int64_t min = 0;
  std::int64_t guarantee = 0;
  bool allow_lent_resource = true;
  std::int64_t runtime = 0;  // output
};

// Reusable buffers for redistribution (no allocation per call once warm).
struct redistribution_scratch {
  std::vector<std::uint32_t> hungry, next;
  std::vector<std::int64_t> deltas;
  struct remainder_entry {
    unsigned __int128 remainder;
    std::uint32_t index;
  };
  std::vector<remainder_entry> remainders;
};

// quotaTree.redistribution + iterationForRedistribution + computeHamiltonDeltas:
// divides total among nodes; ties of the largest-remainder step go to the smaller name.
void redistribution(std::int64_t total, std::span<runtime_node> nodes,
                    redistribution_scratch& scratch);
void redistribution(std::int64_t total, std::span<runtime_node> nodes);

// ScaleMinQuotaManager.getScaledMinQuota for one resource: the scaled min of a child
// whose original min is child_min when the children's mins sum to sum_min over total.
[[nodiscard]] std::int64_t scaled_min(std::int64_t total, std::int64_t child_min,
                                      std::int64_t sum_min);

class quota_tree {
 public:
  explicit quota_tree(elastic_quota_args args = {});

  // Adds or replaces a quota (UpdateQuota). The root name is refused; system/default may be
  // updated (their max), not deleted.
  [[nodiscard]] result<void> upsert_quota(quota_spec spec);
  [[nodiscard]] result<void> delete_quota(std::string_view name);
  // Σ node allocatable (UpdateClusterTotalResource, as an absolute value).
  void set_cluster_total(const resource_list& total);

  // Adds or replaces a pod (OnPodAdd / OnPodUpdate), by pod name.
  [[nodiscard]] result<void> upsert_pod(quota_pod pod);
  bool remove_pod(std::string_view pod_name);

  // updatePodIsAssigned (group_quota_manager.go), as the scheduler's Reserve/Unreserve do:
  // marks a booked pod assigned (node = where) or not. Used and non-preemptible used of the
  // quota and its ancestors are updated at once, so status() reads the new used without a
  // refresh (request, hence runtime, does not change). False for an unknown pod.
  bool update_pod_is_assigned(std::string_view pod_name, bool assigned, std::string_view node = {});
  // True when something that can change a runtime (quotas, pods' requests, the cluster
  // total, used of the system/default quotas) changed since the last computation.
  [[nodiscard]] bool needs_refresh() const noexcept { return needs_refresh_; }
  // The same computation as refresh() without consuming the change report: the next
  // refresh() still returns every status changed since the previous refresh() (the
  // scheduler plugin refreshes runtime lazily in PreFilter; the quota actor reports).
  void refresh_runtime();

  // Recomputes every quota (the fixed point described above) and returns the statuses whose
  // runtime, used, request or non-preemptible used changed since the previous refresh (all
  // quotas on the first), in name order.
  std::vector<quota_status> refresh();

  // State as of the last refresh(); nullptr for an unknown name.
  [[nodiscard]] const quota_status* status(std::string_view name) const;
  [[nodiscard]] const quota_spec* spec(std::string_view name) const;
  // Parent chain of a quota, nearest first, excluding koordinator-root-quota.
  [[nodiscard]] std::vector<std::string> ancestors(std::string_view name) const;
  [[nodiscard]] std::vector<std::string> quota_names() const;  // sorted
  [[nodiscard]] bool has_children(std::string_view name) const;
  // Pods booked to a quota, sorted by name.
  [[nodiscard]] std::vector<const quota_pod*> pods_of(std::string_view quota) const;
  [[nodiscard]] const quota_pod* pod(std::string_view name) const;
  // Total divided in a tree as of the last refresh ("" = default tree).
  [[nodiscard]] resource_list tree_total(std::string_view tree_id) const;
  [[nodiscard]] const resource_list& cluster_total() const { return cluster_total_; }
  [[nodiscard]] const elastic_quota_args& args() const { return args_; }

  // GetQuotaName + getPodAssociateQuotaNameAndTreeID: label, else a quota named like
  // the namespace in that namespace, else the quota whose namespaces annotation lists it
  // (first by name), else the default quota ("" with DisableDefaultQuota).
  [[nodiscard]] std::string get_quota_name(std::string_view pod_namespace,
                                           std::string_view quota_label) const;

 private:
  struct pod_sums {
    resource_list request, used, np_request, np_used;
  };
  struct node {
    quota_spec spec;
    resource_list weight;  // shared weight as used (defaulted to max)
    bool special = false;  // system or default
    int parent = -1;       // index; -1 = virtual root; -2 = missing parent
    int tree = -1;
    bool in_tree = false;
    const pod_sums* sums = nullptr;
    pod_sums self;             // own pods masked to the max keys, kept current by book()
    resource_keys active = 0;  // keys with a non-zero limited request or min (skip idle keys)
    std::vector<int> children;
    resource_list runtime_raw;  // runtime before masking: the total of this quota's children
    // Computed values live in status (request, used, ... are written there directly).
    quota_status status;
    // What the last refresh() reported, for change detection (QuotaRuntimeUpdated fields).
    struct emitted_fields {
      resource_list runtime, used, request, non_preemptible_used;
      resource_keys runtime_keys = no_keys;
      bool valid = false;
    } emitted;
  };
  struct tree_info {
    std::string id;
    std::vector<int> children;
    resource_list total;
  };

  [[nodiscard]] int find_index(std::string_view name) const;
  void rebuild_index();
  void rebuild_topology();
  void rebuild_namespace_index();
  void distribute(const resource_list& total, const std::vector<int>& children);
  void book(const quota_pod& pod, int sign);
  static void refresh_self(node& n);

  elastic_quota_args args_;
  resource_list cluster_total_;
  std::vector<node> nodes_;  // sorted by name
  std::map<std::string, int, std::less<>> index_;
  std::map<std::string, std::string, std::less<>> namespace_to_quota_;
  std::unordered_map<std::string, quota_pod> pods_;
  std::map<std::string, pod_sums, std::less<>> sums_;
  std::vector<tree_info> trees_;  // sorted by id; "" first
  std::vector<int> topo_;         // parents before children
  std::vector<int> order_;        // every node, by name
  bool topology_dirty_ = true;
  bool needs_refresh_ = true;
  // Scratch reused by refresh().
  std::vector<runtime_node> calc_;
  redistribution_scratch scratch_;
};

}  // namespace colony::quota
