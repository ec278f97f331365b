// JSON view of events through flatc's own text generator over the embedded schema, so
// every field of every payload appears without hand-written per-type code.
#include <memory>
#include <mutex>

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
  j["payload"] = std::move(parsed);
  // Strings in a verified record may still hold bytes that are not UTF-8 (FlatBuffers does not
  // check): the JSON view replaces them with U+FFFD instead of throwing.
  return j.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
}

}  // namespace colony::messages
