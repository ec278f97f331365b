// The scheduling queue: kube-scheduler's PriorityQueue (activeQ, backoffQ, unschedulable
// pods) with event time as an argument and a total, deterministic order.
//
// Semantics (k8s pkg/scheduler/internal/queue/scheduling_queue.go):
//   - add: PreEnqueue gate; passing pods go to activeQ, gated pods wait among the
//     unschedulable pods until an event or a group member's arrival re-checks them.
//   - pop: the head of activeQ (priority desc, then enqueue time, then gang group key, then pod
//     key); attempts + 1; the pod's scheduling cycle is recorded.
//   - requeue after a failed cycle: to backoffQ if a move request (cluster event) happened
//     during its cycle or the failure was an error, else to the unschedulable pods.
//   - backoff: initial 1 s doubling per attempt up to 10 s (calculateBackoffDuration).
//   - flush: backoffQ pods whose backoff ended -> activeQ; unschedulable pods that have waited
//     longer than unschedulable_timeout (kube: podMaxInUnschedulablePodsDuration) -> activeQ or
//     backoffQ (flushUnschedulablePodsLeftover, a wildcard event: hints are not asked); both
//     run at pop() with the event time, where kube runs them every 1 s / 30 s.
//   - move_all_to_active_or_backoff(now): a wildcard cluster event, every unschedulable pod
//     moves (gated pods only if their gate now passes). This is also what every event does
//     without a queueing_hint (kube with the SchedulerQueueingHints gate off).
//   - move_all_to_active_or_backoff(now, events): QueueingHints (kube >= 1.32 by default;
//     scheduling_queue.go MoveAllToActiveOrBackoffQueue -> movePodsToActiveOrBackoffQueue ->
//     isPodWorthRequeuing; QueueingHint in pkg/scheduler/framework/types.go): an unschedulable
//     pod moves (to backoffQ while backing off, else activeQ) when one event is worth it:
//       * a wildcard event, or a pod without unschedulable_plugins (an error, a refusal kube
//         records no rejector for): always, as kube's "no failed plugins" rule;
//       * a pod whose last cycle was not a FitError (rejected at PreFilter, Reserve, Permit):
//         always (Colony: its rejector is not node-local, and its plugins give no hint);
//       * else the queueing_hint callback decides (skip = stays unschedulable).
//     kube asks each rejecting plugin's QueueingHintFn for the event; Colony asks one callback
//     (the scheduler component passes framework::filter_hint, the node-local conjunction of
//     the Filter plugins' hints: the pod is retried only when the changed node could now pass
//     every Filter). Pods that stay keep their place and their unschedulable_since.
//     Unschedulable pods are visited in key order and events in the order given, so the
//     result is deterministic. A hinted move still counts as a move request for pods in flight
//     (they go to backoffQ on requeue), kube's conservative pre-hint rule: Colony's callers run
//     no cycle while events arrive, so it never changes a result there.
//   - gang members are released together: when one member of a gang group moves to activeQ,
//     every other member waiting in backoffQ or among the unschedulable pods moves with it,
//     with one shared enqueue time so they pop consecutively.
//
// Thread-safety: none (one owner, the scheduler actor).
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <vector>

#include "actors/scheduler/framework.hpp"

namespace colony::scheduler {

struct queued_pod;
// kube's QueueingHintFn, for the pods the queue asks about (see the header).
using queueing_hint_fn = std::function<queueing_hint(const queued_pod&, const cluster_event&)>;

struct queue_options {
  // Default: 1 s (KubeSchedulerConfiguration podInitialBackoffSeconds).
  duration_ms initial_backoff{1000};
  // Default: 10 s (podMaxBackoffSeconds).
  duration_ms max_backoff{10000};
  // podMaxInUnschedulablePodsDuration: unschedulable pods are flushed after this long; 0 =
  // never (they move only on events). Default: 60 s (kube's older unschedulableQTimeInterval;
  // kube 1.34's default is 5 min, DefaultPodMaxInUnschedulablePodsDuration, which the
  // scheduler component uses).
  duration_ms unschedulable_timeout{60000};
  // QueueingHint for node events (see the header): may the event make the rejected pod
  // schedulable? Empty = every event moves every unschedulable pod. Default: empty.
  queueing_hint_fn hint;
  // PreEnqueue gate (framework::run_pre_enqueue); empty = always pass.
  std::function<status(const pod_info&, event_time)> pre_enqueue;
  // Gang group key of a pod (Coscheduling gang_group_id_of); empty = not grouped.
  std::function<std::string(const pod_info&)> group_of;
};

struct queued_pod {
  pod_info pod;
  event_time timestamp{0};          // enqueue time used for ordering and backoff
  event_time initial_timestamp{0};  // first enqueue
  event_time unschedulable_since{0};
  std::int32_t attempts = 0;
  std::uint64_t cycle = 0;  // scheduling cycle of the last pop
  std::string group;        // gang group key ("" = none)
  bool gated = false;       // PreEnqueue refused it
  std::string gate_message;
  // kube's QueuedPodInfo.UnschedulablePlugins: the plugins that rejected the pod in its last
  // cycle (sorted, unique; set_rejection fills it). Empty = none recorded: every event moves it.
  std::vector<std::string> unschedulable_plugins;
  // The last cycle failed with kube's FitError: Filter rejected the pod on every node. Only
  // then is the node-local queueing_hint asked.
  bool fit_error = false;
};

// Records a failed cycle's rejectors on the pod before requeue (kube: handleSchedulingFailure
// sets UnschedulablePlugins from the FitError's Diagnosis, or the refusing plugin's name).
void set_rejection(queued_pod& qp, const decision& d);

class scheduling_queue {
 public:
  explicit scheduling_queue(queue_options opts = {}) : opts_(std::move(opts)) {}

  void add(pod_info pod, event_time now);
  // Replaces a queued pod's info; an unschedulable pod moves on (its spec may now fit).
  void update(pod_info pod, event_time now);
  bool remove(std::string_view key);

  // Flushes, then pops the head of activeQ.
  [[nodiscard]] std::optional<queued_pod> pop(event_time now);
  // After a failed cycle (AddUnschedulableIfNotPresent). `error` = the cycle failed with an
  // error rather than Unschedulable (always backoff).
  void requeue(queued_pod qp, event_time now, bool error = false);

  void flush(event_time now);
  void flush_backoff_completed(event_time now);
  void flush_unschedulable_leftover(event_time now);
  // With queueing hints: each unschedulable pod moves if one of the events is worth it for it
  // (see the header). Without a queueing_hint option this is the wildcard move below.
  void move_all_to_active_or_backoff(event_time now, std::span<const cluster_event> events);
  // When flush_unschedulable_leftover will next move a pod (ms of event time: the first time
  // strictly past the oldest unschedulable pod's wait); nullopt = none waiting or no timeout.
  // A host that wakes components when nothing arrives can wake the scheduler then.
  [[nodiscard]] std::optional<std::int64_t> next_unschedulable_flush_ms() const noexcept;
  void move_all_to_active_or_backoff(event_time now);

  [[nodiscard]] duration_ms backoff_duration(std::int32_t attempts) const noexcept;
  // When the first backoffQ pod's backoff ends (ms of event time); nullopt = backoffQ empty.
  // A host wakes the scheduler then (kube's flushBackoffQCompleted runs every second instead).
  [[nodiscard]] std::optional<std::int64_t> next_backoff_expiry_ms() const noexcept {
    if (backoff_.empty()) return std::nullopt;
    return backoff_.begin()->first;
  }
  [[nodiscard]] std::size_t active_size() const noexcept { return active_.size(); }
  [[nodiscard]] std::size_t backoff_size() const noexcept { return backoff_.size(); }
  [[nodiscard]] std::size_t unschedulable_size() const noexcept { return unschedulable_.size(); }
  [[nodiscard]] std::size_t size() const noexcept { return pods_.size(); }
  [[nodiscard]] bool contains(std::string_view key) const { return pods_.find(key) != pods_.end(); }
  // Keys of activeQ in pop order (for inspection and tests).
  [[nodiscard]] std::vector<std::string> active_order() const;
  [[nodiscard]] std::uint64_t scheduling_cycle() const noexcept { return cycle_; }

 private:
  enum class where : std::uint8_t { active, backoff, unschedulable };
  struct entry {
    queued_pod qp;
    where at = where::active;
  };
  struct active_key {
    std::int32_t priority;
    std::int64_t timestamp;
    std::string group_or_key;
    std::string key;
    bool operator<(const active_key& o) const {
      if (priority != o.priority) return priority > o.priority;
      if (timestamp != o.timestamp) return timestamp < o.timestamp;
      if (group_or_key != o.group_or_key) return group_or_key < o.group_or_key;
      return key < o.key;
    }
  };
  using backoff_key = std::pair<std::int64_t, std::string>;  // (backoff expiry, pod key)

  [[nodiscard]] active_key akey(const entry& e) const;
  [[nodiscard]] std::int64_t backoff_expiry(const queued_pod& qp) const noexcept;
  void detach(entry& e);
  void to_active(entry& e);
  void to_backoff(entry& e);
  void to_unschedulable(entry& e, event_time now);
  // Moves e to activeQ (or backoffQ when still backing off and not forced), with its gang group.
  void release(entry& e, event_time now, bool force_active);
  bool gate(entry& e, event_time now);
  [[nodiscard]] bool worth_requeuing(const entry& e, const cluster_event& ev) const;

  queue_options opts_;
  std::map<std::string, entry, std::less<>> pods_;
  std::set<active_key> active_;
  std::set<backoff_key> backoff_;
  std::set<std::string, std::less<>> unschedulable_;
  // The same pods by (unschedulable_since, key): the leftover flush finds the expired ones
  // without visiting the others.
  std::set<std::pair<std::int64_t, std::string>> unschedulable_since_;
  std::uint64_t cycle_ = 0;
  std::uint64_t move_request_cycle_ = 0;
  bool any_move_request_ = false;
};

}  // namespace colony::scheduler
