// The colony CLI as a user runs it: exit codes, JSON outputs, errors on bad input.
#include <fstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "messages/codec.hpp"
#include "stores/event_log.hpp"
#include "tests/cli/process.hpp"
#include "tests/support/temp_dir.hpp"

namespace colony::testing {
namespace {

TEST(Cli, VersionAndHelp) {
  auto [rc, out] = run_colony({"--version"});
  EXPECT_EQ(rc, 0);
  EXPECT_EQ(out.rfind("colony ", 0), 0u) << out;
  for (auto sub : {"log", "replay", "bench", "sim"}) {
    auto [hrc, hout] = run_colony({sub, "--help"});
    EXPECT_EQ(hrc, 0) << sub;
    EXPECT_NE(hout.find("Usage"), std::string::npos) << sub << ": " << hout;
  }
}

TEST(Cli, UsageErrorsExitWithTwo) {
  EXPECT_EQ(run_colony({"no-such-command"}).first, 2);
  EXPECT_EQ(run_colony({"log", "dump"}).first, 2);  // --log is required
}

TEST(Cli, StatsDumpAndReplayAgree) {
  temp_dir d;
  auto log = d.sub("log");
  auto [grc, gout] = run_colony({"log", "generate", "--log", log, "--count", "316"});
  ASSERT_EQ(grc, 0) << gout;
  auto [src, sout] = run_colony({"log", "stats", "--log", log});
  ASSERT_EQ(src, 0) << sout;
  auto stats = nlohmann::json::parse(sout);
  EXPECT_EQ(stats["count"], 316);
  EXPECT_EQ(stats["first_offset"], 0);
  EXPECT_EQ(stats["last_offset"], 315);
  EXPECT_EQ(stats["types"]["NodeRegistered"], 16);
  EXPECT_EQ(stats["types"]["PodSubmitted"], 100);
  auto [drc, dout] = run_colony({"log", "dump", "--log", log, "--from", "100", "--to", "109"});
  ASSERT_EQ(drc, 0);
  std::istringstream lines(dout);
  std::string line;
  int n = 0;
  while (std::getline(lines, line)) {
    auto j = nlohmann::json::parse(line);
    EXPECT_EQ(j["offset"], 100 + n);
    ++n;
  }
  EXPECT_EQ(n, 10);
  // --entity selects every event that touches one pod: submitted, scheduled, finished.
  auto [erc, eout] = run_colony({"log", "dump", "--log", log, "--entity", "pod/default/gen-pod-7"});
  ASSERT_EQ(erc, 0);
  EXPECT_EQ(std::count(eout.begin(), eout.end(), '\n'), 3);
  // replay --until gives a different state than the full replay, and --json lists entities.
  auto [r1, o1] = run_colony({"replay", "--log", log, "--digest"});
  auto [r2, o2] = run_colony({"replay", "--log", log, "--until", "50", "--digest"});
  ASSERT_EQ(r1, 0);
  ASSERT_EQ(r2, 0);
  EXPECT_EQ(o1.size(), 17u);
  EXPECT_NE(o1, o2);
  auto [jrc, jout] = run_colony({"replay", "--log", log, "--json"});
  ASSERT_EQ(jrc, 0);
  EXPECT_NE(jout.find("\"entity\":\"node/gen-node-0\""), std::string::npos);
}

// Schema v3's ObjectRefused and WriteFailed change no entity, yet `log dump --entity` and
// `explain pod` show them beside the pod's other events (they match the record's own key).
TEST(Cli, DumpAndExplainShowRefusalsAndFailedWrites) {
  temp_dir d;
  auto log = d.sub("log");
  auto [grc, gout] = run_colony({"log", "generate", "--log", log, "--count", "316"});
  ASSERT_EQ(grc, 0) << gout;
  {
    auto l = stores::open_log(log, stores::log_options{});
    ASSERT_TRUE(l) << l.error().describe();
    messages::event_builder b;
    auto& f = b.fbb();
    const auto refused = wire::CreateObjectRefusedDirect(
        f, "Pod", "default", "gen-pod-7", "", "42", "spec.containers[0].resources.requests.cpu",
        "\"1e30\" is out of range", "invalid_input");
    const auto r = b.finish(
        {event_time{1}, wire::EntityKind::Pod, "default/gen-pod-7", -1, "bridge/k8s"}, refused);
    const auto failed = wire::CreateWriteFailedDirect(
        f, wire::WriteKind::binding, "default/gen-pod-7", 409, 1, "bound elsewhere");
    const auto w = b.finish(
        {event_time{2}, wire::EntityKind::Pod, "default/gen-pod-7", 300, "kube-sink"}, failed);
    // A refusal of a pod never observed: no empty pod entity appears for it.
    const auto unseen_payload = wire::CreateObjectRefusedDirect(
        f, "Pod", "default", "never-seen", "", "43", "metadata.labels[koordinator.sh/qosClass]",
        "\"GOLD\" is not SYSTEM, LSE, LSR, LS, BE", "invalid_input");
    const auto unseen =
        b.finish({event_time{3}, wire::EntityKind::Pod, "default/never-seen", -1, "bridge/k8s"},
                 unseen_payload);
    const std::vector<messages::bytes_view> recs{r, w, unseen};
    ASSERT_TRUE((*l)->append(recs));
  }
  auto [erc, eout] = run_colony({"log", "dump", "--log", log, "--entity", "pod/default/gen-pod-7"});
  ASSERT_EQ(erc, 0) << eout;
  EXPECT_EQ(std::count(eout.begin(), eout.end(), '\n'), 5) << eout;
  EXPECT_NE(eout.find("\"type\":\"ObjectRefused\""), std::string::npos) << eout;
  EXPECT_NE(eout.find("\"type\":\"WriteFailed\""), std::string::npos) << eout;
  auto [xrc, xout] = run_colony({"explain", "pod", "default/gen-pod-7", "--log", log});
  ASSERT_EQ(xrc, 0) << xout;
  EXPECT_NE(xout.find("refused by bridge/k8s"), std::string::npos) << xout;
  EXPECT_NE(xout.find("spec.containers[0].resources.requests.cpu: \"1e30\" is out of range"),
            std::string::npos)
      << xout;
  EXPECT_NE(xout.find("binding write failed"), std::string::npos) << xout;
  EXPECT_NE(xout.find("HTTP 409 after 1 attempts: bound elsewhere"), std::string::npos) << xout;
  // The entities are what they were: the replay's digest ignores the three records.
  auto [r1, o1] = run_colony({"replay", "--log", log, "--until", "315", "--digest"});
  auto [r2, o2] = run_colony({"replay", "--log", log, "--digest"});
  ASSERT_EQ(r1, 0);
  ASSERT_EQ(r2, 0);
  EXPECT_EQ(o1, o2);
}

// Schema v6's short forms read back whole: `explain node` shows a repeated batch decision with
// the terms of the complete record it names, and a BE suppression's vocabulary terms with the
// policy's units and descriptions; `log stats` gives bytes per type.
TEST(Cli, ExplainNodeShowsARepeatWithTheTermsOfItsCompleteRecord) {
  temp_dir d;
  auto log = d.sub("log");
  {
    auto l = stores::open_log(log, stores::log_options{});
    ASSERT_TRUE(l) << l.error().describe();
    messages::event_builder b;
    auto& f = b.fbb();
    std::vector<messages::byte_buffer> recs;
    const auto cap = b.resources(resource_list{.cpu_milli = 32000, .memory_bytes = 64LL << 30});
    const auto nn = b.key_string("n1");
    recs.push_back(b.finish({event_time{0}, wire::EntityKind::Node, "n1", -1, "test"},
                            wire::CreateNodeRegistered(f, nn, cap, cap)));
    auto batch = [&](std::int64_t t, std::int64_t as_of) {
      std::vector<flatbuffers::Offset<wire::Term>> terms;
      if (as_of < 0) {
        wire::TermBuilder tb(f);
        tb.add_value(32000);
        tb.add_group(wire::TermGroup::batch_cpu);
        tb.add_known(wire::TermName::nodeCapacity);
        terms.push_back(tb.Finish());
      }
      const auto tv = f.CreateVector(terms);
      const auto node = b.key_string("n1");
      const auto pol = f.CreateString("usage");
      return b.finish({event_time{t}, wire::EntityKind::Node, "n1", -1, "slo-controller"},
                      wire::CreateNodeBatchResourceUpdated(f, node, 19200, 1 << 30, 0, 0, pol, pol,
                                                           false, tv, as_of));
    };
    recs.push_back(batch(60000, -1));
    recs.push_back(batch(361000, 60000));
    {
      wire::TermBuilder tb(f);
      tb.add_value(32000);
      tb.add_known(wire::TermName::capacityMilli);
      const auto t0 = tb.Finish();
      const auto tv = f.CreateVector(std::vector<flatbuffers::Offset<wire::Term>>{t0});
      const auto node = b.key_string("n1");
      const auto pol = f.CreateString("cpuset");
      const auto cs = f.CreateString("0-3");
      recs.push_back(b.finish({event_time{362000}, wire::EntityKind::Node, "n1", -1, "koordlet"},
                              wire::CreateBeSuppressed(f, node, pol, 4000, cs, tv)));
    }
    std::vector<messages::bytes_view> views(recs.begin(), recs.end());
    ASSERT_TRUE((*l)->append(views));
  }
  auto [xrc, xout] = run_colony({"explain", "node", "n1", "--log", log});
  ASSERT_EQ(xrc, 0) << xout;
  EXPECT_NE(xout.find("(the decision of t=60.000s, rewritten"), std::string::npos) << xout;
  EXPECT_NE(xout.find("batch-cpu.nodeCapacity = 32000"), std::string::npos) << xout;
  EXPECT_NE(xout.find("capacityMilli = 32000 milli (node status.capacity cpu)"), std::string::npos)
      << xout;
  // Up to the first record only: the complete one, no repeat.
  auto [yrc, yout] = run_colony({"explain", "node", "n1", "--log", log, "--at", "1"});
  ASSERT_EQ(yrc, 0) << yout;
  EXPECT_EQ(yout.find("rewritten"), std::string::npos) << yout;
  EXPECT_NE(yout.find("batch-cpu.nodeCapacity = 32000"), std::string::npos) << yout;
  auto [src, sout] = run_colony({"log", "stats", "--log", log});
  ASSERT_EQ(src, 0) << sout;
  const auto stats = nlohmann::json::parse(sout);
  EXPECT_EQ(stats["types"]["NodeBatchResourceUpdated"], 2);
  EXPECT_GT(stats["type_bytes"]["NodeBatchResourceUpdated"].get<std::int64_t>(), 0);
  EXPECT_LT(stats["type_bytes"]["BeSuppressed"].get<std::int64_t>(),
            stats["type_bytes"]["NodeBatchResourceUpdated"].get<std::int64_t>());
}

// Schema v7's reservations as a reader meets them: `explain pod` names the reservation an owner
// was bound into, `log dump --entity reservation/NAME` finds its history, `replay --json` shows
// its folded phase and node.
TEST(Cli, ExplainDumpAndReplayShowAReservation) {
  temp_dir d;
  auto log = d.sub("log");
  {
    auto l = stores::open_log(log, stores::log_options{});
    ASSERT_TRUE(l) << l.error().describe();
    messages::event_builder b;
    auto& f = b.fbb();
    std::vector<messages::byte_buffer> recs;
    const auto cap = b.resources(resource_list{.cpu_milli = 8000, .memory_bytes = 16LL << 30});
    const auto nn = b.key_string("n1");
    recs.push_back(b.finish({event_time{0}, wire::EntityKind::Node, "n1", -1, "test"},
                            wire::CreateNodeRegistered(f, nn, cap, cap)));
    {
      const auto name = b.key_string("r1");
      const auto req = b.resources(resource_list{.cpu_milli = 2000});
      recs.push_back(b.finish({event_time{10}, wire::EntityKind::Reservation, "r1", -1, "test"},
                              wire::CreateReservationUpserted(f, name, 0, req)));
    }
    {
      const auto name = b.key_string("r1");
      const auto ph = f.CreateString("Available");
      const auto node = f.CreateString("n1");
      const auto why = f.CreateString("Scheduled");
      const auto al = b.resources(resource_list{.cpu_milli = 2000});
      recs.push_back(
          b.finish({event_time{20}, wire::EntityKind::Reservation, "r1", 1, "koord-scheduler/0"},
                   wire::CreateReservationPhaseChanged(f, name, ph, node, why, al)));
    }
    {
      const auto name = f.CreateString("ns/web-0");
      const auto uid = f.CreateString("u1");
      const auto req = b.resources(resource_list{.cpu_milli = 2000, .pods = 1});
      recs.push_back(b.finish({event_time{30}, wire::EntityKind::Pod, "ns/web-0", -1, "test"},
                              wire::CreatePodSubmitted(f, name, uid, req)));
    }
    {
      const auto pod = f.CreateString("ns/web-0");
      const auto node = b.key_string("n1");
      const auto req = b.resources(resource_list{.cpu_milli = 2000, .pods = 1});
      const auto sched = f.CreateString("koord-scheduler/0");
      const auto rsv = f.CreateString("r1");
      recs.push_back(b.finish({event_time{40}, wire::EntityKind::Node, "n1", -1, "node"},
                              wire::CreatePodScheduled(f, pod, node, -1, req, 0, sched, rsv)));
    }
    std::vector<messages::bytes_view> views(recs.begin(), recs.end());
    ASSERT_TRUE((*l)->append(views));
  }
  auto [xrc, xout] = run_colony({"explain", "pod", "ns/web-0", "--log", log});
  ASSERT_EQ(xrc, 0) << xout;
  EXPECT_NE(xout.find("into Reservation r1"), std::string::npos) << xout;
  auto [drc, dout] = run_colony({"log", "dump", "--log", log, "--entity", "reservation/r1"});
  ASSERT_EQ(drc, 0) << dout;
  EXPECT_NE(dout.find("ReservationUpserted"), std::string::npos) << dout;
  EXPECT_NE(dout.find("ReservationPhaseChanged"), std::string::npos) << dout;
  EXPECT_EQ(dout.find("PodSubmitted"), std::string::npos) << dout;
  auto [rrc, rout] = run_colony({"replay", "--log", log, "--json"});
  ASSERT_EQ(rrc, 0) << rout;
  EXPECT_NE(rout.find("\"phase\":\"Available\""), std::string::npos) << rout;
}

// Schema v4's recorded objects: `log dump --entity object/KIND/NAME` finds an object's history,
// `replay --json` shows its latest state with the spec and status as JSON, and the digest
// covers it.
TEST(Cli, DumpAndReplayShowRecordedObjects) {
  temp_dir d;
  auto log = d.sub("log");
  auto [grc, gout] = run_colony({"log", "generate", "--log", log, "--count", "316"});
  ASSERT_EQ(grc, 0) << gout;
  {
    auto l = stores::open_log(log, stores::log_options{});
    ASSERT_TRUE(l) << l.error().describe();
    messages::event_builder b;
    auto& f = b.fbb();
    const auto added = wire::CreateObjectObservedDirect(
        f, "scheduling.koordinator.sh/v1alpha1", "Reservation", "", "r1", "uid-r1", "41", nullptr,
        R"({"ttl":"5m"})", R"({"phase":"Pending"})", false);
    const auto a = b.finish(
        {event_time{1}, wire::EntityKind::Object, "Reservation/r1", -1, "bridge/k8s"}, added);
    const auto updated = wire::CreateObjectObservedDirect(
        f, "scheduling.koordinator.sh/v1alpha1", "Reservation", "", "r1", "uid-r1", "42", nullptr,
        R"({"ttl":"5m"})", R"({"phase":"Available"})", false);
    const auto u = b.finish(
        {event_time{2}, wire::EntityKind::Object, "Reservation/r1", -1, "bridge/k8s"}, updated);
    const std::vector<messages::bytes_view> recs{a, u};
    ASSERT_TRUE((*l)->append(recs));
  }
  auto [erc, eout] = run_colony({"log", "dump", "--log", log, "--entity", "object/Reservation/r1"});
  ASSERT_EQ(erc, 0) << eout;
  EXPECT_EQ(std::count(eout.begin(), eout.end(), '\n'), 2) << eout;
  EXPECT_NE(eout.find("\"type\":\"ObjectObserved\""), std::string::npos) << eout;
  auto [jrc, jout] = run_colony({"replay", "--log", log, "--json"});
  ASSERT_EQ(jrc, 0) << jout;
  bool found = false;
  std::istringstream lines(jout);
  std::string line;
  while (std::getline(lines, line)) {
    const auto j = nlohmann::json::parse(line, nullptr, false);
    if (j.is_discarded() || j.value("entity", "") != "object/Reservation/r1") continue;
    found = true;
    EXPECT_EQ(j.at("resource_version"), "42");
    EXPECT_EQ(j.at("uid"), "uid-r1");
    EXPECT_EQ(j.at("deleted"), false);
    EXPECT_EQ(j.at("status"), nlohmann::json::parse(R"({"phase":"Available"})"));
    EXPECT_EQ(j.at("spec"), nlohmann::json::parse(R"({"ttl":"5m"})"));
  }
  EXPECT_TRUE(found) << jout;
  auto [r1, o1] = run_colony({"replay", "--log", log, "--until", "315", "--digest"});
  auto [r2, o2] = run_colony({"replay", "--log", log, "--until", "316", "--digest"});
  auto [r3, o3] = run_colony({"replay", "--log", log, "--digest"});
  ASSERT_EQ(r1, 0);
  ASSERT_EQ(r2, 0);
  ASSERT_EQ(r3, 0);
  EXPECT_NE(o1, o2);
  EXPECT_NE(o2, o3);
}

TEST(Cli, NotAColonyLogIsAClearError) {
  temp_dir d;
  std::filesystem::create_directories(d.sub("junk"));
  std::ofstream(d.sub("junk") + "/x") << "x";
  auto [rc, out] = run_colony({"log", "stats", "--log", d.sub("junk")});
  EXPECT_EQ(rc, 3);
  EXPECT_NE(out.find("not a Colony log"), std::string::npos) << out;
  EXPECT_NE(out.find(d.sub("junk")), std::string::npos) << out;
  auto [mrc, mout] = run_colony({"log", "dump", "--log", d.sub("missing")});
  EXPECT_EQ(mrc, 5) << mout;
}

TEST(Cli, BenchListsAndRunsQuickly) {
  auto [rc, out] = run_colony({"bench", "--list"});
  EXPECT_EQ(rc, 0);
  if (COLONY_HAS_BENCH) {
    EXPECT_NE(out.find("log.append"), std::string::npos) << out;
  } else {  // built with COLONY_BUILD_BENCH=OFF: the registry is linked, and empty
    EXPECT_EQ(out.find("log.append"), std::string::npos) << out;
  }
  EXPECT_EQ(run_colony({"bench", "no.such.bench"}).first, 2);
}

}  // namespace
}  // namespace colony::testing
