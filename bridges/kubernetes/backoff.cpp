// Capped exponential backoff (see backoff.hpp).
#include "bridges/kubernetes/backoff.hpp"

#include <algorithm>

namespace colony::kube {

backoff::backoff(std::chrono::milliseconds initial, std::chrono::milliseconds cap, double jitter,
                 std::uint64_t seed)
    : initial_(initial), cap_(cap), jitter_(jitter), rng_(seed) {}

std::chrono::milliseconds backoff::next() {
  // 53 high bits of the raw output: a uniform double in [0, 1), the same on every platform.
  const double u = static_cast<double>(rng_() >> 11) * 0x1.0p-53;
  const double base =
      static_cast<double>(initial_.count()) *
      static_cast<double>(std::uint64_t{1} << std::min<std::uint32_t>(attempt_, 32));
  const double d = std::min(static_cast<double>(cap_.count()), base * (1.0 + jitter_ * u));
  ++attempt_;
  return std::chrono::milliseconds(static_cast<std::int64_t>(d));
}

}  // namespace colony::kube
