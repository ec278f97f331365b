#include "actors/descheduler/anomaly_detector.hpp"

namespace colony::descheduler {

void basic_detector::set_state(anomaly_state s, std::int64_t now_ms) {
  if (state_ == s) return;
  state_ = s;
  // toNewGeneration: counters cleared; an Anomaly expires timeout after its entry.
  abnormal_ = normal_ = 0;
  expiration_ms_ = s == anomaly_state::anomaly ? now_ms + c_.timeout_ms : 0;
}

anomaly_state basic_detector::state(std::int64_t now_ms) {
  if (state_ == anomaly_state::anomaly &&
      (expiration_ms_ < now_ms || normal_ > c_.consecutive_normalities))
    set_state(anomaly_state::ok, now_ms);
  return state_;
}

anomaly_state basic_detector::mark(bool normal, std::int64_t now_ms) {
  const anomaly_state s = state(now_ms);
  if (normal) {
    ++normal_;
    abnormal_ = 0;
    if (s == anomaly_state::anomaly && normal_ > c_.consecutive_normalities)
      set_state(anomaly_state::ok, now_ms);
  } else {
    ++abnormal_;
    normal_ = 0;
    if (s == anomaly_state::ok && abnormal_ > c_.consecutive_abnormalities)
      set_state(anomaly_state::anomaly, now_ms);
  }
  return state(now_ms);
}

void basic_detector::reset() {
  if (state_ == anomaly_state::ok) return;
  state_ = anomaly_state::ok;
  abnormal_ = normal_ = 0;
  expiration_ms_ = 0;
}

detector_cache::entry* detector_cache::live(std::string_view node, std::int64_t now_ms) {
  auto it = entries_.find(node);
  if (it == entries_.end()) return nullptr;
  if (it->second.expires_ms <= now_ms) {
    entries_.erase(it);
    return nullptr;
  }
  return &it->second;
}

bool detector_cache::mark_abnormal(const std::string& node, const anomaly_condition& c,
                                   std::int64_t now_ms) {
  entry* e = live(node, now_ms);
  if (e == nullptr) e = &entries_.insert_or_assign(node, entry{basic_detector(c), 0}).first->second;
  const bool abnormal = e->d.mark(false, now_ms) == anomaly_state::anomaly;
  e->expires_ms = now_ms + ttl_ms_;
  return abnormal;
}

void detector_cache::reset(std::string_view node, std::int64_t now_ms) {
  if (entry* e = live(node, now_ms)) e->d.reset();
}

void detector_cache::mark_normal(std::string_view node, std::int64_t now_ms) {
  if (entry* e = live(node, now_ms)) (void)e->d.mark(true, now_ms);
}

}  // namespace colony::descheduler
