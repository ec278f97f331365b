// colony elect: one candidate for a singleton (scheduler, slo-controller) on a kafka:// log
// (stores/kafka_leader.hpp; docs/cluster.md, "Singletons").
//
//   colony elect --log kafka://HOST:PORT/TOPIC --name NAME [--id ID] [--emit-every-ms N]
//   colony elect --log kafka://HOST:PORT/TOPIC --name NAME --read-decisions [--uncommitted]
//
// Prints one line per transition on stdout, flushed:
//   elect: follower NAME id=ID                    joined (and after every loss of the lead)
//   elect: leader NAME id=ID generation=G term=T  elected; the fence is up
//   elect: decision NAME id=ID generation=G term=T seq=S offset=O append_us=U  (--emit-every-ms)
//   elect: fenced NAME id=ID generation=G term=T: MESSAGE   a newer leader fenced this term
//   elect: left NAME id=ID                        SIGINT/SIGTERM: left the group
// While leader with --emit-every-ms N, it appends a heartbeat decision every N ms through the
// fenced producer: a ConfigUpdated of kind "Lease", name NAME, whose spec is a Kubernetes
// coordination.k8s.io Lease spec (what client-go's leader election renews: holderIdentity,
// leaseDurationSeconds, acquireTime, renewTime) plus "generation", "term" and "seq". A decision
// made as leader is written even if the session was lost meanwhile (once; then the candidate stops
// emitting): the fence, not the local belief, decides whether it lands.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <ctime>
#include <string>

#include <nlohmann/json.hpp>

#include "bridges/kubernetes/kube_time.hpp"
#include "cmd/colony/commands.hpp"
#include "cmd/colony/exit_codes.hpp"
#include "messages/codec.hpp"
#include "stores/kafka_leader.hpp"

namespace colony::cli {

namespace {

struct elect_args {
  std::string log;
  std::string name;
  std::string id;
  std::uint64_t emit_every_ms = 0;  // 0: never
  bool read = false;
  bool uncommitted = false;
};

std::atomic<bool> elect_stop{false};
extern "C" void on_elect_signal(int) { elect_stop = true; }

int report(const error& e) {
  std::fprintf(stderr, "colony: %s\n", e.describe().c_str());
  return exit_code_for(e);
}

void line(const std::string& s) {
  std::printf("%s\n", s.c_str());
  std::fflush(stdout);  // tests and supervisors read transitions line by line
}

// The heartbeat decision: a Lease spec in Kubernetes' shape (coordination.k8s.io/v1:
// holderIdentity, leaseDurationSeconds, acquireTime, renewTime) plus Colony's term facts.
messages::byte_buffer lease_event(messages::event_builder& b, const stores::leader_term& t,
                                  std::uint64_t seq, std::int64_t acquired_ms,
                                  std::int64_t now_ms) {
  nlohmann::json spec{{"holderIdentity", t.id},
                      {"leaseDurationSeconds", 6},  // session.timeout.ms of the group
                      {"acquireTime", kube::micro_time(acquired_ms)},
                      {"renewTime", kube::micro_time(now_ms)},
                      {"generation", t.generation},
                      {"term", t.term},
                      {"seq", seq}};
  auto p = wire::CreateConfigUpdatedDirect(b.fbb(), "Lease", t.name.c_str(), spec.dump().c_str());
  messages::header h;
  h.time = event_time{now_ms};
  h.kind = wire::EntityKind::Cluster;
  h.source = t.name;
  return b.finish(h, p);
}

std::int64_t wall_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

int run_read(const elect_args& a) {
  auto n = stores::read_decisions(a.log, a.name, !a.uncommitted,
                                  [](log_offset, messages::bytes_view rec) {
                                    if (auto j = messages::to_json(rec)) line(*j);
                                  });
  if (!n) return report(n.error());
  return exit_ok;
}

int run_elect(const elect_args& a) {
  if (a.read) return run_read(a);
  struct sigaction sa {};
  sa.sa_handler = on_elect_signal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);

  using clock_type = std::chrono::steady_clock;
  stores::leader_term cur;    // cur.term == 0: no decision to make
  bool last_in_hand = false;  // the session was lost: submit the decision in hand, then stop
  std::uint64_t seq = 0;
  std::int64_t acquired_ms = 0;
  auto due = clock_type::now();
  std::string id = a.id;
  auto tag = [&](const stores::leader_term& t) {
    return a.name + " id=" + t.id + " generation=" + std::to_string(t.generation) +
           " term=" + std::to_string(t.term);
  };
  stores::leader_callbacks cbs;
  cbs.on_elected = [&](const stores::leader_term& t) {
    line("elect: leader " + tag(t));
    cur = t;
    acquired_ms = wall_ms();
    last_in_hand = false;
    seq = 0;
    due = clock_type::now();
  };
  cbs.on_revoked = [&](const stores::leader_term& t, bool lost) {
    line("elect: follower " + a.name + " id=" + t.id + (lost ? " (session lost)" : ""));
    if (lost)
      last_in_hand = true;
    else
      cur = {};
  };
  stores::leader_options opts;
  opts.id = a.id;
  auto el = stores::kafka_leader_elector::open(a.log, a.name, opts, std::move(cbs));
  if (!el) return report(el.error());
  id = (*el)->id();
  line("elect: follower " + a.name + " id=" + id);
  messages::event_builder b;
  int rc = exit_ok;
  while (!elect_stop) {
    if (a.emit_every_ms > 0 && cur.term != 0 && clock_type::now() >= due) {
      auto ev = lease_event(b, cur, seq, acquired_ms, wall_ms());
      const messages::bytes_view one(ev);
      const auto t0 = clock_type::now();
      auto r = (*el)->append_fenced(cur.term, std::span<const messages::bytes_view>(&one, 1));
      if (r) {
        const auto took =
            std::chrono::duration_cast<std::chrono::microseconds>(clock_type::now() - t0).count();
        line("elect: decision " + tag(cur) + " seq=" + std::to_string(seq) +
             " offset=" + std::to_string(*r) + " append_us=" + std::to_string(took));
        ++seq;
      } else if (r.error().code == errc::failed_precondition &&
                 r.error().message.find("fenced") != std::string::npos) {
        line("elect: fenced " + tag(cur) + ": " + r.error().describe());
        cur = {};
      } else if (r.error().code == errc::failed_precondition) {
        cur = {};  // the term ended cleanly
      } else {
        std::fprintf(stderr, "colony: decision not written (retrying): %s\n",
                     r.error().describe().c_str());
      }
      if (last_in_hand) cur = {};
      due += std::chrono::milliseconds(a.emit_every_ms);
      if (due < clock_type::now())
        due = clock_type::now() + std::chrono::milliseconds(a.emit_every_ms);
    }
    auto wait = std::chrono::milliseconds(100);
    if (a.emit_every_ms > 0 && cur.term != 0)
      wait =
          std::clamp(std::chrono::duration_cast<std::chrono::milliseconds>(due - clock_type::now()),
                     std::chrono::milliseconds(1), wait);
    if (auto p = (*el)->poll(wait); !p) {
      rc = report(p.error());
      break;
    }
  }
  (*el)->leave();  // SIGINT/SIGTERM: hand over now, not after the session timeout
  line("elect: left " + a.name + " id=" + id);
  return rc;
}

}  // namespace

void add_elect_command(CLI::App& app) {
  auto a = std::make_shared<elect_args>();
  auto* c = app.add_subcommand(
      "elect",
      "Candidate for a singleton (scheduler, slo-controller): Kafka group leader election with "
      "fenced decisions (docs/cluster.md)");
  c->add_option("--log", a->log, "kafka://host:port/topic")->required();
  c->add_option("--name", a->name, "Singleton name (scheduler, slo-controller)")->required();
  c->add_option("--id", a->id, "Candidate id (default: hostname-pid)");
  c->add_option("--emit-every-ms", a->emit_every_ms,
                "While leader, append a Lease heartbeat decision every N ms (fenced)");
  c->add_flag("--read-decisions", a->read,
              "Print the committed decisions (JSON lines) of the singleton and exit");
  c->add_flag("--uncommitted", a->uncommitted,
              "With --read-decisions: every stored record, aborted transactions included");
  c->callback([a] { exit_status() = run_elect(*a); });
}

}  // namespace colony::cli
