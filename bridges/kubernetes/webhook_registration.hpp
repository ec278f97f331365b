// The admission webhooks' registration with the apiserver: colony run's
// MutatingWebhookConfiguration "colony-mutating-webhook-configuration" and
// ValidatingWebhookConfiguration "colony-validating-webhook-configuration"
// (admissionregistration.k8s.io/v1), created when missing, else updated in place (caBundle,
// clientConfig, rules), as Koordinator's webhook controller keeps its own
// (pkg/webhook/util/configuration/mutating.go, validating.go).
//
// Webhooks, paths as Koordinator's (config/webhook/manifests.yaml):
//   mpod-create.colony.koordinator.sh      /mutate-pod   pods CREATE                 Ignore
//   vpod.colony.koordinator.sh             /validate-pod pods CREATE, UPDATE         Ignore
//   velasticquota.colony.koordinator.sh    /validate-scheduling-sigs-k8s-io-v1alpha1-elasticquota
//                                          elasticquotas CREATE, UPDATE, DELETE      Fail
// sideEffects None, admissionReviewVersions [v1], timeoutSeconds (default 5), pods'
// namespaceSelector excluding kube-system (and Colony's own namespace when it runs as a
// service): docs/operating.md "Admission webhooks" says why each policy.
//
// API calls (the RBAC deploy/ grants): POST .../mutatingwebhookconfigurations and
// .../validatingwebhookconfigurations (create); on 409 AlreadyExists GET and PUT of the two
// names (get, update). Nothing else.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "bridges/kubernetes/api_client.hpp"
#include "messages/result.hpp"

namespace colony::kube {

inline constexpr std::string_view mutating_configuration_name =
    "colony-mutating-webhook-configuration";
inline constexpr std::string_view validating_configuration_name =
    "colony-validating-webhook-configuration";
inline constexpr std::string_view path_mutate_pod = "/mutate-pod";
inline constexpr std::string_view path_validate_pod = "/validate-pod";
inline constexpr std::string_view path_validate_elastic_quota =
    "/validate-scheduling-sigs-k8s-io-v1alpha1-elasticquota";

struct webhook_registration {
  // Exactly one of url ("https://HOST:PORT", paths appended) and service.
  std::string url;
  std::string service_namespace;
  std::string service_name;
  int service_port = 443;
  std::string ca_bundle_pem;  // the CA that signed the serving certificate
  // Default: 5 s (apiserver default 10 s; a pod create waits at most this for an unresponsive
  // Colony before the failure policy applies).
  int timeout_seconds = 5;
  // Default: true (colony run's --no-elastic-quota drops the ElasticQuota webhook).
  bool elastic_quota = true;
};

[[nodiscard]] nlohmann::json mutating_webhook_configuration(const webhook_registration& r);
[[nodiscard]] nlohmann::json validating_webhook_configuration(const webhook_registration& r);

// Creates or updates both configurations. Errors name the call.
[[nodiscard]] result<void> ensure_webhook_configurations(api_client& c,
                                                         const webhook_registration& r);

}  // namespace colony::kube
