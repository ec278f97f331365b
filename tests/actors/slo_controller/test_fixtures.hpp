// Shared builders for the slo-controller policy tests: Koordinator's test fixtures
// (plugins/batchresource/plugin_test.go makeNodeStat, getTestPodList, getTestResourceMetrics;
// plugins/midresource/plugin_test.go) as plain structs.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "actors/slo_controller/node_resource.hpp"
#include "tests/support/resources.hpp"

namespace colony::slo_controller::testing {

inline constexpr std::int64_t cores = 1000;              // milli per core
inline constexpr std::int64_t G = 1000LL * 1000 * 1000;  // resource "G"
inline constexpr std::int64_t Gi = 1024LL * 1024 * 1024;
inline constexpr std::int64_t minute_ms = 60 * 1000;

inline resource_list rl(std::int64_t cpu_milli, std::int64_t mem_bytes) {
  return colony::testing::cpu_mem(cpu_milli, mem_bytes);
}

// makeNodeStat / makeNodeStatWithKubeletReserved.
inline node_input make_node(std::string name, resource_list capacity, resource_list allocatable) {
  node_input n;
  n.name = std::move(name);
  n.capacity = capacity;
  n.allocatable = allocatable;
  return n;
}
inline node_input make_node(std::string name, resource_list capacity) {
  return make_node(std::move(name), capacity, capacity);
}

inline pod_input make_pod(std::string name, priority_class p, qos_class q, pod_phase phase,
                          resource_list req) {
  pod_input pod;
  pod.ns = "test";
  pod.name = std::move(name);
  pod.priority = p;
  pod.qos = q;
  pod.phase = phase;
  pod.requests = req;
  pod.limits = req;
  return pod;
}

inline pod_metric make_metric(std::string name, resource_list usage,
                              priority_class p = priority_class::none) {
  pod_metric m;
  m.ns = "test";
  m.name = std::move(name);
  m.usage = usage;
  m.priority = p;
  return m;
}

// getTestPodList: podA (LS -> Prod) 20/20G Running; podB (BE -> Batch) no resources Running;
// podC (no labels, Guaranteed -> LSR -> Prod) 2 x 10/20G Pending; podD (BE) 10/10G Succeeded.
inline std::vector<pod_input> default_pods() {
  return {
      make_pod("podA", priority_class::prod, qos_class::ls, pod_phase::running,
               rl(20 * cores, 20 * G)),
      make_pod("podB", priority_class::batch, qos_class::be, pod_phase::running, rl(0, 0)),
      make_pod("podC", priority_class::prod, qos_class::lsr, pod_phase::pending,
               pod_request({rl(10 * cores, 20 * G), rl(10 * cores, 20 * G)}, {}, {})),
      make_pod("podD", priority_class::batch, qos_class::be, pod_phase::succeeded,
               rl(10 * cores, 10 * G)),
  };
}

// getTestResourceMetrics: nodeUsage 50/55G, systemUsage 7/12G, podA 11/11G, podB 10/10G, podC
// 22/22G.
inline node_metric_input default_metric(event_time now) {
  node_metric_input m;
  m.update_time = now;
  m.node_usage = {50 * cores, 55 * G};
  m.system_usage = rl(7 * cores, 12 * G);
  m.pod_metrics = {make_metric("podA", rl(11 * cores, 11 * G)),
                   make_metric("podB", rl(10 * cores, 10 * G)),
                   make_metric("podC", rl(22 * cores, 22 * G))};
  return m;
}

// The strategy of the Go cases: Enable, reclaim percents, degrade 15, update 300, diff 0.1.
inline colocation_strategy make_strategy(std::int64_t cpu_reclaim, std::int64_t mem_reclaim) {
  colocation_strategy s;
  s.enable = true;
  s.cpu_reclaim_threshold_percent = cpu_reclaim;
  s.memory_reclaim_threshold_percent = mem_reclaim;
  s.degrade_time_minutes = 15;
  s.update_time_threshold_seconds = 300;
  s.resource_diff_threshold = 0.1;
  return s;
}

}  // namespace colony::slo_controller::testing
