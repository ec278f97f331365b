// Golden cases of reference section A.1/A.4, from apis/extension/priority_utils_test.go, plus
// the sub-priority label parser (GetPodSubPriority, strconv.ParseInt(s, 0, 32)).
#include "actors/admission/priority.hpp"

#include <gtest/gtest.h>

#include "messages/names.hpp"
#include "tests/actors/admission/test_pods.hpp"

namespace colony::admission {
namespace {

using testing::container;
using testing::cpu_mem;
using testing::pod_with;

const std::string prio_class_label(names::label_priority_class);
const std::string qos_label(names::label_qos_class);

struct class_row {
  const char* go_case;
  pod_spec pod;
  priority_class expected;
};

// apis/extension/priority_utils_test.go TestGetPriorityClass (unnamed rows, numbered here).
TEST(TestGetPriorityClass, GoldenRows) {
  const std::vector<class_row> rows = {
      {"row 1: prod band midpoint", pod_with({}, (9000 + 9999) / 2), priority_class::prod},
      {"row 2: batch band midpoint", pod_with({}, (5000 + 5999) / 2), priority_class::batch},
      {"row 3: label koord-prod overrides batch priority",
       pod_with({{prio_class_label, "koord-prod"}}, 5499), priority_class::prod},
      {"row 4: unknown label gives none, no fallback",
       pod_with({{prio_class_label, "unknown"}}, 5499), priority_class::none},
  };
  for (const auto& r : rows) {
    SCOPED_TRACE(r.go_case);
    EXPECT_EQ(get_pod_priority_class_raw(r.pod), r.expected);
  }
}

// apis/extension/priority_utils_test.go TestGetPodPriorityClassWithDefault; GC-PRIO-1..6.
TEST(TestGetPodPriorityClassWithDefault, GoldenRows) {
  const std::vector<class_row> rows = {
      {"GC-PRIO-1 priority 9499", pod_with({}, 9499), priority_class::prod},
      {"GC-PRIO-2 label koord-prod, priority 5499",
       pod_with({{prio_class_label, "koord-prod"}}, 5499), priority_class::prod},
      {"GC-PRIO-3 qos LSR, priority 5499: raw class wins", pod_with({{qos_label, "LSR"}}, 5499),
       priority_class::batch},
      {"row 4: qos LSR, no priority", pod_with({{qos_label, "LSR"}}, std::nullopt),
       priority_class::prod},
      {"GC-PRIO-4 qos BE, no priority", pod_with({{qos_label, "BE"}}, std::nullopt),
       priority_class::batch},
      {"GC-PRIO-5 cpu request 100 limit 200 (Burstable)",
       pod_with({}, std::nullopt, {container("", cpu_mem(100'000, 0), cpu_mem(200'000, 0))}),
       priority_class::prod},
      {"row 7: cpu request = limit 100 but no memory (still Burstable)",
       pod_with({}, std::nullopt, {container("", cpu_mem(100'000, 0), cpu_mem(100'000, 0))}),
       priority_class::prod},
      {"GC-PRIO-6 one container without resources (BestEffort)",
       pod_with({}, std::nullopt, {container("abc", {}, {})}), priority_class::batch},
  };
  for (const auto& r : rows) {
    SCOPED_TRACE(r.go_case);
    EXPECT_EQ(get_pod_priority_class_with_default(r.pod), r.expected);
  }
}

// apis/extension/priority_utils_test.go TestGetPodPriorityValueWithDefault; GC-PRIO-7.
TEST(TestGetPodPriorityValueWithDefault, GoldenRows) {
  EXPECT_EQ(get_pod_priority_value_with_default(nullptr), 0) << "pod is nil";
  EXPECT_EQ(get_pod_priority_value_with_default(pod_with({}, 5999)), 5999)
      << "pod has non-default priority";
  EXPECT_EQ(get_pod_priority_value_with_default(pod_with({{qos_label, "LSR"}}, std::nullopt)), 9500)
      << "GC-PRIO-7 get default priority pod by its class";
}

TEST(PriorityValueWithDefault, ZeroPriorityFallsBackToClassDefault) {
  // spec.priority == 0 counts as "not set" (PriorityNoneValueDefault).
  EXPECT_EQ(get_pod_priority_value_with_default(pod_with({{qos_label, "BE"}}, 0)), 5500);
  EXPECT_EQ(get_pod_priority_value_with_default(pod_with({{prio_class_label, "koord-mid"}}, 0)),
            7500);
  EXPECT_EQ(get_pod_priority_value_with_default(
                pod_with({{prio_class_label, "koord-free"}}, std::nullopt)),
            3500);
  // No label, BestEffort (no containers): BE -> Batch default.
  EXPECT_EQ(get_pod_priority_value_with_default(pod_with({}, std::nullopt)), 5500);
}

TEST(PriorityBands, EdgesAreInclusiveAndGapsAreNone) {
  const std::vector<std::pair<std::int32_t, priority_class>> rows = {
      {9999, priority_class::prod},  {9000, priority_class::prod},  {8999, priority_class::none},
      {10000, priority_class::none}, {7000, priority_class::mid},   {7999, priority_class::mid},
      {5000, priority_class::batch}, {5999, priority_class::batch}, {3000, priority_class::free},
      {3999, priority_class::free},  {2999, priority_class::none},  {0, priority_class::none},
      {-1, priority_class::none},
  };
  for (auto [v, want] : rows) EXPECT_EQ(get_priority_class_by_priority(v), want) << v;
  EXPECT_EQ(get_priority_class_by_priority(std::nullopt), priority_class::none);
}

TEST(PriorityClassNames, RoundTrip) {
  for (auto p : {priority_class::prod, priority_class::mid, priority_class::batch,
                 priority_class::free, priority_class::none})
    EXPECT_EQ(get_pod_priority_class_by_name(to_string(p)), p);
  EXPECT_EQ(get_pod_priority_class_by_name("Koord-Prod"), priority_class::none);
}

TEST(PriorityClassWithQoS, MapsEveryQoS) {
  EXPECT_EQ(get_pod_priority_class_with_qos(qos_class::system), priority_class::prod);
  EXPECT_EQ(get_pod_priority_class_with_qos(qos_class::lse), priority_class::prod);
  EXPECT_EQ(get_pod_priority_class_with_qos(qos_class::lsr), priority_class::prod);
  EXPECT_EQ(get_pod_priority_class_with_qos(qos_class::ls), priority_class::prod);
  EXPECT_EQ(get_pod_priority_class_with_qos(qos_class::be), priority_class::batch);
  EXPECT_EQ(get_pod_priority_class_with_qos(qos_class::none), priority_class::none);
}

// GetPodSubPriority: strconv.ParseInt(s, 0, 32).
TEST(GetPodSubPriority, ParsesWithBaseAutoDetection) {
  const std::string key(names::label_priority);
  const std::vector<std::pair<std::string, std::int32_t>> ok_rows = {
      {"1111", 1111},
      {"0x10", 16},
      {"0X1f", 31},
      {"010", 8},
      {"0o17", 15},
      {"0b101", 5},
      {"-5", -5},
      {"+7", 7},
      {"0", 0},
      {"1_000", 1000},
      {"0x_1F", 31},
      {"0_7", 7},
      {"2147483647", 2147483647},
      {"-2147483648", -2147483647 - 1},
  };
  for (const auto& [s, want] : ok_rows) {
    auto r = get_pod_sub_priority({{key, s}});
    ASSERT_TRUE(r.has_value()) << s << ": " << r.error().describe();
    EXPECT_EQ(*r, want) << s;
  }
  EXPECT_EQ(get_pod_sub_priority({}).value(), 0) << "missing label";
  EXPECT_EQ(get_pod_sub_priority({{key, ""}}).value(), 0) << "empty label";
  for (const char* s : {"abc", "08", "0x", "1__0", "_1", "1_", "0b2", "12a", "-", "1.5", " 1"}) {
    auto r = get_pod_sub_priority({{key, s}});
    ASSERT_FALSE(r.has_value()) << s;
    EXPECT_NE(r.error().message.find("invalid syntax"), std::string::npos)
        << s << ": " << r.error().message;
    EXPECT_EQ(r.error().where, "labels.koordinator.sh/priority");
  }
  for (const char* s : {"2147483648", "-2147483649", "0xFFFFFFFF", "99999999999999999999x"}) {
    auto r = get_pod_sub_priority({{key, s}});
    ASSERT_FALSE(r.has_value()) << s;
    EXPECT_NE(r.error().message.find("value out of range"), std::string::npos)
        << s << ": " << r.error().message;
  }
}

}  // namespace
}  // namespace colony::admission
