// koordlet_component: one node's koordlet QoS manager (pkg/koordlet/qosmanager: cpusuppress,
// memoryevict, cpuevict, cpuburst plugins) as a component over the log. One instance per node,
// named "koordlet/<node>".
//
// Consumes (only what concerns its node, except pod admission which precedes placement):
//   NodeRegistered / NodeRemoved / NodeBatchResourceUpdated of its node (capacity, allocatable
//     with batch-*), PodMutated (a pod's QoS, priority, labels and requests, kept until the pod
//     is placed: PodScheduled on this node keeps it, elsewhere drops it); PodSubmitted the same
//     way where the log has no PodMutated for the pod (a koordlet's own log in a cluster: the
//     API server's pod is the admitted one; its QoS and priority class are read from its labels,
//     status.qosClass and spec.priority as the webhook would, GetPodQoSClassWithDefault and
//     GetPodPriorityClassWithDefault), PodScheduled,
//     PodEvicted, PodFinished, PodRejected, PodUsageSampled of its node (last usage), and its
//     node's NodeSLOUpdated (the NodeSLO the slo-controller rendered: resourceUsedThresholdWithBE
//     and cpuBurstStrategy, as Koordinator's koordlet reads its NodeSLO,
//     pkg/koordlet/statesinformer/impl/states_nodeslo.go) when follow_node_slo. Until the
//     first arrives, the options' strategies are in force; a spec that fails to parse keeps the
//     one in force and is kept in config_errors().
//   NodeMetricReported of its node: the usage sample; each report runs one round of every plugin
//     at the report's event time (the qosmanager's 1-s loops collapse onto the report cadence).
//     A report this component emitted itself (below) is not a round: its samples were.
//   NodeUsageSampled of its node (a node's collectors, `colony koordlet`): one collect interval,
//     the metric cache's sample (pkg/koordlet/metricsadvisor). The sample goes into the
//     NodeMetric window (node_metric.hpp sample_window), its usage becomes the "last" metrics the
//     plugins read (helpers.CollectNodeMetricLast), and every plugin runs one round at its event
//     time (the qosmanager's loops at the collect cadence). A pod in the sample that the log has
//     not placed on this node (no PodScheduled: a node whose pods no Colony scheduler bound) is
//     taken as the sample describes it (QoS, Kubernetes tier) and dropped once a sample no
//     longer lists it. A pod evicted here (its PodEvicted) is not taken back from the samples
//     while they still list it (its cgroup outlives the eviction until the kubelet removes it),
//     for Koordinator's evicted-pod cache lifetime (pkg/util/cache/expiration_cache.go: 2 min;
//     qosmanager/plugins/util/evictor.go IsPodEvicted): it is not evicted twice.
// Emits, causation = the NodeMetricReported's or NodeUsageSampled's offset:
//   NodeMetricReported (node) once a report interval has passed since the last one, from the
//     samples' window (states_nodemetric.go collectMetric: build_node_metric_status); the first
//     one a report interval after the first sample. Its memory is the samples'
//     memory_with_hot_page_bytes where report_policy asks usageWithHotPageCache and the sample
//     has them (a pod without them: its usage), memory_collect_policy says which.
//   BeSuppressed (node) when the suppression written changes: cpuset policy when the cpuset
//     differs from the last one written, cfsQuota policy when adjust_by_cfs_quota writes (delta
//     above 1 % of the node), and once on recovery (be_cpu_milli -1) after a suppression.
//     inputs = calculate_be_suppress_cpu's terms plus the enforcement step.
//   PodEvicted (pod) per new victim of memory_evict / cpu_evict, in eviction order, with the
//     reason string Koordinator writes, released = the pod's requests, and inputs: the victim's
//     order, its sort keys, what its task had to release and what this victim released
//     (release accounting, cumulative in the round), the node-level trigger values.
//   CgroupUpdated (pod) with cpu.cfs_burst_us when static CPU burst changes a pod's value.
//   CgroupUpdated (pod) with the runtime hooks' pod files when they change (the hooks'
//     reconcilers, pkg/koordlet/runtimehooks/reconciler, at the collect cadence): BatchResource
//     (a Raw-QoS BE pod with batch resources: cpu.shares, cpu.cfs_quota_us and
//     memory.limit_in_bytes from be_cgroup.hpp, the quota divided by the node's
//     node.koordinator.sh/cpu-normalization-ratio annotation when above 1) and GroupIdentity
//     (cpu.bvt_warp_ns by group_identity.hpp once the NodeSLO's resourceQOSStrategy enables a
//     class; 0 again when it is disabled later). Files in cgroup v1 names; target = pod key;
//     inputs name the pod's uid (term podUID) where it differs from the key.
//     Memory QoS (memory_qos.hpp: memory.min, memory.low, memory.high of a pod whose class
//     enables memoryQOS; a pod known from the samples only has no spec and is skipped).
//   CgroupUpdated (node) with cpu.bvt_warp_ns of the kube QoS dirs, targets "qos/guaranteed",
//     "qos/burstable", "qos/besteffort" (getKubeQOSDirBvtValue), when they change.
//   CgroupUpdated (node) per resctrl group, targets "resctrl/LSR", "resctrl/LS", "resctrl/BE",
//     when they change (RdtResctrl, once a class enables resctrlQOS; resctrl.hpp): "schemata"
//     (the group's L3 and MB lines, where the machine's resctrl info is known) and, for an
//     enabled class, "tasks" (the uids of the group's pods, comma-separated: the executor moves
//     their cgroups' tasks into the group).
//   CgroupUpdated (node) with cpu.bvt_warp_ns of each host application, target
//     "host-app:<name>" (the host-app reconciler, runtimehooks/reconciler/host_app_reconciler.go,
//     with groupidentity's getHostQOSBvtValue), when it changes.
//   CgroupUpdated (pod) with cpu.cfs_quota_us of a container ("<container id>/cpu.cfs_quota_us")
//     and its pod when cpuburst's cfs-quota burst changes them (cfs_quota_burst_round.hpp; from
//     the samples' containers, so only where a node's collectors sample).
//   NodeResourceTopologyUpdated (node) when its node's NodeResourceTopology changes
//     (statesinformer's nodeTopoInformer reportNodeTopology; node_topology.hpp): from the last
//     NodeTopologySampled of its node (a node's collectors: the machine's CPUs, NUMA nodes and CPU
//     basic info), the cpusets its pods hold (PodScheduled's cpuset, Koordinator's resource-status)
//     and the Node's node.koordinator.sh/reservation; nothing before the first NodeTopologySampled
//     (a sim's nodes get theirs from the trace source). The kube sink creates or updates the
//     NodeResourceTopology object from it.
// Host applications (NodeSLO spec.hostApplications, or koordlet_options::host_apps on a lone
// node): host_apps() is the list the node's collector reads cgroups for; NodeUsageSampled's
// host_apps (by name; a NodeMetricReported's host_apps likewise) become their last usage, the
// window's host-app series, the system usage's subtrahend, cpusuppress's hostApps (non-BE ones
// lower BE's share) and every report's host_apps. Not modelled: the koordinator.sh/eviction-policy
// and cpuBurst pod annotations (all features allowed / node config), the cpuset hook of LS host
// applications (it needs the NodeResourceTopology's CPU share pools). Single-threaded;
// deterministic: ordered maps, event time only.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "actors/entities/component.hpp"
#include "actors/koordlet/actor/cfs_quota_burst_round.hpp"
#include "actors/koordlet/be_cgroup.hpp"
#include "actors/koordlet/cpu_burst.hpp"
#include "actors/koordlet/cpu_evict.hpp"
#include "actors/koordlet/cpu_suppress.hpp"
#include "actors/koordlet/group_identity.hpp"
#include "actors/koordlet/memory_evict.hpp"
#include "actors/koordlet/memory_qos.hpp"
#include "actors/koordlet/node_metric.hpp"
#include "actors/koordlet/node_topology.hpp"
#include "actors/koordlet/resctrl.hpp"
#include "actors/slo_controller/node_slo.hpp"
#include "messages/result.hpp"

namespace colony::koordlet_actor {

// A host application's CgroupUpdated target: "host-app:<name>" (entity Node). A ':' is in no pod
// key (namespaces and names are DNS labels, uids hex and '-'), so no pod's target can be one.
inline constexpr std::string_view host_app_target_prefix = "host-app:";

struct koordlet_options {
  std::string node;  // the node this koordlet runs on
  koordlet::resource_threshold_strategy threshold;
  koordlet::koordlet_feature_gates gates;
  koordlet::qos_manager_timing timing;
  koordlet::cpu_burst_strategy cpu_burst;
  // resourceQOSStrategy's cpuQOS (group identity). Default: every class disabled.
  koordlet::resource_qos_cpu_strategy cpu_qos;
  // resourceQOSStrategy's memoryQOS. Default: every class disabled.
  koordlet::resource_qos_memory_strategy memory_qos;
  // resourceQOSStrategy's resctrlQOS. Default: DefaultResctrlQOS (CAT 0-100 %, BE 0-30 %, MBA
  // 100), every class disabled.
  koordlet::resource_qos_resctrl_strategy resctrl_qos;
  // The machine's resctrl info (<resctrl root>/info and the root schemata), read by the agent at
  // start: the schema has no record for it. Default: none (resctrl not mounted, or not read):
  // only the enabled groups' task assignments are decided, which the executor reports
  // unsupported where resctrl is not mounted.
  std::optional<koordlet::resctrl_info> resctrl_info;
  koordlet::memory_evict_options memory_evict;
  // Logical CPUs for the cpuset policy. Default: 0 = the machine's CPUs from the node's
  // NodeTopologySampled; before one (the sim), capacity cores, two hyper-threads per physical
  // core, one socket and NUMA node.
  std::int32_t processors = 0;
  // Default: true (take threshold and cpu burst strategies from the node's NodeSLOUpdated).
  bool follow_node_slo = true;
  // Take the batch and mid allocatable from NodeRegistered (the Node's status as the API server
  // holds it, as Koordinator's koordlet reads node.status.allocatable). Default: false (they come
  // from the slo-controller's NodeBatchResourceUpdated, which a node's own log does not hold:
  // colony koordlet in a cluster sets it).
  bool batch_from_node_status = false;
  // NodeMetric reporting from NodeUsageSampled (NodeMetric spec.metricCollectPolicy).
  koordlet::node_metric_collect_policy report_policy;
  // The report cadence in ms, overriding report_policy's reportIntervalSeconds and its 30-s floor
  // (tests and short demos). Default: unset (Koordinator's interval).
  std::optional<std::int64_t> report_interval_ms;
  // NodeSLO spec.hostApplications until a NodeSLOUpdated says otherwise. Default: none.
  std::vector<koordlet::host_app_info> host_apps;
};

// A NodeSLO's ResourceThresholdStrategy (slo_controller::parse_node_slo_spec) in the koordlet
// policies' types: every field, with DefaultResourceThresholdStrategy's value where the strategy
// leaves one unset (the koordlet merges its NodeSLO over the defaults). A change of types only:
// which strategy a node gets is the slo-controller's rendering (node_slo.hpp).
[[nodiscard]] koordlet::resource_threshold_strategy to_koordlet(
    const slo_controller::resource_threshold_strategy& s);
[[nodiscard]] koordlet::cpu_burst_strategy to_koordlet(const slo_controller::cpu_burst_strategy& s);
// resourceQOSStrategy's cpuQOS merged over Koordinator's DefaultCPUQOS (groupIdentity LSR 2, LS 2,
// BE -1, SYSTEM 0; enable false).
[[nodiscard]] koordlet::resource_qos_cpu_strategy to_koordlet(
    const slo_controller::resource_qos_strategy& s);
// resourceQOSStrategy's memoryQOS merged over the defaults (enable false, percents 0).
[[nodiscard]] koordlet::resource_qos_memory_strategy to_koordlet_memory(
    const slo_controller::resource_qos_strategy& s);
// resourceQOSStrategy's resctrlQOS merged over DefaultResctrlQOS (LSR and LS 0-100 %, BE 0-30 %,
// MBA 100; enable false). SYSTEM has no resctrl group.
[[nodiscard]] koordlet::resource_qos_resctrl_strategy to_koordlet_resctrl(
    const slo_controller::resource_qos_strategy& s);

// NodeSLO spec.hostApplications as the koordlet policies read them (no usage yet).
[[nodiscard]] std::vector<koordlet::host_app_info> to_koordlet(
    const std::vector<slo_controller::host_application_spec>& apps);

// The inputs of a koordlet's last BE suppression decision and the decision
// (koordlet_component::suppress_round).
struct koordlet_suppress_memo {
  bool valid = false;  // the inputs below are those of d (only kept for a node without pods)
  std::uint64_t inputs_gen = 0;
  std::optional<double> node_cpu_cores;
  std::vector<std::int32_t> be_cpuset;
  std::int64_t be_cfs_quota_us = 0;
  koordlet::cpu_suppress_state state;
  koordlet::cpu_suppress_decision d;
};

class koordlet_component final : public entities::component {
 public:
  explicit koordlet_component(koordlet_options opt);

  [[nodiscard]] std::string_view name() const override { return name_; }
  [[nodiscard]] bool wants(wire::Payload type) const override;
  // One koordlet per node (a DaemonSet): a host delivers only its node's records.
  [[nodiscard]] entities::component_scope scope() const override {
    return entities::component_scope::node;
  }
  [[nodiscard]] std::string_view scope_node() const override { return opt_.node; }
  void on_event(const wire::Envelope& env, std::vector<messages::byte_buffer>& out) override;

  // The policy inputs as the component holds them (tests recompute the policies from these).
  [[nodiscard]] const koordlet::node_info& node() const { return node_; }
  [[nodiscard]] std::vector<koordlet::pod_info> pods() const;  // ascending pod key
  [[nodiscard]] const koordlet::resource_threshold_strategy& threshold() const {
    return opt_.threshold;
  }
  [[nodiscard]] const koordlet::cpu_burst_strategy& cpu_burst() const { return opt_.cpu_burst; }
  [[nodiscard]] const koordlet::resource_qos_cpu_strategy& cpu_qos() const { return opt_.cpu_qos; }
  [[nodiscard]] const koordlet::resource_qos_memory_strategy& memory_qos() const {
    return opt_.memory_qos;
  }
  [[nodiscard]] const koordlet::resource_qos_resctrl_strategy& resctrl_qos() const {
    return opt_.resctrl_qos;
  }
  // The node's node.koordinator.sh/cpu-normalization-ratio (1 when absent or out of [1, 5]).
  [[nodiscard]] double cpu_normalization_ratio() const { return cpu_norm_ratio_; }
  [[nodiscard]] const koordlet::evictor_state& memory_evictor() const { return mem_evictor_; }
  [[nodiscard]] std::optional<double> node_cpu_used_cores() const { return node_cpu_cores_; }
  [[nodiscard]] std::optional<double> node_memory_used_bytes() const { return node_mem_bytes_; }
  [[nodiscard]] const std::vector<koordlet::processor_info>& processors() const;
  [[nodiscard]] const std::vector<error>& config_errors() const { return config_errors_; }
  // The host applications declared for this node, with their last usage (the collector reads
  // their cgroups; the executor finds a "host-app:<name>" target's cgroup here).
  [[nodiscard]] const std::vector<koordlet::host_app_info>& host_apps() const {
    return opt_.host_apps;
  }
  [[nodiscard]] const cfs_quota_burster& cfs_burst() const { return cfs_burst_; }
  // The node's NodeResourceTopology as last emitted (none before a NodeTopologySampled), and why
  // the last machine reading gave none (an inconsistent topology, a bad reservation annotation).
  [[nodiscard]] const std::optional<koordlet::node_topology_report>& topology_reported() const {
    return topology_reported_;
  }
  [[nodiscard]] const std::optional<error>& topology_error() const { return topology_error_; }
  // Whether the next sample should carry containers' cfs quotas and throttling (the collector's
  // container_bandwidth): cfs-quota burst is on (CPUBurst gate, a policy with cfsQuotaBurst), or
  // a quota it raised awaits its reset. Koordinator's default policy, none, needs neither.
  [[nodiscard]] bool wants_container_bandwidth() const;
  // How far back the samples this component reads reach, in ms: the longest NodeMetric
  // aggregation window, twice the CPU eviction window, the eviction and cfs-quota base memories.
  // A log keeping samples this long replays to the same windows (the agent's sample retention).
  [[nodiscard]] std::int64_t longest_window_ms() const;

  // A pod as the koordlet sees it, from its PodMutated.
  [[nodiscard]] static koordlet::pod_info pod_from_event(const wire::PodMutated& e,
                                                         event_time created);
  // The machine a NodeTopologySampled describes.
  [[nodiscard]] static koordlet::machine_info machine_from_event(
      const wire::NodeTopologySampled& e);
  // A pod as the API server holds it after admission, from its PodSubmitted.
  [[nodiscard]] static koordlet::pod_info pod_from_event(const wire::PodSubmitted& e,
                                                         event_time created);

 private:
  void on_metric(const wire::Envelope& env, const wire::NodeMetricReported& e,
                 std::vector<messages::byte_buffer>& out);
  void on_sample(const wire::Envelope& env, const wire::NodeUsageSampled& e,
                 std::vector<messages::byte_buffer>& out);
  // One round of every plugin at the envelope's time over the last metrics held.
  void qos_round(const wire::Envelope& env, std::vector<messages::byte_buffer>& out);
  void report(const wire::Envelope& env, std::vector<messages::byte_buffer>& out);
  [[nodiscard]] std::int64_t report_interval_ms() const;
  void suppress_round(const wire::Envelope& env, std::span<const koordlet::pod_info> pods,
                      std::vector<messages::byte_buffer>& out);
  void evict(const wire::Envelope& env, std::span<const koordlet::pod_info> pods,
             const koordlet::evict_round& round, const std::vector<koordlet::evict_task>& tasks,
             const std::vector<koordlet::explain_term>& trigger,
             std::vector<messages::byte_buffer>& out);
  void burst_round(const wire::Envelope& env, std::span<const koordlet::pod_info> pods,
                   std::vector<messages::byte_buffer>& out);
  // cpuburst's cfs-quota burst over the last sample's containers (cfs_quota_burst_round.hpp).
  void cfs_burst_round(const wire::Envelope& env, std::span<const koordlet::pod_info> pods,
                       std::vector<messages::byte_buffer>& out);
  // The runtime hooks' reconcile: BatchResource and GroupIdentity files of pods and QoS dirs.
  void hooks_round(const wire::Envelope& env, std::span<const koordlet::pod_info> pods,
                   std::vector<messages::byte_buffer>& out);
  [[nodiscard]] messages::header header(const wire::Envelope& env, wire::EntityKind kind,
                                        std::string_view key) const;
  // Emits the node's NodeResourceTopologyUpdated when the report differs from the last one
  // (topology_round.cpp).
  void topology_round(const wire::Envelope& env, std::vector<messages::byte_buffer>& out);

  koordlet_options opt_;
  std::string name_;
  bool registered_ = false;
  koordlet::node_info node_;
  std::map<std::string, koordlet::pod_info, std::less<>> pending_;  // admitted, not placed
  // The pods on this node, ascending by key, contiguous: every report hands them to the
  // strategies as one span (a map would be copied into a vector each time).
  class pod_table {
   public:
    [[nodiscard]] koordlet::pod_info* find(std::string_view key);
    void upsert(std::string_view key, koordlet::pod_info p);
    void erase(std::string_view key);
    void clear() {
      keys_.clear();
      pods_.clear();
    }
    [[nodiscard]] std::span<const koordlet::pod_info> all() const { return pods_; }

   private:
    std::vector<std::string> keys_;
    std::vector<koordlet::pod_info> pods_;  // pods_[i] is the pod of keys_[i]
  };
  pod_table pods_;
  mutable std::vector<koordlet::processor_info> processors_;  // cache of processors()
  // The last suppression decision of a node without pods (suppress_round); inputs_gen_ counts
  // the events that may change the inputs it does not keep (all but reports).
  koordlet_suppress_memo suppress_memo_;
  koordlet::cpuset_policy_memo cpuset_memo_;  // the cpuset policy's picks, by (cpus, pool)
  std::uint64_t inputs_gen_ = 0;
  std::optional<double> node_cpu_cores_, node_mem_bytes_;
  std::vector<double> orphan_cpu_;
  // Suppression in force.
  koordlet::cpu_suppress_state suppress_state_;
  std::int64_t be_cfs_quota_us_ = koordlet::be_unset_quota;
  std::vector<std::int32_t> be_cpuset_;
  std::string last_suppress_;  // "<policy>|<cpuset or milli>" of the last BeSuppressed; "" none
  // Evictors and the BE CPU window.
  koordlet::evictor_state mem_evictor_;
  std::optional<koordlet::evictor_state> cpu_evictor_;  // starts at the first report
  std::vector<koordlet::be_cpu_sample> be_samples_;
  std::vector<koordlet::usage_sample> node_samples_;
  std::map<std::string, std::int64_t, std::less<>> burst_written_;
  cfs_quota_burster cfs_burst_;
  std::int64_t sample_interval_ms_ = 1000;  // the last NodeUsageSampled's interval
  // The runtime hooks' files last emitted, by pod key or QoS dir target.
  std::map<std::string, std::vector<std::pair<std::string, std::string>>, std::less<>>
      hooks_written_;
  bool bvt_active_ = false;      // a class was enabled once: later rounds write (0 when disabled)
  bool resctrl_active_ = false;  // a class enabled resctrlQOS once: schemata kept in step
  bool hot_pages_in_force_ = false;  // the last sample's memory is usageWithHotPageCache
  double cpu_norm_ratio_ = 1.0;
  std::vector<error> config_errors_;
  // NodeResourceTopology: the machine, the Node's reservation annotation, the last report.
  std::optional<koordlet::machine_info> machine_;
  std::string node_reservation_;
  // Its reservedCPUs (none when it does not parse), which cpusuppress leaves out of BE's cpuset.
  std::vector<std::int32_t> reserved_cpus_;
  std::optional<koordlet::node_topology_report> topology_reported_;
  std::optional<error> topology_error_;
  // NodeMetric from samples: the window (pods keyed by pod key), when the next report is due,
  // and the pods known from samples only (not placed on this node by the log).
  koordlet::sample_window window_;
  std::optional<std::int64_t> next_report_ms_;
  std::set<std::string, std::less<>> sampled_only_;
  // Pods evicted here, by key, with the event time of their PodEvicted: not taken back from
  // the samples until a sample no longer lists them or evicted_ttl_ms has passed.
  std::map<std::string, std::int64_t, std::less<>> evicted_;
  static constexpr std::int64_t evicted_ttl_ms = 2 * 60 * 1000;
  // Pods this koordlet evicted, as they were, with the time of their PodEvicted: an eviction the
  // API refused (WriteFailed) puts the pod back, so a later round may evict it again; dropped
  // when the pod finishes or after evicted_ttl_ms.
  struct evicting {
    koordlet::pod_info pod;
    std::int64_t at = 0;
  };
  std::map<std::string, evicting, std::less<>> evicting_;
  messages::event_builder b_;
};

}  // namespace colony::koordlet_actor
