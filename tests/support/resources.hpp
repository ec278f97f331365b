// resource_list builders shared by the tests: plain cpu/memory (optionally a pod count, as node
// capacity and pod requests carry), and the batch-* / mid-* requests that the colocation webhook
// moves BE / Mid pods' requests to.
#pragma once

#include <cstdint>

#include "messages/resources.hpp"

namespace colony::testing {

inline resource_list cpu_mem(std::int64_t cpu_milli, std::int64_t mem_bytes,
                             std::int64_t pods = 0) {
  resource_list r;
  r.cpu_milli = cpu_milli;
  r.memory_bytes = mem_bytes;
  r.pods = pods;
  return r;
}

inline resource_list batch_req(std::int64_t cpu_milli, std::int64_t mem_bytes) {
  resource_list r;
  r.batch_cpu_milli = cpu_milli;
  r.batch_memory_bytes = mem_bytes;
  return r;
}

inline resource_list mid_req(std::int64_t cpu_milli, std::int64_t mem_bytes) {
  resource_list r;
  r.mid_cpu_milli = cpu_milli;
  r.mid_memory_bytes = mem_bytes;
  return r;
}

}  // namespace colony::testing
