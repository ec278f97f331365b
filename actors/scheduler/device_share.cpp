// device_share.hpp
#include "actors/scheduler/device_share.hpp"

#include <algorithm>
#include <array>
#include <mutex>
#include <set>

#include "actors/scheduler/device/joint_allocation.hpp"
#include "messages/names.hpp"

namespace colony::scheduler {

namespace {

// ValidatePercentageResource: <= 100 or a multiple of 100.
bool valid_percentage(std::int64_t v) { return !(v > 100 && v % 100 != 0); }

bool valid_shared(const device_request& r) {
  // ValidDeviceResourceCombinationsGPUShared: core and ratio multiples of shared and <= 100x.
  if (r.gpu_shared == 0) return false;
  if (r.gpu_core != 0 && (r.gpu_core % r.gpu_shared != 0 || r.gpu_core / r.gpu_shared > 100))
    return false;
  if (r.gpu_memory_ratio != 0 &&
      (r.gpu_memory_ratio % r.gpu_shared != 0 || r.gpu_memory_ratio / r.gpu_shared > 100))
    return false;
  return true;
}

bool valid_gpu_percentage(const device_request& r) {
  if (r.gpu_core != 0 && !valid_percentage(r.gpu_core)) return false;
  if (r.gpu_memory_ratio != 0 && !valid_percentage(r.gpu_memory_ratio)) return false;
  return true;
}

bool valid_npu_shared(const device_request& r) {
  if (r.gpu_shared == 0) return false;
  if (r.gpu_shared > 1) return false;  // multiple npu share is not supported on device side
  if (r.huawei_npu_dvpp != 0 && r.huawei_npu_dvpp > 100) return false;
  return true;
}

std::uint32_t flags_of(const device_request& r) {
  std::uint32_t f = 0;
  if (r.nvidia_gpu) f |= dev_nvidia_gpu;
  if (r.amd_gpu) f |= dev_amd_gpu;
  if (r.hygon_dcu) f |= dev_hygon_dcu;
  if (r.koord_gpu) f |= dev_koord_gpu;
  if (r.gpu_shared) f |= dev_gpu_shared;
  if (r.gpu_core) f |= dev_gpu_core;
  if (r.gpu_memory) f |= dev_gpu_memory;
  if (r.gpu_memory_ratio) f |= dev_gpu_memory_ratio;
  if (r.huawei_npu_core) f |= dev_huawei_npu_core;
  if (r.huawei_npu_cpu) f |= dev_huawei_npu_cpu;
  if (r.huawei_npu_dvpp) f |= dev_huawei_npu_dvpp;
  if (r.fpga) f |= dev_fpga;
  if (r.rdma) f |= dev_rdma;
  return f;
}

std::string names_of(std::uint32_t f) {
  // Bit i of f (dev_nvidia_gpu = bit 0, ...).
  static constexpr std::array<std::string_view, 13> bit_names{
      names::nvidia_gpu,     names::amd_gpu,          names::hygon_dcu,
      names::koord_gpu,      names::gpu_shared,       names::gpu_core,
      names::gpu_memory,     names::gpu_memory_ratio, names::huawei_npu_core,
      names::huawei_npu_cpu, names::huawei_npu_dvpp,  names::koord_fpga,
      names::koord_rdma};
  std::string s = "[";
  bool first = true;
  for (std::size_t i = 0; i < bit_names.size(); ++i) {
    if (!(f & (1u << i))) continue;
    if (!first) s += " ";
    s += bit_names[i];
    first = false;
  }
  return s + "]";
}

}  // namespace

result<std::uint32_t> validate_device_request(const device_request& r) {
  if (r.empty()) return fail(errc::invalid_input, "pod request should not be empty");
  const std::uint32_t f = flags_of(r);
  // DeviceResourceValidators: koordinator.sh/gpu, fpga, rdma are percentages.
  if (r.koord_gpu && !valid_percentage(r.koord_gpu))
    return fail(errc::invalid_input,
                "invalid resource unit koordinator.sh/gpu: " + std::to_string(r.koord_gpu));
  if (r.fpga && !valid_percentage(r.fpga))
    return fail(errc::invalid_input,
                "invalid resource unit koordinator.sh/fpga: " + std::to_string(r.fpga));
  if (r.rdma && !valid_percentage(r.rdma))
    return fail(errc::invalid_input,
                "invalid resource unit koordinator.sh/rdma: " + std::to_string(r.rdma));
  bool ok = false;
  switch (f) {
    case dev_nvidia_gpu:
    case dev_amd_gpu:
    case dev_hygon_dcu:
    case dev_koord_gpu:
    case dev_fpga:
    case dev_rdma:
      ok = true;
      break;
    case dev_gpu_memory:
    case dev_gpu_memory_ratio:
    case dev_gpu_core | dev_gpu_memory:
    case dev_gpu_core | dev_gpu_memory_ratio:
    case dev_huawei_npu_core | dev_gpu_memory_ratio:
      ok = valid_gpu_percentage(r);
      break;
    case dev_gpu_shared | dev_gpu_memory:
    case dev_gpu_shared | dev_gpu_memory_ratio:
    case dev_gpu_shared | dev_gpu_core | dev_gpu_memory:
    case dev_gpu_shared | dev_gpu_core | dev_gpu_memory_ratio:
      ok = valid_shared(r);
      break;
    case dev_gpu_shared | dev_huawei_npu_core | dev_huawei_npu_cpu | dev_gpu_memory:
    case dev_gpu_shared | dev_huawei_npu_core | dev_huawei_npu_cpu | dev_huawei_npu_dvpp |
        dev_gpu_memory:
      ok = valid_npu_shared(r);
      break;
    default:
      ok = false;
  }
  if (!ok) return fail(errc::invalid_input, "invalid resource device requests: " + names_of(f));
  return f;
}

device_request convert_device_request(const device_request& r, std::uint32_t combination) {
  device_request out;
  switch (combination) {
    case dev_nvidia_gpu:
      out.gpu_core = out.gpu_memory_ratio = r.nvidia_gpu * 100;
      break;
    case dev_amd_gpu:
      out.gpu_core = out.gpu_memory_ratio = r.amd_gpu * 100;
      break;
    case dev_hygon_dcu:
      out.gpu_core = out.gpu_memory_ratio = r.hygon_dcu * 100;
      break;
    case dev_koord_gpu:
      out.gpu_core = out.gpu_memory_ratio = r.koord_gpu;
      break;
    default:
      // Allowed combinations keep exactly their own names.
      if (combination & dev_gpu_shared) out.gpu_shared = r.gpu_shared;
      if (combination & dev_gpu_core) out.gpu_core = r.gpu_core;
      if (combination & dev_gpu_memory) out.gpu_memory = r.gpu_memory;
      if (combination & dev_gpu_memory_ratio) out.gpu_memory_ratio = r.gpu_memory_ratio;
      if (combination & dev_huawei_npu_core) out.huawei_npu_core = r.huawei_npu_core;
      if (combination & dev_huawei_npu_cpu) out.huawei_npu_cpu = r.huawei_npu_cpu;
      if (combination & dev_huawei_npu_dvpp) out.huawei_npu_dvpp = r.huawei_npu_dvpp;
      if (combination & dev_fpga) out.fpga = r.fpga;
      if (combination & dev_rdma) out.rdma = r.rdma;
  }
  return out;
}

gpu_requirements calc_desired_requests_and_count_for_gpu(const device_request& c) {
  gpu_requirements g;
  std::int64_t count = 1;
  if (c.gpu_shared > 0) {
    count = c.gpu_shared;
  } else if (c.gpu_memory_ratio > 100 && c.gpu_memory_ratio % 100 == 0) {
    count = c.gpu_memory_ratio / 100;
  }
  g.count = count;
  if (c.gpu_core != 0) {
    g.has_core = true;
    g.core = c.gpu_core / count;
  }
  if (c.gpu_memory_ratio != 0) {
    g.has_memory_ratio = true;
    g.memory_ratio = c.gpu_memory_ratio / count;
    g.shared = g.memory_ratio < 100;
  } else if (c.gpu_memory != 0) {
    g.has_memory = true;
    g.memory_bytes = c.gpu_memory / count;
    g.shared = true;
  }
  return g;
}

std::int64_t memory_ratio_to_bytes(std::int64_t ratio, std::int64_t total) noexcept {
  return ratio * total / 100;
}

std::int64_t memory_bytes_to_ratio(std::int64_t bytes, std::int64_t total) noexcept {
  if (total == 0) return 0;
  return static_cast<std::int64_t>(static_cast<double>(bytes) / static_cast<double>(total) * 100.0);
}

std::string_view to_string(device_resource r) noexcept {
  switch (r) {
    case device_resource::gpu_core:
      return names::gpu_core;
    case device_resource::gpu_memory:
      return names::gpu_memory;
    case device_resource::gpu_memory_ratio:
      return names::gpu_memory_ratio;
    case device_resource::rdma:
      return names::koord_rdma;
    case device_resource::fpga:
      return names::koord_fpga;
  }
  return "";
}

std::optional<device_resource> parse_device_resource(std::string_view s) noexcept {
  for (auto r : {device_resource::gpu_core, device_resource::gpu_memory,
                 device_resource::gpu_memory_ratio, device_resource::rdma, device_resource::fpga})
    if (to_string(r) == s) return r;
  return std::nullopt;
}

result<void> validate(const device_share_args& a, const std::string& path) {
  for (std::size_t i = 0; i < a.resources.size(); ++i) {
    const auto& r = a.resources[i];
    if (r.weight <= 0 || r.weight > 100)
      return fail(errc::invalid_input,
                  "resource weight of " + std::string(to_string(r.name)) +
                      " should be in range [1, 100], got " + std::to_string(r.weight),
                  path + ".scoringStrategy.resources[" + std::to_string(i) + "].weight");
  }
  return {};
}

device_scorer::device_scorer(const device_share_args& args) : type_(args.scoring_strategy) {
  for (const auto& r : args.resources) {
    if (r.name == device_resource::gpu_core) w_core_ = r.weight;
    if (r.name == device_resource::gpu_memory) w_memory_ = r.weight;
    if (r.name == device_resource::gpu_memory_ratio) w_ratio_ = r.weight;
  }
}

std::int64_t device_scorer::score(const gpu_requirements& req, const device_amounts& total,
                                  const device_amounts& free) const noexcept {
  std::int64_t node_score = 0, weight_sum = 0;
  auto one = [&](std::int64_t w, std::int64_t t, std::int64_t f, std::int64_t pod_req) {
    if (w == 0 || t == 0) return;
    std::int64_t requested = t;
    if (t >= f) requested = t - f + pod_req;
    const std::int64_t s = type_ == scoring_strategy_type::least_allocated
                               ? least_requested_score(requested, t)
                               : most_requested_score(requested, t);
    node_score += s * w;
    weight_sum += w;
  };
  one(w_core_, total.core, free.core, req.has_core ? req.core : 0);
  one(w_memory_, total.memory, free.memory, req.has_memory ? req.memory_bytes : 0);
  one(w_ratio_, total.memory_ratio, free.memory_ratio, req.has_memory_ratio ? req.memory_ratio : 0);
  return weight_sum == 0 ? 0 : node_score / weight_sum;
}

device_share::device_share(device_share_args args) : args_(std::move(args)), scorer_(args_) {}

result<std::optional<gpu_requirements>> device_share::requirements_of(const pod_info& pod) {
  if (pod.devices.empty()) return std::optional<gpu_requirements>{};
  auto r = device::make_device_share_request(pod.devices, {}, {});
  if (!r) return tl::unexpected(r.error());
  if (!*r || !(*r)->gpu) return std::optional<gpu_requirements>{};
  return std::optional<gpu_requirements>{*(*r)->gpu};
}

device_share::state& device_share::state_of(cycle_state& st, const pod_info& pod) {
  auto& s = st.slot<state>(slot());
  if (s.cycle != st.cycle || s.pod != &pod) {  // REQUIRES: the pod outlives the cycle
    s.cycle = st.cycle;
    s.pod = &pod;
    s.skip = true;
    s.has_gpu = false;
    s.request.reset();
    s.error.clear();
    if (!pod.devices.empty()) {
      auto r = device::make_device_share_request(pod.devices, pod.device_allocate_hint,
                                                 pod.device_joint_allocate);
      if (!r) {
        s.error = r.error().describe();
      } else if (*r) {
        s.skip = false;
        s.has_gpu = (*r)->gpu.has_value();
        if (s.has_gpu) s.req = *(*r)->gpu;
        s.request = std::make_shared<const device::device_share_request>(std::move(**r));
      }
    }
  }
  return s;
}

status device_share::pre_filter(cycle_state& st, const pod_info& pod, std::span<const node_info>,
                                event_time) {
  st.slot<state>(slot()).cycle = ~0ull;  // force a fresh parse for this cycle
  auto& s = state_of(st, pod);
  if (!s.error.empty()) return status::unresolvable({}, s.error);
  return s.skip ? status::skip() : status{};
}

namespace {

// Filter reasons must outlive the cycle (status::reason); the joint allocator's are a small
// fixed family ("Insufficient rdma devices", ...), kept once each.
std::string_view intern_reason(const std::string& text) {
  static std::mutex mu;
  static std::set<std::string, std::less<>> reasons;
  std::lock_guard lock(mu);
  return *reasons.insert(text).first;
}

// A request the GPU-only path cannot serve: a node without a Device object has no NICs / FPGAs.
std::string_view missing_device_reason(const device::device_share_request& r) {
  static const std::string rdma = "Insufficient rdma devices", fpga = "Insufficient fpga devices";
  if (r.rdma != 0) return rdma;
  if (r.fpga != 0) return fpga;
  return {};
}

}  // namespace

result<device::device_allocations> device_share::allocate_joint(
    const device::device_share_request& req, const node_info& node) const {
  device::node_device_usage usage = node.device_usage;
  device::add_gpu_usage(usage, node.gpus);
  device::allocate_options opts;
  opts.args = args_;
  return device::allocate_devices(node.device_model->devices, node.device_model->topology, usage,
                                  req, opts);
}

namespace {
device_amounts free_of(const gpu_device& g) {
  if (!g.healthy) return {};
  return {g.core_total - g.core_used, g.memory_total_bytes - g.memory_used_bytes,
          g.memory_ratio_total - g.memory_ratio_used};
}
device_amounts total_of(const gpu_device& g) {
  return {g.core_total, g.memory_total_bytes, g.memory_ratio_total};
}
bool fits(const gpu_requirements& req, const device_amounts& f) {
  if (f.core == 0 && f.memory == 0 && f.memory_ratio == 0) return false;  // unhealthy / exhausted
  if (req.has_core && req.core > f.core) return false;
  if (req.has_memory_ratio && req.memory_ratio > f.memory_ratio) return false;
  if (req.has_memory && req.memory_bytes > f.memory) return false;
  return true;
}
}  // namespace

result<std::vector<gpu_allocation>> device_share::allocate(const gpu_requirements& req,
                                                           const node_info& node) const {
  if (node.gpus.empty()) return fail(errc::failed_precondition, std::string(err_insufficient_gpu));
  struct cand {
    std::int64_t score;
    std::int32_t minor;
    std::size_t i;
  };
  std::vector<cand> order;
  order.reserve(node.gpus.size());
  for (std::size_t i = 0; i < node.gpus.size(); ++i)
    order.push_back(
        {scorer_.score(req, total_of(node.gpus[i]), free_of(node.gpus[i])), node.gpus[i].minor, i});
  // sortDeviceResourcesByMinor: score high -> low, then minor ascending.
  std::sort(order.begin(), order.end(), [](const cand& a, const cand& b) {
    if (a.score != b.score) return a.score > b.score;
    return a.minor < b.minor;
  });
  std::vector<gpu_allocation> out;
  for (const auto& c : order) {
    const gpu_device& g = node.gpus[c.i];
    if (!fits(req, free_of(g))) continue;
    gpu_allocation a;
    a.minor = g.minor;
    a.core = req.has_core ? req.core : 0;
    // fillGPUTotalMem: record both memory forms.
    if (req.has_memory_ratio) {
      a.memory_ratio = req.memory_ratio;
      a.memory_bytes = memory_ratio_to_bytes(req.memory_ratio, g.memory_total_bytes);
    } else if (req.has_memory) {
      a.memory_bytes = req.memory_bytes;
      a.memory_ratio = memory_bytes_to_ratio(req.memory_bytes, g.memory_total_bytes);
    }
    out.push_back(a);
    if (static_cast<std::int64_t>(out.size()) == req.count) break;
  }
  if (static_cast<std::int64_t>(out.size()) < req.count)
    return fail(errc::failed_precondition, std::string(err_insufficient_gpu));
  return out;
}

status device_share::filter(cycle_state& st, const pod_info& pod, const node_info& node,
                            event_time) {
  auto& s = state_of(st, pod);
  if (s.skip) return {};
  if (node.device_model) {
    auto a = allocate_joint(*s.request, node);
    if (a) return {};
    return status::unschedulable(intern_reason(a.error().message));
  }
  if (auto why = missing_device_reason(*s.request); !why.empty()) return status::unresolvable(why);
  if (node.gpus.empty()) return status::unresolvable(err_insufficient_gpu);
  // allocate() takes every device that fits (in score order) until it has req.count, so it
  // succeeds exactly when at least req.count devices fit: count them without allocating.
  // Stops at the req.count-th fitting device (count >= 1 by construction; guarded anyway).
  if (s.req.count <= 0) return {};
  std::int64_t fitting = 0;
  for (const auto& g : node.gpus)
    if (fits(s.req, free_of(g)) && ++fitting >= s.req.count) return {};
  return status::unschedulable(err_insufficient_gpu);
}

queueing_hint device_share::filter_hint(const pod_info& pod, const cluster_event& ev) const {
  if (ev.node == nullptr) return queueing_hint::queue;
  // The joint allocator's answer depends on topology and every device type: let Filter decide.
  if (ev.node->device_model) return queueing_hint::queue;
  auto r = requirements_of(pod);
  if (!r || !*r || (*r)->count <= 0) return queueing_hint::queue;
  std::int64_t fitting = 0;
  for (const auto& g : ev.node->gpus)
    if (fits(**r, free_of(g)) && ++fitting >= (*r)->count) return queueing_hint::queue;
  return queueing_hint::skip;
}

std::int64_t device_share::score(cycle_state& st, const pod_info& pod, const node_info& node,
                                 event_time) {
  auto& s = state_of(st, pod);
  if (s.skip || !s.has_gpu || node.gpus.empty()) return 0;
  // AutopilotAllocator.score: scoreNode over the summed totals and frees of the node's GPUs,
  // with the per-GPU request.
  device_amounts total, free;
  for (const auto& g : node.gpus) {
    auto t = total_of(g);
    auto f = free_of(g);
    total.core += t.core;
    total.memory += t.memory;
    total.memory_ratio += t.memory_ratio;
    free.core += f.core;
    free.memory += f.memory;
    free.memory_ratio += f.memory_ratio;
  }
  return scorer_.score(s.req, total, free);
}

bool device_share::normalize_score(cycle_state&, const pod_info&, std::span<std::int64_t> scores) {
  default_normalize_score(max_node_score, false, scores);
  return true;
}

status device_share::reserve(cycle_state& st, const pod_info& pod, const node_info& node,
                             event_time) {
  auto& s = state_of(st, pod);
  if (s.skip) return {};
  if (node.device_model) {
    auto a = allocate_joint(*s.request, node);
    if (!a) return status::unschedulable(intern_reason(a.error().message));
    st.gpu_allocations = device::to_gpu_allocations(*a);
    st.device_allocations.clear();
    for (auto& d : *a)
      if (d.type != device::device_type::gpu) st.device_allocations.push_back(std::move(d));
    return {};
  }
  if (auto why = missing_device_reason(*s.request); !why.empty()) return status::unschedulable(why);
  auto a = allocate(s.req, node);
  if (!a) return status::unschedulable(err_insufficient_gpu);
  st.gpu_allocations = std::move(*a);
  return {};
}

}  // namespace colony::scheduler
