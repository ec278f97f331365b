#include "actors/descheduler/descheduler_config.hpp"

#include <charconv>
#include <set>

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

namespace colony::descheduler {

namespace {

using node = YAML::Node;

tl::unexpected<error> bad(const std::string& field, const std::string& why) {
  return tl::unexpected(error{errc::invalid_input, field + ": " + why, field});
}

std::string sub(const std::string& base, std::string_view key) {
  return base.empty() ? std::string(key) : base + "." + std::string(key);
}

result<std::string> str(const node& n, const std::string& f) {
  if (!n.IsScalar()) return bad(f, "expected a string");
  return n.as<std::string>();
}

result<bool> boolean(const node& n, const std::string& f) {
  bool v = false;
  if (!n.IsScalar() || !YAML::convert<bool>::decode(n, v)) return bad(f, "expected true or false");
  return v;
}

result<std::int64_t> integer(const node& n, const std::string& f) {
  if (!n.IsScalar()) return bad(f, "expected an integer");
  const std::string s = n.as<std::string>();
  std::int64_t v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || ec != std::errc() || end != s.data() + s.size())
    return bad(f, "'" + s + "' is not an integer");
  return v;
}

result<double> number(const node& n, const std::string& f) {
  if (!n.IsScalar()) return bad(f, "expected a number");
  double v = 0;
  if (!YAML::convert<double>::decode(n, v))
    return bad(f, "'" + n.as<std::string>() + "' is not a number");
  return v;
}

result<std::vector<std::string>> strings(const node& n, const std::string& f) {
  if (!n.IsSequence()) return bad(f, "expected a list of strings");
  std::vector<std::string> v;
  for (std::size_t i = 0; i < n.size(); ++i) {
    auto s = str(n[i], fmt::format("{}[{}]", f, i));
    if (!s) return tl::unexpected(s.error());
    v.push_back(*s);
  }
  return v;
}

// Refuses keys outside `known` (a misspelt field is an error, not a silent default).
result<void> known_keys(const node& n, const std::string& f,
                        std::initializer_list<const char*> known) {
  if (!n.IsMap()) return bad(f.empty() ? "(document)" : f, "expected a mapping");
  for (const auto& kv : n) {
    const auto k = kv.first.as<std::string>();
    bool ok = false;
    for (const char* x : known) ok = ok || k == x;
    if (!ok) return bad(sub(f, k), "unknown field");
  }
  return {};
}

result<admission::label_selector> selector(const node& n, const std::string& f) {
  if (auto ok = known_keys(n, f, {"matchLabels", "matchExpressions"}); !ok)
    return tl::unexpected(ok.error());
  admission::label_selector s;
  if (const node ml = n["matchLabels"]; ml) {
    if (!ml.IsMap()) return bad(f + ".matchLabels", "expected a mapping");
    for (const auto& kv : ml)
      s.match_labels[kv.first.as<std::string>()] = kv.second.as<std::string>();
  }
  if (const node me = n["matchExpressions"]; me) {
    if (!me.IsSequence()) return bad(f + ".matchExpressions", "expected a list");
    for (std::size_t i = 0; i < me.size(); ++i) {
      const std::string fi = fmt::format("{}.matchExpressions[{}]", f, i);
      admission::label_selector_requirement r;
      auto key = str(me[i]["key"], fi + ".key");
      if (!key) return tl::unexpected(key.error());
      r.key = *key;
      auto op = str(me[i]["operator"], fi + ".operator");
      if (!op) return tl::unexpected(op.error());
      if (*op == "In")
        r.op = admission::selector_operator::in;
      else if (*op == "NotIn")
        r.op = admission::selector_operator::not_in;
      else if (*op == "Exists")
        r.op = admission::selector_operator::exists;
      else if (*op == "DoesNotExist")
        r.op = admission::selector_operator::does_not_exist;
      else
        return bad(fi + ".operator", "'" + *op + "' is not one of In, NotIn, Exists, DoesNotExist");
      if (const node vs = me[i]["values"]; vs) {
        auto v = strings(vs, fi + ".values");
        if (!v) return tl::unexpected(v.error());
        r.values = std::move(*v);
      }
      s.match_expressions.push_back(std::move(r));
    }
  }
  if (auto ok = admission::validate_label_selector(s, f); !ok) return tl::unexpected(ok.error());
  return s;
}

// A mapping of resource name to a value read by `read` (a percentage, a weight).
template <class Map, class Read>
result<Map> resource_map(const node& n, const std::string& f, const char* what, Read read) {
  if (!n.IsMap()) return bad(f, std::string("expected a mapping of resource name to ") + what);
  Map m;
  for (const auto& kv : n) {
    const auto r = kv.first.as<std::string>();
    auto v = read(kv.second, fmt::format("{}[{}]", f, r));
    if (!v) return tl::unexpected(v.error());
    m[r] = *v;
  }
  return m;
}

result<resource_thresholds> thresholds(const node& n, const std::string& f) {
  return resource_map<resource_thresholds>(n, f, "percentage", number);
}

result<weight_map> weights(const node& n, const std::string& f) {
  return resource_map<weight_map>(n, f, "weight", integer);
}

result<anomaly_condition> anomaly(const node& n, const std::string& f) {
  if (auto ok = known_keys(n, f, {"timeout", "consecutiveAbnormalities", "consecutiveNormalities"});
      !ok)
    return tl::unexpected(ok.error());
  anomaly_condition c;
  c.consecutive_abnormalities = 0;
  c.consecutive_normalities = 0;
  if (const node t = n["timeout"]; t) {
    auto s = str(t, f + ".timeout");
    if (!s) return tl::unexpected(s.error());
    auto d = parse_go_duration(*s, f + ".timeout");
    if (!d) return tl::unexpected(d.error());
    c.timeout_ms = *d;
  }
  for (auto [key, out] : {std::pair{"consecutiveAbnormalities", &c.consecutive_abnormalities},
                          std::pair{"consecutiveNormalities", &c.consecutive_normalities}}) {
    if (const node v = n[key]; v) {
      auto i = integer(v, sub(f, key));
      if (!i) return tl::unexpected(i.error());
      if (*i < 0) return bad(sub(f, key), "must not be negative");
      *out = *i;
    }
  }
  return c;
}

// The pool fields shared by LowNodeLoadArgs (top level) and LowNodeLoadNodePool.
template <class T>
result<void> pool_fields(const node& n, const std::string& f, T& p) {
  if (const node v = n["nodeSelector"]; v) {
    auto s = selector(v, f + ".nodeSelector");
    if (!s) return tl::unexpected(s.error());
    p.node_selector = std::move(*s);
  }
  if (const node v = n["useDeviationThresholds"]; v) {
    auto b = boolean(v, f + ".useDeviationThresholds");
    if (!b) return tl::unexpected(b.error());
    p.use_deviation_thresholds = *b;
  }
  for (auto [key, out] : {std::pair{"lowThresholds", &p.low_thresholds},
                          std::pair{"highThresholds", &p.high_thresholds},
                          std::pair{"prodLowThresholds", &p.prod_low_thresholds},
                          std::pair{"prodHighThresholds", &p.prod_high_thresholds}}) {
    if (const node v = n[key]; v) {
      auto t = thresholds(v, sub(f, key));
      if (!t) return tl::unexpected(t.error());
      *out = std::move(*t);
    }
  }
  if (const node v = n["resourceWeights"]; v) {
    auto w = weights(v, f + ".resourceWeights");
    if (!w) return tl::unexpected(w.error());
    p.resource_weights = std::move(*w);
  }
  if (const node v = n["anomalyCondition"]; v) {
    auto a = anomaly(v, f + ".anomalyCondition");
    if (!a) return tl::unexpected(a.error());
    p.anomaly = *a;
  }
  return {};
}

result<low_node_load_args> low_node_load_of(const node& n, const std::string& f) {
  if (auto ok =
          known_keys(n, f,
                     {"apiVersion", "kind", "paused", "dryRun", "numberOfNodes",
                      "nodeMetricExpirationSeconds", "evictableNamespaces", "nodeSelector",
                      "podSelectors", "nodeFit", "useDeviationThresholds", "highThresholds",
                      "lowThresholds", "prodHighThresholds", "prodLowThresholds", "resourceWeights",
                      "anomalyCondition", "detectorCacheTimeout", "nodePools"});
      !ok)
    return tl::unexpected(ok.error());
  low_node_load_args a;
  for (auto [key, out] : {std::pair{"paused", &a.paused}, std::pair{"dryRun", &a.dry_run}}) {
    if (const node v = n[key]; v) {
      auto b = boolean(v, sub(f, key));
      if (!b) return tl::unexpected(b.error());
      *out = *b;
    }
  }
  if (const node v = n["nodeFit"]; v) {
    auto b = boolean(v, f + ".nodeFit");
    if (!b) return tl::unexpected(b.error());
    a.node_fit = *b;
  }
  if (const node v = n["numberOfNodes"]; v) {
    auto i = integer(v, f + ".numberOfNodes");
    if (!i) return tl::unexpected(i.error());
    a.number_of_nodes = *i;
  }
  if (const node v = n["nodeMetricExpirationSeconds"]; v) {
    auto i = integer(v, f + ".nodeMetricExpirationSeconds");
    if (!i) return tl::unexpected(i.error());
    a.node_metric_expiration_seconds = *i;
  }
  if (const node v = n["detectorCacheTimeout"]; v) {
    auto s = str(v, f + ".detectorCacheTimeout");
    if (!s) return tl::unexpected(s.error());
    auto d = parse_go_duration(*s, f + ".detectorCacheTimeout");
    if (!d) return tl::unexpected(d.error());
    a.detector_cache_timeout_ms = *d;
  }
  if (const node v = n["evictableNamespaces"]; v) {
    if (auto ok = known_keys(v, f + ".evictableNamespaces", {"include", "exclude"}); !ok)
      return tl::unexpected(ok.error());
    for (auto [key, out] : {std::pair{"include", &a.evictable_namespaces_include},
                            std::pair{"exclude", &a.evictable_namespaces_exclude}}) {
      if (const node l = v[key]; l) {
        auto s = strings(l, f + ".evictableNamespaces." + key);
        if (!s) return tl::unexpected(s.error());
        *out = std::move(*s);
      }
    }
  }
  if (const node v = n["podSelectors"]; v) {
    if (!v.IsSequence()) return bad(f + ".podSelectors", "expected a list");
    for (std::size_t i = 0; i < v.size(); ++i) {
      const std::string fi = fmt::format("{}.podSelectors[{}]", f, i);
      pod_selector ps;
      if (const node nm = v[i]["name"]; nm) ps.name = nm.as<std::string>();
      if (const node s = v[i]["selector"]; s) {
        auto sel = selector(s, fi + ".selector");
        if (!sel) return tl::unexpected(sel.error());
        ps.selector = std::move(*sel);
      }
      a.pod_selectors.push_back(std::move(ps));
    }
  }
  if (auto ok = pool_fields(n, f, a); !ok) return tl::unexpected(ok.error());
  if (const node v = n["nodePools"]; v) {
    if (!v.IsSequence()) return bad(f + ".nodePools", "expected a list");
    for (std::size_t i = 0; i < v.size(); ++i) {
      const std::string fi = fmt::format("{}.nodePools[{}]", f, i);
      if (auto ok = known_keys(
              v[i], fi,
              {"name", "nodeSelector", "useDeviationThresholds", "highThresholds", "lowThresholds",
               "prodHighThresholds", "prodLowThresholds", "resourceWeights", "anomalyCondition"});
          !ok)
        return tl::unexpected(ok.error());
      low_node_load_node_pool p;
      if (const node nm = v[i]["name"]; nm) p.name = nm.as<std::string>();
      if (auto ok = pool_fields(v[i], fi, p); !ok) return tl::unexpected(ok.error());
      a.node_pools.push_back(std::move(p));
    }
  }
  set_defaults(a);
  if (auto ok = validate(a); !ok) {
    auto e = ok.error();
    e.message = f + "." + e.message;
    e.where = f + "." + e.where;
    return tl::unexpected(std::move(e));
  }
  return a;
}

result<std::optional<std::int64_t>> optional_int(const node& n, const char* key,
                                                 const std::string& f) {
  if (const node v = n[key]; v) {
    auto i = integer(v, sub(f, key));
    if (!i) return tl::unexpected(i.error());
    return std::optional<std::int64_t>(*i);
  }
  return std::optional<std::int64_t>{};
}

result<migration_controller_args> migration_of(const node& n, const std::string& f) {
  if (auto ok = known_keys(n, f,
                           {"apiVersion",
                            "kind",
                            "maxConcurrentReconciles",
                            "maxMigratingPerNode",
                            "maxMigratingPerNamespace",
                            "maxMigratingPerWorkload",
                            "maxUnavailablePerWorkload",
                            "maxMigratingGlobally",
                            "skipCheckExpectedReplicas",
                            "skipEvictionGates",
                            "defaultJobMode",
                            "defaultJobTTL",
                            "schedulerNames",
                            "evictionPolicy",
                            "evictQPS",
                            "evictBurst",
                            "objectLimiters",
                            "arbitrationArgs",
                            "evictLocalStoragePods",
                            "evictSystemCriticalPods",
                            "ignorePvcPods",
                            "evictFailedBarePods",
                            "evictAllBarePods",
                            "priorityThreshold",
                            "labelSelector",
                            "namespaces",
                            "nodeFit",
                            "nodeSelector",
                            "paused",
                            "dryRun",
                            "defaultDeleteOptions",
                            "maxNoOfPodsToEvictPerNode",
                            "maxNoOfPodsToEvictPerNamespace"});
      !ok)
    return tl::unexpected(ok.error());
  migration_controller_args a;
  for (auto [key, out] : {std::pair{"maxMigratingPerNode", &a.max_migrating_per_node},
                          std::pair{"maxMigratingPerNamespace", &a.max_migrating_per_namespace},
                          std::pair{"maxMigratingGlobally", &a.max_migrating_globally}}) {
    auto v = optional_int(n, key, f);
    if (!v) return tl::unexpected(v.error());
    if (*v) *out = **v;
  }
  if (auto v = optional_int(n, "maxConcurrentReconciles", f); !v)
    return tl::unexpected(v.error());
  else if (*v)
    a.max_concurrent_reconciles = **v;
  if (auto v = optional_int(n, "evictBurst", f); !v)
    return tl::unexpected(v.error());
  else if (*v)
    a.evict_burst = **v;
  for (auto [key, out] :
       {std::pair{"maxMigratingPerWorkload", &a.max_migrating_per_workload},
        std::pair{"maxUnavailablePerWorkload", &a.max_unavailable_per_workload}}) {
    if (const node v = n[key]; v) {
      auto s = str(v, sub(f, key));
      if (!s) return tl::unexpected(s.error());
      auto p = parse_int_or_percent(*s, sub(f, key));
      if (!p) return tl::unexpected(p.error());
      *out = *p;
    }
  }
  for (auto [key, out] :
       {std::pair{"skipCheckExpectedReplicas", &a.skip_check_expected_replicas},
        std::pair{"evictLocalStoragePods", &a.filter.evict_local_storage_pods},
        std::pair{"evictSystemCriticalPods", &a.filter.evict_system_critical_pods},
        std::pair{"ignorePvcPods", &a.filter.ignore_pvc_pods},
        std::pair{"evictFailedBarePods", &a.filter.evict_failed_bare_pods},
        std::pair{"evictAllBarePods", &a.filter.evict_all_bare_pods},
        std::pair{"nodeFit", &a.node_fit}}) {
    if (const node v = n[key]; v) {
      auto b = boolean(v, sub(f, key));
      if (!b) return tl::unexpected(b.error());
      *out = *b;
    }
  }
  if (const node v = n["skipEvictionGates"]; v) {
    auto s = strings(v, f + ".skipEvictionGates");
    if (!s) return tl::unexpected(s.error());
    a.skip_eviction_gates.insert(s->begin(), s->end());
  }
  if (const node v = n["defaultJobMode"]; v) {
    auto s = str(v, f + ".defaultJobMode");
    if (!s) return tl::unexpected(s.error());
    a.default_job_mode = *s;
  }
  if (const node v = n["defaultJobTTL"]; v) {
    auto s = str(v, f + ".defaultJobTTL");
    if (!s) return tl::unexpected(s.error());
    auto d = parse_go_duration(*s, f + ".defaultJobTTL");
    if (!d) return tl::unexpected(d.error());
    a.default_job_ttl_ms = *d;
  }
  if (const node v = n["schedulerNames"]; v) {
    auto s = strings(v, f + ".schedulerNames");
    if (!s) return tl::unexpected(s.error());
    a.scheduler_names = std::move(*s);
  }
  if (const node v = n["evictionPolicy"]; v) {
    auto s = str(v, f + ".evictionPolicy");
    if (!s) return tl::unexpected(s.error());
    a.eviction_policy = *s;
  }
  if (const node v = n["evictQPS"]; v) {
    auto d = number(v, f + ".evictQPS");
    if (!d) return tl::unexpected(d.error());
    a.evict_qps = *d;
  }
  if (const node v = n["priorityThreshold"]; v) {
    if (auto ok = known_keys(v, f + ".priorityThreshold", {"value", "name"}); !ok)
      return tl::unexpected(ok.error());
    if (const node x = v["value"]; x) {
      auto i = integer(x, f + ".priorityThreshold.value");
      if (!i) return tl::unexpected(i.error());
      a.filter.priority_threshold = static_cast<std::int32_t>(*i);
    }
  }
  if (const node v = n["labelSelector"]; v) {
    auto s = selector(v, f + ".labelSelector");
    if (!s) return tl::unexpected(s.error());
    a.filter.label_selector = std::move(*s);
  }
  if (const node v = n["namespaces"]; v) {
    if (auto ok = known_keys(v, f + ".namespaces", {"include", "exclude"}); !ok)
      return tl::unexpected(ok.error());
    for (auto [key, out] : {std::pair{"include", &a.filter.namespaces_include},
                            std::pair{"exclude", &a.filter.namespaces_exclude}}) {
      if (const node l = v[key]; l) {
        auto s = strings(l, f + ".namespaces." + key);
        if (!s) return tl::unexpected(s.error());
        *out = std::move(*s);
      }
    }
  }
  if (const node v = n["arbitrationArgs"]; v) {
    if (auto ok = known_keys(v, f + ".arbitrationArgs", {"enabled", "interval"}); !ok)
      return tl::unexpected(ok.error());
    if (const node x = v["interval"]; x) {
      auto s = str(x, f + ".arbitrationArgs.interval");
      if (!s) return tl::unexpected(s.error());
      auto d = parse_go_duration(*s, f + ".arbitrationArgs.interval");
      if (!d) return tl::unexpected(d.error());
      a.arbitration_interval_ms = *d;
    }
  }
  if (const node v = n["objectLimiters"]; v) {
    if (auto ok = known_keys(v, f + ".objectLimiters", {"workload", "namespace"}); !ok)
      return tl::unexpected(ok.error());
    for (auto [key, out] : {std::pair{"workload", &a.workload_limiter},
                            std::pair{"namespace", &a.namespace_limiter}}) {
      const node l = v[key];
      if (!l) {
        out->reset();
        continue;
      }
      const std::string fl = f + ".objectLimiters." + key;
      if (auto ok = known_keys(l, fl, {"duration", "maxMigrating", "burst"}); !ok)
        return tl::unexpected(ok.error());
      object_limiter_args o;
      if (const node x = l["duration"]; x) {
        auto s = str(x, fl + ".duration");
        if (!s) return tl::unexpected(s.error());
        auto d = parse_go_duration(*s, fl + ".duration");
        if (!d) return tl::unexpected(d.error());
        o.duration_ms = *d;
      }
      if (const node x = l["maxMigrating"]; x) {
        auto p = parse_int_or_percent(x.as<std::string>(), fl + ".maxMigrating");
        if (!p) return tl::unexpected(p.error());
        o.max_migrating = *p;
      }
      if (auto b = optional_int(l, "burst", fl); !b)
        return tl::unexpected(b.error());
      else if (*b)
        o.burst = **b;
      *out = o;
    }
  }
  if (auto ok = validate(a); !ok) {
    auto e = ok.error();
    e.message = f + "." + e.message;
    e.where = f + "." + e.where;
    return tl::unexpected(std::move(e));
  }
  return a;
}

}  // namespace

result<std::int64_t> parse_go_duration(std::string_view text, std::string_view field) {
  const std::string f(field);
  if (text.empty()) return bad(f, "empty duration");
  if (text == "0") return 0;
  double total = 0;
  std::size_t i = 0;
  while (i < text.size()) {
    std::size_t j = i;
    while (j < text.size() && (std::isdigit(static_cast<unsigned char>(text[j])) || text[j] == '.'))
      ++j;
    if (j == i)
      return bad(f, "'" + std::string(text) + "' is not a duration (e.g. 10s, 5m, 500ms)");
    double v = 0;
    const auto [end, ec] = std::from_chars(text.data() + i, text.data() + j, v);
    if (ec != std::errc() || end != text.data() + j)
      return bad(f, "'" + std::string(text) + "' is not a duration");
    std::size_t k = j;
    while (k < text.size() && std::isalpha(static_cast<unsigned char>(text[k]))) ++k;
    const std::string_view unit = text.substr(j, k - j);
    double ms = 0;
    if (unit == "h")
      ms = 3'600'000;
    else if (unit == "m")
      ms = 60'000;
    else if (unit == "s")
      ms = 1000;
    else if (unit == "ms")
      ms = 1;
    else
      return bad(f, "'" + std::string(text) + "': unit must be one of h, m, s, ms");
    total += v * ms;
    i = k;
  }
  return static_cast<std::int64_t>(total);
}

result<descheduler_config> parse_descheduler_config(std::string_view yaml) {
  node root;
  try {
    root = YAML::Load(std::string(yaml));
  } catch (const YAML::Exception& e) {
    return fail(errc::invalid_input,
                fmt::format("{}:{}: {}", e.mark.line + 1, e.mark.column + 1, e.msg), "(document)");
  }
  if (auto ok =
          known_keys(root, "",
                     {"apiVersion", "kind", "deschedulingInterval", "dryRun", "profiles",
                      "nodeSelector", "maxNoOfPodsToEvictPerNode", "maxNoOfPodsToEvictPerNamespace",
                      "maxNoOfPodsToEvictTotal", "leaderElection", "clientConnection"});
      !ok)
    return tl::unexpected(ok.error());
  if (const node k = root["kind"]; k && k.as<std::string>() != "DeschedulerConfiguration")
    return bad("kind", "'" + k.as<std::string>() + "' is not DeschedulerConfiguration");
  descheduler_config c;
  const node iv = root["deschedulingInterval"];
  if (!iv) return bad("deschedulingInterval", "is required (Colony runs rounds on event time)");
  auto iv_s = str(iv, "deschedulingInterval");
  if (!iv_s) return tl::unexpected(iv_s.error());
  auto d = parse_go_duration(*iv_s, "deschedulingInterval");
  if (!d) return tl::unexpected(d.error());
  if (*d <= 0) return bad("deschedulingInterval", "must be positive");
  c.descheduling_interval_ms = *d;
  if (const node v = root["dryRun"]; v) {
    auto b = boolean(v, "dryRun");
    if (!b) return tl::unexpected(b.error());
    c.dry_run = *b;
  }
  if (const node v = root["nodeSelector"]; v) {
    auto s = selector(v, "nodeSelector");
    if (!s) return tl::unexpected(s.error());
    c.node_selector = std::move(*s);
  }
  for (auto [key, out] : {std::pair{"maxNoOfPodsToEvictPerNode", &c.limits.per_node},
                          std::pair{"maxNoOfPodsToEvictPerNamespace", &c.limits.per_namespace},
                          std::pair{"maxNoOfPodsToEvictTotal", &c.limits.total}}) {
    auto v = optional_int(root, key, "");
    if (!v) return tl::unexpected(v.error());
    if (*v && **v < 0) return bad(key, "must not be negative");
    *out = *v;
  }
  const node profiles = root["profiles"];
  if (!profiles || !profiles.IsSequence() || profiles.size() == 0)
    return bad("profiles", "expected a list with one profile");
  if (profiles.size() > 1) return bad("profiles", "Colony runs one profile");
  const node p = profiles[0];
  if (auto ok = known_keys(p, "profiles[0]", {"name", "plugins", "pluginConfig", "nodeSelector"});
      !ok)
    return tl::unexpected(ok.error());
  if (const node v = p["name"]; v) c.profile_name = v.as<std::string>();
  bool have_lnl = false, have_mc = false;
  if (const node plugins = p["plugins"]; plugins) {
    if (auto ok = known_keys(plugins, "profiles[0].plugins",
                             {"deschedule", "balance", "evict", "filter"});
        !ok)
      return tl::unexpected(ok.error());
    if (const node bal = plugins["balance"]; bal) {
      if (const node en = bal["enabled"]; en) {
        if (!en.IsSequence()) return bad("profiles[0].plugins.balance.enabled", "expected a list");
        for (std::size_t i = 0; i < en.size(); ++i) {
          const std::string name = en[i]["name"] ? en[i]["name"].as<std::string>() : "";
          if (name != "LowNodeLoad")
            return bad(fmt::format("profiles[0].plugins.balance.enabled[{}].name", i),
                       "'" + name + "' is not a Balance plugin Colony runs (LowNodeLoad)");
          c.low_node_load_enabled = true;
        }
      }
    }
  }
  if (const node pc = p["pluginConfig"]; pc) {
    if (!pc.IsSequence()) return bad("profiles[0].pluginConfig", "expected a list");
    for (std::size_t i = 0; i < pc.size(); ++i) {
      const std::string fi = fmt::format("profiles[0].pluginConfig[{}]", i);
      const std::string name = pc[i]["name"] ? pc[i]["name"].as<std::string>() : "";
      const node args = pc[i]["args"] ? pc[i]["args"] : node(YAML::NodeType::Map);
      if (name == "LowNodeLoad") {
        auto a = low_node_load_of(args, fi + ".args");
        if (!a) return tl::unexpected(a.error());
        c.low_node_load = std::move(*a);
        have_lnl = true;
      } else if (name == "MigrationController") {
        auto a = migration_of(args, fi + ".args");
        if (!a) return tl::unexpected(a.error());
        c.migration = std::move(*a);
        have_mc = true;
      } else {
        return bad(fi + ".name",
                   "'" + name + "' has no args Colony reads (LowNodeLoad, MigrationController)");
      }
    }
  }
  if (!have_lnl) set_defaults(c.low_node_load);
  (void)have_mc;
  return c;
}

}  // namespace colony::descheduler
