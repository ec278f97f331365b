// AdmissionReview decoding and encoding (see admission_review.hpp).
#include "bridges/kubernetes/admission_review.hpp"

namespace colony::kube {

namespace {

using json = nlohmann::json;

tl::unexpected<error> bad(std::string message, std::string where) {
  return fail(errc::invalid_input, std::move(message), std::move(where));
}

// A string member; "" when absent; nullopt when present and not a string.
std::optional<std::string> str(const json& o, const char* key) {
  auto it = o.find(key);
  if (it == o.end() || it->is_null()) return std::string();
  if (!it->is_string()) return std::nullopt;
  return it->get<std::string>();
}

}  // namespace

result<admission_request> decode_admission_review(std::string_view body) {
  const json doc = json::parse(body.begin(), body.end(), nullptr, false);
  if (doc.is_discarded()) return bad("the body is not JSON", "body");
  if (!doc.is_object()) return bad("an AdmissionReview must be a JSON object", "body");
  const auto api = str(doc, "apiVersion");
  if (!api || *api != admission_api_version)
    return bad("apiVersion " + (api ? "\"" + *api + "\"" : std::string("(not a string)")) +
                   " is not " + std::string(admission_api_version),
               "apiVersion");
  const auto kind = str(doc, "kind");
  if (!kind || *kind != admission_review_kind)
    return bad("kind " + (kind ? "\"" + *kind + "\"" : std::string("(not a string)")) +
                   " is not AdmissionReview",
               "kind");
  const auto rq = doc.find("request");
  if (rq == doc.end() || !rq->is_object())
    return bad("an AdmissionReview needs a request object", "request");
  admission_request r;
  const auto uid = str(*rq, "uid");
  if (!uid || uid->empty()) return bad("the request has no uid", "request.uid");
  r.uid = *uid;
  const auto k = rq->find("kind");
  if (k == rq->end() || !k->is_object()) return bad("the request has no kind", "request.kind");
  const auto g = str(*k, "group"), v = str(*k, "version"), kk = str(*k, "kind");
  if (!g || !v || !kk || kk->empty())
    return bad("request.kind must hold group, version and kind strings", "request.kind");
  r.kind_group = *g;
  r.kind_version = *v;
  r.kind = *kk;
  if (const auto res = rq->find("resource"); res != rq->end() && res->is_object()) {
    const auto rr = str(*res, "resource");
    if (!rr) return bad("request.resource.resource must be a string", "request.resource");
    r.resource = *rr;
  }
  const auto op = str(*rq, "operation");
  if (!op || (*op != "CREATE" && *op != "UPDATE" && *op != "DELETE" && *op != "CONNECT"))
    return bad("request.operation must be CREATE, UPDATE, DELETE or CONNECT", "request.operation");
  r.operation = *op;
  for (auto [key, out] : {std::pair{"subResource", &r.sub_resource},
                          std::pair{"namespace", &r.name_space}, std::pair{"name", &r.name}}) {
    const auto s = str(*rq, key);
    if (!s)
      return bad(std::string("request.") + key + " must be a string",
                 "request." + std::string(key));
    *out = *s;
  }
  if (const auto o = rq->find("object"); o != rq->end()) r.object = *o;
  if (const auto o = rq->find("oldObject"); o != rq->end()) r.old_object = *o;
  if (const auto d = rq->find("dryRun"); d != rq->end() && d->is_boolean())
    r.dry_run = d->get<bool>();
  return r;
}

std::string base64_encode(std::string_view in) {
  static constexpr char table[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  out.reserve((in.size() + 2) / 3 * 4);
  std::size_t i = 0;
  for (; i + 2 < in.size(); i += 3) {
    const auto n = (static_cast<unsigned char>(in[i]) << 16) |
                   (static_cast<unsigned char>(in[i + 1]) << 8) |
                   static_cast<unsigned char>(in[i + 2]);
    out += table[(n >> 18) & 63];
    out += table[(n >> 12) & 63];
    out += table[(n >> 6) & 63];
    out += table[n & 63];
  }
  if (i + 1 == in.size()) {
    const auto n = static_cast<unsigned char>(in[i]) << 16;
    out += table[(n >> 18) & 63];
    out += table[(n >> 12) & 63];
    out += "==";
  } else if (i + 2 == in.size()) {
    const auto n =
        (static_cast<unsigned char>(in[i]) << 16) | (static_cast<unsigned char>(in[i + 1]) << 8);
    out += table[(n >> 18) & 63];
    out += table[(n >> 12) & 63];
    out += table[(n >> 6) & 63];
    out += '=';
  }
  return out;
}

std::string encode_admission_review(const admission_response& r) {
  json resp = {{"uid", r.uid}, {"allowed", r.allowed}};
  if (!r.allowed) resp["status"] = {{"code", r.code}, {"message", r.message}};
  if (r.allowed && !r.json_patch.empty() && r.json_patch != "[]") {
    resp["patchType"] = "JSONPatch";
    resp["patch"] = base64_encode(r.json_patch);
  }
  const json doc = {{"apiVersion", admission_api_version},
                    {"kind", admission_review_kind},
                    {"response", std::move(resp)}};
  return doc.dump();
}

admission_response refusal(std::string uid, const error& e) {
  admission_response r;
  r.uid = std::move(uid);
  r.allowed = false;
  r.code = e.code == errc::invalid_input ? 400 : 403;
  r.message = e.message;
  if (!e.where.empty() && e.message.find(e.where) == std::string::npos)
    r.message += " (" + e.where + ")";
  return r;
}

}  // namespace colony::kube
