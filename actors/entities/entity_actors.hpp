// The entity actor system: one CAF actor per node, pod, elastic quota and pod migration job,
// each a thin shell over its state struct (entities.hpp), and a router that delivers events
// to entity actors by key and spawns an actor on an entity's first event.
//
// actor_host hides CAF from its users (caf/all.hpp stays in the .cpp). Events arrive in
// record_batches; the router sends each event to the actors routes() names, in log order, so
// every actor applies its events in log order (CAF keeps per sender-receiver order).
//
// Thread-safety: actor_host's methods are called from one thread; the actors run on the CAF
// scheduler's threads.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "actors/entities/entities.hpp"
#include "messages/result.hpp"
#include "messages/units.hpp"

namespace colony::entities {

// Verified records stored back to back, shared (read-only) by every actor they go to.
struct record_batch {
  std::vector<std::uint8_t> data;
  std::vector<std::uint32_t> starts;  // record i is data[starts[i], starts[i+1]) (end = size)
  void add(std::span<const std::uint8_t> rec) {
    starts.push_back(static_cast<std::uint32_t>(data.size()));
    data.insert(data.end(), rec.begin(), rec.end());
  }
  [[nodiscard]] std::size_t size() const { return starts.size(); }
  [[nodiscard]] const wire::Envelope& envelope(std::size_t i) const {
    return *wire::GetEnvelope(data.data() + starts[i]);
  }
};

struct encoded_entity {
  wire::EntityKind kind = wire::EntityKind::Unknown;
  std::string key;
  std::string state;
};

class actor_host {
 public:
  // threads: CAF scheduler threads (0 = CAF's default).
  explicit actor_host(std::size_t threads = 0);
  ~actor_host();
  actor_host(const actor_host&) = delete;
  actor_host& operator=(const actor_host&) = delete;

  // Sends a batch to the router (asynchronous).
  void deliver(std::shared_ptr<const record_batch> batch);
  // Spawns an entity actor with a state from a snapshot (asynchronous, ordered before later
  // deliveries).
  void load(wire::EntityKind kind, std::string key, std::string state);
  // Waits until everything sent before has been applied, then returns every entity's
  // canonical state in (kind, key) order.
  [[nodiscard]] result<std::vector<encoded_entity>> collect();
  // Waits until every entity actor has applied everything sent before (a barrier).
  [[nodiscard]] result<void> sync();
  // Number of entity actors alive.
  [[nodiscard]] result<std::uint64_t> actor_count();

 private:
  struct impl;
  std::unique_ptr<impl> impl_;
};

// Digest of collected states (same definition as world::digest()).
[[nodiscard]] std::uint64_t digest_of(const std::vector<encoded_entity>& states);

}  // namespace colony::entities
