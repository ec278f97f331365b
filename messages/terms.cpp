#include "messages/terms.hpp"

#include <algorithm>
#include <array>
#include <unordered_map>

#include "messages/string_map.hpp"

namespace colony::messages {

namespace {

// The shown form of a group: its identifier with '-' for '_'.
std::string shown_group(wire::TermGroup g) {
  std::string s = wire::EnumNameTermGroup(g);
  std::replace(s.begin(), s.end(), '_', '-');
  return s;
}

struct vocabulary {
  std::array<std::string, static_cast<std::size_t>(wire::TermGroup::MAX) + 1> groups;
  std::unordered_map<std::string_view, wire::TermName, string_hash, std::equal_to<>> names;
  vocabulary() {
    for (const auto g : wire::EnumValuesTermGroup())
      groups[static_cast<std::size_t>(g)] = shown_group(g);
    for (const auto n : wire::EnumValuesTermName())
      if (n != wire::TermName::unnamed) names.emplace(wire::EnumNameTermName(n), n);
  }
};

const vocabulary& vocab() {
  static const vocabulary v;
  return v;
}

}  // namespace

std::string term_name(const wire::Term& t) {
  if (t.name() != nullptr && t.name()->size() > 0) return t.name()->str();
  if (t.known() == wire::TermName::unnamed) return {};
  const auto& v = vocab();
  const auto g = static_cast<std::size_t>(t.group());
  std::string s;
  if (t.group() != wire::TermGroup::none && g < v.groups.size()) {
    s = v.groups[g];
    s += '.';
  }
  const char* known = wire::EnumNameTermName(t.known());
  if (*known == '\0')
    return s + "#" + std::to_string(static_cast<unsigned>(t.known()));  // newer vocabulary
  s += known;
  return s;
}

bool term_named(const wire::Term& t, std::string_view full) {
  if (t.name() != nullptr && t.name()->size() > 0) return t.name()->string_view() == full;
  if (t.known() == wire::TermName::unnamed) return full.empty();
  std::string_view known = wire::EnumNameTermName(t.known());
  if (t.group() == wire::TermGroup::none) return full == known;
  const auto g = static_cast<std::size_t>(t.group());
  const auto& v = vocab();
  if (g >= v.groups.size()) return false;
  const auto& group = v.groups[g];
  return full.size() == group.size() + 1 + known.size() && full.substr(0, group.size()) == group &&
         full[group.size()] == '.' && full.substr(group.size() + 1) == known;
}

wire::TermGroup term_group(std::string_view shown) {
  const auto& v = vocab();
  for (std::size_t g = 1; g < v.groups.size(); ++g)
    if (v.groups[g] == shown) return static_cast<wire::TermGroup>(g);
  return wire::TermGroup::none;
}

wire::TermName known_term(std::string_view name) {
  const auto& v = vocab();
  const auto it = v.names.find(name);
  return it == v.names.end() ? wire::TermName::unnamed : it->second;
}

term_key term_key_of(std::string_view group, std::string_view name) {
  term_key k;
  k.group = group.empty() ? wire::TermGroup::none : term_group(group);
  if (!group.empty() && k.group == wire::TermGroup::none) return {};
  k.known = known_term(name);
  if (k.known == wire::TermName::unnamed) return {};
  return k;
}

flatbuffers::Offset<flatbuffers::Vector<flatbuffers::Offset<wire::Term>>> text_terms(
    flatbuffers::FlatBufferBuilder& fbb, std::initializer_list<text_term> terms) {
  std::vector<flatbuffers::Offset<wire::Term>> out;
  out.reserve(terms.size());
  for (const auto& [name, text] : terms) {
    auto n = fbb.CreateString(name);
    auto t = fbb.CreateString(text);
    wire::TermBuilder tb(fbb);
    tb.add_name(n);
    tb.add_text(t);
    out.push_back(tb.Finish());
  }
  return fbb.CreateVector(out);
}

}  // namespace colony::messages
