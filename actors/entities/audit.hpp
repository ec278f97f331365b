// The control plane's safety invariants, checked over a log: one audit for the sim, the
// cluster tests and anything else that writes a Colony log.
//
// log_audit folds a log's envelopes in offset order (nodes by entities::apply, pods and
// proposals by its own compact book) and checks, at every prefix:
//   - no node is over its Kubernetes allocatable in cpu, memory, pods or GPUs, and no GPU device
//     over its core (these never shrink, so "after every event" is "at every prefix");
//   - no binding takes batch/mid resources beyond the node's batch/mid allocatable at bind time
//     (the slo-controller may lower them later: that is eviction's business, counted only);
//   - no pod is bound twice, and only a submitted, non-terminal pod is bound;
//   - admission (PodMutated, PodRejected) never comes after the pod's end (in Kubernetes the
//     webhooks run inside the create request, before any deletion);
//   - every proposal is answered at most once, by an answer for the same pod naming an earlier
//     PodBindProposed;
//   - every eviction has a reason and a message, and evicts a pod bound to that node;
//   - every causation names an earlier offset, and every decision has one (audit_options);
//   - no batch/mid allocatable is negative;
//   - every WriteFailed names as its cause an earlier decision a sink carries out (PodScheduled,
//     PodUnschedulable, NodeBatchResourceUpdated, PodEvicted);
// and at the end of a log at rest (audit_options::at_rest): every proposal was answered, and
// every pod still pending is explained: its last scheduling outcome is a PodUnschedulable or a
// PodBindRejected, or it was never attempted (no proposal, no PodUnschedulable).
//
// No CAF, no store: feed it envelopes (on_event) or whole records (audit_log).
// Thread-safety: none; one owner.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "actors/entities/entities.hpp"
#include "colony_generated.h"
#include "messages/codec.hpp"

namespace colony::entities {

enum class audit_check : std::uint8_t {
  undecodable,                 // a record failed verification (audit_log only)
  offset_order,                // offsets not strictly increasing
  over_allocatable,            // node allocated cpu/memory/pods/gpu above its allocatable
  gpu_over_device,             // a GPU device's core used above its core
  over_batch_at_bind,          // a binding Colony decided took batch/mid above the node's batch/mid
                               // allocatable (observed bindings are facts, not checked)
  bound_twice,                 // a second PodScheduled for a pod
  bound_not_pending,           // PodScheduled for a pod never submitted, or already terminal
  answered_twice,              // a proposal answered more than once
  answer_without_proposal,     // an answer naming no earlier PodBindProposed of that pod
  unanswered_proposal,         // at rest: a proposal without answer at the end
  eviction_without_reason,     // PodEvicted with reason Unknown or an empty message
  evicted_not_bound,           // PodEvicted of a pod not bound to that node (or evicted twice)
  causation_not_earlier,       // causation >= the event's own offset
  decision_without_causation,  // a decision with causation -1 (audit_options)
  negative_colocation,         // NodeBatchResourceUpdated with a negative batch/mid value
  pending_unexplained,         // at rest: a pod pending at the end with a proposal in flight
  admitted_after_end,          // PodMutated / PodRejected of a pod already finished or removed
  failure_without_decision,    // WriteFailed whose causation names no earlier decision with a write
};
inline constexpr std::size_t audit_check_count = 18;
[[nodiscard]] std::string_view to_string(audit_check c);

// Decisions by payload type (the schema's "Decision" tables): what a policy or an arbitrating
// actor wrote in answer to earlier events, so it must name its cause.
[[nodiscard]] bool is_decision(wire::Payload type);

struct audit_options {
  // Every decision must carry a causation. The sim's own driver writes proposals, unschedulable
  // verdicts, quota statuses and some batch updates without one: audit those with false.
  bool decisions_need_causation = true;
  // The log is complete and quiet: a proposal without answer, or a pending pod whose last
  // attempt is still in flight, is a violation (else only counted).
  bool at_rest = true;
  std::size_t max_violations = 100;  // violations kept with details (all are counted)
};

struct audit_violation {
  audit_check check = audit_check::undecodable;
  std::uint64_t offset = 0;  // the event that broke it; end checks: the proposal / pod's last event
  wire::EntityKind kind = wire::EntityKind::Unknown;  // the entity it concerns
  std::string key;
  std::string message;
};

struct audit_report {
  std::uint64_t events = 0;
  // What the log exercised.
  std::uint64_t proposals = 0, scheduled = 0, unproposed_bindings = 0, bind_rejections = 0,
                pod_stage_rejections = 0, capacity_rejections = 0, unschedulable = 0, evictions = 0,
                batch_updates = 0, decisions = 0, decisions_without_causation = 0;
  // Objects a bridge refused (ObjectRefused) and writes a sink gave up (WriteFailed): counted,
  // not violations (the log says what happened).
  std::uint64_t objects_refused = 0, writes_failed = 0;
  // Recorded objects (ObjectObserved, schema v4): observations no invariant reads yet; counted.
  std::uint64_t objects_observed = 0;
  // NodeBatchResourceUpdated that lowered batch/mid below what is bound there (not a violation).
  std::uint64_t batch_below_allocated = 0;
  // Pods: submitted; bound at least once; pending at the end, by explanation.
  std::uint64_t pods = 0, pods_bound = 0, pending_at_end = 0, pending_unschedulable = 0,
                pending_bind_rejected = 0, pending_not_attempted = 0, pending_in_flight = 0,
                unanswered_proposals = 0;
  std::array<std::uint64_t, audit_check_count> by_check{};
  std::uint64_t violation_count = 0;
  std::vector<audit_violation> violations;  // the first max_violations, in detection order

  [[nodiscard]] bool clean() const { return violation_count == 0; }
  [[nodiscard]] std::uint64_t count(audit_check c) const {
    return by_check[static_cast<std::size_t>(c)];
  }
  // One line per kept violation ("offset N check kind/key: message"), then the counts by check.
  [[nodiscard]] std::string describe() const;
};

class log_audit {
 public:
  explicit log_audit(audit_options opt = {});
  ~log_audit();
  log_audit(const log_audit&) = delete;
  log_audit& operator=(const log_audit&) = delete;
  log_audit(log_audit&&) noexcept;
  log_audit& operator=(log_audit&&) noexcept;

  // One event, in offset order. REQUIRES: env passed messages::decode().
  void on_event(const wire::Envelope& env);
  // A violation found outside the fold (a record that failed to decode).
  void flag(audit_check c, std::uint64_t offset, std::string message);
  // The end-of-log checks, and the report. Call once, after the last event.
  [[nodiscard]] audit_report finish();
  // The fold of a node's events so far; nullptr for a node never named.
  [[nodiscard]] const node_state* node(std::string_view name) const;

 private:
  struct impl;
  std::unique_ptr<impl> d_;
};

// Decodes and audits whole records in order (a record that fails to decode is a violation and
// is skipped).
[[nodiscard]] audit_report audit_log(std::span<const messages::byte_buffer> records,
                                     const audit_options& opt = {});

}  // namespace colony::entities
