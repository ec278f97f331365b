// Eviction tasks and their execution: the part memory and CPU eviction share.
//
// Koordinator: pkg/koordlet/qosmanager/plugins/util/evict.go (KillAndEvictPods, EvictTaskCheck,
// IsEvictionPolicyAllowed, GetRequestTypeAndValueFromPod).
//
// A task says how much to release (per resource, for one release target: pod usage or pod
// request), lists candidate victims in order, and knows how much each pod would release
// (its "measure"). execute_evict_tasks walks the tasks in order, evicting until each task is
// covered. It never counts a resource that no evicted pod had: released == sum of the evicted
// (and already-evicted) pods' aggregated measures. Pure; time and state are arguments.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "actors/koordlet/koordlet_types.hpp"

namespace colony::koordlet {

inline constexpr std::string_view evict_reason_prefix =
    "trigger by koordlet feature ";  // EvictReasonPrefix

enum class release_target : std::uint8_t {
  pod_used,     // ReleaseTargetTypeResourceUsed "podUsed"
  pod_request,  // ReleaseTargetTypeResourceRequest "podResourceRequest"
};

// How a task measures what one pod releases (GetPodResourceFunc of each feature).
enum class measure_kind : std::uint8_t {
  memory_used,        // BEMemoryEvict / MemoryEvict: memory = last usage
  memory_used_x1000,  // MemoryEvict with the Koordinator quirk int64(bytes * 1000) (compat flag)
  memory_request,     // MemoryAllocatableEvict: request by class, only for released classes
  batch_cpu_request,  // BECPUEvict: sum of container batch-cpu requests
  cpu_used,           // CPUEvict: cpu milli = int64(cores * 1000)
  cpu_request,        // CPUAllocatableEvict: request by class, only for released classes
};

// Sort keys and inputs of one candidate, kept for the explanation of a victim.
struct evict_candidate {
  std::uint32_t pod = 0;            // index into the pods span
  std::int32_t priority = 0;        // priority value with default (or spec.priority for BE sorts)
  std::int64_t label_priority = 0;  // koordinator.sh/priority, default = priority value
  std::int32_t eviction_priority = 0;  // koordinator.sh/eviction-priority
  std::int64_t used = 0;               // milli-cpu or bytes, as the task sorts
  std::int64_t request = 0;            // milli-cpu or bytes by class
  double usage_ratio = 0;              // BECPUEvict: used / batch-cpu request
};

struct evict_task {
  evict_feature feature = evict_feature::be_memory_evict;
  release_target target = release_target::pod_used;
  resource_list to_release;  // only positive fields count
  measure_kind measure = measure_kind::memory_used;
  std::uint8_t released_classes = 0;     // bit (1 << priority_class) for *_request measures
  std::vector<evict_candidate> victims;  // sorted: first is evicted first
};

// What one pod releases under `task`'s measure.
[[nodiscard]] resource_list measure_pod(const evict_task& task, const pod_info& pod);

// Request of a pod on cpu or memory by its class (GetRequestTypeAndValueFromPod): Mid pods count
// mid-*, Batch pods batch-* (sum of positive container requests), others the pod request.
// Returns the value and writes it into the matching field of *as_list when not null.
[[nodiscard]] std::int64_t request_by_class(const pod_info& pod, bool cpu,
                                            resource_list* as_list = nullptr);

struct evict_victim {
  std::uint32_t pod = 0;
  std::string ns;
  std::string name;
  std::string uid;
  evict_feature feature = evict_feature::be_memory_evict;  // task that chose it (the reason)
  bool already_evicted = false;    // evicted by an earlier round: counted, not evicted again
  resource_list released_used;     // aggregated measure, target podUsed
  resource_list released_request;  // aggregated measure, target podResourceRequest
  evict_candidate inputs;          // sort keys, for the explanation
};

struct evict_task_report {
  evict_feature feature = evict_feature::be_memory_evict;
  release_target target = release_target::pod_used;
  resource_list to_release;
  resource_list failed_to_release;  // EvictTaskCheck: positive remainder; zero = succeeded
  bool skipped = false;             // already covered by earlier tasks when reached
};

struct evict_round {
  std::vector<evict_victim> victims;  // in eviction order
  std::vector<evict_task_report> tasks;
  resource_list released_used;
  resource_list released_request;
  bool newly_evicted = false;  // at least one pod evicted now (restarts the cool-down)

  // Reason string as Koordinator writes it: "trigger by koordlet feature BEMemoryEvict".
  [[nodiscard]] static std::string reason(evict_feature f);
};

// KillAndEvictPods, assuming every eviction succeeds (the actor reports failures later).
[[nodiscard]] evict_round execute_evict_tasks(std::span<const evict_task> tasks,
                                              std::span<const pod_info> pods);

// Sort used by MemoryEvict / CPUEvict / *AllocatableEvict (getPodEvictInfoAndSortByPriority):
// eviction-priority asc, priority asc, label priority asc, then by_request ? request desc : used
// desc; remaining ties by namespace/name (Colony's documented rule; Go's sort is unstable there).
void sort_by_priority(std::vector<evict_candidate>& c, std::span<const pod_info> pods,
                      bool by_request);

// Cool-down bookkeeping of one evictor (memory or CPU).
struct evictor_state {
  event_time last_evict_time{0};  // memory starts at 0; CPU starts at the koordlet start time
};

}  // namespace colony::koordlet
