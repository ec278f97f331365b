#include "actors/scheduler/numa/cpu_topology.hpp"

#include <algorithm>
#include <map>

#include <nlohmann/json.hpp>

namespace colony::scheduler::numa {
namespace {

std::string str(int v) { return std::to_string(v); }

int dense(const std::vector<int>& ids, int id) {
  return static_cast<int>(std::lower_bound(ids.begin(), ids.end(), id) - ids.begin());
}

// Every value of `counts` equal; otherwise a message naming the first two that differ.
template <class Name>
std::string uniform(const std::map<int, int>& counts, const char* what, Name name) {
  if (counts.empty()) return {};
  const auto& first = *counts.begin();
  for (const auto& [id, n] : counts)
    if (n != first.second)
      return name(first.first) + " has " + str(first.second) + " " + what + ", " + name(id) +
             " has " + str(n) + ": counts must be the same on every one";
  return {};
}

}  // namespace

cpu_set cpu_topology::cpus_in_numa_node(int node_id) const {
  cpu_set s;
  for (const auto& c : cpus_)
    if (c.node_id == node_id) s.insert(c.cpu_id);
  return s;
}

cpu_set cpu_topology::cpus_in_socket(int socket_id) const {
  cpu_set s;
  for (const auto& c : cpus_)
    if (c.socket_id == socket_id) s.insert(c.cpu_id);
  return s;
}

cpu_set cpu_topology::cpus_in_core(int core_id) const {
  cpu_set s;
  for (const auto& c : cpus_)
    if (c.core_id == core_id) s.insert(c.cpu_id);
  return s;
}

cpu_topology_builder& cpu_topology_builder::add_cpu_info(int socket_id, int node_id, int core_id,
                                                         int cpu_id) {
  if (first_error_.empty() &&
      (core_id < 0 || core_id > 0xffff || socket_id < 0 || socket_id > 0x7fff))
    first_error_ = "cpu " + str(cpu_id) + ": core " + str(core_id) + " or socket " +
                   str(socket_id) + " out of range (core 0..65535, socket 0..32767)";
  return add_cpu({cpu_id, socket_id << 16 | core_id, node_id, socket_id});
}

cpu_topology_builder& cpu_topology_builder::add_cpu(const cpu_info& info) {
  if (first_error_.empty() && (info.cpu_id < 0 || info.cpu_id > max_cpu_id || info.core_id < 0 ||
                               info.node_id < 0 || info.socket_id < 0))
    first_error_ = "cpu " + str(info.cpu_id) +
                   ": ids must be >= 0 and cpu ids <= " + str(max_cpu_id) + " (core " +
                   str(info.core_id) + ", node " + str(info.node_id) + ", socket " +
                   str(info.socket_id) + ")";
  cpus_.push_back(info);
  return *this;
}

result<cpu_topology> cpu_topology_builder::build() const {
  const std::string where = "cpu topology";
  if (!first_error_.empty()) return fail(errc::invalid_input, first_error_, where);
  if (cpus_.empty()) return fail(errc::invalid_input, "no CPUs", where);

  cpu_topology t;
  t.cpus_ = cpus_;
  std::stable_sort(t.cpus_.begin(), t.cpus_.end(),
                   [](const cpu_info& a, const cpu_info& b) { return a.cpu_id < b.cpu_id; });
  for (std::size_t i = 1; i < t.cpus_.size(); ++i)
    if (t.cpus_[i].cpu_id == t.cpus_[i - 1].cpu_id)
      return fail(errc::invalid_input,
                  "cpu " + str(t.cpus_[i].cpu_id) + " listed twice: core " +
                      str(t.cpus_[i - 1].core_id) + " and core " + str(t.cpus_[i].core_id),
                  where);

  // A core lies in one NUMA node and one socket; a NUMA node in one socket.
  std::map<int, const cpu_info*> core_home;
  std::map<int, int> node_socket;
  std::map<int, int> cpus_per_core, cores_per_node, nodes_per_socket;
  for (const auto& c : t.cpus_) {
    auto [it, fresh] = core_home.emplace(c.core_id, &c);
    if (!fresh) {
      const auto& h = *it->second;
      if (h.node_id != c.node_id)
        return fail(errc::invalid_input,
                    "core " + str(c.core_id) + " spans NUMA nodes " + str(h.node_id) + " (cpu " +
                        str(h.cpu_id) + ") and " + str(c.node_id) + " (cpu " + str(c.cpu_id) + ")",
                    where);
      if (h.socket_id != c.socket_id)
        return fail(errc::invalid_input,
                    "core " + str(c.core_id) + " spans sockets " + str(h.socket_id) + " (cpu " +
                        str(h.cpu_id) + ") and " + str(c.socket_id) + " (cpu " + str(c.cpu_id) +
                        ")",
                    where);
    } else {
      ++cores_per_node[c.node_id];
    }
    auto [nit, nfresh] = node_socket.emplace(c.node_id, c.socket_id);
    if (!nfresh && nit->second != c.socket_id)
      return fail(errc::invalid_input,
                  "NUMA node " + str(c.node_id) + " spans sockets " + str(nit->second) + " and " +
                      str(c.socket_id) + " (cpu " + str(c.cpu_id) + ")",
                  where);
    if (nfresh) ++nodes_per_socket[c.socket_id];
    ++cpus_per_core[c.core_id];
  }
  if (auto m = uniform(cpus_per_core, "cpus", [](int id) { return "core " + str(id); }); !m.empty())
    return fail(errc::invalid_input, m, where);
  if (auto m = uniform(cores_per_node, "cores", [](int id) { return "NUMA node " + str(id); });
      !m.empty())
    return fail(errc::invalid_input, m, where);
  if (auto m = uniform(nodes_per_socket, "NUMA nodes", [](int id) { return "socket " + str(id); });
      !m.empty())
    return fail(errc::invalid_input, m, where);

  for (const auto& [id, n] : cpus_per_core) t.core_ids_.push_back(id);
  for (const auto& [id, n] : cores_per_node) t.node_ids_.push_back(id);
  for (const auto& [id, n] : nodes_per_socket) t.socket_ids_.push_back(id);

  const auto n = t.cpus_.size();
  t.index_of_.assign(static_cast<std::size_t>(t.cpus_.back().cpu_id) + 1, -1);
  t.core_of_.resize(n);
  t.node_of_.resize(n);
  t.socket_of_.resize(n);
  for (std::size_t i = 0; i < n; ++i) {
    const auto& c = t.cpus_[i];
    t.all_.insert(c.cpu_id);
    t.index_of_[static_cast<std::size_t>(c.cpu_id)] = static_cast<int>(i);
    t.core_of_[i] = dense(t.core_ids_, c.core_id);
    t.node_of_[i] = dense(t.node_ids_, c.node_id);
    t.socket_of_[i] = dense(t.socket_ids_, c.socket_id);
  }
  t.core_node_.resize(t.core_ids_.size());
  t.core_socket_.resize(t.core_ids_.size());
  t.node_socket_.resize(t.node_ids_.size());
  for (std::size_t i = 0; i < n; ++i) {
    t.core_node_[static_cast<std::size_t>(t.core_of_[i])] = t.node_of_[i];
    t.core_socket_[static_cast<std::size_t>(t.core_of_[i])] = t.socket_of_[i];
    t.node_socket_[static_cast<std::size_t>(t.node_of_[i])] = t.socket_of_[i];
  }
  // Counting sort of CPUs by core; CPUs stay ascending within a core.
  t.core_offsets_.assign(t.core_ids_.size() + 1, 0);
  for (auto core : t.core_of_) ++t.core_offsets_[static_cast<std::size_t>(core) + 1];
  for (std::size_t i = 1; i < t.core_offsets_.size(); ++i)
    t.core_offsets_[i] += t.core_offsets_[i - 1];
  t.core_cpus_.resize(n);
  auto fill = t.core_offsets_;
  for (std::size_t i = 0; i < n; ++i)
    t.core_cpus_[static_cast<std::size_t>(fill[static_cast<std::size_t>(t.core_of_[i])]++)] =
        static_cast<int>(i);
  return t;
}

result<cpu_topology> build_topology(const machine_model& m) {
  const std::string where = "machine model";
  if (m.sockets < 1) return fail(errc::invalid_input, "sockets must be >= 1", where);
  if (m.numa_nodes_per_socket < 1)
    return fail(errc::invalid_input, "numa_nodes_per_socket must be >= 1", where);
  if (m.cores_per_numa_node < 1)
    return fail(errc::invalid_input, "cores_per_numa_node must be >= 1", where);
  if (m.threads_per_core < 1)
    return fail(errc::invalid_input, "threads_per_core must be >= 1", where);
  const std::int64_t cores_per_socket =
      std::int64_t{m.numa_nodes_per_socket} * m.cores_per_numa_node;
  const std::int64_t total_cores = cores_per_socket * m.sockets;
  if (total_cores * m.threads_per_core > std::int64_t{max_cpu_id} + 1)
    return fail(
        errc::invalid_input,
        "sockets x numa_nodes_per_socket x cores_per_numa_node x threads_per_core exceeds " +
            str(max_cpu_id + 1) + " CPUs",
        where);
  cpu_topology_builder b;
  int global_core = 0;
  for (int s = 0; s < m.sockets; ++s) {
    for (int n = 0; n < m.numa_nodes_per_socket; ++n) {
      const int node = s * m.numa_nodes_per_socket + n;
      for (int c = 0; c < m.cores_per_numa_node; ++c, ++global_core) {
        for (int t = 0; t < m.threads_per_core; ++t) {
          if (m.order == machine_model::numbering::siblings_adjacent) {
            b.add_cpu({global_core * m.threads_per_core + t, global_core, node, s});
          } else {
            const int cpu = t * static_cast<int>(total_cores) + global_core;
            b.add_cpu_info(s, node, n * m.cores_per_numa_node + c, cpu);
          }
        }
      }
    }
  }
  return b.build();
}

result<std::string> format_cpu_topology_annotation(const machine_model& m) {
  machine_model x = m;
  x.order = machine_model::numbering::linux_x86;
  auto t = build_topology(x);  // validates the model
  if (!t) return tl::unexpected(t.error());
  const int total_cores = m.sockets * m.numa_nodes_per_socket * m.cores_per_numa_node;
  std::vector<cpu_info> rows;
  rows.reserve(static_cast<std::size_t>(t->num_cpus()));
  int global_core = 0;
  for (int s = 0; s < m.sockets; ++s)
    for (int n = 0; n < m.numa_nodes_per_socket; ++n)
      for (int c = 0; c < m.cores_per_numa_node; ++c, ++global_core)
        for (int th = 0; th < m.threads_per_core; ++th)
          rows.push_back({th * total_cores + global_core, n * m.cores_per_numa_node + c,
                          s * m.numa_nodes_per_socket + n, s});
  std::sort(rows.begin(), rows.end(),
            [](const cpu_info& a, const cpu_info& b) { return a.cpu_id < b.cpu_id; });
  std::string out = R"({"detail":[)";
  for (std::size_t i = 0; i < rows.size(); ++i) {
    if (i > 0) out += ',';
    out += R"({"id":)" + str(rows[i].cpu_id) + R"(,"core":)" + str(rows[i].core_id) +
           R"(,"socket":)" + str(rows[i].socket_id) + R"(,"node":)" + str(rows[i].node_id) + "}";
  }
  out += "]}";
  return out;
}

cpu_topology build_cpu_topology_for_test(int sockets, int nodes_per_socket, int cores_per_node,
                                         int cpus_per_core) {
  auto t = build_topology({sockets, nodes_per_socket, cores_per_node, cpus_per_core,
                           machine_model::numbering::siblings_adjacent});
  return t ? std::move(*t) : cpu_topology{};
}

result<cpu_topology> parse_cpu_topology_annotation(std::string_view json) {
  const std::string where = "node.koordinator.sh/cpu-topology";
  auto doc = nlohmann::json::parse(json.begin(), json.end(), nullptr, false);
  if (doc.is_discarded()) return fail(errc::invalid_input, "not JSON", where);
  if (!doc.is_object()) return fail(errc::invalid_input, "not a JSON object", where);
  cpu_topology_builder b;
  auto detail = doc.find("detail");
  if (detail == doc.end() || detail->is_null()) return b.build();
  if (!detail->is_array()) return fail(errc::invalid_input, "detail: not an array", where);
  for (std::size_t i = 0; i < detail->size(); ++i) {
    const auto& e = (*detail)[i];
    const std::string at = "detail[" + std::to_string(i) + "]";
    if (!e.is_object()) return fail(errc::invalid_input, at + ": not an object", where);
    int v[4] = {0, 0, 0, 0};
    const char* names[4] = {"id", "core", "socket", "node"};
    for (int k = 0; k < 4; ++k) {
      auto f = e.find(names[k]);
      if (f == e.end() || f->is_null()) continue;  // Go leaves a missing int32 at 0
      if (!f->is_number_integer())
        return fail(errc::invalid_input, at + "." + names[k] + ": not an integer", where);
      const auto x = f->get<std::int64_t>();
      if (x < 0 || x > 0x7fffffff)
        return fail(errc::invalid_input, at + "." + names[k] + ": out of range", where);
      v[k] = static_cast<int>(x);
    }
    b.add_cpu_info(v[2], v[3], v[1], v[0]);
  }
  // An inconsistent topology is named by the annotation that describes it.
  auto t = b.build();
  if (!t) return fail(t.error().code, t.error().message, where);
  return t;
}

}  // namespace colony::scheduler::numa
