#include "messages/codec.hpp"

#include <string>

namespace colony::messages {

byte_buffer event_builder::finish_raw(const header& h, wire::Payload type,
                                      flatbuffers::Offset<void> payload) {
  auto key = !key_off_.IsNull() && h.key == key_ ? key_off_
                                                 : fbb_.CreateString(h.key.data(), h.key.size());
  key_off_ = {};
  auto source = fbb_.CreateString(h.source.data(), h.source.size());
  wire::EnvelopeBuilder b(fbb_);
  // offset must be physically present (even when 0) so the log can patch it in place.
  fbb_.ForceDefaults(true);
  b.add_offset(0);
  fbb_.ForceDefaults(false);
  b.add_event_time_ms(h.time.value);
  b.add_causation(h.causation);
  b.add_payload(payload);
  b.add_entity_key(key);
  b.add_source(source);
  b.add_schema_version(schema_version);
  b.add_compat_version(compat_version_of(type));
  b.add_entity_kind(h.kind);
  b.add_payload_type(type);
  fbb_.Finish(b.Finish(), wire::EnvelopeIdentifier());
  byte_buffer out(fbb_.GetBufferPointer(), fbb_.GetBufferPointer() + fbb_.GetSize());
  fbb_.Clear();
  return out;
}

flatbuffers::Offset<flatbuffers::String> event_builder::key_string(std::string_view key) {
  key_.assign(key);
  key_off_ = fbb_.CreateString(key.data(), key.size());
  return key_off_;
}

std::uint16_t compat_version_of(wire::Payload type) noexcept {
  switch (type) {
    case wire::Payload::ObjectRefused:
    case wire::Payload::WriteFailed:
      return 3;
    case wire::Payload::ObjectObserved:
    case wire::Payload::NodeSLOUpdated:
      return 4;
    case wire::Payload::NodeUsageSampled:
      return 5;
    case wire::Payload::ReservationUpserted:
    case wire::Payload::ReservationPhaseChanged:
      return 7;
    case wire::Payload::NodeResourceTopologyUpdated:
      return 10;
    case wire::Payload::NodeTopologySampled:
      return 12;
    default:
      return compat_version;
  }
}

namespace {
// One field order for every Resources table (extended last, only when given), so a list
// without extended resources has the same bytes whichever overload wrote it.
flatbuffers::Offset<wire::Resources> build_resources(
    flatbuffers::FlatBufferBuilder& fbb, const resource_list& r,
    flatbuffers::Offset<flatbuffers::Vector<flatbuffers::Offset<wire::NamedQuantity>>> ext) {
  wire::ResourcesBuilder b(fbb);
  b.add_cpu_milli(r.cpu_milli);
  b.add_memory_bytes(r.memory_bytes);
  b.add_batch_cpu_milli(r.batch_cpu_milli);
  b.add_batch_memory_bytes(r.batch_memory_bytes);
  b.add_mid_cpu_milli(r.mid_cpu_milli);
  b.add_mid_memory_bytes(r.mid_memory_bytes);
  b.add_gpu(r.gpu);
  b.add_gpu_core(r.gpu_core);
  b.add_gpu_memory_bytes(r.gpu_memory_bytes);
  b.add_gpu_memory_ratio(r.gpu_memory_ratio);
  b.add_pods(r.pods);
  if (!ext.IsNull()) b.add_extended(ext);
  return b.Finish();
}
}  // namespace

flatbuffers::Offset<wire::Resources> event_builder::resources(const resource_list& r) {
  return build_resources(fbb_, r, {});
}

flatbuffers::Offset<wire::Resources> event_builder::resources(
    const resource_list& r, const std::vector<std::pair<std::string, std::int64_t>>& extended) {
  if (extended.empty()) return resources(r);
  std::vector<flatbuffers::Offset<wire::NamedQuantity>> named;
  named.reserve(extended.size());
  for (const auto& [name, v] : extended) {
    const auto n = fbb_.CreateString(name);
    named.push_back(wire::CreateNamedQuantity(fbb_, n, v));
  }
  return build_resources(fbb_, r, fbb_.CreateVector(named));
}

flatbuffers::Offset<flatbuffers::Vector<flatbuffers::Offset<wire::KeyValue>>>
event_builder::key_values(const std::vector<std::pair<std::string, std::string>>& kvs) {
  std::vector<flatbuffers::Offset<wire::KeyValue>> v;
  v.reserve(kvs.size());
  for (const auto& [k, val] : kvs)
    v.push_back(wire::CreateKeyValueDirect(fbb_, k.c_str(), val.c_str()));
  return fbb_.CreateVector(v);
}

result<decoded> decode(bytes_view bytes, std::string_view where) {
  auto err = [&](errc c, std::string msg) { return fail(c, std::move(msg), std::string(where)); };
  if (bytes.size() < 12)
    return err(errc::corrupt,
               "record of " + std::to_string(bytes.size()) + " bytes is too short for an envelope");
  if (bytes.size() > max_record_bytes)
    return err(errc::corrupt, "record of " + std::to_string(bytes.size()) + " bytes exceeds " +
                                  std::to_string(max_record_bytes));
  if (!flatbuffers::BufferHasIdentifier(bytes.data(), wire::EnvelopeIdentifier()))
    return err(errc::corrupt, "not a Colony envelope (file identifier is not CLNY)");
  // Depth 64 and 1M tables bound the work an adversarial buffer can cause.
  flatbuffers::Verifier v(bytes.data(), bytes.size(), 64, 1000000);
  if (!wire::VerifyEnvelopeBuffer(v))
    return err(errc::corrupt,
               "FlatBuffers verification of the envelope failed "
               "(truncated or corrupt record)");
  const auto* env = wire::GetEnvelope(bytes.data());
  if (env->compat_version() > schema_version)
    return err(errc::failed_precondition, "record needs a reader of schema version >= " +
                                              std::to_string(env->compat_version()) + ", this is " +
                                              std::to_string(schema_version) + "; upgrade colony");
  auto type = env->payload_type();
  // The generated verifier accepts unknown union types without looking at them.
  if (type == wire::Payload::NONE || type > wire::Payload::MAX)
    return err(errc::invalid_input, "unknown payload type " +
                                        std::to_string(static_cast<int>(type)) +
                                        " (this schema knows 1.." +
                                        std::to_string(static_cast<int>(wire::Payload::MAX)) + ")");
  if (env->payload() == nullptr)
    return err(errc::corrupt,
               "envelope has payload type " + std::string(payload_name(type)) + " but no payload");
  if (env->entity_key() == nullptr) return err(errc::corrupt, "envelope has no entity key");
  return decoded{env};
}

bool patch_offset(std::span<std::uint8_t> bytes, log_offset offset) {
  auto* env = wire::GetMutableEnvelope(bytes.data());
  return env->mutate_offset(offset);
}

resource_list to_resource_list(const wire::Resources* r) {
  resource_list out;
  if (r == nullptr) return out;
  out.cpu_milli = r->cpu_milli();
  out.memory_bytes = r->memory_bytes();
  out.batch_cpu_milli = r->batch_cpu_milli();
  out.batch_memory_bytes = r->batch_memory_bytes();
  out.mid_cpu_milli = r->mid_cpu_milli();
  out.mid_memory_bytes = r->mid_memory_bytes();
  out.gpu = r->gpu();
  out.gpu_core = r->gpu_core();
  out.gpu_memory_bytes = r->gpu_memory_bytes();
  out.gpu_memory_ratio = r->gpu_memory_ratio();
  out.pods = r->pods();
  return out;
}

std::string_view to_string_view(const flatbuffers::String* s) {
  return s == nullptr ? std::string_view{} : std::string_view(s->data(), s->size());
}

std::string_view payload_name(wire::Payload type) {
  if (type > wire::Payload::MAX) return "Unknown";
  return wire::EnumNamePayload(type);
}

std::string_view entity_kind_name(wire::EntityKind kind) {
  switch (kind) {
    case wire::EntityKind::Node:
      return "node";
    case wire::EntityKind::Pod:
      return "pod";
    case wire::EntityKind::ElasticQuota:
      return "quota";
    case wire::EntityKind::PodMigrationJob:
      return "job";
    case wire::EntityKind::Cluster:
      return "cluster";
    case wire::EntityKind::Object:
      return "object";
    case wire::EntityKind::Reservation:
      return "reservation";
    case wire::EntityKind::Unknown:
      break;
  }
  return "unknown";
}

result<wire::EntityKind> parse_entity_kind(std::string_view name) {
  for (auto k : {wire::EntityKind::Node, wire::EntityKind::Pod, wire::EntityKind::ElasticQuota,
                 wire::EntityKind::PodMigrationJob, wire::EntityKind::Cluster,
                 wire::EntityKind::Object, wire::EntityKind::Reservation})
    if (entity_kind_name(k) == name) return k;
  return fail(errc::invalid_input,
              "unknown entity kind '" + std::string(name) +
                  "' (expected node, pod, quota, job, cluster, object or reservation)",
              "--entity");
}

}  // namespace colony::messages
