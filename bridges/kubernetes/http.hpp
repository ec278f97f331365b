// The HTTP vocabulary api_client and watch_stream share: options, a response, and how an HTTP
// status becomes a Colony error code.
//
// Classification, by what the caller does next (messages/result.hpp):
//   2xx                      a response
//   410 Gone                 a response with gone = true: the resourceVersion or continue token
//                            has been compacted away; the caller relists (not an error: it is
//                            the normal way a watcher learns it fell behind)
//   404                      not_found
//   409 reason AlreadyExists already_exists (a create of an existing name)
//   409 other (Conflict)     failed_precondition (an update against a stale resourceVersion:
//                            re-read, then retry)
//   401, 403                 failed_precondition (credentials or RBAC; retrying will not help)
//   429, 5xx but 501         unavailable (retry with backoff; Retry-After is kept)
//   other 4xx, 501           invalid_input
//   transport failures       unavailable (refused, reset, timed out), failed_precondition
//                            (TLS verification failed)
// Messages name the method and URL in `where` and carry the Status message of the body.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>

#include "messages/result.hpp"

namespace colony::kube {

struct client_options {
  // TCP + TLS handshake. Default: 10 s.
  std::chrono::milliseconds connect_timeout{10'000};
  // Whole non-watch request. Default: 60 s: a LIST page of 500 objects takes well under a
  // second on loopback, so the limit only catches a server that hangs.
  std::chrono::milliseconds request_timeout{60'000};
  // Offer HTTP/2 over TLS (ALPN), as client-go does; libcurl falls back to HTTP/1.1 on its
  // own. Each client and watch has its own connection, so nothing is multiplexed yet, and a
  // large LIST measured ~15 % faster over HTTP/1.1 on loopback (docs/kubernetes-bridge.md).
  // Default: on.
  bool http2 = true;
  // Ask for gzip. On loopback it only costs CPU (the apiserver compresses bodies >= 128 KiB).
  // Default: off.
  bool compression = false;
  // Default: "colony/<version>".
  std::string user_agent = "colony/0.1";
};

// A completed exchange with a 2xx or 410 status.
struct response {
  long status = 0;
  std::string body;
  bool gone = false;  // status 410
  // Retry-After of the answer, when the server sent one (429/503 usually).
  std::optional<std::chrono::seconds> retry_after;
};

// The error for a non-2xx, non-410 status; `body` is the apiserver's Status (or anything).
[[nodiscard]] error status_error(long status, std::string_view body, std::string where);

// The Status message in a body, or a prefix of the body when it is not a Status.
[[nodiscard]] std::string status_message(std::string_view body);

}  // namespace colony::kube
