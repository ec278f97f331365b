// Builders shared by the koordlet policy tests.
#pragma once

#include <optional>
#include <string>

#include "actors/koordlet/koordlet_types.hpp"
#include "tests/support/resources.hpp"

namespace colony::koordlet::test {

inline constexpr std::int64_t G = 1000LL * 1000 * 1000;  // tests mix G (1e9) and Gi
inline constexpr std::int64_t Gi = 1024LL * 1024 * 1024;

inline pod_info make_pod(std::string name, qos_class q,
                         std::optional<std::int32_t> priority = std::nullopt) {
  pod_info p;
  p.ns = "default";
  p.name = name;
  p.uid = name;
  p.qos = q;
  p.priority = priority;
  return p;
}

inline node_info make_node(std::int64_t cpu_milli, std::int64_t memory_bytes) {
  node_info n;
  n.name = "test-node";
  n.capacity = colony::testing::cpu_mem(cpu_milli, memory_bytes);
  n.allocatable = n.capacity;
  return n;
}

}  // namespace colony::koordlet::test
