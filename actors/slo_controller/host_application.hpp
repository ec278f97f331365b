// host_application.hpp: NodeSLO spec.hostApplications (apis/slo/v1alpha1/host_application.go),
// and the host-application-config key rendered per node (pkg/slo-controller/nodeslo/
// resource_strategy.go getHostApplicationConfig).
//
// Rendering: the applications of the first nodeConfigs entry whose nodeSelector matches the
// node's labels (an invalid selector is skipped), else the cluster's `applications`. A node entry
// replaces the cluster list; nothing is merged (calculateHostAppConfigMerged keeps the ConfigMap's
// document as it is).
//
// Validity (Colony's, stricter than Koordinator's json.Unmarshal, which takes any string): name is
// required and unique in its list; priority one of koord-prod, koord-mid, koord-batch,
// koord-free (or empty); qos one of SYSTEM, LSE, LSR, LS, BE (or empty); cgroupPath.base one of
// CgroupRoot, Kubepods, KubepodsBurstable, KubepodsBesteffort (or empty: CgroupRoot); no ".."
// component in name, parentDir or relativePath (the koordlet joins them under the cgroup root, and
// must not leave it). An error names the field, e.g. "...applications[1].cgroupPath.base".
// Pure; no I/O. Thread-safety: none needed.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "actors/slo_controller/colocation_strategy.hpp"
#include "messages/result.hpp"

namespace colony::slo_controller {

inline constexpr std::string_view node_slo_host_applications_field = "hostApplications";

// CgroupPath (host_application.go): base names the directory the path starts at.
inline constexpr std::string_view cgroup_base_root = "CgroupRoot";
inline constexpr std::string_view cgroup_base_kubepods = "Kubepods";
inline constexpr std::string_view cgroup_base_kube_burstable = "KubepodsBurstable";
inline constexpr std::string_view cgroup_base_kube_besteffort = "KubepodsBesteffort";

struct host_app_cgroup_path {
  std::string base;  // "" = CgroupRoot
  std::string parent_dir;
  std::string relative_path;
  bool operator==(const host_app_cgroup_path&) const = default;
};

// HostApplicationSpec; strings as Koordinator spells them ("" = unset). `strategy` is an empty
// struct in v1.4 and is not kept.
struct host_application_spec {
  std::string name;
  std::string priority;  // koord-prod, koord-mid, koord-batch, koord-free
  std::string qos;       // SYSTEM, LSE, LSR, LS, BE
  std::optional<host_app_cgroup_path> cgroup_path;
  bool operator==(const host_application_spec&) const = default;
};

// host-application-config (HostApplicationCfg), parsed.
struct host_application_config {
  std::vector<host_application_spec> applications;
  struct node_config {
    std::string name;
    std::optional<label_selector> node_selector;  // nullopt: absent or invalid, never matches
    std::vector<host_application_spec> applications;
    bool operator==(const node_config&) const = default;
  };
  std::vector<node_config> node_configs;
  bool operator==(const host_application_config&) const = default;

  // getHostApplicationConfig: the list for a node with these labels.
  [[nodiscard]] const std::vector<host_application_spec>& for_node(const node_labels& labels) const;
};

// The key's document ("" = no host applications). Errors name the field under
// "host-application-config".
[[nodiscard]] result<host_application_config> parse_host_application_document(
    std::string_view text);

// A hostApplications list as JSON (an array); errors name the field under `where`
// ("NodeSLO.spec.hostApplications[0].qos").
[[nodiscard]] result<std::vector<host_application_spec>> parse_host_applications(
    std::string_view json_array, std::string_view where);

// The list as canonical JSON (keys sorted, Go's omitempty: empty strings left out, cgroupPath
// written when set), "[]" when empty.
[[nodiscard]] std::string host_applications_json(const std::vector<host_application_spec>& apps);

}  // namespace colony::slo_controller
