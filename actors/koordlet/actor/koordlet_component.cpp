#include "actors/koordlet/actor/koordlet_component.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <utility>

#include "messages/names.hpp"
#include "messages/priority.hpp"
#include "messages/qos.hpp"
#include "messages/terms.hpp"

namespace colony::koordlet_actor {

namespace {

using messages::to_string_view;
namespace fb = flatbuffers;
namespace kl = koordlet;

std::pair<std::string, std::string> split_key(std::string_view key) {
  const auto slash = key.find('/');
  if (slash == std::string_view::npos) return {std::string(), std::string(key)};
  return {std::string(key.substr(0, slash)), std::string(key.substr(slash + 1))};
}

template <class T>
std::optional<T> parse_int(std::string_view s) {
  T v{};
  const auto* end = s.data() + s.size();
  const auto [p, ec] = std::from_chars(s.data(), end, v);
  if (ec != std::errc{} || p != end) return std::nullopt;
  return v;
}

// k8s GetPodQOS over the pod-level cpu/memory (after batch translation a BE pod has none).
kl::kube_qos kube_qos_of(const resource_list& req, const resource_list& lim) {
  const bool any =
      req.cpu_milli > 0 || req.memory_bytes > 0 || lim.cpu_milli > 0 || lim.memory_bytes > 0;
  if (!any) return kl::kube_qos::best_effort;
  const bool guaranteed = lim.cpu_milli > 0 && lim.memory_bytes > 0 &&
                          (req.cpu_milli == 0 || req.cpu_milli == lim.cpu_milli) &&
                          (req.memory_bytes == 0 || req.memory_bytes == lim.memory_bytes);
  return guaranteed ? kl::kube_qos::guaranteed : kl::kube_qos::burstable;
}

std::int64_t as_int(double v) { return static_cast<std::int64_t>(std::llround(v)); }

// Two host applications declared alike (usage aside).
bool same_declaration(const kl::host_app_info& a, const kl::host_app_info& b) {
  return a.name == b.name && a.priority == b.priority && a.qos == b.qos &&
         a.has_cgroup_path == b.has_cgroup_path && a.base == b.base &&
         a.parent_dir == b.parent_dir && a.relative_path == b.relative_path;
}

bool is_memory(kl::evict_feature f) {
  return f == kl::evict_feature::be_memory_evict ||
         f == kl::evict_feature::memory_allocatable_evict || f == kl::evict_feature::memory_evict;
}

// The amount an eviction term reports, in the resource the feature's task counts: memory for
// the memory features, batch-cpu for BECPUEvict (it releases BE requests), every CPU class for
// CPUAllocatableEvict (its release spans classes), cpu for CPUEvict (node usage).
std::int64_t term_amount(kl::evict_feature f, const resource_list& r) {
  switch (f) {
    case kl::evict_feature::be_memory_evict:
    case kl::evict_feature::memory_allocatable_evict:
    case kl::evict_feature::memory_evict:
      return r.memory_bytes;
    case kl::evict_feature::be_cpu_evict:
      return r.batch_cpu_milli;
    case kl::evict_feature::cpu_allocatable_evict:
      return r.cpu_milli + r.batch_cpu_milli + r.mid_cpu_milli;
    case kl::evict_feature::cpu_evict:
      return r.cpu_milli;
  }
  return 0;
}

}  // namespace

kl::resource_threshold_strategy to_koordlet(const slo_controller::resource_threshold_strategy& s) {
  // The NodeSLO koordlet reads is the strategy merged over DefaultResourceThresholdStrategy
  // (pkg/util/sloconfig/nodeslo_config.go, merged by nodeslo/resource_strategy.go), so a field
  // the strategy leaves unset takes that default here: parsed configs are merged already, a
  // hand-built strategy gets the same answer.
  const auto d = slo_controller::resource_threshold_strategy::defaults();
  kl::resource_threshold_strategy k;
  k.enable = s.enable.value_or(*d.enable);
  k.cpu_suppress_threshold_percent =
      s.cpu_suppress_threshold_percent.value_or(*d.cpu_suppress_threshold_percent);
  k.cpu_suppress_min_percent = s.cpu_suppress_min_percent;
  k.cpu_suppress_policy = s.cpu_suppress_policy.value_or(*d.cpu_suppress_policy) == "cfsQuota"
                              ? kl::cpu_suppress_policy_type::cfs_quota
                              : kl::cpu_suppress_policy_type::cpuset;
  k.memory_evict_threshold_percent = s.memory_evict_threshold_percent
                                         ? s.memory_evict_threshold_percent
                                         : d.memory_evict_threshold_percent;
  k.memory_evict_lower_percent = s.memory_evict_lower_percent;
  k.memory_allocatable_evict_threshold_percent = s.memory_allocatable_evict_threshold_percent;
  k.memory_allocatable_evict_lower_percent = s.memory_allocatable_evict_lower_percent;
  k.cpu_evict_be_satisfaction_upper_percent = s.cpu_evict_be_satisfaction_upper_percent;
  k.cpu_evict_be_satisfaction_lower_percent = s.cpu_evict_be_satisfaction_lower_percent;
  k.cpu_evict_be_usage_threshold_percent = s.cpu_evict_be_usage_threshold_percent;
  k.cpu_evict_time_window_seconds = s.cpu_evict_time_window_seconds;
  k.cpu_evict_threshold_percent = s.cpu_evict_threshold_percent;
  k.cpu_evict_lower_percent = s.cpu_evict_lower_percent;
  k.cpu_allocatable_evict_threshold_percent = s.cpu_allocatable_evict_threshold_percent;
  k.cpu_allocatable_evict_lower_percent = s.cpu_allocatable_evict_lower_percent;
  k.cpu_evict_policy = s.cpu_evict_policy.value_or(*d.cpu_evict_policy) == "evictByAllocatable"
                           ? kl::cpu_evict_policy_type::evict_by_allocatable
                           : kl::cpu_evict_policy_type::evict_by_real_limit;
  if (s.evict_enabled_priority_threshold)
    k.evict_enabled_priority_threshold =
        static_cast<std::int32_t>(*s.evict_enabled_priority_threshold);
  if (s.allocatable_evict_priority_threshold)
    k.allocatable_evict_priority_threshold =
        static_cast<std::int32_t>(*s.allocatable_evict_priority_threshold);
  return k;
}

kl::cpu_burst_strategy to_koordlet(const slo_controller::cpu_burst_strategy& s) {
  kl::cpu_burst_strategy k;
  const std::string p = s.policy.value_or("none");
  k.config.policy = p == "cpuBurstOnly"        ? kl::cpu_burst_policy::cpu_burst_only
                    : p == "cfsQuotaBurstOnly" ? kl::cpu_burst_policy::cfs_quota_burst_only
                    : p == "auto"              ? kl::cpu_burst_policy::auto_burst
                                               : kl::cpu_burst_policy::none;
  k.config.cpu_burst_percent = s.cpu_burst_percent.value_or(1000);
  k.config.cfs_quota_burst_percent = s.cfs_quota_burst_percent.value_or(300);
  k.config.cfs_quota_burst_period_seconds = s.cfs_quota_burst_period_seconds.value_or(-1);
  k.share_pool_threshold_percent = s.share_pool_threshold_percent.value_or(50);
  return k;
}

kl::resource_qos_cpu_strategy to_koordlet(const slo_controller::resource_qos_strategy& s) {
  kl::resource_qos_cpu_strategy k;  // DefaultCPUQOS per class
  if (s.cpu_policy)
    k.cpu_policy = *s.cpu_policy == "coreSched" ? kl::cpu_qos_policy::core_sched
                                                : kl::cpu_qos_policy::group_identity;
  auto merge = [](const slo_controller::resource_qos_class& c, kl::cpu_qos& q) {
    q.enable = c.cpu_enable.value_or(q.enable);
    q.group_identity = c.group_identity.value_or(q.group_identity);
  };
  merge(s.lsr, k.lsr_class);
  merge(s.ls, k.ls_class);
  merge(s.be, k.be_class);
  merge(s.system, k.system_class);
  return k;
}

kl::resource_qos_memory_strategy to_koordlet_memory(
    const slo_controller::resource_qos_strategy& s) {
  kl::resource_qos_memory_strategy k;
  auto merge = [](const slo_controller::resource_qos_class& c, kl::memory_qos& q) {
    q.enable = c.memory_enable.value_or(q.enable);
    q.min_limit_percent = c.min_limit_percent.value_or(q.min_limit_percent);
    q.low_limit_percent = c.low_limit_percent.value_or(q.low_limit_percent);
    q.throttling_percent = c.throttling_percent.value_or(q.throttling_percent);
  };
  merge(s.lsr, k.lsr_class);
  merge(s.ls, k.ls_class);
  merge(s.be, k.be_class);
  merge(s.system, k.system_class);
  return k;
}

kl::resource_qos_resctrl_strategy to_koordlet_resctrl(
    const slo_controller::resource_qos_strategy& s) {
  kl::resource_qos_resctrl_strategy k;  // DefaultResctrlQOS per class
  auto merge = [](const slo_controller::resource_qos_class& c, kl::resctrl_qos& q) {
    q.enable = c.resctrl_enable.value_or(q.enable);
    q.cat_range_start_percent = c.cat_range_start_percent.value_or(q.cat_range_start_percent);
    q.cat_range_end_percent = c.cat_range_end_percent.value_or(q.cat_range_end_percent);
    q.mba_percent = c.mba_percent.value_or(q.mba_percent);
  };
  merge(s.lsr, k.lsr_class);
  merge(s.ls, k.ls_class);
  merge(s.be, k.be_class);
  return k;
}

std::vector<kl::host_app_info> to_koordlet(
    const std::vector<slo_controller::host_application_spec>& apps) {
  std::vector<kl::host_app_info> out;
  out.reserve(apps.size());
  for (const auto& a : apps) {
    kl::host_app_info h;
    h.name = a.name;
    h.priority = get_pod_priority_class_by_name(a.priority);
    h.qos = get_pod_qos_class_by_name(a.qos);
    if (a.cgroup_path) {
      h.has_cgroup_path = true;
      const auto& b = a.cgroup_path->base;
      h.base = b == slo_controller::cgroup_base_kubepods ? kl::cgroup_base::kube_qos_guaranteed
               : b == slo_controller::cgroup_base_kube_burstable  ? kl::cgroup_base::kube_burstable
               : b == slo_controller::cgroup_base_kube_besteffort ? kl::cgroup_base::kube_besteffort
                                                                  : kl::cgroup_base::cgroup_root;
      h.parent_dir = a.cgroup_path->parent_dir;
      h.relative_path = a.cgroup_path->relative_path;
    }
    out.push_back(std::move(h));
  }
  return out;
}

koordlet_component::koordlet_component(koordlet_options opt)
    : opt_(std::move(opt)), name_("koordlet/" + opt_.node) {
  node_.name = opt_.node;
}

bool koordlet_component::wants(wire::Payload type) const {
  switch (type) {
    case wire::Payload::NodeRegistered:
    case wire::Payload::NodeRemoved:
    case wire::Payload::NodeBatchResourceUpdated:
    case wire::Payload::PodMutated:
    case wire::Payload::PodSubmitted:
    case wire::Payload::PodRejected:
    case wire::Payload::PodScheduled:
    case wire::Payload::PodEvicted:
    case wire::Payload::PodFinished:
    case wire::Payload::PodUsageSampled:
    case wire::Payload::NodeMetricReported:
    case wire::Payload::NodeUsageSampled:
    case wire::Payload::WriteFailed:
    case wire::Payload::CgroupUpdated:  // its own cfs-quota decisions: their base
    case wire::Payload::NodeTopologySampled:
      return true;
    case wire::Payload::NodeSLOUpdated:
      return opt_.follow_node_slo;
    default:
      return false;
  }
}

std::vector<kl::pod_info> koordlet_component::pods() const {
  const auto all = pods_.all();
  return {all.begin(), all.end()};
}

kl::pod_info* koordlet_component::pod_table::find(std::string_view key) {
  const auto it = std::lower_bound(keys_.begin(), keys_.end(), key);
  if (it == keys_.end() || *it != key) return nullptr;
  return &pods_[static_cast<std::size_t>(it - keys_.begin())];
}

void koordlet_component::pod_table::upsert(std::string_view key, kl::pod_info p) {
  const auto it = std::lower_bound(keys_.begin(), keys_.end(), key);
  const auto i = it - keys_.begin();
  if (it != keys_.end() && *it == key) {
    pods_[static_cast<std::size_t>(i)] = std::move(p);
    return;
  }
  keys_.insert(it, std::string(key));
  pods_.insert(pods_.begin() + i, std::move(p));
}

void koordlet_component::pod_table::erase(std::string_view key) {
  const auto it = std::lower_bound(keys_.begin(), keys_.end(), key);
  if (it == keys_.end() || *it != key) return;
  const auto i = it - keys_.begin();
  keys_.erase(it);
  pods_.erase(pods_.begin() + i);
}

const std::vector<kl::processor_info>& koordlet_component::processors() const {
  std::int32_t n = opt_.processors;
  // The machine as its collectors read it (Koordinator's NodeCPUInfo), where no count is set:
  // processors_ is rebuilt when a NodeTopologySampled arrives.
  if (n <= 0 && machine_) return processors_;
  if (n <= 0) n = static_cast<std::int32_t>(node_.capacity.cpu_milli / 1000);
  n = std::max(n, 0);
  if (processors_.size() != static_cast<std::size_t>(n)) {
    processors_.clear();
    for (std::int32_t i = 0; i < n; ++i) processors_.push_back({i, i / 2, 0, 0});
  }
  return processors_;
}

kl::machine_info koordlet_component::machine_from_event(const wire::NodeTopologySampled& e) {
  kl::machine_info m;
  if (e.cpus() != nullptr)
    for (const auto* c : *e.cpus())
      m.cpus.push_back(
          {.id = c->id(), .core = c->core(), .socket = c->socket(), .numa_node = c->numa_node()});
  if (e.numa_nodes() != nullptr)
    for (const auto* n : *e.numa_nodes()) m.numa_nodes.push_back({n->id(), n->memory_bytes()});
  m.cpu_model = std::string(to_string_view(e.cpu_model()));
  m.vendor_id = std::string(to_string_view(e.vendor_id()));
  m.hyper_thread_enabled = e.hyper_thread_enabled();
  m.turbo_enabled = e.turbo_enabled();
  return m;
}

kl::pod_info koordlet_component::pod_from_event(const wire::PodMutated& e, event_time created) {
  kl::pod_info p;
  std::tie(p.ns, p.name) = split_key(to_string_view(e.name()));
  p.uid = std::string(to_string_view(e.name()));
  p.qos = static_cast<kl::qos_class>(e.qos_class());
  p.priority = e.priority();
  p.priority_class_label = static_cast<kl::priority_class>(e.priority_class());
  p.requests = messages::to_resource_list(e.requests());
  p.limits = messages::to_resource_list(e.limits());
  p.kube_qos_class = kube_qos_of(p.requests, p.limits);
  p.creation_time = created;
  p.phase = kl::pod_phase::pending;
  auto scan = [&](const fb::Vector<fb::Offset<wire::KeyValue>>* kvs, bool labels) {
    if (kvs == nullptr) return;
    for (const auto* kv : *kvs) {
      const auto k = to_string_view(kv->key());
      const auto v = to_string_view(kv->value());
      if (labels && k == names::label_eviction_enabled) p.eviction_enabled = v == "true";
      if (labels && k == names::label_priority) p.priority_label = parse_int<std::int64_t>(v);
      if (!labels && k == names::annotation_eviction_priority)
        p.eviction_priority = parse_int<std::int32_t>(v).value_or(0);
    }
  };
  scan(e.labels(), true);
  scan(e.annotations(), false);
  p.containers.push_back({"main", p.requests, p.limits});
  return p;
}

kl::pod_info koordlet_component::pod_from_event(const wire::PodSubmitted& e, event_time created) {
  // The labels the webhook reads (apis/extension/qos_utils.go GetPodQoSClassWithDefault,
  // priority_utils.go GetPodPriorityClassWithDefault, GetPodPriorityValueWithDefault).
  std::optional<std::string_view> qos_label, class_label;
  if (e.labels() != nullptr)
    for (const auto* kv : *e.labels()) {
      const auto k = to_string_view(kv->key());
      if (k == names::label_qos_class) qos_label = to_string_view(kv->value());
      if (k == names::label_priority_class) class_label = to_string_view(kv->value());
    }
  qos_class qos = qos_label ? get_pod_qos_class_by_name(*qos_label) : qos_class::none;
  if (qos == qos_class::none)
    qos = get_pod_qos_class_with_kube_qos(static_cast<kube_qos_class>(e.kube_qos()));
  const std::optional<std::int32_t> prio =
      e.has_priority() ? std::optional<std::int32_t>(e.priority()) : std::nullopt;
  priority_class pc = class_label ? get_pod_priority_class_by_name(*class_label)
                                  : get_priority_class_by_priority(prio);
  if (pc == priority_class::none) pc = get_pod_priority_class_with_qos(qos);
  const std::int32_t value = prio && *prio != priority_none_value_default
                                 ? *prio
                                 : get_default_priority_by_priority_class(pc);
  // The same reading as an admitted pod's: build the PodMutated the webhook would have logged
  // for a pod no profile matched, and read it.
  messages::event_builder b;
  auto& fbb = b.fbb();
  std::vector<std::pair<std::string, std::string>> labels, annos;
  if (e.labels() != nullptr)
    for (const auto* kv : *e.labels())
      labels.emplace_back(to_string_view(kv->key()), to_string_view(kv->value()));
  if (e.annotations() != nullptr)
    for (const auto* kv : *e.annotations())
      annos.emplace_back(to_string_view(kv->key()), to_string_view(kv->value()));
  const auto req = b.resources(messages::to_resource_list(e.requests()));
  const auto lim = b.resources(messages::to_resource_list(e.limits()));
  const auto lab = b.key_values(labels);
  const auto ann = b.key_values(annos);
  const auto n = fbb.CreateString(to_string_view(e.name()));
  const auto pcn = fbb.CreateString(to_string_view(e.priority_class_name()));
  const auto sn = fbb.CreateString(to_string_view(e.scheduler_name()));
  const auto m = wire::CreatePodMutated(fbb, n, 0, static_cast<wire::QoSClass>(qos),
                                        static_cast<wire::PriorityClass>(pc), value, pcn, sn, req,
                                        lim, lab, ann);
  fbb.Finish(m);
  auto p = pod_from_event(*flatbuffers::GetRoot<wire::PodMutated>(fbb.GetBufferPointer()), created);
  // The API server's uid names the pod's cgroup (kubelet's pod<uid> directory).
  if (const auto uid = to_string_view(e.uid()); !uid.empty()) p.uid = std::string(uid);
  return p;
}

messages::header koordlet_component::header(const wire::Envelope& env, wire::EntityKind kind,
                                            std::string_view key) const {
  messages::header h;
  h.time = event_time{env.event_time_ms()};
  h.kind = kind;
  h.key = key;
  h.causation = static_cast<std::int64_t>(env.offset());
  h.source = name_;
  return h;
}

void koordlet_component::on_event(const wire::Envelope& env,
                                  std::vector<messages::byte_buffer>& out) {
  const std::string_view me = opt_.node;
  // Anything but a report may change what the suppression policy reads (node, config, pods).
  if (env.payload_type() != wire::Payload::NodeMetricReported) ++inputs_gen_;
  switch (env.payload_type()) {
    case wire::Payload::NodeRegistered: {
      const auto* e = env.payload_as_NodeRegistered();
      if (to_string_view(e->name()) != me) break;
      registered_ = true;
      const resource_list batch = node_.allocatable;  // keep what the slo-controller wrote
      node_.capacity = messages::to_resource_list(e->capacity());
      node_.allocatable = messages::to_resource_list(e->allocatable());
      if (!opt_.batch_from_node_status) {
        node_.allocatable.batch_cpu_milli = batch.batch_cpu_milli;
        node_.allocatable.batch_memory_bytes = batch.batch_memory_bytes;
        node_.allocatable.mid_cpu_milli = batch.mid_cpu_milli;
        node_.allocatable.mid_memory_bytes = batch.mid_memory_bytes;
      }
      node_.reserved_cpu_milli =
          std::max<std::int64_t>(0, node_.capacity.cpu_milli - node_.allocatable.cpu_milli);
      cpu_norm_ratio_ = 1.0;
      node_reservation_.clear();
      if (e->annotations() != nullptr)
        for (const auto* kv : *e->annotations()) {
          if (to_string_view(kv->key()) == names::annotation_node_reservation)
            node_reservation_ = std::string(to_string_view(kv->value()));
          if (to_string_view(kv->key()) == names::annotation_cpu_normalization_ratio) {
            // apis/extension/cpu_normalization.go: a ratio outside [1, 5] is not used.
            const auto v = to_string_view(kv->value());
            double r = 0;
            const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), r);
            if (ec == std::errc{} && end == v.data() + v.size() && r >= 1.0 && r <= 5.0)
              cpu_norm_ratio_ = r;
          }
        }
      {
        auto rc = kl::node_reserved_cpus(node_reservation_);
        reserved_cpus_ = rc ? std::move(*rc) : std::vector<std::int32_t>{};
      }
      topology_round(env, out);
      break;
    }
    case wire::Payload::NodeTopologySampled: {
      const auto* e = env.payload_as_NodeTopologySampled();
      if (to_string_view(e->node()) != me) break;
      machine_ = machine_from_event(*e);
      if (opt_.processors <= 0) {
        processors_.clear();
        for (const auto& c : machine_->cpus)
          processors_.push_back({c.id, c.core, c.socket, c.numa_node});
      }
      topology_round(env, out);
      break;
    }
    case wire::Payload::NodeRemoved:
      if (to_string_view(env.payload_as_NodeRemoved()->name()) == me) {
        registered_ = false;
        pods_.clear();
      }
      break;
    case wire::Payload::NodeBatchResourceUpdated: {
      const auto* e = env.payload_as_NodeBatchResourceUpdated();
      if (to_string_view(e->node()) != me) break;
      node_.allocatable.batch_cpu_milli = e->batch_cpu_milli();
      node_.allocatable.batch_memory_bytes = e->batch_memory_bytes();
      node_.allocatable.mid_cpu_milli = e->mid_cpu_milli();
      node_.allocatable.mid_memory_bytes = e->mid_memory_bytes();
      node_.has_batch_cpu_allocatable = to_string_view(e->cpu_policy()) != "reset";
      break;
    }
    case wire::Payload::PodMutated:
    case wire::Payload::PodSubmitted: {
      const bool mutated = env.payload_type() == wire::Payload::PodMutated;
      const auto key = mutated ? to_string_view(env.payload_as_PodMutated()->name())
                               : to_string_view(env.payload_as_PodSubmitted()->name());
      auto p =
          mutated ? pod_from_event(*env.payload_as_PodMutated(), event_time{env.event_time_ms()})
                  : pod_from_event(*env.payload_as_PodSubmitted(), event_time{env.event_time_ms()});
      if (auto* q = pods_.find(key); q != nullptr) {
        p.phase = q->phase;
        p.pinned_cpus = std::move(q->pinned_cpus);
        p.cpu_used_cores = q->cpu_used_cores;
        p.memory_used_bytes = q->memory_used_bytes;
        *q = std::move(p);
      } else {
        pending_.insert_or_assign(std::string(key), std::move(p));
      }
      break;
    }
    case wire::Payload::PodRejected:
      if (const auto it = pending_.find(to_string_view(env.payload_as_PodRejected()->name()));
          it != pending_.end())
        pending_.erase(it);
      break;
    case wire::Payload::PodScheduled: {
      const auto* e = env.payload_as_PodScheduled();
      const auto key = to_string_view(e->pod());
      const auto it = pending_.find(key);
      if (to_string_view(e->node()) == me) {
        kl::pod_info p;
        if (it != pending_.end()) {
          p = std::move(it->second);
        } else {  // admitted before this koordlet started: classes come with the NodeMetric
          std::tie(p.ns, p.name) = split_key(key);
          p.uid = std::string(key);
          p.requests = messages::to_resource_list(e->requests());
          p.kube_qos_class = kube_qos_of(p.requests, {});
          p.containers.push_back({"main", p.requests, {}});
          p.creation_time = event_time{env.event_time_ms()};
        }
        p.phase = kl::pod_phase::running;
        // The CPUs NodeNUMAResource bound it to (resource-status), as the scheduler proposed.
        p.pinned_cpus.clear();
        if (const auto cs = to_string_view(e->cpuset()); !cs.empty())
          if (auto cpus = kl::parse_cpuset(cs)) p.pinned_cpus = std::move(*cpus);
        const bool pinned = !p.pinned_cpus.empty();
        pods_.upsert(key, std::move(p));
        if (pinned) topology_round(env, out);
      }
      if (it != pending_.end()) pending_.erase(it);
      break;
    }
    case wire::Payload::PodEvicted:
    case wire::Payload::PodFinished: {
      const auto key = env.payload_type() == wire::Payload::PodEvicted
                           ? to_string_view(env.payload_as_PodEvicted()->pod())
                           : to_string_view(env.payload_as_PodFinished()->pod());
      if (env.payload_type() == wire::Payload::PodFinished) {
        if (const auto it = evicting_.find(key); it != evicting_.end()) evicting_.erase(it);
      } else if (to_string_view(env.source()) == name_) {
        // Its own eviction: kept as it was until the API has carried it out.
        std::erase_if(evicting_, [&](const auto& e) {
          return env.event_time_ms() - e.second.at >= evicted_ttl_ms;
        });
        if (const auto* q = pods_.find(key); q != nullptr)
          evicting_.insert_or_assign(std::string(key), evicting{*q, env.event_time_ms()});
      }
      const auto* gone = pods_.find(key);
      const bool pinned = gone != nullptr && !gone->pinned_cpus.empty();
      pods_.erase(key);
      if (pinned) topology_round(env, out);
      if (const auto it = pending_.find(key); it != pending_.end()) pending_.erase(it);
      if (const auto it = burst_written_.find(key); it != burst_written_.end())
        burst_written_.erase(it);
      if (const auto it = sampled_only_.find(key); it != sampled_only_.end())
        sampled_only_.erase(it);
      // Only where samples name the pods (a node's collectors): they prune it.
      if (env.payload_type() == wire::Payload::PodEvicted && next_report_ms_)
        evicted_.insert_or_assign(std::string(key), env.event_time_ms());
      break;
    }
    case wire::Payload::WriteFailed: {
      // The API refused one of its evictions (a PodDisruptionBudget, the apiserver gone): the
      // pod is still here, and the next round weighs it again.
      const auto* e = env.payload_as_WriteFailed();
      if (e->write() != wire::WriteKind::eviction) break;
      const auto key = to_string_view(e->object());
      const auto it = evicting_.find(key);
      if (it == evicting_.end()) break;
      auto p = std::move(it->second.pod);
      p.evicted = false;
      pods_.upsert(key, std::move(p));
      if (const auto ev = evicted_.find(key); ev != evicted_.end()) evicted_.erase(ev);
      evicting_.erase(it);
      break;
    }
    case wire::Payload::PodUsageSampled: {
      const auto* e = env.payload_as_PodUsageSampled();
      if (to_string_view(e->node()) != me) break;
      if (auto* q = pods_.find(to_string_view(e->pod())); q != nullptr) {
        const auto u = messages::to_resource_list(e->usage());
        q->cpu_used_cores = static_cast<double>(u.cpu_milli) / 1000.0;
        q->memory_used_bytes = static_cast<double>(u.memory_bytes);
      }
      break;
    }
    case wire::Payload::NodeMetricReported: {
      const auto* e = env.payload_as_NodeMetricReported();
      // Its own report: the samples it was built from have had their rounds; it sets the next
      // report's time as report() did (a log whose older samples were trimmed keeps the newest
      // report before them, so a replay keeps the reports' phase).
      if (to_string_view(e->node()) == me && registered_ && to_string_view(env.source()) != name_)
        on_metric(env, *e, out);
      else if (to_string_view(e->node()) == me && to_string_view(env.source()) == name_)
        next_report_ms_ = env.event_time_ms() + report_interval_ms();
      break;
    }
    case wire::Payload::NodeUsageSampled: {
      const auto* e = env.payload_as_NodeUsageSampled();
      if (to_string_view(e->node()) == me && registered_) on_sample(env, *e, out);
      break;
    }
    case wire::Payload::CgroupUpdated:
      if (to_string_view(env.source()) == name_)
        cfs_burst_.observe_decision(*env.payload_as_CgroupUpdated(),
                                    event_time{env.event_time_ms()});
      break;
    case wire::Payload::NodeSLOUpdated: {
      if (env.entity_kind() != wire::EntityKind::Node || to_string_view(env.entity_key()) != me)
        break;
      auto spec = slo_controller::parse_node_slo_spec(
          to_string_view(env.payload_as_NodeSLOUpdated()->spec_json()));
      if (!spec) {
        auto e = spec.error();
        e.where =
            "log offset " + std::to_string(env.offset()) + (e.where.empty() ? "" : ": ") + e.where;
        config_errors_.push_back(std::move(e));
        break;
      }
      opt_.threshold = to_koordlet(spec->resource_used_threshold_with_be);
      opt_.cpu_burst = to_koordlet(spec->cpu_burst);
      if (auto apps = to_koordlet(spec->host_applications);
          apps.size() != opt_.host_apps.size() ||
          !std::equal(apps.begin(), apps.end(), opt_.host_apps.begin(), same_declaration))
        opt_.host_apps = std::move(apps);  // usage comes with the next sample
      if (auto q = slo_controller::parse_resource_qos_strategy(spec->resource_qos_strategy_json);
          q) {
        opt_.cpu_qos = to_koordlet(*q);
        opt_.memory_qos = to_koordlet_memory(*q);
        opt_.resctrl_qos = to_koordlet_resctrl(*q);
      } else {  // keeps the cpu QoS in force
        auto e = q.error();
        e.where = "log offset " + std::to_string(env.offset()) + ": " + e.where;
        config_errors_.push_back(std::move(e));
      }
      break;
    }
    default:
      break;
  }
}

void koordlet_component::on_metric(const wire::Envelope& env, const wire::NodeMetricReported& e,
                                   std::vector<messages::byte_buffer>& out) {
  const auto nu = messages::to_resource_list(e.node_usage());
  node_cpu_cores_ = static_cast<double>(nu.cpu_milli) / 1000.0;
  node_mem_bytes_ = static_cast<double>(nu.memory_bytes);
  orphan_cpu_.clear();
  if (e.pods() != nullptr) {
    for (const auto* pm : *e.pods()) {
      const auto u = messages::to_resource_list(pm->usage());
      auto* q = pods_.find(to_string_view(pm->pod()));
      if (q == nullptr) {
        orphan_cpu_.push_back(static_cast<double>(u.cpu_milli) / 1000.0);
        continue;
      }
      auto& p = *q;
      p.cpu_used_cores = static_cast<double>(u.cpu_milli) / 1000.0;
      p.memory_used_bytes = static_cast<double>(u.memory_bytes);
      if (p.qos == kl::qos_class::none) p.qos = static_cast<kl::qos_class>(pm->qos_class());
      if (!p.priority_class_label && pm->priority_class() != wire::PriorityClass::None)
        p.priority_class_label = static_cast<kl::priority_class>(pm->priority_class());
    }
  }
  // A report's host applications are their last usage, as a sample's are (on_sample).
  for (auto& h : opt_.host_apps) {
    h.cpu_used_cores.reset();
    h.memory_used_bytes.reset();
  }
  if (e.host_apps() != nullptr)
    for (const auto* hm : *e.host_apps()) {
      const auto name = to_string_view(hm->name());
      for (auto& h : opt_.host_apps) {
        if (h.name != name) continue;
        const auto u = messages::to_resource_list(hm->usage());
        h.cpu_used_cores = static_cast<double>(u.cpu_milli) / 1000.0;
        h.memory_used_bytes = static_cast<double>(u.memory_bytes);
      }
    }
  qos_round(env, out);
}

std::int64_t koordlet_component::report_interval_ms() const {
  if (opt_.report_interval_ms) return std::max<std::int64_t>(*opt_.report_interval_ms, 1);
  return kl::effective_report_interval_seconds(opt_.report_policy) * 1000;
}

void koordlet_component::on_sample(const wire::Envelope& env, const wire::NodeUsageSampled& e,
                                   std::vector<messages::byte_buffer>& out) {
  const event_time now{env.event_time_ms()};
  const auto nu = messages::to_resource_list(e.node_usage());
  node_cpu_cores_ = static_cast<double>(nu.cpu_milli) / 1000.0;
  node_mem_bytes_ = static_cast<double>(nu.memory_bytes);
  // usageWithHotPageCache where the node's collectors read kidled's cold pages (Koordinator:
  // the policy and GetIsStartColdMemory, states_nodemetric.go); else usageWithoutPageCache. The
  // QoS plugins keep reading usage without page cache, as Koordinator's do.
  hot_pages_in_force_ = opt_.report_policy.memory_policy ==
                            kl::node_memory_collect_policy::usage_with_hot_page_cache &&
                        e.memory_with_hot_page_bytes() >= 0;
  orphan_cpu_.clear();
  std::vector<kl::usage_sample> pod_samples;
  std::set<std::string_view> seen;
  std::map<std::string, cfs_pod_sample, std::less<>> cfs;
  sample_interval_ms_ = std::max<std::int64_t>(e.interval_ms(), 1);
  if (e.pods() != nullptr) {
    pod_samples.reserve(e.pods()->size());
    for (const auto* pm : *e.pods()) {
      const auto key = to_string_view(pm->pod());
      if (pm->containers() != nullptr && pm->containers()->size() != 0)
        cfs.emplace(std::string(key), cfs_sample_of(*pm));
      const auto u = messages::to_resource_list(pm->usage());
      auto* q = pods_.find(key);
      if (q == nullptr) {
        if (const auto ev = evicted_.find(key);
            ev != evicted_.end() && now.value - ev->second < evicted_ttl_ms) {
          seen.insert(key);  // evicted here, its cgroup not gone yet
          continue;
        }
        // Not placed here by the log: the pod as the node's cgroups show it.
        kl::pod_info p;
        std::tie(p.ns, p.name) = split_key(key);
        p.uid = std::string(to_string_view(pm->uid()));
        p.qos = static_cast<kl::qos_class>(pm->qos_class());
        switch (pm->kube_qos()) {
          case wire::KubeQoSClass::Guaranteed:
            p.kube_qos_class = kl::kube_qos::guaranteed;
            break;
          case wire::KubeQoSClass::Burstable:
            p.kube_qos_class = kl::kube_qos::burstable;
            break;
          case wire::KubeQoSClass::BestEffort:
            p.kube_qos_class = kl::kube_qos::best_effort;
            break;
          default:
            break;
        }
        p.phase = kl::pod_phase::running;
        p.creation_time = now;
        p.containers.push_back({"main", {}, {}});
        pods_.upsert(key, std::move(p));
        sampled_only_.emplace(key);
        ++inputs_gen_;
        q = pods_.find(key);
      }
      if (sampled_only_.count(key) != 0 && q->limits.cpu_milli != pm->cpu_limit_milli()) {
        // The pod cgroup's cfs quota is the only limit a lone node knows (kubelet wrote it from
        // the pod's spec); cpuburst's calcStaticCPUBurstVal needs it.
        q->limits.cpu_milli = pm->cpu_limit_milli();
        q->containers.front().limits.cpu_milli = pm->cpu_limit_milli();
        ++inputs_gen_;
      }
      q->cpu_used_cores = static_cast<double>(u.cpu_milli) / 1000.0;
      q->memory_used_bytes = static_cast<double>(u.memory_bytes);
      // A pod whose cgroup had no idle page stats keeps its usage without page cache.
      const kl::usage_sample s{now, *q->cpu_used_cores,
                               hot_pages_in_force_ && pm->memory_with_hot_page_bytes() >= 0
                                   ? static_cast<double>(pm->memory_with_hot_page_bytes())
                                   : *q->memory_used_bytes};
      window_.add_pod(key, s);
      pod_samples.push_back(s);
      seen.insert(key);
    }
  }
  for (auto it = evicted_.begin(); it != evicted_.end();) {
    if (seen.count(it->first) == 0 || now.value - it->second >= evicted_ttl_ms)
      it = evicted_.erase(it);
    else
      ++it;
  }
  for (auto it = sampled_only_.begin(); it != sampled_only_.end();) {
    if (seen.count(*it) != 0) {
      ++it;
      continue;
    }
    pods_.erase(*it);
    if (const auto b = burst_written_.find(*it); b != burst_written_.end()) burst_written_.erase(b);
    it = sampled_only_.erase(it);
    ++inputs_gen_;
  }
  cfs_burst_.observe(now, std::move(cfs), seen);
  // Host applications (hostapplication collector): the ones sampled get this usage, the others
  // none (their metric is older than the collect interval).
  std::vector<kl::usage_sample> app_samples;
  for (auto& h : opt_.host_apps) {
    h.cpu_used_cores.reset();
    h.memory_used_bytes.reset();
  }
  if (e.host_apps() != nullptr) {
    for (const auto* hs : *e.host_apps()) {
      const auto name = to_string_view(hs->name());
      const auto it = std::find_if(opt_.host_apps.begin(), opt_.host_apps.end(),
                                   [&](const kl::host_app_info& h) { return h.name == name; });
      if (it == opt_.host_apps.end()) continue;  // no longer declared
      const auto u = messages::to_resource_list(hs->usage());
      it->cpu_used_cores = static_cast<double>(u.cpu_milli) / 1000.0;
      it->memory_used_bytes = static_cast<double>(u.memory_bytes);
      const kl::usage_sample s{now, *it->cpu_used_cores, *it->memory_used_bytes};
      window_.add_host_app(name, s);
      app_samples.push_back(s);
    }
  }
  window_.add_node_and_system(
      {now, *node_cpu_cores_,
       hot_pages_in_force_ ? static_cast<double>(e.memory_with_hot_page_bytes())
                           : *node_mem_bytes_},
      pod_samples, app_samples);
  const auto& policy = opt_.report_policy;
  const std::int64_t longest =
      std::max(kl::effective_aggregate_duration_seconds(policy),
               policy.aggregate_durations_seconds.empty()
                   ? 0
                   : *std::max_element(policy.aggregate_durations_seconds.begin(),
                                       policy.aggregate_durations_seconds.end()));
  window_.trim(now + duration_ms{-longest * 1000});
  window_.trim_pods(now + duration_ms{-kl::effective_aggregate_duration_seconds(policy) * 1000});

  qos_round(env, out);

  if (!next_report_ms_) next_report_ms_ = now.value + report_interval_ms();
  if (now.value >= *next_report_ms_) {
    report(env, out);
    next_report_ms_ = now.value + report_interval_ms();
  }
}

void koordlet_component::report(const wire::Envelope& env,
                                std::vector<messages::byte_buffer>& out) {
  const event_time now{env.event_time_ms()};
  // The builder finds a pod's series by pod_info::uid; the window keys them by pod key.
  std::vector<kl::pod_info> pods;
  const auto all = pods_.all();
  pods.reserve(all.size());
  for (const auto& p : all) {
    pods.push_back(p);
    pods.back().uid = p.ns.empty() ? p.name : p.ns + "/" + p.name;
  }
  const auto st =
      kl::build_node_metric_status(window_, pods, opt_.host_apps, opt_.report_policy, now);
  auto& fbb = b_.fbb();
  auto usage = [&](const std::optional<kl::resource_usage>& u) {
    if (!u) return fb::Offset<wire::Resources>();
    resource_list r;
    r.cpu_milli = u->cpu_milli;
    r.memory_bytes = u->memory_bytes;
    return b_.resources(r);
  };
  auto aggregated = [&](const std::vector<kl::aggregated_usage>& list) {
    std::vector<fb::Offset<wire::AggregatedUsage>> v;
    v.reserve(list.size());
    for (const auto& a : list) {
      const auto avg = usage(a.avg);
      const auto p50 = usage(a.p50);
      const auto p90 = usage(a.p90);
      const auto p95 = usage(a.p95);
      const auto p99 = usage(a.p99);
      v.push_back(
          wire::CreateAggregatedUsage(fbb, a.duration_seconds * 1000, avg, p50, p90, p95, p99));
    }
    return fbb.CreateVector(v);
  };
  const auto node = b_.key_string(opt_.node);
  const auto nu = usage(st.node_metric.node_usage);
  const auto su = usage(st.node_metric.system_usage);
  const auto an = aggregated(st.node_metric.aggregated_node_usages);
  const auto as = aggregated(st.node_metric.aggregated_system_usages);
  std::vector<fb::Offset<wire::PodMetric>> pms;
  pms.reserve(st.pods_metric.size());
  for (const auto& p : st.pods_metric) {
    const auto key = fbb.CreateString(p.ns.empty() ? p.name : p.ns + "/" + p.name);
    const auto ru = usage(p.pod_usage);
    pms.push_back(wire::CreatePodMetric(fbb, key, ru, static_cast<wire::PriorityClass>(p.priority),
                                        static_cast<wire::QoSClass>(p.qos)));
  }
  const auto pv = fbb.CreateVector(pms);
  // The policy the memory figures follow (the last sample's): usageWithHotPageCache only where
  // the kernel gave cold pages.
  const auto mp =
      fbb.CreateString(hot_pages_in_force_ ? "usageWithHotPageCache" : "usageWithoutPageCache");
  fb::Offset<fb::Vector<fb::Offset<wire::HostAppMetric>>> hv;
  if (!st.host_app_metric.empty()) {
    std::vector<fb::Offset<wire::HostAppMetric>> hms;
    for (const auto& h : st.host_app_metric) {
      const auto hn = fbb.CreateString(h.name);
      const auto hu = usage(h.usage);
      hms.push_back(wire::CreateHostAppMetric(fbb, hn, hu,
                                              static_cast<wire::PriorityClass>(h.priority),
                                              static_cast<wire::QoSClass>(h.qos)));
    }
    hv = fbb.CreateVector(hms);
  }
  const auto payload = wire::CreateNodeMetricReported(
      fbb, node, now.value, kl::effective_aggregate_duration_seconds(opt_.report_policy) * 1000,
      report_interval_ms(), nu, su, an, as, pv, 0, hv, mp);
  out.push_back(b_.finish(header(env, wire::EntityKind::Node, opt_.node), payload));
}

void koordlet_component::qos_round(const wire::Envelope& env,
                                   std::vector<messages::byte_buffer>& out) {
  const event_time now{env.event_time_ms()};
  if (!cpu_evictor_) cpu_evictor_ = kl::evictor_state{now};
  const auto pods = pods_.all();

  // BE CPU window sample (beresource collector): BE usage, BE batch-cpu requests, real limit.
  {
    kl::be_cpu_sample s;
    s.time = now;
    for (const auto& p : pods) {
      if (p.qos != kl::qos_class::be) continue;
      s.usage_milli += p.cpu_used_cores.value_or(0) * 1000.0;
      s.request_milli += static_cast<double>(p.requests.batch_cpu_milli);
    }
    double limit = static_cast<double>(node_.capacity.cpu_milli);
    if (!be_cpuset_.empty())
      limit = std::min(limit, static_cast<double>(be_cpuset_.size()) * 1000.0);
    if (be_cfs_quota_us_ > 0)
      limit = std::min(limit, static_cast<double>(be_cfs_quota_us_) * 1000.0 /
                                  static_cast<double>(kl::default_cfs_period_us));
    s.real_limit_milli = limit;
    be_samples_.push_back(s);
    node_samples_.push_back({now, *node_cpu_cores_, *node_mem_bytes_});
    const std::int64_t window_s = kl::cpu_evict_window_seconds(opt_.threshold, opt_.timing);
    const event_time keep{now.value - 2 * window_s * 1000};
    std::erase_if(be_samples_, [&](const auto& x) { return x.time.value < keep.value; });
    std::erase_if(node_samples_, [&](const auto& x) { return x.time.value < keep.value; });
  }

  suppress_round(env, pods, out);

  // Memory eviction.
  {
    kl::memory_evict_input in;
    in.node = &node_;
    in.pods = pods;
    in.node_memory_used_bytes = node_mem_bytes_;
    const auto d = kl::memory_evict(in, opt_.threshold, opt_.gates, opt_.timing, mem_evictor_, now,
                                    opt_.memory_evict);
    mem_evictor_ = d.next_state;
    if (d.ran && !d.round.victims.empty()) {
      const std::vector<kl::explain_term> trigger{
          {"nodeMemoryUsed", *node_mem_bytes_, "bytes", ""},
          {"nodeMemoryCapacity", static_cast<double>(node_.capacity.memory_bytes), "bytes", ""},
          {"memoryEvictThresholdPercent",
           static_cast<double>(opt_.threshold.memory_evict_threshold_percent.value_or(70)),
           "percent", ""}};
      evict(env, pods, d.round, d.tasks, trigger, out);
    }
  }
  // CPU eviction (BE satisfaction, CPU usage, CPU allocatable).
  {
    const std::int64_t window_s = kl::cpu_evict_window_seconds(opt_.threshold, opt_.timing);
    kl::cpu_evict_input in;
    in.node = &node_;
    in.pods = pods;
    in.be = kl::summarize_be_cpu(be_samples_, now, window_s, opt_.timing.collect_res_used_interval);
    double sum = 0;
    std::int64_t n = 0;
    for (const auto& s : node_samples_) {
      if (s.time.value < now.value - window_s * 1000) continue;
      sum += s.cpu_cores;
      ++n;
    }
    if (n > 0) in.node_cpu_avg_cores = sum / static_cast<double>(n);
    const auto d = kl::cpu_evict(in, opt_.threshold, opt_.gates, opt_.timing, *cpu_evictor_, now);
    cpu_evictor_ = d.next_state;
    if (d.ran && !d.round.victims.empty())
      evict(env, pods, d.round, d.tasks, d.be_satisfaction_explain, out);
  }
  burst_round(env, pods, out);
  cfs_burst_round(env, pods, out);
  hooks_round(env, pods, out);
}

void koordlet_component::suppress_round(const wire::Envelope& env,
                                        std::span<const kl::pod_info> pods,
                                        std::vector<messages::byte_buffer>& out) {
  // A node without pods whose inputs are those of the last round gets the last decision (the
  // policy is a pure function of them): an idle node reports every minute.
  const bool memo_able = pods.empty() && orphan_cpu_.empty() && opt_.host_apps.empty();
  auto& m = suppress_memo_;
  const bool hit =
      memo_able && m.valid && m.inputs_gen == inputs_gen_ && m.node_cpu_cores == node_cpu_cores_ &&
      m.be_cpuset == be_cpuset_ && m.be_cfs_quota_us == be_cfs_quota_us_ &&
      m.state.cfs_quota == suppress_state_.cfs_quota && m.state.cpuset == suppress_state_.cpuset;
  if (!hit) {
    const auto& procs = processors();
    kl::cpu_suppress_input in;
    in.node = &node_;
    in.pods = pods;
    in.orphan_pod_cpu_cores = orphan_cpu_;
    in.host_apps = opt_.host_apps;
    in.node_cpu_used_cores = node_cpu_cores_;
    in.cpuset.processors = procs;
    in.cpuset.old_be_cpuset = be_cpuset_;
    in.cpuset.reserved_cpus = reserved_cpus_;
    in.cpuset.memo = &cpuset_memo_;
    in.current_be_cfs_quota_us = be_cfs_quota_us_;
    m.d = kl::suppress_be_cpu(in, opt_.threshold, opt_.gates, suppress_state_);
    m.valid = memo_able;
    if (memo_able) {  // the inputs the decision is reused for
      m.inputs_gen = inputs_gen_;
      m.node_cpu_cores = node_cpu_cores_;
      m.be_cpuset = be_cpuset_;
      m.be_cfs_quota_us = be_cfs_quota_us_;
      m.state = suppress_state_;
    }
  }
  const auto& d = m.d;
  suppress_state_ = d.next_state;
  std::string policy, cpuset, key;
  std::int64_t be_milli = -1;
  std::vector<kl::explain_term> extra;
  switch (d.action) {
    case kl::suppress_action::cpuset:
      if (d.cpuset.cpus.empty()) return;
      policy = "cpuset";
      cpuset = kl::format_cpuset(d.cpuset.cpus);
      be_milli = std::max<std::int64_t>(0, d.suppress.suppress_milli);
      key = policy + "|" + cpuset;
      extra.push_back(kl::suppress_term("targetCPUs", static_cast<double>(d.cpuset.target_cpus)));
      extra.push_back(kl::suppress_term("lsrCPUs", static_cast<double>(d.cpuset.lsr_cpus)));
      be_cpuset_ = d.cpuset.cpus;
      std::sort(be_cpuset_.begin(), be_cpuset_.end());
      break;
    case kl::suppress_action::cfs_quota:
      if (!d.cfs_quota.write) return;  // delta under 1 % of the node: keep the quota
      policy = "cfsQuota";
      be_milli = std::max<std::int64_t>(0, d.suppress.suppress_milli);
      key = policy + "|" + std::to_string(d.cfs_quota.quota_us);
      extra.push_back(kl::suppress_term("cfsQuotaUs", static_cast<double>(d.cfs_quota.quota_us)));
      extra.push_back(kl::suppress_term("stepLimited", d.cfs_quota.step_limited ? 1.0 : 0.0));
      be_cfs_quota_us_ = d.cfs_quota.quota_us;
      break;
    case kl::suppress_action::recover:
      if (last_suppress_.empty() || last_suppress_ == "recover") return;
      policy = opt_.threshold.cpu_suppress_policy == kl::cpu_suppress_policy_type::cfs_quota
                   ? "cfsQuota"
                   : "cpuset";
      cpuset = kl::format_cpuset(d.restore_cpuset);
      key = "recover";
      extra.push_back({"recover", 1.0, "count", d.reason});
      be_cfs_quota_us_ = kl::be_unset_quota;
      be_cpuset_ = d.restore_cpuset;
      break;
    case kl::suppress_action::none:
      return;
  }
  if (key == last_suppress_) return;
  last_suppress_ = key;
  auto& fbb = b_.fbb();
  std::vector<fb::Offset<wire::Term>> terms;
  // A term as defined by the policy (kl::suppress_terms) goes by the vocabulary's number alone,
  // and not at all when it is 0: its unit and description are the reader's to look up. Others
  // carry their strings, each distinct one written once.
  std::vector<std::pair<std::string_view, fb::Offset<fb::String>>> pool;
  auto shared = [&](std::string_view v) {
    if (v.empty()) return fb::Offset<fb::String>{};
    for (const auto& [k, off] : pool)
      if (k == v) return off;
    const auto off = fbb.CreateString(v.data(), v.size());
    pool.emplace_back(v, off);
    return off;
  };
  auto add = [&](const kl::explain_term& x) {
    const auto* def = kl::find_suppress_term(x.name);
    const auto known = def != nullptr && def->unit == x.unit && def->text == x.text
                           ? messages::known_term(x.name)
                           : wire::TermName::unnamed;
    if (known != wire::TermName::unnamed) {
      if (as_int(x.value) == 0) return;  // schema v6: a defined term not listed is 0
      wire::TermBuilder tb(fbb);
      tb.add_value(as_int(x.value));
      tb.add_known(known);
      terms.push_back(tb.Finish());
      return;
    }
    const auto n = fbb.CreateString(x.name);
    const auto u = shared(x.unit);
    const auto t = shared(x.text);
    terms.push_back(wire::CreateTerm(fbb, n, as_int(x.value), u, t));
  };
  for (const auto& x : d.suppress.explain) add(x);
  for (const auto& x : extra) add(x);
  const auto tv = fbb.CreateVector(terms);
  const auto nn = b_.key_string(opt_.node);
  const auto pp = fbb.CreateString(policy);
  const auto cs = fbb.CreateString(cpuset);
  out.push_back(b_.finish(header(env, wire::EntityKind::Node, opt_.node),
                          wire::CreateBeSuppressed(fbb, nn, pp, be_milli, cs, tv)));
}

void koordlet_component::evict(const wire::Envelope& env, std::span<const kl::pod_info> pods,
                               const kl::evict_round& round,
                               const std::vector<kl::evict_task>& tasks,
                               const std::vector<kl::explain_term>& trigger,
                               std::vector<messages::byte_buffer>& out) {
  auto& fbb = b_.fbb();
  resource_list cumulative;
  std::int64_t order = 0;
  for (const auto& v : round.victims) {
    bool request_target = false;
    for (const auto& t : tasks)
      if (t.feature == v.feature) request_target = t.target == kl::release_target::pod_request;
    cumulative += request_target ? v.released_request : v.released_used;
    ++order;
    if (v.already_evicted) continue;
    const auto& p = pods[v.pod];
    const std::string key = p.ns.empty() ? p.name : p.ns + "/" + p.name;
    const bool mem = is_memory(v.feature);
    const char* unit = mem ? "bytes" : "milli";
    resource_list to_release;
    bool by_request = false;  // the task counts requests (the *AllocatableEvict features)
    for (const auto& t : tasks) {
      if (t.feature != v.feature) continue;
      to_release = t.to_release;
      by_request = t.target == kl::release_target::pod_request;
    }
    const resource_list& mine = by_request ? v.released_request : v.released_used;
    std::vector<fb::Offset<wire::Term>> terms;
    auto add = [&](std::string_view name, std::int64_t value, std::string_view u,
                   std::string_view text) {
      const auto n = fbb.CreateString(name);
      const auto uu = fbb.CreateString(u);
      const auto t = fbb.CreateString(text);
      terms.push_back(wire::CreateTerm(fbb, n, value, uu, t));
    };
    for (const auto& x : trigger) add(x.name, as_int(x.value), x.unit, x.text);
    add("feature", 0, "", kl::to_string(v.feature));
    add("victimOrder", order, "count", "position in this round's eviction order");
    add("evictionPriority", v.inputs.eviction_priority, "", "koordinator.sh/eviction-priority");
    add("priority", v.inputs.priority, "", "priority value used by the sort");
    add("labelPriority", v.inputs.label_priority, "", "koordinator.sh/priority");
    add("podUsed", v.inputs.used, unit, "usage the sort used");
    add("podRequest", v.inputs.request, unit, "request by class");
    add("toRelease", term_amount(v.feature, to_release), unit, "what the task had to release");
    add("released", term_amount(v.feature, mine), unit, "what this victim releases");
    add("releasedInRound", term_amount(v.feature, cumulative), unit,
        "released by this and earlier victims of the round");
    const auto tv = fbb.CreateVector(terms);
    const auto pn = fbb.CreateString(key);
    const auto nn = fbb.CreateString(opt_.node);
    const auto msg = fbb.CreateString(kl::evict_round::reason(v.feature));
    const auto rel = b_.resources(p.requests);
    const auto reason = mem ? wire::EvictionReason::MemoryEvict : wire::EvictionReason::CPUEvict;
    out.push_back(b_.finish(header(env, wire::EntityKind::Pod, key),
                            wire::CreatePodEvicted(fbb, pn, nn, reason, msg, tv, rel)));
    // Evicted until the pod is gone (Evictor.IsPodEvicted): later rounds count, not repeat it.
    if (auto* q = pods_.find(key); q != nullptr) q->evicted = true;
  }
}

void koordlet_component::burst_round(const wire::Envelope& env, std::span<const kl::pod_info> pods,
                                     std::vector<messages::byte_buffer>& out) {
  if (!opt_.gates.cpu_burst) return;
  const auto cfg = kl::merge_burst_config(opt_.cpu_burst.config, std::nullopt);
  if (!kl::cpu_burst_enabled(cfg)) return;
  auto& fbb = b_.fbb();
  for (const auto& p : pods) {
    if (!kl::pod_cpu_burstable(p) || p.evicted) continue;
    const auto v = kl::apply_cpu_burst(p, cfg);
    const std::string key = p.ns.empty() ? p.name : p.ns + "/" + p.name;
    const auto it = burst_written_.find(key);
    if (it != burst_written_.end() && it->second == v.pod) continue;
    burst_written_.insert_or_assign(key, v.pod);
    std::vector<std::pair<std::string, std::string>> settings;
    // A pod known from the samples only has no containers by name (its one container stands for
    // the pod cgroup): only the pod's file is set.
    const bool named_containers = sampled_only_.count(key) == 0;
    for (std::size_t i = 0; named_containers && i < v.containers.size() && i < p.containers.size();
         ++i)
      settings.emplace_back(p.containers[i].name + "/cpu.cfs_burst_us",
                            std::to_string(v.containers[i]));
    settings.emplace_back("cpu.cfs_burst_us", std::to_string(v.pod));
    const auto sv = b_.key_values(settings);
    std::vector<fb::Offset<wire::Term>> terms;
    auto add = [&](std::string_view name, std::int64_t value, std::string_view u,
                   std::string_view text) {
      const auto n = fbb.CreateString(name);
      const auto uu = fbb.CreateString(u);
      const auto t = fbb.CreateString(text);
      terms.push_back(wire::CreateTerm(fbb, n, value, uu, t));
    };
    add("cpuLimit", p.limits.cpu_milli, "milli", "pod cpu limit");
    add("cpuBurstPercent", cfg.cpu_burst_percent.value_or(1000), "percent", "CPUBurstStrategy");
    const auto tv = fbb.CreateVector(terms);
    const auto nn = fbb.CreateString(opt_.node);
    const auto tn = fbb.CreateString(key);
    out.push_back(b_.finish(header(env, wire::EntityKind::Pod, key),
                            wire::CreateCgroupUpdated(fbb, nn, tn, sv, tv)));
  }
}

std::int64_t koordlet_component::longest_window_ms() const {
  const auto& policy = opt_.report_policy;
  std::int64_t s = kl::effective_aggregate_duration_seconds(policy);
  for (const auto d : policy.aggregate_durations_seconds) s = std::max(s, d);
  s = std::max(s, 2 * kl::cpu_evict_window_seconds(opt_.threshold, opt_.timing));
  return std::max({s * 1000, evicted_ttl_ms, cfs_quota_burster::forget_base_after_ms});
}

bool koordlet_component::wants_container_bandwidth() const {
  if (!opt_.gates.cpu_burst) return false;
  const auto p = opt_.cpu_burst.config.policy.value_or(kl::cpu_burst_policy::none);
  return p == kl::cpu_burst_policy::cfs_quota_burst_only || p == kl::cpu_burst_policy::auto_burst ||
         cfs_burst_.any_off_base();
}

void koordlet_component::cfs_burst_round(const wire::Envelope& env,
                                         std::span<const kl::pod_info> pods,
                                         std::vector<messages::byte_buffer>& out) {
  if (!opt_.gates.cpu_burst || cfs_burst_.sampled().empty()) return;
  const event_time now{env.event_time_ms()};
  // getNodeStateForBurst: node and pod CPU averaged over min(5 x interval, 10 s).
  const std::int64_t span_ms = std::min<std::int64_t>(5 * sample_interval_ms_, 10000);
  const auto since = now.value - span_ms;
  std::optional<double> node_avg;
  {
    double sum = 0;
    std::int64_t n = 0;
    for (const auto& s : node_samples_)
      if (s.time.value > since) {
        sum += s.cpu_cores;
        ++n;
      }
    if (n > 0) node_avg = sum / static_cast<double>(n);
  }
  std::vector<std::optional<double>> pod_avg(pods.size());
  std::vector<bool> spec_known(pods.size());
  for (std::size_t i = 0; i < pods.size(); ++i) {
    const auto& p = pods[i];
    const std::string key = p.ns.empty() ? p.name : p.ns + "/" + p.name;
    spec_known[i] = sampled_only_.count(key) == 0;
    const auto q = p.qos;
    if (q != kl::qos_class::lse && q != kl::qos_class::lsr && q != kl::qos_class::be) continue;
    double sum = 0;
    std::int64_t n = 0;
    for (const auto& s : window_.pod(key))
      if (s.time.value > since) {
        sum += s.cpu_cores;
        ++n;
      }
    if (n > 0) pod_avg[i] = sum / static_cast<double>(n);
  }
  const auto state =
      kl::get_node_state_for_burst(opt_.cpu_burst.share_pool_threshold_percent, node_avg,
                                   static_cast<std::int32_t>(processors().size()), pods, pod_avg);
  auto& fbb = b_.fbb();
  for (const auto& ch : cfs_burst_.round(opt_.cpu_burst, state, pods, spec_known, now)) {
    const auto sv = b_.key_values(ch.settings);
    std::vector<fb::Offset<wire::Term>> terms;
    terms.reserve(ch.inputs.size() + 1);
    for (const auto& t : ch.inputs) {
      const auto n = fbb.CreateString(t.name);
      const auto u = fbb.CreateString(t.unit);
      const auto x = fbb.CreateString(t.text);
      terms.push_back(wire::CreateTerm(fbb, n, t.value, u, x));
    }
    {
      const auto n = fbb.CreateString("sharePoolThresholdPercent");
      const auto u = fbb.CreateString("percent");
      const auto x = fbb.CreateString("CPUBurstStrategy");
      terms.push_back(wire::CreateTerm(fbb, n, opt_.cpu_burst.share_pool_threshold_percent, u, x));
    }
    const auto tv = fbb.CreateVector(terms);
    const auto nn = fbb.CreateString(opt_.node);
    const auto tn = fbb.CreateString(ch.pod_key);
    out.push_back(b_.finish(header(env, wire::EntityKind::Pod, ch.pod_key),
                            wire::CreateCgroupUpdated(fbb, nn, tn, sv, tv)));
  }
}

void koordlet_component::hooks_round(const wire::Envelope& env, std::span<const kl::pod_info> pods,
                                     std::vector<messages::byte_buffer>& out) {
  using settings_t = std::vector<std::pair<std::string, std::string>>;
  const kl::bvt_rule bvt =
      opt_.gates.group_identity ? kl::parse_bvt_rule(opt_.cpu_qos) : kl::bvt_rule{};
  // Once a class was enabled the files are kept in step: disabling writes 0 back.
  bvt_active_ = bvt_active_ || bvt.enable;
  const bool quota_on = kl::be_cfs_quota_enabled(opt_.threshold);
  auto& fbb = b_.fbb();
  struct term {
    std::string name;
    std::int64_t value;
    std::string unit, text;
  };
  auto emit = [&](wire::EntityKind kind, std::string_view entity, std::string_view target,
                  const settings_t& settings, const std::vector<term>& inputs) {
    const auto it = hooks_written_.find(target);
    if (it != hooks_written_.end() && it->second == settings) return;
    hooks_written_.insert_or_assign(std::string(target), settings);
    const auto sv = b_.key_values(settings);
    std::vector<fb::Offset<wire::Term>> terms;
    for (const auto& t : inputs) {
      const auto n = fbb.CreateString(t.name);
      const auto u = t.unit.empty() ? fb::Offset<fb::String>{} : fbb.CreateString(t.unit);
      const auto x = t.text.empty() ? fb::Offset<fb::String>{} : fbb.CreateString(t.text);
      terms.push_back(wire::CreateTerm(fbb, n, t.value, u, x));
    }
    const auto tv = fbb.CreateVector(terms);
    // The pod's records name it as entity and as target, the QoS dirs' the node as entity and
    // node: one string serves both.
    const auto nn =
        kind == wire::EntityKind::Node ? b_.key_string(opt_.node) : fbb.CreateString(opt_.node);
    const auto tn = target == entity && kind != wire::EntityKind::Node ? b_.key_string(target)
                                                                       : fbb.CreateString(target);
    out.push_back(
        b_.finish(header(env, kind, entity), wire::CreateCgroupUpdated(fbb, nn, tn, sv, tv)));
  };
  std::set<std::string, std::less<>> live;
  for (const auto& p : pods) {
    if (p.evicted) continue;
    const std::string key = p.ns.empty() ? p.name : p.ns + "/" + p.name;
    settings_t settings;
    std::vector<term> inputs;
    // BatchResource: only a pod whose spec carries batch resources (Koordinator: the
    // extended-resource-spec annotation; without it the kubelet's values stay).
    bool batch = false;
    for (const auto& c : p.containers)
      batch = batch || c.requests.batch_cpu_milli > 0 || c.limits.batch_cpu_milli > 0 ||
              c.requests.batch_memory_bytes > 0 || c.limits.batch_memory_bytes > 0;
    if (opt_.gates.batch_resource && batch && sampled_only_.count(key) == 0) {
      if (const auto s = kl::be_pod_cgroup(p, quota_on, cpu_norm_ratio_)) {
        settings.emplace_back("cpu.shares", std::to_string(s->cpu_shares));
        settings.emplace_back("cpu.cfs_quota_us", std::to_string(s->cfs_quota_us));
        settings.emplace_back("memory.limit_in_bytes", std::to_string(s->memory_limit_bytes));
        std::int64_t req = 0, lim = 0, mem = 0;
        for (const auto& c : p.containers) {
          req += std::max<std::int64_t>(0, c.requests.batch_cpu_milli);
          lim += std::max<std::int64_t>(0, c.limits.batch_cpu_milli);
          mem += std::max<std::int64_t>(0, c.limits.batch_memory_bytes);
        }
        // The terms' meaning is in docs/koordlet.md ("BE cgroups from batch resources"); a
        // record carries names, values and units only (one is written per BE pod).
        inputs.push_back({"batchCPURequest", req, "milli", {}});
        inputs.push_back({"batchCPULimit", lim, "milli", {}});
        inputs.push_back({"batchMemoryLimit", mem, "bytes", {}});
        inputs.push_back({"cfsQuotaEnabled", quota_on ? 1 : 0, "", {}});
        inputs.push_back({"cpuNormalizationRatio", as_int(cpu_norm_ratio_ * 100), "percent", {}});
      }
    }
    if (sampled_only_.count(key) == 0)
      if (const auto m = kl::pod_memory_qos(opt_.memory_qos, p, node_.allocatable.memory_bytes)) {
        settings.emplace_back("memory.min", std::to_string(m->min_bytes));
        settings.emplace_back("memory.low", std::to_string(m->low_bytes));
        settings.emplace_back("memory.high",
                              m->high_bytes ? std::to_string(*m->high_bytes) : std::string("max"));
        const auto& q = kl::memory_qos_of(opt_.memory_qos, p);
        inputs.push_back({"minLimitPercent", q.min_limit_percent, "percent", {}});
        inputs.push_back({"lowLimitPercent", q.low_limit_percent, "percent", {}});
        inputs.push_back({"throttlingPercent", q.throttling_percent, "percent", {}});
      }
    if (bvt_active_) {
      const auto v = kl::pod_bvt_value(bvt, p.qos, p.kube_qos_class);
      settings.emplace_back("cpu.bvt_warp_ns", std::to_string(v));
      inputs.push_back({"groupIdentity", v, "", "pod bvt by QoS (getPodBvtValue)"});
    }
    if (settings.empty()) continue;
    if (!p.uid.empty() && p.uid != key) inputs.push_back({"podUID", 0, "", p.uid});
    live.insert(key);
    emit(wire::EntityKind::Pod, key, key, settings, inputs);
  }
  if (bvt_active_) {
    const std::pair<std::string_view, kl::kube_qos> dirs[] = {
        {"qos/guaranteed", kl::kube_qos::guaranteed},
        {"qos/burstable", kl::kube_qos::burstable},
        {"qos/besteffort", kl::kube_qos::best_effort}};
    for (const auto& [target, kq] : dirs) {
      const auto v = kl::kube_qos_dir_bvt_value(bvt, kq);
      live.emplace(target);
      emit(wire::EntityKind::Node, opt_.node, target, {{"cpu.bvt_warp_ns", std::to_string(v)}},
           {{"groupIdentity", v, "", "kube QoS dir bvt (getKubeQOSDirBvtValue)"}});
    }
    // Host applications (host_app_reconciler.go with SetHostAppBvtValue): by their QoS.
    for (const auto& h : opt_.host_apps) {
      const auto v = kl::host_app_bvt_value(bvt, h.qos);
      const std::string target = std::string(host_app_target_prefix) + h.name;
      live.insert(target);
      emit(wire::EntityKind::Node, opt_.node, target, {{"cpu.bvt_warp_ns", std::to_string(v)}},
           {{"groupIdentity", v, "", "host application bvt by QoS (getHostQOSBvtValue)"}});
    }
  }
  // Resctrl (pkg/koordlet/qosmanager/plugins/resctrl): nothing until a class enables it, as
  // group identity (Koordinator writes every group's schemata whenever the NodeSLO has a
  // resourceQOSStrategy; Colony waits for an enabled class, so a default NodeSLO writes nothing).
  resctrl_active_ =
      resctrl_active_ || (opt_.gates.rdt_resctrl && kl::resctrl_enabled(opt_.resctrl_qos));
  if (resctrl_active_ && opt_.gates.rdt_resctrl) {
    for (auto& d : kl::resctrl_decisions(opt_.resctrl_qos, opt_.resctrl_info, pods)) {
      const std::string target = "resctrl/" + std::string(d.group);
      if (d.schemata_error) {
        auto e = *d.schemata_error;
        e.where = "NodeSLO.spec.resourceQOSStrategy." + e.where;
        const bool known = std::any_of(
            config_errors_.begin(), config_errors_.end(),
            [&](const error& x) { return x.where == e.where && x.message == e.message; });
        if (!known) config_errors_.push_back(std::move(e));
      }
      settings_t settings;
      if (d.schemata && !d.schemata->empty()) settings.emplace_back("schemata", *d.schemata);
      if (d.assign_tasks) {
        std::string uids;
        for (const auto& u : d.pod_uids) uids += (uids.empty() ? "" : ",") + u;
        settings.emplace_back("tasks", uids);
      }
      if (settings.empty()) continue;
      const auto& q = kl::resctrl_qos_of(opt_.resctrl_qos, d.group);
      live.insert(target);
      emit(wire::EntityKind::Node, opt_.node, target, settings,
           {{"enable", q.enable ? 1 : 0, "", {}},
            {"catRangeStartPercent", q.cat_range_start_percent, "percent", {}},
            {"catRangeEndPercent", q.cat_range_end_percent, "percent", {}},
            {"mbaPercent", q.mba_percent, "percent", {}}});
    }
  }
  // Pods gone (finished, evicted, no longer sampled): a pod that comes back is written again.
  std::erase_if(hooks_written_, [&](const auto& e) { return live.count(e.first) == 0; });
}

}  // namespace colony::koordlet_actor
