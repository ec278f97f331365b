#include "actors/slo_controller/cpu_normalization.hpp"

#include <charconv>
#include <cmath>
#include <system_error>

#include "actors/slo_controller/internal/json_fields.hpp"
#include "actors/slo_controller/slo_controller_config.hpp"
#include "messages/names.hpp"

namespace colony::slo_controller {

namespace {

using internal::json;

template <class T>
tl::unexpected<error> err(const result<T>& r) {
  return tl::unexpected<error>(r.error());
}

// `where.ratioModel["name"]`: a model name may hold dots and spaces.
std::string model_path(std::string_view where, std::string_view model) {
  std::string p = internal::path(where, "ratioModel");
  p += "[\"";
  p.append(model);
  p += "\"]";
  return p;
}

result<void> read_ratio(const json& obj, std::string_view key, const std::string& where,
                        std::optional<double>& out, double lo, double hi) {
  if (auto ok = internal::read_double(obj, key, where, out); !ok) return ok;
  if (out && !(*out >= lo && *out <= hi)) {
    return internal::invalid(
        where, key, *internal::find_field(obj, key),
        "must be in [" + internal::render(json(lo)) + ", " + internal::render(json(hi)) + "]");
  }
  return {};
}

// One CPUNormalizationStrategy overlay: fields present replace those of `base`; ratioModel
// entries replace the base's entry of that name whole (encoding/json decodes a map value afresh).
result<cpu_normalization_strategy> read_cpu_strategy(const json& s, const std::string& where,
                                                     cpu_normalization_strategy base) {
  std::optional<bool> enable;
  if (auto ok = internal::read_bool(s, "enable", where, enable); !ok) return err(ok);
  if (enable) base.enable = enable;
  std::optional<double> def;
  if (auto ok = read_ratio(s, "defaultRatio", where, def, cpu_normalization_min_ratio,
                           cpu_normalization_max_ratio);
      !ok)
    return err(ok);
  if (def) base.default_ratio = def;
  const json* models = internal::find_field(s, "ratioModel");
  if (models == nullptr || models->is_null()) return base;
  if (!models->is_object())
    return internal::invalid(where, "ratioModel", *models, "want an object");
  if (!base.ratio_model) base.ratio_model.emplace();
  for (auto it = models->begin(); it != models->end(); ++it) {
    const std::string w = model_path(where, it.key());
    if (it->is_null()) {
      (*base.ratio_model)[it.key()] = model_ratio_cfg{};
      continue;
    }
    if (!it->is_object()) return internal::invalid(w, "", *it, "want an object");
    model_ratio_cfg m;
    const auto lo = cpu_normalization_min_ratio;
    const auto hi = cpu_normalization_max_ratio;
    if (auto ok = read_ratio(*it, "baseRatio", w, m.base_ratio, lo, hi); !ok) return err(ok);
    if (auto ok =
            read_ratio(*it, "hyperThreadEnabledRatio", w, m.hyper_thread_enabled_ratio, lo, hi);
        !ok)
      return err(ok);
    if (auto ok = read_ratio(*it, "turboEnabledRatio", w, m.turbo_enabled_ratio, lo, hi); !ok)
      return err(ok);
    if (auto ok = read_ratio(*it, "hyperThreadTurboEnabledRatio", w,
                             m.hyper_thread_turbo_enabled_ratio, lo, hi);
        !ok)
      return err(ok);
    (*base.ratio_model)[it.key()] = m;
  }
  return base;
}

result<resource_amplification_strategy> read_amp_strategy(const json& s, const std::string& where,
                                                          resource_amplification_strategy base) {
  std::optional<bool> enable;
  if (auto ok = internal::read_bool(s, "enable", where, enable); !ok) return err(ok);
  if (enable) base.enable = enable;
  const json* ratios = internal::find_field(s, "resourceAmplificationRatio");
  if (ratios == nullptr || ratios->is_null()) return base;
  const std::string w = internal::path(where, "resourceAmplificationRatio");
  if (!ratios->is_object())
    return internal::invalid(where, "resourceAmplificationRatio", *ratios, "want an object");
  for (auto it = ratios->begin(); it != ratios->end(); ++it) {
    if (!it->is_number() || !(it->get<double>() >= 1.0))
      return internal::invalid(w, it.key(), *it, "want a ratio >= 1");
    base.ratios[it.key()] = it->get<double>();
  }
  return base;
}

template <class Strategy, class Read>
result<node_config_list<Strategy>> parse_list(std::string_view text, std::string_view key,
                                              Read&& read) {
  node_config_list<Strategy> out;
  if (text.empty()) return out;
  auto doc = internal::parse_json(text, key);
  if (!doc) return err(doc);
  if (!doc->is_object()) return internal::invalid(key, "", *doc, "want an object");
  auto cluster = read(*doc, std::string(key), Strategy{});
  if (!cluster) return err(cluster);
  out.cluster = std::move(*cluster);
  const json* ns = internal::find_field(*doc, "nodeConfigs");
  if (ns == nullptr || ns->is_null()) return out;
  if (!ns->is_array()) return internal::invalid(key, "nodeConfigs", *ns, "want an array");
  std::size_t i = 0;
  for (const auto& e : *ns) {
    const std::string w = std::string(key) + ".nodeConfigs[" + std::to_string(i++) + "]";
    if (!e.is_object()) return internal::invalid(w, "", e, "want an object");
    typename node_config_list<Strategy>::entry entry;
    std::optional<std::string> name;
    if (auto ok = internal::read_string(e, "name", w, name); !ok) return err(ok);
    entry.name = name.value_or("");
    if (const json* sel = internal::find_field(e, "nodeSelector");
        sel != nullptr && !sel->is_null()) {
      auto s = internal::read_selector(*sel, internal::path(w, "nodeSelector"));
      if (!s) return err(s);
      entry.node_selector = std::move(*s);
      // GetStrategyCopy skips a selector that does not convert; an empty one would match every
      // node in Kubernetes, but the webhook refuses it, and Colony's other keys never match it.
      entry.selector_valid =
          (!entry.node_selector.match_labels.empty() ||
           !entry.node_selector.match_expressions.empty()) &&
          validate_selector(entry.node_selector, internal::path(w, "nodeSelector")).has_value();
    }
    auto st = read(e, w, out.cluster);
    if (!st) return err(st);
    entry.strategy = std::move(*st);
    out.node_configs.push_back(std::move(entry));
  }
  return out;
}

}  // namespace

result<cpu_normalization_config> parse_cpu_normalization_strategies(std::string_view text) {
  return parse_list<cpu_normalization_strategy>(text, cpu_normalization_config_key,
                                                &read_cpu_strategy);
}

result<resource_amplification_config> parse_resource_amplification_strategies(
    std::string_view text) {
  return parse_list<resource_amplification_strategy>(text, resource_amplification_config_key,
                                                     &read_amp_strategy);
}

result<cpu_basic_info> parse_cpu_basic_info(std::string_view annotation) {
  const std::string where(annotation_cpu_basic_info);
  auto doc = internal::parse_json(annotation, where);
  if (!doc) return err(doc);
  if (!doc->is_object()) return internal::invalid(where, "", *doc, "want an object");
  cpu_basic_info info;
  std::optional<std::string> model;
  std::optional<bool> ht, turbo;
  if (auto ok = internal::read_string(*doc, "cpuModel", where, model); !ok) return err(ok);
  if (auto ok = internal::read_bool(*doc, "hyperThreadEnabled", where, ht); !ok) return err(ok);
  if (auto ok = internal::read_bool(*doc, "turboEnabled", where, turbo); !ok) return err(ok);
  info.cpu_model = model.value_or("");
  info.hyper_thread_enabled = ht.value_or(false);
  info.turbo_enabled = turbo.value_or(false);
  return info;
}

result<double> cpu_normalization_ratio_from_model(const cpu_basic_info& info,
                                                  const cpu_normalization_strategy& s) {
  const std::string where = std::string(cpu_normalization_config_key);
  if (!s.ratio_model) return fail(errc::not_found, "ratio model is nil", where);
  const auto it = s.ratio_model->find(info.cpu_model);
  if (it == s.ratio_model->end())
    return fail(errc::not_found, "no ratio for CPU " + info.cpu_model,
                internal::path(where, "ratioModel"));
  const auto& m = it->second;
  const std::string w = model_path(where, info.cpu_model);
  auto pick = [&](const std::optional<double>& r, std::string_view field) -> result<double> {
    if (!r)
      return fail(errc::not_found, "missing " + std::string(field) + " for CPU " + info.cpu_model,
                  internal::path(w, field));
    return *r;
  };
  if (info.hyper_thread_enabled && info.turbo_enabled)
    return pick(m.hyper_thread_turbo_enabled_ratio, "hyperThreadTurboEnabledRatio");
  if (info.hyper_thread_enabled)
    return pick(m.hyper_thread_enabled_ratio, "hyperThreadEnabledRatio");
  if (info.turbo_enabled) return pick(m.turbo_enabled_ratio, "turboEnabledRatio");
  return pick(m.base_ratio, "baseRatio");
}

result<double> cpu_normalization_ratio(const cpu_basic_info& info,
                                       const cpu_normalization_strategy& s) {
  auto r = cpu_normalization_ratio_from_model(info, s);
  if (r) return r;
  if (s.default_ratio) return *s.default_ratio;
  return r;
}

result<void> validate_cpu_normalization_ratio(double ratio) {
  if (ratio < cpu_normalization_min_ratio)
    return fail(errc::invalid_input,
                "the ratio is too small, cur[" + format_ratio(ratio) + "] < min[1.00]",
                std::string(names::annotation_cpu_normalization_ratio));
  if (ratio > cpu_normalization_max_ratio)
    return fail(errc::invalid_input,
                "the ratio is too big, cur[" + format_ratio(ratio) + "] > max[5.00]",
                std::string(names::annotation_cpu_normalization_ratio));
  return {};
}

std::string format_ratio(double ratio) {
  // std::to_chars fixed with a precision rounds the exact binary value, as strconv does.
  char buf[64];
  const auto r = std::to_chars(buf, buf + sizeof buf, ratio, std::chars_format::fixed, 2);
  if (r.ec != std::errc{}) return "0.00";
  return std::string(buf, r.ptr);
}

result<std::string> calculate_cpu_normalization(const cpu_normalization_strategy& s,
                                                std::optional<std::string_view> enabled_label,
                                                std::optional<std::string_view> basic_info) {
  // The node label takes precedence over the strategy (plugin.go Calculate).
  bool enabled = s.enable.value_or(false);
  if (enabled_label) {
    // strconv.ParseBool.
    static constexpr std::string_view yes[] = {"1", "t", "T", "TRUE", "true", "True"};
    static constexpr std::string_view no[] = {"0", "f", "F", "FALSE", "false", "False"};
    bool known = false;
    for (auto y : yes)
      if (*enabled_label == y) enabled = known = true;
    for (auto n : no)
      if (*enabled_label == n) {
        enabled = false;
        known = true;
      }
    if (!known)
      return fail(errc::invalid_input,
                  "invalid value \"" + std::string(*enabled_label) + "\" (want a bool)",
                  std::string(label_cpu_normalization_enabled));
  }
  if (!enabled) return std::string(cpu_normalization_default_ratio);
  if (!basic_info)
    return fail(errc::not_found, "failed to get CPUBasicInfo: info is missing",
                std::string(annotation_cpu_basic_info));
  auto info = parse_cpu_basic_info(*basic_info);
  if (!info) return err(info);
  auto ratio = cpu_normalization_ratio(*info, s);
  if (!ratio) return err(ratio);
  if (auto ok = validate_cpu_normalization_ratio(*ratio); !ok) return err(ok);
  return format_ratio(*ratio);
}

result<double> parse_cpu_normalization_ratio(std::optional<std::string_view> v) {
  if (!v) return -1.0;
  double d = 0;
  const auto* end = v->data() + v->size();
  const auto [p, ec] = std::from_chars(v->data(), end, d);
  if (ec != std::errc{} || p != end || v->empty())
    return fail(errc::invalid_input, "invalid value \"" + std::string(*v) + "\" (want a float)",
                std::string(names::annotation_cpu_normalization_ratio));
  if (!(d > 0))
    return fail(errc::invalid_input, "illegal cpu normalization ratio " + std::string(*v),
                std::string(names::annotation_cpu_normalization_ratio));
  return d;
}

meta_sync cpu_normalization_need_sync(std::optional<std::string_view> old_ratio,
                                      std::optional<std::string_view> new_ratio) {
  const auto o = parse_cpu_normalization_ratio(old_ratio);
  if (!o) return {true, "old ratio parsed error"};
  const auto n = parse_cpu_normalization_ratio(new_ratio);
  if (!n) return {false, "new ratio parsed error"};
  if (*n == -1 && *o == -1) return {false, "ratios are nil"};
  if (*o == -1) return {true, "old ratio is nil"};
  if (*n == -1) return {true, "new ratio is nil"};
  // IsCPUNormalizationRatioDifferent.
  if (!(*o > *n + normalization_ratio_diff_epsilon || *o < *n - normalization_ratio_diff_epsilon))
    return {false, "ratios are close"};
  return {true, "ratio is different"};
}

result<std::optional<std::string>> calculate_resource_amplification(
    const resource_amplification_strategy& s, std::optional<std::string_view> cpu_normalization) {
  std::map<std::string, double, std::less<>> ratios;
  if (s.enable.value_or(false)) ratios = s.ratios;
  // calculateCPUAmplificationRatio: the strategy's cpu ratio (1 if none) times the node's cpu
  // normalization ratio (when set); kept only when above 1.
  double cpu = 1;
  if (auto it = ratios.find("cpu"); it != ratios.end() && it->second > 0) cpu = it->second;
  auto norm = parse_cpu_normalization_ratio(cpu_normalization);
  if (!norm) return err(norm);
  if (*norm > 0) cpu *= *norm;
  if (cpu > 1) ratios["cpu"] = cpu;
  for (const auto& [k, v] : ratios)
    if (v < 1)
      return fail(errc::invalid_input, "ratio " + format_ratio(v) + " is invalid",
                  std::string(annotation_resource_amplification_ratio) + "." + k);
  if (ratios.empty()) return std::optional<std::string>{};
  // json.Marshal(map[ResourceName]Ratio): keys sorted, Ratio.MarshalJSON with 2 decimals.
  std::string out = "{";
  bool first = true;
  for (const auto& [k, v] : ratios) {
    if (!first) out += ',';
    first = false;
    out += json(k).dump();
    out += ':';
    out += format_ratio(v);
  }
  out += '}';
  return std::optional<std::string>(std::move(out));
}

meta_sync resource_amplification_need_sync(std::string_view old_ratio, std::string_view new_ratio) {
  if (old_ratio.empty() && new_ratio.empty()) return {false, "ratio remains empty"};
  if (old_ratio.empty()) return {true, "old ratio is empty"};
  if (new_ratio.empty()) return {true, "new ratio is empty"};
  if (old_ratio == new_ratio) return {false, "ratio remains unchanged"};
  return {true, "ratio changed"};
}

result<std::map<std::string, double, std::less<>>> parse_amplification_ratios(
    std::string_view annotation) {
  const std::string where(annotation_resource_amplification_ratio);
  auto doc = internal::parse_json(annotation, where);
  if (!doc) return err(doc);
  if (doc->is_null()) return std::map<std::string, double, std::less<>>{};
  if (!doc->is_object()) return internal::invalid(where, "", *doc, "want an object");
  std::map<std::string, double, std::less<>> out;
  for (auto it = doc->begin(); it != doc->end(); ++it) {
    if (it->is_null()) continue;
    if (!it->is_number()) return internal::invalid(where, it.key(), *it, "want a number");
    out[it.key()] = it->get<double>();
  }
  return out;
}

node_meta_update update_node_meta(const cpu_normalization_config* cpu,
                                  const resource_amplification_config* amp,
                                  const node_labels& labels, const node_meta& now,
                                  bool colocation_disabled) {
  node_meta_update u;
  u.after = now;
  auto opt = [](const std::optional<std::string>& s) {
    return s ? std::optional<std::string_view>(*s) : std::nullopt;
  };
  if (!colocation_disabled && cpu != nullptr) {
    std::optional<std::string_view> label;
    if (auto it = labels.find(label_cpu_normalization_enabled); it != labels.end())
      label = it->second;
    // A failed Calculate writes no item: Prepare then leaves the annotation as it is.
    if (auto r = calculate_cpu_normalization(cpu->for_node(labels), label, opt(now.cpu_basic_info)))
      u.after.cpu_normalization_ratio = std::move(*r);
  }
  u.after.resource_amplification_ratio.reset();
  if (!colocation_disabled && amp != nullptr) {
    if (auto r = calculate_resource_amplification(amp->for_node(labels),
                                                  opt(u.after.cpu_normalization_ratio));
        r && *r)
      u.after.resource_amplification_ratio = std::move(**r);
  }
  const auto cn = cpu_normalization_need_sync(opt(now.cpu_normalization_ratio),
                                              opt(u.after.cpu_normalization_ratio));
  const auto ra =
      resource_amplification_need_sync(now.resource_amplification_ratio.value_or(""),
                                       u.after.resource_amplification_ratio.value_or(""));
  if (cn.need_sync) u.reason = "CPUNormalization: " + std::string(cn.reason);
  if (ra.need_sync) {
    if (!u.reason.empty()) u.reason += "; ";
    u.reason += "ResourceAmplification: " + std::string(ra.reason);
  }
  u.need_sync = cn.need_sync || ra.need_sync;
  if (!u.need_sync) {
    u.after = now;  // no patch is sent: the node keeps what it has
    return u;
  }
  // client.MergeFrom: the keys whose value changed, null for a removed one; keys sorted.
  json patch = json::object();
  auto diff = [&](std::string_view key, const std::optional<std::string>& o,
                  const std::optional<std::string>& n) {
    if (o == n) return;
    patch[std::string(key)] = n ? json(*n) : json(nullptr);
  };
  diff(names::annotation_cpu_normalization_ratio, now.cpu_normalization_ratio,
       u.after.cpu_normalization_ratio);
  diff(annotation_resource_amplification_ratio, now.resource_amplification_ratio,
       u.after.resource_amplification_ratio);
  if (!patch.empty()) u.patch = patch.dump();
  return u;
}

result<void> apply_annotation_patch(std::string_view patch, node_meta& m) {
  auto doc = internal::parse_json(patch, "annotations patch");
  if (!doc) return err(doc);
  if (!doc->is_object()) return internal::invalid("annotations patch", "", *doc, "want an object");
  node_meta out = m;
  for (auto it = doc->begin(); it != doc->end(); ++it) {
    std::optional<std::string>* field = nullptr;
    if (it.key() == names::annotation_cpu_normalization_ratio) field = &out.cpu_normalization_ratio;
    if (it.key() == annotation_resource_amplification_ratio)
      field = &out.resource_amplification_ratio;
    if (field == nullptr) continue;
    if (it->is_null()) {
      field->reset();
    } else if (it->is_string()) {
      *field = it->get<std::string>();
    } else {
      return internal::invalid("annotations patch", it.key(), *it, "want a string or null");
    }
  }
  m = std::move(out);
  return {};
}

std::int64_t amplify(std::int64_t origin, double ratio) noexcept {
  if (!(ratio > 1)) return origin;
  const double v = std::ceil(static_cast<double>(origin) * ratio);
  if (!(v < 9223372036854775808.0)) return origin;
  return static_cast<std::int64_t>(v);
}

}  // namespace colony::slo_controller
