// colony::kube::write_failed_record (write_failed.hpp).
#include "bridges/kubernetes/write_failed.hpp"

#include <algorithm>
#include <limits>

namespace colony::kube {

wire::WriteKind to_wire(write_kind k) noexcept {
  switch (k) {
    case write_kind::binding:
      return wire::WriteKind::binding;
    case write_kind::pod_condition:
      return wire::WriteKind::pod_condition;
    case write_kind::event:
      return wire::WriteKind::event;
    case write_kind::node_resources:
      return wire::WriteKind::node_resources;
    case write_kind::eviction:
      return wire::WriteKind::eviction;
    case write_kind::quota_status:
      return wire::WriteKind::quota_status;
    case write_kind::node_slo:
      return wire::WriteKind::node_slo;
    case write_kind::node_metric:
      return wire::WriteKind::node_metric;
    case write_kind::node_topology:
      return wire::WriteKind::node_topology;
    case write_kind::node_annotations:
      // Schema v12 has no WriteKind for it: the record's message names the write.
      return wire::WriteKind::unknown;
    case write_kind::reservation_status:
    case write_kind::reservation:
    case write_kind::migration_job:
    case write_kind::migration_job_status:
    case write_kind::quota:
      // Schema v8 has no WriteKind for them (colony.fbs is released): the record's message
      // names the write, its entity the Reservation or the PodMigrationJob.
      return wire::WriteKind::unknown;
  }
  return wire::WriteKind::unknown;
}

messages::byte_buffer write_failed_record(const write_outcome& o, event_time t,
                                          std::string_view source) {
  messages::event_builder b;
  auto& fbb = b.fbb();
  // Schema field order, one creating call per statement (docs/events.md).
  const auto object = fbb.CreateString(o.object);
  const auto message = fbb.CreateString(o.message);
  const auto clamp = [](auto v) {
    return static_cast<std::int32_t>(
        std::min<long long>(static_cast<long long>(v), std::numeric_limits<std::int32_t>::max()));
  };
  const auto payload = wire::CreateWriteFailed(fbb, to_wire(o.kind), object, clamp(o.http_status),
                                               clamp(o.attempts), message);
  messages::header h;
  h.time = t;
  h.kind = o.kind == write_kind::node_resources || o.kind == write_kind::node_slo ||
                   o.kind == write_kind::node_metric || o.kind == write_kind::node_topology ||
                   o.kind == write_kind::node_annotations
               ? wire::EntityKind::Node
           : o.kind == write_kind::quota_status || o.kind == write_kind::quota
               ? wire::EntityKind::ElasticQuota
           : o.kind == write_kind::reservation_status || o.kind == write_kind::reservation
               ? wire::EntityKind::Reservation
           : o.kind == write_kind::migration_job || o.kind == write_kind::migration_job_status
               ? wire::EntityKind::PodMigrationJob
               : wire::EntityKind::Pod;
  h.key = o.object;
  h.causation = static_cast<std::int64_t>(o.offset);
  h.source = source;
  return b.finish(h, payload);
}

}  // namespace colony::kube
