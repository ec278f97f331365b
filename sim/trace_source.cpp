#include "sim/trace_source.hpp"

#include <algorithm>
#include <cctype>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "actors/admission/qos.hpp"
#include "actors/quota/actor/quota_events.hpp"
#include "messages/names.hpp"
#include "messages/quantity.hpp"

namespace colony::sim {

namespace fb = flatbuffers;

namespace {

messages::header hdr(std::int64_t t, wire::EntityKind k, std::string_view key,
                     std::string_view source) {
  messages::header h;
  h.time = event_time{t};
  h.kind = k;
  h.key = key;
  h.causation = -1;
  h.source = source;
  return h;
}

// deviceTopology's PCI addresses: domain 0, bus = the PCIe switch + 1, device and function.
std::string bus_id(int bus, int device, int function) {
  return fmt::format("0000:{:02x}:{:02x}.{}", bus, device, function);
}

// messages/qos.hpp numbers kube_qos_class as the wire enum.
wire::KubeQoSClass to_wire(kube_qos_class k) { return static_cast<wire::KubeQoSClass>(k); }

// workloadModel shape: the ReplicaSet of a row's request shape ("ReplicaSet/ls-c4000-m8192-g1x500":
// trace qos, cpu millicores, memory MiB, GPUs x share in 1/1000).
std::string workload_of(const trace::openb_pod& r) {
  std::string qos(trace::to_string(r.qos));
  std::transform(qos.begin(), qos.end(), qos.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return fmt::format("ReplicaSet/{}-c{}-m{}-g{}x{}", qos, r.cpu_milli, r.memory_bytes >> 20,
                     r.num_gpu, r.gpu_milli);
}

}  // namespace

std::string trace_source::pod_key(std::uint32_t p) const {
  std::string k(trace_pod_namespace);
  k += '/';
  k += trace_.openb_pods->rows[p].name;
  return k;
}

std::vector<messages::byte_buffer> trace_source::configuration(std::int64_t t) {
  std::vector<messages::byte_buffer> out;
  auto& fbb = b_.fbb();
  auto config = [&](std::string_view key, const char* kind, const std::string& name,
                    const std::string& spec) {
    auto k = fbb.CreateString(kind);
    auto n = fbb.CreateString(name);
    auto s = fbb.CreateString(spec);
    auto payload = wire::CreateConfigUpdated(fbb, k, n, s, false);
    out.push_back(b_.finish(hdr(t, wire::EntityKind::Cluster, key, "sim"), payload));
  };
  config("slo-controller", "slo-controller-config", "koordinator-system/slo-controller-config",
         cfg_.slo_configmap_json);
  for (const auto& pc : cfg_.extra_priority_classes)
    config("admission", "PriorityClass", pc.name, priority_class_spec(pc));
  config("admission", "ClusterColocationProfile", cfg_.name, cfg_.profiles_yaml);
  config("scheduler", "KubeSchedulerConfiguration", cfg_.name, cfg_.scheduler_yaml);
  if (cfg_.descheduler)
    config("descheduler", "DeschedulerConfiguration", cfg_.name, cfg_.descheduler_yaml);
  for (const auto& o : cfg_.quota_profile_objects)
    out.push_back(b_.finish(hdr(t, wire::EntityKind::Object, quota_profile_key(o), "sim"),
                            quota_profile_observed(b_, o)));
  std::vector<const quota::quota_spec*> qs;
  for (const auto& q : cfg_.quotas) qs.push_back(&q);
  std::sort(qs.begin(), qs.end(), [](auto* a, auto* b) { return a->name < b->name; });
  for (const auto* q : qs) {
    auto payload = quota::quota_upserted(b_, *q);
    out.push_back(b_.finish(hdr(t, wire::EntityKind::ElasticQuota, q->name, "sim"), payload));
  }
  return out;
}

messages::byte_buffer trace_source::node_registered(std::int64_t t, std::uint32_t n) {
  const auto& r = trace_.openb_nodes->rows[n];
  resource_list cap = r.capacity();
  cap.pods = pods_per_node_;
  auto& fbb = b_.fbb();
  auto name = fbb.CreateString(r.name);
  auto rc = b_.resources(cap);
  auto ra = b_.resources(cap);
  std::vector<std::pair<std::string, std::string>> labels;
  if (!r.gpu_model.empty()) labels.emplace_back(names::label_gpu_model, r.gpu_model);
  if (cfg_.numa_topology && !cfg_.numa_topology->node_cpu_bind_policy.empty())
    labels.emplace_back(names::label_node_cpu_bind_policy,
                        cfg_.numa_topology->node_cpu_bind_policy);
  auto lab = b_.key_values(labels);
  // cpuModels: the koordlet's CPU basic info (apis/extension/cpu_normalization.go CPUBasicInfo).
  flatbuffers::Offset<flatbuffers::Vector<flatbuffers::Offset<wire::KeyValue>>> ann;
  for (const auto& m : cfg_.cpu_models) {
    if (m.cpus != 0 && m.cpus != cap.cpu_milli / 1000) continue;
    nlohmann::json info = {{"cpuModel", m.model},
                           {"hyperThreadEnabled", m.hyper_thread_enabled},
                           {"turboEnabled", m.turbo_enabled}};
    ann = b_.key_values({{std::string(names::annotation_cpu_basic_info), info.dump()}});
    break;
  }
  fb::Offset<fb::Vector<fb::Offset<wire::GpuDevice>>> gpus;
  if (r.gpu > 0) {
    std::vector<fb::Offset<wire::GpuDevice>> devs;
    for (std::int32_t g = 0; g < r.gpu; ++g) {
      auto model = fbb.CreateString(r.gpu_model);
      // deviceTopology: the Device object's memory, so both views of a GPU agree.
      const std::int64_t memory = cfg_.device_topology ? cfg_.device_topology->gpu_memory_bytes : 0;
      devs.push_back(wire::CreateGpuDevice(fbb, g, model, 100, memory, true));
    }
    gpus = fbb.CreateVector(devs);
  }
  auto payload = wire::CreateNodeRegistered(fbb, name, rc, ra, lab, ann, gpus, false);
  return b_.finish(hdr(t, wire::EntityKind::Node, r.name, "trace"), payload);
}

std::optional<messages::byte_buffer> trace_source::node_topology(std::int64_t t, std::uint32_t n) {
  if (!cfg_.numa_topology) return std::nullopt;
  const auto& r = trace_.openb_nodes->rows[n];
  const resource_list cap = r.capacity();
  const auto m = numa_machine_model(cap.cpu_milli / 1000, *cfg_.numa_topology);
  if (!m) return std::nullopt;
  auto topo = scheduler::numa::format_cpu_topology_annotation(*m);
  if (!topo) return std::nullopt;  // the model's fields are validated when the config is read
  auto& fbb = b_.fbb();
  auto node = fbb.CreateString(r.name);
  auto ann = b_.key_values({{std::string(names::annotation_node_cpu_topology), *topo}});
  auto policy = fbb.CreateString(cfg_.numa_topology->kubelet_topology_policy);
  auto policies = fbb.CreateVector(&policy, 1);
  const int numa_nodes = m->sockets * m->numa_nodes_per_socket;
  const std::int64_t cpus_per_node =
      std::int64_t{m->cores_per_numa_node} * m->threads_per_core * 1000;
  std::vector<fb::Offset<wire::TopologyZone>> zones;
  for (int z = 0; z < numa_nodes; ++z) {
    auto zn = fbb.CreateString("node-" + std::to_string(z));
    auto zt = fbb.CreateString("Node");
    zones.push_back(
        wire::CreateTopologyZone(fbb, zn, zt, cpus_per_node, cap.memory_bytes / numa_nodes));
  }
  auto zv = fbb.CreateVector(zones);
  auto payload = wire::CreateNodeResourceTopologyUpdated(fbb, node, ann, policies, zv, false);
  return b_.finish(hdr(t, wire::EntityKind::Node, r.name, "trace"), payload);
}

std::string trace_source::device_spec(std::uint32_t n) const {
  const auto& r = trace_.openb_nodes->rows[n];
  const auto& c = *cfg_.device_topology;
  const int switches = c.numa_nodes * c.pcie_switches_per_numa_node;
  const std::string gpu_memory = k8s::format_binary_si(c.gpu_memory_bytes);
  // Switch s: NUMA node (and socket) s / pcie_switches_per_numa_node, PCI bus s + 1; on it GPU i
  // is device i, NIC k device 0x10 + 2k and its VF v device 0x11 + 2k + v / 8, function v % 8.
  auto topology = [&](int s, int device) {
    const int numa = s / c.pcie_switches_per_numa_node;
    return nlohmann::json{{"socketID", numa},
                          {"nodeID", numa},
                          {"pcieID", "pci" + std::to_string(s)},
                          {"busID", bus_id(s + 1, device, 0)}};
  };
  std::vector<int> on_switch(static_cast<std::size_t>(switches), 0);
  nlohmann::json devices = nlohmann::json::array();
  // GPU g on switch g * switches / G: the node's GPUs evenly over the switches, in minor order.
  for (std::int32_t g = 0; g < r.gpu; ++g) {
    const int s = static_cast<int>(std::int64_t{g} * switches / r.gpu);
    const int device = on_switch[static_cast<std::size_t>(s)]++;
    devices.push_back({{"type", "gpu"},
                       {"minor", g},
                       {"health", true},
                       {"resources",
                        {{std::string(names::gpu_core), "100"},
                         {std::string(names::gpu_memory), gpu_memory},
                         {std::string(names::gpu_memory_ratio), "100"}}},
                       {"topology", topology(s, device)}});
  }
  for (int s = 0; s < switches; ++s)
    for (int k = 0; k < c.rdma_per_pcie_switch; ++k) {
      const int minor = s * c.rdma_per_pcie_switch + k;
      nlohmann::json nic = {{"type", "rdma"},
                            {"minor", minor},
                            {"health", true},
                            {"resources", {{std::string(names::koord_rdma), "100"}}},
                            {"topology", topology(s, 0x10 + 2 * k)}};
      if (c.vfs_per_rdma > 0) {
        nlohmann::json vfs = nlohmann::json::array();
        for (int v = 0; v < c.vfs_per_rdma; ++v)
          vfs.push_back({{"minor", v}, {"busID", bus_id(s + 1, 0x11 + 2 * k + v / 8, v % 8)}});
        nic["vfGroups"] =
            nlohmann::json::array({{{"labels", {{"type", "general"}}}, {"vfs", std::move(vfs)}}});
      }
      devices.push_back(std::move(nic));
    }
  return nlohmann::json{{"devices", std::move(devices)}}.dump();
}

std::optional<messages::byte_buffer> trace_source::node_devices(std::int64_t t, std::uint32_t n) {
  if (!cfg_.device_topology) return std::nullopt;
  const auto& r = trace_.openb_nodes->rows[n];
  if (r.gpu <= 0) return std::nullopt;
  const std::string spec = device_spec(n);
  auto& fbb = b_.fbb();
  auto av = fbb.CreateString("scheduling.koordinator.sh/v1alpha1");
  auto kind = fbb.CreateString("Device");
  auto ns = fbb.CreateString("");
  auto name = fbb.CreateString(r.name);
  auto uid = fbb.CreateString("");
  auto rv = fbb.CreateString("");
  auto sp = fbb.CreateString(spec);
  auto status = fbb.CreateString("");
  auto payload = wire::CreateObjectObserved(fbb, av, kind, ns, name, uid, rv, 0, sp, status, false);
  return b_.finish(hdr(t, wire::EntityKind::Object, "Device/" + r.name, "trace"), payload);
}

messages::byte_buffer trace_source::pod_submitted(std::int64_t t, std::uint32_t p,
                                                  std::int64_t expected_duration_ms) {
  return pod_resubmitted(t, p, expected_duration_ms, pod_key(p), trace_.openb_pods->rows[p].name);
}

messages::byte_buffer trace_source::pod_resubmitted(std::int64_t t, std::uint32_t p,
                                                    std::int64_t expected_duration_ms,
                                                    std::string_view key_in,
                                                    std::string_view uid_in) {
  const auto& r = trace_.openb_pods->rows[p];
  const std::string key(key_in);
  admission::pod_spec spec;
  admission::container_spec c;
  c.name = "main";
  c.requests = r.requests();
  if (r.qos == trace::openb_qos::guaranteed) c.limits = c.requests;
  spec.containers.push_back(c);
  const auto kube_qos = admission::get_kube_qos_class(spec);
  auto& fbb = b_.fbb();
  auto name = b_.key_string(key);
  auto uid = fbb.CreateString(uid_in);
  // deviceTopology.rdmaPods: GPU pods asking enough whole GPUs also ask for RDMA, jointly.
  std::vector<std::pair<std::string, std::int64_t>> extended;
  std::vector<std::pair<std::string, std::string>> annotations;
  if (const auto& d = cfg_.device_topology;
      d && r.gpu_milli == 1000 && r.num_gpu >= d->rdma_pods_min_gpus) {
    extended.emplace_back(std::string(names::koord_rdma), d->rdma_per_pod);
    if (d->rdma_pods_vf)
      annotations.emplace_back(std::string(names::annotation_device_allocate_hint),
                               R"({"rdma":{"vfSelector":{}}})");
    if (d->joint_scope != "None") {
      nlohmann::json joint = {{"deviceTypes", {"gpu", "rdma"}}};
      if (!d->joint_scope.empty()) joint["requiredScope"] = d->joint_scope;
      annotations.emplace_back(std::string(names::annotation_device_joint_allocate), joint.dump());
    }
  }
  auto req = b_.resources(c.requests, extended);
  auto lim = b_.resources(c.limits, r.qos == trace::openb_qos::guaranteed
                                        ? extended
                                        : std::vector<std::pair<std::string, std::int64_t>>{});
  auto ann = annotations.empty() ? fb::Offset<fb::Vector<fb::Offset<wire::KeyValue>>>{}
                                 : b_.key_values(annotations);
  std::vector<std::pair<std::string, std::string>> labels = {
      {std::string(trace_qos_label), std::string(trace::to_string(r.qos))}};
  if (cfg_.numa_topology && r.cpu_milli > 0 && r.cpu_milli % 1000 == 0)
    labels.emplace_back(std::string(whole_cpus_label), "true");
  auto lab = b_.key_values(labels);
  auto sched = fbb.CreateString("default-scheduler");
  const auto owner = cfg_.workloads == workload_model::shape
                         ? fbb.CreateString(workload_of(r))
                         : flatbuffers::Offset<flatbuffers::String>{};
  fb::Offset<fb::Vector<fb::Offset<fb::String>>> models;
  if (!r.gpu_spec.empty()) {
    std::vector<fb::Offset<fb::String>> m;
    for (const auto& s : r.gpu_spec) m.push_back(fbb.CreateString(s));
    models = fbb.CreateVector(m);
  }
  auto payload = wire::CreatePodSubmitted(fbb, name, uid, req, lim, 0, false, 0, lab, ann, sched,
                                          to_wire(kube_qos), models, owner, expected_duration_ms);
  return b_.finish(hdr(t, wire::EntityKind::Pod, key, "trace"), payload);
}

messages::byte_buffer trace_source::pod_finished(std::int64_t t, std::uint32_t p,
                                                 std::string_view node) {
  return pod_finished(t, p, node, pod_key(p));
}

messages::byte_buffer trace_source::pod_finished(std::int64_t t, std::uint32_t p,
                                                 std::string_view node, std::string_view key_in) {
  const auto& row = trace_.openb_pods->rows[p];
  wire::PodPhase phase = wire::PodPhase::Deleted;
  if (!node.empty() && row.phase == trace::openb_phase::succeeded)
    phase = wire::PodPhase::Succeeded;
  if (!node.empty() && row.phase == trace::openb_phase::failed) phase = wire::PodPhase::Failed;
  const std::string key(key_in);
  auto& fbb = b_.fbb();
  auto pod = b_.key_string(key);
  auto nd = fbb.CreateString(node);
  auto payload = wire::CreatePodFinished(fbb, pod, nd, phase);
  return b_.finish(hdr(t, wire::EntityKind::Pod, key, "trace"), payload);
}

messages::byte_buffer trace_source::end_of_trace(std::int64_t t) {
  auto& fbb = b_.fbb();
  auto why = fbb.CreateString("end of trace");
  auto payload = wire::CreateClockTicked(fbb, why);
  return b_.finish(hdr(t, wire::EntityKind::Cluster, "sim", "sim"), payload);
}

}  // namespace colony::sim
