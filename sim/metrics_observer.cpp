#include "sim/metrics_observer.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>

#include <fmt/format.h>
#include <xxhash.h>

#include "actors/quota/actor/quota_events.hpp"
#include "actors/scheduler/device/device_topology.hpp"
#include "actors/scheduler/elastic_quota.hpp"
#include "actors/scheduler/numa/cpu_set.hpp"
#include "messages/codec.hpp"
#include "messages/names.hpp"
#include "messages/string_map.hpp"
#include "messages/terms.hpp"

namespace colony::sim {

namespace {

using messages::to_resource_list;
using messages::to_string_view;

// CPU of every kind and memory likewise, as the usage model totals a pod's requests.
std::int64_t all_cpu(const resource_list& r) {
  return r.cpu_milli + r.batch_cpu_milli + r.mid_cpu_milli;
}
std::int64_t all_memory(const resource_list& r) {
  return r.memory_bytes + r.batch_memory_bytes + r.mid_memory_bytes;
}

std::int64_t percentile(std::vector<std::int64_t>& v, double p) {
  if (v.empty()) return 0;
  const auto rank = static_cast<std::size_t>(std::ceil(p / 100.0 * static_cast<double>(v.size())));
  return v[std::min(v.size() - 1, rank == 0 ? 0 : rank - 1)];
}

// Counts by a string key: hashed while folding, ordered for output.
class counter_map {
 public:
  void add(std::string_view key, std::uint64_t n = 1) {
    auto it = m_.find(key);
    if (it == m_.end()) it = m_.emplace(std::string(key), 0).first;
    it->second += n;
  }
  [[nodiscard]] std::map<std::string, std::uint64_t> ordered() const {
    return {m_.begin(), m_.end()};
  }

 private:
  string_map<std::uint64_t> m_;
};

constexpr std::uint32_t no_index = ~0u;
constexpr std::string_view no_quota_label = "(no quota label)";

}  // namespace

std::vector<fgd_task_class> fgd_task_classes(std::span<const trace::openb_pod> pods) {
  std::map<std::pair<std::int32_t, std::int32_t>, std::vector<const trace::openb_pod*>> groups;
  for (const auto& r : pods) groups[{r.num_gpu, r.gpu_milli}].push_back(&r);
  const double total = static_cast<double>(pods.size());
  std::vector<fgd_task_class> out;
  for (auto& [k, v] : groups) {
    std::vector<std::int64_t> cpu, mem;
    for (const auto* r : v) {
      cpu.push_back(r->cpu_milli);
      mem.push_back(r->memory_bytes);
    }
    std::sort(cpu.begin(), cpu.end());
    std::sort(mem.begin(), mem.end());
    out.push_back({k.first, k.second, cpu[cpu.size() / 2], mem[mem.size() / 2],
                   static_cast<double>(v.size()) / total});
  }
  return out;
}

struct metrics_observer::impl {
  // ---- state ------------------------------------------------------------------------------
  struct gpu {
    std::int32_t minor = 0;
    std::int64_t core = 100, core_used = 0;
  };
  struct node_rec {
    resource_list allocatable;  // Kubernetes allocatable (NodeRegistered)
    resource_list allocated;    // requests of the pods bound here (PodScheduled)
    std::int64_t capacity_cpu = 0, capacity_mem = 0, capacity_gpu = 0;
    std::int64_t batch_cpu = 0, batch_mem = 0;  // batch allocatable (NodeBatchResourceUpdated)
    std::int64_t used_cpu = 0, used_mem = 0, be_cpu = 0, be_mem = 0;  // the latest NodeMetric
    std::vector<gpu> gpus;                                            // by minor
    double frag = 0;
    bool frag_dirty = false;
    gpu* find_gpu(std::int32_t minor) {
      for (auto& g : gpus)
        if (g.minor == minor) return &g;
      return nullptr;
    }
  };
  // A pod's place in the report's life cycle: submitted (not yet admitted), pending (admitted,
  // waiting), bound, done (rejected, withdrawn, completed or evicted).
  enum class pod_status : std::uint8_t { submitted, pending, bound, done };
  struct pod_rec {
    resource_list requests;  // after admission (PodMutated), then as bound (PodScheduled)
    std::int64_t submit_ms = 0;
    std::uint32_t node = no_index;
    std::uint32_t last_reason =
        no_index;                    // interned: the first reason of its last PodUnschedulable
    std::uint32_t quota = no_index;  // interned: label quota.scheduling.koordinator.sh/name
    pod_status status = pod_status::submitted;
    bool batch = false;  // priority class Batch (latency class "batch")
    std::vector<std::pair<std::int32_t, std::int64_t>> devices;  // (minor, core) as bound
  };
  struct quota_rec {
    bool has_spec = false, has_status = false;
    // Listed in the summary: a quota of the config, or a name pods were refused under. The
    // controller also reports the tree's own quotas (root, system, default): not listed.
    bool listed = false;
    std::string parent;
    resource_list min, max;
    resource_list runtime, used, request;
    double used_cpu_sum = 0, runtime_cpu_sum = 0, used_mem_sum = 0;
    std::int64_t used_cpu_peak = 0, request_cpu_peak = 0;
    std::uint64_t refusals = 0;
    // ElasticQuota's PostFilter: pods of this quota evicted for a preemptor of the same quota,
    // and the distinct preemptors.
    std::uint64_t preempted = 0;
    std::set<std::string, std::less<>> preemptors;
  };

  observer_options opt;
  std::vector<node_rec> nodes;  // in registration order (the trace's node-list order)
  string_map<std::uint32_t> node_index;
  std::vector<pod_rec> pods;
  string_map<std::uint32_t> pod_index;
  std::vector<std::string> strings;
  string_map<std::uint32_t> string_ids;
  std::map<std::string, quota_rec, std::less<>> quotas;
  bool quotas_on = false;
  std::string key;  // scratch for composed reason keys

  // Running totals.
  std::int64_t cpu_capacity = 0, mem_capacity = 0, gpu_total = 0;
  std::int64_t cpu_requested = 0, mem_requested = 0, cpu_allocated = 0, mem_allocated = 0;
  std::int64_t batch_cpu_alloc = 0, batch_mem_alloc = 0, gpu_allocated = 0;
  std::int64_t batch_cpu_allocatable = 0, batch_mem_allocatable = 0;
  std::int64_t cpu_used = 0, mem_used = 0, be_cpu_used = 0, be_mem_used = 0;
  std::int64_t running = 0, pending = 0;

  // Counters.
  std::uint64_t events = 0, bytes = 0;
  // Indexed by payload type (the schema's union has 34 members at v10).
  std::array<std::uint64_t, 64> by_type{};
  static_assert(static_cast<std::size_t>(wire::Payload::MAX) < 64);
  // NodeNUMAResource: nodes with a NodeResourceTopology, bindings with a cpuset / NUMA resources.
  std::uint64_t topology_nodes = 0, cpuset_pods = 0, cpuset_cpus = 0, numa_pods = 0;
  // DeviceShare over Device objects: where each node's GPUs and NICs sit ((type, minor) ->
  // (NUMA node, PCIe switch)), and what the RDMA pods got.
  struct device_place {
    std::int32_t numa = -1;
    std::string pcie;
  };
  std::map<std::string, std::map<std::pair<int, std::int32_t>, device_place>, std::less<>>
      device_places;
  std::uint64_t device_objects_refused = 0, rdma_pods = 0, rdma_nics = 0, rdma_vfs = 0;
  std::uint64_t rdma_same_pcie = 0, rdma_same_numa = 0;
  // CPU normalization: each node's latest cpu-normalization-ratio (the slo-controller's patch).
  std::map<std::string, std::string, std::less<>> normalization_ratio;
  std::uint64_t submitted = 0, scheduled = 0, rejected = 0, withdrawn = 0, completed = 0;
  std::uint64_t evicted = 0, unschedulable_events = 0, bind_rejections = 0, cycles = 0;
  std::uint64_t over_capacity = 0, negative_batch = 0, evictions_without_reason = 0;
  std::uint64_t batch_overcommitted = 0, metric_reports = 0, batch_updates = 0,
                suppress_updates = 0;
  counter_map unsched_reasons, evicted_by_reason, completed_by_phase, admission_errors;
  // PodMigrationJobs: created, and phase changes by "<phase> (<reason>)".
  std::uint64_t migrations_created = 0, migrations_started = 0, migrations_succeeded = 0,
                migrations_failed = 0, migrations_aborted = 0;
  counter_map migration_phases;
  std::vector<double> spread_scratch;
  bool spread_stale = true;  // a node's used or allocated cpu moved since cpu_used_spread()
  double spread_last = 0;
  std::vector<std::int64_t> latency_ms, latency_prod_ms, latency_batch_ms;
  std::int64_t start_ms = -1, end_ms = 0;

  // Samples.
  std::vector<metrics_row> rows;
  std::vector<quota_row> quota_rows;
  std::size_t samples = 0, quota_samples = 0;
  double gpu_frag_sum = 0, gpu_alloc_ratio_sum = 0, gpu_frag_idle_sum = 0;
  std::vector<std::uint32_t> frag_dirty;

  XXH3_state_t* xxh = nullptr;

  explicit impl(observer_options o) : opt(std::move(o)) {
    xxh = XXH3_createState();
    XXH3_64bits_reset(xxh);
  }
  ~impl() { XXH3_freeState(xxh); }
  impl(const impl&) = delete;
  impl& operator=(const impl&) = delete;

  std::uint32_t intern(std::string_view s) {
    auto it = string_ids.find(s);
    if (it != string_ids.end()) return it->second;
    const auto id = static_cast<std::uint32_t>(strings.size());
    strings.emplace_back(s);
    string_ids.emplace(std::string(s), id);
    return id;
  }
  std::uint32_t node_of(std::string_view name) const {
    auto it = node_index.find(name);
    return it == node_index.end() ? no_index : it->second;
  }
  pod_rec* pod_of(std::string_view name) {
    auto it = pod_index.find(name);
    return it == pod_index.end() ? nullptr : &pods[it->second];
  }
  void mark_frag(std::uint32_t n) {
    if (nodes[n].frag_dirty) return;
    nodes[n].frag_dirty = true;
    frag_dirty.push_back(n);
  }
  quota_rec& quota(std::string_view name) {
    auto it = quotas.find(name);
    if (it == quotas.end()) it = quotas.emplace(std::string(name), quota_rec{}).first;
    return it->second;
  }

  // ---- events -----------------------------------------------------------------------------
  void on_event(const wire::Envelope& env) {
    using P = wire::Payload;
    ++events;
    const auto type = env.payload_type();
    ++by_type[static_cast<std::size_t>(type) & 63];
    end_ms = std::max(end_ms, env.event_time_ms());
    switch (type) {
      case P::NodeRegistered:
        node_registered(*env.payload_as_NodeRegistered());
        break;
      case P::NodeBatchResourceUpdated:
        batch_updated(*env.payload_as_NodeBatchResourceUpdated());
        break;
      case P::NodeMetricReported:
        metric_reported(*env.payload_as_NodeMetricReported());
        break;
      case P::BeSuppressed:
        ++suppress_updates;
        break;
      case P::PodSubmitted:
        pod_submitted(env);
        break;
      case P::PodRejected:
        pod_rejected(*env.payload_as_PodRejected());
        break;
      case P::PodMutated:
        pod_mutated(*env.payload_as_PodMutated());
        break;
      case P::PodBindProposed:
        ++cycles;
        break;
      case P::NodeResourceTopologyUpdated:
        if (!env.payload_as_NodeResourceTopologyUpdated()->deleted()) ++topology_nodes;
        break;
      case P::ObjectObserved:
        if (const auto* o = env.payload_as_ObjectObserved(); to_string_view(o->kind()) == "Device")
          device_observed(*o);
        break;
      case P::PodUnschedulable:
        pod_unschedulable(*env.payload_as_PodUnschedulable());
        break;
      case P::PodBindRejected:
        ++bind_rejections;
        break;
      case P::PodScheduled:
        pod_scheduled(env);
        break;
      case P::PodFinished:
        pod_finished(*env.payload_as_PodFinished());
        break;
      case P::PodEvicted:
        pod_evicted(*env.payload_as_PodEvicted());
        break;
      case P::MigrationJobCreated:
        ++migrations_created;
        break;
      case P::MigrationJobPhaseChanged: {
        const auto* e = env.payload_as_MigrationJobPhaseChanged();
        key.assign(to_string_view(e->phase()));
        const auto reason = to_string_view(e->reason());
        if (!reason.empty()) {
          key.append(" (");
          key.append(reason);
          key.append(")");
        }
        migration_phases.add(key);
        const auto phase = to_string_view(e->phase());
        if (phase == "Running") ++migrations_started;
        if (phase == "Succeeded") ++migrations_succeeded;
        if (phase == "Failed") ++migrations_failed;
        if (phase == "Aborted") ++migrations_aborted;
        break;
      }
      case P::QuotaUpserted: {
        const auto spec = quota::spec_of(*env.payload_as_QuotaUpserted());
        auto& q = quota(spec.name);
        q.has_spec = true;
        q.listed = true;
        q.parent = spec.parent;
        q.min = spec.min;
        q.max = spec.max;
        quotas_on = true;
        break;
      }
      case P::QuotaDeleted: {
        auto it = quotas.find(to_string_view(env.payload_as_QuotaDeleted()->name()));
        if (it != quotas.end()) it->second.has_spec = it->second.has_status = false;
        break;
      }
      case P::QuotaRuntimeUpdated: {
        const auto* e = env.payload_as_QuotaRuntimeUpdated();
        auto& q = quota(to_string_view(e->name()));
        q.has_status = true;
        q.runtime = to_resource_list(e->runtime());  // already masked to its keys
        q.used = to_resource_list(e->used());
        q.request = to_resource_list(e->request());
        break;
      }
      default:
        break;
    }
  }

  void node_registered(const wire::NodeRegistered& e) {
    const auto name = to_string_view(e.name());
    std::uint32_t n = node_of(name);
    if (n == no_index) {
      n = static_cast<std::uint32_t>(nodes.size());
      nodes.emplace_back();
      node_index.emplace(std::string(name), n);
    }
    auto& nr = nodes[n];
    const resource_list cap = to_resource_list(e.capacity());
    // Totals move by the difference, so a node registered again is counted once.
    cpu_capacity += cap.cpu_milli - nr.capacity_cpu;
    mem_capacity += cap.memory_bytes - nr.capacity_mem;
    gpu_total += cap.gpu - nr.capacity_gpu;
    nr.capacity_cpu = cap.cpu_milli;
    spread_stale = true;
    nr.capacity_mem = cap.memory_bytes;
    nr.capacity_gpu = cap.gpu;
    nr.allocatable = e.allocatable() ? to_resource_list(e.allocatable()) : cap;
    if (e.gpus()) {
      std::vector<gpu> gs;
      for (const auto* g : *e.gpus()) {
        gpu x;
        x.minor = g->minor();
        x.core = g->core();
        if (const auto* old = nr.find_gpu(x.minor)) x.core_used = old->core_used;
        gs.push_back(x);
      }
      std::sort(gs.begin(), gs.end(), [](const gpu& a, const gpu& b) { return a.minor < b.minor; });
      nr.gpus = std::move(gs);
    }
    mark_frag(n);
  }

  void batch_updated(const wire::NodeBatchResourceUpdated& e) {
    ++batch_updates;
    if (const auto* ts = e.terms())
      for (const auto* t : *ts)
        if (messages::term_named(*t, "meta.annotationsPatch")) {
          const auto patch = nlohmann::json::parse(to_string_view(t->text()), nullptr, false);
          const auto it = patch.is_object()
                              ? patch.find(std::string(names::annotation_cpu_normalization_ratio))
                              : patch.end();
          if (patch.is_object() && it != patch.end() && it->is_string())
            normalization_ratio.insert_or_assign(std::string(to_string_view(e.node())),
                                                 it->get<std::string>());
        }
    if (e.batch_cpu_milli() < 0 || e.batch_memory_bytes() < 0) ++negative_batch;
    const std::uint32_t n = node_of(to_string_view(e.node()));
    if (n == no_index) return;
    auto& nr = nodes[n];
    batch_cpu_allocatable += e.batch_cpu_milli() - nr.batch_cpu;
    batch_mem_allocatable += e.batch_memory_bytes() - nr.batch_mem;
    nr.batch_cpu = e.batch_cpu_milli();
    nr.batch_mem = e.batch_memory_bytes();
  }

  // Cluster usage is the sum of each node's latest report: a node the koordlet skips (idle
  // between its idle reports) last reported nothing running.
  void metric_reported(const wire::NodeMetricReported& e) {
    ++metric_reports;
    const std::uint32_t n = node_of(to_string_view(e.node()));
    if (n == no_index) return;
    auto& nr = nodes[n];
    std::int64_t ucpu = 0, umem = 0, bcpu = 0, bmem = 0;
    if (const auto* u = e.node_usage()) {
      ucpu = u->cpu_milli();
      umem = u->memory_bytes();
    }
    if (const auto* pms = e.pods()) {
      for (const auto* pm : *pms) {
        if (pm->qos_class() != wire::QoSClass::BE || pm->usage() == nullptr) continue;
        bcpu += pm->usage()->cpu_milli();
        bmem += pm->usage()->memory_bytes();
      }
    }
    cpu_used += ucpu - nr.used_cpu;
    mem_used += umem - nr.used_mem;
    be_cpu_used += bcpu - nr.be_cpu;
    be_mem_used += bmem - nr.be_mem;
    nr.used_cpu = ucpu;
    spread_stale = true;
    nr.used_mem = umem;
    nr.be_cpu = bcpu;
    nr.be_mem = bmem;
  }

  void pod_submitted(const wire::Envelope& env) {
    const auto name = to_string_view(env.payload_as_PodSubmitted()->name());
    ++submitted;
    auto it = pod_index.find(name);
    if (it == pod_index.end()) {
      it = pod_index.emplace(std::string(name), static_cast<std::uint32_t>(pods.size())).first;
      pods.emplace_back();
    }
    auto& p = pods[it->second];
    p.submit_ms = env.event_time_ms();
    p.status = pod_status::submitted;
  }

  void pod_rejected(const wire::PodRejected& e) {
    ++rejected;
    admission_errors.add(to_string_view(e.reason()));
    if (auto* p = pod_of(to_string_view(e.name()))) p->status = pod_status::done;
  }

  void pod_mutated(const wire::PodMutated& e) {
    auto* p = pod_of(to_string_view(e.name()));
    if (p == nullptr || p->status != pod_status::submitted) return;
    p->requests = to_resource_list(e.requests());
    p->requests.pods = 0;
    p->batch = e.priority_class() == wire::PriorityClass::Batch;
    if (const auto q = quota::find_key(e.labels(), names::label_quota_name)) p->quota = intern(*q);
    p->status = pod_status::pending;
    cpu_requested += all_cpu(p->requests);
    mem_requested += all_memory(p->requests);
    ++pending;
  }

  // "plugin: reason", or the message alone when the scheduler named no plugin (an error, or a
  // result without per-plugin failures: written with an empty plugin).
  void reason_key(const wire::PluginReason& r) {
    const auto plugin = to_string_view(r.plugin());
    key.clear();
    if (!plugin.empty()) {
      key.append(plugin);
      key.append(": ");
    }
    key.append(to_string_view(r.reason()));
  }

  void pod_unschedulable(const wire::PodUnschedulable& e) {
    ++cycles;
    ++unschedulable_events;
    auto* p = pod_of(to_string_view(e.pod()));
    const auto* rs = e.reasons();
    if (rs == nullptr) return;
    bool first = true;
    for (const auto* r : *rs) {
      reason_key(*r);
      unsched_reasons.add(key);
      if (first && p != nullptr) p->last_reason = intern(key);
      first = false;
      if (quotas_on && to_string_view(r->plugin()) == scheduler::elastic_quota::plugin_name) {
        const std::string_view qn =
            p == nullptr || p->quota == no_index ? no_quota_label : strings[p->quota];
        auto& q = quota(qn);
        q.listed = true;
        ++q.refusals;
      }
    }
  }

  void pod_scheduled(const wire::Envelope& env) {
    const auto* e = env.payload_as_PodScheduled();
    auto* p = pod_of(to_string_view(e->pod()));
    const std::uint32_t n = node_of(to_string_view(e->node()));
    if (p == nullptr || n == no_index) return;
    ++scheduled;
    if (p->status == pod_status::pending) --pending;
    ++running;
    p->status = pod_status::bound;
    p->node = n;
    if (e->requests()) {
      p->requests = to_resource_list(e->requests());
      p->requests.pods = 0;
    }
    cpu_allocated += all_cpu(p->requests);
    mem_allocated += all_memory(p->requests);
    batch_cpu_alloc += p->requests.batch_cpu_milli;
    batch_mem_alloc += p->requests.batch_memory_bytes;
    gpu_allocated += p->requests.gpu;
    if (const auto* cs = e->cpuset(); cs != nullptr && cs->size() > 0) {
      ++cpuset_pods;
      if (auto set = scheduler::numa::cpu_set::parse(to_string_view(cs)))
        cpuset_cpus += static_cast<std::uint64_t>(set->size());
    }
    if (e->numa_resources() && e->numa_resources()->size() > 0) ++numa_pods;
    const std::int64_t lat = env.event_time_ms() - p->submit_ms;
    latency_ms.push_back(lat);
    (p->batch ? latency_batch_ms : latency_prod_ms).push_back(lat);
    // The node as its fold has it (entities::apply): allocated += requests (with the pod count),
    // GPU shares on their devices.
    auto& nr = nodes[n];
    resource_list req = p->requests;
    req.pods = 1;
    nr.allocated += req;
    spread_stale = true;
    p->devices.clear();
    if (const auto* devs = e->devices()) {
      for (const auto* d : *devs) {
        if (d->type() != nullptr && d->type()->size() > 0) continue;  // a NIC / FPGA (v11)
        p->devices.emplace_back(d->minor(), d->core());
        if (auto* g = nr.find_gpu(d->minor())) g->core_used += d->core();
      }
      rdma_placement(to_string_view(e->node()), *devs);
    }
    mark_frag(n);
    // A bind must leave the node within its allocatable (summary invariants).
    const auto& a = nr.allocatable;
    const auto& u = nr.allocated;
    bool over = u.cpu_milli > a.cpu_milli || u.memory_bytes > a.memory_bytes || u.gpu > a.gpu ||
                u.pods > a.pods;
    for (const auto& g : nr.gpus) over = over || g.core_used > g.core;
    if (over) ++over_capacity;
    if (u.batch_cpu_milli > nr.batch_cpu || u.batch_memory_bytes > nr.batch_mem)
      ++batch_overcommitted;
  }

  void device_observed(const wire::ObjectObserved& o) {
    const std::string node(to_string_view(o.name()));
    device_places.erase(node);
    if (o.deleted()) return;
    nlohmann::json obj = {{"metadata", {{"name", node}}}};
    obj["spec"] = nlohmann::json::parse(to_string_view(o.spec_json()), nullptr, false);
    auto nd = scheduler::device::parse_device(obj);
    if (!nd) {
      ++device_objects_refused;
      return;
    }
    auto& places = device_places[node];
    for (const auto& d : nd->devices)
      if (d.topology)
        places[{static_cast<int>(d.type), d.minor}] = {d.topology->node_id, d.topology->pcie_id};
  }

  // An RDMA pod's placement: its NICs on one of its GPUs' PCIe switches / NUMA nodes.
  void rdma_placement(
      std::string_view node,
      const flatbuffers::Vector<flatbuffers::Offset<wire::DeviceAllocation>>& devs) {
    using scheduler::device::device_type;
    auto it = device_places.find(node);
    std::set<std::string> gpu_pcie;
    std::set<std::int32_t> gpu_numa;
    std::vector<device_place> nics;
    for (const auto* d : devs) {
      const auto type = to_string_view(d->type());
      const int t = static_cast<int>(type.empty() ? device_type::gpu : device_type::rdma);
      if (!type.empty() && type != "rdma") continue;
      device_place place;
      if (it != device_places.end())
        if (auto p = it->second.find({t, d->minor()}); p != it->second.end()) place = p->second;
      if (type.empty()) {
        gpu_pcie.insert(place.pcie);
        gpu_numa.insert(place.numa);
      } else {
        nics.push_back(place);
        if (d->vf_bus_id() != nullptr && d->vf_bus_id()->size() > 0) ++rdma_vfs;
      }
    }
    if (nics.empty()) return;
    ++rdma_pods;
    rdma_nics += nics.size();
    bool pcie = !gpu_pcie.empty(), numa = !gpu_numa.empty();
    for (const auto& n : nics) {
      pcie = pcie && !n.pcie.empty() && gpu_pcie.count(n.pcie) != 0;
      numa = numa && n.numa >= 0 && gpu_numa.count(n.numa) != 0;
    }
    rdma_same_pcie += pcie ? 1 : 0;
    rdma_same_numa += numa ? 1 : 0;
  }

  void release(pod_rec& p) {
    auto& nr = nodes[p.node];
    resource_list req = p.requests;
    req.pods = 1;
    nr.allocated -= req;
    spread_stale = true;
    for (const auto& [minor, core] : p.devices)
      if (auto* g = nr.find_gpu(minor)) g->core_used -= core;
    mark_frag(p.node);
    --running;
    cpu_allocated -= all_cpu(p.requests);
    mem_allocated -= all_memory(p.requests);
    cpu_requested -= all_cpu(p.requests);
    mem_requested -= all_memory(p.requests);
    batch_cpu_alloc -= p.requests.batch_cpu_milli;
    batch_mem_alloc -= p.requests.batch_memory_bytes;
    gpu_allocated -= p.requests.gpu;
    p.status = pod_status::done;
    p.node = no_index;
  }

  // A bound pod's PodFinished is its completion; a pending pod's is the trace withdrawing it.
  void pod_finished(const wire::PodFinished& e) {
    auto* p = pod_of(to_string_view(e.pod()));
    if (p == nullptr) return;
    if (p->status == pod_status::bound) {
      ++completed;
      completed_by_phase.add(wire::EnumNamePodPhase(e.phase()));
      release(*p);
    } else if (p->status == pod_status::pending) {
      ++withdrawn;
      --pending;
      cpu_requested -= all_cpu(p->requests);
      mem_requested -= all_memory(p->requests);
      p->status = pod_status::done;
    } else if (p->status == pod_status::submitted) {
      // Finished before admission answered: withdrawn while pending. The sim's source no longer
      // writes this order (the log audit flags admission after a pod's end), but a log from
      // elsewhere may; a later PodMutated must not bring the pod back as pending.
      ++withdrawn;
      p->status = pod_status::done;
    }
  }

  // Keyed "<reason> (<koordlet feature>)". The event has no feature field:
  // the feature is the tail of Koordinator's message "trigger by koordlet feature <feature>".
  void pod_evicted(const wire::PodEvicted& e) {
    constexpr std::string_view prefix = "trigger by koordlet feature ";
    const auto msg = to_string_view(e.message());
    std::string_view feature = msg;
    if (feature.starts_with(prefix)) feature.remove_prefix(prefix.size());
    // A descheduled pod: by the plugin that asked for its PodMigrationJob (its "trigger" input).
    if (e.reason() == wire::EvictionReason::Descheduled && e.inputs() != nullptr)
      for (const auto* t : *e.inputs())
        if (to_string_view(t->name()) == "trigger") feature = to_string_view(t->text());
    // A preempted pod: by the plugin (the message's tail); the preemptor is counted per quota,
    // not kept in the key (one key per preemptor and node would grow with the trace).
    if (e.reason() == wire::EvictionReason::Preempted) {
      if (const auto open = msg.rfind(" ("); open != std::string_view::npos && msg.ends_with(")"))
        feature = msg.substr(open + 2, msg.size() - open - 3);
      std::string_view quota_name, preemptor;
      if (e.inputs() != nullptr)
        for (const auto* t : *e.inputs()) {
          if (to_string_view(t->name()) == "quota") quota_name = to_string_view(t->text());
          if (to_string_view(t->name()) == "preemptor") preemptor = to_string_view(t->text());
        }
      if (quotas_on && !quota_name.empty()) {
        auto& q = quota(quota_name);
        q.listed = true;
        ++q.preempted;
        if (!preemptor.empty()) q.preemptors.emplace(preemptor);
      }
    }
    key.assign(wire::EnumNameEvictionReason(e.reason()));
    key.append(" (");
    key.append(feature);
    key.append(")");
    evicted_by_reason.add(key);
    ++evicted;
    if (msg.empty()) ++evictions_without_reason;
    auto* p = pod_of(to_string_view(e.pod()));
    if (p != nullptr && p->status == pod_status::bound) release(*p);
  }

  // ---- samples ----------------------------------------------------------------------------
  // p90 - p10 of the nodes' cpu used in % of their capacity (metrics_row::cpu_used_spread_pct).
  double cpu_used_spread() {
    // Unchanged since the last sample (no node's used or allocated cpu moved): the same value.
    if (!spread_stale) return spread_last;
    spread_stale = false;
    spread_last = cpu_used_spread_now();
    return spread_last;
  }
  double cpu_used_spread_now() {
    spread_scratch.clear();
    for (const auto& nr : nodes) {
      if (nr.capacity_cpu <= 0) continue;
      const std::int64_t used = opt.usage_is_allocation ? nr.allocated.cpu_milli : nr.used_cpu;
      spread_scratch.push_back(100.0 * static_cast<double>(used) /
                               static_cast<double>(nr.capacity_cpu));
    }
    if (spread_scratch.empty()) return 0;
    // The values a full sort would put at the two ranks, in linear time (every metrics sample
    // pays this over every node).
    const auto rank = [&](double q) {
      return static_cast<std::size_t>(q * static_cast<double>(spread_scratch.size() - 1));
    };
    const std::size_t hi = rank(0.9), lo = rank(0.1);
    const auto b = spread_scratch.begin();
    std::nth_element(b, b + static_cast<std::ptrdiff_t>(hi), spread_scratch.end());
    std::nth_element(b, b + static_cast<std::ptrdiff_t>(lo), b + static_cast<std::ptrdiff_t>(hi));
    return spread_scratch[hi] - spread_scratch[lo];
  }

  double node_frag(const node_rec& nr) const {
    if (nr.gpus.empty()) return 0;
    const std::int64_t cpu_free = nr.allocatable.cpu_milli - nr.allocated.cpu_milli;
    const std::int64_t mem_free = nr.allocatable.memory_bytes - nr.allocated.memory_bytes;
    double f = 0;
    for (const auto& c : opt.task_classes) {
      double free_total = 0, frag = 0;
      std::int64_t whole_free = 0;
      double best_free = 0;
      for (const auto& g : nr.gpus) {
        const double fr = static_cast<double>(g.core - g.core_used) / 100.0;
        free_total += fr;
        if (g.core_used == 0) ++whole_free;
        best_free = std::max(best_free, fr);
      }
      const double share = c.num_gpu == 0 ? 0.0 : std::min(1.0, c.gpu_milli / 1000.0);
      bool fits = c.cpu <= cpu_free && c.mem <= mem_free;
      if (c.num_gpu > 0) {
        if (share >= 1.0)
          fits = fits && whole_free >= c.num_gpu;
        else
          fits = fits && best_free + 1e-9 >= share;
      }
      if (!fits) {
        frag = free_total;
      } else {
        for (const auto& g : nr.gpus) {
          const double fr = static_cast<double>(g.core - g.core_used) / 100.0;
          if (fr + 1e-9 < share) frag += fr;
        }
      }
      f += c.weight * frag;
    }
    return f;
  }

  void sample(std::int64_t t) {
    if (start_ms < 0) start_ms = t;
    metrics_row r;
    r.time_ms = t;
    r.pods_running = running;
    r.pods_pending = pending;
    r.cpu_capacity = cpu_capacity;
    r.mem_capacity = mem_capacity;
    r.cpu_requested = cpu_requested;
    r.mem_requested = mem_requested;
    r.cpu_allocated = cpu_allocated;
    r.mem_allocated = mem_allocated;
    if (opt.usage_is_allocation) {
      r.cpu_used = cpu_allocated;
      r.mem_used = mem_allocated;
      r.batch_cpu_used = batch_cpu_alloc;
      r.batch_mem_used = batch_mem_alloc;
    } else {
      r.cpu_used = cpu_used;
      r.mem_used = mem_used;
      r.batch_cpu_used = be_cpu_used;
      r.batch_mem_used = be_mem_used;
    }
    r.batch_cpu_allocatable = batch_cpu_allocatable;
    r.batch_mem_allocatable = batch_mem_allocatable;
    r.batch_cpu_allocated = batch_cpu_alloc;
    r.batch_mem_allocated = batch_mem_alloc;
    r.gpu_total = gpu_total;
    r.gpu_allocated = gpu_allocated;
    for (const std::uint32_t n : frag_dirty) {
      nodes[n].frag = node_frag(nodes[n]);
      nodes[n].frag_dirty = false;
    }
    frag_dirty.clear();
    // Summed over every node in registration order (a fixed order: the same double every run).
    double frag = 0;
    for (const auto& nr : nodes) frag += nr.frag;
    r.gpu_frag = frag;
    r.evictions = static_cast<std::int64_t>(evicted);
    r.unschedulable = static_cast<std::int64_t>(unschedulable_events);
    r.cpu_used_spread_pct = cpu_used_spread();
    r.migrations = static_cast<std::int64_t>(migrations_created);
    rows.push_back(r);
    if (quotas_on) sample_quotas(t);
    if (gpu_total > 0) {
      gpu_alloc_ratio_sum += static_cast<double>(gpu_allocated) / static_cast<double>(gpu_total);
      gpu_frag_sum += frag * 10000.0 / static_cast<double>(gpu_total);
      const double idle = static_cast<double>(gpu_total - gpu_allocated) / 100.0;
      if (idle > 0) gpu_frag_idle_sum += frag * 100.0 / idle;
    }
    ++samples;
  }

  void sample_quotas(std::int64_t t) {
    for (auto& [name, q] : quotas) {
      if (!q.has_spec || !q.has_status) continue;
      quota_row r;
      r.time_ms = t;
      r.quota = name;
      r.min_cpu = all_cpu(q.min);
      r.max_cpu = all_cpu(q.max);
      r.runtime_cpu = all_cpu(q.runtime);
      r.used_cpu = all_cpu(q.used);
      r.request_cpu = all_cpu(q.request);
      r.used_memory = all_memory(q.used);
      r.runtime_memory = all_memory(q.runtime);
      q.used_cpu_sum += static_cast<double>(r.used_cpu);
      q.runtime_cpu_sum += static_cast<double>(r.runtime_cpu);
      q.used_mem_sum += static_cast<double>(r.used_memory);
      q.used_cpu_peak = std::max(q.used_cpu_peak, r.used_cpu);
      q.request_cpu_peak = std::max(q.request_cpu_peak, r.request_cpu);
      quota_rows.push_back(std::move(r));
    }
    ++quota_samples;
  }

  // ---- summary ----------------------------------------------------------------------------
  nlohmann::ordered_json quota_summary() const {
    nlohmann::ordered_json j;
    if (!quotas_on) {
      j["quotas"] = 0;
      j["note"] = "the config defines no ElasticQuota";
      return j;
    }
    std::size_t specs = 0;
    for (const auto& [name, q] : quotas) specs += q.has_spec ? 1 : 0;
    j["quotas"] = specs;
    j["note"] =
        "CPU = cpu + batch-cpu + mid-cpu in milli-cores, memory likewise in bytes; averages over "
        "the metrics samples";
    const double n = quota_samples == 0 ? 1.0 : static_cast<double>(quota_samples);
    nlohmann::ordered_json by = nlohmann::ordered_json::array();
    for (const auto& [name, s] : quotas) {
      if (!s.listed) continue;
      nlohmann::ordered_json q;
      q["name"] = name;
      if (s.has_spec) {
        q["parent"] = s.parent.empty() ? "koordinator-root-quota" : s.parent;
        q["min_cpu"] = all_cpu(s.min);
        q["max_cpu"] = all_cpu(s.max);
      }
      q["used_cpu_avg"] = std::llround(s.used_cpu_sum / n);
      q["used_cpu_peak"] = s.used_cpu_peak;
      q["runtime_cpu_avg"] = std::llround(s.runtime_cpu_sum / n);
      if (s.has_status) q["runtime_cpu_at_end"] = all_cpu(s.runtime);
      q["request_cpu_peak"] = s.request_cpu_peak;
      q["used_memory_avg"] = std::llround(s.used_mem_sum / n);
      q["attempts_refused"] = s.refusals;
      if (s.preempted != 0) {
        q["preempted_pods"] = s.preempted;
        q["preemptors"] = s.preemptors.size();
      }
      by.push_back(std::move(q));
    }
    j["by_quota"] = std::move(by);
    return j;
  }

  nlohmann::ordered_json summary(const summary_header& h) const {
    nlohmann::ordered_json j;
    j["schema"] = "colony.sim.summary/v1";
    j["config"] = h.config;
    j["trace"] = h.trace;
    const std::int64_t start = std::max<std::int64_t>(0, start_ms);
    j["virtual_seconds"] = static_cast<double>(end_ms - start) / 1000.0;
    j["start_seconds"] = static_cast<double>(start) / 1000.0;

    std::uint64_t pending_end = 0, running_end = 0;
    std::map<std::string, std::uint64_t> pending_reasons;
    for (const auto& p : pods) {
      if (p.status == pod_status::pending) {
        ++pending_end;
        ++pending_reasons[p.last_reason == no_index ? std::string("not attempted yet")
                                                    : strings[p.last_reason]];
      }
      if (p.status == pod_status::bound) ++running_end;
    }
    nlohmann::ordered_json pj;
    pj["in_trace"] = opt.pods_in_trace;
    pj["submitted"] = submitted;
    pj["not_submitted_before_end"] = opt.pods_in_trace - std::min(opt.pods_in_trace, submitted);
    pj["scheduled"] = scheduled;
    pj["pending_at_end"] = pending_end;
    pj["rejected"] = rejected;
    pj["withdrawn_while_pending"] = withdrawn;
    pj["running_at_end"] = running_end;
    pj["completed"] = completed;
    pj["completed_by_phase"] = completed_by_phase.ordered();
    pj["evicted"] = evicted;
    pj["evicted_by_reason"] = evicted_by_reason.ordered();
    pj["pending_at_end_by_last_reason"] = pending_reasons;
    pj["unschedulable_events"] = unschedulable_events;
    pj["unschedulable_events_by_reason"] = unsched_reasons.ordered();
    pj["bind_rejections"] = bind_rejections;
    pj["admission_errors"] = admission_errors.ordered();
    pj["conservation_ok"] = submitted == scheduled + pending_end + rejected + withdrawn;
    j["pods"] = pj;
    // Only in runs that have them, so other runs' summaries keep their shape.
    if (topology_nodes > 0 || cpuset_pods > 0) {
      nlohmann::ordered_json nj;
      nj["nodes_with_topology"] = topology_nodes;
      nj["cpuset_pods"] = cpuset_pods;
      nj["cpuset_cpus"] = cpuset_cpus;
      nj["pods_with_numa_resources"] = numa_pods;
      j["numa"] = nj;
    }
    if (!device_places.empty() || device_objects_refused > 0 || rdma_pods > 0) {
      nlohmann::ordered_json dj;
      dj["nodes_with_device_object"] = device_places.size();
      dj["device_objects_refused"] = device_objects_refused;
      dj["rdma_pods_scheduled"] = rdma_pods;
      dj["rdma_nics_allocated"] = rdma_nics;
      dj["rdma_vfs_allocated"] = rdma_vfs;
      dj["rdma_pods_nic_on_gpu_pcie_switch"] = rdma_same_pcie;
      dj["rdma_pods_nic_on_gpu_numa_node"] = rdma_same_numa;
      j["devices"] = dj;
    }
    if (!normalization_ratio.empty()) {
      std::map<std::string, std::uint64_t> by_ratio;
      for (const auto& [node, r] : normalization_ratio) ++by_ratio[r];
      nlohmann::ordered_json cj;
      cj["nodes_by_ratio"] = by_ratio;
      j["cpu_normalization"] = cj;
    }
    {
      nlohmann::ordered_json mj;
      mj["created"] = migrations_created;
      mj["started"] = migrations_started;
      mj["succeeded"] = migrations_succeeded;
      mj["failed"] = migrations_failed;
      mj["aborted"] = migrations_aborted;
      mj["by_phase_and_reason"] = migration_phases.ordered();
      j["migrations"] = mj;
    }

    auto pct = [](std::vector<std::int64_t> v) {
      std::sort(v.begin(), v.end());
      nlohmann::ordered_json o;
      o["count"] = v.size();
      o["p50_ms"] = percentile(v, 50);
      o["p90_ms"] = percentile(v, 90);
      o["p99_ms"] = percentile(v, 99);
      o["max_ms"] = v.empty() ? 0 : v.back();
      return o;
    };
    j["scheduling_latency_virtual"] = {
        {"all", pct(latency_ms)}, {"prod", pct(latency_prod_ms)}, {"batch", pct(latency_batch_ms)}};

    auto avg = [&](auto f) {
      double s = 0;
      for (const auto& r : rows) s += f(r);
      return rows.empty() ? 0.0 : s / static_cast<double>(rows.size());
    };
    auto ratio = [](std::int64_t a, std::int64_t b) {
      return b > 0 ? 100.0 * static_cast<double>(a) / static_cast<double>(b) : 0.0;
    };
    auto r2 = [](double v) { return std::round(v * 100.0) / 100.0; };
    nlohmann::ordered_json res;
    res["cpu_capacity_milli"] = cpu_capacity;
    res["memory_capacity_bytes"] = mem_capacity;
    res["avg_cpu_requested_pct"] =
        r2(avg([&](const metrics_row& r) { return ratio(r.cpu_requested, r.cpu_capacity); }));
    res["avg_cpu_allocated_pct"] =
        r2(avg([&](const metrics_row& r) { return ratio(r.cpu_allocated, r.cpu_capacity); }));
    res["avg_cpu_used_pct"] =
        r2(avg([&](const metrics_row& r) { return ratio(r.cpu_used, r.cpu_capacity); }));
    res["avg_memory_requested_pct"] =
        r2(avg([&](const metrics_row& r) { return ratio(r.mem_requested, r.mem_capacity); }));
    res["avg_memory_allocated_pct"] =
        r2(avg([&](const metrics_row& r) { return ratio(r.mem_allocated, r.mem_capacity); }));
    res["avg_memory_used_pct"] =
        r2(avg([&](const metrics_row& r) { return ratio(r.mem_used, r.mem_capacity); }));
    std::int64_t peak_cpu_alloc = 0, peak_cpu_used = 0;
    for (const auto& r : rows) {
      peak_cpu_alloc = std::max(peak_cpu_alloc, r.cpu_allocated);
      peak_cpu_used = std::max(peak_cpu_used, r.cpu_used);
    }
    res["peak_cpu_allocated_pct"] = r2(ratio(peak_cpu_alloc, cpu_capacity));
    res["peak_cpu_used_pct"] = r2(ratio(peak_cpu_used, cpu_capacity));
    j["resources"] = res;

    nlohmann::ordered_json bt;
    bt["avg_batch_cpu_allocatable_milli"] = static_cast<std::int64_t>(
        avg([](const metrics_row& r) { return static_cast<double>(r.batch_cpu_allocatable); }));
    bt["avg_batch_cpu_allocated_milli"] = static_cast<std::int64_t>(
        avg([](const metrics_row& r) { return static_cast<double>(r.batch_cpu_allocated); }));
    bt["avg_batch_cpu_used_milli"] = static_cast<std::int64_t>(
        avg([](const metrics_row& r) { return static_cast<double>(r.batch_cpu_used); }));
    bt["avg_batch_memory_allocatable_bytes"] = static_cast<std::int64_t>(
        avg([](const metrics_row& r) { return static_cast<double>(r.batch_mem_allocatable); }));
    bt["avg_batch_memory_allocated_bytes"] = static_cast<std::int64_t>(
        avg([](const metrics_row& r) { return static_cast<double>(r.batch_mem_allocated); }));
    bt["avg_batch_memory_used_bytes"] = static_cast<std::int64_t>(
        avg([](const metrics_row& r) { return static_cast<double>(r.batch_mem_used); }));
    bt["avg_batch_cpu_reclaimed_pct_of_capacity"] = r2(
        avg([&](const metrics_row& r) { return ratio(r.batch_cpu_allocatable, r.cpu_capacity); }));
    bt["avg_batch_cpu_allocated_pct_of_reclaimed"] = r2(avg([&](const metrics_row& r) {
      return ratio(r.batch_cpu_allocated, r.batch_cpu_allocatable);
    }));
    bt["avg_batch_cpu_used_pct_of_reclaimed"] = r2(avg(
        [&](const metrics_row& r) { return ratio(r.batch_cpu_used, r.batch_cpu_allocatable); }));
    bt["batch_updates"] = batch_updates;
    bt["be_suppress_updates"] = suppress_updates;
    j["batch"] = bt;

    nlohmann::ordered_json g;
    g["gpu_devices"] = gpu_total / 100;
    g["avg_gpu_allocation_pct"] =
        r2(samples ? 100.0 * gpu_alloc_ratio_sum / static_cast<double>(samples) : 0.0);
    g["avg_gpu_fragmentation_pct_of_total"] =
        r2(samples ? gpu_frag_sum / static_cast<double>(samples) : 0.0);
    g["avg_gpu_fragmentation_pct_of_unallocated"] =
        r2(samples ? gpu_frag_idle_sum / static_cast<double>(samples) : 0.0);
    g["final_gpu_allocation_pct"] = r2(ratio(gpu_allocated, gpu_total));
    g["final_gpu_fragmentation_gpus"] = r2(rows.empty() ? 0.0 : rows.back().gpu_frag);
    g["task_classes"] = opt.task_classes.size();
    j["gpu"] = g;
    j["quota"] = quota_summary();

    nlohmann::ordered_json inv;
    inv["over_capacity_binds"] = over_capacity;
    inv["negative_batch_allocatable"] = negative_batch;
    inv["evictions_without_reason"] = evictions_without_reason;
    inv["batch_overcommitted_binds"] = batch_overcommitted;
    j["invariants"] = inv;

    nlohmann::ordered_json ev;
    ev["count"] = events;
    ev["bytes"] = bytes;
    nlohmann::ordered_json bytype;
    for (std::size_t i = 0; i < by_type.size(); ++i) {
      if (by_type[i] == 0) continue;
      bytype[std::string(wire::EnumNamePayload(static_cast<wire::Payload>(i)))] = by_type[i];
    }
    ev["by_type"] = bytype;
    ev["node_metric_reports"] = metric_reports;
    ev["scheduling_cycles"] = cycles;
    ev["log_byte_digest"] = fmt::format("{:016x}", XXH3_64bits_digest(xxh));
    ev["state_digest"] = fmt::format("{:016x}", h.state_digest);
    ev["entities"] = h.entities;
    j["events"] = ev;
    return j;
  }
};

metrics_observer::metrics_observer(observer_options opt)
    : d_(std::make_unique<impl>(std::move(opt))) {}
metrics_observer::~metrics_observer() = default;
metrics_observer::metrics_observer(metrics_observer&&) noexcept = default;
metrics_observer& metrics_observer::operator=(metrics_observer&&) noexcept = default;

void metrics_observer::on_event(const wire::Envelope& env) { d_->on_event(env); }

void metrics_observer::on_record(std::span<const std::uint8_t> record) {
  // The sink's digest: (length, bytes) of every record in offset order.
  const std::uint64_t len = record.size();
  XXH3_64bits_update(d_->xxh, &len, sizeof len);
  XXH3_64bits_update(d_->xxh, record.data(), record.size());
  d_->bytes += record.size();
  d_->on_event(*wire::GetEnvelope(record.data()));
}

void metrics_observer::sample(std::int64_t time_ms) { d_->sample(time_ms); }

const std::vector<metrics_row>& metrics_observer::rows() const { return d_->rows; }

std::vector<quota_row> metrics_observer::quota_rows() const {
  auto out = d_->quota_rows;
  std::stable_sort(out.begin(), out.end(),
                   [](const quota_row& a, const quota_row& b) { return a.quota < b.quota; });
  return out;
}

nlohmann::ordered_json metrics_observer::summary(const summary_header& h) const {
  return d_->summary(h);
}

std::uint64_t metrics_observer::events() const { return d_->events; }

nlohmann::ordered_json trace_section(const trace::trace_set& t, std::size_t nodes, std::size_t pods,
                                     std::size_t usage_curves) {
  nlohmann::ordered_json tr;
  tr["dir"] = t.dir;
  tr["synthetic"] = t.synthetic;
  tr["files"] = t.files;
  tr["nodes"] = nodes;
  tr["pods"] = pods;
  tr["usage_curves"] = usage_curves;
  // Columns a shorter published layout lacks, and what was assumed for them.
  std::vector<std::string> assumed;
  if (t.openb_pods)
    for (const auto& a : t.openb_pods->assumed) assumed.push_back(t.openb_pods->file + ": " + a);
  if (!assumed.empty()) tr["assumed"] = assumed;
  std::vector<std::string> warns;
  auto add = [&](const auto& tbl) {
    if (!tbl) return;
    for (const auto& w : tbl->warnings)
      if (warns.size() < 50) warns.push_back(w.where + ": " + w.message);
  };
  add(t.openb_nodes);
  add(t.openb_pods);
  add(t.machine_usage);
  add(t.machine_meta);
  tr["bad_rows_skipped"] = t.warning_count();
  tr["bad_row_warnings"] = warns;
  return tr;
}

}  // namespace colony::sim
