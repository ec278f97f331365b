#include "bench/registry.hpp"

namespace colony::bench {

std::vector<entry>& registry() {
  static std::vector<entry> entries;  // function-local: safe across static-init order
  return entries;
}

}  // namespace colony::bench
