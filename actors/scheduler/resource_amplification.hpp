// resource_amplification.hpp: the node resource amplification that CPU normalization feeds
// (node.koordinator.sh/resource-amplification-ratio, written by koord-manager's
// resourceamplification plugin), as the scheduler sees it.
//
// Koordinator does not amplify in the scheduler's NodeResourcesFit: its node webhook
// (pkg/webhook/node/plugins/resourceamplification/resource_amplification.go handleUpdate)
// rewrites status.allocatable of cpu and memory to MultiplyMilliQuant(raw, ratio) whenever the
// annotation is set, and keeps the raw values in node.koordinator.sh/raw-allocatable. Every
// scheduler plugin then reads the amplified allocatable; LoadAware reads the raw one. Colony has
// no webhook between the node's observation and the scheduler, so the scheduler applies the same
// rule when it takes in a node (amplified_allocatable), and keeps raw cpu/memory in
// node_info::raw_allocatable.
//
// CPU-bind (cpuset) pods occupy whole physical CPUs, which the ratio does not enlarge:
// NodeNUMAResource's filterAmplifiedCPUs (pkg/scheduler/plugins/nodenumaresource/plugin.go)
// amplifies such a pod's cpu request, and the cpu the node's cpuset pods already hold, before it
// compares with the amplified allocatable (filter_amplified_cpus). NodeResourcesFit itself
// compares the plain request with the amplified allocatable, for every pod.
// Pure; thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "messages/names.hpp"
#include "messages/resources.hpp"
#include "messages/result.hpp"

namespace colony::scheduler {

using names::annotation_resource_amplification_ratio;

// The ratios the webhook applies (supportedResources: cpu, memory); <= 1 (or absent: -1) = none.
struct amplification_ratios {
  double cpu = -1;
  double memory = -1;
  bool operator==(const amplification_ratios&) const = default;
  [[nodiscard]] bool any() const noexcept { return cpu > 1 || memory > 1; }
};

// GetNodeResourceAmplificationRatios: the annotation's JSON object ({"cpu":1.20,...}); other
// resources are ignored; a malformed value is an error naming the annotation.
[[nodiscard]] result<amplification_ratios> parse_amplification_ratios(std::string_view annotation);

// The amplification ratios a slo-controller metadata patch (the meta.annotationsPatch term of
// NodeBatchResourceUpdated: a JSON merge patch of the node's annotations) sets; nullopt when it
// does not name the annotation. null (removed) or a malformed value: no amplification.
[[nodiscard]] std::optional<amplification_ratios> amplification_from_patch(std::string_view patch);

// extension.Amplify: ceil(origin * ratio) when ratio > 1, else origin.
[[nodiscard]] std::int64_t amplify(std::int64_t origin, double ratio) noexcept;

// The webhook's handleUpdate over raw (un-amplified) allocatable: cpu and memory become
// util.MultiplyMilliQuant(raw, ratio) where the ratio is above 1 (cpu: int64(milli * ratio);
// memory: that product in milli-bytes, rounded up to bytes as Quantity.Value() does); the other
// resources are left as they are.
[[nodiscard]] resource_list amplified_allocatable(const resource_list& raw,
                                                  const amplification_ratios& r) noexcept;

// filterAmplifiedCPUs: whether a pod fits the node's amplified cpu. request_cpu_bind: the pod
// gets a cpuset (its request is amplified); allocated_cpuset_milli: the cpus that cpuset pods
// hold on the node (1000 per cpu), counted amplified in the node's requested cpu. A ratio <= 1 or
// a request of 0 always fits.
[[nodiscard]] bool fits_amplified_cpus(std::int64_t pod_request_milli, bool request_cpu_bind,
                                       double cpu_ratio, std::int64_t node_allocatable_milli,
                                       std::int64_t node_requested_milli,
                                       std::int64_t allocated_cpuset_milli) noexcept;

}  // namespace colony::scheduler
