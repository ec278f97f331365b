// Reservations through the scheduler component and the entity fold (schema v7): a pending
// reservation is placed and held on its node, strangers do not get what it holds, its owner's
// proposal names it and the node actor's arbitration lets the owner use it, an allocate-once
// reservation is Succeeded once its owner is bound, and an expired one is Failed and released.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "actors/entities/entities.hpp"
#include "actors/scheduler/actor/scheduler_component.hpp"
#include "messages/codec.hpp"
#include "tests/actors/scheduler_actor/component_rig.hpp"

namespace colony {
namespace {

using messages::to_string_view;
using testing::event_factory;
using testing::gib;

using rig = testing::component_rig;

struct reservation_spec {
  std::string name;
  std::int64_t cpu = 0, mem = 0;
  std::string owner_label;  // owners: [{labelSelector: {app: <owner_label>}}]
  std::int64_t ttl_ms = 24 * 3600 * 1000;
  bool allocate_once = true;
  std::string node_name;
  std::vector<std::string> not_in;  // required node affinity metadata.name NotIn
};

messages::byte_buffer reservation(event_factory& f, std::int64_t t, const reservation_spec& r) {
  auto& b = f.b;
  auto& fbb = b.fbb();
  auto lv = b.key_values({{"app", r.owner_label}});
  wire::ReservationOwnerBuilder ob(fbb);
  ob.add_has_label_selector(true);
  ob.add_match_labels(lv);
  auto owner = ob.Finish();
  auto owners = fbb.CreateVector(std::vector<flatbuffers::Offset<wire::ReservationOwner>>{owner});
  auto name = fbb.CreateString(r.name);
  auto uid = fbb.CreateString("uid-" + r.name);
  auto req = b.resources(testing::cpu_mem(r.cpu, r.mem));
  auto node = fbb.CreateString(r.node_name);
  std::vector<flatbuffers::Offset<flatbuffers::String>> nin;
  for (const auto& n : r.not_in) nin.push_back(fbb.CreateString(n));
  auto not_in = fbb.CreateVector(nin);
  wire::ReservationUpsertedBuilder rb(fbb);
  rb.add_name(name);
  rb.add_uid(uid);
  rb.add_requests(req);
  rb.add_node_name(node);
  rb.add_owners(owners);
  rb.add_ttl_ms(r.ttl_ms);
  rb.add_allocate_once(r.allocate_once);
  rb.add_not_in_nodes(not_in);
  auto p = rb.Finish();
  return b.finish(
      messages::header{event_time{t}, wire::EntityKind::Reservation, r.name, -1, "test"}, p);
}

const wire::ReservationPhaseChanged* phase_of(const messages::byte_buffer& r) {
  return testing::env_of(r).payload_as_ReservationPhaseChanged();
}

TEST(SchedulerReservations, APendingReservationIsPlacedAndHeldForItsOwnersOnly) {
  rig r;
  EXPECT_NE(std::find(r.s->skipped_plugins().begin(), r.s->skipped_plugins().end(), "Reservation"),
            r.s->skipped_plugins().end());
  auto out = r.batch({r.f.node(0, "n1", 4000, 16 * gib), r.f.node(0, "n2", 4000, 16 * gib),
                      reservation(r.f, 10, {"r1", 3000, 4 * gib, "web"})});
  ASSERT_EQ(out.size(), 1u);
  const auto* a = phase_of(out[0]);
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(testing::env_of(out[0]).entity_kind(), wire::EntityKind::Reservation);
  EXPECT_EQ(to_string_view(a->phase()), "Available");
  EXPECT_EQ(to_string_view(a->reason()), "Scheduled");
  EXPECT_EQ(a->allocatable()->cpu_milli(), 3000);
  const std::string held(to_string_view(a->node()));
  const std::string other = held == "n1" ? "n2" : "n1";
  EXPECT_EQ(r.s->node(held)->requested.cpu_milli, 3000);
  EXPECT_EQ(r.s->node(held)->requested.pods, 1);  // the reserve pod's slot
  // The plugin joined the profile with the first reservation.
  EXPECT_EQ(std::find(r.s->skipped_plugins().begin(), r.s->skipped_plugins().end(), "Reservation"),
            r.s->skipped_plugins().end());

  // A stranger asking 2 cpu: only the other node has room.
  out = r.batch({r.f.pod(20, "ns/stranger", 2000, gib, "koord-scheduler", {{"app", "batch"}})});
  ASSERT_EQ(out.size(), 1u);
  const auto* p = testing::env_of(out[0]).payload_as_PodBindProposed();
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(to_string_view(p->node()), other);
  EXPECT_EQ(p->reservation(), nullptr);

  // The owner asking 3 cpu: the held node through r1 (the other has 2 left).
  out = r.batch({r.f.pod(30, "ns/web-0", 3000, 2 * gib, "koord-scheduler", {{"app", "web"}})});
  ASSERT_EQ(out.size(), 1u);
  p = testing::env_of(out[0]).payload_as_PodBindProposed();
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(to_string_view(p->node()), held);
  EXPECT_EQ(to_string_view(p->reservation()), "r1");
  bool scored = false;
  for (const auto* s : *p->scores())
    scored = scored || to_string_view(s->plugin()) == "Reservation";
  EXPECT_TRUE(scored);
  // The view: the owner's 3 cpu replace the reservation's hold.
  EXPECT_EQ(r.s->node(held)->requested.cpu_milli, 3000);

  // Bound (the node actor's answer to our proposal): the allocate-once reservation is used up.
  const auto prop = static_cast<std::int64_t>(r.kept.size());
  r.kept.push_back(r.stamp(std::move(out[0])));
  auto& fb = r.f.b;
  auto& fbb = fb.fbb();
  auto pn = fbb.CreateString("ns/web-0");
  auto nn = fbb.CreateString(held);
  auto rq = fb.resources(testing::cpu_mem(3000, 2 * gib, 1));
  auto sn = fbb.CreateString("koord-scheduler/a");
  auto rn = fbb.CreateString("r1");
  auto bound =
      fb.finish(messages::header{event_time{31}, wire::EntityKind::Node, held, prop, "node"},
                wire::CreatePodScheduled(fbb, pn, nn, prop, rq, 0, sn, rn));
  out = r.batch({std::move(bound)});
  ASSERT_EQ(out.size(), 1u);
  const auto* s = phase_of(out[0]);
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(to_string_view(s->phase()), "Succeeded");
  EXPECT_EQ(to_string_view(s->owner()), "ns/web-0");
  // The Succeeded record comes back through the log: nothing more is held.
  out = r.batch({std::move(out[0])});
  EXPECT_TRUE(out.empty());
  EXPECT_EQ(r.s->node(held)->requested.cpu_milli, 3000);
  EXPECT_TRUE(r.s->node(held)->reservations.empty());
}

TEST(SchedulerReservations, AnExpiredReservationIsFailedAndReleased) {
  rig r;
  auto out = r.batch({r.f.node(0, "n1", 4000, 16 * gib),
                      reservation(r.f, 1000, {"r1", 3000, 4 * gib, "web", 10'000})});
  ASSERT_EQ(out.size(), 1u);
  r.batch({std::move(out[0])});  // the Available record comes back
  EXPECT_EQ(r.s->node("n1")->requested.cpu_milli, 3000);
  // The controller wakes just after created + ttl.
  ASSERT_TRUE(r.s->next_wakeup_ms().has_value());
  EXPECT_EQ(*r.s->next_wakeup_ms(), 11'001);
  std::vector<messages::byte_buffer> woke;
  r.s->on_wakeup(11'001, woke);
  ASSERT_EQ(woke.size(), 1u);
  const auto* f = phase_of(woke[0]);
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(to_string_view(f->phase()), "Failed");
  EXPECT_EQ(to_string_view(f->reason()), "Expired");
  out = r.batch({std::move(woke[0])});
  EXPECT_TRUE(out.empty());
  EXPECT_EQ(r.s->node("n1")->requested.cpu_milli, 0);
  EXPECT_FALSE(r.s->next_wakeup_ms().has_value());
}

TEST(SchedulerReservations, ADeletedReservationIsFailedSoItsNodeReleasesIt) {
  rig r;
  auto out = r.batch(
      {r.f.node(0, "n1", 4000, 16 * gib), reservation(r.f, 10, {"r1", 3000, 4 * gib, "web"})});
  ASSERT_EQ(out.size(), 1u);
  r.batch({std::move(out[0])});
  EXPECT_EQ(r.s->node("n1")->requested.cpu_milli, 3000);
  // The reservation is gone (its last observation: deleted).
  messages::byte_buffer rec;
  {
    auto& b = r.f.b;
    auto& fbb = b.fbb();
    auto name = fbb.CreateString("r1");
    wire::ReservationUpsertedBuilder rb(fbb);
    rb.add_name(name);
    rb.add_deleted(true);
    auto p = rb.Finish();
    rec =
        b.finish(messages::header{event_time{20}, wire::EntityKind::Reservation, "r1", -1, "t"}, p);
  }
  out = r.batch({std::move(rec)});
  ASSERT_EQ(out.size(), 1u);
  const auto* f = phase_of(out[0]);
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(to_string_view(f->phase()), "Failed");
  EXPECT_EQ(to_string_view(f->reason()), "Deleted");
  EXPECT_EQ(to_string_view(f->node()), "n1");
  EXPECT_EQ(r.s->node("n1")->requested.cpu_milli, 0);
  EXPECT_TRUE(r.batch({std::move(out[0])}).empty());
  // Created again under the same name: a new reservation, placed and held again.
  out = r.batch({reservation(r.f, 30, {"r1", 2000, 2 * gib, "web"})});
  ASSERT_EQ(out.size(), 1u);
  const auto* again = phase_of(out[0]);
  ASSERT_NE(again, nullptr);
  EXPECT_EQ(to_string_view(again->phase()), "Available");
  r.batch({std::move(out[0])});
  EXPECT_EQ(r.s->node("n1")->requested.cpu_milli, 2000);
}

TEST(SchedulerReservations, AReservationPinnedToAMissingNodeStaysPendingUnschedulable) {
  rig r;
  reservation_spec spec{"r1", 1000, gib, "web"};
  spec.node_name = "nowhere";
  auto out = r.batch({r.f.node(0, "n1", 4000, 16 * gib), reservation(r.f, 5, spec)});
  ASSERT_EQ(out.size(), 1u);
  const auto* p = phase_of(out[0]);
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(to_string_view(p->phase()), "Pending");
  EXPECT_EQ(to_string_view(p->reason()), "Unschedulable");
  EXPECT_EQ(r.s->node("n1")->requested.cpu_milli, 0);
}

// A migration's reservation (schema v8 not_in_nodes) never lands on the nodes it names, however
// they score; with every node named it stays Pending/Unschedulable.
TEST(SchedulerReservations, AReservationKeepsOffTheNodesItsAffinityExcludes) {
  struct row {
    std::vector<std::string> not_in;
    const char* phase;
    const char* node;  // "" = any of the others
  };
  const std::vector<row> rows = {
      {{"n1"}, "Available", "n2"},
      {{"n2"}, "Available", "n1"},
      {{"n1", "n2"}, "Pending", ""},
      {{"n3"}, "Available", ""},  // a name no node has excludes nothing
  };
  int placed = 0;
  for (const auto& w : rows) {
    SCOPED_TRACE(w.not_in.front());
    rig r;
    reservation_spec spec{"r1", 1000, gib, "web"};
    spec.not_in = w.not_in;
    // Two equal nodes: without the exclusion the tie rule could pick either.
    auto out = r.batch({r.f.node(0, "n1", 4000, 16 * gib), r.f.node(0, "n2", 4000, 16 * gib),
                        reservation(r.f, 5, spec)});
    ASSERT_EQ(out.size(), 1u);
    const auto* p = phase_of(out[0]);
    ASSERT_NE(p, nullptr);
    EXPECT_EQ(to_string_view(p->phase()), w.phase);
    if (std::string_view(w.phase) == "Available") {
      ++placed;
      const std::string node(to_string_view(p->node()));
      if (*w.node != '\0') EXPECT_EQ(node, w.node);
      for (const auto& n : w.not_in) EXPECT_NE(node, n);
    } else {
      EXPECT_EQ(to_string_view(p->reason()), "Unschedulable");
      EXPECT_EQ(r.s->node("n1")->requested.cpu_milli + r.s->node("n2")->requested.cpu_milli, 0);
    }
  }
  EXPECT_EQ(placed, 3);
}

// The node's fold and the node actor's arbitration keep the same rule.
// A Reservation object's controller owner always names apiVersion and uid (Koordinator's CRD
// requires them, and koord-descheduler copies the pod's ownerReference), while PodSubmitted names
// a pod's controller as Kind/name: the owner matches its pods by kind, name and namespace.
messages::byte_buffer controller_owned(event_factory& f, std::int64_t t, const std::string& name,
                                       std::int64_t cpu, const std::string& owner) {
  auto& b = f.b;
  auto& fbb = b.fbb();
  const auto req = testing::cpu_mem(cpu, gib);
  auto n = fbb.CreateString(name);
  auto uid = fbb.CreateString("uid-" + name);
  auto rq = b.resources(req);
  auto lim = b.resources(req);
  auto sn = fbb.CreateString("koord-scheduler");
  auto ow = fbb.CreateString(owner);
  wire::PodSubmittedBuilder pb(fbb);
  pb.add_name(n);
  pb.add_uid(uid);
  pb.add_requests(rq);
  pb.add_limits(lim);
  pb.add_scheduler_name(sn);
  pb.add_kube_qos(wire::KubeQoSClass::Guaranteed);
  pb.add_owner(ow);
  auto p = pb.Finish();
  return b.finish(messages::header{event_time{t}, wire::EntityKind::Pod, name, -1, "test"}, p);
}

TEST(SchedulerReservations, AControllerOwnerMatchesItsPodsByKindNameAndNamespace) {
  rig r;
  auto& b = r.f.b;
  auto& fbb = b.fbb();
  auto cav = fbb.CreateString("apps/v1");
  auto ck = fbb.CreateString("ReplicaSet");
  auto cn = fbb.CreateString("rs-1");
  auto cu = fbb.CreateString("6b1f-rs-uid");
  auto cns = fbb.CreateString("ns");
  auto owner = wire::CreateReservationOwner(fbb, false, 0, 0, 0, true, cav, ck, cn, cu, cns, 1);
  auto owners = fbb.CreateVector(std::vector<flatbuffers::Offset<wire::ReservationOwner>>{owner});
  auto name = fbb.CreateString("r1");
  auto uid = fbb.CreateString("uid-r1");
  auto req = b.resources(testing::cpu_mem(3000, 4 * gib));
  wire::ReservationUpsertedBuilder rb(fbb);
  rb.add_name(name);
  rb.add_uid(uid);
  rb.add_requests(req);
  rb.add_owners(owners);
  rb.add_ttl_ms(24 * 3600 * 1000);
  auto rp = rb.Finish();
  auto rsv = b.finish(
      messages::header{event_time{10}, wire::EntityKind::Reservation, "r1", -1, "test"}, rp);
  auto out = r.batch(
      {r.f.node(0, "n1", 4000, 16 * gib), r.f.node(0, "n2", 4000, 16 * gib), std::move(rsv)});
  ASSERT_EQ(out.size(), 1u);
  const std::string held(to_string_view(phase_of(out[0])->node()));

  // The same ReplicaSet name in another namespace, and another ReplicaSet: not owners.
  out = r.batch({controller_owned(r.f, 20, "other/web-0", 1000, "ReplicaSet/rs-1"),
                 controller_owned(r.f, 21, "ns/api-0", 1000, "ReplicaSet/rs-2")});
  ASSERT_EQ(out.size(), 2u);
  for (const auto& o : out) {
    const auto* p = testing::env_of(o).payload_as_PodBindProposed();
    ASSERT_NE(p, nullptr);
    EXPECT_EQ(p->reservation(), nullptr) << to_string_view(p->pod());
  }
  out = r.batch({controller_owned(r.f, 30, "ns/web-0", 3000, "ReplicaSet/rs-1")});
  ASSERT_EQ(out.size(), 1u);
  const auto* p = testing::env_of(out[0]).payload_as_PodBindProposed();
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(to_string_view(p->node()), held);
  EXPECT_EQ(to_string_view(p->reservation()), "r1");
}

TEST(NodeReservations, TheNodeHoldsWhatAReservationKeepsAndLetsOnlyItsOwnerUseIt) {
  event_factory f;
  entities::node_state n;
  std::vector<messages::byte_buffer> keep;
  auto fold = [&](messages::byte_buffer b) {
    keep.push_back(std::move(b));
    auto d = messages::decode(keep.back(), "test");
    ASSERT_TRUE(d) << d.error().describe();
    entities::apply(n, *d->envelope);
  };
  fold(f.node(0, "n1", 4000, 16 * gib));
  auto& fbb = f.b.fbb();
  {
    auto name = fbb.CreateString("r1");
    auto ph = fbb.CreateString("Available");
    auto nd = fbb.CreateString("n1");
    auto why = fbb.CreateString("Scheduled");
    auto al = f.b.resources(testing::cpu_mem(3000, 4 * gib));
    fold(f.b.finish(messages::header{event_time{1}, wire::EntityKind::Reservation, "r1", -1, "s"},
                    wire::CreateReservationPhaseChanged(fbb, name, ph, nd, why, al)));
  }
  EXPECT_EQ(n.allocated.cpu_milli, 3000);
  EXPECT_EQ(n.allocated.pods, 1);
  const resource_list two = testing::cpu_mem(2000, gib, 1);
  EXPECT_FALSE(entities::arbitrate(n, {}, "ns/stranger", two, {}).accepted);
  const resource_list three = testing::cpu_mem(3000, 2 * gib, 1);
  EXPECT_FALSE(entities::arbitrate(n, {}, "ns/web-0", three, {}).accepted);
  EXPECT_TRUE(entities::arbitrate(n, {}, "ns/web-0", three, {}, "r1").accepted);
  EXPECT_FALSE(entities::arbitrate(n, {}, "ns/web-0", three, {}, "other").accepted);
  // Bound through r1: the owner's request replaces what r1 held of it.
  {
    auto pn = fbb.CreateString("ns/web-0");
    auto nn = fbb.CreateString("n1");
    auto rq = f.b.resources(three);
    auto rn = fbb.CreateString("r1");
    fold(f.b.finish(messages::header{event_time{2}, wire::EntityKind::Node, "n1", -1, "node"},
                    wire::CreatePodScheduled(fbb, pn, nn, -1, rq, 0, 0, rn)));
  }
  EXPECT_EQ(n.allocated.cpu_milli, 3000);
  EXPECT_EQ(n.allocated.memory_bytes, 4 * gib);  // 2 GiB of the owner, 2 GiB still held
  EXPECT_EQ(n.allocated.pods, 2);
  // Succeeded: the hold ends.
  {
    auto name = fbb.CreateString("r1");
    auto ph = fbb.CreateString("Succeeded");
    auto nd = fbb.CreateString("n1");
    fold(f.b.finish(messages::header{event_time{3}, wire::EntityKind::Reservation, "r1", -1, "s"},
                    wire::CreateReservationPhaseChanged(fbb, name, ph, nd)));
  }
  EXPECT_EQ(n.allocated.cpu_milli, 3000);
  EXPECT_EQ(n.allocated.memory_bytes, 2 * gib);
  EXPECT_EQ(n.allocated.pods, 1);
  EXPECT_TRUE(n.reservations.empty());
  // The state round-trips through its canonical bytes.
  auto back = entities::decode_node(entities::encode(n));
  ASSERT_TRUE(back);
  EXPECT_EQ(back->allocated, n.allocated);
  EXPECT_EQ(back->pods.size(), 1u);
}

}  // namespace
}  // namespace colony
