// internal/json_fields.hpp: reading JSON fields the way Go's encoding/json fills pointer fields,
// for the slo-controller-config parser and the node colocation-strategy annotation.
//
// Go semantics kept: a key matches exactly or, failing that, case-insensitively; `null` leaves the
// field unset; a JSON value of the wrong type is an error (UnmarshalTypeError), including a float
// such as 65.5 (or 65.0) for an int64 field; unknown keys are ignored.
// Private to colony::slo_controller_policies. No exception leaves these functions.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "actors/slo_controller/colocation_strategy.hpp"
#include "messages/result.hpp"

namespace colony::slo_controller::internal {

using json = nlohmann::json;

// The value of `key` in object `obj` (exact match first, then case-insensitive), or null if absent.
[[nodiscard]] const json* find_field(const json& obj, std::string_view key);

// A short rendering of a JSON value for error messages (at most ~60 characters).
[[nodiscard]] std::string render(const json& v);

[[nodiscard]] std::string path(std::string_view where, std::string_view key);

[[nodiscard]] tl::unexpected<error> invalid(std::string_view where, std::string_view key,
                                            const json& v, std::string_view rule);

// Each reader: absent or null -> out untouched (nullopt); wrong type -> error naming where.key.
[[nodiscard]] result<void> read_int64(const json& obj, std::string_view key, std::string_view where,
                                      std::optional<std::int64_t>& out);
[[nodiscard]] result<void> read_double(const json& obj, std::string_view key,
                                       std::string_view where, std::optional<double>& out);
[[nodiscard]] result<void> read_bool(const json& obj, std::string_view key, std::string_view where,
                                     std::optional<bool>& out);
[[nodiscard]] result<void> read_string(const json& obj, std::string_view key,
                                       std::string_view where, std::optional<std::string>& out);

// A range check on an optional int: ok if unset or lo <= v <= hi.
[[nodiscard]] result<void> check_range(std::string_view where, std::string_view key,
                                       const std::optional<std::int64_t>& v, std::int64_t lo,
                                       std::int64_t hi);

// metav1.LabelSelector from {"matchLabels": {...}, "matchExpressions": [...]}.
[[nodiscard]] result<label_selector> read_selector(const json& v, std::string_view where);

// A ColocationStrategy overlay from a JSON object (type errors; ranges are checked by validate()).
// strict: unknown enum strings are errors naming the value (ConfigMap); otherwise they are kept as
// `other`, as Koordinator keeps any string (node annotation).
[[nodiscard]] result<colocation_strategy> read_colocation_strategy(const json& obj,
                                                                   std::string_view where,
                                                                   bool strict);

// nlohmann::json::parse without exceptions; error names `where` and the parser's byte position.
[[nodiscard]] result<json> parse_json(std::string_view text, std::string_view where);

}  // namespace colony::slo_controller::internal
