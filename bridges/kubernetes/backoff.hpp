// colony::kube::backoff: capped exponential delays with jitter from a seeded engine.
//
// Delay n (from 0) is min(cap, initial * 2^n * (1 + jitter * u)), u in [0, 1) taken from the raw
// output of a std::mt19937_64 seeded by the caller, so a given seed gives the same delays on
// every standard library (no std::*_distribution). client-go's reflector backs off the same
// way between failed LIST/WATCH attempts: 800 ms doubling to 30 s with jitter 1.0
// (staging/src/k8s.io/client-go/tools/cache/reflector.go, NewReflectorWithOptions).
// Thread-safety: none.
#pragma once

#include <chrono>
#include <cstdint>
#include <random>

namespace colony::kube {

class backoff {
 public:
  backoff(std::chrono::milliseconds initial, std::chrono::milliseconds cap, double jitter,
          std::uint64_t seed);

  // The next delay; each call doubles the base until the cap.
  [[nodiscard]] std::chrono::milliseconds next();
  // After a success: the next delay starts from `initial` again.
  void reset() noexcept { attempt_ = 0; }
  [[nodiscard]] std::uint32_t attempt() const noexcept { return attempt_; }

 private:
  std::chrono::milliseconds initial_;
  std::chrono::milliseconds cap_;
  double jitter_;
  std::mt19937_64 rng_;
  std::uint32_t attempt_ = 0;
};

}  // namespace colony::kube
