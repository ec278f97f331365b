// colocation_profile_component: Koordinator's pod mutating + validating webhooks for
// ClusterColocationProfile (pkg/webhook/pod/mutating/cluster_colocation_profile.go,
// pkg/webhook/pod/validating/cluster_colocation_profile.go) as a component over the log.
//
// Consumes:
//   ConfigUpdated kind "ClusterColocationProfile": spec_json holds one profile or a List, as
//     JSON or YAML (the sim writes its profiles file there); each profile is upserted by name.
//     deleted=true erases the profile named `name`. A document that fails to parse changes
//     nothing and is recorded in config_errors().
//   ConfigUpdated kind "PriorityClass": spec_json holds PriorityClass objects (merged by name).
//   PodSubmitted: runs mutate_pod_on_create (seeded deterministic probability draw, see
//     colocation_profile.hpp), then the validating webhook on the mutated pod.
// Emits (keyed by the pod, causation = the PodSubmitted's offset, same shapes as sim/driver):
//   PodMutated with the profiles applied, QoS / priority class / priority and requests after
//     translation into batch-* / mid-*; or PodRejected with the error and the field it names.
//
// The probability draws that chose the profiles are kept per pod in last_decisions(): PodMutated
// has no Term list to carry them (see the report: `inputs:[Term] (id: 11)` is proposed).
// Single-threaded; deterministic: the same events in the same order give the same bytes.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "actors/admission/colocation_profile.hpp"
#include "actors/admission/validation.hpp"
#include "actors/entities/component.hpp"
#include "messages/result.hpp"

namespace colony::admission_actor {

inline constexpr std::string_view config_kind_profile = "ClusterColocationProfile";
inline constexpr std::string_view config_kind_priority_class = "PriorityClass";

struct colocation_profile_options {
  // Default: "admission" (the source the sim writes, so both logs carry the same events).
  std::string name = "admission";
  admission::mutating_options mutating;  // seed and feature gates
  admission::validating_options validating;
  // Default: true (Koordinator runs the validating webhook after the mutating one).
  bool validate = true;
  admission::priority_class_table priority_classes;
};

class colocation_profile_component final : public entities::component {
 public:
  colocation_profile_component(admission::profile_set profiles, colocation_profile_options opt);

  // Profiles and PriorityClasses from YAML files (kubectl's shape, see profile_loader.hpp).
  [[nodiscard]] static result<colocation_profile_component> from_files(
      const std::vector<std::string>& profile_files,
      const std::vector<std::string>& priority_class_files, colocation_profile_options opt);

  [[nodiscard]] std::string_view name() const override { return opt_.name; }
  [[nodiscard]] bool wants(wire::Payload type) const override;
  void on_event(const wire::Envelope& env, std::vector<messages::byte_buffer>& out) override;

  // The synchronous entry of colony run's admission webhooks (run/webhook_server.hpp): one
  // pod of an AdmissionReview, as the PodSubmitted the bridge builds from it, answered from
  // the state the log gave.
  //   mutate_create    /mutate-pod: on_event's answer, PodMutated or PodRejected, into out.
  //   validate_create  /validate-pod CREATE: the validating webhook's checks on the pod as
  //                    the apiserver holds it after mutation; a PodRejected or nothing.
  //   validate_update  /validate-pod UPDATE: the update checks against `old` (REQUIRES: set).
  enum class review_mode : std::uint8_t { mutate_create, validate_create, validate_update };
  void review(review_mode mode, const wire::Envelope& submitted, const wire::PodSubmitted* old,
              std::vector<messages::byte_buffer>& out);

  [[nodiscard]] const admission::profile_set& profiles() const { return profiles_; }
  [[nodiscard]] const admission::priority_class_table& priority_classes() const {
    return opt_.priority_classes;
  }
  // Configuration events refused, in log order (where = "log offset N").
  [[nodiscard]] const std::vector<error>& config_errors() const { return config_errors_; }
  // The matched profiles of the last admitted pod, with their draws.
  [[nodiscard]] const std::vector<admission::profile_decision>& last_decisions() const {
    return last_decisions_;
  }

  // The pod_spec admission reads from a PodSubmitted: key "namespace/name", one container
  // "main" carrying the pod-level requests and limits (see pod_spec.hpp).
  [[nodiscard]] static admission::pod_spec pod_from_event(const wire::PodSubmitted& e);

 private:
  void on_config(const wire::Envelope& env, const wire::ConfigUpdated& c);
  void on_submitted(const wire::Envelope& env, const wire::PodSubmitted& e,
                    std::vector<messages::byte_buffer>& out);

  admission::profile_set profiles_;
  colocation_profile_options opt_;
  std::vector<error> config_errors_;
  std::vector<admission::profile_decision> last_decisions_;
  messages::event_builder b_;
};

}  // namespace colony::admission_actor
