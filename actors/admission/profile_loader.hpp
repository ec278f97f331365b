// Loading ClusterColocationProfile objects (config.koordinator.sh/v1alpha1, the shape of
// config/crd/bases/config.koordinator.sh_clustercolocationprofiles.yaml) from YAML files,
// as kubectl would apply them, and from JSON (the form a watch event carries), plus
// PriorityClass objects (scheduling.k8s.io/v1) for the priority_class_table.
//
// Accepted documents: one object per YAML document (several separated by ---), or a
// `kind: List` / `ClusterColocationProfileList` with `items`. apiVersion and kind may be
// omitted; when present they must be right. metadata.name is required (a DNS-1123
// subdomain); other metadata is ignored except labels and annotations. status is ignored.
//
// Stricter than the API server on purpose: an unknown field under spec (or in a selector) is
// an error, not silently pruned, so a typo in a config file is caught. Also rejected: a
// qosClass outside LSE/LSR/LS/BE/SYSTEM, a probability string that is not "N%", a
// koordinatorPriority outside int32, invalid selectors (what LabelSelectorAsSelector rejects,
// which Koordinator would treat as "matches every pod"), non-string map values, a patch that
// is not an object, and duplicate profile names.
//
// YAML scalars resolve as in YAML 1.2's core schema (what Kubernetes' YAML-to-JSON step does
// for these fields): plain true/false are booleans, plain numbers are numbers, quoted scalars
// are strings. So `labels: {enabled: true}` is an error (quote the value), as with kubectl.
//
// Errors are colony::error with code invalid_input (not_found for a missing file), message
// "<field path>: <problem>" (e.g. "spec.qosClass: Unsupported value: \"XX\": ...") and where
// = "<file>:<line>" for YAML (1-based line of the field), "<source>" for JSON plus the byte
// offset's line for syntax errors. Nothing throws.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "actors/admission/colocation_profile.hpp"
#include "messages/result.hpp"

namespace colony::admission {

inline constexpr std::string_view colocation_profile_api_version = "config.koordinator.sh/v1alpha1";
inline constexpr std::string_view colocation_profile_kind = "ClusterColocationProfile";

// YAML text holding one or more profiles; `source` names it in errors (a file path).
[[nodiscard]] result<std::vector<cluster_colocation_profile>> parse_profiles_yaml(
    std::string_view text, std::string_view source);
[[nodiscard]] result<std::vector<cluster_colocation_profile>> load_profiles_yaml_file(
    const std::string& path);

// JSON text: one profile object or a List of them.
[[nodiscard]] result<std::vector<cluster_colocation_profile>> parse_profiles_json(
    std::string_view text, std::string_view source);
// JSON text holding exactly one profile object (a watch event's object).
[[nodiscard]] result<cluster_colocation_profile> parse_profile_json(std::string_view text,
                                                                    std::string_view source);
// An already parsed object.
[[nodiscard]] result<cluster_colocation_profile> profile_from_json(const nlohmann::json& object,
                                                                   std::string_view source);

// PriorityClass objects (name, value, preemptionPolicy) from YAML, one per document or a List.
[[nodiscard]] result<priority_class_table> parse_priority_classes_yaml(std::string_view text,
                                                                       std::string_view source);

}  // namespace colony::admission
