#include "actors/entities/entity_actors.hpp"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <unordered_map>

#include <caf/all.hpp>

#include "actors/entities/binding.hpp"

namespace colony::entities {
using batch_ptr = std::shared_ptr<const record_batch>;
using out_ptr = std::shared_ptr<std::vector<std::vector<std::uint8_t>>>;
}  // namespace colony::entities

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(colony::entities::batch_ptr)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(colony::entities::out_ptr)

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
using component_atom = caf::atom_constant<caf::atom("component")>;

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
      [=](apply_atom, const batch_ptr& b, std::uint32_t i) {
        apply(self->state.s, b->envelope(i));
        if (self->state.ctx->live) after_apply(self, b, i);
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
      // Collection and barriers answer a collector actor directly: the router keeps no
      // per-actor pending request, so a million actors cost a million small messages only.
      [=](collect_atom, const caf::actor& collector, std::uint64_t slot, bool with_state) {
        self->send(collector, slot, with_state ? encode(self->state.s) : std::string{});
      },
  };
}

struct collector_state {
  std::vector<std::string> out;  // (kind byte + key, state) pairs, flattened
  std::size_t pending = 0;
  caf::response_promise rp;
};

// Gathers one answer per entity actor, then delivers them all.
caf::behavior collector(caf::stateful_actor<collector_state>* self, std::vector<std::string> keys,
                        caf::response_promise rp) {
  self->state.pending = keys.size();
  self->state.out.resize(keys.size() * 2);
  for (std::size_t i = 0; i < keys.size(); ++i) self->state.out[i * 2] = std::move(keys[i]);
  self->state.rp = std::move(rp);
  return {
      [=](std::uint64_t slot, std::string& state) {
        self->state.out[slot * 2 + 1] = std::move(state);
        if (--self->state.pending == 0) {
          self->state.rp.deliver(std::move(self->state.out));
          self->quit();
        }
      },
  };
}

struct router_state {
  // One map per kind; key order is restored at collect time.
  std::unordered_map<std::string, caf::actor> maps[5];
  std::vector<caf::actor> components;  // in add order
  host_ctx* ctx = nullptr;
};

// Collect keys of components start with this byte (no entity kind has it); collect() drops them.
constexpr char component_key = '\xff';

caf::actor spawn_entity(caf::stateful_actor<router_state>* self, wire::EntityKind kind,
                        std::string_view state_bytes, bool from_snapshot, std::string* err) {
  host_ctx* ctx = self->state.ctx;
  auto spawn_with = [&](auto decode, auto empty) -> caf::actor {
    using S = decltype(empty);
    // lazy_init: an entity actor is scheduled on its first message, not at spawn, so creating
    // a million actors does not queue a million start-up jobs.
    if (!from_snapshot) return self->template spawn<caf::lazy_init>(entity_actor<S>, S{}, ctx);
    auto s = decode(state_bytes);
    if (!s) {
      *err = s.error().message;
      return {};
    }
    return self->template spawn<caf::lazy_init>(entity_actor<S>, std::move(*s), ctx);
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
    default:
      return {};
  }
}

// An entity's actor, spawned empty on first sight.
const caf::actor& entity_of(caf::stateful_actor<router_state>* self, wire::EntityKind kind,
                            std::string_view k) {
  auto& m = self->state.maps[static_cast<int>(kind)];
  std::string key(k);
  auto it = m.find(key);
  if (it == m.end()) {
    std::string err;
    auto a = spawn_entity(self, kind, {}, false, &err);
    it = m.emplace(std::move(key), std::move(a)).first;
  }
  return it->second;
}

caf::behavior router(caf::stateful_actor<router_state>* self, host_ctx* ctx) {
  self->state.ctx = ctx;
  return {
      [=](batch_atom, const batch_ptr& b) {
        for (std::uint32_t i = 0; i < b->size(); ++i) {
          auto rl = routes(b->envelope(i));
          for (std::uint8_t r = 0; r < rl.size; ++r)
            self->send(entity_of(self, rl.refs[r].kind, rl.refs[r].key), apply_atom::value, b, i);
        }
        for (const auto& c : self->state.components) self->send(c, batch_atom::value, b);
      },
      // A pod actor accepted a proposal: on to the node it names.
      [=](propose_atom, const batch_ptr& b, std::uint32_t i) {
        const auto node = binding::proposed_node(b->envelope(i));
        self->send(entity_of(self, wire::EntityKind::Node, node), propose_atom::value, b, i);
      },
      [=](component_atom, const caf::actor& c) { self->state.components.push_back(c); },
      [=](load_atom, std::uint8_t kind, const std::string& key,
          const std::string& bytes) -> caf::result<bool> {
        std::string err;
        auto k = static_cast<wire::EntityKind>(kind);
        auto a = spawn_entity(self, k, bytes, true, &err);
        if (!a)
          return caf::make_error(caf::sec::invalid_argument, "snapshot entity " + key + ": " + err);
        self->state.maps[kind][key] = std::move(a);
        return true;
      },
      // Entity actors are not linked to the router (a link costs memory per actor), so the
      // router stops them itself; an actor left alive would keep ~actor_system waiting.
      [=](stop_atom) -> bool {
        for (auto& m : self->state.maps) {
          for (auto& [key, a] : m) self->send_exit(a, caf::exit_reason::user_shutdown);
          m.clear();
        }
        for (auto& c : self->state.components) self->send_exit(c, caf::exit_reason::user_shutdown);
        self->state.components.clear();
        self->quit();
        return true;
      },
      [=](count_atom) -> std::uint64_t {
        std::uint64_t n = 0;
        for (const auto& m : self->state.maps) n += m.size();
        return n;
      },
      [=](collect_atom, bool with_state) -> caf::result<std::vector<std::string>> {
        auto rp = self->make_response_promise<std::vector<std::string>>();
        std::size_t total = self->state.components.size();
        for (const auto& m : self->state.maps) total += m.size();
        if (total == 0) {
          rp.deliver(std::vector<std::string>{});
          return rp;
        }
        std::vector<std::string> keys;
        keys.reserve(total);
        for (int k = 0; k < 5; ++k)
          for (const auto& [key, a] : self->state.maps[k])
            keys.push_back(std::string(1, static_cast<char>(k)) + key);
        for (std::size_t i = 0; i < self->state.components.size(); ++i)
          keys.push_back(std::string(1, component_key) + std::to_string(i));
        auto c = self->spawn(collector, std::move(keys), rp);
        std::uint64_t slot = 0;
        for (int k = 0; k < 5; ++k)
          for (const auto& [key, a] : self->state.maps[k])
            self->send(a, collect_atom::value, c, slot++, with_state);
        for (const auto& comp : self->state.components)
          self->send(comp, collect_atom::value, c, slot++, false);
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
      [=](collect_atom, const caf::actor& collector, std::uint64_t slot, bool) {
        self->send(collector, slot, std::string{});
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
  // One collect round over entities and components; the flattened (key, state) answers.
  result<std::vector<std::string>> round(bool with_state) {
    std::vector<std::string> flat;
    std::string err;
    self->request(router_, caf::infinite, collect_atom::value, with_state)
        .receive([&](std::vector<std::string>& v) { flat = std::move(v); },
                 [&](caf::error& e) { err = sys.render(e); });
    if (!err.empty()) return fail(errc::internal, "collecting from actors failed: " + err);
    return flat;
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
  auto a = impl_->sys.spawn(component_actor, component_ref{c}, &impl_->ctx);
  impl_->self->send(impl_->router_, component_atom::value, std::move(a));
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
  auto& flat = *r;
  std::vector<encoded_entity> out;
  out.reserve(flat.size() / 2);
  for (std::size_t i = 0; i + 1 < flat.size(); i += 2) {
    if (flat[i][0] == component_key) continue;
    out.push_back(encoded_entity{static_cast<wire::EntityKind>(flat[i][0]), flat[i].substr(1),
                                 std::move(flat[i + 1])});
  }
  std::sort(out.begin(), out.end(), [](const encoded_entity& a, const encoded_entity& b) {
    return a.kind != b.kind ? a.kind < b.kind : a.key < b.key;
  });
  return out;
}

result<void> actor_host::sync() {
  if (auto r = impl_->round(false); !r)
    return fail(errc::internal, "sync failed: " + r.error().message);
  return impl_->settle();
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
