// The migration controller's object limiters (pkg/descheduler/controllers/migration/controller.go:
// trackEvictedPod, filterLimitedObject): after each eviction of a pod, the token bucket of its
// workload (and, when configured, of its namespace) takes a token; while a bucket holds fewer than
// one token, no new PodMigrationJob is created for a pod of that object and a running job waits.
//
// A bucket is golang.org/x/time/rate's Limiter: rate = maxMigrating per duration, burst `burst`
// (0 = 1), full when first used; a token is taken only when one is there (AllowN); the rate
// follows maxMigrating when it changes (SetLimit). Koordinator drops a bucket 1.5 x duration after
// its last eviction (its cache's expiry). Colony runs it on event time, in integers: a bucket
// counts token-milliseconds (one token = `duration` units; each millisecond adds maxMigrating), so
// every host and compiler gets the same answers.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>

#include "actors/descheduler/descheduler_types.hpp"
#include "actors/descheduler/migration_controller_args.hpp"

namespace colony::descheduler {

class object_limiter {
 public:
  // trackEvictedPod / track: an eviction of a pod of `key` at now_ms. max_migrating <= 0 or a
  // zero duration tracks nothing (as Koordinator returns early).
  void track(const std::string& key, std::int64_t max_migrating, const object_limiter_args& args,
             std::int64_t now_ms);
  // filterLimitedObject: whether `key`'s bucket holds fewer than one token at now_ms (a key never
  // tracked, or whose bucket expired, is not limited).
  [[nodiscard]] bool limited(std::string_view key, std::int64_t now_ms) const;
  // Tokens in `key`'s bucket at now_ms, in thousandths (for explanations and tests); -1: none.
  [[nodiscard]] std::int64_t tokens_milli(std::string_view key, std::int64_t now_ms) const;
  [[nodiscard]] std::size_t size() const { return buckets_.size(); }

 private:
  struct bucket {
    std::int64_t per_ms = 0;      // units added per millisecond (maxMigrating)
    std::int64_t unit = 1;        // units per token (the duration in ms)
    std::int64_t burst = 1;       // tokens at most
    std::int64_t units = 0;       // at `last`
    std::int64_t last = 0;        // event time of the last update
    std::int64_t expires_at = 0;  // 1.5 x duration after the last eviction
    bool fresh = true;            // never updated: full
  };
  [[nodiscard]] static std::int64_t units_at(const bucket& b, std::int64_t now_ms);
  const bucket* live(std::string_view key, std::int64_t now_ms) const;
  std::map<std::string, bucket, std::less<>> buckets_;
};

// The workload limiter's key: namespace, owner kind and name (Koordinator keys by the owner's
// uid; Colony's pods carry the owner by kind and name).
[[nodiscard]] std::string workload_limiter_key(std::string_view ns, std::string_view owner_kind,
                                               std::string_view owner_name);

// Both limiters of a MigrationControllerArgs (objectLimiters.workload, objectLimiters.namespace)
// over pods: a pod's eviction is tracked in its workload's bucket (maxMigrating: the limiter's,
// else maxMigratingPerWorkload, resolved against the workload's replicas; a pod without a
// controller owner is not tracked) and in its namespace's (an int maxMigrating only: a percentage
// tracks nothing, as Koordinator's parses it as 0).
class migration_object_limits {
 public:
  explicit migration_object_limits(const migration_controller_args& args) : args_(&args) {}
  void track(const pod_info& pod, std::int64_t replicas, std::int64_t now_ms);
  // Either limiter holds fewer than one token for the pod's object.
  [[nodiscard]] bool limited(const pod_info& pod, std::int64_t now_ms) const;

 private:
  const migration_controller_args* args_;
  object_limiter workload_, namespace_;
};

}  // namespace colony::descheduler
