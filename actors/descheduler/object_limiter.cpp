#include "actors/descheduler/object_limiter.hpp"

#include <algorithm>

namespace colony::descheduler {

std::int64_t object_limiter::units_at(const bucket& b, std::int64_t now_ms) {
  const std::int64_t cap = b.burst * b.unit;
  if (b.fresh) return cap;
  // advance(): time going back counts as no time; the bucket stops at burst.
  const std::int64_t elapsed = std::max<std::int64_t>(0, now_ms - b.last);
  if (b.per_ms <= 0) return std::min(b.units, cap);
  const std::int64_t room = cap - std::min(b.units, cap);
  // Enough elapsed time to fill the room, without overflowing elapsed * per_ms.
  if (elapsed >= (room + b.per_ms - 1) / b.per_ms) return cap;
  return b.units + elapsed * b.per_ms;
}

const object_limiter::bucket* object_limiter::live(std::string_view key,
                                                   std::int64_t now_ms) const {
  const auto it = buckets_.find(key);
  if (it == buckets_.end() || now_ms >= it->second.expires_at) return nullptr;
  return &it->second;
}

void object_limiter::track(const std::string& key, std::int64_t max_migrating,
                           const object_limiter_args& args, std::int64_t now_ms) {
  if (max_migrating <= 0 || args.duration_ms <= 0) return;
  // An expired bucket is gone: the next one starts full.
  if (auto it = buckets_.find(key); it != buckets_.end() && now_ms >= it->second.expires_at)
    buckets_.erase(it);
  auto [it, added] = buckets_.try_emplace(key);
  auto& b = it->second;
  if (added) {
    b.unit = args.duration_ms;
    b.burst = args.burst > 0 ? args.burst : 1;
    b.per_ms = max_migrating;
  } else if (b.per_ms != max_migrating) {
    // SetLimit: the tokens up to now at the old rate, then the new rate.
    b.units = units_at(b, now_ms);
    b.last = now_ms;
    b.fresh = false;
    b.per_ms = max_migrating;
  }
  // AllowN(now, 1): a token taken only when one is there; else nothing changes.
  const std::int64_t units = units_at(b, now_ms);
  if (units >= b.unit) {
    b.units = units - b.unit;
    b.last = now_ms;
    b.fresh = false;
  }
  // The cache entry is set again on every eviction (1.5 x duration, as Koordinator's expiry).
  b.expires_at = now_ms + args.duration_ms + args.duration_ms / 2;
}

bool object_limiter::limited(std::string_view key, std::int64_t now_ms) const {
  const bucket* b = live(key, now_ms);
  return b != nullptr && units_at(*b, now_ms) < b->unit;
}

std::int64_t object_limiter::tokens_milli(std::string_view key, std::int64_t now_ms) const {
  const bucket* b = live(key, now_ms);
  if (b == nullptr) return -1;
  return units_at(*b, now_ms) * 1000 / b->unit;
}

std::string workload_limiter_key(std::string_view ns, std::string_view owner_kind,
                                 std::string_view owner_name) {
  std::string k(ns);
  k += '/';
  k += owner_kind;
  k += '/';
  k += owner_name;
  return k;
}

void migration_object_limits::track(const pod_info& pod, std::int64_t replicas,
                                    std::int64_t now_ms) {
  if (const auto& w = args_->workload_limiter; w && !pod.owner.empty()) {
    const auto& max = w->max_migrating ? w->max_migrating : args_->max_migrating_per_workload;
    workload_.track(workload_limiter_key(pod.ns, pod.owner.kind, pod.owner.name),
                    get_max_unavailable(replicas, max), *w, now_ms);
  }
  if (const auto& n = args_->namespace_limiter; n && n->max_migrating && !n->max_migrating->percent)
    namespace_.track(pod.ns, n->max_migrating->value, *n, now_ms);
}

bool migration_object_limits::limited(const pod_info& pod, std::int64_t now_ms) const {
  if (args_->workload_limiter && !pod.owner.empty() &&
      workload_.limited(workload_limiter_key(pod.ns, pod.owner.kind, pod.owner.name), now_ms))
    return true;
  return args_->namespace_limiter && namespace_.limited(pod.ns, now_ms);
}

}  // namespace colony::descheduler
