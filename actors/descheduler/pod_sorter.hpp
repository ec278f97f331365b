// Koordinator's descheduler sorters (pkg/descheduler/utils/sorter/pod.go, scorer.go): the pod
// order victims are evicted in, the pod usage score, and the node usage score sources are
// sorted by. Pure functions.
//
// Pod order, ascending = evicted first: effective priority class free < batch < mid < prod <
// none; spec.priority (lower first); Kubernetes QoS BestEffort < Burstable < Guaranteed;
// Koordinator QoS BE < LS < LSR < LSE = SYSTEM < none; pod-deletion-cost (lower first);
// eviction-cost (lower first); [usage score, higher first, pods without a metric last];
// creation time, newer first. Go sorts with an unstable sort; Colony sorts stably, so pods equal
// on every key keep the order they were given in (documented tie rule).
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string_view>
#include <vector>

#include "actors/descheduler/descheduler_types.hpp"
#include "actors/descheduler/low_node_load_args.hpp"

namespace colony::descheduler {

inline constexpr std::string_view annotation_pod_deletion_cost =
    "controller.kubernetes.io/pod-deletion-cost";
inline constexpr std::string_view annotation_eviction_cost =
    "scheduling.koordinator.sh/eviction-cost";

// The int32 value of an annotation (0 when absent or not an int32).
[[nodiscard]] std::int32_t int32_annotation(const pod_info& p, std::string_view key);

// PodSorter's keys before usage (1..6): -1 when a goes first, 1 when b does, 0 when equal.
[[nodiscard]] int compare_pods_by_class(const pod_info& a, const pod_info& b);
// The same keys as values, for sorts that compare each pod many times: ordered as
// compare_pods_by_class orders the pods (lower first).
struct pod_class_key {
  int priority_class = 0;
  std::int32_t priority = 0;
  int kube_qos = 0;
  int qos = 0;
  std::int32_t deletion_cost = 0;
  std::int32_t eviction_cost = 0;
  auto operator<=>(const pod_class_key&) const = default;
};
[[nodiscard]] pod_class_key pod_class_key_of(const pod_info& p);
// PodCreationTimestamp: newer first.
[[nodiscard]] int compare_pods_by_creation(const pod_info& a, const pod_info& b);

// ResourceUsageScorerPod: sum over the pod's usage resources of w_r * s_r / sum w_r, with
// s_r = u/x when u < x, 1 + x/u otherwise (x = the node's excess of r), 0 when x = 0.
[[nodiscard]] double pod_usage_score(const resource_amounts& pod_usage,
                                     const resource_amounts& excess, const weight_map& w);
// ResourceUsageScorer: sum over usage resources of w_r * floor(1000 * min(u, c) / c) / sum w_r,
// integer division; 0 when c = 0 or the weights sum to 0.
[[nodiscard]] std::int64_t node_usage_score(const resource_amounts& usage,
                                            const resource_amounts& allocatable,
                                            const weight_map& w);

// The usage metric of a pod (nullptr: none).
using pod_metric_lookup = std::function<const resource_amounts*(const pod_info&)>;

// SortPodsByUsage: the pod order above with the usage score against `excess` (the resources over
// their threshold, by how much) and `weights` (0 for a resource not over).
void sort_pods_by_usage(std::vector<const pod_info*>& pods, const resource_amounts& excess,
                        const weight_map& weights, const pod_metric_lookup& metric);

}  // namespace colony::descheduler
