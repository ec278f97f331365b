// PodMigrationJob records for the sink tests, built as Colony's components build them:
//   MigrationJobCreated       actors/descheduler/actor/descheduler_component.cpp evict(): entity
//                             PodMigrationJob/<job>, causation = a NodeMetricReported's offset,
//                             source "koord-descheduler", inputs: trigger (and node, pool, scope)
//   MigrationJobPhaseChanged  actors/descheduler/actor/migration_controller_component.cpp phase():
//                             same entity, causation = the job's MigrationJobCreated, source
//                             "koord-descheduler/migration-controller"
// A causation of -1 makes the record a bridge's observation (a user's job or abort).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tests/bridges/kubernetes/sink_records.hpp"

namespace colony::kube::testing {

struct job_created_fields {
  std::string name, pod, mode = "EvictDirectly", reason, trigger = "LowNodeLoad";
  std::int64_t ttl_ms = 300'000;
  std::string creator = "koord-descheduler";
  bool paused = false;
  std::int64_t causation = 0;
  std::int64_t time_ms = 1'000;
};

inline byte_buffer migration_job_created(std::uint64_t offset, const job_created_fields& f) {
  messages::event_builder b;
  auto& fbb = b.fbb();
  auto name = fbb.CreateString(f.name);
  auto pod = fbb.CreateString(f.pod);
  auto mode = fbb.CreateString(f.mode);
  auto reason = fbb.CreateString(f.reason);
  auto creator = fbb.CreateString(f.creator);
  std::vector<flatbuffers::Offset<wire::Term>> terms;
  if (!f.trigger.empty()) {
    auto tn = fbb.CreateString("trigger");
    auto tv = fbb.CreateString(f.trigger);
    wire::TermBuilder tb(fbb);
    tb.add_name(tn);
    tb.add_text(tv);
    terms.push_back(tb.Finish());
  }
  auto inputs = fbb.CreateVector(terms);
  auto payload = wire::CreateMigrationJobCreated(fbb, name, pod, mode, reason, f.ttl_ms, creator,
                                                 inputs, f.paused);
  const std::string source = f.causation < 0 ? "bridge/k8s" : "koord-descheduler";
  return with_offset(
      b.finish(messages::header{event_time{f.time_ms}, wire::EntityKind::PodMigrationJob, f.name,
                                f.causation, source},
               payload),
      offset);
}

struct job_phase_fields {
  std::string name, phase, reason, message, node, pod;
  std::int64_t causation = 0;
  std::int64_t time_ms = 2'000;
};

inline byte_buffer migration_job_phase(std::uint64_t offset, const job_phase_fields& f) {
  messages::event_builder b;
  auto& fbb = b.fbb();
  auto name = fbb.CreateString(f.name);
  auto phase = fbb.CreateString(f.phase);
  auto reason = fbb.CreateString(f.reason);
  auto message = fbb.CreateString(f.message);
  auto node = fbb.CreateString(f.node);
  auto pod = fbb.CreateString(f.pod);
  auto payload = wire::CreateMigrationJobPhaseChanged(fbb, name, phase, reason, message, node, pod);
  const std::string source =
      f.causation < 0 ? "bridge/k8s" : "koord-descheduler/migration-controller";
  return with_offset(
      b.finish(messages::header{event_time{f.time_ms}, wire::EntityKind::PodMigrationJob, f.name,
                                f.causation, source},
               payload),
      offset);
}

}  // namespace colony::kube::testing
