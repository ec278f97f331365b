// event_queue: the sim's virtual clock. Pending actions ordered by (time, sequence), where the
// sequence number is the order in which they were scheduled: a total order, so two runs on the
// same inputs process the same actions in the same order.
#pragma once

#include <cstdint>
#include <queue>
#include <vector>

namespace colony::sim {

enum class action : std::uint8_t {
  node_register,
  pod_submit,
  pod_complete,   // a bound pod's run time is over (trace run time)
  pod_withdraw,   // the trace deletes a pod; only acts if it is still pending
  koordlet_tick,  // the nodes' collectors report NodeMetric (usage model v2018-curves)
  metrics_sample,
};

struct timed_action {
  std::int64_t time_ms = 0;
  std::uint64_t seq = 0;
  action what = action::node_register;
  std::uint32_t index = 0;  // node or pod index; generation for pod_complete is in `tag`
  std::uint32_t tag = 0;
  bool operator>(const timed_action& o) const {
    return time_ms != o.time_ms ? time_ms > o.time_ms : seq > o.seq;
  }
};

class event_queue {
 public:
  void push(std::int64_t t, action a, std::uint32_t index = 0, std::uint32_t tag = 0) {
    q_.push(timed_action{t, next_seq_++, a, index, tag});
  }
  [[nodiscard]] bool empty() const { return q_.empty(); }
  [[nodiscard]] const timed_action& top() const { return q_.top(); }
  timed_action pop() {
    timed_action a = q_.top();
    q_.pop();
    return a;
  }
  [[nodiscard]] std::size_t size() const { return q_.size(); }

 private:
  std::priority_queue<timed_action, std::vector<timed_action>, std::greater<>> q_;
  std::uint64_t next_seq_ = 0;
};

}  // namespace colony::sim
