// The Reservation CRD in cluster mode (label kube): the real colony binary (`colony run`) against
// a real kube-apiserver with Koordinator's Reservation CRD.
//   - A user's Reservation whose owner is a ReplicaSet is placed on a node and written Available
//     there; a stranger pod goes around what it holds, the ReplicaSet's pod binds into it on
//     that node and the Reservation is written Succeeded with the pod as its current owner; a
//     Reservation with an owner Colony cannot match (matchExpressions) is one ObjectRefused
//     naming the field and nothing else; deleting the Reservation is its ReservationUpserted
//     with deleted set.
//   - A component's ReservationUpserted (as the descheduler's ReservationFirst migration writes
//     it; here put in the log before the run starts) becomes the Reservation object, which is
//     placed and written Available; the bridge never reads Colony's object back into a second
//     ReservationUpserted, also when a restart lists it again from scratch.
// docs/reservation.md "Cluster mode".
#include <chrono>
#include <filesystem>
#include <limits>
#include <string>
#include <thread>
#include <vector>

#include "stores/event_log.hpp"
#include "tests/bridges/kubernetes/reservation_records.hpp"
#include "tests/cli/drained_process.hpp"
#include "tests/run/colony_run_test.hpp"
#include "tests/support/log_options.hpp"

namespace colony::run::testing {
namespace {

using namespace std::chrono_literals;
using steady = std::chrono::steady_clock;
using messages::to_string_view;

constexpr const char* reservations = "/apis/scheduling.koordinator.sh/v1alpha1/reservations";
constexpr const char* rs_uid = "3c0d1f6e-7a2b-4c5d-9e8f-0a1b2c3d4e5f";

class ColonyRunReservation : public colony_run_test {
 protected:
  void SetUp() override {
    colony_run_test::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    using peer = kube::testing::kube_peer;
    auto crds = peer_->apply_crds({peer::crd_file("scheduling.koordinator.sh_reservations.yaml",
                                                  "reservations.scheduling.koordinator.sh.yaml")});
    ASSERT_TRUE(crds) << crds.error().describe();
  }

  json reservation_spec(const std::string& cpu, const json& owners) {
    return json{
        {"template",
         {{"spec",
           {{"schedulerName", "koord-scheduler"},
            {"containers",
             json::array({{{"name", "c"},
                           {"image", "registry.invalid/pause:3.9"},
                           {"resources", {{"requests", {{"cpu", cpu}, {"memory", "1Gi"}}}}}}})}}}}},
        {"owners", owners},
        {"ttl", "1h"}};
  }
  void make_reservation(const std::string& name, const json& spec) {
    post(reservations, json{{"apiVersion", "scheduling.koordinator.sh/v1alpha1"},
                            {"kind", "Reservation"},
                            {"metadata", {{"name", name}}},
                            {"spec", spec}});
  }
  json reservation(const std::string& name) {
    auto r = client_->get(std::string(reservations) + "/" + name);
    return r ? json::parse(r->body) : json();
  }
  std::string phase_of(const std::string& name) {
    const json r = reservation(name);
    return r.is_object() ? r.value("/status/phase"_json_pointer, std::string()) : std::string();
  }
  // A pod of `cpu`, owned by the web ReplicaSet when `owned`.
  void make_owned_pod(const std::string& name, const std::string& cpu, bool owned) {
    json md = {{"name", name}, {"namespace", ns}};
    if (owned)
      md["ownerReferences"] = json::array({{{"apiVersion", "apps/v1"},
                                            {"kind", "ReplicaSet"},
                                            {"name", "web-rs"},
                                            {"uid", rs_uid},
                                            {"controller", true}}});
    post("/api/v1/namespaces/" + ns + "/pods",
         json{{"apiVersion", "v1"},
              {"kind", "Pod"},
              {"metadata", md},
              {"spec",
               {{"schedulerName", "koord-scheduler"},
                {"containers",
                 json::array(
                     {{{"name", "c"},
                       {"image", "registry.invalid/pause:3.9"},
                       {"resources", {{"requests", {{"cpu", cpu}, {"memory", "1Gi"}}}}}}})}}}});
  }
  // The log as a reader beside the running writer sees it (read-only; empty while it cannot).
  std::vector<messages::byte_buffer> peek() {
    std::vector<messages::byte_buffer> v;
    auto log = stores::open_log(log_, colony::testing::read_only_log_options());
    if (!log) return v;
    (void)(*log)->read(0, no_offset, [&](log_offset, messages::bytes_view b) {
      v.emplace_back(b.begin(), b.end());
      return true;
    });
    return v;
  }
  template <class Pred>
  bool wait_until(Pred p, std::chrono::seconds limit) {
    const auto t0 = steady::now();
    while (steady::now() - t0 < limit) {
      if (p()) return true;
      std::this_thread::sleep_for(200ms);
    }
    return p();
  }
  static std::vector<const wire::Envelope*> of(const std::vector<messages::byte_buffer>& recs,
                                               wire::Payload type) {
    std::vector<const wire::Envelope*> out;
    for (const auto& r : recs)
      if (const auto* e = wire::GetEnvelope(r.data()); e->payload_type() == type) out.push_back(e);
    return out;
  }
};

TEST_F(ColonyRunReservation, AUsersReservationIsPlacedUsedByItsOwnerAndDeleted) {
  make_node("n1");
  make_node("n2");
  const json web_owner = json::array({{{"controller",
                                        {{"apiVersion", "apps/v1"},
                                         {"kind", "ReplicaSet"},
                                         {"name", "web-rs"},
                                         {"uid", rs_uid},
                                         {"controller", true},
                                         {"namespace", ns}}}}});
  make_reservation("r-web", reservation_spec("3", web_owner));
  // An owner Colony's schema cannot carry: refused, naming the field.
  make_reservation(
      "r-bad",
      reservation_spec(
          "1",
          json::array(
              {{{"labelSelector",
                 {{"matchExpressions",
                   json::array({{{"key", "app"}, {"operator", "In"}, {"values", {"web"}}}})}}}}})));
  colony::testing::drained_process run(
      {colony::testing::colony_binary(), "run", "--kubeconfig", kubeconfig_, "--log", log_});
  ASSERT_TRUE(run.started()) << "set COLONY_BINARY";
  ASSERT_TRUE(wait_until([&] { return phase_of("r-web") == "Available"; }, 60s))
      << reservation("r-web").dump() << "\n"
      << run.output();
  const json placed = reservation("r-web");
  const std::string held = placed["status"]["nodeName"];
  const std::string other = held == "n1" ? "n2" : "n1";
  EXPECT_EQ(placed["status"]["allocatable"], json::parse(R"({"cpu":"3","memory":"1Gi"})"));
  EXPECT_EQ(placed.value("/status/conditions/0/reason"_json_pointer, std::string()), "Scheduled");
  EXPECT_EQ(placed.value("/status/conditions/1/reason"_json_pointer, std::string()), "Available");

  // A stranger of 2 cpu: the held node has 1 left, so the other node.
  make_owned_pod("batch-0", "2", false);
  ASSERT_TRUE(wait_until([&] { return !placements()["batch-0"].empty(); }, 60s)) << run.output();
  EXPECT_EQ(placements()["batch-0"], other);
  // The ReplicaSet's pod of 3 cpu: only the reservation's node has room for it, through it.
  make_owned_pod("web-0", "3", true);
  ASSERT_TRUE(wait_until([&] { return !placements()["web-0"].empty(); }, 60s)) << run.output();
  EXPECT_EQ(placements()["web-0"], held);
  ASSERT_TRUE(wait_until([&] { return phase_of("r-web") == "Succeeded"; }, 60s))
      << reservation("r-web").dump();
  const json used = reservation("r-web");
  const std::string pod_uid = get("/api/v1/namespaces/" + ns + "/pods/web-0")["metadata"]["uid"];
  EXPECT_EQ(used["status"]["currentOwners"],
            json::array({{{"namespace", ns}, {"name", "web-0"}, {"uid", pod_uid}}}));
  EXPECT_EQ(used.value("/status/conditions/1/reason"_json_pointer, std::string()), "Succeeded");
  EXPECT_NE(phase_of("r-bad"), "Available") << "never placed";

  auto d = client_->del(std::string(reservations) + "/r-web");
  ASSERT_TRUE(d) << d.error().describe();
  const auto deleted_in_log = [&] {
    for (const auto* e : of(peek(), wire::Payload::ReservationUpserted))
      if (to_string_view(e->entity_key()) == "r-web" &&
          e->payload_as_ReservationUpserted()->deleted())
        return true;
    return false;
  };
  EXPECT_TRUE(wait_until(deleted_in_log, 30s));
  EXPECT_EQ(run.stop(30s), 0) << run.output();

  const auto recs = records();
  std::vector<bool> web_upserts;
  for (const auto* e : of(recs, wire::Payload::ReservationUpserted)) {
    const auto* u = e->payload_as_ReservationUpserted();
    EXPECT_NE(to_string_view(u->name()), "r-bad");
    if (to_string_view(u->name()) != "r-web") continue;
    EXPECT_EQ(e->causation(), -1);
    EXPECT_EQ(to_string_view(u->uid()), placed["metadata"]["uid"].get<std::string>());
    web_upserts.push_back(u->deleted());
  }
  // Created, then deleted: the status writes never came back as spec changes.
  EXPECT_EQ(web_upserts, (std::vector<bool>{false, true}));
  // Pending (Unschedulable) first when the reservation was listed before the nodes.
  std::vector<std::string> phases;
  for (const auto* e : of(recs, wire::Payload::ReservationPhaseChanged))
    if (to_string_view(e->entity_key()) == "r-web" &&
        to_string_view(e->payload_as_ReservationPhaseChanged()->phase()) != "Pending")
      phases.emplace_back(to_string_view(e->payload_as_ReservationPhaseChanged()->phase()));
  EXPECT_EQ(phases, (std::vector<std::string>{"Available", "Succeeded"}));
  const auto refused = of(recs, wire::Payload::ObjectRefused);
  ASSERT_EQ(refused.size(), 1u);
  EXPECT_EQ(refused[0]->entity_kind(), wire::EntityKind::Reservation);
  EXPECT_EQ(to_string_view(refused[0]->entity_key()), "r-bad");
  const auto* rf = refused[0]->payload_as_ObjectRefused();
  EXPECT_EQ(to_string_view(rf->api_kind()), "Reservation");
  EXPECT_EQ(to_string_view(rf->field()), "spec.owners[0].labelSelector.matchExpressions");
  bool bound_into = false;
  for (const auto* e : of(recs, wire::Payload::PodScheduled)) {
    const auto* ps = e->payload_as_PodScheduled();
    if (to_string_view(ps->pod()) == ns + "/web-0")
      bound_into = to_string_view(ps->reservation()) == "r-web";
  }
  EXPECT_TRUE(bound_into);
  EXPECT_TRUE(of(recs, wire::Payload::WriteFailed).empty());
}

TEST_F(ColonyRunReservation, AComponentsReservationIsCreatedPlacedAndNeverReadBack) {
  make_node("n1");
  make_node("n2");
  {
    // What the descheduler's migration controller appends: a decision caused by a record of
    // the log (here a tick), its source the component's.
    auto log = stores::open_log(log_, {});
    ASSERT_TRUE(log) << log.error().describe();
    const auto now = std::chrono::duration_cast<std::chrono::milliseconds>(
                         std::chrono::system_clock::now().time_since_epoch())
                         .count();
    messages::event_builder b;
    auto tick = b.finish(
        messages::header{event_time{now}, wire::EntityKind::Cluster, "colony-run", -1, "test"},
        wire::CreateClockTickedDirect(b.fbb(), "test"));
    kube::testing::upserted_fields f;
    f.name = "pmj-1";
    f.cpu_milli = 1000;
    f.memory_bytes = 1LL << 30;
    f.controller = {"", "ReplicaSet", "web-rs", "", ns};  // as the migration controller has it
    f.source = "koord-descheduler/migration-controller";
    f.ttl_ms = 3'600'000;
    f.causation = 0;
    f.time_ms = now;
    auto rsv = kube::testing::reservation_upserted(1, f);
    const std::vector<messages::bytes_view> recs{tick, rsv};
    auto a = (*log)->append(recs);
    ASSERT_TRUE(a) << a.error().describe();
  }
  {
    colony::testing::drained_process run(
        {colony::testing::colony_binary(), "run", "--kubeconfig", kubeconfig_, "--log", log_});
    ASSERT_TRUE(run.started()) << "set COLONY_BINARY";
    ASSERT_TRUE(wait_until([&] { return phase_of("pmj-1") == "Available"; }, 60s))
        << reservation("pmj-1").dump() << "\n"
        << run.output();
    EXPECT_EQ(run.stop(30s), 0) << run.output();
  }
  const json r = reservation("pmj-1");
  EXPECT_EQ(r["metadata"]["labels"],
            json::parse(R"({"app.kubernetes.io/created-by":"koord-descheduler",
                            "app.kubernetes.io/managed-by":"colony"})"));
  EXPECT_EQ(r["spec"]["template"]["spec"]["containers"][0]["resources"]["requests"],
            json::parse(R"({"cpu":"1","memory":"1Gi"})"));
  EXPECT_EQ(r["spec"]["owners"][0]["controller"]["name"], "web-rs");

  // Restarted without the source's checkpoint: every object is listed again from scratch, the
  // Reservation among them, and still not read back. (The records the first run's bridge
  // appended are then orphans its re-derived twins match; the Reservation has none.)
  std::filesystem::remove(log_ + ".source-checkpoint");
  const auto registered = [&](const std::string& node) {
    for (const auto* e : of(peek(), wire::Payload::NodeRegistered))
      if (to_string_view(e->entity_key()) == node) return true;
    return false;
  };
  {
    colony::testing::drained_process run(
        {colony::testing::colony_binary(), "run", "--kubeconfig", kubeconfig_, "--log", log_});
    ASSERT_TRUE(run.started());
    // A node created after the start reaching the log: the informers have listed and watch.
    make_node("n3");
    EXPECT_TRUE(wait_until([&] { return registered("n3"); }, 60s)) << run.output();
    std::this_thread::sleep_for(1s);
    EXPECT_EQ(run.stop(30s), 0) << run.output();
  }
  const auto recs = records();
  const auto upserts = of(recs, wire::Payload::ReservationUpserted);
  ASSERT_EQ(upserts.size(), 1u) << "Colony's own Reservation was read back";
  EXPECT_EQ(to_string_view(upserts[0]->source()), "koord-descheduler/migration-controller");
  std::vector<std::string> phases;
  for (const auto* e : of(recs, wire::Payload::ReservationPhaseChanged))
    phases.emplace_back(to_string_view(e->payload_as_ReservationPhaseChanged()->phase()));
  ASSERT_FALSE(phases.empty());
  EXPECT_EQ(phases.back(), "Available");
  EXPECT_TRUE(of(recs, wire::Payload::ObjectRefused).empty());
  EXPECT_TRUE(of(recs, wire::Payload::WriteFailed).empty());
}

}  // namespace
}  // namespace colony::run::testing
