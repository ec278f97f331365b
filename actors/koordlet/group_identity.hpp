// Group identity (bvt): the cpu.bvt_warp_ns value per QoS class, pod and kube QoS cgroup dir.
//
// Koordinator: pkg/koordlet/runtimehooks/hooks/groupidentity/rule.go (parseRule, getPodBvtValue,
// getKubeQOSDirBvtValue), defaults in pkg/util/sloconfig/nodeslo_config.go.
// Pure; thread-safety: none needed.
#pragma once

#include <cstdint>
#include <optional>

#include "actors/koordlet/koordlet_types.hpp"

namespace colony::koordlet {

enum class cpu_qos_policy : std::uint8_t { group_identity, core_sched };

// <class>.cpuQOS of ResourceQOSStrategy.
struct cpu_qos {
  bool enable = false;              // Default: false (every class)
  std::int64_t group_identity = 0;  // Default: LSR 2, LS 2, BE -1, SYSTEM 0 (DefaultCPUQOS)
};

struct resource_qos_cpu_strategy {
  // Default: unset = groupIdentity (policies.cpuPolicy)
  std::optional<cpu_qos_policy> cpu_policy;
  cpu_qos lsr_class{false, 2};
  cpu_qos ls_class{false, 2};
  cpu_qos be_class{false, -1};
  cpu_qos system_class{false, 0};
};

struct bvt_rule {
  bool enable = false;                   // any class enabled under the groupIdentity policy
  std::int64_t lsr = 0, ls = 0, be = 0;  // pod values by Raw QoS (LSE uses lsr)
  std::int64_t dir_guaranteed = 0, dir_burstable = 0, dir_besteffort = 0;  // kube QoS dirs
  std::int64_t pod_guaranteed = 0, pod_burstable = 0, pod_besteffort = 0;  // pods by kube QoS
};

[[nodiscard]] bvt_rule parse_bvt_rule(const resource_qos_cpu_strategy& s) noexcept;
// getPodBvtValue: by Raw QoS when LSE/LSR/LS/BE, else by kube QoS (none -> 0).
[[nodiscard]] std::int64_t pod_bvt_value(const bvt_rule& r, qos_class raw, kube_qos kq) noexcept;
[[nodiscard]] std::int64_t kube_qos_dir_bvt_value(const bvt_rule& r, kube_qos kq) noexcept;
// getHostQOSBvtValue: a host application's value by its QoS (LSE/LSR/LS/BE), else 0.
[[nodiscard]] inline std::int64_t host_app_bvt_value(const bvt_rule& r, qos_class q) noexcept {
  return pod_bvt_value(r, q, kube_qos::unset);
}

}  // namespace colony::koordlet
