// koordlet_cluster: what `colony koordlet --kubeconfig FILE` adds to the koordlet agent
// (run/koordlet_agent.hpp) in a cluster: the API server as a second source and a sink.
//
// Source. Three informers (bridges/kubernetes/informer.hpp, each on its own thread, client-go's
// list/watch/retry rules), as Koordinator's statesinformer watches them
// (pkg/koordlet/statesinformer/impl/states_node.go, states_pods.go, states_nodeslo.go): the
// node's own Node (fieldSelector metadata.name=NODE), the Pods bound to it (all namespaces,
// fieldSelector spec.nodeName=NODE) and its NodeSLO (slo.koordinator.sh/v1alpha1, metadata.name
// =NODE). Every change goes through colony run's translation (kube::translate_*, with
// translate_options::koordlet_node = NODE): NodeRegistered / NodeConditionChanged / NodeRemoved,
// PodSubmitted + an observed PodScheduled per pod bound here, PodFinished, NodeSLOUpdated; an
// object translate refuses becomes its ObjectRefused. The records wait in a queue for the
// agent's thread (take_observations), which appends them to the node's log and steps the
// component with them: the informers never write the log. The pods' uids are kept, so the
// collectors' cgroups (named by uid) are the pods the API server names (pod_of_uid).
//
// Sink. carry_out(offset, record) queues a decision the agent has logged; one thread carries
// them out in log order with kube::decision_sink (colony run's writes, retries and outcomes):
// the component's NodeMetricReported as the NodeMetric's status, its PodEvicted through the
// Eviction API (preconditions.uid from the pod informer). take_outcomes() hands back what
// became of each; a failed one is the agent's WriteFailed record.
//
// Thread-safety: start/stop from one thread; every other method from any thread.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "bridges/kubernetes/informer.hpp"
#include "bridges/kubernetes/kubeconfig.hpp"
#include "bridges/kubernetes/sink.hpp"
#include "messages/codec.hpp"
#include "messages/qos.hpp"
#include "messages/result.hpp"
#include "messages/units.hpp"

namespace colony::agent {

struct koordlet_cluster_options {
  kube::connection conn;
  std::string node;
  kube::informer_options informer;
  kube::sink_options sink;
  // Event time of observations, ms since the epoch. Default: the system clock. Called from the
  // informer threads: must be thread-safe.
  std::function<std::int64_t()> clock;
};

// A pod the API server binds to this node, as the collectors' uid finds it.
struct pod_ref {
  std::string key;                  // namespace/name
  qos_class qos = qos_class::none;  // koordinator.sh/qosClass, else from status.qosClass
};

struct cluster_counters {
  std::uint64_t observations = 0;  // records queued by the informers
  std::uint64_t refused = 0;       // ObjectRefused among them
  std::uint64_t untranslated = 0;  // translate's failed_precondition (nothing queued)
  std::uint64_t carried_out = 0;   // decisions handed to the sink
  std::uint64_t writes = 0;        // written (2xx)
  std::uint64_t unchanged = 0;     // found already applied
  std::uint64_t failed = 0;        // given up
};

class koordlet_cluster {
 public:
  // Starts the informers and the sink thread; contacts the API server only from them (a
  // server that is down is retried, never an error here). invalid_input: no node name.
  [[nodiscard]] static result<std::unique_ptr<koordlet_cluster>> start(koordlet_cluster_options o);
  ~koordlet_cluster();  // stop()
  koordlet_cluster(const koordlet_cluster&) = delete;
  koordlet_cluster& operator=(const koordlet_cluster&) = delete;

  // Stops the informers and the sink (a write in flight finishes; queued ones are dropped and
  // counted in dropped()). Idempotent.
  void stop();

  // The records translated since the last call, in the order the informers made them.
  [[nodiscard]] std::vector<messages::byte_buffer> take_observations();
  [[nodiscard]] std::optional<pod_ref> pod_of_uid(std::string_view uid) const;
  // Once, after the Pod informer's first LIST: the keys of every pod bound here (the agent
  // finishes pods its log still places here and the API server no longer has). nullopt before,
  // and after the first call.
  [[nodiscard]] std::optional<std::set<std::string>> take_first_pod_list();

  // The Node and Pod informers have listed (the NodeSLO is optional: without one, or without
  // its CRD, the strategies in force stay).
  [[nodiscard]] bool synced() const;
  // "pods: ERROR" of each informer whose requests failed in the last 40 s (the API server down,
  // a 403 for want of RBAC, ...), with its latest error.
  [[nodiscard]] std::vector<std::string> problems() const;

  // REQUIRES: `record` is in the log at `offset` (synced). Queued for the sink thread.
  void carry_out(log_offset offset, messages::byte_buffer record);
  // The outcomes of the writes carried out since the last call, in log order.
  [[nodiscard]] std::vector<kube::write_outcome> take_outcomes();
  // Waits until the sink has carried out everything queued, or `ms` have passed. True when idle.
  [[nodiscard]] bool wait_idle(std::int64_t ms);
  [[nodiscard]] cluster_counters counters() const;
  [[nodiscard]] std::uint64_t dropped() const;

 private:
  struct impl;
  explicit koordlet_cluster(std::unique_ptr<impl> p);
  std::unique_ptr<impl> impl_;
};

}  // namespace colony::agent
