#include "actors/descheduler/migration_controller_args.hpp"

#include <algorithm>
#include <array>
#include <charconv>

#include <fmt/format.h>

namespace colony::descheduler {

result<int_or_percent> parse_int_or_percent(std::string_view text, std::string_view field) {
  int_or_percent v;
  std::string_view digits = text;
  if (!digits.empty() && digits.back() == '%') {
    v.percent = true;
    digits.remove_suffix(1);
  }
  const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), v.value);
  if (digits.empty() || ec != std::errc() || end != digits.data() + digits.size() || v.value < 0)
    return fail(errc::invalid_input,
                fmt::format("{}: '{}' is not a non-negative integer or percentage", field, text),
                std::string(field));
  return v;
}

std::int64_t get_max_unavailable(std::int64_t replicas, const std::optional<int_or_percent>& v) {
  std::int64_t n = 0;
  if (!v) {
    if (replicas > 10)
      n = replicas / 10;  // 10 %, rounded down
    else if (replicas >= 4)
      n = 2;
    else
      n = 1;
  } else if (v->percent) {
    n = replicas * v->value / 100;
  } else {
    n = v->value;
  }
  if (n == 0) n = 1;
  return std::min(n, replicas);
}

bool is_eviction_gate(std::string_view gate) {
  static constexpr std::array<std::string_view, 14> gates = {"MaxUnavailablePerWorkload",
                                                             "MaxMigratingPerWorkload",
                                                             "MaxMigratingPerNode",
                                                             "MaxMigratingPerNamespace",
                                                             "MaxMigratingGlobally",
                                                             "ExpectedReplicas",
                                                             "PVC",
                                                             "BarePods",
                                                             "LocalStorage",
                                                             "SystemCritical",
                                                             "PriorityThreshold",
                                                             "LabelSelector",
                                                             "Namespaces",
                                                             "NodeFit"};
  return std::find(gates.begin(), gates.end(), gate) != gates.end();
}

result<void> validate(const migration_controller_args& a) {
  auto bad = [](const std::string& field, const std::string& why) -> result<void> {
    return fail(errc::invalid_input, field + ": " + why, field);
  };
  if (a.default_job_mode != job_mode_reservation_first &&
      a.default_job_mode != job_mode_evict_directly)
    return bad("defaultJobMode",
               "'" + a.default_job_mode + "' is not one of ReservationFirst, EvictDirectly");
  if (a.default_job_ttl_ms < 0) return bad("defaultJobTTL", "must not be negative");
  if (a.max_concurrent_reconciles <= 0) return bad("maxConcurrentReconciles", "must be above 0");
  for (const auto* f :
       {&a.max_migrating_per_node, &a.max_migrating_per_namespace, &a.max_migrating_globally})
    if (*f && **f < 0)
      return bad(f == &a.max_migrating_per_node        ? "maxMigratingPerNode"
                 : f == &a.max_migrating_per_namespace ? "maxMigratingPerNamespace"
                                                       : "maxMigratingGlobally",
                 "must not be negative");
  if (a.evict_qps < 0) return bad("evictQPS", "must not be negative");
  if (a.arbitration_interval_ms <= 0) return bad("arbitrationArgs.interval", "must be above 0");
  if (a.eviction_policy != "Eviction" && a.eviction_policy != "Delete" &&
      a.eviction_policy != "SoftEviction")
    return bad("evictionPolicy",
               "'" + a.eviction_policy + "' is not one of Eviction, Delete, SoftEviction");
  for (const auto& g : a.skip_eviction_gates)
    if (!is_eviction_gate(g)) return bad("skipEvictionGates", "unknown gate '" + g + "'");
  if (!a.filter.namespaces_include.empty() && !a.filter.namespaces_exclude.empty())
    return bad("namespaces", "only one of include and exclude may be set");
  return {};
}

}  // namespace colony::descheduler
