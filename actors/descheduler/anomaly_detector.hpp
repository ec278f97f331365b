// Koordinator's basic anomaly detector (pkg/descheduler/utils/anomaly/basic_detector.go,
// counter.go) on event time, and the per-node cache LowNodeLoad keeps of them
// (low_node_load.go filterRealAbnormalNodes, resetNodesAsNormal, tryMarkNodesAsNormal).
//
// States OK and Anomaly. mark(false) counts a consecutive abnormality (and clears the normal
// count); OK becomes Anomaly when the count is strictly above consecutive_abnormalities. In
// Anomaly an abnormal mark keeps the state (the expiry is not extended); the state returns to
// OK when the consecutive normal count is strictly above consecutive_normalities, or once the
// expiry (entry + timeout) is strictly before now. Entering a state clears the counters.
// reset() enters OK and is a no-op in OK (a partial abnormal count survives).
// Plain value; single owner.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>

namespace colony::descheduler {

enum class anomaly_state : std::uint8_t { ok, anomaly };

struct anomaly_condition {
  // Default: 1 min (LoadAnomalyCondition.Timeout).
  std::int64_t timeout_ms = 60'000;
  // Default: 5.
  std::int64_t consecutive_abnormalities = 5;
  // Default: 3.
  std::int64_t consecutive_normalities = 3;
  bool operator==(const anomaly_condition&) const = default;
};

class basic_detector {
 public:
  explicit basic_detector(anomaly_condition c) : c_(c) {}
  // Marks one observation at now_ms and returns the state after it.
  anomaly_state mark(bool normal, std::int64_t now_ms);
  void reset();
  [[nodiscard]] anomaly_state state(std::int64_t now_ms);
  [[nodiscard]] std::int64_t consecutive_abnormalities() const { return abnormal_; }

 private:
  void set_state(anomaly_state s, std::int64_t now_ms);
  anomaly_condition c_;
  anomaly_state state_ = anomaly_state::ok;
  std::int64_t abnormal_ = 0, normal_ = 0;
  std::int64_t expiration_ms_ = 0;  // Anomaly only
};

// Detectors by node name with the cache's expiry (detectorCacheTimeout, refreshed when a
// detector is stored after an abnormal mark). Entries past their expiry are gone.
class detector_cache {
 public:
  explicit detector_cache(std::int64_t ttl_ms = 300'000) : ttl_ms_(ttl_ms) {}
  // filterRealAbnormalNodes for one source node: creates the detector if absent, marks it
  // abnormal, stores it (refreshing its expiry); true when it is then in Anomaly.
  bool mark_abnormal(const std::string& node, const anomaly_condition& c, std::int64_t now_ms);
  // resetNodesAsNormal / tryMarkNodesAsNormal: act on a live detector only.
  void reset(std::string_view node, std::int64_t now_ms);
  void mark_normal(std::string_view node, std::int64_t now_ms);
  [[nodiscard]] std::size_t size() const { return entries_.size(); }

 private:
  struct entry {
    basic_detector d;
    std::int64_t expires_ms;
  };
  entry* live(std::string_view node, std::int64_t now_ms);
  std::int64_t ttl_ms_;
  std::map<std::string, entry, std::less<>> entries_;
};

}  // namespace colony::descheduler
