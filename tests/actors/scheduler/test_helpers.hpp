// Builders shared by the scheduler policy tests.
#pragma once

#include <string>
#include <utility>

#include "actors/scheduler/framework.hpp"
#include "tests/support/resources.hpp"

namespace colony::scheduler::testing {

inline constexpr std::int64_t Gi = 1024LL * 1024 * 1024;
inline constexpr std::int64_t Mi = 1024LL * 1024;
inline constexpr event_time kNow{1'700'000'000'000};  // an arbitrary event time (ms)

inline event_time seconds_before(std::int64_t s) { return event_time{kNow.value - s * 1000}; }

using colony::testing::cpu_mem;

inline pod_info make_pod(std::string key, resource_list req = {}, resource_list lim = {}) {
  pod_info p;
  p.key = std::move(key);
  p.requests = req;
  p.limits = lim;
  return p;
}

inline node_info make_node(std::string name, std::int64_t cpu_milli, std::int64_t mem_bytes,
                           std::int64_t pods = 110) {
  node_info n;
  n.name = std::move(name);
  n.allocatable.cpu_milli = cpu_milli;
  n.allocatable.memory_bytes = mem_bytes;
  n.allocatable.pods = pods;
  return n;
}

}  // namespace colony::scheduler::testing
