// run_metrics: what `colony run` counts and times, kept for its summary (run_stats) and for
// /metrics (docs/operating.md "Metrics"). One object per run, shared by its threads.
//
// The run summary's counts are read from these same cells when the run ends, so the summary and
// a final scrape agree. The scheduler's metrics (kube-scheduler's names,
// pkg/scheduler/metrics/metrics.go) are derived from the decision records the run loop reads
// back from the log, in log order: an attempt is a PodUnschedulable (result "unschedulable"), or
// a PodBindProposed settled by the node actor's PodScheduled ("scheduled") or PodBindRejected
// ("error": the bind failed, as a failed binding cycle is in kube-scheduler). Its duration is
// wall time on this host, from the loop handing the attempt's cause to the components to the
// loop reading the outcome back: scheduling plus the log's round trip, kube-scheduler's
// "scheduling algorithm + binding" in spirit. Nothing here is read by a component or appended to
// the log: wall time never reaches a decision.
//
// Thread-safety: the counters are atomics and the labelled families take a mutex each, so any
// thread may count and any thread may call families(). observe_*() from the run loop only.
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "messages/codec.hpp"
#include "run/metrics.hpp"
#include "run/scheduler_metrics.hpp"

namespace colony::kube {
struct source_counters;
}

namespace colony::run {

class run_metrics {
 public:
  using steady = std::chrono::steady_clock;
  run_metrics();

  // ---- the log (counted by the instrumented log every writer appends through)
  histogram log_append_seconds;
  std::atomic<std::uint64_t> log_records{0};  // records this process appended
  std::atomic<std::uint64_t> log_appends{0};
  std::atomic<std::uint64_t> log_next{0};  // the log's end offset as last seen
  std::atomic<std::uint64_t> log_read{0};  // the run loop's read position

  // ---- run_stats (run/cluster_run.hpp has their meaning)
  std::atomic<std::uint64_t> replayed{0}, carried_over{0}, recovered{0}, delivered{0}, decisions{0},
      observations{0}, ticks{0}, failures_logged{0};

  // ---- API writes of the sink, by write kind and result: "written" (2xx), "unchanged" (found
  // already applied), "failed" (given up, a WriteFailed).
  void count_write(std::string_view kind, bool ok, bool wrote);
  [[nodiscard]] std::uint64_t writes(std::string_view result) const;

  // ---- the scheduler, from the records the loop reads (see above)
  // Every record read at `off`, before it is handed to the host.
  void observe_delivered(log_offset off, steady::time_point now);
  // Every record, after observe_delivered; `live` false for the history replayed at start
  // (which only rebuilds the pending pods, as the scheduler's queue is rebuilt).
  void observe_record(log_offset off, const wire::Envelope& env, steady::time_point now, bool live);

  // ---- the scheduler framework's own timings, recorded by the scheduler component
  // (scheduler_metrics.hpp); families() includes them.
  const std::shared_ptr<scheduler_metrics> framework = std::make_shared<scheduler_metrics>();

  // ---- leader election (client-go's leader_election_master_status{name})
  std::string leader_name;  // "" = no leader election; set before any other thread reads it
  std::atomic<int> leading{0};

  // ---- health
  std::atomic<std::int64_t> heartbeat_ms{0};  // steady ms of the run loop's latest turn
  void beat(steady::time_point now) noexcept;

  // Every family, with the bridge's counters when given (nullptr: not started yet).
  [[nodiscard]] std::vector<metric_family> families(const kube::source_counters* source) const;

 private:
  struct attempt_cell {
    std::uint64_t count = 0;
    histogram duration;
  };
  void attempt(std::string_view result, std::string_view profile, double seconds);
  steady::time_point cause_time(std::int64_t causation, steady::time_point now) const;

  mutable std::mutex writes_mu_;
  std::map<std::pair<std::string, std::string>, std::uint64_t> writes_;

  mutable std::mutex sched_mu_;
  // (result, profile) -> attempts; histograms own atomics, so cells live in unique_ptrs.
  std::map<std::pair<std::string, std::string>, std::unique_ptr<attempt_cell>> attempts_;
  std::array<std::uint64_t, 3> pending_{};  // active, backoff, unschedulable
  // Koordinator's scheduler_pod_scheduling_{evaluated,feasible}_nodes and kube's
  // scheduler_pod_scheduling_attempts, from the logged decisions.
  histogram evaluated_nodes_, feasible_nodes_, attempts_to_schedule_;
  // kube's scheduler_unschedulable_pods{plugin,profile}: pods whose latest attempt a plugin
  // rejected, by plugin (a pod counts once under each plugin that rejected it).
  std::map<std::pair<std::string, std::string>, std::int64_t> unschedulable_by_plugin_;
  std::unordered_map<std::string, std::vector<std::pair<std::string, std::string>>>
      rejected_by_;  // pod -> its (plugin, profile) cells

  // Loop-only state (observe_*): when each recent offset was delivered (a ring), the cause time
  // of each unsettled proposal, and each pending pod's queue.
  static constexpr std::size_t ring_size = 1u << 16;
  std::vector<steady::time_point> delivered_at_;
  std::uint64_t delivered_end_ = 0;  // one past the highest offset in the ring
  std::unordered_map<std::int64_t, steady::time_point> proposals_;
  std::unordered_map<std::int64_t, std::int32_t> proposal_attempts_;  // live proposals' attempt
  std::unordered_map<std::string, int> queue_of_;  // pod -> 0 active, 1 backoff, 2 unschedulable
  std::unordered_map<std::string, std::string> scheduler_of_;  // pod -> schedulerName
  void set_queue(const std::string& pod, int q);
  void drop_pod(const std::string& pod);
  // Replaces the pod's unschedulable_by_plugin_ cells (none: it left the unschedulable set).
  void set_rejected(const std::string& pod, std::vector<std::pair<std::string, std::string>> cells);
};

}  // namespace colony::run
