// device_topology.hpp
#include "actors/scheduler/device/device_topology.hpp"

#include <algorithm>
#include <limits>
#include <set>
#include <tuple>

#include <nlohmann/json.hpp>

#include "messages/names.hpp"
#include "messages/quantity.hpp"

namespace colony::scheduler::device {

std::string_view to_string(device_type t) noexcept {
  switch (t) {
    case device_type::gpu:
      return "gpu";
    case device_type::rdma:
      return "rdma";
    case device_type::fpga:
      return "fpga";
  }
  return "";
}

std::optional<device_type> parse_device_type(std::string_view s) noexcept {
  for (auto t : {device_type::gpu, device_type::rdma, device_type::fpga})
    if (to_string(t) == s) return t;
  return std::nullopt;
}

bool fits(const device_amount& r, const device_amount& f) noexcept {
  return r.gpu_core <= f.gpu_core && r.gpu_memory <= f.gpu_memory &&
         r.gpu_memory_ratio <= f.gpu_memory_ratio && r.rdma <= f.rdma && r.fpga <= f.fpga;
}

device_amount operator+(const device_amount& a, const device_amount& b) noexcept {
  return {a.gpu_core + b.gpu_core, a.gpu_memory + b.gpu_memory,
          a.gpu_memory_ratio + b.gpu_memory_ratio, a.rdma + b.rdma, a.fpga + b.fpga};
}

device_amount subtract_non_negative(const device_amount& a, const device_amount& b) noexcept {
  auto sub = [](std::int64_t x, std::int64_t y) { return x > y ? x - y : 0; };
  return {sub(a.gpu_core, b.gpu_core), sub(a.gpu_memory, b.gpu_memory),
          sub(a.gpu_memory_ratio, b.gpu_memory_ratio), sub(a.rdma, b.rdma), sub(a.fpga, b.fpga)};
}

std::size_t device_info::vf_count() const noexcept {
  std::size_t n = 0;
  for (const auto& g : vf_groups) n += g.vfs.size();
  return n;
}

namespace {

bool type_minor_less(const device_info& d, std::pair<device_type, std::int32_t> k) {
  return std::tie(d.type, d.minor) < std::tie(k.first, k.second);
}

}  // namespace

const device_info* node_devices::find(device_type t, std::int32_t minor) const noexcept {
  auto it = std::lower_bound(devices.begin(), devices.end(), std::pair{t, minor}, type_minor_less);
  if (it == devices.end() || it->type != t || it->minor != minor) return nullptr;
  return &*it;
}

std::span<const device_info> node_devices::of_type(device_type t) const noexcept {
  auto lo =
      std::lower_bound(devices.begin(), devices.end(),
                       std::pair{t, std::numeric_limits<std::int32_t>::min()}, type_minor_less);
  auto hi = std::find_if(lo, devices.end(), [t](const device_info& d) { return d.type != t; });
  return {lo, hi};
}

namespace {

using json = nlohmann::json;

tl::unexpected<error> bad(std::string message, std::string where) {
  return fail(errc::invalid_input, std::move(message), std::move(where));
}

result<std::int32_t> int32_field(const json& j, const std::string& where) {
  if (!j.is_number_integer()) return bad("must be an integer", where);
  const auto v = j.get<std::int64_t>();
  if (v < std::numeric_limits<std::int32_t>::min() || v > std::numeric_limits<std::int32_t>::max())
    return bad("out of int32 range", where);
  return static_cast<std::int32_t>(v);
}

result<std::string> string_field(const json& j, const std::string& where) {
  if (!j.is_string()) return bad("must be a string", where);
  return j.get<std::string>();
}

result<label_map> labels_field(const json& j, const std::string& where) {
  label_map out;
  if (j.is_null()) return out;
  if (!j.is_object()) return bad("must be an object of strings", where);
  for (const auto& [k, v] : j.items()) {
    if (!v.is_string()) return bad("must be a string", where + "." + k);
    out.emplace(k, v.get<std::string>());
  }
  return out;
}

result<std::int64_t> quantity_field(const json& j, const std::string& where) {
  if (j.is_number_integer()) return j.get<std::int64_t>();
  if (!j.is_string()) return bad("must be a quantity", where);
  auto q = k8s::quantity::parse(j.get<std::string>(), where);
  if (!q) return tl::unexpected(q.error());
  auto v = q->value(where);
  if (!v) return tl::unexpected(v.error());
  if (*v < 0) return bad("must not be negative", where);
  return *v;
}

result<device_amount> resources_field(const json& j, const std::string& where) {
  if (!j.is_object() || j.empty()) return bad("missing resources", where);
  device_amount a;
  for (const auto& [k, v] : j.items()) {
    const std::string w = where + "[" + k + "]";
    auto q = quantity_field(v, w);
    if (!q) return tl::unexpected(q.error());
    if (k == names::gpu_core)
      a.gpu_core = *q;
    else if (k == names::gpu_memory)
      a.gpu_memory = *q;
    else if (k == names::gpu_memory_ratio)
      a.gpu_memory_ratio = *q;
    else if (k == names::koord_rdma)
      a.rdma = *q;
    else if (k == names::koord_fpga)
      a.fpga = *q;
    // Other names (huawei.com/npu-*, vendor ones) are kept out: Colony allocates by these five.
  }
  return a;
}

result<device_topology> topology_field(const json& j, const std::string& where) {
  if (!j.is_object()) return bad("must be an object", where);
  device_topology t;
  // socketID, nodeID and pcieID have no omitempty in device_types.go: all three are required.
  if (!j.contains("socketID")) return bad("missing", where + ".socketID");
  auto s = int32_field(j["socketID"], where + ".socketID");
  if (!s) return tl::unexpected(s.error());
  if (!j.contains("nodeID")) return bad("missing", where + ".nodeID");
  auto n = int32_field(j["nodeID"], where + ".nodeID");
  if (!n) return tl::unexpected(n.error());
  if (*n < -1) return bad("must be -1 (no NUMA node) or a NUMA node id", where + ".nodeID");
  if (*n > 63) return bad("NUMA node ids above 63 are not supported", where + ".nodeID");
  if (!j.contains("pcieID")) return bad("missing", where + ".pcieID");
  auto p = string_field(j["pcieID"], where + ".pcieID");
  if (!p) return tl::unexpected(p.error());
  t.socket_id = *s;
  t.node_id = *n;
  t.pcie_id = std::move(*p);
  if (j.contains("busID")) {
    auto b = string_field(j["busID"], where + ".busID");
    if (!b) return tl::unexpected(b.error());
    t.bus_id = std::move(*b);
  }
  return t;
}

result<std::vector<vf_group>> vf_groups_field(const json& j, const std::string& where) {
  std::vector<vf_group> out;
  if (j.is_null()) return out;
  if (!j.is_array()) return bad("must be an array", where);
  for (std::size_t i = 0; i < j.size(); ++i) {
    const std::string w = where + "[" + std::to_string(i) + "]";
    const json& g = j[i];
    if (!g.is_object()) return bad("must be an object", w);
    vf_group vg;
    if (g.contains("labels")) {
      auto l = labels_field(g["labels"], w + ".labels");
      if (!l) return tl::unexpected(l.error());
      vg.labels = std::move(*l);
    }
    if (g.contains("vfs")) {
      const json& vfs = g["vfs"];
      if (!vfs.is_array()) return bad("must be an array", w + ".vfs");
      for (std::size_t k = 0; k < vfs.size(); ++k) {
        const std::string vw = w + ".vfs[" + std::to_string(k) + "]";
        if (!vfs[k].is_object()) return bad("must be an object", vw);
        virtual_function vf;
        if (vfs[k].contains("minor")) {
          auto m = int32_field(vfs[k]["minor"], vw + ".minor");
          if (!m) return tl::unexpected(m.error());
          vf.minor = *m;  // -1 is allowed (device_allocator_test.go uses it)
        }
        if (!vfs[k].contains("busID")) return bad("missing", vw + ".busID");
        auto b = string_field(vfs[k]["busID"], vw + ".busID");
        if (!b) return tl::unexpected(b.error());
        vf.bus_id = std::move(*b);
        vg.vfs.push_back(std::move(vf));
      }
    }
    out.push_back(std::move(vg));
  }
  return out;
}

result<device_info> device_field(const json& d, const std::string& w) {
  if (!d.is_object()) return bad("must be an object", w);
  device_info info;
  if (!d.contains("type")) return bad("missing", w + ".type");
  auto ts = string_field(d["type"], w + ".type");
  if (!ts) return tl::unexpected(ts.error());
  auto t = parse_device_type(*ts);
  if (!t) return bad("unknown device type \"" + *ts + "\" (gpu, rdma, fpga)", w + ".type");
  info.type = *t;
  // Minor is a pointer in Go (Deref to 0 when absent); Colony requires it: two devices with no
  // minor would collide on minor 0.
  if (!d.contains("minor")) return bad("missing", w + ".minor");
  auto m = int32_field(d["minor"], w + ".minor");
  if (!m) return tl::unexpected(m.error());
  if (*m < 0) return bad("must not be negative, got " + std::to_string(*m), w + ".minor");
  info.minor = *m;
  if (d.contains("id")) {
    auto u = string_field(d["id"], w + ".id");
    if (!u) return tl::unexpected(u.error());
    info.uuid = std::move(*u);
  }
  if (d.contains("health")) {
    if (!d["health"].is_boolean()) return bad("must be a boolean", w + ".health");
    info.health = d["health"].get<bool>();
  }
  if (d.contains("labels")) {
    auto l = labels_field(d["labels"], w + ".labels");
    if (!l) return tl::unexpected(l.error());
    info.labels = std::move(*l);
  }
  auto r = resources_field(d.contains("resources") ? d["resources"] : json{}, w + ".resources");
  if (!r) return tl::unexpected(r.error());
  info.resources = *r;
  if (d.contains("topology") && !d["topology"].is_null()) {
    auto tp = topology_field(d["topology"], w + ".topology");
    if (!tp) return tl::unexpected(tp.error());
    info.topology = std::move(*tp);
  }
  if (d.contains("vfGroups")) {
    auto g = vf_groups_field(d["vfGroups"], w + ".vfGroups");
    if (!g) return tl::unexpected(g.error());
    info.vf_groups = std::move(*g);
  }
  return info;
}

}  // namespace

result<node_devices> parse_device(const json& obj) {
  if (!obj.is_object()) return bad("a Device object must be a JSON object", "");
  node_devices out;
  if (obj.contains("metadata") && obj["metadata"].is_object() && obj["metadata"].contains("name")) {
    auto n = string_field(obj["metadata"]["name"], "metadata.name");
    if (!n) return tl::unexpected(n.error());
    out.node_name = std::move(*n);
  }
  if (!obj.contains("spec") || obj["spec"].is_null()) return out;
  const json& spec = obj["spec"];
  if (!spec.is_object()) return bad("must be an object", "spec");
  if (!spec.contains("devices") || spec["devices"].is_null()) return out;
  const json& devs = spec["devices"];
  if (!devs.is_array()) return bad("must be an array", "spec.devices");
  std::set<std::pair<device_type, std::int32_t>> seen;
  for (std::size_t i = 0; i < devs.size(); ++i) {
    const std::string w = "spec.devices[" + std::to_string(i) + "]";
    auto info = device_field(devs[i], w);
    if (!info) return tl::unexpected(info.error());
    if (!seen.emplace(info->type, info->minor).second)
      return bad("duplicate minor " + std::to_string(info->minor) + " of type " +
                     std::string(to_string(info->type)),
                 w + ".minor");
    out.devices.push_back(std::move(*info));
  }
  std::sort(out.devices.begin(), out.devices.end(), [](const device_info& a, const device_info& b) {
    return std::tie(a.type, a.minor) < std::tie(b.type, b.minor);
  });
  return out;
}

result<node_devices> parse_device(std::string_view text) {
  auto j = json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return bad("not valid JSON", "");
  return parse_device(j);
}

namespace {
bool usage_less(const device_usage& u, std::pair<device_type, std::int32_t> k) {
  return std::tie(u.type, u.minor) < std::tie(k.first, k.second);
}
}  // namespace

const device_usage* node_device_usage::find(device_type t, std::int32_t minor) const noexcept {
  auto it = std::lower_bound(devices.begin(), devices.end(), std::pair{t, minor}, usage_less);
  if (it == devices.end() || it->type != t || it->minor != minor) return nullptr;
  return &*it;
}

void node_device_usage::add(device_type t, std::int32_t minor, const device_amount& amount,
                            const std::string* vf_bus_id) {
  auto it = std::lower_bound(devices.begin(), devices.end(), std::pair{t, minor}, usage_less);
  if (it == devices.end() || it->type != t || it->minor != minor)
    it = devices.insert(it, device_usage{t, minor, {}, {}});
  it->used = it->used + amount;
  if (vf_bus_id != nullptr) it->vfs.push_back(*vf_bus_id);
}

void node_device_usage::remove(device_type t, std::int32_t minor, const device_amount& amount,
                               const std::string* vf_bus_id) {
  auto it = std::lower_bound(devices.begin(), devices.end(), std::pair{t, minor}, usage_less);
  if (it == devices.end() || it->type != t || it->minor != minor) return;
  it->used = subtract_non_negative(it->used, amount);
  if (vf_bus_id != nullptr) {
    auto vf = std::find(it->vfs.begin(), it->vfs.end(), *vf_bus_id);
    if (vf != it->vfs.end()) it->vfs.erase(vf);
  }
  if (it->used.is_zero() && it->vfs.empty()) devices.erase(it);
}

device_amount free_of(const device_info& d, const node_device_usage& usage) noexcept {
  const device_usage* u = usage.find(d.type, d.minor);
  return u == nullptr ? d.total() : subtract_non_negative(d.total(), u->used);
}

std::vector<int> numa_topology::node_ids() const {
  std::vector<int> ids;
  ids.reserve(nodes.size());
  for (const auto& n : nodes) ids.push_back(n.node_id);
  return ids;
}

std::optional<std::int32_t> numa_topology::node_of(const node_devices& nd, device_type t,
                                                   std::int32_t minor) const noexcept {
  const device_info* d = nd.find(t, minor);
  if (d == nullptr || !d->topology || d->topology->node_id == -1) return std::nullopt;
  return d->topology->node_id;
}

std::size_t numa_topology::count_in(device_type t, std::uint64_t mask) const noexcept {
  std::size_t n = 0;
  for (const auto& node : nodes) {
    if (!(mask & (std::uint64_t{1} << node.node_id))) continue;
    for (const auto& p : node.pcies) n += p.minors[static_cast<std::size_t>(t)].size();
  }
  return n;
}

numa_topology build_numa_topology(const node_devices& nd) {
  // newNUMATopology keys its PCIe groups by (socket, node, pcie); Go's map order is random, so
  // Colony orders NUMA nodes by id and PCIe switches by id within one.
  std::map<std::int32_t, std::map<std::pair<std::string, std::int32_t>, pcie_group>> by_node;
  std::map<std::int32_t, std::set<std::int32_t>> nodes_of_socket;
  for (const auto& d : nd.devices) {
    if (!d.topology || d.topology->node_id == -1) continue;
    const auto& t = *d.topology;
    auto& g = by_node[t.node_id][{t.pcie_id, t.socket_id}];
    g.socket_id = t.socket_id;
    g.node_id = t.node_id;
    g.pcie_id = t.pcie_id;
    g.minors[static_cast<std::size_t>(d.type)].push_back(d.minor);  // devices are minor-sorted
    nodes_of_socket[t.socket_id].insert(t.node_id);
  }
  numa_topology topo;
  for (auto& [id, pcies] : by_node) {
    numa_topology::numa_node n;
    n.node_id = id;
    for (auto& [key, g] : pcies) n.pcies.push_back(std::move(g));
    topo.nodes.push_back(std::move(n));
  }
  // numNodePerSocket: Koordinator reads any one socket; Colony the lowest socket id.
  if (!nodes_of_socket.empty())
    topo.num_nodes_per_socket = static_cast<std::int32_t>(nodes_of_socket.begin()->second.size());
  return topo;
}

void add_allocations(node_device_usage& usage, std::span<const device_allocation> allocations) {
  for (const auto& a : allocations)
    usage.add(a.type, a.minor, a.resources, a.vf ? &a.vf->bus_id : nullptr);
}

void remove_allocations(node_device_usage& usage, std::span<const device_allocation> allocations) {
  for (const auto& a : allocations)
    usage.remove(a.type, a.minor, a.resources, a.vf ? &a.vf->bus_id : nullptr);
}

}  // namespace colony::scheduler::device
