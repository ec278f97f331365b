// host_application: NodeSLO spec.hostApplications and host-application-config (see the header).
#include "actors/slo_controller/host_application.hpp"

#include <algorithm>
#include <array>
#include <set>

#include "actors/slo_controller/internal/host_application_json.hpp"
#include "actors/slo_controller/internal/strategy_json.hpp"
#include "actors/slo_controller/slo_controller_config.hpp"
#include "messages/priority.hpp"
#include "messages/qos.hpp"

namespace colony::slo_controller {

using internal::json;

namespace {

constexpr std::array<std::string_view, 4> bases{cgroup_base_root, cgroup_base_kubepods,
                                                cgroup_base_kube_burstable,
                                                cgroup_base_kube_besteffort};

// A path the koordlet joins under the cgroup root must not climb out of it.
bool climbs(std::string_view p) {
  std::size_t start = 0;
  while (start <= p.size()) {
    const auto end = std::min(p.find('/', start), p.size());
    if (p.substr(start, end - start) == "..") return true;
    start = end + 1;
  }
  return false;
}

result<void> read_path_part(const json& obj, std::string_view key, const std::string& where,
                            std::string& out) {
  std::optional<std::string> v;
  if (auto ok = internal::read_string(obj, key, where, v); !ok) return ok;
  out = v.value_or("");
  if (climbs(out))
    return internal::invalid(where, key, *internal::find_field(obj, key),
                             "must not contain a \"..\" component");
  return {};
}

result<host_application_spec> read_one(const json& a, const std::string& w) {
  if (!a.is_object()) return internal::invalid(w, "", a, "want an object");
  host_application_spec s;
  std::optional<std::string> v;
  if (auto ok = internal::read_string(a, "name", w, v); !ok) return tl::unexpected(ok.error());
  if (!v || v->empty())
    return fail(errc::invalid_input, "invalid value \"\" (name is required)",
                internal::path(w, "name"));
  s.name = *v;
  if (climbs(s.name))
    return internal::invalid(w, "name", *internal::find_field(a, "name"),
                             "must not contain a \"..\" component");
  v.reset();
  if (auto ok = internal::read_string(a, "priority", w, v); !ok) return tl::unexpected(ok.error());
  s.priority = v.value_or("");
  if (!s.priority.empty() && get_pod_priority_class_by_name(s.priority) == priority_class::none)
    return internal::invalid(w, "priority", *internal::find_field(a, "priority"),
                             "must be koord-prod, koord-mid, koord-batch or koord-free");
  v.reset();
  if (auto ok = internal::read_string(a, "qos", w, v); !ok) return tl::unexpected(ok.error());
  s.qos = v.value_or("");
  if (!s.qos.empty() && get_pod_qos_class_by_name(s.qos) == qos_class::none)
    return internal::invalid(w, "qos", *internal::find_field(a, "qos"),
                             "must be SYSTEM, LSE, LSR, LS or BE");
  if (const json* cg = internal::find_field(a, "cgroupPath"); cg != nullptr && !cg->is_null()) {
    const std::string cw = internal::path(w, "cgroupPath");
    if (!cg->is_object()) return internal::invalid(w, "cgroupPath", *cg, "want an object");
    host_app_cgroup_path p;
    v.reset();
    if (auto ok = internal::read_string(*cg, "base", cw, v); !ok) return tl::unexpected(ok.error());
    p.base = v.value_or("");
    if (!p.base.empty() && std::find(bases.begin(), bases.end(), p.base) == bases.end())
      return internal::invalid(
          cw, "base", *internal::find_field(*cg, "base"),
          "must be CgroupRoot, Kubepods, KubepodsBurstable or KubepodsBesteffort");
    if (auto ok = read_path_part(*cg, "parentDir", cw, p.parent_dir); !ok)
      return tl::unexpected(ok.error());
    if (auto ok = read_path_part(*cg, "relativePath", cw, p.relative_path); !ok)
      return tl::unexpected(ok.error());
    s.cgroup_path = std::move(p);
  }
  return s;
}

}  // namespace

namespace internal {

result<std::vector<host_application_spec>> read_host_applications(const json& list,
                                                                  std::string_view where) {
  std::vector<host_application_spec> out;
  if (list.is_null()) return out;
  if (!list.is_array()) return invalid(where, "", list, "want an array");
  std::set<std::string> names;
  std::size_t i = 0;
  for (const auto& a : list) {
    const std::string w = std::string(where) + "[" + std::to_string(i++) + "]";
    auto s = read_one(a, w);
    if (!s) return tl::unexpected(s.error());
    // The koordlet keys host applications by name (host_app_reconciler.go hostAppMap): a second
    // entry of a name would silently replace the first.
    if (!names.insert(s->name).second)
      return fail(errc::invalid_input, "invalid value \"" + s->name + "\" (duplicate name)",
                  path(w, "name"));
    out.push_back(std::move(*s));
  }
  return out;
}

json to_json(const std::vector<host_application_spec>& apps) {
  json arr = json::array();
  for (const auto& a : apps) {
    json o = json::object();
    o["name"] = a.name;
    if (!a.priority.empty()) o["priority"] = a.priority;
    if (!a.qos.empty()) o["qos"] = a.qos;
    if (a.cgroup_path) {
      json p = json::object();
      if (!a.cgroup_path->base.empty()) p["base"] = a.cgroup_path->base;
      if (!a.cgroup_path->parent_dir.empty()) p["parentDir"] = a.cgroup_path->parent_dir;
      if (!a.cgroup_path->relative_path.empty()) p["relativePath"] = a.cgroup_path->relative_path;
      o["cgroupPath"] = std::move(p);
    }
    arr.push_back(std::move(o));
  }
  return arr;
}

}  // namespace internal

const std::vector<host_application_spec>& host_application_config::for_node(
    const node_labels& labels) const {
  for (const auto& n : node_configs)
    if (n.node_selector && selector_matches(*n.node_selector, labels)) return n.applications;
  return applications;
}

result<host_application_config> parse_host_application_document(std::string_view text) {
  host_application_config cfg;
  if (text.empty()) return cfg;
  const std::string key(host_application_config_key);
  auto doc = internal::parse_json(text, key);
  if (!doc) return tl::unexpected(doc.error());
  if (!doc->is_object()) return internal::invalid(key, "", *doc, "want a JSON object");
  if (const json* a = internal::find_field(*doc, "applications"); a != nullptr) {
    auto r = internal::read_host_applications(*a, internal::path(key, "applications"));
    if (!r) return tl::unexpected(r.error());
    cfg.applications = std::move(*r);
  }
  const json* ns = internal::find_field(*doc, "nodeConfigs");
  if (ns == nullptr || ns->is_null()) return cfg;
  if (!ns->is_array()) return internal::invalid(key, "nodeConfigs", *ns, "want an array");
  std::size_t i = 0;
  for (const auto& entry : *ns) {
    const std::string w = key + ".nodeConfigs[" + std::to_string(i++) + "]";
    if (!entry.is_object()) return internal::invalid(w, "", entry, "want an object");
    host_application_config::node_config n;
    std::optional<std::string> name;
    if (auto ok = internal::read_string(entry, "name", w, name); !ok)
      return tl::unexpected(ok.error());
    n.name = name.value_or("");
    // An absent or invalid selector never matches (LabelSelectorAsSelector fails: `continue`).
    if (const json* s = internal::find_field(entry, "nodeSelector"); s != nullptr && !s->is_null())
      if (auto sel = internal::read_selector(*s, internal::path(w, "nodeSelector"));
          sel && !(sel->match_labels.empty() && sel->match_expressions.empty()))
        n.node_selector = std::move(*sel);
    if (const json* a = internal::find_field(entry, "applications"); a != nullptr) {
      auto r = internal::read_host_applications(*a, internal::path(w, "applications"));
      if (!r) return tl::unexpected(r.error());
      n.applications = std::move(*r);
    }
    cfg.node_configs.push_back(std::move(n));
  }
  return cfg;
}

result<std::vector<host_application_spec>> parse_host_applications(std::string_view json_array,
                                                                   std::string_view where) {
  auto doc = internal::parse_json(json_array, where);
  if (!doc) return tl::unexpected(doc.error());
  return internal::read_host_applications(*doc, where);
}

std::string host_applications_json(const std::vector<host_application_spec>& apps) {
  return internal::canonical_dump(internal::to_json(apps));
}

}  // namespace colony::slo_controller
