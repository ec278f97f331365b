#include "messages/routes.hpp"

#include "messages/codec.hpp"

namespace colony::messages {

void route_list::push(wire::EntityKind k, std::string_view key) {
  entity_ref r{k, key};
  for (std::uint8_t i = 0; i < size; ++i)
    if (refs[i] == r) return;
  if (size < 2) refs[size++] = r;
}

route_list routes(const wire::Envelope& env) {
  using P = wire::Payload;
  using K = wire::EntityKind;
  route_list out;
  // Records for people and the audit: they change no entity, so they reach none (and a refused
  // pod never seen before gets no empty entity from its refusal).
  if (env.payload_type() == P::ObjectRefused || env.payload_type() == P::WriteFailed) return out;
  const auto kind = env.entity_kind();
  if (kind == K::Node || kind == K::Pod || kind == K::ElasticQuota || kind == K::PodMigrationJob ||
      kind == K::Reservation)
    out.push(kind, to_string_view(env.entity_key()));
  // A recorded object (schema v4) is its own entity and touches no other: nothing in it is a
  // node, pod or quota Colony's fold knows (a Reservation's node is not a binding). A Device
  // object also reaches its node (named after it): the node's GPUs are the Device's.
  if (kind == K::Object && env.payload_type() == P::ObjectObserved) {
    out.push(kind, to_string_view(env.entity_key()));
    const auto* o = env.payload_as_ObjectObserved();
    if (to_string_view(o->kind()) == "Device" && o->name() && o->name()->size())
      out.push(K::Node, to_string_view(o->name()));
  }
  auto both = [&](const flatbuffers::String* pod, const flatbuffers::String* node) {
    if (pod && pod->size()) out.push(K::Pod, to_string_view(pod));
    if (node && node->size()) out.push(K::Node, to_string_view(node));
  };
  switch (env.payload_type()) {
    case P::PodScheduled: {
      const auto* e = env.payload_as_PodScheduled();
      both(e->pod(), e->node());
      break;
    }
    case P::PodBindRejected: {
      const auto* e = env.payload_as_PodBindRejected();
      both(e->pod(), e->node());
      break;
    }
    case P::PodEvicted: {
      const auto* e = env.payload_as_PodEvicted();
      both(e->pod(), e->node());
      break;
    }
    case P::PodFinished: {
      const auto* e = env.payload_as_PodFinished();
      both(e->pod(), e->node());
      break;
    }
    case P::ReservationPhaseChanged: {
      // The node holds what an Available reservation keeps for its owners.
      const auto* e = env.payload_as_ReservationPhaseChanged();
      if (e->node() && e->node()->size()) out.push(K::Node, to_string_view(e->node()));
      break;
    }
    default:
      break;
  }
  return out;
}

}  // namespace colony::messages
