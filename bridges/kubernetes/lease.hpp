// colony::kube::lease_elector: client-go's leader election over a coordination.k8s.io/v1 Lease
// (staging/src/k8s.io/client-go/tools/leaderelection/leaderelection.go tryAcquireOrRenew,
// resourcelock/leaselock.go), the convention kube-scheduler and Koordinator's koord-manager and
// koord-scheduler follow.
//
// One round (try_acquire_or_renew) reads the Lease and, when this candidate may hold it, writes
// it back with its identity and a fresh renewTime through an update guarded by the
// resourceVersion read, so two candidates never both win the same version. A lease held by
// another candidate is taken over only once its record has stayed unchanged for
// lease_duration by this process's own monotonic clock (client-go's observedTime: no trust in
// the other host's clock). The holder renews every retry_period; leader_election gives up the
// lead when no renewal succeeded for renew_deadline, which is shorter than lease_duration, so
// an old leader stops before a new one can start, as long as clocks run at the same rate and
// the old leader is not paused between its check and its action (the lease alone fences
// nothing: docs/operating.md "Leader election" says what does).
//
// Thread-safety: lease_elector is used from one thread. leader_election runs it on a thread of
// its own; leading()/lost() from any thread.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "bridges/kubernetes/api_client.hpp"
#include "messages/result.hpp"

namespace colony::kube {

struct lease_options {
  std::string lease_namespace = "colony-system";
  std::string name = "colony-manager";
  // This candidate's holderIdentity. Required (client-go: hostname + "_" + a UUID).
  std::string identity;
  // kube-scheduler's --leader-elect-lease-duration, -renew-deadline, -retry-period defaults.
  std::chrono::milliseconds lease_duration{15'000};
  std::chrono::milliseconds renew_deadline{10'000};
  std::chrono::milliseconds retry_period{2'000};
};

// What a round saw of the Lease.
struct lease_record {
  std::string holder;  // spec.holderIdentity ("" = nobody)
  std::int64_t lease_duration_seconds = 0;
  std::string acquire_time, renew_time;  // MicroTime strings as stored
  std::int64_t transitions = 0;          // spec.leaseTransitions
  bool operator==(const lease_record&) const = default;
};

class lease_elector {
 public:
  using steady = std::chrono::steady_clock;
  // invalid_input (where: the option) when identity or name is empty, or the durations break
  // client-go's rules: lease_duration > renew_deadline > retry_period > 0.
  [[nodiscard]] static result<lease_elector> open(connection conn, lease_options opts);

  // One tryAcquireOrRenew at `now`: true when this candidate holds the lease after it, false
  // when another does (or an update lost a race); an error when the API server failed (the
  // caller retries). Creates the Lease when missing.
  [[nodiscard]] result<bool> try_acquire_or_renew(steady::time_point now);
  // Hands the lease over at once (client-go's ReleaseOnCancel: holder "" and a 1 s duration),
  // if this candidate holds it as last seen.
  [[nodiscard]] result<void> release();

  [[nodiscard]] const lease_record& observed() const noexcept { return observed_; }
  [[nodiscard]] const lease_options& options() const noexcept { return opts_; }
  [[nodiscard]] std::string path() const;

 private:
  lease_elector(api_client c, lease_options o) : client_(std::move(c)), opts_(std::move(o)) {}
  api_client client_;
  lease_options opts_;
  lease_record observed_;
  std::string observed_rv_;
  steady::time_point observed_time_{};
  bool have_observed_ = false;
};

// The elector's loop on a thread: acquires (a round every retry_period), then renews; once no
// renewal has succeeded for renew_deadline, the lead is lost for good (lost() true), as
// client-go's OnStoppedLeading ends kube-scheduler. stop() ends the loop and releases a lead
// still held.
class leader_election {
 public:
  using steady = std::chrono::steady_clock;
  [[nodiscard]] static result<std::unique_ptr<leader_election>> start(connection conn,
                                                                      lease_options opts);
  ~leader_election();
  leader_election(const leader_election&) = delete;
  leader_election& operator=(const leader_election&) = delete;

  [[nodiscard]] bool leading() const noexcept { return leading_.load(); }
  [[nodiscard]] bool lost() const noexcept { return lost_.load(); }
  // Waits until leading, lost, or `give_up` returns true (checked every 50 ms).
  bool wait_leading(const std::function<bool()>& give_up);
  // The holder last seen and the last API error (for /readyz and messages).
  [[nodiscard]] std::string describe() const;
  [[nodiscard]] const lease_options& options() const noexcept { return opts_; }
  // When this process's leadership began (wall clock ms; 0 before).
  [[nodiscard]] std::int64_t acquired_ms() const noexcept { return acquired_ms_.load(); }
  void stop();

 private:
  explicit leader_election(lease_elector e);
  void loop();

  lease_elector elector_;
  lease_options opts_;
  std::atomic<bool> leading_{false}, lost_{false}, stopping_{false};
  std::atomic<std::int64_t> acquired_ms_{0};
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::string holder_seen_, last_error_;
  std::thread thread_;
};

}  // namespace colony::kube
