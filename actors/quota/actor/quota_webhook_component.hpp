// quota_webhook_component: Koordinator's ElasticQuota validating webhook
// (pkg/webhook/elasticquota/validating/validating_handler.go over quota_topology.go and
// quota_topology_check.go) as a component over the log.
//
// Consumes (emits nothing: the webhook's answers go to the apiserver, whose outcome comes back
// through the informers as QuotaUpserted / QuotaDeleted):
//   QuotaUpserted / QuotaDeleted   the topology, as Koordinator's informer handlers keep it
//                                  (quota_handler.go OnQuotaAdd/Update/Delete): observations
//                                  only, since a component's QuotaUpserted is not yet an object;
//   PodSubmitted                   the pod's quota label (quota.scheduling.koordinator.sh/name);
//   PodScheduled                   the pod is bound;
//   PodFinished / PodEvicted       the pod is gone.
// review() answers one AdmissionReview's ElasticQuota against that state: ValidAddQuota,
// ValidUpdateQuota or ValidDeleteQuota, on a copy (the topology changes only through the log:
// an object the apiserver then fails to store leaves no trace here).
//
// Thread-safety: none (one owner; colony run's webhook server calls it under a mutex).
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

struct quota_webhook_options {
  // Default: "koord-manager/elastic-quota-webhook" (Koordinator serves it from koord-manager).
  std::string name = "koord-manager/elastic-quota-webhook";
  webhook_features features;
};

enum class quota_operation : std::uint8_t { create, update, del };

class quota_webhook_component final : public entities::component {
 public:
  explicit quota_webhook_component(quota_webhook_options opts = {});

  [[nodiscard]] std::string_view name() const override { return opts_.name; }
  [[nodiscard]] bool wants(wire::Payload type) const override;
  void on_event(const wire::Envelope& env, std::vector<messages::byte_buffer>& out) override;

  // The webhook's answer for one ElasticQuota: ok, or Koordinator's refusal (code
  // invalid_input / failed_precondition / already_exists / not_found, message, where = the
  // field). REQUIRES: object set for create and update, old_object for update and delete.
  [[nodiscard]] result<void> review(quota_operation op, const wire::QuotaUpserted* object,
                                    const wire::QuotaUpserted* old_object) const;

  [[nodiscard]] const quota_topology& topology() const { return topology_; }

 private:
  struct pod_entry {
    std::string quota;  // label quota.scheduling.koordinator.sh/name; "" when absent
    bool bound = false;
  };
  [[nodiscard]] std::size_t pods_of(std::string_view quota, bool bound_only) const;

  quota_webhook_options opts_;
  quota_topology topology_;
  std::map<std::string, pod_entry, std::less<>> pods_;  // by "namespace/name"
};

}  // namespace colony::quota
