// colony::kube::write_failed_record: a write the decision sink gave up (a write_outcome with ok
// false) as the WriteFailed record (colony.fbs, schema v3) that colony run appends to the log,
// so that a write that keeps failing is an event in the log, never a silent drop.
//
// Thread-safety: a pure function.
#pragma once

#include <string_view>

#include "bridges/kubernetes/sink.hpp"
#include "messages/codec.hpp"

namespace colony::kube {

// The envelope source of WriteFailed records written for the decision sink.
inline constexpr std::string_view sink_source = "kube-sink";

[[nodiscard]] wire::WriteKind to_wire(write_kind k) noexcept;

// WriteFailed for `o`: causation o.offset (the decision it failed to carry out), the write kind,
// object, HTTP status of the last answer, attempts and message; keyed to the object written (Node
// name for node resources, NodeSLOs and NodeMetrics, ElasticQuota name, Reservation name for the
// Reservation writes, PodMigrationJob name for the PodMigrationJob writes, Pod namespace/name
// otherwise). The Reservation and PodMigrationJob writes have no WriteKind in schema v8:
// `unknown`, the message names the write. Same arguments, same bytes.
[[nodiscard]] messages::byte_buffer write_failed_record(const write_outcome& o, event_time t,
                                                        std::string_view source = sink_source);

}  // namespace colony::kube
