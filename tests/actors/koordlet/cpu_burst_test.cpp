// Golden cases from Koordinator's
// pkg/koordlet/qosmanager/plugins/cpuburst/cpu_burst_test.go.
#include <gtest/gtest.h>

#include "actors/koordlet/cpu_burst.hpp"
#include "tests/actors/koordlet/koordlet_test_util.hpp"

namespace colony::koordlet {
namespace {

// TestCPUBurst_applyCPUBurst (GC-BURST-1).
TEST(KoordletCpuBurst, CPUBurstApplyCPUBurst) {
  auto pod = test::make_pod("burst", qos_class::ls);
  pod.containers = {{"c1", {}, {}}, {"c2", {}, {}}};
  pod.containers[0].limits.cpu_milli = 5000;
  pod.containers[1].limits.cpu_milli = 3000;
  struct row {
    const char* name;
    cpu_burst_policy policy;
    std::vector<std::int64_t> want;
    std::int64_t want_pod;
  };
  const std::vector<row> rows = {
      {"apply-by-default-burst-config", cpu_burst_policy::auto_burst, {5000000, 3000000}, 8000000},
      {"apply-by-disabled-burst-config", cpu_burst_policy::cfs_quota_burst_only, {0, 0}, 0},
  };
  for (const auto& r : rows) {
    SCOPED_TRACE(r.name);
    cpu_burst_config c{r.policy, 1000, 300, -1};
    auto v = apply_cpu_burst(pod, c);
    EXPECT_EQ(v.containers, r.want);
    EXPECT_EQ(v.pod, r.want_pod);
  }
}

// Test_burstLimiter_Allow (GC-BURST-2): period 100 s, 150 %, so capacity 5000.
TEST(KoordletCpuBurst, BurstLimiterAllow) {
  struct row {
    const char* name;
    std::int64_t init_tokens;
    std::int64_t usage_percent;
    bool want_allowed;
    std::int64_t want_tokens;
  };
  const row rows[] = {{"consume-enough-token-with-full-init", 5000, 150, true, 4500},
                      {"accumulate-token-with-part-init", 500, 40, true, 1100},
                      {"consume-all-token", 200, 150, false, -300},
                      {"cap-at-capacity", 4900, 0, true, 5000}};
  for (const auto& r : rows) {
    SCOPED_TRACE(r.name);
    auto l = make_burst_limiter(100, 150, event_time{0}, 0);
    EXPECT_EQ(l.bucket_capacity, 5000);
    l.current_token = r.init_tokens;
    auto s = burst_limiter_allow(l, event_time{10000}, r.usage_percent);
    EXPECT_EQ(s.allowed, r.want_allowed);
    EXPECT_EQ(s.tokens, r.want_tokens);
    EXPECT_EQ(s.next.last_update_time, event_time{10000});
  }
}

TEST(KoordletCpuBurst, LimiterInitialFillComesFromSeedAndExpires) {
  auto a = make_burst_limiter(100, 300, event_time{0}, 0);
  EXPECT_EQ(a.current_token, 0);
  auto b = make_burst_limiter(100, 300, event_time{0}, ~std::uint64_t{0});
  EXPECT_GT(b.current_token, 9990);  // just under half of 20000
  EXPECT_LT(b.current_token, 10000);
  EXPECT_FALSE(burst_limiter_expired(b, event_time{200000}));
  EXPECT_TRUE(burst_limiter_expired(b, event_time{200001}));
  auto same = burst_limiter_update_if_changed(b, 100, 300, event_time{5}, 0);
  EXPECT_EQ(same.current_token, b.current_token);
  auto changed = burst_limiter_update_if_changed(b, 100, 200, event_time{5}, 0);
  EXPECT_EQ(changed.bucket_capacity, 10000);
}

// TestCPUBurst_applyCFSQuotaBurst (GC-BURST-3): container limit 2 cores (base 200,000), 300 %.
TEST(KoordletCpuBurst, CPUBurstApplyCFSQuotaBurst) {
  struct row {
    const char* name;
    cpu_burst_policy policy;
    node_burst_state state;
    std::int64_t current;
    std::int64_t want;
    cfs_operation want_op;
  };
  const row rows[] = {
      {"scale-up-from-base-on-idle-state", cpu_burst_policy::auto_burst, node_burst_state::idle,
       200000, 240000, cfs_operation::scale_up},
      {"scale-down-for-throttled-pod-on-overload-state", cpu_burst_policy::auto_burst,
       node_burst_state::overload, 400000, 320000, cfs_operation::scale_down},
      {"scale-remain-for-throttled-pod-on-cooling-state", cpu_burst_policy::auto_burst,
       node_burst_state::cooling, 400000, 400000, cfs_operation::remain},
      {"scale-reset-for-burst-config-disabled-on-idle-state", cpu_burst_policy::cpu_burst_only,
       node_burst_state::idle, 400000, 200000, cfs_operation::reset},
  };
  for (const auto& r : rows) {
    SCOPED_TRACE(r.name);
    cpu_burst_config c{r.policy, 1000, 300, -1};
    container_burst_input in;
    in.cpu_limit_milli = 2000;
    in.current_cfs_quota_us = r.current;
    in.throttled_ratio = 0.5;
    auto res = cfs_quota_burst(c, r.state, in, event_time{0}, 0);
    EXPECT_FALSE(res.skipped);
    EXPECT_EQ(res.base_cfs, 200000);
    EXPECT_EQ(res.ceil_cfs, 600000);
    EXPECT_EQ(res.final_op, r.want_op);
    EXPECT_EQ(res.target_cfs, r.want);
    auto pod = pod_cfs_quota_update(r.current, res.delta);
    EXPECT_EQ(pod.write_pod, res.delta != 0);
    EXPECT_EQ(pod.pod_first, res.delta > 0);
  }
  EXPECT_FALSE(pod_cfs_quota_update(-1, 40000).write_pod);  // unlimited pod left alone
}

TEST(KoordletCpuBurst, NodeStateFromSharePool) {
  std::vector<pod_info> pods = {test::make_pod("lsr", qos_class::lsr),
                                test::make_pod("be", qos_class::be),
                                test::make_pod("ls", qos_class::ls)};
  pods[0].requests.cpu_milli = 4000;
  std::vector<std::optional<double>> avg = {3.0, 2.0, 1.0};
  // share pool 8 - 4 = 4 cores; usage 7 - 3 - 2 = 2 -> 50 %.
  EXPECT_EQ(get_node_state_for_burst(50, 7.0, 8, pods, avg), node_burst_state::overload);
  EXPECT_EQ(get_node_state_for_burst(55, 7.0, 8, pods, avg), node_burst_state::cooling);
  EXPECT_EQ(get_node_state_for_burst(60, 7.0, 8, pods, avg), node_burst_state::idle);
  EXPECT_EQ(get_node_state_for_burst(60, std::nullopt, 8, pods, avg), node_burst_state::unknown);
}

TEST(KoordletCpuBurst, LimiterRefusalScalesDownAndPodOverlayWins) {
  cpu_burst_config node{cpu_burst_policy::auto_burst, 1000, 300, -1};
  cpu_burst_config pod_cfg;
  pod_cfg.cfs_quota_burst_period_seconds = 10;
  auto c = merge_burst_config(node, pod_cfg);
  EXPECT_EQ(c.cfs_quota_burst_period_seconds, 10);
  EXPECT_EQ(c.cpu_burst_percent, 1000);
  container_burst_input in;
  in.cpu_limit_milli = 1000;
  in.current_cfs_quota_us = 200000;
  in.throttled_ratio = 1.0;
  in.cpu_usage_cores = 3.0;  // 300 % of limit: consumes tokens
  burst_limiter l = make_burst_limiter(10, 300, event_time{0}, 0);
  l.current_token = 100;
  in.limiter = l;
  auto r = cfs_quota_burst(c, node_burst_state::idle, in, event_time{5000}, 0);
  EXPECT_EQ(r.origin, cfs_operation::scale_down);  // 100 - 200 x 5 < 0
  EXPECT_EQ(r.target_cfs, 160000);
  ASSERT_TRUE(r.next_limiter.has_value());
  EXPECT_EQ(r.next_limiter->current_token, -900);
}

}  // namespace
}  // namespace colony::koordlet
