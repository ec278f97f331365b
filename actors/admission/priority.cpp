#include "actors/admission/priority.hpp"

#include <limits>
#include <string>

#include "messages/names.hpp"

namespace colony::admission {

priority_class get_pod_priority_class_raw(const pod_spec& pod) noexcept {
  if (const std::string* v = find_value(pod.labels, names::label_priority_class))
    return get_pod_priority_class_by_name(*v);
  return get_priority_class_by_priority(pod.priority);
}

priority_class get_pod_priority_class_with_default(const pod_spec& pod) noexcept {
  const priority_class raw = get_pod_priority_class_raw(pod);
  if (raw != priority_class::none) return raw;
  return get_pod_priority_class_with_qos(get_pod_qos_class_with_default(pod));
}

std::int32_t get_pod_priority_value_with_default(const pod_spec* pod) noexcept {
  if (pod == nullptr) return priority_none_value_default;
  if (pod->priority && *pod->priority != priority_none_value_default) return *pod->priority;
  return get_default_priority_by_priority_class(get_pod_priority_class_with_default(*pod));
}

namespace {

// Go's strconv underscoreOK: '_' only between digits (a base prefix counts as a digit).
bool underscore_ok(std::string_view s) {
  char saw = '^';  // '^' start, '0' digit or prefix, '_' underscore, '!' other
  std::size_t i = 0;
  if (!s.empty() && (s[0] == '-' || s[0] == '+')) s.remove_prefix(1);
  bool hex = false;
  if (s.size() >= 2 && s[0] == '0') {
    const char c = static_cast<char>(s[1] | 0x20);
    if (c == 'b' || c == 'o' || c == 'x') {
      hex = c == 'x';
      i = 2;
      saw = '0';
    }
  }
  for (; i < s.size(); ++i) {
    const char c = s[i];
    const char lc = static_cast<char>(c | 0x20);
    if ((c >= '0' && c <= '9') || (hex && lc >= 'a' && lc <= 'f')) {
      saw = '0';
      continue;
    }
    if (c == '_') {
      if (saw != '0') return false;
      saw = '_';
      continue;
    }
    if (saw == '_') return false;
    saw = '!';
  }
  return saw != '_';
}

}  // namespace

result<std::int32_t> parse_int32_base0(std::string_view s0) {
  const std::string quoted = "strconv.ParseInt: parsing \"" + std::string(s0) + "\": ";
  auto syntax = [&] { return fail(errc::invalid_input, quoted + "invalid syntax"); };
  std::string_view s = s0;
  if (s.empty()) return syntax();
  bool neg = false;
  if (s[0] == '+' || s[0] == '-') {
    neg = s[0] == '-';
    s.remove_prefix(1);
    if (s.empty()) return syntax();
  }
  int base = 10;
  if (s[0] == '0') {  // same prefix rules as Go's ParseUint with base 0
    const char c = s.size() >= 3 ? static_cast<char>(s[1] | 0x20) : '\0';
    if (c == 'b') {
      base = 2;
      s.remove_prefix(2);
    } else if (c == 'o') {
      base = 8;
      s.remove_prefix(2);
    } else if (c == 'x') {
      base = 16;
      s.remove_prefix(2);
    } else {
      base = 8;
      s.remove_prefix(1);
    }
  }
  bool any_underscore = false;
  std::uint64_t v = 0;
  auto range = [&] { return fail(errc::invalid_input, quoted + "value out of range"); };
  for (char c : s) {
    if (c == '_') {
      any_underscore = true;
      continue;
    }
    int d;
    const char lc = static_cast<char>(c | 0x20);
    if (c >= '0' && c <= '9')
      d = c - '0';
    else if (lc >= 'a' && lc <= 'z')
      d = lc - 'a' + 10;
    else
      return syntax();
    if (d >= base) return syntax();
    v = v * static_cast<std::uint64_t>(base) + static_cast<std::uint64_t>(d);
    // Go's ParseUint(s, base, 32) stops at the first digit past 2^32-1 with ErrRange,
    // before looking at later characters.
    if (v > 0xFFFFFFFFull) return range();
  }
  if (any_underscore && !underscore_ok(s0)) return syntax();
  const std::uint64_t limit = neg ? std::uint64_t{1} << 31 : (std::uint64_t{1} << 31) - 1;
  if (v > limit) return range();
  const std::int64_t sv = neg ? -static_cast<std::int64_t>(v) : static_cast<std::int64_t>(v);
  return static_cast<std::int32_t>(sv);
}

result<std::int32_t> get_pod_sub_priority(const string_map& labels) {
  const std::string* v = find_value(labels, names::label_priority);
  if (v == nullptr || v->empty()) return 0;
  auto r = parse_int32_base0(*v);
  if (!r)
    return fail(r.error().code, r.error().message, "labels." + std::string(names::label_priority));
  return *r;
}

}  // namespace colony::admission
