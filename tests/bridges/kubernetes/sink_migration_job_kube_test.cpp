// The decision sink's PodMigrationJob writes against a real kube-apiserver with Koordinator's
// PodMigrationJob CRD (label kube): Colony's descheduler's job becomes an object as Koordinator's
// descheduler creates it, its phase changes become its status through the status subresource,
// a replay changes nothing, a final phase (a user's Aborted included) is never left, and a job
// that is gone, or has no CRD, is done with nothing written. docs/kubernetes-bridge.md "Sinks".
#include <gtest/gtest.h>

#include <stdio.h>

#include <chrono>
#include <cstdlib>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "bridges/kubernetes/sink.hpp"
#include "bridges/kubernetes/sink_migration_job.hpp"
#include "messages/names.hpp"
#include "tests/bridges/kubernetes/kube_api_test.hpp"
#include "tests/bridges/kubernetes/migration_job_records.hpp"

namespace colony::kube {
namespace {

using json = nlohmann::json;
using testing::kube_peer;
namespace rec = testing;

std::string shell(const std::string& cmd) {
  FILE* p = ::popen(cmd.c_str(), "r");
  if (p == nullptr) return {};
  std::string out;
  char buf[4096];
  while (std::size_t n = std::fread(buf, 1, sizeof buf, p)) out.append(buf, n);
  ::pclose(p);
  return out;
}

class KubeSinkMigrationJob : public testing::kube_api_test {
 protected:
  const std::string ns = "colony-pmj";
  const std::string jobs = std::string(migration_job_api);

  void SetUp() override {
    start_peer(ns);
    if (IsSkipped() || HasFatalFailure()) return;
    const char* v = std::getenv("COLONY_KUBE_SH");
    const std::string sh = v != nullptr && *v != '\0' ? v : COLONY_KUBE_SH_DEFAULT;
    std::istringstream env(
        shell("PYENV_VERSION=system bash '" + sh + "' env --dir '" + peer_->dir() + "'"));
    for (std::string l; std::getline(env, l);) {
      if (l.rfind("KUBECTL=", 0) == 0) kubectl_ = l.substr(8);
      if (l.rfind("KUBECONFIG=", 0) == 0) kubeconfig_ = l.substr(11);
    }
  }
  std::string kubectl(const std::string& args) {
    if (kubectl_.empty()) return "(no kubectl)";
    return shell("'" + kubectl_ + "' --kubeconfig '" + kubeconfig_ + "' " + args + " 2>&1");
  }
  json make_pod(const std::string& name) {
    return post(
        "/api/v1/namespaces/" + ns + "/pods",
        json{{"apiVersion", "v1"},
             {"kind", "Pod"},
             {"metadata", {{"name", name}, {"namespace", ns}}},
             {"spec",
              {{"containers",
                json::array({{{"name", "c"}, {"image", "registry.invalid/pause:3.9"}}})}}}});
  }
  decision_sink open_sink() {
    sink_options o;
    o.backoff_initial = std::chrono::milliseconds(50);
    o.backoff_cap = std::chrono::milliseconds(200);
    auto s = decision_sink::open(peer_->conn(), std::move(o));
    EXPECT_TRUE(s) << s.error().describe();
    return std::move(*s);
  }
  // The one outcome of a record.
  static write_outcome apply(decision_sink& s, const messages::byte_buffer& b) {
    auto r = s.apply(b);
    EXPECT_TRUE(r) << r.error().describe();
    EXPECT_EQ(r ? r->size() : 0u, 1u);
    return r && !r->empty() ? r->front() : write_outcome{};
  }

  std::string kubectl_, kubeconfig_;
};

TEST_F(KubeSinkMigrationJob, JobsAreCreatedAndTheirStatusFollowsOnceAcrossAReplay) {
  const json pod = make_pod("a");
  const std::string job = ns + ".a.1767225900000";
  const auto created = rec::migration_job_created(
      10, {.name = job,
           .pod = ns + "/a",
           .reason = "node is overutilized, node cpu usage(90.00%)>threshold(75.00%)",
           .causation = 3});
  {  // Without the CRD: nothing to create it in; done, not a failure.
    auto sink = open_sink();
    const auto o = apply(sink, created);
    EXPECT_TRUE(o.ok) << o.message;
    EXPECT_FALSE(o.wrote);
    EXPECT_EQ(o.http_status, 404);
    EXPECT_EQ(o.kind, write_kind::migration_job);
  }
  auto crds =
      peer_->apply_crds({kube_peer::crd_file("scheduling.koordinator.sh_podmigrationjobs.yaml",
                                             "podmigrationjobs.scheduling.koordinator.sh.yaml")});
  ASSERT_TRUE(crds) << crds.error().describe();

  auto sink = open_sink();
  auto o = apply(sink, created);
  EXPECT_TRUE(o.ok && o.wrote) << o.message;
  EXPECT_EQ(o.http_status, 201);
  json got = get(jobs + "/" + job);
  EXPECT_FALSE(got["metadata"].contains("namespace"));  // cluster-scoped
  EXPECT_EQ(got["metadata"]["annotations"],
            (json{{std::string(names::annotation_evict_reason),
                   "node is overutilized, node cpu "
                   "usage(90.00%)>threshold(75.00%)"},
                  {std::string(names::annotation_evict_trigger), "LowNodeLoad"},
                  {std::string(names::annotation_job_created_by), "koord-descheduler"}}));
  EXPECT_EQ(got["spec"]["podRef"],
            (json{{"namespace", ns}, {"name", "a"}, {"uid", pod["metadata"]["uid"]}}));
  EXPECT_EQ(got["spec"]["mode"], "EvictDirectly");
  EXPECT_EQ(got["spec"]["ttl"], "5m0s");
  const std::string rv0 = got["metadata"]["resourceVersion"];

  // The same decision carried out again (a restart): 409, nothing changed.
  o = apply(sink, created);
  EXPECT_TRUE(o.ok) << o.message;
  EXPECT_FALSE(o.wrote);
  EXPECT_EQ(o.http_status, 409);
  EXPECT_EQ(get(jobs + "/" + job)["metadata"]["resourceVersion"], rv0);

  const auto running =
      rec::migration_job_phase(11, {.name = job,
                                    .phase = "Running",
                                    .reason = "Evicting",
                                    .message = "Pod " + ns + "/a passed arbitration",
                                    .causation = 10,
                                    .time_ms = 1'767'225'901'000});
  const auto done = rec::migration_job_phase(13, {.name = job,
                                                  .phase = "Succeeded",
                                                  .reason = "EvictComplete",
                                                  .message = "Pod " + ns + "/a has been evicted",
                                                  .causation = 12,
                                                  .time_ms = 1'767'225'902'000});
  for (const auto* r : {&running, &done}) {
    o = apply(sink, *r);
    EXPECT_TRUE(o.ok && o.wrote) << o.message;
    EXPECT_EQ(o.kind, write_kind::migration_job_status);
  }
  got = get(jobs + "/" + job);
  EXPECT_EQ(got["status"]["phase"], "Succeeded");
  EXPECT_EQ(got["status"]["status"], "Complete");
  EXPECT_EQ(got["status"]["reason"], "EvictComplete");
  ASSERT_EQ(got["status"]["conditions"].size(), 1u);
  EXPECT_EQ(got["status"]["conditions"][0]["type"], "Eviction");
  EXPECT_EQ(got["status"]["conditions"][0]["status"], "True");
  EXPECT_EQ(got["spec"]["podRef"]["name"], "a");  // the status write left the spec
  const std::string rv1 = got["metadata"]["resourceVersion"];
  // The CRD's printer columns (Phase, Status: Koordinator's CRD and deploy/'s both have them)
  // may reach kubectl's table a moment after the CRD is established: read until they show.
  std::string table = kubectl("get podmigrationjobs");
  for (int i = 0; i < 50 && table.find("Succeeded") == std::string::npos; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    table = kubectl("get podmigrationjobs");
  }
  EXPECT_NE(table.find(job), std::string::npos) << table;
  EXPECT_NE(table.find("Succeeded"), std::string::npos) << table;
  EXPECT_NE(table.find("Complete"), std::string::npos) << table;

  // Replayed from the start (a sink position set back): nothing written, the final phase stays.
  auto again = open_sink();
  for (const auto* r : {&created, &running, &done}) {
    o = apply(again, *r);
    EXPECT_TRUE(o.ok) << o.message;
    EXPECT_FALSE(o.wrote) << o.message;
  }
  EXPECT_EQ(get(jobs + "/" + job)["metadata"]["resourceVersion"], rv1);
  EXPECT_EQ(again.counters().writes, 0u);

  // A user's job the user aborted: Colony's later phase is not written over it.
  post(jobs, json{{"apiVersion", "scheduling.koordinator.sh/v1alpha1"},
                  {"kind", "PodMigrationJob"},
                  {"metadata", {{"name", "users"}}},
                  {"spec", {{"podRef", {{"namespace", ns}, {"name", "a"}}}}}});
  auto ab = client_->patch(jobs + "/users/status", patch_type::merge,
                           R"({"status":{"phase":"Aborted"}})");
  ASSERT_TRUE(ab) << ab.error().describe();
  o = apply(sink,
            rec::migration_job_phase(
                20, {.name = "users", .phase = "Running", .reason = "Evicting", .causation = 19}));
  EXPECT_TRUE(o.ok) << o.message;
  EXPECT_FALSE(o.wrote);
  EXPECT_EQ(get(jobs + "/users")["status"]["phase"], "Aborted");

  // A job that is gone: done, nothing to write.
  o = apply(sink,
            rec::migration_job_phase(
                21, {.name = "gone", .phase = "Failed", .reason = "Timeout", .causation = 1}));
  EXPECT_TRUE(o.ok) << o.message;
  EXPECT_EQ(o.http_status, 404);

  // A user's job and abort observed from the cluster are not written back.
  const auto requests = sink.counters().requests;
  auto none = sink.apply(rec::migration_job_created(22, {.name = "users", .causation = -1}));
  ASSERT_TRUE(none);
  EXPECT_TRUE(none->empty());
  EXPECT_EQ(sink.counters().requests, requests);
  EXPECT_EQ(sink.counters().failed, 0u);
}

}  // namespace
}  // namespace colony::kube
