// LowNodeLoad, koord-descheduler's load-aware Balance plugin
// (pkg/descheduler/framework/plugins/loadaware/low_node_load.go, utilization_util.go), as a pure
// round over plain views. One balance() call is one descheduling round: for each node pool in
// order, usage from the NodeMetrics, thresholds, classification, the anomaly detectors, targets
// and budget, candidates (with nodeFit's pre-reservation), Koordinator's victim order and the
// eviction loop. Evicting goes through the caller's evictor (the framework's evictor proxy: the
// round's limiter, then the MigrationController, which creates a PodMigrationJob).
//
// Determinism (Koordinator iterates Go maps): nodes are taken in the order given (the caller gives
// them by name), classified lists keep that order, sources are sorted by usage score with ties
// by that order, pods on a node in the order given (by key), victims by pod_sorter's stable
// order. Time is the round's event time (anomaly detectors, NodeMetric expiry).
// State: the two detector caches. Single owner.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "actors/descheduler/anomaly_detector.hpp"
#include "actors/descheduler/descheduler_types.hpp"
#include "actors/descheduler/low_node_load_args.hpp"
#include "messages/result.hpp"

namespace colony::descheduler {

inline constexpr std::string_view low_node_load_plugin_name = "LowNodeLoad";

// A node's usage as getNodeUsage builds it.
struct node_usage {
  const node_info* node = nullptr;
  std::vector<const pod_info*> all_pods;   // not Succeeded/Failed, in list order
  std::vector<const pod_info*> prod_pods;  // effective class koord-prod
  resource_amounts usage;                  // per threshold resource, plus pods
  resource_amounts prod_usage;
  // The NodeMetric's pods in key order (stable: for a key listed twice the later entry is last).
  struct pod_metric_ref {
    std::string_view ns, name;
    const resource_amounts* usage = nullptr;
  };
  std::vector<pod_metric_ref> pod_metrics;
  // The usage of the pod under key ns/name (the NodeMetric's last entry for it), nullptr: none.
  [[nodiscard]] const resource_amounts* pod_metric(std::string_view ns,
                                                   std::string_view name) const;
};

struct node_thresholds {
  resource_amounts low, high, prod_low, prod_high;
};

// The four threshold maps of a pool after newThresholds: every resource of the four plus memory;
// a resource missing from low (prodLow) gets 100 % (deviation mode: 0) in low and high.
struct pool_thresholds {
  resource_thresholds low, high, prod_low, prod_high;
  std::vector<std::string> resources;  // sorted
};
[[nodiscard]] pool_thresholds new_thresholds(const low_node_load_node_pool& pool);

// int64(percent * 0.01 * capacity) (resourceThreshold).
[[nodiscard]] std::int64_t resource_threshold(const resource_amounts& capacity, std::string_view r,
                                              double percent);
// Per node (getNodeThresholds), absolute or by deviation from the pool average.
[[nodiscard]] std::map<std::string, node_thresholds, std::less<>> node_thresholds_of(
    const std::map<std::string, node_usage, std::less<>>& usages, const pool_thresholds& t,
    bool use_deviation);
// 100 * usage / capacity per resource with a capacity (resourceUsagePercentages).
[[nodiscard]] std::map<std::string, double, std::less<>> resource_usage_percentages(
    const resource_amounts& usage, const resource_amounts& capacity);
// Over = some resource of `thresholds` strictly above; the resources over (isNodeOverutilized).
[[nodiscard]] resource_amounts overutilized(const resource_amounts& usage,
                                            const resource_amounts& thresholds);
[[nodiscard]] bool underutilized(const resource_amounts& usage, const resource_amounts& thresholds);

// sortNodesByUsage: by node_usage_score of usage (prod: prod usage) against the allocatable.
void sort_nodes_by_usage(std::vector<const node_usage*>& nodes, const weight_map& w, bool ascending,
                         bool prod);

// nodeutil.NodeFit: the node is schedulable and the pod's requests fit what its pods leave of
// the allocatable (pods counted too). Colony's nodes carry no taints and its pods no node
// selector or affinity, so those checks have nothing to read.
[[nodiscard]] bool node_fit(const pod_info& pod, const node_info& node,
                            std::span<const pod_info* const> pods_on_node);

// podFitsAnyNodeWithThreshold: the first target the pod fits whose usage (prod: prod usage) plus
// the pod's stays within its high (prodHigh) threshold for every resource; that usage keeps the
// pod's addition. False (and no change) when none.
[[nodiscard]] bool pod_fits_any_node_with_threshold(
    const pod_info& pod, const resource_amounts& pod_usage, std::span<const std::string> targets,
    std::map<std::string, node_usage, std::less<>>& usages,
    const std::map<std::string, node_thresholds, std::less<>>& thresholds, bool prod);

// filterRealAbnormalNodes: every source when consecutiveAbnormalities is 1; else each source's
// detector is marked abnormal and the sources then in Anomaly are kept, in order.
[[nodiscard]] std::vector<std::string> filter_real_abnormal_nodes(
    std::span<const std::string> sources, detector_cache& cache, const anomaly_condition& c,
    std::int64_t now_ms);

struct low_node_load_input {
  // Ready nodes matching the global node selector, in name order.
  std::span<const node_info> nodes;
  // Pods assigned to a node (every phase but Succeeded/Failed), in list order.
  std::function<std::vector<const pod_info*>(const node_info&)> pods_on_node;
  // The node's NodeMetric (nullptr: none).
  std::function<const node_metric_info*(std::string_view node)> node_metric;
  std::int64_t now_ms = 0;
};

// What LowNodeLoad asks the evictor to evict.
struct eviction_request {
  const pod_info* pod = nullptr;
  std::string node;
  std::string pool;
  bool prod = false;
  std::string reason;  // "node is overutilized, node cpu usage(80.00%)>threshold(75.00%)"
};

// The framework's evictor as LowNodeLoad sees it: the pod filter (MigrationController's Filter,
// the pod selectors and namespaces are added by LowNodeLoad itself) and evict (limiter, then
// the job; true when it went through).
struct evictor {
  std::function<bool(const pod_info&)> filter;
  std::function<bool(const eviction_request&)> evict;
};

// What a round did, per pool (for reports and tests).
struct pool_round {
  std::string pool;
  std::size_t nodes = 0, low = 0, high = 0, prod_low = 0, prod_high = 0, both_low = 0;
  std::size_t abnormal = 0, abnormal_prod = 0;
  std::string stopped;  // why the pool stopped before evicting ("" = it reached the evictions)
  std::size_t evicted = 0;
};

class low_node_load {
 public:
  // REQUIRES: args defaulted (set_defaults) and valid (validate).
  explicit low_node_load(low_node_load_args args);
  std::vector<pool_round> balance(const low_node_load_input& in, const evictor& ev);
  [[nodiscard]] const low_node_load_args& args() const { return args_; }

 private:
  pool_round process_pool(const low_node_load_node_pool& pool, const low_node_load_input& in,
                          const evictor& ev, std::vector<std::string>& processed);
  [[nodiscard]] bool pod_selected(const pod_info& p) const;
  low_node_load_args args_;
  detector_cache node_detectors_, prod_detectors_;
};

}  // namespace colony::descheduler
