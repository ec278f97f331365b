// kafka_leader_elector: leader election for a Colony singleton (scheduler, slo-controller) on
// a kafka:// log, with fenced writes. Kubernetes (and so Koordinator, whose koord-scheduler and
// koord-manager run with --leader-elect) does this with a coordination.k8s.io Lease object
// renewed by the holder (client-go tools/leaderelection). Here Kafka's group protocol plays the
// Lease and a transactional producer plays the fence. Design and measured takeover times:
// docs/cluster.md, "Singletons".
//
// Election. Every candidate for singleton NAME of topic T joins consumer group `T.leader.NAME`,
// subscribed to the one-partition control topic `T.leader.NAME` (created if missing; nothing is
// ever written to it). The group protocol assigns partition 0 to at most one member per group
// generation: that member leads. Membership is dynamic (no group.instance.id), so a killed
// leader is replaced once its session times out (session.timeout.ms=6000, the broker's minimum,
// heartbeats every 1 s, as consume_group); a leader that leaves (leave(), destructor) hands over
// at once. Assignment is cooperative-sticky: a candidate joining does not move the lead.
//
// Fencing. A leader that is paused (GC, SIGSTOP, a VM freeze) past its session still believes it
// leads when it wakes; a check of leading() before a write is always racy. So decisions are
// written through a transactional producer with transactional.id `T.leader.NAME`, the same for
// every candidate. On election, before on_elected, the new leader calls init_transactions: the
// transaction coordinator bumps the producer epoch, aborts any transaction the previous leader
// left open and rejects every later request of the previous leader's producer
// (PRODUCER_FENCED). append_fenced() of an old term then fails with failed_precondition
// "fenced by a newer leader of NAME" and the elector steps down. Guarantee: once a newer
// leader's init_transactions returned, no decision of an older term commits; so in the decision
// topic every decision of an older term precedes the newer leader's first decision.
//
// Decisions go to their own topic `T.decisions.NAME` (one partition), not into T: each
// transaction's commit marker takes a Kafka offset, and T's contract is "envelope offset = Kafka
// offset, no gaps" (kafka_log checks both on every read). Decision records are read committed
// (read_decisions); their envelope offset is not a Kafka offset (writers leave it 0).
//
// Thread-safety: poll() and leave() from one thread; append_fenced() may run on another.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "stores/event_log.hpp"

namespace colony::stores {

// One leadership term of a candidate, as on_elected reports it.
struct leader_term {
  std::string name;              // the singleton (scheduler, slo-controller)
  std::string id;                // this candidate (client.id)
  std::string member_id;         // the broker's member id of this candidate in the group
  std::int32_t generation = -1;  // the group generation that made it leader (-1: unknown)
  std::uint64_t term = 0;        // this process's term counter (1, 2, ...)
};

struct leader_options {
  std::string id;                                      // candidate id; Default: "<hostname>-<pid>"
  std::chrono::milliseconds session_timeout{6000};     // Default: 6000 (broker minimum)
  std::chrono::milliseconds heartbeat_interval{1000};  // Default: 1000 (as consume_group)
  std::chrono::milliseconds transaction_timeout{10000};  // Default: 10000: the coordinator
                                                         // aborts a paused leader's open
                                                         // transaction after this long
};

struct leader_callbacks {
  std::function<void(const leader_term&)> on_elected;  // after the fence is up
  // lost=false: handed over cleanly (this candidate left or the group moved the lead; the
  // term's producer is closed first); lost=true: the session expired, a successor may lead
  // already (a decision in flight is left to the fence).
  std::function<void(const leader_term&, bool lost)> on_revoked;
};

class kafka_leader_elector {
 public:
  // Joins the election for `singleton` on the kafka:// log `log_name` (its topic names the
  // control and decision topics; both are created if missing).
  [[nodiscard]] static result<std::unique_ptr<kafka_leader_elector>> open(
      std::string_view log_name, std::string_view singleton, leader_options opts,
      leader_callbacks cbs);
  ~kafka_leader_elector();  // leave()
  kafka_leader_elector(const kafka_leader_elector&) = delete;
  kafka_leader_elector& operator=(const kafka_leader_elector&) = delete;

  // Serves group events (callbacks run inside) for up to `timeout`. Fails if an election
  // could not raise its fence (init_transactions) or the group reports a fatal error.
  [[nodiscard]] result<void> poll(std::chrono::milliseconds timeout);
  // Leaves the group (revokes the lead with lost=false), so a successor is elected at once.
  void leave();

  [[nodiscard]] bool leading() const;
  [[nodiscard]] const std::string& id() const;
  [[nodiscard]] const std::string& control_topic() const;
  [[nodiscard]] const std::string& decision_topic() const;

  // Writes the events to the decision topic in one transaction of term `term`. Fails with
  // failed_precondition when the term is over (revoked cleanly, or fenced by a newer leader:
  // "fenced by a newer leader of NAME"; the elector then steps down), unavailable when the
  // broker did not answer (the transaction is aborted; nothing of it is visible). It does not
  // consult leading(): the fence, not the local belief, decides. Returns the Kafka offset of
  // the first record.
  [[nodiscard]] result<log_offset> append_fenced(std::uint64_t term,
                                                 std::span<const bytes_view> events);

 private:
  struct impl;
  explicit kafka_leader_elector(std::unique_ptr<impl> i);
  std::unique_ptr<impl> impl_;
};

// Reads the committed records of singleton's decision topic, in Kafka offset order, to its
// current end (read_committed: aborted and fenced transactions are skipped; with
// committed_only=false, read_uncommitted: every record stored, aborted ones included).
// Every record is verified (messages::decode). Returns the number of records.
[[nodiscard]] result<std::uint64_t> read_decisions(
    std::string_view log_name, std::string_view singleton, bool committed_only,
    const std::function<void(log_offset kafka_offset, bytes_view record)>& sink);

}  // namespace colony::stores
