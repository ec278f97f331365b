// Reservation records for the sink tests, built as the components build them:
//   ReservationPhaseChanged  actors/scheduler/actor/scheduler_component.cpp
//                            emit_reservation_phase: entity Reservation/<name>, the scheduler's
//                            source, causation = the record it answered
//   ReservationUpserted      a component's decision (the descheduler's ReservationFirst
//                            migration): entity Reservation/<name>, causation set, its source;
//                            the bridge's observation of an object has causation -1
// Each record gets its log offset written in, as the log does at append.
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "messages/codec.hpp"
#include "tests/bridges/kubernetes/sink_records.hpp"

namespace colony::kube::testing {

struct phase_fields {
  std::string name, phase, reason, node, owner;
  std::int64_t cpu_milli = 0, memory_bytes = 0;
  std::int64_t time_ms = 3'000;
};

inline byte_buffer reservation_phase(std::uint64_t offset, const phase_fields& f) {
  messages::event_builder b;
  auto& fbb = b.fbb();
  resource_list alloc;
  alloc.cpu_milli = f.cpu_milli;
  alloc.memory_bytes = f.memory_bytes;
  const auto name = b.key_string(f.name);
  const auto ph = fbb.CreateString(f.phase);
  const auto node =
      f.node.empty() ? flatbuffers::Offset<flatbuffers::String>{} : fbb.CreateString(f.node);
  const auto why = fbb.CreateString(f.reason);
  const auto al = b.resources(alloc);
  const auto own =
      f.owner.empty() ? flatbuffers::Offset<flatbuffers::String>{} : fbb.CreateString(f.owner);
  const auto payload = wire::CreateReservationPhaseChanged(fbb, name, ph, node, why, al, own);
  const std::int64_t cause = static_cast<std::int64_t>(offset) - 1;
  return with_offset(b.finish(messages::header{event_time{f.time_ms}, wire::EntityKind::Reservation,
                                               f.name, cause, "koord-scheduler"},
                              payload),
                     offset);
}

// The spec of a ReservationUpserted as a migration writes it.
struct upserted_fields {
  std::string name;
  std::int64_t cpu_milli = 400, memory_bytes = 0;
  std::string node_name;
  std::int32_t priority = std::numeric_limits<std::int32_t>::max();
  // One controller owner (apiVersion, kind, name, uid, namespace), controller = true.
  std::vector<std::string> controller{"apps/v1", "ReplicaSet", "rs-1", "u-rs", "default"};
  std::int64_t ttl_ms = 5 * 60 * 1000;
  std::int64_t expires_ms = -1;
  std::vector<std::pair<std::string, std::string>> labels{
      {"app.kubernetes.io/created-by", "koord-descheduler"}};
  std::string scheduler_name = "koord-scheduler";
  std::vector<std::string> not_in_nodes;
  bool deleted = false;
  std::int64_t causation = 0;  // -1: the bridge's observation
  std::string source = "descheduler";
  std::int64_t time_ms = 2'000;
};

inline byte_buffer reservation_upserted(std::uint64_t offset, const upserted_fields& f) {
  messages::event_builder b;
  auto& fbb = b.fbb();
  resource_list req;
  req.cpu_milli = f.cpu_milli;
  req.memory_bytes = f.memory_bytes;
  const auto name = b.key_string(f.name);
  const auto uid = fbb.CreateString("");
  const auto rq = b.resources(req);
  const auto node = fbb.CreateString(f.node_name);
  const auto& c = f.controller;
  const auto cav = fbb.CreateString(c.at(0));
  const auto ck = fbb.CreateString(c.at(1));
  const auto cn = fbb.CreateString(c.at(2));
  const auto cu = fbb.CreateString(c.at(3));
  const auto cns = fbb.CreateString(c.at(4));
  const auto owner =
      wire::CreateReservationOwner(fbb, false, 0, 0, 0, true, cav, ck, cn, cu, cns, 1);
  const auto owners =
      fbb.CreateVector(std::vector<flatbuffers::Offset<wire::ReservationOwner>>{owner});
  const auto policy = fbb.CreateString("");
  const auto labels = b.key_values(f.labels);
  const auto sched = fbb.CreateString(f.scheduler_name);
  std::vector<flatbuffers::Offset<flatbuffers::String>> nn;
  nn.reserve(f.not_in_nodes.size());
  for (const auto& n : f.not_in_nodes) nn.push_back(fbb.CreateString(n));
  const auto not_in = fbb.CreateVector(nn);
  const auto payload = wire::CreateReservationUpserted(fbb, name, uid, rq, node, f.priority, owners,
                                                       f.ttl_ms, f.expires_ms, true, policy, false,
                                                       labels, sched, f.deleted, not_in);
  return with_offset(b.finish(messages::header{event_time{f.time_ms}, wire::EntityKind::Reservation,
                                               f.name, f.causation, f.source},
                              payload),
                     offset);
}

}  // namespace colony::kube::testing
