#include "actors/scheduler/numa/node_numa_state.hpp"

#include <algorithm>
#include <map>
#include <set>

#include "actors/scheduler/resource_amplification.hpp"

namespace colony::scheduler::numa {

void node_numa_state::refresh() {
  const kubelet_cpu_manager_policy* kubelet =
      options && options->policy ? &*options->policy : nullptr;
  cpu_bind_policy = get_node_cpu_bind_policy(labels, kubelet);
  const numa_topology_policy kubelet_policy =
      options ? options->topology_policy : numa_topology_policy::none;
  topology_policy_error.clear();
  if (auto p = get_numa_topology_policy(labels, kubelet_policy)) {
    topology_policy = *p;
  } else {
    topology_policy = kubelet_policy;
    topology_policy_error = p.error().where + ": " + p.error().message;
  }
  topology_problem =
      options && !options->problems.empty() ? options->problems.front().describe() : std::string();
  numa_allocatable.clear();
  if (options)
    for (const auto& n : options->numa_node_cpus)
      numa_allocatable.push_back(numa_amount{n.node, amplify(n.cpu_milli, cpu_amplification_ratio),
                                             amplify(n.memory_bytes, memory_amplification_ratio)});
}

namespace {

// numa_held += sign x shares, kept sorted by node id.
void add_to(std::vector<numa_amount>& held, const std::vector<numa_amount>& shares, int sign) {
  for (const auto& a : shares) {
    auto it = std::lower_bound(held.begin(), held.end(), a.node,
                               [](const numa_amount& x, int id) { return x.node < id; });
    if (it == held.end() || it->node != a.node) it = held.insert(it, numa_amount{a.node, 0, 0});
    it->cpu_milli += sign * a.cpu_milli;
    it->memory_bytes += sign * a.memory_bytes;
  }
}

}  // namespace

void node_numa_state::add_numa(const std::string& pod_key, std::vector<numa_amount> shares) {
  for (const auto& p : numa_pods)
    if (p.first == pod_key) return;  // addPodAllocation: a pod already present stays as it is
  add_to(numa_held, shares, 1);
  numa_pods.emplace_back(pod_key, std::move(shares));
}

void node_numa_state::release_numa(std::string_view pod_key) {
  auto it = std::find_if(numa_pods.begin(), numa_pods.end(),
                         [&](const auto& p) { return p.first == pod_key; });
  if (it == numa_pods.end()) return;
  add_to(numa_held, it->second, -1);
  numa_pods.erase(it);
}

std::vector<numa_amount> node_numa_state::numa_allocated() const {
  std::map<int, numa_amount> sum;
  for (const auto& [key, shares] : numa_pods)
    for (const auto& a : shares) {
      auto& s = sum[a.node];
      s.node = a.node;
      s.cpu_milli += a.cpu_milli;
      s.memory_bytes += a.memory_bytes;
    }
  std::vector<numa_amount> out;
  for (const auto& [id, a] : sum) out.push_back(a);
  return out;
}

std::vector<int> node_numa_state::cpuset_cpus_by_numa_node() const {
  std::vector<int> out;
  const auto* topo = topology();
  if (topo == nullptr) return out;
  for (const auto& c : allocation.allocated()) {
    if (c.ref_count <= 0) continue;
    const auto* info = topo->find(c.cpu_id);
    if (info == nullptr || info->node_id < 0) continue;
    const auto id = static_cast<std::size_t>(info->node_id);
    if (out.size() <= id) out.resize(id + 1, 0);
    ++out[id];
  }
  return out;
}

std::vector<numa_node_status> node_numa_state::numa_status(int n) const {
  std::vector<numa_node_status> out(static_cast<std::size_t>(std::max(0, n)),
                                    numa_node_status::idle);
  const auto* topo = topology();
  if (topo == nullptr) return out;
  std::vector<bool> single(out.size(), false), shared(out.size(), false);
  for (const auto& [key, pod] : allocation.pods()) {
    std::set<int> used;
    pod.cpus.for_each([&](int cpu) {
      if (const auto* info = topo->find(cpu)) used.insert(info->node_id);
    });
    for (int id : used) {
      if (id < 0 || static_cast<std::size_t>(id) >= out.size()) continue;
      (used.size() > 1 ? shared : single)[static_cast<std::size_t>(id)] = true;
    }
  }
  for (std::size_t i = 0; i < out.size(); ++i)
    out[i] = shared[i]   ? numa_node_status::shared
             : single[i] ? numa_node_status::single
                         : numa_node_status::idle;
  return out;
}

}  // namespace colony::scheduler::numa
