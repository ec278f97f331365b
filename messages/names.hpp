// Koordinator's resource, label and annotation names, each defined once, byte for byte as
// Koordinator spells them (apis/extension/*.go), so a Koordinator user finds them by grep.
// Append new names in the section of their Koordinator file; never rename one.
#pragma once

#include <string_view>

namespace colony::names {

// apis/extension/resource.go: co-location resources. batch-cpu and mid-cpu count milli-cores,
// batch-memory and mid-memory count bytes.
inline constexpr std::string_view batch_cpu = "kubernetes.io/batch-cpu";
inline constexpr std::string_view batch_memory = "kubernetes.io/batch-memory";
inline constexpr std::string_view mid_cpu = "kubernetes.io/mid-cpu";
inline constexpr std::string_view mid_memory = "kubernetes.io/mid-memory";

// Core Kubernetes resources.
inline constexpr std::string_view cpu = "cpu";
inline constexpr std::string_view memory = "memory";
inline constexpr std::string_view pods = "pods";

// apis/extension/device_share.go: GPU resources.
inline constexpr std::string_view nvidia_gpu = "nvidia.com/gpu";
inline constexpr std::string_view koord_gpu = "koordinator.sh/gpu";
inline constexpr std::string_view gpu_core = "koordinator.sh/gpu-core";
inline constexpr std::string_view gpu_memory = "koordinator.sh/gpu-memory";
inline constexpr std::string_view gpu_memory_ratio = "koordinator.sh/gpu-memory-ratio";
// The GPU model a node's device plugin reports (pkg/apis/extension/device_share.go
// LabelGPUModel).
inline constexpr std::string_view label_gpu_model = "node.koordinator.sh/gpu-model";

// apis/extension/constants.go, priority.go, qos.go: labels.
inline constexpr std::string_view label_qos_class = "koordinator.sh/qosClass";
inline constexpr std::string_view label_priority_class = "koordinator.sh/priority-class";
inline constexpr std::string_view label_priority = "koordinator.sh/priority";

// apis/extension/reservation.go: a pod's reservation label and annotation, a reservation's order.
inline constexpr std::string_view label_reservation_ignored =
    "scheduling.koordinator.sh/reservation-ignored";
inline constexpr std::string_view annotation_reservation_affinity =
    "scheduling.koordinator.sh/reservation-affinity";
inline constexpr std::string_view label_reservation_order =
    "scheduling.koordinator.sh/reservation-order";
// The label koord-descheduler puts on the Reservation of a ReservationFirst migration
// (descheduler/controllers/migration/reservation/util.go), value "koord-descheduler".
inline constexpr std::string_view label_created_by = "app.kubernetes.io/created-by";

// apis/extension/elastic_quota.go: quota labels and annotations.
inline constexpr std::string_view label_quota_name = "quota.scheduling.koordinator.sh/name";
inline constexpr std::string_view label_quota_parent = "quota.scheduling.koordinator.sh/parent";
inline constexpr std::string_view label_quota_is_parent =
    "quota.scheduling.koordinator.sh/is-parent";
inline constexpr std::string_view label_quota_tree_id = "quota.scheduling.koordinator.sh/tree-id";
inline constexpr std::string_view label_quota_is_root = "quota.scheduling.koordinator.sh/is-root";
inline constexpr std::string_view label_quota_allow_lent_resource =
    "quota.scheduling.koordinator.sh/allow-lent-resource";
inline constexpr std::string_view label_preemptible = "quota.scheduling.koordinator.sh/preemptible";
inline constexpr std::string_view annotation_shared_weight =
    "quota.scheduling.koordinator.sh/shared-weight";
inline constexpr std::string_view annotation_runtime = "quota.scheduling.koordinator.sh/runtime";
inline constexpr std::string_view annotation_request = "quota.scheduling.koordinator.sh/request";
inline constexpr std::string_view root_quota_name = "koordinator-root-quota";
inline constexpr std::string_view system_quota_name = "koordinator-system-quota";
inline constexpr std::string_view default_quota_name = "koordinator-default-quota";
inline constexpr std::string_view label_quota_profile = "quota.scheduling.koordinator.sh/profile";
inline constexpr std::string_view label_quota_ignore_default_tree =
    "quota.scheduling.koordinator.sh/ignore-default-tree";
inline constexpr std::string_view label_allow_force_update =
    "quota.scheduling.koordinator.sh/allow-force-update";
inline constexpr std::string_view annotation_child_request =
    "quota.scheduling.koordinator.sh/child-request";
inline constexpr std::string_view annotation_resource_keys =
    "quota.scheduling.koordinator.sh/resource-keys";
inline constexpr std::string_view annotation_total_resource =
    "quota.scheduling.koordinator.sh/total-resource";
inline constexpr std::string_view annotation_unschedulable_resource =
    "quota.scheduling.koordinator.sh/unschedulable-resource";
inline constexpr std::string_view annotation_quota_namespaces =
    "quota.scheduling.koordinator.sh/namespaces";
inline constexpr std::string_view annotation_guaranteed =
    "quota.scheduling.koordinator.sh/guaranteed";
inline constexpr std::string_view annotation_allocated =
    "quota.scheduling.koordinator.sh/allocated";
inline constexpr std::string_view annotation_non_preemptible_request =
    "quota.scheduling.koordinator.sh/non-preemptible-request";
inline constexpr std::string_view annotation_non_preemptible_used =
    "quota.scheduling.koordinator.sh/non-preemptible-used";
inline constexpr std::string_view annotation_max_strict_check_resource_keys =
    "quota.scheduling.koordinator.sh/max-strict-check-resource-keys";

// apis/extension/coscheduling.go: gang annotations.
inline constexpr std::string_view annotation_gang_name = "gang.scheduling.koordinator.sh/name";
inline constexpr std::string_view annotation_gang_min_num =
    "gang.scheduling.koordinator.sh/min-available";
inline constexpr std::string_view annotation_gang_wait_time =
    "gang.scheduling.koordinator.sh/waiting-time";
inline constexpr std::string_view annotation_gang_mode = "gang.scheduling.koordinator.sh/mode";
inline constexpr std::string_view annotation_gang_groups = "gang.scheduling.koordinator.sh/groups";
inline constexpr std::string_view label_pod_group = "pod-group.scheduling.sigs.k8s.io";

// apis/extension/constants.go, evict.go, cpu_burst, memory_qos, node_reservation: koordlet.
inline constexpr std::string_view annotation_eviction_policy = "koordinator.sh/eviction-policy";
inline constexpr std::string_view label_eviction_enabled = "koordinator.sh/eviction-enabled";
inline constexpr std::string_view annotation_eviction_priority = "koordinator.sh/eviction-priority";
inline constexpr std::string_view annotation_cpu_burst = "koordinator.sh/cpuBurst";
inline constexpr std::string_view annotation_memory_qos = "koordinator.sh/memoryQOS";
inline constexpr std::string_view annotation_resource_status =
    "scheduling.koordinator.sh/resource-status";
inline constexpr std::string_view annotation_node_reservation = "node.koordinator.sh/reservation";

// koord-descheduler's PodMigrationJob annotations: pkg/descheduler/controllers/migration/
// evictor/interpreter.go (reason, trigger), evict.go (the creating controller instance).
inline constexpr std::string_view annotation_evict_reason = "koordinator.sh/evict-reason";
inline constexpr std::string_view annotation_evict_trigger = "koordinator.sh/evict-trigger";
inline constexpr std::string_view annotation_job_created_by = "koordinator.sh/job-created-by";

// apis/extension/load_aware.go, node.go: scheduler annotations.
inline constexpr std::string_view annotation_custom_usage_thresholds =
    "scheduling.koordinator.sh/usage-thresholds";
inline constexpr std::string_view annotation_node_raw_allocatable =
    "node.koordinator.sh/raw-allocatable";
inline constexpr std::string_view annotation_load_estimated_scaling_factors =
    "scheduling.koordinator.sh/load-estimated-scaling-factors";
inline constexpr std::string_view annotation_load_estimated_seconds_after_pod_scheduled =
    "scheduling.koordinator.sh/load-estimated-seconds-after-pod-scheduled";
inline constexpr std::string_view annotation_load_estimated_seconds_after_initialized =
    "scheduling.koordinator.sh/load-estimated-seconds-after-initialized";
inline constexpr std::string_view annotation_gang_total_num =
    "gang.scheduling.koordinator.sh/total-number";
inline constexpr std::string_view annotation_gang_match_policy =
    "gang.scheduling.koordinator.sh/match-policy";
inline constexpr std::string_view annotation_alias_gang_match_policy =
    "pod-group.scheduling.sigs.k8s.io/match-policy";
inline constexpr std::string_view label_lightweight_pod_group_name =
    "pod-group.scheduling.sigs.k8s.io/name";
inline constexpr std::string_view label_lightweight_pod_group_min_available =
    "pod-group.scheduling.sigs.k8s.io/min-available";
inline constexpr std::string_view annotation_device_allocated =
    "scheduling.koordinator.sh/device-allocated";
inline constexpr std::string_view annotation_device_joint_allocate =
    "scheduling.koordinator.sh/device-joint-allocate";
inline constexpr std::string_view annotation_device_allocate_hint =
    "scheduling.koordinator.sh/device-allocate-hint";

// apis/extension/device_share.go: other devices.
inline constexpr std::string_view gpu_shared = "koordinator.sh/gpu.shared";
inline constexpr std::string_view amd_gpu = "amd.com/gpu";
inline constexpr std::string_view hygon_dcu = "dcu.com/gpu";
inline constexpr std::string_view huawei_npu_core = "huawei.com/npu-core";
inline constexpr std::string_view huawei_npu_cpu = "huawei.com/npu-cpu";
inline constexpr std::string_view huawei_npu_dvpp = "huawei.com/npu-dvpp";
inline constexpr std::string_view koord_fpga = "koordinator.sh/fpga";
inline constexpr std::string_view koord_rdma = "koordinator.sh/rdma";

// apis/extension/node_colocation.go, node_reservation.go: slo-controller node labels/annotations.
inline constexpr std::string_view label_cpu_reclaim_ratio = "node.koordinator.sh/cpu-reclaim-ratio";
inline constexpr std::string_view label_memory_reclaim_ratio =
    "node.koordinator.sh/memory-reclaim-ratio";
inline constexpr std::string_view label_mid_static_cpu_reserved_ratio =
    "node.koordinator.sh/mid-static-cpu-reserved-ratio";
inline constexpr std::string_view label_mid_static_memory_reserved_ratio =
    "node.koordinator.sh/mid-static-memory-reserved-ratio";
inline constexpr std::string_view annotation_node_colocation_strategy =
    "node.koordinator.sh/colocation-strategy";
inline constexpr std::string_view annotation_cpu_normalization_ratio =
    "node.koordinator.sh/cpu-normalization-ratio";
// apis/extension/resource_amplification.go: the node's amplification ratios (slo-controller's
// resourceamplification plugin writes it, the scheduler amplifies allocatable by it).
inline constexpr std::string_view annotation_resource_amplification_ratio =
    "node.koordinator.sh/resource-amplification-ratio";
inline constexpr std::string_view annotation_cpu_basic_info = "node.koordinator.sh/cpu-basic-info";
inline constexpr std::string_view label_cpu_normalization_enabled =
    "node.koordinator.sh/cpu-normalization-enabled";
// apis/extension/numa_aware.go, node_resource_topology (NodeNUMAResource).
inline constexpr std::string_view annotation_resource_spec =
    "scheduling.koordinator.sh/resource-spec";
inline constexpr std::string_view annotation_numa_topology_spec =
    "scheduling.koordinator.sh/numa-topology-spec";
inline constexpr std::string_view annotation_node_cpu_topology = "node.koordinator.sh/cpu-topology";
inline constexpr std::string_view annotation_node_cpu_allocs = "node.koordinator.sh/pod-cpu-allocs";
inline constexpr std::string_view annotation_node_cpu_shared_pools =
    "node.koordinator.sh/cpu-shared-pools";
inline constexpr std::string_view annotation_node_be_cpu_shared_pools =
    "node.koordinator.sh/be-cpu-shared-pools";
inline constexpr std::string_view label_node_cpu_bind_policy =
    "node.koordinator.sh/cpu-bind-policy";
inline constexpr std::string_view label_node_numa_allocate_strategy =
    "node.koordinator.sh/numa-allocate-strategy";
inline constexpr std::string_view label_numa_topology_policy =
    "node.koordinator.sh/numa-topology-policy";
inline constexpr std::string_view annotation_kubelet_cpu_manager_policy =
    "kubelet.koordinator.sh/cpu-manager-policy";
inline constexpr std::string_view annotation_third_party_allocations =
    "node.koordinator.sh/thirdPartyAllocations";
inline constexpr std::string_view annotation_origin_extended_allocatable =
    "node.koordinator.sh/originExtendedAllocatable";

// apis/extension/cluster_colocation_profile.go, resource.go, multi_scheduler.go: admission.
inline constexpr std::string_view annotation_skip_update_resource =
    "config.koordinator.sh/skip-update-resources";
inline constexpr std::string_view label_controller_managed =
    "config.koordinator.sh/controller-managed";
inline constexpr std::string_view annotation_extended_resource_spec =
    "node.koordinator.sh/extended-resource-spec";
inline constexpr std::string_view label_scheduler_name = "koordinator.sh/scheduler-name";

}  // namespace colony::names
