// Reservation: golden cases from Koordinator's Go tests (pkg/util/reservation/reservation_test.go
// TestMatchReservationOwners, pkg/scheduler/plugins/reservation/scoring_test.go TestScore,
// controller/controller_test.go TestExpireActiveReservation), the plugin through a scheduling
// cycle with NodeResourcesFit (reserved resources are not handed to others, an owner takes
// them, Restricted, affinity), and the node accounting rule.
#include "actors/scheduler/reservation.hpp"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "actors/scheduler/node_resources_fit.hpp"
#include "tests/actors/scheduler/test_helpers.hpp"

namespace {

using namespace colony;
using namespace colony::scheduler;
using namespace colony::scheduler::testing;

reservation_info available(std::string name, std::string node, resource_list alloc,
                           std::vector<reservation_owner> owners = {reservation_owner{}}) {
  reservation_info r;
  r.name = std::move(name);
  r.uid = "uid-" + r.name;
  r.node = std::move(node);
  r.phase = reservation_phase::available;
  r.allocatable = alloc;
  r.owners = std::move(owners);
  return r;
}

// A node with its reservations, requested kept by the accounting rule.
node_info node_with(std::string name, std::int64_t cpu, std::int64_t mem,
                    std::vector<reservation_info> rs) {
  node_info n = make_node(std::move(name), cpu, mem);
  n.reservations = std::move(rs);
  n.requested = reservations_requested(n);
  return n;
}

pod_info owned_pod(std::string key, resource_list req, std::string label_value = "bbb") {
  pod_info p = make_pod(std::move(key), req);
  auto id = std::make_shared<pod_identity>();
  id->uid = "uid-" + p.key;
  id->labels = {{"aaa", std::move(label_value)}};
  p.identity = id;
  return p;
}

admission::label_selector selector(std::string k, std::string v) {
  admission::label_selector s;
  s.match_labels.emplace(std::move(k), std::move(v));
  return s;
}

// ---- TestMatchReservationOwners ---------------------------------------------------------------

struct owners_case {
  const char* name;
  std::vector<reservation_owner> owners;
  bool want;
};

TEST(Reservation, TestMatchReservationOwners) {
  pod_identity pod;
  pod.uid = "pod-uid";
  pod.labels = {{"aaa", "bbb"}, {"ccc", "ddd"}};
  pod.owner_references = {{"apps/v1", "StatefulSet", "test-sts-0", "sts-uid", true}};
  const std::string key = "test/test-pod-0";

  reservation_owner obj;
  obj.object = reservation_object_ref{"", "test-pod-0", "test", ""};
  reservation_owner obj_miss;
  obj_miss.object = reservation_object_ref{"", "test-pod-1", "test", ""};
  reservation_owner ctrl;
  ctrl.controller = reservation_controller_ref{"", "", "test-sts-0", "", true, "test"};
  reservation_owner ctrl_other_ns;
  ctrl_other_ns.controller = reservation_controller_ref{"", "", "test-sts-0", "", true, "other"};
  reservation_owner ctrl_not_controller;
  ctrl_not_controller.controller =
      reservation_controller_ref{"", "", "test-sts-0", "", false, "test"};
  reservation_owner labels;
  labels.label_selector = selector("aaa", "bbb");
  reservation_owner labels_miss;
  labels_miss.label_selector = selector("aaa", "zzz");
  reservation_owner obj_and_labels_miss;  // one entry ANDs its parts
  obj_and_labels_miss.object = obj.object;
  obj_and_labels_miss.label_selector = selector("aaa", "zzz");

  const std::vector<owners_case> cases = {
      {"no owner to match", {}, false},
      {"match objRef", {obj}, true},
      {"match controllerRef", {ctrl}, true},
      {"match labels", {labels}, true},
      {"match one of owner specs", {obj_miss, labels}, true},
      {"objRef of another pod", {obj_miss}, false},
      {"controllerRef in another namespace", {ctrl_other_ns}, false},
      {"controllerRef asking controller=false", {ctrl_not_controller}, false},
      {"labels that differ", {labels_miss}, false},
      {"the parts of one owner are ANDed", {obj_and_labels_miss}, false},
      {"one empty owner matches every pod", {reservation_owner{}}, true},
  };
  for (const auto& c : cases)
    EXPECT_EQ(match_reservation_owners(key, pod, c.owners), c.want) << c.name;
}

// ---- TestScore ----------------------------------------------------------------------------------

struct score_case {
  const char* name;
  pod_info pod;
  std::vector<reservation_info> reservations;
  std::int64_t want;
  std::string nominated;
};

TEST(Reservation, TestScore) {
  const auto r4c8g = available("r-4c8g", "test-node-1", cpu_mem(4000, 8 * Gi));
  const auto r2c4g = available("r-2c4g", "test-node-1", cpu_mem(2000, 4 * Gi));
  pod_info reserve_pod = make_pod("default/reserve", cpu_mem(2000, 4 * Gi));
  reserve_pod.reserve_pod = true;
  const std::vector<score_case> cases = {
      {"score with reserve pod", reserve_pod, {r4c8g}, 0, ""},
      {"score with no reservation", make_pod("default/p", cpu_mem(2000, 4 * Gi)), {}, 0, ""},
      {"score with zero request pod", make_pod("default/p", {}), {r4c8g}, 0, "r-4c8g"},
      {"score with matched reservation",
       make_pod("default/p", cpu_mem(2000, 4 * Gi)),
       {r4c8g},
       50,
       "r-4c8g"},
      {"score with multiple matched reservations",
       make_pod("default/p", cpu_mem(2000, 4 * Gi)),
       {r2c4g, r4c8g},
       100,
       "r-2c4g"},
  };
  for (const auto& c : cases) {
    std::vector<node_info> nodes{node_with("test-node-1", 16000, 128 * Gi, c.reservations)};
    reservation_plugin pl;
    cycle_state st;
    (void)pl.pre_filter(st, c.pod, nodes, kNow);
    EXPECT_TRUE(pl.filter(st, c.pod, nodes[0], kNow).ok()) << c.name;
    EXPECT_EQ(pl.score(st, c.pod, nodes[0], kNow), c.want) << c.name;
    EXPECT_TRUE(pl.reserve(st, c.pod, nodes[0], kNow).ok()) << c.name;
    EXPECT_EQ(st.reservation, c.nominated) << c.name;
  }
}

TEST(Reservation, ScoreReservationIsMostAllocatedOverItsResources) {
  auto r = available("r", "n", cpu_mem(4000, 8 * Gi));
  r.allocated = cpu_mem(1000, 0);
  // cpu (1000 + 1000) / 4000 -> 50, memory 2Gi / 8Gi -> 25: (50 + 25) / 2 = 37.
  EXPECT_EQ(score_reservation(make_pod("d/p", cpu_mem(1000, 2 * Gi)), r), 37);
  // A request above what the reservation has scores 0 for that resource.
  EXPECT_EQ(score_reservation(make_pod("d/p", cpu_mem(4000, 2 * Gi)), r), 12);
}

TEST(Reservation, NominationPrefersTheLowestOrderThenTheScoreThenTheName) {
  auto a = available("a", "n", cpu_mem(4000, 8 * Gi));
  auto b = available("b", "n", cpu_mem(4000, 8 * Gi));
  auto c = available("c", "n", cpu_mem(2000, 4 * Gi));
  node_info n = node_with("n", 32000, 64 * Gi, {a, b, c});
  const pod_info p = make_pod("d/p", cpu_mem(1000, Gi));
  EXPECT_EQ(nominate_reservation(p, n, {0, 1, 2}), 2u);  // c is filled the most
  EXPECT_EQ(nominate_reservation(p, n, {0, 1}), 0u);     // a tie: the smaller name
  n.reservations[1].order = 7;
  n.reservations[0].order = 9;
  EXPECT_EQ(nominate_reservation(p, n, {0, 1, 2}), 1u);  // the lowest non-zero order
  EXPECT_EQ(nominate_reservation(p, n, {}), std::nullopt);
}

// ---- TestExpireActiveReservation
// ------------------------------------------------------------------

TEST(Reservation, TestExpireActiveReservation) {
  const std::int64_t now = kNow.value;
  auto r = available("r", "test-node-1", cpu_mem(1000, Gi));
  r.ttl_ms = 60'000;
  r.created_ms = now - 5 * 60'000;
  EXPECT_TRUE(reservation_needs_expiration(r, now, true)) << "expired available reservation";
  auto pending = r;
  pending.phase = reservation_phase::pending;
  EXPECT_TRUE(reservation_needs_expiration(pending, now, true)) << "pending with a node";
  auto fresh = r;
  fresh.created_ms = now;
  EXPECT_FALSE(reservation_needs_expiration(fresh, now, true)) << "created now";
  EXPECT_EQ(reservation_requeue_ms(fresh, now), 15'000);
  EXPECT_TRUE(reservation_needs_expiration(fresh, now, false)) << "node missing";
  // Beyond the golden cases: no node yet -> the controller leaves it; ttl 0 never expires;
  // expires wins when earlier; the requeue is at least 3 s.
  auto unscheduled = r;
  unscheduled.node.clear();
  unscheduled.phase = reservation_phase::pending;
  EXPECT_FALSE(reservation_needs_expiration(unscheduled, now, false));
  auto no_ttl = r;
  no_ttl.ttl_ms = 0;
  EXPECT_FALSE(reservation_needs_expiration(no_ttl, now, true));
  no_ttl.expires_ms = now - 1;
  EXPECT_TRUE(reservation_needs_expiration(no_ttl, now, true));
  fresh.ttl_ms = 1000;
  EXPECT_EQ(reservation_requeue_ms(fresh, now), 3'000);
  auto done = r;
  done.phase = reservation_phase::succeeded;
  EXPECT_FALSE(reservation_needs_expiration(done, now, false));
}

// ---- The plugin in a cycle with NodeResourcesFit ------------------------------------------------

struct cluster {
  framework fwk{{.percentage_of_nodes_to_score = 100}};
  cycle_state st;
  std::vector<node_info> nodes;
  cluster() {
    fwk.add(std::make_shared<node_resources_fit>());
    fwk.add(std::make_shared<reservation_plugin>(), 5000);
  }
  decision run(const pod_info& p) { return scheduling_cycle(fwk, st, p, nodes, kNow); }
};

TEST(ReservationPlugin, ReservedResourcesAreHeldForOwnersOnly) {
  reservation_owner owner;
  owner.label_selector = selector("aaa", "bbb");
  cluster c;
  // n1: 4 cpu, 3 of them reserved for pods labelled aaa=bbb; n2: 2 cpu free.
  c.nodes.push_back(
      node_with("n1", 4000, 16 * Gi, {available("r1", "n1", cpu_mem(3000, 4 * Gi), {owner})}));
  c.nodes.push_back(make_node("n2", 2000, 16 * Gi));
  ASSERT_EQ(c.nodes[0].requested.cpu_milli, 3000);
  ASSERT_EQ(c.nodes[0].requested.pods, 1);

  // A stranger asking 2 cpu: n1 has 1 free (3 reserved), so only n2.
  auto d = c.run(owned_pod("default/stranger", cpu_mem(2000, Gi), "other"));
  ASSERT_EQ(d.result, outcome::scheduled);
  EXPECT_EQ(d.node, "n2");
  EXPECT_EQ(d.reservation, "");
  // A stranger asking 3 cpu fits nowhere.
  d = c.run(owned_pod("default/big-stranger", cpu_mem(3000, Gi), "other"));
  EXPECT_EQ(d.result, outcome::unschedulable);

  // An owner asking 3 cpu: n1 through r1 (n2 lacks room), and the reservation is recorded.
  pod_info owner_pod = owned_pod("default/owner", cpu_mem(3000, 2 * Gi));
  d = c.run(owner_pod);
  ASSERT_EQ(d.result, outcome::scheduled);
  EXPECT_EQ(d.node, "n1");
  EXPECT_EQ(d.reservation, "r1");
  // The accounting rule: the pod adds 3 cpu, r1 (allocate-once) is used up and frees the rest.
  assume_pod(c.nodes[0], owner_pod, d, kNow);
  assume_reservation_owner(c.nodes[0], 0, owner_pod);
  EXPECT_EQ(c.nodes[0].reservations[0].phase, reservation_phase::succeeded);
  EXPECT_EQ(c.nodes[0].requested, reservations_requested(c.nodes[0]));
  EXPECT_EQ(c.nodes[0].requested.cpu_milli, 3000);
  EXPECT_EQ(c.nodes[0].requested.memory_bytes, 2 * Gi);
  EXPECT_EQ(c.nodes[0].requested.pods, 1);
  // A second owner finds no reservation left (allocate-once) and 1 cpu free on n1.
  d = c.run(owned_pod("default/owner-2", cpu_mem(1000, Gi)));
  ASSERT_EQ(d.result, outcome::scheduled);
  EXPECT_EQ(d.reservation, "");
}

TEST(ReservationPlugin, AnAlignedOwnerTakesTheRestFromTheNodeARestrictedOneCannot) {
  for (const auto policy :
       {reservation_allocate_policy::aligned, reservation_allocate_policy::restricted}) {
    cluster c;
    auto r = available("r1", "n1", cpu_mem(2000, 4 * Gi));
    r.policy = policy;
    c.nodes.push_back(node_with("n1", 8000, 16 * Gi, {r}));
    // 3 cpu: 2 from the reservation, 1 from the node's 6 free.
    auto d = c.run(owned_pod("default/owner", cpu_mem(3000, Gi)));
    if (policy == reservation_allocate_policy::aligned) {
      ASSERT_EQ(d.result, outcome::scheduled);
      EXPECT_EQ(d.reservation, "r1");
    } else {
      ASSERT_EQ(d.result, outcome::unschedulable);
      ASSERT_FALSE(d.failures.empty());
      EXPECT_EQ(d.failures[0].plugin, "Reservation");
      EXPECT_EQ(d.failures[0].reason, "Reservation(s) Insufficient cpu");
    }
  }
}

TEST(ReservationPlugin, TheNodeWithTheLowestOrderIsPreferred) {
  cluster c;
  auto r1 = available("r1", "n1", cpu_mem(2000, 4 * Gi));
  auto r2 = available("r2", "n2", cpu_mem(2000, 4 * Gi));
  auto r3 = available("r3", "n3", cpu_mem(1000, 2 * Gi));  // the best fit for the pod below
  r1.order = 20;
  r2.order = 10;
  c.nodes.push_back(node_with("n1", 8000, 16 * Gi, {r1}));
  c.nodes.push_back(node_with("n2", 8000, 16 * Gi, {r2}));
  c.nodes.push_back(node_with("n3", 8000, 16 * Gi, {r3}));
  auto d = c.run(owned_pod("default/owner", cpu_mem(1000, 2 * Gi)));
  ASSERT_EQ(d.result, outcome::scheduled);
  EXPECT_EQ(d.node, "n2");
  EXPECT_EQ(d.reservation, "r2");
  // With n2 unable to hold it, the next order wins over the better-filling r3.
  c.nodes[1].allocatable.memory_bytes = 4 * Gi;
  c.nodes[1].requested = reservations_requested(c.nodes[1]);
  d = c.run(owned_pod("default/big-owner", cpu_mem(1000, 8 * Gi)));
  ASSERT_EQ(d.result, outcome::scheduled);
  EXPECT_EQ(d.node, "n1");
  EXPECT_EQ(d.reservation, "r1");
}

TEST(ReservationPlugin, APodWithReservationAffinityNeedsItsReservation) {
  cluster c;
  auto r1 = available("r1", "n1", cpu_mem(2000, 4 * Gi));
  r1.labels = {{"team", "a"}};
  c.nodes.push_back(node_with("n1", 8000, 16 * Gi, {r1}));
  c.nodes.push_back(make_node("n2", 8000, 16 * Gi));

  pod_info p = owned_pod("default/p", cpu_mem(1000, Gi));
  auto id = std::make_shared<pod_identity>(*p.identity);
  ASSERT_TRUE(parse_reservation_affinity(R"({"reservationSelector":{"team":"a"}})", *id));
  p.identity = id;
  auto d = c.run(p);
  ASSERT_EQ(d.result, outcome::scheduled);
  EXPECT_EQ(d.node, "n1");
  EXPECT_EQ(d.reservation, "r1");

  ASSERT_TRUE(parse_reservation_affinity(R"({"name":"r9"})", *id));
  d = c.run(p);
  EXPECT_EQ(d.result, outcome::unschedulable);
  EXPECT_NE(d.message.find("no reservations to match"), std::string::npos) << d.message;

  // reservation-ignored wins over everything: a plain pod, which n2 holds.
  id->reservation_ignored = true;
  d = c.run(p);
  ASSERT_EQ(d.result, outcome::scheduled);
  EXPECT_EQ(d.reservation, "");
}

TEST(ReservationPlugin, AnInactiveOrUnschedulableReservationMatchesNoPod) {
  const pod_info p = owned_pod("default/p", cpu_mem(1000, Gi));
  auto r = available("r1", "n1", cpu_mem(2000, 4 * Gi));
  EXPECT_TRUE(reservation_matches_pod(r, p));
  auto pending = r;
  pending.phase = reservation_phase::pending;
  EXPECT_FALSE(reservation_matches_pod(pending, p));
  auto unsched = r;
  unsched.unschedulable = true;
  EXPECT_FALSE(reservation_matches_pod(unsched, p));
  auto used = r;
  used.owner_count = 1;
  EXPECT_FALSE(reservation_matches_pod(used, p));
  used.allocate_once = false;
  EXPECT_TRUE(reservation_matches_pod(used, p));
}

TEST(ReservationPlugin, BadAffinityAnnotationsNameTheField) {
  pod_identity id;
  auto e = parse_reservation_affinity("not json", id);
  ASSERT_FALSE(e);
  EXPECT_EQ(e.error().where, "annotation scheduling.koordinator.sh/reservation-affinity");
  e = parse_reservation_affinity(R"({"reservationSelector":{"team":1}})", id);
  ASSERT_FALSE(e);
  EXPECT_EQ(e.error().where,
            "annotation scheduling.koordinator.sh/reservation-affinity.reservationSelector.team");
  e = parse_reservation_affinity(R"({"tolerations":[]})", id);
  ASSERT_FALSE(e);
  EXPECT_NE(e.error().where.find("tolerations"), std::string::npos);
  EXPECT_FALSE(id.has_reservation_affinity);  // nothing applied from a refused annotation
  EXPECT_EQ(parse_allocate_policy("Restricted"), reservation_allocate_policy::restricted);
  EXPECT_EQ(parse_allocate_policy(""), reservation_allocate_policy::aligned);
  EXPECT_EQ(parse_allocate_policy("Strict"), std::nullopt);
}

TEST(ReservationPlugin, NonAllocateOnceReservationsShareTheirRestAmongOwners) {
  cluster c;
  auto r = available("r1", "n1", cpu_mem(4000, 8 * Gi));
  r.allocate_once = false;
  c.nodes.push_back(node_with("n1", 4000, 8 * Gi, {r}));  // the whole node reserved
  for (int i = 0; i < 4; ++i) {
    pod_info p = owned_pod("default/p" + std::to_string(i), cpu_mem(1000, 2 * Gi));
    auto d = c.run(p);
    ASSERT_EQ(d.result, outcome::scheduled) << i;
    EXPECT_EQ(d.reservation, "r1") << i;
    assume_pod(c.nodes[0], p, d, kNow);
    assume_reservation_owner(c.nodes[0], 0, p);
    EXPECT_EQ(c.nodes[0].requested, reservations_requested(c.nodes[0])) << i;
  }
  EXPECT_EQ(c.nodes[0].reservations[0].owner_count, 4);
  EXPECT_EQ(c.run(owned_pod("default/p4", cpu_mem(1000, Gi))).result, outcome::unschedulable);
}

TEST(ReservationPlugin, InternedOwnerSpecsAreMatchedOncePerPod) {
  reservation_owner web;
  web.label_selector = selector("aaa", "bbb");
  reservation_owner named;
  named.object = reservation_object_ref{"", "p", "default", ""};
  auto classes = std::make_shared<owner_classes>();
  const std::uint32_t a = classes->intern({web});
  EXPECT_EQ(classes->intern({web}), a);  // equal specs share a class
  const std::uint32_t b = classes->intern({named});
  const std::uint32_t c = classes->intern({web, named});
  EXPECT_NE(a, b);
  EXPECT_NE(c, a);
  EXPECT_NE(c, b);
  EXPECT_EQ(classes->size(), 3u);

  framework fwk({.percentage_of_nodes_to_score = 100});
  fwk.add(std::make_shared<node_resources_fit>());
  fwk.add(std::make_shared<reservation_plugin>(classes), 5000);
  std::vector<node_info> nodes;
  for (int i = 0; i < 3; ++i) {
    auto r =
        available("r" + std::to_string(i), "n" + std::to_string(i), cpu_mem(2000, 4 * Gi), {web});
    r.owner_class = a;
    nodes.push_back(node_with("n" + std::to_string(i), 2000, 4 * Gi, {r}));  // all reserved
  }
  cycle_state st;
  // A stranger matches no class: PreFilter skips the scan, and the reserved nodes stay full.
  auto d =
      scheduling_cycle(fwk, st, owned_pod("default/x", cpu_mem(500, Gi), "other"), nodes, kNow);
  EXPECT_EQ(d.result, outcome::unschedulable);
  // An owner finds its reservation through the class.
  d = scheduling_cycle(fwk, st, owned_pod("default/y", cpu_mem(500, Gi)), nodes, kNow);
  ASSERT_EQ(d.result, outcome::scheduled);
  EXPECT_FALSE(d.reservation.empty());
}

TEST(ReservationPlugin, ValidateOwnersNamesTheBadSelector) {
  EXPECT_FALSE(validate_owners({}, "spec.owners"));
  reservation_owner bad;
  bad.label_selector.emplace();
  bad.label_selector->match_expressions.push_back({"app", admission::selector_operator::in, {}});
  auto e = validate_owners({reservation_owner{}, bad}, "spec.owners");
  ASSERT_FALSE(e);
  EXPECT_NE(e.error().describe().find("spec.owners[1].labelSelector.matchExpressions[0]"),
            std::string::npos)
      << e.error().describe();
  EXPECT_TRUE(validate_owners({reservation_owner{}}, "spec.owners"));
}

}  // namespace
