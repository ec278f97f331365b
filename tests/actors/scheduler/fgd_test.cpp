// FGDScore and BestFitScore (actors/scheduler/fgd.hpp): golden cases worked out by hand from the
// FGD paper's definitions (Weng et al., USENIX ATC '23, section 4; the authors' pkg/utils/frag.go
// and pkg/simulator/plugin/fgd_score.go, best_fit_score.go), args parsing, and a profile that
// schedules with them.
#include "actors/scheduler/fgd.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "actors/scheduler/scheduler_config.hpp"

namespace colony::scheduler {
namespace {

// Free CPU 8 cores; GPUs with 1000, 500, 0 and 200 milli free; model T4.
fgd_node sample_node() { return {8000, {1000, 500, 0, 200}, "T4"}; }

// A: one whole GPU + 4 cores (p 0.5); B: half a GPU + 2 cores (p 0.3); C: 1 core, no GPU (p 0.2).
std::vector<fgd_task_class> sample_classes() {
  return {{4000, 1000, 1, {}, 0.5}, {2000, 500, 1, {}, 0.3}, {1000, 0, 0, {}, 0.2}};
}

TEST(FGD, ClassFragmentationByHand) {
  const auto n = sample_node();
  const auto c = sample_classes();
  // A fits (GPU 0 is whole): the GPUs with less than 1000 free: 500 + 0 + 200.
  EXPECT_DOUBLE_EQ(fgd_class_fragmentation(n, c[0]), 700);
  // B fits: the GPUs with less than 500 free: 0 + 200.
  EXPECT_DOUBLE_EQ(fgd_class_fragmentation(n, c[1]), 200);
  // C asks for no GPU: every free share (1700).
  EXPECT_DOUBLE_EQ(fgd_class_fragmentation(n, c[2]), 1700);
  // F = 0.5 x 700 + 0.3 x 200 + 0.2 x 1700 = 750.
  EXPECT_DOUBLE_EQ(fgd_node_fragmentation(n, c), 750);
}

TEST(FGD, UnfitAndInaccessibleClassesMakeEveryFreeShareFragmented) {
  const auto n = sample_node();
  EXPECT_DOUBLE_EQ(fgd_class_fragmentation(n, {9000, 500, 1, {}, 1}), 1700);        // lacks CPU
  EXPECT_DOUBLE_EQ(fgd_class_fragmentation(n, {1000, 1000, 2, {}, 1}), 1700);       // lacks GPUs
  EXPECT_DOUBLE_EQ(fgd_class_fragmentation(n, {1000, 500, 1, {"V100"}, 1}), 1700);  // model
  EXPECT_DOUBLE_EQ(fgd_class_fragmentation(n, {1000, 500, 1, {"V100", "T4"}, 1}), 200);
  EXPECT_DOUBLE_EQ(fgd_class_fragmentation({8000, {0, 0}, "T4"}, {1000, 500, 1, {}, 1}), 0);
}

TEST(FGD, EveryFragmentCaseByHand) {
  // One class per case of pkg/utils/frag.go GetNodePodFrag on sample_node() (8 cores; GPUs
  // 1000, 500, 0, 200 free: 1700 in all), each with popularity 1/8 (exact in binary):
  struct row {
    const char* kind;
    fgd_task_class m;
    double frag;  // by hand
  };
  const std::vector<row> rows = {
      {"q1_lack_both: 2 whole GPUs, 9 cores", {9000, 1000, 2, {}, 0.125}, 1700},
      {"q2_lack_gpu: 2 whole GPUs", {1000, 1000, 2, {}, 0.125}, 1700},
      {"q3_satisfied: half a GPU (0 + 200 below 500)", {2000, 500, 1, {}, 0.125}, 200},
      {"q3_satisfied: a whole GPU (500 + 0 + 200 below it)", {4000, 1000, 1, {}, 0.125}, 700},
      {"q4_lack_cpu: half a GPU, 9 cores", {9000, 500, 1, {}, 0.125}, 1700},
      {"xl_satisfied: 1 core, no GPU", {1000, 0, 0, {}, 0.125}, 1700},
      {"xr_lack_cpu: 9 cores, no GPU", {9000, 0, 0, {}, 0.125}, 1700},
      {"no_access: V100 only", {1000, 500, 1, {"V100"}, 0.125}, 1700},
  };
  const auto n = sample_node();
  std::vector<fgd_task_class> all;
  double want = 0;
  for (const auto& r : rows) {
    EXPECT_DOUBLE_EQ(fgd_class_fragmentation(n, r.m), r.frag) << r.kind;
    all.push_back(r.m);
    want += r.m.popularity * r.frag;
  }
  // (6 x 1700 + 200 + 700) / 8 = 1387.5.
  EXPECT_DOUBLE_EQ(want, 1387.5);
  EXPECT_DOUBLE_EQ(fgd_node_fragmentation(n, all), 1387.5);
}

TEST(FGD, SharingTaskTakesTheGpuThatFragmentsLeast) {
  const auto n = sample_node();
  const auto c = sample_classes();
  const fgd_task_class task{1000, 500, 1, {}, 0};
  // On GPU 0: [500, 500, 0, 200], 7 cores: A no longer fits (1200), B 200, C 1200 ->
  // F' = 600 + 60 + 240 = 900; score = (int)(100 sigmoid(-0.15)) = 46.
  // On GPU 1: [1000, 0, 0, 200]: A 200, B 200, C 1200 -> F' = 400;
  // score = (int)(100 sigmoid(0.35)) = 58. GPU 3 (200 free) cannot take it.
  const auto ch = fgd_score(n, task, c);
  EXPECT_EQ(ch.gpu, 1);
  EXPECT_EQ(ch.score, 58);
  EXPECT_EQ(static_cast<std::int64_t>(100 / (1 + std::exp(0.15))), 46);
}

TEST(FGD, WholeGpuAndCpuTasks) {
  const auto n = sample_node();
  const auto c = sample_classes();
  // A whole GPU + 4 cores takes GPU 0: [0, 500, 0, 200], 4 cores: A 700, B 200, C 700 ->
  // F' = 350 + 60 + 140 = 550; score = (int)(100 sigmoid(0.2)) = 54.
  const auto w = fgd_score(n, {4000, 1000, 1, {}, 0}, c);
  EXPECT_EQ(w.gpu, -1);
  EXPECT_EQ(w.score, 54);
  // 5 cores, no GPU: 3 cores left: A lacks CPU (1700), B 200, C 1700 ->
  // F' = 850 + 60 + 340 = 1250; score = (int)(100 sigmoid(-0.5)) = 37.
  EXPECT_EQ(fgd_score(n, {5000, 0, 0, {}, 0}, c).score, 37);
}

TEST(BestFit, ScoreGpuChoiceAndNormalisation) {
  const auto n = sample_node();
  // left = 7000 / 128000 x 0.5 + 1200 / 8000 x 0.5 = 0.10234375 -> (int)(100 x 0.8977) = 89.
  EXPECT_EQ(best_fit_raw_score(n, {1000, 500, 1, {}, 0}), 89);
  EXPECT_EQ(best_fit_gpu(n, {1000, 500, 1, {}, 0}), 1);  // 500 free: the tightest fit
  EXPECT_EQ(best_fit_gpu(n, {1000, 100, 1, {}, 0}), 3);  // 200 free
  EXPECT_EQ(best_fit_gpu(n, {1000, 1000, 1, {}, 0}), 0);
  EXPECT_EQ(best_fit_gpu(n, {1000, 600, 1, {}, 0}), 0);
  EXPECT_EQ(best_fit_gpu({8000, {100, 100}, ""}, {1000, 500, 1, {}, 0}), -1);
  best_fit_score_plugin p;
  cycle_state st;
  std::vector<std::int64_t> s{89, 50, 10};
  ASSERT_TRUE(p.normalize_score(st, pod_info{}, s));
  EXPECT_EQ(s, (std::vector<std::int64_t>{100, 50, 0}));
  std::vector<std::int64_t> same{7, 7};
  ASSERT_TRUE(p.normalize_score(st, pod_info{}, same));
  EXPECT_EQ(same, (std::vector<std::int64_t>{0, 0}));
}

// A node_info with the given GPU shares used (percent of a device, in minor order) and cpu_used.
node_info gpu_node(std::string name, std::string model, std::int64_t cpu_used,
                   std::vector<std::int64_t> used) {
  node_info n;
  n.name = std::move(name);
  n.gpu_model = std::move(model);
  n.allocatable.cpu_milli = 8000;
  n.requested.cpu_milli = cpu_used;
  n.allocatable.memory_bytes = std::int64_t{64} << 30;
  n.allocatable.pods = 110;
  for (std::size_t i = 0; i < used.size(); ++i) {
    gpu_device g;
    g.minor = static_cast<std::int32_t>(i);
    g.core_used = used[i];
    g.memory_ratio_used = used[i];
    g.memory_total_bytes = std::int64_t{16} << 30;
    n.gpus.push_back(g);
  }
  return n;
}

pod_info gpu_pod(std::int64_t cpu, std::int64_t gpu_percent) {
  pod_info p;
  p.key = "default/p";
  p.requests.cpu_milli = cpu;
  p.requests.memory_bytes = 1 << 30;
  p.requests.gpu = p.requests.gpu_core = p.requests.gpu_memory_ratio = gpu_percent;
  p.devices.koord_gpu = gpu_percent;
  return p;
}

TEST(FGD, PluginCacheGivesTheScoresAndGpusOfTheDefinition) {
  // The plugin keys its cache by the sorted GPU shares; the score and the GPU it picks must stay
  // those of fgd_score() on the node as it is (minor order), for every task kind. The same
  // state in another GPU order is a cache hit.
  const std::vector<node_info> nodes = {
      gpu_node("a", "T4", 0, {0, 50, 100, 80}),   gpu_node("b", "T4", 0, {80, 100, 50, 0}),
      gpu_node("c", "T4", 0, {100, 80, 0, 50}),   gpu_node("d", "V100", 3000, {0, 0}),
      gpu_node("e", "T4", 7500, {30, 30, 30, 0}), gpu_node("f", "T4", 0, {})};
  struct row {
    const char* task;
    pod_info pod;
  };
  const std::vector<row> rows = {{"half a GPU", gpu_pod(1000, 50)},
                                 {"a fifth of a GPU", gpu_pod(500, 20)},
                                 {"a whole GPU", gpu_pod(4000, 100)},
                                 {"two whole GPUs", gpu_pod(2000, 200)},
                                 {"CPU only", gpu_pod(3000, 0)}};
  const auto classes = sample_classes();
  fgd_score_plugin p(fgd_args{classes});
  for (const auto& r : rows) {
    const fgd_task_class t = fgd_task_of(r.pod);
    for (const auto& n : nodes) {
      const fgd_node fn = fgd_node_of(n);
      // Only nodes the task fits (Filter passed): enough CPU and GPUs.
      if (fn.cpu_free_milli < t.cpu_milli) continue;
      std::int64_t fit = 0;
      for (const auto f : fn.gpu_free_milli) fit += f >= t.gpu_milli ? 1 : 0;
      if (t.gpu_count > 0 && fit < t.gpu_count) continue;
      cycle_state st;
      const auto want = fgd_score(fn, t, classes);
      EXPECT_EQ(p.score(st, r.pod, n, event_time{0}), want.score) << r.task << " on " << n.name;
    }
  }
  EXPECT_GT(p.cache_hits(), 0u);
  // Nodes a, b and c are one state in three GPU orders; a half-GPU pod goes to the GPU with
  // 500 free in each (F' is least there), found by its minor.
  const fgd_task_class half = fgd_task_of(gpu_pod(1000, 50));
  EXPECT_EQ(fgd_score(fgd_node_of(nodes[0]), half, classes).gpu, 1);
  EXPECT_EQ(fgd_score(fgd_node_of(nodes[1]), half, classes).gpu, 2);
  EXPECT_EQ(fgd_score(fgd_node_of(nodes[2]), half, classes).gpu, 3);
  // The plugin's Reserve moves DeviceShare's allocation to that minor, whatever the cache holds.
  const std::int32_t want_minor[] = {1, 2, 3};
  for (std::size_t i = 0; i < 3; ++i) {
    cycle_state st;
    gpu_allocation a;
    a.minor = 0;
    a.core = 50;
    st.gpu_allocations.push_back(a);
    ASSERT_TRUE(p.reserve(st, gpu_pod(1000, 50), nodes[i], event_time{0}).ok());
    EXPECT_EQ(st.gpu_allocations[0].minor, want_minor[i]) << nodes[i].name;
  }
}

TEST(FGD, ArgsParseAndErrorsNameTheField) {
  auto a = parse_fgd_args(
      "taskClasses:\n- {cpuMilli: 4000, gpuMilli: 1000, gpuCount: 1, popularity: 0.4}\n"
      "- {cpuMilli: 1000, gpuModels: [T4, P100], gpuMilli: 500, gpuCount: 1, popularity: 0.6}\n",
      "args");
  ASSERT_TRUE(a) << a.error().describe();
  ASSERT_EQ(a->task_classes.size(), 2u);
  EXPECT_EQ(a->task_classes[1].gpu_models, (std::vector<std::string>{"T4", "P100"}));
  auto bad = parse_fgd_args(
      "taskClasses:\n- {cpuMilli: 1, gpuMilli: 1500, gpuCount: 1, popularity: 1}\n", "args");
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().where, "args.taskClasses[0]");
  auto sum = parse_fgd_args("taskClasses:\n- {cpuMilli: 1, popularity: 0.5}\n", "args");
  ASSERT_FALSE(sum);
  EXPECT_NE(sum.error().message.find("summing to 1"), std::string::npos);
}

// A profile with DeviceShare and FGDScore: the sharing pod goes to the node and GPU that
// fragment least, and FGDScore's Reserve moves DeviceShare's allocation there.
TEST(FGD, ProfileSchedulesAndPicksTheGpu) {
  auto cfg = parse_scheduler_config(R"(apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
percentageOfNodesToScore: 100
profiles:
  - schedulerName: koord-scheduler
    plugins:
      preFilter: {enabled: [{name: DeviceShare}]}
      filter: {enabled: [{name: DeviceShare}]}
      score: {disabled: [{name: "*"}], enabled: [{name: FGDScore, weight: 1}]}
      reserve: {enabled: [{name: DeviceShare}, {name: FGDScore}]}
    pluginConfig:
      - name: FGDScore
        args:
          taskClasses:
            - {cpuMilli: 4000, gpuMilli: 1000, gpuCount: 1, popularity: 0.5}
            - {cpuMilli: 2000, gpuMilli: 500, gpuCount: 1, popularity: 0.3}
            - {cpuMilli: 1000, popularity: 0.2}
)",
                                    "test.yaml");
  ASSERT_TRUE(cfg) << cfg.error().describe();
  auto built = build_framework(*cfg, 0, plugin_registry::with_builtin(), 1);
  ASSERT_TRUE(built) << built.error().describe();
  ASSERT_NE(built->fwk->find("FGDScore"), nullptr);
  auto node = [](std::string name, std::vector<std::int64_t> used) {
    node_info n;
    n.name = std::move(name);
    n.allocatable.cpu_milli = 8000;
    n.allocatable.memory_bytes = std::int64_t{64} << 30;
    n.allocatable.pods = 110;
    for (std::size_t i = 0; i < used.size(); ++i) {
      gpu_device g;
      g.minor = static_cast<std::int32_t>(i);
      g.core_used = used[i];
      g.memory_ratio_used = used[i];
      g.memory_total_bytes = std::int64_t{16} << 30;
      n.gpus.push_back(g);
    }
    n.allocatable.gpu = n.allocatable.gpu_core = n.allocatable.gpu_memory_ratio =
        100 * static_cast<std::int64_t>(used.size());
    return n;
  };
  // n0 is sample_node() (GPU shares used 0, 50, 100, 80); n1 has two whole free GPUs.
  std::vector<node_info> nodes{node("n0", {0, 50, 100, 80}), node("n1", {0, 0})};
  pod_info pod;
  pod.key = "default/p";
  pod.requests.cpu_milli = 1000;
  pod.requests.memory_bytes = 1 << 30;
  pod.requests.gpu = pod.requests.gpu_core = pod.requests.gpu_memory_ratio = 50;
  pod.devices.koord_gpu = 50;
  cycle_state st;
  auto d = built->fwk->run_cycle(st, pod, nodes, event_time{0});
  ASSERT_EQ(d.result, outcome::scheduled) << d.message;
  // n0: 58 (GPU 1, above). n1 = [1000, 1000], 8 cores, F = 0.2 x 2000 = 400; the pod on GPU 0
  // gives [500, 1000]: A 500, B 0, C 1500 -> F' = 250 + 300 = 550: score 46.
  EXPECT_EQ(d.node, "n0");
  EXPECT_EQ(d.total_score, 58);
  ASSERT_EQ(d.gpu_allocations.size(), 1u);
  EXPECT_EQ(d.gpu_allocations[0].minor, 1);
  EXPECT_EQ(d.gpu_allocations[0].core, 50);
}

}  // namespace
}  // namespace colony::scheduler
