// Plain structs the koordlet policies read: QoS and priority classes, a pod as koordlet sees it
// (labels already parsed), the node, host applications, the resource-threshold config with
// Koordinator's defaults, the explanation vocabulary, and cpuset list helpers.
//
// Everything here is a value type with no I/O. The koordlet actor (or the sim) fills these from
// its state; policies never parse labels or JSON on the hot path. Thread-safety: none needed.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "messages/priority.hpp"
#include "messages/qos.hpp"
#include "messages/resources.hpp"
#include "messages/result.hpp"
#include "messages/units.hpp"

namespace colony::koordlet {

// ---------------------------------------------------------------------------------------------
// QoS and priority (apis/extension/qos.go, priority.go, qos_utils.go, priority_utils.go).

// Koordinator QoS (label koordinator.sh/qosClass) and priority classes, with their names and
// priority bands, and the Kubernetes QoS (pod.status.qosClass, or computed by the usual rules
// when empty; unset = neither): one definition in messages/qos.hpp, messages/priority.hpp,
// named here.
using colony::get_default_priority_by_priority_class;
using colony::get_pod_priority_class_with_qos;
using colony::get_pod_qos_class_with_kube_qos;
using colony::get_priority_class_by_priority;
using colony::priority_class;
using colony::qos_class;
using colony::to_string;
using kube_qos = colony::kube_qos_class;

// Pod phase as far as koordlet cares (util.IsPodInactive: only Pending and Running are active).
enum class pod_phase : std::uint8_t { pending, running, succeeded, failed, unknown };

// Eviction features a pod may allow in annotation koordinator.sh/eviction-policy
// (pkg/features/koordlet_features.go names). Bit set over these values.
enum class evict_feature : std::uint8_t {
  be_memory_evict,           // "BEMemoryEvict"
  memory_allocatable_evict,  // "MemoryAllocatableEvict"
  memory_evict,              // "MemoryEvict"
  be_cpu_evict,              // "BECPUEvict"
  cpu_allocatable_evict,     // "CPUAllocatableEvict"
  cpu_evict,                 // "CPUEvict"
};
[[nodiscard]] std::string_view to_string(evict_feature f) noexcept;
inline constexpr std::uint32_t evict_feature_bit(evict_feature f) {
  return 1u << static_cast<unsigned>(f);
}
inline constexpr std::uint32_t all_evict_features = 0x3Fu;

// One container of a pod spec. Limits of 0 mean "not set" (Koordinator treats <= 0 as unlimited).
struct container_info {
  std::string name;
  resource_list requests;
  resource_list limits;
};

// A pod as the koordlet sees it, labels and annotations parsed by the caller.
struct pod_info {
  std::string ns;  // metadata.namespace
  std::string name;
  std::string uid;
  qos_class qos = qos_class::none;            // Raw QoS (label), GetPodQoSClassRaw
  kube_qos kube_qos_class = kube_qos::unset;  // Kubernetes QoS (status.qosClass or computed)
  std::optional<std::int32_t> priority;       // spec.priority (absent = nil)
  // Label koordinator.sh/priority-class when present (overrides spec.priority); nullopt if absent.
  // An unknown label value is priority_class::none (GetPodPriorityClassRaw does not fall back).
  std::optional<priority_class> priority_class_label;
  // Label koordinator.sh/priority parsed base 10 (GetPodPriorityLabel); nullopt if missing/invalid.
  std::optional<std::int64_t> priority_label;
  // Annotation koordinator.sh/eviction-priority (GetPodEvictionPriority); missing/invalid = 0.
  std::int32_t eviction_priority = 0;
  // Label koordinator.sh/eviction-enabled == "true" (PodEvictEnabled).
  bool eviction_enabled = false;
  // Annotation koordinator.sh/eviction-policy as a bit set of evict_feature; absent = all allowed,
  // unparsable = 0 (IsEvictionPolicyAllowed refuses on a JSON error).
  std::uint32_t allowed_evict_features = all_evict_features;
  pod_phase phase = pod_phase::running;
  // Already evicted by an earlier round and still present (Evictor.IsPodEvicted).
  bool evicted = false;
  event_time creation_time{0};
  // Pod-level request/limit sums (Kubernetes pod-request rules applied by the caller).
  resource_list requests;
  resource_list limits;
  std::vector<container_info> containers;
  // Pinned cpuset from annotation scheduling.koordinator.sh/resource-status (empty if none).
  std::vector<std::int32_t> pinned_cpus;
  // Last usage sample (metric "last" within 2 x collect interval); nullopt = no metric.
  std::optional<double> cpu_used_cores;
  std::optional<double> memory_used_bytes;
};

// Derivations of apis/extension (A.1, A.2 of the reference).
[[nodiscard]] priority_class pod_priority_class_raw(const pod_info& p) noexcept;
[[nodiscard]] qos_class pod_qos_with_default(const pod_info& p) noexcept;
[[nodiscard]] priority_class pod_priority_class_with_default(const pod_info& p) noexcept;
[[nodiscard]] std::int32_t pod_priority_value_with_default(const pod_info& p) noexcept;
[[nodiscard]] inline bool pod_is_active(const pod_info& p) noexcept {
  return p.phase == pod_phase::pending || p.phase == pod_phase::running;
}
[[nodiscard]] inline bool eviction_policy_allows(const pod_info& p, evict_feature f) noexcept {
  return (p.allowed_evict_features & evict_feature_bit(f)) != 0;
}

// Host application (NodeSLO spec.hostApplications).
enum class cgroup_base : std::uint8_t {
  none,
  cgroup_root,
  kube_qos_guaranteed,
  kube_burstable,
  kube_besteffort
};
// The cgroup directory is GetHostAppCgroupRelativePath's (pkg/koordlet/util/host_application.go):
// without a cgroupPath "host-latency-sensitive/<name>" (LSE, LSR, LS), "host-best-effort/<name>"
// (BE) or "<name>", under the cgroup root; with one, base/parentDir/relativePath, base being the
// cgroup root (none, cgroup_root) or a kubepods QoS dir, whose name depends on the driver
// (bridges/node/host_app_cgroup.hpp resolves it).
struct host_app_info {
  std::string name;
  priority_class priority = priority_class::none;
  qos_class qos = qos_class::none;
  bool has_cgroup_path = false;
  cgroup_base base = cgroup_base::none;
  std::optional<double> cpu_used_cores;  // last metric
  std::optional<double> memory_used_bytes;
  std::string parent_dir;     // cgroupPath.parentDir
  std::string relative_path;  // cgroupPath.relativePath
  bool operator==(const host_app_info&) const = default;
};

// The node as koordlet reads it (corev1.Node status plus reservations).
struct node_info {
  std::string name;
  resource_list capacity;     // status.capacity
  resource_list allocatable;  // status.allocatable (batch-cpu/batch-memory included)
  // Whether allocatable carries kubernetes.io/batch-cpu (missing differs from 0 for CPU evict).
  bool has_batch_cpu_allocatable = true;
  // max(kubelet reserved = capacity - allocatable, annotation node.koordinator.sh/reservation) cpu,
  // computed by the caller (helpers.GetNodeResourceReserved).
  std::int64_t reserved_cpu_milli = 0;
};

// ---------------------------------------------------------------------------------------------
// Config: NodeSLO spec.resourceUsedThresholdWithBE (apis/slo/v1alpha1/nodeslo_types.go),
// defaults from pkg/util/sloconfig/nodeslo_config.go DefaultResourceThresholdStrategy.

enum class cpu_suppress_policy_type : std::uint8_t { cpuset, cfs_quota };
enum class cpu_evict_policy_type : std::uint8_t { evict_by_real_limit, evict_by_allocatable };

struct resource_threshold_strategy {
  // Default: false (nodeslo_config.go DefaultResourceThresholdStrategy)
  bool enable = false;
  // Default: 65 (nodeslo_config.go)
  std::int64_t cpu_suppress_threshold_percent = 65;
  // Default: unset (nodeslo_config.go)
  std::optional<std::int64_t> cpu_suppress_min_percent;
  // Default: cpuset (nodeslo_config.go)
  cpu_suppress_policy_type cpu_suppress_policy = cpu_suppress_policy_type::cpuset;
  // Default: 70 (nodeslo_config.go)
  std::optional<std::int64_t> memory_evict_threshold_percent = 70;
  // Default: unset = threshold - 2 (memory_evict.go memoryReleaseBufferPercent)
  std::optional<std::int64_t> memory_evict_lower_percent;
  // Default: unset (comments suggest 110 / 100, not applied)
  std::optional<std::int64_t> memory_allocatable_evict_threshold_percent;
  std::optional<std::int64_t> memory_allocatable_evict_lower_percent;
  // Default: unset; BECPUEvict does nothing without both (cpu_evict.go isSatisfactionConfigValid)
  std::optional<std::int64_t> cpu_evict_be_satisfaction_upper_percent;
  std::optional<std::int64_t> cpu_evict_be_satisfaction_lower_percent;
  // Default: unset = 90 (cpu_evict.go beCPUUsageThresholdPercent)
  std::optional<std::int64_t> cpu_evict_be_usage_threshold_percent;
  // Default: unset = collect interval (cpu_evict.go)
  std::optional<std::int64_t> cpu_evict_time_window_seconds;
  // Default: unset; lower unset = threshold - 2 (cpu_evict.go cpuReleaseBufferPercent)
  std::optional<std::int64_t> cpu_evict_threshold_percent;
  std::optional<std::int64_t> cpu_evict_lower_percent;
  // Default: unset
  std::optional<std::int64_t> cpu_allocatable_evict_threshold_percent;
  std::optional<std::int64_t> cpu_allocatable_evict_lower_percent;
  // Default: evictByRealLimit (nodeslo_config.go)
  cpu_evict_policy_type cpu_evict_policy = cpu_evict_policy_type::evict_by_real_limit;
  // Default: unset (MemoryEvict and CPUEvict need it)
  std::optional<std::int32_t> evict_enabled_priority_threshold;
  // Default: unset, must be <= 7999 (PriorityMidValueMax)
  std::optional<std::int32_t> allocatable_evict_priority_threshold;
  bool operator==(const resource_threshold_strategy&) const = default;
};

// Koordlet feature gates (pkg/features/koordlet_features.go).
struct koordlet_feature_gates {
  bool be_cpu_suppress = true;            // Default: on (BECPUSuppress)
  bool cpu_burst = true;                  // Default: on (CPUBurst)
  bool be_cpu_evict = false;              // Default: off (BECPUEvict)
  bool cpu_evict = false;                 // Default: off (CPUEvict)
  bool cpu_allocatable_evict = false;     // Default: off (CPUAllocatableEvict)
  bool be_memory_evict = false;           // Default: off (BEMemoryEvict)
  bool memory_evict = false;              // Default: off (MemoryEvict)
  bool memory_allocatable_evict = false;  // Default: off (MemoryAllocatableEvict)
  // Runtime hooks' gates (pkg/koordlet/runtimehooks/config.go).
  bool group_identity = true;  // Default: on (GroupIdentity)
  bool batch_resource = true;  // Default: on (BatchResource)
  // Resctrl QoS groups (qosmanager plugin resctrl, pkg/features/koordlet_features.go).
  bool rdt_resctrl = true;  // Default: on (RdtResctrl)
  // kidled's cold pages for memory with hot page cache (metricsadvisor coldmemoryresource).
  bool cold_page_collector = false;  // Default: off (ColdPageCollector)
};

// Loop timing (pkg/koordlet/qosmanager/framework/config.go, metricsadvisor/framework/config.go).
struct qos_manager_timing {
  duration_ms collect_res_used_interval{1000};  // Default: 1 s (CollectResUsedInterval)
  duration_ms cpu_suppress_interval{1000};      // Default: 1 s (CPUSuppressIntervalSeconds)
  duration_ms memory_evict_interval{1000};      // Default: 1 s (MemoryEvictIntervalSeconds)
  duration_ms memory_evict_cool_time{4000};     // Default: 4 s (MemoryEvictCoolTimeSeconds)
  duration_ms cpu_evict_interval{1000};         // Default: 1 s (CPUEvictIntervalSeconds)
  duration_ms cpu_evict_cool_time{20000};       // Default: 20 s (CPUEvictCoolTimeSeconds)
};

// ---------------------------------------------------------------------------------------------
// Explanations: every decision lists its inputs and intermediate values, in a fixed order.
// name/unit/text point at string literals (no allocation on the hot path).
struct explain_term {
  std::string_view name;  // Koordinator's variable name, e.g. "cpuSuppressThresholdPercent"
  double value = 0;
  std::string_view unit;  // "milli", "cores", "percent", "bytes", "us", "count"
  std::string_view text;  // one line: what it is / where it comes from
};

// ---------------------------------------------------------------------------------------------
// cpuset lists (pkg/util/cpuset): "0-2,7" <-> sorted ids.

// Formats ids (any order, duplicates allowed) as the kernel's canonical list, e.g. "2-4,7".
[[nodiscard]] std::string format_cpuset(std::vector<std::int32_t> ids);
// Parses "0-2,7" (spaces and empty allowed); invalid_input names the bad token.
[[nodiscard]] result<std::vector<std::int32_t>> parse_cpuset(std::string_view s);

}  // namespace colony::koordlet
