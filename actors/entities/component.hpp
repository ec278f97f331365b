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

#include <string_view>
#include <vector>

#include "colony_generated.h"
#include "messages/codec.hpp"

namespace colony::entities {

class component {
 public:
  virtual ~component() = default;

  // Stable name, used as the envelope `source` of what it emits ("koord-scheduler",
  // "slo-controller", "koordlet/node-7", ...).
  [[nodiscard]] virtual std::string_view name() const = 0;

  // Whether the component wants events of this payload type (the shell skips the others).
  [[nodiscard]] virtual bool wants(wire::Payload /*type*/) const { return true; }

  // One event in log order. REQUIRES: env passed messages::decode() and carries its log
  // offset. Decision events are appended to out (built with an event_builder, causation =
  // env.offset()); the shell appends them to the log in the order given.
  virtual void on_event(const wire::Envelope& env, std::vector<messages::byte_buffer>& out) = 0;

  // Called after the last event of a delivered batch: a component that decides in rounds
  // (a scheduler draining its queue) emits here.
  virtual void on_batch_end(std::vector<messages::byte_buffer>& /*out*/) {}
};

}  // namespace colony::entities
