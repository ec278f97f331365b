#include "actors/descheduler/low_node_load_args.hpp"

#include <fmt/format.h>

#include "messages/names.hpp"

namespace colony::descheduler {

void set_defaults(low_node_load_args& a) {
  if (!a.node_fit) a.node_fit = true;
  const anomaly_condition def{};
  if (!a.anomaly) {
    a.anomaly = def;
  } else if (a.anomaly->consecutive_abnormalities == 0) {
    // An else-if chain in Koordinator: when both counts are 0 only this one is defaulted.
    a.anomaly->consecutive_abnormalities = def.consecutive_abnormalities;
  } else if (a.anomaly->consecutive_normalities == 0) {
    a.anomaly->consecutive_normalities = def.consecutive_normalities;
  }
  if (!a.detector_cache_timeout_ms) a.detector_cache_timeout_ms = 5 * 60'000;
  if (!a.node_metric_expiration_seconds) a.node_metric_expiration_seconds = 180;
  weight_map dw{{std::string(names::cpu), 1}, {std::string(names::memory), 1}};
  if (a.low_thresholds)
    for (const auto& [r, p] : *a.low_thresholds) dw[r] = 1;
  if (a.high_thresholds)
    for (const auto& [r, p] : *a.high_thresholds) dw[r] = 1;
  if (!a.resource_weights) {
    a.resource_weights = dw;
  } else {
    for (const auto& [r, w] : dw) {
      auto& v = (*a.resource_weights)[r];
      if (v <= 0) v = w;
    }
  }
  for (auto& pool : a.node_pools) {
    if (!pool.high_thresholds) pool.high_thresholds = a.high_thresholds;
    if (!pool.low_thresholds) pool.low_thresholds = a.low_thresholds;
    if (!pool.prod_high_thresholds) pool.prod_high_thresholds = a.prod_high_thresholds;
    if (!pool.prod_low_thresholds) pool.prod_low_thresholds = a.prod_low_thresholds;
    if (!pool.resource_weights) pool.resource_weights = a.resource_weights;
    if (!pool.anomaly) {
      pool.anomaly = a.anomaly;
    } else {
      if (pool.anomaly->consecutive_abnormalities == 0)
        pool.anomaly->consecutive_abnormalities = a.anomaly->consecutive_abnormalities;
      if (pool.anomaly->consecutive_normalities == 0)
        pool.anomaly->consecutive_normalities = a.anomaly->consecutive_normalities;
    }
  }
  // Conversion: the top-level fields become the first pool and are cleared.
  low_node_load_node_pool d;
  d.name = std::string(default_node_pool_name);
  d.node_selector = std::move(a.node_selector);
  d.use_deviation_thresholds = a.use_deviation_thresholds;
  d.low_thresholds = std::move(a.low_thresholds);
  d.high_thresholds = std::move(a.high_thresholds);
  d.prod_low_thresholds = std::move(a.prod_low_thresholds);
  d.prod_high_thresholds = std::move(a.prod_high_thresholds);
  d.resource_weights = a.resource_weights;
  d.anomaly = a.anomaly;
  a.node_selector.reset();
  a.use_deviation_thresholds = false;
  a.low_thresholds.reset();
  a.high_thresholds.reset();
  a.prod_low_thresholds.reset();
  a.prod_high_thresholds.reset();
  a.node_pools.insert(a.node_pools.begin(), std::move(d));
}

namespace {

result<void> invalid(const std::string& field, const std::string& why) {
  return fail(errc::invalid_input, field + ": " + why, field);
}

result<void> check_percentages(const std::optional<resource_thresholds>& t,
                               const std::string& field) {
  if (!t) return {};
  for (const auto& [r, p] : *t) {
    const std::string f = fmt::format("{}[{}]", field, r);
    if (p < 0) return invalid(f, fmt::format("{} is below 0 (a percentage of capacity)", p));
    if (p > 100) return invalid(f, fmt::format("{} is above 100 (a percentage of capacity)", p));
  }
  return {};
}

result<void> check_not_above(const std::optional<resource_thresholds>& low,
                             const std::optional<resource_thresholds>& high,
                             const std::string& field, const std::string& high_name) {
  if (!low || !high) return {};
  for (const auto& [r, p] : *low) {
    const auto it = high->find(r);
    if (it != high->end() && p > it->second)
      return invalid(fmt::format("{}[{}]", field, r),
                     fmt::format("{} is above {}[{}] = {}", p, high_name, r, it->second));
  }
  return {};
}

}  // namespace

result<void> validate(const low_node_load_args& a) {
  if (a.number_of_nodes < 0) return invalid("numberOfNodes", "must be greater than or equal to 0");
  if (a.node_metric_expiration_seconds && *a.node_metric_expiration_seconds <= 0)
    return invalid("nodeMetricExpirationSeconds", "must be a positive number of seconds");
  if (!a.evictable_namespaces_include.empty() && !a.evictable_namespaces_exclude.empty())
    return invalid("evictableNamespaces", "only one of include and exclude may be set");
  for (std::size_t i = 0; i < a.pod_selectors.size(); ++i)
    if (a.pod_selectors[i].selector)
      if (auto ok = admission::validate_label_selector(*a.pod_selectors[i].selector,
                                                       fmt::format("podSelectors[{}].selector", i));
          !ok)
        return tl::unexpected(ok.error());
  for (std::size_t i = 0; i < a.node_pools.size(); ++i) {
    const auto& p = a.node_pools[i];
    // The converted default pool is the top level as written; the others are nodePools[i - 1].
    const bool top = i == 0 && p.name == default_node_pool_name;
    const std::string base = top ? std::string() : fmt::format("nodePools[{}]", i - 1);
    auto field = [&](const char* f) { return top ? std::string(f) : base + "." + f; };
    if (p.node_selector)
      if (auto ok = admission::validate_label_selector(*p.node_selector, field("nodeSelector"));
          !ok)
        return tl::unexpected(ok.error());
    for (const auto* t :
         {&p.high_thresholds, &p.low_thresholds, &p.prod_high_thresholds, &p.prod_low_thresholds}) {
      const char* n = t == &p.high_thresholds        ? "highThresholds"
                      : t == &p.low_thresholds       ? "lowThresholds"
                      : t == &p.prod_high_thresholds ? "prodHighThresholds"
                                                     : "prodLowThresholds";
      if (auto ok = check_percentages(*t, field(n)); !ok) return ok;
    }
    if (auto ok = check_not_above(p.low_thresholds, p.high_thresholds, field("lowThresholds"),
                                  "highThresholds");
        !ok)
      return ok;
    if (auto ok = check_not_above(p.prod_high_thresholds, p.high_thresholds,
                                  field("prodHighThresholds"), "highThresholds");
        !ok)
      return ok;
    if (auto ok = check_not_above(p.prod_low_thresholds, p.prod_high_thresholds,
                                  field("prodLowThresholds"), "prodHighThresholds");
        !ok)
      return ok;
    if (p.anomaly && p.anomaly->consecutive_abnormalities <= 0)
      return invalid(field("anomalyCondition.consecutiveAbnormalities"), "must be greater than 0");
    if (p.anomaly && p.anomaly->consecutive_normalities <= 0)
      return invalid(field("anomalyCondition.consecutiveNormalities"), "must be greater than 0");
  }
  return {};
}

}  // namespace colony::descheduler
