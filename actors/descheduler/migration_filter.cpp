#include "actors/descheduler/migration_filter.hpp"

#include <algorithm>
#include <limits>
#include <set>

#include <fmt/format.h>

#include "actors/descheduler/job_index.hpp"
#include "actors/descheduler/pod_sorter.hpp"

namespace colony::descheduler {

namespace {

bool skipped(const migration_controller_args& a, std::string_view gate) {
  return a.skip_eviction_gates.count(gate) != 0;
}

std::string_view namespace_of(std::string_view key) {
  const auto slash = key.find('/');
  return slash == std::string_view::npos ? std::string_view{} : key.substr(0, slash);
}

bool has_evict_annotation(const pod_info& p) { return p.annotations.count(annotation_evict) != 0; }

// Calls fn(job) for every job that counts and is not the pod's own.
template <class F>
void for_each_counting(const pod_info& pod, const migration_view& view, bool arbitrating, F&& fn) {
  if (view.jobs == nullptr) return;
  const std::string key = pod.key();
  for (const auto& j : *view.jobs)
    if (j.pod != key && job_counts(j, arbitrating)) fn(j);
}

}  // namespace

bool job_counts(const job_info& j, bool arbitrating) {
  if (j.phase == job_phase::running) return true;
  if (j.phase != job_phase::pending) return false;
  return !arbitrating || j.passed_arbitration;
}

namespace {

// The single filters with the judged pod's key computed once by the caller.
bool max_migrating_globally(const pod_info& pod, std::string_view key,
                            std::optional<std::int64_t> limit, const migration_view& view,
                            bool arbitrating) {
  if (!limit || *limit <= 0) return true;
  if (view.index != nullptr)
    return view.index->counting(arbitrating) - view.index->counting_of_pod(key, arbitrating) <
           *limit;
  std::int64_t n = 0;
  for_each_counting(pod, view, arbitrating, [&](const job_info&) { ++n; });
  return n < *limit;
}

bool max_migrating_per_node(const pod_info& pod, std::string_view key,
                            std::optional<std::int64_t> limit, const migration_view& view,
                            bool arbitrating) {
  if (!limit || *limit <= 0 || pod.node.empty()) return true;
  if (view.index != nullptr) {
    // Distinct pods on the node, less the judged pod's own when it is filed there.
    std::int64_t n = view.index->pods_counting_on_node(pod.node, arbitrating);
    if (n > 0 && view.index->counting_of_pod(key, arbitrating) > 0 &&
        view.index->node_of(key) == pod.node)
      --n;
    return n < *limit;
  }
  std::set<std::string_view> pods;
  for_each_counting(pod, view, arbitrating, [&](const job_info& j) {
    const pod_info* p = view.pod(j.pod);
    if (p != nullptr && p->node == pod.node) pods.insert(j.pod);
  });
  return static_cast<std::int64_t>(pods.size()) < *limit;
}

bool max_migrating_per_namespace(const pod_info& pod, std::string_view key,
                                 std::optional<std::int64_t> limit, const migration_view& view,
                                 bool arbitrating) {
  if (!limit || *limit <= 0) return true;
  std::int64_t n = 0;
  if (view.index != nullptr) {
    n = view.index->counting_in_namespace(pod.ns, arbitrating);
    if (n > 0 && namespace_of(key) == pod.ns) n -= view.index->counting_of_pod(key, arbitrating);
    return n < *limit;
  }
  for_each_counting(pod, view, arbitrating, [&](const job_info& j) {
    if (namespace_of(j.pod) == pod.ns) ++n;
  });
  return n < *limit;
}

bool unavailable_pod(const pod_info* p) {
  return p == nullptr || !p->ready || p->terminating || p->failed;
}

// The pod's workload as one judgement reads it, looked up at most once however many filters ask
// (ExpectedReplicas and the workload limits): the owner's state (workload_state_of), else the
// workload (`workload`) and, when a filter needs the unavailable pods, the state derived from it.
class pod_workload {
 public:
  pod_workload(const pod_info& pod, const migration_view& view) : pod_(pod), view_(view) {}

  // The desired replicas; nullopt: not found.
  [[nodiscard]] std::optional<std::int64_t> replicas() {
    if (view_.workload_state_of) {
      const workload_state* s = state();
      return s == nullptr ? std::nullopt : std::optional<std::int64_t>(s->replicas);
    }
    const auto& w = info();
    return w ? std::optional<std::int64_t>(w->replicas) : std::nullopt;
  }
  // The state; nullptr: not found.
  [[nodiscard]] const workload_state* state() {
    if (!state_done_) {
      state_done_ = true;
      if (view_.workload_state_of) {
        state_ = view_.workload_state_of(pod_);
      } else if (const auto& w = info(); w) {
        derived_ = workload_state_of(*w, view_);
        state_ = &derived_;
      }
    }
    return state_;
  }

 private:
  const std::optional<workload_info>& info() {
    if (!info_done_) {
      info_done_ = true;
      if (view_.workload) info_ = view_.workload(pod_);
    }
    return info_;
  }
  const pod_info& pod_;
  const migration_view& view_;
  bool state_done_ = false, info_done_ = false;
  const workload_state* state_ = nullptr;
  workload_state derived_;
  std::optional<workload_info> info_;
};

std::string workload_refusal(const pod_info& pod, std::string_view key,
                             const migration_controller_args& args, const migration_view& view,
                             bool arbitrating, pod_workload& workload) {
  const bool skip_migrating = skipped(args, "MaxMigratingPerWorkload");
  const bool skip_unavailable = skipped(args, "MaxUnavailablePerWorkload");
  if ((skip_migrating && skip_unavailable) || pod.owner.empty()) return {};
  const workload_state* w = workload.state();
  if (w == nullptr) return fmt::format("workload {}/{} not found", pod.owner.kind, pod.owner.name);
  const std::int64_t max_migrating =
      skip_migrating ? 0 : get_max_unavailable(w->replicas, args.max_migrating_per_workload);
  const std::int64_t max_unavailable =
      skip_unavailable ? 0 : get_max_unavailable(w->replicas, args.max_unavailable_per_workload);
  // The migrating pods' keys, distinct and sorted (they view the index's or the jobs' keys).
  std::vector<std::string_view> migrating;
  if (view.index != nullptr) {
    view.index->for_each_workload_pod(pod.ns, pod.owner, arbitrating, [&](std::string_view k) {
      if (k != key) migrating.push_back(k);
    });
  } else {
    std::set<std::string_view> keys;
    for_each_counting(pod, view, arbitrating, [&](const job_info& j) {
      // A pod's key starts with its namespace: other namespaces are skipped before the lookup.
      if (namespace_of(j.pod) != pod.ns) return;
      const pod_info* p = view.pod(j.pod);
      if (p != nullptr && p->ns == pod.ns && p->owner == pod.owner) keys.insert(j.pod);
    });
    migrating.assign(keys.begin(), keys.end());
  }
  if (!skip_migrating && !migrating.empty() &&
      static_cast<std::int64_t>(migrating.size()) >= max_migrating)
    return fmt::format("workload {}/{} has {} migrating pods, maxMigratingPerWorkload {}",
                       pod.owner.kind, pod.owner.name, migrating.size(), max_migrating);
  if (skip_unavailable) return {};
  // The migrating pods and the unavailable ones, each counted once.
  std::size_t unavailable = migrating.size();
  for (const auto& k : w->unavailable)
    if (!std::binary_search(migrating.begin(), migrating.end(), std::string_view(k))) ++unavailable;
  if (static_cast<std::int64_t>(unavailable) >= max_unavailable)
    return fmt::format("workload {}/{} has {} unavailable pods, maxUnavailablePerWorkload {}",
                       pod.owner.kind, pod.owner.name, unavailable, max_unavailable);
  return {};
}

}  // namespace

workload_state workload_state_of(const workload_info& w, const migration_view& view) {
  workload_state s;
  s.replicas = w.replicas;
  for (const auto& k : w.pods)
    if (unavailable_pod(view.pod(k))) s.unavailable.push_back(k);
  std::sort(s.unavailable.begin(), s.unavailable.end());
  s.unavailable.erase(std::unique(s.unavailable.begin(), s.unavailable.end()), s.unavailable.end());
  return s;
}

bool filter_max_migrating_globally(const pod_info& pod, std::optional<std::int64_t> limit,
                                   const migration_view& view, bool arbitrating) {
  return max_migrating_globally(pod, pod.key(), limit, view, arbitrating);
}

bool filter_max_migrating_per_node(const pod_info& pod, std::optional<std::int64_t> limit,
                                   const migration_view& view, bool arbitrating) {
  return max_migrating_per_node(pod, pod.key(), limit, view, arbitrating);
}

bool filter_max_migrating_per_namespace(const pod_info& pod, std::optional<std::int64_t> limit,
                                        const migration_view& view, bool arbitrating) {
  return max_migrating_per_namespace(pod, pod.key(), limit, view, arbitrating);
}

std::string filter_workload(const pod_info& pod, const migration_controller_args& args,
                            const migration_view& view, bool arbitrating) {
  pod_workload workload(pod, view);
  return workload_refusal(pod, pod.key(), args, view, arbitrating, workload);
}

namespace {

bool expected_replicas(const pod_info& pod, const migration_controller_args& args,
                       pod_workload& workload) {
  if (skipped(args, "ExpectedReplicas") || pod.owner.empty()) return true;
  const auto found = workload.replicas();
  if (!found) return false;
  const std::int64_t replicas = *found;
  const std::int64_t max_migrating = get_max_unavailable(replicas, args.max_migrating_per_workload);
  const std::int64_t max_unavailable =
      get_max_unavailable(replicas, args.max_unavailable_per_workload);
  if (args.skip_check_expected_replicas) return true;
  return !(replicas == 1 || replicas == max_migrating || replicas == max_unavailable);
}

// The non-retryable filter with the evict annotation already found absent.
std::string non_retryable(const pod_info& pod, const migration_controller_args& args,
                          pod_workload& workload) {
  const auto& f = args.filter;
  if (!skipped(args, "Namespaces")) {
    if (!f.namespaces_include.empty() &&
        std::find(f.namespaces_include.begin(), f.namespaces_include.end(), pod.ns) ==
            f.namespaces_include.end())
      return "namespace " + pod.ns + " is not included";
    if (std::find(f.namespaces_exclude.begin(), f.namespaces_exclude.end(), pod.ns) !=
        f.namespaces_exclude.end())
      return "namespace " + pod.ns + " is excluded";
  }
  if (!filter_max_eviction_cost(pod)) return "eviction cost is MaxInt32";
  if (pod.owner.kind == "DaemonSet") return "pod is a DaemonSet pod";
  if (pod.mirror) return "pod is a mirror pod";
  if (pod.static_pod) return "pod is a static pod";
  if (pod.terminating) return "pod is terminating";
  if (pod.owner.empty() && !skipped(args, "BarePods") && !f.evict_all_bare_pods &&
      !(f.evict_failed_bare_pods && pod.failed))
    return "pod has no owner";
  if (!skipped(args, "SystemCritical") && !f.evict_system_critical_pods &&
      pod.priority.value_or(0) >= system_critical_priority)
    return "pod has system critical priority";
  if (!skipped(args, "PriorityThreshold") && f.priority_threshold &&
      pod.priority.value_or(0) >= *f.priority_threshold)
    return fmt::format("pod priority {} is not below the threshold {}", pod.priority.value_or(0),
                       *f.priority_threshold);
  if (!skipped(args, "LocalStorage") && !f.evict_local_storage_pods && pod.local_storage)
    return "pod has local storage";
  if (!skipped(args, "PVC") && f.ignore_pvc_pods && pod.pvc) return "pod has a PVC";
  if (!skipped(args, "LabelSelector") && f.label_selector &&
      !admission::label_selector_matches(*f.label_selector, pod.labels).value_or(false))
    return "pod does not match the label selector";
  if (!expected_replicas(pod, args, workload))
    return fmt::format("workload {}/{} has too few replicas to migrate one", pod.owner.kind,
                       pod.owner.name);
  return {};
}

// The retryable filters with the evict annotation already found absent.
std::string retryable(const pod_info& pod, std::string_view key,
                      const migration_controller_args& args, const migration_view& view,
                      bool arbitrating, pod_workload& workload) {
  if (!skipped(args, "MaxMigratingGlobally") &&
      !max_migrating_globally(pod, key, args.max_migrating_globally, view, arbitrating))
    return fmt::format("maxMigratingGlobally {} reached", *args.max_migrating_globally);
  if (!skipped(args, "MaxMigratingPerNode") &&
      !max_migrating_per_node(pod, key, args.max_migrating_per_node, view, arbitrating))
    return fmt::format("maxMigratingPerNode {} reached on {}", *args.max_migrating_per_node,
                       pod.node);
  if (!skipped(args, "MaxMigratingPerNamespace") &&
      !max_migrating_per_namespace(pod, key, args.max_migrating_per_namespace, view, arbitrating))
    return fmt::format("maxMigratingPerNamespace {} reached in {}",
                       *args.max_migrating_per_namespace, pod.ns);
  return workload_refusal(pod, key, args, view, arbitrating, workload);
}

}  // namespace

bool filter_expected_replicas(const pod_info& pod, const migration_controller_args& args,
                              const migration_view& view) {
  pod_workload workload(pod, view);
  return expected_replicas(pod, args, workload);
}

bool filter_max_eviction_cost(const pod_info& pod) {
  return int32_annotation(pod, annotation_eviction_cost) !=
         std::numeric_limits<std::int32_t>::max();
}

std::string non_retryable_refusal(const pod_info& pod, const migration_controller_args& args,
                                  const migration_view& view) {
  if (has_evict_annotation(pod)) return {};
  pod_workload workload(pod, view);
  return non_retryable(pod, args, workload);
}

std::string retryable_refusal(const pod_info& pod, const migration_controller_args& args,
                              const migration_view& view, bool arbitrating) {
  if (has_evict_annotation(pod)) return {};
  pod_workload workload(pod, view);
  return retryable(pod, pod.key(), args, view, arbitrating, workload);
}

bool passes_migration_filters(const pod_info& pod, std::string_view key,
                              const migration_controller_args& args, const migration_view& view) {
  if (has_evict_annotation(pod)) return true;
  pod_workload workload(pod, view);
  return non_retryable(pod, args, workload).empty() &&
         retryable(pod, key, args, view, false, workload).empty();
}

}  // namespace colony::descheduler
