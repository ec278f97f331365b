#include "actors/scheduler/numa/node_numa_state.hpp"

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
}

}  // namespace colony::scheduler::numa
