#include "actors/entities/component.hpp"
#include "actors/entities/entity_actors.hpp"

namespace colony::entities {

// Here, not in entity_actors.cpp: destroying a unique_ptr<component> needs component.hpp, which
// brings the FlatBuffers schema into CAF's translation unit.
void actor_host::add_component(std::unique_ptr<component> c) { add_component_raw(c.release()); }

}  // namespace colony::entities
