// usage_curve: a machine's real CPU / memory utilisation over time, as a fraction of the
// machine, resampled to a fixed step; the input of the sim's usage model.
//
// extract_usage_curves turns v2018 machine_usage rows into one curve per machine (pure and
// deterministic). The sim makes each pod follow a seeded pick of a real curve (pick_curve),
// read at the pod's age (sample, wrapping around), scaled by a per-class ratio of its own.
//
// Resampling rule, per machine and per series (CPU and memory separately):
//  - valid samples only: missing fields and the -1/101 markers are gaps, not zeros;
//  - two samples at the same time: the later row of the file wins;
//  - the grid runs from the machine's first to its last valid sample (either series), one
//    point per step; a series' value before its first / after its last sample is that
//    first / last sample (held);
//  - between two samples at most max_interpolate_gap_ms apart: linear interpolation;
//  - across a longer gap: the value before the gap is held (no invented dynamics), and the
//    point is counted in held_points so a result can report how much was filled.
// Machines with fewer than min_samples valid samples in either series are dropped. Curves
// come out ordered by machine_id (byte-wise string order).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "bridges/trace/alibaba_v2018.hpp"
#include "messages/units.hpp"

namespace colony::trace {

struct usage_curve_options {
  // Grid step. Default: 60 s (Colony choice; v2018 samples are 10-30 s apart at best,
  // about 100 s on average).
  std::int64_t step_ms = 60'000;
  // Longest gap bridged by linear interpolation. Default: 1 h (Colony choice; the bundled
  // extract has gaps up to 7.4 h, which are held instead).
  std::int64_t max_interpolate_gap_ms = 3'600'000;
  // Fewest valid samples per series for a machine to yield a curve. Default: 2.
  std::size_t min_samples = 2;
};

struct usage_curve {
  std::string machine_id;
  event_time start{};  // time of the first grid point (first valid sample)
  std::int64_t step_ms = 60'000;
  std::vector<float> cpu;       // fraction of the machine's CPU, [0, 1]
  std::vector<float> memory;    // fraction of the machine's memory, [0, 1]
  std::size_t samples = 0;      // valid input rows used (either series)
  std::size_t held_points = 0;  // grid points inside a gap longer than the bridge limit

  [[nodiscard]] std::size_t size() const { return cpu.size(); }
  [[nodiscard]] std::int64_t length_ms() const {
    return static_cast<std::int64_t>(cpu.size()) * step_ms;
  }
};

struct usage_point {
  float cpu = 0;
  float memory = 0;
};

[[nodiscard]] std::vector<usage_curve> extract_usage_curves(
    const std::vector<v2018_machine_usage>& rows, const usage_curve_options& opt = {});

// The curve's value offset_ms after its start: the grid point at or before the offset,
// wrapping around at the end (a pod may live longer than the trace). Negative offsets wrap
// too. REQUIRES: c.size() > 0.
[[nodiscard]] usage_point sample(const usage_curve& c, std::int64_t offset_ms);

// A deterministic pick of one of n curves for the entity key (e.g. a pod name) under seed:
// splitmix64(seed ^ fnv1a64(key)) mod n (multiply-shift, no modulo bias worth noting for
// n << 2^32). Same seed + key = same curve on every machine and run. REQUIRES: n > 0.
[[nodiscard]] std::size_t pick_curve(std::size_t n, std::uint64_t seed, std::string_view key);

}  // namespace colony::trace
