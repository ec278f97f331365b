#include "actors/entities/entity_actors.hpp"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>

#include <caf/all.hpp>

#include "actors/entities/binding.hpp"
#include "actors/entities/component_routing.hpp"

namespace colony::entities {
using batch_ptr = std::shared_ptr<const record_batch>;
using out_ptr = std::shared_ptr<std::vector<std::vector<std::uint8_t>>>;

// One router flush: the events of one or more delivered batches grouped by destination actor.
// Each actor gets one message naming its range of `items`, which lists its records in log
// order; every actor of the flush shares the one delivery.
struct delivery {
  struct item {
    std::uint32_t batch;   // index into batches
    std::uint32_t record;  // record index in that batch
  };
  std::vector<batch_ptr> batches;
  std::vector<item> items;
};
using delivery_ptr = std::shared_ptr<const delivery>;

// One collect round: every entity actor writes its state into its own element (no message
// per actor back to a collector); the last of them to answer tells the collector.
struct collect_job {
  std::vector<encoded_entity> entities;  // (kind, key) order; states filled by the actors
  std::atomic<std::size_t> pending{0};   // actors and components yet to answer
  bool with_state = false;
};
using job_ptr = std::shared_ptr<collect_job>;
}  // namespace colony::entities

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(colony::entities::batch_ptr)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(colony::entities::out_ptr)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(colony::entities::delivery_ptr)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(colony::entities::job_ptr)

namespace colony::entities {

namespace {

using apply_atom = caf::atom_constant<caf::atom("apply")>;
using state_atom = caf::atom_constant<caf::atom("state")>;
using batch_atom = caf::atom_constant<caf::atom("batch")>;
using load_atom = caf::atom_constant<caf::atom("load")>;
using collect_atom = caf::atom_constant<caf::atom("collect")>;
using count_atom = caf::atom_constant<caf::atom("count")>;
using stop_atom = caf::atom_constant<caf::atom("stop")>;
using propose_atom = caf::atom_constant<caf::atom("propose")>;
using emit_atom = caf::atom_constant<caf::atom("emit")>;
using ping_atom = caf::atom_constant<caf::atom("ping")>;
using done_atom = caf::atom_constant<caf::atom("done")>;
using component_atom = caf::atom_constant<caf::atom("component")>;
using wake_atom = caf::atom_constant<caf::atom("wake")>;

// What every actor of one host shares. Owned by actor_host::impl, declared before the actor
// system there, so it outlives every actor.
struct host_ctx {
  bool live = false;
  std::atomic<log_offset> arbitrate_from{0};
  caf::actor router;
  caf::actor writer;
  // Proposals a pod actor forwarded that no node actor has arbitrated yet (sync() waits).
  std::atomic<std::int64_t> in_flight{0};
};

// Live-mode extras of an entity actor, outside the canonical state (so digests and snapshots
// do not see them).
template <class State>
struct live_extra {};
template <>
struct live_extra<node_state> : binding::node_live {};
template <>
struct live_extra<pod_state> : binding::pod_live {};

template <class State>
struct entity_holder {
  State s;
  live_extra<State> x;
  host_ctx* ctx = nullptr;
};

// One event to the writer (a vector, as the sink takes them).
template <class Self>
void emit_one(Self* self, host_ctx* ctx, binding::buffer buf) {
  auto out = std::make_shared<std::vector<binding::buffer>>();
  out->push_back(std::move(buf));
  self->send(ctx->writer, emit_atom::value, std::move(out));
}

// What a live entity does after folding an event: the pod claims (or refuses) proposals and
// drops its claim when the answer comes back; the node drops a reservation once the fold holds
// the bind.
template <class Self>
void after_apply(Self* self, const batch_ptr& b, std::uint32_t i) {
  auto& st = self->state;
  const auto& env = b->envelope(i);
  using State = std::decay_t<decltype(st.s)>;
  if constexpr (std::is_same_v<State, pod_state>) {
    const bool arbitrate = env.offset() >= st.ctx->arbitrate_from.load(std::memory_order_relaxed);
    std::vector<binding::buffer> out;
    if (binding::pod_after_apply(st.s, st.x, env, arbitrate, &out)) {
      st.ctx->in_flight.fetch_add(1, std::memory_order_relaxed);
      self->send(st.ctx->router, propose_atom::value, b, i);
    }
    for (auto& r : out) emit_one(self, st.ctx, std::move(r));
  } else if constexpr (std::is_same_v<State, node_state>) {
    binding::node_after_apply(st.x, env);
  }
}

// The entity actor: applies its events, answers its canonical state.
template <class State>
caf::behavior entity_actor(caf::stateful_actor<entity_holder<State>>* self, State initial,
                           host_ctx* ctx) {
  self->state.s = std::move(initial);
  self->state.ctx = ctx;
  return {
      // Records [begin, end) of a delivery's items, in log order.
      [=](apply_atom, const delivery_ptr& d, std::uint32_t begin, std::uint32_t end) {
        const bool live = self->state.ctx->live;
        for (std::uint32_t k = begin; k < end; ++k) {
          const auto& it = d->items[k];
          const auto& b = d->batches[it.batch];
          apply(self->state.s, b->envelope(it.record));
          if (live) after_apply(self, b, it.record);
        }
      },
      [=](propose_atom, const batch_ptr& b, std::uint32_t i) {
        if constexpr (std::is_same_v<State, node_state>) {
          emit_one(self, self->state.ctx,
                   binding::node_arbitrate(self->state.s, self->state.x, b->envelope(i)));
          self->state.ctx->in_flight.fetch_sub(1, std::memory_order_relaxed);
        } else {
          (void)b;
          (void)i;
          self->state.ctx->in_flight.fetch_sub(1, std::memory_order_relaxed);
        }
      },
      [=](state_atom) -> std::string { return encode(self->state.s); },
      // Collection and barriers: the state goes into the round's job, and the last actor to
      // answer tells the collector, so the router keeps no per-actor pending request and a
      // million actors cost a million small messages only.
      [=](collect_atom, const job_ptr& job, std::uint32_t slot, const caf::actor& collector) {
        if (job->with_state) job->entities[slot].state = encode(self->state.s);
        if (job->pending.fetch_sub(1, std::memory_order_acq_rel) == 1)
          self->send(collector, done_atom::value);
      },
  };
}

// Waits for the last answer of one collect round, then delivers the job.
caf::behavior collector(caf::event_based_actor* self, job_ptr job, caf::response_promise rp) {
  return {
      [=](done_atom) mutable {
        rp.deliver(std::move(job));
        self->quit();
      },
  };
}

// The router's entity index: (kind, key) -> actor slot, open addressing with linear probing.
// Keys live back to back in one arena; each cell carries the hash, the key's place in the arena,
// its length and kind, so a lookup reads one cell and the key's bytes (two cache lines) and
// allocates nothing (keys held as std::string by slot cost four: cell, kind, string, heap
// bytes). The entity lookups were the largest part of the router's per-event cost.
class entity_index {
 public:
  static constexpr std::uint32_t none = ~std::uint32_t{0};
  static std::uint64_t hash(wire::EntityKind kind, std::string_view key) {
    return std::hash<std::string_view>{}(key)*0x9E3779B97F4A7C15ULL +
           static_cast<std::uint64_t>(kind);
  }
  // The slot of (kind, key), or none.
  [[nodiscard]] std::uint32_t find(std::uint64_t h, wire::EntityKind kind,
                                   std::string_view key) const {
    if (cells_.empty()) return none;
    for (std::size_t i = h & mask_;; i = (i + 1) & mask_) {
      const auto& c = cells_[i];
      if (c.slot == none) return none;
      if (c.hash == h && c.kind == kind && c.len == key.size() &&
          std::memcmp(arena_.data() + c.off, key.data(), key.size()) == 0)
        return c.slot;
    }
  }
  // REQUIRES: (kind, key) is not in the index.
  void insert(std::uint64_t h, wire::EntityKind kind, std::string_view key, std::uint32_t slot) {
    if ((size_ + 1) * 2 > cells_.size()) grow();
    const cell c{h, arena_.size(), slot, static_cast<std::uint32_t>(key.size()), kind};
    arena_.insert(arena_.end(), key.begin(), key.end());
    place(c);
    by_slot_.push_back(c);
    ++size_;
  }
  [[nodiscard]] std::string_view key(std::uint32_t slot) const {
    const auto& c = by_slot_[slot];
    return {arena_.data() + c.off, c.len};
  }
  [[nodiscard]] wire::EntityKind kind(std::uint32_t slot) const { return by_slot_[slot].kind; }

 private:
  struct cell {
    std::uint64_t hash = 0;
    std::uint64_t off = 0;  // key bytes: arena_[off, off + len)
    std::uint32_t slot = none;
    std::uint32_t len = 0;
    wire::EntityKind kind = wire::EntityKind::Unknown;
  };
  void place(const cell& c) {
    std::size_t i = c.hash & mask_;
    while (cells_[i].slot != none) i = (i + 1) & mask_;
    cells_[i] = c;
  }
  void grow() {
    cells_.assign(std::max<std::size_t>(1024, cells_.size() * 2), cell{});
    mask_ = cells_.size() - 1;
    for (const auto& c : by_slot_) place(c);
  }
  std::vector<cell> cells_;
  std::vector<cell> by_slot_;  // the same cells, by slot (keys and kinds for collect)
  std::vector<char> arena_;
  std::size_t mask_ = 0;
  std::size_t size_ = 0;
};

struct router_state {
  // Every entity actor by slot, with its kind and key; collect answers in (kind, key) order.
  entity_index index;
  std::vector<caf::actor> actors;
  std::vector<caf::actor> components;  // every component, in add order (barriers, wake, stop)
  std::vector<caf::actor> cluster_components;  // get every batch
  // Node-scoped components by node; they get what node_routing sends to their node
  // (component_routing.hpp), as in step_host.
  std::unordered_map<std::string, std::vector<std::uint32_t>> node_components;  // -> index
  std::vector<caf::actor> node_actors;                                          // by index
  node_routing routing;
  host_ctx* ctx = nullptr;
  // Routed but not yet sent: (slot, batch, record) in log order, and the batches they name.
  struct pending_item {
    std::uint32_t slot;
    delivery::item at;
  };
  std::vector<pending_item> pending;
  std::vector<batch_ptr> pending_batches;
  std::vector<std::uint32_t> counts;   // by slot; all zero between flushes
  std::vector<std::uint32_t> touched;  // slots with pending records, in first-touch order
};

// Replay mode holds routed records until there are about eight per entity actor (at least
// min_pending, at most max_pending), then sends each actor its share in one message. A flush
// costs one message per actor it touches (~1 us of CAF scheduling each here), and in a replayed
// log nearly every actor has records in any long window; so the count of flushes, not of
// records, sets the message cost. Flushing whenever the mailbox ran dry, as before, made that
// count depend on whether the router happened to keep up with the reader: 110k to 850k messages
// for the same 1M-event replay, and 0.65M-1.3M events/s from run to run. Nothing observes a
// replay-mode actor between barriers, and every barrier (collect, sync, count, load) flushes.
constexpr std::size_t min_pending = std::size_t{1} << 16;
constexpr std::size_t max_pending = std::size_t{1} << 20;
constexpr std::size_t pending_per_actor = 8;
std::size_t replay_flush_at(std::size_t actors) {
  return std::clamp(actors * pending_per_actor, min_pending, max_pending);
}

caf::actor spawn_entity(caf::stateful_actor<router_state>* self, wire::EntityKind kind,
                        std::string_view state_bytes, bool from_snapshot, std::string* err) {
  host_ctx* ctx = self->state.ctx;
  auto spawn_with = [&](auto decode, auto empty) -> caf::actor {
    using S = decltype(empty);
    // lazy_init: an entity actor is scheduled on its first message, not at spawn, so creating
    // a million actors does not queue a million start-up jobs. hidden: ~actor_system does not
    // wait for it; it is destroyed when the router drops the last handle (and it has handled
    // what is in its mailbox), with no exit message per actor.
    constexpr auto opts = caf::lazy_init + caf::hidden;
    if (!from_snapshot) return self->template spawn<opts>(entity_actor<S>, S{}, ctx);
    auto s = decode(state_bytes);
    if (!s) {
      *err = s.error().message;
      return {};
    }
    return self->template spawn<opts>(entity_actor<S>, std::move(*s), ctx);
  };
  switch (kind) {
    case wire::EntityKind::Node:
      return spawn_with(decode_node, node_state{});
    case wire::EntityKind::Pod:
      return spawn_with(decode_pod, pod_state{});
    case wire::EntityKind::ElasticQuota:
      return spawn_with(decode_quota, quota_state{});
    case wire::EntityKind::PodMigrationJob:
      return spawn_with(decode_job, job_state{});
    case wire::EntityKind::Object:
      return spawn_with(decode_object, object_state{});
    case wire::EntityKind::Reservation:
      return spawn_with(decode_reservation, reservation_state{});
    default:
      return {};
  }
}

std::uint32_t add_entity(router_state& st, std::uint64_t h, wire::EntityKind kind,
                         std::string_view key, caf::actor a) {
  const auto slot = static_cast<std::uint32_t>(st.actors.size());
  st.actors.push_back(std::move(a));
  st.counts.push_back(0);
  st.index.insert(h, kind, key, slot);
  return slot;
}

// An entity's actor slot, spawned empty on first sight.
std::uint32_t entity_of(caf::stateful_actor<router_state>* self, wire::EntityKind kind,
                        std::string_view key) {
  auto& st = self->state;
  const auto h = entity_index::hash(kind, key);
  if (auto slot = st.index.find(h, kind, key); slot != entity_index::none) return slot;
  std::string err;
  return add_entity(st, h, kind, key, spawn_entity(self, kind, {}, false, &err));
}

// Sends the pending records: one message per destination actor with its records in log order
// (a stable counting sort by slot), so per-actor log order is kept.
void flush(caf::stateful_actor<router_state>* self) {
  auto& st = self->state;
  if (st.pending.empty()) return;
  auto d = std::make_shared<delivery>();
  d->batches = std::move(st.pending_batches);
  st.pending_batches.clear();
  for (const auto& p : st.pending)
    if (st.counts[p.slot]++ == 0) st.touched.push_back(p.slot);
  std::uint32_t pos = 0;
  for (auto slot : st.touched) {
    const auto c = st.counts[slot];
    st.counts[slot] = pos;
    pos += c;
  }
  d->items.resize(st.pending.size());
  for (const auto& p : st.pending) d->items[st.counts[p.slot]++] = p.at;
  const delivery_ptr shared = std::move(d);
  std::uint32_t begin = 0;
  for (auto slot : st.touched) {
    const auto end = st.counts[slot];
    self->send(st.actors[slot], apply_atom::value, shared, begin, end);
    begin = end;
    st.counts[slot] = 0;
  }
  st.touched.clear();
  st.pending.clear();
}

// A batch's records for each node-scoped component (node_routing), one message per component
// that got any, in log order.
void route_to_nodes(router_state& st, caf::event_based_actor* self, const batch_ptr& b) {
  std::vector<std::shared_ptr<record_batch>> per(st.node_actors.size());
  std::vector<std::uint32_t> touched;
  auto give = [&](std::uint32_t i, std::span<const std::uint8_t> bytes) {
    if (!per[i]) {
      per[i] = std::make_shared<record_batch>();
      touched.push_back(i);
    }
    per[i]->add(bytes);
  };
  for (std::uint32_t r = 0; r < b->size(); ++r) {
    st.routing.route(
        b->envelope(r), b->record(r),
        [&](std::string_view node, const wire::Envelope&, std::span<const std::uint8_t> bytes) {
          const auto it = st.node_components.find(std::string(node));
          if (it == st.node_components.end()) return;
          for (const auto i : it->second) give(i, bytes);
        },
        [&](const wire::Envelope&) {
          for (std::uint32_t i = 0; i < st.node_actors.size(); ++i) give(i, b->record(r));
        });
  }
  st.routing.end_round();
  for (const auto i : touched)
    self->send(st.node_actors[i], batch_atom::value, batch_ptr(std::move(per[i])));
}

caf::behavior router(caf::stateful_actor<router_state>* self, host_ctx* ctx) {
  self->state.ctx = ctx;
  return {
      // Every other handler flushes first, so whatever reaches an actor after this batch (a
      // forwarded proposal, a collect) finds the batch's records already in its mailbox.
      [=](batch_atom, const batch_ptr& b) {
        auto& st = self->state;
        const auto bi = static_cast<std::uint32_t>(st.pending_batches.size());
        st.pending_batches.push_back(b);
        for (std::uint32_t i = 0; i < b->size(); ++i) {
          auto rl = routes(b->envelope(i));
          for (std::uint8_t r = 0; r < rl.size; ++r)
            st.pending.push_back({entity_of(self, rl.refs[r].kind, rl.refs[r].key), {bi, i}});
        }
        for (const auto& c : st.cluster_components) self->send(c, batch_atom::value, b);
        if (!st.node_actors.empty()) route_to_nodes(st, self, b);
        // Live mode sends every batch at once (arbitration waits on it); replay holds records
        // until there are enough per actor (replay_flush_at).
        if (st.ctx->live || st.pending.size() >= replay_flush_at(st.actors.size())) flush(self);
      },
      // A pod actor accepted a proposal: on to the node it names.
      [=](propose_atom, const batch_ptr& b, std::uint32_t i) {
        flush(self);
        const auto node = binding::proposed_node(b->envelope(i));
        self->send(self->state.actors[entity_of(self, wire::EntityKind::Node, node)],
                   propose_atom::value, b, i);
      },
      [=](component_atom, const caf::actor& c, const std::string& node) {
        flush(self);
        auto& st = self->state;
        st.components.push_back(c);
        if (node.empty()) {
          st.cluster_components.push_back(c);
        } else {
          st.node_components[node].push_back(static_cast<std::uint32_t>(st.node_actors.size()));
          st.node_actors.push_back(c);
        }
      },
      // Event time reached t: every component whose wake-up is due runs on_wakeup.
      [=](wake_atom, std::int64_t t) {
        flush(self);
        for (const auto& c : self->state.components) self->send(c, wake_atom::value, t);
      },
      [=](load_atom, std::uint8_t kind, const std::string& key,
          const std::string& bytes) -> caf::result<bool> {
        flush(self);
        std::string err;
        auto k = static_cast<wire::EntityKind>(kind);
        auto a = spawn_entity(self, k, bytes, true, &err);
        if (!a)
          return caf::make_error(caf::sec::invalid_argument, "snapshot entity " + key + ": " + err);
        auto& st = self->state;
        const auto h = entity_index::hash(k, key);
        if (auto slot = st.index.find(h, k, key); slot != entity_index::none)
          st.actors[slot] = std::move(a);
        else
          add_entity(st, h, k, key, std::move(a));
        return true;
      },
      // Entity actors are hidden and referenced by the router only (not linked: a link costs
      // memory per actor), so dropping the handles destroys them, each once its mailbox is
      // empty; exit messages would schedule every actor once more.
      [=](stop_atom) -> bool {
        auto& st = self->state;
        st.pending.clear();
        st.pending_batches.clear();
        st.actors.clear();
        for (auto& c : self->state.components) self->send_exit(c, caf::exit_reason::user_shutdown);
        self->state.components.clear();
        self->quit();
        return true;
      },
      [=](count_atom) -> std::uint64_t {
        flush(self);
        return static_cast<std::uint64_t>(self->state.actors.size());
      },
      [=](collect_atom, bool with_state) -> caf::result<job_ptr> {
        flush(self);
        auto rp = self->make_response_promise<job_ptr>();
        auto& st = self->state;
        auto job = std::make_shared<collect_job>();
        job->with_state = with_state;
        const std::size_t total = st.components.size() + st.actors.size();
        if (total == 0) {
          rp.deliver(std::move(job));
          return rp;
        }
        job->pending.store(total, std::memory_order_relaxed);
        // Asked in (kind, key) order, so the answers land sorted; a barrier needs no order.
        std::vector<std::uint32_t> order(st.actors.size());
        for (std::uint32_t i = 0; i < order.size(); ++i) order[i] = i;
        if (with_state) {
          const auto& ix = st.index;
          std::sort(order.begin(), order.end(), [&](std::uint32_t a, std::uint32_t b) {
            return ix.kind(a) != ix.kind(b) ? ix.kind(a) < ix.kind(b) : ix.key(a) < ix.key(b);
          });
          job->entities.resize(order.size());
          for (std::size_t i = 0; i < order.size(); ++i) {
            job->entities[i].kind = ix.kind(order[i]);
            job->entities[i].key = ix.key(order[i]);
          }
        }
        auto c = self->spawn(collector, job, rp);
        for (std::uint32_t i = 0; i < order.size(); ++i)
          self->send(st.actors[order[i]], collect_atom::value, job, i, c);
        for (const auto& comp : st.components) self->send(comp, collect_atom::value, job, 0u, c);
        return rp;
      },
  };
}

// A component's actor: every delivered batch, in delivery order (one sender, the router).
struct component_holder {
  std::vector<binding::buffer> out;
};

// Wrapped: CAF's spawn inspects raw pointer arguments, which needs a complete type.
struct component_ref {
  component* c = nullptr;
};

caf::behavior component_actor(caf::stateful_actor<component_holder>* self, component_ref ref,
                              host_ctx* ctx) {
  component* comp = ref.c;
  return {
      [=](batch_atom, const batch_ptr& b) {
        auto& out = self->state.out;
        binding::run_component(*comp, *b, out);
        if (out.empty()) return;
        auto v = std::make_shared<std::vector<binding::buffer>>(std::move(out));
        out.clear();
        self->send(ctx->writer, emit_atom::value, std::move(v));
      },
      [=](wake_atom, std::int64_t t) {
        auto& out = self->state.out;
        binding::wake_component(*comp, t, out);
        if (out.empty()) return;
        auto v = std::make_shared<std::vector<binding::buffer>>(std::move(out));
        out.clear();
        self->send(ctx->writer, emit_atom::value, std::move(v));
      },
      [=](collect_atom, const job_ptr& job, std::uint32_t, const caf::actor& collector) {
        if (job->pending.fetch_sub(1, std::memory_order_acq_rel) == 1)
          self->send(collector, done_atom::value);
      },
  };
}

// The one caller of the sink, so the sink is never called concurrently.
caf::behavior writer_actor(caf::event_based_actor*, const decision_sink& sink) {
  return {
      [=](emit_atom, const out_ptr& v) {
        if (sink) sink(std::move(*v));
      },
      [=](ping_atom) -> bool { return true; },
  };
}

}  // namespace

struct host_config : caf::actor_system_config {
  explicit host_config(std::size_t threads) {
    if (threads > 0) set("scheduler.max-threads", threads);
    // COLONY_ACTOR_POLICY=sharing|stealing (default sharing). Measured on the 2-core dev box
    // under load: replay into actors ran at 46k events/s with "sharing" and 1.5k with CAF's
    // default "stealing", whose queues spin and yield when workers outnumber free cores.
    const char* env = std::getenv("COLONY_ACTOR_POLICY");
    const std::string policy = env != nullptr ? env : "sharing";
    set("scheduler.policy", caf::atom_from_string(caf::string_view(policy.data(), policy.size())));
  }
};

struct actor_host::impl {
  impl(std::size_t threads, decision_sink sink, bool live) : cfg(threads), sys(cfg), self(sys) {
    ctx.live = live;
    ctx.writer = sys.spawn(writer_actor, std::move(sink));
    ctx.router = sys.spawn(router, &ctx);
    router_ = ctx.router;
  }
  ~impl() {
    self->request(router_, caf::infinite, stop_atom::value)
        .receive([](bool) {}, [](caf::error&) {});
    self->send_exit(ctx.writer, caf::exit_reason::user_shutdown);
    ctx.writer = nullptr;
    ctx.router = nullptr;
    router_ = nullptr;
  }
  // One collect round over entities and components; with_state: every entity's state.
  result<job_ptr> round(bool with_state) {
    job_ptr job;
    std::string err;
    self->request(router_, caf::infinite, collect_atom::value, with_state)
        .receive([&](job_ptr& j) { job = std::move(j); },
                 [&](caf::error& e) { err = sys.render(e); });
    if (!err.empty()) return fail(errc::internal, "collecting from actors failed: " + err);
    return job;
  }
  // After a first round: forwarded proposals sent before it are in the router's mailbox, so
  // each further round drains them; then the writer has every decision.
  result<void> settle() {
    while (ctx.in_flight.load(std::memory_order_relaxed) > 0) {
      auto r = round(false);
      if (!r) return tl::unexpected(r.error());
    }
    std::string err;
    self->request(ctx.writer, caf::infinite, ping_atom::value)
        .receive([](bool) {}, [&](caf::error& e) { err = sys.render(e); });
    if (!err.empty()) return fail(errc::internal, "sync with the decision writer failed: " + err);
    return {};
  }
  // Declared first: outlives the actor system (actors hold a pointer to it), and the
  // components outlive their actors.
  host_ctx ctx;
  std::vector<std::unique_ptr<component, void (*)(component*)>> components;
  host_config cfg;
  caf::actor_system sys;
  caf::scoped_actor self;
  caf::actor router_;
};

actor_host::actor_host(std::size_t threads)
    : impl_(std::make_unique<impl>(threads, decision_sink{}, false)) {}
actor_host::actor_host(std::size_t threads, decision_sink sink)
    : impl_(std::make_unique<impl>(threads, std::move(sink), true)) {}
actor_host::~actor_host() = default;

void actor_host::arbitrate_from(log_offset first) {
  // Ordered before later deliveries: the pod actors read it when they handle them.
  impl_->ctx.arbitrate_from.store(first, std::memory_order_relaxed);
}

// actor_host::add_component is in binding.cpp (it needs component.hpp).
void actor_host::add_component_raw(component* c) {
  impl_->components.emplace_back(c, &binding::delete_component);
  const std::string node = binding::component_node(*c).value_or(std::string{});
  auto a = impl_->sys.spawn(component_actor, component_ref{c}, &impl_->ctx);
  impl_->self->send(impl_->router_, component_atom::value, std::move(a), node);
}

void actor_host::deliver(std::shared_ptr<const record_batch> batch) {
  impl_->self->send(impl_->router_, batch_atom::value, std::move(batch));
}

void actor_host::load(wire::EntityKind kind, std::string key, std::string state) {
  impl_->self->send(impl_->router_, load_atom::value, static_cast<std::uint8_t>(kind),
                    std::move(key), std::move(state));
}

result<std::vector<encoded_entity>> actor_host::collect() {
  auto r = impl_->round(true);
  if (!r) return fail(errc::internal, "collecting entity states failed: " + r.error().message);
  // Arbitration never changes a fold, so the states are final; settle() only lets the
  // decisions caused so far reach the sink.
  if (auto s = impl_->settle(); !s) return tl::unexpected(s.error());
  // The router asked in (kind, key) order; each actor filled its own element.
  return std::move((*r)->entities);
}

result<void> actor_host::sync() {
  if (auto r = impl_->round(false); !r)
    return fail(errc::internal, "sync failed: " + r.error().message);
  return impl_->settle();
}

void actor_host::wake(std::int64_t t_ms) {
  impl_->self->send(impl_->router_, wake_atom::value, t_ms);
}

std::optional<std::int64_t> actor_host::next_wakeup_ms() const {
  std::optional<std::int64_t> best;
  for (const auto& c : impl_->components) {
    const auto w = binding::component_wakeup(*c);
    if (w && (!best || *w < *best)) best = w;
  }
  return best;
}

result<std::uint64_t> actor_host::actor_count() {
  std::uint64_t n = 0;
  std::string err;
  impl_->self->request(impl_->router_, caf::infinite, count_atom::value)
      .receive([&](std::uint64_t v) { n = v; }, [&](caf::error& e) { err = impl_->sys.render(e); });
  if (!err.empty()) return fail(errc::internal, err);
  return n;
}

std::uint64_t digest_of(const std::vector<encoded_entity>& states) {
  digest_builder d;
  for (const auto& e : states) d.add(e.kind, e.key, e.state);
  return d.finish();
}

}  // namespace colony::entities
