// go_arith.hpp: Go's integer/float arithmetic as Koordinator's slo-controller performs it, so that
// Colony's batch and mid resources match Koordinator's to the milli-core and to the byte.
//
// Every helper names the Go function it mirrors. The order of operations is part of the contract:
// a percent becomes a ratio first (float64(pct)/100), the ratio multiplies float64(value), and the
// product is truncated toward zero (int64(...)). E.g. 29 % of 100000 milli is
// int64(100000 * 0.29) = int64(28999.999999999996) = 28999, not 29000.
// Pure, header-only, thread-safe.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>

namespace colony::slo_controller::go {

// int64(f) in Go. In range it truncates toward zero like static_cast. Out of range or NaN the Go
// spec leaves the result implementation-defined; Go on amd64 (CVTTSD2SI) yields math.MinInt64, and
// we reproduce amd64 instead of invoking C++ undefined behaviour.
[[nodiscard]] constexpr std::int64_t to_int64(double f) noexcept {
  if (!(f >= -9223372036854775808.0 && f < 9223372036854775808.0)) {
    return std::numeric_limits<std::int64_t>::min();
  }
  return static_cast<std::int64_t>(f);
}

// float64(pct) / 100: how Koordinator turns an int64 percent into a ratio
// (plugins/util/util.go getPercentFromStrategy, CalculateBatchResourceByPolicy).
[[nodiscard]] constexpr double percent_ratio(std::int64_t pct) noexcept {
  return static_cast<double>(pct) / 100;
}

// getReserveRatio (plugins/util/util.go): float64(100 - reclaimThreshold) / 100.0.
[[nodiscard]] constexpr double reserve_ratio(std::int64_t reclaim_threshold_percent) noexcept {
  return static_cast<double>(100 - reclaim_threshold_percent) / 100.0;
}

// util.MultiplyMilliQuant (pkg/util/resource.go): int64(float64(q.MilliValue()) * factor), a milli
// quantity. Used for CPU (milli-cores in, milli-cores out).
[[nodiscard]] constexpr std::int64_t multiply_milli_quant(std::int64_t milli,
                                                          double factor) noexcept {
  return to_int64(static_cast<double>(milli) * factor);
}

// util.MultiplyQuant (pkg/util/resource.go): int64(float64(q.Value()) * factor). Used for memory
// (bytes in, bytes out).
[[nodiscard]] constexpr std::int64_t multiply_quant(std::int64_t value, double factor) noexcept {
  return to_int64(static_cast<double>(value) * factor);
}

// ceil(v / d) for d > 0, as Quantity.Value() and Quantity.ScaledValue() round (always up).
[[nodiscard]] constexpr std::int64_t ceil_div(std::int64_t v, std::int64_t d) noexcept {
  std::int64_t q = v / d;
  if (v % d != 0 && v > 0) ++q;
  return q;
}

// Quantity.ScaledValue(resource.Giga): what Koordinator prints as "(GB)" in its messages.
[[nodiscard]] constexpr std::int64_t giga(std::int64_t bytes) noexcept {
  return ceil_div(bytes, 1000000000);
}

// Quantity.MilliValue() of an integer quantity: value * 1000, saturating (Kubernetes saturates
// too).
[[nodiscard]] constexpr std::int64_t milli_value(std::int64_t value) noexcept {
  constexpr std::int64_t lim = std::numeric_limits<std::int64_t>::max() / 1000;
  if (value > lim) return std::numeric_limits<std::int64_t>::max();
  if (value < -lim) return std::numeric_limits<std::int64_t>::min();
  return value * 1000;
}

// util.IsQuantityDiff (pkg/util/resource.go): math.Abs(float64(new-old)) > float64(old)*threshold,
// both sides in milli. "Larger than" so that old == 0 and new != 0 is a diff for any threshold.
[[nodiscard]] inline bool is_quantity_diff(std::int64_t old_milli, std::int64_t new_milli,
                                           double diff_threshold) noexcept {
  return std::fabs(static_cast<double>(new_milli - old_milli)) >
         static_cast<double>(old_milli) * diff_threshold;
}

}  // namespace colony::slo_controller::go
