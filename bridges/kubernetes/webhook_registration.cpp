#include "bridges/kubernetes/webhook_registration.hpp"

#include "bridges/kubernetes/admission_review.hpp"

namespace colony::kube {

namespace {

using json = nlohmann::json;

constexpr std::string_view base = "/apis/admissionregistration.k8s.io/v1/";

json client_config(const webhook_registration& r, std::string_view path) {
  json c = {{"caBundle", base64_encode(r.ca_bundle_pem)}};
  if (!r.url.empty()) {
    c["url"] = r.url + std::string(path);
  } else {
    c["service"] = {{"namespace", r.service_namespace},
                    {"name", r.service_name},
                    {"port", r.service_port},
                    {"path", std::string(path)}};
  }
  return c;
}

// Pods of kube-system (and of Colony's own namespace) never wait on Colony: the control plane
// must be able to start while its webhook is down.
json pod_namespace_selector(const webhook_registration& r) {
  json values = json::array({"kube-system"});
  if (!r.service_namespace.empty() && r.service_namespace != "kube-system")
    values.push_back(r.service_namespace);
  return {{"matchExpressions", json::array({{{"key", "kubernetes.io/metadata.name"},
                                             {"operator", "NotIn"},
                                             {"values", values}}})}};
}

json webhook(const webhook_registration& r, std::string_view name, std::string_view path,
             json rules, std::string_view failure_policy) {
  return {{"name", name},
          {"admissionReviewVersions", json::array({"v1"})},
          {"clientConfig", client_config(r, path)},
          {"rules", std::move(rules)},
          {"failurePolicy", failure_policy},
          {"matchPolicy", "Equivalent"},
          {"sideEffects", "None"},
          {"timeoutSeconds", r.timeout_seconds}};
}

json rule(std::string_view group, std::string_view version, std::string_view resource,
          json operations) {
  return json::array({{{"apiGroups", json::array({group})},
                       {"apiVersions", json::array({version})},
                       {"resources", json::array({resource})},
                       {"operations", std::move(operations)},
                       {"scope", "*"}}});
}

result<void> ensure(api_client& c, std::string_view plural, json object) {
  const std::string collection = std::string(base) + std::string(plural);
  const std::string name = object["metadata"]["name"].get<std::string>();
  auto created = c.post(collection, object.dump());
  if (created) return {};
  if (created.error().code != errc::already_exists) return tl::unexpected(created.error());
  // Update in place: the current object's resourceVersion makes a concurrent writer's change
  // fail (409) instead of being overwritten unseen.
  auto cur = c.get(collection + "/" + name);
  if (!cur) return tl::unexpected(cur.error());
  const json got = json::parse(cur->body, nullptr, false);
  if (got.is_discarded() || !got.contains("metadata"))
    return fail(errc::unavailable, "the apiserver answered an unreadable object",
                collection + "/" + name);
  object["metadata"]["resourceVersion"] = got["metadata"].value("resourceVersion", "");
  auto put = c.put(collection + "/" + name, object.dump());
  if (!put) return tl::unexpected(put.error());
  return {};
}

}  // namespace

json mutating_webhook_configuration(const webhook_registration& r) {
  json pod = webhook(r, "mpod-create.colony.koordinator.sh", path_mutate_pod,
                     rule("", "v1", "pods", json::array({"CREATE"})), "Ignore");
  pod["namespaceSelector"] = pod_namespace_selector(r);
  pod["reinvocationPolicy"] = "Never";
  return {{"apiVersion", "admissionregistration.k8s.io/v1"},
          {"kind", "MutatingWebhookConfiguration"},
          {"metadata",
           {{"name", mutating_configuration_name},
            {"labels", {{"app.kubernetes.io/managed-by", "colony"}}}}},
          {"webhooks", json::array({pod})}};
}

json validating_webhook_configuration(const webhook_registration& r) {
  json pod = webhook(r, "vpod.colony.koordinator.sh", path_validate_pod,
                     rule("", "v1", "pods", json::array({"CREATE", "UPDATE"})), "Ignore");
  pod["namespaceSelector"] = pod_namespace_selector(r);
  json hooks = json::array({pod});
  if (r.elastic_quota)
    hooks.push_back(webhook(r, "velasticquota.colony.koordinator.sh", path_validate_elastic_quota,
                            rule("scheduling.sigs.k8s.io", "v1alpha1", "elasticquotas",
                                 json::array({"CREATE", "UPDATE", "DELETE"})),
                            "Fail"));
  return {{"apiVersion", "admissionregistration.k8s.io/v1"},
          {"kind", "ValidatingWebhookConfiguration"},
          {"metadata",
           {{"name", validating_configuration_name},
            {"labels", {{"app.kubernetes.io/managed-by", "colony"}}}}},
          {"webhooks", std::move(hooks)}};
}

result<void> ensure_webhook_configurations(api_client& c, const webhook_registration& r) {
  if (auto m = ensure(c, "mutatingwebhookconfigurations", mutating_webhook_configuration(r)); !m)
    return m;
  return ensure(c, "validatingwebhookconfigurations", validating_webhook_configuration(r));
}

}  // namespace colony::kube
