// quota_profile_component: koord-manager's ElasticQuotaProfile controller as a component
// (actors/entities/component.hpp), named "koord-manager/quota-profile".
//
// Koordinator: pkg/quota-controller/profile/profile_controller.go (QuotaProfileReconciler): each
// ElasticQuotaProfile owns the root quota of one quota tree, named spec.quotaName in the
// profile's namespace, whose min is the allocatable of the nodes spec.nodeSelector matches
// (times spec.resourceRatio) and whose labels carry the tree id, is-root and the profile.
//
// What it does: keeps the profiles (ObjectObserved of kind ElasticQuotaProfile, as the
// Kubernetes source records them and the sim writes its config's), the nodes (NodeRegistered,
// NodeConditionChanged, NodeRemoved) and the quotas as last seen (QuotaUpserted, QuotaDeleted).
// At the end of every batch that changed any of them it reconciles every profile
// (reconcile_quota_profile, actors/quota/webhook.hpp) and emits one QuotaUpserted for each
// profile whose root quota differs from the quota as last seen or emitted, in profile-key order.
// Koordinator's controller requeues every 10 s; over a log, a reconcile can only change when one
// of its inputs did, so the component reconciles on change.
//
// Choices: a profile's annotations are not in ObjectObserved, so the resource-keys annotation
// reads as absent (cpu and memory, Koordinator's default). A deleted profile leaves its quota in
// place (Koordinator's controller does not delete it either). A profile that does not reconcile
// (an invalid selector) is kept out and its error is in errors() until it changes.
//
// Envelope of each emission: kind ElasticQuota, key = quota name, time = the latest event time
// seen, causation = the offset of the batch's last event that changed an input.
// Determinism: profiles by key, nodes by name. Thread-safety: none (one owner).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "actors/entities/component.hpp"
#include "actors/quota/webhook.hpp"
#include "messages/result.hpp"

namespace colony::quota {

inline constexpr std::string_view kind_elastic_quota_profile = "ElasticQuotaProfile";

struct quota_profile_component_options {
  // Default: "koord-manager/quota-profile".
  std::string name = "koord-manager/quota-profile";
};

class quota_profile_component final : public entities::component {
 public:
  explicit quota_profile_component(quota_profile_component_options opts = {});

  [[nodiscard]] std::string_view name() const override { return opts_.name; }
  [[nodiscard]] bool wants(wire::Payload type) const override;
  void on_event(const wire::Envelope& env, std::vector<messages::byte_buffer>& out) override;
  void on_batch_end(std::vector<messages::byte_buffer>& out) override;

  // Inspection (tests): the profiles held, by "namespace/name", and the errors of the last
  // reconcile (one per profile that failed, naming it).
  [[nodiscard]] const std::map<std::string, elastic_quota_profile, std::less<>>& profiles() const {
    return profiles_;
  }
  [[nodiscard]] const std::vector<error>& errors() const { return errors_; }

 private:
  void observe_profile(const wire::ObjectObserved& o);

  quota_profile_component_options opts_;
  std::map<std::string, elastic_quota_profile, std::less<>> profiles_;
  std::map<std::string, profile_node, std::less<>> nodes_;
  std::map<std::string, quota_spec, std::less<>> quotas_;   // as last seen in the log
  std::map<std::string, quota_spec, std::less<>> emitted_;  // as this component last wrote it
  std::vector<error> errors_;
  event_time now_{0};
  std::int64_t cause_ = -1;
  bool dirty_ = false;
  messages::event_builder b_;
};

// Whether two quota specs are the same object as far as the controller writes it (name,
// namespace, labels, annotations, min and max with their keys).
[[nodiscard]] bool same_root_quota(const quota_spec& a, const quota_spec& b);

}  // namespace colony::quota
