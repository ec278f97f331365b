// Private to the translation (bridges/kubernetes/translate*.cpp): reading Kubernetes JSON
// defensively (every accessor checks the type first, so nlohmann never throws on a well-formed
// json value), resource lists in Colony's units, Resources tables with extended resources,
// envelope headers, RFC 3339 times and Go durations, and the per-kind translators that
// translate.cpp dispatches to. Not installed; include only from translate*.cpp.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "bridges/kubernetes/translate.hpp"
#include "messages/codec.hpp"
#include "messages/resources.hpp"
#include "messages/result.hpp"

namespace colony::kube::translate_internal {

using json = nlohmann::json;
using kv_list = std::vector<std::pair<std::string, std::string>>;

enum class op : std::uint8_t { added, modified, deleted };

// How errors and envelope keys name an object: "Pod default/web-1", "Node n1".
struct object_ref {
  object_kind kind = object_kind::node;
  std::string ns;    // empty for cluster-scoped objects (and ElasticQuota, see quota file)
  std::string name;  // "<unnamed>" until metadata.name has been read
  [[nodiscard]] std::string key() const { return ns.empty() ? name : ns + "/" + name; }
  // "<Kind> <key>: <field>", or "<Kind> <key>" for an empty field.
  [[nodiscard]] std::string where(std::string_view field) const;
};

[[nodiscard]] tl::unexpected<error> invalid(const object_ref& ref, std::string_view field,
                                            std::string message);
[[nodiscard]] tl::unexpected<error> not_translated(const object_ref& ref, std::string why);

// metadata.name (required), and metadata.namespace (required when `namespaced`). `key_ns`:
// whether the namespace takes part in key() (false for ElasticQuota, keyed by name).
[[nodiscard]] result<object_ref> read_ref(object_kind kind, const json& object, bool namespaced,
                                          bool key_ns = true);

// obj[key] when obj is an object holding a non-null key; nullptr otherwise.
[[nodiscard]] const json* member(const json& obj, std::string_view key) noexcept;
[[nodiscard]] const json* member(const json* obj, std::string_view key) noexcept;

// A string member ("" when absent); invalid_input when present and not a string.
[[nodiscard]] result<std::string> string_member(const json* obj, std::string_view key,
                                                const object_ref& ref, std::string_view field);
// A bool member (false when absent).
[[nodiscard]] result<bool> bool_member(const json* obj, std::string_view key, const object_ref& ref,
                                       std::string_view field);

// The annotation kubectl apply leaves on every object it wrote: a copy of the object, large
// and of no use to any component, so never carried.
inline constexpr std::string_view last_applied_annotation =
    "kubectl.kubernetes.io/last-applied-configuration";

// A map[string]string (labels, annotations, ConfigMap data) sorted by key, without the keys
// in `drop`. Absent = empty.
[[nodiscard]] result<kv_list> string_map(const json* m, const object_ref& ref,
                                         std::string_view field,
                                         const std::vector<std::string_view>& drop = {});
// metadata.annotations without last_applied_annotation and `drop`, as a json object.
[[nodiscard]] json kept_annotations(const json& object,
                                    const std::vector<std::string_view>& drop = {});

// ---- resources ------------------------------------------------------------------------

// A ResourceList in Colony's units by Kubernetes name: cpu in milli-cores (MilliValue),
// nvidia.com/gpu x100 (one device = 100, as koordinator.sh/gpu), everything else Value()
// (batch-cpu and mid-cpu already count milli-cores). Ordered by name.
using amounts = std::map<std::string, std::int64_t, std::less<>>;

// Parses a ResourceList object. Quantities are strings (numbers are accepted, as
// Quantity.UnmarshalJSON does). Negative values are invalid unless allow_negative.
[[nodiscard]] result<amounts> parse_resources(const json* list, const object_ref& ref,
                                              std::string_view field, bool allow_negative = false);

// One quantity of resource `name` in Colony's units; where = ref.where(field).
[[nodiscard]] result<std::int64_t> parse_amount(std::string_view name, const json& value,
                                                const object_ref& ref, std::string_view field);

// Overflow-checked a += b; false on overflow.
[[nodiscard]] bool add_to(std::int64_t& a, std::int64_t b) noexcept;

// amounts split into the Resources fields (bit i of keys = field id i present) and the rest.
struct split_resources {
  resource_list fixed;
  std::vector<std::pair<std::string, std::int64_t>> extended;  // by name
  std::uint16_t keys = 0;
};
[[nodiscard]] split_resources split(const amounts& a);

// The Resources table: the same bytes as event_builder::resources when nothing is extended.
[[nodiscard]] flatbuffers::Offset<wire::Resources> build_resources(messages::event_builder& b,
                                                                   const split_resources& r);

[[nodiscard]] messages::header header(event_time t, wire::EntityKind kind, std::string_view key,
                                      const translate_options& o);

// ---- times ----------------------------------------------------------------------------

// RFC 3339 ("2026-01-01T00:00:00Z", fraction and offset allowed: metav1.Time, MicroTime) to
// ms since the Unix epoch.
[[nodiscard]] result<std::int64_t> parse_time_ms(std::string_view text, const object_ref& ref,
                                                 std::string_view field);
// A Go time.Duration string ("5m0s", "1h30m", "300ms") or a JSON number of nanoseconds (how
// metav1.Duration marshals: the string) to ms, truncated.
[[nodiscard]] result<std::int64_t> parse_duration_ms(const json& value, const object_ref& ref,
                                                     std::string_view field);

// "[i]" for paths.
[[nodiscard]] std::string index(std::size_t i);
// "\"text\"" (JSON-quoted, first 64 characters) for messages.
[[nodiscard]] std::string quote_text(std::string_view text);

// Kubernetes' PodRequests (component-helpers resource.PodRequests, spec side) of a pod spec at
// path `at` ("spec" for a Pod, "spec.template.spec" for a Reservation's template): containers,
// init containers and sidecars, pod-level requests, overhead (translate_pod.cpp).
[[nodiscard]] result<amounts> pod_requests(const json& spec, const object_ref& ref,
                                           std::string_view at);

// ---- per kind (translate_<kind>.cpp) ----------------------------------------------------

struct request {
  op what = op::added;
  const json* old_object = nullptr;  // modified only
  const json* object = nullptr;
  change changed = change::relevant;  // modified only
  event_time time{0};
  const translate_options* options = nullptr;
};

[[nodiscard]] result<event_list> translate_node(const request& r);
[[nodiscard]] result<event_list> translate_pod(const request& r);
[[nodiscard]] result<event_list> translate_priority_class(const request& r);
[[nodiscard]] result<event_list> translate_config_map(const request& r);
[[nodiscard]] result<event_list> translate_colocation_profile(const request& r);
[[nodiscard]] result<event_list> translate_elastic_quota(const request& r);
[[nodiscard]] result<event_list> translate_node_metric(const request& r);
[[nodiscard]] result<event_list> translate_node_slo(const request& r);
[[nodiscard]] result<event_list> translate_reservation(const request& r);
// PodMigrationJob: MigrationJobCreated / MigrationJobPhaseChanged (translate_migration_job.cpp).
[[nodiscard]] result<event_list> translate_migration_job(const request& r);
[[nodiscard]] result<event_list> translate_node_resource_topology(const request& r);
// The recorded kinds (recorded_kind(kind) set): ObjectObserved.
[[nodiscard]] result<event_list> translate_recorded(object_kind kind, const request& r);

// What change_kind compares: the fields the kind's translation reads. For a Node, the
// registration part; node_condition_projection is its Ready/unschedulable part.
[[nodiscard]] json node_projection(const json& o, const translate_options& opt);
[[nodiscard]] json node_condition_projection(const json& o);
[[nodiscard]] json pod_projection(const json& o);
[[nodiscard]] json priority_class_projection(const json& o);
[[nodiscard]] json config_map_projection(const json& o, const translate_options& opt);
[[nodiscard]] json colocation_profile_projection(const json& o);
[[nodiscard]] json elastic_quota_projection(const json& o);
[[nodiscard]] json node_metric_projection(const json& o);
[[nodiscard]] json node_slo_projection(const json& o);
[[nodiscard]] json recorded_projection(const json& o);
[[nodiscard]] json reservation_projection(const json& o);
[[nodiscard]] json migration_job_projection(const json& o);
[[nodiscard]] json node_resource_topology_projection(const json& o);

}  // namespace colony::kube::translate_internal
