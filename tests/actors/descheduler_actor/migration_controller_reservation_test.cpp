// migration_controller_component in ReservationFirst mode (controller.go doMigrate), fed
// envelopes directly with the scheduler's answers played by the test: the job writes its
// Reservation (the pod's requests, owned by the pod's controller, kept off the pod's node),
// evicts once the Reservation is Available elsewhere, and succeeds when the replacement binds
// it; every other answer of the Reservation ends the job with Koordinator's reason; the TTL
// deletes the Reservation; bare pods, empty podRefs and paused jobs are handled.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "actors/descheduler/actor/migration_controller_component.hpp"
#include "tests/actors/descheduler_actor/descheduler_log.hpp"
#include "tests/support/component_feed.hpp"

namespace colony::descheduler_actor {
namespace {

using testing::cpu_mem;
using testing::decoded;
using testing::descheduler_log;
using testing::gib;
using testing::loop_back;
using testing::text;

constexpr std::int64_t t0 = 1'000;
constexpr std::int64_t ttl = 300'000;

std::uint64_t job(descheduler_log& log, std::int64_t t, const std::string& name,
                  const std::string& pod, bool paused = false) {
  auto& fbb = log.b.fbb();
  const auto n = fbb.CreateString(name);
  const auto p = fbb.CreateString(pod);
  const auto m = fbb.CreateString("ReservationFirst");
  const auto r = fbb.CreateString("node is overutilized");
  const auto c = fbb.CreateString("koord-descheduler");
  return log.append(t, wire::EntityKind::PodMigrationJob, name,
                    wire::CreateMigrationJobCreated(fbb, n, p, m, r, ttl, c, 0, paused),
                    "koord-descheduler");
}

// The scheduler's answer about a reservation.
std::uint64_t reservation_phase(descheduler_log& log, std::int64_t t, const std::string& name,
                                std::string_view phase, std::string_view reason,
                                std::string_view node = {}, std::string_view owner = {}) {
  auto& fbb = log.b.fbb();
  const auto n = fbb.CreateString(name);
  const auto ph = fbb.CreateString(phase);
  const auto nd = fbb.CreateString(node);
  const auto why = fbb.CreateString(reason);
  const auto own = fbb.CreateString(owner);
  return log.append(t, wire::EntityKind::Reservation, name,
                    wire::CreateReservationPhaseChanged(fbb, n, ph, nd, why, 0, own),
                    "koord-scheduler");
}

// Two nodes; p1..p2 of ReplicaSet rs-a on n1, a bare pod on n1.
void cluster(descheduler_log& log) {
  for (const char* n : {"n1", "n2"})
    log.node(t0, n, cpu_mem(10'000, 100 * gib, 110), cpu_mem(10'000, 100 * gib, 110));
  for (int i = 1; i <= 2; ++i)
    log.pod(t0, "default/p" + std::to_string(i), "n1", "ReplicaSet/rs-a", 500);
  log.pod(t0, "default/bare", "n1", "", 300);
}

migration_controller_options options() {
  migration_controller_options o;
  o.args.default_job_mode = "ReservationFirst";
  o.args.filter.evict_all_bare_pods =
      true;  // so the bare pod passes arbitration and meets the rule
  return o;
}

struct phase_change {
  std::string job, phase, reason, message, node, pod;
};

std::vector<phase_change> phases(const std::vector<messages::byte_buffer>& out) {
  std::vector<phase_change> v;
  for (const auto& b : out) {
    const auto& e = decoded(b);
    if (e.payload_type() != wire::Payload::MigrationJobPhaseChanged) continue;
    const auto* p = e.payload_as_MigrationJobPhaseChanged();
    v.push_back({text(p->name()), text(p->phase()), text(p->reason()), text(p->message()),
                 text(p->node()), text(p->pod())});
  }
  return v;
}

std::vector<const wire::ReservationUpserted*> reservations(
    const std::vector<messages::byte_buffer>& out) {
  std::vector<const wire::ReservationUpserted*> v;
  for (const auto& b : out)
    if (const auto& e = decoded(b); e.payload_type() == wire::Payload::ReservationUpserted)
      v.push_back(e.payload_as_ReservationUpserted());
  return v;
}

std::size_t evictions(const std::vector<messages::byte_buffer>& out) {
  return static_cast<std::size_t>(std::count_if(out.begin(), out.end(), [](const auto& b) {
    return decoded(b).payload_type() == wire::Payload::PodEvicted;
  }));
}

// A job for p1 past arbitration: its reservation written and fed back.
struct started {
  descheduler_log log;
  migration_controller_component c{options()};
  std::vector<messages::byte_buffer> first;
  started() {
    cluster(log);
    (void)job(log, t0, "job-1", "default/p1");
    (void)testing::feed(c, log);
    c.on_wakeup(*c.next_wakeup_ms(), first);
    std::vector<messages::byte_buffer> copy;
    for (const auto& b : first) copy.push_back(b);
    EXPECT_TRUE(loop_back(c, log, std::move(copy)).empty());
  }
  std::vector<messages::byte_buffer> answer(std::string_view phase, std::string_view reason,
                                            std::string_view node = {},
                                            std::string_view owner = {}) {
    const auto from = log.records.size();
    (void)reservation_phase(log, 2'000, "job-1", phase, reason, node, owner);
    return testing::feed(c, log, from);
  }
};

TEST(MigrationControllerReservationFirst, ReservesEvictsAndSucceedsWhenTheReplacementBinds) {
  started s;
  // 1. The reservation, and Running/ReservationCreated; no eviction yet.
  const auto rs = reservations(s.first);
  ASSERT_EQ(rs.size(), 1u);
  const auto* r = rs[0];
  EXPECT_EQ(text(r->name()), "job-1");
  EXPECT_EQ(messages::to_resource_list(r->requests()).cpu_milli, 500);
  EXPECT_EQ(r->ttl_ms(), ttl);
  EXPECT_TRUE(r->allocate_once());
  EXPECT_FALSE(r->deleted());
  EXPECT_EQ(text(r->scheduler_name()), "koord-scheduler");
  ASSERT_NE(r->not_in_nodes(), nullptr);
  ASSERT_EQ(r->not_in_nodes()->size(), 1u);
  EXPECT_EQ(r->not_in_nodes()->Get(0)->str(), "n1");
  ASSERT_NE(r->owners(), nullptr);
  ASSERT_EQ(r->owners()->size(), 1u);
  const auto* o = r->owners()->Get(0);
  EXPECT_TRUE(o->has_controller());
  EXPECT_EQ(text(o->controller_kind()), "ReplicaSet");
  EXPECT_EQ(text(o->controller_name()), "rs-a");
  EXPECT_EQ(text(o->controller_namespace()), "default");
  ASSERT_NE(r->labels(), nullptr);
  ASSERT_EQ(r->labels()->size(), 2u);
  EXPECT_EQ(text(r->labels()->Get(0)->key()), "app.kubernetes.io/created-by");
  EXPECT_EQ(text(r->labels()->Get(0)->value()), "koord-descheduler");
  EXPECT_EQ(text(r->labels()->Get(1)->key()), "scheduling.koordinator.sh/reservation-order");
  EXPECT_EQ(text(r->labels()->Get(1)->value()), std::to_string(t0));
  auto ph = phases(s.first);
  ASSERT_EQ(ph.size(), 1u);
  EXPECT_EQ(ph[0].phase, "Running");
  EXPECT_EQ(ph[0].reason, "ReservationCreated");
  EXPECT_EQ(evictions(s.first), 0u);

  // 2. Available on n2: Running/Evicting with the node, and the eviction at once.
  auto out = s.answer("Available", "Scheduled", "n2");
  ph = phases(out);
  ASSERT_EQ(ph.size(), 1u);
  EXPECT_EQ(ph[0].phase, "Running");
  EXPECT_EQ(ph[0].reason, "Evicting");
  EXPECT_EQ(ph[0].node, "n2");
  EXPECT_EQ(evictions(out), 1u);

  // 3. The PodEvicted back: the job waits for a pod to bind the reservation.
  out = loop_back(s.c, s.log, std::move(out));
  ph = phases(out);
  ASSERT_EQ(ph.size(), 1u);
  EXPECT_EQ(ph[0].phase, "Running");
  EXPECT_EQ(ph[0].reason, "WaitForPodBindReservation");
  (void)loop_back(s.c, s.log, std::move(out));

  // 4. The replacement bound into it: Succeeded, naming the new pod and the node.
  out = s.answer("Succeeded", "Succeeded", "n2", "default/p1-r1");
  ph = phases(out);
  ASSERT_EQ(ph.size(), 1u);
  EXPECT_EQ(ph[0].phase, "Succeeded");
  EXPECT_EQ(ph[0].reason, "PodBoundReservation");
  EXPECT_EQ(ph[0].message, "Bind Pod \"default/p1-r1\" in Reservation \"job-1\"");
  EXPECT_EQ(ph[0].pod, "default/p1-r1");
  EXPECT_EQ(ph[0].node, "n2");
  (void)loop_back(s.c, s.log, std::move(out));
  EXPECT_EQ(s.c.next_wakeup_ms(), std::nullopt) << "nothing left to do";
}

TEST(MigrationControllerReservationFirst, TheReservationsAnswersEndTheJobWithKoordinatorsReasons) {
  struct row {
    const char* phase;
    const char* reason;
    const char* node;
    const char* owner;
    const char* job_phase;
    const char* job_reason;
  };
  const std::vector<row> rows = {
      {"Available", "Scheduled", "n1", "", "Failed", "ForbiddenMigratePod"},  // the pod's node
      {"Succeeded", "Succeeded", "n2", "default/other", "Failed", "ForbiddenMigratePod"},
      {"Failed", "Expired", "", "", "Failed", "ReservationExpired"},
      {"Failed", "Deleted", "", "", "Failed", "MissingReservation"},
      {"Pending", "Unschedulable", "", "", "Running", "Unschedulable"},
  };
  for (const auto& w : rows) {
    SCOPED_TRACE(std::string(w.phase) + "/" + w.reason + " " + w.node);
    started s;
    auto out = s.answer(w.phase, w.reason, w.node, w.owner);
    const auto ph = phases(out);
    ASSERT_EQ(ph.size(), 1u);
    EXPECT_EQ(ph[0].phase, w.job_phase);
    EXPECT_EQ(ph[0].reason, w.job_reason);
    EXPECT_EQ(evictions(out), 0u);
    (void)loop_back(s.c, s.log, std::move(out));
    // Unschedulable is said once; the job keeps waiting (for its TTL).
    if (std::string_view(w.job_phase) == "Running") {
      EXPECT_TRUE(phases(s.answer(w.phase, w.reason)).empty());
    }
  }
}

TEST(MigrationControllerReservationFirst, TheTtlDeletesThePendingReservation) {
  started s;
  (void)s.answer("Pending", "Unschedulable");
  ASSERT_TRUE(s.c.next_wakeup_ms().has_value());
  EXPECT_EQ(*s.c.next_wakeup_ms(), t0 + ttl);
  std::vector<messages::byte_buffer> out;
  s.c.on_wakeup(t0 + ttl, out);
  const auto rs = reservations(out);
  ASSERT_EQ(rs.size(), 1u);
  EXPECT_EQ(text(rs[0]->name()), "job-1");
  EXPECT_TRUE(rs[0]->deleted());
  const auto ph = phases(out);
  ASSERT_EQ(ph.size(), 1u);
  EXPECT_EQ(ph[0].phase, "Failed");
  EXPECT_EQ(ph[0].reason, "Timeout");
}

TEST(MigrationControllerReservationFirst, JobsThatCannotReserveFailOrWait) {
  struct row {
    const char* pod;
    bool paused;
    const char* phase;  // "" = no phase change (a paused job passes and waits)
    const char* reason;
  };
  const std::vector<row> rows = {
      {"default/bare", false, "Failed", "FailedCreateReservation"},
      {"", false, "Failed", "InvalidPodRef"},
      {"default/", false, "Failed", "InvalidPodRef"},
      {"default/ghost", false, "Failed", "MissingPod"},
      {"default/p2", true, "", ""},
  };
  for (const auto& w : rows) {
    SCOPED_TRACE(std::string(w.pod) + (w.paused ? " paused" : ""));
    descheduler_log log;
    cluster(log);
    (void)job(log, t0, "job-1", w.pod, w.paused);
    migration_controller_component c(options());
    (void)testing::feed(c, log);
    std::vector<messages::byte_buffer> out;
    c.on_wakeup(*c.next_wakeup_ms(), out);
    EXPECT_TRUE(reservations(out).empty());
    EXPECT_EQ(evictions(out), 0u);
    const auto ph = phases(out);
    if (*w.phase == '\0') {
      EXPECT_TRUE(ph.empty());
      EXPECT_EQ(c.stats().passed, 1u) << "a paused job passes arbitration";
      continue;
    }
    ASSERT_EQ(ph.size(), 1u);
    EXPECT_EQ(ph[0].phase, w.phase);
    EXPECT_EQ(ph[0].reason, w.reason);
  }
}

}  // namespace
}  // namespace colony::descheduler_actor
