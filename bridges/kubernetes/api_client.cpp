// api_client over detail::curl_session (see api_client.hpp).
#include "bridges/kubernetes/api_client.hpp"

#include <charconv>

#include "bridges/kubernetes/detail/curl_session.hpp"

namespace colony::kube {

std::string_view content_type(patch_type t) noexcept {
  switch (t) {
    case patch_type::merge:
      return "application/merge-patch+json";
    case patch_type::strategic:
      return "application/strategic-merge-patch+json";
    case patch_type::apply:
      return "application/apply-patch+yaml";
    case patch_type::json:
      return "application/json-patch+json";
  }
  return "application/merge-patch+json";
}

void add_query(std::string& path, std::string_view key, std::string_view value) {
  path += path.find('?') == std::string::npos ? '?' : '&';
  path += key;
  path += '=';
  path += detail::query_escape(value);
}

api_client::api_client(std::unique_ptr<detail::curl_session> s) : session_(std::move(s)) {}
api_client::api_client(api_client&&) noexcept = default;
api_client& api_client::operator=(api_client&&) noexcept = default;
api_client::~api_client() = default;

result<api_client> api_client::open(connection conn, client_options options) {
  auto s = detail::curl_session::open(std::move(conn), std::move(options));
  if (!s) return tl::make_unexpected(s.error());
  return api_client(std::move(*s));
}

const connection& api_client::conn() const { return session_->conn(); }

std::string api_client::url(std::string_view path) const {
  return detail::join_url(session_->conn(), path);
}

void api_client::interrupt() { session_->interrupt(); }

result<response> api_client::request(std::string_view method, std::string_view path,
                                     std::string_view body, std::string_view ctype) {
  detail::request req;
  req.method = method;
  req.url = url(path);
  req.body = body;
  req.content_type = ctype;
  req.timeout = session_->options().request_timeout;
  response resp;
  const detail::data_sink sink = [&resp](long, std::string_view bytes) {
    resp.body.append(bytes);
    return true;
  };
  auto t = session_->perform(req, sink);
  if (!t) return tl::make_unexpected(t.error());
  std::string where(method);
  where += ' ';
  where += req.url;
  if (t->interrupted) return fail(errc::unavailable, "interrupted", std::move(where));
  last_http_version_ = t->http_version;
  resp.status = t->status;
  resp.retry_after = t->retry_after;
  resp.gone = t->status == 410;
  if ((t->status >= 200 && t->status < 300) || resp.gone) return resp;
  error e = status_error(t->status, resp.body, std::move(where));
  if (t->retry_after)
    e.message += " (Retry-After " + std::to_string(t->retry_after->count()) + " s)";
  return tl::make_unexpected(std::move(e));
}

result<response> api_client::get(std::string_view path) { return request("GET", path); }

result<response> api_client::list(std::string_view path, const list_options& o) {
  std::string p(path);
  if (o.limit > 0) add_query(p, "limit", std::to_string(o.limit));
  if (!o.continue_token.empty()) add_query(p, "continue", o.continue_token);
  if (!o.resource_version.empty()) add_query(p, "resourceVersion", o.resource_version);
  if (!o.label_selector.empty()) add_query(p, "labelSelector", o.label_selector);
  if (!o.field_selector.empty()) add_query(p, "fieldSelector", o.field_selector);
  return request("GET", p);
}

result<response> api_client::post(std::string_view path, std::string_view json_body) {
  return request("POST", path, json_body, "application/json");
}

result<response> api_client::put(std::string_view path, std::string_view json_body) {
  return request("PUT", path, json_body, "application/json");
}

result<response> api_client::patch(std::string_view path, patch_type type, std::string_view body,
                                   std::string_view field_manager, bool force) {
  std::string p(path);
  if (!field_manager.empty()) add_query(p, "fieldManager", field_manager);
  if (force) add_query(p, "force", "true");
  return request("PATCH", p, body, content_type(type));
}

result<response> api_client::del(std::string_view path,
                                 std::optional<std::int64_t> grace_period_seconds) {
  std::string p(path);
  if (grace_period_seconds)
    add_query(p, "gracePeriodSeconds", std::to_string(*grace_period_seconds));
  return request("DELETE", p);
}

long http_status_of(const error& e) {
  const auto p = e.message.find("HTTP ");
  if (p == std::string::npos) return 0;
  long s = 0;
  const char* b = e.message.data() + p + 5;
  std::from_chars(b, e.message.data() + e.message.size(), s);
  return s;
}

}  // namespace colony::kube
