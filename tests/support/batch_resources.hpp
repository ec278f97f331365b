// A resource_list asking only batch-cpu / batch-memory, as BE pods do after the colocation
// webhook moves their requests to the batch resources.
#pragma once

#include <cstdint>

#include "messages/resources.hpp"

namespace colony::testing {

inline resource_list batch_req(std::int64_t cpu_milli, std::int64_t mem_bytes) {
  resource_list r;
  r.batch_cpu_milli = cpu_milli;
  r.batch_memory_bytes = mem_bytes;
  return r;
}

}  // namespace colony::testing
