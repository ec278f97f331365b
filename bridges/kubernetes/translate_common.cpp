// Shared readers of the translation: see translate_internal.hpp.
#include <algorithm>
#include <limits>

#include "bridges/kubernetes/translate_internal.hpp"
#include "messages/names.hpp"
#include "messages/quantity.hpp"

namespace colony::kube::translate_internal {

std::string object_ref::where(std::string_view field) const {
  std::string w(to_string(kind));
  w += ' ';
  w += key();
  if (!field.empty()) {
    w += ": ";
    w += field;
  }
  return w;
}

tl::unexpected<error> invalid(const object_ref& ref, std::string_view field, std::string message) {
  return fail(errc::invalid_input, std::move(message), ref.where(field));
}

tl::unexpected<error> not_translated(const object_ref& ref, std::string why) {
  return fail(errc::failed_precondition,
              std::string(to_string(ref.kind)) + " is not yet translated: " + std::move(why),
              ref.where({}));
}

std::string index(std::size_t i) { return "[" + std::to_string(i) + "]"; }

std::string quote_text(std::string_view text) {
  constexpr std::size_t max = 64;
  const bool cut = text.size() > max;
  // json's dump escapes quotes and control characters.
  std::string s = json(std::string(text.substr(0, max))).dump();
  if (cut) s.insert(s.size() - 1, "...");
  return s;
}

const json* member(const json& obj, std::string_view key) noexcept {
  if (!obj.is_object()) return nullptr;
  const auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return nullptr;
  return &*it;
}

const json* member(const json* obj, std::string_view key) noexcept {
  return obj == nullptr ? nullptr : member(*obj, key);
}

result<std::string> string_member(const json* obj, std::string_view key, const object_ref& ref,
                                  std::string_view field) {
  const json* v = member(obj, key);
  if (v == nullptr) return std::string();
  if (!v->is_string()) return invalid(ref, field, "must be a string, got " + v->dump());
  return v->get<std::string>();
}

result<bool> bool_member(const json* obj, std::string_view key, const object_ref& ref,
                         std::string_view field) {
  const json* v = member(obj, key);
  if (v == nullptr) return false;
  if (!v->is_boolean()) return invalid(ref, field, "must be a boolean, got " + v->dump());
  return v->get<bool>();
}

result<object_ref> read_ref(object_kind kind, const json& object, bool namespaced, bool key_ns) {
  object_ref ref;
  ref.kind = kind;
  ref.name = "<unnamed>";
  if (!object.is_object()) return invalid(ref, {}, "the object is not a JSON object");
  const json* md = member(object, "metadata");
  if (md != nullptr && !md->is_object()) return invalid(ref, "metadata", "must be an object");
  auto ns = string_member(md, "namespace", ref, "metadata.namespace");
  if (!ns) return tl::unexpected(ns.error());
  if (key_ns) ref.ns = *ns;
  auto name = string_member(md, "name", ref, "metadata.name");
  if (!name) return tl::unexpected(name.error());
  if (name->empty()) return invalid(ref, "metadata.name", "is required");
  ref.name = *name;
  if (namespaced && ns->empty()) return invalid(ref, "metadata.namespace", "is required");
  return ref;
}

result<kv_list> string_map(const json* m, const object_ref& ref, std::string_view field,
                           const std::vector<std::string_view>& drop) {
  kv_list out;
  if (m == nullptr) return out;
  if (!m->is_object()) return invalid(ref, field, "must be a map of strings");
  for (const auto& [k, v] : m->items()) {
    if (!v.is_string())
      return invalid(ref, std::string(field) + "[" + k + "]", "must be a string, got " + v.dump());
    if (k == last_applied_annotation || std::find(drop.begin(), drop.end(), k) != drop.end())
      continue;
    out.emplace_back(k, v.get<std::string>());
  }
  // json objects iterate in key order already (std::map); sorting states the invariant.
  std::sort(out.begin(), out.end());
  return out;
}

json kept_annotations(const json& object, const std::vector<std::string_view>& drop) {
  const json* a = member(member(object, "metadata"), "annotations");
  if (a == nullptr || !a->is_object()) return a == nullptr ? json() : *a;
  json out = *a;
  out.erase(std::string(last_applied_annotation));
  for (auto d : drop) out.erase(std::string(d));
  return out;
}

// ---- resources ------------------------------------------------------------------------

bool add_to(std::int64_t& a, std::int64_t b) noexcept { return !__builtin_add_overflow(a, b, &a); }

result<std::int64_t> parse_amount(std::string_view name, const json& value, const object_ref& ref,
                                  std::string_view field) {
  std::string text;
  if (value.is_string()) {
    text = value.get<std::string>();
  } else if (value.is_number()) {
    text = value.dump();  // Quantity.UnmarshalJSON parses a bare number's text
  } else {
    return invalid(ref, field, "must be a quantity string, got " + value.dump());
  }
  auto q = k8s::quantity::parse(text);
  if (!q) return invalid(ref, field, quote_text(text) + " is not a quantity");
  auto v = name == names::cpu ? q->milli_value() : q->value();
  if (!v) return invalid(ref, field, quote_text(text) + " is out of range");
  if (name == names::nvidia_gpu) {
    // Whole devices x100: koordinator.sh/gpu's unit, which Resources.gpu carries.
    std::int64_t x100 = 0;
    if (__builtin_mul_overflow(*v, std::int64_t{100}, &x100))
      return invalid(ref, field, quote_text(text) + " is out of range");
    return x100;
  }
  return *v;
}

result<amounts> parse_resources(const json* list, const object_ref& ref, std::string_view field,
                                bool allow_negative) {
  amounts out;
  if (list == nullptr) return out;
  if (!list->is_object()) return invalid(ref, field, "must be a map of quantities");
  for (const auto& [name, value] : list->items()) {
    const std::string f = std::string(field) + "." + name;
    if (name.empty()) return invalid(ref, f, "resource name is empty");
    auto v = parse_amount(name, value, ref, f);
    if (!v) return tl::unexpected(v.error());
    if (*v < 0 && !allow_negative)
      return invalid(
          ref, f,
          quote_text(value.is_string() ? value.get<std::string>() : value.dump()) + " is negative");
    out.emplace(name, *v);
  }
  return out;
}

split_resources split(const amounts& a) {
  split_resources s;
  std::int64_t nvidia = -1, koord = -1;
  auto set = [&s](std::int64_t& field, int id, std::int64_t v) {
    field = v;
    s.keys = static_cast<std::uint16_t>(s.keys | (1u << id));
  };
  for (const auto& [name, v] : a) {
    if (name == names::cpu) {
      set(s.fixed.cpu_milli, 0, v);
    } else if (name == names::memory) {
      set(s.fixed.memory_bytes, 1, v);
    } else if (name == names::batch_cpu) {
      set(s.fixed.batch_cpu_milli, 2, v);
    } else if (name == names::batch_memory) {
      set(s.fixed.batch_memory_bytes, 3, v);
    } else if (name == names::mid_cpu) {
      set(s.fixed.mid_cpu_milli, 4, v);
    } else if (name == names::mid_memory) {
      set(s.fixed.mid_memory_bytes, 5, v);
    } else if (name == names::nvidia_gpu) {
      nvidia = v;
    } else if (name == names::koord_gpu) {
      koord = v;
    } else if (name == names::gpu_core) {
      set(s.fixed.gpu_core, 7, v);
    } else if (name == names::gpu_memory) {
      set(s.fixed.gpu_memory_bytes, 8, v);
    } else if (name == names::gpu_memory_ratio) {
      set(s.fixed.gpu_memory_ratio, 9, v);
    } else if (name == names::pods) {
      set(s.fixed.pods, 10, v);
    } else {
      s.extended.emplace_back(name, v);
    }
  }
  // Both name the same devices (nvidia.com/gpu already x100): the larger is the request.
  if (nvidia >= 0 || koord >= 0) set(s.fixed.gpu, 6, std::max(nvidia, koord));
  return s;
}

flatbuffers::Offset<wire::Resources> build_resources(messages::event_builder& b,
                                                     const split_resources& r) {
  return b.resources(r.fixed, r.extended);
}

messages::header header(event_time t, wire::EntityKind kind, std::string_view key,
                        const translate_options& o) {
  messages::header h;
  h.time = t;
  h.kind = kind;
  h.key = key;
  h.causation = -1;  // observations from outside
  h.source = o.source;
  return h;
}

// ---- times ----------------------------------------------------------------------------

namespace {

// Days from 1970-01-01 to y-m-d in the proleptic Gregorian calendar (H. Hinnant's
// days_from_civil).
constexpr std::int64_t days_from_civil(std::int64_t y, unsigned m, unsigned d) noexcept {
  y -= m <= 2 ? 1 : 0;
  const std::int64_t era = (y >= 0 ? y : y - 399) / 400;
  const auto yoe = static_cast<unsigned>(y - era * 400);
  const unsigned doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
  const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + static_cast<std::int64_t>(doe) - 719468;
}

// Reads exactly n digits at text[pos].
bool digits(std::string_view text, std::size_t& pos, std::size_t n, unsigned& out) {
  if (pos + n > text.size()) return false;
  out = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const char c = text[pos + i];
    if (c < '0' || c > '9') return false;
    out = out * 10 + static_cast<unsigned>(c - '0');
  }
  pos += n;
  return true;
}

bool expect(std::string_view text, std::size_t& pos, char c) {
  if (pos >= text.size() || (text[pos] != c && !(c == 'T' && text[pos] == 't'))) return false;
  ++pos;
  return true;
}

}  // namespace

result<std::int64_t> parse_time_ms(std::string_view text, const object_ref& ref,
                                   std::string_view field) {
  auto bad = [&] { return invalid(ref, field, quote_text(text) + " is not an RFC 3339 time"); };
  std::size_t p = 0;
  unsigned y = 0, mo = 0, d = 0, h = 0, mi = 0, s = 0;
  if (!digits(text, p, 4, y) || !expect(text, p, '-') || !digits(text, p, 2, mo) ||
      !expect(text, p, '-') || !digits(text, p, 2, d) || !expect(text, p, 'T') ||
      !digits(text, p, 2, h) || !expect(text, p, ':') || !digits(text, p, 2, mi) ||
      !expect(text, p, ':') || !digits(text, p, 2, s))
    return bad();
  if (mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || s > 60) return bad();
  std::int64_t ms = 0;
  if (p < text.size() && text[p] == '.') {
    ++p;
    std::size_t n = 0;
    std::int64_t frac = 0;
    while (p < text.size() && text[p] >= '0' && text[p] <= '9') {
      if (n < 3) frac = frac * 10 + (text[p] - '0');
      ++n;
      ++p;
    }
    if (n == 0) return bad();
    for (std::size_t i = n; i < 3; ++i) frac *= 10;
    ms = frac;  // truncated to ms
  }
  std::int64_t offset_s = 0;
  if (p < text.size() && (text[p] == 'Z' || text[p] == 'z')) {
    ++p;
  } else if (p < text.size() && (text[p] == '+' || text[p] == '-')) {
    const int sign = text[p] == '-' ? -1 : 1;
    ++p;
    unsigned oh = 0, om = 0;
    if (!digits(text, p, 2, oh) || !expect(text, p, ':') || !digits(text, p, 2, om) || oh > 23 ||
        om > 59)
      return bad();
    offset_s = sign * static_cast<std::int64_t>(oh * 3600 + om * 60);
  } else {
    return bad();
  }
  if (p != text.size()) return bad();
  const std::int64_t secs = days_from_civil(y, mo, d) * 86400 + h * 3600 + mi * 60 + s - offset_s;
  return secs * 1000 + ms;
}

result<std::int64_t> parse_duration_ms(const json& value, const object_ref& ref,
                                       std::string_view field) {
  if (value.is_number_integer()) return value.get<std::int64_t>() / 1'000'000;
  if (!value.is_string()) return invalid(ref, field, "must be a duration, got " + value.dump());
  const std::string text = value.get<std::string>();
  auto bad = [&] { return invalid(ref, field, quote_text(text) + " is not a duration"); };
  // time.ParseDuration: [-+]? ( number unit )+ with units ns us µs ms s m h; "0" alone.
  std::string_view s = text;
  bool negative = false;
  if (!s.empty() && (s.front() == '-' || s.front() == '+')) {
    negative = s.front() == '-';
    s.remove_prefix(1);
  }
  if (s == "0") return std::int64_t{0};
  if (s.empty()) return bad();
  // Integer nanoseconds as Go does (a fraction is scaled by its unit, then truncated).
  __int128 total_ns = 0;
  constexpr __int128 limit = std::numeric_limits<std::int64_t>::max();
  while (!s.empty()) {
    std::size_t i = 0;
    __int128 whole = 0, frac = 0, scale = 1;
    bool any = false;
    while (i < s.size() && s[i] >= '0' && s[i] <= '9') {
      whole = whole * 10 + (s[i] - '0');
      if (whole > limit) return bad();
      ++i;
      any = true;
    }
    if (i < s.size() && s[i] == '.') {
      ++i;
      while (i < s.size() && s[i] >= '0' && s[i] <= '9') {
        if (scale < 1'000'000'000'000'000'000) {  // digits past 1e-18 cannot matter
          frac = frac * 10 + (s[i] - '0');
          scale *= 10;
        }
        ++i;
        any = true;
      }
    }
    if (!any) return bad();
    s.remove_prefix(i);
    std::size_t u = 0;
    while (u < s.size() && !(s[u] >= '0' && s[u] <= '9') && s[u] != '.') ++u;
    const std::string_view unit = s.substr(0, u);
    s.remove_prefix(u);
    __int128 mult = 0;
    if (unit == "ns") {
      mult = 1;
    } else if (unit == "us" || unit == "\xC2\xB5s" || unit == "\xCE\xBCs") {
      mult = 1'000;
    } else if (unit == "ms") {
      mult = 1'000'000;
    } else if (unit == "s") {
      mult = 1'000'000'000;
    } else if (unit == "m") {
      mult = 60'000'000'000;
    } else if (unit == "h") {
      mult = 3'600'000'000'000;
    } else {
      return bad();
    }
    total_ns += whole * mult + frac * mult / scale;
    if (total_ns > limit) return bad();
  }
  const auto ms = static_cast<std::int64_t>(total_ns / 1'000'000);
  return negative ? -ms : ms;
}

}  // namespace colony::kube::translate_internal
