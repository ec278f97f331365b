// `colony run --descheduler-config` against a real kube-apiserver with Koordinator's
// PodMigrationJob CRD (label kube), as a user runs it (the real colony binary):
//   - three bare pods that colony run binds to the only node, then a second node, and NodeMetrics
//     that put the first node at 90 % cpu and the second at 5 %: koord-descheduler's LowNodeLoad
//     finds the first node hot and the second cold, creates PodMigrationJobs for pods of the hot
//     node, and the migration controller evicts them through the Eviction API (EvictDirectly):
//     the evicted pods get a deletionTimestamp, the log holds MigrationJobCreated, PodEvicted
//     (Descheduled) and the jobs' phases, and no write failed; each job is a PodMigrationJob
//     object as Koordinator's descheduler creates it whose status ends Succeeded/EvictComplete,
//     and the bridge did not take it for a user's job (one MigrationJobCreated per job);
//   - PodMigrationJobs a user creates: one for an existing pod (EvictDirectly) evicts it and ends
//     Succeeded, one for a pod that does not exist ends Failed/MissingPod, one without a pod name
//     ends Failed/InvalidPodRef, one the user aborts while it waits for the eviction token stays
//     Aborted and its pod is not evicted, a paused one is left alone; a bad ttl or mode is an
//     ObjectRefused naming the field and nothing else; a restart appends no job again;
//   - ReservationFirst (Koordinator's default job mode) with three pods of one ReplicaSet: the
//     job's Reservation is created in the API and placed on the cold node, the pod is evicted,
//     the test plays the ReplicaSet controller and creates the replacement, which binds into the
//     reservation on that node; the Reservation is written Succeeded with the replacement as its
//     owner and the job Succeeded/PodBoundReservation, its PodMigrationJob object Succeeded with
//     the node, the new pod and a condition per step;
//   - a DeschedulerConfiguration with a threshold out of range is refused at start (exit 3),
//     naming the file and the field.
#include <chrono>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "bridges/kubernetes/kube_time.hpp"
#include "messages/names.hpp"
#include "tests/cli/drained_process.hpp"
#include "tests/run/colony_run_test.hpp"

namespace colony::run::testing {
namespace {

using namespace std::chrono_literals;
using steady = std::chrono::steady_clock;
using messages::to_string_view;

// LowNodeLoad with absolute thresholds (Koordinator's shipped example: a node is hot above 75 %
// cpu, a target below 45 %), one abnormal round enough to act, a round every second, and the
// migration controller evicting directly; the test's pods have no owner.
constexpr const char* descheduler_yaml = R"(apiVersion: descheduler/v1alpha2
kind: DeschedulerConfiguration
deschedulingInterval: 1s
profiles:
- name: koord-descheduler
  plugins:
    balance:
      enabled:
      - name: LowNodeLoad
  pluginConfig:
  - name: MigrationController
    args:
      apiVersion: descheduler/v1alpha2
      kind: MigrationControllerArgs
      defaultJobMode: EvictDirectly
      evictAllBarePods: true
  - name: LowNodeLoad
    args:
      apiVersion: descheduler/v1alpha2
      kind: LowNodeLoadArgs
      lowThresholds:
        cpu: 45
        memory: 55
      highThresholds:
        cpu: 75
        memory: 80
      anomalyCondition:
        consecutiveAbnormalities: 1
)";

class ColonyRunDescheduler : public colony_run_test {
 protected:
  const std::string metrics = "/apis/slo.koordinator.sh/v1alpha1/nodemetrics";
  const std::string jobs = "/apis/scheduling.koordinator.sh/v1alpha1/podmigrationjobs";

  void SetUp() override {
    colony_run_test::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    using peer = kube::testing::kube_peer;
    auto crds =
        peer_->apply_crds({peer::crd_file("slo.koordinator.sh_nodemetrics.yaml",
                                          "nodemetrics.slo.koordinator.sh.yaml"),
                           peer::crd_file("scheduling.koordinator.sh_reservations.yaml",
                                          "reservations.scheduling.koordinator.sh.yaml"),
                           peer::crd_file("scheduling.koordinator.sh_podmigrationjobs.yaml",
                                          "podmigrationjobs.scheduling.koordinator.sh.yaml")});
    ASSERT_TRUE(crds) << crds.error().describe();
  }
  // A user's PodMigrationJob (cluster-scoped) with this podRef; `spec` is merged in.
  void make_job(const std::string& name, const json& pod_ref, const json& spec = json::object()) {
    json s = {{"podRef", pod_ref}};
    s.update(spec);
    post(jobs, json{{"apiVersion", "scheduling.koordinator.sh/v1alpha1"},
                    {"kind", "PodMigrationJob"},
                    {"metadata", {{"name", name}}},
                    {"spec", s}});
  }
  json job_object(const std::string& name) {
    auto r = client_->get(jobs + "/" + name);
    return r ? json::parse(r->body) : json{};
  }
  std::string phase_of(const std::string& name) {
    return job_object(name).value("/status/phase"_json_pointer, std::string{});
  }
  // Polls until the job's status.phase is `phase` (or the limit).
  bool wait_phase(const std::string& name, const std::string& phase,
                  std::chrono::seconds limit = 60s) {
    const auto t0 = steady::now();
    while (steady::now() - t0 < limit) {
      if (phase_of(name) == phase) return true;
      std::this_thread::sleep_for(200ms);
    }
    return false;
  }
  std::string write_config(const std::string& name, const std::string& text) {
    const std::string path = work_ + "/" + name;
    std::ofstream(path) << text;
    return path;
  }
  // The koordlet's report for a node: node usage, and each pod's usage, as of now.
  void node_metric(const std::string& node, const std::string& cpu,
                   const std::vector<std::pair<std::string, std::string>>& pods) {
    post(metrics, json{{"apiVersion", "slo.koordinator.sh/v1alpha1"},
                       {"kind", "NodeMetric"},
                       {"metadata", {{"name", node}}},
                       {"spec", {{"metricCollectPolicy", {{"reportIntervalSeconds", 60}}}}}});
    json pm = json::array();
    for (const auto& [pod, c] : pods)
      pm.push_back({{"namespace", ns},
                    {"name", pod},
                    {"podUsage", {{"resources", {{"cpu", c}, {"memory", "256Mi"}}}}}});
    const auto now = std::chrono::duration_cast<std::chrono::milliseconds>(
                         std::chrono::system_clock::now().time_since_epoch())
                         .count();
    const json status = {
        {"status",
         {{"updateTime", kube::rfc3339(now)},
          {"nodeMetric", {{"nodeUsage", {{"resources", {{"cpu", cpu}, {"memory", "2Gi"}}}}}}},
          {"podsMetric", pm}}}};
    auto r =
        client_->patch(metrics + "/" + node + "/status", kube::patch_type::merge, status.dump());
    ASSERT_TRUE(r) << r.error().describe();
  }
  // A pod of the ReplicaSet web-rs (500m cpu, as make_pod's).
  void make_rs_pod(const std::string& name) {
    post("/api/v1/namespaces/" + ns + "/pods",
         json{{"apiVersion", "v1"},
              {"kind", "Pod"},
              {"metadata",
               {{"name", name},
                {"namespace", ns},
                {"ownerReferences", json::array({{{"apiVersion", "apps/v1"},
                                                  {"kind", "ReplicaSet"},
                                                  {"name", "web-rs"},
                                                  {"uid", "6f1c2d3e-4b5a-4c6d-8e7f-9a0b1c2d3e4f"},
                                                  {"controller", true}}})}}},
              {"spec",
               {{"schedulerName", "koord-scheduler"},
                {"containers",
                 json::array({{{"name", "c"},
                               {"image", "registry.invalid/pause:3.9"},
                               {"resources",
                                {{"requests", {{"cpu", "500m"}, {"memory", "256Mi"}}}}}}})}}}});
  }
  // Pods of the namespace that carry a deletionTimestamp.
  std::set<std::string> deleting() {
    std::set<std::string> s;
    const auto l = get("/api/v1/namespaces/" + ns + "/pods");
    for (const auto& p : l.value("items", json::array()))
      if (p["metadata"].contains("deletionTimestamp"))
        s.insert(p["metadata"]["name"].get<std::string>());
    return s;
  }
};

TEST_F(ColonyRunDescheduler, HotNodePodsAreEvictedThroughTheEvictionApi) {
  make_node("hot");
  for (const char* p : {"a", "b", "c"}) make_pod(p);
  colony::testing::drained_process run({colony::testing::colony_binary(), "run", "--kubeconfig",
                                        kubeconfig_, "--log", log_, "--descheduler-config",
                                        write_config("descheduler.yaml", descheduler_yaml)});
  ASSERT_TRUE(run.started()) << "set COLONY_BINARY";
  auto t0 = steady::now();
  while (steady::now() - t0 < 60s && !all_bound()) std::this_thread::sleep_for(200ms);
  ASSERT_TRUE(all_bound()) << run.output();
  make_node("cold");
  node_metric("hot", "3600m", {{"a", "1500m"}, {"b", "1200m"}, {"c", "900m"}});
  node_metric("cold", "200m", {});
  t0 = steady::now();
  while (steady::now() - t0 < 60s && deleting().empty()) std::this_thread::sleep_for(200ms);
  // Every job the descheduler created is an object; wait for their statuses to end.
  const auto all_ended = [&] {
    const auto l = get(jobs);
    for (const auto& j : l.value("items", json::array())) {
      const auto p = j.value("/status/phase"_json_pointer, std::string{});
      if (p != "Succeeded" && p != "Failed") return false;
    }
    return !l.value("items", json::array()).empty();
  };
  t0 = steady::now();
  while (steady::now() - t0 < 30s && !all_ended()) std::this_thread::sleep_for(200ms);
  std::this_thread::sleep_for(1s);  // let late writes show
  const auto gone = deleting();
  EXPECT_EQ(run.stop(30s), 0) << run.output();
  if (gone.empty()) {
    // What the log says the descheduler saw.
    std::map<std::string, int> types;
    std::string metrics_seen;
    for (const auto& r : records()) {
      const auto& env = *wire::GetEnvelope(r.data());
      ++types[std::string(messages::payload_name(env.payload_type()))];
      if (env.payload_type() == wire::Payload::NodeMetricReported ||
          env.payload_type() == wire::Payload::ObjectRefused)
        if (auto j = messages::to_json(r); j) metrics_seen += *j + "\n";
    }
    for (const auto& [t, n] : types) metrics_seen += t + " " + std::to_string(n) + "\n";
    std::error_code ec;
    const auto keep = std::filesystem::temp_directory_path() / "colony-descheduler-kube-log";
    std::filesystem::remove_all(keep, ec);
    std::filesystem::copy(log_, keep, std::filesystem::copy_options::recursive, ec);
    FAIL() << "nothing evicted (log kept in " << keep.string() << "); the log:\n" << metrics_seen;
  }
  // Every round reads the same NodeMetric (no koordlet refreshes it here), so later rounds may
  // take more pods of the node, as Koordinator's would; each round stops once the pods it took
  // bring the node under 75 %.
  EXPECT_LE(gone.size(), 3u);

  std::set<std::string> jobs_for, evicted, failed;
  std::map<std::string, std::string> pod_of_job;
  std::map<std::string, int> created_records;
  std::size_t phases = 0;
  for (const auto& r : records()) {
    const auto& env = *wire::GetEnvelope(r.data());
    switch (env.payload_type()) {
      case wire::Payload::MigrationJobCreated: {
        const auto* c = env.payload_as_MigrationJobCreated();
        jobs_for.insert(std::string(to_string_view(c->pod())));
        pod_of_job[std::string(to_string_view(c->name()))] = std::string(to_string_view(c->pod()));
        ++created_records[std::string(to_string_view(c->name()))];
        // The descheduler's decision, never the bridge reading its own job back.
        EXPECT_EQ(to_string_view(env.source()), "koord-descheduler");
        EXPECT_GE(env.causation(), 0);
        break;
      }
      case wire::Payload::MigrationJobPhaseChanged:
        ++phases;
        break;
      case wire::Payload::PodEvicted: {
        const auto* e = env.payload_as_PodEvicted();
        EXPECT_EQ(e->reason(), wire::EvictionReason::Descheduled);
        EXPECT_EQ(to_string_view(e->node()), "hot");
        evicted.insert(std::string(to_string_view(e->pod())));
        break;
      }
      case wire::Payload::WriteFailed:
        failed.insert(std::string(to_string_view(env.payload_as_WriteFailed()->object())));
        break;
      default:
        break;
    }
  }
  EXPECT_FALSE(jobs_for.empty());
  EXPECT_GE(phases, 1u);
  ASSERT_FALSE(evicted.empty());
  for (const auto& p : gone) EXPECT_EQ(evicted.count(ns + "/" + p), 1u) << p;
  EXPECT_TRUE(failed.empty()) << *failed.begin();

  // Each job is a PodMigrationJob object shaped as Koordinator's descheduler creates it
  // (evict.go: evict-reason, evict-trigger, job-created-by; podRef with the pod's uid), once;
  // the evicted pods' jobs end Succeeded with the Eviction condition EvictComplete.
  const auto listed = get(jobs).value("items", json::array());
  EXPECT_EQ(listed.size(), created_records.size());
  for (const auto& [name, n] : created_records) {
    SCOPED_TRACE(name);
    EXPECT_EQ(n, 1);
    const json j = job_object(name);
    ASSERT_TRUE(j.is_object() && j.contains("metadata")) << j.dump();
    const json anns = j["metadata"].value("annotations", json::object());
    EXPECT_EQ(anns.value(std::string(names::annotation_job_created_by), ""), "koord-descheduler");
    EXPECT_EQ(anns.value(std::string(names::annotation_evict_trigger), ""), "LowNodeLoad");
    EXPECT_EQ(anns.value(std::string(names::annotation_evict_reason), "")
                  .rfind("node is overutilized, node cpu usage(", 0),
              0u)
        << anns.dump();
    const std::string pod = pod_of_job[name];
    EXPECT_EQ(
        j["spec"]["podRef"].value("namespace", "") + "/" + j["spec"]["podRef"].value("name", ""),
        pod);
    EXPECT_FALSE(j["spec"]["podRef"].value("uid", "").empty());
    EXPECT_EQ(j["spec"].value("mode", ""), "EvictDirectly");
    EXPECT_EQ(j["spec"].value("ttl", ""), "5m0s");
    if (evicted.count(pod) == 0) continue;
    EXPECT_EQ(j.value("/status/phase"_json_pointer, std::string{}), "Succeeded") << j.dump();
    EXPECT_EQ(j.value("/status/status"_json_pointer, std::string{}), "Complete");
    EXPECT_EQ(j.value("/status/reason"_json_pointer, std::string{}), "EvictComplete");
    EXPECT_EQ(j.value("/status/conditions/0/type"_json_pointer, std::string{}), "Eviction");
    EXPECT_EQ(j.value("/status/conditions/0/status"_json_pointer, std::string{}), "True");
  }
}

// LowNodeLoad idle (no NodeMetric), EvictDirectly, and one eviction token: the first job evicts
// at once, the next waits about 100 s for the next token (evictQPS, evictBurst; evictor/
// interpreter.go), long enough for a user to abort it.
constexpr const char* one_token_yaml = R"(apiVersion: descheduler/v1alpha2
kind: DeschedulerConfiguration
deschedulingInterval: 1s
profiles:
- name: koord-descheduler
  plugins:
    balance:
      enabled:
      - name: LowNodeLoad
  pluginConfig:
  - name: MigrationController
    args:
      apiVersion: descheduler/v1alpha2
      kind: MigrationControllerArgs
      defaultJobMode: EvictDirectly
      evictAllBarePods: true
      evictQPS: 0.01
      evictBurst: 1
  - name: LowNodeLoad
    args:
      apiVersion: descheduler/v1alpha2
      kind: LowNodeLoadArgs
      lowThresholds:
        cpu: 45
      highThresholds:
        cpu: 75
)";

TEST_F(ColonyRunDescheduler, UsersJobsAreCarriedOutAndInvalidOnesRefused) {
  make_node("n1");
  for (const char* p : {"a", "b", "c"}) make_pod(p);
  const std::vector<std::string> args = {colony::testing::colony_binary(),
                                         "run",
                                         "--kubeconfig",
                                         kubeconfig_,
                                         "--log",
                                         log_,
                                         "--descheduler-config",
                                         write_config("descheduler.yaml", one_token_yaml)};
  colony::testing::drained_process run(args);
  ASSERT_TRUE(run.started()) << "set COLONY_BINARY";
  auto t0 = steady::now();
  while (steady::now() - t0 < 60s && !all_bound()) std::this_thread::sleep_for(200ms);
  ASSERT_TRUE(all_bound()) << run.output();
  const json direct = {{"mode", "EvictDirectly"}};
  const auto ref = [&](const std::string& pod) { return json{{"namespace", ns}, {"name", pod}}; };

  make_job("evict-a", ref("a"), direct);
  make_job("missing", ref("ghost"), direct);
  make_job("no-pod-name", json{{"namespace", ns}}, direct);
  make_job("bad-ttl", ref("c"), {{"mode", "EvictDirectly"}, {"ttl", "soon"}});
  make_job("bad-mode", ref("c"), {{"mode", "Sideways"}});
  EXPECT_TRUE(wait_phase("evict-a", "Succeeded")) << job_object("evict-a").dump() << run.output();
  // The eviction and the status are written on different connections: either may land first.
  t0 = steady::now();
  while (steady::now() - t0 < 30s && deleting().count("a") == 0) std::this_thread::sleep_for(200ms);
  EXPECT_EQ(deleting().count("a"), 1u) << "pod a is not being deleted";
  EXPECT_TRUE(wait_phase("missing", "Failed")) << job_object("missing").dump();
  EXPECT_EQ(job_object("missing").value("/status/reason"_json_pointer, std::string{}),
            "MissingPod");
  EXPECT_TRUE(wait_phase("no-pod-name", "Failed")) << job_object("no-pod-name").dump();
  EXPECT_EQ(job_object("no-pod-name").value("/status/reason"_json_pointer, std::string{}),
            "InvalidPodRef");

  // Passed arbitration, waiting for the eviction token: the user aborts it; it stays Aborted
  // and its pod is not evicted.
  make_job("evict-b", ref("b"), direct);
  EXPECT_TRUE(wait_phase("evict-b", "Running")) << job_object("evict-b").dump();
  auto abort = client_->patch(jobs + "/evict-b/status", kube::patch_type::merge,
                              R"({"status":{"phase":"Aborted","message":"not now"}})");
  ASSERT_TRUE(abort) << abort.error().describe();
  // A paused job does nothing (Koordinator: doMigrate returns at once).
  make_job("paused-c", ref("c"), {{"mode", "EvictDirectly"}, {"paused", true}});
  std::this_thread::sleep_for(4s);
  EXPECT_EQ(phase_of("evict-b"), "Aborted");
  EXPECT_EQ(deleting().count("b"), 0u);
  EXPECT_EQ(deleting().count("c"), 0u);
  EXPECT_EQ(phase_of("paused-c"), "");  // arbitrated, never reconciled: no status written
  // The invalid jobs are left as they are.
  for (const char* bad : {"bad-ttl", "bad-mode"})
    EXPECT_FALSE(job_object(bad).contains("status")) << job_object(bad).dump();
  EXPECT_EQ(run.stop(30s), 0) << run.output();

  // The log: one MigrationJobCreated per valid job, from the bridge (the user's); one Aborted;
  // one ObjectRefused per invalid job naming its field; no write failed.
  struct seen {
    int created = 0, aborted = 0, refused = 0, evictions = 0;
    std::string field, creator, pod, mode;
    bool paused = false;
  };
  std::map<std::string, seen> by_job;
  std::size_t write_failures = 0;
  for (const auto& r : records()) {
    const auto& env = *wire::GetEnvelope(r.data());
    switch (env.payload_type()) {
      case wire::Payload::MigrationJobCreated: {
        const auto* c = env.payload_as_MigrationJobCreated();
        auto& s = by_job[std::string(to_string_view(c->name()))];
        ++s.created;
        s.creator = to_string_view(c->creator());
        s.pod = to_string_view(c->pod());
        s.mode = to_string_view(c->mode());
        s.paused = c->paused();
        EXPECT_EQ(to_string_view(env.source()), "bridge/k8s");
        EXPECT_EQ(env.causation(), -1);
        break;
      }
      case wire::Payload::MigrationJobPhaseChanged: {
        const auto* p = env.payload_as_MigrationJobPhaseChanged();
        if (to_string_view(env.source()) == "bridge/k8s") {
          EXPECT_EQ(to_string_view(p->phase()), "Aborted");
          EXPECT_EQ(to_string_view(p->message()), "not now");
          ++by_job[std::string(to_string_view(p->name()))].aborted;
        }
        break;
      }
      case wire::Payload::ObjectRefused: {
        const auto* o = env.payload_as_ObjectRefused();
        if (to_string_view(o->api_kind()) != "PodMigrationJob") break;
        EXPECT_EQ(env.entity_kind(), wire::EntityKind::PodMigrationJob);
        auto& s = by_job[std::string(to_string_view(o->name()))];
        ++s.refused;
        s.field = to_string_view(o->field());
        break;
      }
      case wire::Payload::PodEvicted:
        if (const auto* in = env.payload_as_PodEvicted()->inputs(); in != nullptr)
          for (const auto* t : *in)
            if (to_string_view(t->name()) == "migrationJob")
              ++by_job[std::string(to_string_view(t->text()))].evictions;
        break;
      case wire::Payload::WriteFailed:
        ++write_failures;
        break;
      default:
        break;
    }
  }
  for (const char* name : {"evict-a", "missing", "no-pod-name", "evict-b", "paused-c"}) {
    SCOPED_TRACE(name);
    EXPECT_EQ(by_job[name].created, 1);
    EXPECT_EQ(by_job[name].refused, 0);
    EXPECT_EQ(by_job[name].mode, "EvictDirectly");
    EXPECT_FALSE(by_job[name].creator.empty());  // the test client's field manager
  }
  EXPECT_EQ(by_job["evict-a"].pod, ns + "/a");
  EXPECT_EQ(by_job["no-pod-name"].pod, "");
  EXPECT_TRUE(by_job["paused-c"].paused);
  EXPECT_EQ(by_job["evict-a"].evictions, 1);
  EXPECT_EQ(by_job["evict-b"].evictions, 0);
  EXPECT_EQ(by_job["evict-b"].aborted, 1);
  EXPECT_EQ(by_job["bad-ttl"].created, 0);
  EXPECT_EQ(by_job["bad-ttl"].refused, 1);
  EXPECT_EQ(by_job["bad-ttl"].field, "spec.ttl");
  EXPECT_EQ(by_job["bad-mode"].created, 0);
  EXPECT_EQ(by_job["bad-mode"].refused, 1);
  EXPECT_EQ(by_job["bad-mode"].field, "spec.mode");
  EXPECT_EQ(write_failures, 0u);

  // A restart over the same log appends no job, abort or refusal again.
  colony::testing::drained_process again(args);
  ASSERT_TRUE(again.started());
  std::this_thread::sleep_for(5s);
  EXPECT_EQ(again.stop(30s), 0) << again.output();
  std::size_t jobs_after = 0, refused_after = 0;
  for (const auto& r : records()) {
    const auto& env = *wire::GetEnvelope(r.data());
    jobs_after += env.payload_type() == wire::Payload::MigrationJobCreated;
    refused_after += env.payload_type() == wire::Payload::ObjectRefused &&
                     env.entity_kind() == wire::EntityKind::PodMigrationJob;
  }
  std::size_t jobs_before = 0, refused_before = 0;
  for (const auto& [name, s] : by_job) {
    jobs_before += static_cast<std::size_t>(s.created);
    refused_before += static_cast<std::size_t>(s.refused);
  }
  EXPECT_EQ(jobs_after, jobs_before);
  EXPECT_EQ(refused_after, refused_before);
}

TEST_F(ColonyRunDescheduler, ReservationFirstBindsTheReplacementIntoTheJobsReservation) {
  make_node("hot");
  for (const char* p : {"a", "b", "c"}) make_rs_pod(p);
  std::string yaml = descheduler_yaml;
  yaml.replace(yaml.find("defaultJobMode: EvictDirectly"), 29, "defaultJobMode: ReservationFirst");
  colony::testing::drained_process run({colony::testing::colony_binary(), "run", "--kubeconfig",
                                        kubeconfig_, "--log", log_, "--descheduler-config",
                                        write_config("descheduler.yaml", yaml)});
  ASSERT_TRUE(run.started()) << "set COLONY_BINARY";
  auto t0 = steady::now();
  while (steady::now() - t0 < 60s && !all_bound()) std::this_thread::sleep_for(200ms);
  ASSERT_TRUE(all_bound()) << run.output();
  make_node("cold");
  node_metric("hot", "3600m", {{"a", "1500m"}, {"b", "1200m"}, {"c", "900m"}});
  node_metric("cold", "200m", {});
  // Play the ReplicaSet controller: each evicted pod gets a replacement "<name>-r".
  std::set<std::string> replaced;
  std::string bound_to;  // the first replacement's node
  t0 = steady::now();
  while (steady::now() - t0 < 90s && bound_to.empty()) {
    for (const auto& p : deleting())
      if (p.find("-r") == std::string::npos && replaced.insert(p).second) make_rs_pod(p + "-r");
    for (const auto& [p, n] : placements())
      if (p.size() > 2 && p.ends_with("-r") && !n.empty()) bound_to = n;
    std::this_thread::sleep_for(200ms);
  }
  std::this_thread::sleep_for(2s);  // the Succeeded writes
  // The jobs' statuses are written on their own sink connections: wait for one to end.
  const auto a_job_succeeded = [&] {
    for (const auto& j : get(jobs).value("items", json::array()))
      if (j.value("/status/phase"_json_pointer, std::string{}) == "Succeeded") return true;
    return false;
  };
  t0 = steady::now();
  while (steady::now() - t0 < 20s && !a_job_succeeded()) std::this_thread::sleep_for(200ms);
  const auto recs = records();
  EXPECT_EQ(run.stop(30s), 0) << run.output();
  ASSERT_FALSE(replaced.empty()) << "nothing evicted: " << run.output();
  ASSERT_EQ(bound_to, "cold") << run.output();

  // The log: a job's reservation placed on cold, its pod evicted after that, the replacement
  // bound into it, the reservation Succeeded with it and the job Succeeded.
  std::map<std::string, std::string> placed, into;  // reservation -> node / pod bound into it
  std::set<std::string> succeeded_jobs, reservations_succeeded, failed_writes;
  std::size_t evicted_before_placed = 0;
  for (const auto& r : recs) {
    const auto& env = *wire::GetEnvelope(r.data());
    switch (env.payload_type()) {
      case wire::Payload::ReservationPhaseChanged: {
        const auto* e = env.payload_as_ReservationPhaseChanged();
        const std::string name(to_string_view(e->name()));
        if (to_string_view(e->phase()) == "Available")
          placed[name] = std::string(to_string_view(e->node()));
        if (to_string_view(e->phase()) == "Succeeded") reservations_succeeded.insert(name);
        break;
      }
      case wire::Payload::PodEvicted: {
        const auto* e = env.payload_as_PodEvicted();
        std::string job;
        if (e->inputs() != nullptr)
          for (const auto* t : *e->inputs())
            if (to_string_view(t->name()) == "migrationJob")
              job = std::string(to_string_view(t->text()));
        if (placed.count(job) == 0) ++evicted_before_placed;
        break;
      }
      case wire::Payload::PodScheduled: {
        const auto* e = env.payload_as_PodScheduled();
        if (const auto rs = to_string_view(e->reservation()); !rs.empty())
          into[std::string(rs)] = std::string(to_string_view(e->pod()));
        break;
      }
      case wire::Payload::MigrationJobPhaseChanged: {
        const auto* e = env.payload_as_MigrationJobPhaseChanged();
        if (to_string_view(e->phase()) == "Succeeded") {
          EXPECT_EQ(to_string_view(e->reason()), "PodBoundReservation");
          EXPECT_EQ(to_string_view(e->node()), "cold");
          succeeded_jobs.insert(std::string(to_string_view(e->name())));
        }
        break;
      }
      case wire::Payload::WriteFailed:
        failed_writes.insert(std::string(to_string_view(env.payload_as_WriteFailed()->object())));
        break;
      default:
        break;
    }
  }
  EXPECT_EQ(evicted_before_placed, 0u);
  ASSERT_FALSE(succeeded_jobs.empty());
  for (const auto& job : succeeded_jobs) {
    EXPECT_EQ(placed[job], "cold") << job;
    EXPECT_TRUE(into[job].ends_with("-r")) << job << " " << into[job];
    EXPECT_EQ(reservations_succeeded.count(job), 1u) << job;
    // The Reservation object in the API: created by Colony, written Succeeded with the owner.
    const json obj = get("/apis/scheduling.koordinator.sh/v1alpha1/reservations/" + job);
    EXPECT_EQ(obj.value("/status/phase"_json_pointer, std::string()), "Succeeded") << obj.dump();
    EXPECT_EQ(obj.value("/status/nodeName"_json_pointer, std::string()), "cold");
    const auto owners = obj.value("/status/currentOwners"_json_pointer, json::array());
    ASSERT_EQ(owners.size(), 1u) << obj.dump();
    EXPECT_EQ(ns + "/" + owners[0].value("name", std::string()), into[job]);
    // The job's PodMigrationJob object, as Koordinator's controller leaves a ReservationFirst job
    // (controller.go doMigrate): Succeeded/Complete, the reservation's node, the new pod, and the
    // conditions of each step.
    const json pmj = job_object(job);
    EXPECT_EQ(pmj.value("/spec/mode"_json_pointer, std::string()), "ReservationFirst");
    EXPECT_EQ(pmj.value("/status/phase"_json_pointer, std::string()), "Succeeded") << pmj.dump();
    EXPECT_EQ(pmj.value("/status/status"_json_pointer, std::string()), "Complete");
    EXPECT_EQ(pmj.value("/status/nodeName"_json_pointer, std::string()), "cold");
    EXPECT_EQ(ns + "/" + pmj.value("/status/podRef/name"_json_pointer, std::string()), into[job]);
    std::map<std::string, std::string> conditions;
    for (const auto& c : pmj.value("/status/conditions"_json_pointer, json::array()))
      conditions[c.value("type", std::string())] = c.value("status", std::string());
    EXPECT_EQ(conditions, (std::map<std::string, std::string>{{"ReservationCreated", "True"},
                                                              {"ReservationScheduled", "True"},
                                                              {"Eviction", "True"},
                                                              {"PodBoundReservation", "True"}}))
        << pmj.dump();
  }
  EXPECT_TRUE(failed_writes.empty()) << *failed_writes.begin();
}

TEST_F(ColonyRunDescheduler, AThresholdOutOfRangeIsRefusedNamingFileAndField) {
  std::string bad = descheduler_yaml;
  bad.replace(bad.find("cpu: 75"), 7, "cpu: 175");
  const auto path = write_config("bad.yaml", bad);
  colony::testing::drained_process run({colony::testing::colony_binary(), "run", "--kubeconfig",
                                        kubeconfig_, "--log", log_, "--descheduler-config", path});
  ASSERT_TRUE(run.started()) << "set COLONY_BINARY";
  EXPECT_EQ(run.wait_exit(30s), 3);
  const auto out = run.finish();
  EXPECT_NE(out.find(path), std::string::npos) << out;
  EXPECT_NE(out.find("highThresholds"), std::string::npos) << out;
}

}  // namespace
}  // namespace colony::run::testing
