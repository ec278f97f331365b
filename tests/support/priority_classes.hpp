// PriorityClass objects (scheduling.k8s.io/v1, multi-document YAML) for the Koordinator priority
// classes the co-location profiles name: koord-batch and koord-prod, each value inside its
// Koordinator band (batch 5000-5999, prod 9000-9999; apis/extension/priority.go).
#pragma once

#include <string_view>

namespace colony::testing {

inline constexpr std::string_view koord_batch_prod_priority_classes_yaml =
    R"(apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata:
  name: koord-batch
value: 5500
---
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata:
  name: koord-prod
value: 9500
)";

}  // namespace colony::testing
