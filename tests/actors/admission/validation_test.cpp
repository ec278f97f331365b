// The validating webhook: every row of
// pkg/webhook/pod/validating/cluster_colocation_profile_test.go
// TestClusterColocationProfileValidatingPod, with Koordinator's exact reason strings.
#include "actors/admission/validation.hpp"

#include <gtest/gtest.h>

#include "messages/names.hpp"
#include "messages/units.hpp"
#include "tests/actors/admission/test_pods.hpp"

namespace colony::admission {
namespace {

using testing::batch;
using testing::container;
using testing::cpu_mem;
using testing::pod_with;

const std::string qos(names::label_qos_class);
const std::string sub_priority(names::label_priority);

struct validating_row {
  const char* go_case;
  admission_operation op;
  pod_spec new_pod;
  std::optional<pod_spec> old_pod;
  bool skip_validating_priority;
  bool want_allowed;
  std::string want_reason;
};

pod_spec empty_pod() { return pod_spec{}; }

std::vector<validating_row> golden_rows() {
  const auto create = admission_operation::create;
  const auto update = admission_operation::update;
  // batch-cpu "1" is one milli-core of batch; batch-memory 4Gi.
  const container_spec batch_container =
      container("test-container-a", batch(1, 4 * gib), batch(1, 4 * gib));
  return {
      {"non-colocation empty pod", create, empty_pod(), std::nullopt, false, true, ""},
      {"validate immutable QoS", update, pod_with({{qos, "LS"}}, std::nullopt),
       pod_with({{qos, "BE"}}, std::nullopt), false, false,
       R"(labels.koordinator.sh/qosClass: Invalid value: "LS": field is immutable)"},
      {"validate remove QoS", update, empty_pod(), pod_with({{qos, "BE"}}, std::nullopt), false,
       false, R"(labels.koordinator.sh/qosClass: Invalid value: "": field is immutable)"},
      // GC-VAL-5 shape: BE with batch resources and a batch priority is allowed.
      {"validate defined QoS", create, pod_with({{qos, "BE"}}, 5000, {batch_container}),
       std::nullopt, false, true, ""},
      // GC-VAL-3.
      {"forbidden not defined QoS", create, pod_with({}, 6666, {batch_container}), std::nullopt,
       false, false,
       "labels.koordinator.sh/qosClass: Required value: must specify koordinator QoS BE with "
       "koordinator "
       "colocation resources"},
      {"validate immutable priorityClass", update, pod_with({}, 9999), pod_with({}, 5000), false,
       false, R"(spec.priority: Invalid value: "koord-prod": field is immutable)"},
      {"validate remove priorityClass", update, empty_pod(), pod_with({}, 5000), false, false,
       R"(spec.priority: Invalid value: "": field is immutable)"},
      {"validate koordinator priority with defaultSkipValidatingPriority=false", update,
       pod_with({{sub_priority, "8888"}}, std::nullopt),
       pod_with({{sub_priority, "9999"}}, std::nullopt), false, false,
       R"(labels.koordinator.sh/priority: Invalid value: "8888": field is immutable)"},
      {"validate koordinator priority with defaultSkipValidatingPriority=true", update,
       pod_with({{sub_priority, "8888"}}, std::nullopt),
       pod_with({{sub_priority, "9999"}}, std::nullopt), true, true, ""},
      {"validate remove koordinator priority", update, empty_pod(),
       pod_with({{sub_priority, "9999"}}, std::nullopt), false, false,
       R"(labels.koordinator.sh/priority: Invalid value: "": field is immutable)"},
      // GC-VAL-5.
      {"allowed QoS and priorityClass combination: BE And NonProd", create,
       pod_with({{qos, "BE"}}, 5000), std::nullopt, false, true, ""},
      {"allowed QoS and priorityClass combination: LSR And Prod", create,
       pod_with({{qos, "LSR"}}, 9999,
                {container("test-container-a", cpu_mem(1000, 0), cpu_mem(1000, 0))}),
       std::nullopt, false, true, ""},
      // GC-VAL-1.
      {"forbidden QoS and priorityClass combination: BE And Prod", create,
       pod_with({{qos, "BE"}}, 9999), std::nullopt, false, false,
       "Pod: Forbidden: koordinator.sh/qosClass=BE and priorityClass=koord-prod cannot be used in "
       "combination"},
      // GC-VAL-2.
      {"forbidden QoS and priorityClass combination: LSR And Batch", create,
       pod_with({{qos, "LSR"}}, 5999,
                {container("test-container-a", cpu_mem(1000, 0), cpu_mem(1000, 0))}),
       std::nullopt, false, false,
       "Pod: Forbidden: koordinator.sh/qosClass=LSR and priorityClass=koord-batch cannot be used "
       "in combination"},
      {"forbidden QoS and priorityClass combination: LSR And Mid", create,
       pod_with({{qos, "LSR"}}, 7999,
                {container("test-container-a", cpu_mem(1000, 0), cpu_mem(1000, 0))}),
       std::nullopt, false, false,
       "Pod: Forbidden: koordinator.sh/qosClass=LSR and priorityClass=koord-mid cannot be used in "
       "combination"},
      {"forbidden QoS and priorityClass combination: LSR And Free", create,
       pod_with({{qos, "LSR"}}, 3999,
                {container("test-container-a", cpu_mem(1000, 0), cpu_mem(1000, 0))}),
       std::nullopt, false, false,
       "Pod: Forbidden: koordinator.sh/qosClass=LSR and priorityClass=koord-free cannot be used in "
       "combination"},
      {"validate resources - LSR And Prod", create,
       pod_with({{qos, "LS"}}, 9999,
                {container("test-container-a", cpu_mem(1000, gib), cpu_mem(1000, gib))}),
       std::nullopt, false, true, ""},
      {"forbidden resources - LSR And Prod: unset CPUs", create,
       pod_with({{qos, "LSR"}}, 9999,
                {container("test-container-a", cpu_mem(0, gib), cpu_mem(0, gib))}),
       std::nullopt, false, false,
       "pod.spec.containers[*].resources.requests: Required value: LSR Pod must declare the "
       "requested CPUs"},
      {"forbidden resources - LSR And Prod: non-integer CPUs", create,
       pod_with({{qos, "LSR"}}, 9999,
                {container("test-container-a", cpu_mem(100, gib), cpu_mem(100, gib))}),
       std::nullopt, false, false,
       R"(pod.spec.containers[*].resources.requests: Invalid value: "100m": the requested CPUs of LSR Pod must be integer)"},
  };
}

// Rows print as their case name, not as bytes.
void PrintTo(const validating_row& r, std::ostream* os) { *os << r.go_case; }

class TestClusterColocationProfileValidatingPod : public ::testing::TestWithParam<validating_row> {
};

TEST_P(TestClusterColocationProfileValidatingPod, MatchesKoordinator) {
  const validating_row& r = GetParam();
  validating_options opts;
  opts.skip_validating_priority = r.skip_validating_priority;
  const auto got = validate_cluster_colocation_profile_pod(r.op, r.new_pod,
                                                           r.old_pod ? &*r.old_pod : nullptr, opts);
  EXPECT_EQ(got.allowed(), r.want_allowed);
  EXPECT_EQ(got.reason(), r.want_reason);
}

INSTANTIATE_TEST_SUITE_P(GoldenCases, TestClusterColocationProfileValidatingPod,
                         ::testing::ValuesIn(golden_rows()),
                         [](const ::testing::TestParamInfo<validating_row>& info) {
                           return testing::gtest_name(info.param.go_case);
                         });

TEST(ValidatingPod, SeveralErrorsAggregateInCheckOrder) {
  // Update that changes the QoS to BE while the pod is Prod: both errors, bracketed.
  const pod_spec old_pod = pod_with({{qos, "LS"}}, 9999);
  const pod_spec new_pod = pod_with({{qos, "BE"}}, 9999);
  const auto got =
      validate_cluster_colocation_profile_pod(admission_operation::update, new_pod, &old_pod);
  ASSERT_EQ(got.errors.size(), 2u);
  EXPECT_EQ(got.errors[0].field, "labels.koordinator.sh/qosClass");
  EXPECT_EQ(got.errors[1].field, "Pod");
  EXPECT_EQ(got.reason(),
            R"([labels.koordinator.sh/qosClass: Invalid value: "BE": field is immutable, )"
            "Pod: Forbidden: koordinator.sh/qosClass=BE and priorityClass=koord-prod cannot be "
            "used in combination]");
}

TEST(ValidatingPod, LSENeedsWholeCoresButAnyPriority) {
  const auto ok = validate_cluster_colocation_profile_pod(
      admission_operation::create,
      pod_with({{qos, "LSE"}}, 5000, {container("a", cpu_mem(2000, 0), {})}), nullptr);
  EXPECT_TRUE(ok.allowed()) << ok.reason();
  const auto bad = validate_cluster_colocation_profile_pod(
      admission_operation::create,
      pod_with({{qos, "LSE"}}, 9500, {container("a", cpu_mem(1500, 0), {})}), nullptr);
  EXPECT_EQ(
      bad.reason(),
      R"(pod.spec.containers[*].resources.requests: Invalid value: "1500m": the requested CPUs of LSR Pod must be integer)");
}

TEST(ValidatingPod, BatchResourcesCountInitContainersAndOverhead) {
  // Only the overhead carries batch-cpu: the pod request still has it.
  pod_spec p = pod_with({}, 5500, {container("a", {}, {})});
  p.overhead = batch(500, 0);
  EXPECT_FALSE(
      validate_cluster_colocation_profile_pod(admission_operation::create, p, nullptr).allowed());
  pod_spec q = pod_with({}, 5500, {container("a", {}, {})});
  q.init_containers = {container("i", batch(0, gib), {})};
  EXPECT_FALSE(
      validate_cluster_colocation_profile_pod(admission_operation::create, q, nullptr).allowed());
}

}  // namespace
}  // namespace colony::admission
