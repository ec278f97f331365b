#include "actors/entities/step_host.hpp"

#include <algorithm>
#include <utility>

#include <fmt/format.h>

#include "messages/codec.hpp"

namespace colony::entities {

using messages::to_string_view;

namespace {

template <class Slot>
bool wanted(const Slot& s, wire::Payload t) {
  return ((s.wants >> static_cast<std::size_t>(t)) & 1u) != 0;
}

}  // namespace

step_host::step_host(step_host_options opts, step_sink sink)
    : opts_(opts),
      sink_(std::move(sink)),
      pool_(std::max<std::size_t>(1, opts.threads)),
      next_(opts.first_offset) {}

step_host::~step_host() = default;

void step_host::add_component(std::unique_ptr<component> c) { add_slot(std::move(c)); }

void step_host::add_slot(std::unique_ptr<component> c) {
  const std::size_t i = comps_.size();
  slot s;
  s.node_scoped = c->scope() == component_scope::node;
  s.node = std::string(c->scope_node());
  static_assert(static_cast<std::size_t>(wire::Payload::MAX) < 64, "wants mask is 64 bits");
  for (std::size_t t = 0; t <= static_cast<std::size_t>(wire::Payload::MAX); ++t)
    if (c->wants(static_cast<wire::Payload>(t))) s.wants |= 1ull << t;
  s.c = std::move(c);
  comps_.push_back(std::move(s));
  auto& sl = comps_.back();
  if (sl.node_scoped) {
    auto& place = place_of(sl.node);
    place.comps.push_back(i);
    place.seeded = true;
    // Keep node_order_ sorted by (node, index): components of one node in the order added.
    const auto pos = std::upper_bound(node_order_.begin(), node_order_.end(), i,
                                      [&](std::size_t a, std::size_t b) {
                                        const auto& na = comps_[a].node;
                                        const auto& nb = comps_[b].node;
                                        return na != nb ? na < nb : a < b;
                                      });
    const auto at = node_order_.insert(pos, i);
    for (auto k = at; k != node_order_.end(); ++k)
      comps_[*k].rank = static_cast<std::size_t>(k - node_order_.begin());
  } else {
    cluster_order_.push_back(i);
  }
  refresh_wake(i);
}

step_host::node_place& step_host::place_of(std::string_view node) {
  auto it = by_node_.find(node);
  if (it == by_node_.end()) it = by_node_.emplace(std::string(node), node_place{}).first;
  return it->second;
}

void step_host::refresh_wake(std::size_t i) {
  auto& s = comps_[i];
  const auto w = s.c->next_wakeup_ms();
  if (w == s.wake) return;
  if (s.wake) wakeups_.erase({*s.wake, i});
  s.wake = w;
  if (w) wakeups_.insert({*w, i});
}

std::optional<std::int64_t> step_host::next_wakeup_ms() const {
  if (wakeups_.empty()) return std::nullopt;
  return wakeups_.begin()->first;
}

void step_host::number_and_fold(record_batch& round, std::vector<messages::byte_buffer>& answers) {
  record_place_.assign(round.size(), nullptr);
  for (std::size_t i = 0; i < round.size(); ++i) {
    const log_offset off = next_++;
    (void)messages::patch_offset(round.record(i), off);
    const auto& env = round.envelope(i);
    const auto type = env.payload_type();
    if (type == wire::Payload::NodeRegistered && factory_) {
      const auto name = to_string_view(env.payload_as_NodeRegistered()->name());
      auto& place = place_of(name);
      if (!place.seeded) {
        place.seeded = true;
        for (auto& c : factory_(name)) add_slot(std::move(c));
      }
    }
    // An event of one node (a report, a batch-resource update, ...): fold it into the node's
    // state found through its place, which routing then reuses. Anything else: world::apply.
    const auto rl = messages::routes(env);
    if (rl.size == 1 && rl.refs[0].kind == wire::EntityKind::Node) {
      auto& place = place_of(rl.refs[0].key);
      if (place.state == nullptr) place.state = &world_.node(rl.refs[0].key);
      world_.apply_to(*place.state, env);
      record_place_[i] = &place;
    } else {
      world_.apply(env);
    }
    // The binding protocol (binding.hpp), in log order: the pod stage, then the node stage.
    if (type == wire::Payload::PodBindProposed) {
      const auto pod = to_string_view(env.entity_key());
      auto pit = world_.pods.find(pod);
      auto& live = pod_live_[std::string(pod)];
      const pod_state empty_pod;
      const bool arbitrate = off >= opts_.arbitrate_from;
      if (binding::pod_after_apply(pit == world_.pods.end() ? empty_pod : pit->second, live, env,
                                   arbitrate, &answers)) {
        // Forwarded to its node, which arbitrates once it has folded the whole round (as a
        // node actor gets the forwarded proposal after the round's records): answers[k] is a
        // placeholder until then, so answers stay in proposal order.
        forwarded_.emplace_back(answers.size(), &env);
        answers.emplace_back();
      }
      continue;
    }
    if (type == wire::Payload::PodScheduled || type == wire::Payload::PodBindRejected) {
      const auto pod = type == wire::Payload::PodScheduled
                           ? to_string_view(env.payload_as_PodScheduled()->pod())
                           : to_string_view(env.payload_as_PodBindRejected()->pod());
      if (auto it = pod_live_.find(pod); it != pod_live_.end()) {
        auto pit = world_.pods.find(pod);
        if (pit != world_.pods.end())
          (void)binding::pod_after_apply(pit->second, it->second, env, false, nullptr);
        if (it->second.claim < 0) pod_live_.erase(it);
      }
      if (type == wire::Payload::PodScheduled) {
        const auto node = to_string_view(env.payload_as_PodScheduled()->node());
        if (auto it = node_live_.find(node); it != node_live_.end()) {
          binding::node_after_apply(it->second, env);
          if (it->second.reserved.empty()) node_live_.erase(it);
        }
      }
    }
  }
  // The node stage of every proposal its pod accepted, in proposal order.
  for (const auto& [slot_index, env] : forwarded_) {
    const auto node = binding::proposed_node(*env);
    auto nit = world_.nodes.find(node);
    const node_state empty_node;
    auto& nlive = node_live_[std::string(node)];
    answers[slot_index] =
        binding::node_arbitrate(nit == world_.nodes.end() ? empty_node : nit->second, nlive, *env);
    ++stats_.proposals_arbitrated;
  }
  forwarded_.clear();
}

void step_host::deliver_to(std::size_t i, const wire::Envelope& env) {
  auto& s = comps_[i];
  if (!wanted(s, env.payload_type())) return;
  if (s.inbox.empty() && !s.woken) active_.push_back(i);
  s.inbox.push_back(&env);
}

void step_host::to_node(std::string_view node, const wire::Envelope& env) {
  const auto it = by_node_.find(node);
  if (it == by_node_.end()) return;
  for (const std::size_t i : it->second.comps) deliver_to(i, env);
}

void step_host::run_components(const record_batch& round, std::int64_t t, bool first_round) {
  // Wake-ups due now (first round of the instant only).
  if (first_round) {
    while (!wakeups_.empty() && wakeups_.begin()->first <= t) {
      const std::size_t i = wakeups_.begin()->second;
      wakeups_.erase(wakeups_.begin());
      auto& s = comps_[i];
      s.wake.reset();
      s.woken = true;
      if (s.node_scoped) active_.push_back(i);
    }
  }
  // Node-scoped inboxes (node_routing: the rule both hosts follow).
  if (!node_order_.empty()) {
    for (std::size_t r = 0; r < round.size(); ++r) {
      routing_.route(
          round.envelope(r), round.record(r),
          [&](std::string_view node, const wire::Envelope& env, std::span<const std::uint8_t>) {
            // The record's own node, found when it was folded (a re-delivered spec is not it).
            if (const auto* place = record_place_[r];
                place != nullptr && &env == &round.envelope(r)) {
              for (const std::size_t i : place->comps) deliver_to(i, env);
              return;
            }
            to_node(node, env);
          },
          [&](const wire::Envelope& env) {
            for (const std::size_t i : node_order_) deliver_to(i, env);
          });
    }
  }
  // Node-scoped components with work, in parallel; each writes only its own slot.
  std::sort(active_.begin(), active_.end());
  active_.erase(std::unique(active_.begin(), active_.end()), active_.end());
  std::uint64_t delivered = 0, woken = 0;
  for (const std::size_t i : active_) {
    delivered += comps_[i].inbox.size();
    woken += comps_[i].inbox.empty() ? 1 : 0;
  }
  // They start on the workers while this thread runs the cluster-scoped components: the two
  // share nothing but the round's records (read-only), and the merge order does not depend on
  // which finishes first.
  const std::function<void(std::size_t)> step_node = [&](std::size_t k) {
    auto& s = comps_[active_[k]];
    if (s.inbox.empty()) {
      s.c->on_wakeup(t, s.out);
    } else {
      for (const auto* env : s.inbox) s.c->on_event(*env, s.out);
      s.c->on_batch_end(s.out);
    }
  };
  pool_.start(active_.size(), step_node);
  // Cluster-scoped components, one after another, in the order added.
  for (const std::size_t i : cluster_order_) {
    auto& s = comps_[i];
    // A round of wake-ups only (no record) runs just the components that are due.
    if (round.size() == 0 && !s.woken) continue;
    bool any = false;
    for (std::size_t r = 0; r < round.size(); ++r) {
      const auto& env = round.envelope(r);
      if (!wanted(s, env.payload_type())) continue;
      s.c->on_event(env, s.out);
      any = true;
      ++stats_.deliveries;
    }
    if (s.woken && !any) {
      s.c->on_wakeup(t, s.out);
      ++stats_.wakeups;
    } else {
      s.c->on_batch_end(s.out);
    }
    s.woken = false;
    refresh_wake(i);
  }
  pool_.wait();
  stats_.deliveries += delivered;
  stats_.wakeups += woken;
  for (const std::size_t i : active_) {
    auto& s = comps_[i];
    s.inbox.clear();
    s.woken = false;
    refresh_wake(i);
  }
  // The node components that ran, in merge order (node, then order added): only they can have
  // output, and a round usually touches few of thousands.
  std::sort(active_.begin(), active_.end(),
            [&](std::size_t a, std::size_t b) { return comps_[a].rank < comps_[b].rank; });
  ran_.swap(active_);
  active_.clear();
  routing_.end_round();
}

result<void> step_host::run_instant(std::int64_t t_ms) {
  ++stats_.instants;
  // Two batches take turns as this round and the next (their memory stays warm).
  record_batch round = std::move(pending_);
  pending_ = std::move(spare_);
  pending_.clear();
  record_batch following = std::move(spare2_);
  std::vector<messages::byte_buffer>& next = answers_;
  bool first = true;
  for (std::size_t r = 0;; ++r) {
    if (round.size() == 0 && !(first && next_wakeup_ms() && *next_wakeup_ms() <= t_ms)) break;
    if (r >= opts_.max_rounds)
      return fail(errc::internal,
                  fmt::format("instant {} ms did not quiesce after {} rounds (components keep "
                              "answering each other)",
                              t_ms, r),
                  "step_host");
    ++stats_.rounds;
    stats_.max_rounds_per_instant = std::max(stats_.max_rounds_per_instant, r + 1);
    stats_.records += round.size();
    next.clear();
    number_and_fold(round, next);
    if (round.size() > 0 && sink_) {
      if (auto s = sink_(round); !s) return s;
    }
    run_components(round, t_ms, first);
    first = false;
    // The next round: answers, cluster components (order added), node components (by node).
    following.clear();
    for (auto& b : next) following.add(b);
    for (const std::size_t i : cluster_order_) {
      for (auto& b : comps_[i].out) following.add(b);
      comps_[i].out.clear();
    }
    for (const std::size_t i : ran_) {
      for (auto& b : comps_[i].out) following.add(b);
      comps_[i].out.clear();
    }
    ran_.clear();
    std::swap(round, following);
  }
  spare_ = std::move(round);
  spare2_ = std::move(following);
  return {};
}

result<void> step_host::step_record(std::span<const std::uint8_t> record, std::int64_t t_ms,
                                    std::vector<messages::byte_buffer>& out) {
  record_batch one = std::move(spare2_);
  one.clear();
  one.add(record);
  ++stats_.rounds;
  ++stats_.records;
  stats_.max_rounds_per_instant = std::max<std::size_t>(stats_.max_rounds_per_instant, 1);
  answers_.clear();
  number_and_fold(one, answers_);
  if (sink_) {
    if (auto s = sink_(one); !s) return s;
  }
  run_components(one, t_ms, false);
  for (auto& b : answers_) out.push_back(std::move(b));
  answers_.clear();
  for (const std::size_t i : cluster_order_) {
    for (auto& b : comps_[i].out) out.push_back(std::move(b));
    comps_[i].out.clear();
  }
  for (const std::size_t i : ran_) {
    for (auto& b : comps_[i].out) out.push_back(std::move(b));
    comps_[i].out.clear();
  }
  ran_.clear();
  spare2_ = std::move(one);
  return {};
}

}  // namespace colony::entities
