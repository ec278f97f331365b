// The migration controller's object limiters (controller.go trackEvictedPod, filterLimitedObject)
// as golang.org/x/time/rate buckets on event time: table-driven cases, and a randomized check
// against a floating-point copy of rate.Limiter's arithmetic.
#include "actors/descheduler/object_limiter.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

namespace colony::descheduler {
namespace {

constexpr std::int64_t s = 1000;
constexpr std::int64_t minute = 60 * s;

object_limiter_args args(std::int64_t duration_ms, std::int64_t burst = 0) {
  object_limiter_args a;
  a.duration_ms = duration_ms;
  a.burst = burst;
  return a;
}

// One step: track (an eviction) or ask whether the key is limited.
struct step {
  std::int64_t at;
  bool track;
  std::int64_t max_migrating;  // for track
  bool limited;                // expected, for a question
};

struct limiter_case {
  const char* name;
  object_limiter_args a;
  std::vector<step> steps;
};

TEST(ObjectLimiter, Cases) {
  const std::vector<limiter_case> cases = {
      {"untracked is free", args(5 * minute), {{0, false, 0, false}}},
      {"one per 5 min: limited until a token is back",
       args(5 * minute),
       {{0, true, 1, false},
        {1, false, 0, true},
        {5 * minute - 1, false, 0, true},
        {5 * minute, false, 0, false}}},
      {"two per 10 min, burst 1: a token every 5 min",
       args(10 * minute),
       {{0, true, 2, false}, {4 * minute, false, 0, true}, {5 * minute, false, 0, false}}},
      {"burst 3: three evictions before the limit, then a token every 200 s",
       args(10 * minute, 3),
       {{0, true, 3, false},
        {0, false, 0, false},
        {0, true, 3, false},
        {0, true, 3, false},
        {1, false, 0, true},
        {200 * s - 1, false, 0, true},
        {200 * s, false, 0, false}}},
      {"an eviction while limited takes nothing and does not restart the refill",
       args(5 * minute),
       {{0, true, 1, false},
        {1 * s, true, 1, false},
        {5 * minute, false, 0, false},
        {5 * minute, true, 1, false},
        {5 * minute, false, 0, true}}},
      {"the bucket is dropped 1.5 x duration after its last eviction",
       args(10 * minute),
       {{0, true, 1, false}, {15 * minute - 1, false, 0, false}, {15 * minute, false, 0, false}}},
      {"maxMigrating changes: the rate follows (SetLimit)",
       args(10 * minute),
       // 1 per 10 min: empty at 0; at 5 min half a token; the rate doubles there, so the second
       // half takes 2.5 min.
       {{0, true, 1, false},
        {5 * minute, true, 2, false},
        {7 * minute + 29 * s, false, 0, true},
        {7 * minute + 30 * s, false, 0, false}}},
      {"time going back counts as no time",
       args(5 * minute),
       {{10 * minute, true, 1, false}, {9 * minute, false, 0, true}}},
      {"maxMigrating 0 tracks nothing",
       args(5 * minute),
       {{0, true, 0, false}, {0, true, 0, false}, {1, false, 0, false}}},
  };
  std::size_t questions = 0;
  for (const auto& c : cases) {
    object_limiter l;
    for (const auto& st : c.steps) {
      if (st.track) {
        l.track("default/ReplicaSet/web", st.max_migrating, c.a, st.at);
        continue;
      }
      ++questions;
      EXPECT_EQ(l.limited("default/ReplicaSet/web", st.at), st.limited)
          << c.name << " at " << st.at;
      EXPECT_FALSE(l.limited("default/ReplicaSet/other", st.at)) << c.name;
    }
  }
  EXPECT_EQ(questions, 18u);
}

TEST(ObjectLimiter, AnExpiredBucketStartsFullAgain) {
  object_limiter l;
  const auto a = args(10 * minute);
  l.track("k", 1, a, 0);
  EXPECT_TRUE(l.limited("k", 1));
  EXPECT_EQ(l.tokens_milli("k", 5 * minute), 500);
  EXPECT_EQ(l.tokens_milli("k", 15 * minute), -1);  // dropped
  l.track("k", 1, a, 15 * minute);                  // a new bucket, full, takes one
  EXPECT_TRUE(l.limited("k", 15 * minute));
  EXPECT_EQ(l.tokens_milli("k", 20 * minute), 500);
}

// golang.org/x/time/rate.Limiter in double arithmetic (advance, AllowN, SetLimit, Tokens), the
// bucket Koordinator keeps, to check the integer buckets answer alike.
struct go_limiter {
  double limit = 0;  // tokens per second
  double burst = 1;
  double tokens = 0;
  double last = -1e18;  // seconds; the zero time: the first advance fills the bucket
  [[nodiscard]] double advance(double t) const {
    const double l = t < last ? t : last;
    return std::min(burst, tokens + (t - l) * limit);
  }
  void set_limit(double t, double lim) {
    tokens = advance(t);
    last = t;
    limit = lim;
  }
  void allow(double t) {
    const double k = advance(t) - 1;
    if (k >= 0) {
      tokens = k;
      last = t;
    }
  }
};

TEST(ObjectLimiter, AgreesWithRateLimiterArithmeticOnRandomSequences) {
  std::mt19937_64 rng(7);
  std::size_t compared = 0, limited_seen = 0, free_seen = 0;
  for (int round = 0; round < 200; ++round) {
    const std::int64_t duration = (1 + static_cast<std::int64_t>(rng() % 10)) * minute;
    const std::int64_t burst = static_cast<std::int64_t>(rng() % 3);
    const auto a = args(duration, burst);
    object_limiter l;
    go_limiter g;
    bool made = false;
    std::int64_t t = 0, last_track = 0;
    for (int k = 0; k < 60; ++k) {
      t += static_cast<std::int64_t>(rng() % (3 * minute / s)) * s;
      if (made && t >= last_track + duration + duration / 2) made = false;  // cache expiry
      if (rng() % 2 == 0) {
        const std::int64_t max = 1 + static_cast<std::int64_t>(rng() % 4);
        l.track("k", max, a, t);
        const double lim = static_cast<double>(max) / (static_cast<double>(duration) / 1000.0);
        if (!made) {
          g = go_limiter{lim, static_cast<double>(burst > 0 ? burst : 1)};
          made = true;
        } else if (g.limit != lim) {
          g.set_limit(static_cast<double>(t) / 1000.0, lim);
        }
        g.allow(static_cast<double>(t) / 1000.0);
        last_track = t;
        continue;
      }
      const bool want = made && g.advance(static_cast<double>(t) / 1000.0) - 1 < 0;
      // At a token boundary the double may round either way: compare away from it.
      if (made && std::abs(g.advance(static_cast<double>(t) / 1000.0) - 1) < 1e-6) continue;
      EXPECT_EQ(l.limited("k", t), want) << "round " << round << " t " << t;
      ++compared;
      (want ? limited_seen : free_seen) += 1;
    }
  }
  EXPECT_GE(compared, 3000u);
  EXPECT_GE(limited_seen, 300u);
  EXPECT_GE(free_seen, 300u);
}

}  // namespace
}  // namespace colony::descheduler
