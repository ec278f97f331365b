// JSON view of events through flatc's own text generator over the embedded schema, so
// every field of every payload appears without hand-written per-type code.
#include <algorithm>
#include <array>
#include <memory>
#include <mutex>
#include <string_view>

#include <flatbuffers/idl.h>
#include <nlohmann/json.hpp>

#include "messages/codec.hpp"

namespace colony::messages {

extern const char* const schema_text;

namespace {

// One parser per thread: flatbuffers::Parser is not thread-safe.
const flatbuffers::Parser* payload_parser(wire::Payload type) {
  thread_local std::vector<std::unique_ptr<flatbuffers::Parser>> parsers;
  auto idx = static_cast<std::size_t>(type);
  if (parsers.size() <= idx) parsers.resize(idx + 1);
  if (!parsers[idx]) {
    flatbuffers::IDLOptions opts;
    opts.strict_json = true;
    opts.output_default_scalars_in_json = false;
    opts.indent_step = -1;  // one line
    auto p = std::make_unique<flatbuffers::Parser>(opts);
    if (!p->Parse(schema_text)) return nullptr;
    parsers[idx] = std::move(p);
  }
  return parsers[idx].get();
}

// A vocabulary term (schema v2: group and known instead of a name string) printed with its
// composed name, as a v1 record printed it, so JSON readers see one form for both.
void name_terms(nlohmann::ordered_json& j) {
  if (j.is_array()) {
    for (auto& e : j) name_terms(e);
    return;
  }
  if (!j.is_object()) return;
  const auto k = j.find("known");
  if (k != j.end() && k->is_string() && !j.contains("name")) {
    static const std::array<std::string_view, 6> term_keys{"name", "value", "unit",
                                                           "text", "group", "known"};
    const bool is_term = std::all_of(j.items().begin(), j.items().end(), [](const auto& kv) {
      return std::find(term_keys.begin(), term_keys.end(), kv.key()) != term_keys.end();
    });
    if (is_term) {
      std::string name;
      if (const auto g = j.find("group"); g != j.end() && g->is_string()) {
        name = g->get<std::string>();
        std::replace(name.begin(), name.end(), '_', '-');
        name += '.';
      }
      name += k->get<std::string>();
      nlohmann::ordered_json t;
      t["name"] = name;
      for (const auto& kv : j.items())
        if (kv.key() != "group" && kv.key() != "known") t[kv.key()] = kv.value();
      j = std::move(t);
      return;
    }
  }
  for (auto& kv : j.items()) name_terms(kv.value());
}

}  // namespace

result<std::string> to_json(bytes_view bytes) {
  const auto* env = wire::GetEnvelope(bytes.data());
  const auto* parser = payload_parser(env->payload_type());
  if (parser == nullptr)
    return fail(errc::internal, "embedded schema failed to parse for JSON output");
  std::string payload;
  if (!flatbuffers::GenerateTextFromTable(
          *parser, env->payload(), "colony.wire." + std::string(payload_name(env->payload_type())),
          &payload))
    return fail(errc::internal, "JSON generation failed");
  nlohmann::ordered_json j;
  j["offset"] = env->offset();
  j["time_ms"] = env->event_time_ms();
  j["entity"] = std::string(entity_kind_name(env->entity_kind())) + "/" +
                std::string(to_string_view(env->entity_key()));
  j["type"] = std::string(payload_name(env->payload_type()));
  j["causation"] = env->causation();
  j["source"] = std::string(to_string_view(env->source()));
  auto parsed = nlohmann::ordered_json::parse(payload, nullptr, false);
  if (parsed.is_discarded()) return fail(errc::internal, "flatc produced invalid JSON");
  name_terms(parsed);
  j["payload"] = std::move(parsed);
  // Strings in a verified record may still hold bytes that are not UTF-8 (FlatBuffers does not
  // check): the JSON view replaces them with U+FFFD instead of throwing.
  return j.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
}

}  // namespace colony::messages
