#include "actors/slo_controller/colocation_strategy.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>

#include "actors/slo_controller/internal/json_fields.hpp"

namespace colony::slo_controller {

std::string_view to_string(calculate_policy p) noexcept {
  switch (p) {
    case calculate_policy::usage:
      return "usage";
    case calculate_policy::request:
      return "request";
    case calculate_policy::max_usage_request:
      return "maxUsageRequest";
    case calculate_policy::other:
      return "other";
  }
  return "other";
}

calculate_policy calculate_policy_from(std::string_view s) noexcept {
  if (s == "usage") return calculate_policy::usage;
  if (s == "request") return calculate_policy::request;
  if (s == "maxUsageRequest") return calculate_policy::max_usage_request;
  return calculate_policy::other;
}

// --- label selectors (k8s.io/apimachinery/pkg/apis/meta/v1 LabelSelectorAsSelector) ---

result<void> validate_selector(const label_selector& s, std::string_view where) {
  for (std::size_t i = 0; i < s.match_expressions.size(); ++i) {
    const auto& r = s.match_expressions[i];
    std::string w = std::string(where) + ".matchExpressions[" + std::to_string(i) + "]";
    if (r.key.empty())
      return fail(errc::invalid_input, "invalid value \"\" (key must not be empty)", w + ".key");
    if (r.op == "In" || r.op == "NotIn") {
      if (r.values.empty()) {
        return fail(errc::invalid_input,
                    "invalid value \"" + r.op + "\" (operator In/NotIn needs at least one value)",
                    w + ".operator");
      }
    } else if (r.op == "Exists" || r.op == "DoesNotExist") {
      if (!r.values.empty()) {
        return fail(errc::invalid_input,
                    "invalid value \"" + r.op + "\" (operator Exists/DoesNotExist takes no values)",
                    w + ".operator");
      }
    } else {
      return fail(
          errc::invalid_input,
          "invalid value \"" + r.op + "\" (operator must be In, NotIn, Exists or DoesNotExist)",
          w + ".operator");
    }
  }
  return {};
}

bool selector_matches(const label_selector& s, const node_labels& labels) {
  // A nil selector is labels.Nothing(); an invalid one fails to convert and is skipped.
  if (!s.present) return false;
  if (!validate_selector(s, "")) return false;
  for (const auto& [k, v] : s.match_labels) {
    auto it = labels.find(k);
    if (it == labels.end() || it->second != v) return false;
  }
  for (const auto& r : s.match_expressions) {
    auto it = labels.find(r.key);
    bool has = it != labels.end();
    bool in_set = has && std::find(r.values.begin(), r.values.end(), it->second) != r.values.end();
    if (r.op == "In" && !in_set) return false;
    if (r.op == "NotIn" && in_set) return false;
    if (r.op == "Exists" && !has) return false;
    if (r.op == "DoesNotExist" && has) return false;
  }
  return true;
}

// --- strategy ---

colocation_strategy colocation_strategy::defaults() {
  colocation_strategy s;
  s.enable = false;
  s.metric_aggregate_duration_seconds = 300;
  s.metric_report_interval_seconds = 60;
  s.metric_aggregate_durations = std::vector<std::string>{"5m", "10m", "30m"};
  s.metric_memory_collect_policy = "usageWithoutPageCache";
  s.cpu_reclaim_threshold_percent = 60;
  s.cpu_calculate_policy = calculate_policy::usage;
  s.mid_static_cpu_reserved_percent = 0;
  s.mid_static_memory_reserved_percent = 0;
  s.memory_reclaim_threshold_percent = 65;
  s.memory_calculate_policy = calculate_policy::usage;
  s.degrade_time_minutes = 15;
  s.update_time_threshold_seconds = 300;
  s.resource_diff_threshold = 0.1;
  s.mid_cpu_threshold_percent = 100;
  s.mid_memory_threshold_percent = 100;
  s.mid_unallocated_percent = 0;
  return s;
}

colocation_strategy merge(colocation_strategy base, const colocation_strategy& o) {
  auto over = [](auto& b, const auto& v) {
    if (v) b = v;
  };
  over(base.enable, o.enable);
  over(base.metric_aggregate_duration_seconds, o.metric_aggregate_duration_seconds);
  over(base.metric_report_interval_seconds, o.metric_report_interval_seconds);
  over(base.metric_aggregate_durations, o.metric_aggregate_durations);
  over(base.metric_memory_collect_policy, o.metric_memory_collect_policy);
  over(base.cpu_reclaim_threshold_percent, o.cpu_reclaim_threshold_percent);
  over(base.cpu_calculate_policy, o.cpu_calculate_policy);
  over(base.memory_reclaim_threshold_percent, o.memory_reclaim_threshold_percent);
  over(base.memory_calculate_policy, o.memory_calculate_policy);
  over(base.degrade_time_minutes, o.degrade_time_minutes);
  over(base.update_time_threshold_seconds, o.update_time_threshold_seconds);
  over(base.resource_diff_threshold, o.resource_diff_threshold);
  over(base.mid_reclaim_mode, o.mid_reclaim_mode);
  over(base.mid_cpu_threshold_percent, o.mid_cpu_threshold_percent);
  over(base.mid_memory_threshold_percent, o.mid_memory_threshold_percent);
  over(base.mid_unallocated_percent, o.mid_unallocated_percent);
  over(base.mid_static_cpu_reserved_percent, o.mid_static_cpu_reserved_percent);
  over(base.mid_static_memory_reserved_percent, o.mid_static_memory_reserved_percent);
  over(base.batch_cpu_threshold_percent, o.batch_cpu_threshold_percent);
  over(base.batch_memory_threshold_percent, o.batch_memory_threshold_percent);
  return base;
}

namespace {

constexpr std::int64_t kmax = std::numeric_limits<std::int64_t>::max();

// time.ParseDuration syntax (metav1.Duration): "0" or [-+]? ( digits [. digits] unit )+ with units
// ns, us, µs, μs, ms, s, m, h. Overflow is not checked (Go rejects > ~292 years).
bool is_go_duration(std::string_view s) {
  if (s == "0" || s == "+0" || s == "-0") return true;
  std::size_t i = 0;
  if (i < s.size() && (s[i] == '+' || s[i] == '-')) ++i;
  if (i >= s.size()) return false;
  while (i < s.size()) {
    std::size_t digits = 0;
    while (i < s.size() && s[i] >= '0' && s[i] <= '9') {
      ++i;
      ++digits;
    }
    if (i < s.size() && s[i] == '.') {
      ++i;
      while (i < s.size() && s[i] >= '0' && s[i] <= '9') {
        ++i;
        ++digits;
      }
    }
    if (digits == 0) return false;
    static constexpr std::string_view units[] = {"ns", "us", "\xC2\xB5s", "\xCE\xBCs",
                                                 "ms", "s",  "m",         "h"};
    bool matched = false;
    // Longest unit first matters only for "ms" vs "m": try two-char units before one-char ones.
    for (auto u : units) {
      if (s.substr(i, u.size()) == u) {
        // "m" must not swallow the "m" of "ms".
        if (u == "m" && s.substr(i, 2) == "ms") continue;
        i += u.size();
        matched = true;
        break;
      }
    }
    if (!matched) return false;
  }
  return true;
}

result<void> check_policy(std::string_view where, std::string_view key,
                          const std::optional<calculate_policy>& p, bool allow_request) {
  if (!p) return {};
  if (*p == calculate_policy::usage || *p == calculate_policy::max_usage_request) return {};
  if (*p == calculate_policy::request && allow_request) return {};
  std::string rule = allow_request ? "must be usage, request or maxUsageRequest"
                                   : "must be usage or maxUsageRequest";
  return fail(errc::invalid_input,
              "invalid value \"" + std::string(to_string(*p)) + "\" (" + rule + ")",
              internal::path(where, key));
}

}  // namespace

result<void> validate(const colocation_strategy& s, std::string_view where) {
  using internal::check_range;
  result<void> ok;
  if (!(ok = check_range(where, "metricAggregateDurationSeconds",
                         s.metric_aggregate_duration_seconds, 1, kmax)))
    return ok;
  if (!(ok = check_range(where, "metricReportIntervalSeconds", s.metric_report_interval_seconds, 1,
                         kmax)))
    return ok;
  if (s.metric_aggregate_durations) {
    for (const auto& d : *s.metric_aggregate_durations) {
      if (!is_go_duration(d)) {
        return fail(errc::invalid_input,
                    "invalid value \"" + d + "\" (want a Go duration such as \"5m\")",
                    internal::path(where, "metricAggregatePolicy.durations"));
      }
    }
  }
  if (s.metric_memory_collect_policy) {
    const auto& p = *s.metric_memory_collect_policy;
    if (p != "usageWithoutPageCache" && p != "usageWithHotPageCache" && p != "usageWithPageCache") {
      return fail(
          errc::invalid_input,
          "invalid value \"" + p +
              "\" (must be usageWithoutPageCache, usageWithHotPageCache or usageWithPageCache)",
          internal::path(where, "metricMemoryCollectPolicy"));
    }
  }
  if (!(ok = check_range(where, "cpuReclaimThresholdPercent", s.cpu_reclaim_threshold_percent, 0,
                         kmax)))
    return ok;
  if (!(ok = check_policy(where, "cpuCalculatePolicy", s.cpu_calculate_policy, false))) return ok;
  if (!(ok = check_range(where, "memoryReclaimThresholdPercent", s.memory_reclaim_threshold_percent,
                         0, kmax)))
    return ok;
  if (!(ok = check_policy(where, "memoryCalculatePolicy", s.memory_calculate_policy, true)))
    return ok;
  if (!(ok = check_range(where, "degradeTimeMinutes", s.degrade_time_minutes, 1, kmax))) return ok;
  if (!(ok = check_range(where, "updateTimeThresholdSeconds", s.update_time_threshold_seconds, 1,
                         kmax)))
    return ok;
  if (s.resource_diff_threshold) {
    double d = *s.resource_diff_threshold;
    if (!(d > 0 && d <= 1)) {
      return fail(errc::invalid_input,
                  "invalid value " + internal::render(nlohmann::json(d)) + " (must be in (0, 1])",
                  internal::path(where, "resourceDiffThreshold"));
    }
  }
  if (s.mid_reclaim_mode && *s.mid_reclaim_mode != reclaim_mode::static_mode) {
    return fail(errc::invalid_input, "invalid value (must be \"static\" or unset)",
                internal::path(where, "midReclaimMode"));
  }
  if (!(ok = check_range(where, "midCPUThresholdPercent", s.mid_cpu_threshold_percent, 0, 100)))
    return ok;
  if (!(ok = check_range(where, "midMemoryThresholdPercent", s.mid_memory_threshold_percent, 0,
                         100)))
    return ok;
  if (!(ok = check_range(where, "midUnallocatedPercent", s.mid_unallocated_percent, 0, 100)))
    return ok;
  if (!(ok = check_range(where, "midStaticCPUReservedPercent", s.mid_static_cpu_reserved_percent, 0,
                         100)))
    return ok;
  if (!(ok = check_range(where, "midStaticMemoryReservedPercent",
                         s.mid_static_memory_reserved_percent, 0, 100)))
    return ok;
  if (!(ok =
            check_range(where, "batchCPUThresholdPercent", s.batch_cpu_threshold_percent, 0, kmax)))
    return ok;
  if (!(ok = check_range(where, "batchMemoryThresholdPercent", s.batch_memory_threshold_percent, 0,
                         kmax)))
    return ok;
  return {};
}

std::optional<std::int64_t> node_reclaim_percent(const node_labels* labels, std::string_view key) {
  if (labels == nullptr) return std::nullopt;
  auto it = labels->find(key);
  if (it == labels->end()) return std::nullopt;
  std::string_view s = it->second;
  if (!s.empty() && s.front() == '+') s.remove_prefix(1);  // ParseFloat accepts a leading sign
  double v = 0;
  // from_chars: locale-independent, no leading whitespace (as strconv.ParseFloat).
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || ec != std::errc{} || ptr != s.data() + s.size()) return std::nullopt;
  if (!std::isfinite(v) || v < 0) return std::nullopt;
  double scaled = v * 100;
  if (!(scaled < 9223372036854775808.0)) return std::nullopt;
  return static_cast<std::int64_t>(scaled);  // int64(v * 100): "0.29" gives 28
}

colocation_strategy node_colocation_strategy(const colocation_config& cfg,
                                             const node_strategy_inputs& node) {
  colocation_strategy s = cfg.cluster;
  static const node_labels no_labels;
  const node_labels& labels = node.labels != nullptr ? *node.labels : no_labels;
  for (const auto& nc : cfg.node_configs) {
    if (selector_matches(nc.node_selector, labels)) {
      s = merge(s, nc.strategy);
      break;  // the first matching nodeConfigs entry wins
    }
  }
  if (node.colocation_strategy_annotation) {
    auto doc = internal::parse_json(*node.colocation_strategy_annotation,
                                    annotation_node_colocation_strategy);
    if (doc) {
      auto overlay =
          internal::read_colocation_strategy(*doc, annotation_node_colocation_strategy, false);
      if (overlay) s = merge(s, *overlay);  // unparsable annotation: ignored, as in Koordinator
    }
  }
  if (auto p = node_reclaim_percent(node.labels, label_cpu_reclaim_ratio))
    s.cpu_reclaim_threshold_percent = p;
  if (auto p = node_reclaim_percent(node.labels, label_memory_reclaim_ratio))
    s.memory_reclaim_threshold_percent = p;
  if (auto p = node_reclaim_percent(node.labels, label_mid_static_cpu_reserved_ratio)) {
    s.mid_static_cpu_reserved_percent = p;
  }
  if (auto p = node_reclaim_percent(node.labels, label_mid_static_memory_reserved_ratio)) {
    s.mid_static_memory_reserved_percent = p;
  }
  return s;
}

bool is_colocation_disabled(const colocation_config& cfg,
                            const colocation_strategy& node_strategy) {
  if (!cfg.cluster.enable || !*cfg.cluster.enable) return true;
  if (!node_strategy.enable) return true;
  return !*node_strategy.enable;
}

}  // namespace colony::slo_controller
