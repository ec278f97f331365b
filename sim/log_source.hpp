// log_source: a cluster's event log (written by `colony run --log DIR`) as the input of a
// re-simulation (`colony sim --from-log DIR`), the counterpart of the trace source for a log.
//
// The log holds observations (causation -1: what the bridge saw in the cluster, and the
// ClockTicked records colony run appended when a component's wake-up was due) and decisions (what
// the components and the binding arbitration decided). A re-simulation feeds the observations,
// in log order, and decides again; the log's decisions are not fed. They say where the cluster
// put each decision in its order (logged_position): colony run's components append as they
// finish, so a busy loop reads observations between decisions and one component's answers
// between another's, and the re-simulation follows that order wherever it makes the same
// decision (sim/log_driver.cpp).
//
// What is fed, each record unchanged unless said here:
//   - the configuration records a run's config replaces are dropped (config_replacement):
//     ConfigUpdated of kind slo-controller-config or ClusterColocationProfile, QuotaUpserted and
//     QuotaDeleted; the config's own are fed instead (given_configuration);
//   - a pod's placement is the re-simulation's, not the cluster's: PodFinished names the node
//     the re-simulation bound the pod to ("" if it never did: the pod is withdrawn), and
//     PodStarted of a pod the re-simulation has not bound is dropped (the pod did not start in
//     this run). With the cluster's own configuration the placements agree and nothing is
//     rewritten.
//
// Every record is verified as it is read (checksum, FlatBuffers verifier, offset: see
// stores/rocksdb_log.hpp); a record that fails is an invalid_input error naming the log and the
// offset ("LOG offset N: ..."). open() reads the whole log once to verify and count it
// (log_scan) before a run starts, so a damaged log fails before any output is written; the run
// reads it again in chunks, verified again.
//
// Memory: the records read ahead of the run, at most `window` records past the run's position
// (observations whole, decisions as a hash of their identity and their position).
// Thread-safety: none (one owner).
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "messages/codec.hpp"
#include "messages/result.hpp"
#include "sim/sim_config.hpp"

namespace colony::stores {
class event_log;
}

namespace colony::sim {

// What open() found in the log (every record verified).
struct log_scan {
  std::string path;
  std::uint64_t records = 0;
  std::uint64_t observations = 0;  // causation -1
  std::uint64_t decisions = 0;     // the rest: decided again, not fed
  std::map<std::string, std::uint64_t> observations_by_source, decisions_by_source;
  std::uint64_t nodes = 0, pods = 0;       // distinct NodeRegistered / PodSubmitted entities
  std::int64_t first_ms = 0, last_ms = 0;  // least and greatest event time of an observation
};

// Which of the cluster's configuration records a config replaces: those of the kinds the file
// gives (sim_config::given). docs/sim.md "Re-simulating a cluster's log" has the rule.
struct config_replacement {
  bool slo_controller_config = false;  // sloControllerConfig: ConfigUpdated slo-controller-config
  bool colocation_profiles = false;    // colocationProfiles: ConfigUpdated ClusterColocationProfile
  bool elastic_quotas = false;         // elasticQuotas: QuotaUpserted, QuotaDeleted
};
[[nodiscard]] config_replacement replacement_of(const sim_config& c);

// The configuration the config gives, as observations at time t (source "sim", as a trace run
// writes them): the slo-controller-config ConfigMap, the ClusterColocationProfiles, the
// KubeSchedulerConfiguration (for the record; the scheduler is built with it), the ElasticQuotas
// by name. Only the kinds the file gives.
[[nodiscard]] std::vector<messages::byte_buffer> given_configuration(const sim_config& c,
                                                                     std::int64_t t);

// What the source fed and changed so far.
struct replay_counts {
  std::uint64_t fed = 0;
  std::uint64_t configuration_replaced = 0;  // the cluster's records of a replaced kind
  std::uint64_t placements_rewritten = 0;    // PodFinished / PodStarted naming another node
  std::uint64_t pod_started_dropped = 0;     // PodStarted of a pod the run has not bound
};

// One observation to feed.
struct log_observation {
  std::span<const std::uint8_t> record;  // verified; valid until the source is called again
  std::int64_t time_ms = 0;              // its event time
  log_offset position = 0;               // its offset in the log
};

class log_source {
 public:
  ~log_source();
  log_source(const log_source&) = delete;
  log_source& operator=(const log_source&) = delete;

  // Opens the log read-only (not_found when there is none) and verifies and counts it.
  // window: how far (records) the source reads ahead of the run to find where the log put a
  // decision; one logged further from its cause is not found (it is then ordered as one the log
  // does not hold). Default: 65,536.
  [[nodiscard]] static result<std::unique_ptr<log_source>> open(const std::string& path,
                                                                log_offset window = 65536);
  [[nodiscard]] const log_scan& scan() const { return scan_; }

  // Where the re-simulation has a pod now: nullopt when it does not know the pod or the pod has
  // ended (its records then pass unchanged), "" when it is not bound, else its node.
  using placement_fn = std::function<std::optional<std::string_view>(std::string_view pod)>;

  // Which configuration records to drop and how to read placements; set before the first read.
  void configure(const config_replacement& replace, placement_fn placement) {
    replace_ = replace;
    placement_ = std::move(placement);
  }
  // The position of the next observation to feed; nullopt at the end of the log.
  [[nodiscard]] result<std::optional<log_offset>> peek();
  // The next observation (see the top of this file); nullopt at the end. Its placement is read
  // now, so it is the run's at the moment it is fed.
  [[nodiscard]] result<std::optional<log_observation>> next();
  // Where the log holds the decision `d` that answered its record at `cause`: a decision of the
  // same decider (source), type and entity caused by that record. Each logged decision is found
  // once. nullopt: the log has no such decision (the run decided otherwise).
  [[nodiscard]] result<std::optional<log_offset>> logged_position(log_offset cause,
                                                                  const wire::Envelope& d);
  [[nodiscard]] const replay_counts& counts() const { return counts_; }

 private:
  explicit log_source(std::unique_ptr<stores::event_log> log, log_offset window);
  [[nodiscard]] result<void> verify_and_count(const std::string& path);
  // Reads the log on to `to` (at most its end): observations kept, decisions indexed.
  [[nodiscard]] result<void> read_to(log_offset to);
  // Drops the decisions logged before `position` that were never found.
  void forget_before(log_offset position);

  std::unique_ptr<stores::event_log> log_;
  log_offset window_;
  log_scan scan_;
  config_replacement replace_;
  placement_fn placement_;
  replay_counts counts_;
  messages::event_builder b_;
  messages::byte_buffer current_;  // the observation last returned (rewritten or copied)
  log_offset read_ = 0, end_ = 0;  // next offset to read; the log's end
  struct pending_observation {
    log_offset position;
    messages::byte_buffer record;
  };
  std::deque<pending_observation> observations_;  // read, not fed yet
  // Decisions read, not found yet: identity hash -> positions, and in log order for forgetting.
  std::unordered_multimap<std::uint64_t, log_offset> decisions_;  // lookup only
  std::deque<std::pair<log_offset, std::uint64_t>> decision_order_;
};

}  // namespace colony::sim
