// colony run: the control plane's components hosted over the log, fed by the Kubernetes
// bridge's observations, their decisions carried out against the API server.
//
//   observation_source (informers -> translate) --append--> event log <--append-- decisions
//                                                              | tail
//                             actor_host (live): entity actors, binding arbitration, the
//                             colocation-profile webhook, koord-scheduler, quota and
//                             slo-controller components
//                                                              | decision records, in log order
//                                                  decision_sink --> pods/binding, pod status,
//                                                                    node status, Eviction API
//
// The log arbitrates: every observation and every decision is appended to one log, and the
// host and the sink read it back in offset order. The event time of a decision is the time of
// the record that caused it; observations carry the wall clock at the bridge (the one place
// wall time enters). When a component waits for a time (a pod's backoff), the loop appends a
// ClockTicked observation once the wall clock has passed it.
//
// Restart: the log is replayed through the entity actors, the arbitration and the components,
// which decide again what they decided; what the log already holds is dropped and what a crash
// kept out of it is appended (docs/kubernetes-bridge.md "colony run"). The sink applies
// decisions from its own saved position, and its writes are idempotent. A write it gives up is
// appended as a WriteFailed record caused by the decision, once per decision and write kind.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "actors/descheduler/descheduler_config.hpp"
#include "actors/scheduler/framework.hpp"
#include "bridges/kubernetes/lease.hpp"
#include "messages/result.hpp"

namespace colony::run {

struct run_options {
  std::string kubeconfig;  // "" = in-cluster ServiceAccount
  // The log: a directory (the embedded RocksDB log, created if missing) or
  // kafka://host:port/topic (stores/kafka_log.hpp; the topic is created if missing).
  std::string log_path;
  // Prefix of colony run's own files: STATE.sink-position (the first decision not carried out
  // yet) and STATE.source-checkpoint (the bridge's informer state). "" = log_path, which only a
  // directory log allows: with a Kafka log the state must be named.
  std::string state_path;
  std::size_t threads = 2;  // CAF scheduler threads of the host
  bool elastic_quota = true;
  // The slo-controller's cpunormalization and resourceamplification plugins (node annotations
  // cpu-normalization-ratio and resource-amplification-ratio, written by a PATCH of the Node).
  // Koordinator enables them by default; Colony only with --cpu-normalization. Default: false.
  bool cpu_normalization = false;
  // koord-scheduler's feature gates (colony run --feature-gates). Default: all off.
  scheduler::scheduler_feature_gates scheduler_gates;
  // koord-descheduler and its migration controller (run/control_plane.hpp); evictions go
  // through the Eviction API. Default: none.
  std::optional<descheduler::descheduler_config> descheduler;
  // API connections the sink writes on at once (run/sink_pool.hpp); one object's records stay
  // in order on one of them. Default: 16.
  std::size_t sink_connections = 16;
  // The loop's poll interval when the log is quiet. Default: 20 ms.
  std::chrono::milliseconds poll{20};
  // Ends the run when it returns true (checked every poll). Default: never.
  std::function<bool()> stop;
  // Called with a line of progress now and then (counts). Default: none.
  std::function<void(const std::string&)> progress;
  // HOST:PORT of /healthz, /readyz and /metrics (run/metrics_server.hpp; docs/operating.md
  // "Health and metrics"); port 0 picks a free one. Default: "" (no server): several colony
  // runs may share a host, so the operator picks the port (Koordinator's components also take
  // theirs from a flag).
  std::string metrics_addr;
  // Called once the server listens, with the port bound. Default: none.
  std::function<void(std::uint16_t)> on_metrics_listening;
  // /readyz answers 503 once the API server has not answered for this long (probed every
  // 5 s with GET /version while the server runs). Default: 30 s, a kubelet readiness probe's
  // period (10 s) times its failureThreshold (3).
  std::chrono::milliseconds api_unreachable_after{30'000};
  // Leader election over a coordination.k8s.io Lease (kube::leader_election; docs/operating.md
  // "Leader election"): the run waits until it holds the Lease before it opens the log (while
  // the log is locked by a predecessor still alive, it keeps waiting: the lock is the fence),
  // appends a ConfigUpdated of kind "Lease" naming its term, and ends with failed_precondition
  // "leader election lost" once a renewal has failed for the renew deadline. A clean stop
  // releases the Lease. Default: none (the run starts at once).
  std::optional<kube::lease_options> leader_election;
  // HOST:PORT of the admission webhooks over HTTPS (run/webhook_server.hpp; docs/operating.md
  // "Admission webhooks"); port 0 picks a free one. Default: "" (off: registering a webhook
  // puts Colony on the path of every pod create, which an operator must choose).
  std::string webhook_addr;
  // Directory of ca.crt, tls.crt, tls.key (generated there when missing,
  // run/webhook_certs.hpp). Default: "" = STATE.webhook-certs (beside the sink position).
  std::string webhook_cert_dir;
  // The apiserver's clientConfig: a URL "https://HOST:PORT" (tests, out-of-cluster), or a
  // Service "NAMESPACE/NAME[:PORT]" (in-cluster; port default 443). Default: neither = the URL
  // of --webhook-addr with the port bound.
  std::string webhook_url;
  std::string webhook_service;
  // Called once the webhook server listens, with the port bound. Default: none.
  std::function<void(std::uint16_t)> on_webhook_listening;
};

struct run_stats {
  std::uint64_t replayed = 0;      // records of an earlier run replayed at start
  std::uint64_t carried_over = 0;  // decisions of the history the sink had not carried out
  std::uint64_t recovered = 0;     // decisions re-derived at start that a crash kept out of the log
  std::uint64_t delivered = 0;     // records delivered to the host after the start
  std::uint64_t decisions = 0;     // records the components and arbitration appended
  std::uint64_t observations = 0;  // records the bridge appended
  std::uint64_t ticks = 0;         // ClockTicked appended for components' wake-ups
  std::uint64_t writes = 0;        // API writes performed by the sink
  std::uint64_t write_failures = 0;
  // The bridge's informers (kube::source_counters): watches re-established, 410 Gone answers,
  // relists.
  std::uint64_t reconnects = 0, gone = 0, relists = 0;
  std::uint64_t webhook_reviews = 0;  // AdmissionReviews answered (allowed or refused)
  std::uint64_t webhook_refused = 0;  // of them, refused
  std::uint64_t failures_logged = 0;  // WriteFailed records appended for them (once per decision
                                      // and write kind, across restarts)
  bool led = false;                   // with leader election: whether this run ever held the Lease
};

// Runs until options.stop says so (or an error). Returns what it did.
[[nodiscard]] result<run_stats> run_cluster(const run_options& options);

}  // namespace colony::run
