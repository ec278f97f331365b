#include "bench/registry.hpp"

#include <unistd.h>

#include <fstream>

namespace colony::bench {

std::int64_t rss_bytes() {
  std::ifstream f("/proc/self/statm");
  std::int64_t size = 0, resident = 0;
  f >> size >> resident;
  return resident * ::sysconf(_SC_PAGESIZE);
}

std::vector<entry>& registry() {
  static std::vector<entry> entries;  // function-local: safe across static-init order
  return entries;
}

}  // namespace colony::bench
