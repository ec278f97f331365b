// The descheduler's per-round eviction limits (pkg/descheduler/evictions/eviction_limiter.go):
// maxNoOfPodsToEvictPerNode, maxNoOfPodsToEvictPerNamespace, maxNoOfPodsToEvictTotal. A pod is
// allowed when every count + 1 stays within its cap; done() counts an eviction. reset() starts a
// round. Plain value.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "actors/descheduler/descheduler_types.hpp"

namespace colony::descheduler {

struct eviction_limits {
  std::optional<std::int64_t> per_node, per_namespace, total;  // nullopt: no limit
};

class eviction_limiter {
 public:
  explicit eviction_limiter(eviction_limits l = {}) : l_(l) {}
  [[nodiscard]] bool allow(const pod_info& p) const;
  void done(const pod_info& p);
  void reset();
  [[nodiscard]] std::int64_t total() const { return total_; }

 private:
  eviction_limits l_;
  std::map<std::string, std::int64_t, std::less<>> node_, ns_;
  std::int64_t total_ = 0;
};

}  // namespace colony::descheduler
