// Feeding a component the way its actor does: every wanted envelope to on_event, then one
// on_batch_end; returns what the component emitted. Shared by the component tests so that each
// feeds exactly as the actor would.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "colony_generated.h"
#include "messages/codec.hpp"

namespace colony::testing {

// Feeds records [from, to) of an in-memory log (anything with `records` and `at(offset)`).
template <class Component, class Log>
std::vector<messages::byte_buffer> feed(Component& c, const Log& log, std::uint64_t from = 0,
                                        std::uint64_t to = ~0ull) {
  std::vector<messages::byte_buffer> out;
  for (auto i = from; i < log.records.size() && i < to; ++i) {
    const auto& env = log.at(i);
    if (c.wants(env.payload_type())) c.on_event(env, out);
  }
  c.on_batch_end(out);
  return out;
}

// Appends what a component emitted to the log (anything with `append_bytes`) and feeds it
// back to the component, as its actor would.
template <class Component, class Log>
std::vector<messages::byte_buffer> loop_back(Component& c, Log& log,
                                             std::vector<messages::byte_buffer> emitted) {
  const auto from = log.records.size();
  for (auto& b : emitted) (void)log.append_bytes(std::move(b));
  return feed(c, log, from);
}

// Delivers `recs` as one batch: each is stamped with the next offset and kept in `kept`
// (envelopes must outlive on_event), as a log append then a delivery would.
template <class Component, class Stamp>
std::vector<messages::byte_buffer> feed_batch(Component& c, Stamp& stamp,
                                              std::vector<messages::byte_buffer>& kept,
                                              std::vector<messages::byte_buffer> recs) {
  std::vector<messages::byte_buffer> out;
  for (auto& r : recs) {
    kept.push_back(stamp(std::move(r)));
    const auto& env = *wire::GetEnvelope(kept.back().data());
    if (c.wants(env.payload_type())) c.on_event(env, out);
  }
  c.on_batch_end(out);
  return out;
}

}  // namespace colony::testing
