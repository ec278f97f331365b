// GPUModelAffinity (Colony's stand-in for a required node affinity on
// node.koordinator.sh/gpu-model, as the openb simulator applies gpu_spec): table-driven Filter
// and QueueingHint cases, registration, and a profile that names it.
#include "actors/scheduler/gpu_model_affinity.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "actors/scheduler/device_share.hpp"
#include "actors/scheduler/node_resources_fit.hpp"
#include "actors/scheduler/scheduler_config.hpp"
#include "tests/actors/scheduler/test_helpers.hpp"

namespace colony::scheduler {
namespace {

using namespace testing;

struct affinity_case {
  const char* name;
  std::int64_t koord_gpu;  // koordinator.sh/gpu (percent); 0 = no GPU request
  std::int64_t nvidia_gpu;
  std::vector<std::string> models;
  std::string node_model;
  bool passes;
};

TEST(GPUModelAffinity, FilterTable) {
  const std::vector<affinity_case> cases = {
      {"no GPU request, models listed: any node", 0, 0, {"V100"}, "T4", true},
      {"no GPU request, CPU node", 0, 0, {"V100"}, "", true},
      {"GPU pod, empty list: any model", 100, 0, {}, "T4", true},
      {"GPU pod, empty list: a node without the label", 50, 0, {}, "", true},
      {"GPU pod, model listed", 100, 0, {"V100"}, "V100", true},
      {"GPU pod, one of several listed", 25, 0, {"P100", "T4", "V100M32"}, "T4", true},
      {"GPU pod, model not listed", 100, 0, {"V100"}, "T4", false},
      {"GPU pod, node without the label", 100, 0, {"V100"}, "", false},
      {"GPU pod, names compare byte for byte", 100, 0, {"V100"}, "v100", false},
      {"GPU pod, a prefix is not a match", 100, 0, {"V100"}, "V100M32", false},
      {"nvidia.com/gpu counts as a GPU request", 0, 1, {"A100"}, "T4", false},
  };
  gpu_model_affinity plugin;
  cycle_state st;
  for (const auto& c : cases) {
    pod_info pod = make_pod("ns/p", cpu_mem(1000, Gi));
    pod.devices.koord_gpu = c.koord_gpu;
    pod.devices.nvidia_gpu = c.nvidia_gpu;
    pod.gpu_models = c.models;
    node_info node = make_node("n", 8000, 32 * Gi);
    node.gpu_model = c.node_model;
    const auto s = plugin.filter(st, pod, node, kNow);
    EXPECT_EQ(s.ok(), c.passes) << c.name;
    EXPECT_EQ(gpu_model_matches(pod, node), c.passes) << c.name;
    if (!c.passes) {
      EXPECT_EQ(s.code, status_code::unschedulable_and_unresolvable) << c.name;
      EXPECT_EQ(s.reason, gpu_model_affinity::reason) << c.name;
    }
    // Its QueueingHint is the Filter's verdict on the changed node.
    const cluster_event ev{cluster_event_type::node_update, &node, 0};
    EXPECT_EQ(plugin.filter_hint(pod, ev) == queueing_hint::queue, c.passes) << c.name;
  }
}

TEST(GPUModelAffinity, RequestsGpuTable) {
  struct row {
    const char* name;
    void (*set)(pod_info&);
    bool gpu;
  };
  const std::vector<row> rows = {
      {"nothing", [](pod_info&) {}, false},
      {"resource_list gpu", [](pod_info& p) { p.requests.gpu = 50; }, true},
      {"koordinator.sh/gpu", [](pod_info& p) { p.devices.koord_gpu = 100; }, true},
      {"nvidia.com/gpu", [](pod_info& p) { p.devices.nvidia_gpu = 2; }, true},
      {"gpu.shared", [](pod_info& p) { p.devices.gpu_shared = 1; }, true},
      {"gpu-core", [](pod_info& p) { p.devices.gpu_core = 50; }, true},
      {"gpu-memory", [](pod_info& p) { p.devices.gpu_memory = Gi; }, true},
      {"gpu-memory-ratio", [](pod_info& p) { p.devices.gpu_memory_ratio = 50; }, true},
      {"rdma only", [](pod_info& p) { p.devices.rdma = 1; }, false},
      {"cpu and memory only", [](pod_info& p) { p.requests = cpu_mem(4000, 8 * Gi); }, false},
  };
  for (const auto& r : rows) {
    pod_info p = make_pod("ns/p");
    r.set(p);
    EXPECT_EQ(requests_gpu(p), r.gpu) << r.name;
  }
}

TEST(GPUModelAffinity, RegisteredAndEnabledByAProfileThatNamesIt) {
  auto reg = plugin_registry::with_builtin();
  EXPECT_NE(reg.find("GPUModelAffinity"), nullptr);
  auto cfg = parse_scheduler_config(R"(apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
  - schedulerName: koord-scheduler
    plugins:
      filter:
        enabled:
          - name: GPUModelAffinity
)");
  ASSERT_TRUE(cfg) << cfg.error().message;
  auto built = build_framework(*cfg, 0, reg);
  ASSERT_TRUE(built) << built.error().message;
  const auto* p = built->fwk->find("GPUModelAffinity");
  ASSERT_NE(p, nullptr);
  for (const auto& e : built->fwk->plugins()) {
    if (e.impl.get() == p) {
      EXPECT_EQ(e.enabled, ep_filter);
    }
  }
  EXPECT_TRUE(built->skipped_plugins.empty());
  // Koordinator's shipped profile does not name it (the component adds it, see its options).
  auto shipped = parse_scheduler_config(koord_scheduler_shipped_config());
  ASSERT_TRUE(shipped);
  auto plain = build_framework(*shipped, 0, reg);
  ASSERT_TRUE(plain);
  EXPECT_EQ(plain->fwk->find("GPUModelAffinity"), nullptr);
}

// framework::filter_hint: the conjunction of the enabled Filter plugins' hints on the node.
TEST(GPUModelAffinity, ProfileFilterHintIsTheConjunctionOverFilterPlugins) {
  framework fwk;
  fwk.add(std::make_shared<node_resources_fit>(), 1, ep_filter | ep_score);
  fwk.add(std::make_shared<device_share>());
  fwk.add(std::make_shared<gpu_model_affinity>(), 1, ep_filter);
  pod_info pod = make_pod("ns/gpu", cpu_mem(2000, Gi));
  pod.devices.koord_gpu = 100;
  pod.gpu_models = {"V100"};
  node_info node = make_node("n", 4000, 16 * Gi);
  node.gpu_model = "V100";
  node.gpus.resize(1);
  node.gpus[0].memory_total_bytes = 16 * Gi;
  const cluster_event ev{cluster_event_type::assigned_pod_delete, &node, 0};
  EXPECT_EQ(fwk.filter_hint(pod, ev), queueing_hint::queue);
  node.gpus[0].core_used = 50;  // the GPU is half taken: a whole-GPU pod cannot fit
  EXPECT_EQ(fwk.filter_hint(pod, ev), queueing_hint::skip);
  node.gpus[0].core_used = 0;
  node.requested.cpu_milli = 3000;  // cpu short
  EXPECT_EQ(fwk.filter_hint(pod, ev), queueing_hint::skip);
  node.requested.cpu_milli = 0;
  node.gpu_model = "T4";  // wrong model
  EXPECT_EQ(fwk.filter_hint(pod, ev), queueing_hint::skip);
  // A wildcard event, or no node: always queue.
  EXPECT_EQ(fwk.filter_hint(pod, cluster_event{}), queueing_hint::queue);
}

}  // namespace
}  // namespace colony::scheduler
