// The synthetic stream of `colony log generate`, for tests that run the colony binary: writing
// it to a log, and the ledger chain its first n offsets must fold to (XXH3 over each offset's
// little-endian bytes, seeded with the chain so far).
#pragma once

#include <cstdint>
#include <string>
#include <utility>

#include <xxhash.h>

#include "tests/cli/process.hpp"

namespace colony::testing {

// Runs `colony log generate`; returns (exit code, stdout+stderr).
inline std::pair<int, std::string> generate_log(const std::string& log, std::uint64_t count,
                                                int seed, int batch) {
  return run_colony({"log", "generate", "--log", log, "--count", std::to_string(count), "--seed",
                     std::to_string(seed), "--batch", std::to_string(batch)});
}

inline std::uint64_t ledger_chain(std::uint64_t n) {
  std::uint64_t chain = 0;
  for (std::uint64_t off = 0; off < n; ++off) {
    std::uint8_t le[8];
    for (int i = 0; i < 8; ++i) le[i] = static_cast<std::uint8_t>(off >> (8 * i));
    chain = XXH3_64bits_withSeed(le, sizeof(le), chain);
  }
  return chain;
}

}  // namespace colony::testing
