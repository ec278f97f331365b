// colony::kube::api_client: request/response calls to a kube-apiserver over libcurl.
//
// One client = one libcurl handle = one kept-alive connection (HTTP/2 when offered). A client
// is used from one thread; interrupt() is the exception (any thread). Paths are API paths with
// their query ("/api/v1/namespaces/ns/pods?labelSelector=a%3Db"), joined to the connection's
// server. Every call returns the response of a 2xx or 410 status (see http.hpp: 410 is a value,
// since a watcher acts on it) or an error value naming the method and URL.
//
//   auto c = kube::api_client::open(*kube::load_kubeconfig(path));
//   auto page = c->list("/api/v1/nodes", {.limit = 500});
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "bridges/kubernetes/http.hpp"
#include "bridges/kubernetes/kubeconfig.hpp"
#include "messages/result.hpp"

namespace colony::kube {

namespace detail {
class curl_session;
}

// The LIST query parameters an informer needs (apimachinery/pkg/apis/meta/v1 ListOptions).
struct list_options {
  std::int64_t limit = 0;        // 0: no paging
  std::string continue_token;    // from the previous page's metadata.continue
  std::string resource_version;  // "": a consistent (quorum) read of the latest state
  std::string label_selector;
  std::string field_selector;
};

enum class patch_type : std::uint8_t {
  merge,      // application/merge-patch+json (RFC 7386)
  strategic,  // application/strategic-merge-patch+json (built-in kinds only)
  apply,      // application/apply-patch+yaml: server-side apply (JSON is YAML)
  json,       // application/json-patch+json (RFC 6902)
};

[[nodiscard]] std::string_view content_type(patch_type t) noexcept;

// Appends "?k=v" or "&k=v" (value percent-encoded) to a path that may already have a query.
void add_query(std::string& path, std::string_view key, std::string_view value);

class api_client {
 public:
  [[nodiscard]] static result<api_client> open(connection conn, client_options options = {});
  api_client(api_client&&) noexcept;
  api_client& operator=(api_client&&) noexcept;
  ~api_client();

  [[nodiscard]] result<response> get(std::string_view path);
  [[nodiscard]] result<response> list(std::string_view path, const list_options& options);
  [[nodiscard]] result<response> post(std::string_view path, std::string_view json_body);
  [[nodiscard]] result<response> put(std::string_view path, std::string_view json_body);
  // Server-side apply needs a field manager; `force` takes over conflicting fields.
  [[nodiscard]] result<response> patch(std::string_view path, patch_type type,
                                       std::string_view body, std::string_view field_manager = {},
                                       bool force = false);
  // grace_period_seconds: 0 deletes a bound pod at once (no kubelet confirms a graceful one).
  [[nodiscard]] result<response> del(std::string_view path,
                                     std::optional<std::int64_t> grace_period_seconds = {});
  // Any method; the body is sent with `content_type` when non-empty.
  [[nodiscard]] result<response> request(std::string_view method, std::string_view path,
                                         std::string_view body = {},
                                         std::string_view content_type = {});

  // Ends the call in progress and fails every later one. Thread-safe.
  void interrupt();
  // The HTTP version of the last exchange: 2 or 11 (1.1); 0 before any.
  [[nodiscard]] int last_http_version() const noexcept { return last_http_version_; }
  [[nodiscard]] const connection& conn() const;
  [[nodiscard]] std::string url(std::string_view path) const;

 private:
  explicit api_client(std::unique_ptr<detail::curl_session> s);
  std::unique_ptr<detail::curl_session> session_;
  int last_http_version_ = 0;
};

// The HTTP status an api_client error names ("HTTP 409 Conflict: ..."); 0 if none (a transport
// error). The sinks decide retries and "already done" by it.
[[nodiscard]] long http_status_of(const error& e);

}  // namespace colony::kube
