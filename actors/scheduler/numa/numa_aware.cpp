#include "actors/scheduler/numa/numa_aware.hpp"

#include <nlohmann/json.hpp>

namespace colony::scheduler::numa {
namespace {

using json = nlohmann::json;

template <class E, std::size_t N>
std::optional<E> lookup(const std::pair<std::string_view, E> (&table)[N], std::string_view s) {
  for (const auto& [name, v] : table)
    if (name == s) return v;
  return std::nullopt;
}
template <class E, std::size_t N>
std::string_view name_of(const std::pair<std::string_view, E> (&table)[N], E v) {
  for (const auto& [name, e] : table)
    if (e == v) return name;
  return "?";
}

const std::pair<std::string_view, cpu_bind_policy> bind_names[] = {
    {"", cpu_bind_policy::unset},
    {"Default", cpu_bind_policy::default_policy},
    {"FullPCPUs", cpu_bind_policy::full_pcpus},
    {"SpreadByPCPUs", cpu_bind_policy::spread_by_pcpus},
    {"ConstrainedBurst", cpu_bind_policy::constrained_burst},
};
const std::pair<std::string_view, cpu_exclusive_policy> exclusive_names[] = {
    {"", cpu_exclusive_policy::unset},
    {"None", cpu_exclusive_policy::none},
    {"PCPULevel", cpu_exclusive_policy::pcpu_level},
    {"NUMANodeLevel", cpu_exclusive_policy::numa_node_level},
};
const std::pair<std::string_view, numa_allocate_strategy> strategy_names[] = {
    {"MostAllocated", numa_allocate_strategy::most_allocated},
    {"LeastAllocated", numa_allocate_strategy::least_allocated},
    {"DistributeEvenly", numa_allocate_strategy::distribute_evenly},
};
const std::pair<std::string_view, node_cpu_bind_policy> node_bind_names[] = {
    {"None", node_cpu_bind_policy::none},
    {"FullPCPUsOnly", node_cpu_bind_policy::full_pcpus_only},
    {"SpreadByPCPUs", node_cpu_bind_policy::spread_by_pcpus},
};
const std::pair<std::string_view, numa_topology_policy> topology_names[] = {
    {"", numa_topology_policy::none},
    {"BestEffort", numa_topology_policy::best_effort},
    {"Restricted", numa_topology_policy::restricted},
    {"SingleNUMANode", numa_topology_policy::single_numa_node},
};
const std::pair<std::string_view, numa_topology_exclusive> numa_exclusive_names[] = {
    {"", numa_topology_exclusive::unset},
    {"Preferred", numa_topology_exclusive::preferred},
    {"Required", numa_topology_exclusive::required},
};

// Parses an annotation value into a JSON object; "where" is the annotation name.
result<json> object_of(std::string_view text, std::string_view where) {
  auto doc = json::parse(text.begin(), text.end(), nullptr, false);
  if (doc.is_discarded()) return fail(errc::invalid_input, "not JSON", std::string(where));
  if (doc.is_null()) return json::object();  // Go unmarshals "null" into the zero struct
  if (!doc.is_object()) return fail(errc::invalid_input, "not a JSON object", std::string(where));
  return doc;
}

// A string field: absent/null is "", another type an error naming the field.
result<std::string> string_field(const json& o, const char* field, std::string_view where) {
  auto f = o.find(field);
  if (f == o.end() || f->is_null()) return std::string{};
  if (!f->is_string())
    return fail(errc::invalid_input, std::string(field) + ": not a string", std::string(where));
  return f->get<std::string>();
}

// An enum field; an undefined string is `lenient` when given, else an error naming the field.
template <class E, std::size_t N>
result<E> enum_field(const json& o, const char* field, std::string_view where,
                     const std::pair<std::string_view, E> (&table)[N],
                     std::optional<E> lenient = std::nullopt) {
  auto s = string_field(o, field, where);
  if (!s) return tl::unexpected(s.error());
  auto v = lookup(table, *s);
  if (!v && lenient) return *lenient;
  if (!v)
    return fail(errc::invalid_input, std::string(field) + ": unknown value \"" + *s + "\"",
                std::string(where));
  return *v;
}

result<std::map<std::string, std::string>> string_map_field(const json& o, const char* field,
                                                            const std::string& where) {
  std::map<std::string, std::string> out;
  auto f = o.find(field);
  if (f == o.end() || f->is_null()) return out;
  if (!f->is_object())
    return fail(errc::invalid_input, std::string(field) + ": not an object", where);
  for (const auto& [k, v] : f->items()) {
    // A ResourceList quantity may be written as a JSON number; keep its text.
    if (v.is_string()) {
      out[k] = v.get<std::string>();
    } else if (v.is_number()) {
      out[k] = v.dump();
    } else {
      return fail(errc::invalid_input, std::string(field) + "." + k + ": not a string", where);
    }
  }
  return out;
}

}  // namespace

std::string_view to_string(cpu_bind_policy p) { return name_of(bind_names, p); }
std::string_view to_string(cpu_exclusive_policy p) { return name_of(exclusive_names, p); }
std::string_view to_string(numa_allocate_strategy s) { return name_of(strategy_names, s); }
std::string_view to_string(node_cpu_bind_policy p) { return name_of(node_bind_names, p); }
std::string_view to_string(numa_topology_policy p) { return name_of(topology_names, p); }
std::string_view to_string(numa_topology_exclusive e) { return name_of(numa_exclusive_names, e); }
std::optional<cpu_bind_policy> parse_cpu_bind_policy(std::string_view s) {
  return lookup(bind_names, s);
}
std::optional<cpu_exclusive_policy> parse_cpu_exclusive_policy(std::string_view s) {
  return lookup(exclusive_names, s);
}
std::optional<numa_allocate_strategy> parse_numa_allocate_strategy(std::string_view s) {
  return lookup(strategy_names, s);
}
std::optional<numa_topology_policy> parse_numa_topology_policy(std::string_view s) {
  return lookup(topology_names, s);
}

result<resource_spec> parse_resource_spec(std::string_view text) {
  const auto where = annotation_resource_spec;
  auto o = object_of(text, where);
  if (!o) return tl::unexpected(o.error());
  resource_spec s;
  const auto odd_bind = std::optional(cpu_bind_policy::unrecognized);
  auto req = enum_field(*o, "requiredCPUBindPolicy", where, bind_names, odd_bind);
  if (!req) return tl::unexpected(req.error());
  auto pref = enum_field(*o, "preferredCPUBindPolicy", where, bind_names, odd_bind);
  if (!pref) return tl::unexpected(pref.error());
  auto excl = enum_field(*o, "preferredCPUExclusivePolicy", where, exclusive_names,
                         std::optional(cpu_exclusive_policy::unrecognized));
  if (!excl) return tl::unexpected(excl.error());
  s.required_cpu_bind_policy = *req;
  s.preferred_cpu_bind_policy = *pref;
  s.preferred_cpu_exclusive_policy = *excl;
  return s;
}

result<numa_topology_spec> parse_numa_topology_spec(std::string_view text) {
  const auto where = annotation_numa_topology_spec;
  auto o = object_of(text, where);
  if (!o) return tl::unexpected(o.error());
  auto p = enum_field(*o, "numaTopologyPolicy", where, topology_names);
  if (!p) return tl::unexpected(p.error());
  auto e = enum_field(*o, "singleNUMANodeExclusive", where, numa_exclusive_names);
  if (!e) return tl::unexpected(e.error());
  return numa_topology_spec{*p, *e};
}

result<resource_status> parse_resource_status(std::string_view text) {
  const std::string where(annotation_resource_status);
  auto o = object_of(text, where);
  if (!o) return tl::unexpected(o.error());
  resource_status s;
  auto cs = string_field(*o, "cpuset", where);
  if (!cs) return tl::unexpected(cs.error());
  auto set = cpu_set::parse(*cs);
  if (!set) return fail(errc::invalid_input, "cpuset: " + set.error().message, where);
  s.cpuset = std::move(*set);
  auto f = o->find("numaNodeResources");
  if (f != o->end() && !f->is_null()) {
    if (!f->is_array()) return fail(errc::invalid_input, "numaNodeResources: not an array", where);
    for (std::size_t i = 0; i < f->size(); ++i) {
      const auto& e = (*f)[i];
      const std::string at = "numaNodeResources[" + std::to_string(i) + "]";
      if (!e.is_object()) return fail(errc::invalid_input, at + ": not an object", where);
      numa_node_resource r;
      auto n = e.find("node");
      if (n != e.end() && !n->is_null()) {
        if (!n->is_number_integer())
          return fail(errc::invalid_input, at + ".node: not an integer", where);
        const auto v = n->get<std::int64_t>();
        if (v < 0 || v > 0x7fffffff)
          return fail(errc::invalid_input, at + ".node: out of range", where);
        r.node = static_cast<int>(v);
      }
      auto res = string_map_field(e, "resources", where + " " + at);
      if (!res) return tl::unexpected(res.error());
      r.resources = std::move(*res);
      s.numa_node_resources.push_back(std::move(r));
    }
  }
  return s;
}

std::string format_resource_status(const resource_status& s) {
  json o = json::object();
  if (!s.cpuset.empty()) o["cpuset"] = s.cpuset.to_string();
  if (!s.numa_node_resources.empty()) {
    json arr = json::array();
    for (const auto& r : s.numa_node_resources) {
      json e = json::object();
      e["node"] = r.node;
      if (!r.resources.empty()) {
        json res = json::object();
        for (const auto& [k, v] : r.resources) res[k] = v;
        e["resources"] = std::move(res);
      }
      arr.push_back(std::move(e));
    }
    o["numaNodeResources"] = std::move(arr);
  }
  return o.dump();
}

result<kubelet_cpu_manager_policy> parse_kubelet_cpu_manager_policy(std::string_view text) {
  const std::string where(annotation_kubelet_cpu_manager_policy);
  auto o = object_of(text, where);
  if (!o) return tl::unexpected(o.error());
  kubelet_cpu_manager_policy p;
  auto pol = string_field(*o, "policy", where);
  if (!pol) return tl::unexpected(pol.error());
  p.policy = std::move(*pol);
  auto opts = string_map_field(*o, "options", where);
  if (!opts) return tl::unexpected(opts.error());
  p.options = std::move(*opts);
  auto rc = string_field(*o, "reservedCPUs", where);
  if (!rc) return tl::unexpected(rc.error());
  auto set = cpu_set::parse(*rc);
  if (!set) return fail(errc::invalid_input, "reservedCPUs: " + set.error().message, where);
  p.reserved_cpus = std::move(*set);
  return p;
}

node_cpu_bind_policy get_node_cpu_bind_policy(const label_map& node_labels,
                                              const kubelet_cpu_manager_policy* kubelet) {
  std::string_view label;
  if (auto it = node_labels.find(label_node_cpu_bind_policy); it != node_labels.end())
    label = it->second;
  bool kubelet_full = false;
  if (kubelet != nullptr && kubelet->policy == "static") {
    auto it = kubelet->options.find("full-pcpus-only");
    kubelet_full = it != kubelet->options.end() && it->second == "true";
  }
  if (label == "FullPCPUsOnly" || kubelet_full) return node_cpu_bind_policy::full_pcpus_only;
  if (label == "SpreadByPCPUs") return node_cpu_bind_policy::spread_by_pcpus;
  return node_cpu_bind_policy::none;
}

numa_topology_policy numa_topology_policy_from_kubelet(
    const std::vector<std::string>& nrt_topology_policies) {
  for (const auto& p : nrt_topology_policies) {
    if (p == "BestEffort") return numa_topology_policy::best_effort;
    if (p == "Restricted") return numa_topology_policy::restricted;
    if (p == "SingleNUMANodePodLevel") return numa_topology_policy::single_numa_node;
  }
  return numa_topology_policy::none;
}

result<numa_topology_policy> get_numa_topology_policy(const label_map& node_labels,
                                                      numa_topology_policy kubelet_policy) {
  auto it = node_labels.find(label_numa_topology_policy);
  if (it == node_labels.end()) return kubelet_policy;
  auto p = parse_numa_topology_policy(it->second);
  if (!p)
    return fail(errc::invalid_input, "unknown value \"" + it->second + "\"",
                std::string(label_numa_topology_policy));
  return *p == numa_topology_policy::none ? kubelet_policy : *p;
}

result<numa_topology_policy> merge_topology_policy(numa_topology_policy node,
                                                   numa_topology_policy pod) {
  if (node != numa_topology_policy::none && pod != numa_topology_policy::none && pod != node)
    return fail(errc::failed_precondition, std::string(err_not_match_numa_topology));
  return pod != numa_topology_policy::none ? pod : node;
}

result<numa_allocate_strategy> get_numa_allocate_strategy(const label_map& node_labels,
                                                          bool numa_scoring_most_allocated) {
  const auto fallback = numa_scoring_most_allocated ? numa_allocate_strategy::most_allocated
                                                    : numa_allocate_strategy::least_allocated;
  auto it = node_labels.find(label_node_numa_allocate_strategy);
  if (it == node_labels.end() || it->second.empty()) return fallback;
  auto s = parse_numa_allocate_strategy(it->second);
  if (!s)
    return fail(errc::invalid_input, "unknown value \"" + it->second + "\"",
                std::string(label_node_numa_allocate_strategy));
  return *s;
}

bind_decision get_cpu_bind_policy(const label_map& node_labels,
                                  const kubelet_cpu_manager_policy* kubelet,
                                  cpu_bind_policy required, cpu_bind_policy preferred) {
  if (required != cpu_bind_policy::unset) return {required, true};
  switch (get_node_cpu_bind_policy(node_labels, kubelet)) {
    case node_cpu_bind_policy::spread_by_pcpus:
      return {cpu_bind_policy::spread_by_pcpus, true};
    case node_cpu_bind_policy::full_pcpus_only:
      return {cpu_bind_policy::full_pcpus, true};
    case node_cpu_bind_policy::none:
      break;
  }
  return {preferred, false};
}

result<pod_cpu_bind> resolve_pod_cpu_bind(const resource_spec& spec,
                                          std::int64_t requested_milli_cpu,
                                          cpu_bind_policy default_policy) {
  pod_cpu_bind out;
  out.num_cpus_needed = static_cast<int>(requested_milli_cpu / 1000);
  auto policy = spec.preferred_cpu_bind_policy;
  if (policy == cpu_bind_policy::unset || policy == cpu_bind_policy::default_policy)
    policy = default_policy;
  auto required = spec.required_cpu_bind_policy;
  if (required == cpu_bind_policy::default_policy) required = default_policy;
  if (required != cpu_bind_policy::unset) policy = required;
  if (policy != cpu_bind_policy::full_pcpus && policy != cpu_bind_policy::spread_by_pcpus)
    return out;
  if (requested_milli_cpu % 1000 != 0)
    return fail(errc::failed_precondition, std::string(err_invalid_requested_cpus));
  if (requested_milli_cpu > 0) {
    out.request_cpu_bind = true;
    out.required_cpu_bind_policy = required;
    out.preferred_cpu_bind_policy = policy;
    out.preferred_cpu_exclusive_policy = spec.preferred_cpu_exclusive_policy;
  }
  return out;
}

}  // namespace colony::scheduler::numa
