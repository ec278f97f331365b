// Encoding and verify-then-decode of Colony events (colony.fbs Envelopes).
//
// Writers build events with event_builder: the payload with the generated Create*
// functions on builder.fbb(), then finish(header, payload). Readers never touch bytes
// from outside the process before decode() has verified them: decode() is the one entry
// point, and it returns the envelope or an error naming where the bytes came from.
//
// Thread-safety: event_builder is single-threaded (one per thread); decode() is pure.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "colony_generated.h"
#include "messages/resources.hpp"
#include "messages/result.hpp"
#include "messages/units.hpp"

namespace colony::messages {

// The schema version this code writes, and the oldest reader version able to read what it
// writes. Bump schema_version on every released schema change; bump compat_version only
// when old readers must refuse new records (docs/events.md).
inline constexpr std::uint16_t schema_version = 12;
inline constexpr std::uint16_t compat_version = 2;

// The compat_version a record of this payload is written with: compat_version, or the version
// that added the payload (v3: ObjectRefused, WriteFailed; v4: ObjectObserved, NodeSLOUpdated;
// v5: NodeUsageSampled; v7: ReservationUpserted, ReservationPhaseChanged; v10:
// NodeResourceTopologyUpdated; v12: NodeTopologySampled), so an older reader
// refuses such a record with "upgrade colony" and still reads the others of the same log.
[[nodiscard]] std::uint16_t compat_version_of(wire::Payload type) noexcept;

// Largest record accepted (a NodeMetric of a 110-pod node is ~10 KiB).
inline constexpr std::size_t max_record_bytes = 16 * 1024 * 1024;

using bytes_view = std::span<const std::uint8_t>;
using byte_buffer = std::vector<std::uint8_t>;

// The envelope fields a writer chooses; offset is assigned by the log.
struct header {
  event_time time{0};
  wire::EntityKind kind = wire::EntityKind::Unknown;
  std::string_view key;
  std::int64_t causation = -1;
  std::string_view source;
};

class event_builder {
 public:
  event_builder() : fbb_(1024) {}

  // The builder for payload tables. Cleared by finish().
  flatbuffers::FlatBufferBuilder& fbb() { return fbb_; }

  // Finishes an envelope around a payload built on fbb() and returns its bytes.
  template <class T>
  byte_buffer finish(const header& h, flatbuffers::Offset<T> payload) {
    return finish_raw(h, wire::PayloadTraits<T>::enum_value, payload.Union());
  }
  byte_buffer finish_raw(const header& h, wire::Payload type, flatbuffers::Offset<void> payload);

  // The record's entity key as a string for a payload field that repeats it (a node's name, a
  // pod's key): finish() then points the envelope's entity_key at the same bytes instead of
  // writing them twice. Valid until the next finish().
  flatbuffers::Offset<flatbuffers::String> key_string(std::string_view key);

  // Helpers for the shared sub-tables.
  flatbuffers::Offset<wire::Resources> resources(const resource_list& r);
  // The same with named extended resources (koordinator.sh/rdma, ...) in the order given; with
  // none, the bytes resources(r) writes.
  flatbuffers::Offset<wire::Resources> resources(
      const resource_list& r, const std::vector<std::pair<std::string, std::int64_t>>& extended);
  flatbuffers::Offset<flatbuffers::Vector<flatbuffers::Offset<wire::KeyValue>>> key_values(
      const std::vector<std::pair<std::string, std::string>>& kvs);

 private:
  flatbuffers::FlatBufferBuilder fbb_;
  std::string key_;  // what key_string() wrote, and where
  flatbuffers::Offset<flatbuffers::String> key_off_;
};

// A verified record: the envelope points into the caller's bytes, which must outlive it.
struct decoded {
  const wire::Envelope* envelope = nullptr;
  [[nodiscard]] wire::Payload type() const { return envelope->payload_type(); }
};

// Verifies bytes as an Envelope (size, file identifier, FlatBuffers verifier with depth
// and table limits, known payload type, compat_version) and returns it. where names the
// source ("log data/log offset 42", "kafka topic/3@17") and prefixes every error.
[[nodiscard]] result<decoded> decode(bytes_view bytes, std::string_view where);

// Writes the log offset into an encoded envelope in place. The field is always present in
// buffers made by event_builder; returns false if it is not (then the record is refused).
[[nodiscard]] bool patch_offset(std::span<std::uint8_t> bytes, log_offset offset);

// Reading helpers.
[[nodiscard]] resource_list to_resource_list(const wire::Resources* r);
[[nodiscard]] std::string_view to_string_view(const flatbuffers::String* s);
[[nodiscard]] std::string_view payload_name(wire::Payload type);
// "node", "pod", "quota", "job", "cluster": the KIND of `--entity KIND/KEY`.
[[nodiscard]] std::string_view entity_kind_name(wire::EntityKind kind);
[[nodiscard]] result<wire::EntityKind> parse_entity_kind(std::string_view name);

// JSON view of one verified record (for humans and `colony log dump`): one line,
// {"offset":..,"time_ms":..,"entity":"pod/ns/a","type":"PodScheduled","causation":..,
//  "source":..,"payload":{...}} with the payload as flatc's strict JSON.
[[nodiscard]] result<std::string> to_json(bytes_view verified_bytes);

}  // namespace colony::messages
