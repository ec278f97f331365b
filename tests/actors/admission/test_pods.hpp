// Small builders for pod_spec values used across the admission tests.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "actors/admission/pod_spec.hpp"
#include "messages/units.hpp"
#include "tests/support/resources.hpp"

namespace colony::admission::testing {

using colony::testing::cpu_mem;

inline resource_list batch(std::int64_t cpu_milli, std::int64_t memory_bytes) {
  return colony::testing::batch_req(cpu_milli, memory_bytes);
}

inline resource_list mid(std::int64_t cpu_milli, std::int64_t memory_bytes) {
  return colony::testing::mid_req(cpu_milli, memory_bytes);
}

inline container_spec container(std::string name, resource_list requests, resource_list limits) {
  return container_spec{std::move(name), requests, limits};
}

inline pod_spec pod_with(string_map labels, std::optional<std::int32_t> priority,
                         std::vector<container_spec> containers = {}) {
  pod_spec p;
  p.pod_namespace = "default";
  p.name = "test-pod";
  p.labels = std::move(labels);
  p.priority = priority;
  p.containers = std::move(containers);
  return p;
}

// A Go test case name as a gtest name: "mutating pod, percent 50, rand=70" ->
// "MutatingPodPercent50Rand70" (gtest names are alphanumeric, no underscores).
inline std::string gtest_name(std::string_view go_case) {
  std::string out;
  bool upper = true;
  for (char c : go_case) {
    const bool alnum = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
    if (!alnum) {
      upper = true;
      continue;
    }
    out += upper && c >= 'a' && c <= 'z' ? static_cast<char>(c - 'a' + 'A') : c;
    upper = false;
  }
  return out;
}

}  // namespace colony::admission::testing
