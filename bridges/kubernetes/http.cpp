// HTTP status classification (see http.hpp).
#include "bridges/kubernetes/http.hpp"

#include <nlohmann/json.hpp>

namespace colony::kube {
namespace {

std::string_view reason_phrase(long status) {
  switch (status) {
    case 400:
      return "Bad Request";
    case 401:
      return "Unauthorized";
    case 403:
      return "Forbidden";
    case 404:
      return "Not Found";
    case 405:
      return "Method Not Allowed";
    case 409:
      return "Conflict";
    case 410:
      return "Gone";
    case 415:
      return "Unsupported Media Type";
    case 422:
      return "Unprocessable Entity";
    case 429:
      return "Too Many Requests";
    case 500:
      return "Internal Server Error";
    case 502:
      return "Bad Gateway";
    case 503:
      return "Service Unavailable";
    case 504:
      return "Gateway Timeout";
    default:
      return "";
  }
}

// metav1.Status.reason, or "" (a body that is not a Status).
std::string status_reason(std::string_view body) {
  const auto j = nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) return {};
  const auto it = j.find("reason");
  return it != j.end() && it->is_string() ? it->get<std::string>() : std::string{};
}

}  // namespace

std::string status_message(std::string_view body) {
  const auto j = nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (j.is_object()) {
    const auto it = j.find("message");
    if (it != j.end() && it->is_string()) return it->get<std::string>();
  }
  constexpr std::size_t max = 300;
  std::string s(body.substr(0, max));
  if (body.size() > max) s += "...";
  return s;
}

error status_error(long status, std::string_view body, std::string where) {
  errc code;
  if (status == 404) {
    code = errc::not_found;
  } else if (status == 409) {
    // Both creates of an existing name and updates with a stale resourceVersion are 409; the
    // Status reason tells them apart (apimachinery/pkg/api/errors: NewAlreadyExists, NewConflict).
    code =
        status_reason(body) == "AlreadyExists" ? errc::already_exists : errc::failed_precondition;
  } else if (status == 401 || status == 403) {
    code = errc::failed_precondition;
  } else if (status == 429 || (status >= 500 && status != 501)) {
    code = errc::unavailable;
  } else {
    code = errc::invalid_input;
  }
  std::string msg = "HTTP " + std::to_string(status);
  if (auto r = reason_phrase(status); !r.empty()) {
    msg += ' ';
    msg += r;
  }
  if (auto m = status_message(body); !m.empty()) {
    msg += ": ";
    msg += m;
  }
  return error{code, std::move(msg), std::move(where)};
}

}  // namespace colony::kube
