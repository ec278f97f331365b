// decision_sink's Reservation writes without a server (bridges/kubernetes/sink_reservation.cpp):
// the status koord-scheduler writes per phase, what counts as already written or stale, the
// object a component's ReservationUpserted creates (read back by the bridge's translation to
// the same spec), and the failure path against a refused connection.
#include <gtest/gtest.h>

#include <chrono>
#include <limits>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "bridges/kubernetes/sink.hpp"
#include "bridges/kubernetes/translate.hpp"
#include "bridges/kubernetes/write_failed.hpp"
#include "messages/codec.hpp"
#include "tests/bridges/kubernetes/reservation_records.hpp"

namespace colony::kube {
namespace {

using json = nlohmann::json;
using messages::to_string_view;
using std::chrono::milliseconds;

constexpr const char* t1 = "2026-01-01T00:00:01Z";
constexpr const char* t2 = "2026-01-01T00:00:02Z";

reservation_phase_write available() {
  return {.phase = "Available",
          .node = "n1",
          .reason = "Scheduled",
          .allocatable = json{{"cpu", "3"}, {"memory", "4Gi"}},
          .owner_ns = {},
          .owner_name = {},
          .owner_uid = {},
          .time = t1};
}

TEST(SinkReservationStatus, AvailableAsSetReservationAvailable) {
  const json st = reservation_status(json(), available());
  EXPECT_EQ(st, json::parse(R"({"phase":"Available","nodeName":"n1",
      "allocatable":{"cpu":"3","memory":"4Gi"},
      "conditions":[
        {"type":"Scheduled","status":"True","reason":"Scheduled",
         "lastProbeTime":"2026-01-01T00:00:01Z","lastTransitionTime":"2026-01-01T00:00:01Z"},
        {"type":"Ready","status":"True","reason":"Available",
         "lastProbeTime":"2026-01-01T00:00:01Z","lastTransitionTime":"2026-01-01T00:00:01Z"}]})"));
  // Written again later: the same facts, so nothing to write; times do not count, quantities
  // compare by value.
  auto later = available();
  later.time = t2;
  later.allocatable = json{{"cpu", "3000m"}, {"memory", "4096Mi"}};
  EXPECT_TRUE(reservation_status_holds(st, reservation_status(st, later)));
  auto elsewhere = available();
  elsewhere.node = "n2";
  EXPECT_FALSE(reservation_status_holds(st, reservation_status(st, elsewhere)));
}

TEST(SinkReservationStatus, UnschedulableKeepsThePhaseAndAScheduledCondition) {
  reservation_phase_write w{.phase = "Pending", .reason = "Unschedulable", .time = t1};
  const json st = reservation_status(json(), w);
  EXPECT_EQ(st["phase"], "Pending");
  ASSERT_EQ(st["conditions"].size(), 1u);
  EXPECT_EQ(st["conditions"][0]["type"], "Scheduled");
  EXPECT_EQ(st["conditions"][0]["status"], "False");
  EXPECT_EQ(st["conditions"][0]["reason"], "Unschedulable");
  w.time = t2;
  EXPECT_TRUE(reservation_status_holds(st, reservation_status(st, w)));
  // Over a scheduled reservation it is an older record (a replay): stale, never written.
  const json placed = reservation_status(json(), available());
  EXPECT_TRUE(reservation_phase_is_stale(placed, "Pending"));
  EXPECT_FALSE(reservation_phase_is_stale(st, "Available"));
  EXPECT_FALSE(reservation_phase_is_stale(json(), "Pending"));
}

TEST(SinkReservationStatus, SucceededNamesItsOwnerAndFlipsReady) {
  const json placed = reservation_status(json(), available());
  reservation_phase_write w{.phase = "Succeeded",
                            .reason = "Succeeded",
                            .owner_ns = "default",
                            .owner_name = "web-1",
                            .owner_uid = "u-1",
                            .time = t2};
  const json st = reservation_status(placed, w);
  EXPECT_EQ(st["phase"], "Succeeded");
  EXPECT_EQ(st["nodeName"], "n1");
  EXPECT_EQ(st["currentOwners"],
            json::parse(R"([{"namespace":"default","name":"web-1","uid":"u-1"}])"));
  ASSERT_EQ(st["conditions"].size(), 2u);
  EXPECT_EQ(st["conditions"][0]["status"], "True");  // Scheduled stays
  const json& ready = st["conditions"][1];
  EXPECT_EQ(ready["type"], "Ready");
  EXPECT_EQ(ready["status"], "False");
  EXPECT_EQ(ready["reason"], "Succeeded");
  EXPECT_EQ(ready["lastTransitionTime"], t2);  // the status changed
  EXPECT_FALSE(reservation_status_holds(placed, st));
  // Final: an older Available or a later Failed record does not undo it.
  EXPECT_TRUE(reservation_phase_is_stale(st, "Available"));
  EXPECT_TRUE(reservation_phase_is_stale(st, "Failed"));
  EXPECT_FALSE(reservation_phase_is_stale(st, "Succeeded"));
}

TEST(SinkReservationStatus, ExpiredAsSetReservationExpired) {
  const json placed = reservation_status(json(), available());
  reservation_phase_write w{.phase = "Failed", .reason = "Expired", .time = t2};
  const json st = reservation_status(placed, w);
  EXPECT_EQ(st["phase"], "Failed");
  EXPECT_EQ(st["conditions"][1]["reason"], "Expired");
  EXPECT_EQ(st["conditions"][1]["status"], "False");
  // Expired without a Ready condition (never placed): appended.
  const json pending =
      reservation_status(json(), {.phase = "Pending", .reason = "Unschedulable", .time = t1});
  const json expired = reservation_status(pending, w);
  ASSERT_EQ(expired["conditions"].size(), 2u);
  EXPECT_EQ(expired["conditions"][1]["type"], "Ready");
  EXPECT_EQ(expired["conditions"][1]["reason"], "Expired");
}

TEST(SinkReservationObject, AsAMigrationCreatesIt) {
  testing::upserted_fields f;
  f.name = "pmj-1";
  f.cpu_milli = 1500;
  f.memory_bytes = 2LL << 30;
  f.not_in_nodes = {"n1"};
  f.labels.emplace_back("scheduling.koordinator.sh/reservation-order", "1767225900000");
  const auto rec = testing::reservation_upserted(5, f);
  const auto* r = wire::GetEnvelope(rec.data())->payload_as_ReservationUpserted();
  const json o = reservation_object(*r);
  EXPECT_EQ(o, json::parse(R"({
    "apiVersion":"scheduling.koordinator.sh/v1alpha1","kind":"Reservation",
    "metadata":{"name":"pmj-1","labels":{
      "app.kubernetes.io/created-by":"koord-descheduler",
      "app.kubernetes.io/managed-by":"colony",
      "scheduling.koordinator.sh/reservation-order":"1767225900000"}},
    "spec":{
      "template":{"spec":{
        "containers":[{"name":"reserve","resources":{"requests":{"cpu":"1500m","memory":"2Gi"}}}],
        "schedulerName":"koord-scheduler",
        "affinity":{"nodeAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":{
          "nodeSelectorTerms":[{"matchFields":[
            {"key":"metadata.name","operator":"NotIn","values":["n1"]}]}]}}}}},
      "owners":[{"controller":{"apiVersion":"apps/v1","kind":"ReplicaSet","name":"rs-1",
                               "uid":"u-rs","controller":true,"namespace":"default"}}],
      "ttl":"5m0s","allocateOnce":true}})"));

  // The bridge reads Colony's object back to the same spec (were it not Colony's own).
  json back = o;
  back["metadata"]["labels"].erase(std::string(managed_by_label));
  back["metadata"]["uid"] = "u-pmj-1";
  auto t = translate_added(object_kind::reservation, back, event_time{2'000});
  ASSERT_TRUE(t) << t.error().describe();
  ASSERT_EQ(t->size(), 1u);
  const auto* u = wire::GetEnvelope((*t)[0].data())->payload_as_ReservationUpserted();
  EXPECT_EQ(messages::to_resource_list(u->requests()), messages::to_resource_list(r->requests()));
  EXPECT_EQ(u->priority(), r->priority());
  EXPECT_EQ(u->ttl_ms(), r->ttl_ms());
  EXPECT_EQ(u->expires_ms(), r->expires_ms());
  EXPECT_EQ(to_string_view(u->scheduler_name()), to_string_view(r->scheduler_name()));
  ASSERT_EQ(u->not_in_nodes()->size(), 1u);
  EXPECT_EQ(to_string_view(u->not_in_nodes()->Get(0)), "n1");
  const auto* uo = u->owners()->Get(0);
  EXPECT_EQ(to_string_view(uo->controller_uid()), "u-rs");
  EXPECT_EQ(uo->controller_flag(), 1);
  // Colony's own object, as the bridge meets it: nothing.
  json mine = o;
  mine["metadata"]["uid"] = "u-pmj-1";
  auto none = translate_added(object_kind::reservation, mine, event_time{2'000});
  ASSERT_TRUE(none) << none.error().describe();
  EXPECT_TRUE(none->empty());
}

TEST(SinkReservationObject, TtlExpiresPriorityAndNode) {
  auto object_of = [](const testing::upserted_fields& f) {
    const auto rec = testing::reservation_upserted(1, f);
    return reservation_object(*wire::GetEnvelope(rec.data())->payload_as_ReservationUpserted());
  };
  testing::upserted_fields f;
  f.name = "r";
  f.ttl_ms = 1'500;
  EXPECT_EQ(object_of(f)["spec"]["ttl"], "1.5s");
  f.ttl_ms = 3'600'000;
  EXPECT_EQ(object_of(f)["spec"]["ttl"], "1h0m0s");
  f.ttl_ms = 300;
  EXPECT_EQ(object_of(f)["spec"]["ttl"], "300ms");
  f.ttl_ms = 0;  // no expiry
  EXPECT_EQ(object_of(f)["spec"]["ttl"], "0s");
  f.expires_ms = 1'767'229'200'000;  // 2026-01-01T01:00:00Z, ttl left to the CRD
  json o = object_of(f);
  EXPECT_FALSE(o["spec"].contains("ttl"));
  EXPECT_EQ(o["spec"]["expires"], "2026-01-01T01:00:00Z");
  f.priority = 5000;
  f.node_name = "n9";
  f.controller = {"", "ReplicaSet", "rs-1", "", ""};  // what PodSubmitted's owner gives
  o = object_of(f);
  EXPECT_EQ(o["spec"]["template"]["spec"]["priority"], 5000);
  EXPECT_EQ(o["spec"]["template"]["spec"]["nodeName"], "n9");
  // Koordinator's CRD requires apiVersion, kind, name and uid of a controller owner.
  EXPECT_EQ(o["spec"]["owners"][0]["controller"],
            json::parse(R"({"apiVersion":"","kind":"ReplicaSet","name":"rs-1","uid":"",
                            "controller":true})"));
  EXPECT_FALSE(o["spec"]["template"]["spec"].contains("affinity"));
}

// A sink whose server refuses connections: every write is unavailable.
decision_sink refused_sink(std::vector<milliseconds>& slept) {
  connection c;
  c.server = "https://127.0.0.1:1";
  c.token = "t";
  sink_options o;
  o.max_attempts = 3;
  o.backoff_initial = milliseconds(100);
  o.backoff_cap = milliseconds(250);
  o.jitter = 0;
  o.sleep = [&slept](milliseconds d) { slept.push_back(d); };
  o.client.connect_timeout = milliseconds(1000);
  auto s = decision_sink::open(c, o);
  EXPECT_TRUE(s) << s.error().describe();
  return std::move(*s);
}

TEST(SinkReservation, AStatusWriteThatKeepsFailingIsAWriteFailedOnTheReservation) {
  std::vector<milliseconds> slept;
  auto sink = refused_sink(slept);
  auto out = sink.apply(testing::reservation_phase(
      11, {.name = "r1", .phase = "Available", .reason = "Scheduled", .node = "n1"}));
  ASSERT_TRUE(out) << out.error().describe();
  ASSERT_EQ(out->size(), 1u);
  const auto& o = (*out)[0];
  EXPECT_EQ(o.kind, write_kind::reservation_status);
  EXPECT_EQ(to_string(o.kind), "reservation-status");
  EXPECT_EQ(o.object, "r1");
  EXPECT_FALSE(o.ok);
  EXPECT_EQ(o.attempts, 3u);  // the read, tried max_attempts times
  EXPECT_NE(o.message.find("Reservation r1 status"), std::string::npos) << o.message;
  const auto rec = write_failed_record(o, event_time{7000});
  auto d = messages::decode(rec, "write_failed_record");
  ASSERT_TRUE(d) << d.error().describe();
  EXPECT_EQ(d->envelope->entity_kind(), wire::EntityKind::Reservation);
  EXPECT_EQ(to_string_view(d->envelope->entity_key()), "r1");
  EXPECT_EQ(d->envelope->causation(), 11);
  // Schema v8 has no WriteKind for it; the message names the write.
  EXPECT_EQ(d->envelope->payload_as_WriteFailed()->write(), wire::WriteKind::unknown);

  // A component's create: one POST, tried max_attempts times.
  testing::upserted_fields f;
  f.name = "pmj-1";
  out = sink.apply(testing::reservation_upserted(12, f));
  ASSERT_TRUE(out) << out.error().describe();
  ASSERT_EQ(out->size(), 1u);
  EXPECT_EQ((*out)[0].kind, write_kind::reservation);
  EXPECT_FALSE((*out)[0].ok);
  EXPECT_EQ((*out)[0].attempts, 3u);
}

TEST(SinkReservation, TheBridgesObservationIsNoWrite) {
  std::vector<milliseconds> slept;
  auto sink = refused_sink(slept);
  testing::upserted_fields f;
  f.name = "user-r";
  f.causation = -1;
  f.source = "bridge/k8s";
  auto out = sink.apply(testing::reservation_upserted(3, f));
  ASSERT_TRUE(out) << out.error().describe();
  EXPECT_TRUE(out->empty());
  EXPECT_EQ(sink.counters().ignored, 1u);
  EXPECT_EQ(sink.counters().requests, 0u);
  // An unknown phase is a failure without a request.
  out = sink.apply(testing::reservation_phase(4, {.name = "r", .phase = "Waiting"}));
  ASSERT_TRUE(out) << out.error().describe();
  ASSERT_EQ(out->size(), 1u);
  EXPECT_FALSE((*out)[0].ok);
  EXPECT_EQ(sink.counters().requests, 0u);
}

}  // namespace
}  // namespace colony::kube
