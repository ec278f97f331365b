// detail: one libcurl easy handle driven through its own multi handle, so that another thread
// can end a transfer at once (curl_multi_wakeup) instead of waiting for a progress callback.
//
// Lifecycle: open() per connection; perform() any number of times, one at a time, from the
// owning thread; connections are kept alive between requests (curl_easy_reset keeps them).
// interrupt() may be called from any thread: it ends the transfer in progress and makes every
// later perform() fail until the session is destroyed.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "bridges/kubernetes/http.hpp"
#include "bridges/kubernetes/kubeconfig.hpp"
#include "messages/result.hpp"

namespace colony::kube::detail {

struct request {
  std::string_view method = "GET";
  std::string url;
  std::string_view body;          // sent when non-empty or when the method is not GET/DELETE
  std::string_view content_type;  // Content-Type of the body
  // 0: no limit (a watch ends by timeoutSeconds or by interrupt()).
  std::chrono::milliseconds timeout{0};
};

// Body bytes as they arrive, with the status of the response they belong to. false aborts.
using data_sink = std::function<bool(long status, std::string_view bytes)>;

struct transfer {
  long status = 0;
  std::optional<std::chrono::seconds> retry_after;
  bool aborted_by_sink = false;  // the sink returned false
  bool interrupted = false;      // interrupt() ended it
  int http_version = 0;          // 2 (HTTP/2) or 11 (HTTP/1.1) as negotiated; 0 if unknown
};

class curl_session {
 public:
  [[nodiscard]] static result<std::unique_ptr<curl_session>> open(connection conn,
                                                                  client_options options);
  ~curl_session();
  curl_session(const curl_session&) = delete;
  curl_session& operator=(const curl_session&) = delete;

  // Runs one request to completion. Transport failures are errors (unavailable, or
  // failed_precondition for TLS verification); any HTTP status is a transfer.
  [[nodiscard]] result<transfer> perform(const request& req, const data_sink& sink);

  void interrupt();  // thread-safe
  [[nodiscard]] bool interrupted() const { return interrupted_.load(); }

  [[nodiscard]] const connection& conn() const { return conn_; }
  [[nodiscard]] const client_options& options() const { return options_; }

 private:
  curl_session(connection conn, client_options options);
  [[nodiscard]] result<void> configure(const request& req);
  void refresh_token();

  struct handles;
  connection conn_;
  client_options options_;
  std::unique_ptr<handles> h_;
  std::atomic<bool> interrupted_{false};
  std::chrono::steady_clock::time_point token_read_{};
};

// "https://server" + path_and_query.
[[nodiscard]] std::string join_url(const connection& c, std::string_view path_and_query);

// Percent-encodes a query parameter value (RFC 3986 unreserved characters pass through).
[[nodiscard]] std::string query_escape(std::string_view value);

}  // namespace colony::kube::detail
