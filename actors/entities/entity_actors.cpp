#include "actors/entities/entity_actors.hpp"

#include <algorithm>
#include <cstdlib>
#include <unordered_map>

#include <caf/all.hpp>

namespace colony::entities {
using batch_ptr = std::shared_ptr<const record_batch>;
}

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(colony::entities::batch_ptr)

namespace colony::entities {

namespace {

using apply_atom = caf::atom_constant<caf::atom("apply")>;
using state_atom = caf::atom_constant<caf::atom("state")>;
using batch_atom = caf::atom_constant<caf::atom("batch")>;
using load_atom = caf::atom_constant<caf::atom("load")>;
using collect_atom = caf::atom_constant<caf::atom("collect")>;
using count_atom = caf::atom_constant<caf::atom("count")>;
using stop_atom = caf::atom_constant<caf::atom("stop")>;

template <class State>
struct entity_holder {
  State s;
};

// The entity actor: applies its events, answers its canonical state.
template <class State>
caf::behavior entity_actor(caf::stateful_actor<entity_holder<State>>* self, State initial) {
  self->state.s = std::move(initial);
  return {
      [=](apply_atom, const batch_ptr& b, std::uint32_t i) {
        apply(self->state.s, b->envelope(i));
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
};

caf::actor spawn_entity(caf::stateful_actor<router_state>* self, wire::EntityKind kind,
                        std::string_view state_bytes, bool from_snapshot, std::string* err) {
  auto spawn_with = [&](auto decode, auto empty) -> caf::actor {
    using S = decltype(empty);
    // lazy_init: an entity actor is scheduled on its first message, not at spawn, so creating
    // a million actors does not queue a million start-up jobs.
    if (!from_snapshot) return self->template spawn<caf::lazy_init>(entity_actor<S>, S{});
    auto s = decode(state_bytes);
    if (!s) {
      *err = s.error().message;
      return {};
    }
    return self->template spawn<caf::lazy_init>(entity_actor<S>, std::move(*s));
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

caf::behavior router(caf::stateful_actor<router_state>* self) {
  return {
      [=](batch_atom, const batch_ptr& b) {
        for (std::uint32_t i = 0; i < b->size(); ++i) {
          auto rl = routes(b->envelope(i));
          for (std::uint8_t r = 0; r < rl.size; ++r) {
            auto& m = self->state.maps[static_cast<int>(rl.refs[r].kind)];
            std::string key(rl.refs[r].key);
            auto it = m.find(key);
            if (it == m.end()) {
              std::string err;
              auto a = spawn_entity(self, rl.refs[r].kind, {}, false, &err);
              it = m.emplace(std::move(key), std::move(a)).first;
            }
            self->send(it->second, apply_atom::value, b, i);
          }
        }
      },
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
        std::size_t total = 0;
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
        auto c = self->spawn(collector, std::move(keys), rp);
        std::uint64_t slot = 0;
        for (int k = 0; k < 5; ++k)
          for (const auto& [key, a] : self->state.maps[k])
            self->send(a, collect_atom::value, c, slot++, with_state);
        return rp;
      },
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
  explicit impl(std::size_t threads) : cfg(threads), sys(cfg), self(sys) {
    router_ = sys.spawn(router);
  }
  ~impl() {
    self->request(router_, caf::infinite, stop_atom::value)
        .receive([](bool) {}, [](caf::error&) {});
  }
  host_config cfg;
  caf::actor_system sys;
  caf::scoped_actor self;
  caf::actor router_;
};

actor_host::actor_host(std::size_t threads) : impl_(std::make_unique<impl>(threads)) {}
actor_host::~actor_host() = default;

void actor_host::deliver(std::shared_ptr<const record_batch> batch) {
  impl_->self->send(impl_->router_, batch_atom::value, std::move(batch));
}

void actor_host::load(wire::EntityKind kind, std::string key, std::string state) {
  impl_->self->send(impl_->router_, load_atom::value, static_cast<std::uint8_t>(kind),
                    std::move(key), std::move(state));
}

result<std::vector<encoded_entity>> actor_host::collect() {
  std::vector<std::string> flat;
  std::string err;
  impl_->self->request(impl_->router_, caf::infinite, collect_atom::value, true)
      .receive([&](std::vector<std::string>& v) { flat = std::move(v); },
               [&](caf::error& e) { err = impl_->sys.render(e); });
  if (!err.empty()) return fail(errc::internal, "collecting entity states failed: " + err);
  std::vector<encoded_entity> out;
  out.reserve(flat.size() / 2);
  for (std::size_t i = 0; i + 1 < flat.size(); i += 2)
    out.push_back(encoded_entity{static_cast<wire::EntityKind>(flat[i][0]), flat[i].substr(1),
                                 std::move(flat[i + 1])});
  std::sort(out.begin(), out.end(), [](const encoded_entity& a, const encoded_entity& b) {
    return a.kind != b.kind ? a.kind < b.kind : a.key < b.key;
  });
  return out;
}

result<void> actor_host::sync() {
  std::string err;
  impl_->self->request(impl_->router_, caf::infinite, collect_atom::value, false)
      .receive([&](std::vector<std::string>&) {},
               [&](caf::error& e) { err = impl_->sys.render(e); });
  if (!err.empty()) return fail(errc::internal, "sync failed: " + err);
  return {};
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
