#include "messages/codec.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "messages/routes.hpp"
#include "tests/support/events.hpp"

namespace colony {
namespace {

using messages::bytes_view;

TEST(Codec, RoundTripsAnEnvelope) {
  messages::event_builder b;
  auto buf = testing::pod_scheduled(b, "default/web-1", "node-a", 1500, 2 * gib, 42000);
  auto d = messages::decode(buf, "test");
  ASSERT_TRUE(d) << d.error().describe();
  const auto* env = d->envelope;
  EXPECT_EQ(env->event_time_ms(), 42000);
  EXPECT_EQ(env->entity_kind(), wire::EntityKind::Node);
  EXPECT_EQ(messages::to_string_view(env->entity_key()), "node-a");
  EXPECT_EQ(env->schema_version(), messages::schema_version);
  ASSERT_EQ(d->type(), wire::Payload::PodScheduled);
  const auto* p = env->payload_as_PodScheduled();
  EXPECT_EQ(messages::to_string_view(p->pod()), "default/web-1");
  auto req = messages::to_resource_list(p->requests());
  EXPECT_EQ(req.cpu_milli, 1500);
  EXPECT_EQ(req.memory_bytes, 2 * gib);
}

// A payload field that repeats the entity key shares its bytes with the envelope's copy: the
// record is smaller, verifies, and both fields read the same; a key that differs is written.
TEST(Codec, KeyStringIsWrittenOnceForTheEnvelopeAndThePayload) {
  auto build = [](bool shared, std::string_view header_key) {
    messages::event_builder b;
    auto& fbb = b.fbb();
    const std::string node = "openb-node-0245";
    const auto nn = shared ? b.key_string(node) : fbb.CreateString(node);
    const auto why = fbb.CreateString("Ready");
    const auto payload = wire::CreateNodeConditionChanged(fbb, nn, true, false, why);
    messages::header h;
    h.time = event_time{1000};
    h.kind = wire::EntityKind::Node;
    h.key = header_key;
    h.source = "test";
    return b.finish(h, payload);
  };
  const auto apart = build(false, "openb-node-0245");
  const auto together = build(true, "openb-node-0245");
  EXPECT_GE(apart.size() - together.size(), 20u);  // 4-byte length + 15 chars + NUL (+ padding)
  for (const auto* buf : {&apart, &together}) {
    auto d = messages::decode(*buf, "test");
    ASSERT_TRUE(d) << d.error().describe();
    EXPECT_EQ(messages::to_string_view(d->envelope->entity_key()), "openb-node-0245");
    EXPECT_EQ(messages::to_string_view(d->envelope->payload_as_NodeConditionChanged()->name()),
              "openb-node-0245");
  }
  // key_string() for one key, then a header naming another: both are written as given.
  const auto other = build(true, "openb-node-9999");
  auto d = messages::decode(other, "test");
  ASSERT_TRUE(d) << d.error().describe();
  EXPECT_EQ(messages::to_string_view(d->envelope->entity_key()), "openb-node-9999");
  EXPECT_EQ(messages::to_string_view(d->envelope->payload_as_NodeConditionChanged()->name()),
            "openb-node-0245");
}

TEST(Codec, PatchesOffsetInPlace) {
  messages::event_builder b;
  auto buf = testing::pod_submitted(b, "default/a", 100, 100);
  ASSERT_TRUE(messages::patch_offset(buf, 123456789));
  auto d = messages::decode(buf, "test");
  ASSERT_TRUE(d);
  EXPECT_EQ(d->envelope->offset(), 123456789u);
}

TEST(Codec, SameInputsGiveSameBytes) {
  messages::event_builder b1, b2;
  EXPECT_EQ(testing::pod_submitted(b1, "x", 1, 2, 3), testing::pod_submitted(b2, "x", 1, 2, 3));
}

TEST(Codec, TruncatedBufferIsRejectedWithWhere) {
  messages::event_builder b;
  auto buf = testing::pod_scheduled(b, "default/web-1", "node-a", 1500, 2 * gib);
  // The verifier checks every region a reader can reach; bytes past the last reachable one
  // (alignment padding) are covered by the log's per-record checksum instead.
  for (std::size_t cut : {std::size_t{0}, std::size_t{4}, std::size_t{11}, buf.size() / 2}) {
    auto d = messages::decode(bytes_view(buf.data(), cut), "log x offset 7");
    ASSERT_FALSE(d) << "cut at " << cut;
    EXPECT_EQ(d.error().where, "log x offset 7");
    EXPECT_EQ(d.error().code, errc::corrupt);
  }
}

TEST(Codec, WrongIdentifierIsRejected) {
  messages::event_builder b;
  auto buf = testing::pod_submitted(b, "a", 1, 1);
  buf[4] = 'X';  // the file identifier sits at bytes 4..7
  auto d = messages::decode(buf, "w");
  ASSERT_FALSE(d);
  EXPECT_NE(d.error().message.find("CLNY"), std::string::npos);
}

TEST(Codec, UnknownUnionTypeIsRejected) {
  messages::event_builder b;
  auto& f = b.fbb();
  auto off = wire::CreateClockTickedDirect(f, "x");
  auto buf = b.finish_raw({event_time{0}, wire::EntityKind::Cluster, "sim", -1, "t"},
                          static_cast<wire::Payload>(200), off.Union());
  auto d = messages::decode(buf, "log y offset 9");
  ASSERT_FALSE(d);
  EXPECT_EQ(d.error().code, errc::invalid_input);
  EXPECT_NE(d.error().message.find("unknown payload type 200"), std::string::npos);
  EXPECT_EQ(d.error().where, "log y offset 9");
}

TEST(Codec, NewerCompatVersionIsRefused) {
  messages::event_builder b;
  auto buf = testing::pod_submitted(b, "a", 1, 1);
  auto* env = wire::GetMutableEnvelope(buf.data());
  ASSERT_TRUE(env->mutate_compat_version(messages::schema_version + 1));
  auto d = messages::decode(buf, "w");
  ASSERT_FALSE(d);
  EXPECT_EQ(d.error().code, errc::failed_precondition);
}

TEST(Codec, JsonViewHasEveryPart) {
  messages::event_builder b;
  auto buf = testing::pod_scheduled(b, "default/web-1", "node-a", 1500, 2 * gib, 42000);
  ASSERT_TRUE(messages::patch_offset(buf, 5));
  auto s = messages::to_json(buf);
  ASSERT_TRUE(s) << s.error().describe();
  auto j = nlohmann::json::parse(*s);
  EXPECT_EQ(j["offset"], 5);
  EXPECT_EQ(j["time_ms"], 42000);
  EXPECT_EQ(j["entity"], "node/node-a");
  EXPECT_EQ(j["type"], "PodScheduled");
  EXPECT_EQ(j["payload"]["pod"], "default/web-1");
  EXPECT_EQ(j["payload"]["requests"]["cpu_milli"], 1500);
}

// Found by the fuzzer: a verified record whose strings are not UTF-8 (FlatBuffers does not
// check) made the JSON view throw. Envelope strings are replaced with U+FFFD; a payload string
// that flatc cannot render gives an error value.
TEST(Codec, JsonViewSurvivesBytesThatAreNotUtf8) {
  messages::event_builder b;
  messages::header h;
  h.kind = wire::EntityKind::Node;
  h.key = "node-a";
  h.source = "te\xe2st";
  auto buf = b.finish(h, wire::CreateClockTickedDirect(b.fbb(), "tick"));
  ASSERT_TRUE(messages::decode(buf, "test"));
  auto s = messages::to_json(buf);
  ASSERT_TRUE(s) << s.error().describe();
  EXPECT_EQ(nlohmann::json::parse(*s)["source"], "te\xef\xbf\xbdst");

  auto bad = testing::pod_scheduled(b, "def\xe2ult/web-1", "node-a", 1500, 2 * gib, 42000);
  ASSERT_TRUE(messages::decode(bad, "test"));
  auto e = messages::to_json(bad);
  ASSERT_FALSE(e);
  EXPECT_EQ(e.error().code, errc::internal);
}

TEST(Codec, EntityKindNamesRoundTrip) {
  for (auto k :
       {wire::EntityKind::Node, wire::EntityKind::Pod, wire::EntityKind::ElasticQuota,
        wire::EntityKind::PodMigrationJob, wire::EntityKind::Cluster, wire::EntityKind::Object}) {
    auto p = messages::parse_entity_kind(messages::entity_kind_name(k));
    ASSERT_TRUE(p);
    EXPECT_EQ(*p, k);
  }
  EXPECT_FALSE(messages::parse_entity_kind("nodes"));
}

// Schema v3: the two records of things that went wrong outside. Every field survives the round
// trip and the JSON view; they carry compat_version 3 (a v2 reader says "upgrade colony") while
// the payloads v2 knew stay at 2; and they route to no entity (they change no state).
TEST(Codec, ObjectRefusedAndWriteFailedRoundTrip) {
  messages::event_builder b;
  auto& f = b.fbb();
  const auto refused = wire::CreateObjectRefusedDirect(
      f, "ElasticQuota", "team", "team-a", "uid-1", "4711", "spec.min.cpu",
      R"(exceeds spec.max.cpu ("50" > "40"))", "invalid_input");
  auto r = b.finish({event_time{1000}, wire::EntityKind::ElasticQuota, "team-a", -1, "bridge/k8s"},
                    refused);
  const auto failed = wire::CreateWriteFailedDirect(f, wire::WriteKind::binding, "ns/web-1", 409, 1,
                                                    "pod ns/web-1 is bound to node b");
  auto w = b.finish({event_time{2000}, wire::EntityKind::Pod, "ns/web-1", 17, "kube-sink"}, failed);
  ASSERT_TRUE(messages::patch_offset(r, 20));
  ASSERT_TRUE(messages::patch_offset(w, 21));

  auto dr = messages::decode(r, "test");
  ASSERT_TRUE(dr) << dr.error().describe();
  ASSERT_EQ(dr->type(), wire::Payload::ObjectRefused);
  EXPECT_EQ(dr->envelope->schema_version(), messages::schema_version);
  EXPECT_EQ(dr->envelope->compat_version(), 3);
  const auto* o = dr->envelope->payload_as_ObjectRefused();
  EXPECT_EQ(messages::to_string_view(o->api_kind()), "ElasticQuota");
  EXPECT_EQ(messages::to_string_view(o->namespace_()), "team");
  EXPECT_EQ(messages::to_string_view(o->name()), "team-a");
  EXPECT_EQ(messages::to_string_view(o->uid()), "uid-1");
  EXPECT_EQ(messages::to_string_view(o->resource_version()), "4711");
  EXPECT_EQ(messages::to_string_view(o->field()), "spec.min.cpu");
  EXPECT_EQ(messages::to_string_view(o->code()), "invalid_input");
  EXPECT_EQ(messages::routes(*dr->envelope).size, 0);

  auto dw = messages::decode(w, "test");
  ASSERT_TRUE(dw) << dw.error().describe();
  ASSERT_EQ(dw->type(), wire::Payload::WriteFailed);
  EXPECT_EQ(dw->envelope->compat_version(), 3);
  EXPECT_EQ(dw->envelope->causation(), 17);
  const auto* x = dw->envelope->payload_as_WriteFailed();
  EXPECT_EQ(x->write(), wire::WriteKind::binding);
  EXPECT_EQ(messages::to_string_view(x->object()), "ns/web-1");
  EXPECT_EQ(x->http_status(), 409);
  EXPECT_EQ(x->attempts(), 1);
  EXPECT_EQ(messages::routes(*dw->envelope).size, 0);

  auto jr = messages::to_json(r);
  ASSERT_TRUE(jr) << jr.error().describe();
  EXPECT_EQ(nlohmann::json::parse(*jr),
            nlohmann::json::parse(
                R"({"offset":20,"time_ms":1000,"entity":"quota/team-a","type":"ObjectRefused",)"
                R"("causation":-1,"source":"bridge/k8s","payload":{"api_kind":"ElasticQuota",)"
                R"("namespace":"team","name":"team-a","uid":"uid-1","resource_version":"4711",)"
                R"x("field":"spec.min.cpu","reason":"exceeds spec.max.cpu (\"50\" > \"40\")",)x"
                R"("code":"invalid_input"}})"));
  auto jw = messages::to_json(w);
  ASSERT_TRUE(jw) << jw.error().describe();
  EXPECT_EQ(nlohmann::json::parse(*jw),
            nlohmann::json::parse(
                R"({"offset":21,"time_ms":2000,"entity":"pod/ns/web-1","type":"WriteFailed",)"
                R"("causation":17,"source":"kube-sink","payload":{"write":"binding",)"
                R"("object":"ns/web-1","http_status":409,"attempts":1,)"
                R"("message":"pod ns/web-1 is bound to node b"}})"));

  auto v2 = testing::pod_submitted(b, "a", 1, 1);
  EXPECT_EQ(wire::GetEnvelope(v2.data())->compat_version(), 2);
  EXPECT_EQ(wire::GetEnvelope(v2.data())->schema_version(), messages::schema_version);
}

// Schema v4: a recorded object. Every field survives the round trip and the JSON view (the
// spec and status stay JSON text inside the payload, so a reader parses them itself); it carries
// compat_version 4 and routes to its own Object entity only. A deletion keeps the identity.
TEST(Codec, ObjectObservedRoundTrips) {
  messages::event_builder b;
  auto& f = b.fbb();
  const std::vector<std::pair<std::string, std::string>> labels = {{"app", "train"},
                                                                   {"team", "ml"}};
  const auto av = f.CreateString("scheduling.sigs.k8s.io/v1alpha1");
  const auto kind = f.CreateString("PodGroup");
  const auto ns = f.CreateString("ml");
  const auto name = f.CreateString("train-1");
  const auto uid = f.CreateString("3c9d8e7f");
  const auto rv = f.CreateString("4200");
  const auto lab = b.key_values(labels);
  const auto spec = f.CreateString(R"({"minMember":4})");
  const auto status = f.CreateString(R"({"phase":"Scheduled"})");
  const auto observed =
      wire::CreateObjectObserved(f, av, kind, ns, name, uid, rv, lab, spec, status, false);
  auto o = b.finish(
      {event_time{3000}, wire::EntityKind::Object, "PodGroup/ml/train-1", -1, "bridge/k8s"},
      observed);
  const auto gone =
      wire::CreateObjectObservedDirect(f, "scheduling.koordinator.sh/v1alpha1", "Reservation", "",
                                       "r1", "uid-r1", "4301", nullptr, "", "", true);
  auto g = b.finish(
      {event_time{3001}, wire::EntityKind::Object, "Reservation/r1", -1, "bridge/k8s"}, gone);
  ASSERT_TRUE(messages::patch_offset(o, 30));
  ASSERT_TRUE(messages::patch_offset(g, 31));

  auto d = messages::decode(o, "test");
  ASSERT_TRUE(d) << d.error().describe();
  ASSERT_EQ(d->type(), wire::Payload::ObjectObserved);
  EXPECT_EQ(d->envelope->compat_version(), 4);
  EXPECT_EQ(d->envelope->schema_version(), messages::schema_version);
  const auto* p = d->envelope->payload_as_ObjectObserved();
  EXPECT_EQ(messages::to_string_view(p->api_version()), "scheduling.sigs.k8s.io/v1alpha1");
  EXPECT_EQ(messages::to_string_view(p->kind()), "PodGroup");
  EXPECT_EQ(messages::to_string_view(p->namespace_()), "ml");
  EXPECT_EQ(messages::to_string_view(p->name()), "train-1");
  EXPECT_EQ(messages::to_string_view(p->uid()), "3c9d8e7f");
  EXPECT_EQ(messages::to_string_view(p->resource_version()), "4200");
  ASSERT_EQ(p->labels()->size(), 2u);
  EXPECT_EQ(messages::to_string_view(p->labels()->Get(1)->key()), "team");
  EXPECT_EQ(messages::to_string_view(p->spec_json()), R"({"minMember":4})");
  EXPECT_EQ(messages::to_string_view(p->status_json()), R"({"phase":"Scheduled"})");
  EXPECT_FALSE(p->deleted());
  const auto rl = messages::routes(*d->envelope);
  ASSERT_EQ(rl.size, 1);
  EXPECT_EQ(rl.refs[0], (messages::entity_ref{wire::EntityKind::Object, "PodGroup/ml/train-1"}));

  auto jo = messages::to_json(o);
  ASSERT_TRUE(jo) << jo.error().describe();
  EXPECT_EQ(
      nlohmann::json::parse(*jo),
      nlohmann::json::parse(
          R"({"offset":30,"time_ms":3000,"entity":"object/PodGroup/ml/train-1",)"
          R"("type":"ObjectObserved","causation":-1,"source":"bridge/k8s","payload":{)"
          R"("api_version":"scheduling.sigs.k8s.io/v1alpha1","kind":"PodGroup",)"
          R"("namespace":"ml","name":"train-1","uid":"3c9d8e7f","resource_version":"4200",)"
          R"("labels":[{"key":"app","value":"train"},{"key":"team","value":"ml"}],)"
          R"x("spec_json":"{\"minMember\":4}","status_json":"{\"phase\":\"Scheduled\"}"}})x"));

  auto dg = messages::decode(g, "test");
  ASSERT_TRUE(dg) << dg.error().describe();
  EXPECT_TRUE(dg->envelope->payload_as_ObjectObserved()->deleted());
  auto jg = messages::to_json(g);
  ASSERT_TRUE(jg) << jg.error().describe();
  const auto pg = nlohmann::json::parse(*jg).at("payload");
  EXPECT_EQ(pg.at("deleted"), true);
  EXPECT_EQ(pg.at("name"), "r1");
  EXPECT_EQ(pg.at("resource_version"), "4301");
  EXPECT_EQ(nlohmann::json::parse(*jg).at("entity"), "object/Reservation/r1");
}

}  // namespace
}  // namespace colony
