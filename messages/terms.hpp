// Term names on the wire (schema v2): a decision's explanation terms name themselves either by a
// string or, for the vocabulary in colony.fbs (TermGroup, TermName), by two small numbers, which
// keeps the slo-controller's NodeBatchResourceUpdated (~70 terms) at a third of its v1 size.
// term_name() gives every reader the same composed name; known_term() is the writers' lookup.
#pragma once

#include <initializer_list>
#include <string>
#include <string_view>
#include <utility>

#include "colony_generated.h"

namespace colony::messages {

// A decision's text inputs as Terms (name, text), in the order given: the strings are created
// before each Term (never as sibling arguments).
using text_term = std::pair<std::string_view, std::string_view>;
[[nodiscard]] flatbuffers::Offset<flatbuffers::Vector<flatbuffers::Offset<wire::Term>>> text_terms(
    flatbuffers::FlatBufferBuilder& fbb, std::initializer_list<text_term> terms);

// "<group>.<known>" for a vocabulary term (group batch_cpu shown as "batch-cpu"; group none:
// "<known>"), else the term's own name ("" when it has neither).
[[nodiscard]] std::string term_name(const wire::Term& t);

// Whether a term is named `full` ("mid.resetReason"), without composing its name.
[[nodiscard]] bool term_named(const wire::Term& t, std::string_view full);

// A term's group by its shown name ("batch-cpu" -> batch_cpu); none when not in the vocabulary.
[[nodiscard]] wire::TermGroup term_group(std::string_view shown);
// A term name's vocabulary value; unnamed when not in the vocabulary.
[[nodiscard]] wire::TermName known_term(std::string_view name);

// How a writer names a term "<group>.<name>": by vocabulary when both are in it (then
// group != none and known != unnamed), else by the string.
struct term_key {
  wire::TermGroup group = wire::TermGroup::none;
  wire::TermName known = wire::TermName::unnamed;
  [[nodiscard]] bool by_vocabulary() const { return known != wire::TermName::unnamed; }
};
[[nodiscard]] term_key term_key_of(std::string_view group, std::string_view name);

}  // namespace colony::messages
