// The Term list of an event (eviction/suppression inputs) as a name -> value map, so tests can
// look terms up by name (vocabulary terms by their composed name); a missing list reads as
// empty.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "colony_generated.h"
#include "messages/codec.hpp"
#include "messages/terms.hpp"

namespace colony::testing {

inline std::map<std::string, std::int64_t> terms_of(
    const flatbuffers::Vector<flatbuffers::Offset<wire::Term>>* v) {
  std::map<std::string, std::int64_t> m;
  if (v != nullptr)
    for (const auto* t : *v) m[messages::term_name(*t)] = t->value();
  return m;
}

}  // namespace colony::testing
