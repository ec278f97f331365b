// koordlet_component's resctrl groups (RdtResctrl): a CgroupUpdated per group (resctrl/LSR,
// resctrl/LS, resctrl/BE) with its schemata and, for an enabled class, its pods' uids, emitted when
// it changes; resctrlQOS parsed from the NodeSLO with the field named on error.
#include <map>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "actors/koordlet/actor/koordlet_component.hpp"
#include "tests/actors/slo_controller_actor/event_log.hpp"
#include "tests/support/component_feed.hpp"
#include "tests/support/resources.hpp"

namespace colony::koordlet_actor {
namespace {

using namespace colony::testing;
using messages::to_string_view;
using settings_map = std::map<std::string, std::string>;

// target -> settings of every CgroupUpdated in out (all entity Node).
std::map<std::string, settings_map> resctrl_updates(const std::vector<messages::byte_buffer>& out) {
  std::map<std::string, settings_map> r;
  for (const auto& b : out) {
    const auto& env = decoded(b);
    if (env.payload_type() != wire::Payload::CgroupUpdated) continue;
    const auto& g = *env.payload_as_CgroupUpdated();
    const std::string target(to_string_view(g.target()));
    if (target.rfind("resctrl/", 0) != 0) continue;
    EXPECT_EQ(env.entity_kind(), wire::EntityKind::Node);
    auto& s = r[target];
    for (const auto* kv : *g.settings())
      s[std::string(to_string_view(kv->key()))] = std::string(to_string_view(kv->value()));
  }
  return r;
}

void node_slo(event_log& log, std::int64_t t, std::string_view spec) {
  auto& fbb = log.b.fbb();
  const auto s = fbb.CreateString(spec);
  log.append(t, wire::EntityKind::Node, "n1", wire::CreateNodeSLOUpdated(fbb, s), "slo-controller");
}

koordlet::resctrl_info two_sockets() {
  koordlet::resctrl_info i;
  i.l3 = true;
  i.cbm_mask = 0x7ff;
  i.l3_ids = {0, 1};
  i.mb = true;
  i.mb_ids = {0, 1};
  return i;
}

struct fixture {
  event_log log;
  explicit fixture() {
    log.node(0, "n1", cpu_mem(16000, 64 * gib), cpu_mem(16000, 64 * gib));
    log.mutated(1, "default/lsr", wire::QoSClass::LSR, wire::PriorityClass::Prod, 9500,
                cpu_mem(2000, gib), cpu_mem(2000, gib));
    log.mutated(2, "default/be", wire::QoSClass::BE, wire::PriorityClass::Batch, 5500, {});
    log.scheduled(3, "default/lsr", "n1", cpu_mem(2000, gib));
    log.scheduled(4, "default/be", "n1", {});
  }
};

TEST(KoordletResctrlComponent, GroupsFromTheNodeSloWrittenWhenTheyChange) {
  fixture f;
  koordlet_options o;
  o.node = "n1";
  o.resctrl_info = two_sockets();
  koordlet_component c(o);
  feed(c, f.log);
  auto from = f.log.records.size();
  f.log.metric(10000, "n1", 1000, gib, {});
  EXPECT_TRUE(resctrl_updates(feed(c, f.log, from)).empty()) << "every class disabled by default";

  node_slo(f.log, 10500,
           R"({"resourceQOSStrategy":{"beClass":{"resctrlQOS":{"enable":true,)"
           R"("catRangeStartPercent":10,"catRangeEndPercent":50,"mbaPercent":85}}}})");
  feed(c, f.log, f.log.records.size() - 1);
  ASSERT_TRUE(c.config_errors().empty()) << c.config_errors()[0].describe();
  EXPECT_EQ(c.resctrl_qos().lsr_class.cat_range_end_percent, 100) << "DefaultResctrlQOS";

  from = f.log.records.size();
  f.log.metric(11000, "n1", 1000, gib, {});
  EXPECT_EQ(
      resctrl_updates(feed(c, f.log, from)),
      (std::map<std::string, settings_map>{
          {"resctrl/LSR", {{"schemata", "L3:0=7ff;1=7ff\nMB:0=100;1=100"}}},
          {"resctrl/LS", {{"schemata", "L3:0=7ff;1=7ff\nMB:0=100;1=100"}}},
          {"resctrl/BE", {{"schemata", "L3:0=3c;1=3c\nMB:0=90;1=90"}, {"tasks", "default/be"}}},
      }))
      << "every group's schemata (as Koordinator), tasks for the enabled class only";

  from = f.log.records.size();
  f.log.metric(12000, "n1", 1000, gib, {});
  EXPECT_TRUE(resctrl_updates(feed(c, f.log, from)).empty()) << "unchanged: not written again";

  from = f.log.records.size();
  f.log.finished(12500, "default/be", "n1");
  f.log.metric(13000, "n1", 1000, gib, {});
  EXPECT_EQ(resctrl_updates(feed(c, f.log, from)),
            (std::map<std::string, settings_map>{
                {"resctrl/BE", {{"schemata", "L3:0=3c;1=3c\nMB:0=90;1=90"}, {"tasks", ""}}}}))
      << "the BE pod finished";
}

TEST(KoordletResctrlComponent, WithoutResctrlInfoOnlyTheEnabledGroupsTasksAreDecided) {
  fixture f;
  koordlet_options o;
  o.node = "n1";
  o.resctrl_qos.lsr_class.enable = true;
  koordlet_component c(o);  // no resctrl info: not mounted
  feed(c, f.log);
  const auto from = f.log.records.size();
  f.log.metric(10000, "n1", 1000, gib, {});
  EXPECT_EQ(resctrl_updates(feed(c, f.log, from)),
            (std::map<std::string, settings_map>{{"resctrl/LSR", {{"tasks", "default/lsr"}}}}));
}

TEST(KoordletResctrlComponent, TheGateOffDecidesNothing) {
  fixture f;
  koordlet_options o;
  o.node = "n1";
  o.resctrl_qos.be_class.enable = true;
  o.resctrl_info = two_sockets();
  o.gates.rdt_resctrl = false;
  koordlet_component c(o);
  feed(c, f.log);
  const auto from = f.log.records.size();
  f.log.metric(10000, "n1", 1000, gib, {});
  EXPECT_TRUE(resctrl_updates(feed(c, f.log, from)).empty());
}

TEST(KoordletResctrlComponent, AnEmptyCatRangeIsAConfigErrorNamingTheField) {
  fixture f;
  koordlet_options o;
  o.node = "n1";
  o.resctrl_qos.be_class = {true, 30, 30, 100};
  o.resctrl_info = two_sockets();
  koordlet_component c(o);
  feed(c, f.log);
  const auto from = f.log.records.size();
  f.log.metric(10000, "n1", 1000, gib, {});
  const auto u = resctrl_updates(feed(c, f.log, from));
  EXPECT_EQ(u.at("resctrl/BE"), (settings_map{{"tasks", "default/be"}}))
      << "no schemata, the tasks still";
  ASSERT_EQ(c.config_errors().size(), 1u);
  EXPECT_EQ(c.config_errors()[0].where,
            "NodeSLO.spec.resourceQOSStrategy.BE.resctrlQOS (catRangeStartPercent/"
            "catRangeEndPercent)");
}

TEST(KoordletResctrlComponent, ResctrlQosParseErrorsNameTheField) {
  const auto bad = slo_controller::parse_resource_qos_strategy(
      R"({"beClass":{"resctrlQOS":{"catRangeEndPercent":130}}})");
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().where.find("resourceQOSStrategy.beClass.resctrlQOS.catRangeEndPercent"),
            std::string::npos)
      << bad.error().describe();
  const auto ok = slo_controller::parse_resource_qos_strategy(
      R"({"lsClass":{"resctrlQOS":{"enable":true,"mbaPercent":50}}})");
  ASSERT_TRUE(ok) << ok.error().describe();
  const auto k = to_koordlet_resctrl(*ok);
  EXPECT_TRUE(k.ls_class.enable);
  EXPECT_EQ(k.ls_class.mba_percent, 50);
  EXPECT_EQ(k.be_class.cat_range_end_percent, 30);
}

}  // namespace
}  // namespace colony::koordlet_actor
