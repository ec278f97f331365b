// koordlet_agent: `colony koordlet` on one node. The node's collectors (bridges/node
// node_source) are the source, the koordlet component (actors/koordlet/actor) hosted in
// entities::step_host is the only thing that decides, the embedded log is where every record goes
// first, and the cgroup executor (bridges/node/cgroup_executor) is the sink. Nothing here calls a
// policy.
//
// One step (a collect interval), at wall time `now` stamped by the caller:
//   1. snapshot /proc, the kubepods cgroups and the cgroups of the host applications the
//      component's NodeSLO declares (koordlet_component::host_apps(), its state); the usage since
//      the last snapshot becomes one NodeUsageSampled observation (source "bridge/node"; pods
//      keyed by uid, QoS from their Kubernetes tier: BestEffort -> BE, else LS, until uids are
//      mapped to pods; host applications by name);
//   2. every record, observations and decisions alike, is appended to the log (synced) and then
//      delivered alone to the host (step_host::step_record, as `colony run` delivers what it
//      reads back); what the component emits in answer (NodeMetricReported, BeSuppressed,
//      CgroupUpdated, PodEvicted) goes the same way, in the order emitted;
//   3. with enforce, a cgroup decision (BeSuppressed; a CgroupUpdated the component emitted) is
//      carried out once it is in the log: the files written and read back become a CgroupUpdated
//      (source "bridge/node", causation = the decision, settings = file -> value read back), a
//      write that failed or read back something else a WriteFailed (write "cgroup", object = the
//      file). Without enforce (dry run) decisions are logged and nothing is written. A file
//      the kernel lacks (cpu.bvt_warp_ns off Anolis, memory.min on v1) is skipped and reported
//      once per node and file name as a WriteFailed whose message starts "unsupported by this
//      kernel" (the log remembers it across restarts), and in problems() that once.
// Samples and reports older than the retention are dropped from the log as it runs (the rest of
// it stays), so the log and the replay at open stay bounded on a long-running node.
// The machine's CPU and NUMA topology (/sys, /proc/cpuinfo) is read at open and then every
// minute of event time; a reading other than the log's last NodeTopologySampled becomes a new one
// (an observation), from which the component reports the node's NodeResourceTopology.
// Open replays the whole log through the host (outputs dropped: the log holds them), folds the
// desired cgroup state from the logged decisions, appends a NodeRegistered (capacity from /proc)
// unless the log's last one says the same, and with enforce writes the desired state again
// (reconcile on start), logging what it wrote as in 3.
//
// In a cluster (options.cluster, run/koordlet_agent_cluster.hpp) the API server is a second
// source and a sink: observe() appends and steps what the informers translated (the Node, the
// pods bound here, the NodeSLO) and the outcomes of the API writes (a failed one as a WriteFailed,
// write node_metric or eviction, causation = the decision); the collectors' pods are named by
// the pod their uid belongs to (namespace/name, QoS from its labels); no NodeRegistered is made
// from /proc (the Node is the API server's); every NodeMetricReported and
// NodeResourceTopologyUpdated the component emits is handed to the cluster's sink once it is in
// the log, and with enforce every PodEvicted (a dry
// run logs evictions and carries none out). On a restart the
// informers list again: an observation equal to the last one of its kind the log holds for the
// same entity is not appended again, and a pod the log places here that the first list lacks
// gets its PodFinished (deleted while the koordlet was down).
// Thread-safety: one thread calls every method.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "actors/entities/step_host.hpp"
#include "actors/koordlet/actor/koordlet_component.hpp"
#include "bridges/node/cgroup_executor.hpp"
#include "bridges/node/collector.hpp"
#include "bridges/node/resctrl.hpp"
#include "bridges/node/topology_reader.hpp"
#include "messages/codec.hpp"
#include "messages/result.hpp"
#include "run/koordlet_agent_cluster.hpp"
#include "stores/event_log.hpp"

namespace colony::agent {

inline constexpr std::string_view node_source_name = "bridge/node";

// The node's embedded log as the agent opens it: it appends a sample a second (~15 KB on a
// 110-pod node), so a small memtable and read cache keep the process's memory small (a memtable
// stays resident until flushed; the bulk writers' 64 MiB would be the largest thing in it).
[[nodiscard]] stores::log_options koordlet_log_options();

struct koordlet_agent_options {
  koordlet_actor::koordlet_options koordlet;  // koordlet.node: this node
  node::source_config source;
  // Write cgroups (true) or only log decisions (false: dry run). Default: false.
  bool enforce = false;
  // The API server's informers and sink (cluster mode); outlives the agent. Default: none (a
  // lone node).
  koordlet_cluster* cluster = nullptr;
  // With a cluster and enforce: the file of the sink's position, the first offset of the log
  // whose decision the API has not answered yet (colony run's STATE.sink-position). At open the
  // evictions logged at or after it, and not answered by a WriteFailed, are carried out again once
  // the informers have listed (a crash between the append and the write loses none). A log
  // without the file starts at its end: no older decision is carried out again. Default: none.
  std::string position_path;
  // Sample retention: NodeUsageSampled records (and the component's NodeMetricReported but the
  // newest) older than this are dropped from the log (stores::event_log::trim), checked every
  // sixth of it in event time; every other record (specs, NodeSLOs, decisions, write outcomes)
  // stays. Never shorter than the component's longest window (longest_window_ms(): 30 min by
  // default), so a restart replays to the same windows. Default: 1 h (about 65 MB of samples on
  // a 110-pod node). 0: keep everything.
  std::int64_t sample_retention_ms = 3'600'000;
};

// The cgroup state the logged decisions ask for, with the offset of the decision behind each
// part (the causation of what the executor logs when it writes it).
struct desired_cgroups {
  struct part {
    std::string value;
    log_offset cause = 0;
  };
  std::optional<std::int64_t> be_cfs_quota_us;
  log_offset be_cfs_quota_cause = 0;
  std::optional<part> be_cpuset;
  struct pod_part {
    // Every file the pod's decisions set (burst, runtime hooks), each with its last value.
    std::vector<std::pair<std::string, std::string>> settings;
    log_offset cause = 0;  // the last decision that set one
    std::string uid;       // the pod's cgroup uid where it is not the key (term podUID)
  };
  // By pod key; a kube QoS dir's by its target ("qos/burstable").
  std::map<std::string, pod_part, std::less<>> pods;
};

struct agent_stats {
  std::uint64_t replayed = 0;   // records read back at open
  std::uint64_t appended = 0;   // records this process appended
  std::uint64_t samples = 0;    // NodeUsageSampled appended
  std::uint64_t reports = 0;    // NodeMetricReported the component emitted
  std::uint64_t decisions = 0;  // BeSuppressed, CgroupUpdated and PodEvicted the component emitted
  std::uint64_t files_written = 0;
  std::uint64_t writes_failed = 0;      // cgroup writes
  std::uint64_t unsupported = 0;        // cgroup files skipped: the kernel lacks them
  std::uint64_t observed = 0;           // records from the API server appended
  std::uint64_t duplicates = 0;         // observations equal to the log's last: not appended
  std::uint64_t carried_out = 0;        // decisions handed to the API sink
  std::uint64_t api_writes_failed = 0;  // WriteFailed appended for API writes
  std::uint64_t carried_over = 0;       // evictions logged before a stop, carried out at open
  std::uint64_t trimmed = 0;            // samples and reports dropped from the log
};

class koordlet_agent {
 public:
  // REQUIRES: log outlives the agent; one writer.
  [[nodiscard]] static result<std::unique_ptr<koordlet_agent>> open(koordlet_agent_options o,
                                                                    stores::event_log& log,
                                                                    event_time now);
  ~koordlet_agent();
  koordlet_agent(const koordlet_agent&) = delete;
  koordlet_agent& operator=(const koordlet_agent&) = delete;

  // One collect interval ending at `now` (see the top of the file). Fails on an unreadable /proc
  // or a log error; per-cgroup problems and failed writes go to problems().
  [[nodiscard]] result<void> step(event_time now);
  // Cluster mode: appends and steps what the API server's informers translated and what became
  // of the API writes (see the top of the file). A no-op on a lone node. Returns the outcomes of
  // the API writes since the last call (the caller prints them).
  [[nodiscard]] result<std::vector<kube::write_outcome>> observe(event_time now);

  [[nodiscard]] const desired_cgroups& desired() const { return desired_; }
  [[nodiscard]] const agent_stats& stats() const { return stats_; }
  // The last usage collected (nullopt before the second snapshot).
  [[nodiscard]] const std::optional<node::node_usage>& last_usage() const { return usage_; }
  // The last NodeMetricReported the component emitted (verified bytes), empty before the first.
  [[nodiscard]] const messages::byte_buffer& last_report() const { return last_report_; }
  // Skipped cgroups and failed cgroup writes since the last call (the caller prints them).
  [[nodiscard]] std::vector<error> take_problems();
  [[nodiscard]] const koordlet_actor::koordlet_component& component() const { return *comp_; }

 private:
  koordlet_agent(koordlet_agent_options o, stores::event_log& log, node::node_source src);
  [[nodiscard]] result<void> replay();
  // Sample retention (options.sample_retention_ms) at event time t.
  [[nodiscard]] result<void> trim_samples(std::int64_t t);
  // Appends and steps `first` and everything it causes, in order (step 2 and 3 above).
  [[nodiscard]] result<void> process(std::vector<messages::byte_buffer> first, std::int64_t t);
  // Folds a logged record into desired_ (cgroup decisions only).
  void fold_decision(const wire::Envelope& env, log_offset offset);
  // Carries out the parts of desired_ that `env` (at `offset`) set, and records what happened.
  void enforce(const wire::Envelope& env, log_offset offset, std::int64_t t,
               std::vector<messages::byte_buffer>& out);
  void reconcile_all(std::int64_t t, std::vector<messages::byte_buffer>& out);
  void record_outcome(const node::apply_result& r, std::string_view target, log_offset cause,
                      std::int64_t t, std::vector<messages::byte_buffer>& out);
  // A CgroupUpdated's target carried out: a kube QoS dir ("qos/<tier>"), a resctrl group
  // ("resctrl/<group>"), a host application ("host-app:<name>", its cgroup from the component's
  // declared list) or a pod by uid.
  [[nodiscard]] node::apply_result apply_target(
      std::string_view target, std::string_view uid,
      const std::vector<std::pair<std::string, std::string>>& settings) const;
  [[nodiscard]] messages::byte_buffer node_registered(std::int64_t t) const;
  // Reads the machine's topology (topology_reader.hpp) and, where it differs from the last
  // NodeTopologySampled the log holds, queues a new one; a reading that fails is a problem,
  // said once per message.
  void observe_topology(std::int64_t t, std::vector<messages::byte_buffer>& into);
  // The record is an observation from the API server equal to the last one of its kind for its
  // entity (remembered when it is new).
  [[nodiscard]] bool seen_before(const messages::byte_buffer& rec);
  void track_observation(const wire::Envelope& env, const messages::byte_buffer& rec);

  koordlet_agent_options opt_;
  stores::event_log& log_;
  node::node_source src_;
  std::optional<node::cgroup_executor> exec_;
  std::optional<node::resctrl_executor> resctrl_;  // with exec_: targets "resctrl/<group>"
  std::unique_ptr<entities::step_host> host_;
  koordlet_actor::koordlet_component* comp_ = nullptr;  // owned by host_
  bool replaying_ = false;
  std::int64_t last_t_ = 0;
  std::optional<node::node_snapshot> prev_;
  std::optional<node::node_usage> usage_;
  std::optional<std::pair<std::int64_t, std::int64_t>> registered_capacity_;  // cpu milli, memory
  // The machine topology of the log's last NodeTopologySampled, when it is read next (event
  // time: every topology_interval_ms, as Koordinator's NodeInfoCollector), the last failure.
  std::optional<node::machine_topology> logged_topology_;
  std::int64_t next_topology_ms_ = 0;
  std::string topology_problem_;
  static constexpr std::int64_t topology_interval_ms = 60'000;
  desired_cgroups desired_;
  agent_stats stats_;
  std::vector<error> problems_;
  std::set<std::string, std::less<>> unsupported_reported_;  // file names reported unsupported
  // ColdPageCollector without kidled, not reported yet: logged with the next report.
  std::optional<error> cold_pages_unsupported_;
  messages::byte_buffer last_report_;
  messages::event_builder b_;
  // Cluster mode: the last observation from the API server per "entity|type" (its payload as
  // JSON), and the pods the log places on this node.
  std::map<std::string, std::string, std::less<>> last_observed_;
  std::set<std::string, std::less<>> placed_;
  // The sink's position (opt_.position_path): saved when the outcomes move it; the evictions a
  // stop left unanswered, carried out once the informers have listed.
  log_offset position_ = 0;
  // Sample retention: the event time of the last trim; the samples and reports in the log not
  // trimmed yet, in log order (replayed or appended: no read of the log to find them); the
  // newest report kept below the sparse mark (dropped once a newer one is below it too).
  struct trim_candidate {
    log_offset offset = 0;
    std::int64_t time_ms = 0;
    bool report = false;
  };
  std::int64_t last_trim_t_ = 0;
  std::deque<trim_candidate> trim_candidates_;
  std::optional<log_offset> kept_report_;
  void note_trim_candidate(const wire::Envelope& env, log_offset offset);
  std::vector<std::pair<log_offset, messages::byte_buffer>> carry_over_;
};

// The source translation of one collect interval: a NodeUsageSampled keyed Node/<node>, source
// "bridge/node", pods keyed by uid with QoS from their tier (BestEffort -> BE, else LS).
// With a cluster, pods whose uid the API server knows are named by it (namespace/name) with the
// QoS of their labels.
[[nodiscard]] messages::byte_buffer node_usage_sampled(messages::event_builder& b,
                                                       std::string_view node,
                                                       const node::node_usage& u,
                                                       std::int64_t interval_ms,
                                                       const koordlet_cluster* cluster = nullptr);

}  // namespace colony::agent
