// decision_sink's Reservation writes against a real kube-apiserver + etcd with Koordinator's
// Reservation CRD (label kube): a ReservationPhaseChanged becomes the status koord-scheduler
// writes, a component's ReservationUpserted the object (accepted by Koordinator's schema), and a
// replay of the same records changes nothing. docs/reservation.md "Cluster mode".
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "bridges/kubernetes/api_client.hpp"
#include "bridges/kubernetes/sink.hpp"
#include "tests/bridges/kubernetes/kube_api_test.hpp"
#include "tests/bridges/kubernetes/kube_peer.hpp"
#include "tests/bridges/kubernetes/reservation_records.hpp"

namespace colony::kube {
namespace {

using json = nlohmann::json;
namespace rec = testing;

constexpr const char* reservations = "/apis/scheduling.koordinator.sh/v1alpha1/reservations";

class KubeSinkReservation : public testing::kube_api_test {
 protected:
  const std::string ns = "colony-sink";

  void SetUp() override {
    start_peer(ns);
    if (IsSkipped() || HasFatalFailure()) return;
  }
  void apply_crd() {
    auto r = peer_->apply_crds(
        {testing::kube_peer::crd_file("scheduling.koordinator.sh_reservations.yaml",
                                      "reservations.scheduling.koordinator.sh.yaml")});
    ASSERT_TRUE(r) << r.error().describe();
  }
  decision_sink sink() {
    auto s = decision_sink::open(peer_->conn(), {});
    EXPECT_TRUE(s) << s.error().describe();
    return std::move(*s);
  }
  // A user's Reservation: one owner by label, 1 cpu.
  void make_reservation(const std::string& name) {
    post(reservations,
         json{{"apiVersion", "scheduling.koordinator.sh/v1alpha1"},
              {"kind", "Reservation"},
              {"metadata", {{"name", name}}},
              {"spec",
               {{"template",
                 {{"spec",
                   {{"schedulerName", "koord-scheduler"},
                    {"containers",
                     json::array({{{"name", "c"},
                                   {"image", "registry.invalid/pause:3.9"},
                                   {"resources", {{"requests", {{"cpu", "1"}}}}}}})}}}}},
                {"owners", json::array({{{"labelSelector", {{"matchLabels", {{"app", "web"}}}}}}})},
                {"ttl", "1h"}}}});
  }
  json status_of(const std::string& name) {
    return get(std::string(reservations) + "/" + name).value("status", json::object());
  }
  std::string version_of(const std::string& name) {
    return get(std::string(reservations) + "/" + name)["metadata"]["resourceVersion"];
  }
  write_outcome one(decision_sink& s, const messages::byte_buffer& r) {
    auto out = s.apply(r);
    EXPECT_TRUE(out) << out.error().describe();
    EXPECT_EQ(out ? out->size() : 0u, 1u);
    return out && !out->empty() ? (*out)[0] : write_outcome{};
  }
};

TEST_F(KubeSinkReservation, StatusFollowsThePhasesAndAReplayWritesNothing) {
  apply_crd();
  if (HasFatalFailure()) return;
  make_reservation("r1");
  post("/api/v1/namespaces/" + ns + "/pods",
       json{{"apiVersion", "v1"},
            {"kind", "Pod"},
            {"metadata", {{"name", "web-1"}, {"namespace", ns}, {"labels", {{"app", "web"}}}}},
            {"spec",
             {{"containers",
               json::array({{{"name", "c"}, {"image", "registry.invalid/pause:3.9"}}})}}}});
  const std::string pod_uid = get("/api/v1/namespaces/" + ns + "/pods/web-1")["metadata"]["uid"];
  const std::vector<messages::byte_buffer> records = {
      rec::reservation_phase(10, {.name = "r1",
                                  .phase = "Pending",
                                  .reason = "Unschedulable",
                                  .time_ms = 1'767'225'600'000}),
      rec::reservation_phase(11, {.name = "r1",
                                  .phase = "Available",
                                  .reason = "Scheduled",
                                  .node = "n1",
                                  .cpu_milli = 1000,
                                  .time_ms = 1'767'225'601'000}),
      rec::reservation_phase(12, {.name = "r1",
                                  .phase = "Succeeded",
                                  .reason = "Succeeded",
                                  .node = "n1",
                                  .owner = ns + "/web-1",
                                  .cpu_milli = 1000,
                                  .time_ms = 1'767'225'602'000}),
  };
  auto s = sink();
  auto o = one(s, records[0]);
  EXPECT_TRUE(o.ok) << o.message;
  EXPECT_TRUE(o.wrote);
  EXPECT_EQ(o.kind, write_kind::reservation_status);
  json st = status_of("r1");
  EXPECT_EQ(st["phase"], "Pending");
  EXPECT_EQ(st["conditions"][0]["type"], "Scheduled");
  EXPECT_EQ(st["conditions"][0]["status"], "False");
  EXPECT_EQ(st["conditions"][0]["reason"], "Unschedulable");

  o = one(s, records[1]);
  EXPECT_TRUE(o.ok && o.wrote) << o.message;
  st = status_of("r1");
  EXPECT_EQ(st["phase"], "Available");
  EXPECT_EQ(st["nodeName"], "n1");
  EXPECT_EQ(st["allocatable"], json::parse(R"({"cpu":"1"})"));
  ASSERT_EQ(st["conditions"].size(), 2u);
  EXPECT_EQ(st["conditions"][0], json::parse(R"({"type":"Scheduled","status":"True",
      "reason":"Scheduled","lastProbeTime":"2026-01-01T00:00:01Z",
      "lastTransitionTime":"2026-01-01T00:00:01Z"})"));
  EXPECT_EQ(st["conditions"][1]["type"], "Ready");
  EXPECT_EQ(st["conditions"][1]["reason"], "Available");
  // The spec is the user's: untouched.
  EXPECT_EQ(get(std::string(reservations) + "/r1")["spec"]["ttl"], "1h");

  // An older Pending record replayed over Available: stale, nothing written.
  const auto v = version_of("r1");
  o = one(s, records[0]);
  EXPECT_TRUE(o.ok) << o.message;
  EXPECT_FALSE(o.wrote);
  EXPECT_EQ(version_of("r1"), v);

  o = one(s, records[2]);
  EXPECT_TRUE(o.ok && o.wrote) << o.message;
  st = status_of("r1");
  EXPECT_EQ(st["phase"], "Succeeded");
  EXPECT_EQ(st["currentOwners"],
            json::array({{{"namespace", ns}, {"name", "web-1"}, {"uid", pod_uid}}}));
  EXPECT_EQ(st["conditions"][1]["status"], "False");
  EXPECT_EQ(st["conditions"][1]["reason"], "Succeeded");

  // A fresh sink replaying everything (a restart from an older position): nothing changes.
  const auto done = version_of("r1");
  auto again = sink();
  for (const auto& r : records) {
    o = one(again, r);
    EXPECT_TRUE(o.ok) << o.message;
    EXPECT_FALSE(o.wrote) << o.message;
  }
  EXPECT_EQ(version_of("r1"), done);
  EXPECT_EQ(again.counters().writes, 0u);

  // A reservation that is gone (deleted before its Failed record is carried out): done.
  o = one(again,
          rec::reservation_phase(13, {.name = "gone", .phase = "Failed", .reason = "Deleted"}));
  EXPECT_TRUE(o.ok) << o.message;
  EXPECT_FALSE(o.wrote);
  EXPECT_EQ(o.http_status, 404);
}

TEST_F(KubeSinkReservation, AComponentsReservationIsCreatedOnceAndDeleted) {
  rec::upserted_fields f;
  f.name = "pmj-7";
  f.cpu_milli = 1500;
  f.memory_bytes = 1LL << 30;
  f.not_in_nodes = {"n1"};
  // As the migration controller writes it: the pod's controller by kind, name and namespace
  // (PodSubmitted carries no apiVersion or uid), its own source.
  f.controller = {"", "ReplicaSet", "rs-1", "", "colony-sink"};
  f.source = "koord-descheduler/migration-controller";
  const auto create = rec::reservation_upserted(20, f);
  auto s = sink();
  // Without the CRD there is nothing to create it in: a failure saying so.
  auto o = one(s, create);
  EXPECT_FALSE(o.ok);
  EXPECT_EQ(o.http_status, 404);
  EXPECT_NE(o.message.find("no Reservation API"), std::string::npos) << o.message;

  apply_crd();
  if (HasFatalFailure()) return;
  o = one(s, create);
  EXPECT_TRUE(o.ok && o.wrote) << o.message;
  EXPECT_EQ(o.kind, write_kind::reservation);
  const json r = get(std::string(reservations) + "/pmj-7");
  EXPECT_EQ(r["metadata"]["labels"],
            json::parse(R"({"app.kubernetes.io/created-by":"koord-descheduler",
                            "app.kubernetes.io/managed-by":"colony"})"));
  EXPECT_EQ(r["spec"]["template"]["spec"]["containers"][0]["resources"]["requests"],
            json::parse(R"({"cpu":"1500m","memory":"1Gi"})"));
  EXPECT_EQ(r["spec"]["template"]["spec"]["affinity"]["nodeAffinity"]
             ["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"][0]
             ["matchFields"][0]["values"],
            json::array({"n1"}));
  // Koordinator's schema requires apiVersion, kind, name and uid: the empty ones are accepted.
  EXPECT_EQ(r["spec"]["owners"][0]["controller"],
            json::parse(R"({"apiVersion":"","kind":"ReplicaSet","name":"rs-1","uid":"",
                            "controller":true,"namespace":"colony-sink"})"));
  EXPECT_EQ(r["spec"]["ttl"], "5m0s");
  EXPECT_EQ(r["spec"]["allocateOnce"], true);

  // Replayed: already there, not written again.
  const std::string v = r["metadata"]["resourceVersion"];
  o = one(s, create);
  EXPECT_TRUE(o.ok) << o.message;
  EXPECT_FALSE(o.wrote);
  EXPECT_EQ(o.http_status, 409);
  EXPECT_EQ(version_of("pmj-7"), v);

  f.deleted = true;
  const auto del = rec::reservation_upserted(30, f);
  o = one(s, del);
  EXPECT_TRUE(o.ok && o.wrote) << o.message;
  auto gone = client_->get(std::string(reservations) + "/pmj-7");
  ASSERT_FALSE(gone);
  EXPECT_EQ(gone.error().code, errc::not_found);
  o = one(s, del);
  EXPECT_TRUE(o.ok) << o.message;
  EXPECT_FALSE(o.wrote);
  EXPECT_EQ(o.http_status, 404);
  EXPECT_EQ(s.counters().failed, 1u);  // the create before the CRD
}

}  // namespace
}  // namespace colony::kube
