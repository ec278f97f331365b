// PodMigrationJobs -> MigrationJobCreated / MigrationJobPhaseChanged (bridges/kubernetes/
// translate_migration_job.cpp), table driven over edits of tests/data/kubernetes/
// podmigrationjob-0b6f.json. Koordinator enters only created jobs into arbitration
// (pkg/descheduler/controllers/migration/controller.go, arbitrator/handler.go), never drives a
// job another controller instance created (koordinator.sh/job-created-by), and Aborted is a
// user's phase; docs/kubernetes-bridge.md "Translation to observation events" has the table.
#include <functional>
#include <optional>

#include "messages/names.hpp"
#include "tests/bridges/kubernetes/translate/translate_fixtures.hpp"

namespace colony::kube::testing {
namespace {

using P = wire::Payload;
constexpr object_kind pmj = object_kind::pod_migration_job;
const std::string created_by(names::annotation_job_created_by);
const std::string evict_reason(names::annotation_evict_reason);

void expect_job_header(const wire::Envelope* e, std::string_view name) {
  EXPECT_EQ(e->entity_kind(), wire::EntityKind::PodMigrationJob);
  EXPECT_EQ(str(e->entity_key()), name);
  EXPECT_EQ(e->event_time_ms(), t0.value);
  EXPECT_EQ(e->causation(), -1);  // a user's job, observed
  EXPECT_EQ(str(e->source()), "bridge/k8s");
}

std::string trigger_of(const wire::MigrationJobCreated* c) {
  if (c->inputs() != nullptr)
    for (const auto* t : *c->inputs())
      if (str(t->name()) == "trigger") return str(t->text());
  return {};
}

// What a MigrationJobCreated must say; nullopt = no record at all.
struct created_fields {
  std::string pod, mode;
  std::int64_t ttl_ms = 0;
  bool paused = false;
  std::string reason, trigger, creator;
};

struct added_case {
  const char* name;
  std::function<void(json&)> edit;
  std::optional<created_fields> want;
  translate_options options = {};
};

// The fixture: job 0b6f for pod default/web-1, ReservationFirst, ttl 5m0s, evict-trigger
// LowNodeLoad, phase Running, no job-created-by (a user's).
std::vector<added_case> added_cases() {
  const created_fields fixture{
      "default/web-1", "ReservationFirst", 300'000, false, "", "LowNodeLoad", ""};
  auto with = [&](std::function<void(created_fields&)> f) {
    created_fields c = fixture;
    f(c);
    return std::optional<created_fields>(c);
  };
  translate_options colony_a;
  colony_a.descheduler_name = "colony-a";
  return {
      {"AsListed", {}, fixture},
      {"EvictDirectlyWithAReason",
       [](json& o) {
         o["spec"]["mode"] = "EvictDirectly";
         o["metadata"]["annotations"][evict_reason] = "drain node n1";
       },
       with([](created_fields& c) {
         c.mode = "EvictDirectly";
         c.reason = "drain node n1";
       })},
      // The creator: the manager of the first write of the object itself (a status write by a
      // controller, earlier or not, does not count).
      {"CreatorFromManagedFields",
       [](json& o) {
         o["metadata"]["managedFields"] = json::array({{{"manager", "koord-descheduler"},
                                                        {"operation", "Update"},
                                                        {"subresource", "status"},
                                                        {"time", "2026-01-01T00:00:00Z"}},
                                                       {{"manager", "kubectl-edit"},
                                                        {"operation", "Update"},
                                                        {"time", "2026-01-01T00:03:00Z"}},
                                                       {{"manager", "kubectl-create"},
                                                        {"operation", "Update"},
                                                        {"time", "2026-01-01T00:01:00Z"}}});
       },
       with([](created_fields& c) { c.creator = "kubectl-create"; })},
      {"Paused", [](json& o) { o["spec"]["paused"] = true; },
       with([](created_fields& c) { c.paused = true; })},
      {"NoModeNoTtlNoAnnotations",
       [](json& o) {
         o["spec"].erase("mode");
         o["spec"].erase("ttl");
         o["metadata"].erase("annotations");
       },
       with([](created_fields& c) {
         c.mode.clear();  // the controller's defaultJobMode
         c.ttl_ms = 0;
         c.trigger.clear();
       })},
      {"FractionalTtl", [](json& o) { o["spec"]["ttl"] = "1.5s"; },
       with([](created_fields& c) { c.ttl_ms = 1500; })},
      {"NegativeTtlIsNone", [](json& o) { o["spec"]["ttl"] = "-5m"; },
       with([](created_fields& c) { c.ttl_ms = 0; })},
      // An incomplete podRef is the controller's to fail (InvalidPodRef): pod "".
      {"EmptyPodNamespace", [](json& o) { o["spec"]["podRef"]["namespace"] = ""; },
       with([](created_fields& c) { c.pod.clear(); })},
      {"NoPodName", [](json& o) { o["spec"]["podRef"].erase("name"); },
       with([](created_fields& c) { c.pod.clear(); })},
      {"NoPodRef", [](json& o) { o["spec"].erase("podRef"); },
       with([](created_fields& c) { c.pod.clear(); })},
      {"PendingPhase", [](json& o) { o["status"]["phase"] = "Pending"; }, fixture},
      {"NoStatus", [](json& o) { o.erase("status"); }, fixture},
      // A job that ended before Colony saw it (first seen after a restart): nothing.
      {"Succeeded", [](json& o) { o["status"]["phase"] = "Succeeded"; }, std::nullopt},
      {"Failed", [](json& o) { o["status"]["phase"] = "Failed"; }, std::nullopt},
      {"Aborted", [](json& o) { o["status"]["phase"] = "Aborted"; }, std::nullopt},
      // Colony's own job coming back: its MigrationJobCreated is the descheduler's decision.
      {"ColonysOwn",
       [](json& o) { o["metadata"]["annotations"][created_by] = "koord-descheduler"; },
       std::nullopt},
      {"ColonysOwnByAnotherName",
       [](json& o) { o["metadata"]["annotations"][created_by] = "colony-a"; }, std::nullopt,
       colony_a},
      // Another descheduler's job, which Koordinator's other instances do not drive: nothing,
      // even where Colony could not read it.
      {"AnotherDeschedulers",
       [](json& o) {
         o["metadata"]["annotations"][created_by] = "5f0c1a2e-6b7d-4c8e-9f00-112233445566";
         o["spec"]["mode"] = "Sideways";
       },
       std::nullopt},
      {"KoordDeschedulerIsAnotherWhenColonyIsNamedOtherwise",
       [](json& o) { o["metadata"]["annotations"][created_by] = "koord-descheduler"; },
       std::nullopt, colony_a},
  };
}

TEST(KubeTranslateMigrationJob, AUsersJobIsCreatedOnceAndNoOtherIs) {
  const auto cases = added_cases();
  ASSERT_EQ(cases.size(), 19u);
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    json obj = load("podmigrationjob-0b6f.json");
    if (c.edit) c.edit(obj);
    auto r = translate_added(pmj, obj, t0, c.options);
    ASSERT_TRUE(r.has_value()) << r.error().describe();
    if (!c.want) {
      EXPECT_TRUE(r->empty());
      continue;
    }
    EXPECT_EQ(*r, *translate_added(pmj, obj, t0, c.options)) << "same object, same bytes";
    const auto e = decode_all(*r);
    ASSERT_EQ(e.size(), 1u);
    expect_job_header(e[0], "0b6f");
    ASSERT_EQ(e[0]->payload_type(), P::MigrationJobCreated);
    const auto* j = e[0]->payload_as_MigrationJobCreated();
    EXPECT_EQ(str(j->name()), "0b6f");
    EXPECT_EQ(str(j->pod()), c.want->pod);
    EXPECT_EQ(str(j->mode()), c.want->mode);
    EXPECT_EQ(j->ttl_ms(), c.want->ttl_ms);
    EXPECT_EQ(j->paused(), c.want->paused);
    EXPECT_EQ(str(j->reason()), c.want->reason);
    EXPECT_EQ(trigger_of(j), c.want->trigger);
    EXPECT_EQ(str(j->creator()), c.want->creator);
  }
}

// A MODIFIED or DELETED: the abort a user decided (a phase set to Aborted, or a job deleted
// before it ended) is recorded for the jobs Colony drives; nothing else is.
struct later_case {
  const char* name;
  std::function<void(json&)> before;                           // from the fixture
  std::function<void(json&)> after;                            // nullptr: DELETED (of `before`)
  change changed;                                              // change_kind (MODIFIED only)
  std::optional<std::pair<std::string, std::string>> aborted;  // reason, message
};

std::vector<later_case> later_cases() {
  const auto mine = [](json& o) { o["metadata"]["annotations"][created_by] = "koord-descheduler"; };
  const auto others = [](json& o) { o["metadata"]["annotations"][created_by] = "uid-1"; };
  const auto abort = [](json& o) { o["status"]["phase"] = "Aborted"; };
  const auto none = [](json&) {};
  const std::pair<std::string, std::string> plain{"", "PodMigrationJob 0b6f aborted"};
  const std::pair<std::string, std::string> deleted{"Deleted", "PodMigrationJob 0b6f deleted"};
  return {
      {"UserAborts", none, abort, change::relevant, plain},
      {"UserAbortsSayingWhy", none,
       [](json& o) {
         o["status"] = {{"phase", "Aborted"}, {"reason", "Manual"}, {"message", "not needed"}};
       },
       change::relevant, std::pair<std::string, std::string>{"Manual", "not needed"}},
      // What the controller wrote before is not the user's reason.
      {"UserAbortsARunningJob",
       [](json& o) {
         o["status"] = {{"phase", "Running"}, {"reason", "Evicting"}, {"message", "passed"}};
       },
       [](json& o) { o["status"]["phase"] = "Aborted"; }, change::relevant, plain},
      {"UserAbortsARunningJobSayingWhy",
       [](json& o) {
         o["status"] = {{"phase", "Running"}, {"reason", "Evicting"}, {"message", "passed"}};
       },
       [](json& o) {
         o["status"]["phase"] = "Aborted";
         o["status"]["message"] = "not now";
       },
       change::relevant, std::pair<std::string, std::string>{"", "not now"}},
      {"UserAbortsColonysJob", mine,
       [=](json& o) {
         mine(o);
         abort(o);
       },
       change::relevant, plain},
      {"AnotherDeschedulersJobAborted", others,
       [=](json& o) {
         others(o);
         abort(o);
       },
       change::relevant, std::nullopt},
      {"AbortedAgainWithAnotherMessage", abort,
       [](json& o) {
         o["status"] = {{"phase", "Aborted"}, {"message", "really"}};
       },
       change::none, std::nullopt},
      // Colony's own status writes coming back: no news, or nothing to record.
      {"ConditionsAndStatusWritten", none,
       [](json& o) {
         o["status"]["status"] = "Eviction";
         o["status"]["reason"] = "Evicting";
         o["status"]["conditions"] =
             json::array({{{"type", "Eviction"}, {"status", "False"}, {"reason", "Evicting"}}});
         o["metadata"]["resourceVersion"] = "4101";
       },
       change::none, std::nullopt},
      {"Succeeded", none, [](json& o) { o["status"]["phase"] = "Succeeded"; }, change::relevant,
       std::nullopt},
      // A spec edited after creation (unpaused): Koordinator reconciles it, the schema has no
      // record for it (docs/kubernetes-bridge.md "Gaps").
      {"Unpaused", [](json& o) { o["spec"]["paused"] = true; },
       [](json& o) { o["spec"]["paused"] = false; }, change::relevant, std::nullopt},
      {"DeletedWhileRunning", none, nullptr, change::none, deleted},
      {"DeletedWhilePending", [](json& o) { o.erase("status"); }, nullptr, change::none, deleted},
      {"ColonysDeletedWhileRunning", mine, nullptr, change::none, deleted},
      {"DeletedAfterItEnded", [](json& o) { o["status"]["phase"] = "Succeeded"; }, nullptr,
       change::none, std::nullopt},
      {"DeletedAfterTheAbort", abort, nullptr, change::none, std::nullopt},
      {"AnotherDeschedulersDeleted", others, nullptr, change::none, std::nullopt},
  };
}

TEST(KubeTranslateMigrationJob, AbortsAndDeletionsOfDrivenJobsBecomeAborted) {
  const auto cases = later_cases();
  ASSERT_EQ(cases.size(), 16u);
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    json before = load("podmigrationjob-0b6f.json");
    c.before(before);
    result<event_list> r = event_list{};
    if (c.after) {
      json after = before;
      c.after(after);
      EXPECT_EQ(change_kind(pmj, before, after), c.changed);
      r = translate_modified(pmj, before, after, t0);
    } else {
      r = translate_deleted(pmj, before, t0);
    }
    ASSERT_TRUE(r.has_value()) << r.error().describe();
    if (!c.aborted) {
      EXPECT_TRUE(r->empty());
      continue;
    }
    const auto e = decode_all(*r);
    ASSERT_EQ(e.size(), 1u);
    expect_job_header(e[0], "0b6f");
    ASSERT_EQ(e[0]->payload_type(), P::MigrationJobPhaseChanged);
    const auto* p = e[0]->payload_as_MigrationJobPhaseChanged();
    EXPECT_EQ(str(p->name()), "0b6f");
    EXPECT_EQ(str(p->phase()), "Aborted");
    EXPECT_EQ(str(p->reason()), c.aborted->first);
    EXPECT_EQ(str(p->message()), c.aborted->second);
    EXPECT_EQ(str(p->node()), "");
    EXPECT_EQ(str(p->pod()), "");
  }
}

struct invalid_case {
  const char* name;
  std::function<void(json&)> edit;
  std::string field, message;
};

// A job Colony would drive but cannot read: refused whole (ObjectRefused keyed to the job,
// naming the field).
TEST(KubeTranslateMigrationJob, InvalidJobsAreRefusedNamingTheField) {
  const std::vector<invalid_case> cases = {
      {"TtlNotADuration", [](json& o) { o["spec"]["ttl"] = "5 minutes"; }, "spec.ttl",
       R"("5 minutes" is not a duration)"},
      {"TtlNotAString", [](json& o) { o["spec"]["ttl"] = true; }, "spec.ttl",
       "must be a duration, got true"},
      {"UnknownMode", [](json& o) { o["spec"]["mode"] = "Sideways"; }, "spec.mode",
       R"("Sideways" is not ReservationFirst, EvictDirectly)"},
      {"PausedNotABool", [](json& o) { o["spec"]["paused"] = "yes"; }, "spec.paused",
       R"(must be a boolean, got "yes")"},
      {"PodRefNotAnObject", [](json& o) { o["spec"]["podRef"] = "default/web-1"; }, "spec.podRef",
       "must be an object"},
      {"PodNameNotAString", [](json& o) { o["spec"]["podRef"]["name"] = 7; }, "spec.podRef.name",
       "must be a string, got 7"},
      {"UnknownPhase", [](json& o) { o["status"]["phase"] = "Done"; }, "status.phase",
       R"("Done" is not Pending, Running, Succeeded, Failed, Aborted)"},
      {"Namespaced", [](json& o) { o["metadata"]["namespace"] = "default"; }, "metadata.namespace",
       "must be empty: PodMigrationJob is cluster-scoped"},
      {"ReasonNotAString", [](json& o) { o["metadata"]["annotations"][evict_reason] = 7; },
       "metadata.annotations[koordinator.sh/evict-reason]", "must be a string, got 7"},
      {"ColonysOwnWithABadTtl",
       [](json& o) {
         o["metadata"]["annotations"][created_by] = "koord-descheduler";
         o["spec"]["ttl"] = "soon";
       },
       "spec.ttl", R"("soon" is not a duration)"},
  };
  ASSERT_EQ(cases.size(), 10u);
  const json good = load("podmigrationjob-0b6f.json");
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    json obj = good;
    c.edit(obj);
    auto r = translate_added(pmj, obj, t0);
    ASSERT_FALSE(r.has_value()) << "emitted " << r->size() << " events";
    EXPECT_EQ(r.error().code, errc::invalid_input);
    const std::string where =
        c.field == "metadata.namespace" ? "PodMigrationJob default/0b6f" : "PodMigrationJob 0b6f";
    EXPECT_EQ(r.error().where, where + ": " + c.field);
    EXPECT_EQ(r.error().message, c.message);
    // A MODIFIED to it is refused alike when it changes what a MODIFIED reads (the spec, the
    // phase); a namespace is another key (never a MODIFIED), an annotation is read at creation.
    const bool read_on_modified = c.field.rfind("spec", 0) == 0 || c.field.rfind("status", 0) == 0;
    EXPECT_EQ(change_kind(pmj, good, obj) != change::none, read_on_modified);
    if (read_on_modified) {
      auto m = translate_modified(pmj, good, obj, t0);
      ASSERT_FALSE(m.has_value());
      EXPECT_EQ(m.error().where, r.error().where);
    }

    const event_list recs{translate_refused(pmj, obj, r.error(), t0)};
    const auto e = decode_all(recs);
    ASSERT_EQ(e.size(), 1u);
    expect_job_header(e[0], "0b6f");
    ASSERT_EQ(e[0]->payload_type(), P::ObjectRefused);
    const auto* o = e[0]->payload_as_ObjectRefused();
    EXPECT_EQ(str(o->api_kind()), "PodMigrationJob");
    EXPECT_EQ(str(o->name()), "0b6f");
    EXPECT_EQ(str(o->uid()), "0b6f3e2d-1c4b-4a59-8e7f-6d5c4b3a2918");
    EXPECT_EQ(str(o->resource_version()), "4100");
    EXPECT_EQ(str(o->field()), c.field);
    EXPECT_EQ(str(o->reason()), c.message);
  }
}

}  // namespace
}  // namespace colony::kube::testing
