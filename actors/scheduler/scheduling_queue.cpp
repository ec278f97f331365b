// scheduling_queue.hpp
#include "actors/scheduler/scheduling_queue.hpp"

#include <algorithm>

namespace colony::scheduler {

duration_ms scheduling_queue::backoff_duration(std::int32_t attempts) const noexcept {
  // calculateBackoffDuration: initial, doubled per further attempt, capped at max.
  std::int64_t d = opts_.initial_backoff.value;
  const std::int64_t max = opts_.max_backoff.value;
  for (std::int32_t i = 1; i < attempts; ++i) {
    if (d > max - d) return duration_ms{max};
    d += d;
  }
  return duration_ms{std::min(d, max)};
}

std::int64_t scheduling_queue::backoff_expiry(const queued_pod& qp) const noexcept {
  return qp.timestamp.value + backoff_duration(qp.attempts).value;
}

scheduling_queue::active_key scheduling_queue::akey(const entry& e) const {
  return {e.qp.pod.priority, e.qp.timestamp.value, e.qp.group.empty() ? e.qp.pod.key : e.qp.group,
          e.qp.pod.key};
}

void scheduling_queue::detach(entry& e) {
  switch (e.at) {
    case where::active:
      active_.erase(akey(e));
      break;
    case where::backoff:
      backoff_.erase({backoff_expiry(e.qp), e.qp.pod.key});
      break;
    case where::unschedulable:
      unschedulable_.erase(e.qp.pod.key);
      unschedulable_since_.erase({e.qp.unschedulable_since.value, e.qp.pod.key});
      break;
  }
}

void scheduling_queue::to_active(entry& e) {
  e.at = where::active;
  e.qp.gated = false;
  active_.insert(akey(e));
}

void scheduling_queue::to_backoff(entry& e) {
  e.at = where::backoff;
  backoff_.insert({backoff_expiry(e.qp), e.qp.pod.key});
}

void scheduling_queue::to_unschedulable(entry& e, event_time now) {
  e.at = where::unschedulable;
  e.qp.unschedulable_since = now;
  unschedulable_.insert(e.qp.pod.key);
  unschedulable_since_.insert({now.value, e.qp.pod.key});
}

bool scheduling_queue::gate(entry& e, event_time now) {
  if (!opts_.pre_enqueue) {
    e.qp.gated = false;
    return true;
  }
  auto s = opts_.pre_enqueue(e.qp.pod, now);
  e.qp.gated = !s.ok();
  e.qp.gate_message = s.ok() ? std::string{} : s.message();
  return s.ok();
}

void scheduling_queue::release(entry& e, event_time now, bool force_active) {
  if (e.qp.group.empty()) {
    detach(e);
    if (!force_active && backoff_expiry(e.qp) > now.value)
      to_backoff(e);
    else
      to_active(e);
    return;
  }
  // The whole gang group moves to activeQ together, sharing the earliest enqueue time.
  std::vector<entry*> members;
  for (auto& [k, other] : pods_)
    if (other.qp.group == e.qp.group && (&other == &e || other.at != where::active))
      members.push_back(&other);
  std::int64_t ts = e.qp.timestamp.value;
  for (auto* m : members) ts = std::min(ts, m->qp.timestamp.value);
  for (auto* m : members) {
    detach(*m);
    m->qp.timestamp = event_time{ts};
    to_active(*m);
  }
}

void scheduling_queue::add(pod_info pod, event_time now) {
  if (pods_.find(pod.key) != pods_.end()) {
    update(std::move(pod), now);
    return;
  }
  entry e;
  e.qp.group = opts_.group_of ? opts_.group_of(pod) : std::string{};
  e.qp.pod = std::move(pod);
  e.qp.timestamp = now;
  e.qp.initial_timestamp = now;
  std::string key = e.qp.pod.key;
  auto [it, ok] = pods_.emplace(key, std::move(e));
  (void)ok;
  entry& ref = it->second;
  to_unschedulable(ref, now);
  if (gate(ref, now)) release(ref, now, true);
}

void scheduling_queue::update(pod_info pod, event_time now) {
  auto it = pods_.find(pod.key);
  if (it == pods_.end()) {
    add(std::move(pod), now);
    return;
  }
  entry& e = it->second;
  detach(e);
  e.qp.pod = std::move(pod);
  switch (e.at) {
    case where::active:
      to_active(e);
      break;
    case where::backoff:
      to_backoff(e);
      break;
    case where::unschedulable:
      to_unschedulable(e, e.qp.unschedulable_since);
      if (!e.qp.gated || gate(e, now)) release(e, now, false);
      break;
  }
}

bool scheduling_queue::remove(std::string_view key) {
  auto it = pods_.find(key);
  if (it == pods_.end()) return false;
  detach(it->second);
  pods_.erase(it);
  return true;
}

void scheduling_queue::flush_backoff_completed(event_time now) {
  while (!backoff_.empty() && backoff_.begin()->first <= now.value) {
    auto it = pods_.find(backoff_.begin()->second);
    release(it->second, now, true);
  }
}

std::optional<std::int64_t> scheduling_queue::next_unschedulable_flush_ms() const noexcept {
  if (opts_.unschedulable_timeout.value <= 0 || unschedulable_since_.empty()) return std::nullopt;
  return unschedulable_since_.begin()->first + opts_.unschedulable_timeout.value + 1;
}

void scheduling_queue::flush_unschedulable_leftover(event_time now) {
  if (opts_.unschedulable_timeout.value <= 0) return;  // 0 = never
  // The pods that waited longer than the timeout, visited in key order as before the index.
  std::vector<std::string> keys;
  for (const auto& [since, key] : unschedulable_since_) {
    if (now.value - since <= opts_.unschedulable_timeout.value) break;
    keys.push_back(key);
  }
  if (keys.empty()) return;
  std::sort(keys.begin(), keys.end());
  for (const auto& k : keys) {
    auto it = pods_.find(k);
    if (it == pods_.end() || it->second.at != where::unschedulable) continue;  // moved with a group
    entry& e = it->second;
    if (now.value - e.qp.unschedulable_since.value <= opts_.unschedulable_timeout.value) continue;
    if (e.qp.gated && !gate(e, now)) continue;
    release(e, now, false);
  }
}

void scheduling_queue::flush(event_time now) {
  flush_backoff_completed(now);
  flush_unschedulable_leftover(now);
}

// A wildcard event: every unschedulable pod moves (gated ones if their gate now passes).
void scheduling_queue::move_all_to_active_or_backoff(event_time now) {
  const cluster_event wildcard{cluster_event_type::wildcard, nullptr, 0};
  move_all_to_active_or_backoff(now, std::span<const cluster_event>(&wildcard, 1));
}

bool scheduling_queue::worth_requeuing(const entry& e, const cluster_event& ev) const {
  // isPodWorthRequeuing: wildcard events and pods without rejector plugins always move; Colony
  // asks the node-local hint only about FitErrors (see the header).
  if (!opts_.hint || ev.type == cluster_event_type::wildcard || ev.node == nullptr) return true;
  if (e.qp.unschedulable_plugins.empty() || !e.qp.fit_error) return true;
  return opts_.hint(e.qp, ev) == queueing_hint::queue;
}

void scheduling_queue::move_all_to_active_or_backoff(event_time now,
                                                     std::span<const cluster_event> events) {
  if (events.empty()) return;
  any_move_request_ = true;
  move_request_cycle_ = cycle_;
  std::vector<std::string> keys(unschedulable_.begin(), unschedulable_.end());
  for (const auto& k : keys) {
    auto it = pods_.find(k);
    if (it == pods_.end() || it->second.at != where::unschedulable) continue;
    entry& e = it->second;
    if (e.qp.gated) {
      // A gated pod waits for its gate (PreEnqueue), not for room: re-check the gate as the
      // wildcard move does.
      if (!gate(e, now)) continue;
    } else {
      bool worth = false;
      for (const auto& ev : events) {
        if (worth_requeuing(e, ev)) {
          worth = true;
          break;
        }
      }
      if (!worth) continue;
    }
    release(e, now, false);
  }
}

std::optional<queued_pod> scheduling_queue::pop(event_time now) {
  flush(now);
  if (active_.empty()) return std::nullopt;
  auto it = pods_.find(active_.begin()->key);
  active_.erase(active_.begin());
  queued_pod qp = std::move(it->second.qp);
  pods_.erase(it);
  qp.attempts += 1;
  qp.cycle = ++cycle_;
  return qp;
}

void set_rejection(queued_pod& qp, const decision& d) {
  qp.unschedulable_plugins.clear();
  for (const auto& f : d.failures)
    if (!f.plugin.empty()) qp.unschedulable_plugins.push_back(f.plugin);
  std::sort(qp.unschedulable_plugins.begin(), qp.unschedulable_plugins.end());
  qp.unschedulable_plugins.erase(
      std::unique(qp.unschedulable_plugins.begin(), qp.unschedulable_plugins.end()),
      qp.unschedulable_plugins.end());
  qp.fit_error = d.result == outcome::unschedulable && d.failed_at == ep_filter;
}

void scheduling_queue::requeue(queued_pod qp, event_time now, bool error) {
  std::string key = qp.pod.key;
  if (pods_.find(key) != pods_.end()) return;  // re-added meanwhile: the newer info wins
  qp.timestamp = now;
  qp.gated = false;
  auto [it, ok] = pods_.emplace(key, entry{std::move(qp), where::unschedulable});
  (void)ok;
  entry& e = it->second;
  if (error || (any_move_request_ && move_request_cycle_ >= e.qp.cycle))
    to_backoff(e);
  else
    to_unschedulable(e, now);
}

std::vector<std::string> scheduling_queue::active_order() const {
  std::vector<std::string> out;
  out.reserve(active_.size());
  for (const auto& k : active_) out.push_back(k.key);
  return out;
}

}  // namespace colony::scheduler
