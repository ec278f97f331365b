// log_options for a reader that must find an existing log and never write to it.
#pragma once

#include "stores/event_log.hpp"

namespace colony::testing {

inline stores::log_options read_only_log_options() {
  stores::log_options o;
  o.read_only = true;
  o.create_if_missing = false;
  return o;
}

}  // namespace colony::testing
