// The entity actor system: one CAF actor per node, pod, elastic quota and pod migration job,
// each a thin shell over its state struct (entities.hpp), and a router that delivers events
// to entity actors by key and spawns an actor on an entity's first event.
//
// actor_host hides CAF from its users (caf/all.hpp stays in the .cpp). Events arrive in
// record_batches; the router routes each event to the actors routes() names and sends each
// actor ONE message per flush with its records in log order, so every actor applies its events
// in log order (CAF keeps per sender-receiver order). Live mode flushes every batch; replay
// mode holds routed records until there are about eight per actor, so a replayed log costs
// about one message per actor per flush instead of one per event. Every other router message
// (proposal, collect, sync, load, count) flushes first, so holding is never observable.
//
// Live mode (a host constructed with a decision_sink) also runs the binding protocol and
// components:
//   - A PodBindProposed is first arbitrated by its pod actor (is the pod still pending, not
//     bound, with no other proposal in flight?), then by the named node's actor
//     (entities::arbitrate against its fold plus its in-flight reservations). The answer,
//     PodScheduled or PodBindRejected, goes to the sink; docs/architecture.md "Binding".
//   - add_component() runs a component (component.hpp) as one actor that sees every delivered
//     batch; what it emits goes to the sink.
// A host built without a sink folds only (replay): it never arbitrates, so replaying a log
// that already holds the answers reproduces it without emitting anything.
//
// Thread-safety: actor_host's methods are called from one thread; the actors run on the CAF
// scheduler's threads.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "actors/entities/entities.hpp"
#include "messages/aligned.hpp"
#include "messages/result.hpp"
#include "messages/units.hpp"

namespace colony::entities {

class component;  // actors/entities/component.hpp

// Verified records stored back to back, shared (read-only) by every actor they go to. Each
// record starts 8-byte aligned (messages/aligned.hpp: FlatBuffers reads scalars in place), so
// padding may sit between records: use record(i), never the gap to the next start.
struct record_batch {
  std::vector<std::uint8_t> data;
  std::vector<std::uint32_t> starts;  // record i is data[starts[i], ends[i])
  std::vector<std::uint32_t> ends;
  void add(std::span<const std::uint8_t> rec) {
    data.resize(data.size() + messages::padding_after(data.size()));
    starts.push_back(static_cast<std::uint32_t>(data.size()));
    data.insert(data.end(), rec.begin(), rec.end());
    ends.push_back(static_cast<std::uint32_t>(data.size()));
  }
  // Drops the last record (and the padding before it).
  void pop_back() {
    starts.pop_back();
    ends.pop_back();
    data.resize(ends.empty() ? 0 : ends.back());
  }
  void clear() {
    data.clear();
    starts.clear();
    ends.clear();
  }
  [[nodiscard]] std::size_t size() const { return starts.size(); }
  [[nodiscard]] std::span<const std::uint8_t> record(std::size_t i) const {
    return {data.data() + starts[i], ends[i] - starts[i]};
  }
  [[nodiscard]] std::span<std::uint8_t> record(std::size_t i) {
    return {data.data() + starts[i], ends[i] - starts[i]};
  }
  [[nodiscard]] const wire::Envelope& envelope(std::size_t i) const {
    return *wire::GetEnvelope(data.data() + starts[i]);
  }
};

struct encoded_entity {
  wire::EntityKind kind = wire::EntityKind::Unknown;
  std::string key;
  std::string state;
};

// Where decision events go (to be appended to the log). Called by one writer actor on a CAF
// thread, never concurrently with itself; each call carries the events of one actor's step
// (one component batch, one arbitration) in the order that actor emitted them. It must not
// call back into the actor_host. Across actors, call order follows message arrival.
// Each event is one encoded Envelope (a messages::byte_buffer).
using decision_sink = std::function<void(std::vector<std::vector<std::uint8_t>>)>;

class actor_host {
 public:
  // threads: CAF scheduler threads (0 = CAF's default). Replay mode: folds only.
  explicit actor_host(std::size_t threads = 0);
  // Live mode: arbitrates PodBindProposed (pod actor, then node actor) and runs components;
  // decisions go to sink.
  actor_host(std::size_t threads, decision_sink sink);
  ~actor_host();
  actor_host(const actor_host&) = delete;
  actor_host& operator=(const actor_host&) = delete;

  // Sends a batch to the router (asynchronous).
  void deliver(std::shared_ptr<const record_batch> batch);
  // Spawns an entity actor with a state from a snapshot (asynchronous, ordered before later
  // deliveries).
  void load(wire::EntityKind kind, std::string key, std::string state);
  // Live mode: proposals at offsets below `first` are folded but not arbitrated (their answers
  // are already in the log, or they were abandoned by a crash). For a restart: call it with the
  // log's end offset before delivering the history. Default: 0 (arbitrate everything).
  void arbitrate_from(log_offset first);
  // Runs a component as its own actor: it receives every batch delivered after this call,
  // calls on_event for each record whose payload it wants (in log order) and on_batch_end once
  // per batch, and hands its output to the sink. The host owns it until destruction.
  void add_component(std::unique_ptr<component> c);
  // Waits until everything sent before has been applied (and every arbitration and component
  // step it caused has reached the sink), then returns every entity's canonical state in
  // (kind, key) order.
  [[nodiscard]] result<std::vector<encoded_entity>> collect();
  // Waits until every entity actor and component has handled everything sent before, every
  // forwarded proposal has been arbitrated and the sink has been called with every decision
  // so far (a barrier).
  [[nodiscard]] result<void> sync();
  // Event time reached t_ms: every component whose next_wakeup_ms() is due runs on_wakeup
  // (asynchronous, ordered after earlier deliveries; sync() waits for it).
  void wake(std::int64_t t_ms);
  // The earliest wake-up any component asks for (nullopt = none). REQUIRES: called after
  // sync() or collect() with nothing delivered since (the components are idle then).
  [[nodiscard]] std::optional<std::int64_t> next_wakeup_ms() const;
  // Number of entity actors alive.
  [[nodiscard]] result<std::uint64_t> actor_count();

 private:
  void add_component_raw(component* c);  // takes ownership
  struct impl;
  std::unique_ptr<impl> impl_;
};

// Digest of collected states (same definition as world::digest()).
[[nodiscard]] std::uint64_t digest_of(const std::vector<encoded_entity>& states);

}  // namespace colony::entities
