// The PodMigrationJob writes of the decision sink without a server (sink_migration_job.hpp): the
// object Colony's descheduler creates, the status each phase change leaves, Go's duration text,
// and the failure path against a refused connection.
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "bridges/kubernetes/kube_time.hpp"
#include "bridges/kubernetes/sink.hpp"
#include "bridges/kubernetes/sink_migration_job.hpp"
#include "bridges/kubernetes/write_failed.hpp"
#include "tests/bridges/kubernetes/migration_job_records.hpp"

namespace colony::kube {
namespace {

using json = nlohmann::json;
using std::chrono::milliseconds;
using testing::job_created_fields;
using testing::job_phase_fields;

const wire::Envelope& envelope(const messages::byte_buffer& rec) {
  auto d = messages::decode(rec, "test record");
  EXPECT_TRUE(d) << d.error().describe();
  return *d->envelope;
}

TEST(SinkMigrationJobBodies, GoDurationAsTimeDurationString) {
  const std::vector<std::pair<std::int64_t, const char*>> cases = {
      {0, "0s"},      {300'000, "5m0s"},          {3'600'000, "1h0m0s"}, {1500, "1.5s"},
      {300, "300ms"}, {90'061'250, "25h1m1.25s"}, {61'000, "1m1s"},      {-2000, "-2s"},
      {1'000, "1s"},  {3'600'010, "1h0m0.01s"},
  };
  ASSERT_EQ(cases.size(), 10u);
  for (const auto& [ms, text] : cases) EXPECT_EQ(go_duration(ms), text) << ms;
}

// As koord-descheduler creates a job (pkg/descheduler/controllers/migration/evict.go): the
// evictor's annotations and the creating instance, podRef with the pod's uid, mode, ttl.
TEST(SinkMigrationJobBodies, TheObjectAsTheDeschedulerCreatesIt) {
  const auto rec = testing::migration_job_created(
      5, {.name = "colony-run.a.1767225900000",
          .pod = "colony-run/a",
          .reason = "node is overutilized, node cpu usage(90.00%)>threshold(75.00%)"});
  const auto* job = envelope(rec).payload_as_MigrationJobCreated();
  EXPECT_EQ(migration_job_object(*job, "uid-a"), json::parse(R"json({
    "apiVersion": "scheduling.koordinator.sh/v1alpha1", "kind": "PodMigrationJob",
    "metadata": {"name": "colony-run.a.1767225900000", "annotations": {
      "koordinator.sh/evict-reason": "node is overutilized, node cpu usage(90.00%)>threshold(75.00%)",
      "koordinator.sh/evict-trigger": "LowNodeLoad",
      "koordinator.sh/job-created-by": "koord-descheduler"}},
    "spec": {"podRef": {"namespace": "colony-run", "name": "a", "uid": "uid-a"},
             "mode": "EvictDirectly", "ttl": "5m0s"}})json"));
  // Without the uid, mode, ttl, reason or trigger; paused.
  const auto bare = testing::migration_job_created(
      6, {.name = "j", .pod = "ns/p", .mode = "", .trigger = "", .ttl_ms = 0, .paused = true});
  EXPECT_EQ(migration_job_object(*envelope(bare).payload_as_MigrationJobCreated(), ""),
            json::parse(R"json({
    "apiVersion": "scheduling.koordinator.sh/v1alpha1", "kind": "PodMigrationJob",
    "metadata": {"name": "j", "annotations": {"koordinator.sh/job-created-by": "koord-descheduler"}},
    "spec": {"podRef": {"namespace": "ns", "name": "p"}, "paused": true}})json"));
}

struct status_case {
  const char* name;
  job_phase_fields change;
  json before;  // the job's status as read (null: none)
  json after;   // what is PUT
};

// The status after each phase change, from Koordinator's controller.go (evictPodDirectly,
// evictPod, updateCondition, abortJob*, syncReservationScheduleSuccess) and util.UpdateCondition
// (lastTransitionTime kept while the condition's status holds).
TEST(SinkMigrationJobBodies, TheStatusFollowsEachPhaseChange) {
  const std::string t1 = rfc3339(1'000'000), t2 = rfc3339(2'000'000);
  const json running = {{"phase", "Running"},
                        {"status", "Eviction"},
                        {"reason", "Evicting"},
                        {"message", "Pod ns/p passed arbitration"},
                        {"conditions", json::array({{{"type", "Eviction"},
                                                     {"status", "False"},
                                                     {"reason", "Evicting"},
                                                     {"message", "Pod ns/p passed arbitration"},
                                                     {"lastTransitionTime", t1}}})}};
  json succeeded = {{"phase", "Succeeded"},
                    {"status", "Complete"},
                    {"reason", "EvictComplete"},
                    {"message", "Pod ns/p has been evicted"},
                    {"conditions", json::array({{{"type", "Eviction"},
                                                 {"status", "True"},
                                                 {"reason", "EvictComplete"},
                                                 {"message", "Pod ns/p has been evicted"},
                                                 {"lastTransitionTime", t2}}})}};
  json kept = running;
  kept["preemptedPodsRef"] = json::array({{{"name", "x"}}});
  json failed_from_running = running;
  failed_from_running["phase"] = "Failed";
  failed_from_running["reason"] = "Timeout";
  failed_from_running["message"] = "job timed out after 300000 ms";
  const std::vector<status_case> cases = {
      {"Evicting",
       {.name = "j",
        .phase = "Running",
        .reason = "Evicting",
        .message = "Pod ns/p passed arbitration",
        .time_ms = 1'000'000},
       json(),
       running},
      {"EvictComplete",
       {.name = "j",
        .phase = "Succeeded",
        .reason = "EvictComplete",
        .message = "Pod ns/p has been evicted",
        .time_ms = 2'000'000},
       running,
       succeeded},
      {"AppliedAgainChangesNothing",
       {.name = "j",
        .phase = "Running",
        .reason = "Evicting",
        .message = "Pod ns/p passed arbitration",
        .time_ms = 3'000'000},
       running,
       running},
      {"OtherFieldsAreKept",
       {.name = "j",
        .phase = "Running",
        .reason = "Evicting",
        .message = "Pod ns/p passed arbitration",
        .time_ms = 1'000'000},
       kept,
       kept},
      // Failures without a condition of their own leave status.status and the conditions.
      {"Timeout",
       {.name = "j",
        .phase = "Failed",
        .reason = "Timeout",
        .message = "job timed out after 300000 ms",
        .time_ms = 2'000'000},
       running,
       failed_from_running},
      {"MissingPodFromPending",
       {.name = "j", .phase = "Failed", .reason = "MissingPod", .message = "Pod ns/p is not found"},
       json::object(),
       {{"phase", "Failed"}, {"reason", "MissingPod"}, {"message", "Pod ns/p is not found"}}},
      {"InvalidPodRef",
       {.name = "j", .phase = "Failed", .reason = "InvalidPodRef"},
       json(),
       {{"phase", "Failed"}, {"reason", "InvalidPodRef"}}},
      {"FailedCreateReservation",
       {.name = "j",
        .phase = "Failed",
        .reason = "FailedCreateReservation",
        .message = "no reservation",
        .time_ms = 1'000'000},
       json(),
       {{"phase", "Failed"},
        {"status", "ReservationCreated"},
        {"reason", "FailedCreateReservation"},
        {"message", "no reservation"},
        {"conditions", json::array({{{"type", "ReservationCreated"},
                                     {"status", "False"},
                                     {"reason", "FailedCreateReservation"},
                                     {"message", "no reservation"},
                                     {"lastTransitionTime", t1}}})}}},
      // ReservationFirst (handleReservationCreateSuccess, syncReservationScheduleSuccess,
      // evictPod, waitForPodBindReservation; schema v8 node and pod).
      {"ReservationCreated",
       {.name = "j",
        .phase = "Running",
        .reason = "ReservationCreated",
        .message = "Reservation j created for Pod ns/p",
        .time_ms = 1'000'000},
       json(),
       {{"phase", "Running"},
        {"status", "ReservationCreated"},
        {"reason", "ReservationCreated"},
        {"message", "Reservation j created for Pod ns/p"},
        {"conditions", json::array({{{"type", "ReservationCreated"},
                                     {"status", "True"},
                                     {"reason", "ReservationCreated"},
                                     {"message", "Reservation j created for Pod ns/p"},
                                     {"lastTransitionTime", t1}}})}}},
      {"EvictedWaitingForTheReplacement",
       {.name = "j",
        .phase = "Running",
        .reason = "WaitForPodBindReservation",
        .message = "Pod ns/p has been evicted",
        .node = "n2",
        .time_ms = 2'000'000},
       {{"phase", "Running"},
        {"status", "Eviction"},
        {"reason", "Evicting"},
        {"message", "moving"},
        {"nodeName", "n2"},
        {"conditions",
         json::array(
             {{{"type", "ReservationScheduled"}, {"status", "True"}, {"lastTransitionTime", t1}},
              {{"type", "Eviction"},
               {"status", "False"},
               {"reason", "Evicting"},
               {"message", "moving"},
               {"lastTransitionTime", t1}}})}},
       {{"phase", "Running"},
        {"status", "PodBoundReservation"},
        {"reason", "WaitForPodBindReservation"},
        {"message", "Pod ns/p has been evicted"},
        {"nodeName", "n2"},
        {"conditions",
         json::array(
             {{{"type", "ReservationScheduled"}, {"status", "True"}, {"lastTransitionTime", t1}},
              {{"type", "Eviction"},
               {"status", "True"},
               {"reason", "EvictComplete"},
               {"lastTransitionTime", t2}},
              {{"type", "PodBoundReservation"},
               {"status", "False"},
               {"reason", "WaitForPodBindReservation"},
               {"message", "Pod ns/p has been evicted"},
               {"lastTransitionTime", t2}}})}}},
      {"ReservationScheduled",
       {.name = "j", .phase = "Running", .node = "n2", .time_ms = 1'000'000},
       json(),
       {{"phase", "Running"},
        {"status", "ReservationScheduled"},
        {"nodeName", "n2"},
        {"conditions", json::array({{{"type", "ReservationScheduled"},
                                     {"status", "True"},
                                     {"lastTransitionTime", t1}}})}}},
      {"BoundIntoTheReservation",
       {.name = "j",
        .phase = "Succeeded",
        .message = "Bind Pod ns/p-2 in Reservation j",
        .node = "n2",
        .pod = "ns/p-2",
        .time_ms = 2'000'000},
       {{"phase", "Running"},
        {"status", "ReservationScheduled"},
        {"nodeName", "n2"},
        {"conditions", json::array({{{"type", "ReservationScheduled"},
                                     {"status", "True"},
                                     {"lastTransitionTime", t1}}})}},
       {{"phase", "Succeeded"},
        {"status", "Complete"},
        {"message", "Bind Pod ns/p-2 in Reservation j"},
        {"nodeName", "n2"},
        {"podRef", {{"namespace", "ns"}, {"name", "p-2"}}},
        {"conditions",
         json::array(
             {{{"type", "ReservationScheduled"}, {"status", "True"}, {"lastTransitionTime", t1}},
              {{"type", "PodBoundReservation"},
               {"status", "True"},
               {"message", "Bind Pod ns/p-2 in Reservation j"},
               {"lastTransitionTime", t2}}})}}},
  };
  ASSERT_EQ(cases.size(), 12u);
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    const auto rec = testing::migration_job_phase(9, c.change);
    const auto* p = envelope(rec).payload_as_MigrationJobPhaseChanged();
    EXPECT_EQ(migration_job_status(*p, c.before, c.change.time_ms), c.after);
  }
}

decision_sink refused_sink(std::vector<milliseconds>& slept) {
  connection c;
  c.server = "https://127.0.0.1:1";
  c.token = "t";
  sink_options o;
  o.max_attempts = 2;
  o.backoff_initial = milliseconds(100);
  o.jitter = 0;
  o.sleep = [&slept](milliseconds d) { slept.push_back(d); };
  o.client.connect_timeout = milliseconds(1000);
  auto s = decision_sink::open(c, o);
  EXPECT_TRUE(s) << s.error().describe();
  return std::move(*s);
}

// A job's writes that keep failing are failed outcomes keyed to the job, which the log records
// as WriteFailed on the PodMigrationJob entity (schema v8 has no WriteKind for them: unknown).
// A user's job or abort (causation -1) is never written back.
TEST(SinkMigrationJob, FailedWritesAreOutcomesOnTheJobAndObservationsAreNotWritten) {
  std::vector<milliseconds> slept;
  auto sink = refused_sink(slept);
  for (const auto& rec :
       {testing::migration_job_created(3, {.name = "u", .pod = "ns/p", .causation = -1}),
        testing::migration_job_phase(4, {.name = "u", .phase = "Aborted", .causation = -1})}) {
    auto out = sink.apply(rec);
    ASSERT_TRUE(out) << out.error().describe();
    EXPECT_TRUE(out->empty());
  }
  EXPECT_EQ(sink.counters().ignored, 2u);
  EXPECT_EQ(sink.counters().requests, 0u);

  struct failing {
    messages::byte_buffer record;
    write_kind kind;
    std::uint32_t attempts;  // the pod's uid read (2 tries) and the create; the job's read
    const char* message;
  };
  const std::vector<failing> cases = {
      {testing::migration_job_created(7, {.name = "j", .pod = "ns/p", .causation = 2}),
       write_kind::migration_job, 4, "PodMigrationJob j: create failed after 2 attempts"},
      {testing::migration_job_phase(8, {.name = "j", .phase = "Running", .causation = 7}),
       write_kind::migration_job_status, 2, "PodMigrationJob j status: "},
  };
  for (const auto& c : cases) {
    auto out = sink.apply(c.record);
    ASSERT_TRUE(out) << out.error().describe();
    ASSERT_EQ(out->size(), 1u);
    const auto& o = (*out)[0];
    EXPECT_EQ(o.kind, c.kind);
    EXPECT_FALSE(o.ok);
    EXPECT_EQ(o.object, "j");
    EXPECT_EQ(o.attempts, c.attempts);
    EXPECT_EQ(o.message.rfind(c.message, 0), 0u) << o.message;
    const auto rec = write_failed_record(o, event_time{9000});
    const auto& env = envelope(rec);
    EXPECT_EQ(env.entity_kind(), wire::EntityKind::PodMigrationJob);
    EXPECT_EQ(messages::to_string_view(env.entity_key()), "j");
    EXPECT_EQ(env.causation(), static_cast<std::int64_t>(o.offset));
    EXPECT_EQ(env.payload_as_WriteFailed()->write(), wire::WriteKind::unknown);
  }
  EXPECT_EQ(to_string(write_kind::migration_job), "migration-job");
  EXPECT_EQ(to_string(write_kind::migration_job_status), "migration-job-status");
}

}  // namespace
}  // namespace colony::kube
