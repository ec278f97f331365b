// Shared by the translation tests: the objects under tests/data/kubernetes/ (written as a 1.34
// kube-apiserver returns them) and decoding of what the translation emits.
#pragma once

#include <fstream>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "bridges/kubernetes/translate.hpp"
#include "messages/codec.hpp"

namespace colony::kube::testing {

using json = nlohmann::json;

// The event time every test translates at: 2026-01-01T00:05:00Z in ms.
inline constexpr event_time t0{1767225900000};

inline json load(std::string_view file) {
  std::ifstream in(std::string(COLONY_KUBE_DATA) + "/" + std::string(file));
  EXPECT_TRUE(in.good()) << "cannot open " << file;
  std::stringstream ss;
  ss << in.rdbuf();
  return json::parse(ss.str());
}

// Verifies every record (as any reader must) and returns the envelopes; they point into
// `events`, which must outlive them.
inline std::vector<const wire::Envelope*> decode_all(const event_list& events) {
  std::vector<const wire::Envelope*> out;
  for (const auto& e : events) {
    auto d = messages::decode(e, "translation");
    EXPECT_TRUE(d.has_value()) << (d ? "" : d.error().describe());
    if (d) out.push_back(d->envelope);
  }
  return out;
}

inline std::string str(const flatbuffers::String* s) {
  return std::string(messages::to_string_view(s));
}

inline std::vector<std::pair<std::string, std::string>> kvs(
    const flatbuffers::Vector<flatbuffers::Offset<wire::KeyValue>>* v) {
  std::vector<std::pair<std::string, std::string>> out;
  if (v != nullptr)
    for (const auto* kv : *v) out.emplace_back(str(kv->key()), str(kv->value()));
  return out;
}

inline std::vector<std::pair<std::string, std::int64_t>> extended(const wire::Resources* r) {
  std::vector<std::pair<std::string, std::int64_t>> out;
  if (r != nullptr && r->extended() != nullptr)
    for (const auto* q : *r->extended()) out.emplace_back(str(q->name()), q->value());
  return out;
}

}  // namespace colony::kube::testing
