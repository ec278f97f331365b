// Reservation -> ReservationUpserted (bridges/kubernetes/translate_reservation.cpp): the field
// mapping, each refusal naming its field, deletion, Colony's own objects, and which MODIFIEDs are
// news. Base object: tests/data/kubernetes/reservation-pmj-1.json (a ReservationFirst
// migration's reservation as koord-descheduler writes it: controller owner, ttl 5m).
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tests/bridges/kubernetes/translate/translate_fixtures.hpp"

namespace colony::kube::testing {
namespace {

using P = wire::Payload;
constexpr std::int32_t max_int32 = std::numeric_limits<std::int32_t>::max();

json base() { return load("reservation-pmj-1.json"); }

const wire::ReservationUpserted* one_upserted(const event_list& events,
                                              std::vector<const wire::Envelope*>& envs) {
  envs = decode_all(events);
  EXPECT_EQ(envs.size(), 1u);
  if (envs.size() != 1) return nullptr;
  EXPECT_EQ(envs[0]->payload_type(), P::ReservationUpserted);
  return envs[0]->payload_as_ReservationUpserted();
}

std::vector<std::string> strings(
    const flatbuffers::Vector<flatbuffers::Offset<flatbuffers::String>>* v) {
  std::vector<std::string> out;
  if (v != nullptr)
    for (const auto* s : *v) out.push_back(str(s));
  return out;
}

TEST(KubeTranslateReservation, MapsEveryFieldOfADeschedulersReservation) {
  auto r = translate_added(object_kind::reservation, base(), t0);
  ASSERT_TRUE(r) << r.error().describe();
  std::vector<const wire::Envelope*> envs;
  const auto* u = one_upserted(*r, envs);
  ASSERT_NE(u, nullptr);
  const auto* e = envs[0];
  EXPECT_EQ(e->entity_kind(), wire::EntityKind::Reservation);
  EXPECT_EQ(str(e->entity_key()), "pmj-uid-1");
  EXPECT_EQ(e->event_time_ms(), t0.value);
  EXPECT_EQ(e->causation(), -1);
  EXPECT_EQ(str(e->source()), "bridge/k8s");
  EXPECT_EQ(str(u->name()), "pmj-uid-1");
  EXPECT_EQ(str(u->uid()), "6f1c2a3b-0d4e-4f5a-8b6c-7d8e9f0a1b2c");
  EXPECT_EQ(messages::to_resource_list(u->requests()).cpu_milli, 400);
  EXPECT_EQ(messages::to_resource_list(u->requests()).memory_bytes, 0);
  EXPECT_EQ(str(u->node_name()), "");
  EXPECT_EQ(u->priority(), max_int32);  // NewReservePod: nothing preempts a reserve pod
  ASSERT_NE(u->owners(), nullptr);
  ASSERT_EQ(u->owners()->size(), 1u);
  const auto* o = u->owners()->Get(0);
  EXPECT_FALSE(o->has_object());
  EXPECT_TRUE(o->has_controller());
  EXPECT_EQ(str(o->controller_api_version()), "apps/v1");
  EXPECT_EQ(str(o->controller_kind()), "ReplicaSet");
  EXPECT_EQ(str(o->controller_name()), "rs-1");
  EXPECT_EQ(str(o->controller_uid()), "u-rs");
  EXPECT_EQ(str(o->controller_namespace()), "default");
  EXPECT_EQ(o->controller_flag(), 1);
  EXPECT_FALSE(o->has_label_selector());
  EXPECT_EQ(u->ttl_ms(), 5 * 60 * 1000);
  EXPECT_EQ(u->expires_ms(), -1);
  EXPECT_TRUE(u->allocate_once());
  EXPECT_EQ(str(u->allocate_policy()), "");
  EXPECT_FALSE(u->unschedulable());
  EXPECT_EQ(kvs(u->labels()), (std::vector<std::pair<std::string, std::string>>{
                                  {"app.kubernetes.io/created-by", "koord-descheduler"}}));
  EXPECT_EQ(str(u->scheduler_name()), "koord-scheduler");
  EXPECT_FALSE(u->deleted());
  EXPECT_TRUE(strings(u->not_in_nodes()).empty());
  // The same object, time and options give the same bytes.
  auto again = translate_added(object_kind::reservation, base(), t0);
  ASSERT_TRUE(again);
  EXPECT_EQ((*again)[0], (*r)[0]);
}

struct mapping_case {
  const char* name;
  std::function<void(json&)> edit;
  std::function<void(const wire::ReservationUpserted&)> check;
};

json container(const std::string& name, const json& requests) {
  return json{{"name", name}, {"resources", {{"requests", requests}}}};
}

json not_in_term(const std::vector<std::string>& nodes) {
  return json{
      {"matchFields",
       json::array({{{"key", "metadata.name"}, {"operator", "NotIn"}, {"values", nodes}}})}};
}

TEST(KubeTranslateReservation, FieldMappingTable) {
  auto spec_of = [](json& o) -> json& { return o["spec"]["template"]["spec"]; };
  const std::vector<mapping_case> cases = {
      {"TemplatePriority", [&](json& o) { spec_of(o)["priority"] = 5000; },
       [](const wire::ReservationUpserted& u) { EXPECT_EQ(u.priority(), 5000); }},
      {"PriorityLabel",
       [](json& o) { o["metadata"]["labels"]["koordinator.sh/priority"] = "7000"; },
       [](const wire::ReservationUpserted& u) { EXPECT_EQ(u.priority(), 7000); }},
      {"PriorityLabelWithPlus",
       [](json& o) { o["metadata"]["labels"]["koordinator.sh/priority"] = "+42"; },
       [](const wire::ReservationUpserted& u) { EXPECT_EQ(u.priority(), 42); }},
      {"PriorityLabelNotANumberIsIgnored",
       [](json& o) { o["metadata"]["labels"]["koordinator.sh/priority"] = "high"; },
       [](const wire::ReservationUpserted& u) { EXPECT_EQ(u.priority(), max_int32); }},
      {"PriorityLabelOutOfInt32IsIgnored",
       [](json& o) { o["metadata"]["labels"]["koordinator.sh/priority"] = "4294967296"; },
       [](const wire::ReservationUpserted& u) { EXPECT_EQ(u.priority(), max_int32); }},
      {"TemplatePriorityBeatsTheLabel",
       [&](json& o) {
         spec_of(o)["priority"] = -3;
         o["metadata"]["labels"]["koordinator.sh/priority"] = "7000";
       },
       [](const wire::ReservationUpserted& u) { EXPECT_EQ(u.priority(), -3); }},
      {"NodeName", [&](json& o) { spec_of(o)["nodeName"] = "n7"; },
       [](const wire::ReservationUpserted& u) { EXPECT_EQ(str(u.node_name()), "n7"); }},
      {"NoSchedulerNameIsTheDefaultScheduler", [&](json& o) { spec_of(o).erase("schedulerName"); },
       [](const wire::ReservationUpserted& u) {
         EXPECT_EQ(str(u.scheduler_name()), "default-scheduler");
       }},
      {"RequestsAsPodRequests",
       [&](json& o) {
         // max(containers 400m + 100m, init 1) + overhead 100m; memory summed; an extended one.
         spec_of(o)["containers"].push_back(
             container("d", {{"cpu", "100m"}, {"memory", "1Gi"}, {"example.com/foo", "2"}}));
         spec_of(o)["initContainers"] = json::array({container("init", {{"cpu", "1"}})});
         spec_of(o)["overhead"] = {{"cpu", "100m"}};
       },
       [](const wire::ReservationUpserted& u) {
         const auto r = messages::to_resource_list(u.requests());
         EXPECT_EQ(r.cpu_milli, 1100);
         EXPECT_EQ(r.memory_bytes, 1LL << 30);
         EXPECT_EQ(extended(u.requests()),
                   (std::vector<std::pair<std::string, std::int64_t>>{{"example.com/foo", 2}}));
       }},
      {"BatchResources",
       [&](json& o) {
         spec_of(o)["containers"][0]["resources"]["requests"] = {
             {"kubernetes.io/batch-cpu", "2k"}, {"kubernetes.io/batch-memory", "4Gi"}};
       },
       [](const wire::ReservationUpserted& u) {
         const auto r = messages::to_resource_list(u.requests());
         EXPECT_EQ(r.cpu_milli, 0);
         EXPECT_EQ(r.batch_cpu_milli, 2000);
         EXPECT_EQ(r.batch_memory_bytes, 4LL << 30);
       }},
      {"ExpiresAlone",
       [](json& o) {
         o["spec"].erase("ttl");
         o["spec"]["expires"] = "2026-01-01T01:00:00Z";
       },
       [](const wire::ReservationUpserted& u) {
         EXPECT_EQ(u.ttl_ms(), 0);
         EXPECT_EQ(u.expires_ms(), t0.value + 55 * 60 * 1000);
       }},
      {"TtlAndExpires", [](json& o) { o["spec"]["expires"] = "2026-01-01T01:00:00Z"; },
       [](const wire::ReservationUpserted& u) {
         EXPECT_EQ(u.ttl_ms(), 5 * 60 * 1000);
         EXPECT_EQ(u.expires_ms(), t0.value + 55 * 60 * 1000);
       }},
      {"ZeroTtlDisablesExpiresToo",  // isReservationNeedExpiration
       [](json& o) {
         o["spec"]["ttl"] = "0s";
         o["spec"]["expires"] = "2026-01-01T01:00:00Z";
       },
       [](const wire::ReservationUpserted& u) {
         EXPECT_EQ(u.ttl_ms(), 0);
         EXPECT_EQ(u.expires_ms(), -1);
       }},
      {"NeitherTtlNorExpiresIsTheDefault24h", [](json& o) { o["spec"].erase("ttl"); },
       [](const wire::ReservationUpserted& u) {
         EXPECT_EQ(u.ttl_ms(), 24LL * 3600 * 1000);
         EXPECT_EQ(u.expires_ms(), -1);
       }},
      {"AllocateOnceDefaultsToTrue", [](json& o) { o["spec"].erase("allocateOnce"); },
       [](const wire::ReservationUpserted& u) { EXPECT_TRUE(u.allocate_once()); }},
      {"AllocateOnceFalseRestrictedUnschedulable",
       [](json& o) {
         o["spec"]["allocateOnce"] = false;
         o["spec"]["allocatePolicy"] = "Restricted";
         o["spec"]["unschedulable"] = true;
       },
       [](const wire::ReservationUpserted& u) {
         EXPECT_FALSE(u.allocate_once());
         EXPECT_EQ(str(u.allocate_policy()), "Restricted");
         EXPECT_TRUE(u.unschedulable());
       }},
      {"LabelsSorted",
       [](json& o) {
         o["metadata"]["labels"]["scheduling.koordinator.sh/reservation-order"] = "1767225900000";
         o["metadata"]["labels"]["a"] = "b";
       },
       [](const wire::ReservationUpserted& u) {
         EXPECT_EQ(kvs(u.labels()),
                   (std::vector<std::pair<std::string, std::string>>{
                       {"a", "b"},
                       {"app.kubernetes.io/created-by", "koord-descheduler"},
                       {"scheduling.koordinator.sh/reservation-order", "1767225900000"}}));
       }},
      {"ObjectLabelAndEmptyOwners",
       [](json& o) {
         o["spec"]["owners"] = json::array(
             {{{"object",
                {{"namespace", "default"}, {"name", "web-1"}, {"uid", "u-1"}, {"kind", "Pod"}}}},
              {{"labelSelector", {{"matchLabels", {{"app", "web"}, {"tier", "a"}}}}}},
              json::object()});
       },
       [](const wire::ReservationUpserted& u) {
         ASSERT_EQ(u.owners()->size(), 3u);
         const auto* obj = u.owners()->Get(0);
         EXPECT_TRUE(obj->has_object());
         EXPECT_FALSE(obj->has_controller());
         EXPECT_EQ(str(obj->object_namespace()), "default");
         EXPECT_EQ(str(obj->object_name()), "web-1");
         EXPECT_EQ(str(obj->object_uid()), "u-1");
         const auto* sel = u.owners()->Get(1);
         EXPECT_TRUE(sel->has_label_selector());
         EXPECT_EQ(kvs(sel->match_labels()), (std::vector<std::pair<std::string, std::string>>{
                                                 {"app", "web"}, {"tier", "a"}}));
         const auto* any = u.owners()->Get(2);  // one empty owner matches every pod
         EXPECT_FALSE(any->has_object() || any->has_controller() || any->has_label_selector());
       }},
      {"ControllerFlagUnsetAndFalse",
       [](json& o) {
         o["spec"]["owners"][0]["controller"].erase("controller");
         json second = o["spec"]["owners"][0];
         second["controller"]["controller"] = false;
         o["spec"]["owners"].push_back(second);
       },
       [](const wire::ReservationUpserted& u) {
         ASSERT_EQ(u.owners()->size(), 2u);
         EXPECT_EQ(u.owners()->Get(0)->controller_flag(), -1);
         EXPECT_EQ(u.owners()->Get(1)->controller_flag(), 0);
       }},
      {"NotInNodesOfOneTerm",  // as koord-descheduler writes it for a migration
       [&](json& o) {
         spec_of(o)["affinity"] = {
             {"nodeAffinity",
              {{"requiredDuringSchedulingIgnoredDuringExecution",
                {{"nodeSelectorTerms", json::array({not_in_term({"n2", "n1"})})}}}}}};
       },
       [](const wire::ReservationUpserted& u) {
         EXPECT_EQ(strings(u.not_in_nodes()), (std::vector<std::string>{"n1", "n2"}));
       }},
      {"NotInNodesOfTermsAreIntersected",  // terms are ORed
       [&](json& o) {
         spec_of(o)["affinity"] = {
             {"nodeAffinity",
              {{"requiredDuringSchedulingIgnoredDuringExecution",
                {{"nodeSelectorTerms",
                  json::array({not_in_term({"a", "b"}), not_in_term({"b", "c"})})}}}}}};
       },
       [](const wire::ReservationUpserted& u) {
         EXPECT_EQ(strings(u.not_in_nodes()), (std::vector<std::string>{"b"}));
       }},
      {"PreferredAffinityIsNoConstraint",
       [&](json& o) {
         spec_of(o)["affinity"] = {
             {"nodeAffinity",
              {{"preferredDuringSchedulingIgnoredDuringExecution",
                json::array({{{"weight", 1}, {"preference", not_in_term({"n1"})}}})}}}};
       },
       [](const wire::ReservationUpserted& u) { EXPECT_TRUE(strings(u.not_in_nodes()).empty()); }},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    json o = base();
    c.edit(o);
    auto r = translate_added(object_kind::reservation, o, t0);
    ASSERT_TRUE(r) << r.error().describe();
    std::vector<const wire::Envelope*> envs;
    const auto* u = one_upserted(*r, envs);
    ASSERT_NE(u, nullptr);
    c.check(*u);
  }
}

struct refusal_case {
  const char* name;
  std::function<void(json&)> edit;
  std::string field;
  std::string message_part;
};

TEST(KubeTranslateReservation, RefusalsNameTheField) {
  auto spec_of = [](json& o) -> json& { return o["spec"]["template"]["spec"]; };
  const json term_in = {
      {"matchFields",
       json::array({{{"key", "metadata.name"}, {"operator", "In"}, {"values", {"n1"}}}})}};
  const std::vector<refusal_case> cases = {
      {"NoTemplate", [](json& o) { o["spec"].erase("template"); }, "spec.template",
       "misses the template"},
      {"TemplateWithoutSpec", [](json& o) { o["spec"]["template"].erase("spec"); },
       "spec.template.spec", "is required"},
      {"TemplateWithoutContainers", [&](json& o) { spec_of(o).erase("containers"); },
       "spec.template.spec.containers", "at least one container"},
      {"TemplateBadQuantity",
       [&](json& o) { spec_of(o)["containers"][0]["resources"]["requests"]["cpu"] = "12x"; },
       "spec.template.spec.containers[0].resources.requests.cpu", "is not a quantity"},
      {"TemplateNegativeRequest",
       [&](json& o) { spec_of(o)["containers"][0]["resources"]["requests"]["memory"] = "-1Gi"; },
       "spec.template.spec.containers[0].resources.requests.memory", "negative"},
      {"TemplatePriorityOutOfInt32", [&](json& o) { spec_of(o)["priority"] = 1LL << 40; },
       "spec.template.spec.priority", "is not an int32"},
      {"NoOwners", [](json& o) { o["spec"].erase("owners"); }, "spec.owners",
       "misses the owner spec"},
      {"EmptyOwners", [](json& o) { o["spec"]["owners"] = json::array(); }, "spec.owners",
       "misses the owner spec"},
      {"OwnerWithMatchExpressions",
       [](json& o) {
         o["spec"]["owners"][0]["labelSelector"] = {
             {"matchExpressions",
              json::array({{{"key", "app"}, {"operator", "In"}, {"values", {"web"}}}})}};
       },
       "spec.owners[0].labelSelector.matchExpressions", "not supported"},
      {"OwnerWithAnUnknownPart",
       [](json& o) {
         o["spec"]["owners"][0]["group"] = {{"x", 1}};
       },
       "spec.owners[0].group", "is not an owner part"},
      {"OwnerControllerUidNotString",
       [](json& o) { o["spec"]["owners"][0]["controller"]["uid"] = 7; },
       "spec.owners[0].controller.uid", "must be a string"},
      {"OwnerObjectOfAnotherApiVersion",
       [](json& o) {
         o["spec"]["owners"][0]["object"] = {{"apiVersion", "apps/v1"}, {"name", "web-1"}};
       },
       "spec.owners[0].object.apiVersion", "is not a pod's apiVersion"},
      {"OwnerNotAnObject", [](json& o) { o["spec"]["owners"][0] = "rs-1"; }, "spec.owners[0]",
       "must be an object"},
      {"TtlNotADuration", [](json& o) { o["spec"]["ttl"] = "5 minutes"; }, "spec.ttl",
       "is not a duration"},
      {"TtlNegative", [](json& o) { o["spec"]["ttl"] = "-5m"; }, "spec.ttl", "is negative"},
      {"ExpiresNotATime", [](json& o) { o["spec"]["expires"] = "tomorrow"; }, "spec.expires",
       "is not an RFC 3339 time"},
      {"AllocatePolicyUnknown", [](json& o) { o["spec"]["allocatePolicy"] = "Loose"; },
       "spec.allocatePolicy", "is not Aligned, Restricted"},
      {"AllocateOnceNotABool", [](json& o) { o["spec"]["allocateOnce"] = "yes"; },
       "spec.allocateOnce", "must be a boolean"},
      {"AffinityMatchExpressions",
       [&](json& o) {
         spec_of(o)["affinity"] = {
             {"nodeAffinity",
              {{"requiredDuringSchedulingIgnoredDuringExecution",
                {{"nodeSelectorTerms",
                  json::array({{{"matchExpressions", json::array({{{"key", "zone"},
                                                                   {"operator", "In"},
                                                                   {"values", {"a"}}}})}}})}}}}}};
       },
       "spec.template.spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution."
       "nodeSelectorTerms[0].matchExpressions",
       "not supported"},
      {"AffinityMatchFieldsIn",
       [&](json& o) {
         spec_of(o)["affinity"] = {{"nodeAffinity",
                                    {{"requiredDuringSchedulingIgnoredDuringExecution",
                                      {{"nodeSelectorTerms", json::array({term_in})}}}}}};
       },
       "spec.template.spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution."
       "nodeSelectorTerms[0].matchFields[0]",
       "metadata.name NotIn"},
      {"NodeSelector",
       [&](json& o) {
         spec_of(o)["nodeSelector"] = {{"zone", "a"}};
       },
       "spec.template.spec.nodeSelector", "not supported"},
      {"RequiredPodAntiAffinity",
       [&](json& o) {
         spec_of(o)["affinity"] = {
             {"podAntiAffinity",
              {{"requiredDuringSchedulingIgnoredDuringExecution",
                json::array({{{"topologyKey", "kubernetes.io/hostname"}}})}}}};
       },
       "spec.template.spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution",
       "not supported"},
      {"PreAllocation", [](json& o) { o["spec"]["preAllocation"] = true; }, "spec.preAllocation",
       "not supported"},
      {"Taints",
       [](json& o) {
         o["spec"]["taints"] = json::array({{{"key", "k"}, {"effect", "NoSchedule"}}});
       },
       "spec.taints", "not supported"},
      {"Namespaced", [](json& o) { o["metadata"]["namespace"] = "default"; }, "metadata.namespace",
       "cluster-scoped"},
      {"NoUid", [](json& o) { o["metadata"].erase("uid"); }, "metadata.uid", "is required"},
      {"LabelNotString",
       [](json& o) { o["metadata"]["labels"]["app.kubernetes.io/created-by"] = 1; },
       "metadata.labels[app.kubernetes.io/created-by]", "must be a string"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    json o = base();
    c.edit(o);
    auto r = translate_added(object_kind::reservation, o, t0);
    ASSERT_FALSE(r.has_value());
    EXPECT_EQ(r.error().code, errc::invalid_input);
    const std::string ns = c.field == "metadata.namespace" ? "default/" : "";
    EXPECT_EQ(r.error().where, "Reservation " + ns + "pmj-uid-1: " + c.field);
    EXPECT_NE(r.error().message.find(c.message_part), std::string::npos) << r.error().message;
    // What the bridge appends instead: ObjectRefused keyed to the Reservation, naming the field.
    const auto refused = translate_refused(object_kind::reservation, o, r.error(), t0);
    auto d = messages::decode(refused, "refusal");
    ASSERT_TRUE(d) << d.error().describe();
    ASSERT_EQ(d->envelope->payload_type(), P::ObjectRefused);
    EXPECT_EQ(d->envelope->entity_kind(), wire::EntityKind::Reservation);
    EXPECT_EQ(str(d->envelope->entity_key()), "pmj-uid-1");
    const auto* rf = d->envelope->payload_as_ObjectRefused();
    EXPECT_EQ(str(rf->api_kind()), "Reservation");
    EXPECT_EQ(str(rf->name()), "pmj-uid-1");
    EXPECT_EQ(str(rf->resource_version()), "4001");
    EXPECT_EQ(str(rf->field()), c.field);
    EXPECT_EQ(str(rf->code()), "invalid_input");
  }
}

TEST(KubeTranslateReservation, DeletionIsRecordedEvenOfARefusedVersion) {
  auto r = translate_deleted(object_kind::reservation, base(), t0);
  ASSERT_TRUE(r) << r.error().describe();
  std::vector<const wire::Envelope*> envs;
  const auto* u = one_upserted(*r, envs);
  ASSERT_NE(u, nullptr);
  EXPECT_TRUE(u->deleted());
  EXPECT_EQ(str(u->uid()), "6f1c2a3b-0d4e-4f5a-8b6c-7d8e9f0a1b2c");
  EXPECT_EQ(messages::to_resource_list(u->requests()).cpu_milli, 400);

  // The informer's last version was refused (the scheduler may hold an earlier one): the
  // deletion still names the reservation.
  json bad = base();
  bad["spec"]["ttl"] = "soon";
  r = translate_deleted(object_kind::reservation, bad, t0);
  ASSERT_TRUE(r) << r.error().describe();
  u = one_upserted(*r, envs);
  ASSERT_NE(u, nullptr);
  EXPECT_TRUE(u->deleted());
  EXPECT_EQ(str(u->name()), "pmj-uid-1");
  EXPECT_EQ(str(u->uid()), "6f1c2a3b-0d4e-4f5a-8b6c-7d8e9f0a1b2c");
  EXPECT_EQ(str(envs[0]->entity_key()), "pmj-uid-1");

  // Without a uid nothing names the object to delete.
  bad["metadata"].erase("uid");
  r = translate_deleted(object_kind::reservation, bad, t0);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().where, "Reservation pmj-uid-1: metadata.uid");
}

TEST(KubeTranslateReservation, ColonysOwnReservationTranslatesToNothing) {
  json mine = base();
  mine["metadata"]["labels"]["app.kubernetes.io/managed-by"] = "colony";
  json changed = mine;
  changed["spec"]["ttl"] = "10m";
  json broken = mine;
  broken["spec"].erase("owners");  // not even checked: it is Colony's record already
  for (const json* o : {&mine, &broken}) {
    auto a = translate_added(object_kind::reservation, *o, t0);
    ASSERT_TRUE(a) << a.error().describe();
    EXPECT_TRUE(a->empty());
    auto d = translate_deleted(object_kind::reservation, *o, t0);
    ASSERT_TRUE(d) << d.error().describe();
    EXPECT_TRUE(d->empty());
  }
  auto m = translate_modified(object_kind::reservation, mine, changed, t0);
  ASSERT_TRUE(m) << m.error().describe();
  EXPECT_TRUE(m->empty());
  // Another tool's managed-by is not Colony's.
  json theirs = base();
  theirs["metadata"]["labels"]["app.kubernetes.io/managed-by"] = "helm";
  auto t = translate_added(object_kind::reservation, theirs, t0);
  ASSERT_TRUE(t);
  EXPECT_EQ(t->size(), 1u);
}

TEST(KubeTranslateReservation, OnlyASpecOrLabelChangeIsNews) {
  const json o = base();
  auto with = [&](const std::function<void(json&)>& f) {
    json n = o;
    f(n);
    return n;
  };
  struct change_case {
    const char* name;
    json after;
    change want;
  };
  const std::vector<change_case> cases = {
      {"ResourceVersion", with([](json& n) { n["metadata"]["resourceVersion"] = "4002"; }),
       change::none},
      // The scheduler's own status write coming back (ReservationPhaseChanged is in the log).
      {"Status", with([](json& n) {
         n["status"] = {{"phase", "Succeeded"},
                        {"currentOwners", json::array({{{"name", "web-1"}}})}};
       }),
       change::none},
      {"AnnotationAndManagedFields", with([](json& n) {
         n["metadata"]["annotations"]["note"] = "x";
         n["metadata"]["managedFields"] = json::array({{{"manager", "kubectl"}}});
       }),
       change::none},
      {"Ttl", with([](json& n) { n["spec"]["ttl"] = "10m"; }), change::relevant},
      {"Owners", with([](json& n) { n["spec"]["owners"][0]["controller"]["name"] = "rs-2"; }),
       change::relevant},
      {"OrderLabel", with([](json& n) {
         n["metadata"]["labels"]["scheduling.koordinator.sh/reservation-order"] = "1";
       }),
       change::relevant},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    EXPECT_EQ(change_kind(object_kind::reservation, o, c.after), c.want);
    auto r = translate_modified(object_kind::reservation, o, c.after, t0);
    ASSERT_TRUE(r) << r.error().describe();
    EXPECT_EQ(r->size(), c.want == change::none ? 0u : 1u);
  }
}

}  // namespace
}  // namespace colony::kube::testing
