// host_application: host-application-config rendered into the NodeSLO's spec.hostApplications
// (pkg/slo-controller/nodeslo/resource_strategy.go getHostApplicationConfig and its Go test
// Test_getHostApplicationConfig), the validity rules with the offending field named, and the
// koordlet's reading of the spec (parse_node_slo_spec).
#include "actors/slo_controller/host_application.hpp"

#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "actors/slo_controller/node_slo.hpp"

namespace colony::slo_controller {
namespace {

using json = nlohmann::json;

slo_controller_config config_of(const json& doc) {
  auto u = update(std::nullopt, json{{"host-application-config", doc.dump()}}.dump());
  EXPECT_FALSE(u.error.has_value()) << (u.error ? u.error->describe() : "");
  return u.in_force;
}

// Test_getHostApplicationConfig's two configs: testHostApp (a cluster app and one node entry)
// and testHostAppMultiNodes (two node entries, both matching the third case's node).
const json test_host_app = {
    {"applications", json::array({{{"name", "test-app-default"}}})},
    {"nodeConfigs",
     json::array({{{"nodeSelector", {{"matchLabels", {{"test-node-key", "test-node-value-A"}}}}},
                   {"applications", json::array({{{"name", "test-app-ls"}, {"qos", "LS"}}})}}})}};
const json test_host_app_multi_nodes = {
    {"applications", json::array({{{"name", "test-app-default"}}})},
    {"nodeConfigs",
     json::array({{{"nodeSelector", {{"matchLabels", {{"test-node-key-A", "test-node-value-A"}}}}},
                   {"applications", json::array({{{"name", "test-app-ls"}, {"qos", "LS"}}})}},
                  {{"nodeSelector", {{"matchLabels", {{"test-node-key-B", "test-node-value-B"}}}}},
                   {"applications", json::array({{{"name", "test-app-lsr"}, {"qos", "LSR"}}})}}})}};

TEST(HostApplication, GetHostApplicationConfigTable) {
  struct row {
    const char* name;  // Test_getHostApplicationConfig's case name
    json cfg;
    node_labels labels;
    json want;  // spec.hostApplications as rendered
  };
  const std::vector<row> rows{
      {"invalid node, use cluster config",
       test_host_app,
       {},
       json::array({{{"name", "test-app-default"}}})},
      {"use cluster config",
       test_host_app,
       {{"other", "x"}},
       json::array({{{"name", "test-app-default"}}})},
      {"use first matched node config",
       test_host_app_multi_nodes,
       {{"test-node-key-A", "test-node-value-A"}, {"test-node-key-B", "test-node-value-B"}},
       json::array({{{"name", "test-app-ls"}, {"qos", "LS"}}})},
      // Colony's own: the second entry when only it matches; a node entry replaces the cluster
      // list (nothing is merged).
      {"second node config",
       test_host_app_multi_nodes,
       {{"test-node-key-B", "test-node-value-B"}},
       json::array({{{"name", "test-app-lsr"}, {"qos", "LSR"}}})},
  };
  for (const auto& r : rows) {
    const node_slo_renderer renderer(config_of(r.cfg));
    const auto spec = json::parse(renderer.spec_json(r.labels));
    EXPECT_EQ(spec.at("hostApplications"), r.want) << r.name;
    // The typed spec says the same, and its JSON is the rendered bytes.
    const auto typed = renderer.spec(r.labels);
    EXPECT_EQ(node_slo_spec_json(typed), renderer.spec_json(r.labels)) << r.name;
    auto back = parse_node_slo_spec(renderer.spec_json(r.labels));
    ASSERT_TRUE(back) << back.error().describe();
    EXPECT_EQ(back->host_applications, typed.host_applications) << r.name;
  }
}

TEST(HostApplication, EveryFieldRendersAndAnEmptyListIsLeftOut) {
  const json cfg = {
      {"applications",
       json::array({{{"name", "nginx"},
                     {"priority", "koord-prod"},
                     {"qos", "LS"},
                     {"cgroupPath",
                      {{"base", "CgroupRoot"}, {"parentDir", "host"}, {"relativePath", "nginx"}}},
                     {"strategy", json::object()}},
                    {{"name", "logagent"},
                     {"qos", "BE"},
                     {"cgroupPath", {{"base", "KubepodsBesteffort"}, {"relativePath", "log"}}}}})},
      {"nodeConfigs", json::array({{{"name", "bare"},
                                    {"nodeSelector", {{"matchLabels", {{"pool", "bare"}}}}},
                                    {"applications", json::array()}}})}};
  const node_slo_renderer r(config_of(cfg));
  const auto spec = json::parse(r.spec_json({}));
  const json want = json::array(
      {{{"name", "nginx"},
        {"priority", "koord-prod"},
        {"qos", "LS"},
        {"cgroupPath", {{"base", "CgroupRoot"}, {"parentDir", "host"}, {"relativePath", "nginx"}}}},
       {{"name", "logagent"},
        {"qos", "BE"},
        {"cgroupPath", {{"base", "KubepodsBesteffort"}, {"relativePath", "log"}}}}});
  EXPECT_EQ(spec.at("hostApplications"), want);
  // A matching entry with no applications: none (omitempty leaves the field out).
  EXPECT_FALSE(json::parse(r.spec_json({{"pool", "bare"}})).contains("hostApplications"));
  // No config: no field, the bytes of before.
  EXPECT_EQ(node_slo_renderer().spec_json({}).find("hostApplications"), std::string::npos);
  // A change of the key re-renders nodes.
  EXPECT_FALSE(same_node_slo_keys(slo_controller_config{}, config_of(cfg)));
}

TEST(HostApplication, InvalidEntriesAreNamedByField) {
  struct row {
    const char* name;
    json cfg;
    std::string where;  // error.where
  };
  const std::vector<row> rows{
      {"no name",
       {{"applications", json::array({{{"qos", "LS"}}})}},
       "host-application-config.applications[0].name"},
      {"unknown qos",
       {{"applications", json::array({{{"name", "a"}, {"qos", "GOLD"}}})}},
       "host-application-config.applications[0].qos"},
      {"unknown priority",
       {{"applications", json::array({{{"name", "a"}}, {{"name", "b"}, {"priority", "high"}}})}},
       "host-application-config.applications[1].priority"},
      {"unknown base",
       {{"applications",
         json::array({{{"name", "a"}, {"cgroupPath", {{"base", "Kubepods-Burstable"}}}}})}},
       "host-application-config.applications[0].cgroupPath.base"},
      {"relativePath climbs out",
       {{"applications",
         json::array({{{"name", "a"}, {"cgroupPath", {{"relativePath", "../../etc"}}}}})}},
       "host-application-config.applications[0].cgroupPath.relativePath"},
      {"parentDir wrong type",
       {{"applications", json::array({{{"name", "a"}, {"cgroupPath", {{"parentDir", 3}}}}})}},
       "host-application-config.applications[0].cgroupPath.parentDir"},
      {"duplicate name",
       {{"applications", json::array({{{"name", "a"}}, {{"name", "a"}, {"qos", "BE"}}})}},
       "host-application-config.applications[1].name"},
      {"bad node entry",
       {{"nodeConfigs",
         json::array({{{"nodeSelector", {{"matchLabels", {{"a", "b"}}}}},
                       {"applications", json::array({{{"name", "x"}, {"qos", "ls"}}})}}})}},
       "host-application-config.nodeConfigs[0].applications[0].qos"},
  };
  for (const auto& r : rows) {
    auto u = update(std::nullopt, json{{"host-application-config", r.cfg.dump()}}.dump());
    ASSERT_TRUE(u.error.has_value()) << r.name;
    EXPECT_EQ(u.rejected_keys, std::vector<std::string>{"host-application-config"}) << r.name;
    EXPECT_NE(u.error->describe().find(r.where), std::string::npos)
        << r.name << ": " << u.error->describe();
    // The same rule where the koordlet reads a NodeSLO.
    if (r.cfg.contains("applications")) {
      auto s = parse_node_slo_spec(json{{"hostApplications", r.cfg["applications"]}}.dump());
      ASSERT_FALSE(s) << r.name;
      const std::string want =
          "NodeSLO.spec.hostApplications" +
          r.where.substr(std::string("host-application-config.applications").size());
      EXPECT_NE(s.error().describe().find(want), std::string::npos)
          << r.name << ": " << s.error().describe();
    }
  }
  // A rejected key keeps the one in force (here: none yet, so no applications).
  auto u =
      update(std::nullopt, json{{"host-application-config",
                                 json{{"applications", json::array({{{"qos", "LS"}}})}}.dump()}}
                               .dump());
  EXPECT_EQ(node_slo_renderer(u.in_force).spec({}).host_applications.size(), 0u);
}

}  // namespace
}  // namespace colony::slo_controller
