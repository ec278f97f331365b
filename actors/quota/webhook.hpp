// ElasticQuota webhook rules (pkg/webhook/elasticquota/quota_topology.go,
// quota_topology_check.go), the ElasticQuotaProfile → tree-root quota mapping
// (pkg/quota-controller/profile/profile_controller.go), and loading both CRDs from YAML.
//
// Every check returns Koordinator's first error as a colony::error: code invalid_input (the
// object is malformed) or failed_precondition (valid, refused by the current topology),
// message = Koordinator's text, where = the field it names (e.g. "spec.min[memory]",
// "metadata.labels[quota.scheduling.koordinator.sh/parent]").
//
// quota_topology is the webhook's own view of all quotas (quotaInfoMap, quotaHierarchyInfo,
// namespaceToQuotaMap). Facts it cannot know (whether pods are bound to a quota) are
// arguments. Pure: no clock, no I/O.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "actors/quota/quota_tree.hpp"
#include "messages/resources.hpp"
#include "messages/result.hpp"

namespace colony::quota {

// Feature gates the webhook reads.
struct webhook_features {
  bool elastic_quota_enable_update_resource_key =
      false;  // Default: false (max keys ⊆ instead of ==)
  // ElasticQuotaGuaranteeUsage (pkg/features/features.go, Default: false): validation also
  // runs checkGuaranteedForMin.
  bool elastic_quota_guarantee_usage = false;
};

// fillQuotaDefaultInformation's shared-weight reconciliation: add max keys missing from the
// weight (with max's value), drop weight keys max lacks. Returns true when it changed.
bool fixed_shared_weight(keyed_resources& shared_weight, const resource_list& max,
                         resource_keys max_keys);

class quota_topology {
 public:
  quota_topology();

  // Mutating webhook on create (fillQuotaDefaultInformation): parent label defaults to root,
  // tree-id copied from the parent, shared-weight annotation defaulted/reconciled to max.
  [[nodiscard]] result<void> fill_quota_default_information(quota_spec& quota) const;

  // validateQuotaSelfItem: max, min, shared-weight >= 0; min keys ⊆ max keys and min <= max;
  // max >= status.used for the max-strict-check-resource-keys.
  [[nodiscard]] static result<void> validate_quota_self_item(const quota_spec& quota);

  // ValidAddQuota / ValidUpdateQuota / ValidDeleteQuota. On success the topology records the
  // change. has_bound_pods: whether pods are bound to the (old) quota; pod_count: pods
  // labelled with it.
  [[nodiscard]] result<void> valid_add_quota(const quota_spec& quota);
  [[nodiscard]] result<void> valid_update_quota(const quota_spec& old_quota,
                                                const quota_spec& new_quota, bool has_bound_pods);
  [[nodiscard]] result<void> valid_delete_quota(const quota_spec& quota, std::size_t pod_count);

  // The pieces of validateQuotaTopology, exposed for Koordinator's unit tests.
  [[nodiscard]] result<void> validate_quota_topology(const quota_spec* old_quota,
                                                     const quota_spec& quota,
                                                     bool has_bound_pods) const;
  [[nodiscard]] result<void> check_tree_id(const quota_spec* old_quota,
                                           const quota_spec& quota) const;
  [[nodiscard]] result<void> check_is_parent_change(const quota_spec* old_quota,
                                                    const quota_spec& quota,
                                                    bool has_bound_pods) const;
  [[nodiscard]] result<void> check_parent_quota_info(std::string_view name,
                                                     std::string_view parent) const;
  [[nodiscard]] result<void> check_sub_and_parent_group_quota_key(const quota_spec& quota) const;
  [[nodiscard]] result<void> check_min_quota_validate(const quota_spec& quota) const;
  // checkGuaranteedForMin: a quota (with a tree id, not a tree root, not force-updated) whose
  // min exceeds its guaranteed annotation needs max(min, guaranteed) guaranteed by its
  // parent: the parent's guarantee must cover max(parent min, Σ siblings' guaranteed + that),
  // else the parent asks its own parent, up to the tree root, which refuses ("tree root quota
  // X can't guarantee for min"). Checked whatever the gate; validate_quota_topology runs it
  // only with elastic_quota_guarantee_usage.
  [[nodiscard]] result<void> check_guaranteed_for_min(const quota_spec& quota) const;

  // Pod webhook: a pod may not use a parent quota; the preemptible label is immutable.
  [[nodiscard]] result<void> validate_pod(std::string_view quota_name,
                                          const std::string* old_preemptible_label,
                                          const std::string* new_preemptible_label) const;

  // Records a quota without checks (the informer's OnQuotaAdd), for tests and recovery.
  void on_quota_add(const quota_spec& quota);
  // The informer's OnQuotaUpdate / OnQuotaDelete (pkg/webhook/elasticquota/quota_handler.go):
  // the stored object moves under its new parent, or leaves the topology, without checks (the
  // apiserver already admitted it).
  void on_quota_update(const quota_spec& quota);
  void on_quota_delete(std::string_view name);
  void erase_quota_info(
      std::string_view name);  // drops quotaInfoMap only (Koordinator "bug" cases)
  void erase_hierarchy_info(std::string_view name);  // drops quotaHierarchyInfo only

  [[nodiscard]] const quota_spec* find(std::string_view name) const;
  void set_features(webhook_features f) { features_ = f; }

 private:
  [[nodiscard]] result<void> check_parent_guaranteed(const resource_list& guarantee,
                                                     resource_keys keys, std::string_view self,
                                                     std::string_view parent) const;
  [[nodiscard]] result<resource_list> child_min_sum_except(std::string_view parent,
                                                           std::string_view skip,
                                                           resource_keys& keys) const;
  std::map<std::string, quota_spec, std::less<>> quotas_;  // quotaInfoMap
  std::map<std::string, std::set<std::string, std::less<>>, std::less<>>
      children_;  // quotaHierarchyInfo
  std::map<std::string, std::string, std::less<>> namespace_to_quota_;
  webhook_features features_;
};

// A whole set of quotas at once (a sim config's elasticQuotas, CRDs loaded from files), checked
// as Koordinator's webhook checks each against the others: validateQuotaSelfItem per quota,
// then, per parent in the set, its children's min sum against its min (checkMinQuotaValidate).
// The first error names the quota and field: where = "<quota>.spec.min[cpu]", message =
// "ElasticQuota <parent>: its children's min exceeds its own min; cpu: children's min 500
// (a 300, b 200) > <parent>'s min 400". Choice: Koordinator lets an allow-force-update quota
// skip the check at its own admission, and in which order objects were admitted is unknown
// here, so a parent is not checked when it or one of its children carries the label.
// Children of a parent missing from the set are not checked (the tree keeps them as orphans).
[[nodiscard]] result<void> validate_quota_tree(std::span<const quota_spec> quotas);

// ---- ElasticQuotaProfile (quota.koordinator.sh/v1alpha1) ------------------------------------

struct label_selector_requirement {
  std::string key;
  std::string op;  // In | NotIn | Exists | DoesNotExist
  std::vector<std::string> values;
};

struct elastic_quota_profile {
  std::string name;
  std::string namespace_name;
  string_map labels;
  string_map annotations;
  std::string quota_name;                     // spec.quotaName
  string_map quota_labels;                    // spec.quotaLabels
  std::optional<std::string> resource_ratio;  // spec.resourceRatio, a float in (0,1]
  string_map match_labels;                    // spec.nodeSelector.matchLabels
  std::vector<label_selector_requirement> match_expressions;
};

struct profile_node {
  std::string name;
  string_map labels;
  resource_list allocatable;
  bool unschedulable = false;
  bool ready = true;
};

// FNV-64a of "namespace/name" in decimal: the tree id a profile gets when it has none.
[[nodiscard]] std::string profile_tree_id(std::string_view namespace_name, std::string_view name);
// metav1.LabelSelectorAsSelector + Matches; an invalid operator is an error.
[[nodiscard]] result<bool> selector_matches(const elastic_quota_profile& profile,
                                            const string_map& labels);

// QuotaProfileReconciler.Reconcile: the tree-root quota for a profile over the nodes.
// existing: the quota already named spec.quotaName (its other labels/annotations are kept).
// min = total (× resourceRatio) for the resource-keys annotation (default cpu, memory), max =
// MaxInt64/2000 for them; labels profile, tree-id, is-root=true plus spec.quotaLabels;
// annotations total-resource and unschedulable-resource.
[[nodiscard]] result<quota_spec> reconcile_quota_profile(const elastic_quota_profile& profile,
                                                         const std::vector<profile_node>& nodes,
                                                         const quota_spec* existing = nullptr);

// ---- YAML (the CRDs' shapes) -----------------------------------------------------------------

// Loads ElasticQuota objects (apiVersion scheduling.sigs.k8s.io/v1alpha1, kind ElasticQuota,
// or a List/ElasticQuotaList of them; several documents allowed). Errors name file:line and
// the field. Resource names Colony has no field for are skipped and reported in ignored.
struct quota_load_result {
  std::vector<quota_spec> quotas;
  std::vector<std::string> ignored;  // "file:line: spec.max[ephemeral-storage] ignored"
};
[[nodiscard]] result<quota_load_result> load_elastic_quotas_yaml(std::string_view text,
                                                                 std::string_view file);

[[nodiscard]] result<std::vector<elastic_quota_profile>> load_elastic_quota_profiles_yaml(
    std::string_view text, std::string_view file);

}  // namespace colony::quota
