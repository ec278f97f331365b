// Golden cases of DeviceShare, from Koordinator's
// pkg/scheduler/plugins/deviceshare/{utils_test.go, devicehandler_gpu_test.go, scoring_test.go}.
#include <gtest/gtest.h>

#include "actors/scheduler/device_share.hpp"
#include "tests/actors/scheduler/test_helpers.hpp"

namespace colony::scheduler {
namespace {

using namespace testing;

struct validate_row {
  const char* name;
  device_request req;
  bool want_err;
  std::uint32_t want;
};

device_request req(std::initializer_list<std::pair<const char*, std::int64_t>> kv) {
  device_request r;
  for (const auto& [k, v] : kv) {
    std::string_view n = k;
    if (n == "nvidia")
      r.nvidia_gpu = v;
    else if (n == "dcu")
      r.hygon_dcu = v;
    else if (n == "gpu")
      r.koord_gpu = v;
    else if (n == "core")
      r.gpu_core = v;
    else if (n == "memory")
      r.gpu_memory = v;
    else if (n == "ratio")
      r.gpu_memory_ratio = v;
    else if (n == "shared")
      r.gpu_shared = v;
    else if (n == "npu-core")
      r.huawei_npu_core = v;
    else if (n == "npu-cpu")
      r.huawei_npu_cpu = v;
    else if (n == "npu-dvpp")
      r.huawei_npu_dvpp = v;
    else if (n == "fpga")
      r.fpga = v;
    else if (n == "rdma")
      r.rdma = v;
  }
  return r;
}

TEST(DeviceShareValidate, TestValidateDeviceRequest) {
  const std::vector<validate_row> rows = {
      {"empty pod request", {}, true, 0},
      {"invalid gpu request 1", req({{"core", 101}}), true, 0},
      {"invalid gpu request 2",
       req({{"nvidia", 2}, {"gpu", 200}, {"core", 200}, {"memory", 32 * Gi}, {"ratio", 200}}), true,
       0},
      {"invalid gpu request 3", req({{"gpu", 101}}), true, 0},
      {"invalid gpu request 4", req({{"core", 100}, {"ratio", 101}}), true, 0},
      {"valid gpu request 2 (nvidia)", req({{"nvidia", 2}}), false, dev_nvidia_gpu},
      {"valid hygon duc request 2", req({{"dcu", 2}}), false, dev_hygon_dcu},
      {"valid gpu request 2 (koordinator.sh/gpu)", req({{"gpu", 200}}), false, dev_koord_gpu},
      {"valid gpu request 3", req({{"core", 200}, {"memory", 64 * Gi}}), false,
       dev_gpu_core | dev_gpu_memory},
      {"valid gpu request 4", req({{"core", 200}, {"ratio", 200}}), false,
       dev_gpu_core | dev_gpu_memory_ratio},
      {"valid gpu request 5", req({{"ratio", 200}}), false, dev_gpu_memory_ratio},
      {"valid gpu request 7", req({{"memory", 64 * Gi}}), false, dev_gpu_memory},
      {"invalid gpu request 8", req({{"ratio", 101}, {"shared", 1}}), true, 0},
      {"invalid gpu request 9", req({{"ratio", 101}, {"shared", 2}}), true, 0},
      {"invalid gpu request 10", req({{"core", 101}, {"memory", 64 * Gi}, {"shared", 1}}), true, 0},
      {"invalid gpu request 11", req({{"core", 101}, {"memory", 64 * Gi}, {"shared", 2}}), true, 0},
      {"valid gpu request 12", req({{"ratio", 200}, {"shared", 2}}), false,
       dev_gpu_shared | dev_gpu_memory_ratio},
      {"valid gpu request 13", req({{"ratio", 100}, {"shared", 2}}), false,
       dev_gpu_shared | dev_gpu_memory_ratio},
      {"invalid gpu request 14 (valid)", req({{"core", 100}, {"memory", 64 * Gi}, {"shared", 1}}),
       false, dev_gpu_shared | dev_gpu_memory | dev_gpu_core},
      {"invalid gpu request 15 (valid)", req({{"core", 100}, {"memory", 64 * Gi}, {"shared", 2}}),
       false, dev_gpu_shared | dev_gpu_memory | dev_gpu_core},
      {"valid huawei npu request", req({{"npu-core", 40}, {"ratio", 200}}), false,
       dev_huawei_npu_core | dev_gpu_memory_ratio},
      {"invalid huawei npu request", req({{"npu-core", 40}, {"memory", 128 * Gi}}), true, 0},
      {"valid shared huawei npu request",
       req({{"shared", 1}, {"npu-core", 10}, {"npu-cpu", 3}, {"memory", 16 * Gi}}), false,
       dev_gpu_shared | dev_huawei_npu_core | dev_huawei_npu_cpu | dev_gpu_memory},
      {"valid shared huawei npu request (dvpp)",
       req({{"shared", 1},
            {"npu-core", 10},
            {"npu-cpu", 3},
            {"npu-dvpp", 100},
            {"memory", 16 * Gi}}),
       false,
       dev_gpu_shared | dev_huawei_npu_core | dev_huawei_npu_cpu | dev_huawei_npu_dvpp |
           dev_gpu_memory},
      {"invalid shared huawei npu request",
       req({{"shared", 2},
            {"npu-core", 20},
            {"npu-cpu", 6},
            {"npu-dvpp", 200},
            {"memory", 32 * Gi}}),
       true, 0},
      {"invalid shared huawei npu request (no cpu)",
       req({{"shared", 1}, {"npu-core", 10}, {"memory", 16 * Gi}}), true, 0},
      {"invalid fpga request", req({{"fpga", 201}}), true, 0},
      {"valid fpga request", req({{"fpga", 50}}), false, dev_fpga},
      {"invalid rdma request", req({{"rdma", 201}}), true, 0},
      {"valid rdma request", req({{"rdma", 50}}), false, dev_rdma},
  };
  for (const auto& row : rows) {
    SCOPED_TRACE(row.name);
    auto r = validate_device_request(row.req);
    EXPECT_EQ(!r.has_value(), row.want_err);
    if (r) {
      EXPECT_EQ(*r, row.want);
    }
  }
}

TEST(DeviceShareConvert, TestConvertDeviceRequest) {
  auto nvidia = convert_device_request(req({{"nvidia", 2}}), dev_nvidia_gpu);
  EXPECT_EQ(nvidia, req({{"core", 200}, {"ratio", 200}}));
  auto koord = convert_device_request(req({{"gpu", 50}}), dev_koord_gpu);
  EXPECT_EQ(koord, req({{"core", 50}, {"ratio", 50}}));
  auto cm = req({{"core", 50}, {"memory", 32 * Gi}});
  EXPECT_EQ(convert_device_request(cm, dev_gpu_core | dev_gpu_memory), cm);
}

TEST(DeviceShareRequirements, TestParseGPURequirements) {
  auto g = calc_desired_requests_and_count_for_gpu(req({{"core", 200}, {"ratio", 200}}));
  EXPECT_EQ(g.count, 2);
  EXPECT_EQ(g.core, 100);
  EXPECT_EQ(g.memory_ratio, 100);
  EXPECT_FALSE(g.shared);
  auto half = calc_desired_requests_and_count_for_gpu(req({{"core", 50}, {"ratio", 50}}));
  EXPECT_EQ(half.count, 1);
  EXPECT_TRUE(half.shared);
  auto shared = calc_desired_requests_and_count_for_gpu(req({{"shared", 2}, {"ratio", 100}}));
  EXPECT_EQ(shared.count, 2);
  EXPECT_EQ(shared.memory_ratio, 50);
  EXPECT_TRUE(shared.shared);
  auto bytes = calc_desired_requests_and_count_for_gpu(req({{"memory", 16 * Gi}}));
  EXPECT_EQ(bytes.count, 1);
  EXPECT_TRUE(bytes.shared);
}

TEST(DeviceShareRequirements, TestMemoryRatioToBytes) {
  EXPECT_EQ(memory_ratio_to_bytes(50, 64 * Gi), 32 * Gi);
  EXPECT_EQ(memory_bytes_to_ratio(32 * Gi, 64 * Gi), 50);
}

// scoring_test.go Test_resourceAllocationScorer_scoreDevice (LeastAllocated, gpu-memory-ratio).
TEST(DeviceShareScore, TestResourceAllocationScorerScoreDevice) {
  device_share_args args;
  args.resources = {{device_resource::gpu_memory_ratio, 1}};
  device_scorer scorer(args);
  struct row {
    const char* name;
    std::int64_t request, total, free, want;
  };
  for (const auto& r : {row{"free 100", 50, 100, 100, 50}, row{"free 0", 50, 100, 0, 0},
                        row{"request 30 free 50", 30, 100, 50, 20}}) {
    SCOPED_TRACE(r.name);
    gpu_requirements q;
    q.has_memory_ratio = true;
    q.memory_ratio = r.request;
    EXPECT_EQ(scorer.score(q, {0, 0, r.total}, {0, 0, r.free}), r.want);
  }
}

gpu_device gpu(std::int32_t minor, std::int64_t core_used = 0, std::int64_t ratio_used = 0) {
  gpu_device g;
  g.minor = minor;
  g.memory_total_bytes = 80 * Gi;
  g.core_used = core_used;
  g.memory_ratio_used = ratio_used;
  g.memory_used_bytes = memory_ratio_to_bytes(ratio_used, g.memory_total_bytes);
  return g;
}

TEST(DeviceShareAllocate, WholeGpusNeedFreeDevicesAndSharedOnesFitRemainders) {
  device_share plugin;
  node_info node = make_node("n", 64000, 256 * Gi);
  node.gpus = {gpu(0, 50, 50), gpu(1), gpu(2, 100, 100), gpu(3)};
  // nvidia.com/gpu 2 -> two fully free devices (1 and 3).
  gpu_requirements whole =
      calc_desired_requests_and_count_for_gpu(req({{"core", 200}, {"ratio", 200}}));
  auto a = plugin.allocate(whole, node);
  ASSERT_TRUE(a.has_value());
  ASSERT_EQ(a->size(), 2u);
  EXPECT_EQ((*a)[0].minor, 1);
  EXPECT_EQ((*a)[1].minor, 3);
  EXPECT_EQ((*a)[0].memory_bytes, 80 * Gi);
  // A half GPU fits the partially used device 0 as well as the free ones; LeastAllocated
  // scoring prefers the free device with the lowest minor.
  gpu_requirements half =
      calc_desired_requests_and_count_for_gpu(req({{"core", 50}, {"ratio", 50}}));
  auto b = plugin.allocate(half, node);
  ASSERT_TRUE(b.has_value());
  EXPECT_EQ((*b)[0].minor, 1);
  // Three whole GPUs do not fit.
  gpu_requirements three =
      calc_desired_requests_and_count_for_gpu(req({{"core", 300}, {"ratio", 300}}));
  EXPECT_FALSE(plugin.allocate(three, node).has_value());
  // MostAllocated packs the half GPU onto device 0.
  device_share_args most;
  most.scoring_strategy = scoring_strategy_type::most_allocated;
  device_share packer(most);
  auto c = packer.allocate(half, node);
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ((*c)[0].minor, 0);
}

TEST(DeviceShareFramework, ReserveRecordsAllocationAndAssumeConsumesIt) {
  framework fwk;
  fwk.add(std::make_shared<device_share>());
  std::vector<node_info> nodes = {make_node("a", 1000, Gi), make_node("b", 1000, Gi)};
  nodes[1].gpus = {gpu(0), gpu(1)};
  pod_info p = make_pod("ns/p");
  p.devices.nvidia_gpu = 1;
  cycle_state st;
  auto d = scheduling_cycle(fwk, st, p, nodes, kNow);
  ASSERT_EQ(d.result, outcome::scheduled) << d.message;
  EXPECT_EQ(d.node, "b");
  ASSERT_EQ(d.gpu_allocations.size(), 1u);
  assume_pod(nodes[1], p, d, kNow);
  pod_info q = make_pod("ns/q");
  q.devices.nvidia_gpu = 2;
  auto d2 = scheduling_cycle(fwk, st, q, nodes, kNow);
  EXPECT_EQ(d2.result, outcome::unschedulable);
  ASSERT_FALSE(d2.failures.empty());
  EXPECT_EQ(d2.failures[0].reason, "Insufficient gpu devices");
}

}  // namespace
}  // namespace colony::scheduler
