#include "actors/koordlet/node_topology.hpp"

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "actors/koordlet/koordlet_types.hpp"
#include "messages/names.hpp"

namespace colony::koordlet {

namespace {

using json = nlohmann::json;

result<node_topology_report> invalid(std::string what) {
  return tl::unexpected(error{errc::invalid_input, "NodeResourceTopology: " + std::move(what)});
}

// A JSON string literal (quotes and escapes as encoding/json writes them for these texts).
std::string json_string(const std::string& s) { return json(s).dump(); }

// extension.CPUBasicInfo, fields in struct order, omitempty.
std::string cpu_basic_info_json(const machine_info& m) {
  std::string out = "{";
  auto add = [&](const std::string& kv) {
    if (out.size() > 1) out += ',';
    out += kv;
  };
  if (!m.cpu_model.empty()) add("\"cpuModel\":" + json_string(m.cpu_model));
  if (m.hyper_thread_enabled) add("\"hyperThreadEnabled\":true");
  if (m.turbo_enabled) add("\"turboEnabled\":true");
  if (!m.vendor_id.empty()) add("\"vendorID\":" + json_string(m.vendor_id));
  return out + "}";
}

// extension.CPUTopology: {"detail":[{"id","core","socket","node"}]} sorted by id.
std::string cpu_topology_json(const machine_info& m) {
  std::string out = "{\"detail\":[";
  for (std::size_t i = 0; i < m.cpus.size(); ++i) {
    const auto& c = m.cpus[i];
    if (i > 0) out += ',';
    out += "{\"id\":" + std::to_string(c.id) + ",\"core\":" + std::to_string(c.core) +
           ",\"socket\":" + std::to_string(c.socket) + ",\"node\":" + std::to_string(c.numa_node) +
           "}";
  }
  return out + "]}";
}

// covertCPUsToSharePool: one pool per NUMA node that keeps a CPU, socket of its first CPU,
// ordered by (socket, node).
std::string share_pools_json(const machine_info& m, const std::set<std::int32_t>& out_of_pool) {
  std::map<std::int32_t, std::vector<std::int32_t>> by_node;
  std::map<std::int32_t, std::int32_t> socket_of_node;
  for (const auto& c : m.cpus) {
    if (out_of_pool.count(c.id) != 0) continue;
    auto& v = by_node[c.numa_node];
    if (v.empty()) socket_of_node[c.numa_node] = c.socket;
    v.push_back(c.id);
  }
  std::vector<std::pair<std::pair<std::int32_t, std::int32_t>, std::string>> pools;
  for (auto& [node, cpus] : by_node)
    pools.push_back({{socket_of_node[node], node}, format_cpuset(cpus)});
  std::sort(pools.begin(), pools.end());
  if (pools.empty()) return "null";  // json.Marshal of a nil slice
  std::string out = "[";
  for (std::size_t i = 0; i < pools.size(); ++i) {
    if (i > 0) out += ',';
    out += "{\"socket\":" + std::to_string(pools[i].first.first) +
           ",\"node\":" + std::to_string(pools[i].first.second) +
           ",\"cpuset\":" + json_string(pools[i].second) + "}";
  }
  return out + "]";
}

}  // namespace

result<std::vector<std::int32_t>> node_reserved_cpus(std::string_view annotation) {
  const std::string field(names::annotation_node_reservation);
  auto bad = [&](std::string what) {
    return tl::unexpected(error{errc::invalid_input, field + std::move(what)});
  };
  if (annotation.empty()) return std::vector<std::int32_t>{};
  const json r = json::parse(annotation, nullptr, false);
  if (!r.is_object()) return bad(" is not a JSON object");
  const auto it = r.find("reservedCPUs");
  if (it == r.end() || it->is_null()) return std::vector<std::int32_t>{};
  if (!it->is_string()) return bad(".reservedCPUs must be a string");
  auto cpus = parse_cpuset(it->get<std::string>());
  if (!cpus) return bad(".reservedCPUs: " + cpus.error().message);
  return cpus;
}

result<node_topology_report> calc_node_topology(const node_topology_inputs& in) {
  if (in.machine == nullptr || in.machine->cpus.empty()) return invalid("the machine has no CPUs");
  const machine_info& m = *in.machine;
  std::set<std::int32_t> numa_of_cpus;
  for (std::size_t i = 0; i < m.cpus.size(); ++i) {
    if (i > 0 && m.cpus[i].id <= m.cpus[i - 1].id)
      return invalid("cpu " + std::to_string(m.cpus[i].id) + " is out of order or repeated");
    numa_of_cpus.insert(m.cpus[i].numa_node);
  }
  std::set<std::int32_t> numa_of_memory;
  for (const auto& n : m.numa_nodes) numa_of_memory.insert(n.id);
  if (numa_of_cpus != numa_of_memory)
    return invalid("NUMA node number not matched: CPUs are on " +
                   std::to_string(numa_of_cpus.size()) + " NUMA nodes, memory on " +
                   std::to_string(numa_of_memory.size()));

  // getNodeReserved: the Node's reservedCPUs (a reservation by count alone reserves no CPU here).
  std::string reservation = "{}";
  auto reserved_cpus = node_reserved_cpus(in.node_reservation);
  if (!reserved_cpus) return invalid(reserved_cpus.error().message);
  const std::vector<std::int32_t>& reserved = *reserved_cpus;
  if (!reserved.empty())
    reservation = "{\"reservedCPUs\":" + json_string(format_cpuset(reserved)) + "}";

  std::set<std::int32_t> ls_out(reserved.begin(), reserved.end());
  std::set<std::int32_t> be_out(reserved.begin(), reserved.end());
  for (const auto& p : in.pods)
    for (const auto c : p.cpus) {
      ls_out.insert(c);
      if (p.qos == qos_class::lse) be_out.insert(c);
    }

  node_topology_report r;
  r.annotations = {
      {std::string(names::annotation_cpu_basic_info), cpu_basic_info_json(m)},
      {std::string(names::annotation_node_cpu_topology), cpu_topology_json(m)},
      {std::string(names::annotation_node_cpu_shared_pools), share_pools_json(m, ls_out)},
      {std::string(names::annotation_node_be_cpu_shared_pools), share_pools_json(m, be_out)},
      {std::string(names::annotation_kubelet_cpu_manager_policy),
       "{\"policy\":" + json_string(in.kubelet_cpu_manager_policy) + "}"},
      {std::string(names::annotation_node_cpu_allocs), "null"},
      {std::string(names::annotation_node_reservation), reservation},
  };
  std::sort(r.annotations.begin(), r.annotations.end());
  r.topology_policies = {in.topology_policy};
  std::map<std::int32_t, std::int64_t> cpus_of_node;
  for (const auto& c : m.cpus) ++cpus_of_node[c.numa_node];
  for (const auto& n : m.numa_nodes)
    r.zones.push_back(nrt_zone{.name = "node-" + std::to_string(n.id),
                               .type = "Node",
                               .cpu_milli = cpus_of_node[n.id] * 1000,
                               .memory_bytes = n.memory_bytes});
  return r;
}

}  // namespace colony::koordlet
