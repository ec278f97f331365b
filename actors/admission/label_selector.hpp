// Kubernetes label selectors (metav1.LabelSelector) as ClusterColocationProfile uses them, and
// the apimachinery name/value checks a selector's parsing applies.
//
// Matching follows labels.Requirement.Matches: In needs the key with one of the values; NotIn
// matches a missing key too; Exists / DoesNotExist test the key only. An empty selector
// matches everything. Requirements are ANDed; matchLabels entries are In with one value.
// Plain values; no state.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "actors/admission/pod_spec.hpp"
#include "messages/result.hpp"

namespace colony::admission {

enum class selector_operator : std::uint8_t { in, not_in, exists, does_not_exist };

// "In", "NotIn", "Exists", "DoesNotExist".
[[nodiscard]] std::string_view to_string(selector_operator op) noexcept;

struct label_selector_requirement {
  std::string key;
  selector_operator op = selector_operator::in;
  std::vector<std::string> values;

  bool operator==(const label_selector_requirement&) const = default;
};

struct label_selector {
  string_map match_labels;
  std::vector<label_selector_requirement> match_expressions;

  [[nodiscard]] bool empty() const { return match_labels.empty() && match_expressions.empty(); }
  bool operator==(const label_selector&) const = default;
};

// What metav1.LabelSelectorAsSelector rejects: invalid keys (qualified names) or values
// (label values), In/NotIn without values, Exists/DoesNotExist with values. The error's
// message names the offending part relative to `field` (e.g. "spec.selector.matchLabels").
[[nodiscard]] result<void> validate_label_selector(const label_selector& s, std::string_view field);

// Matches `labels`; an invalid selector is an error (the caller decides what that means:
// the colocation webhook counts the profile as matched).
[[nodiscard]] result<bool> label_selector_matches(const label_selector& s,
                                                  const string_map& labels);

// The same match for a selector already known to be valid (no checks, no allocation).
[[nodiscard]] bool label_selector_matches_valid(const label_selector& s, const string_map& labels);

// apimachinery validation.IsQualifiedName: [prefix/]name, prefix a DNS-1123 subdomain,
// name 1..63 of [A-Za-z0-9._-] starting and ending alphanumeric. Empty string when valid,
// else the reason.
[[nodiscard]] std::string qualified_name_problem(std::string_view key);
// validation.IsValidLabelValue: empty, or a name part as above.
[[nodiscard]] std::string label_value_problem(std::string_view value);
// validation.IsDNS1123Subdomain (object names such as a profile's metadata.name).
[[nodiscard]] std::string dns1123_subdomain_problem(std::string_view name);

}  // namespace colony::admission
