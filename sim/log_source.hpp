// log_source: a cluster's event log (written by `colony run --log DIR`) as the observations of a
// re-simulation (`colony sim --from-log DIR`), the counterpart of the trace source for a log.
//
// The log holds observations (causation -1: what the bridge saw in the cluster, the ClockTicked
// records colony run appended when a component's wake-up was due) and decisions (what the
// components and the binding arbitration decided). A re-simulation keeps the observations, in
// log order, and drops every decision: deciding again is the point. What it feeds, each record
// unchanged unless said here:
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
// offset ("LOG offset N: ..."). open() reads the whole log once to verify it and count it
// (log_scan) before a run starts, so a damaged log fails before any output is written; next()
// reads it again in chunks, verified again.
// Thread-safety: none (one owner).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
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
  std::uint64_t decisions = 0;     // the rest: dropped by a re-simulation
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
  std::uint64_t decisions_dropped = 0;
  std::uint64_t configuration_replaced = 0;  // the cluster's records of a replaced kind
  std::uint64_t placements_rewritten = 0;    // PodFinished / PodStarted naming another node
  std::uint64_t pod_started_dropped = 0;     // PodStarted of a pod the run has not bound
};

// One observation to feed.
struct log_observation {
  std::span<const std::uint8_t> record;  // verified; valid until the next call to next()
  std::int64_t time_ms = 0;              // its event time
  // The decisions the log holds before it: where it sat among the host's records in the
  // cluster (the re-simulation feeds it once it has made as many, or when it is quiet).
  std::uint64_t decisions_before = 0;
};

class log_source {
 public:
  ~log_source();
  log_source(const log_source&) = delete;
  log_source& operator=(const log_source&) = delete;

  // Opens the log read-only (not_found when there is none) and verifies and counts it.
  [[nodiscard]] static result<std::unique_ptr<log_source>> open(const std::string& path);
  [[nodiscard]] const log_scan& scan() const { return scan_; }

  // Where the re-simulation has a pod now: nullopt when it does not know the pod or the pod has
  // ended (its records then pass unchanged), "" when it is not bound, else its node.
  using placement_fn = std::function<std::optional<std::string_view>(std::string_view pod)>;

  // Which configuration records to drop and how to read placements; set before next().
  void configure(const config_replacement& replace, placement_fn placement) {
    replace_ = replace;
    placement_ = std::move(placement);
  }
  // The next observation in log order (see the top of this file), or nullopt at the end. Reads
  // the log in chunks; a placement is read when its record is returned, so it is the run's at
  // that point.
  [[nodiscard]] result<std::optional<log_observation>> next();
  // decisions_before of the observation next() returns next (nullopt at the end), without
  // consuming it: when to feed it.
  [[nodiscard]] result<std::optional<std::uint64_t>> next_decisions_before();
  [[nodiscard]] const replay_counts& counts() const { return counts_; }

 private:
  explicit log_source(std::unique_ptr<stores::event_log> log);
  [[nodiscard]] result<void> verify_and_count(const std::string& path);
  // Makes chunk_[at_] the next observation not dropped by the filters of configure() that need no
  // placement; false at the end of the log.
  [[nodiscard]] result<bool> advance();

  std::unique_ptr<stores::event_log> log_;
  log_scan scan_;
  config_replacement replace_;
  placement_fn placement_;
  replay_counts counts_;
  messages::event_builder b_;
  messages::byte_buffer rewritten_;
  // The chunk of the log being fed: records [chunk_from_, chunk_from_ + chunk_.size()).
  std::vector<messages::byte_buffer> chunk_;
  std::size_t at_ = 0;
  log_offset chunk_from_ = 0, end_ = 0;
  std::uint64_t decisions_ = 0;  // decisions of the log before chunk_[at_]
};

}  // namespace colony::sim
