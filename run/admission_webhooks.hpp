// admission_webhooks: the answers behind colony run's admission webhooks
// (run/webhook_server.hpp serves them over HTTPS): each AdmissionReview is put to the control
// plane's own components, never to a policy directly:
//   /mutate-pod, /validate-pod    the colocation-profile component
//                                 (actors/admission/actor/colocation_profile_component.hpp)
//   /validate-...-elasticquota    the ElasticQuota webhook component
//                                 (actors/quota/actor/quota_webhook_component.hpp)
// The bridge's codec (bridges/kubernetes/admission_review.hpp) reads the review and turns the
// object into the observation event the component reads, and a PodMutated into a JSONPatch.
//
// State: these components are instances of their own, fed every record the run loop reads
// (feed(): ConfigUpdated for profiles and PriorityClasses, quotas, pods), so they answer from
// the state the log gives; the host's instances run on CAF threads and are not shared. Nothing
// a review decides is appended to the log: the apiserver's outcome (the pod as created, the
// quota as stored) comes back through the informers like any object, and the host's admission
// component then decides PodMutated from it as before (docs/operating.md "Admission webhooks").
//
// Thread-safety: feed() and serve() may be called from any thread; one mutex serialises them
// (a review takes tens of microseconds).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>

#include "messages/codec.hpp"

namespace colony::admission_actor {
class colocation_profile_component;
}
namespace colony::quota {
class quota_webhook_component;
}

namespace colony::run {

struct webhook_answer {
  int status = 200;  // HTTP status: 200 with a review, 400 unreadable, 404 unknown path
  std::string body;  // the AdmissionReview JSON, or a plain-text reason
  std::string content_type = "application/json";
};

class admission_webhooks {
 public:
  // elastic_quota: whether the ElasticQuota webhook answers (404 otherwise).
  explicit admission_webhooks(bool elastic_quota = true);
  ~admission_webhooks();
  admission_webhooks(const admission_webhooks&) = delete;
  admission_webhooks& operator=(const admission_webhooks&) = delete;

  // One record of the log, in log order. REQUIRES: a verified Envelope.
  void feed(messages::bytes_view record);
  // One POST to `path` with `body`.
  [[nodiscard]] webhook_answer serve(std::string_view path, std::string_view body);

  // Reviews answered (allowed or refused) and answers of HTTP 400/404.
  [[nodiscard]] std::uint64_t reviews() const noexcept { return reviews_.load(); }
  [[nodiscard]] std::uint64_t refused() const noexcept { return refused_.load(); }
  [[nodiscard]] std::uint64_t unreadable() const noexcept { return unreadable_.load(); }

 private:
  std::mutex mu_;
  std::unique_ptr<admission_actor::colocation_profile_component> admission_;
  std::unique_ptr<quota::quota_webhook_component> quota_;
  std::atomic<std::uint64_t> reviews_{0}, refused_{0}, unreadable_{0};
};

}  // namespace colony::run
