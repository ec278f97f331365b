#include "actors/scheduler/numa/cpuset_allocation.hpp"

#include <algorithm>
#include <string>

namespace colony::scheduler::numa {

cpu_set filter_cpus_by_required_cpu_bind_policy(cpu_bind_policy policy, const cpu_set& available,
                                                const cpu_topology& topology) {
  if (policy != cpu_bind_policy::full_pcpus && policy != cpu_bind_policy::spread_by_pcpus)
    return available;
  cpu_set out;
  for (int core = 0; core < topology.num_cores(); ++core) {
    int free = 0;
    int first = -1;
    const auto* b = topology.core_cpus_begin(core);
    const auto* e = topology.core_cpus_end(core);
    for (const auto* c = b; c != e; ++c) {
      if (!available.contains(topology.cpu_id_at(*c))) continue;
      ++free;
      if (first < 0) first = topology.cpu_id_at(*c);
    }
    if (policy == cpu_bind_policy::spread_by_pcpus) {
      if (first >= 0) out.insert(first);
    } else if (free == static_cast<int>(e - b)) {
      for (const auto* c = b; c != e; ++c) out.insert(topology.cpu_id_at(*c));
    }
  }
  return out;
}

result<void> satisfied_required_cpu_bind_policy(cpu_bind_policy policy, const cpu_set& cpus,
                                                const cpu_topology& topology) {
  if (policy != cpu_bind_policy::full_pcpus && policy != cpu_bind_policy::spread_by_pcpus)
    return {};
  // details.KeepOnly(cpus): CPUs the topology lacks count in neither cores nor size.
  std::vector<char> seen(static_cast<std::size_t>(topology.num_cores()), 0);
  int cores = 0;
  cpus.for_each([&](int id) {
    const int i = topology.index_of(id);
    if (i < 0) return;
    auto& s = seen[static_cast<std::size_t>(topology.core_index(i))];
    if (!s) {
      s = 1;
      ++cores;
    }
  });
  // determineFullPCPUs / determineSpreadByPCPUs compare against the whole set's size.
  const bool ok = policy == cpu_bind_policy::full_pcpus
                      ? cores * topology.cpus_per_core() == cpus.size()
                      : cores == cpus.size();
  if (ok) return {};
  return fail(errc::failed_precondition, "insufficient CPUs to satisfy required cpu bind policy " +
                                             std::string(to_string(policy)));
}

result<cpu_set> allocate_cpuset(const cpu_topology& topology, const cpu_set& available,
                                std::span<const allocated_cpu> allocated,
                                const cpuset_request& request) {
  cpu_set candidates = available;
  if (request.required)
    candidates = filter_cpus_by_required_cpu_bind_policy(request.policy.bind, candidates, topology);
  if (candidates.size() < request.num_cpus_needed)
    return fail(errc::failed_precondition, std::string(err_not_enough_cpus));

  cpu_set out;
  int needed = request.num_cpus_needed;
  if (!request.numa_nodes.empty()) {
    for (const auto& share : request.numa_nodes) {
      const auto in_node = candidates.intersection(topology.cpus_in_numa_node(share.node));
      const int n = std::min(share.cpus, in_node.size());
      auto cpus =
          take_preferred_cpus(topology, in_node, request.preferred, allocated, n, request.policy);
      if (!cpus) return cpus;
      out = out.union_with(*cpus);
    }
    needed -= out.size();
    if (needed != 0) return fail(errc::failed_precondition, std::string(err_not_enough_cpus));
  }
  if (needed > 0) {
    auto rest = take_preferred_cpus(topology, candidates.difference(out), request.preferred,
                                    allocated, needed, request.policy);
    if (!rest) return rest;
    out = out.union_with(*rest);
  }
  if (request.required) {
    auto ok = satisfied_required_cpu_bind_policy(request.policy.bind, out, topology);
    if (!ok) return tl::unexpected(ok.error());
  }
  return out;
}

}  // namespace colony::scheduler::numa
