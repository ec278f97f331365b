// NodeResourcesFit with co-location resources (pkg/scheduler/plugins/noderesources, Kubernetes
// fit.go): kube's fit.go / least_allocated.go semantics over batch-*/mid-*, plus Koordinator's
// priority class and resource-name translation (apis/extension/{priority_utils.go, resource.go}).
#include <gtest/gtest.h>

#include "actors/scheduler/node_resources_fit.hpp"
#include "tests/actors/scheduler/test_helpers.hpp"

namespace colony::scheduler {
namespace {

using namespace testing;
using R = resource_name;

// priority_utils.go GetPodPriorityClassWithDefault; qos_utils.go GetPodQoSClassWithDefault.
TEST(PriorityClass, GetPodPriorityClassWithDefault) {
  struct row {
    const char* name;
    pod_info pod;
    priority_class want;
  };
  pod_info labelled = make_pod("ns/l", cpu_mem(1000, Gi));
  labelled.priority_class_label = priority_class::batch;
  labelled.priority = 9500;
  pod_info be = make_pod("ns/be");
  be.qos_label = qos_class::be;
  be.priority = 9999;
  pod_info lsr = make_pod("ns/lsr");
  lsr.qos_label = qos_class::lsr;
  const std::vector<row> rows = {
      {"label wins over spec.priority", labelled, priority_class::batch},
      {"prod range",
       [] {
         auto p = make_pod("ns/p");
         p.priority = 9000;
         return p;
       }(),
       priority_class::prod},
      {"mid range",
       [] {
         auto p = make_pod("ns/p");
         p.priority = 7999;
         return p;
       }(),
       priority_class::mid},
      {"batch range",
       [] {
         auto p = make_pod("ns/p");
         p.priority = 5000;
         return p;
       }(),
       priority_class::batch},
      {"free range",
       [] {
         auto p = make_pod("ns/p");
         p.priority = 3999;
         return p;
       }(),
       priority_class::free},
      {"no priority, no requests: BestEffort -> BE -> batch", make_pod("ns/e"),
       priority_class::batch},
      {"no priority, requests: Burstable -> LS -> prod", make_pod("ns/r", cpu_mem(100, 0)),
       priority_class::prod},
      {"no priority, guaranteed -> LSR -> prod",
       make_pod("ns/g", cpu_mem(1000, Gi), cpu_mem(1000, Gi)), priority_class::prod},
      {"raw priority wins over QoS", be, priority_class::prod},
      {"QoS label LSR -> prod", lsr, priority_class::prod},
  };
  for (const auto& r : rows) {
    SCOPED_TRACE(r.name);
    EXPECT_EQ(r.pod.priority_class_with_default(), r.want);
  }
}

// resource.go TranslateResourceNameByPriorityClass.
TEST(ResourceNames, TranslateResourceNameByPriorityClass) {
  EXPECT_EQ(translate_resource_name(priority_class::prod, R::cpu), R::cpu);
  EXPECT_EQ(translate_resource_name(priority_class::none, R::memory), R::memory);
  EXPECT_EQ(translate_resource_name(priority_class::batch, R::cpu), R::batch_cpu);
  EXPECT_EQ(translate_resource_name(priority_class::batch, R::memory), R::batch_memory);
  EXPECT_EQ(translate_resource_name(priority_class::mid, R::cpu), R::mid_cpu);
  EXPECT_EQ(translate_resource_name(priority_class::mid, R::memory), R::mid_memory);
  EXPECT_EQ(translate_resource_name(priority_class::free, R::cpu), std::nullopt);
  EXPECT_EQ(translate_resource_name(priority_class::batch, R::gpu), std::nullopt);
}

TEST(ResourceNames, EnumOrderIsKoordinatorSortedNameOrder) {
  for (std::size_t i = 1; i < resource_name_count; ++i)
    EXPECT_LT(to_string(static_cast<R>(i - 1)), to_string(static_cast<R>(i)));
  EXPECT_EQ(parse_resource_name("kubernetes.io/batch-cpu"), R::batch_cpu);
  EXPECT_EQ(parse_resource_name("koordinator.sh/batch-cpu"), std::nullopt);  // wrong namespace
}

node_info colocation_node() {
  node_info n = make_node("n", 16000, 64 * Gi, 3);
  n.allocatable.batch_cpu_milli = 16000;  // "16000" = 16 cores of batch-cpu
  n.allocatable.batch_memory_bytes = 32 * Gi;
  n.allocatable.mid_cpu_milli = 4000;
  n.allocatable.mid_memory_bytes = 8 * Gi;
  return n;
}

pod_info batch_pod(std::string key, std::int64_t milli, std::int64_t bytes) {
  pod_info p = make_pod(std::move(key));
  p.priority = 5000;
  p.qos_label = qos_class::be;
  p.requests.batch_cpu_milli = milli;
  p.requests.batch_memory_bytes = bytes;
  return p;
}

TEST(NodeResourcesFit, FiltersBatchAndMidAsScalarResources) {
  node_resources_fit fit;
  node_info n = colocation_node();
  struct row {
    const char* name;
    pod_info pod;
    std::string want;
  };
  pod_info mid = make_pod("ns/mid");
  mid.priority = 7000;
  mid.requests.mid_cpu_milli = 5000;
  const std::vector<row> rows = {
      {"batch pod fits batch allocatable", batch_pod("ns/b", 8000, 16 * Gi), ""},
      {"batch cpu beyond batch allocatable", batch_pod("ns/b", 17000, Gi),
       "Insufficient kubernetes.io/batch-cpu"},
      {"batch memory beyond batch allocatable", batch_pod("ns/b", 1000, 33 * Gi),
       "Insufficient kubernetes.io/batch-memory"},
      {"mid cpu beyond mid allocatable", mid, "Insufficient kubernetes.io/mid-cpu"},
      {"cpu beyond allocatable", make_pod("ns/c", cpu_mem(16001, 0)), "Insufficient cpu"},
      {"memory beyond allocatable", make_pod("ns/m", cpu_mem(0, 65 * Gi)), "Insufficient memory"},
  };
  for (const auto& r : rows) {
    SCOPED_TRACE(r.name);
    auto s = fit.fits_request(r.pod, n);
    if (r.want.empty()) {
      EXPECT_TRUE(s.ok()) << s.message();
    } else {
      EXPECT_EQ(s.message(), r.want);
    }
  }
  // Requested batch resources count: 12 of 16 batch cores used leaves room for 4.
  n.requested.batch_cpu_milli = 12000;
  EXPECT_TRUE(fit.fits_request(batch_pod("ns/b", 4000, Gi), n).ok());
  EXPECT_EQ(fit.fits_request(batch_pod("ns/b", 4001, Gi), n).message(),
            "Insufficient kubernetes.io/batch-cpu");
  n.requested.pods = 3;
  EXPECT_EQ(fit.fits_request(batch_pod("ns/b", 1, 1), n).message(), "Too many pods");
  node_resources_fit_args ignore;
  ignore.ignored_resources = {R::batch_cpu};
  n.requested.pods = 0;
  EXPECT_TRUE(node_resources_fit(ignore).fits_request(batch_pod("ns/b", 99000, Gi), n).ok());
}

TEST(NodeResourcesFit, LeastAllocatedScoresNonZeroRequestsAndSkipsUnrequestedScalars) {
  // least_allocated.go: (capacity - requested) * 100 / capacity, weighted mean.
  EXPECT_EQ(least_requested_score(4000, 16000), 75);
  EXPECT_EQ(least_requested_score(17000, 16000), 0);
  EXPECT_EQ(most_requested_score(17000, 16000), 100);
  node_info n = colocation_node();
  node_resources_fit koord(node_resources_fit_args::koordinator_profile());
  // A prod pod requests cpu/memory only: batch resources are skipped (not requested).
  pod_info prod = make_pod("ns/p", cpu_mem(4000, 16 * Gi));
  EXPECT_EQ(koord.score_node(prod, n), (75 + 75) / 2);
  // A batch pod: cpu/memory count kube's non-zero defaults (100m, 200Mi), batch resources count.
  pod_info batch = batch_pod("ns/b", 8000, 16 * Gi);
  const std::int64_t cpu = (16000 - 100) * 100 / 16000;
  const std::int64_t mem = (64 * Gi - 200 * Mi) * 100 / (64 * Gi);
  EXPECT_EQ(koord.score_node(batch, n), (cpu + mem + 50 + 50) / 4);
  // Code default (cpu, memory only) ignores batch resources entirely.
  EXPECT_EQ(node_resources_fit{}.score_node(batch, n), (cpu + mem) / 2);
}

}  // namespace
}  // namespace colony::scheduler
