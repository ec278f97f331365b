// The node.koordinator.sh/extended-resource-spec annotation
// (pkg/webhook/pod/mutating/extended_resource_spec.go, apis/extension/resource.go).
//
// After the profile step of pod Create, Koordinator records the batch-cpu / batch-memory
// requests and limits of every regular container (not init containers, not overhead) as JSON,
// for koordlet to size BE cgroups:
//   {"containers":{"<name>":{"limits":{"kubernetes.io/batch-cpu":"1k",...},"requests":{...}}}}
// Keys are sorted and empty parts omitted, as Go's encoding/json writes them; no batch
// resources at all gives "{}". Quantities use Kubernetes' canonical strings
// (messages/quantity.hpp):
// batch-cpu is a DecimalSI count of milli-cores ("500", "1k"), batch-memory keeps whichever of
// BinarySI/DecimalSI is shorter, since Colony does not keep the pod's original format.
#pragma once

#include <string>

#include "actors/admission/pod_spec.hpp"
#include "messages/result.hpp"

namespace colony::admission {

inline constexpr std::string_view annotation_extended_resource_spec =
    "node.koordinator.sh/extended-resource-spec";

// The annotation value for `pod`.
[[nodiscard]] std::string extended_resource_spec_json(const pod_spec& pod);

// mutateByExtendedResources: writes the annotation unless it would not change. Koordinator
// compares the parsed old and new specs; Colony compares the text, so an equal spec written in
// another spelling is rewritten (same meaning). An existing annotation that is not valid JSON
// fails the admission (invalid_input), as in Koordinator. Returns whether the pod changed.
[[nodiscard]] result<bool> mutate_by_extended_resources(pod_spec& pod);

}  // namespace colony::admission
