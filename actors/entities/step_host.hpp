// step_host: the deterministic in-process host of the control plane's components (the one
// `colony sim` runs), beside actor_host (the CAF host of a live cluster). Both run the same
// components over the same events; what differs is how they schedule work, never what a
// component sees or decides.
//
// One virtual instant at a time. A source (trace rows, a usage model standing in for each
// node's collectors) hands the instant's observation events to observe(), then run_instant(t)
// runs rounds until the instant is quiet:
//   1. The round's records are numbered (offsets from options.first_offset on, patched into the
//      envelopes) and handed to the sink (the log) in order.
//   2. They are folded into the host's world (entities::world, the same fold as the entity
//      actors), in order. Every PodBindProposed is arbitrated as the node and pod actors do
//      (binding.hpp): first by its pod, at its place in the pod's events (bound at most once,
//      one proposal in flight), then by its node once the node has folded the whole round (as
//      a node actor receives the forwarded proposal after the round's records): it fits the
//      fold plus the binds accepted whose PodScheduled is not folded yet. The answers
//      (PodScheduled / PodBindRejected) are this round's first outputs, in proposal order.
//   3. Each component gets the records it wants and may see (Routing), in log order, then
//      on_batch_end. Cluster-scoped components run one after another in the order they were
//      added; node-scoped ones run in parallel on options.threads, each on its own records.
//      A component whose next_wakeup_ms() has come gets on_wakeup(t) in the instant's first
//      round if it has no record in that round (otherwise on_batch_end is its decision point).
//   4. The round's outputs, merged in a fixed order (arbitration answers; cluster components in
//      the order added; node components by (node name, order added)), each component's own
//      order kept, are the next round. A round with no output ends the instant.
// So the log is byte-identical at any thread count: which thread ran a component never shows.
//
// Routing: a cluster-scoped component gets every record it wants; a node-scoped one the
// records node_routing (component_routing.hpp) sends to its node, the rule actor_host's router
// follows too.
// A component only sees records of payload types it wants().
//
// New nodes: a factory set with on_new_node() is called with a node's name when the host
// numbers the first NodeRegistered of that node, before that round is delivered; the
// components it returns (a koordlet, a node shard of the slo-controller) see that record.
//
// Time is event time: observations of run_instant(t) carry event time t (the source's job), and
// components stamp what they emit with the time of what caused it.
// Thread-safety: one owner thread calls every method; node-scoped components run on the pool's
// threads, one thread per component at a time.
#pragma once

#include <algorithm>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "actors/entities/binding.hpp"
#include "actors/entities/component.hpp"
#include "actors/entities/component_routing.hpp"
#include "actors/entities/entity_actors.hpp"
#include "actors/entities/worker_pool.hpp"
#include "actors/entities/world.hpp"
#include "messages/result.hpp"
#include "messages/string_map.hpp"

namespace colony::entities {

// A component whose work is per node (the slo-controller's noderesource reconciler: one
// reconcile per node key, pkg/slo-controller/noderesource) run as one node's shard: it declares
// node scope, so a host gives it only that node's records and runs the shards in parallel.
// Every shard must be built with the configuration in force (a shard created when its node
// registers has missed earlier ConfigUpdated records).
class node_shard final : public component {
 public:
  node_shard(std::unique_ptr<component> inner, std::string node)
      : inner_(std::move(inner)), node_(std::move(node)) {}
  [[nodiscard]] std::string_view name() const override { return inner_->name(); }
  [[nodiscard]] bool wants(wire::Payload type) const override { return inner_->wants(type); }
  void on_event(const wire::Envelope& env, std::vector<messages::byte_buffer>& out) override {
    inner_->on_event(env, out);
  }
  void on_batch_end(std::vector<messages::byte_buffer>& out) override { inner_->on_batch_end(out); }
  [[nodiscard]] component_scope scope() const override { return component_scope::node; }
  [[nodiscard]] std::string_view scope_node() const override { return node_; }
  [[nodiscard]] std::optional<std::int64_t> next_wakeup_ms() const override {
    return inner_->next_wakeup_ms();
  }
  void on_wakeup(std::int64_t now_ms, std::vector<messages::byte_buffer>& out) override {
    inner_->on_wakeup(now_ms, out);
  }
  [[nodiscard]] component& inner() { return *inner_; }

 private:
  std::unique_ptr<component> inner_;
  std::string node_;
};

struct step_host_options {
  // Threads that run node-scoped components (1 = the caller only). Default: 1.
  std::size_t threads = 1;
  // Offset of the first record numbered (the log's end offset). Default: 0.
  log_offset first_offset = 0;
  // Proposals below this offset are folded but not arbitrated (their answers are already in
  // the log: a restart over an existing log). Default: 0.
  log_offset arbitrate_from = 0;
  // Rounds one instant may take before run_instant fails (components that keep answering each
  // other forever are a bug, not a workload). Default: 10,000.
  std::size_t max_rounds = 10000;
};

// Takes every numbered round, in log order (append it to the log). An error stops the host.
using step_sink = std::function<result<void>(const record_batch& round)>;
// Components for a node seen for the first time.
using node_component_factory =
    std::function<std::vector<std::unique_ptr<component>>(std::string_view node)>;

// kube-scheduler's Parallelizer: calls fn(i) for every i in [0, n) on any threads and returns
// when all calls have returned (framework_options::parallelizer has the same shape).
using parallelizer = std::function<void(std::size_t n, const std::function<void(std::size_t)>& fn)>;

struct step_host_stats {
  std::uint64_t instants = 0, rounds = 0, records = 0;
  std::uint64_t deliveries = 0;  // records handed to a component's on_event
  std::uint64_t wakeups = 0, proposals_arbitrated = 0;
  std::size_t max_rounds_per_instant = 0;
};

class step_host {
 public:
  step_host(step_host_options opts, step_sink sink);
  ~step_host();
  step_host(const step_host&) = delete;
  step_host& operator=(const step_host&) = delete;

  void add_component(std::unique_ptr<component> c);
  void on_new_node(node_component_factory f) { factory_ = std::move(f); }

  // An observation event for the next run_instant (REQUIRES: a verified envelope built by this
  // process; its offset is assigned by the host).
  void observe(std::span<const std::uint8_t> record) { pending_.add(record); }
  // Runs instant t: the observations, then rounds until quiet (see the top of this file).
  [[nodiscard]] result<void> run_instant(std::int64_t t_ms);

  // One record as a batch of its own, as `colony run` delivers every record it reads from the
  // log (run/cluster_run.cpp "Records one at a time"): numbered, handed to the sink, folded,
  // arbitrated and delivered to the components (on_event, then on_batch_end), with no wake-up;
  // what they emit is appended to `out` in the round's merge order (the answer to a proposal,
  // cluster components in the order added, node components by node) and not run: the caller
  // decides when each of those records is stepped, so it can follow the order a log had
  // (colony sim --from-log). REQUIRES: no observe() pending; t_ms, the time of the step, is
  // not before the previous one's.
  [[nodiscard]] result<void> step_record(std::span<const std::uint8_t> record, std::int64_t t_ms,
                                         std::vector<messages::byte_buffer>& out);

  // The earliest wake-up any component asked for; nullopt = none.
  [[nodiscard]] std::optional<std::int64_t> next_wakeup_ms() const;
  // The fold of every record numbered so far.
  [[nodiscard]] const world& state() const { return world_; }
  [[nodiscard]] log_offset next_offset() const { return next_; }
  // Numbers the next record `offset` (not below next_offset()): a replay of a log whose older
  // records were trimmed (stores::event_log::trim) skips the offsets it no longer holds.
  void skip_to(log_offset offset) { next_ = std::max(next_, offset); }
  [[nodiscard]] const step_host_stats& stats() const { return stats_; }
  [[nodiscard]] std::size_t component_count() const { return comps_.size(); }
  // The host's threads for a cluster-scoped component's own fan-out (the scheduler's Filter and
  // Score). Call only from a cluster-scoped component, which runs on the owner thread: a node
  // job in flight is finished first (worker_pool::run). Valid while the host lives.
  [[nodiscard]] parallelizer cluster_parallelizer() {
    return [this](std::size_t n, const std::function<void(std::size_t)>& fn) { pool_.run(n, fn); };
  }

 private:
  struct slot {
    std::unique_ptr<component> c;
    bool node_scoped = false;
    std::string node;
    std::size_t rank = 0;                      // node scope: position in node_order_ (merge order)
    std::uint64_t wants = 0;                   // bit t: wants(Payload t), read once (component.hpp)
    std::vector<const wire::Envelope*> inbox;  // this round's records (node scope)
    std::vector<messages::byte_buffer> out;
    std::optional<std::int64_t> wake;  // as last read from the component
    bool woken = false;                // on_wakeup due in this round
  };

  void add_slot(std::unique_ptr<component> c);
  void number_and_fold(record_batch& round, std::vector<messages::byte_buffer>& answers);
  void deliver_to(std::size_t i, const wire::Envelope& env);  // a node component's inbox
  void to_node(std::string_view node, const wire::Envelope& env);
  void run_components(const record_batch& round, std::int64_t t, bool first_round);
  void refresh_wake(std::size_t i);

  step_host_options opts_;
  step_sink sink_;
  node_component_factory factory_;
  worker_pool pool_;
  world world_;
  record_batch pending_;
  record_batch spare_, spare2_;                 // batches reused by run_instant
  std::vector<messages::byte_buffer> answers_;  // the round's arbitration answers
  log_offset next_ = 0;
  std::vector<slot> comps_;
  std::vector<std::size_t> cluster_order_;  // indices, order added
  std::vector<std::size_t> node_order_;     // indices, by (node, order added)
  // One node's place in the host: its state in world_ and its node-scoped components. Found
  // once per record at fold time; routing a record whose only route is that node reuses it
  // (each node is touched about once a minute, so every lookup by name misses the cache).
  struct node_place {
    node_state* state = nullptr;     // set by the node's first event
    std::vector<std::size_t> comps;  // indices into comps_, order added
    bool seeded = false;             // the node factory ran, or a node component was added directly
  };
  node_place& place_of(std::string_view node);
  string_map<node_place> by_node_;         // lookup only, never iterated for output
  std::vector<node_place*> record_place_;  // per record of the round: its only node, or null
  std::set<std::pair<std::int64_t, std::size_t>> wakeups_;  // (time, component index)
  // Binding protocol state (binding.hpp), per pod and per node.
  string_map<binding::pod_live> pod_live_;
  string_map<binding::node_live> node_live_;
  node_routing routing_;  // which records node-scoped components get (component_routing.hpp)
  std::vector<std::size_t> active_;  // node components with work this round
  std::vector<std::size_t> ran_;     // the ones that ran last, in merge order
  std::vector<std::pair<std::size_t, const wire::Envelope*>> forwarded_;  // (answer slot, proposal)
  step_host_stats stats_;
};

}  // namespace colony::entities
