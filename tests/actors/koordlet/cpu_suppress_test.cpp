// Golden cases from Koordinator's
// pkg/koordlet/qosmanager/plugins/cpusuppress/cpu_suppress_test.go.
#include <algorithm>
#include <random>

#include <gtest/gtest.h>

#include "actors/koordlet/cpu_suppress.hpp"
#include "tests/actors/koordlet/koordlet_test_util.hpp"

namespace colony::koordlet {
namespace {

using test::make_node;
using test::make_pod;

struct suppress_row {
  const char* name;  // Koordinator case name (GC id)
  double node_used;
  std::vector<pod_info> pods;
  std::vector<double> orphans;
  std::vector<host_app_info> apps;
  std::optional<std::int64_t> min_percent;
  bool empty_node;
  std::int64_t want_milli;
};

pod_info with_cpu(pod_info p, double cores) {
  p.cpu_used_cores = cores;
  return p;
}

// Test_cpuSuppress_calculateBESuppressCPU: capacity = allocatable = 20 cores, threshold 70.
TEST(KoordletCpuSuppress, CpuSuppressCalculateBESuppressCPU) {
  host_app_info ls_app{
      "test-ls-app", priority_class::prod, qos_class::ls, false, cgroup_base::none, 1.0, {}};
  host_app_info be_app{"test-be-app",
                       priority_class::batch,
                       qos_class::be,
                       true,
                       cgroup_base::kube_besteffort,
                       1.0,
                       {}};
  const std::vector<suppress_row> rows = {
      {"does not panic on empty (non-nil) input (GC-SUP-4)", 0, {}, {}, {}, std::nullopt, true, 0},
      {"calculate correctly for missing podMeta or transient metrics (GC-SUP-1)",
       11,
       {with_cpu(make_pod("podB", qos_class::be), 4)},
       {8},
       {},
       std::nullopt,
       false,
       6000},
      {"calculate be suppress cpus correctly (GC-SUP-2)",
       12,
       {with_cpu(make_pod("podA", qos_class::ls), 8), with_cpu(make_pod("podB", qos_class::be), 2)},
       {},
       {},
       std::nullopt,
       false,
       4000},
      {"calculate be suppress cpus correctly with ls host app",
       12,
       {with_cpu(make_pod("podA", qos_class::ls), 8), with_cpu(make_pod("podB", qos_class::be), 2)},
       {},
       {ls_app},
       std::nullopt,
       false,
       4000},
      {"calculate be suppress cpus correctly with be host app",
       12,
       {with_cpu(make_pod("podA", qos_class::ls), 8), with_cpu(make_pod("podB", qos_class::be), 2)},
       {},
       {be_app},
       std::nullopt,
       false,
       5000},
      {"calculate be suppress cpus with min (GC-SUP-3)",
       12,
       {with_cpu(make_pod("podA", qos_class::ls), 8), with_cpu(make_pod("podB", qos_class::be), 2)},
       {},
       {},
       60,
       false,
       12000},
  };
  for (const auto& r : rows) {
    SCOPED_TRACE(r.name);
    node_info node = r.empty_node ? node_info{} : make_node(20000, 40 * test::G);
    auto got =
        calculate_be_suppress_cpu(node, r.node_used, r.pods, r.orphans, r.apps, 70, r.min_percent);
    EXPECT_EQ(got.suppress_milli, r.want_milli);
    ASSERT_FALSE(got.explain.empty());
    EXPECT_EQ(got.explain.back().name, "beSuppressMilli");
    EXPECT_EQ(got.explain.back().value, double(r.want_milli));
  }
}

// Test_cpuSuppress_adjustByCfsQuota: capacity 80 cores, target 20 cores unless noted.
TEST(KoordletCpuSuppress, CpuSuppressAdjustByCfsQuota) {
  struct row {
    const char* name;
    std::int64_t milli, current, want;
    bool write;
  };
  const row rows[] = {
      {"increase CFSQuota: cpuQuantity > preBECPU + maxIncreaseCPU (GC-SUP-5)", 20000, 1000000,
       1800000, true},
      {"increase CFSQuota: preBECPU < cpuQuantity < preBECPU + maxIncreaseCPU (GC-SUP-6)", 20000,
       1900000, 2000000, true},
      {"suppress beCPU: preBECPU > cpuQuantity (GC-SUP-7)", 20000, 2400000, 2000000, true},
      {"bypass minDeltaQuota! (GC-SUP-8)", 20000, 1980000, 1980000, false},
      {"minQuota 2000 not bypass!", 1, 80000, 2000, true},
      {"increase CFSQuota: first time set quota with beUnsetQuota (GC-SUP-9)", 20000, -1, 2000000,
       true},
  };
  for (const auto& r : rows) {
    SCOPED_TRACE(r.name);
    auto d = adjust_by_cfs_quota(r.milli, 80000, r.current);
    EXPECT_EQ(d.write, r.write);
    EXPECT_EQ(d.write ? d.quota_us : r.current, r.want);
  }
}

std::vector<processor_info> eight_cpus() {
  // cpu i: (core, socket, node) = 0,1 (0,0,0); 2,3 (1,0,0); 4,5 (2,1,1); 6,7 (3,1,1)
  std::vector<processor_info> v;
  for (int i = 0; i < 8; ++i) v.push_back({i, i / 2, i / 4, i / 4});
  return v;
}

std::vector<pod_info> lsr_lse_pods() {
  auto lsr = make_pod("lsr-pod", qos_class::lsr);
  lsr.pinned_cpus = {0, 6};
  auto lse = make_pod("lse-pod", qos_class::lse);
  lse.pinned_cpus = {7};
  return {lsr, lse};
}

// Test_cpuSuppress_adjustByCPUSet and its _withCPUsReservedFromNodeAnno /
// _withSystemQOSResourceFromNodeAnno variants; an empty pick keeps the old cpuset.
TEST(KoordletCpuSuppress, CpuSuppressAdjustByCPUSet) {
  struct row {
    const char* name;
    std::vector<std::int32_t> old_cpuset, reserved, system_exclusive;
    std::string want;
  };
  const std::vector<row> rows = {
      {"test scale lower by cpuset. (GC-SUP-10)", {7, 6, 3, 2}, {}, {}, "2-4"},
      {"test scale up by cpuset. (GC-SUP-11)", {7, 6}, {}, {}, "2-4"},
      {"reserved: ensure there is enough cpu available for bepod", {7, 6, 3, 2}, {3}, {}, "0,4-5"},
      {"reserved: cpus that bepod can used less than bepod needed",
       {7, 6, 3, 2},
       {1, 2, 3, 4, 5, 6},
       {},
       "2-3,6-7"},
      {"reserved: just enough cpu allocated to bepod", {7, 6, 3, 2}, {0, 1, 5, 6}, {}, "2-4"},
      {"systemQOS: ensure there is enough cpu available for bepod", {7, 6, 3, 2}, {}, {3}, "0,4-5"},
      {"systemQOS: nothing to do because the cpu runs out",
       {7, 6, 3, 2},
       {},
       {1, 2, 3, 4, 5, 6},
       "2-3,6-7"},
      {"systemQOS: just enough cpu allocated to bepod", {7, 6, 3, 2}, {}, {0, 1, 5, 6}, "2-4"},
      {"system qos cpu is not exclusive", {7, 6, 3, 2}, {}, {}, "2-4"},
  };
  auto procs = eight_cpus();
  auto pods = lsr_lse_pods();
  for (const auto& r : rows) {
    SCOPED_TRACE(r.name);
    cpuset_inputs in{procs, r.old_cpuset, r.reserved, r.system_exclusive};
    auto d = adjust_by_cpuset(3000, in, pods);
    auto written = d.cpus.empty() ? format_cpuset(r.old_cpuset) : format_cpuset(d.cpus);
    EXPECT_EQ(written, r.want);
  }
}

// Test_calculateBESuppressCPUSetPolicy.
TEST(KoordletCpuSuppress, CalculateBESuppressCPUSetPolicy) {
  struct row {
    const char* name;
    std::int32_t cpus;
    std::vector<processor_info> procs;
    std::vector<std::int32_t> want;
  };
  std::vector<processor_info> sixteen;
  for (int i = 0; i < 16; ++i) sixteen.push_back({i, i / 2, i / 4, i / 8});
  std::vector<processor_info> shuffled;
  for (int id : {12, 13, 14, 2, 3, 11, 4, 5, 8, 15, 0, 1, 9, 10, 6, 7})
    shuffled.push_back(sixteen[id]);
  std::vector<processor_info> ht0 = {{0, 0, 0, 0}, {1, 1, 0, 0}, {2, 2, 1, 1}, {3, 3, 1, 1},
                                     {4, 0, 0, 0}, {5, 1, 0, 0}, {6, 2, 1, 1}, {7, 3, 1, 1}};
  const std::vector<row> rows = {
      {"do not panic but return empty cpuset for insufficient cpus", 0, {}, {}},
      {"allocate cpus with scattering on numa nodes and stacking on HTs 0. (GC-SUP-12)",
       3,
       ht0,
       {0, 4, 2}},
      {"allocate cpus with scattering on numa nodes and stacking on HTs 1.",
       3,
       eight_cpus(),
       {0, 1, 4}},
      {"allocate cpus with scattering on numa nodes and stacking on HTs 2. (also scattering on "
       "sockets)",
       5,
       sixteen,
       {0, 1, 4, 5, 8}},
      {"allocate cpus with scattering on numa nodes and stacking on HTs 3. (regardless of the "
       "initial order)",
       5,
       shuffled,
       {0, 1, 4, 5, 8}},
  };
  for (const auto& r : rows) {
    SCOPED_TRACE(r.name);
    EXPECT_EQ(calculate_be_suppress_cpuset_policy(r.cpus, r.procs), r.want);
  }
}

// The memo answers exactly what the policy answers, for pools and targets that repeat (a hit)
// and that change (a miss, then an eviction once more pairs than it keeps are seen).
TEST(KoordletCpuSuppress, CpusetPolicyMemoGivesThePolicysPicks) {
  std::mt19937_64 rng(7);
  std::vector<std::vector<processor_info>> pools;
  for (int k = 0; k < 5; ++k) {
    std::vector<processor_info> pool;
    const int sockets = 1 + static_cast<int>(rng() % 2), cores = 2 + static_cast<int>(rng() % 6);
    for (int s = 0; s < sockets; ++s)
      for (int c = 0; c < cores; ++c)
        for (int t = 0; t < 2; ++t) {
          const int id = static_cast<int>(pool.size());
          pool.push_back({id, s * cores + c, s, s});
        }
    std::shuffle(pool.begin(), pool.end(), rng);
    pools.push_back(pool);
  }
  cpuset_policy_memo memo;
  for (int i = 0; i < 2000; ++i) {
    const auto& pool = pools[rng() % pools.size()];
    const auto cpus = static_cast<std::int32_t>(rng() % (pool.size() + 2));
    ASSERT_EQ(memo.picks(cpus, pool), calculate_be_suppress_cpuset_policy(cpus, pool)) << i;
  }
  EXPECT_EQ(memo.calls(), 2000u);
  EXPECT_GT(memo.hits(), 100u);                // repeats were answered from the memo
  EXPECT_LT(memo.hits(), memo.calls() - 100);  // and misses (evictions) happened too
}

TEST(KoordletCpuSuppress, SuppressRoundFollowsPolicyAndRecoversTheOther) {
  auto node = make_node(8000, 32 * test::G);
  auto procs = eight_cpus();
  auto pods = lsr_lse_pods();
  pods[0].cpu_used_cores = 2;
  std::vector<std::int32_t> old = {1, 2, 3};
  cpu_suppress_input in;
  in.node = &node;
  in.pods = pods;
  in.node_cpu_used_cores = 3.0;
  in.cpuset = {procs, old, {}, {}};
  in.current_be_cfs_quota_us = -1;
  resource_threshold_strategy cfg;
  cfg.enable = true;
  koordlet_feature_gates gates;

  auto d = suppress_be_cpu(in, cfg, gates, {});
  EXPECT_EQ(d.action, suppress_action::cpuset);
  EXPECT_TRUE(d.restore_cfs_quota);
  EXPECT_EQ(d.next_state.cfs_quota, policy_status::recovered);
  // 8 x 65 % = 5200 - 2000 (LSR pod) - 1000 (system) = 2200 -> 3 cpus, growth limit 1 from 3.
  EXPECT_EQ(d.suppress.suppress_milli, 2200);
  EXPECT_EQ(d.cpuset.target_cpus, 3);
  EXPECT_FALSE(suppress_be_cpu(in, cfg, gates, d.next_state).restore_cfs_quota);

  cfg.cpu_suppress_policy = cpu_suppress_policy_type::cfs_quota;
  auto q = suppress_be_cpu(in, cfg, gates, d.next_state);
  EXPECT_EQ(q.action, suppress_action::cfs_quota);
  EXPECT_TRUE(q.cfs_quota.write);
  EXPECT_EQ(q.cfs_quota.quota_us, 220000);
  EXPECT_EQ(format_cpuset(q.restore_cpuset), "0-6");  // LSE-pinned 7 excluded

  cfg.enable = false;
  auto r = suppress_be_cpu(in, cfg, gates, q.next_state);
  EXPECT_EQ(r.action, suppress_action::recover);
  EXPECT_TRUE(r.restore_cfs_quota);

  gates.be_cpu_suppress = false;
  EXPECT_EQ(suppress_be_cpu(in, cfg, gates, {}).action, suppress_action::none);
}

TEST(KoordletCpuSuppress, CpusetStringsRoundTrip) {
  EXPECT_EQ(format_cpuset({7, 6, 3, 2}), "2-3,6-7");
  EXPECT_EQ(format_cpuset({0, 4, 5}), "0,4-5");
  auto p = parse_cpuset("0-2, 7,9-10");
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(*p, (std::vector<std::int32_t>{0, 1, 2, 7, 9, 10}));
  EXPECT_FALSE(parse_cpuset("3-1").has_value());
  EXPECT_FALSE(parse_cpuset("a").has_value());
  EXPECT_TRUE(parse_cpuset("")->empty());
}

}  // namespace
}  // namespace colony::koordlet
