// The one definition of Koordinator's PriorityClass and QoSClass (messages/priority.hpp,
// messages/qos.hpp): names round-trip, the spec.priority bands of apis/extension/priority.go
// hold at every boundary, and the numbering is the wire's (colony.fbs), which every module's
// static_cast from a wire enum relies on.
#include <gtest/gtest.h>

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "colony_generated.h"
#include "messages/priority.hpp"
#include "messages/qos.hpp"

namespace colony {
namespace {

// Wire order: a static_cast between the two is the identity on every value.
static_assert(static_cast<int>(qos_class::none) == static_cast<int>(wire::QoSClass::None));
static_assert(static_cast<int>(qos_class::system) == static_cast<int>(wire::QoSClass::SYSTEM));
static_assert(static_cast<int>(qos_class::lse) == static_cast<int>(wire::QoSClass::LSE));
static_assert(static_cast<int>(qos_class::lsr) == static_cast<int>(wire::QoSClass::LSR));
static_assert(static_cast<int>(qos_class::ls) == static_cast<int>(wire::QoSClass::LS));
static_assert(static_cast<int>(qos_class::be) == static_cast<int>(wire::QoSClass::BE));
static_assert(static_cast<int>(qos_class::be) == static_cast<int>(wire::QoSClass::MAX));
static_assert(static_cast<int>(priority_class::none) ==
              static_cast<int>(wire::PriorityClass::None));
static_assert(static_cast<int>(priority_class::prod) ==
              static_cast<int>(wire::PriorityClass::Prod));
static_assert(static_cast<int>(priority_class::mid) == static_cast<int>(wire::PriorityClass::Mid));
static_assert(static_cast<int>(priority_class::batch) ==
              static_cast<int>(wire::PriorityClass::Batch));
static_assert(static_cast<int>(priority_class::free) ==
              static_cast<int>(wire::PriorityClass::Free));
static_assert(static_cast<int>(priority_class::free) == static_cast<int>(wire::PriorityClass::MAX));

static_assert(static_cast<int>(kube_qos_class::unset) ==
              static_cast<int>(wire::KubeQoSClass::Unset));
static_assert(static_cast<int>(kube_qos_class::guaranteed) ==
              static_cast<int>(wire::KubeQoSClass::Guaranteed));
static_assert(static_cast<int>(kube_qos_class::burstable) ==
              static_cast<int>(wire::KubeQoSClass::Burstable));
static_assert(static_cast<int>(kube_qos_class::best_effort) ==
              static_cast<int>(wire::KubeQoSClass::BestEffort));
static_assert(static_cast<int>(kube_qos_class::best_effort) ==
              static_cast<int>(wire::KubeQoSClass::MAX));

// The mappings are constexpr: usable in other modules' static_asserts and constexpr code.
static_assert(get_pod_priority_class_by_name("koord-batch") == priority_class::batch);
static_assert(get_priority_class_by_priority(9999) == priority_class::prod);
static_assert(get_pod_qos_class_by_name("LSE") == qos_class::lse);

// apis/extension/qos.go QoSClass values and GetPodQoSClassByName.
TEST(QoSClassNames, EveryNameRoundTrips) {
  struct row {
    qos_class q;
    std::string_view name;
  };
  const std::vector<row> rows = {{qos_class::system, "SYSTEM"}, {qos_class::lse, "LSE"},
                                 {qos_class::lsr, "LSR"},       {qos_class::ls, "LS"},
                                 {qos_class::be, "BE"},         {qos_class::none, ""}};
  for (const auto& r : rows) {
    SCOPED_TRACE(r.name);
    EXPECT_EQ(to_string(r.q), r.name);
    EXPECT_EQ(get_pod_qos_class_by_name(r.name), r.q);
  }
  EXPECT_EQ(known_qos_classes.size() + 1, rows.size());
}

TEST(QoSClassNames, UnknownOrMiscasedNameIsNone) {
  for (std::string_view s : {"be", "Ls", "GOLD", "LS ", " BE", "NONE", "None"}) {
    SCOPED_TRACE(s);
    EXPECT_EQ(get_pod_qos_class_by_name(s), qos_class::none);
  }
}

// corev1.PodQOSClass names and qos_utils.go GetPodQoSClassWithKubeQoS.
TEST(KubeQoSClass, NamesAndKoordinatorQoS) {
  struct row {
    kube_qos_class k;
    std::string_view name;
    qos_class koord;
  };
  for (const row& r : {row{kube_qos_class::guaranteed, "Guaranteed", qos_class::lsr},
                       row{kube_qos_class::burstable, "Burstable", qos_class::ls},
                       row{kube_qos_class::best_effort, "BestEffort", qos_class::be},
                       row{kube_qos_class::unset, "", qos_class::none}}) {
    SCOPED_TRACE(r.name);
    EXPECT_EQ(to_string(r.k), r.name);
    EXPECT_EQ(get_pod_qos_class_with_kube_qos(r.k), r.koord);
  }
}

// apis/extension/priority.go PriorityClass values and GetPodPriorityClassByName.
TEST(PriorityClassNames, EveryNameRoundTrips) {
  struct row {
    priority_class p;
    std::string_view name;
  };
  const std::vector<row> rows = {{priority_class::prod, "koord-prod"},
                                 {priority_class::mid, "koord-mid"},
                                 {priority_class::batch, "koord-batch"},
                                 {priority_class::free, "koord-free"},
                                 {priority_class::none, ""}};
  for (const auto& r : rows) {
    SCOPED_TRACE(r.name);
    EXPECT_EQ(to_string(r.p), r.name);
    EXPECT_EQ(get_pod_priority_class_by_name(r.name), r.p);
  }
  EXPECT_EQ(known_priority_classes.size() + 1, rows.size());
}

TEST(PriorityClassNames, UnknownOrMiscasedNameIsNone) {
  for (std::string_view s : {"Koord-Prod", "koord-prod ", "prod", "koord-none", "unknown"}) {
    SCOPED_TRACE(s);
    EXPECT_EQ(get_pod_priority_class_by_name(s), priority_class::none);
  }
}

// apis/extension/priority.go getPriorityClassByPriority: inclusive bands prod 9000-9999,
// mid 7000-7999, batch 5000-5999, free 3000-3999; between, outside, or absent is none.
TEST(PriorityBands, EveryBoundary) {
  struct row {
    std::optional<std::int32_t> priority;
    priority_class want;
  };
  const std::vector<row> rows = {
      {10000, priority_class::none}, {9999, priority_class::prod},
      {9000, priority_class::prod},  {8999, priority_class::none},
      {7999, priority_class::mid},   {7000, priority_class::mid},
      {6999, priority_class::none},  {5999, priority_class::batch},
      {5000, priority_class::batch}, {4999, priority_class::none},
      {3999, priority_class::free},  {3000, priority_class::free},
      {2999, priority_class::none},  {0, priority_class::none},
      {-1, priority_class::none},    {std::nullopt, priority_class::none},
  };
  for (const auto& r : rows) {
    SCOPED_TRACE(r.priority ? std::to_string(*r.priority) : "absent");
    EXPECT_EQ(get_priority_class_by_priority(r.priority), r.want);
  }
  EXPECT_EQ(priority_prod_value_max, 9999);
  EXPECT_EQ(priority_prod_value_min, 9000);
  EXPECT_EQ(priority_mid_value_max, 7999);
  EXPECT_EQ(priority_mid_value_min, 7000);
  EXPECT_EQ(priority_batch_value_max, 5999);
  EXPECT_EQ(priority_batch_value_min, 5000);
  EXPECT_EQ(priority_free_value_max, 3999);
  EXPECT_EQ(priority_free_value_min, 3000);
}

// priority_utils.go GetDefaultPriorityByPriorityClass: each default lies in its own band.
TEST(PriorityBands, DefaultPriorityOfEachClass) {
  struct row {
    priority_class p;
    std::int32_t want;
  };
  for (const row& r : {row{priority_class::prod, 9500}, row{priority_class::mid, 7500},
                       row{priority_class::batch, 5500}, row{priority_class::free, 3500},
                       row{priority_class::none, 0}}) {
    SCOPED_TRACE(to_string(r.p));
    EXPECT_EQ(get_default_priority_by_priority_class(r.p), r.want);
    EXPECT_EQ(get_priority_class_by_priority(r.want), r.p);
  }
}

// priority_utils.go GetPodPriorityClassWithQoS.
TEST(PriorityClassWithQoS, EveryQoS) {
  struct row {
    qos_class q;
    priority_class want;
  };
  for (const row& r :
       {row{qos_class::system, priority_class::prod}, row{qos_class::lse, priority_class::prod},
        row{qos_class::lsr, priority_class::prod}, row{qos_class::ls, priority_class::prod},
        row{qos_class::be, priority_class::batch}, row{qos_class::none, priority_class::none}}) {
    SCOPED_TRACE(to_string(r.q));
    EXPECT_EQ(get_pod_priority_class_with_qos(r.q), r.want);
  }
  EXPECT_EQ(qos_class_for_guaranteed, qos_class::lsr);
}

}  // namespace
}  // namespace colony
