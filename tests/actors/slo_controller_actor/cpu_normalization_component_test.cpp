// slo_controller_component with the cpunormalization and resourceamplification plugins on: the
// node annotations node.koordinator.sh/cpu-normalization-ratio and
// node.koordinator.sh/resource-amplification-ratio, written as the metadata patch term
// "meta.annotationsPatch" of NodeBatchResourceUpdated (Koordinator's
// pkg/slo-controller/noderesource/plugins/cpunormalization and resourceamplification, through
// resource_calculator.go updateNodeResource), fed through the component.
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "actors/slo_controller/actor/slo_controller_component.hpp"
#include "messages/terms.hpp"
#include "tests/actors/slo_controller_actor/event_log.hpp"
#include "tests/support/component_feed.hpp"

namespace colony::slo_controller_actor {
namespace {

using namespace colony::testing;
using messages::byte_buffer;
using messages::to_string_view;
using json = nlohmann::json;

constexpr std::string_view basic_ht_turbo =
    R"({"cpuModel":"Intel Xeon","hyperThreadEnabled":true,"turboEnabled":true})";
constexpr std::string_view norm_key = "node.koordinator.sh/cpu-normalization-ratio";
constexpr std::string_view amp_key = "node.koordinator.sh/resource-amplification-ratio";

std::string configmap(double ht_turbo_ratio, bool colocation = true,
                      std::string_view amplification = "") {
  json cm;
  cm["colocation-config"] = json{
      {"enable", colocation},
      {"cpuReclaimThresholdPercent", 60},
      {"memoryReclaimThresholdPercent",
       65}}.dump();
  cm["cpu-normalization-config"] =
      json{{"enable", true},
           {"ratioModel",
            {{"Intel Xeon",
              {{"baseRatio", 1.5}, {"hyperThreadTurboEnabledRatio", ht_turbo_ratio}}}}}}
          .dump();
  if (!amplification.empty()) cm["resource-amplification-config"] = std::string(amplification);
  return cm.dump();
}

slo_controller_options options(std::string cm) {
  slo_controller_options o;
  o.configmap_json = std::move(cm);
  o.cpu_normalization = true;
  return o;
}

// The pointers point into `out`: a temporary would leave them dangling.
std::vector<const wire::NodeBatchResourceUpdated*> updates(std::vector<byte_buffer>&&) = delete;
std::vector<const wire::NodeBatchResourceUpdated*> updates(const std::vector<byte_buffer>& out) {
  std::vector<const wire::NodeBatchResourceUpdated*> u;
  for (const auto& b : out)
    if (decoded(b).payload_type() == wire::Payload::NodeBatchResourceUpdated)
      u.push_back(decoded(b).payload_as_NodeBatchResourceUpdated());
  return u;
}

std::string text_term(const wire::NodeBatchResourceUpdated& u, std::string_view name) {
  if (u.terms() != nullptr)
    for (const auto* t : *u.terms())
      if (messages::term_named(*t, name)) return std::string(to_string_view(t->text()));
  return "";
}

std::int64_t value_term(const wire::NodeBatchResourceUpdated& u, std::string_view name) {
  if (u.terms() != nullptr)
    for (const auto* t : *u.terms())
      if (messages::term_name(*t) == name) return t->value();
  return 0;
}

// plugin.go Calculate "get ratio correctly" (HT and turbo on) through the component: the first
// reconcile writes the ratio and the amplification ratio derived from it; batch-cpu uses the
// ratio from the next round on (the batch plugin reads the node's annotation).
TEST(SloControllerCpuNormalization, RegistrationWritesTheRatioOfTheModel) {
  slo_controller_component c(options(configmap(1.1)));
  ASSERT_TRUE(c.config_errors().empty());
  event_log log;
  log.annotated_node(0, "n1", cpu_mem(32000, 128 * gib), cpu_mem(32000, 128 * gib), {},
                     {{"node.koordinator.sh/cpu-basic-info", std::string(basic_ht_turbo)}});
  auto out = feed(c, log);
  auto u = updates(out);
  ASSERT_EQ(u.size(), 1u);
  const auto patch = json::parse(text_term(*u[0], "meta.annotationsPatch"));
  EXPECT_EQ(patch,
            (json{{std::string(norm_key), "1.10"}, {std::string(amp_key), R"({"cpu":1.10})"}}));
  EXPECT_EQ(value_term(*u[0], "prepare.cpuNormalizationRatioPermille"), 0);
  for (auto& b : out) (void)log.append_bytes(std::move(b));

  // The next reconcile: no patch (NeedSyncMeta "ratios are close" / "ratio remains unchanged"),
  // and batch-cpu is normalized by 1.10.
  const auto m = log.metric(60000, "n1", 6000, 40 * gib, {}, cpu_mem(1000, 4 * gib));
  out = feed(c, log, m);
  u = updates(out);
  ASSERT_EQ(u.size(), 1u);
  EXPECT_EQ(text_term(*u[0], "meta.annotationsPatch"), "");
  EXPECT_EQ(value_term(*u[0], "prepare.cpuNormalizationRatioPermille"), 1100);
  // The usage formula's result (32000 * 60% - system 1000 = 18200), x 1.10, rounded up.
  const std::int64_t batch = value_term(*u[0], "batch-cpu.result");
  EXPECT_EQ(batch, 32000 * 60 / 100 - 1000);
  EXPECT_EQ(u[0]->batch_cpu_milli(), (batch * 1100 + 999) / 1000);
}

// A ratioModel change reconciles every node (configmap_event_handler.go enqueueAllNodes); the
// status is not due, so the record is written for the patch alone.
TEST(SloControllerCpuNormalization, ConfigChangeWritesThePatchOnEveryNode) {
  slo_controller_component c(options(configmap(1.1)));
  event_log log;
  for (const char* n : {"n1", "n2"})
    log.annotated_node(0, n, cpu_mem(32000, 128 * gib), cpu_mem(32000, 128 * gib), {},
                       {{"node.koordinator.sh/cpu-basic-info", std::string(basic_ht_turbo)}});
  auto out = feed(c, log);
  ASSERT_EQ(updates(out).size(), 2u);
  for (auto& b : out) (void)log.append_bytes(std::move(b));
  const auto from = log.records.size();
  log.config(1000, config_kind_slo_controller, configmap(1.2));
  out = feed(c, log, from);
  const auto u = updates(out);
  ASSERT_EQ(u.size(), 2u);
  for (const auto* x : u) {
    EXPECT_EQ(json::parse(text_term(*x, "meta.annotationsPatch")),
              (json{{std::string(norm_key), "1.20"}, {std::string(amp_key), R"({"cpu":1.20})"}}));
    EXPECT_EQ(text_term(*x, "sync.reason"),
              "meta: CPUNormalization: ratio is different; ResourceAmplification: ratio changed");
  }
  // 1.205 -> "1.21": within NormalizationRatioDiffEpsilon (0.01) the cpunormalization plugin
  // needs no sync, but the amplification ratio's text changed, and the patch (client.MergeFrom
  // of the prepared node) carries every changed annotation, the normalization ratio included.
  for (auto& b : out) (void)log.append_bytes(std::move(b));
  const auto from2 = log.records.size();
  log.config(2000, config_kind_slo_controller, configmap(1.205));
  out = feed(c, log, from2);
  const auto u2 = updates(out);
  ASSERT_EQ(u2.size(), 2u);
  EXPECT_EQ(text_term(*u2[0], "sync.reason"), "meta: ResourceAmplification: ratio changed");
  EXPECT_EQ(json::parse(text_term(*u2[0], "meta.annotationsPatch")),
            (json{{std::string(norm_key), "1.21"}, {std::string(amp_key), R"({"cpu":1.21})"}}));
  // 1.214 -> "1.21": the same texts, nothing is written.
  for (auto& b : out) (void)log.append_bytes(std::move(b));
  const auto from3 = log.records.size();
  log.config(3000, config_kind_slo_controller, configmap(1.214));
  const auto out3 = feed(c, log, from3);
  EXPECT_TRUE(updates(out3).empty());
}

// The node label overrides the strategy ("strategy enabled but node disabled"): "1.00", and no
// amplification ratio (the product is not above 1), so the one the node had is removed.
TEST(SloControllerCpuNormalization, NodeLabelDisablesAndTheAmplificationRatioIsRemoved) {
  slo_controller_component c(options(configmap(1.1)));
  event_log log;
  log.annotated_node(0, "n1", cpu_mem(32000, 128 * gib), cpu_mem(32000, 128 * gib),
                     {{"node.koordinator.sh/cpu-normalization-enabled", "false"}},
                     {{"node.koordinator.sh/cpu-basic-info", std::string(basic_ht_turbo)},
                      {std::string(norm_key), "1.10"},
                      {std::string(amp_key), R"({"cpu":1.10})"}});
  const auto out = feed(c, log);
  const auto u = updates(out);
  ASSERT_EQ(u.size(), 1u);
  EXPECT_EQ(json::parse(text_term(*u[0], "meta.annotationsPatch")),
            (json{{std::string(norm_key), "1.00"}, {std::string(amp_key), nullptr}}));
}

// resource-amplification-config multiplies: cpu 1.5 x normalization 1.2 = 1.80
// (resourceamplification TestPluginCalculate "both cpu normalization ratio and amplification
// ratio").
TEST(SloControllerCpuNormalization, AmplificationConfigMultipliesTheNormalizationRatio) {
  slo_controller_component c(options(configmap(
      1.2, true, R"({"enable":true,"resourceAmplificationRatio":{"cpu":1.5,"memory":2.5}})")));
  ASSERT_TRUE(c.config_errors().empty());
  event_log log;
  log.annotated_node(0, "n1", cpu_mem(32000, 128 * gib), cpu_mem(32000, 128 * gib), {},
                     {{"node.koordinator.sh/cpu-basic-info", std::string(basic_ht_turbo)}});
  const auto out = feed(c, log);
  const auto u = updates(out);
  ASSERT_EQ(u.size(), 1u);
  EXPECT_EQ(json::parse(text_term(*u[0], "meta.annotationsPatch")),
            (json{{std::string(norm_key), "1.20"},
                  {std::string(amp_key), R"({"cpu":1.80,"memory":2.50})"}}));
}

// Co-location disabled: the reset path runs no Calculate: the normalization ratio stays, the
// amplification ratio is removed (resourceamplification Prepare deletes it).
TEST(SloControllerCpuNormalization, ColocationDisabledRemovesOnlyTheAmplificationRatio) {
  slo_controller_component c(options(configmap(1.1, false)));
  event_log log;
  log.annotated_node(0, "n1", cpu_mem(32000, 128 * gib), cpu_mem(32000, 128 * gib), {},
                     {{"node.koordinator.sh/cpu-basic-info", std::string(basic_ht_turbo)},
                      {std::string(norm_key), "1.10"},
                      {std::string(amp_key), R"({"cpu":1.10})"}});
  const auto out = feed(c, log);
  const auto u = updates(out);
  ASSERT_EQ(u.size(), 1u);
  EXPECT_EQ(json::parse(text_term(*u[0], "meta.annotationsPatch")),
            (json{{std::string(amp_key), nullptr}}));
}

// Missing CPU basic info: Calculate fails, nothing is written for the ratio (the node keeps
// none); the amplification ratio stays absent.
TEST(SloControllerCpuNormalization, NoBasicInfoNoRatio) {
  slo_controller_component c(options(configmap(1.1)));
  event_log log;
  log.node(0, "n1", cpu_mem(32000, 128 * gib), cpu_mem(32000, 128 * gib));
  const auto out = feed(c, log);
  const auto u = updates(out);
  ASSERT_EQ(u.size(), 1u);
  EXPECT_EQ(text_term(*u[0], "meta.annotationsPatch"), "");
}

// A restart that replays the log (its own records included) knows the annotations it wrote:
// the next reconcile writes no patch, and the same events give the same bytes.
TEST(SloControllerCpuNormalization, ReplayLearnsThePatchAndIsDeterministic) {
  event_log log;
  log.annotated_node(0, "n1", cpu_mem(32000, 128 * gib), cpu_mem(32000, 128 * gib), {},
                     {{"node.koordinator.sh/cpu-basic-info", std::string(basic_ht_turbo)}});
  slo_controller_component a(options(configmap(1.1)));
  auto out = feed(a, log);
  for (auto& b : out) (void)log.append_bytes(std::move(b));
  const auto m = log.metric(60000, "n1", 6000, 40 * gib, {}, cpu_mem(1000, 4 * gib));
  const auto a2 = feed(a, log, m);

  slo_controller_component b(options(configmap(1.1)));
  (void)feed(b, log, 0, m);  // replay up to the metric
  const auto b2 = feed(b, log, m);
  ASSERT_EQ(a2.size(), b2.size());
  for (std::size_t i = 0; i < a2.size(); ++i) EXPECT_EQ(a2[i], b2[i]);
  const auto u = updates(b2);
  ASSERT_EQ(u.size(), 1u);
  EXPECT_EQ(text_term(*u[0], "meta.annotationsPatch"), "");
  EXPECT_EQ(value_term(*u[0], "prepare.cpuNormalizationRatioPermille"), 1100);
}

// Plugins off (the default): no patch term, records as before.
TEST(SloControllerCpuNormalization, OffByDefault) {
  slo_controller_options o;
  o.configmap_json = configmap(1.1);
  slo_controller_component c(o);
  event_log log;
  log.annotated_node(0, "n1", cpu_mem(32000, 128 * gib), cpu_mem(32000, 128 * gib), {},
                     {{"node.koordinator.sh/cpu-basic-info", std::string(basic_ht_turbo)}});
  const auto out = feed(c, log);
  const auto u = updates(out);
  ASSERT_EQ(u.size(), 1u);
  EXPECT_EQ(text_term(*u[0], "meta.annotationsPatch"), "");
}

}  // namespace
}  // namespace colony::slo_controller_actor
