// AdmissionReview (admission.k8s.io/v1) for colony run's admission webhooks: decoding the
// apiserver's review, encoding the answer, and the Kubernetes side of each webhook's question
// and answer: the pod or ElasticQuota of a review as the observation event the components read
// (the bridge's own translation, translate.hpp), and a PodMutated decision as the RFC 6902
// JSONPatch the apiserver applies.
//
// k8s.io/api/admission/v1 types.go: AdmissionReview{apiVersion, kind, request, response};
// AdmissionRequest{uid, kind, resource, subResource, operation, namespace, name, object,
// oldObject, dryRun}; AdmissionResponse{uid, allowed, status, patch (base64), patchType
// "JSONPatch", warnings}. The webhook server (run/webhook_server.hpp) answers HTTP 400 for a
// review it cannot read; every other refusal is an answer with allowed=false and a
// metav1.Status{code, message} that kubectl prints after 'admission webhook "..." denied the
// request: '.
//
// Pure functions: no I/O, no clock (event time is an argument). Thread-safety: reentrant.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "colony_generated.h"
#include "messages/codec.hpp"
#include "messages/result.hpp"

namespace colony::kube {

inline constexpr std::string_view admission_api_version = "admission.k8s.io/v1";
inline constexpr std::string_view admission_review_kind = "AdmissionReview";

struct admission_request {
  std::string uid;
  std::string kind_group, kind_version, kind;  // request.kind: the object's GroupVersionKind
  std::string resource;                        // request.resource.resource ("pods")
  std::string sub_resource;
  std::string operation;  // CREATE | UPDATE | DELETE | CONNECT
  std::string name_space;
  std::string name;
  nlohmann::json object;      // null when absent (DELETE)
  nlohmann::json old_object;  // null when absent (CREATE)
  bool dry_run = false;
};

// invalid_input (where = the field) when the body is not JSON, not an AdmissionReview of
// admission.k8s.io/v1, has no request, or the request has no uid / kind / operation.
[[nodiscard]] result<admission_request> decode_admission_review(std::string_view body);

struct admission_response {
  std::string uid;
  bool allowed = true;
  int code = 0;            // status.code of a refusal: 400 unreadable object, 403 refused
  std::string message;     // status.message of a refusal
  std::string json_patch;  // RFC 6902 array as JSON text; "" = no patch
};

// The AdmissionReview answer the apiserver reads (patch base64-encoded, patchType JSONPatch).
[[nodiscard]] std::string encode_admission_review(const admission_response& r);

// A refusal: code 400 for invalid_input, 403 otherwise; the message names the field when the
// error's message does not already.
[[nodiscard]] admission_response refusal(std::string uid, const error& e);

// RFC 4648 base64 (caBundle, AdmissionResponse.patch).
[[nodiscard]] std::string base64_encode(std::string_view bytes);

// The pod of a review as the PodSubmitted the bridge appends for a new pod (translate_pod):
// every scheduler's pods, the review's namespace where the object has none, a generateName
// pod named "<generateName><generated>", and without spec.nodeName and status (the webhooks
// read the pod's spec, not its life). invalid_input naming the field for a malformed pod, or
// when `pod` is not a Pod.
[[nodiscard]] result<messages::byte_buffer> pod_submitted_of(const nlohmann::json& pod,
                                                             const admission_request& req,
                                                             event_time t);

// The ElasticQuota of a review as the QuotaUpserted the bridge appends for it.
[[nodiscard]] result<messages::byte_buffer> quota_upserted_of(const nlohmann::json& quota,
                                                              event_time t);

// The JSONPatch (RFC 6902, as a JSON array text) that turns `pod` (the review's object) into
// the pod `after` describes, `before` being the PodSubmitted `after` answered:
//   metadata.labels / annotations   keys added, changed or removed between before and after
//                                   (keys the translation never carries, such as kubectl's
//                                   last-applied-configuration, are left alone);
//   spec.schedulerName, spec.priorityClassName   when changed, spec.priority with the class
//                                   (a profile patch's bare spec.priority is not carried:
//                                   PodMutated has no field for it);
//   container resources             when `after` moved cpu/memory into kubernetes.io/batch-*
//                                   (or mid-*): every init and regular container's requests
//                                   and limits, as Koordinator's mutatePodResourceSpec
//                                   (pkg/webhook/pod/mutating/cluster_colocation_profile.go):
//                                   cpu -> batch-cpu = MilliValue, memory -> batch-memory =
//                                   Value (BinarySI), then a missing extended request = its
//                                   limit.
// "[]" when nothing changed. invalid_input when a container quantity cannot be read.
[[nodiscard]] result<std::string> pod_json_patch(const nlohmann::json& pod,
                                                 const wire::PodSubmitted& before,
                                                 const wire::PodMutated& after);

}  // namespace colony::kube
