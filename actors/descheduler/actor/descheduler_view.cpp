#include "actors/descheduler/actor/descheduler_view.hpp"

#include <algorithm>

#include "actors/descheduler/migration_filter.hpp"
#include "messages/codec.hpp"
#include "messages/names.hpp"

namespace colony::descheduler_actor {

namespace {

using messages::to_string_view;
using P = wire::Payload;

std::string str(const flatbuffers::String* s) { return std::string(to_string_view(s)); }

std::string owner_key(const descheduler::pod_info& p) {
  return p.ns + "/" + p.owner.kind + "/" + p.owner.name;
}

descheduler::string_pairs pairs(
    const flatbuffers::Vector<flatbuffers::Offset<wire::KeyValue>>* kvs) {
  descheduler::string_pairs m;
  if (kvs != nullptr)
    for (const auto* kv : *kvs) m[str(kv->key())] = str(kv->value());
  return m;
}

// The classes Koordinator reads from labels (koordinator.sh/qosClass, .../priority-class).
void classes_from_labels(descheduler::pod_info& p) {
  const auto q = p.labels.find(names::label_qos_class);
  p.qos_label = q == p.labels.end() ? qos_class::none : get_pod_qos_class_by_name(q->second);
  const auto c = p.labels.find(names::label_priority_class);
  p.has_priority_class_label = c != p.labels.end();
  p.priority_class_label =
      c == p.labels.end() ? priority_class::none : get_pod_priority_class_by_name(c->second);
}

}  // namespace

bool view_wants(wire::Payload type) {
  switch (type) {
    case P::NodeRegistered:
    case P::NodeConditionChanged:
    case P::NodeRemoved:
    case P::PodSubmitted:
    case P::PodMutated:
    case P::PodRejected:
    case P::PodScheduled:
    case P::PodEvicted:
    case P::PodFinished:
    case P::NodeMetricReported:
    case P::MigrationJobCreated:
    case P::MigrationJobPhaseChanged:
    // colony run moves event time by ClockTicked records (a host there wakes no component):
    // the rounds and TTLs due by then run at that batch's end.
    case P::ClockTicked:
      return true;
    default:
      return false;
  }
}

descheduler::resource_amounts to_amounts(const resource_list& r) {
  descheduler::resource_amounts a;
  auto put = [&a](std::string_view n, std::int64_t v) {
    if (v != 0) a[std::string(n)] = v;
  };
  put(names::cpu, r.cpu_milli);
  put(names::memory, r.memory_bytes);
  put(names::batch_cpu, r.batch_cpu_milli);
  put(names::batch_memory, r.batch_memory_bytes);
  put(names::mid_cpu, r.mid_cpu_milli);
  put(names::mid_memory, r.mid_memory_bytes);
  put(names::koord_gpu, r.gpu);
  put(names::gpu_core, r.gpu_core);
  put(names::gpu_memory, r.gpu_memory_bytes);
  put(names::gpu_memory_ratio, r.gpu_memory_ratio);
  put(names::pods, r.pods);
  return a;
}

void descheduler_view::remove_pod(std::string_view key) {
  const auto it = pods_.find(key);
  if (it == pods_.end()) return;
  if (!it->second.node.empty())
    if (auto n = by_node_.find(it->second.node); n != by_node_.end()) n->second.erase(it->first);
  if (!it->second.owner.empty()) {
    const std::string owner = owner_key(it->second);
    workload_states_.erase(owner);
    if (auto o = by_owner_.find(owner); o != by_owner_.end()) {
      o->second.erase(it->first);
      if (o->second.empty()) by_owner_.erase(o);
    }
  }
  requests_.erase(it->first);
  const std::string k = it->first;
  pod_index_.erase(it->first);
  pods_.erase(it);
  jobs_index_.pod_changed(k, nullptr);
}

void descheduler_view::on_event(const wire::Envelope& env) {
  switch (env.payload_type()) {
    case P::NodeRegistered: {
      const auto* e = env.payload_as_NodeRegistered();
      auto& n = nodes_[str(e->name())];
      n.name = str(e->name());
      n.labels = pairs(e->labels());
      n.allocatable = to_amounts(
          messages::to_resource_list(e->allocatable() ? e->allocatable() : e->capacity()));
      n.unschedulable = e->unschedulable();
      n.ready = true;
      break;
    }
    case P::NodeConditionChanged: {
      const auto* e = env.payload_as_NodeConditionChanged();
      if (auto it = nodes_.find(to_string_view(e->name())); it != nodes_.end()) {
        it->second.ready = e->ready();
        it->second.unschedulable = e->unschedulable();
      }
      break;
    }
    case P::NodeRemoved: {
      const std::string n = str(env.payload_as_NodeRemoved()->name());
      nodes_.erase(n);
      metrics_.erase(n);
      metric_offsets_.erase(n);
      break;
    }
    case P::PodSubmitted: {
      const auto* e = env.payload_as_PodSubmitted();
      const std::string key = str(e->name());
      if (pods_.count(key)) break;
      descheduler::pod_info p;
      const auto slash = key.find('/');
      p.ns = slash == std::string::npos ? "" : key.substr(0, slash);
      p.name = slash == std::string::npos ? key : key.substr(slash + 1);
      p.uid = str(e->uid());
      p.scheduler_name = str(e->scheduler_name());
      if (e->has_priority()) p.priority = e->priority();
      p.kube_qos = static_cast<kube_qos_class>(e->kube_qos());
      p.labels = pairs(e->labels());
      p.annotations = pairs(e->annotations());
      classes_from_labels(p);
      p.mirror = p.annotations.count("kubernetes.io/config.mirror") != 0;
      const resource_list req = messages::to_resource_list(e->requests());
      p.requests = to_amounts(req);
      p.creation_ms = env.event_time_ms();
      const std::string_view owner = to_string_view(e->owner());
      if (const auto s = owner.find('/'); s != std::string_view::npos) {
        p.owner.kind = std::string(owner.substr(0, s));
        p.owner.name = std::string(owner.substr(s + 1));
        by_owner_[owner_key(p)].insert(key);
        workload_states_.erase(owner_key(p));
      }
      requests_[key] = req;
      const auto at = pods_.emplace(key, std::move(p)).first;
      pod_index_.emplace(at->first, &at->second);
      jobs_index_.pod_changed(key, &at->second);
      break;
    }
    case P::PodMutated: {
      const auto* e = env.payload_as_PodMutated();
      auto it = pods_.find(to_string_view(e->name()));
      if (it == pods_.end()) break;
      auto& p = it->second;
      if (e->labels()) p.labels = pairs(e->labels());
      if (e->annotations()) p.annotations = pairs(e->annotations());
      classes_from_labels(p);
      p.priority = e->priority();
      if (e->scheduler_name() && e->scheduler_name()->size())
        p.scheduler_name = str(e->scheduler_name());
      if (e->requests()) {
        requests_[it->first] = messages::to_resource_list(e->requests());
        p.requests = to_amounts(requests_[it->first]);
      }
      break;
    }
    case P::PodScheduled: {
      const auto* e = env.payload_as_PodScheduled();
      auto it = pods_.find(to_string_view(e->pod()));
      if (it == pods_.end()) break;
      if (!it->second.node.empty()) by_node_[it->second.node].erase(it->first);
      it->second.node = str(e->node());
      by_node_[it->second.node].insert(it->first);
      jobs_index_.pod_changed(it->first, &it->second);
      break;
    }
    case P::PodRejected:
      remove_pod(to_string_view(env.payload_as_PodRejected()->name()));
      break;
    case P::PodEvicted:
      remove_pod(to_string_view(env.payload_as_PodEvicted()->pod()));
      break;
    case P::PodFinished:
      remove_pod(to_string_view(env.payload_as_PodFinished()->pod()));
      break;
    case P::NodeMetricReported: {
      const auto* e = env.payload_as_NodeMetricReported();
      const std::string n = str(e->node());
      descheduler::node_metric_info m;
      m.update_time_ms = e->update_time_ms();
      m.system_usage = to_amounts(messages::to_resource_list(e->system_usage()));
      if (e->pods())
        for (const auto* pm : *e->pods()) {
          const std::string key = str(pm->pod());
          const auto slash = key.find('/');
          descheduler::pod_metric_info x;
          x.ns = slash == std::string::npos ? "" : key.substr(0, slash);
          x.name = slash == std::string::npos ? key : key.substr(slash + 1);
          x.usage = to_amounts(messages::to_resource_list(pm->usage()));
          m.pods.push_back(std::move(x));
        }
      metrics_[n] = std::move(m);
      metric_offsets_[n] = static_cast<std::int64_t>(env.offset());
      break;
    }
    case P::MigrationJobCreated: {
      const auto* e = env.payload_as_MigrationJobCreated();
      view_job j;
      j.info.name = str(e->name());
      j.info.pod = str(e->pod());
      j.info.mode = str(e->mode());
      j.info.created_ms = env.event_time_ms();
      j.reason = str(e->reason());
      j.ttl_ms = e->ttl_ms();
      j.info.ttl_ms = j.ttl_ms;
      j.paused = e->paused();
      j.created_offset = static_cast<std::int64_t>(env.offset());
      if (e->inputs())
        for (const auto* t : *e->inputs())
          if (to_string_view(t->name()) == "trigger") j.trigger = str(t->text());
      if (auto it = jobs_.find(j.info.name); it != jobs_.end()) {
        // Decided here before: the log's record gives it its offset.
        it->second.created_offset = j.created_offset;
        break;
      }
      add_job(std::move(j));
      break;
    }
    case P::MigrationJobPhaseChanged: {
      const auto* e = env.payload_as_MigrationJobPhaseChanged();
      if (const auto p = descheduler::parse_job_phase(to_string_view(e->phase())))
        set_phase(to_string_view(e->name()), *p, to_string_view(e->reason()));
      break;
    }
    default:
      break;
  }
}

const descheduler::pod_info* descheduler_view::pod(std::string_view key) const {
  const auto it = pod_index_.find(key);
  return it == pod_index_.end() ? nullptr : it->second;
}

const resource_list* descheduler_view::requests(std::string_view key) const {
  const auto it = requests_.find(key);
  return it == requests_.end() ? nullptr : &it->second;
}

const descheduler::node_metric_info* descheduler_view::metric(std::string_view node) const {
  const auto it = metrics_.find(node);
  return it == metrics_.end() ? nullptr : &it->second;
}

std::int64_t descheduler_view::metric_offset(std::string_view node) const {
  const auto it = metric_offsets_.find(node);
  return it == metric_offsets_.end() ? -1 : it->second;
}

std::vector<const descheduler::pod_info*> descheduler_view::pods_on(std::string_view node) const {
  std::vector<const descheduler::pod_info*> v;
  const auto it = by_node_.find(node);
  if (it == by_node_.end()) return v;
  v.reserve(it->second.size());
  for (const auto& k : it->second) v.push_back(&pods_.find(k)->second);
  return v;
}

std::optional<descheduler::workload_info> descheduler_view::workload(
    const descheduler::pod_info& p) const {
  if (p.owner.empty()) return std::nullopt;
  const auto it = by_owner_.find(owner_key(p));
  if (it == by_owner_.end()) return std::nullopt;
  descheduler::workload_info w;
  w.replicas = static_cast<std::int64_t>(it->second.size());
  w.pods.assign(it->second.begin(), it->second.end());
  return w;
}

const descheduler::workload_state* descheduler_view::workload_state(
    const descheduler::pod_info& p) const {
  if (p.owner.empty()) return nullptr;
  // Found by the key's parts: the filters ask for every pod they judge.
  if (const auto it = workload_states_.find(descheduler::workload_ref_of(p));
      it != workload_states_.end())
    return &it->second;
  const auto w = workload(p);
  if (!w) return nullptr;
  auto s = descheduler::workload_state_of(*w, migration());
  return &workload_states_.emplace(owner_key(p), std::move(s)).first->second;
}

view_job* descheduler_view::job(std::string_view name) {
  const auto it = jobs_.find(name);
  return it == jobs_.end() ? nullptr : &it->second;
}

const std::vector<descheduler::job_info>& descheduler_view::job_list() const {
  if (job_list_dirty_) {
    job_list_.clear();
    for (const auto& [n, j] : jobs_)
      if (!descheduler::is_final(j.info.phase)) job_list_.push_back(j.info);
    job_list_dirty_ = false;
  }
  return job_list_;
}

void descheduler_view::add_job(view_job j) {
  const std::string name = j.info.name;
  if (!descheduler::is_final(j.info.phase)) active_by_pod_[j.info.pod] = name;
  if (const auto old = jobs_.find(name); old != jobs_.end()) jobs_index_.remove(old->second.info);
  jobs_index_.add(j.info, pod(j.info.pod));
  jobs_.insert_or_assign(name, std::move(j));
  job_list_dirty_ = true;
}

descheduler::job_info* descheduler_view::listed(std::string_view name) const {
  if (job_list_dirty_) return nullptr;
  const auto it = std::lower_bound(
      job_list_.begin(), job_list_.end(), name,
      [](const descheduler::job_info& j, std::string_view n) { return j.name < n; });
  return it == job_list_.end() || it->name != name ? nullptr : &*it;
}

void descheduler_view::set_phase(std::string_view name, descheduler::job_phase p,
                                 std::string_view reason) {
  auto it = jobs_.find(name);
  if (it == jobs_.end()) return;
  auto& info = it->second.info;
  const bool was_final = descheduler::is_final(info.phase);
  jobs_index_.remove(info);
  info.phase = p;
  if (p == descheduler::job_phase::running) info.passed_arbitration = true;
  jobs_index_.add(info, pod(info.pod));
  it->second.status_reason = std::string(reason);
  if (descheduler::is_final(p))
    if (auto a = active_by_pod_.find(info.pod); a != active_by_pod_.end() && a->second == it->first)
      active_by_pod_.erase(a);
  // Listed jobs are the non-final ones: a change between active phases is made in place.
  if (auto* l = listed(name); l != nullptr && !was_final && !descheduler::is_final(p))
    *l = info;
  else
    job_list_dirty_ = true;
}

void descheduler_view::mark_passed(std::string_view name) {
  if (auto it = jobs_.find(name); it != jobs_.end()) {
    auto& info = it->second.info;
    if (!jobs_index_.mark_passed(info)) {
      jobs_index_.remove(info);
      info.passed_arbitration = true;
      jobs_index_.add(info, pod(info.pod));
    }
    info.passed_arbitration = true;
    // In place: arbitration marks every passing job, and a rebuild per mark is quadratic.
    if (auto* l = listed(name); l != nullptr)
      l->passed_arbitration = true;
    else if (!descheduler::is_final(info.phase))
      job_list_dirty_ = true;
  }
}

const view_job* descheduler_view::active_job_of(std::string_view pod) const {
  const auto a = active_by_pod_.find(pod);
  if (a == active_by_pod_.end()) return nullptr;
  const auto it = jobs_.find(a->second);
  return it == jobs_.end() ? nullptr : &it->second;
}

descheduler::migration_view descheduler_view::migration() const {
  // The filters count from the index: no job list to rebuild after each new or passed job.
  descheduler::migration_view v{&pods_, nullptr,
                                [this](const descheduler::pod_info& p) { return workload(p); },
                                &jobs_index_};
  v.workload_state_of = [this](const descheduler::pod_info& p) { return workload_state(p); };
  v.pod_index = &pod_index_;
  return v;
}

}  // namespace colony::descheduler_actor
