#include "actors/scheduler/actor/scheduler_component.hpp"

#include <algorithm>
#include <utility>

#include "actors/scheduler/elastic_quota.hpp"
#include "actors/scheduler/gpu_model_affinity.hpp"
#include "messages/names.hpp"

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
  }

 private:
  // ErrReasonUnknownCondition / ErrReasonUnschedulable (nodeunschedulable/node_unschedulable.go),
  // and the not-ready taint's message.
  static constexpr std::string_view unschedulable_ = "node(s) were unschedulable";
  static constexpr std::string_view not_ready_ =
      "node(s) had untolerated taint {node.kubernetes.io/not-ready: }";
  const node_info* base_ = nullptr;
  const std::vector<node_flags>* flags_ = nullptr;

  [[nodiscard]] status check(std::size_t i) const {
    if (flags_ == nullptr || i >= flags_->size()) return {};
    const auto& f = (*flags_)[i];
    if (f.removed || !f.ready) return status::unresolvable(not_ready_);
    if (f.unschedulable) return status::unresolvable(unschedulable_);
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

// The ElasticQuota labels the plugin reads from pod_info (quota_of, non-preemptible admission).
void set_quota_labels(pod_info& info, const quota::key_value_list* labels) {
  info.quota_name = std::string(quota::find_key(labels, names::label_quota_name).value_or(""));
  info.non_preemptible = quota::non_preemptible_of(labels);
}

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
    auto tree = std::make_shared<quota::quota_tree>(c->opts_.elastic_quota_args);
    c->quota_ = std::make_unique<quota::quota_book>(tree);
    // PreFilter (admission) and Reserve/Unreserve (used); see the header on PostFilter.
    c->fwk_->add(std::make_shared<elastic_quota>(std::move(tree)), 1, ep_pre_filter | ep_reserve);
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
  node_index_.emplace(std::string(name), i);
  return i;
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

void scheduler_component::on_bound(std::string_view pod, std::string_view node,
                                   const resource_list& requests,
                                   std::vector<gpu_allocation> gpus) {
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
    assume_pod(nodes_[n], p.info, d, now_);
    p.node = std::string(node);
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
      if (e->gpus()) {
        std::vector<gpu_device> gpus;
        for (const auto* g : *e->gpus()) {
          gpu_device d;
          d.minor = g->minor();
          d.healthy = g->healthy();
          d.core_total = g->core();
          d.memory_total_bytes = g->memory_bytes();
          for (const auto& old : n.gpus)
            if (old.minor == d.minor) {
              d.core_used = old.core_used;
              d.memory_used_bytes = old.memory_used_bytes;
              d.memory_ratio_used = old.memory_ratio_used;
            }
          gpus.push_back(d);
        }
        std::sort(gpus.begin(), gpus.end(),
                  [](const gpu_device& a, const gpu_device& b) { return a.minor < b.minor; });
        n.gpus = std::move(gpus);
      }
      // The label set is the node's whole set: a model label that went away clears it.
      n.gpu_model = std::string(quota::find_key(e->labels(), names::label_gpu_model).value_or(""));
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
      r.info.priority = e->priority();
      set_quota_labels(r.info, e->labels());
      if (e->gpu_models())
        for (const auto* m : *e->gpu_models()) r.info.gpu_models.emplace_back(to_string_view(m));
      r.ours = opts_.scheduler_names.empty() ||
               opts_.scheduler_names.count(to_string_view(e->scheduler_name())) != 0;
      r.admitted = !opts_.await_admission;
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
      if (e->requests()) set_requests(p.info, to_resource_list(e->requests()));
      if (e->limits()) p.info.limits = to_resource_list(e->limits());
      if (e->labels()) set_quota_labels(p.info, e->labels());  // the full label set
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
      if (e->devices())
        for (const auto* d : *e->devices())
          gpus.push_back(gpu_allocation{d->minor(), d->core(), d->memory_bytes(), 0});
      on_bound(to_string_view(e->pod()), to_string_view(e->node()), to_resource_list(e->requests()),
               std::move(gpus));
      break;
    }
    case P::PodBindRejected: {
      const auto* e = env.payload_as_PodBindRejected();
      if (to_string_view(e->scheduler()) != name_) break;  // someone else's proposal
      auto it = pods_.find(to_string_view(e->pod()));
      if (it == pods_.end()) break;
      auto& p = it->second;
      // Only the answer to our outstanding proposal; a pod bound meanwhile stays bound.
      if (p.phase != pod_phase::proposed || p.node != to_string_view(e->node())) break;
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
      auto it = pods_.find(pod);
      if (it == pods_.end()) break;
      auto& p = it->second;
      if (p.phase == pod_phase::queued) (void)queue_->remove(pod);
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
      devs.push_back(wire::CreateDeviceAllocation(fbb, g.minor, g.core, g.memory_bytes));
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
    auto payload = wire::CreatePodBindProposed(
        fbb, pod, node, sched, qp.attempts, d.total_score, sv, av, rq, dv, quota,
        static_cast<std::int32_t>(d.feasible_nodes), static_cast<std::int32_t>(d.evaluated_nodes));
    out.push_back(b_.finish(h, payload));
    assume_pod(nodes_[d.node_index], qp.pod, d, now_);
    p.phase = pod_phase::proposed;
    p.node = d.node;
    p.qp = std::move(qp);
    return;
  }
  // Unschedulable, a plugin error, or a gang wait (not modelled here): explain and requeue.
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

}  // namespace colony::scheduler
