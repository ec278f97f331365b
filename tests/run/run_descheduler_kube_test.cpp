// `colony run --descheduler-config` against a real kube-apiserver (label kube), as a user runs it
// (the real colony binary): three bare pods that colony run binds to the only node, then a
// second node, and NodeMetrics that put the first node at 90 % cpu and the second at 5 %.
//   - koord-descheduler's LowNodeLoad finds the first node hot and the second cold, creates
//     PodMigrationJobs for pods of the hot node, and the migration controller evicts them through
//     the Eviction API (EvictDirectly): the evicted pods get a deletionTimestamp, the log holds
//     MigrationJobCreated, PodEvicted (Descheduled) and the jobs' phases, and no eviction write
//     failed;
//   - ReservationFirst (Koordinator's default job mode) with three pods of one ReplicaSet: the
//     job's Reservation is created in the API and placed on the cold node, the pod is evicted,
//     the test plays the ReplicaSet controller and creates the replacement, which binds into the
//     reservation on that node; the Reservation is written Succeeded with the replacement as its
//     owner and the job Succeeded/PodBoundReservation;
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

  void SetUp() override {
    colony_run_test::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    using peer = kube::testing::kube_peer;
    auto crds = peer_->apply_crds({peer::crd_file("slo.koordinator.sh_nodemetrics.yaml",
                                                  "nodemetrics.slo.koordinator.sh.yaml"),
                                   peer::crd_file("scheduling.koordinator.sh_reservations.yaml",
                                                  "reservations.scheduling.koordinator.sh.yaml")});
    ASSERT_TRUE(crds) << crds.error().describe();
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
  std::size_t phases = 0;
  for (const auto& r : records()) {
    const auto& env = *wire::GetEnvelope(r.data());
    switch (env.payload_type()) {
      case wire::Payload::MigrationJobCreated:
        jobs_for.insert(std::string(to_string_view(env.payload_as_MigrationJobCreated()->pod())));
        break;
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
