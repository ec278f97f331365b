// ElasticQuota as a scheduler plugin (Koordinator plugin name "ElasticQuota"): wraps
// colony::quota (the quota tree, its runtime fixed point, PreFilter admission and the
// same-quota victim rule) in the framework's extension points.
//
// What it defines: elastic_quota, a plugin over a quota_tree shared with its owner (the quota
// actor books quotas and pending pods into the tree; the plugin books assignments):
//   - PreFilter: refreshes runtime when the tree changed (RefreshRuntime), then admission
//     used + request <= runtime (max when enableRuntimeQuota is off), and
//     non-preemptible used + request <= min for non-preemptible pods; Koordinator's message.
//   - Reserve / Unreserve: the pod's used is added to / removed from its quota and ancestors
//     (updatePodIsAssigned), without recomputing runtimes (request does not change).
//   - PostFilter: preemption of lower-priority preemptible pods of the SAME quota on
//     each node, via quota::select_victims_on_node (a per-node summary, kept by node
//     generation, skips nodes without such pods); the candidate node is picked as kube's
//     pickOneNodeForPreemption does (fewest PDB violations, lowest highest-victim priority,
//     lowest sum of victim priorities, fewest victims, latest earliest start among the
//     highest-priority victims), then the first in node order (kube: map order).
//
// Koordinator: pkg/scheduler/plugins/elasticquota/{plugin.go, plugin_helper.go, preempt.go};
// kube: pkg/scheduler/framework/preemption/preemption.go (pickOneNodeForPreemption).
//
// Thread-safety: the tree is shared with its owner; use both from one thread (the scheduler
// actor's). The plugin keeps the node span of the current cycle for PostFilter.
#pragma once

#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "actors/quota/admission.hpp"
#include "actors/quota/quota_tree.hpp"
#include "actors/scheduler/framework.hpp"

namespace colony::scheduler {

// Reasons (status::reason) of the two admission failures; the message has the details.
inline constexpr std::string_view err_insufficient_quotas = "Insufficient quotas";
inline constexpr std::string_view err_insufficient_non_preemptible_quotas =
    "Insufficient non-preemptible quotas";

class elastic_quota final : public plugin {
 public:
  static constexpr std::string_view plugin_name = "ElasticQuota";

  // REQUIRES: tree != nullptr.
  explicit elastic_quota(std::shared_ptr<quota::quota_tree> tree);

  [[nodiscard]] std::string_view name() const noexcept override { return plugin_name; }
  [[nodiscard]] std::uint32_t points() const noexcept override {
    return ep_pre_filter | ep_reserve | ep_post_filter;
  }
  [[nodiscard]] const std::shared_ptr<quota::quota_tree>& tree() const noexcept { return tree_; }

  // GetQuotaName: the quota label, else the namespace rules of GetQuotaName ("" = none).
  [[nodiscard]] std::string quota_of(const pod_info& pod) const;
  // The quota_pod the plugin books for a scheduler pod.
  [[nodiscard]] quota::quota_pod to_quota_pod(const pod_info& pod, std::string quota) const;

  status pre_filter(cycle_state& st, const pod_info& pod, std::span<const node_info> nodes,
                    event_time now) override;
  status reserve(cycle_state& st, const pod_info& pod, const node_info& node,
                 event_time now) override;
  void unreserve(cycle_state& st, const pod_info& pod, const node_info& node,
                 event_time now) override;
  post_filter_result post_filter(cycle_state& st, const pod_info& pod, event_time now) override;

 private:
  struct state : cycle_data {
    std::uint64_t cycle = ~0ull;
    std::string quota;
    bool booked = false;    // Reserve added the pod to the tree (Unreserve removes it)
    bool assigned = false;  // Reserve marked a booked pod assigned (Unreserve unmarks it)
  };

  // PostFilter's per-node summary, addressed by the node's position in the cycle's span and
  // kept while the node object and its generation are unchanged (node_info REQUIRES a
  // generation bump on any change of its pods), as LoadAwareScheduling's cache is. It lets
  // PostFilter skip, without reading its pods, a node that holds no possible victim. A node
  // that changed is read directly once; its summary is built at the next look.
  struct node_entry {
    const node_info* node = nullptr;
    std::uint64_t generation = 0;
    bool built = false;
    resource_list used;  // Σ requests of the node's non-terminated pods
    // Per preemptible, non-terminated pod with a quota label, in pod order: a cheap key of the
    // label (a collision only costs a full look at the node) and the pod's priority.
    std::vector<std::uint64_t> keys;
    std::vector<std::int32_t> priorities;
    // The lowest priority of such a pod without a label (its quota is resolved per call, since
    // it depends on the tree's namespace rules); INT32_MAX when none.
    std::int32_t unlabeled_lowest_priority = 0;
  };
  // Whether node `index` holds a preemptible pod of lower priority than `pod` in `quota` (or
  // without a label); if so, node_used = Σ requests of its non-terminated pods.
  bool may_hold_victims(std::size_t index, const pod_info& pod, std::string_view quota,
                        std::uint64_t key, resource_list& node_used);

  std::shared_ptr<quota::quota_tree> tree_;
  std::span<const node_info> nodes_;  // of the current cycle, for PostFilter
  std::vector<node_entry> cache_;
  std::vector<quota::preemption_pod> potential_;  // scratch of PostFilter (reused allocations)
};

}  // namespace colony::scheduler
