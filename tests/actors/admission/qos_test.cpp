// QoS derivation: apis/extension/qos_utils_test.go and Kubernetes' GetPodQOS.
#include "actors/admission/qos.hpp"

#include <gtest/gtest.h>

#include "messages/names.hpp"
#include "messages/units.hpp"
#include "tests/actors/admission/test_pods.hpp"

namespace colony::admission {
namespace {

using testing::container;
using testing::cpu_mem;
using testing::pod_with;

const std::string qos_label(names::label_qos_class);

// apis/extension/qos_utils_test.go TestGetPodQoSClass (raw).
TEST(TestGetPodQoSClass, GoldenRows) {
  struct row {
    const char* go_case;
    string_map labels;
    qos_class want;
  };
  const std::vector<row> rows = {
      {"koord qos class not specified", {}, qos_class::none},
      {"koord qos class not specified 1", {{"other", "x"}}, qos_class::none},
      {"qos LS", {{qos_label, "LS"}}, qos_class::ls},
      {"qos BE", {{qos_label, "BE"}}, qos_class::be},
  };
  for (const auto& r : rows) {
    SCOPED_TRACE(r.go_case);
    EXPECT_EQ(get_pod_qos_class_raw(pod_with(r.labels, std::nullopt)), r.want);
  }
}

// apis/extension/qos_utils_test.go TestGetQoSClassByAttrs.
TEST(TestGetQoSClassByAttrs, GoldenRows) {
  EXPECT_EQ(get_qos_class_by_attrs({}), qos_class::none) << "koord qos class not specified";
  EXPECT_EQ(get_qos_class_by_attrs({{qos_label, "BE"}}), qos_class::be) << "qos BE";
}

TEST(QoSClassNames, RoundTripAndUnknownIsNone) {
  for (auto q : {qos_class::system, qos_class::lse, qos_class::lsr, qos_class::ls, qos_class::be,
                 qos_class::none})
    EXPECT_EQ(get_pod_qos_class_by_name(to_string(q)), q);
  EXPECT_EQ(get_pod_qos_class_raw(pod_with({{qos_label, "be"}}, std::nullopt)), qos_class::none);
  EXPECT_EQ(get_pod_qos_class_raw(pod_with({{qos_label, "GOLD"}}, std::nullopt)), qos_class::none);
}

TEST(KubeQoS, ComputedFromRequestsAndLimits) {
  struct row {
    const char* name;
    std::vector<container_spec> containers;
    std::vector<container_spec> init;
    kube_qos_class want;
  };
  const std::vector<row> rows = {
      {"no containers", {}, {}, kube_qos_class::best_effort},
      {"no resources", {container("a", {}, {})}, {}, kube_qos_class::best_effort},
      {"req = lim cpu and memory",
       {container("a", cpu_mem(1000, gib), cpu_mem(1000, gib))},
       {},
       kube_qos_class::guaranteed},
      // The API server would default requests to limits first; GetPodQOS on the raw spec
      // counts 0 requested resources against 2 limited ones.
      {"limits only, before API defaulting",
       {container("a", {}, cpu_mem(1000, gib))},
       {},
       kube_qos_class::burstable},
      {"cpu only",
       {container("a", cpu_mem(1000, 0), cpu_mem(1000, 0))},
       {},
       kube_qos_class::burstable},
      {"req < lim",
       {container("a", cpu_mem(500, gib), cpu_mem(1000, gib))},
       {},
       kube_qos_class::burstable},
      {"one guaranteed, one without limits",
       {container("a", cpu_mem(1000, gib), cpu_mem(1000, gib)),
        container("b", cpu_mem(100, 0), {})},
       {},
       kube_qos_class::burstable},
      {"init container without limits breaks Guaranteed",
       {container("a", cpu_mem(1000, gib), cpu_mem(1000, gib))},
       {container("i", cpu_mem(100, 0), {})},
       kube_qos_class::burstable},
      {"init container with equal limits keeps Guaranteed",
       {container("a", cpu_mem(1000, gib), cpu_mem(1000, gib))},
       {container("i", cpu_mem(100, gib), cpu_mem(100, gib))},
       kube_qos_class::guaranteed},
  };
  for (const auto& r : rows) {
    SCOPED_TRACE(r.name);
    pod_spec p = pod_with({}, std::nullopt, r.containers);
    p.init_containers = r.init;
    EXPECT_EQ(compute_kube_qos_class(p), r.want);
  }
}

TEST(QoSWithDefault, GuaranteedIsLSRAndStatusWins) {
  pod_spec p = pod_with({}, std::nullopt, {container("a", cpu_mem(1000, gib), cpu_mem(1000, gib))});
  EXPECT_EQ(get_pod_qos_class_with_default(p), qos_class::lsr);
  p.status_qos_class = kube_qos_class::burstable;  // status.qosClass is read first
  EXPECT_EQ(get_pod_qos_class_with_default(p), qos_class::ls);
  p.status_qos_class = kube_qos_class::best_effort;
  EXPECT_EQ(get_pod_qos_class_with_default(p), qos_class::be);
  p.labels[qos_label] = "LSE";  // the label wins over everything
  EXPECT_EQ(get_pod_qos_class_with_default(p), qos_class::lse);
}

}  // namespace
}  // namespace colony::admission
