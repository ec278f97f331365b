// The validating webhook's QoS / priority rules for pods
// (pkg/webhook/pod/validating/cluster_colocation_profile.go).
//
// All checks read the Raw QoS (label) and the Raw priority class. On Create:
//   - a pod whose request (get_pod_request) has batch-cpu or batch-memory must be QoS BE;
//   - BE is forbidden with priority class None or Prod;
//   - LSR is forbidden with None, Mid, Batch or Free (LSR needs Prod);
//   - LSR and LSE pods need a non-zero, whole-core cpu request.
// On Update, first: the QoS label, the raw priority class and (unless
// skip_validating_priority) the koordinator.sh/priority label are immutable.
// Errors carry Kubernetes' field.Error text, and reason() joins them as
// field.ErrorList.ToAggregate().Error() does, so messages match Koordinator's byte for byte.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "actors/admission/pod_spec.hpp"

namespace colony::admission {

enum class admission_operation : std::uint8_t { create, update };

// k8s.io/apimachinery/pkg/util/validation/field.Error, the three kinds used here.
enum class field_error_type : std::uint8_t { required, forbidden, invalid };

struct field_error {
  field_error_type type = field_error_type::invalid;
  std::string field;      // e.g. "labels.koordinator.sh/qosClass"
  std::string bad_value;  // for invalid: the value, printed quoted
  std::string detail;

  // "<field>: Required value: <detail>", "<field>: Forbidden: <detail>",
  // "<field>: Invalid value: \"<value>\": <detail>".
  [[nodiscard]] std::string message() const;
  bool operator==(const field_error&) const = default;
};

struct validation_result {
  std::vector<field_error> errors;  // in Koordinator's check order

  [[nodiscard]] bool allowed() const { return errors.empty(); }
  // ToAggregate().Error(): "" when allowed, the message for one error, "[a, b]" for several
  // (duplicates dropped).
  [[nodiscard]] std::string reason() const;
};

struct validating_options {
  // Default: false (feature gate ColocationProfileSkipValidatingPriority,
  // pkg/features/features.go).
  bool skip_validating_priority = false;
};

// clusterColocationProfileValidatingPod. old_pod is read on update only (nullptr otherwise).
[[nodiscard]] validation_result validate_cluster_colocation_profile_pod(
    admission_operation op, const pod_spec& new_pod, const pod_spec* old_pod,
    const validating_options& options = {});

}  // namespace colony::admission
