#include "actors/entities/entities.hpp"

#include <algorithm>

#include <gtest/gtest.h>

#include "actors/entities/entity_actors.hpp"
#include "actors/entities/world.hpp"
#include "tests/support/events.hpp"

namespace colony::testing {
namespace {

const wire::Envelope& env_of(const messages::byte_buffer& b) {
  return *wire::GetEnvelope(b.data());
}

class Entities : public ::testing::Test {
 protected:
  messages::event_builder b_;
};

TEST_F(Entities, NodeRegisteredSetsCapacityAndReady) {
  entities::node_state n;
  auto e = node_registered(b_, "n1", 32000, 64 * gib, 5);
  entities::apply(n, env_of(e));
  EXPECT_EQ(n.name, "n1");
  EXPECT_TRUE(n.ready);
  EXPECT_EQ(n.capacity.cpu_milli, 32000);
  EXPECT_EQ(n.allocatable.memory_bytes, 64 * gib);
  EXPECT_EQ(n.registered_ms, 5);
}

TEST_F(Entities, NodeBindsAndReleasesPods) {
  entities::node_state n;
  entities::apply(n, env_of(node_registered(b_, "n1", 32000, 64 * gib)));
  entities::apply(n, env_of(pod_scheduled(b_, "ns/b", "n1", 1000, gib)));
  entities::apply(n, env_of(pod_scheduled(b_, "ns/a", "n1", 500, gib)));
  EXPECT_EQ(n.allocated.cpu_milli, 1500);
  EXPECT_EQ(n.allocated.pods, 2);
  ASSERT_EQ(n.pods.size(), 2u);
  EXPECT_EQ(n.pods[0].pod, "ns/a");  // kept sorted by key
  // Binding the same pod twice is idempotent.
  entities::apply(n, env_of(pod_scheduled(b_, "ns/a", "n1", 500, gib)));
  EXPECT_EQ(n.allocated.cpu_milli, 1500);
  entities::apply(n, env_of(pod_finished(b_, "ns/b", "n1")));
  EXPECT_EQ(n.allocated.cpu_milli, 500);
  EXPECT_EQ(n.pods.size(), 1u);
  // A pod scheduled on another node does not touch this one.
  entities::apply(n, env_of(pod_scheduled(b_, "ns/c", "n2", 700, gib)));
  EXPECT_EQ(n.allocated.cpu_milli, 500);
}

TEST_F(Entities, ArbitrationNeverOvercommitsANode) {
  entities::node_state n;
  entities::apply(n, env_of(node_registered(b_, "n1", 4000, 8 * gib)));
  resource_list req;
  req.cpu_milli = 3000;
  req.memory_bytes = gib;
  req.pods = 1;
  EXPECT_TRUE(entities::arbitrate(n, "ns/a", req, {}).accepted);
  entities::apply(n, env_of(pod_scheduled(b_, "ns/a", "n1", 3000, gib)));
  // A second scheduler with a stale view proposes another 3000m: rejected, with the reason.
  auto d = entities::arbitrate(n, "ns/b", req, {});
  EXPECT_FALSE(d.accepted);
  EXPECT_EQ(d.reason, "Insufficient cpu: 1000 free, 3000 asked");
  EXPECT_FALSE(entities::arbitrate(n, "ns/a", resource_list{}, {}).accepted);  // bound twice
  req.cpu_milli = 1000;
  EXPECT_TRUE(entities::arbitrate(n, "ns/b", req, {}).accepted);
  // Batch resources count against what the slo-controller granted (none yet).
  resource_list batch;
  batch.batch_cpu_milli = 1;
  EXPECT_FALSE(entities::arbitrate(n, "ns/c", batch, {}).accepted);
  n.removed = true;
  EXPECT_EQ(entities::arbitrate(n, "ns/b", req, {}).reason, "node removed");
}

// A Device object reaches its node (routes) and gives it its GPUs (an unhealthy one offers
// nothing): the node then arbitrates GPU shares as with registered GPUs; an RDMA entry of a
// proposal is not a GPU (schema v11); a Device that does not parse changes nothing.
TEST_F(Entities, ADeviceObjectGivesItsNodeItsGpus) {
  auto device = [&](const std::string& spec, bool deleted = false) {
    auto& f = b_.fbb();
    auto av = f.CreateString("scheduling.koordinator.sh/v1alpha1");
    auto kind = f.CreateString("Device");
    auto ns = f.CreateString("");
    auto name = f.CreateString("n1");
    auto sp = f.CreateString(spec);
    auto p = wire::CreateObjectObserved(f, av, kind, ns, name, 0, 0, 0, sp, 0, deleted);
    return b_.finish(
        messages::header{event_time{1}, wire::EntityKind::Object, "Device/n1", -1, "kube"}, p);
  };
  const std::string spec = R"({"devices":[
      {"type":"gpu","minor":1,"health":true,"resources":{"koordinator.sh/gpu-core":"100",
       "koordinator.sh/gpu-memory":"80Gi","koordinator.sh/gpu-memory-ratio":"100"}},
      {"type":"gpu","minor":0,"health":false,"resources":{"koordinator.sh/gpu-core":"100",
       "koordinator.sh/gpu-memory":"80Gi"}},
      {"type":"rdma","minor":0,"health":true,"resources":{"koordinator.sh/rdma":"100"}}]})";
  const auto d = device(spec);
  const auto rl = entities::routes(env_of(d));
  ASSERT_EQ(rl.size, 2);
  EXPECT_EQ(rl.refs[1], (entities::entity_ref{wire::EntityKind::Node, "n1"}));

  entities::node_state n;
  entities::apply(n, env_of(node_registered(b_, "n1", 32000, 64 * gib)));
  entities::apply(n, env_of(d));
  ASSERT_EQ(n.gpus.size(), 2u);
  EXPECT_EQ(n.gpus[0].minor, 0);
  EXPECT_EQ(n.gpus[0].core, 0);  // unhealthy
  EXPECT_EQ(n.gpus[1].core, 100);
  EXPECT_EQ(n.gpus[1].memory_bytes, 80 * gib);
  resource_list whole;
  whole.gpu_core = 100;
  whole.gpu_memory_bytes = 80 * gib;
  const std::vector<std::pair<std::int32_t, resource_list>> on1 = {{1, whole}}, on0 = {{0, whole}},
                                                            on7 = {{7, whole}};
  EXPECT_TRUE(entities::arbitrate(n, "ns/a", resource_list{}, on1).accepted);
  EXPECT_FALSE(entities::arbitrate(n, "ns/a", resource_list{}, on0).accepted);
  EXPECT_FALSE(entities::arbitrate(n, "ns/a", resource_list{}, on7).accepted);
  // A Device that does not parse leaves the GPUs as they were; a deleted one takes them away.
  entities::apply(n, env_of(device(R"({"devices":[{"type":"gpu","minor":"x"}]})")));
  EXPECT_EQ(n.gpus.size(), 2u);
  entities::apply(n, env_of(device("", true)));
  EXPECT_TRUE(n.gpus.empty());
}

TEST_F(Entities, PodLifecycle) {
  entities::pod_state p;
  entities::apply(p, env_of(pod_submitted(b_, "ns/a", 250, mib, 1000)));
  EXPECT_EQ(p.phase, entities::pod_phase::pending);
  EXPECT_EQ(p.submitted_ms, 1000);
  entities::apply(p, env_of(pod_scheduled(b_, "ns/a", "n1", 250, mib, 3000)));
  EXPECT_EQ(p.phase, entities::pod_phase::scheduled);
  EXPECT_EQ(p.node, "n1");
  EXPECT_EQ(p.scheduled_ms, 3000);
  entities::apply(p, env_of(pod_finished(b_, "ns/a", "n1", 9000)));
  EXPECT_EQ(p.phase, entities::pod_phase::succeeded);
  EXPECT_EQ(p.finished_ms, 9000);
  // Terminal phases stay terminal.
  entities::apply(p, env_of(pod_finished(b_, "ns/a", "n1", 9999)));
  EXPECT_EQ(p.finished_ms, 9000);
}

TEST_F(Entities, PodUnschedulableCountsAttemptsAndKeepsReason) {
  entities::pod_state p;
  entities::apply(p, env_of(pod_submitted(b_, "ns/a", 250, mib)));
  auto& f = b_.fbb();
  std::vector<flatbuffers::Offset<wire::PluginReason>> rs{
      wire::CreatePluginReasonDirect(f, "NodeResourcesFit", "Insufficient cpu", 12)};
  auto off = wire::CreatePodUnschedulableDirect(f, "ns/a", 1, &rs, "s1");
  auto e = b_.finish({event_time{1}, wire::EntityKind::Pod, "ns/a", -1, "t"}, off);
  entities::apply(p, env_of(e));
  EXPECT_EQ(p.attempts, 1);
  EXPECT_EQ(p.last_reason, "NodeResourcesFit: Insufficient cpu");
  EXPECT_EQ(p.phase, entities::pod_phase::pending);
}

TEST_F(Entities, QuotaFoldsUpsertRuntimeAndDelete) {
  entities::quota_state q;
  auto& f = b_.fbb();
  resource_list mn;
  mn.cpu_milli = 1000;
  auto mino = b_.resources(mn);
  auto name = f.CreateString("team-a");
  auto parent = f.CreateString("root");
  wire::QuotaUpsertedBuilder qb(f);
  qb.add_name(name);
  qb.add_parent(parent);
  qb.add_min(mino);
  auto e =
      b_.finish({event_time{0}, wire::EntityKind::ElasticQuota, "team-a", -1, "t"}, qb.Finish());
  entities::apply(q, env_of(e));
  EXPECT_EQ(q.parent, "root");
  EXPECT_EQ(q.min.cpu_milli, 1000);
  EXPECT_TRUE(q.allow_lent_resource);
  resource_list rt;
  rt.cpu_milli = 700;
  auto rto = b_.resources(rt);
  auto n2 = f.CreateString("team-a");
  wire::QuotaRuntimeUpdatedBuilder rb(f);
  rb.add_name(n2);
  rb.add_runtime(rto);
  auto e2 =
      b_.finish({event_time{1}, wire::EntityKind::ElasticQuota, "team-a", -1, "t"}, rb.Finish());
  entities::apply(q, env_of(e2));
  EXPECT_EQ(q.runtime.cpu_milli, 700);
  auto e3 = b_.finish({event_time{2}, wire::EntityKind::ElasticQuota, "team-a", -1, "t"},
                      wire::CreateQuotaDeletedDirect(f, "team-a"));
  entities::apply(q, env_of(e3));
  EXPECT_TRUE(q.deleted);
}

TEST_F(Entities, MigrationJobPhases) {
  entities::job_state j;
  auto& f = b_.fbb();
  auto e = b_.finish({event_time{10}, wire::EntityKind::PodMigrationJob, "pmj-1", -1, "t"},
                     wire::CreateMigrationJobCreatedDirect(f, "pmj-1", "ns/a", "ReservationFirst",
                                                           "LowNodeLoad", 0, "descheduler"));
  entities::apply(j, env_of(e));
  EXPECT_EQ(j.phase, "Pending");
  EXPECT_EQ(j.mode, "ReservationFirst");
  auto e2 = b_.finish({event_time{20}, wire::EntityKind::PodMigrationJob, "pmj-1", -1, "t"},
                      wire::CreateMigrationJobPhaseChangedDirect(f, "pmj-1", "Succeeded", "done"));
  entities::apply(j, env_of(e2));
  EXPECT_EQ(j.phase, "Succeeded");
  EXPECT_EQ(j.updated_ms, 20);
}

TEST_F(Entities, RoutesNameOwnAndReferencedEntities) {
  auto e = pod_scheduled(b_, "ns/a", "n1", 1, 1);
  auto rl = entities::routes(env_of(e));
  ASSERT_EQ(rl.size, 2);
  EXPECT_EQ(rl.refs[0], (entities::entity_ref{wire::EntityKind::Node, "n1"}));
  EXPECT_EQ(rl.refs[1], (entities::entity_ref{wire::EntityKind::Pod, "ns/a"}));
  auto s = pod_submitted(b_, "ns/a", 1, 1);
  EXPECT_EQ(entities::routes(env_of(s)).size, 1);
  auto f = pod_finished(b_, "ns/a", "n1");
  EXPECT_EQ(entities::routes(env_of(f)).size, 2);
}

TEST_F(Entities, EncodeDecodeRoundTrips) {
  entities::node_state n;
  entities::apply(n, env_of(node_registered(b_, "n1", 32000, 64 * gib)));
  entities::apply(n, env_of(pod_scheduled(b_, "ns/a", "n1", 500, gib)));
  auto nb = entities::encode(n);
  auto n2 = entities::decode_node(nb);
  ASSERT_TRUE(n2);
  EXPECT_EQ(entities::encode(*n2), nb);
  EXPECT_EQ(n2->pods.size(), 1u);
  entities::pod_state p;
  entities::apply(p, env_of(pod_submitted(b_, "ns/a", 250, mib, 1000)));
  auto pb = entities::encode(p);
  auto p2 = entities::decode_pod(pb);
  ASSERT_TRUE(p2);
  EXPECT_EQ(entities::encode(*p2), pb);
  EXPECT_FALSE(entities::decode_pod("garbage"));
}

// A small mixed stream used by the world/actor tests.
std::vector<messages::byte_buffer> stream(messages::event_builder& b, int pods) {
  std::vector<messages::byte_buffer> v;
  for (int n = 0; n < 4; ++n)
    v.push_back(node_registered(b, "n" + std::to_string(n), 32000, 64 * gib));
  for (int i = 0; i < pods; ++i) {
    auto pod = "ns/p" + std::to_string(i);
    auto node = "n" + std::to_string(i % 4);
    v.push_back(pod_submitted(b, pod, 100 + i, mib, i));
    v.push_back(pod_scheduled(b, pod, node, 100 + i, mib, i + 1));
    if (i % 3 == 0) v.push_back(pod_finished(b, pod, node, i + 2));
  }
  return v;
}

TEST_F(Entities, WorldDigestIsDeterministicAndSensitive) {
  entities::world a, b;
  for (const auto& e : stream(b_, 50)) {
    a.apply(env_of(e));
    b.apply(env_of(e));
  }
  EXPECT_EQ(a.digest(), b.digest());
  EXPECT_EQ(a.entity_count(), 54u);
  b.apply(env_of(pod_finished(b_, "ns/p1", "n1", 999)));
  EXPECT_NE(a.digest(), b.digest());
}

// ObjectRefused and WriteFailed (schema v3) are keyed to an entity but change no state: the
// world's digest and entity count stay as they were, also for a pod the world never saw.
TEST_F(Entities, RefusalsAndFailedWritesChangeNoEntity) {
  entities::world a, b;
  for (const auto& e : stream(b_, 10)) {
    a.apply(env_of(e));
    b.apply(env_of(e));
  }
  auto& f = b_.fbb();
  const auto refused_payload = wire::CreateObjectRefusedDirect(
      f, "Pod", "ns", "never-seen", "", "7", "spec.containers[0].resources.requests.cpu",
      R"("1e30" is out of range)", "invalid_input");
  const auto refused =
      b_.finish({event_time{50}, wire::EntityKind::Pod, "ns/never-seen", -1, "t"}, refused_payload);
  const auto refused_seen_payload = wire::CreateObjectRefusedDirect(
      f, "Node", "", "n1", "", "8", "status.capacity.cpu", "bad", "invalid_input");
  const auto refused_seen =
      b_.finish({event_time{51}, wire::EntityKind::Node, "n1", -1, "t"}, refused_seen_payload);
  const auto failed_payload = wire::CreateWriteFailedDirect(f, wire::WriteKind::binding, "ns/p1",
                                                            409, 1, "bound elsewhere");
  const auto failed =
      b_.finish({event_time{52}, wire::EntityKind::Pod, "ns/p1", 3, "kube-sink"}, failed_payload);
  for (const auto* e : {&refused, &refused_seen, &failed}) {
    EXPECT_EQ(entities::routes(env_of(*e)).size, 0);
    b.apply(env_of(*e));
  }
  EXPECT_EQ(b.entity_count(), a.entity_count());
  EXPECT_EQ(b.digest(), a.digest());
}

// A recorded object (ObjectObserved, schema v4) as a bridge writes it.
messages::byte_buffer object_observed(messages::event_builder& b, const std::string& key,
                                      const std::string& name, const std::string& rv,
                                      const std::string& status, bool deleted, std::int64_t t) {
  const std::vector<std::pair<std::string, std::string>> labels = {{"app", "train"}};
  auto& f = b.fbb();
  const auto av = f.CreateString("scheduling.koordinator.sh/v1alpha1");
  const auto kind = f.CreateString("Reservation");
  const auto ns = f.CreateString("");
  const auto nm = f.CreateString(name);
  const auto uid = f.CreateString("uid-" + name);
  const auto v = f.CreateString(rv);
  const auto lab = b.key_values(labels);
  const auto spec = f.CreateString(deleted ? "" : R"({"ttl":"5m"})");
  const auto st = f.CreateString(deleted ? "" : status);
  const auto p = wire::CreateObjectObserved(f, av, kind, ns, nm, uid, v, lab, spec, st, deleted);
  return b.finish({event_time{t}, wire::EntityKind::Object, key, -1, "bridge/k8s"}, p);
}

// Recorded objects are entities of their own: the fold keeps the latest observation, the digest
// changes with each, a snapshot round-trips them, and the actors reach the same state.
TEST_F(Entities, RecordedObjectsFoldIntoTheirOwnEntity) {
  entities::world a;
  for (const auto& e : stream(b_, 10)) a.apply(env_of(e));
  const auto before = a.digest();
  const auto count = a.entity_count();
  const auto first =
      object_observed(b_, "Reservation/r1", "r1", "11", R"({"phase":"Pending"})", false, 100);
  a.apply(env_of(first));
  EXPECT_EQ(a.entity_count(), count + 1);
  const auto with_one = a.digest();
  EXPECT_NE(with_one, before);
  const auto& o = a.objects.at("Reservation/r1");
  EXPECT_EQ(o.kind, "Reservation");
  EXPECT_EQ(o.api_version, "scheduling.koordinator.sh/v1alpha1");
  EXPECT_EQ(o.name, "r1");
  EXPECT_EQ(o.uid, "uid-r1");
  EXPECT_EQ(o.resource_version, "11");
  EXPECT_EQ(o.status_json, R"({"phase":"Pending"})");
  EXPECT_EQ(o.updated_ms, 100);
  EXPECT_FALSE(o.deleted);
  // The status moves on: another digest. Nodes and pods are untouched.
  auto moved = a;
  moved.apply(env_of(
      object_observed(b_, "Reservation/r1", "r1", "12", R"({"phase":"Available"})", false, 101)));
  EXPECT_EQ(moved.objects.at("Reservation/r1").status_json, R"({"phase":"Available"})");
  EXPECT_NE(moved.digest(), with_one);
  EXPECT_EQ(moved.nodes.size(), a.nodes.size());
  EXPECT_EQ(moved.pods.size(), a.pods.size());
  // Deleted: the entity stays (as a quota's does), marked, its spec and status gone.
  moved.apply(env_of(object_observed(b_, "Reservation/r1", "r1", "13", "", true, 102)));
  const auto& gone = moved.objects.at("Reservation/r1");
  EXPECT_TRUE(gone.deleted);
  EXPECT_EQ(gone.spec_json, "");
  EXPECT_EQ(gone.resource_version, "13");
  moved.apply(env_of(object_observed(b_, "Reservation/r2", "r2", "14", "", false, 103)));

  // Snapshot round trip: every entity, objects included, decodes to the same bytes and digest.
  entities::world r;
  std::size_t objects_seen = 0;
  moved.for_each_encoded([&](wire::EntityKind k, std::string_view key, const std::string& s) {
    if (k == wire::EntityKind::Object) {
      ++objects_seen;
      auto d = entities::decode_object(s);
      ASSERT_TRUE(d) << d.error().describe();
      EXPECT_EQ(entities::encode(*d), s) << key;
    }
    ASSERT_TRUE(r.load(k, key, s));
  });
  EXPECT_EQ(objects_seen, 2u);
  EXPECT_EQ(r.digest(), moved.digest());
  EXPECT_EQ(r.objects.at("Reservation/r1").deleted, true);
  EXPECT_EQ(r.objects.at("Reservation/r2").labels,
            (std::vector<std::pair<std::string, std::string>>{{"app", "train"}}));
  EXPECT_FALSE(entities::decode_object("garbage"));

  // The actor host folds them the same way, live or restored from that snapshot.
  std::vector<messages::byte_buffer> events = stream(b_, 10);
  events.push_back(first);
  entities::world w;
  for (const auto& e : events) w.apply(env_of(e));
  entities::actor_host host(2);
  auto batch = std::make_shared<entities::record_batch>();
  for (const auto& e : events) batch->add(e);
  host.deliver(batch);
  auto states = host.collect();
  ASSERT_TRUE(states) << states.error().describe();
  EXPECT_EQ(entities::digest_of(*states), w.digest());
  EXPECT_EQ(states->back().kind, wire::EntityKind::Object);  // last in (kind, key) order
  entities::actor_host restored(2);
  moved.for_each_encoded([&](wire::EntityKind k, std::string_view key, const std::string& s) {
    restored.load(k, std::string(key), s);
  });
  auto rs = restored.collect();
  ASSERT_TRUE(rs) << rs.error().describe();
  EXPECT_EQ(entities::digest_of(*rs), moved.digest());
}

TEST_F(Entities, WorldRestoredFromItsOwnEncodingHasTheSameDigest) {
  entities::world a;
  for (const auto& e : stream(b_, 30)) a.apply(env_of(e));
  entities::world r;
  a.for_each_encoded([&](wire::EntityKind k, std::string_view key, const std::string& s) {
    ASSERT_TRUE(r.load(k, key, s));
  });
  EXPECT_EQ(r.digest(), a.digest());
}

TEST_F(Entities, ActorsReachTheSameStateAsTheWorld) {
  auto events = stream(b_, 200);
  entities::world w;
  for (const auto& e : events) w.apply(env_of(e));
  for (std::size_t threads : {1u, 4u}) {
    entities::actor_host host(threads);
    // Deliver in several batches, as replay does.
    for (std::size_t i = 0; i < events.size(); i += 37) {
      auto batch = std::make_shared<entities::record_batch>();
      for (std::size_t j = i; j < std::min(events.size(), i + 37); ++j) batch->add(events[j]);
      host.deliver(std::move(batch));
    }
    auto states = host.collect();
    ASSERT_TRUE(states) << states.error().describe();
    EXPECT_EQ(states->size(), w.entity_count());
    EXPECT_EQ(entities::digest_of(*states), w.digest()) << "threads=" << threads;
    auto count = host.actor_count();
    ASSERT_TRUE(count);
    EXPECT_EQ(*count, w.entity_count());  // one actor per entity
  }
}

TEST_F(Entities, ActorsRestoredFromSnapshotContinueIdentically) {
  auto events = stream(b_, 100);
  const std::size_t cut = events.size() / 2;
  entities::world prefix, full;
  for (std::size_t i = 0; i < events.size(); ++i) {
    if (i < cut) prefix.apply(env_of(events[i]));
    full.apply(env_of(events[i]));
  }
  entities::actor_host host(2);
  prefix.for_each_encoded([&](wire::EntityKind k, std::string_view key, const std::string& s) {
    host.load(k, std::string(key), s);
  });
  auto batch = std::make_shared<entities::record_batch>();
  for (std::size_t i = cut; i < events.size(); ++i) batch->add(events[i]);
  host.deliver(batch);
  auto states = host.collect();
  ASSERT_TRUE(states);
  EXPECT_EQ(entities::digest_of(*states), full.digest());
}

// Replay mode routes queued batches together and sends each actor one message per flush: one
// record per batch makes every actor's events span many batches, and a snapshot load in the
// middle must land after the records delivered before it and before those after it.
TEST_F(Entities, ActorsKeepLogOrderWhenBatchesAreCoalesced) {
  auto events = stream(b_, 300);
  const std::size_t cut = events.size() / 2;
  entities::pod_state loaded;
  loaded.name = "ns/p7";
  loaded.node = "n3";
  loaded.attempts = 42;
  entities::world w;
  for (std::size_t threads : {1u, 2u}) {
    w = entities::world{};
    entities::actor_host host(threads);
    for (std::size_t i = 0; i < events.size(); ++i) {
      if (i == cut) {
        w.pods.insert_or_assign("ns/p7", loaded);
        host.load(wire::EntityKind::Pod, "ns/p7", entities::encode(loaded));
      }
      w.apply(env_of(events[i]));
      auto batch = std::make_shared<entities::record_batch>();
      batch->add(events[i]);
      host.deliver(std::move(batch));
    }
    auto states = host.collect();
    ASSERT_TRUE(states) << states.error().describe();
    EXPECT_EQ(states->size(), w.entity_count());
    EXPECT_EQ(entities::digest_of(*states), w.digest()) << "threads=" << threads;
    // collect() answers in (kind, key) order.
    for (std::size_t i = 1; i < states->size(); ++i) {
      const auto& a = (*states)[i - 1];
      const auto& b = (*states)[i];
      EXPECT_TRUE(a.kind < b.kind || (a.kind == b.kind && a.key < b.key)) << b.key;
    }
    // The loaded pod kept its snapshot fields and folded the later events on top.
    auto it = std::find_if(states->begin(), states->end(),
                           [](const auto& e) { return e.key == "ns/p7"; });
    ASSERT_NE(it, states->end());
    auto p = entities::decode_pod(it->state);
    ASSERT_TRUE(p);
    EXPECT_EQ(p->attempts, 42);
  }
}

}  // namespace
}  // namespace colony::testing
