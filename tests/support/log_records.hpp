// Every record of an existing log (a directory or kafka://…), in order, as tests read logs back
// to check them. A log that cannot be opened or read fails the calling test.
#pragma once

#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "messages/codec.hpp"
#include "stores/event_log.hpp"
#include "tests/support/log_options.hpp"

namespace colony::testing {

inline std::vector<messages::byte_buffer> read_log_records(const std::string& name) {
  std::vector<messages::byte_buffer> v;
  auto log = stores::open_log(name, read_only_log_options());
  EXPECT_TRUE(log) << log.error().describe();
  if (!log) return v;
  auto r = (*log)->read(0, no_offset, [&](log_offset, messages::bytes_view b) {
    v.emplace_back(b.begin(), b.end());
    return true;
  });
  EXPECT_TRUE(r) << r.error().describe();
  return v;
}

}  // namespace colony::testing
