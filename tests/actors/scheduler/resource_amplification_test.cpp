// The node resource amplification the scheduler applies (resource_amplification.hpp): golden
// cases of Koordinator's
// pkg/webhook/node/plugins/resourceamplification/resource_amplification_test.go
// (TestNodeResourceAmplificationPlugin_handleNormalization) and
// pkg/scheduler/plugins/nodenumaresource/plugin_test.go (TestFilterWithAmplifiedCPUs), and
// NodeResourcesFit over an amplified node.
#include <gtest/gtest.h>

#include "actors/scheduler/node_resources_fit.hpp"
#include "actors/scheduler/resource_amplification.hpp"
#include "tests/actors/scheduler/test_helpers.hpp"

namespace colony::scheduler {
namespace {

using namespace testing;

// TestNodeResourceAmplificationPlugin_handleNormalization (allocatable 1000 cores).
TEST(ResourceAmplification, WebhookAmplifiesAllocatable) {
  struct row {
    const char* name;
    const char* annotation;
    std::int64_t want_cpu_milli;
    bool raw_kept;  // node.koordinator.sh/raw-allocatable is written
  };
  const std::vector<row> rows = {
      {"normal", R"({"cpu": 1.5})", 1500000, true},
      {"disable1", R"({"cpu": 0.5})", 1000000, false},
      {"disable2", R"({"cpu": 1})", 1000000, false},
      {"unsupported ratio will be ignored", R"({"eni": 2})", 1000000, false},
      {"get original resource from annotation and amplify", R"({"cpu": 2})", 2000000, true},
  };
  resource_list raw;
  raw.cpu_milli = 1000000;
  raw.memory_bytes = 8 * Gi;
  for (const auto& r : rows) {
    auto ratios = parse_amplification_ratios(r.annotation);
    ASSERT_TRUE(ratios) << r.name << ": " << ratios.error().describe();
    const auto a = amplified_allocatable(raw, *ratios);
    EXPECT_EQ(a.cpu_milli, r.want_cpu_milli) << r.name;
    EXPECT_EQ(a.memory_bytes, 8 * Gi) << r.name;
    // Colony keeps raw cpu/memory while a ratio above 1 applies (the webhook writes the raw
    // annotation whenever the ratio annotation is set; LoadAware reads it either way).
    EXPECT_EQ(ratios->any(), r.raw_kept) << r.name;
  }
  // Memory is a milli product rounded up to bytes (MultiplyMilliQuant, Quantity.Value()).
  amplification_ratios mem;
  mem.memory = 1.5;
  resource_list m;
  m.memory_bytes = 3;
  EXPECT_EQ(amplified_allocatable(m, mem).memory_bytes, 5);  // 4.5 -> 5
  // A malformed annotation is an error naming it.
  auto bad = parse_amplification_ratios(R"({"cpu":"x"})");
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().where, "node.koordinator.sh/resource-amplification-ratio.cpu");
  EXPECT_FALSE(parse_amplification_ratios("{"));
  // The slo-controller's metadata patch: set, removed, or not named.
  EXPECT_EQ(amplification_from_patch(
                R"({"node.koordinator.sh/resource-amplification-ratio":"{\"cpu\":1.20}"})")
                ->cpu,
            1.2);
  EXPECT_FALSE(
      amplification_from_patch(R"({"node.koordinator.sh/resource-amplification-ratio":null})")
          ->any());
  EXPECT_FALSE(
      amplification_from_patch(R"({"node.koordinator.sh/cpu-normalization-ratio":"1.20"})"));
}

// TestFilterWithAmplifiedCPUs: a 32-CPU node (2 sockets x 8 cores x 2 threads), ratio 2, so 64
// amplified cpus allocatable.
TEST(ResourceAmplification, FilterWithAmplifiedCPUs) {
  struct row {
    const char* name;
    std::int64_t pod_milli;
    bool pod_cpuset;
    std::int64_t existing_milli;
    bool existing_cpuset;
    double ratio;
    bool want_fit;
  };
  const std::vector<row> rows = {
      {"no resources requested always fits", 0, false, 4000, false, 2.0, true},
      {"no filtering without node cpu amplification", 32000, false, 32000, false, 1.0, true},
      {"cpu fits on no NRT node", 32000, false, 32000, false, 2.0, true},
      {"insufficient cpu", 32000, false, 64000, false, 2.0, false},
      {"insufficient cpu with cpuset pod on node", 32000, false, 32000, true, 2.0, false},
      {"insufficient cpu when scheduling cpuset pod", 32000, true, 32000, false, 2.0, false},
      {"insufficient cpu when scheduling cpuset pod with cpuset pod on node", 32000, true, 32000,
       true, 2.0, false},
  };
  for (const auto& r : rows) {
    const std::int64_t alloc = amplify(32000, r.ratio);
    EXPECT_EQ(fits_amplified_cpus(r.pod_milli, r.pod_cpuset, r.ratio, alloc, r.existing_milli,
                                  r.existing_cpuset ? r.existing_milli : 0),
              r.want_fit)
        << r.name;
  }
}

// NodeResourcesFit compares a pod's plain request with the amplified allocatable: a 40-core pod
// fits a 32-core node whose cpu amplification ratio is 1.5 (48 cores), not the plain node.
TEST(ResourceAmplification, NodeResourcesFitUsesTheAmplifiedAllocatable) {
  struct row {
    const char* name;
    const char* annotation;  // "" = none
    std::int64_t pod_cpu;
    bool want_fit;
  };
  const std::vector<row> rows = {
      {"no ratio: 40 > 32 cores", "", 40000, false},
      {"ratio 1.5: 40 <= 48 cores", R"({"cpu":1.50})", 40000, true},
      {"ratio 1.5: 49 > 48 cores", R"({"cpu":1.50})", 49000, false},
      {"ratio 1.20 x 32000 = 38400", R"({"cpu":1.20})", 38400, true},
      {"ratio 1.20: one milli more", R"({"cpu":1.20})", 38401, false},
      {"memory only: cpu unchanged", R"({"memory":2.00})", 32001, false},
  };
  node_resources_fit fit;
  for (const auto& r : rows) {
    resource_list raw;
    raw.cpu_milli = 32000;
    raw.memory_bytes = 64 * Gi;
    raw.pods = 110;
    amplification_ratios ratios;
    if (*r.annotation != '\0') ratios = parse_amplification_ratios(r.annotation).value();
    node_info n = make_node("n1", 0, 0);
    n.allocatable = amplified_allocatable(raw, ratios);
    const auto s = fit.fits_request(make_pod("ns/p", cpu_mem(r.pod_cpu, Gi)), n);
    EXPECT_EQ(s.ok(), r.want_fit) << r.name << ": " << s.message();
  }
}

}  // namespace
}  // namespace colony::scheduler
