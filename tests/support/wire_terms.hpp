// The Term list of an event (eviction/suppression inputs) as a name -> value map, so tests can
// look terms up by name; a missing list reads as empty.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "colony_generated.h"
#include "messages/codec.hpp"

namespace colony::testing {

inline std::map<std::string, std::int64_t> terms_of(
    const flatbuffers::Vector<flatbuffers::Offset<wire::Term>>* v) {
  std::map<std::string, std::int64_t> m;
  if (v != nullptr)
    for (const auto* t : *v) m[std::string(messages::to_string_view(t->name()))] = t->value();
  return m;
}

}  // namespace colony::testing
