// ElasticQuota admission, preemption and revocation:
//  - pre_filter: plugin.go PreFilter + plugin_helper.go checkQuotaRecursive;
//  - can_preempt / select_victims_on_node / pod_eligible_to_preempt_others: preempt.go
//    (victims only from the preemptor's own quota, reprieved while the pod still fits the node
//    and used + request <= runtime);
//  - over_used_monitor / get_to_revoke_pod_list / revoke_step: quota_overuse_revoke.go.
// All pure: plain structs in, decision out; time is an argument.
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "actors/quota/quota_resources.hpp"
#include "actors/quota/quota_tree.hpp"
#include "messages/resources.hpp"

namespace colony::quota {

// What admission reads of one quota (a QuotaInfo snapshot).
struct quota_view {
  std::string name;
  std::string parent;  // koordinator-root-quota at the top
  resource_list min;
  resource_keys min_keys = no_keys;
  resource_list max;
  resource_keys max_keys = no_keys;
  resource_list runtime;
  resource_keys runtime_keys = no_keys;
  resource_list used;
  resource_list non_preemptible_used;
};

// The view of a quota in a refreshed tree; false when unknown.
[[nodiscard]] bool view_of(const quota_tree& tree, std::string_view name, quota_view& out);

enum class admission_code : std::uint8_t {
  success,
  skip,  // no quota associated (DisableDefaultQuota): the plugin does nothing
  unschedulable,
  error,  // the named quota does not exist
};

struct admission_result {
  admission_code code = admission_code::success;
  std::string quota;  // the quota that refused (or was checked)
  resource_keys exceed_dimensions = no_keys;
  std::string reason;  // Koordinator's status message
  [[nodiscard]] bool admitted() const {
    return code == admission_code::success || code == admission_code::skip;
  }
};

// PreFilter for a pod of chain[0]. chain = the pod's quota then its ancestors up to,
// excluding, koordinator-root-quota (only read when enable_check_parent_quota).
// pod_request: pod-level requests; it is masked to chain[0]'s max keys.
[[nodiscard]] admission_result pre_filter(std::span<const quota_view> chain,
                                          const resource_list& pod_request, bool non_preemptible,
                                          const elastic_quota_args& args);
// Same, reading the chain from a refreshed tree (quota "" → skip).
[[nodiscard]] admission_result pre_filter(const quota_tree& tree, std::string_view quota,
                                          const resource_list& pod_request, bool non_preemptible);
// checkQuotaRecursive from quota_name upwards, with Koordinator's quotaNameTopo message.
[[nodiscard]] admission_result check_quota_recursive(std::span<const quota_view> chain,
                                                     std::vector<std::string> quota_name_topo,
                                                     const resource_list& pod_request,
                                                     const elastic_quota_args& args);

// ---- preemption (preempt.go) --------------------------------------------------------------

struct preemption_pod {
  std::string name;
  std::string quota;
  std::int32_t priority = 0;
  std::int64_t start_time_ms = 0;
  bool non_preemptible = false;
  bool pdb_violating = false;  // its PodDisruptionBudget would be violated if evicted
  resource_list request;
  // The preemptor's quota books this pod (QuotaInfo.IsPodExist): only then does removing or
  // re-adding it change the quota's used (plugin.go RemovePod / AddPod).
  bool booked = true;
};

// util.MoreImportantPod: higher priority first, then the earlier start; then name (Colony's tie).
[[nodiscard]] bool more_important_pod(const preemption_pod& a, const preemption_pod& b);

// canPreempt: victim is preemptible, of strictly lower priority, in the same quota, and not in
// the default quota when disable_default_quota_preemption.
[[nodiscard]] bool can_preempt(const preemption_pod& pod, const preemption_pod& victim,
                               const elastic_quota_args& args);

// What PodEligibleToPreemptOthers reads of the preemptor besides its quota and priority.
struct preemptor_state {
  bool preempt_never = false;           // spec.preemptionPolicy == Never
  std::string nominated_node;           // status.nominatedNodeName; "" = none
  bool nominated_unresolvable = false;  // that node's status is UnschedulableAndUnresolvable
};

struct eligibility {
  bool eligible = true;
  std::string message;  // Koordinator's, when not eligible
};

// PodEligibleToPreemptOthers (preempt.go): a pod with preemptionPolicy Never never preempts;
// one already nominated waits while a lower-priority pod of its own quota is still terminating
// on that node (its earlier victims), unless the node is now unresolvable or gone.
// nominated_node_known: the node is in the snapshot; terminating: its pods with a deletion
// timestamp. Pure; the scheduler's pod_info carries neither the policy nor deletion state yet.
[[nodiscard]] eligibility pod_eligible_to_preempt_others(
    const preemption_pod& pod, const preemptor_state& state, bool nominated_node_known,
    std::span<const preemption_pod> terminating);

struct victims_result {
  bool feasible = false;             // false: no victims, or the pod does not fit even then
  std::vector<std::string> victims;  // most important first
  int num_pdb_violating = 0;
  std::string reason;
};

// SelectVictimsOnNode for one node: node_pods are the pods on it; node_allocatable its
// capacity (the pod "fits" when Σ remaining requests + its request fit, field by field);
// quota is the preemptor's quota snapshot (used counts the node's victims as well). Removing a
// booked victim lowers used per resource down to 0 at most (SubtractWithNonNegativeResult).
[[nodiscard]] victims_result select_victims_on_node(const preemption_pod& pod,
                                                    std::string_view node_name,
                                                    std::span<const preemption_pod> node_pods,
                                                    const resource_list& node_allocatable,
                                                    const quota_view& quota,
                                                    const elastic_quota_args& args);
// The same decision from what the first overload derives: node_used = Σ requests of every pod
// on the node (victims included) and potential = the node's pods that can_preempt() accepts,
// in any order. The plugin's PostFilter calls this one so it copies only the possible victims.
[[nodiscard]] victims_result select_victims_on_node(
    const preemption_pod& pod, std::string_view node_name, const resource_list& node_used,
    std::span<const preemption_pod> potential, const resource_list& node_allocatable,
    const quota_view& quota, const elastic_quota_args& args);

// ---- revocation (quota_overuse_revoke.go) ---------------------------------------------------

struct revoke_pod {
  std::string name;
  std::int32_t priority = 0;
  std::int64_t start_time_ms = 0;
  bool non_preemptible = false;
  resource_list request;
  resource_keys request_keys = keys_from_values;  // the pod request's ResourceList keys
};

// getToRevokePodList: assigned pods removed from least to most important (non-preemptible
// skipped) until used <= runtime; if still over, all removed are revoked; else they are added
// back from the most important, keeping each that fits. Reproduces Koordinator's masking of
// used to the removed pod's request keys. Result in Koordinator's order.
[[nodiscard]] std::vector<std::string> get_to_revoke_pod_list(
    const resource_list& used, resource_keys used_keys, const resource_list& runtime,
    resource_keys runtime_keys, std::vector<revoke_pod> assigned_pods);

// QuotaOverUsedGroupMonitor.monitor: true when used > runtime has lasted more than
// delay_evict_time_ms (then the clock restarts).
struct over_used_monitor {
  std::int64_t last_under_used_time_ms = 0;
  [[nodiscard]] bool monitor(std::int64_t now_ms, const resource_list& used,
                             resource_keys used_keys, const resource_list& runtime,
                             resource_keys runtime_keys, std::int64_t delay_evict_time_ms);
};

struct revoke_decision {
  std::string pod;
  std::string quota;
  std::string reason;
};

// The controller's state across steps: one monitor per quota.
struct revoke_controller_state {
  std::map<std::string, over_used_monitor, std::less<>> monitors;
};

// One revokePodDueToQuotaOverUsed step over a refreshed tree (quotas in name order; system and
// root excluded). Does nothing unless monitor_all_quotas and enable_runtime_quota.
[[nodiscard]] std::vector<revoke_decision> revoke_step(const quota_tree& tree,
                                                       revoke_controller_state& state,
                                                       std::int64_t now_ms);

}  // namespace colony::quota
