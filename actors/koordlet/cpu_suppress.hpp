// CPU suppress: how much CPU the best-effort (BE) tier may use on a node, and how to enforce it,
// either as a BE cpuset or as a cfs quota on the besteffort QoS cgroup.
//
// Koordinator: pkg/koordlet/qosmanager/plugins/cpusuppress/cpu_suppress.go and
// pkg/koordlet/qosmanager/helpers/calculator.go.
// Pure functions over plain structs; the caller runs them every cpu_suppress_interval and turns
// the decision into cgroup writes (cgroup_writer.hpp). Thread-safety: none needed.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "actors/koordlet/koordlet_types.hpp"

namespace colony::koordlet {

inline constexpr std::int64_t be_min_cpuset_cores = 2;             // beMinCPUSetCores
inline constexpr std::int64_t be_min_quota = 2000;                 // beMinQuota (us)
inline constexpr double be_max_increase_cpu_percent = 0.1;         // beMaxIncreaseCPUPercent
inline constexpr double suppress_bypass_quota_delta_ratio = 0.01;  // suppressBypassQuotaDeltaRatio
inline constexpr std::int64_t be_unset_quota = -1;                 // beUnsetQuota
inline constexpr std::int64_t default_cfs_period_us = 100000;      // system.DefaultCPUCFSPeriod

// One logical CPU (koordletutil.ProcessorInfo).
struct processor_info {
  std::int32_t cpu_id = 0;
  std::int32_t core_id = 0;
  std::int32_t socket_id = 0;
  std::int32_t node_id = 0;  // NUMA node
  friend bool operator==(const processor_info&, const processor_info&) = default;
};

// ---- calculateBESuppressCPU ------------------------------------------------------------------

struct be_suppress_cpu {
  std::int64_t suppress_milli = 0;  // may be negative before the cpuset/cfs floors
  std::vector<explain_term> explain;
};

// What each term of a BE CPU suppression decision (BeSuppressed) is: its unit and one line of
// text. A record names these terms by the schema's vocabulary and leaves the text out; a reader
// shows it from here ("" for a name that is not one of them).
struct suppress_term_def {
  std::string_view name, unit, text;
};
[[nodiscard]] std::span<const suppress_term_def> suppress_terms() noexcept;
// The definition named `name`, or none.
[[nodiscard]] const suppress_term_def* find_suppress_term(std::string_view name) noexcept;
// A term of that definition with this value (REQUIRES: name is one of suppress_terms()).
[[nodiscard]] explain_term suppress_term(std::string_view name, double value) noexcept;

// REQUIRES: pods' cpu_used_cores are the "last" pod CPU metrics; orphan_pod_cpu_cores are metrics
// whose pod is unknown (counted as non-BE, as Koordinator does for transient pods).
[[nodiscard]] be_suppress_cpu calculate_be_suppress_cpu(
    const node_info& node, double node_used_cores, std::span<const pod_info> pods,
    std::span<const double> orphan_pod_cpu_cores, std::span<const host_app_info> host_apps,
    std::int64_t be_cpu_used_threshold_percent, std::optional<std::int64_t> be_cpu_min_percent);

// Koordinator's helpers.NonBEPodFilter / NonBEHostAppFilter.
[[nodiscard]] bool non_be_pod(const pod_info& p) noexcept;
[[nodiscard]] bool non_be_host_app(const host_app_info& h) noexcept;

// ---- cpuset policy ---------------------------------------------------------------------------

// calculateBESuppressCPUSetPolicy: picks `cpus` processors, whole hyper-thread pairs first,
// round-robin over (NUMA node, socket) buckets. Returns ids in pick order; empty if too few.
[[nodiscard]] std::vector<std::int32_t> calculate_be_suppress_cpuset_policy(
    std::int32_t cpus, std::span<const processor_info> processors);

// Remembers calculate_be_suppress_cpuset_policy's picks for the last few (cpus, pool) pairs of
// one node: a pure function, so a hit returns exactly what the call would. A node's pools change
// only when pinned pods come and go, and its suppress target moves around a level, while the
// call sorts, buckets and allocates on every report (one memo per koordlet).
class cpuset_policy_memo {
 public:
  const std::vector<std::int32_t>& picks(std::int32_t cpus, std::span<const processor_info> pool);
  [[nodiscard]] std::uint64_t calls() const { return calls_; }
  [[nodiscard]] std::uint64_t hits() const { return hits_; }

 private:
  struct entry {
    std::int32_t cpus = -1;
    std::vector<processor_info> pool;
    std::vector<std::int32_t> picked;
    std::uint64_t last_use = 0;
  };
  static constexpr std::size_t size_ = 8;
  entry entries_[size_];
  std::uint64_t calls_ = 0, hits_ = 0;
};

struct cpuset_inputs {
  std::span<const processor_info> processors;   // all processors of the node (NodeCPUInfo)
  std::span<const std::int32_t> old_be_cpuset;  // current besteffort cgroup cpuset.cpus
  std::span<const std::int32_t> reserved_cpus;  // NodeResourceTopology reservation reservedCPUs
  std::span<const std::int32_t> system_qos_exclusive_cpus;  // exclusive SYSTEM QoS cpuset
  cpuset_policy_memo* memo = nullptr;  // optional; the decision is the same without it
};

struct cpuset_decision {
  std::int32_t target_cpus = 0;    // after the floor of 2 and the growth limit
  std::int32_t lsr_cpus = 0;       // share picked from the LSR pool
  std::vector<std::int32_t> cpus;  // pick order; empty = write nothing
  std::vector<std::int32_t>
      merged;  // old union new, sorted: first (top-down) write of `none` policy
};

// adjustByCPUSet, minus the cgroup I/O. Pods give the LSR/LSE pinned cpus.
[[nodiscard]] cpuset_decision adjust_by_cpuset(std::int64_t suppress_milli, const cpuset_inputs& in,
                                               std::span<const pod_info> pods);

// calcBECPUSet: the BE cpuset when suppress is recovered (all cpus minus reserved, exclusive
// SYSTEM, LSE-pinned). Sorted.
[[nodiscard]] std::vector<std::int32_t> calc_be_cpuset(const cpuset_inputs& in,
                                                       std::span<const pod_info> pods);

// ---- cfsQuota policy -------------------------------------------------------------------------

struct cfs_quota_decision {
  bool write = false;         // false: delta below 1 % of the node, keep current
  std::int64_t quota_us = 0;  // value for besteffort cpu.cfs_quota_us when write
  bool step_limited = false;  // growth capped at 10 % of the node per round
};

// adjustByCfsQuota, minus the cgroup I/O. current_quota_us = -1 when unset.
[[nodiscard]] cfs_quota_decision adjust_by_cfs_quota(std::int64_t suppress_milli,
                                                     std::int64_t capacity_cpu_milli,
                                                     std::int64_t current_quota_us);

// ---- one suppress round (suppressBECPU) ------------------------------------------------------

// suppressPolicyStatuses of the plugin: whether the cfs quota was already restored to -1.
enum class policy_status : std::uint8_t { unknown, in_use, recovered };

struct cpu_suppress_state {
  policy_status cfs_quota = policy_status::unknown;
  policy_status cpuset = policy_status::unknown;
};

struct cpu_suppress_input {
  const node_info* node = nullptr;
  std::span<const pod_info> pods;
  std::span<const double> orphan_pod_cpu_cores;
  std::span<const host_app_info> host_apps;
  std::optional<double> node_cpu_used_cores;  // last node CPU metric; nullopt = none
  cpuset_inputs cpuset;
  std::int64_t current_be_cfs_quota_us = be_unset_quota;
};

enum class suppress_action : std::uint8_t {
  none,       // plugin off (gate) or inputs missing: do nothing
  recover,    // disabled by NodeSLO: restore quota -1 and the full BE cpuset
  cpuset,     // apply cpuset.cpus on besteffort cgroups
  cfs_quota,  // apply cpu.cfs_quota_us on the besteffort cgroup
};

struct cpu_suppress_decision {
  suppress_action action = suppress_action::none;
  be_suppress_cpu suppress;                  // filled for cpuset / cfs_quota
  cpuset_decision cpuset;                    // action == cpuset
  cfs_quota_decision cfs_quota;              // action == cfs_quota
  bool restore_cfs_quota = false;            // also write -1 to besteffort cpu.cfs_quota_us
  std::vector<std::int32_t> restore_cpuset;  // non-empty: also write this full BE cpuset
  cpu_suppress_state next_state;
  std::string_view reason;  // why none, for logs
};

[[nodiscard]] cpu_suppress_decision suppress_be_cpu(const cpu_suppress_input& in,
                                                    const resource_threshold_strategy& cfg,
                                                    const koordlet_feature_gates& gates,
                                                    const cpu_suppress_state& state);

}  // namespace colony::koordlet
