#include "actors/admission/label_selector.hpp"

#include <algorithm>

namespace colony::admission {

namespace {

bool is_alnum(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}
bool is_lower_alnum(char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); }

// ([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9], at most 63 characters.
std::string name_part_problem(std::string_view s) {
  if (s.empty()) return "name part must be non-empty";
  if (s.size() > 63) return "name part must be no more than 63 characters";
  if (!is_alnum(s.front()) || !is_alnum(s.back()))
    return "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and "
           "end "
           "with an alphanumeric character";
  for (char c : s)
    if (!is_alnum(c) && c != '-' && c != '_' && c != '.')
      return "name part must consist of alphanumeric characters, '-', '_' or '.', and must start "
             "and end "
             "with an alphanumeric character";
  return {};
}

std::string quote(std::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  out += '"';
  return out;
}

}  // namespace

std::string_view to_string(selector_operator op) noexcept {
  switch (op) {
    case selector_operator::in:
      return "In";
    case selector_operator::not_in:
      return "NotIn";
    case selector_operator::exists:
      return "Exists";
    case selector_operator::does_not_exist:
      return "DoesNotExist";
  }
  return "";
}

std::string dns1123_subdomain_problem(std::string_view name) {
  const std::string msg =
      "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or "
      "'.', and "
      "must start and end with an alphanumeric character";
  if (name.empty() || name.size() > 253)
    return name.empty() ? msg : "must be no more than 253 characters";
  // Labels of [a-z0-9]([-a-z0-9]*[a-z0-9])? joined by '.'.
  std::size_t start = 0;
  while (true) {
    const std::size_t dot = name.find('.', start);
    const std::string_view label =
        name.substr(start, dot == std::string_view::npos ? name.npos : dot - start);
    if (label.empty() || !is_lower_alnum(label.front()) || !is_lower_alnum(label.back()))
      return msg;
    for (char c : label)
      if (!is_lower_alnum(c) && c != '-') return msg;
    if (dot == std::string_view::npos) break;
    start = dot + 1;
  }
  return {};
}

std::string qualified_name_problem(std::string_view key) {
  const std::size_t slash = key.find('/');
  if (slash == std::string_view::npos) return name_part_problem(key);
  if (key.find('/', slash + 1) != std::string_view::npos)
    return "a qualified name must consist of an optional DNS subdomain prefix and '/' and a name "
           "part";
  const std::string_view prefix = key.substr(0, slash);
  if (prefix.empty()) return "prefix part must be non-empty";
  if (std::string p = dns1123_subdomain_problem(prefix); !p.empty()) return "prefix part " + p;
  return name_part_problem(key.substr(slash + 1));
}

std::string label_value_problem(std::string_view value) {
  if (value.empty()) return {};
  if (value.size() > 63) return "must be no more than 63 characters";
  std::string p = name_part_problem(value);
  if (!p.empty())
    return "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' "
           "or '.', and must start and end with an alphanumeric character";
  return {};
}

result<void> validate_label_selector(const label_selector& s, std::string_view field) {
  const std::string f(field);
  for (const auto& [k, v] : s.match_labels) {
    if (std::string p = qualified_name_problem(k); !p.empty())
      return fail(errc::invalid_input, f + ".matchLabels: Invalid value: " + quote(k) + ": " + p);
    if (std::string p = label_value_problem(v); !p.empty())
      return fail(errc::invalid_input,
                  f + ".matchLabels." + k + ": Invalid value: " + quote(v) + ": " + p);
  }
  for (std::size_t i = 0; i < s.match_expressions.size(); ++i) {
    const auto& r = s.match_expressions[i];
    const std::string at = f + ".matchExpressions[" + std::to_string(i) + "]";
    if (std::string p = qualified_name_problem(r.key); !p.empty())
      return fail(errc::invalid_input, at + ".key: Invalid value: " + quote(r.key) + ": " + p);
    switch (r.op) {
      case selector_operator::in:
      case selector_operator::not_in:
        if (r.values.empty())
          return fail(errc::invalid_input, at + ".values: Required value: for 'in', 'notin' "
                                                "operators, values set can't be empty");
        break;
      case selector_operator::exists:
      case selector_operator::does_not_exist:
        if (!r.values.empty())
          return fail(
              errc::invalid_input,
              at + ".values: Forbidden: values set must be empty for exists and does not exist");
        break;
    }
    for (std::size_t j = 0; j < r.values.size(); ++j)
      if (std::string p = label_value_problem(r.values[j]); !p.empty())
        return fail(errc::invalid_input, at + ".values[" + std::to_string(j) +
                                             "]: Invalid value: " + quote(r.values[j]) + ": " + p);
  }
  return {};
}

result<bool> label_selector_matches(const label_selector& s, const string_map& labels) {
  if (auto ok = validate_label_selector(s, "selector"); !ok) return tl::unexpected(ok.error());
  return label_selector_matches_valid(s, labels);
}

bool label_selector_matches_valid(const label_selector& s, const string_map& labels) {
  for (const auto& [k, v] : s.match_labels) {
    const std::string* have = find_value(labels, k);
    if (have == nullptr || *have != v) return false;
  }
  for (const auto& r : s.match_expressions) {
    const std::string* have = find_value(labels, r.key);
    const auto listed = [&] {
      return std::find(r.values.begin(), r.values.end(), *have) != r.values.end();
    };
    switch (r.op) {
      case selector_operator::in:
        if (have == nullptr || !listed()) return false;
        break;
      case selector_operator::not_in:
        if (have != nullptr && listed()) return false;
        break;
      case selector_operator::exists:
        if (have == nullptr) return false;
        break;
      case selector_operator::does_not_exist:
        if (have != nullptr) return false;
        break;
    }
  }
  return true;
}

}  // namespace colony::admission
