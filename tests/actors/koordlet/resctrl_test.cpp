// Golden cases of resctrl QoS (L3 CAT masks, MBA values, schemata, groups) from Koordinator's
// tests: pkg/koordlet/qosmanager/plugins/resctrl/resctrl_reconcile_test.go.
#include <gtest/gtest.h>

#include "actors/koordlet/resctrl.hpp"
#include "tests/actors/koordlet/koordlet_test_util.hpp"

namespace colony::koordlet {
namespace {

// Test_calculateCatL3Schemata (system.CalculateCatL3MaskValue), every case.
TEST(KoordletResctrl, CatL3MaskTable) {
  struct row {
    const char* name;
    std::uint64_t cbm;
    std::int64_t start, end;
    std::optional<std::uint64_t> want;  // nullopt: an error
  };
  const row rows[] = {
      {"do not panic but throw an error for empty input", 0, 0, 0, std::nullopt},
      {"cbm value is invalid", 0x101, 0, 100, std::nullopt},
      {"cbm value is invalid 1", 4, 0, 100, std::nullopt},
      {"percent value is invalid", 0xff, -10, 100, std::nullopt},
      {"percent value is invalid 1", 0xff, 30, 30, std::nullopt},
      {"calculate l3 schemata correctly", 0xff, 0, 100, 0xff},
      {"calculate l3 schemata correctly 1", 0x3ff, 10, 80, 0xfe},
      {"calculate l3 schemata correctly 2", 0x7ff, 10, 50, 0x3c},
      {"calculate l3 schemata correctly 3", 0x3ff, 0, 30, 0x7},
      {"calculate l3 schemata correctly 4", 0x3ff, 10, 85, 0x1fe},
      // The comment of CalculateCatL3MaskValue: cbm 0x7ff, 0 %-30 % -> 0xf (BE's default range).
      {"CalculateCatL3MaskValue comment: BE default on 11 ways", 0x7ff, 0, 30, 0xf},
  };
  for (const auto& r : rows) {
    SCOPED_TRACE(r.name);
    const auto got = cat_l3_mask(r.cbm, r.start, r.end);
    ASSERT_EQ(got.has_value(), r.want.has_value());
    if (r.want)
      EXPECT_EQ(*got, *r.want);
    else
      EXPECT_EQ(got.error().code, errc::invalid_input);
  }
}

// Test_calculateMbaPercentForGroup (Intel and AMD), every case.
TEST(KoordletResctrl, MbaPercentTable) {
  resctrl_info intel;
  intel.mb = true;
  resctrl_info amd = intel;
  amd.amd = true;
  struct row {
    const char* name;
    std::int64_t percent;
    const resctrl_info* info;
    std::optional<std::int64_t> want;  // nullopt: MB left alone ("")
  };
  const row rows[] = {
      {"mbPercent value is invalid,not between (0,100] (0)", 0, &intel, std::nullopt},
      {"mbPercent value is invalid,not between (0,100] (101)", 101, &intel, std::nullopt},
      {"mbPercent value is invalid, not multiple of 10", 85, &intel, 90},
      {"mbPercent value is valid on intel", 80, &intel, 80},
      {"mbPercent value is valid on amd", 80, &amd, static_cast<std::int64_t>(0.8 * 160)},
      {"mbPercent value is unlimited on amd", 100, &amd, 2048},
  };
  for (const auto& r : rows) {
    SCOPED_TRACE(r.name);
    EXPECT_EQ(mba_value(r.percent, *r.info), r.want);
  }
  // The machine's info/MB: a coarser granularity and a floor (Colony: the kernel refuses less).
  resctrl_info coarse = intel;
  coarse.bandwidth_gran = 20;
  coarse.min_bandwidth = 40;
  EXPECT_EQ(mba_value(50, coarse), 60);
  EXPECT_EQ(mba_value(10, coarse), 40);
}

resctrl_info two_sockets() {
  resctrl_info i;
  i.l3 = true;
  i.cbm_mask = 0x7ff;
  i.l3_ids = {0, 1};
  i.mb = true;
  i.mb_ids = {0, 1};
  return i;
}

// NewResctrlL3SchemataResource / NewResctrlMbSchemataResource: one line per resource over the
// root's cache ids (L3String: hex masks; MBString: decimal percents).
TEST(KoordletResctrl, GroupSchemataOverTheMachinesDomains) {
  const resource_qos_resctrl_strategy defaults;
  const auto info = two_sockets();
  EXPECT_EQ(group_schemata("LSR", defaults.lsr_class, info).value(),
            "L3:0=7ff;1=7ff\nMB:0=100;1=100");
  EXPECT_EQ(group_schemata("BE", defaults.be_class, info).value(), "L3:0=f;1=f\nMB:0=100;1=100");
  resctrl_qos be{true, 10, 50, 85};
  EXPECT_EQ(group_schemata("BE", be, info).value(), "L3:0=3c;1=3c\nMB:0=90;1=90");
  be.mba_percent = 0;  // MB left alone, as Koordinator does
  EXPECT_EQ(group_schemata("BE", be, info).value(), "L3:0=3c;1=3c");
  resctrl_info l3_only = info;
  l3_only.mb = false;
  EXPECT_EQ(group_schemata("LS", defaults.ls_class, l3_only).value(), "L3:0=7ff;1=7ff");
  resctrl_info mb_only = info;
  mb_only.l3 = false;
  EXPECT_EQ(group_schemata("LS", defaults.ls_class, mb_only).value(), "MB:0=100;1=100");
  EXPECT_EQ(group_schemata("LS", defaults.ls_class, resctrl_info{}).value(), "");
}

TEST(KoordletResctrl, RefusedRangesNameTheGroupsField) {
  auto info = two_sockets();
  const auto bad = group_schemata("BE", resctrl_qos{true, 30, 30, 100}, info);
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().where, "BE.resctrlQOS (catRangeStartPercent/catRangeEndPercent)");
  info.min_cbm_bits = 2;  // 0 %-5 % of 11 ways is one way
  const auto narrow = group_schemata("BE", resctrl_qos{true, 0, 5, 100}, info);
  ASSERT_FALSE(narrow);
  EXPECT_NE(narrow.error().message.find("min_cbm_bits 2"), std::string::npos);
  info.cbm_mask = 0x101;
  const auto cbm = group_schemata("LS", resctrl_qos{}, info);
  ASSERT_FALSE(cbm);
  EXPECT_EQ(cbm.error().where, "LS.resctrlQOS (cbm_mask)");
}

// getPodResctrlGroup over GetPodQoSClassWithDefault.
TEST(KoordletResctrl, PodGroupByQoS) {
  using test::make_pod;
  EXPECT_EQ(resctrl_group_of(make_pod("a", qos_class::lse)), "LSR");
  EXPECT_EQ(resctrl_group_of(make_pod("a", qos_class::lsr)), "LSR");
  EXPECT_EQ(resctrl_group_of(make_pod("a", qos_class::ls)), "LS");
  EXPECT_EQ(resctrl_group_of(make_pod("a", qos_class::be)), "BE");
  EXPECT_EQ(resctrl_group_of(make_pod("a", qos_class::system)), "");
  auto none = make_pod("a", qos_class::none);
  none.kube_qos_class = kube_qos::best_effort;
  EXPECT_EQ(resctrl_group_of(none), "BE");
  none.kube_qos_class = kube_qos::burstable;
  EXPECT_EQ(resctrl_group_of(none), "LS");
  none.kube_qos_class = kube_qos::guaranteed;  // GetPodQoSClassWithKubeQoS: Guaranteed -> LSR
  EXPECT_EQ(resctrl_group_of(none), "LSR");
}

// ParseResctrlSchemataMap's example, and the kernel's zero-padded masks read back.
TEST(KoordletResctrl, SchemataParsedAndComparedAsNumbers) {
  const auto s = parse_schemata("L3:0=fff;1=fff\nMB:0=100;1=100\n", "schemata");
  ASSERT_TRUE(s);
  ASSERT_EQ(s->size(), 2U);
  EXPECT_EQ((*s)[0].resource, "L3");
  EXPECT_EQ((*s)[0].domains,
            (std::vector<std::pair<std::int32_t, std::string>>{{0, "fff"}, {1, "fff"}}));
  EXPECT_EQ((*s)[1].resource, "MB");
  EXPECT_TRUE(parse_schemata("    L3:0=f;\n", "x"));
  EXPECT_TRUE(same_schemata_value("L3", "f", "00f"));
  EXPECT_FALSE(same_schemata_value("L3", "f", "1f"));
  EXPECT_TRUE(same_schemata_value("MB", "90", "90"));
  const auto bad = parse_schemata("L3:0fff", "/r/BE/schemata");
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().where, "/r/BE/schemata");
}

}  // namespace
}  // namespace colony::koordlet
