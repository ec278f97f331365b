#include "run/koordlet_agent.hpp"

#include <algorithm>
#include <deque>
#include <filesystem>
#include <fstream>
#include <iterator>

#include <nlohmann/json.hpp>

#include "bridges/kubernetes/write_failed.hpp"
#include "run/sink_position.hpp"

namespace colony::agent {

stores::log_options koordlet_log_options() {
  stores::log_options o;
  o.memtable_bytes = std::size_t{2} << 20;
  o.block_cache_bytes = std::size_t{1} << 20;
  return o;
}

namespace {

using messages::byte_buffer;
using messages::to_string_view;
namespace fb = flatbuffers;

messages::header make_header(std::int64_t t, wire::EntityKind kind, std::string_view key,
                             std::int64_t causation) {
  messages::header h;
  h.time = event_time{t};
  h.kind = kind;
  h.key = key;
  h.causation = causation;
  h.source = node_source_name;
  return h;
}

wire::KubeQoSClass wire_kube_qos(kube_qos_class q) {
  switch (q) {
    case kube_qos_class::guaranteed:
      return wire::KubeQoSClass::Guaranteed;
    case kube_qos_class::burstable:
      return wire::KubeQoSClass::Burstable;
    case kube_qos_class::best_effort:
      return wire::KubeQoSClass::BestEffort;
    default:
      return wire::KubeQoSClass::Unset;
  }
}

std::optional<std::int64_t> term_value(const wire::BeSuppressed& e, std::string_view name) {
  if (e.inputs() == nullptr) return std::nullopt;
  for (const auto* t : *e.inputs())
    if (to_string_view(t->name()) == name) return t->value();
  return std::nullopt;
}

// The pod's cgroup uid a CgroupUpdated names where it is not the target (term podUID).
std::string_view cgroup_uid(const wire::CgroupUpdated& e) {
  if (e.inputs() == nullptr) return {};
  for (const auto* t : *e.inputs())
    if (to_string_view(t->name()) == "podUID") return to_string_view(t->text());
  return {};
}

// "qos/guaranteed", "qos/burstable", "qos/besteffort": the component's kube QoS dir targets.
std::optional<kube_qos_class> qos_dir_target(std::string_view target) {
  if (target == "qos/guaranteed") return kube_qos_class::guaranteed;
  if (target == "qos/burstable") return kube_qos_class::burstable;
  if (target == "qos/besteffort") return kube_qos_class::best_effort;
  return std::nullopt;
}

std::string file_name(std::string_view path) {
  const auto slash = path.rfind('/');
  return std::string(slash == std::string_view::npos ? path : path.substr(slash + 1));
}

// The executor's message for a file the kernel lacks (cgroup_executor.cpp).
constexpr std::string_view unsupported_prefix = "unsupported by this kernel";

}  // namespace

// NodeTopologySampled: the machine as the topology reader gave it.
byte_buffer node_topology_sampled(messages::event_builder& b, std::string_view node,
                                  const node::machine_topology& m, std::int64_t t) {
  auto& fbb = b.fbb();
  std::vector<fb::Offset<wire::CpuTopologyEntry>> cpus;
  cpus.reserve(m.cpus.size());
  for (const auto& c : m.cpus)
    cpus.push_back(wire::CreateCpuTopologyEntry(fbb, c.id, c.core, c.socket, c.numa_node));
  const auto cv = fbb.CreateVector(cpus);
  std::vector<fb::Offset<wire::NumaNodeMemory>> mems;
  for (const auto& n : m.numa_nodes)
    mems.push_back(wire::CreateNumaNodeMemory(fbb, n.id, n.memory_bytes));
  const auto mv = fbb.CreateVector(mems);
  const auto nn = b.key_string(node);
  const auto model = fbb.CreateString(m.cpu_model);
  const auto vendor = fbb.CreateString(m.vendor_id);
  const auto payload = wire::CreateNodeTopologySampled(fbb, nn, cv, mv, model, vendor,
                                                       m.hyper_thread_enabled, m.turbo_enabled);
  return b.finish(make_header(t, wire::EntityKind::Node, node, -1), payload);
}

byte_buffer node_usage_sampled(messages::event_builder& b, std::string_view node,
                               const node::node_usage& u, std::int64_t interval_ms,
                               const koordlet_cluster* cluster) {
  auto& fbb = b.fbb();
  // Sorted by pod (the schema's order), after naming.
  struct named {
    std::string key;
    wire::QoSClass qos;
    const node::pod_usage* p;
  };
  std::vector<named> list;
  list.reserve(u.pods.size());
  for (const auto& p : u.pods) {
    std::optional<pod_ref> ref = cluster != nullptr ? cluster->pod_of_uid(p.uid) : std::nullopt;
    if (ref) {
      list.push_back({ref->key, static_cast<wire::QoSClass>(ref->qos), &p});
    } else {
      // A cgroup the API server does not name (or a lone node): the tier is all it says.
      list.push_back(
          {p.uid, p.qos == kube_qos_class::best_effort ? wire::QoSClass::BE : wire::QoSClass::LS,
           &p});
    }
  }
  std::sort(list.begin(), list.end(), [](const named& a, const named& c) { return a.key < c.key; });
  std::vector<fb::Offset<wire::PodSample>> pods;
  pods.reserve(list.size());
  for (const auto& n : list) {
    const auto key = fbb.CreateString(n.key);
    const auto uid = fbb.CreateString(n.p->uid);
    resource_list r;
    r.cpu_milli = n.p->cpu.value;
    r.memory_bytes = n.p->memory.value;
    const auto usage = b.resources(r);
    // v9: the containers that have a cfs quota, with their throttling (cpuburst's cfs-quota
    // burst acts on those only; the sandbox and unlimited containers are left out to keep the
    // node's log small: a sample is logged every collect interval).
    std::vector<fb::Offset<wire::ContainerSample>> cs;
    cs.reserve(n.p->containers.size());
    for (const auto& c : n.p->containers) {
      if (c.cfs_quota_us < 0) continue;
      const auto id = fbb.CreateString(c.id);
      resource_list cr;
      cr.cpu_milli = c.cpu.value;
      cr.memory_bytes = c.memory.value;
      const auto cu = b.resources(cr);
      cs.push_back(wire::CreateContainerSample(fbb, id, 0, cu, c.cfs_quota_us, c.cfs_period_us,
                                               c.nr_periods, c.nr_throttled));
    }
    const auto cv = fbb.CreateVector(cs);
    const auto& p = *n.p;
    pods.push_back(wire::CreatePodSample(
        fbb, key, uid, usage, n.qos, wire_kube_qos(p.qos), p.cpu_limit_milli.value_or(0), cv,
        p.cfs_quota_us, p.cfs_period_us, p.nr_periods, p.nr_periods < 0 ? -1 : p.nr_throttled,
        p.memory_with_hot_page_bytes.value_or(-1)));
  }
  const auto pv = fbb.CreateVector(pods);
  // Host applications by name (the collector's order), as pods: usage over the interval.
  fb::Offset<fb::Vector<fb::Offset<wire::HostAppSample>>> hv;
  if (!u.host_apps.empty()) {
    std::vector<fb::Offset<wire::HostAppSample>> apps;
    apps.reserve(u.host_apps.size());
    for (const auto& h : u.host_apps) {
      const auto hn = fbb.CreateString(h.name);
      resource_list r;
      r.cpu_milli = h.cpu.value;
      r.memory_bytes = h.memory.value;
      const auto hu = b.resources(r);
      apps.push_back(wire::CreateHostAppSample(fbb, hn, hu));
    }
    hv = fbb.CreateVector(apps);
  }
  const auto name = fbb.CreateString(node);
  resource_list nu;
  nu.cpu_milli = u.cpu.value;
  nu.memory_bytes = u.memory.value;
  const auto usage = b.resources(nu);
  const auto payload = wire::CreateNodeUsageSampled(fbb, name, interval_ms, usage, pv, hv,
                                                    u.memory_with_hot_page_bytes.value_or(-1));
  return b.finish(make_header(u.time.value, wire::EntityKind::Node, node, -1), payload);
}

koordlet_agent::koordlet_agent(koordlet_agent_options o, stores::event_log& log,
                               node::node_source src)
    : opt_(std::move(o)), log_(log), src_(std::move(src)) {
  entities::step_host_options ho;
  ho.threads = 1;
  host_ = std::make_unique<entities::step_host>(
      ho, [this](const entities::record_batch& round) -> result<void> {
        if (replaying_) return {};  // the log holds these already
        std::vector<messages::bytes_view> views;
        views.reserve(round.starts.size());
        for (std::size_t i = 0; i < round.starts.size(); ++i)
          views.emplace_back(round.data.data() + round.starts[i], round.ends[i] - round.starts[i]);
        const log_offset expected = host_->next_offset() - views.size();
        auto first = log_.append(views);
        if (!first) return tl::unexpected(first.error());
        if (*first != expected)
          return fail(errc::failed_precondition,
                      "the log took offset " + std::to_string(*first) + " where this koordlet " +
                          "numbered " + std::to_string(expected) + " (another writer?)",
                      log_.describe());
        stats_.appended += views.size();
        return {};
      });
  auto c = std::make_unique<koordlet_actor::koordlet_component>(opt_.koordlet);
  comp_ = c.get();
  host_->add_component(std::move(c));
}

koordlet_agent::~koordlet_agent() = default;

result<std::unique_ptr<koordlet_agent>> koordlet_agent::open(koordlet_agent_options o,
                                                             stores::event_log& log,
                                                             event_time now) {
  auto src = node::node_source::open(o.source);
  if (!src) return tl::unexpected(src.error());
  std::optional<node::cgroup_executor> exec;
  if (o.enforce) {
    node::executor_config ec;
    ec.cgroup_root = o.source.cgroup_root;
    ec.kube_parent_dir = o.source.kube_parent_dir;
    auto e = node::cgroup_executor::open(ec);
    if (!e) return tl::unexpected(e.error());
    exec = std::move(*e);
  }
  // The machine's resctrl info for the component's schemata (no record carries it). Not mounted:
  // none, and the executor reports the groups' decisions unsupported.
  std::optional<error> resctrl_problem;
  if (o.koordlet.gates.rdt_resctrl) {
    if (auto info = node::read_resctrl_info(o.source.resctrl_root, o.source.proc_root))
      o.koordlet.resctrl_info = std::move(*info);
    else if (info.error().code != errc::not_found)
      resctrl_problem = info.error();
  }
  std::optional<node::resctrl_executor> resctrl;
  if (o.enforce)
    resctrl.emplace(node::resctrl_executor_config{o.source.resctrl_root, o.source.cgroup_root,
                                                  o.source.kube_parent_dir});
  std::unique_ptr<koordlet_agent> a(new koordlet_agent(std::move(o), log, std::move(*src)));
  a->exec_ = std::move(exec);
  a->resctrl_ = std::move(resctrl);
  if (resctrl_problem) a->problems_.push_back(std::move(*resctrl_problem));
  const bool positioned =
      a->opt_.cluster != nullptr && a->opt_.enforce && !a->opt_.position_path.empty();
  const auto saved = positioned ? run::load_sink_position(a->opt_.position_path) : std::nullopt;
  if (auto r = a->replay(); !r) return tl::unexpected(r.error());
  const auto end = log.end_offset();
  if (!end) return tl::unexpected(end.error());
  a->host_->skip_to(*end);  // past records the sample retention dropped at the end
  if (positioned) {
    if (!saved) {
      a->carry_over_.clear();  // a log from before the position file: nothing carried again
      a->position_ = *end;
      if (auto w = run::save_sink_position(a->opt_.position_path, a->position_); !w)
        return tl::unexpected(w.error());
    } else {
      a->position_ = *saved;
      std::erase_if(a->carry_over_, [&](const auto& e) { return e.first < *saved; });
    }
  } else {
    a->carry_over_.clear();
  }
  const std::int64_t t = std::max(now.value, a->last_t_);
  auto snap = a->src_.snapshot(event_time{t});
  if (!snap) return tl::unexpected(snap.error());
  for (const auto& e : snap->skipped) a->problems_.push_back(e);
  const std::pair<std::int64_t, std::int64_t> cap{std::int64_t{snap->cpu.cpus} * 1000,
                                                  snap->memory.total_bytes};
  std::vector<byte_buffer> first;
  // In a cluster the Node is the API server's (its informer registers it).
  if (a->opt_.cluster == nullptr && a->registered_capacity_ != cap) {
    a->registered_capacity_ = cap;
    first.push_back(a->node_registered(t));
  }
  a->prev_ = std::move(*snap);
  a->observe_topology(t, first);
  if (a->opt_.enforce) a->reconcile_all(t, first);
  if (auto r = a->process(std::move(first), t); !r) return tl::unexpected(r.error());
  return a;
}

result<void> koordlet_agent::replay() {
  replaying_ = true;
  std::optional<error> failed;
  auto n = log_.read(0, no_offset, [&](log_offset off, messages::bytes_view bytes) {
    byte_buffer rec(bytes.begin(), bytes.end());
    const auto& env = *wire::GetEnvelope(rec.data());  // verified by the log's read
    const std::int64_t t = std::max(last_t_, env.event_time_ms());
    last_t_ = t;
    std::vector<byte_buffer> dropped;  // the component's answers: the log holds them
    host_->skip_to(off);               // past records the sample retention dropped
    if (auto s = host_->step_record(rec, t, dropped); !s) {
      failed = s.error();
      return false;
    }
    fold_decision(env, off);
    if (env.payload_type() == wire::Payload::WriteFailed &&
        env.payload_as_WriteFailed()->write() == wire::WriteKind::cgroup &&
        to_string_view(env.payload_as_WriteFailed()->message()).rfind(unsupported_prefix, 0) == 0)
      unsupported_reported_.insert(
          file_name(to_string_view(env.payload_as_WriteFailed()->object())));
    if (env.payload_type() == wire::Payload::NodeRegistered &&
        to_string_view(env.payload_as_NodeRegistered()->name()) == opt_.koordlet.node) {
      const auto cap = messages::to_resource_list(env.payload_as_NodeRegistered()->capacity());
      registered_capacity_ = std::pair{cap.cpu_milli, cap.memory_bytes};
    }
    if (env.payload_type() == wire::Payload::NodeTopologySampled &&
        to_string_view(env.payload_as_NodeTopologySampled()->node()) == opt_.koordlet.node)
      logged_topology_ = koordlet_actor::koordlet_component::machine_from_event(
          *env.payload_as_NodeTopologySampled());
    if (env.payload_type() == wire::Payload::NodeMetricReported &&
        to_string_view(env.source()) == comp_->name()) {
      last_report_ = rec;
      if (off < log_.sparse_before()) kept_report_ = off;
    }
    // Its evictions, until an answer (a WriteFailed caused by one) says the API saw it.
    if (env.payload_type() == wire::Payload::PodEvicted &&
        to_string_view(env.source()) == comp_->name())
      carry_over_.emplace_back(off, rec);
    if (env.payload_type() == wire::Payload::WriteFailed &&
        env.payload_as_WriteFailed()->write() == wire::WriteKind::eviction)
      std::erase_if(carry_over_, [&](const auto& e) {
        return static_cast<std::int64_t>(e.first) == env.causation();
      });
    track_observation(env, rec);
    if (off >= log_.sparse_before()) note_trim_candidate(env, off);
    ++stats_.replayed;
    return true;
  });
  replaying_ = false;
  if (failed) return tl::unexpected(*failed);
  if (!n) return tl::unexpected(n.error());
  return {};
}

result<void> koordlet_agent::step(event_time now) {
  const std::int64_t t = std::max(now.value, last_t_ + 1);
  // The host applications' cgroups: those the component's NodeSLO declares (state, not a policy).
  auto cur = src_.snapshot(event_time{t}, comp_->host_apps(), prev_ ? &*prev_ : nullptr,
                           comp_->wants_container_bandwidth());
  if (!cur) return tl::unexpected(cur.error());
  for (const auto& e : cur->skipped) problems_.push_back(e);
  // ColdPageCollector on a kernel without kidled: said once per node (the log remembers it), as
  // a WriteFailed caused by the next report, whose memory stays usageWithoutPageCache.
  if (cur->cold_pages_unsupported &&
      unsupported_reported_.count(file_name(cur->cold_pages_unsupported->where)) == 0)
    cold_pages_unsupported_ = cur->cold_pages_unsupported;
  if (!prev_) {
    prev_ = std::move(*cur);
    return {};
  }
  auto u = node::usage_between(*prev_, *cur, opt_.source.ticks_per_second);
  if (!u) return tl::unexpected(u.error());
  const std::int64_t interval = cur->time.value - prev_->time.value;
  prev_ = std::move(*cur);
  std::vector<byte_buffer> first;
  if (t >= next_topology_ms_) observe_topology(t, first);
  first.push_back(node_usage_sampled(b_, opt_.koordlet.node, *u, interval, opt_.cluster));
  usage_ = std::move(*u);
  ++stats_.samples;
  if (auto r = process(std::move(first), t); !r) return r;
  return trim_samples(t);
}

void koordlet_agent::note_trim_candidate(const wire::Envelope& env, log_offset offset) {
  const auto type = env.payload_type();
  const auto src = to_string_view(env.source());
  if (type == wire::Payload::NodeUsageSampled && src == node_source_name)
    trim_candidates_.push_back({offset, env.event_time_ms(), false});
  else if (type == wire::Payload::NodeMetricReported && src == comp_->name())
    trim_candidates_.push_back({offset, env.event_time_ms(), true});
}

result<void> koordlet_agent::trim_samples(std::int64_t t) {
  if (opt_.sample_retention_ms <= 0) {
    trim_candidates_.clear();
    return {};
  }
  const std::int64_t keep = std::max(opt_.sample_retention_ms, comp_->longest_window_ms());
  if (last_trim_t_ == 0) last_trim_t_ = t;
  if (t - last_trim_t_ < keep / 6) return {};
  last_trim_t_ = t;
  const std::int64_t horizon = t - keep;
  // The candidates older than the horizon go, but the newest report; the mark is the first one
  // kept (records between are not samples: they stay whatever their time).
  std::vector<log_offset> drop;
  while (!trim_candidates_.empty() && trim_candidates_.front().time_ms < horizon) {
    const auto c = trim_candidates_.front();
    trim_candidates_.pop_front();
    if (!c.report) {
      drop.push_back(c.offset);
    } else {
      if (kept_report_) drop.push_back(*kept_report_);
      kept_report_ = c.offset;
    }
  }
  if (drop.empty()) return {};
  const log_offset mark =
      trim_candidates_.empty() ? host_->next_offset() : trim_candidates_.front().offset;
  std::sort(drop.begin(), drop.end());
  if (auto r = log_.trim(drop, mark); !r) {
    if (r.error().code != errc::failed_precondition) return r;
    // A log that cannot drop records (Kafka: its topic's retention applies): said once.
    opt_.sample_retention_ms = 0;
    problems_.push_back(r.error());
    return {};
  }
  stats_.trimmed += drop.size();
  return {};
}

result<void> koordlet_agent::process(std::vector<byte_buffer> first, std::int64_t t) {
  last_t_ = std::max(last_t_, t);
  std::deque<byte_buffer> q(std::make_move_iterator(first.begin()),
                            std::make_move_iterator(first.end()));
  while (!q.empty()) {
    byte_buffer rec = std::move(q.front());
    q.pop_front();
    std::vector<byte_buffer> out;
    if (auto s = host_->step_record(rec, t, out); !s) return s;  // appended, then delivered
    const log_offset off = host_->next_offset() - 1;
    const auto& env = *wire::GetEnvelope(rec.data());  // built by this process
    const bool mine = to_string_view(env.source()) == comp_->name();
    if (mine && env.payload_type() == wire::Payload::NodeMetricReported) {
      ++stats_.reports;
      last_report_ = rec;
      if (cold_pages_unsupported_ &&
          unsupported_reported_.insert(file_name(cold_pages_unsupported_->where)).second) {
        auto& fbb = b_.fbb();
        const auto obj = fbb.CreateString(cold_pages_unsupported_->where);
        const auto msg = fbb.CreateString(cold_pages_unsupported_->message);
        out.push_back(
            b_.finish(make_header(t, wire::EntityKind::Node, opt_.koordlet.node,
                                  static_cast<std::int64_t>(off)),
                      wire::CreateWriteFailed(fbb, wire::WriteKind::cgroup, obj, 0, 1, msg)));
        ++stats_.unsupported;
        problems_.push_back(*cold_pages_unsupported_);
      }
      cold_pages_unsupported_.reset();
    } else if (mine) {
      ++stats_.decisions;
    }
    fold_decision(env, off);
    track_observation(env, rec);
    note_trim_candidate(env, off);
    // The NodeMetric report is written in a dry run too (it is a report, not an enforcement);
    // an eviction only with enforce.
    if (mine && opt_.cluster != nullptr &&
        (env.payload_type() == wire::Payload::NodeMetricReported ||
         env.payload_type() == wire::Payload::NodeResourceTopologyUpdated ||
         (opt_.enforce && env.payload_type() == wire::Payload::PodEvicted))) {
      opt_.cluster->carry_out(off, rec);  // in the log (synced) first
      ++stats_.carried_out;
    }
    std::vector<byte_buffer> effects;
    if (opt_.enforce && mine) enforce(env, off, t, effects);
    for (auto& b : out) q.push_back(std::move(b));
    for (auto& b : effects) q.push_back(std::move(b));
  }
  return {};
}

void koordlet_agent::fold_decision(const wire::Envelope& env, log_offset offset) {
  switch (env.payload_type()) {
    case wire::Payload::BeSuppressed: {
      const auto& e = *env.payload_as_BeSuppressed();
      if (to_string_view(e.node()) != opt_.koordlet.node) break;
      const auto policy = to_string_view(e.policy());
      const auto cpuset = to_string_view(e.cpuset());
      if (e.be_cpu_milli() < 0) {  // recovered: no quota, the whole BE cpuset
        desired_.be_cfs_quota_us = -1;
        desired_.be_cfs_quota_cause = offset;
        if (!cpuset.empty())
          desired_.be_cpuset = desired_cgroups::part{std::string(cpuset), offset};
      } else if (policy == "cfsQuota") {
        // adjustByCfsQuota's value as the component wrote it (step-limited, at least beMinQuota).
        const auto q = term_value(e, "cfsQuotaUs");
        desired_.be_cfs_quota_us = q ? *q : std::max<std::int64_t>(e.be_cpu_milli() * 100, 2000);
        desired_.be_cfs_quota_cause = offset;
      } else if (policy == "cpuset" && !cpuset.empty()) {
        desired_.be_cpuset = desired_cgroups::part{std::string(cpuset), offset};
      }
      break;
    }
    case wire::Payload::CgroupUpdated: {
      if (to_string_view(env.source()) == node_source_name) break;  // what was written, not asked
      const auto& e = *env.payload_as_CgroupUpdated();
      if (to_string_view(e.node()) != opt_.koordlet.node) break;
      // Merged file by file: burst and the runtime hooks set different files of one pod.
      auto& p = desired_.pods[std::string(to_string_view(e.target()))];
      p.cause = offset;
      if (e.settings() != nullptr)
        for (const auto* kv : *e.settings()) {
          const auto k = to_string_view(kv->key());
          const auto v = to_string_view(kv->value());
          const auto it = std::find_if(p.settings.begin(), p.settings.end(),
                                       [&](const auto& f) { return f.first == k; });
          if (it != p.settings.end())
            it->second = std::string(v);
          else
            p.settings.emplace_back(std::string(k), std::string(v));
        }
      if (const auto uid = cgroup_uid(e); !uid.empty()) p.uid = std::string(uid);
      break;
    }
    case wire::Payload::PodEvicted:
    case wire::Payload::PodFinished: {
      const auto key = env.payload_type() == wire::Payload::PodEvicted
                           ? to_string_view(env.payload_as_PodEvicted()->pod())
                           : to_string_view(env.payload_as_PodFinished()->pod());
      if (const auto it = desired_.pods.find(key); it != desired_.pods.end())
        desired_.pods.erase(it);
      break;
    }
    default:
      break;
  }
}

void koordlet_agent::enforce(const wire::Envelope& env, log_offset offset, std::int64_t t,
                             std::vector<byte_buffer>& out) {
  if (!exec_) return;
  if (env.payload_type() == wire::Payload::BeSuppressed) {
    if (desired_.be_cpuset && desired_.be_cpuset->cause == offset)
      record_outcome(exec_->apply_be_cpuset(desired_.be_cpuset->value), "besteffort", offset, t,
                     out);
    if (desired_.be_cfs_quota_us && desired_.be_cfs_quota_cause == offset)
      record_outcome(exec_->apply_be_cfs_quota(*desired_.be_cfs_quota_us), "besteffort", offset, t,
                     out);
  } else if (env.payload_type() == wire::Payload::CgroupUpdated) {
    // This decision's files only: the pod's other files were written by their own.
    const auto& e = *env.payload_as_CgroupUpdated();
    const auto target = to_string_view(e.target());
    const auto it = desired_.pods.find(target);
    if (it == desired_.pods.end() || it->second.cause != offset) return;
    std::vector<std::pair<std::string, std::string>> settings;
    if (e.settings() != nullptr)
      for (const auto* kv : *e.settings())
        settings.emplace_back(to_string_view(kv->key()), to_string_view(kv->value()));
    record_outcome(apply_target(target, it->second.uid, settings), target, offset, t, out);
  }
}

void koordlet_agent::reconcile_all(std::int64_t t, std::vector<byte_buffer>& out) {
  if (!exec_) return;
  if (desired_.be_cpuset)
    record_outcome(exec_->apply_be_cpuset(desired_.be_cpuset->value), "besteffort",
                   desired_.be_cpuset->cause, t, out);
  if (desired_.be_cfs_quota_us)
    record_outcome(exec_->apply_be_cfs_quota(*desired_.be_cfs_quota_us), "besteffort",
                   desired_.be_cfs_quota_cause, t, out);
  for (const auto& [key, p] : desired_.pods)
    record_outcome(apply_target(key, p.uid, p.settings), key, p.cause, t, out);
}

node::apply_result koordlet_agent::apply_target(
    std::string_view target, std::string_view uid,
    const std::vector<std::pair<std::string, std::string>>& settings) const {
  if (const auto tier = qos_dir_target(target)) return exec_->apply_qos_settings(*tier, settings);
  if (target.starts_with("resctrl/") && resctrl_)
    return resctrl_->apply_group(target.substr(std::string_view("resctrl/").size()), settings);
  if (target.starts_with(koordlet_actor::host_app_target_prefix)) {
    const auto name = target.substr(koordlet_actor::host_app_target_prefix.size());
    for (const auto& h : comp_->host_apps())
      if (h.name == name) return exec_->apply_host_app_settings(h, settings);
    // Declared when decided, gone from the NodeSLO since (a restart under another NodeSLO):
    // nothing to keep in step (Koordinator's reconciler forgets it too).
    return {};
  }
  return exec_->apply_pod_settings(uid.empty() ? target : uid, settings);
}

void koordlet_agent::record_outcome(const node::apply_result& r, std::string_view target,
                                    log_offset cause, std::int64_t t,
                                    std::vector<byte_buffer>& out) {
  const bool be = target == "besteffort" || qos_dir_target(target).has_value() ||
                  target.starts_with("resctrl/") ||
                  target.starts_with(koordlet_actor::host_app_target_prefix);
  const auto kind = be ? wire::EntityKind::Node : wire::EntityKind::Pod;
  const std::string key = be ? opt_.koordlet.node : std::string(target);
  const auto causation = static_cast<std::int64_t>(cause);
  auto& fbb = b_.fbb();
  if (!r.done.empty()) {
    std::vector<std::pair<std::string, std::string>> settings;
    settings.reserve(r.done.size());
    for (const auto& f : r.done) settings.emplace_back(f.key, f.read_back);
    const auto sv = b_.key_values(settings);
    std::vector<fb::Offset<wire::Term>> terms;
    for (const auto& f : r.done) {
      const auto n = fbb.CreateString("written");
      const auto u = fbb.CreateString("");
      const auto x = fbb.CreateString(f.file + " = " + f.written);
      terms.push_back(wire::CreateTerm(fbb, n, 0, u, x));
    }
    const auto tv = fbb.CreateVector(terms);
    const auto nn = fbb.CreateString(opt_.koordlet.node);
    const auto tn = fbb.CreateString(target);
    out.push_back(b_.finish(make_header(t, kind, key, causation),
                            wire::CreateCgroupUpdated(fbb, nn, tn, sv, tv)));
    stats_.files_written += r.done.size();
  }
  if (r.failed) {
    const auto obj = fbb.CreateString(r.failed->where);
    const auto msg = fbb.CreateString(r.failed->message);
    out.push_back(b_.finish(make_header(t, kind, key, causation),
                            wire::CreateWriteFailed(fbb, wire::WriteKind::cgroup, obj, 0, 1, msg)));
    ++stats_.writes_failed;
    problems_.push_back(*r.failed);
  }
  for (const auto& u : r.unsupported) {
    ++stats_.unsupported;
    if (!unsupported_reported_.insert(file_name(u.where)).second) continue;  // once per node
    const auto obj = fbb.CreateString(u.where);
    const auto msg = fbb.CreateString(u.message);
    out.push_back(b_.finish(make_header(t, kind, key, causation),
                            wire::CreateWriteFailed(fbb, wire::WriteKind::cgroup, obj, 0, 1, msg)));
    problems_.push_back(u);
  }
}

void koordlet_agent::observe_topology(std::int64_t t, std::vector<byte_buffer>& into) {
  next_topology_ms_ = t + topology_interval_ms;
  auto m = node::read_machine_topology(opt_.source.sys_root, opt_.source.proc_root);
  if (!m) {
    if (m.error().message != topology_problem_) problems_.push_back(m.error());
    topology_problem_ = m.error().message;
    return;
  }
  topology_problem_.clear();
  if (logged_topology_ == *m) return;
  into.push_back(node_topology_sampled(b_, opt_.koordlet.node, *m, t));
  logged_topology_ = std::move(*m);
}

byte_buffer koordlet_agent::node_registered(std::int64_t t) const {
  messages::event_builder b;
  auto& fbb = b.fbb();
  resource_list cap;
  cap.cpu_milli = registered_capacity_->first;
  cap.memory_bytes = registered_capacity_->second;
  const auto name = fbb.CreateString(opt_.koordlet.node);
  const auto c = b.resources(cap);
  const auto a = b.resources(cap);  // no kubelet reservation known on the node itself
  const auto payload = wire::CreateNodeRegistered(fbb, name, c, a, 0, 0, 0, false);
  return b.finish(make_header(t, wire::EntityKind::Node, opt_.koordlet.node, -1), payload);
}

void koordlet_agent::track_observation(const wire::Envelope& env, const byte_buffer& rec) {
  const auto type = env.payload_type();
  const auto key = to_string_view(env.entity_key());
  // What the log places here (PodScheduled on this node; gone with PodFinished or PodEvicted).
  if (type == wire::Payload::PodScheduled &&
      to_string_view(env.payload_as_PodScheduled()->node()) == opt_.koordlet.node)
    placed_.emplace(to_string_view(env.payload_as_PodScheduled()->pod()));
  if (type == wire::Payload::PodEvicted) {
    if (const auto it = placed_.find(key); it != placed_.end()) placed_.erase(it);
    return;  // still an API object until it is deleted: its observations stand
  }
  if (type == wire::Payload::PodFinished || type == wire::Payload::NodeRemoved) {
    if (const auto it = placed_.find(key); it != placed_.end()) placed_.erase(it);
    // The entity starts over: its next observations are news.
    const std::string prefix = std::string(key) + "|";
    for (auto it = last_observed_.lower_bound(prefix);
         it != last_observed_.end() && it->first.compare(0, prefix.size(), prefix) == 0;)
      it = last_observed_.erase(it);
    return;
  }
  if (to_string_view(env.source()) != "bridge/k8s") return;
  auto j = messages::to_json(rec);
  if (!j) return;
  const auto parsed = nlohmann::json::parse(*j, nullptr, false);
  if (!parsed.is_object() || !parsed.contains("payload")) return;
  last_observed_.insert_or_assign(std::string(key) + "|" + wire::EnumNamePayload(type),
                                  parsed["payload"].dump());
}

bool koordlet_agent::seen_before(const byte_buffer& rec) {
  const auto& env = *wire::GetEnvelope(rec.data());
  if (to_string_view(env.source()) != "bridge/k8s") return false;
  const auto it = last_observed_.find(std::string(to_string_view(env.entity_key())) + "|" +
                                      wire::EnumNamePayload(env.payload_type()));
  if (it == last_observed_.end()) return false;
  auto j = messages::to_json(rec);
  if (!j) return false;
  const auto parsed = nlohmann::json::parse(*j, nullptr, false);
  return parsed.is_object() && parsed.contains("payload") && parsed["payload"].dump() == it->second;
}

result<std::vector<kube::write_outcome>> koordlet_agent::observe(event_time now) {
  std::vector<kube::write_outcome> done;
  if (opt_.cluster == nullptr) return done;
  const std::int64_t t = std::max(now.value, last_t_);
  std::vector<byte_buffer> recs;
  for (auto& r : opt_.cluster->take_observations()) {
    if (seen_before(r)) {
      ++stats_.duplicates;
      continue;
    }
    recs.push_back(std::move(r));
  }
  // Pods the log places here that the API server no longer has: deleted while this koordlet
  // was not watching (the informer's first list cannot say so).
  if (auto listed = opt_.cluster->take_first_pod_list()) {
    std::set<std::string> pending;  // placed by the records about to be appended
    for (const auto& r : recs) {
      const auto& env = *wire::GetEnvelope(r.data());
      if (env.payload_type() == wire::Payload::PodScheduled)
        pending.emplace(to_string_view(env.payload_as_PodScheduled()->pod()));
    }
    for (const auto& pod : placed_) {
      if (listed->count(pod) != 0 || pending.count(pod) != 0) continue;
      auto& fbb = b_.fbb();
      const auto pn = fbb.CreateString(pod);
      const auto nn = fbb.CreateString(opt_.koordlet.node);
      auto h = make_header(t, wire::EntityKind::Pod, pod, -1);
      h.source = "bridge/k8s";
      recs.push_back(b_.finish(h, wire::CreatePodFinished(fbb, pn, nn, wire::PodPhase::Deleted)));
    }
  }
  // Evictions a stop left unanswered: carried out once the informers know the pods' uids.
  if (!carry_over_.empty() && opt_.cluster->synced()) {
    for (auto& [off, rec] : carry_over_) {
      opt_.cluster->carry_out(off, std::move(rec));
      ++stats_.carried_out;
      ++stats_.carried_over;
    }
    carry_over_.clear();
  }
  log_offset answered = position_;
  for (auto& w : opt_.cluster->take_outcomes()) {
    if (!w.ok) {
      recs.push_back(kube::write_failed_record(w, event_time{t}));
      ++stats_.api_writes_failed;
    }
    answered = std::max<log_offset>(answered, w.offset + 1);
    done.push_back(std::move(w));
  }
  stats_.observed += recs.size();
  if (!recs.empty())
    if (auto r = process(std::move(recs), t); !r) return tl::unexpected(r.error());
  // Past the decisions answered, once their failures are in the log.
  if (answered > position_ && !opt_.position_path.empty() && opt_.enforce) {
    position_ = answered;
    if (auto w = run::save_sink_position(opt_.position_path, position_); !w)
      problems_.push_back(w.error());
  }
  return done;
}

std::vector<error> koordlet_agent::take_problems() {
  std::vector<error> out;
  out.swap(problems_);
  return out;
}

}  // namespace colony::agent
