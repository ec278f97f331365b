// colony's exit codes (documented in docs/operating.md and `colony --help`).
#pragma once

#include "messages/result.hpp"

namespace colony::cli {

enum exit_code : int {
  exit_ok = 0,
  exit_failure = 1,              // a check failed (e.g. digest mismatch) or unspecified
  exit_usage = 2,                // bad command line
  exit_invalid_input = 3,        // malformed input: trace row, config, record
  exit_corrupt = 4,              // stored data failed verification
  exit_not_found = 5,            // no such log, snapshot or entity
  exit_unavailable = 6,          // a service (broker) could not be reached in time
  exit_failed_precondition = 7,  // valid input refused by state (e.g. newer schema)
  exit_internal = 70,            // a bug
};

[[nodiscard]] inline int exit_code_for(const error& e) {
  switch (e.code) {
    case errc::invalid_input:
      return exit_invalid_input;
    case errc::corrupt:
      return exit_corrupt;
    case errc::not_found:
      return exit_not_found;
    case errc::out_of_range:
      return exit_not_found;
    case errc::unavailable:
      return exit_unavailable;
    case errc::failed_precondition:
    case errc::already_exists:
      return exit_failed_precondition;
    case errc::ok:
      return exit_ok;
    case errc::internal:
      break;
  }
  return exit_internal;
}

}  // namespace colony::cli
