// A reservation end to end through the live actor_host and a real log: koord-scheduler places
// it, the node's actor holds it, strangers are placed around it, the owner's proposal names it
// and the node actor accepts it into the held room, the reservation is then Succeeded; the log
// audits clean and folds to the same outcome.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>

#include "actors/entities/audit.hpp"
#include "actors/entities/entity_actors.hpp"
#include "actors/entities/world.hpp"
#include "actors/scheduler/actor/scheduler_component.hpp"
#include "stores/event_log.hpp"
#include "tests/actors/scheduler_actor/host_loop.hpp"
#include "tests/actors/scheduler_actor/test_events.hpp"

namespace colony {
namespace {

using messages::to_string_view;
using testing::event_factory;
using testing::gib;

messages::byte_buffer web_reservation(event_factory& f, std::int64_t t) {
  auto& b = f.b;
  auto& fbb = b.fbb();
  auto lv = b.key_values({{"app", "web"}});
  wire::ReservationOwnerBuilder ob(fbb);
  ob.add_has_label_selector(true);
  ob.add_match_labels(lv);
  auto owner = ob.Finish();
  auto owners = fbb.CreateVector(std::vector<flatbuffers::Offset<wire::ReservationOwner>>{owner});
  auto name = fbb.CreateString("r1");
  auto req = b.resources(testing::cpu_mem(3000, 4 * gib));
  wire::ReservationUpsertedBuilder rb(fbb);
  rb.add_name(name);
  rb.add_requests(req);
  rb.add_owners(owners);
  rb.add_ttl_ms(3'600'000);
  auto p = rb.Finish();
  return b.finish(messages::header{event_time{t}, wire::EntityKind::Reservation, "r1", -1, "test"},
                  p);
}

TEST(ReservationHost, AnOwnerBindsIntoItsReservationThroughTheNodeActor) {
  const auto dir =
      std::filesystem::temp_directory_path() / ("colony-rsv-host-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  stores::log_options lo;
  lo.sync = false;
  auto opened = stores::open_log(dir.string(), lo);
  ASSERT_TRUE(opened.has_value()) << opened.error().message;
  auto& log = **opened;
  auto append = [&](const std::vector<messages::byte_buffer>& recs) {
    std::vector<messages::bytes_view> views(recs.begin(), recs.end());
    ASSERT_TRUE(log.append(views).has_value());
  };
  event_factory f;
  // Two nodes of 4 cores; a reservation of 3 cores for app=web; then three 1-core strangers,
  // then the 3-core owner. Without the reservation the strangers could take the room it needs.
  append({f.node(0, "n1", 4000, 16 * gib), f.node(0, "n2", 4000, 16 * gib)});
  append({web_reservation(f, 100)});

  testing::host_output written;
  entities::actor_host host(2, written.sink());
  scheduler::scheduler_component_options o;
  o.id = "a";
  auto c = scheduler::scheduler_component::create(std::move(o));
  ASSERT_TRUE(c.has_value());
  host.add_component(std::move(*c));

  bool pods_sent = false;
  const auto run = testing::run_host(log, host, written, f, 1000, 200, 5, [&](std::int64_t clock) {
    if (pods_sent) return false;
    pods_sent = true;  // the reservation is placed: now the pods
    std::vector<messages::byte_buffer> pods;
    for (int i = 0; i < 3; ++i)
      pods.push_back(f.pod(clock, "ns/batch-" + std::to_string(i), 1000, gib, "koord-scheduler",
                           {{"app", "batch"}}));
    pods.push_back(f.pod(clock, "ns/web-0", 3000, 2 * gib, "koord-scheduler", {{"app", "web"}}));
    append(pods);
    return true;
  });
  ASSERT_TRUE(run.quiescent);
  std::vector<messages::byte_buffer> all;
  ASSERT_TRUE(log.read(0, no_offset,
                       [&](log_offset, messages::bytes_view b) {
                         all.emplace_back(b.begin(), b.end());
                         return true;
                       })
                  .has_value());
  opened->reset();
  std::filesystem::remove_all(dir);

  const auto report = entities::audit_log(all);
  EXPECT_TRUE(report.clean()) << report.describe();
  entities::world w;
  std::string held_node, owner_node, owner_reservation;
  std::size_t available = 0, succeeded = 0;
  for (const auto& rec : all) {
    const auto& env = testing::env_of(rec);
    w.apply(env);
    if (const auto* p = env.payload_as_ReservationPhaseChanged()) {
      if (to_string_view(p->phase()) == "Available") {
        ++available;
        held_node = std::string(to_string_view(p->node()));
      }
      if (to_string_view(p->phase()) == "Succeeded") {
        ++succeeded;
        EXPECT_EQ(to_string_view(p->owner()), "ns/web-0");
      }
    }
    if (const auto* s = env.payload_as_PodScheduled();
        s && to_string_view(s->pod()) == "ns/web-0") {
      owner_node = std::string(to_string_view(s->node()));
      owner_reservation = std::string(to_string_view(s->reservation()));
    }
  }
  EXPECT_EQ(available, 1u);
  EXPECT_EQ(succeeded, 1u);
  EXPECT_EQ(owner_node, held_node);
  EXPECT_EQ(owner_reservation, "r1");
  // Every pod is bound (the strangers fit around the reservation), no node is over capacity.
  for (const auto& [key, p] : w.pods) EXPECT_EQ(p.phase, entities::pod_phase::scheduled) << key;
  EXPECT_EQ(w.pods.size(), 4u);
  for (const auto& [name, n] : w.nodes) {
    EXPECT_LE(n.allocated.cpu_milli, n.allocatable.cpu_milli) << name;
    EXPECT_TRUE(n.reservations.empty()) << name;  // Succeeded: nothing held any more
  }
  ASSERT_EQ(w.reservations.count("r1"), 1u);
  EXPECT_EQ(w.reservations["r1"].phase, "Succeeded");
  EXPECT_EQ(w.reservations["r1"].node, held_node);
}

}  // namespace
}  // namespace colony
