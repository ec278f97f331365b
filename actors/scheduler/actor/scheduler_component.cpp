#include "actors/scheduler/actor/scheduler_component.hpp"

#include <algorithm>
#include <charconv>
#include <limits>
#include <utility>

#include <nlohmann/json.hpp>

#include "actors/scheduler/device/device_topology.hpp"
#include "actors/scheduler/elastic_quota.hpp"
#include "actors/scheduler/gpu_model_affinity.hpp"
#include "messages/names.hpp"
#include "messages/terms.hpp"

namespace colony::scheduler {

using messages::to_resource_list;
using messages::to_string_view;

// kube-scheduler's NodeUnschedulable filter (plugins/nodeunschedulable), with the node's
// readiness and removal folded in (kube expresses those as the not-ready/unreachable taints
// that TaintToleration filters). Reads the component's flags by the node's index.
class scheduler_component::node_unschedulable final : public plugin {
 public:
  static constexpr std::string_view plugin_name = "NodeUnschedulable";
  [[nodiscard]] std::string_view name() const noexcept override { return plugin_name; }
  [[nodiscard]] std::uint32_t points() const noexcept override { return ep_filter; }
  status filter(cycle_state&, const pod_info&, const node_info& node, event_time) override {
    return check(static_cast<std::size_t>(&node - base_));
  }
  // Filter only reads the node flags, which no cycle changes.
  [[nodiscard]] bool parallel_safe() const noexcept override { return true; }
  // Queue when the changed node is ready and schedulable now (the Filter itself).
  [[nodiscard]] queueing_hint filter_hint(const pod_info&, const cluster_event& ev) const override {
    return ev.node == nullptr || check(ev.node_index).ok() ? queueing_hint::queue
                                                           : queueing_hint::skip;
  }
  void prepare(const node_info* base, const std::vector<node_flags>* flags) {
    base_ = base;
    flags_ = flags;
    excluded_.clear();
  }
  // Node slots the next cycle's pod may not use (sorted): a reservation's required node
  // affinity `metadata.name NotIn`. prepare() clears them.
  void exclude(std::vector<std::size_t> slots) { excluded_ = std::move(slots); }

 private:
  // ErrReasonUnknownCondition / ErrReasonUnschedulable (nodeunschedulable/node_unschedulable.go),
  // and the not-ready taint's message.
  static constexpr std::string_view unschedulable_ = "node(s) were unschedulable";
  static constexpr std::string_view not_ready_ =
      "node(s) had untolerated taint {node.kubernetes.io/not-ready: }";
  // ErrReasonPod (nodeaffinity/node_affinity.go).
  static constexpr std::string_view affinity_ = "node(s) didn't match Pod's node affinity/selector";
  const node_info* base_ = nullptr;
  const std::vector<node_flags>* flags_ = nullptr;
  std::vector<std::size_t> excluded_;

  [[nodiscard]] status check(std::size_t i) const {
    if (flags_ == nullptr || i >= flags_->size()) return {};
    const auto& f = (*flags_)[i];
    if (f.removed || !f.ready) return status::unresolvable(not_ready_);
    if (f.unschedulable) return status::unresolvable(unschedulable_);
    if (!excluded_.empty() && std::binary_search(excluded_.begin(), excluded_.end(), i))
      return status::unresolvable(affinity_);
    return {};
  }
};

namespace {

kube_qos to_kube_qos(wire::KubeQoSClass q, const resource_list& req, const resource_list& lim) {
  switch (q) {
    case wire::KubeQoSClass::Guaranteed:
      return kube_qos::guaranteed;
    case wire::KubeQoSClass::BestEffort:
      return kube_qos::best_effort;
    case wire::KubeQoSClass::Burstable:
      return kube_qos::burstable;
    default:
      break;
  }
  if (req == resource_list{} && lim == resource_list{}) return kube_qos::best_effort;
  if (lim.cpu_milli > 0 && lim.cpu_milli == req.cpu_milli && lim.memory_bytes > 0 &&
      lim.memory_bytes == req.memory_bytes)
    return kube_qos::guaranteed;
  return kube_qos::burstable;
}

// The scheduler's request view of a pod, as the sim builds it: pod-level requests without the
// pod count; a koordinator.sh/gpu request is DeviceShare's to convert.
void set_requests(pod_info& info, const resource_list& r) {
  info.requests = r;
  info.requests.pods = 0;
  info.devices = {};
  if (r.gpu > 0) info.devices.koord_gpu = r.gpu;
  info.requests.gpu_core = 0;
  info.requests.gpu_memory_ratio = 0;
}

// koordinator.sh/rdma and koordinator.sh/fpga, which the log carries among a request's extended
// resources (after set_requests, which clears the device request).
void set_extended_devices(pod_info& info, const wire::Resources* r) {
  if (r == nullptr || r->extended() == nullptr) return;
  for (const auto* q : *r->extended()) {
    const auto n = to_string_view(q->name());
    if (n == names::koord_rdma) info.devices.rdma = q->value();
    if (n == names::koord_fpga) info.devices.fpga = q->value();
  }
}

// The ElasticQuota labels the plugin reads from pod_info (quota_of, non-preemptible admission).
void set_quota_labels(pod_info& info, const quota::key_value_list* labels) {
  info.quota_name = std::string(quota::find_key(labels, names::label_quota_name).value_or(""));
  info.non_preemptible = quota::non_preemptible_of(labels);
}

// NodeNUMAResource's pod annotations (resource-spec, numa-topology-spec). The set is the pod's
// whole set: an annotation that went away resets its part. One that does not parse leaves its
// error for PreFilter to report (Koordinator's GetResourceSpec error fails the pod the same way).
// DeviceShare's annotations, kept as written (PreFilter parses them and refuses the pod, naming
// the field, when they do not parse).
void set_device_annotations(pod_info& info, const quota::key_value_list* annotations) {
  info.device_allocate_hint.clear();
  info.device_joint_allocate.clear();
  if (annotations == nullptr) return;
  for (const auto* kv : *annotations) {
    const auto k = to_string_view(kv->key());
    if (k == names::annotation_device_allocate_hint)
      info.device_allocate_hint = std::string(to_string_view(kv->value()));
    else if (k == names::annotation_device_joint_allocate)
      info.device_joint_allocate = std::string(to_string_view(kv->value()));
  }
}

// The node's GPUs become `gpus` (sorted by minor), each keeping what pods hold of the GPU with
// its minor: a registration or a Device object restates the devices, not their use.
void replace_gpus(node_info& n, std::vector<gpu_device> gpus) {
  for (auto& g : gpus)
    for (const auto& old : n.gpus)
      if (old.minor == g.minor) {
        g.core_used = old.core_used;
        g.memory_used_bytes = old.memory_used_bytes;
        g.memory_ratio_used = old.memory_ratio_used;
      }
  std::sort(gpus.begin(), gpus.end(),
            [](const gpu_device& a, const gpu_device& b) { return a.minor < b.minor; });
  n.gpus = std::move(gpus);
}

// A log record's devices: GPU shares (no type) and, schema v11, RDMA NICs / FPGAs. An entry of a
// type Colony does not know is left out.
void devices_of(const flatbuffers::Vector<flatbuffers::Offset<wire::DeviceAllocation>>* v,
                std::vector<gpu_allocation>& gpus, device::device_allocations& others) {
  if (v == nullptr) return;
  for (const auto* d : *v) {
    const auto type = to_string_view(d->type());
    if (type.empty()) {
      gpus.push_back(gpu_allocation{d->minor(), d->core(), d->memory_bytes(), d->memory_ratio()});
      continue;
    }
    auto t = device::parse_device_type(type);
    if (!t || *t == device::device_type::gpu) continue;
    device::device_allocation a;
    a.type = *t;
    a.minor = d->minor();
    (*t == device::device_type::rdma ? a.resources.rdma : a.resources.fpga) = d->amount();
    if (d->vf_bus_id() != nullptr && d->vf_bus_id()->size() > 0)
      a.vf = device::virtual_function{d->vf_minor(), std::string(to_string_view(d->vf_bus_id()))};
    others.push_back(std::move(a));
  }
}

void set_numa_annotations(pod_info& info, const quota::key_value_list* annotations) {
  info.cpu_resource_spec = {};
  info.numa_spec = {};
  info.numa_spec_error.clear();
  if (annotations == nullptr) return;
  for (const auto* kv : *annotations) {
    const auto k = to_string_view(kv->key());
    if (k == names::annotation_resource_spec) {
      if (auto r = numa::parse_resource_spec(to_string_view(kv->value())))
        info.cpu_resource_spec = *r;
      else
        info.numa_spec_error = r.error().describe();
    } else if (k == names::annotation_numa_topology_spec) {
      if (auto r = numa::parse_numa_topology_spec(to_string_view(kv->value())))
        info.numa_spec = *r;
      else
        info.numa_spec_error = r.error().describe();
    }
  }
}

// A NodeResourceTopology as NodeNUMAResource's topology options (topology_options.hpp).
std::shared_ptr<const numa::topology_options> topology_options_of(
    const wire::NodeResourceTopologyUpdated& e) {
  numa::label_map annotations;
  if (e.annotations())
    for (const auto* kv : *e.annotations())
      annotations.insert_or_assign(std::string(to_string_view(kv->key())),
                                   std::string(to_string_view(kv->value())));
  std::vector<std::string> policies;
  if (e.topology_policies())
    for (const auto* p : *e.topology_policies()) policies.emplace_back(to_string_view(p));
  std::vector<numa::nrt_zone> zones;
  if (e.zones())
    for (const auto* z : *e.zones())
      zones.push_back(numa::nrt_zone{std::string(to_string_view(z->name())),
                                     std::string(to_string_view(z->type())),
                                     z->cpu_allocatable_milli(), z->memory_allocatable_bytes()});
  return std::make_shared<const numa::topology_options>(
      numa::new_topology_options(annotations, policies, zones));
}

// What the Reservation plugin's owner rules read of a pod (PodSubmitted): uid, labels, the
// controller owner ("Kind/name"), reservation-ignored and reservation-affinity. An affinity
// annotation that does not parse is left out (the pod then uses reservations as if it had none).
std::shared_ptr<const pod_identity> identity_of(const wire::PodSubmitted& e) {
  auto id = std::make_shared<pod_identity>();
  id->uid = std::string(to_string_view(e.uid()));
  if (e.labels())
    for (const auto* kv : *e.labels())
      id->labels.insert_or_assign(std::string(to_string_view(kv->key())),
                                  std::string(to_string_view(kv->value())));
  if (const auto owner = to_string_view(e.owner()); !owner.empty()) {
    const auto slash = owner.find('/');
    pod_owner_reference o;
    o.kind = std::string(owner.substr(0, slash == std::string_view::npos ? 0 : slash));
    o.name = std::string(slash == std::string_view::npos ? owner : owner.substr(slash + 1));
    o.controller = true;
    id->owner_references.push_back(std::move(o));
  }
  if (auto it = id->labels.find(names::label_reservation_ignored); it != id->labels.end())
    id->reservation_ignored = it->second == "true";
  if (e.annotations())
    for (const auto* kv : *e.annotations())
      if (to_string_view(kv->key()) == names::annotation_reservation_affinity)
        (void)parse_reservation_affinity(to_string_view(kv->value()), *id);
  return id;
}

reservation_owner owner_of(const wire::ReservationOwner& o) {
  reservation_owner r;
  auto s = [](const flatbuffers::String* x) { return std::string(to_string_view(x)); };
  if (o.has_object())
    r.object =
        reservation_object_ref{s(o.object_uid()), s(o.object_name()), s(o.object_namespace()), ""};
  if (o.has_controller()) {
    // PodSubmitted names a pod's controller by Kind/name only (identity_of), so the owner's
    // apiVersion and uid, which a Reservation object always sets (the CRD requires them), cannot
    // be compared: matched on kind, name, namespace and the controller flag.
    reservation_controller_ref c;
    c.kind = s(o.controller_kind());
    c.name = s(o.controller_name());
    c.ns = s(o.controller_namespace());
    if (o.controller_flag() >= 0) c.controller = o.controller_flag() == 1;
    r.controller = std::move(c);
  }
  if (o.has_label_selector()) {
    admission::label_selector sel;
    if (o.match_labels())
      for (const auto* kv : *o.match_labels())
        sel.match_labels.insert_or_assign(s(kv->key()), s(kv->value()));
    r.label_selector = std::move(sel);
  }
  return r;
}

// The reserve pod's queue key: a namespace is a lowercase DNS label, so no pod has this one.
std::string reserve_pod_key(std::string_view name) { return "Reservation/" + std::string(name); }

// Whether a profile disables a plugin by name at Filter or multiPoint (kube's
// plugins.<point>.disabled; "*" only disables kube's default plugins, which this is not).
bool profile_disables(const profile_config& pc, std::string_view plugin) {
  for (const char* point : {"filter", "multiPoint"}) {
    auto it = pc.plugins.find(point);
    if (it == pc.plugins.end()) continue;
    for (const auto& d : it->second.disabled)
      if (d == plugin) return true;
  }
  return false;
}

}  // namespace

result<std::unique_ptr<scheduler_component>> scheduler_component::create(
    scheduler_component_options opts) {
  if (!opts.config) {
    auto cfg = parse_scheduler_config(koord_scheduler_shipped_config(), "builtin:koord-scheduler");
    if (!cfg) return tl::unexpected(cfg.error());
    opts.config = std::move(*cfg);
  }
  if (opts.profile >= opts.config->profiles.size())
    return fail(errc::invalid_input,
                "scheduler profile " + std::to_string(opts.profile) + " does not exist",
                "scheduler_component_options.profile");
  auto reg = plugin_registry::with_builtin();
  auto built = build_framework(*opts.config, opts.profile, reg, opts.seed);
  if (!built) return tl::unexpected(built.error());
  std::unique_ptr<scheduler_component> c(new scheduler_component(std::move(opts)));
  c->fwk_ = std::move(built->fwk);
  c->fwk_->options().ties = c->opts_.ties;
  c->fwk_->options().parallelizer = c->opts_.parallelizer;
  c->fwk_->options().recorder = c->opts_.recorder;
  c->skipped_plugins_ = std::move(built->skipped_plugins);
  if (c->opts_.gpu_model_affinity && c->fwk_->find(gpu_model_affinity::plugin_name) == nullptr &&
      !profile_disables(c->opts_.config->profiles[c->opts_.profile],
                        gpu_model_affinity::plugin_name))
    c->fwk_->add(std::make_shared<gpu_model_affinity>(), 1, ep_filter);
  c->unsched_ = std::make_shared<node_unschedulable>();
  c->fwk_->add(c->unsched_, 1, ep_filter);
  if (c->opts_.elastic_quota) {
    c->quota_args_ = c->opts_.config->profiles[c->opts_.profile].elastic_quota.value_or(
        c->opts_.elastic_quota_args);
    if (c->opts_.elastic_quota_ignore_pod_overhead)
      c->quota_args_.elastic_quota_ignore_pod_overhead = true;
    auto tree = std::make_shared<quota::quota_tree>(c->quota_args_);
    c->quota_ = std::make_unique<quota::quota_book>(tree);
    // PreFilter (admission) and Reserve/Unreserve (used); PostFilter (preemption) when the
    // profile lists ElasticQuota there, as Koordinator's shipped one does.
    std::uint32_t points = ep_pre_filter | ep_reserve;
    const auto& pc = c->opts_.config->profiles[c->opts_.profile];
    for (const char* point : {"postFilter", "multiPoint"})
      if (auto it = pc.plugins.find(point); it != pc.plugins.end())
        for (const auto& e : it->second.enabled)
          if (e.name == elastic_quota::plugin_name) points |= ep_post_filter;
    c->fwk_->add(std::make_shared<elastic_quota>(std::move(tree)), 1, points);
  }
  for (const auto& e : c->fwk_->plugins()) c->weights_[std::string(e.impl->name())] = e.weight;
  queue_options qo;
  qo.initial_backoff = duration_ms{c->opts_.config->pod_initial_backoff_seconds * 1000};
  qo.max_backoff = duration_ms{c->opts_.config->pod_max_backoff_seconds * 1000};
  qo.unschedulable_timeout = c->opts_.pod_max_in_unschedulable_pods_duration;
  if (c->opts_.queueing_hints) {
    const framework* fwk = c->fwk_.get();
    qo.hint = [fwk](const queued_pod& qp, const cluster_event& ev) {
      return fwk->filter_hint(qp.pod, ev);
    };
  }
  c->queue_ = std::make_unique<scheduling_queue>(std::move(qo));
  return c;
}

scheduler_component::scheduler_component(scheduler_component_options opts)
    : opts_(std::move(opts)), name_("koord-scheduler/" + opts_.id) {}

bool scheduler_component::wants(wire::Payload type) const {
  using P = wire::Payload;
  if (quota_ && quota::quota_book::wants(type)) return true;
  switch (type) {
    case P::NodeRegistered:
    case P::NodeConditionChanged:
    case P::NodeRemoved:
    case P::NodeMetricReported:
    case P::NodeBatchResourceUpdated:
    case P::PodSubmitted:
    case P::PodMutated:
    case P::PodRejected:
    case P::PodScheduled:
    case P::PodBindRejected:
    case P::PodEvicted:
    case P::PodFinished:
    case P::ClockTicked:
    case P::ReservationUpserted:
    case P::ReservationPhaseChanged:
    case P::NodeResourceTopologyUpdated:
    case P::ObjectObserved:  // Device objects
      return true;
    default:
      return false;
  }
}

std::size_t scheduler_component::proposed() const {
  std::size_t n = 0;
  for (const auto& [k, p] : pods_) n += p.phase == pod_phase::proposed ? 1 : 0;
  return n;
}

const node_info* scheduler_component::node(std::string_view name) const {
  auto it = node_index_.find(name);
  return it == node_index_.end() ? nullptr : &nodes_[it->second];
}

std::size_t scheduler_component::node_slot(std::string_view name) {
  auto it = node_index_.find(name);
  if (it != node_index_.end()) return it->second;
  const std::size_t i = nodes_.size();
  nodes_.emplace_back();
  nodes_.back().name = std::string(name);
  flags_.emplace_back();
  amp_.emplace_back();
  node_index_.emplace(std::string(name), i);
  return i;
}

void scheduler_component::amplify_node(std::size_t i) {
  auto& n = nodes_[i];
  const auto& a = amp_[i];
  const auto amplified = amplified_allocatable(a.raw, a.ratios);
  n.allocatable.cpu_milli = amplified.cpu_milli;
  n.allocatable.memory_bytes = amplified.memory_bytes;
  // NodeNUMAResource reads the same ratios (filterAmplifiedCPUs, amplifyNUMANodeResources).
  n.numa.cpu_amplification_ratio = a.ratios.cpu;
  n.numa.memory_amplification_ratio = a.ratios.memory;
  n.numa.refresh();
  // node.koordinator.sh/raw-allocatable, which the webhook keeps while the ratio is set and
  // LoadAware reads.
  if (a.ratios.any()) {
    n.raw_allocatable[resource_name::cpu] = a.raw.cpu_milli;
    n.raw_allocatable[resource_name::memory] = a.raw.memory_bytes;
  } else {
    n.raw_allocatable.erase(resource_name::cpu);
    n.raw_allocatable.erase(resource_name::memory);
  }
}

// Forgets an assumed or bound pod from its node; the freed room may fit unschedulable pods
// (kube's AssignedPodDelete cluster event).
void scheduler_component::unassume(pod_rec& p) {
  if (p.node.empty()) return;
  if (auto it = node_index_.find(p.node); it != node_index_.end())
    if (forget_pod(nodes_[it->second], p.info.key))
      node_event(it->second, cluster_event_type::assigned_pod_delete);
  p.node.clear();
}

void scheduler_component::observe_device(const wire::ObjectObserved& o) {
  const std::size_t i = node_slot(to_string_view(o.name()));
  auto& n = nodes_[i];
  n.device_model.reset();
  if (!o.deleted()) {
    nlohmann::json obj = {{"metadata", {{"name", std::string(to_string_view(o.name()))}}}};
    obj["spec"] = nlohmann::json::parse(to_string_view(o.spec_json()), nullptr, false);
    if (obj["spec"].is_discarded()) obj["spec"] = nullptr;
    if (auto nd = device::parse_device(obj)) {
      auto model = std::make_shared<device::device_model>();
      model->topology = device::build_numa_topology(*nd);
      model->devices = std::move(*nd);
      // The Device object is the GPUs' source (Koordinator's device cache): what pods hold stays.
      std::vector<gpu_device> gpus;
      for (const auto& dv : model->devices.of_type(device::device_type::gpu)) {
        gpu_device g;
        g.minor = dv.minor;
        g.healthy = dv.health;
        g.core_total = dv.resources.gpu_core;
        g.memory_total_bytes = dv.resources.gpu_memory;
        g.memory_ratio_total = dv.resources.gpu_memory_ratio;
        if (dv.topology) g.pcie_id = dv.topology->pcie_id;
        gpus.push_back(std::move(g));
      }
      replace_gpus(n, std::move(gpus));
      n.device_model = std::move(model);
    } else {
      auto err = nd.error();
      err.where = "Device/" + std::string(to_string_view(o.name())) +
                  (err.where.empty() ? "" : " " + err.where);
      device_errors_.push_back(std::move(err));
    }
  }
  ++n.generation;
  node_event(i, cluster_event_type::node_update);
}

void scheduler_component::on_bound(std::string_view pod, std::string_view node,
                                   const resource_list& requests, std::vector<gpu_allocation> gpus,
                                   std::string_view reservation, bind_grant grant) {
  auto it = pods_.find(pod);
  if (it == pods_.end()) {
    pod_rec r;
    r.info.key = std::string(pod);
    set_requests(r.info, requests);
    r.ours = false;
    it = pods_.emplace(std::string(pod), std::move(r)).first;
  }
  auto& p = it->second;
  if (p.phase == pod_phase::done) return;
  if (p.phase == pod_phase::queued) (void)queue_->remove(pod);
  // Our own proposal confirmed, or another binding of a pod we assumed on the same node: the
  // view already holds it.
  const bool held =
      (p.phase == pod_phase::proposed || p.phase == pod_phase::bound) && p.node == node;
  if (!held) {
    unassume(p);
    const std::size_t n = node_slot(node);
    decision d;
    d.node = std::string(node);
    d.gpu_allocations = std::move(gpus);
    d.device_allocations = std::move(grant.devices);
    d.cpuset = std::move(grant.cpuset);
    d.numa_resources = std::move(grant.numa_resources);
    assume_pod(nodes_[n], p.info, d, now_);
    p.node = std::string(node);
    p.reservation.clear();
    if (auto k = find_reservation(nodes_[n], reservation)) {
      assume_reservation_owner(nodes_[n], *k, p.info);
      p.reservation = std::string(reservation);
    }
  }
  p.phase = pod_phase::bound;
  p.qp.reset();
}

void scheduler_component::on_event(const wire::Envelope& env,
                                   std::vector<messages::byte_buffer>& /*out*/) {
  using P = wire::Payload;
  now_ = event_time{std::max(now_.value, env.event_time_ms())};
  last_offset_ = static_cast<std::int64_t>(env.offset());
  if (quota_) (void)quota_->apply(env);
  switch (env.payload_type()) {
    case P::NodeRegistered: {
      const auto* e = env.payload_as_NodeRegistered();
      const std::size_t i = node_slot(to_string_view(e->name()));
      auto& n = nodes_[i];
      const resource_list colo = n.allocatable;  // batch/mid come from the slo-controller
      n.allocatable =
          e->allocatable() ? to_resource_list(e->allocatable()) : to_resource_list(e->capacity());
      n.allocatable.batch_cpu_milli = colo.batch_cpu_milli;
      n.allocatable.batch_memory_bytes = colo.batch_memory_bytes;
      n.allocatable.mid_cpu_milli = colo.mid_cpu_milli;
      n.allocatable.mid_memory_bytes = colo.mid_memory_bytes;
      amp_[i].raw = n.allocatable;
      amp_[i].ratios = {};
      if (e->annotations())
        for (const auto* kv : *e->annotations())
          if (to_string_view(kv->key()) == annotation_resource_amplification_ratio) {
            // A malformed ratio amplifies nothing (Koordinator's webhook refuses the update).
            if (auto r = parse_amplification_ratios(to_string_view(kv->value())))
              amp_[i].ratios = *r;
          }
      amplify_node(i);
      if (e->gpus()) {
        std::vector<gpu_device> gpus;
        for (const auto* g : *e->gpus()) {
          gpu_device d;
          d.minor = g->minor();
          d.healthy = g->healthy();
          d.core_total = g->core();
          d.memory_total_bytes = g->memory_bytes();
          gpus.push_back(d);
        }
        replace_gpus(n, std::move(gpus));
      }
      // The label set is the node's whole set: a model label that went away clears it.
      n.gpu_model = std::string(quota::find_key(e->labels(), names::label_gpu_model).value_or(""));
      {
        std::vector<std::pair<std::string_view, std::string_view>> labels;
        if (e->labels())
          for (const auto* kv : *e->labels())
            labels.emplace_back(to_string_view(kv->key()), to_string_view(kv->value()));
        (void)n.numa.set_labels(labels);
      }
      ++n.generation;
      const bool added = !flags_[i].registered;
      flags_[i] = node_flags{true, e->unschedulable(), false, true};
      node_event(i, added ? cluster_event_type::node_add : cluster_event_type::node_update);
      break;
    }
    case P::NodeConditionChanged: {
      const auto* e = env.payload_as_NodeConditionChanged();
      const std::size_t i = node_slot(to_string_view(e->name()));
      flags_[i].ready = e->ready();
      flags_[i].unschedulable = e->unschedulable();
      node_event(i, cluster_event_type::node_update);
      break;
    }
    case P::NodeRemoved: {
      const std::size_t i = node_slot(to_string_view(env.payload_as_NodeRemoved()->name()));
      flags_[i].removed = true;
      flags_[i].ready = false;
      break;
    }
    case P::NodeResourceTopologyUpdated: {
      const auto* e = env.payload_as_NodeResourceTopologyUpdated();
      const std::size_t i = node_slot(to_string_view(e->node()));
      auto& n = nodes_[i];
      n.numa.set_options(e->deleted() ? nullptr : topology_options_of(*e));
      ++n.generation;
      node_event(i, cluster_event_type::node_update);
      break;
    }
    case P::ObjectObserved: {
      const auto* e = env.payload_as_ObjectObserved();
      if (to_string_view(e->kind()) == "Device") observe_device(*e);
      break;
    }
    case P::NodeMetricReported: {
      const auto* e = env.payload_as_NodeMetricReported();
      auto& n = nodes_[node_slot(to_string_view(e->node()))];
      // The new report replaces the old one; its storage is reused (a node reports every minute).
      if (!n.metric) n.metric.emplace();
      auto& m = *n.metric;
      m.update_time = event_time{e->update_time_ms()};
      static const std::int64_t default_interval_s = node_metric{}.report_interval_seconds;
      m.report_interval_seconds =
          e->report_interval_ms() > 0 ? e->report_interval_ms() / 1000 : default_interval_s;
      m.has_node_metric = true;
      m.node_usage = to_resource_list(e->node_usage());
      m.system_usage = to_resource_list(e->system_usage());
      m.aggregated.clear();
      const std::size_t np = e->pods() ? e->pods()->size() : 0;
      m.pods.resize(np);
      for (std::size_t k = 0; k < np; ++k) {
        const auto* pm = e->pods()->Get(static_cast<flatbuffers::uoffset_t>(k));
        auto& x = m.pods[k];
        x.key.assign(to_string_view(pm->pod()));
        x.priority = static_cast<priority_class>(pm->priority_class());
        x.usage = to_resource_list(pm->usage());
      }
      ++n.generation;
      break;
    }
    case P::NodeBatchResourceUpdated: {
      const auto* e = env.payload_as_NodeBatchResourceUpdated();
      const std::size_t i = node_slot(to_string_view(e->node()));
      auto& n = nodes_[i];
      n.allocatable.batch_cpu_milli = e->batch_cpu_milli();
      n.allocatable.batch_memory_bytes = e->batch_memory_bytes();
      n.allocatable.mid_cpu_milli = e->mid_cpu_milli();
      n.allocatable.mid_memory_bytes = e->mid_memory_bytes();
      // The slo-controller's metadata patch (meta.annotationsPatch, a JSON merge patch of the
      // node's annotations): a new amplification ratio re-amplifies the node's allocatable.
      if (const auto* ts = e->terms())
        for (const auto* t : *ts)
          if (messages::term_named(*t, "meta.annotationsPatch")) {
            if (auto r = amplification_from_patch(to_string_view(t->text()))) {
              amp_[i].ratios = *r;
              amplify_node(i);
            }
          }
      ++n.generation;
      node_event(i, cluster_event_type::node_update);
      break;
    }
    case P::PodSubmitted: {
      const auto* e = env.payload_as_PodSubmitted();
      const std::string key(to_string_view(e->name()));
      if (pods_.count(key) != 0) break;  // a duplicate submission changes nothing here
      pod_rec r;
      r.info.key = key;
      const resource_list req = to_resource_list(e->requests());
      r.info.limits = to_resource_list(e->limits());
      r.info.kube_qos_class = to_kube_qos(e->kube_qos(), req, r.info.limits);
      set_requests(r.info, req);
      set_extended_devices(r.info, e->requests());
      if (e->overhead()) r.info.overhead = to_resource_list(e->overhead());
      r.info.priority = e->priority();
      set_quota_labels(r.info, e->labels());
      set_numa_annotations(r.info, e->annotations());
      set_device_annotations(r.info, e->annotations());
      if (e->gpu_models())
        for (const auto* m : *e->gpu_models()) r.info.gpu_models.emplace_back(to_string_view(m));
      r.ours = opts_.scheduler_names.empty() ||
               opts_.scheduler_names.count(to_string_view(e->scheduler_name())) != 0;
      r.admitted = !opts_.await_admission;
      r.info.identity = identity_of(*e);
      if (r.ours && r.admitted) queue_->add(r.info, now_);
      pods_.emplace(key, std::move(r));
      break;
    }
    case P::PodMutated: {
      const auto* e = env.payload_as_PodMutated();
      auto it = pods_.find(to_string_view(e->name()));
      if (it == pods_.end() || it->second.phase != pod_phase::queued) break;
      auto& p = it->second;
      p.info.priority_class_label = static_cast<priority_class>(e->priority_class());
      p.info.qos_label = static_cast<qos_class>(e->qos_class());
      p.info.priority = e->priority();
      if (e->requests()) {
        set_requests(p.info, to_resource_list(e->requests()));
        set_extended_devices(p.info, e->requests());
      }
      if (e->limits()) p.info.limits = to_resource_list(e->limits());
      p.info.overhead = e->overhead() ? to_resource_list(e->overhead()) : resource_list{};
      if (e->annotations()) {
        set_numa_annotations(p.info, e->annotations());
        set_device_annotations(p.info, e->annotations());
      }
      if (e->labels()) {
        set_quota_labels(p.info, e->labels());  // the full label set
        auto id =
            std::make_shared<pod_identity>(p.info.identity ? *p.info.identity : pod_identity{});
        id->labels.clear();
        for (const auto* kv : *e->labels())
          id->labels.insert_or_assign(std::string(to_string_view(kv->key())),
                                      std::string(to_string_view(kv->value())));
        id->reservation_ignored = false;
        if (auto l = id->labels.find(names::label_reservation_ignored); l != id->labels.end())
          id->reservation_ignored = l->second == "true";
        p.info.identity = std::move(id);
      }
      const bool was = p.ours && p.admitted;
      if (!opts_.scheduler_names.empty() && e->scheduler_name() && e->scheduler_name()->size())
        p.ours = opts_.scheduler_names.count(to_string_view(e->scheduler_name())) != 0;
      p.admitted = true;
      if (p.ours && was)
        queue_->update(p.info, now_);
      else if (p.ours)
        queue_->add(p.info, now_);  // first admitted now (await_admission)
      else if (was)
        (void)queue_->remove(p.info.key);
      break;
    }
    case P::PodRejected: {
      auto it = pods_.find(to_string_view(env.payload_as_PodRejected()->name()));
      if (it == pods_.end()) break;
      (void)queue_->remove(it->first);
      it->second.phase = pod_phase::done;
      break;
    }
    case P::PodScheduled: {
      const auto* e = env.payload_as_PodScheduled();
      std::vector<gpu_allocation> gpus;
      bind_grant grant;
      devices_of(e->devices(), gpus, grant.devices);
      const auto rsv = to_string_view(e->reservation());
      // A cpuset that does not parse binds no CPUs here (the node actor wrote what the
      // scheduler proposed; only a corrupt record gets here).
      if (auto c = numa::cpu_set::parse(to_string_view(e->cpuset()))) grant.cpuset = std::move(*c);
      if (e->numa_resources())
        for (const auto* a : *e->numa_resources())
          grant.numa_resources.push_back({a->node(), a->cpu_milli(), a->memory_bytes()});
      on_bound(to_string_view(e->pod()), to_string_view(e->node()), to_resource_list(e->requests()),
               std::move(gpus), rsv, std::move(grant));
      // The reservation controller's part: an allocate-once reservation with a bound owner is
      // used up. The scheduler whose proposal it was writes it, once.
      if (!rsv.empty() && to_string_view(e->scheduler()) == name_)
        if (auto it = reservations_.find(rsv);
            it != reservations_.end() && it->second.info.allocate_once)
          succeeded_.emplace_back(std::string(rsv), std::string(to_string_view(e->pod())));
      break;
    }
    case P::ReservationUpserted:
      on_reservation_upserted(*env.payload_as_ReservationUpserted());
      break;
    case P::ReservationPhaseChanged:
      on_reservation_phase(*env.payload_as_ReservationPhaseChanged());
      break;
    case P::PodBindRejected: {
      const auto* e = env.payload_as_PodBindRejected();
      if (to_string_view(e->scheduler()) != name_) break;  // someone else's proposal
      auto it = pods_.find(to_string_view(e->pod()));
      if (it == pods_.end()) break;
      auto& p = it->second;
      // Only the answer to our outstanding proposal; a pod bound meanwhile stays bound.
      if (p.phase != pod_phase::proposed || p.node != to_string_view(e->node())) break;
      if (!p.reservation.empty())
        if (auto n = node_index_.find(p.node); n != node_index_.end())
          if (auto k = find_reservation(nodes_[n->second], p.reservation))
            forget_reservation_owner(nodes_[n->second], *k, p.info);
      p.reservation.clear();
      unassume(p);
      // Our Reserve marked it used in the quota tree; the binding did not happen.
      if (quota_) (void)quota_->tree()->update_pod_is_assigned(p.info.key, false);
      p.phase = pod_phase::queued;
      p.qp->unschedulable_plugins.clear();  // no plugin refused it: a failed bind
      p.qp->fit_error = false;
      queue_->requeue(std::move(*p.qp), now_, true);  // backoff, as after a failed bind
      p.qp.reset();
      break;
    }
    case P::PodEvicted:
    case P::PodFinished: {
      const std::string_view pod = env.payload_type() == P::PodEvicted
                                       ? to_string_view(env.payload_as_PodEvicted()->pod())
                                       : to_string_view(env.payload_as_PodFinished()->pod());
      if (auto v = preempting_.find(pod); v != preempting_.end()) preempting_.erase(v);
      auto it = pods_.find(pod);
      if (it == pods_.end()) break;
      auto& p = it->second;
      if (p.phase == pod_phase::queued) (void)queue_->remove(pod);
      // An owner leaving a reservation that takes several gives its share back to it.
      if (!p.reservation.empty())
        if (auto n = node_index_.find(p.node); n != node_index_.end())
          if (auto k = find_reservation(nodes_[n->second], p.reservation);
              k && !nodes_[n->second].reservations[*k].allocate_once)
            forget_reservation_owner(nodes_[n->second], *k, p.info);
      p.reservation.clear();
      unassume(p);
      p.phase = pod_phase::done;
      p.qp.reset();
      break;
    }
    default:
      break;
  }
}

void scheduler_component::on_batch_end(std::vector<messages::byte_buffer>& out) {
  if (quota_) quota_->flush();  // cluster total and pod association before the cycles
  for (const auto& [name, owner] : succeeded_)
    if (auto it = reservations_.find(name); it != reservations_.end())
      emit_reservation_phase(it->second, "Succeeded", "Succeeded", owner, out);
  succeeded_.clear();
  for (const auto& name : deleted_)
    if (auto it = reservations_.find(name); it != reservations_.end())
      emit_reservation_phase(it->second, "Failed", "Deleted", {}, out);
  deleted_.clear();
  if (!reservations_.empty()) expire_reservations(out);
  if (!events_.empty()) {
    // In node order; the hints read the nodes (and NodeUnschedulable's flags) as they are now.
    unsched_->prepare(nodes_.data(), &flags_);
    std::vector<cluster_event> evs;
    evs.reserve(events_.size());
    for (const auto& [i, type] : events_) evs.push_back({type, &nodes_[i], i});
    queue_->move_all_to_active_or_backoff(now_, evs);
    events_.clear();
  }
  while (auto qp = queue_->pop(now_)) schedule_one(std::move(*qp), out);
}

// When a backoff ends or the oldest unschedulable pod is due for the leftover flush
// (flushUnschedulablePodsLeftover), whichever is first.
std::optional<std::int64_t> scheduler_component::next_wakeup_ms() const {
  auto t = queue_->next_backoff_expiry_ms();
  if (const auto f = queue_->next_unschedulable_flush_ms(); f && (!t || *f < *t)) t = f;
  // The reservation controller: the first expiry among placed reservations.
  for (const auto& [name, r] : reservations_) {
    if (!r.ours || r.expiry_sent || !r.info.active()) continue;
    std::optional<std::int64_t> at;
    if (r.info.expires_ms) at = *r.info.expires_ms + 1;
    if (r.info.ttl_ms > 0) {
      const std::int64_t by_ttl = r.info.created_ms + r.info.ttl_ms + 1;
      at = at ? std::min(*at, by_ttl) : by_ttl;
    }
    if (at && (!t || *at < *t)) t = at;
  }
  if (!t) return std::nullopt;
  return std::max(*t, now_.value);
}

void scheduler_component::on_wakeup(std::int64_t now_ms, std::vector<messages::byte_buffer>& out) {
  now_ = event_time{std::max(now_.value, now_ms)};
  on_batch_end(out);
}

void scheduler_component::schedule_one(queued_pod qp, std::vector<messages::byte_buffer>& out) {
  auto it = pods_.find(qp.pod.key);
  if (it == pods_.end()) return;
  auto& p = it->second;
  if (p.reserve) {
    schedule_reserve_pod(p, std::move(qp), out);
    return;
  }
  unsched_->prepare(nodes_.data(), &flags_);
  auto d = fwk_->run_cycle(cycle_, qp.pod, nodes_, now_);
  auto& fbb = b_.fbb();
  const messages::header h{now_, wire::EntityKind::Pod, qp.pod.key, last_offset_, name_};
  if (d.result == outcome::scheduled) {
    std::vector<flatbuffers::Offset<wire::PluginScore>> scores;
    for (const auto& s : d.scores) {
      auto w = weights_.find(s.plugin);
      scores.push_back(wire::CreatePluginScore(fbb, fbb.CreateString(s.plugin), s.normalized,
                                               w == weights_.end() ? 1 : w->second));
    }
    std::vector<flatbuffers::Offset<wire::NodeScore>> alts;
    for (const auto& a : d.alternatives)
      alts.push_back(wire::CreateNodeScore(fbb, fbb.CreateString(a.node), a.total));
    std::vector<flatbuffers::Offset<wire::DeviceAllocation>> devs;
    for (const auto& g : d.gpu_allocations)
      devs.push_back(wire::CreateDeviceAllocation(fbb, g.minor, g.core, g.memory_bytes, 0, 0, 0, 0,
                                                  g.memory_ratio));  // schema v11: the memory ratio
    // Schema v11: RDMA NICs and FPGAs with their amounts and VFs (GPU entries keep their bytes).
    for (const auto& a : d.device_allocations) {
      auto type = fbb.CreateString(device::to_string(a.type));
      auto vf = a.vf ? fbb.CreateString(a.vf->bus_id) : flatbuffers::Offset<flatbuffers::String>{};
      const std::int64_t amount =
          a.type == device::device_type::rdma ? a.resources.rdma : a.resources.fpga;
      devs.push_back(wire::CreateDeviceAllocation(fbb, a.minor, 0, 0, type, amount, vf,
                                                  a.vf ? a.vf->minor : 0));
    }
    resource_list req = qp.pod.requests;
    req.pods = 1;
    auto pod = fbb.CreateString(qp.pod.key);
    auto node = fbb.CreateString(d.node);
    auto sched = fbb.CreateString(name_);
    auto sv = fbb.CreateVector(scores);
    auto av = fbb.CreateVector(alts);
    auto rq = b_.resources(req);
    auto dv = fbb.CreateVector(devs);
    auto quota = qp.pod.quota_name.empty() ? flatbuffers::Offset<flatbuffers::String>{}
                                           : fbb.CreateString(qp.pod.quota_name);
    auto rsv = d.reservation.empty() ? flatbuffers::Offset<flatbuffers::String>{}
                                     : fbb.CreateString(d.reservation);
    // Schema v10: only a pod with a cpuset carries it (other records keep their bytes).
    auto cpus = d.cpuset.empty() ? flatbuffers::Offset<flatbuffers::String>{}
                                 : fbb.CreateString(d.cpuset.to_string());
    flatbuffers::Offset<flatbuffers::Vector<flatbuffers::Offset<wire::NumaNodeResource>>> numa;
    if (!d.numa_resources.empty()) {
      std::vector<flatbuffers::Offset<wire::NumaNodeResource>> v;
      for (const auto& a : d.numa_resources)
        v.push_back(wire::CreateNumaNodeResource(fbb, a.node, a.cpu_milli, a.memory_bytes));
      numa = fbb.CreateVector(v);
    }
    auto payload =
        wire::CreatePodBindProposed(fbb, pod, node, sched, qp.attempts, d.total_score, sv, av, rq,
                                    dv, quota, static_cast<std::int32_t>(d.feasible_nodes),
                                    static_cast<std::int32_t>(d.evaluated_nodes), rsv, cpus, numa);
    out.push_back(b_.finish(h, payload));
    assume_pod(nodes_[d.node_index], qp.pod, d, now_);
    p.reservation.clear();
    if (auto k = find_reservation(nodes_[d.node_index], d.reservation)) {
      assume_reservation_owner(nodes_[d.node_index], *k, qp.pod);
      p.reservation = d.reservation;
    }
    p.phase = pod_phase::proposed;
    p.node = d.node;
    p.qp = std::move(qp);
    return;
  }
  // Unschedulable, a plugin error, or a gang wait (not modelled here): explain and requeue.
  // A PostFilter nomination first evicts its victims (their records precede the pod's).
  if (d.nominated_node && !d.victims.empty()) preempt(qp.pod, *d.nominated_node, d.victims, out);
  std::vector<flatbuffers::Offset<wire::PluginReason>> reasons;
  for (const auto& f : d.failures)
    reasons.push_back(wire::CreatePluginReasonDirect(fbb, f.plugin.c_str(), f.reason.c_str(),
                                                     static_cast<std::int32_t>(f.nodes)));
  if (d.failures.empty()) {
    const std::string msg = d.message.empty() ? std::string(to_string(d.result)) : d.message;
    reasons.push_back(wire::CreatePluginReasonDirect(fbb, "", msg.c_str(), 0));
  }
  auto pod = fbb.CreateString(qp.pod.key);
  auto rv = fbb.CreateVector(reasons);
  auto sched = fbb.CreateString(name_);
  auto payload = wire::CreatePodUnschedulable(fbb, pod, qp.attempts, rv, sched);
  out.push_back(b_.finish(h, payload));
  const bool error = d.result != outcome::unschedulable;
  set_rejection(qp, d);
  queue_->requeue(std::move(qp), now_, error);
}

void scheduler_component::preempt(const pod_info& preemptor, const std::string& node,
                                  const std::vector<std::string>& victims,
                                  std::vector<messages::byte_buffer>& out) {
  auto& fbb = b_.fbb();
  for (const auto& v : victims) {
    auto it = pods_.find(v);
    if (it == pods_.end() || it->second.phase == pod_phase::done) continue;
    if (!preempting_.insert(v).second) continue;  // already on its way out
    const auto& victim = it->second;
    resource_list released = victim.info.requests;
    released.pods = 1;
    auto pn = fbb.CreateString(v);
    auto nn = fbb.CreateString(victim.node.empty() ? node : victim.node);
    auto msg = fbb.CreateString("preempted by " + preemptor.key + " on node " + node +
                                " (ElasticQuota PostFilter)");
    auto inputs = messages::text_terms(
        fbb,
        {{"preemptor", preemptor.key}, {"nominatedNode", node}, {"quota", preemptor.quota_name}});
    auto rel = b_.resources(released);
    auto payload =
        wire::CreatePodEvicted(fbb, pn, nn, wire::EvictionReason::Preempted, msg, inputs, rel);
    out.push_back(
        b_.finish(messages::header{now_, wire::EntityKind::Pod, v, last_offset_, name_}, payload));
  }
}

// ---- Reservations ------------------------------------------------------------------------

void scheduler_component::enable_reservations() {
  if (reservation_plugin_) return;
  owner_classes_ = std::make_shared<owner_classes>();
  reservation_plugin_ = std::make_shared<reservation_plugin>(owner_classes_);
  // The profile's score weight for Reservation, else the shipped profile's 5000.
  std::int64_t weight = 5000;
  const auto& pc = opts_.config->profiles[opts_.profile];
  for (const char* point : {"score", "multiPoint"})
    if (auto it = pc.plugins.find(point); it != pc.plugins.end())
      for (const auto& e : it->second.enabled)
        if (e.name == reservation_plugin::plugin_name && e.weight > 0) weight = e.weight;
  fwk_->add(reservation_plugin_, weight);
  weights_[std::string(reservation_plugin::plugin_name)] = weight;
  std::erase(skipped_plugins_, std::string(reservation_plugin::plugin_name));
}

void scheduler_component::on_reservation_upserted(const wire::ReservationUpserted& e) {
  enable_reservations();
  const std::string name(to_string_view(e.name()));
  auto [it, fresh] = reservations_.try_emplace(name);
  if (!fresh && it->second.deleted && !e.deleted()) {
    // Deleted, then created again under the same name: a new reservation to schedule.
    it->second = rsv_rec{};
    fresh = true;
  }
  auto& r = it->second;
  auto& info = r.info;
  if (fresh) {
    info.name = name;
    info.created_ms = now_.value;
    info.phase = reservation_phase::pending;
  }
  info.uid = std::string(to_string_view(e.uid()));
  info.allocatable = to_resource_list(e.requests());
  info.allocatable.pods = 0;
  info.owners.clear();
  if (e.owners())
    for (const auto* o : *e.owners()) info.owners.push_back(owner_of(*o));
  info.owner_class = owner_classes_->intern(info.owners);
  info.ttl_ms = e.ttl_ms();
  info.expires_ms.reset();
  if (e.expires_ms() >= 0) info.expires_ms = e.expires_ms();
  info.allocate_once = e.allocate_once();
  info.policy = parse_allocate_policy(to_string_view(e.allocate_policy()))
                    .value_or(reservation_allocate_policy::aligned);
  info.unschedulable = e.unschedulable();
  info.labels.clear();
  info.order = 0;
  if (e.labels())
    for (const auto* kv : *e.labels()) {
      const auto k = to_string_view(kv->key());
      const auto v = to_string_view(kv->value());
      info.labels.insert_or_assign(std::string(k), std::string(v));
      if (k == names::label_reservation_order) {
        std::int64_t o = 0;
        if (std::from_chars(v.data(), v.data() + v.size(), o).ec == std::errc{}) info.order = o;
      }
    }
  r.pin = std::string(to_string_view(e.node_name()));
  r.not_in.clear();
  if (e.not_in_nodes())
    for (const auto* n : *e.not_in_nodes()) r.not_in.emplace_back(to_string_view(n));
  std::sort(r.not_in.begin(), r.not_in.end());
  r.priority = e.priority();
  r.ours = opts_.scheduler_names.empty() ||
           opts_.scheduler_names.count(to_string_view(e.scheduler_name())) != 0;
  const std::string key = reserve_pod_key(name);
  if (e.deleted()) {
    if (auto p = pods_.find(key); p != pods_.end() && p->second.phase == pod_phase::queued)
      (void)queue_->remove(key);
    if (!info.node.empty() && info.phase == reservation_phase::available) {
      release_from_node(name, info.node);
      if (r.ours) deleted_.push_back(name);
    }
    info.phase = reservation_phase::failed;
    r.deleted = true;
    return;
  }
  // The placed copy on the node follows the new spec (owners, order, policy).
  if (!info.node.empty())
    if (auto n = node_index_.find(info.node); n != node_index_.end())
      if (auto k = find_reservation(nodes_[n->second], name)) {
        auto& held = nodes_[n->second].reservations[*k];
        const auto allocated = held.allocated;
        const auto owners = held.owner_count;
        const auto phase = held.phase;
        held = info;
        held.allocated = allocated;
        held.owner_count = owners;
        held.phase = phase;
        ++nodes_[n->second].generation;
      }
  if (!fresh || !r.ours || info.phase != reservation_phase::pending) return;
  // A pending reservation is scheduled like a pod of its template's requests.
  pod_rec p;
  p.reserve = true;
  p.info.key = key;
  p.info.reserve_pod = true;
  set_requests(p.info, info.allocatable);
  p.info.priority = r.priority;
  queue_->add(p.info, now_);
  pods_.insert_or_assign(key, std::move(p));
}

void scheduler_component::hold_on_node(const rsv_rec& r) {
  const std::size_t n = node_slot(r.info.node);
  auto& node = nodes_[n];
  if (find_reservation(node, r.info.name)) return;  // already held (our own placement)
  reservation_info held = r.info;
  held.phase = reservation_phase::available;
  held.allocated = {};
  held.owner_count = 0;
  auto pos =
      std::lower_bound(node.reservations.begin(), node.reservations.end(), held.name,
                       [](const reservation_info& a, const std::string& b) { return a.name < b; });
  node.requested += held.held();
  node.reservations.insert(pos, std::move(held));
  ++node.generation;
}

void scheduler_component::release_from_node(std::string_view name, std::string_view node_name) {
  auto n = node_index_.find(node_name);
  if (n == node_index_.end()) return;
  auto& node = nodes_[n->second];
  auto k = find_reservation(node, name);
  if (!k) return;
  node.requested -= node.reservations[*k].held();
  node.reservations.erase(node.reservations.begin() + static_cast<std::ptrdiff_t>(*k));
  ++node.generation;
  node_event(n->second, cluster_event_type::assigned_pod_delete);  // room for waiting pods
}

void scheduler_component::on_reservation_phase(const wire::ReservationPhaseChanged& e) {
  const std::string_view name = to_string_view(e.name());
  auto it = reservations_.find(name);
  if (it == reservations_.end()) return;  // a phase for a reservation never observed
  auto& r = it->second;
  const auto phase = to_string_view(e.phase());
  if (phase == "Available") {
    r.info.phase = reservation_phase::available;
    r.info.node = std::string(to_string_view(e.node()));
    if (auto p = pods_.find(reserve_pod_key(name)); p != pods_.end()) {
      if (p->second.phase == pod_phase::queued) (void)queue_->remove(p->first);
      p->second.phase = pod_phase::done;
    }
    hold_on_node(r);
  } else if (phase == "Succeeded" || phase == "Failed") {
    r.info.phase = phase == "Succeeded" ? reservation_phase::succeeded : reservation_phase::failed;
    if (!r.info.node.empty()) release_from_node(name, r.info.node);
  }
}

void scheduler_component::emit_reservation_phase(const rsv_rec& r, std::string_view phase,
                                                 std::string_view reason, std::string_view owner,
                                                 std::vector<messages::byte_buffer>& out) {
  auto& fbb = b_.fbb();
  const messages::header h{now_, wire::EntityKind::Reservation, r.info.name, last_offset_, name_};
  const auto name = b_.key_string(r.info.name);
  const auto ph = fbb.CreateString(phase);
  const auto node = r.info.node.empty() ? flatbuffers::Offset<flatbuffers::String>{}
                                        : fbb.CreateString(r.info.node);
  const auto why = fbb.CreateString(reason);
  const auto alloc = b_.resources(r.info.allocatable);
  const auto own =
      owner.empty() ? flatbuffers::Offset<flatbuffers::String>{} : fbb.CreateString(owner);
  out.push_back(
      b_.finish(h, wire::CreateReservationPhaseChanged(fbb, name, ph, node, why, alloc, own)));
}

void scheduler_component::schedule_reserve_pod(pod_rec& p, queued_pod qp,
                                               std::vector<messages::byte_buffer>& out) {
  const std::string name = qp.pod.key.substr(reserve_pod_key("").size());
  auto it = reservations_.find(name);
  if (it == reservations_.end() || it->second.info.phase != reservation_phase::pending) {
    p.phase = pod_phase::done;
    return;
  }
  auto& r = it->second;
  unsched_->prepare(nodes_.data(), &flags_);
  if (!r.not_in.empty()) {
    std::vector<std::size_t> slots;
    for (const auto& n : r.not_in)
      if (auto it = node_index_.find(n); it != node_index_.end()) slots.push_back(it->second);
    std::sort(slots.begin(), slots.end());
    unsched_->exclude(std::move(slots));
  }
  decision d;
  if (!r.pin.empty()) {
    // template.spec.nodeName: that node only (a node not registered yet fits nothing).
    auto n = node_index_.find(r.pin);
    if (n != node_index_.end()) {
      d = fwk_->run_cycle(cycle_, qp.pod, std::span<const node_info>(&nodes_[n->second], 1), now_);
      d.node_index = n->second;
    } else {
      d.result = outcome::unschedulable;
      d.message = "node " + r.pin + " not found";
    }
  } else {
    d = fwk_->run_cycle(cycle_, qp.pod, nodes_, now_);
  }
  unsched_->exclude({});
  if (d.result == outcome::scheduled) {
    r.info.node = nodes_[d.node_index].name;
    emit_reservation_phase(r, "Available", "Scheduled", {}, out);
    r.info.phase = reservation_phase::available;
    hold_on_node(r);
    p.phase = pod_phase::done;
    return;
  }
  // Koordinator keeps an unschedulable reservation Pending with condition Scheduled=False,
  // reason Unschedulable; written at the first failure, then retried like a pod.
  if (qp.attempts <= 1) emit_reservation_phase(r, "Pending", "Unschedulable", {}, out);
  const bool error = d.result != outcome::unschedulable;
  set_rejection(qp, d);
  queue_->requeue(std::move(qp), now_, error);
}

void scheduler_component::expire_reservations(std::vector<messages::byte_buffer>& out) {
  for (auto& [name, r] : reservations_) {
    if (!r.ours || r.expiry_sent || r.info.node.empty()) continue;
    if (r.info.phase != reservation_phase::available && r.info.phase != reservation_phase::pending)
      continue;
    const auto n = node_index_.find(r.info.node);
    const bool node_exists = n != node_index_.end() && !flags_[n->second].removed;
    if (!reservation_needs_expiration(r.info, now_.value, node_exists)) continue;
    r.expiry_sent = true;
    emit_reservation_phase(r, "Failed", "Expired", {}, out);
  }
}

}  // namespace colony::scheduler
