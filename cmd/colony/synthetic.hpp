// A deterministic synthetic event stream for recovery tests, soak runs and benchmarks:
// event number `seq` is a pure function of (seed, seq), so a writer killed at any point and
// restarted at the log's end produces exactly the log an uninterrupted writer would.
//   seq < nodes: NodeRegistered; then per pod p three events: PodSubmitted, PodScheduled on a
//   node picked by hash, PodFinished.
#pragma once

#include <cstdint>

#include "messages/codec.hpp"

namespace colony::cli {

inline constexpr std::uint64_t synthetic_nodes = 16;

[[nodiscard]] messages::byte_buffer synthetic_event(messages::event_builder& b, std::uint64_t seed,
                                                    std::uint64_t seq);

}  // namespace colony::cli
