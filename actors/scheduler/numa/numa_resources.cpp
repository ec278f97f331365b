#include "actors/scheduler/numa/numa_resources.hpp"

#include <algorithm>
#include <bit>
#include <map>

#include "actors/scheduler/resource_amplification.hpp"

namespace colony::scheduler::numa {

namespace {

enum class res : std::uint8_t { cpu, memory };
constexpr res both[] = {res::cpu, res::memory};

std::int64_t& at(numa_amount& a, res r) { return r == res::cpu ? a.cpu_milli : a.memory_bytes; }
std::int64_t get(const numa_amount& a, res r) {
  return r == res::cpu ? a.cpu_milli : a.memory_bytes;
}
std::int64_t get(const numa_request& q, res r) {
  return r == res::cpu ? q.cpu_milli : q.memory_bytes;
}
std::string_view name(res r) { return r == res::cpu ? "cpu" : "memory"; }

const numa_amount* find(std::span<const numa_amount> v, int node) {
  for (const auto& a : v)
    if (a.node == node) return &a;
  return nullptr;
}

// Quantity.Value(): whole units, rounded up.
std::int64_t whole_cpus(std::int64_t milli) { return (milli + 999) / 1000; }

// splitQuantity.
std::int64_t split_quantity(res r, std::int64_t q, std::int64_t count,
                            const numa_split_options& o) {
  if (r == res::memory) return q / count;
  if (!o.request_cpu_bind) return q / count;
  if (o.required_cpu_bind && o.bind == cpu_bind_policy::full_pcpus) {
    const std::int64_t per_core = std::max(1, o.cpus_per_core);
    const std::int64_t pcpus = whole_cpus(q) / per_core;
    return pcpus / count * per_core * 1000;
  }
  return whole_cpus(q) / count * 1000;
}

// The resources the NUMA nodes report (a ResourceList key): Colony counts one as present when a
// NUMA node has some of it allocatable.
bool present(std::span<const numa_amount> allocatable, res r) {
  return std::any_of(allocatable.begin(), allocatable.end(),
                     [&](const numa_amount& a) { return get(a, r) > 0; });
}

}  // namespace

std::vector<int> numa_mask_ids(std::uint64_t mask) {
  std::vector<int> ids;
  while (mask != 0) {
    ids.push_back(std::countr_zero(mask));
    mask &= mask - 1;
  }
  return ids;
}

std::vector<numa_amount> available_numa_resources(std::span<const numa_amount> allocatable,
                                                  std::span<const numa_amount> allocated,
                                                  std::span<const int> cpuset_cpus_by_node,
                                                  double cpu_amplification_ratio,
                                                  std::vector<numa_amount>* allocated_out) {
  std::vector<numa_amount> out;
  out.reserve(allocatable.size());
  if (allocated_out != nullptr) allocated_out->clear();
  for (const auto& a : allocatable) {
    numa_amount avail = a;
    if (const auto* held = find(allocated, a.node)) {
      numa_amount h = *held;
      if (cpu_amplification_ratio > 1) {
        const std::size_t id = static_cast<std::size_t>(a.node);
        const std::int64_t cpuset_milli =
            id < cpuset_cpus_by_node.size() ? std::int64_t{cpuset_cpus_by_node[id]} * 1000 : 0;
        h.cpu_milli = h.cpu_milli - cpuset_milli + amplify(cpuset_milli, cpu_amplification_ratio);
      }
      avail.cpu_milli = std::max<std::int64_t>(0, a.cpu_milli - h.cpu_milli);
      avail.memory_bytes = std::max<std::int64_t>(0, a.memory_bytes - h.memory_bytes);
      if (allocated_out != nullptr) allocated_out->push_back(h);
    } else if (allocated_out != nullptr) {
      allocated_out->push_back(numa_amount{a.node, 0, 0});
    }
    out.push_back(avail);
  }
  return out;
}

result<std::vector<numa_amount>> distribute_evenly(const numa_request& request,
                                                   std::span<const numa_amount> allocatable,
                                                   std::span<const numa_amount> available,
                                                   std::span<const int> hint_nodes,
                                                   const numa_split_options& split) {
  auto avail_of = [&](int id, res r) -> std::int64_t {
    const auto* a = find(available, id);
    return a ? get(*a, r) : 0;
  };
  std::map<int, numa_amount> allocated;
  std::string reasons;
  const auto n = static_cast<std::int64_t>(hint_nodes.size());
  for (res r : both) {
    if (!present(allocatable, r)) continue;  // not a NUMA resource of this node
    std::vector<int> sorted(hint_nodes.begin(), hint_nodes.end());
    // sort.Slice's insertion sort, with Koordinator's less(i, j) reading the availability of
    // NUMA node ids i and j, which are positions in the slice.
    for (std::size_t i = 1; i < sorted.size(); ++i)
      for (std::size_t j = i;
           j > 0 && avail_of(static_cast<int>(j), r) < avail_of(static_cast<int>(j - 1), r); --j)
        std::swap(sorted[j], sorted[j - 1]);
    std::int64_t q = get(request, r);
    for (std::size_t i = 0; i < sorted.size() && q > 0; ++i) {
      const std::int64_t share = split_quantity(r, q, n - static_cast<std::int64_t>(i), split);
      const std::int64_t got = std::min(avail_of(sorted[i], r), share);
      if (got != 0) {
        auto& a = allocated[sorted[i]];
        a.node = sorted[i];
        at(a, r) = got;
        q -= got;
      }
    }
    if (q != 0)
      reasons += (reasons.empty() ? "" : ", ") + ("Insufficient NUMA " + std::string(name(r)));
  }
  if (!reasons.empty()) return fail(errc::failed_precondition, reasons);
  std::vector<numa_amount> out;
  for (auto& [id, a] : allocated) out.push_back(a);
  return out;
}

provider_hints generate_numa_hints(
    std::span<const numa_amount> allocatable, std::span<const numa_amount> available,
    const numa_request& request, numa_topology_policy policy,
    const std::function<std::int64_t(const numa_amount& requested, const numa_amount& total)>&
        score,
    const std::function<bool(std::uint64_t mask)>& try_allocate) {
  std::vector<int> ids;
  for (const auto& a : allocatable) ids.push_back(a.node);
  std::vector<res> requested;  // the request's resource names
  for (res r : both)
    if (get(request, r) > 0) requested.push_back(r);
  std::uint64_t lack[2] = {0, 0};  // per resource: NUMA nodes with none of it available
  for (res r : both)
    if (present(allocatable, r))
      for (const auto& a : allocatable) {
        const auto* av = find(available, a.node);
        if (av == nullptr || get(*av, r) == 0)
          lack[static_cast<int>(r)] |= std::uint64_t{1} << a.node;
      }
  int min_size[2] = {static_cast<int>(ids.size()), static_cast<int>(ids.size())};
  bool has_hints[2] = {false, false};
  std::vector<numa_hint> hints[2];
  bool named[2] = {false, false};  // totalResourceNames
  for (const std::uint64_t mask : numa_masks_of(ids)) {
    numa_amount avail, total;
    for (const int id : numa_mask_ids(mask)) {
      if (const auto* a = find(available, id)) {
        avail.cpu_milli += a->cpu_milli;
        avail.memory_bytes += a->memory_bytes;
      }
      if (const auto* t = find(allocatable, id)) {
        total.cpu_milli += t->cpu_milli;
        total.memory_bytes += t->memory_bytes;
      }
    }
    for (res r : requested)
      if (present(allocatable, r)) named[static_cast<int>(r)] = true;
    numa_amount used{0, std::max<std::int64_t>(0, total.cpu_milli - avail.cpu_milli),
                     std::max<std::int64_t>(0, total.memory_bytes - avail.memory_bytes)};
    const std::int64_t s = score(used, total);
    if (!try_allocate(mask)) continue;
    for (res r : both) {
      const int k = static_cast<int>(r);
      if (!named[k]) continue;
      if ((mask & lack[k]) != 0) continue;
      min_size[k] = std::min(min_size[k], std::popcount(mask));
      hints[k].push_back(numa_hint{mask, false, false, s});
      has_hints[k] = true;
    }
  }
  provider_hints out;
  for (res r : requested) {
    const int k = static_cast<int>(r);
    for (auto& h : hints[k])
      h.preferred =
          std::popcount(*h.affinity) == min_size[k] || policy == numa_topology_policy::restricted;
    if (has_hints[k] || named[k]) out.emplace_back(std::string(name(r)), std::move(hints[k]));
  }
  return out;
}

}  // namespace colony::scheduler::numa
