// sim_config: one `colony sim --config FILE` policy configuration (YAML), parsed and validated.
//
// A config names everything that differs between two runs on the same trace: the usage model,
// the koordlet NodeMetric report interval, co-location on/off, Koordinator's slo-controller-config
// ConfigMap (parsed by actors/slo_controller), ClusterColocationProfiles (CRD YAML, parsed by
// actors/admission), the koordlet feature gates, and the KubeSchedulerConfiguration (parsed by
// actors/scheduler). The format is documented in docs/sim.md ("Config files"). Errors name the
// file and the field ("cfg.yaml:12:3: usageModel: expected one of none, v2018-curves, trace").
#pragma once

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "actors/admission/colocation_profile.hpp"
#include "actors/descheduler/descheduler_config.hpp"
#include "actors/koordlet/koordlet_types.hpp"
#include "actors/quota/quota_tree.hpp"
#include "actors/quota/webhook.hpp"
#include "actors/scheduler/scheduler_config.hpp"
#include "actors/slo_controller/slo_controller_config.hpp"
#include "messages/codec.hpp"
#include "messages/result.hpp"

namespace colony::sim {

enum class usage_model : std::uint8_t { none, v2018_curves, trace };
[[nodiscard]] std::string_view to_string(usage_model m) noexcept;
[[nodiscard]] result<usage_model> parse_usage_model(std::string_view s);

// Mean fraction of its request a pod of a class uses (the v2018-curves usage model scales a
// normalised machine curve by this; docs/sim.md "Usage model").
struct usage_ratio {
  double cpu = 0.35;
  double memory = 0.6;
};

// How long a pod runs. trace: its trace run time (deletion - scheduled). running-stays: pods whose
// trace phase is Running (alive when they left the observed trace) stay until the end of the
// run; the others keep their trace run time.
enum class pod_lifetime : std::uint8_t { trace, running_stays };
[[nodiscard]] std::string_view to_string(pod_lifetime l) noexcept;
[[nodiscard]] result<pod_lifetime> parse_pod_lifetime(std::string_view s);

// Which workload owns a trace pod (the openb trace names none). none: bare pods. shape: the pods
// of one request shape (trace qos, cpu, memory, GPU count and share) are the replicas of one
// ReplicaSet, named after the shape; a replacement belongs to its original's.
enum class workload_model : std::uint8_t { none, shape };
[[nodiscard]] std::string_view to_string(workload_model m) noexcept;
[[nodiscard]] result<workload_model> parse_workload_model(std::string_view s);

// numaTopology: the machine model every trace node gets, reported as its NodeResourceTopology
// (the koordlet's in a cluster). A node of C logical CPUs (its cpu capacity / 1000) becomes
// `sockets` x `numaNodesPerSocket` NUMA nodes of C / (sockets x numaNodesPerSocket x
// threadsPerCore) cores; when C does not divide so, one socket and one NUMA node with the same
// threads per core; when it still does not, one thread per core (numa_machine_model).
struct numa_topology_config {
  int sockets = 2;                // Default: 2
  int numa_nodes_per_socket = 1;  // Default: 1
  int threads_per_core = 2;       // Default: 2 (Hyper-Threading)
  // The kubelet's topology manager policy as NodeResourceTopology.topologyPolicies lists it
  // ("None", "BestEffort", "Restricted", "SingleNUMANodePodLevel", ...). Default: "None".
  std::string kubelet_topology_policy = "None";
  // The node label node.koordinator.sh/cpu-bind-policy ("FullPCPUsOnly", "SpreadByPCPUs").
  // Default: "" (no label).
  std::string node_cpu_bind_policy;
};

// The machine model of a node with `cpus` logical CPUs under `c` (see numa_topology_config);
// nullopt for a node without a whole CPU.
[[nodiscard]] std::optional<scheduler::numa::machine_model> numa_machine_model(
    std::int64_t cpus, const numa_topology_config& c);

// deviceTopology: the Device object (scheduling.koordinator.sh/v1alpha1) every GPU node of the
// trace gets, reported as the koord-device-daemon reports it (docs/sim.md "Devices"): the
// node's GPUs spread evenly, in minor order, over numa_nodes x pcie_switches_per_numa_node PCIe
// switches (switch s on NUMA node s / pcie_switches_per_numa_node, socket = NUMA node); each
// switch has rdma_per_pcie_switch RDMA NICs with vfs_per_rdma VFs each. And which GPU pods ask
// for RDMA: those asking at least rdma_pods_min_gpus whole GPUs get koordinator.sh/rdma =
// rdma_per_pod, a VF each (device-allocate-hint rdma.vfSelector {}) when rdma_pods_vf, and
// device-joint-allocate {gpu, rdma} with requiredScope joint_scope ("" = preferred; "None": no
// device-joint-allocate annotation, the NIC is placed on its own).
struct device_topology_config {
  int numa_nodes = 2;                                      // Default: 2
  int pcie_switches_per_numa_node = 2;                     // Default: 2
  int rdma_per_pcie_switch = 1;                            // Default: 1
  int vfs_per_rdma = 4;                                    // Default: 4
  std::int64_t gpu_memory_bytes = std::int64_t{80} << 30;  // gpuMemory. Default: 80Gi
  int rdma_pods_min_gpus = 1;                              // rdmaPods.minGPUs. Default: 1
  std::int64_t rdma_per_pod = 1;                           // rdmaPods.rdma. Default: 1
  bool rdma_pods_vf = true;                                // rdmaPods.vf. Default: true
  std::string joint_scope = "SamePCIe";                    // rdmaPods.jointScope. Default: SamePCIe
};

// cpuModels: one rule of the CPU model trace nodes report (the koordlet's
// node.koordinator.sh/cpu-basic-info): nodes with `cpus` logical CPUs (cpu capacity / 1000), or
// any node when cpus is 0, get the model. The first matching rule wins; a node no rule matches
// reports no model.
struct cpu_model_rule {
  std::int64_t cpus = 0;
  std::string model;                 // cpuModel
  bool hyper_thread_enabled = true;  // hyperThreadEnabled. Default: true
  bool turbo_enabled = false;        // turboEnabled. Default: false
};

struct sim_config {
  std::string name = "koordinator-defaults";
  std::string description;
  std::string source = "<built-in>";  // the file it came from
  // Default: v2018-curves (Colony choice: the openb trace has requests only).
  usage_model usage = usage_model::v2018_curves;
  // Default: 60 s (Koordinator colocation-config metricReportIntervalSeconds default).
  std::int64_t node_metric_report_interval_s = 60;
  // How often the koordlet of a node that hosts no pod reports. Default: 0 = every
  // node_metric_report_interval_s like any node (Koordinator). A larger value (a multiple of the
  // report interval) elides reports that only repeat "empty, usage 0" (docs/sim.md).
  std::int64_t idle_node_report_interval_s = 0;
  // Default: 3600 s (Colony choice: metrics.csv row spacing; 149 days = 3,580 rows).
  std::int64_t metrics_interval_s = 3600;
  // Default: trace (the trace's own clock).
  pod_lifetime lifetime = pod_lifetime::trace;
  // Default: none (the trace's pods are bare, as the trace gives them).
  workload_model workloads = workload_model::none;
  // Default: true. Off = no slo-controller batch resources and no koordlet QoS at all.
  bool colocation = true;
  // Default: prod cpu 0.35 / memory 0.6, batch cpu 0.7 / memory 0.6 (Colony choice; the class is
  // the trace's qos column: BE rows use batch, others prod;
  // near the v2018 means of online vs batch containers; docs/sim.md).
  usage_ratio prod_ratio{0.35, 0.6};
  usage_ratio batch_ratio{0.7, 0.6};
  // The slo-controller-config ConfigMap data as JSON object text, and its parsed form.
  std::string slo_configmap_json = "{}";
  slo_controller::slo_controller_config slo;
  // ClusterColocationProfiles (CRD YAML) and their parsed set.
  std::string profiles_yaml;
  admission::profile_set profiles;
  // Koordinator's four PriorityClasses and the config's priorityClasses.
  admission::priority_class_table priority_classes;
  // priorityClasses: PriorityClass objects (scheduling.k8s.io/v1; several documents or a List)
  // beside Koordinator's four, which they may not redefine. Default: none. Each is logged at
  // t = 0 as a ConfigUpdated of kind PriorityClass, as the Kubernetes source logs a cluster's.
  std::vector<admission::priority_class_info> extra_priority_classes;
  // koordlet feature gates. Default: Koordinator's (BECPUSuppress on, evictions off).
  koordlet::koordlet_feature_gates gates;
  // ElasticQuotas (CRD YAML: scheduling.sigs.k8s.io/v1alpha1 ElasticQuota, several documents or
  // a List) and their parsed specs. Default: none. Any quota switches the scheduler's
  // ElasticQuota plugin on (PreFilter admission, Reserve); pods join a quota by the label
  // quota.scheduling.koordinator.sh/name (set by a ClusterColocationProfile) or by namespace.
  std::string quotas_yaml;
  std::vector<quota::quota_spec> quotas;
  // elasticQuotaProfiles: ElasticQuotaProfile objects (quota.koordinator.sh/v1alpha1; several
  // documents or a List). Default: none. Each is logged at t = 0 as an ObjectObserved (as the
  // Kubernetes source records a cluster's), and koord-manager's profile controller
  // (actors/quota/actor/quota_profile_component.hpp) makes its tree's root quota from the nodes
  // its nodeSelector matches. A quota of elasticQuotas whose parent is a profile's quotaName
  // joins that tree (its tree-id label defaulted from the profile, as the quota webhook does).
  struct quota_profile_object {
    std::string namespace_name, name;
    std::vector<std::pair<std::string, std::string>> labels;  // sorted by key
    std::string spec_json;
  };
  std::vector<quota::elastic_quota_profile> quota_profiles;
  std::vector<quota_profile_object> quota_profile_objects;  // the same, as logged
  // schedulerTieBreak: the scheduler's rule among equally scored nodes (framework.hpp
  // tie_break): seeded, or nodeName (the smallest node name, as the FGD authors' simulator).
  // Default: seeded (Colony's stand-in for kube-scheduler's random choice).
  scheduler::tie_break scheduler_tie_break = scheduler::tie_break::seeded;
  // schedulerFeatureGates: koord-scheduler's --feature-gates text
  // ("ElasticQuotaIgnorePodOverhead=true"). Default: all off.
  scheduler::scheduler_feature_gates scheduler_gates;
  // KubeSchedulerConfiguration YAML and its parsed form. Default: Koordinator's shipped one.
  std::string scheduler_yaml;
  scheduler::scheduler_config scheduler;
  // koord-descheduler's DeschedulerConfiguration (YAML) and its parsed form. Default: none (no
  // descheduler, as Koordinator installs it only on request). Given: the descheduler and the
  // migration controller components run (docs/sim.md "Descheduling").
  std::string descheduler_yaml;
  std::optional<descheduler::descheduler_config> descheduler;
  // numaTopology (above). Default: none: nodes have no NodeResourceTopology, so a cpuset
  // (LSE/LSR) pod is unschedulable with "node(s) invalid CPU Topology", as on a cluster
  // without the koordlet's report.
  std::optional<numa_topology_config> numa_topology;
  // cpuModels (above). Default: none (nodes report no CPU model).
  std::vector<cpu_model_rule> cpu_models;
  // deviceTopology (above). Default: none: GPU nodes have no Device object, DeviceShare serves
  // their GPUs one by one and no pod asks for RDMA.
  std::optional<device_topology_config> device_topology;
  // Whether the slo-controller runs Koordinator's cpunormalization and resourceamplification
  // plugins: set when sloControllerConfig gives cpu-normalization-config or
  // resource-amplification-config (the plugins write every node's ratio annotations once on,
  // which would change every existing run's records; docs/cpu-normalization.md).
  bool cpu_normalization_plugins = false;
  // The top-level fields the file sets. A re-simulation of a cluster's log (--from-log) replaces
  // only the configuration the file gives and keeps the cluster's own for the rest (docs/sim.md
  // "Re-simulating a cluster's log"); a trace run reads the defaults above for what is absent.
  std::set<std::string, std::less<>> given;
  [[nodiscard]] bool gives(std::string_view field) const { return given.count(field) != 0; }
};

// Koordinator's PriorityClasses as installed by its chart: koord-prod 9000, koord-mid 7000,
// koord-batch 5000, koord-free 3000.
[[nodiscard]] admission::priority_class_table koordinator_priority_classes();

// An ElasticQuotaProfile of the config as the ObjectObserved the Kubernetes source would log
// for it (entity kind Object, key quota_profile_key), built on b.fbb().
[[nodiscard]] flatbuffers::Offset<wire::ObjectObserved> quota_profile_observed(
    messages::event_builder& b, const sim_config::quota_profile_object& o);
[[nodiscard]] std::string quota_profile_key(const sim_config::quota_profile_object& o);

// A PriorityClass as the spec of its ConfigUpdated (the shape the Kubernetes source logs and
// admission::parse_priority_classes_yaml reads).
[[nodiscard]] std::string priority_class_spec(const admission::priority_class_info& pc);

// Parses a config document; `source` names it in errors.
[[nodiscard]] result<sim_config> parse_sim_config(std::string_view yaml, std::string_view source);
[[nodiscard]] result<sim_config> load_sim_config(const std::string& path);
// The built-in default (same text as sim/configs/koordinator-defaults.yaml).
[[nodiscard]] std::string_view default_config_text();
[[nodiscard]] result<sim_config> default_sim_config();

}  // namespace colony::sim
