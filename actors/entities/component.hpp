// A component: one of Koordinator's control-plane parts (the colocation-profile webhook, the
// slo-controller, one node's koordlet, a koord-scheduler) run as an actor over the log.
//
// A component sees events in log order and answers with decision events. It is plain
// single-threaded code over its own state: the actor shell that runs it (actor_host's
// add_component) owns the threading, the subscription and where emitted events go (appended
// to the log, whose order then arbitrates: see entities::arbitrate). Policies stay in the
// policy targets; a component only keeps the view they need and turns their answers into
// events.
//
// Time is event time only: a component never reads the clock. Given the same events in the
// same order it emits the same bytes.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "colony_generated.h"
#include "messages/codec.hpp"

namespace colony::entities {

// Where a component runs. A cluster-scoped component sees every event it wants; a node-scoped
// one (a koordlet, one node's shard of the slo-controller) sees only what concerns its node:
// see step_host.hpp "Routing" for the exact rule both hosts follow.
enum class component_scope : std::uint8_t { cluster, node };

class component {
 public:
  virtual ~component() = default;

  // Stable name, used as the envelope `source` of what it emits ("koord-scheduler",
  // "slo-controller", "koordlet/node-7", ...).
  [[nodiscard]] virtual std::string_view name() const = 0;

  // Whether the component wants events of this payload type (the shell skips the others). A
  // function of the type alone, constant over the component's life: hosts may ask once.
  [[nodiscard]] virtual bool wants(wire::Payload /*type*/) const { return true; }

  // One event in log order. REQUIRES: env passed messages::decode() and carries its log
  // offset. Decision events are appended to out (built with an event_builder, causation =
  // env.offset()); the shell appends them to the log in the order given.
  virtual void on_event(const wire::Envelope& env, std::vector<messages::byte_buffer>& out) = 0;

  // Called after the last event of a delivered batch: a component that decides in rounds
  // (a scheduler draining its queue) emits here.
  virtual void on_batch_end(std::vector<messages::byte_buffer>& /*out*/) {}

  // Scope (see component_scope). Default: cluster.
  [[nodiscard]] virtual component_scope scope() const { return component_scope::cluster; }
  // The node of a node-scoped component ("" for cluster scope).
  [[nodiscard]] virtual std::string_view scope_node() const { return {}; }

  // The earliest event time at which the component wants to run although no event arrives
  // (a backoff that ends, a periodic loop, a TTL); nullopt = none. Asked after every batch and
  // wake-up; a host calls on_wakeup() once event time reaches it. Time is still event time:
  // the host drives it (virtual clock in the sim, the log's time in a cluster).
  [[nodiscard]] virtual std::optional<std::int64_t> next_wakeup_ms() const { return std::nullopt; }
  // Event time reached `now_ms` (>= next_wakeup_ms()) with no event for this component:
  // decide as at the end of a batch.
  virtual void on_wakeup(std::int64_t /*now_ms*/, std::vector<messages::byte_buffer>& /*out*/) {}
};

}  // namespace colony::entities
