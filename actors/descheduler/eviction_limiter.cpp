#include "actors/descheduler/eviction_limiter.hpp"

namespace colony::descheduler {

namespace {
std::int64_t count(const std::map<std::string, std::int64_t, std::less<>>& m,
                   const std::string& k) {
  const auto it = m.find(k);
  return it == m.end() ? 0 : it->second;
}
}  // namespace

bool eviction_limiter::allow(const pod_info& p) const {
  if (l_.total && total_ + 1 > *l_.total) return false;
  if (l_.per_node && !p.node.empty() && count(node_, p.node) + 1 > *l_.per_node) return false;
  if (l_.per_namespace && count(ns_, p.ns) + 1 > *l_.per_namespace) return false;
  return true;
}

void eviction_limiter::done(const pod_info& p) {
  ++total_;
  if (!p.node.empty()) ++node_[p.node];
  ++ns_[p.ns];
}

void eviction_limiter::reset() {
  node_.clear();
  ns_.clear();
  total_ = 0;
}

}  // namespace colony::descheduler
