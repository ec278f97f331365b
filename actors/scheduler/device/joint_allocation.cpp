// joint_allocation.hpp
#include "actors/scheduler/device/joint_allocation.hpp"

#include <algorithm>
#include <bit>
#include <map>
#include <set>

#include <nlohmann/json.hpp>

#include "actors/scheduler/node_resources_fit.hpp"

namespace colony::scheduler::device {

namespace {

using json = nlohmann::json;

tl::unexpected<error> bad(std::string message, std::string where) {
  return fail(errc::invalid_input, std::move(message), std::move(where));
}
tl::unexpected<error> refuse(std::string message) {
  return fail(errc::failed_precondition, std::move(message));
}
std::string insufficient(device_type t) {
  return "Insufficient " + std::string(to_string(t)) + " devices";
}
std::size_t idx(device_type t) { return static_cast<std::size_t>(t); }
constexpr std::array<device_type, device_type_count> all_types{device_type::gpu, device_type::rdma,
                                                               device_type::fpga};

result<label_selector> parse_selector(const json& j, const std::string& where) {
  if (!j.is_object()) return bad("must be a label selector object", where);
  label_selector s;
  if (j.contains("matchLabels") && !j["matchLabels"].is_null()) {
    const json& ml = j["matchLabels"];
    if (!ml.is_object()) return bad("must be an object of strings", where + ".matchLabels");
    for (const auto& [k, v] : ml.items()) {
      if (!v.is_string()) return bad("must be a string", where + ".matchLabels." + k);
      s.match_labels.emplace(k, v.get<std::string>());
    }
  }
  if (j.contains("matchExpressions") && !j["matchExpressions"].is_null()) {
    const json& me = j["matchExpressions"];
    if (!me.is_array()) return bad("must be an array", where + ".matchExpressions");
    for (std::size_t i = 0; i < me.size(); ++i) {
      const std::string w = where + ".matchExpressions[" + std::to_string(i) + "]";
      const json& e = me[i];
      if (!e.is_object()) return bad("must be an object", w);
      label_requirement r;
      if (!e.contains("key") || !e["key"].is_string()) return bad("must be a string", w + ".key");
      r.key = e["key"].get<std::string>();
      const std::string op = e.contains("operator") && e["operator"].is_string()
                                 ? e["operator"].get<std::string>()
                                 : std::string();
      if (op == "In")
        r.operation = label_requirement::op::in;
      else if (op == "NotIn")
        r.operation = label_requirement::op::not_in;
      else if (op == "Exists")
        r.operation = label_requirement::op::exists;
      else if (op == "DoesNotExist")
        r.operation = label_requirement::op::does_not_exist;
      else
        return bad("\"" + op + "\" is not a valid label selector operator", w + ".operator");
      if (e.contains("values") && !e["values"].is_null()) {
        if (!e["values"].is_array()) return bad("must be an array", w + ".values");
        for (std::size_t k = 0; k < e["values"].size(); ++k) {
          if (!e["values"][k].is_string())
            return bad("must be a string", w + ".values[" + std::to_string(k) + "]");
          r.values.push_back(e["values"][k].get<std::string>());
        }
      }
      // LabelSelectorAsSelector: In/NotIn need values, Exists/DoesNotExist take none.
      const bool set_op =
          r.operation == label_requirement::op::in || r.operation == label_requirement::op::not_in;
      if (set_op && r.values.empty())
        return bad("values must be non-empty for In and NotIn", w + ".values");
      if (!set_op && !r.values.empty())
        return bad("values must be empty for Exists and DoesNotExist", w + ".values");
      s.match_expressions.push_back(std::move(r));
    }
  }
  return s;
}

}  // namespace

bool label_selector::matches(const label_map& labels) const {
  for (const auto& [k, v] : match_labels) {
    auto it = labels.find(k);
    if (it == labels.end() || it->second != v) return false;
  }
  for (const auto& r : match_expressions) {
    auto it = labels.find(r.key);
    const bool has = it != labels.end();
    const bool in =
        has && std::find(r.values.begin(), r.values.end(), it->second) != r.values.end();
    switch (r.operation) {
      case label_requirement::op::in:
        if (!in) return false;
        break;
      case label_requirement::op::not_in:
        if (in) return false;
        break;
      case label_requirement::op::exists:
        if (!has) return false;
        break;
      case label_requirement::op::does_not_exist:
        if (has) return false;
        break;
    }
  }
  return true;
}

result<device_joint_allocate> parse_device_joint_allocate(std::string_view value) {
  const std::string root = "device-joint-allocate";
  auto j = json::parse(value.begin(), value.end(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return bad("not valid JSON", root);
  if (!j.is_object()) return bad("must be a JSON object", root);
  device_joint_allocate out;
  if (j.contains("deviceTypes") && !j["deviceTypes"].is_null()) {
    const json& ts = j["deviceTypes"];
    if (!ts.is_array()) return bad("must be an array", root + ".deviceTypes");
    for (std::size_t i = 0; i < ts.size(); ++i) {
      const std::string w = root + ".deviceTypes[" + std::to_string(i) + "]";
      if (!ts[i].is_string()) return bad("must be a string", w);
      auto t = parse_device_type(ts[i].get<std::string>());
      if (!t) return bad("unknown device type \"" + ts[i].get<std::string>() + "\"", w);
      if (std::find(out.device_types.begin(), out.device_types.end(), *t) != out.device_types.end())
        return bad("duplicate device type \"" + std::string(to_string(*t)) + "\"", w);
      out.device_types.push_back(*t);
    }
  }
  if (j.contains("requiredScope") && !j["requiredScope"].is_null()) {
    if (!j["requiredScope"].is_string()) return bad("must be a string", root + ".requiredScope");
    out.required_scope = j["requiredScope"].get<std::string>();
    if (!out.required_scope.empty() && out.required_scope != same_pcie_scope)
      return bad("unknown scope \"" + out.required_scope + "\" (SamePCIe)",
                 root + ".requiredScope");
  }
  return out;
}

result<device_allocate_hints> parse_device_allocate_hints(std::string_view value) {
  const std::string root = "device-allocate-hint";
  auto j = json::parse(value.begin(), value.end(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return bad("not valid JSON", root);
  if (!j.is_object()) return bad("must be a JSON object keyed by device type", root);
  device_allocate_hints out;
  for (const auto& item : j.items()) {
    // Named, not a structured binding: the lambda below captures it (Clang 14).
    const std::string& key = item.key();
    const json& h = item.value();
    const std::string w = root + "." + key;
    auto t = parse_device_type(key);
    if (!t) return bad("unknown device type \"" + key + "\"", w);
    if (h.is_null()) continue;  // a nil *DeviceHint
    if (!h.is_object()) return bad("must be an object", w);
    device_hint hint;
    if (h.contains("selector") && !h["selector"].is_null()) {
      auto s = parse_selector(h["selector"], w + ".selector");
      if (!s) return tl::unexpected(s.error());
      hint.selector = std::move(*s);
    }
    if (h.contains("vfSelector") && !h["vfSelector"].is_null()) {
      auto s = parse_selector(h["vfSelector"], w + ".vfSelector");
      if (!s) return tl::unexpected(s.error());
      hint.vf_selector = std::move(*s);
    }
    auto str = [&](const char* field) -> result<std::string> {
      if (!h.contains(field) || h[field].is_null()) return std::string();
      if (!h[field].is_string()) return bad("must be a string", w + "." + field);
      return h[field].get<std::string>();
    };
    auto strategy = str("allocateStrategy");
    if (!strategy) return tl::unexpected(strategy.error());
    if (*strategy == "ApplyForAll")
      hint.strategy = allocate_strategy::apply_for_all;
    else if (*strategy == "RequestsAsCount")
      hint.strategy = allocate_strategy::requests_as_count;
    else if (!strategy->empty())
      return bad("unknown strategy \"" + *strategy + "\" (ApplyForAll, RequestsAsCount)",
                 w + ".allocateStrategy");
    auto excl = str("exclusivePolicy");
    if (!excl) return tl::unexpected(excl.error());
    if (*excl == "DeviceLevel")
      hint.exclusive = exclusive_policy::device_level;
    else if (*excl == "PCIeLevel")
      hint.exclusive = exclusive_policy::pcie_level;
    else if (!excl->empty())
      return bad("unknown policy \"" + *excl + "\" (DeviceLevel, PCIeLevel)",
                 w + ".exclusivePolicy");
    auto scope = str("requiredTopologyScope");
    if (!scope) return tl::unexpected(scope.error());
    if (!scope->empty() && *scope != "Device" && *scope != "PCIe" && *scope != "NUMANode" &&
        *scope != "Node")
      return bad("unknown scope \"" + *scope + "\" (Device, PCIe, NUMANode, Node)",
                 w + ".requiredTopologyScope");
    hint.required_topology_scope = std::move(*scope);
    out.by_type[idx(*t)] = std::move(hint);
  }
  return out;
}

result<std::optional<device_share_request>> make_device_share_request(
    const device_request& r, std::string_view hints_annotation, std::string_view joint_annotation) {
  // GetPodDeviceRequests masks the request per device type and validates each part alone.
  device_request gpu_part = r;
  gpu_part.rdma = 0;
  gpu_part.fpga = 0;
  device_share_request out;
  if (!gpu_part.empty()) {
    auto comb = validate_device_request(gpu_part);
    if (!comb) return tl::unexpected(comb.error());
    auto converted = convert_device_request(gpu_part, *comb);
    // Huawei NPU requests without GPU names are not allocated here (as device_share.cpp).
    if (converted.gpu_core != 0 || converted.gpu_memory != 0 || converted.gpu_memory_ratio != 0)
      out.gpu = calc_desired_requests_and_count_for_gpu(converted);
  }
  for (auto [amount, dst] : {std::pair{r.rdma, &out.rdma}, std::pair{r.fpga, &out.fpga}}) {
    if (amount == 0) continue;
    device_request one;
    (dst == &out.rdma ? one.rdma : one.fpga) = amount;
    auto comb = validate_device_request(one);
    if (!comb) return tl::unexpected(comb.error());
    *dst = amount;
  }
  if (!out.gpu && out.rdma == 0 && out.fpga == 0) return std::optional<device_share_request>{};
  if (!hints_annotation.empty()) {
    auto h = parse_device_allocate_hints(hints_annotation);
    if (!h) return tl::unexpected(h.error());
    out.hints = std::move(*h);
  }
  if (!joint_annotation.empty()) {
    auto j = parse_device_joint_allocate(joint_annotation);
    if (!j) return tl::unexpected(j.error());
    // parsePodDeviceShareExtensions: ApplyForAll types and types not requested leave the joint.
    device_joint_allocate kept;
    kept.required_scope = j->required_scope;
    for (auto t : j->device_types) {
      const device_hint* h = out.hints.of(t);
      if (h != nullptr && h->strategy == allocate_strategy::apply_for_all) continue;
      const bool requested = t == device_type::gpu    ? out.gpu.has_value()
                             : t == device_type::rdma ? out.rdma != 0
                                                      : out.fpga != 0;
      if (requested) kept.device_types.push_back(t);
    }
    out.joint = std::move(kept);
  }
  return std::optional<device_share_request>{std::move(out)};
}

void add_gpu_usage(node_device_usage& usage, std::span<const gpu_device> gpus) {
  for (const auto& g : gpus) {
    const device_amount used{g.core_used, g.memory_used_bytes, g.memory_ratio_used, 0, 0};
    if (!used.is_zero()) usage.add(device_type::gpu, g.minor, used);
  }
}

std::vector<gpu_allocation> to_gpu_allocations(std::span<const device_allocation> allocations) {
  std::vector<gpu_allocation> out;
  for (const auto& a : allocations)
    if (a.type == device_type::gpu)
      out.push_back(
          {a.minor, a.resources.gpu_core, a.resources.gpu_memory, a.resources.gpu_memory_ratio});
  return out;
}

namespace {

// One type's request per instance and count (calcRequestsAndCountByDeviceType).
struct type_request {
  bool present = false;
  device_amount per_instance;
  std::int64_t count = 0;
};
using prepared = std::array<type_request, device_type_count>;

// DeviceHandler.CalcDesiredRequestsAndCount for each requested type, then Prepare's VF check.
result<prepared> prepare(const node_devices& nd, const device_share_request& req) {
  prepared p;
  for (auto t : all_types) {
    const auto devs = nd.of_type(t);
    const bool requested = t == device_type::gpu    ? req.gpu.has_value()
                           : t == device_type::rdma ? req.rdma != 0
                                                    : req.fpga != 0;
    if (!requested) continue;
    if (devs.empty()) return refuse(insufficient(t));
    type_request& tr = p[idx(t)];
    tr.present = true;
    if (t == device_type::gpu) {
      const gpu_requirements& g = *req.gpu;
      tr.count = g.count;
      if (g.has_core) tr.per_instance.gpu_core = g.core;
      if (g.has_memory_ratio) tr.per_instance.gpu_memory_ratio = g.memory_ratio;
      if (g.has_memory) tr.per_instance.gpu_memory = g.memory_bytes;
      continue;
    }
    // DefaultDeviceHandler.CalcDesiredRequestsAndCount.
    const std::int64_t q = t == device_type::rdma ? req.rdma : req.fpga;
    auto set = [&](std::int64_t v) {
      (t == device_type::rdma ? tr.per_instance.rdma : tr.per_instance.fpga) = v;
    };
    tr.count = 1;
    set(q);
    const device_hint* h = req.hints.of(t);
    if (q > 100 && q % 100 == 0) {
      tr.count = q / 100;
      set(100);
    } else if (h != nullptr && h->strategy == allocate_strategy::apply_for_all) {
      std::int64_t n = 0;
      for (const auto& d : devs)
        if (!h->selector || h->selector->matches(d.labels)) ++n;
      if (n == 0) return refuse(insufficient(t));
      tr.count = n;
    } else if (h != nullptr && h->strategy == allocate_strategy::requests_as_count) {
      tr.count = q;
      set(h->exclusive == exclusive_policy::device_level ? 100 : 1);
    }
    if (h != nullptr && h->vf_selector) {
      bool any_vf = false;
      for (const auto& d : devs) any_vf = any_vf || !d.vf_groups.empty();
      if (!any_vf) return refuse("Insufficient " + std::string(to_string(t)) + " VirtualFunctions");
    }
  }
  return p;
}

// The devices a type may take after filterNodeDevice and nodeDevice.filter: in the NUMA mask,
// matching the hint's selector, with free resources, and (PCIeLevel exclusivity) on a PCIe
// switch whose devices of the type are all untouched.
struct candidate {
  const device_info* info = nullptr;
  device_amount total;
  device_amount free;
};
std::vector<candidate> candidates_of(const node_devices& nd, const numa_topology& topo,
                                     const node_device_usage& usage, device_type t,
                                     const device_hint* hint, std::optional<std::uint64_t> mask) {
  std::vector<candidate> out;
  bool any_free = false;
  for (const auto& d : nd.of_type(t)) {
    const device_amount f = free_of(d, usage);
    any_free = any_free || !f.is_zero();
    if (mask) {
      if (!d.topology) continue;
      if (d.topology->node_id != -1 && !(*mask & (std::uint64_t{1} << d.topology->node_id)))
        continue;
    }
    if (hint != nullptr && hint->selector && !hint->selector->matches(d.labels)) continue;
    out.push_back({&d, d.total(), f});
  }
  if (!any_free) return {};  // nodeDevice.filter: a type with nothing free is left out
  if (hint != nullptr && hint->exclusive == exclusive_policy::pcie_level) {
    // filterFreeDevicesByPCIe: the devices of `t` on switches (of the NUMA topology) whose
    // devices of `t` are all untouched.
    std::set<std::int32_t> allowed;
    for (const auto& node : topo.nodes)
      for (const auto& p : node.pcies) {
        const auto& minors = p.minors[idx(t)];
        const bool untouched = std::all_of(minors.begin(), minors.end(), [&](std::int32_t m) {
          const device_info* d = nd.find(t, m);
          return d != nullptr && free_of(*d, usage) == d->total();
        });
        if (untouched) allowed.insert(minors.begin(), minors.end());
      }
    std::erase_if(out, [&](const candidate& c) { return !allowed.contains(c.info->minor); });
  }
  return out;
}

// resourceAllocationScorer.scoreDevice over the configured resources.
std::int64_t score_device(const device_share_args& args, const device_amount& req,
                          const device_amount& total, const device_amount& free) {
  std::int64_t sum = 0, weights = 0;
  for (const auto& spec : args.resources) {
    auto field = [&](const device_amount& a) {
      switch (spec.name) {
        case device_resource::gpu_core:
          return a.gpu_core;
        case device_resource::gpu_memory:
          return a.gpu_memory;
        case device_resource::gpu_memory_ratio:
          return a.gpu_memory_ratio;
        case device_resource::rdma:
          return a.rdma;
        case device_resource::fpga:
          return a.fpga;
      }
      return std::int64_t{0};
    };
    const std::int64_t t = field(total);
    if (spec.weight == 0 || t == 0) continue;
    const std::int64_t f = field(free);
    const std::int64_t requested = t >= f ? t - f + field(req) : t;
    sum += spec.weight * (args.scoring_strategy == scoring_strategy_type::least_allocated
                              ? least_requested_score(requested, t)
                              : most_requested_score(requested, t));
    weights += spec.weight;
  }
  return weights == 0 ? 0 : sum / weights;
}

struct scored {
  const candidate* c;
  std::int64_t score;
};
// sortDeviceResourcesByMinor: score high to low, then minor ascending.
void sort_by_score(std::vector<scored>& v) {
  std::stable_sort(v.begin(), v.end(), [](const scored& a, const scored& b) {
    if (a.score != b.score) return a.score > b.score;
    return a.c->info->minor < b.c->info->minor;
  });
}

// allocateVF: the free VF with the smallest bus ID among the groups the selector matches.
std::optional<virtual_function> allocate_vf(const device_info& d, const node_device_usage& usage,
                                            const label_selector& vf_selector) {
  const device_usage* u = usage.find(d.type, d.minor);
  std::optional<virtual_function> best;
  for (const auto& g : d.vf_groups) {
    if (!vf_selector.matches(g.labels)) continue;
    for (const auto& vf : g.vfs) {
      if (u != nullptr && std::find(u->vfs.begin(), u->vfs.end(), vf.bus_id) != u->vfs.end())
        continue;
      if (!best || vf.bus_id < best->bus_id) best = vf;
    }
  }
  return best;
}

// defaultAllocateDevices (with allocateDevices' count rules applied by the caller).
result<device_allocations> default_allocate(const std::vector<candidate>& cands,
                                            const node_device_usage& usage, device_type t,
                                            const device_amount& per_instance, std::int64_t desired,
                                            std::int64_t max_desired,
                                            const std::set<std::string>& preferred_pcies,
                                            const device_hint* hint,
                                            const device_share_args& args) {
  std::vector<scored> order;
  order.reserve(cands.size());
  for (const auto& c : cands)
    order.push_back({&c, score_device(args, per_instance, c.total, c.free)});
  sort_by_score(order);
  if (!preferred_pcies.empty()) {
    // sortDeviceResourcesByPreferredPCIe: the i-th device of every preferred switch (round i,
    // each round by score then minor), then the devices of other switches.
    std::map<std::string, std::vector<scored>> groups;
    std::vector<scored> rest;
    std::size_t rounds = 0;
    for (const auto& s : order) {
      const auto& tp = s.c->info->topology;
      if (tp && preferred_pcies.contains(tp->pcie_id)) {
        auto& g = groups[tp->pcie_id];
        g.push_back(s);
        rounds = std::max(rounds, g.size());
      } else {
        rest.push_back(s);
      }
    }
    std::vector<scored> sorted;
    for (std::size_t i = 0; i < rounds; ++i) {
      std::vector<scored> round;
      for (const auto& [id, g] : groups)
        if (i < g.size()) round.push_back(g[i]);
      sort_by_score(round);
      sorted.insert(sorted.end(), round.begin(), round.end());
    }
    sorted.insert(sorted.end(), rest.begin(), rest.end());
    order = std::move(sorted);
  }
  device_allocations out;
  for (const auto& s : order) {
    if (s.c->free.is_zero()) continue;  // unhealthy or exhausted
    if (!fits(per_instance, s.c->free)) continue;
    device_allocation a{t, s.c->info->minor, per_instance, std::nullopt};
    if (hint != nullptr && hint->vf_selector) {  // mustAllocateVF
      a.vf = allocate_vf(*s.c->info, usage, *hint->vf_selector);
      if (!a.vf) continue;
    }
    out.push_back(std::move(a));
    if (static_cast<std::int64_t>(out.size()) == max_desired) break;
  }
  if (static_cast<std::int64_t>(out.size()) < desired) return refuse(insufficient(t));
  return out;
}

// GPUTopologyScope (GetGPUTopologyScope): node -> NUMA nodes -> PCIe switches.
struct gpu_scope {
  int level = 1;  // DeviceTopologyScopeLevel: Node 1, NUMANode 2, PCIe 3
  std::vector<std::int32_t> minors;
  std::vector<gpu_scope> children;
};
std::optional<gpu_scope> gpu_topology_scope(const node_devices& nd) {
  const auto gpus = nd.of_type(device_type::gpu);
  if (gpus.empty()) return std::nullopt;
  std::map<std::int32_t, std::map<std::string, std::vector<std::int32_t>>> index;
  gpu_scope root;
  for (const auto& d : gpus) {
    if (!d.topology) return std::nullopt;  // one GPU without topology: no tree at all
    index[d.topology->node_id][d.topology->pcie_id].push_back(d.minor);
    root.minors.push_back(d.minor);
  }
  for (auto& [node, pcies] : index) {
    gpu_scope numa{2, {}, {}};
    for (auto& [pcie, minors] : pcies) {
      numa.minors.insert(numa.minors.end(), minors.begin(), minors.end());
      numa.children.push_back(gpu_scope{3, minors, {}});
    }
    std::sort(numa.minors.begin(), numa.minors.end());
    root.children.push_back(std::move(numa));
  }
  return root;
}

int scope_level(std::string_view s) {
  if (s == "Device") return 4;
  if (s == "PCIe") return 3;
  if (s == "NUMANode") return 2;
  if (s == "Node") return 1;
  return 0;
}

struct gpu_context {
  const gpu_requirements* req = nullptr;
  device_amount per_gpu;
  int required_level = 0;
  std::set<std::int32_t> used;                                         // deviceUsedMinorsHash
  std::map<std::int32_t, const candidate*> by_minor;                   // the allocatable GPUs
  std::map<std::int32_t, std::pair<bool, std::int64_t>> device_cache;  // contextOfDevices
  const device_share_args* args = nullptr;
};
struct scope_result {
  std::vector<std::int32_t> minors;
  int cumulative_not_empties = 0;
  int depth = 0;
  std::int64_t score = -1;
};

// allocateFromScope.
std::optional<scope_result> allocate_from_scope(gpu_context& ctx, const gpu_scope& scope, int depth,
                                                int not_empties) {
  const auto n = static_cast<std::size_t>(ctx.req->count);
  if (scope.minors.size() < n) return std::nullopt;
  ++depth;
  for (auto m : scope.minors)
    if (ctx.used.contains(m)) {
      ++not_empties;
      break;
    }
  std::optional<scope_result> best;
  for (const auto& child : scope.children) {
    if (child.minors.size() < n) continue;
    auto r = allocate_from_scope(ctx, child, depth, not_empties);
    if (!r || r->minors.empty()) continue;
    if (!best) {
      best = std::move(r);
      continue;
    }
    if (best->depth < r->depth ||
        (best->depth == r->depth && best->cumulative_not_empties < r->cumulative_not_empties)) {
      best = std::move(r);
      continue;
    }
    if (ctx.req->shared && best->depth == r->depth &&
        best->cumulative_not_empties == r->cumulative_not_empties && best->score < r->score)
      best = std::move(r);
  }
  if (best) return best;
  if (ctx.required_level > scope.level) return std::nullopt;

  scope_result out{{}, not_empties, depth, -1};
  std::int32_t best_shared = -1;
  bool satisfied = false;
  for (auto m : scope.minors) {
    auto [it, fresh] = ctx.device_cache.try_emplace(m, false, 0);
    if (fresh) {
      auto c = ctx.by_minor.find(m);
      it->second.first = c != ctx.by_minor.end() && fits(ctx.per_gpu, c->second->free);
      if (it->second.first && ctx.req->shared)
        // allocator_gpu.go passes the device's free amounts where scoreDevice takes the total,
        // and the total where it takes the free ones; Colony keeps that order.
        it->second.second = score_device(*ctx.args, ctx.per_gpu, c->second->free, c->second->total);
    }
    if (!it->second.first) continue;
    if (!ctx.req->shared) {
      out.minors.push_back(m);
      if (out.minors.size() == n) {
        satisfied = true;
        break;
      }
      continue;
    }
    satisfied = true;
    if (it->second.second > out.score) {
      best_shared = m;
      out.score = it->second.second;
    }
  }
  if (!satisfied) return std::nullopt;
  if (ctx.req->shared) out.minors = {best_shared};
  return out;
}

device_allocation gpu_allocation_of(const device_info& d, const gpu_requirements& g,
                                    const device_amount& per_gpu) {
  // fillGPUTotalMem: both memory forms are recorded.
  device_allocation a{device_type::gpu, d.minor, per_gpu, std::nullopt};
  if (g.has_memory_ratio) {
    a.resources.gpu_memory = memory_ratio_to_bytes(g.memory_ratio, d.resources.gpu_memory);
  } else if (g.has_memory) {
    a.resources.gpu_memory_ratio = memory_bytes_to_ratio(g.memory_bytes, d.resources.gpu_memory);
  }
  return a;
}

// GPUAllocator.Allocate without partitions or templates: generalAllocate.
result<device_allocations> allocate_gpus(const node_devices& nd, const node_device_usage& usage,
                                         const std::vector<candidate>& cands,
                                         const device_share_request& req, const type_request& tr,
                                         const device_share_args& args) {
  const gpu_requirements& g = *req.gpu;
  const device_hint* hint = req.hints.of(device_type::gpu);
  const std::string required_scope = hint != nullptr ? hint->required_topology_scope : "";
  // allocateByDeviceTopology; its "unresolvable" outcomes (no tree, several shared GPUs) fall back
  // to defaultAllocateDevices unless a topology scope is required.
  auto tree = gpu_topology_scope(nd);
  if (!tree) {
    if (!required_scope.empty()) return refuse("node(s) missing GPU Device Topology Tree");
  } else if (g.shared && g.count > 1) {
    if (!required_scope.empty()) return refuse(std::string(err_unsupported_multi_shared_gpu));
  } else {
    gpu_context ctx;
    ctx.req = &g;
    ctx.per_gpu = tr.per_instance;
    ctx.required_level = scope_level(required_scope);
    ctx.args = &args;
    for (const auto& u : usage.devices)
      if (u.type == device_type::gpu && !u.used.is_zero()) ctx.used.insert(u.minor);
    for (const auto& c : cands)
      if (!c.total.is_zero()) ctx.by_minor.emplace(c.info->minor, &c);  // removeZeroDevice
    auto r = allocate_from_scope(ctx, *tree, 0, 0);
    if (!r)
      return refuse(std::string(required_scope.empty() ? err_insufficient_gpu_devices
                                                       : err_insufficient_topology_scoped_gpu));
    device_allocations a;
    for (auto m : r->minors)
      a.push_back(gpu_allocation_of(*nd.find(device_type::gpu, m), g, tr.per_instance));
    return a;
  }
  auto d = default_allocate(cands, usage, device_type::gpu, tr.per_instance, tr.count, tr.count, {},
                            hint, args);
  if (!d) return d;
  for (auto& a : *d) a = gpu_allocation_of(*nd.find(device_type::gpu, a.minor), g, tr.per_instance);
  return d;
}

// allocateDevices: one type, optionally preferring the PCIe switches of the primary's devices.
result<device_allocations> allocate_type(const node_devices& nd, const numa_topology& topo,
                                         const node_device_usage& usage,
                                         const device_share_request& req, const type_request& tr,
                                         device_type t, std::int64_t desired,
                                         const std::set<std::string>& preferred_pcies,
                                         const allocate_options& opts) {
  const device_hint* hint = req.hints.of(t);
  auto cands = candidates_of(nd, topo, usage, t, hint, opts.numa_affinity);
  if (t == device_type::gpu) return allocate_gpus(nd, usage, cands, req, tr, opts.args);
  std::int64_t max_desired =
      std::max<std::int64_t>(desired, static_cast<std::int64_t>(preferred_pcies.size()));
  if (desired == 0) desired = 1;
  max_desired = std::max(max_desired, desired);
  return default_allocate(cands, usage, t, tr.per_instance, desired, max_desired, preferred_pcies,
                          hint, opts.args);
}

// newPreferredPCIes.
std::set<std::string> pcies_of(const node_devices& nd, std::span<const device_allocation> allocs) {
  std::set<std::string> out;
  for (const auto& a : allocs) {
    const device_info* d = nd.find(a.type, a.minor);
    if (d != nullptr && d->topology) out.insert(d->topology->pcie_id);
  }
  return out;
}

}  // namespace

result<device_allocations> allocate_devices(const node_devices& nd, const numa_topology& topo,
                                            const node_device_usage& usage,
                                            const device_share_request& req,
                                            const allocate_options& opts) {
  auto p = prepare(nd, req);
  if (!p) return tl::unexpected(p.error());
  std::array<std::optional<device_allocations>, device_type_count> done;
  std::size_t present = 0;
  for (auto t : all_types) present += (*p)[idx(t)].present ? 1 : 0;

  // tryJointAllocate: only when the pod requests more than one device type.
  if (present > 1 && req.joint) {
    std::vector<device_type> types;
    for (auto t : req.joint->device_types)
      if ((*p)[idx(t)].present) types.push_back(t);
    if (!types.empty()) {
      const device_type primary = types.front();
      auto pa = allocate_type(nd, topo, usage, req, (*p)[idx(primary)], primary,
                              (*p)[idx(primary)].count, {}, opts);
      if (!pa) return tl::unexpected(pa.error());
      if (pa->empty()) return refuse(std::string(err_insufficient_primary));
      const auto pcies = pcies_of(nd, *pa);
      const bool same_pcie = req.joint->required_scope == same_pcie_scope;
      for (std::size_t i = 1; i < types.size(); ++i) {
        const device_type t = types[i];
        std::int64_t desired = (*p)[idx(t)].count;
        if (same_pcie && desired < static_cast<std::int64_t>(pcies.size()))
          desired = static_cast<std::int64_t>(pcies.size());
        auto sa = allocate_type(nd, topo, usage, req, (*p)[idx(t)], t, desired, pcies, opts);
        if (!sa) return tl::unexpected(sa.error());
        // validateJointAllocation: the secondary's switches are exactly the primary's.
        if (same_pcie && pcies_of(nd, *sa) != pcies)
          return refuse(std::string(err_joint_allocate_violation));
        done[idx(t)] = std::move(*sa);
      }
      done[idx(primary)] = std::move(*pa);
    }
  }
  for (auto t : all_types) {
    if (!(*p)[idx(t)].present || done[idx(t)]) continue;
    auto a = allocate_type(nd, topo, usage, req, (*p)[idx(t)], t, (*p)[idx(t)].count, {}, opts);
    if (!a) return tl::unexpected(a.error());
    done[idx(t)] = std::move(*a);
  }
  device_allocations out;
  for (auto& d : done)
    if (d) out.insert(out.end(), d->begin(), d->end());
  std::sort(out.begin(), out.end(), [](const device_allocation& a, const device_allocation& b) {
    return std::tie(a.type, a.minor) < std::tie(b.type, b.minor);
  });
  return out;
}

namespace {
std::vector<std::int32_t> gpu_minors(const device_allocations& a) {
  std::vector<std::int32_t> m;
  for (const auto& x : a)
    if (x.type == device_type::gpu) m.push_back(x.minor);
  return m;
}
}  // namespace

result<numa::provider_hints> generate_topology_hints(const node_devices& nd,
                                                     const numa_topology& topo,
                                                     const node_device_usage& usage,
                                                     const device_share_request& req,
                                                     const device_share_args& args) {
  const std::vector<int> ids = topo.node_ids();
  std::optional<error> unsatisfied;  // the whole node's status
  device_allocations best;           // the whole node's allocation
  std::optional<std::array<std::size_t, device_type_count>> min_size;
  struct feasible {
    std::uint64_t mask;
    device_allocations a;
  };
  std::vector<feasible> found;
  allocate_options opts;
  opts.args = args;
  for (const std::uint64_t mask : numa::numa_masks_of(ids)) {
    const bool whole = static_cast<std::size_t>(std::popcount(mask)) == ids.size();
    auto attempt = [&]() -> result<device_allocations> {
      auto p = prepare(nd, req);
      if (!p) return tl::unexpected(p.error());
      for (auto t : all_types) {
        if (!(*p)[idx(t)].present) continue;
        // calcTotalDevicesByNUMA counts only types present on those NUMA nodes.
        const std::size_t n = topo.count_in(t, mask);
        if (n > 0 && static_cast<std::int64_t>(n) < (*p)[idx(t)].count)
          return refuse(std::string(err_insufficient_numa_scoped));
      }
      if (!min_size) {
        min_size.emplace();
        for (auto t : all_types) (*min_size)[idx(t)] = (*p)[idx(t)].present ? ids.size() : 0;
      }
      opts.numa_affinity = mask;
      return allocate_devices(nd, topo, usage, req, opts);
    };
    auto r = attempt();
    if (whole) {
      if (r)
        best = *r;
      else
        unsatisfied = r.error();
    }
    if (!r || r->empty()) continue;
    const auto bits = static_cast<std::size_t>(std::popcount(mask));
    for (auto& s : *min_size)
      if (s != 0 && bits < s) s = bits;
    found.push_back({mask, std::move(*r)});
  }
  numa::provider_hints out;
  if (min_size) {
    const auto best_gpus = gpu_minors(best);
    // Resource names ascending: fpga, gpu, rdma.
    for (auto t : {device_type::fpga, device_type::gpu, device_type::rdma}) {
      const std::size_t size = (*min_size)[idx(t)];
      if (size == 0) continue;
      std::vector<numa::numa_hint> hints;
      for (const auto& f : found) {
        numa::numa_hint h;
        h.affinity = f.mask;
        h.score = gpu_minors(f.a) == best_gpus ? default_numa_score : 0;
        h.preferred = static_cast<std::size_t>(std::popcount(f.mask)) == size;
        hints.push_back(h);
      }
      if (hints.empty()) {
        if (unsatisfied) return tl::unexpected(*unsatisfied);
        return numa::provider_hints{};
      }
      out.emplace_back(std::string(to_string(t)), std::move(hints));
    }
  }
  if (unsatisfied) return tl::unexpected(*unsatisfied);
  return out;
}

result<numa::provider_hints> generate_designated_hints(std::span<const device_allocation> allocs,
                                                       const node_devices& nd,
                                                       const numa_topology& topo) {
  std::uint64_t mask = 0;
  std::set<device_type> types;
  for (const auto& a : allocs) {
    auto node = topo.node_of(nd, a.type, a.minor);
    if (!node) return refuse(std::string(err_designated_lack_numa));
    mask |= std::uint64_t{1} << *node;
    types.insert(a.type);
  }
  numa::provider_hints out;
  for (auto t : {device_type::fpga, device_type::gpu, device_type::rdma}) {
    if (!types.contains(t)) continue;
    numa::numa_hint h;
    h.affinity = mask;
    h.preferred = true;
    h.score = default_numa_score;
    out.emplace_back(std::string(to_string(t)), std::vector<numa::numa_hint>{h});
  }
  return out;
}

}  // namespace colony::scheduler::device
