// colony run's admission webhooks without an apiserver: the AdmissionReview codec, every
// refusal, the JSONPatch a PodMutated becomes (applied with nlohmann's RFC 6902 patch), the
// ElasticQuota webhook component's answers, the serving certificate, and an HTTPS round trip
// on 127.0.0.1.
#include <filesystem>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <httplib.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <unistd.h>
#include <nlohmann/json.hpp>

#include "bridges/kubernetes/admission_review.hpp"
#include "bridges/kubernetes/translate.hpp"
#include "bridges/kubernetes/webhook_registration.hpp"
#include "run/admission_webhooks.hpp"
#include "run/webhook_certs.hpp"
#include "run/webhook_server.hpp"

namespace colony::run {
namespace {

using json = nlohmann::json;

std::string base64_decode(const std::string& s) {
  std::string out(s.size(), '\0');
  const int n =
      EVP_DecodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                      reinterpret_cast<const unsigned char*>(s.data()), static_cast<int>(s.size()));
  if (n < 0) return {};
  std::size_t pad = 0;
  if (!s.empty() && s.back() == '=') ++pad;
  if (s.size() > 1 && s[s.size() - 2] == '=') ++pad;
  out.resize(static_cast<std::size_t>(n) - pad);
  return out;
}

json pod(const json& labels, json resources = {{"requests", {{"cpu", "500m"}, {"memory", "256Mi"}}},
                                               {"limits", {{"cpu", "1"}, {"memory", "512Mi"}}}}) {
  return {
      {"apiVersion", "v1"},
      {"kind", "Pod"},
      {"metadata", {{"name", "p"}, {"namespace", "default"}, {"labels", labels}}},
      {"spec",
       {{"schedulerName", "default-scheduler"},
        {"priority", 0},
        {"containers", json::array({{{"name", "c"}, {"image", "x"}, {"resources", resources}}})}}}};
}

json review(const std::string& op, const json& object, const json& old = nullptr,
            json kind = {{"group", ""}, {"version", "v1"}, {"kind", "Pod"}}) {
  json rq = {
      {"uid", "u-1"},
      {"kind", kind},
      {"resource", {{"group", kind["group"]}, {"version", kind["version"]}, {"resource", "x"}}},
      {"operation", op},
      {"namespace", "default"},
      {"name", "p"}};
  if (!object.is_null()) rq["object"] = object;
  if (!old.is_null()) rq["oldObject"] = old;
  return {{"apiVersion", "admission.k8s.io/v1"}, {"kind", "AdmissionReview"}, {"request", rq}};
}

const json quota_kind = {
    {"group", "scheduling.sigs.k8s.io"}, {"version", "v1alpha1"}, {"kind", "ElasticQuota"}};

json elastic_quota(const std::string& name, const std::string& parent, bool is_parent,
                   const std::string& min_cpu, const std::string& min_memory = "1Gi") {
  json labels = json::object();
  if (!parent.empty()) labels["quota.scheduling.koordinator.sh/parent"] = parent;
  if (is_parent) labels["quota.scheduling.koordinator.sh/is-parent"] = "true";
  return {{"apiVersion", "scheduling.sigs.k8s.io/v1alpha1"},
          {"kind", "ElasticQuota"},
          {"metadata", {{"name", name}, {"namespace", "default"}, {"labels", labels}}},
          {"spec",
           {{"min", {{"cpu", min_cpu}, {"memory", min_memory}}},
            {"max", {{"cpu", "100"}, {"memory", "100Gi"}}}}}};
}

void feed(admission_webhooks& h, kube::object_kind k, const json& o) {
  auto r = kube::translate_added(k, o, event_time{1});
  ASSERT_TRUE(r.has_value()) << r.error().describe();
  for (const auto& b : *r) h.feed(b);
}

// The webhooks fed what the log would hold: two profiles and their PriorityClasses.
class AdmissionWebhooks : public ::testing::Test {
 protected:
  void SetUp() override {
    feed(hooks, kube::object_kind::priority_class,
         {{"apiVersion", "scheduling.k8s.io/v1"},
          {"kind", "PriorityClass"},
          {"metadata", {{"name", "koord-batch"}}},
          {"value", 5000}});
    feed(hooks, kube::object_kind::priority_class,
         {{"apiVersion", "scheduling.k8s.io/v1"},
          {"kind", "PriorityClass"},
          {"metadata", {{"name", "koord-prod"}}},
          {"value", 9000}});
    feed(hooks, kube::object_kind::cluster_colocation_profile,
         {{"apiVersion", "config.koordinator.sh/v1alpha1"},
          {"kind", "ClusterColocationProfile"},
          {"metadata", {{"name", "colocation"}}},
          {"spec",
           {{"selector", {{"matchLabels", {{"koordinator.sh/enable-colocation", "true"}}}}},
            {"qosClass", "BE"},
            {"priorityClassName", "koord-batch"},
            {"schedulerName", "koord-scheduler"},
            {"labels", {{"koordinator.sh/mutated", "true"}}}}}});
    // A profile whose result the validating webhook forbids: BE with koord-prod.
    feed(hooks, kube::object_kind::cluster_colocation_profile,
         {{"apiVersion", "config.koordinator.sh/v1alpha1"},
          {"kind", "ClusterColocationProfile"},
          {"metadata", {{"name", "broken"}}},
          {"spec",
           {{"selector", {{"matchLabels", {{"broken", "true"}}}}},
            {"qosClass", "BE"},
            {"priorityClassName", "koord-prod"}}}});
  }
  // The AdmissionReview response of a POST (ASSERTs HTTP 200).
  json post(std::string_view path, const json& body) {
    auto a = hooks.serve(path, body.dump());
    EXPECT_EQ(a.status, 200) << a.body;
    auto j = json::parse(a.body, nullptr, false);
    EXPECT_FALSE(j.is_discarded()) << a.body;
    EXPECT_EQ(j.value("apiVersion", ""), "admission.k8s.io/v1");
    EXPECT_EQ(j.value("kind", ""), "AdmissionReview");
    return j.is_discarded() ? json::object() : j["response"];
  }
  admission_webhooks hooks;
};

TEST_F(AdmissionWebhooks, SelectedPodBecomesABatchPod) {
  const json p = pod({{"koordinator.sh/enable-colocation", "true"}, {"app", "web"}});
  const json r = post(kube::path_mutate_pod, review("CREATE", p));
  EXPECT_EQ(r["uid"], "u-1");
  ASSERT_TRUE(r["allowed"].get<bool>()) << r.dump();
  ASSERT_EQ(r.value("patchType", ""), "JSONPatch");
  const json patch = json::parse(base64_decode(r["patch"].get<std::string>()));
  const json out = p.patch(patch);  // throws if the patch does not apply
  EXPECT_EQ(out["metadata"]["labels"]["koordinator.sh/qosClass"], "BE");
  EXPECT_EQ(out["metadata"]["labels"]["koordinator.sh/mutated"], "true");
  EXPECT_EQ(out["metadata"]["labels"]["app"], "web");
  EXPECT_EQ(out["spec"]["priorityClassName"], "koord-batch");
  EXPECT_EQ(out["spec"]["priority"], 5000);
  EXPECT_EQ(out["spec"]["schedulerName"], "koord-scheduler");
  const json& res = out["spec"]["containers"][0]["resources"];
  EXPECT_EQ(res["requests"],
            json({{"kubernetes.io/batch-cpu", "500"}, {"kubernetes.io/batch-memory", "256Mi"}}));
  EXPECT_EQ(res["limits"],
            json({{"kubernetes.io/batch-cpu", "1000"}, {"kubernetes.io/batch-memory", "512Mi"}}));
  EXPECT_EQ(hooks.reviews(), 1u);
  EXPECT_EQ(hooks.refused(), 0u);
}

TEST_F(AdmissionWebhooks, LimitOnlyContainerGetsItsLimitAsRequest) {
  const json p = pod({{"koordinator.sh/enable-colocation", "true"}},
                     {{"limits", {{"cpu", "2"}, {"memory", "1Gi"}}}});
  const json r = post(kube::path_mutate_pod, review("CREATE", p));
  ASSERT_TRUE(r["allowed"].get<bool>()) << r.dump();
  const json out = p.patch(json::parse(base64_decode(r["patch"].get<std::string>())));
  EXPECT_EQ(out["spec"]["containers"][0]["resources"]["requests"],
            json({{"kubernetes.io/batch-cpu", "2000"}, {"kubernetes.io/batch-memory", "1Gi"}}));
}

TEST_F(AdmissionWebhooks, UnselectedPodIsUntouched) {
  const json r = post(kube::path_mutate_pod, review("CREATE", pod({{"app", "web"}})));
  EXPECT_TRUE(r["allowed"].get<bool>());
  EXPECT_FALSE(r.contains("patch")) << r.dump();
}

TEST_F(AdmissionWebhooks, GenerateNamePodWithoutLabelsIsReviewed) {
  json p = pod(json::object());
  p["metadata"].erase("name");
  p["metadata"].erase("labels");
  p["metadata"]["generateName"] = "web-";
  const json r = post(kube::path_mutate_pod, review("CREATE", p));
  EXPECT_TRUE(r["allowed"].get<bool>()) << r.dump();
}

// Each refusal: HTTP 400 for a review that cannot be read, else allowed=false with the code
// and a message naming what is wrong.
TEST_F(AdmissionWebhooks, UnreadableReviewsAreHttp400) {
  json no_request = review("CREATE", pod({}));
  no_request.erase("request");
  json no_uid = review("CREATE", pod({}));
  no_uid["request"].erase("uid");
  json bad_api = review("CREATE", pod({}));
  bad_api["apiVersion"] = "admission.k8s.io/v1beta1";
  json bad_kind = review("CREATE", pod({}));
  bad_kind["kind"] = "TokenReview";
  json bad_op = review("PATCH", pod({}));
  const struct {
    const char* name;
    std::string body;
    std::string names;  // in the answer
  } cases[] = {
      {"not JSON", "{\"apiVersion\": ", "not JSON"},
      {"not an object", "[1,2]", "JSON object"},
      {"v1beta1", bad_api.dump(), "apiVersion"},
      {"not an AdmissionReview", bad_kind.dump(), "TokenReview"},
      {"no request", no_request.dump(), "request"},
      {"no uid", no_uid.dump(), "request.uid"},
      {"unknown operation", bad_op.dump(), "request.operation"},
  };
  for (const auto& c : cases) {
    const auto a = hooks.serve(kube::path_mutate_pod, c.body);
    EXPECT_EQ(a.status, 400) << c.name;
    EXPECT_NE(a.body.find(c.names), std::string::npos) << c.name << ": " << a.body;
  }
  EXPECT_EQ(hooks.serve("/mutate-node", review("CREATE", pod({})).dump()).status, 404);
  EXPECT_EQ(hooks.unreadable(), std::size(cases) + 1);
  EXPECT_EQ(hooks.reviews(), 0u);
}

TEST_F(AdmissionWebhooks, RefusalsNameTheField) {
  json eq_as_pod = review("CREATE", elastic_quota("q", "", false, "1"));
  json wrong_request_kind = review("CREATE", pod({}), nullptr, quota_kind);
  json bad_cpu = review("CREATE", pod({}, {{"requests", {{"cpu", "12x"}}}}));
  json bad_label = review("CREATE", pod({{"koordinator.sh/qosClass", "GOLD"}}));
  json broken = review("CREATE", pod({{"broken", "true"}}));
  json update = review("UPDATE", pod({{"koordinator.sh/qosClass", "LS"}}),
                       pod({{"koordinator.sh/qosClass", "BE"}}));
  const struct {
    const char* name;
    std::string_view path;
    json body;
    int code;
    std::string names;
  } cases[] = {
      {"object of the wrong kind", kube::path_mutate_pod, eq_as_pod, 400, "request.object.kind"},
      {"review of the wrong kind", kube::path_validate_pod, wrong_request_kind, 400,
       "request.kind"},
      {"unreadable quantity", kube::path_mutate_pod, bad_cpu, 400,
       "spec.containers[0].resources.requests.cpu"},
      {"unknown QoS label", kube::path_validate_pod, bad_label, 400,
       "metadata.labels[koordinator.sh/qosClass]"},
      {"profile yields a forbidden pod", kube::path_mutate_pod, broken, 403,
       "koordinator.sh/qosClass=BE and priorityClass=koord-prod cannot be used in combination"},
      {"immutable QoS on update", kube::path_validate_pod, update, 403, "field is immutable"},
  };
  for (const auto& c : cases) {
    const json r = post(c.path, c.body);
    EXPECT_FALSE(r.value("allowed", true)) << c.name;
    EXPECT_EQ(r["status"].value("code", 0), c.code) << c.name << ": " << r.dump();
    EXPECT_NE(r["status"].value("message", "").find(c.names), std::string::npos)
        << c.name << ": " << r.dump();
    EXPECT_FALSE(r.contains("patch")) << c.name;
  }
  EXPECT_EQ(hooks.refused(), std::size(cases));
}

TEST_F(AdmissionWebhooks, ValidatePodAllowsWhatTheProfileMade) {
  // The pod as the apiserver holds it after /mutate-pod: BE and koord-batch.
  json p = pod({{"koordinator.sh/qosClass", "BE"}});
  p["spec"]["priorityClassName"] = "koord-batch";
  p["spec"]["priority"] = 5000;
  p["spec"]["containers"][0]["resources"] = {{"requests", {{"kubernetes.io/batch-cpu", "500"}}},
                                             {"limits", {{"kubernetes.io/batch-cpu", "500"}}}};
  EXPECT_TRUE(post(kube::path_validate_pod, review("CREATE", p))["allowed"].get<bool>());
  // batch-cpu on a pod that is not BE is refused (validating webhook, Create).
  json q = p;
  q["metadata"]["labels"]["koordinator.sh/qosClass"] = "LS";
  const json r = post(kube::path_validate_pod, review("CREATE", q));
  EXPECT_FALSE(r["allowed"].get<bool>()) << r.dump();
  EXPECT_EQ(r["status"]["code"], 403);
}

TEST_F(AdmissionWebhooks, ElasticQuotaThatBreaksTheTreeIsRefused) {
  feed(hooks, kube::object_kind::elastic_quota, elastic_quota("parent", "", true, "4", "10Gi"));
  feed(hooks, kube::object_kind::elastic_quota, elastic_quota("child-a", "parent", false, "3"));
  const auto path = kube::path_validate_elastic_quota;
  // A sibling whose min would take the children's sum past the parent's min.
  json r = post(
      path, review("CREATE", elastic_quota("child-b", "parent", false, "2"), nullptr, quota_kind));
  EXPECT_FALSE(r["allowed"].get<bool>()) << r.dump();
  EXPECT_EQ(r["status"]["code"], 403);
  EXPECT_NE(r["status"]["message"].get<std::string>().find(
                "checkMinQuotaSum all brothers' MinQuota > parent MinQuota, parent: parent"),
            std::string::npos)
      << r.dump();
  // One that fits is allowed, and (a review records nothing) the same again is too.
  for (int i = 0; i < 2; ++i)
    EXPECT_TRUE(post(path, review("CREATE", elastic_quota("child-b", "parent", false, "1"), nullptr,
                                  quota_kind))["allowed"]
                    .get<bool>());
  // min > max: the bridge's translation already refuses the object (400, naming the field).
  json bad = elastic_quota("child-c", "parent", false, "1");
  bad["spec"]["min"]["cpu"] = "200";
  r = post(path, review("CREATE", bad, nullptr, quota_kind));
  EXPECT_FALSE(r["allowed"].get<bool>());
  EXPECT_EQ(r["status"]["code"], 400);
  EXPECT_NE(r["status"]["message"].get<std::string>().find("spec.min.cpu"), std::string::npos)
      << r.dump();
  // A child whose parent is not a parent quota.
  r = post(path, review("CREATE", elastic_quota("grandchild", "child-a", false, "1"), nullptr,
                        quota_kind));
  EXPECT_FALSE(r["allowed"].get<bool>());
  EXPECT_EQ(r["status"]["code"], 403) << r.dump();
  // A parent with children cannot be deleted.
  r = post(path,
           review("DELETE", nullptr, elastic_quota("parent", "", true, "4", "10Gi"), quota_kind));
  EXPECT_FALSE(r["allowed"].get<bool>());
  EXPECT_NE(r["status"]["message"].get<std::string>().find("has 1 child quotas"), std::string::npos)
      << r.dump();
  // Deleted in the log: the child goes, and then the parent may go.
  auto gone =
      kube::translate_deleted(kube::object_kind::elastic_quota,
                              elastic_quota("child-a", "parent", false, "3"), event_time{2});
  ASSERT_TRUE(gone.has_value());
  for (const auto& b : *gone) hooks.feed(b);
  EXPECT_TRUE(post(path, review("DELETE", nullptr, elastic_quota("parent", "", true, "4", "10Gi"),
                                quota_kind))["allowed"]
                  .get<bool>());
}

TEST(AdmissionReviewCodec, EncodesAllowedRefusedAndPatched) {
  kube::admission_response a;
  a.uid = "x";
  const json want = {{"apiVersion", "admission.k8s.io/v1"},
                     {"kind", "AdmissionReview"},
                     {"response", {{"uid", "x"}, {"allowed", true}}}};
  EXPECT_EQ(json::parse(kube::encode_admission_review(a)), want);
  a.json_patch = R"([{"op":"add","path":"/a","value":1}])";
  const json p = json::parse(kube::encode_admission_review(a))["response"];
  EXPECT_EQ(p["patchType"], "JSONPatch");
  EXPECT_EQ(base64_decode(p["patch"].get<std::string>()), a.json_patch);
  const auto r = kube::refusal("y", error{errc::failed_precondition, "no", "spec.min"});
  const json j = json::parse(kube::encode_admission_review(r))["response"];
  const json refused = {
      {"uid", "y"}, {"allowed", false}, {"status", {{"code", 403}, {"message", "no (spec.min)"}}}};
  EXPECT_EQ(j, refused);
  for (const char* s : {"", "f", "fo", "foo", "foob", "fooba", "foobar"})  // RFC 4648 section 10
    EXPECT_EQ(base64_decode(kube::base64_encode(s)), s);
  EXPECT_EQ(kube::base64_encode("foobar"), "Zm9vYmFy");
  EXPECT_EQ(kube::base64_encode("fooba"), "Zm9vYmE=");
}

TEST(WebhookRegistration, ConfigurationsCarryPathsPoliciesAndTheCa) {
  kube::webhook_registration r;
  r.url = "https://127.0.0.1:9443";
  r.ca_bundle_pem = "PEM";
  const json m = kube::mutating_webhook_configuration(r);
  EXPECT_EQ(m["metadata"]["name"], "colony-mutating-webhook-configuration");
  ASSERT_EQ(m["webhooks"].size(), 1u);
  EXPECT_EQ(m["webhooks"][0]["clientConfig"]["url"], "https://127.0.0.1:9443/mutate-pod");
  EXPECT_EQ(m["webhooks"][0]["clientConfig"]["caBundle"], kube::base64_encode("PEM"));
  EXPECT_EQ(m["webhooks"][0]["failurePolicy"], "Ignore");
  EXPECT_EQ(m["webhooks"][0]["sideEffects"], "None");
  const json v = kube::validating_webhook_configuration(r);
  ASSERT_EQ(v["webhooks"].size(), 2u);
  EXPECT_EQ(v["webhooks"][1]["clientConfig"]["url"],
            "https://127.0.0.1:9443/validate-scheduling-sigs-k8s-io-v1alpha1-elasticquota");
  EXPECT_EQ(v["webhooks"][1]["failurePolicy"], "Fail");
  r.url.clear();
  r.service_namespace = "koordinator-system";
  r.service_name = "colony";
  r.elastic_quota = false;
  const json s = kube::validating_webhook_configuration(r);
  ASSERT_EQ(s["webhooks"].size(), 1u);
  EXPECT_EQ(s["webhooks"][0]["clientConfig"]["service"], json({{"namespace", "koordinator-system"},
                                                               {"name", "colony"},
                                                               {"port", 443},
                                                               {"path", "/validate-pod"}}));
  EXPECT_EQ(s["webhooks"][0]["namespaceSelector"]["matchExpressions"][0]["values"],
            json({"kube-system", "koordinator-system"}));
}

// ---- certificates and TLS --------------------------------------------------------------

X509* read_cert(const std::string& pem) {
  BIO* b = BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size()));
  X509* x = PEM_read_bio_X509(b, nullptr, nullptr, nullptr);
  BIO_free(b);
  return x;
}

TEST(WebhookCerts, ServingCertificateVerifiesAgainstTheCaWithItsSans) {
  auto t = generate_webhook_tls({"127.0.0.1", "colony.koordinator-system.svc"});
  ASSERT_TRUE(t.has_value()) << t.error().describe();
  X509* ca = read_cert(t->ca_pem);
  X509* leaf = read_cert(t->cert_pem);
  ASSERT_NE(ca, nullptr);
  ASSERT_NE(leaf, nullptr);
  X509_STORE* store = X509_STORE_new();
  X509_STORE_add_cert(store, ca);
  X509_STORE_CTX* ctx = X509_STORE_CTX_new();
  X509_STORE_CTX_init(ctx, store, leaf, nullptr);
  EXPECT_EQ(X509_verify_cert(ctx), 1)
      << X509_verify_cert_error_string(X509_STORE_CTX_get_error(ctx));
  X509_STORE_CTX_free(ctx);
  X509_STORE_free(store);
  EXPECT_EQ(X509_check_ip_asc(leaf, "127.0.0.1", 0), 1);
  EXPECT_EQ(X509_check_host(leaf, "colony.koordinator-system.svc", 0, 0, nullptr), 1);
  EXPECT_NE(X509_check_host(leaf, "other.example", 0, 0, nullptr), 1);
  EXPECT_NE(X509_check_ip_asc(leaf, "10.0.0.1", 0), 1);
  // Another generation is another CA: the leaf does not verify against it.
  auto t2 = generate_webhook_tls({"127.0.0.1"});
  ASSERT_TRUE(t2.has_value());
  X509* ca2 = read_cert(t2->ca_pem);
  X509_STORE* store2 = X509_STORE_new();
  X509_STORE_add_cert(store2, ca2);
  X509_STORE_CTX* ctx2 = X509_STORE_CTX_new();
  X509_STORE_CTX_init(ctx2, store2, leaf, nullptr);
  EXPECT_NE(X509_verify_cert(ctx2), 1);
  X509_STORE_CTX_free(ctx2);
  X509_STORE_free(store2);
  X509_free(ca2);
  X509_free(ca);
  X509_free(leaf);
  EXPECT_FALSE(generate_webhook_tls({}).has_value());
}

std::string temp_dir(const char* name) {
  auto d = std::filesystem::temp_directory_path() /
           (std::string("colony-webhook-test-") + name + "-" + std::to_string(::getpid()));
  std::filesystem::remove_all(d);
  return d.string();
}

TEST(WebhookCerts, EnsureWritesOnceAndKeeps) {
  const std::string dir = temp_dir("ensure");
  auto a = ensure_webhook_tls(dir, {"127.0.0.1"});
  ASSERT_TRUE(a.has_value()) << a.error().describe();
  const auto perms = std::filesystem::status(dir + "/tls.key").permissions();
  EXPECT_EQ(perms & std::filesystem::perms::group_read, std::filesystem::perms::none);
  auto b = ensure_webhook_tls(dir, {"127.0.0.1"});
  ASSERT_TRUE(b.has_value());
  EXPECT_EQ(a->ca_pem, b->ca_pem);  // a restart keeps the caBundle the apiserver trusts
  EXPECT_EQ(a->key_pem, b->key_pem);
  std::filesystem::remove(dir + "/ca.crt");
  EXPECT_EQ(ensure_webhook_tls(dir, {"127.0.0.1"}).error().code, errc::invalid_input);
  std::filesystem::remove_all(dir);
}

TEST(WebhookServer, AnswersOverTlsOn127001) {
  const std::string dir = temp_dir("server");
  auto tls = ensure_webhook_tls(dir, {"127.0.0.1"});
  ASSERT_TRUE(tls.has_value()) << tls.error().describe();
  admission_webhooks hooks;
  auto srv = webhook_server::start({"127.0.0.1", 0}, *tls, hooks);
  ASSERT_TRUE(srv.has_value()) << srv.error().describe();
  httplib::SSLClient c("127.0.0.1", (*srv)->port());
  c.set_ca_cert_path((dir + "/ca.crt").c_str());
  c.enable_server_certificate_verification(true);
  auto res = c.Post(std::string(kube::path_mutate_pod), review("CREATE", pod({})).dump(),
                    "application/json");
  ASSERT_TRUE(res) << httplib::to_string(res.error());
  EXPECT_EQ(res->status, 200);
  const json r = json::parse(res->body);
  EXPECT_EQ(r["response"]["uid"], "u-1");
  EXPECT_TRUE(r["response"]["allowed"].get<bool>());
  res = c.Post(std::string(kube::path_mutate_pod), "nonsense", "application/json");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 400);
  // A client that trusts another CA refuses the server.
  auto other = generate_webhook_tls({"127.0.0.1"});
  ASSERT_TRUE(other.has_value());
  const std::string other_ca = dir + "/other-ca.crt";
  {
    std::FILE* f = std::fopen(other_ca.c_str(), "w");
    std::fputs(other->ca_pem.c_str(), f);
    std::fclose(f);
  }
  httplib::SSLClient d("127.0.0.1", (*srv)->port());
  d.set_ca_cert_path(other_ca.c_str());
  d.enable_server_certificate_verification(true);
  EXPECT_FALSE(d.Post(std::string(kube::path_mutate_pod), "{}", "application/json"));
  (*srv)->stop();
  EXPECT_FALSE(c.Post(std::string(kube::path_mutate_pod), "{}", "application/json"));
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace colony::run
