// colony::error and colony::result<T>: how every Colony module reports failure.
//
// Errors are values. A function that can fail returns result<T> (tl::expected, the
// shape of C++23 std::expected) and is [[nodiscard]]. Pick the code by what the caller
// does next, not by where the failure happened. Nothing in policies, stores or messages
// throws; exceptions from third-party code are caught at the call site and converted.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>

#include <tl/expected.hpp>

namespace colony {

enum class errc : std::uint8_t {
  ok = 0,
  invalid_input,        // the input itself is malformed: reject it, go on with the next
  failed_precondition,  // valid input refused by the current state (e.g. a quota)
  not_found,            // the named thing does not exist
  already_exists,       // the named thing exists and may not be created again
  out_of_range,         // an offset or index past the end
  unavailable,          // transient: retry with backoff (a broker went away)
  corrupt,              // stored data failed verification: stop, apply nothing
  internal,             // a bug in Colony
};

[[nodiscard]] constexpr std::string_view to_string(errc c) noexcept {
  switch (c) {
    case errc::ok:
      return "ok";
    case errc::invalid_input:
      return "invalid_input";
    case errc::failed_precondition:
      return "failed_precondition";
    case errc::not_found:
      return "not_found";
    case errc::already_exists:
      return "already_exists";
    case errc::out_of_range:
      return "out_of_range";
    case errc::unavailable:
      return "unavailable";
    case errc::corrupt:
      return "corrupt";
    case errc::internal:
      return "internal";
  }
  return "unknown";
}

// code for programs, message for people, where = file:line, log offset, field or actor.
struct error {
  errc code = errc::internal;
  std::string message;
  std::string where;

  // "where: message (code)", the form every CLI prints.
  [[nodiscard]] std::string describe() const {
    std::string s;
    if (!where.empty()) {
      s += where;
      s += ": ";
    }
    s += message;
    s += " (";
    s += to_string(code);
    s += ")";
    return s;
  }
};

template <class T>
using result = tl::expected<T, error>;

[[nodiscard]] inline tl::unexpected<error> fail(errc code, std::string message,
                                                std::string where = {}) {
  return tl::unexpected<error>(error{code, std::move(message), std::move(where)});
}

// The one greppable way to drop a result on purpose.
template <class T>
void permit_unchecked(const result<T>&) noexcept {}

}  // namespace colony
