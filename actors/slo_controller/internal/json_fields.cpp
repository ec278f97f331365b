#include "actors/slo_controller/internal/json_fields.hpp"

#include <cctype>
#include <limits>

namespace colony::slo_controller::internal {

namespace {

bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(a[i])) !=
        std::tolower(static_cast<unsigned char>(b[i]))) {
      return false;
    }
  }
  return true;
}

std::string type_name(const json& v) { return v.type_name(); }

}  // namespace

const json* find_field(const json& obj, std::string_view key) {
  if (!obj.is_object()) return nullptr;
  auto it = obj.find(std::string(key));
  if (it != obj.end()) return &*it;
  // encoding/json: "preferring an exact match but also accepting a case-insensitive match".
  for (auto jt = obj.begin(); jt != obj.end(); ++jt) {
    if (iequals(jt.key(), key)) return &*jt;
  }
  return nullptr;
}

std::string render(const json& v) {
  std::string s;
  if (v.is_object()) return "{...}";
  if (v.is_array()) return "[...]";
  if (v.is_string()) {
    const auto& str = v.get_ref<const std::string&>();
    s = "\"" + str.substr(0, 48) + (str.size() > 48 ? "...\"" : "\"");
    return s;
  }
  // Scalars only: dump cannot recurse, and parsed strings are valid UTF-8.
  return v.dump();
}

std::string path(std::string_view where, std::string_view key) {
  std::string p(where);
  if (!key.empty()) {
    if (!p.empty()) p += '.';
    p += key;
  }
  return p;
}

tl::unexpected<error> invalid(std::string_view where, std::string_view key, const json& v,
                              std::string_view rule) {
  return fail(errc::invalid_input, "invalid value " + render(v) + " (" + std::string(rule) + ")",
              path(where, key));
}

result<void> read_int64(const json& obj, std::string_view key, std::string_view where,
                        std::optional<std::int64_t>& out) {
  const json* v = find_field(obj, key);
  if (v == nullptr || v->is_null()) return {};
  if (v->is_number_integer() && !v->is_number_unsigned()) {
    out = v->get<std::int64_t>();
    return {};
  }
  if (v->is_number_unsigned()) {
    auto u = v->get<std::uint64_t>();
    if (u <= static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) {
      out = static_cast<std::int64_t>(u);
      return {};
    }
    return invalid(where, key, *v, "out of int64 range");
  }
  return invalid(where, key, *v, "want an integer, got " + type_name(*v));
}

result<void> read_double(const json& obj, std::string_view key, std::string_view where,
                         std::optional<double>& out) {
  const json* v = find_field(obj, key);
  if (v == nullptr || v->is_null()) return {};
  if (v->is_number()) {
    out = v->get<double>();
    return {};
  }
  return invalid(where, key, *v, "want a number, got " + type_name(*v));
}

result<void> read_bool(const json& obj, std::string_view key, std::string_view where,
                       std::optional<bool>& out) {
  const json* v = find_field(obj, key);
  if (v == nullptr || v->is_null()) return {};
  if (v->is_boolean()) {
    out = v->get<bool>();
    return {};
  }
  return invalid(where, key, *v, "want a boolean, got " + type_name(*v));
}

result<void> read_string(const json& obj, std::string_view key, std::string_view where,
                         std::optional<std::string>& out) {
  const json* v = find_field(obj, key);
  if (v == nullptr || v->is_null()) return {};
  if (v->is_string()) {
    out = v->get<std::string>();
    return {};
  }
  return invalid(where, key, *v, "want a string, got " + type_name(*v));
}

result<void> check_range(std::string_view where, std::string_view key,
                         const std::optional<std::int64_t>& v, std::int64_t lo, std::int64_t hi) {
  if (!v || (*v >= lo && *v <= hi)) return {};
  std::string rule;
  if (hi == std::numeric_limits<std::int64_t>::max()) {
    rule = "must be >= " + std::to_string(lo);
  } else {
    rule = "must be in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]";
  }
  return fail(errc::invalid_input, "invalid value " + std::to_string(*v) + " (" + rule + ")",
              path(where, key));
}

result<label_selector> read_selector(const json& v, std::string_view where) {
  label_selector s;
  if (v.is_null()) return s;
  if (!v.is_object()) return invalid(where, "", v, "want an object");
  s.present = true;
  if (const json* ml = find_field(v, "matchLabels"); ml != nullptr && !ml->is_null()) {
    if (!ml->is_object()) return invalid(where, "matchLabels", *ml, "want an object");
    s.has_match_labels = true;
    for (auto it = ml->begin(); it != ml->end(); ++it) {
      if (!it->is_string())
        return invalid(path(where, "matchLabels"), it.key(), *it, "want a string");
      s.match_labels[it.key()] = it->get<std::string>();
    }
  }
  if (const json* me = find_field(v, "matchExpressions"); me != nullptr && !me->is_null()) {
    if (!me->is_array()) return invalid(where, "matchExpressions", *me, "want an array");
    std::size_t i = 0;
    for (const auto& e : *me) {
      std::string w = path(where, "matchExpressions[" + std::to_string(i++) + "]");
      if (!e.is_object()) return invalid(w, "", e, "want an object");
      label_selector_requirement r;
      std::optional<std::string> key, op;
      if (auto ok = read_string(e, "key", w, key); !ok) return tl::unexpected(ok.error());
      if (auto ok = read_string(e, "operator", w, op); !ok) return tl::unexpected(ok.error());
      r.key = key.value_or("");
      r.op = op.value_or("");
      if (const json* vals = find_field(e, "values"); vals != nullptr && !vals->is_null()) {
        if (!vals->is_array()) return invalid(w, "values", *vals, "want an array of strings");
        for (const auto& x : *vals) {
          if (!x.is_string()) return invalid(w, "values", x, "want a string");
          r.values.push_back(x.get<std::string>());
        }
      }
      s.match_expressions.push_back(std::move(r));
    }
  }
  return s;
}

namespace {

result<void> read_policy(const json& obj, std::string_view key, std::string_view where,
                         std::optional<calculate_policy>& out, bool strict) {
  std::optional<std::string> s;
  if (auto ok = read_string(obj, key, where, s); !ok) return ok;
  if (!s) return {};
  out = calculate_policy_from(*s);
  if (strict && *out == calculate_policy::other) {
    return invalid(where, key, *find_field(obj, key), "must be usage, request or maxUsageRequest");
  }
  return {};
}

}  // namespace

result<colocation_strategy> read_colocation_strategy(const json& obj, std::string_view where,
                                                     bool strict) {
  colocation_strategy s;
  if (!obj.is_object()) return invalid(where, "", obj, "want an object");
  result<void> ok;
  if (!(ok = read_bool(obj, "enable", where, s.enable))) return tl::unexpected(ok.error());
  if (!(ok = read_int64(obj, "metricAggregateDurationSeconds", where,
                        s.metric_aggregate_duration_seconds))) {
    return tl::unexpected(ok.error());
  }
  if (!(ok = read_int64(obj, "metricReportIntervalSeconds", where,
                        s.metric_report_interval_seconds))) {
    return tl::unexpected(ok.error());
  }
  if (const json* p = find_field(obj, "metricAggregatePolicy"); p != nullptr && !p->is_null()) {
    if (!p->is_object()) return invalid(where, "metricAggregatePolicy", *p, "want an object");
    if (const json* d = find_field(*p, "durations"); d != nullptr && !d->is_null()) {
      std::string w = path(where, "metricAggregatePolicy");
      if (!d->is_array()) return invalid(w, "durations", *d, "want an array of durations");
      std::vector<std::string> ds;
      for (const auto& x : *d) {
        if (!x.is_string())
          return invalid(w, "durations", x, "want a duration string such as \"5m\"");
        ds.push_back(x.get<std::string>());
      }
      s.metric_aggregate_durations = std::move(ds);
    }
  }
  if (!(ok =
            read_string(obj, "metricMemoryCollectPolicy", where, s.metric_memory_collect_policy))) {
    return tl::unexpected(ok.error());
  }
  if (!(ok = read_int64(obj, "cpuReclaimThresholdPercent", where,
                        s.cpu_reclaim_threshold_percent))) {
    return tl::unexpected(ok.error());
  }
  if (!(ok = read_policy(obj, "cpuCalculatePolicy", where, s.cpu_calculate_policy, strict))) {
    return tl::unexpected(ok.error());
  }
  if (!(ok = read_int64(obj, "memoryReclaimThresholdPercent", where,
                        s.memory_reclaim_threshold_percent))) {
    return tl::unexpected(ok.error());
  }
  if (!(ok = read_policy(obj, "memoryCalculatePolicy", where, s.memory_calculate_policy, strict))) {
    return tl::unexpected(ok.error());
  }
  if (!(ok = read_int64(obj, "degradeTimeMinutes", where, s.degrade_time_minutes))) {
    return tl::unexpected(ok.error());
  }
  if (!(ok = read_int64(obj, "updateTimeThresholdSeconds", where,
                        s.update_time_threshold_seconds))) {
    return tl::unexpected(ok.error());
  }
  if (!(ok = read_double(obj, "resourceDiffThreshold", where, s.resource_diff_threshold))) {
    return tl::unexpected(ok.error());
  }
  std::optional<std::string> mode;
  if (!(ok = read_string(obj, "midReclaimMode", where, mode))) return tl::unexpected(ok.error());
  if (mode) {
    s.mid_reclaim_mode = *mode == "static" ? reclaim_mode::static_mode : reclaim_mode::other;
    if (strict && *s.mid_reclaim_mode == reclaim_mode::other) {
      return invalid(where, "midReclaimMode", *find_field(obj, "midReclaimMode"),
                     "must be \"static\" or unset");
    }
  }
  struct int_field {
    std::string_view key;
    std::optional<std::int64_t> colocation_strategy::*field;
  };
  static constexpr int_field ints[] = {
      {"midCPUThresholdPercent", &colocation_strategy::mid_cpu_threshold_percent},
      {"midMemoryThresholdPercent", &colocation_strategy::mid_memory_threshold_percent},
      {"midUnallocatedPercent", &colocation_strategy::mid_unallocated_percent},
      {"midStaticCPUReservedPercent", &colocation_strategy::mid_static_cpu_reserved_percent},
      {"midStaticMemoryReservedPercent", &colocation_strategy::mid_static_memory_reserved_percent},
      {"batchCPUThresholdPercent", &colocation_strategy::batch_cpu_threshold_percent},
      {"batchMemoryThresholdPercent", &colocation_strategy::batch_memory_threshold_percent},
  };
  for (const auto& f : ints) {
    if (!(ok = read_int64(obj, f.key, where, s.*(f.field)))) return tl::unexpected(ok.error());
  }
  return s;
}

result<json> parse_json(std::string_view text, std::string_view where) {
  // nlohmann parses iteratively, but dump() and our readers recurse: refuse absurd nesting first.
  constexpr int max_depth = 64;
  int depth = 0;
  bool in_string = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\') {
        ++i;
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '{' || c == '[') {
      if (++depth > max_depth) {
        return fail(errc::invalid_input, "malformed JSON: nesting deeper than 64 levels",
                    std::string(where));
      }
    } else if (c == '}' || c == ']') {
      --depth;
    }
  }
  try {
    return json::parse(text.begin(), text.end());
  } catch (const json::exception& e) {
    // nlohmann's message carries the byte position ("at line 1, column 7").
    return fail(errc::invalid_input, std::string("malformed JSON: ") + e.what(),
                std::string(where));
  } catch (const std::exception& e) {
    return fail(errc::invalid_input, std::string("malformed JSON: ") + e.what(),
                std::string(where));
  }
}

}  // namespace colony::slo_controller::internal
