#include "actors/slo_controller/slo_controller_config.hpp"

#include <array>
#include <limits>

#include "actors/slo_controller/internal/host_application_json.hpp"
#include "actors/slo_controller/internal/json_fields.hpp"
#include "actors/slo_controller/internal/strategy_json.hpp"
#include "messages/priority.hpp"
#include "messages/qos.hpp"
#include "messages/quantity.hpp"

namespace colony::slo_controller {

using internal::json;

namespace {

constexpr std::int64_t kmax = std::numeric_limits<std::int64_t>::max();
constexpr std::int64_t kmin = std::numeric_limits<std::int64_t>::min();

template <class E>
tl::unexpected<error> err(const E& r) {
  return tl::unexpected(r.error());
}

// --- flat strategies described by tables: key, member, valid range / values ---

template <class S>
struct int_spec {
  std::string_view key;
  std::optional<std::int64_t> S::*member;
  std::int64_t lo;
  std::int64_t hi;
};
template <class S>
struct str_spec {
  std::string_view key;
  std::optional<std::string> S::*member;
  std::array<std::string_view, 4> allowed;  // empty entries ignored; all empty = any string
};
template <class S>
struct bool_spec {
  std::string_view key;
  std::optional<bool> S::*member;
};
template <class S>
struct gt_rule {  // validate:"gtfield=...": upper > lower when both are set
  std::optional<std::int64_t> S::*upper;
  std::optional<std::int64_t> S::*lower;
  std::string_view upper_key;
  std::string_view lower_key;
};

template <class S>
struct spec;

using rts = resource_threshold_strategy;
template <>
struct spec<rts> {
  static constexpr std::array<int_spec<rts>, 16> ints{{
      {"cpuSuppressThresholdPercent", &rts::cpu_suppress_threshold_percent, 0, 100},
      {"cpuSuppressMinPercent", &rts::cpu_suppress_min_percent, 0, 100},
      {"memoryEvictThresholdPercent", &rts::memory_evict_threshold_percent, 0, 100},
      {"memoryEvictLowerPercent", &rts::memory_evict_lower_percent, 0, 100},
      {"memoryAllocatableEvictThresholdPercent", &rts::memory_allocatable_evict_threshold_percent,
       0, kmax},
      {"memoryAllocatableEvictLowerPercent", &rts::memory_allocatable_evict_lower_percent, 0, kmax},
      {"cpuEvictBESatisfactionUpperPercent", &rts::cpu_evict_be_satisfaction_upper_percent, 0, 100},
      {"cpuEvictBESatisfactionLowerPercent", &rts::cpu_evict_be_satisfaction_lower_percent, 0, 100},
      {"cpuEvictBEUsageThresholdPercent", &rts::cpu_evict_be_usage_threshold_percent, 0, 100},
      {"cpuEvictTimeWindowSeconds", &rts::cpu_evict_time_window_seconds, 1, kmax},
      {"cpuEvictThresholdPercent", &rts::cpu_evict_threshold_percent, 0, 100},
      {"cpuEvictLowerPercent", &rts::cpu_evict_lower_percent, 0, 100},
      {"cpuAllocatableEvictThresholdPercent", &rts::cpu_allocatable_evict_threshold_percent, 0,
       kmax},
      {"cpuAllocatableEvictLowerPercent", &rts::cpu_allocatable_evict_lower_percent, 0, kmax},
      {"evictEnabledPriorityThreshold", &rts::evict_enabled_priority_threshold,
       std::numeric_limits<std::int32_t>::min(), std::numeric_limits<std::int32_t>::max()},
      {"allocatableEvictPriorityThreshold", &rts::allocatable_evict_priority_threshold, 0, 7999},
  }};
  static constexpr std::array<str_spec<rts>, 2> strs{{
      {"cpuSuppressPolicy", &rts::cpu_suppress_policy, {"cpuset", "cfsQuota", "", ""}},
      {"cpuEvictPolicy",
       &rts::cpu_evict_policy,
       {"evictByRealLimit", "evictByAllocatable", "", ""}},
  }};
  static constexpr std::array<bool_spec<rts>, 1> bools{{{"enable", &rts::enable}}};
  static constexpr std::array<gt_rule<rts>, 5> gts{{
      {&rts::memory_evict_threshold_percent, &rts::memory_evict_lower_percent,
       "memoryEvictThresholdPercent", "memoryEvictLowerPercent"},
      {&rts::memory_allocatable_evict_threshold_percent,
       &rts::memory_allocatable_evict_lower_percent, "memoryAllocatableEvictThresholdPercent",
       "memoryAllocatableEvictLowerPercent"},
      {&rts::cpu_evict_be_satisfaction_upper_percent, &rts::cpu_evict_be_satisfaction_lower_percent,
       "cpuEvictBESatisfactionUpperPercent", "cpuEvictBESatisfactionLowerPercent"},
      {&rts::cpu_evict_threshold_percent, &rts::cpu_evict_lower_percent, "cpuEvictThresholdPercent",
       "cpuEvictLowerPercent"},
      {&rts::cpu_allocatable_evict_threshold_percent, &rts::cpu_allocatable_evict_lower_percent,
       "cpuAllocatableEvictThresholdPercent", "cpuAllocatableEvictLowerPercent"},
  }};
};

using cbs = cpu_burst_strategy;
template <>
struct spec<cbs> {
  static constexpr std::array<int_spec<cbs>, 4> ints{{
      {"cpuBurstPercent", &cbs::cpu_burst_percent, 1, 10000},
      {"cfsQuotaBurstPercent", &cbs::cfs_quota_burst_percent, 100, kmax},
      {"cfsQuotaBurstPeriodSeconds", &cbs::cfs_quota_burst_period_seconds, -1, kmax},
      {"sharePoolThresholdPercent", &cbs::share_pool_threshold_percent, 0, 100},
  }};
  static constexpr std::array<str_spec<cbs>, 1> strs{{
      {"policy", &cbs::policy, {"none", "cpuBurstOnly", "cfsQuotaBurstOnly", "auto"}},
  }};
  static constexpr std::array<bool_spec<cbs>, 0> bools{};
  static constexpr std::array<gt_rule<cbs>, 0> gts{};
};

using sys = system_strategy;
template <>
struct spec<sys> {
  static constexpr std::array<int_spec<sys>, 6> ints{{
      {"minFreeKbytesFactor", &sys::min_free_kbytes_factor, 1, kmax},
      {"watermarkScaleFactor", &sys::watermark_scale_factor, 1, 400},
      {"memcgReapBackGround", &sys::memcg_reap_back_ground, 0, 1},
      {"schedGroupIdentityEnabled", &sys::sched_group_identity_enabled, kmin, kmax},
      {"schedIdleSaverWmark", &sys::sched_idle_saver_wmark, kmin, kmax},
      {"pageCacheLimitEnabled", &sys::page_cache_limit_enabled, 0, 1},
  }};
  static constexpr std::array<str_spec<sys>, 0> strs{};
  static constexpr std::array<bool_spec<sys>, 0> bools{};
  static constexpr std::array<gt_rule<sys>, 0> gts{};
};

template <class S>
result<S> read_flat(const json& obj, std::string_view where) {
  S s;
  if (!obj.is_object()) return internal::invalid(where, "", obj, "want an object");
  for (const auto& f : spec<S>::ints) {
    if (auto ok = internal::read_int64(obj, f.key, where, s.*(f.member)); !ok) return err(ok);
  }
  for (const auto& f : spec<S>::strs) {
    if (auto ok = internal::read_string(obj, f.key, where, s.*(f.member)); !ok) return err(ok);
  }
  for (const auto& f : spec<S>::bools) {
    if (auto ok = internal::read_bool(obj, f.key, where, s.*(f.member)); !ok) return err(ok);
  }
  return s;
}

template <class S>
S merge_flat(S base, const S& o) {
  for (const auto& f : spec<S>::ints) {
    if (o.*(f.member)) base.*(f.member) = o.*(f.member);
  }
  for (const auto& f : spec<S>::strs) {
    if (o.*(f.member)) base.*(f.member) = o.*(f.member);
  }
  for (const auto& f : spec<S>::bools) {
    if (o.*(f.member)) base.*(f.member) = o.*(f.member);
  }
  return base;
}

template <class S>
result<void> validate_flat(const S& s, std::string_view where) {
  for (const auto& f : spec<S>::ints) {
    if (auto ok = internal::check_range(where, f.key, s.*(f.member), f.lo, f.hi); !ok) return ok;
  }
  for (const auto& f : spec<S>::strs) {
    const auto& v = s.*(f.member);
    if (!v || f.allowed[0].empty()) continue;
    bool found = false;
    std::string list;
    for (auto a : f.allowed) {
      if (a.empty()) continue;
      found = found || *v == a;
      if (!list.empty()) list += ", ";
      list += a;
    }
    if (!found) {
      return fail(errc::invalid_input,
                  "invalid value " + internal::render(json(*v)) + " (must be one of " + list + ")",
                  internal::path(where, f.key));
    }
  }
  for (const auto& r : spec<S>::gts) {
    const auto& up = s.*(r.upper);
    const auto& lo = s.*(r.lower);
    if (up && lo && !(*up > *lo)) {
      return fail(errc::invalid_input,
                  "invalid value " + std::to_string(*up) + " (must be greater than " +
                      std::string(r.lower_key) + " " + std::to_string(*lo) + ")",
                  internal::path(where, r.upper_key));
    }
  }
  return {};
}

result<json> parse_doc(std::string_view text, std::string_view key) {
  auto doc = internal::parse_json(text, key);
  if (!doc) return doc;
  if (!doc->is_object()) return internal::invalid(key, "", *doc, "want a JSON object");
  return doc;
}

// "name" + "nodeSelector" of a node entry (NodeCfgProfile). Type errors reject the key (Go
// unmarshal error). An absent, empty or invalid selector is refused by Koordinator's ConfigMap
// webhook (checker.go CreateNodeConfigProfileChecker) but tolerated by the controller, whose
// LabelSelectorAsSelector then matches nothing: Colony keeps the entry, which never matches, and
// warns.
result<void> read_profile(const json& entry, const std::string& w, std::string& name,
                          label_selector& sel, std::vector<error>* warnings) {
  std::optional<std::string> n;
  if (auto ok = internal::read_string(entry, "name", w, n); !ok) return ok;
  name = n.value_or("");
  const json* ns = internal::find_field(entry, "nodeSelector");
  auto warn = [&](error e) {
    if (warnings != nullptr) warnings->push_back(std::move(e));
  };
  if (ns == nullptr || ns->is_null()) {
    warn(error{errc::invalid_input,
               "invalid value null (nodeSelector must not be empty; entry never matches)",
               internal::path(w, "nodeSelector")});
    return {};
  }
  auto s = internal::read_selector(*ns, internal::path(w, "nodeSelector"));
  if (!s) return err(s);
  sel = std::move(*s);
  if (sel.match_labels.empty() && sel.match_expressions.empty()) {
    warn(error{errc::invalid_input, "invalid value {} (nodeSelector must not be empty)",
               internal::path(w, "nodeSelector")});
  } else if (auto ok = validate_selector(sel, internal::path(w, "nodeSelector")); !ok) {
    auto e = ok.error();
    e.message += "; entry never matches";
    warn(std::move(e));
  }
  return {};
}

template <class S>
result<cluster_and_nodes<S>> parse_cluster_and_nodes(std::string_view text, std::string_view key,
                                                     std::vector<error>* warnings) {
  cluster_and_nodes<S> out;
  if (text.empty()) return out;
  auto doc = parse_doc(text, key);
  if (!doc) return err(doc);
  const std::string ck = internal::path(key, "clusterStrategy");
  if (const json* c = internal::find_field(*doc, "clusterStrategy");
      c != nullptr && !c->is_null()) {
    auto cs = read_flat<S>(*c, ck);
    if (!cs) return err(cs);
    out.cluster = merge_flat(S::defaults(), *cs);
  }
  if (auto ok = validate_flat(out.cluster, ck); !ok) return err(ok);
  if (const json* ns = internal::find_field(*doc, "nodeStrategies");
      ns != nullptr && !ns->is_null()) {
    if (!ns->is_array()) return internal::invalid(key, "nodeStrategies", *ns, "want an array");
    std::size_t i = 0;
    for (const auto& entry : *ns) {
      const std::string w = std::string(key) + ".nodeStrategies[" + std::to_string(i++) + "]";
      if (!entry.is_object()) return internal::invalid(w, "", entry, "want an object");
      node_strategy<S> n;
      if (auto ok = read_profile(entry, w, n.name, n.node_selector, warnings); !ok) return err(ok);
      auto own = read_flat<S>(entry, w);
      if (!own) return err(own);
      n.strategy = merge_flat(out.cluster, *own);
      if (auto ok = validate_flat(n.strategy, w); !ok) {
        // As colocation-config: an invalid node entry falls back to the cluster strategy.
        if (warnings != nullptr) warnings->push_back(ok.error());
        n.strategy = out.cluster;
      }
      out.node_strategies.push_back(std::move(n));
    }
  }
  return out;
}

std::string canonical(const json& doc) {
  // Objects are std::map-ordered: the dump is canonical. Parsed strings are valid UTF-8.
  return doc.dump(-1, ' ', false, json::error_handler_t::replace);
}

// SystemStrategy.totalNetworkBandwidth: resource.Quantity's UnmarshalJSON (a string or a bare
// number, parsed by ParseQuantity; an unparsable one fails the key), kept in canonical form.
result<void> read_bandwidth(const json& obj, const std::string& where,
                            std::optional<std::string>& out) {
  const json* b = internal::find_field(obj, "totalNetworkBandwidth");
  if (b == nullptr || b->is_null()) return {};
  if (!b->is_string() && !b->is_number())
    return internal::invalid(where, "totalNetworkBandwidth", *b, "want a quantity");
  auto q = k8s::quantity::parse(b->is_string() ? b->get<std::string>() : b->dump(),
                                internal::path(where, "totalNetworkBandwidth"));
  if (!q) return err(q);
  out = q->to_string();
  return {};
}

// --- generic range checks for the JSON-kept keys ---

struct path_rule {
  std::string_view path;  // dotted path below one class / strategy object
  std::int64_t lo;
  std::int64_t hi;
};

result<void> check_int_path(const json& obj, std::string_view dotted, std::int64_t lo,
                            std::int64_t hi, const std::string& where) {
  const json* cur = &obj;
  std::string_view rest = dotted;
  std::string at = where;
  while (true) {
    auto dot = rest.find('.');
    std::string_view part = rest.substr(0, dot);
    if (!cur->is_object()) return internal::invalid(at, "", *cur, "want an object");
    cur = internal::find_field(*cur, part);
    if (cur == nullptr || cur->is_null()) return {};
    if (dot == std::string_view::npos) break;
    at = internal::path(at, part);
    rest.remove_prefix(dot + 1);
  }
  std::optional<std::int64_t> v;
  json holder = json::object();
  // read through read_int64 for uniform type errors
  std::string_view leaf =
      dotted.substr(dotted.rfind('.') == std::string_view::npos ? 0 : dotted.rfind('.') + 1);
  holder[std::string(leaf)] = *cur;
  if (auto ok = internal::read_int64(holder, leaf, at, v); !ok) return ok;
  return internal::check_range(at, leaf, v, lo, hi);
}

result<void> check_enum_path(const json& obj, std::string_view a, std::string_view b,
                             std::initializer_list<std::string_view> allowed,
                             const std::string& where) {
  const json* p = internal::find_field(obj, a);
  if (p == nullptr || p->is_null()) return {};
  if (!p->is_object()) return internal::invalid(where, a, *p, "want an object");
  const json* v = internal::find_field(*p, b);
  if (v == nullptr || v->is_null()) return {};
  std::string list;
  for (auto x : allowed) {
    if (v->is_string() && v->get<std::string>() == x) return {};
    if (!list.empty()) list += ", ";
    list += x;
  }
  return internal::invalid(internal::path(where, a), b, *v, "must be one of " + list);
}

// ResourceQOSStrategy ranges (apis/slo/v1alpha1/nodeslo_types.go validate tags).
result<void> check_resource_qos_strategy(const json& s, const std::string& where) {
  if (!s.is_object()) return internal::invalid(where, "", s, "want an object");
  if (auto ok = check_enum_path(s, "policies", "cpuPolicy", {"groupIdentity", "coreSched"}, where);
      !ok)
    return ok;
  if (auto ok = check_enum_path(s, "policies", "netQOSPolicy", {"tc", "terway-qos"}, where); !ok)
    return ok;
  static constexpr std::array<path_rule, 15> rules{{
      {"cpuQOS.groupIdentity", -1, 2},
      {"cpuQOS.schedIdle", 0, 1},
      {"memoryQOS.minLimitPercent", 0, 100},
      {"memoryQOS.lowLimitPercent", 0, 100},
      {"memoryQOS.throttlingPercent", 0, 100},
      {"memoryQOS.wmarkRatio", 0, 100},
      {"memoryQOS.wmarkScalePermill", 1, 1000},
      {"memoryQOS.wmarkMinAdj", -25, 50},
      {"memoryQOS.priorityEnable", 0, 1},
      {"memoryQOS.priority", 0, 12},
      {"memoryQOS.oomKillGroup", 0, 1},
      {"memoryQOS.pageCacheLimitPercent", 0, 100},
      {"resctrlQOS.catRangeStartPercent", 0, 100},
      {"resctrlQOS.catRangeEndPercent", 0, 100},
      {"resctrlQOS.mbaPercent", 0, 100},
  }};
  for (std::string_view cls : {"lsrClass", "lsClass", "beClass", "systemClass", "cgroupRoot"}) {
    const json* c = internal::find_field(s, cls);
    if (c == nullptr || c->is_null()) continue;
    const std::string w = internal::path(where, cls);
    if (!c->is_object()) return internal::invalid(w, "", *c, "want an object");
    for (const auto& r : rules) {
      if (auto ok = check_int_path(*c, r.path, r.lo, r.hi, w); !ok) return ok;
    }
    // catRangeStartPercent < catRangeEndPercent (ltfield/gtfield)
    if (const json* rq = internal::find_field(*c, "resctrlQOS"); rq != nullptr && rq->is_object()) {
      const json* a = internal::find_field(*rq, "catRangeStartPercent");
      const json* b = internal::find_field(*rq, "catRangeEndPercent");
      if (a != nullptr && b != nullptr && a->is_number_integer() && b->is_number_integer() &&
          !(a->get<std::int64_t>() < b->get<std::int64_t>())) {
        return internal::invalid(internal::path(w, "resctrlQOS"), "catRangeStartPercent", *a,
                                 "must be less than catRangeEndPercent");
      }
    }
  }
  return {};
}

result<json_config> parse_cluster_nodes_json(std::string_view text, std::string_view key,
                                             result<void> (*check)(const json&,
                                                                   const std::string&)) {
  if (text.empty()) return json_config{};
  auto doc = parse_doc(text, key);
  if (!doc) return err(doc);
  if (const json* c = internal::find_field(*doc, "clusterStrategy");
      c != nullptr && !c->is_null()) {
    if (auto ok = check(*c, internal::path(key, "clusterStrategy")); !ok) return err(ok);
  }
  if (const json* ns = internal::find_field(*doc, "nodeStrategies");
      ns != nullptr && !ns->is_null()) {
    if (!ns->is_array()) return internal::invalid(key, "nodeStrategies", *ns, "want an array");
    std::size_t i = 0;
    for (const auto& entry : *ns) {
      const std::string w = std::string(key) + ".nodeStrategies[" + std::to_string(i++) + "]";
      if (!entry.is_object()) return internal::invalid(w, "", entry, "want an object");
      std::string name;
      label_selector sel;
      if (auto ok = read_profile(entry, w, name, sel, nullptr); !ok) return err(ok);
      if (auto ok = check(entry, w); !ok) return err(ok);
    }
  }
  return json_config{canonical(*doc)};
}

// nodeConfigs[] of the ratio-style keys (cpu-normalization, resource-amplification,
// host-application).
template <class F>
result<void> for_node_configs(const json& doc, std::string_view key, F&& check) {
  const json* ns = internal::find_field(doc, "nodeConfigs");
  if (ns == nullptr || ns->is_null()) return {};
  if (!ns->is_array()) return internal::invalid(key, "nodeConfigs", *ns, "want an array");
  std::size_t i = 0;
  for (const auto& entry : *ns) {
    const std::string w = std::string(key) + ".nodeConfigs[" + std::to_string(i++) + "]";
    if (!entry.is_object()) return internal::invalid(w, "", entry, "want an object");
    std::string name;
    label_selector sel;
    if (auto ok = read_profile(entry, w, name, sel, nullptr); !ok) return ok;
    if (auto ok = check(entry, w); !ok) return ok;
  }
  return {};
}

result<void> check_ratio(const json& obj, std::string_view key, const std::string& where, double lo,
                         double hi) {
  std::optional<double> v;
  if (auto ok = internal::read_double(obj, key, where, v); !ok) return ok;
  if (v && !(*v >= lo && *v <= hi)) {
    return internal::invalid(
        where, key, *internal::find_field(obj, key),
        "must be in [" + internal::render(json(lo)) + ", " + internal::render(json(hi)) + "]");
  }
  return {};
}

// CPUNormalizationStrategy: enable, defaultRatio, ratioModel{model: {baseRatio, ...}}. Ratios must
// lie in [1.0, 5.0] (plugins/cpunormalization/plugin.go defaultMinRatio / defaultMaxRatio).
result<void> check_cpu_normalization_strategy(const json& s, const std::string& where) {
  std::optional<bool> enable;
  if (auto ok = internal::read_bool(s, "enable", where, enable); !ok) return ok;
  if (auto ok = check_ratio(s, "defaultRatio", where, 1.0, 5.0); !ok) return ok;
  const json* models = internal::find_field(s, "ratioModel");
  if (models == nullptr || models->is_null()) return {};
  if (!models->is_object())
    return internal::invalid(where, "ratioModel", *models, "want an object");
  for (auto it = models->begin(); it != models->end(); ++it) {
    // A model name may hold dots and spaces: ratioModel["Intel Xeon"].
    const std::string w = internal::path(where, "ratioModel") + "[\"" + it.key() + "\"]";
    if (!it->is_object()) return internal::invalid(w, "", *it, "want an object");
    for (std::string_view k : {"baseRatio", "hyperThreadEnabledRatio", "turboEnabledRatio",
                               "hyperThreadTurboEnabledRatio"}) {
      if (auto ok = check_ratio(*it, k, w, 1.0, 5.0); !ok) return ok;
    }
  }
  return {};
}

// ResourceAmplificationStrategy: enable, resourceAmplificationRatio{resource: ratio >= 1}.
result<void> check_amplification_strategy(const json& s, const std::string& where) {
  std::optional<bool> enable;
  if (auto ok = internal::read_bool(s, "enable", where, enable); !ok) return ok;
  const json* ratios = internal::find_field(s, "resourceAmplificationRatio");
  if (ratios == nullptr || ratios->is_null()) return {};
  const std::string w = internal::path(where, "resourceAmplificationRatio");
  if (!ratios->is_object())
    return internal::invalid(where, "resourceAmplificationRatio", *ratios, "want an object");
  for (auto it = ratios->begin(); it != ratios->end(); ++it) {
    if (!it->is_number() || !(it->get<double>() >= 1.0)) {
      return internal::invalid(w, it.key(), *it, "want a ratio >= 1");
    }
  }
  return {};
}

// HostApplicationSpec list (host_application.hpp: its validity rules, shared with the NodeSLO
// reader).
result<void> check_host_applications(const json& s, const std::string& where) {
  const json* apps = internal::find_field(s, "applications");
  if (apps == nullptr || apps->is_null()) return {};
  if (auto r = internal::read_host_applications(*apps, internal::path(where, "applications")); !r)
    return tl::unexpected(r.error());
  return {};
}

template <class F>
result<json_config> parse_node_configs_json(std::string_view text, std::string_view key,
                                            F&& check) {
  if (text.empty()) return json_config{};
  auto doc = parse_doc(text, key);
  if (!doc) return err(doc);
  if (auto ok = check(*doc, std::string(key)); !ok) return err(ok);
  if (auto ok = for_node_configs(*doc, key, check); !ok) return err(ok);
  return json_config{canonical(*doc)};
}

}  // namespace

resource_threshold_strategy resource_threshold_strategy::defaults() {
  resource_threshold_strategy s;
  s.enable = false;
  s.cpu_suppress_threshold_percent = 65;
  s.cpu_suppress_policy = "cpuset";
  s.memory_evict_threshold_percent = 70;
  s.cpu_evict_policy = "evictByRealLimit";
  return s;
}

cpu_burst_strategy cpu_burst_strategy::defaults() {
  cpu_burst_strategy s;
  s.policy = "none";
  s.cpu_burst_percent = 1000;
  s.cfs_quota_burst_percent = 300;
  s.cfs_quota_burst_period_seconds = -1;
  s.share_pool_threshold_percent = 50;
  return s;
}

system_strategy system_strategy::defaults() {
  system_strategy s;
  s.total_network_bandwidth = "0";
  return s;
}

result<colocation_config> parse_colocation_config(std::string_view text,
                                                  std::vector<error>* warnings) {
  colocation_config out;
  if (text.empty()) return out;  // syncConfig: empty key = defaults
  const std::string_view key = colocation_config_key;
  auto doc = parse_doc(text, key);
  if (!doc) return err(doc);
  auto cluster = internal::read_colocation_strategy(*doc, key, true);
  if (!cluster) return err(cluster);
  out.cluster = merge(colocation_strategy::defaults(), *cluster);
  if (auto ok = validate(out.cluster, key); !ok) return err(ok);
  if (const json* ns = internal::find_field(*doc, "nodeConfigs"); ns != nullptr && !ns->is_null()) {
    if (!ns->is_array()) return internal::invalid(key, "nodeConfigs", *ns, "want an array");
    std::size_t i = 0;
    for (const auto& entry : *ns) {
      const std::string w = std::string(key) + ".nodeConfigs[" + std::to_string(i++) + "]";
      if (!entry.is_object()) return internal::invalid(w, "", entry, "want an object");
      node_colocation_config nc;
      if (auto ok = read_profile(entry, w, nc.name, nc.node_selector, warnings); !ok)
        return err(ok);
      auto own = internal::read_colocation_strategy(entry, w, true);
      if (!own) return err(own);
      nc.strategy = merge(out.cluster, *own);
      if (auto ok = validate(nc.strategy, w); !ok) {
        // syncConfig (colocation_cm_event_handler.go): "node config invalid, use cluster config".
        if (warnings != nullptr) warnings->push_back(ok.error());
        nc.strategy = out.cluster;
      }
      out.node_configs.push_back(std::move(nc));
    }
  }
  return out;
}

result<resource_threshold_config> parse_resource_threshold_config(std::string_view text,
                                                                  std::vector<error>* warnings) {
  return parse_cluster_and_nodes<resource_threshold_strategy>(text, resource_threshold_config_key,
                                                              warnings);
}
result<cpu_burst_config> parse_cpu_burst_config(std::string_view text,
                                                std::vector<error>* warnings) {
  return parse_cluster_and_nodes<cpu_burst_strategy>(text, cpu_burst_config_key, warnings);
}
result<system_config> parse_system_config(std::string_view text, std::vector<error>* warnings) {
  auto r = parse_cluster_and_nodes<system_strategy>(text, system_config_key, warnings);
  if (!r || text.empty()) return r;
  // totalNetworkBandwidth is a Quantity (string or number), outside the field tables; a node entry
  // without one has the cluster's (the merge of nodeslo/resource_strategy.go).
  auto doc = parse_doc(text, system_config_key);
  if (!doc) return err(doc);
  const std::string ck = internal::path(system_config_key, "clusterStrategy");
  if (const json* c = internal::find_field(*doc, "clusterStrategy"); c != nullptr && c->is_object())
    if (auto ok = read_bandwidth(*c, ck, r->cluster.total_network_bandwidth); !ok) return err(ok);
  const json* ns = internal::find_field(*doc, "nodeStrategies");
  for (std::size_t i = 0; i < r->node_strategies.size(); ++i) {
    auto& n = r->node_strategies[i].strategy;
    n.total_network_bandwidth = r->cluster.total_network_bandwidth;
    const std::string w =
        std::string(system_config_key) + ".nodeStrategies[" + std::to_string(i) + "]";
    if (auto ok = read_bandwidth((*ns)[i], w, n.total_network_bandwidth); !ok) return err(ok);
  }
  return r;
}
result<json_config> parse_resource_qos_config(std::string_view text,
                                              std::vector<error>* /*warnings*/) {
  return parse_cluster_nodes_json(text, resource_qos_config_key, &check_resource_qos_strategy);
}
result<json_config> parse_host_application_config(std::string_view text,
                                                  std::vector<error>* /*warnings*/) {
  return parse_node_configs_json(text, host_application_config_key, &check_host_applications);
}
result<json_config> parse_cpu_normalization_config(std::string_view text,
                                                   std::vector<error>* /*warnings*/) {
  return parse_node_configs_json(text, cpu_normalization_config_key,
                                 &check_cpu_normalization_strategy);
}
result<json_config> parse_resource_amplification_config(std::string_view text,
                                                        std::vector<error>* /*warnings*/) {
  return parse_node_configs_json(text, resource_amplification_config_key,
                                 &check_amplification_strategy);
}

slo_controller_config deleted_config() { return slo_controller_config{}; }

namespace {

// The text of one key: "" when absent/null/empty; objects are re-serialised (values are normally
// strings).
result<std::string> key_text(const json& data, std::string_view key) {
  const auto it = data.find(std::string(key));  // ConfigMap keys are exact (not Go field matching)
  if (it == data.end() || it->is_null()) return std::string();
  if (it->is_string()) return it->get<std::string>();
  if (it->is_object()) return canonical(*it);
  return internal::invalid(key, "", *it, "want a string holding JSON");
}

template <class T>
void apply(const json& data, std::string_view key,
           result<T> (*parse)(std::string_view, std::vector<error>*),
           const std::optional<slo_controller_config>& previous,
           std::optional<T> slo_controller_config::*member, config_update& u) {
  auto text = key_text(data, key);
  std::vector<error> warnings;
  result<T> parsed = text ? parse(*text, &warnings) : result<T>(tl::unexpected(text.error()));
  if (parsed) {
    u.in_force.*member = std::move(*parsed);
    for (auto& w : warnings) u.warnings.push_back(std::move(w));
    return;
  }
  u.in_force.*member = previous ? (*previous).*member : std::nullopt;
  u.rejected_keys.emplace_back(key);
  if (!u.error) {
    u.error = parsed.error();
  } else {
    u.error->message += "; " + parsed.error().describe();
  }
}

}  // namespace

config_update update(const std::optional<slo_controller_config>& previous,
                     std::string_view configmap_json) {
  config_update u;
  auto doc = internal::parse_json(configmap_json, "slo-controller-config");
  if (doc && !doc->is_object()) {
    doc = internal::invalid("slo-controller-config", "", *doc,
                            "want the ConfigMap data as a JSON object");
  }
  if (!doc) {
    u.in_force = previous.value_or(slo_controller_config{std::nullopt, std::nullopt, std::nullopt,
                                                         std::nullopt, std::nullopt, std::nullopt,
                                                         std::nullopt, std::nullopt});
    u.error = doc.error();
    u.rejected_keys.emplace_back("slo-controller-config");
    return u;
  }
  apply(*doc, colocation_config_key, &parse_colocation_config, previous,
        &slo_controller_config::colocation, u);
  apply(*doc, resource_threshold_config_key, &parse_resource_threshold_config, previous,
        &slo_controller_config::resource_threshold, u);
  apply(*doc, resource_qos_config_key, &parse_resource_qos_config, previous,
        &slo_controller_config::resource_qos, u);
  apply(*doc, cpu_burst_config_key, &parse_cpu_burst_config, previous,
        &slo_controller_config::cpu_burst, u);
  apply(*doc, system_config_key, &parse_system_config, previous, &slo_controller_config::system, u);
  apply(*doc, host_application_config_key, &parse_host_application_config, previous,
        &slo_controller_config::host_application, u);
  apply(*doc, cpu_normalization_config_key, &parse_cpu_normalization_config, previous,
        &slo_controller_config::cpu_normalization, u);
  apply(*doc, resource_amplification_config_key, &parse_resource_amplification_config, previous,
        &slo_controller_config::resource_amplification, u);
  return u;
}

// ---- NodeSLO strategies as JSON (internal/strategy_json.hpp) ----

namespace internal {

namespace {

template <class S>
json flat_to_json(const S& s) {
  json o = json::object();
  for (const auto& f : spec<S>::ints)
    if (const auto& v = s.*(f.member)) o[std::string(f.key)] = *v;
  for (const auto& f : spec<S>::strs)
    if (const auto& v = s.*(f.member)) o[std::string(f.key)] = *v;
  for (const auto& f : spec<S>::bools)
    if (const auto& v = s.*(f.member)) o[std::string(f.key)] = *v;
  return o;
}

template <class S>
result<S> read_checked(const json& obj, std::string_view where, const S& base) {
  auto own = read_flat<S>(obj, where);
  if (!own) return own;
  S s = merge_flat(base, *own);
  if (auto ok = validate_flat(s, where); !ok) return err(ok);
  return s;
}

}  // namespace

json to_json(const resource_threshold_strategy& s) { return flat_to_json(s); }
json to_json(const cpu_burst_strategy& s) { return flat_to_json(s); }
json to_json(const system_strategy& s) {
  json o = flat_to_json(s);
  o["totalNetworkBandwidth"] = s.total_network_bandwidth.value_or("0");
  return o;
}

result<resource_threshold_strategy> read_resource_threshold_strategy(
    const json& obj, std::string_view where, const resource_threshold_strategy& base) {
  return read_checked(obj, where, base);
}
result<cpu_burst_strategy> read_cpu_burst_strategy(const json& obj, std::string_view where,
                                                   const cpu_burst_strategy& base) {
  return read_checked(obj, where, base);
}
result<system_strategy> read_system_strategy(const json& obj, std::string_view where,
                                             const system_strategy& base) {
  auto s = read_checked(obj, where, base);
  if (!s) return s;
  if (auto ok = read_bandwidth(obj, std::string(where), s->total_network_bandwidth); !ok)
    return err(ok);
  return s;
}

std::string canonical_dump(const json& doc) { return canonical(doc); }

}  // namespace internal

}  // namespace colony::slo_controller
