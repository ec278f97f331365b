// node_slo: the NodeSLO spec per node (see node_slo.hpp).
#include "actors/slo_controller/node_slo.hpp"

#include <array>

#include "actors/slo_controller/internal/host_application_json.hpp"
#include "actors/slo_controller/internal/json_fields.hpp"
#include "actors/slo_controller/internal/strategy_json.hpp"

namespace colony::slo_controller {

using internal::json;

namespace {

// ResourceQOSStrategy's fields (apis/slo/v1alpha1/nodeslo_types.go); encoding/json matches a key
// exactly or case-insensitively and drops the others.
constexpr std::array<std::string_view, 6> qos_fields{"policies", "lsrClass",    "lsClass",
                                                     "beClass",  "systemClass", "cgroupRoot"};

// A JSON value with its nulls removed (a nil pointer is omitted when util.MergeCfg marshals the
// overlay, so it overrides nothing).
json without_nulls(const json& v) {
  if (!v.is_object()) return v;
  json o = json::object();
  for (const auto& [k, x] : v.items())
    if (!x.is_null()) o[k] = without_nulls(x);
  return o;
}

// util.MergeCfg(base, overlay) on JSON: json.Unmarshal into the existing value merges objects
// key by key and replaces everything else.
void overlay(json& base, const json& over) {
  for (const auto& [k, x] : over.items()) {
    if (x.is_null()) continue;
    auto it = base.find(k);
    if (x.is_object() && it != base.end() && it->is_object()) {
      overlay(*it, x);
    } else {
      base[k] = without_nulls(x);
    }
  }
}

// The ResourceQOSStrategy fields of a strategy object (a node entry also holds name and
// nodeSelector), under their Go names.
json qos_strategy_of(const json& obj) {
  json o = json::object();
  if (!obj.is_object()) return o;
  for (const auto f : qos_fields)
    if (const json* v = internal::find_field(obj, f); v != nullptr && !v->is_null())
      o[std::string(f)] = *v;
  return o;
}

template <class Config>
void texts_of(const std::optional<Config>& c, std::string& cluster,
              std::vector<std::pair<label_selector, std::string>>& nodes) {
  const Config cfg = c.value_or(Config{});
  cluster = internal::canonical_dump(internal::to_json(cfg.cluster));
  for (const auto& n : cfg.node_strategies)
    nodes.emplace_back(n.node_selector, internal::canonical_dump(internal::to_json(n.strategy)));
}

}  // namespace

const std::string& node_slo_renderer::key_texts::for_node(const node_labels& labels) const {
  // nodeslo/resource_strategy.go: the first entry whose selector matches (an invalid selector
  // is skipped).
  for (const auto& [sel, text] : nodes)
    if (selector_matches(sel, labels)) return text;
  return cluster;
}

node_slo_renderer::node_slo_renderer(const slo_controller_config& cfg) : cfg_(cfg) {
  texts_of<resource_threshold_config>(cfg.resource_threshold, threshold_.cluster, threshold_.nodes);
  texts_of<cpu_burst_config>(cfg.cpu_burst, burst_.cluster, burst_.nodes);
  texts_of<system_config>(cfg.system, system_.cluster, system_.nodes);
  // resource-qos-config, kept as validated canonical JSON by the parser: merged here
  // (calculateResourceQOSCfgMerged), over an empty cluster strategy.
  json cluster = json::object();
  json doc;
  if (cfg.resource_qos && !cfg.resource_qos->canonical_json.empty()) {
    auto d = internal::parse_json(cfg.resource_qos->canonical_json, resource_qos_config_key);
    if (d && d->is_object()) doc = std::move(*d);
  }
  if (doc.is_object())
    if (const json* c = internal::find_field(doc, "clusterStrategy"); c != nullptr)
      overlay(cluster, qos_strategy_of(*c));
  qos_.cluster = internal::canonical_dump(cluster);
  // host-application-config, validated by the parser (a document that fails here renders none).
  if (cfg.host_application)
    if (auto h = parse_host_application_document(cfg.host_application->canonical_json))
      host_apps_ = std::move(*h);
  host_apps_text_.cluster = host_applications_json(host_apps_.applications);
  for (const auto& n : host_apps_.node_configs) {
    // An absent or invalid selector: an entry that never matches (label_selector{} is nil).
    host_apps_text_.nodes.emplace_back(n.node_selector.value_or(label_selector{}),
                                       host_applications_json(n.applications));
  }
  const json* ns = doc.is_object() ? internal::find_field(doc, "nodeStrategies") : nullptr;
  if (ns != nullptr && ns->is_array()) {
    for (const auto& entry : *ns) {
      label_selector sel;  // absent or invalid: never matches (the parser warned)
      if (const json* s = internal::find_field(entry, "nodeSelector");
          s != nullptr && !s->is_null())
        if (auto r = internal::read_selector(*s, "nodeSelector")) sel = std::move(*r);
      json merged = cluster;
      overlay(merged, qos_strategy_of(entry));
      qos_.nodes.emplace_back(std::move(sel), internal::canonical_dump(merged));
    }
  }
}

std::string node_slo_renderer::spec_json(const node_labels& labels) const {
  // The four texts under their field names, in sorted key order: the canonical dump of the
  // composed object, without building it (tested equal to node_slo_spec_json).
  const auto& b = burst_.for_node(labels);
  const auto& q = qos_.for_node(labels);
  const auto& t = threshold_.for_node(labels);
  const auto& s = system_.for_node(labels);
  const auto& h = host_apps_text_.for_node(labels);
  const std::pair<std::string_view, const std::string*> fields[] = {
      {node_slo_cpu_burst_field, &b},
      {node_slo_host_applications_field, &h},
      {node_slo_qos_field, &q},
      {node_slo_threshold_field, &t},
      {node_slo_system_field, &s}};
  std::string out;
  out.reserve(b.size() + h.size() + q.size() + t.size() + s.size() + 120);
  char sep = '{';
  for (const auto& [name, text] : fields) {
    if (name == node_slo_host_applications_field && *text == "[]") continue;  // omitempty
    out += sep;
    out += '"';
    out += name;
    out += "\":";
    out += *text;
    sep = ',';
  }
  out += '}';
  return out;
}

node_slo_spec node_slo_renderer::spec(const node_labels& labels) const {
  node_slo_spec s;
  s.resource_used_threshold_with_be =
      cfg_.resource_threshold.value_or(resource_threshold_config{}).for_node(labels);
  s.resource_qos_strategy_json = qos_.for_node(labels);
  s.cpu_burst = cfg_.cpu_burst.value_or(cpu_burst_config{}).for_node(labels);
  s.system = cfg_.system.value_or(system_config{}).for_node(labels);
  s.host_applications = host_apps_.for_node(labels);
  return s;
}

bool same_node_slo_keys(const slo_controller_config& a, const slo_controller_config& b) {
  return a.resource_threshold == b.resource_threshold && a.resource_qos == b.resource_qos &&
         a.cpu_burst == b.cpu_burst && a.system == b.system &&
         a.host_application == b.host_application;
}

std::string node_slo_spec_json(const node_slo_spec& s) {
  json o = json::object();
  o[std::string(node_slo_threshold_field)] = internal::to_json(s.resource_used_threshold_with_be);
  auto q = internal::parse_json(s.resource_qos_strategy_json, node_slo_qos_field);
  o[std::string(node_slo_qos_field)] = q && q->is_object() ? std::move(*q) : json::object();
  o[std::string(node_slo_cpu_burst_field)] = internal::to_json(s.cpu_burst);
  o[std::string(node_slo_system_field)] = internal::to_json(s.system);
  if (!s.host_applications.empty())
    o[std::string(node_slo_host_applications_field)] = internal::to_json(s.host_applications);
  return internal::canonical_dump(o);
}

result<node_slo_spec> parse_node_slo_spec(std::string_view spec_json) {
  auto doc = internal::parse_json(spec_json, "NodeSLO.spec");
  if (!doc) return tl::unexpected(doc.error());
  if (!doc->is_object()) return internal::invalid("NodeSLO.spec", "", *doc, "want a JSON object");
  node_slo_spec s;  // the defaults, each strategy merged over them
  auto field = [&](std::string_view name) -> const json* {
    const json* v = internal::find_field(*doc, name);
    return v == nullptr || v->is_null() ? nullptr : v;
  };
  auto where = [](std::string_view name) { return internal::path("NodeSLO.spec", name); };
  if (const json* v = field(node_slo_threshold_field)) {
    auto r = internal::read_resource_threshold_strategy(*v, where(node_slo_threshold_field),
                                                        s.resource_used_threshold_with_be);
    if (!r) return tl::unexpected(r.error());
    s.resource_used_threshold_with_be = std::move(*r);
  }
  if (const json* v = field(node_slo_qos_field)) {
    if (!v->is_object())
      return internal::invalid("NodeSLO.spec", node_slo_qos_field, *v, "want an object");
    s.resource_qos_strategy_json = internal::canonical_dump(*v);
  }
  if (const json* v = field(node_slo_cpu_burst_field)) {
    auto r = internal::read_cpu_burst_strategy(*v, where(node_slo_cpu_burst_field), s.cpu_burst);
    if (!r) return tl::unexpected(r.error());
    s.cpu_burst = std::move(*r);
  }
  if (const json* v = field(node_slo_system_field)) {
    auto r = internal::read_system_strategy(*v, where(node_slo_system_field), s.system);
    if (!r) return tl::unexpected(r.error());
    s.system = std::move(*r);
  }
  if (const json* v = field(node_slo_host_applications_field)) {
    auto r = internal::read_host_applications(*v, where(node_slo_host_applications_field));
    if (!r) return tl::unexpected(r.error());
    s.host_applications = std::move(*r);
  }
  return s;
}

result<resource_qos_strategy> parse_resource_qos_strategy(std::string_view text) {
  const std::string root = internal::path("NodeSLO.spec", node_slo_qos_field);
  auto doc = internal::parse_json(text, root);
  if (!doc) return tl::unexpected(doc.error());
  resource_qos_strategy s;
  if (doc->is_null()) return s;
  if (!doc->is_object())
    return internal::invalid("NodeSLO.spec", node_slo_qos_field, *doc, "want an object");
  auto object = [](const json& o, std::string_view key) -> const json* {
    const json* v = internal::find_field(o, key);
    return v == nullptr || v->is_null() ? nullptr : v;
  };
  if (const json* p = object(*doc, "policies")) {
    if (!p->is_object()) return internal::invalid(root, "policies", *p, "want an object");
    if (auto r =
            internal::read_string(*p, "cpuPolicy", internal::path(root, "policies"), s.cpu_policy);
        !r)
      return tl::unexpected(r.error());
  }
  auto read_class = [&](std::string_view name, resource_qos_class& c) -> result<void> {
    const json* cls = object(*doc, name);
    if (cls == nullptr) return {};
    const std::string where = internal::path(root, name);
    if (!cls->is_object()) return internal::invalid(root, name, *cls, "want an object");
    if (const json* cpu = object(*cls, "cpuQOS")) {
      const std::string w = internal::path(where, "cpuQOS");
      if (!cpu->is_object()) return internal::invalid(where, "cpuQOS", *cpu, "want an object");
      if (auto r = internal::read_bool(*cpu, "enable", w, c.cpu_enable); !r) return r;
      if (auto r = internal::read_int64(*cpu, "groupIdentity", w, c.group_identity); !r) return r;
    }
    if (const json* mem = object(*cls, "memoryQOS")) {
      const std::string w = internal::path(where, "memoryQOS");
      if (!mem->is_object()) return internal::invalid(where, "memoryQOS", *mem, "want an object");
      if (auto r = internal::read_bool(*mem, "enable", w, c.memory_enable); !r) return r;
      const std::pair<std::string_view, std::optional<std::int64_t>*> pct[] = {
          {"minLimitPercent", &c.min_limit_percent},
          {"lowLimitPercent", &c.low_limit_percent},
          {"throttlingPercent", &c.throttling_percent}};
      for (const auto& [key, out] : pct) {
        if (auto r = internal::read_int64(*mem, key, w, *out); !r) return r;
        if (auto r = internal::check_range(w, key, *out, 0, 100); !r) return r;
      }
    }
    if (const json* rdt = object(*cls, "resctrlQOS")) {
      const std::string w = internal::path(where, "resctrlQOS");
      if (!rdt->is_object()) return internal::invalid(where, "resctrlQOS", *rdt, "want an object");
      if (auto r = internal::read_bool(*rdt, "enable", w, c.resctrl_enable); !r) return r;
      const std::pair<std::string_view, std::optional<std::int64_t>*> pct[] = {
          {"catRangeStartPercent", &c.cat_range_start_percent},
          {"catRangeEndPercent", &c.cat_range_end_percent},
          {"mbaPercent", &c.mba_percent}};
      for (const auto& [key, out] : pct) {
        if (auto r = internal::read_int64(*rdt, key, w, *out); !r) return r;
        if (auto r = internal::check_range(w, key, *out, 0, 100); !r) return r;
      }
    }
    return {};
  };
  for (auto [name, c] : {std::pair{"lsrClass", &s.lsr}, std::pair{"lsClass", &s.ls},
                         std::pair{"beClass", &s.be}, std::pair{"systemClass", &s.system}})
    if (auto r = read_class(name, *c); !r) return tl::unexpected(r.error());
  return s;
}

}  // namespace colony::slo_controller
