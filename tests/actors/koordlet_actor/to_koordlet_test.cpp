// to_koordlet: slo-controller-config's ResourceThresholdStrategy as the koordlet reads it in its
// NodeSLO. Table-driven over parsed configs (merged over the defaults, as the ConfigMap path
// gives them) and hand-built strategies (fields unset), each checked field by field against
// the expected koordlet settings, and against the hand translation of the sim's old driver
// (sim/driver.cpp setup(), since removed; copied below) on every field that translation set.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "actors/koordlet/actor/koordlet_component.hpp"
#include "actors/slo_controller/slo_controller_config.hpp"

namespace colony::koordlet_actor {
namespace {

namespace kl = koordlet;
namespace sc = slo_controller;

// The old sim driver's translation (sim/driver.cpp setup(), kcfg_; removed), starting from
// koordlet's defaults.
kl::resource_threshold_strategy sim_translation(const sc::resource_threshold_strategy& s) {
  kl::resource_threshold_strategy k;
  k.enable = s.enable.value_or(false);
  if (s.cpu_suppress_threshold_percent)
    k.cpu_suppress_threshold_percent = *s.cpu_suppress_threshold_percent;
  k.cpu_suppress_min_percent = s.cpu_suppress_min_percent;
  if (s.cpu_suppress_policy && *s.cpu_suppress_policy == "cfsQuota")
    k.cpu_suppress_policy = kl::cpu_suppress_policy_type::cfs_quota;
  if (s.memory_evict_threshold_percent)
    k.memory_evict_threshold_percent = *s.memory_evict_threshold_percent;
  k.memory_evict_lower_percent = s.memory_evict_lower_percent;
  if (s.evict_enabled_priority_threshold)
    k.evict_enabled_priority_threshold =
        static_cast<std::int32_t>(*s.evict_enabled_priority_threshold);
  return k;
}

// The fields the sim's translation sets.
void expect_sim_fields_equal(const kl::resource_threshold_strategy& a,
                             const kl::resource_threshold_strategy& b, const std::string& name) {
  EXPECT_EQ(a.enable, b.enable) << name;
  EXPECT_EQ(a.cpu_suppress_threshold_percent, b.cpu_suppress_threshold_percent) << name;
  EXPECT_EQ(a.cpu_suppress_min_percent, b.cpu_suppress_min_percent) << name;
  EXPECT_EQ(a.cpu_suppress_policy, b.cpu_suppress_policy) << name;
  EXPECT_EQ(a.memory_evict_threshold_percent, b.memory_evict_threshold_percent) << name;
  EXPECT_EQ(a.memory_evict_lower_percent, b.memory_evict_lower_percent) << name;
  EXPECT_EQ(a.evict_enabled_priority_threshold, b.evict_enabled_priority_threshold) << name;
}

struct row {
  std::string name;
  sc::resource_threshold_strategy in;
  kl::resource_threshold_strategy want;
};

sc::resource_threshold_strategy parsed(const std::string& cluster_json) {
  auto c = sc::parse_resource_threshold_config(R"({"clusterStrategy": )" + cluster_json + "}");
  EXPECT_TRUE(c.has_value()) << (c ? "" : c.error().message);
  return c ? c->cluster : sc::resource_threshold_strategy{};
}

TEST(ToKoordlet, ResourceThresholdStrategyTable) {
  std::vector<row> rows;
  {  // Koordinator's defaults, parsed and hand-built (all unset): koordlet's defaults.
    rows.push_back({"defaults (parsed)", parsed("{}"), kl::resource_threshold_strategy{}});
    rows.push_back({"all unset (hand-built)", sc::resource_threshold_strategy{},
                    kl::resource_threshold_strategy{}});
  }
  {
    kl::resource_threshold_strategy w;
    w.enable = true;
    w.cpu_suppress_threshold_percent = 50;
    w.cpu_suppress_min_percent = 10;
    w.cpu_suppress_policy = kl::cpu_suppress_policy_type::cfs_quota;
    rows.push_back({"cpu suppress, cfsQuota",
                    parsed(R"({"enable": true, "cpuSuppressThresholdPercent": 50,
                               "cpuSuppressMinPercent": 10, "cpuSuppressPolicy": "cfsQuota"})"),
                    w});
  }
  {
    kl::resource_threshold_strategy w;
    w.enable = true;
    w.cpu_suppress_policy = kl::cpu_suppress_policy_type::cpuset;
    rows.push_back(
        {"cpuset policy named", parsed(R"({"enable": true, "cpuSuppressPolicy": "cpuset"})"), w});
  }
  {
    kl::resource_threshold_strategy w;
    w.enable = true;
    w.memory_evict_threshold_percent = 80;
    w.memory_evict_lower_percent = 75;
    w.evict_enabled_priority_threshold = 6000;
    rows.push_back({"memory evict thresholds and the evict-enabled priority",
                    parsed(R"({"enable": true, "memoryEvictThresholdPercent": 80,
                               "memoryEvictLowerPercent": 75,
                               "evictEnabledPriorityThreshold": 6000})"),
                    w});
  }
  {
    kl::resource_threshold_strategy w;
    w.memory_allocatable_evict_threshold_percent = 110;
    w.memory_allocatable_evict_lower_percent = 100;
    w.cpu_evict_be_satisfaction_upper_percent = 60;
    w.cpu_evict_be_satisfaction_lower_percent = 40;
    w.cpu_evict_be_usage_threshold_percent = 90;
    w.cpu_evict_time_window_seconds = 120;
    w.cpu_evict_threshold_percent = 85;
    w.cpu_evict_lower_percent = 80;
    w.cpu_allocatable_evict_threshold_percent = 105;
    w.cpu_allocatable_evict_lower_percent = 95;
    w.cpu_evict_policy = kl::cpu_evict_policy_type::evict_by_allocatable;
    w.allocatable_evict_priority_threshold = 7000;
    rows.push_back({"cpu evict and allocatable evict fields (the sim sets none)",
                    parsed(R"({"memoryAllocatableEvictThresholdPercent": 110,
                               "memoryAllocatableEvictLowerPercent": 100,
                               "cpuEvictBESatisfactionUpperPercent": 60,
                               "cpuEvictBESatisfactionLowerPercent": 40,
                               "cpuEvictBEUsageThresholdPercent": 90,
                               "cpuEvictTimeWindowSeconds": 120,
                               "cpuEvictThresholdPercent": 85, "cpuEvictLowerPercent": 80,
                               "cpuAllocatableEvictThresholdPercent": 105,
                               "cpuAllocatableEvictLowerPercent": 95,
                               "cpuEvictPolicy": "evictByAllocatable",
                               "allocatableEvictPriorityThreshold": 7000})"),
                    w});
  }
  {  // Hand-built with memoryEvictThresholdPercent unset: the NodeSLO default 70, as the sim.
    sc::resource_threshold_strategy s;
    s.enable = true;
    s.memory_evict_lower_percent = 60;
    kl::resource_threshold_strategy w;
    w.enable = true;
    w.memory_evict_threshold_percent = 70;
    w.memory_evict_lower_percent = 60;
    rows.push_back({"hand-built, threshold unset", s, w});
  }
  for (const auto& r : rows) {
    const auto got = to_koordlet(r.in);
    EXPECT_EQ(got, r.want) << r.name;
    expect_sim_fields_equal(got, sim_translation(r.in), r.name);
  }
}

}  // namespace
}  // namespace colony::koordlet_actor
