// Shared helpers for the ElasticQuota tests: Koordinator's createResourceList /
// AddQuotaToManager shapes in Colony's structs.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>

#include <gtest/gtest.h>

#include "actors/quota/quota_tree.hpp"
#include "messages/units.hpp"
#include "tests/support/resources.hpp"

namespace colony {
// gtest printer: "cpu:1,memory:2" instead of raw bytes.
inline void PrintTo(const resource_list& r, std::ostream* os) {
  *os << quota::print_resource_list(r, quota::nonzero_keys(r));
}
}  // namespace colony

namespace colony::quota::testing {

inline constexpr std::int64_t GigaByte = colony::gib;

// createResourceList(cpu cores, memory bytes).
inline resource_list res(std::int64_t cpu_cores, std::int64_t mem) {
  return colony::testing::cpu_mem(cpu_cores * 1000, mem);
}
// createResourceList2(cpu milli, memory bytes).
inline resource_list res2(std::int64_t cpu_milli, std::int64_t mem) {
  return colony::testing::cpu_mem(cpu_milli, mem);
}

// group_quota_manager_test.go CreateQuota/AddQuotaToManager: max and min over cpu and memory,
// shared weight = max.
inline quota_spec make_quota(const std::string& name, const std::string& parent,
                             std::int64_t max_cpu, std::int64_t max_mem, std::int64_t min_cpu,
                             std::int64_t min_mem, bool allow_lent, bool is_parent) {
  quota_spec s;
  s.name = name;
  s.parent = parent == std::string(quota_names::root_quota) ? std::string{} : parent;
  s.max = res(max_cpu, max_mem);
  s.min = res(min_cpu, min_mem);
  s.max_keys = key::cpu | key::memory;
  s.min_keys = key::cpu | key::memory;
  s.shared_weight = s.max;
  s.shared_weight_keys = key::cpu | key::memory;
  s.allow_lent_resource = allow_lent;
  s.is_parent = is_parent;
  return s;
}

inline void add_quota(quota_tree& t, const std::string& name, const std::string& parent,
                      std::int64_t max_cpu, std::int64_t max_mem, std::int64_t min_cpu,
                      std::int64_t min_mem, bool allow_lent, bool is_parent) {
  ASSERT_TRUE(t.upsert_quota(
      make_quota(name, parent, max_cpu, max_mem, min_cpu, min_mem, allow_lent, is_parent)));
}

// updateGroupDeltaRequestNoLock: Colony books requests through pods, one pending pod per delta.
inline void add_request(quota_tree& t, const std::string& quota, const resource_list& request,
                        bool non_preemptible = false, bool assigned = false) {
  static int serial = 0;
  quota_pod p;
  p.name = quota + "/delta-" + std::to_string(serial++);
  p.quota = quota;
  p.request = request;
  p.non_preemptible = non_preemptible;
  p.assigned = assigned;
  ASSERT_TRUE(t.upsert_pod(std::move(p)));
}

inline resource_list runtime_of(quota_tree& t, const std::string& name) {
  t.refresh();
  const auto* s = t.status(name);
  EXPECT_NE(s, nullptr) << name;
  return s ? s->runtime : resource_list{};
}

}  // namespace colony::quota::testing
