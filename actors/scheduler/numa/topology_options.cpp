#include "actors/scheduler/numa/topology_options.hpp"

#include <algorithm>
#include <charconv>

#include <nlohmann/json.hpp>

namespace colony::scheduler::numa {
namespace {

using json = nlohmann::json;

const std::string* find(const label_map& m, std::string_view key) {
  auto it = m.find(key);
  return it == m.end() ? nullptr : &it->second;
}

// A top-level string field of an annotation's JSON object ("" when absent or null).
result<std::string> string_in(const std::string& text, const char* field, std::string_view where) {
  auto doc = json::parse(text, nullptr, false);
  if (doc.is_discarded()) return fail(errc::invalid_input, "not JSON", std::string(where));
  if (doc.is_null()) return std::string{};
  if (!doc.is_object()) return fail(errc::invalid_input, "not a JSON object", std::string(where));
  auto f = doc.find(field);
  if (f == doc.end() || f->is_null()) return std::string{};
  if (!f->is_string())
    return fail(errc::invalid_input, std::string(field) + ": not a string", std::string(where));
  return f->get<std::string>();
}

// getPodAllocsCPUSet over the pod-cpu-allocs annotation (a JSON array of PodCPUAlloc).
result<cpu_set> pod_allocs_cpus(const std::string& text) {
  const std::string where(annotation_node_cpu_allocs);
  auto doc = json::parse(text, nullptr, false);
  if (doc.is_discarded()) return fail(errc::invalid_input, "not JSON", where);
  cpu_set out;
  if (doc.is_null()) return out;
  if (!doc.is_array()) return fail(errc::invalid_input, "not a JSON array", where);
  for (std::size_t i = 0; i < doc.size(); ++i) {
    const auto& e = doc[i];
    const std::string at = "[" + std::to_string(i) + "]";
    if (!e.is_object()) return fail(errc::invalid_input, at + ": not an object", where);
    auto managed = e.find("managedByKubelet");
    if (managed != e.end() && !managed->is_null() && !managed->is_boolean())
      return fail(errc::invalid_input, at + ".managedByKubelet: not a boolean", where);
    for (const char* f : {"uid", "cpuset"}) {
      auto v = e.find(f);
      if (v != e.end() && !v->is_null() && !v->is_string())
        return fail(errc::invalid_input, at + "." + f + ": not a string", where);
    }
    const bool by_kubelet = managed != e.end() && managed->is_boolean() && managed->get<bool>();
    const std::string uid = e.value("uid", std::string{});
    const std::string cpus = e.value("cpuset", std::string{});
    if (!by_kubelet || uid.empty() || cpus.empty()) continue;
    // An entry whose cpuset does not parse is skipped, as Go skips it.
    if (auto set = cpu_set::parse(cpus)) out = out.union_with(*set);
  }
  return out;
}

// system-qos-resource: the cpuset when cpusetExclusive is absent or true.
result<cpu_set> system_qos_cpus(const std::string& text) {
  const std::string where(annotation_node_system_qos_resource);
  auto doc = json::parse(text, nullptr, false);
  if (doc.is_discarded()) return fail(errc::invalid_input, "not JSON", where);
  if (doc.is_null()) return cpu_set{};
  if (!doc.is_object()) return fail(errc::invalid_input, "not a JSON object", where);
  auto ex = doc.find("cpusetExclusive");
  if (ex != doc.end() && !ex->is_null() && !ex->is_boolean())
    return fail(errc::invalid_input, "cpusetExclusive: not a boolean", where);
  if (ex != doc.end() && ex->is_boolean() && !ex->get<bool>()) return cpu_set{};
  auto s = string_in(text, "cpuset", where);
  if (!s) return tl::unexpected(s.error());
  auto set = cpu_set::parse(*s);
  if (!set) return fail(errc::invalid_input, "cpuset: " + set.error().message, where);
  return *set;
}

}  // namespace

topology_options new_topology_options(const label_map& nrt_annotations,
                                      const std::vector<std::string>& nrt_topology_policies,
                                      const std::vector<nrt_zone>& zones) {
  topology_options o;
  auto note = [&](const error& e) { o.problems.push_back(e); };

  cpu_set reserved;
  if (const auto* v = find(nrt_annotations, annotation_node_cpu_allocs)) {
    if (auto s = pod_allocs_cpus(*v)) {
      reserved = reserved.union_with(*s);
    } else {
      note(s.error());
    }
  }
  if (const auto* v = find(nrt_annotations, annotation_kubelet_cpu_manager_policy)) {
    // Go keeps the policy when only reservedCPUs fails to parse; here the whole policy is left
    // out with its error (a malformed kubelet annotation is a koordlet bug either way).
    if (auto p = parse_kubelet_cpu_manager_policy(*v)) {
      reserved = reserved.union_with(p->reserved_cpus);
      o.policy = std::move(*p);
    } else {
      note(p.error());
    }
  }
  if (const auto* v = find(nrt_annotations, annotation_node_reservation)) {
    auto s = string_in(*v, "reservedCPUs", annotation_node_reservation);
    if (!s) {
      note(s.error());
    } else if (auto set = cpu_set::parse(*s)) {
      reserved = reserved.union_with(*set);
    } else {
      note(error{errc::invalid_input, "reservedCPUs: " + set.error().message,
                 std::string(annotation_node_reservation)});
    }
  }
  if (const auto* v = find(nrt_annotations, annotation_node_system_qos_resource)) {
    if (auto s = system_qos_cpus(*v)) {
      reserved = reserved.union_with(*s);
    } else {
      note(s.error());
    }
  }
  if (const auto* v = find(nrt_annotations, annotation_node_cpu_topology)) {
    if (auto t = parse_cpu_topology_annotation(*v)) {
      o.topology = std::move(*t);
    } else {
      note(t.error());
    }
  }
  o.reserved_cpus = std::move(reserved);
  o.topology_policy = numa_topology_policy_from_kubelet(nrt_topology_policies);

  // extractNUMANodeResources: zones of type Node whose name splits on "node-" into two parts, the
  // second an id (Go ignores the first part); ascending id.
  for (const auto& z : zones) {
    if (z.type != "Node") continue;
    const auto pos = z.name.find("node-");
    if (pos == std::string::npos || z.name.find("node-", pos + 1) != std::string::npos) continue;
    const std::string_view digits = std::string_view(z.name).substr(pos + 5);
    int id = 0;
    auto [p, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), id);
    if (ec != std::errc{} || p != digits.data() + digits.size()) {
      note(error{errc::invalid_input, "zone name \"" + z.name + "\" is not node-<id>",
                 "NodeResourceTopology zones"});
      continue;
    }
    o.numa_node_cpus.push_back({id, z.cpu_allocatable_milli, z.memory_allocatable_bytes});
  }
  std::stable_sort(o.numa_node_cpus.begin(), o.numa_node_cpus.end(),
                   [](const numa_node_cpu& a, const numa_node_cpu& b) { return a.node < b.node; });
  // Reserved CPUs are not allocatable to cpuset pods: take them off their NUMA node's cpu.
  for (auto& n : o.numa_node_cpus) {
    if (n.cpu_milli == 0) continue;
    const auto in_node = o.topology.cpus_in_numa_node(n.node).intersection(o.reserved_cpus);
    n.cpu_milli -= std::int64_t{in_node.size()} * 1000;
  }
  return o;
}

}  // namespace colony::scheduler::numa
