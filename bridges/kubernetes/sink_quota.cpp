// A component's QuotaUpserted (koord-manager's ElasticQuotaProfile controller writing a tree
// root) as the ElasticQuota object: created when missing, else its labels, annotations and
// spec.min/max updated, as QuotaProfileReconciler.Reconcile does (Create, else Update when the
// labels, annotations or spec differ; pkg/quota-controller/profile/profile_controller.go).
#include <algorithm>
#include <string>

#include "actors/quota/quota_resources.hpp"
#include "bridges/kubernetes/backoff.hpp"
#include "bridges/kubernetes/sink.hpp"
#include "messages/codec.hpp"

namespace colony::kube {

using json = nlohmann::json;
using messages::to_string_view;

namespace {

constexpr std::string_view elastic_quotas_api = "/apis/scheduling.sigs.k8s.io/v1alpha1";
constexpr std::string_view bridge_source = "bridge/k8s";

json key_values_json(const flatbuffers::Vector<flatbuffers::Offset<wire::KeyValue>>* kvs) {
  json o = json::object();
  if (kvs != nullptr)
    for (const auto* kv : *kvs)
      o[std::string(to_string_view(kv->key()))] = std::string(to_string_view(kv->value()));
  return o;
}

// A ResourceList as the quota's keys say (keys 0 with values: the non-zero values' keys).
json resource_list_object(const wire::Resources* r, std::uint16_t keys) {
  const resource_list v = messages::to_resource_list(r);
  const quota::resource_keys k = keys != 0 ? keys : quota::nonzero_keys(v);
  return json::parse(quota::resource_list_to_json(v, k));
}

// Two ResourceLists as quantities (a quantity the server kept as written may be spelled
// differently from ours: "1000m" and "1").
bool same_resources(const json& a, const json& b) {
  if (!a.is_object() || !b.is_object()) return a.is_object() == b.is_object();
  auto pa = quota::parse_resource_list_json(a.dump(), "");
  auto pb = quota::parse_resource_list_json(b.dump(), "");
  return pa && pb && pa->resources.values == pb->resources.values &&
         pa->resources.keys == pb->resources.keys && pa->ignored == pb->ignored;
}

}  // namespace

json elastic_quota_object(const wire::QuotaUpserted& q) {
  const std::string ns(to_string_view(q.namespace_()));
  json o = {{"apiVersion", "scheduling.sigs.k8s.io/v1alpha1"}, {"kind", "ElasticQuota"}};
  o["metadata"] = {{"name", std::string(to_string_view(q.name()))},
                   {"namespace", ns.empty() ? std::string("default") : ns}};
  if (q.labels() != nullptr && q.labels()->size() != 0)
    o["metadata"]["labels"] = key_values_json(q.labels());
  if (q.annotations() != nullptr && q.annotations()->size() != 0)
    o["metadata"]["annotations"] = key_values_json(q.annotations());
  o["spec"] = {{"min", resource_list_object(q.min(), q.min_keys())},
               {"max", resource_list_object(q.max(), q.max_keys())}};
  return o;
}

std::optional<write_outcome> decision_sink::quota_object_write(const wire::Envelope& env) {
  // An observation (the bridge's record of an ElasticQuota) is the API server's already.
  if (env.causation() < 0 || to_string_view(env.source()) == bridge_source) return std::nullopt;
  const auto& q = *env.payload_as_QuotaUpserted();
  const json want = elastic_quota_object(q);
  const std::string name = want["metadata"]["name"];
  const std::string ns = want["metadata"]["namespace"];
  const std::string list_path =
      std::string(elastic_quotas_api) + "/namespaces/" + ns + "/elasticquotas";
  const std::string path = list_path + "/" + name;
  // One round of the reconcile: GET, then POST or PATCH.
  auto round = [&]() -> write_outcome {
    write_outcome o{.kind = write_kind::quota, .object = name};
    // GET first, as the reconciler does: a create of an existing quota would reach the validating
    // webhook, which refuses it ("quota already exist") before the apiserver could answer 409.
    auto cur = get_object(path, o.attempts);
    if (!cur && cur.error().code == errc::not_found) {
      auto c = send([&] { return client_.post(list_path, want.dump()); }, opt_.max_attempts);
      o.attempts += c.attempts;
      if (c.last) {
        o.ok = o.wrote = true;
        o.http_status = c.last->status;
        o.message = "created in namespace " + ns;
        quota_namespace_.insert_or_assign(name, quota_place{ns, std::chrono::steady_clock::now()});
        return o;
      }
      o.http_status = http_status_of(c.last.error());
      o.message = "ElasticQuota " + ns + "/" + name + " create: " + c.last.error().describe();
      if (c.last.error().code == errc::not_found)
        o.message +=
            " (no ElasticQuota API: CRD scheduling.sigs.k8s.io elasticquotas not installed)";
      return o;
    }
    if (!cur) {
      o.http_status = http_status_of(cur.error());
      o.message = "ElasticQuota " + ns + "/" + name + " read: " + cur.error().describe();
      return o;
    }
    // It exists: update what differs (a merge patch; a min/max key the quota no longer has is
    // removed with null, labels and annotations are only added or changed, as the reconciler keeps
    // the object's others).
    json patch = json::object();
    for (const char* field : {"labels", "annotations"}) {
      // Named, not temporaries: a range-for over a temporary's items() dangles.
      const json meta = cur->value("/metadata"_json_pointer, json::object());
      const json have = meta.value(field, json::object());
      const json wanted = want["metadata"].value(field, json::object());
      for (const auto& [k, v] : wanted.items())
        if (!have.contains(k) || have[k] != v) patch["metadata"][field][k] = v;
    }
    for (const char* field : {"min", "max"}) {
      const json have =
          cur->value("/spec"_json_pointer, json::object()).value(field, json::object());
      if (same_resources(have, want["spec"][field])) continue;
      json p = want["spec"][field];
      for (const auto& item : have.items())
        if (!want["spec"][field].contains(item.key())) p[item.key()] = nullptr;
      patch["spec"][field] = std::move(p);
    }
    quota_namespace_.insert_or_assign(name, quota_place{ns, std::chrono::steady_clock::now()});
    if (patch.empty()) {
      o.ok = true;
      o.http_status = 200;
      o.message = "quota already has these values";
      return o;
    }
    const std::string body = patch.dump();
    auto r = send([&] { return client_.patch(path, patch_type::merge, body); }, opt_.max_attempts);
    o.attempts += r.attempts;
    if (r.last) {
      o.ok = o.wrote = true;
      o.http_status = r.last->status;
      o.message = "updated in namespace " + ns;
    } else {
      o.http_status = http_status_of(r.last.error());
      o.message = "ElasticQuota " + ns + "/" + name + " update: " + r.last.error().describe();
    }
    return o;
  };
  // A refusal by a validating webhook that answers from an informer cache (Colony's, as
  // Koordinator's) can be that cache lagging the quota just created ("quota not exist"), and a
  // 409 a concurrent change: the reconciler requeues then, so the sink tries the round again.
  backoff b(opt_.backoff_initial, opt_.backoff_cap, opt_.jitter, opt_.seed + counters_.requests);
  std::uint32_t attempts = 0;
  for (std::uint32_t n = 1;; ++n) {
    write_outcome o = round();
    attempts += o.attempts;
    o.attempts = attempts;
    const bool retryable =
        o.http_status == 409 ||
        (o.http_status == 403 && o.message.find("admission webhook") != std::string::npos);
    if (o.ok || !retryable || n >= std::max(1u, opt_.max_attempts)) return o;
    const auto d = b.next();
    waits_.push_back(d);
    ++counters_.retries;
    opt_.sleep(d);
  }
}

}  // namespace colony::kube
