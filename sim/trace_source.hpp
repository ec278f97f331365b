// trace_source: an openb trace (node list + pod list) as observation events, the source that
// feeds `colony sim`'s components. It builds the events a cluster's API server would show:
// NodeRegistered for each node, PodSubmitted when a pod is created, PodFinished when its run
// time is over (or when the trace deletes it before it was placed), and the configuration in
// force (ConfigUpdated, QuotaUpserted). It decides nothing: admission, scheduling, binding and
// evictions come from the components over these events.
//
// Records are built with their source ("trace", or "sim" for configuration), entity kind and
// key and event time; the host numbers them.
// Thread-safety: none (one owner).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "bridges/trace/trace_set.hpp"
#include "messages/codec.hpp"
#include "sim/sim_config.hpp"

namespace colony::sim {

// Kubelet's default maxPods (openb nodes publish no pod capacity).
inline constexpr std::int64_t trace_pods_per_node = 110;
// The namespace of every trace pod, and the label that keeps the trace's qos column (profiles
// select on it).
inline constexpr std::string_view trace_pod_namespace = "default";
inline constexpr std::string_view trace_qos_label = "colony.sim/trace-qos";
// With numaTopology configured, a pod whose cpu request is whole CPUs carries this label
// ("true"), so a ClusterColocationProfile can make exactly those pods LSR (Koordinator refuses a
// cpuset pod with a fractional request: "the requested CPUs must be integer").
inline constexpr std::string_view whole_cpus_label = "colony.sim/whole-cpus";

class trace_source {
 public:
  // pods_per_node: every node's pod capacity. Default: trace_pods_per_node.
  trace_source(const trace::trace_set& t, const sim_config& cfg,
               std::int64_t pods_per_node = trace_pods_per_node)
      : trace_(t), cfg_(cfg), pods_per_node_(pods_per_node) {}

  // The configuration in force at time t: the slo-controller-config ConfigMap, the
  // ClusterColocationProfiles, the KubeSchedulerConfiguration, the ElasticQuotas (by name).
  [[nodiscard]] std::vector<messages::byte_buffer> configuration(std::int64_t t);
  // Node n of the node list registers (capacity = allocatable; pods pods_per_node; its GPUs; label
  // node.koordinator.sh/gpu-model).
  [[nodiscard]] messages::byte_buffer node_registered(std::int64_t t, std::uint32_t n);
  // Node n's NodeResourceTopology under the config's numaTopology (sim_config.hpp): the
  // cpu-topology annotation of its machine model and one zone per NUMA node (its CPUs, an even
  // share of its memory). nullopt without numaTopology, or for a node without a whole CPU.
  [[nodiscard]] std::optional<messages::byte_buffer> node_topology(std::int64_t t, std::uint32_t n);
  // Node n's Device object under the config's deviceTopology (sim_config.hpp), as ObjectObserved
  // keyed Device/<node>. nullopt without deviceTopology, or for a node without GPUs.
  [[nodiscard]] std::optional<messages::byte_buffer> node_devices(std::int64_t t, std::uint32_t n);
  // The spec of that Device object (JSON), for tests and docs.
  [[nodiscard]] std::string device_spec(std::uint32_t n) const;
  // Pod row p is created: one container with the row's requests (Guaranteed rows also get
  // limits = requests), the trace's qos as a label, its GPU models, the expected run time.
  [[nodiscard]] messages::byte_buffer pod_submitted(std::int64_t t, std::uint32_t p,
                                                    std::int64_t expected_duration_ms);
  // A pod that replaces row p's evicted pod under another name (its workload controller creates
  // it, as a ReplicaSet replaces a descheduled pod): row p's spec, `key` and `uid`.
  [[nodiscard]] messages::byte_buffer pod_resubmitted(std::int64_t t, std::uint32_t p,
                                                      std::int64_t expected_duration_ms,
                                                      std::string_view key, std::string_view uid);
  // Pod row p ends: its trace phase when it ran on `node`, Deleted when node is "" (the trace
  // deleted it before it was placed).
  [[nodiscard]] messages::byte_buffer pod_finished(std::int64_t t, std::uint32_t p,
                                                   std::string_view node);
  // The same for a pod of row p named `key` (a replacement).
  [[nodiscard]] messages::byte_buffer pod_finished(std::int64_t t, std::uint32_t p,
                                                   std::string_view node, std::string_view key);
  // The end of the run.
  [[nodiscard]] messages::byte_buffer end_of_trace(std::int64_t t);

  // "default/<name>" of pod row p.
  [[nodiscard]] std::string pod_key(std::uint32_t p) const;

 private:
  const trace::trace_set& trace_;
  const sim_config& cfg_;
  std::int64_t pods_per_node_;
  messages::event_builder b_;
};

}  // namespace colony::sim
