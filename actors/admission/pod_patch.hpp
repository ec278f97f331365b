// pod_patch: the subset of a Kubernetes strategic-merge patch on a Pod that Colony applies
// (ClusterColocationProfile spec.patch, applied by Koordinator with
// strategicpatch.StrategicMergePatch in pkg/webhook/pod/mutating/cluster_colocation_profile.go).
//
// Supported, with strategic-merge semantics for maps:
//   metadata.labels, metadata.annotations   string values set a key; null deletes the key;
//                                           the map itself null (or {"$patch":"delete"})
//                                           deletes all; {"$patch":"replace", ...} replaces
//                                           the whole map with the other entries.
//   spec.schedulerName, spec.priorityClassName, spec.preemptionPolicy   string, null unsets
//   spec.priority                                                        int32, null unsets
// Everything else in the patch (tolerations, affinity, containers, other metadata, ...) is
// not applied: its paths are kept in `unsupported_paths` so the caller can report them.
// A patch that is not an object, or a supported field of the wrong type, is an error.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "actors/admission/pod_spec.hpp"
#include "messages/result.hpp"

namespace colony::admission {

// One map (labels or annotations) part of the patch.
struct map_patch {
  bool clear = false;  // delete every key first (map null, $patch delete or replace)
  string_map set;
  std::vector<std::string> remove;  // keys patched to null, ascending

  [[nodiscard]] bool empty() const { return !clear && set.empty() && remove.empty(); }
  void apply(string_map& m) const;
  bool operator==(const map_patch&) const = default;
};

// A scalar field of the patch: absent, set to a value, or set to null (unset).
template <class T>
struct field_patch {
  bool present = false;
  std::optional<T> value;  // nullopt with present = null in the patch

  bool operator==(const field_patch&) const = default;
};

struct pod_patch {
  map_patch labels;
  map_patch annotations;
  field_patch<std::string> scheduler_name;
  field_patch<std::string> priority_class_name;
  field_patch<std::string> preemption_policy;
  field_patch<std::int32_t> priority;
  std::vector<std::string> unsupported_paths;  // e.g. "spec.patch.spec.tolerations", ascending
  std::string raw_json;                        // the patch as given, compact JSON

  void apply(pod_spec& pod) const;
  bool operator==(const pod_patch&) const = default;
};

// Parses a patch object. `field` names it in errors (e.g. "spec.patch").
[[nodiscard]] result<pod_patch> parse_pod_patch(const nlohmann::json& patch,
                                                std::string_view field);
[[nodiscard]] result<pod_patch> parse_pod_patch(std::string_view json_text, std::string_view field);

}  // namespace colony::admission
