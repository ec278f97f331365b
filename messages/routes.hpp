// routes(): which entities an event touches, by event content only. It sits beside the schema
// because every reader of the log needs it: the entity fold and the actor router deliver an
// event to these entities, and the Kafka store writes an event into the partition of each (so
// every partition alone rebuilds its entities).
//
// Own entity first (the envelope's kind/key when it is a node, pod, elastic quota or pod
// migration job), then the entity its payload names: a PodScheduled or PodBindRejected keyed by
// its node also touches its pod, a PodEvicted or PodFinished keyed by its pod also touches its
// node. An ObjectObserved (schema v4) touches its own Object entity only. A Reservation's
// events (schema v7) touch it, and a ReservationPhaseChanged naming a node touches that node.
// Cluster-scoped events (configuration, clock ticks) touch no entity, and neither do ObjectRefused
// and WriteFailed (schema v3), which are keyed to an entity but change nothing.
#pragma once

#include <cstdint>
#include <string_view>

#include "colony_generated.h"

namespace colony::messages {

// An entity an event is delivered to.
struct entity_ref {
  wire::EntityKind kind = wire::EntityKind::Unknown;
  std::string_view key;
  bool operator==(const entity_ref&) const = default;
};

// At most 2 entities; keys point into the envelope.
struct route_list {
  entity_ref refs[2];
  std::uint8_t size = 0;
  void push(wire::EntityKind k, std::string_view key);
};

// REQUIRES: env passed messages::decode() (verified).
[[nodiscard]] route_list routes(const wire::Envelope& env);

}  // namespace colony::messages
