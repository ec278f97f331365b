// The sim driver (run_simulation, sim/driver.hpp): `colony sim` as one control plane. A trace
// source (sim/trace_source.hpp) and a usage model standing in for each node's collectors
// (sim/usage_model.hpp) feed observation events, on a virtual clock, to the deterministic
// step_host (actors/entities/step_host.hpp), which runs the same components `colony run` hosts:
// the ClusterColocationProfile webhook, the koord-scheduler, the ElasticQuota controller, the
// slo-controller (one shard per node) and a koordlet per node. Nothing here calls a policy:
// every decision in the log is a component's.
//
// The clock: pending source actions ordered by (virtual ms, sequence); the next instant is the
// earlier of the next action and the earliest component wake-up (a scheduler backoff). At an
// instant the source's observations go in first, then the host runs rounds until quiet.
//   - usage model v2018-curves: every node's collector reports NodeMetric every
//     nodeMetricReportIntervalSeconds (a node without pods every idleNodeReportIntervalSeconds
//     once it has reported empty).
//   - usage model none (pods use what they request): a node's collector reports when the pods on
//     it change, at that instant, so the slo-controller sees every change of the node's pods.
// Pods leave when their trace run time is over (counted from their binding), or are deleted by
// the trace while still pending. A pod the descheduler evicts (PodEvicted, reason Descheduled) is
// replaced at the same instant, as its workload controller would: a new pod of the same trace row
// named "<name>-r<n>" with the rest of the run time, which the scheduler places again.
#include "sim/driver.hpp"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <limits>
#include <thread>
#include <unordered_map>

#include <fmt/format.h>

#include "actors/admission/actor/colocation_profile_component.hpp"
#include "actors/descheduler/actor/descheduler_component.hpp"
#include "actors/descheduler/actor/migration_controller_component.hpp"
#include "actors/entities/step_host.hpp"
#include "actors/koordlet/actor/koordlet_component.hpp"
#include "actors/quota/actor/quota_component.hpp"
#include "actors/quota/actor/quota_profile_component.hpp"
#include "actors/scheduler/actor/scheduler_component.hpp"
#include "actors/slo_controller/actor/slo_controller_component.hpp"
#include "messages/codec.hpp"
#include "messages/string_map.hpp"
#include "sim/component_host.hpp"
#include "sim/event_queue.hpp"
#include "sim/log_sink.hpp"
#include "sim/metrics_observer.hpp"
#include "sim/trace_source.hpp"
#include "sim/usage_model.hpp"
#include "stores/event_log.hpp"

namespace colony::sim {

namespace {

using steady = std::chrono::steady_clock;
using messages::to_string_view;

double seconds_since(steady::time_point t0) {
  return std::chrono::duration<double>(steady::now() - t0).count();
}

constexpr std::int64_t never = std::numeric_limits<std::int64_t>::max();

enum class pod_status : std::uint8_t { future, pending, bound, done };

// What the driver tracks of a pod, from the trace and from the log (never decided here).
struct pod_rec {
  std::string key;
  std::uint32_t row = 0;  // the trace row it plays (a replacement plays its original's)
  pod_status status = pod_status::future;
  std::int32_t node = -1;
  std::int64_t bind_ms = -1, duration_ms = 0;
  std::int64_t submit_ms = -1;
  std::uint32_t complete_tag = 0;
  bool stays = false;
  resource_list requests;  // after admission (PodMutated), else as submitted
  wire::QoSClass qos = wire::QoSClass::None;
  wire::PriorityClass pclass = wire::PriorityClass::None;
};

class component_sim {
 public:
  component_sim(const trace::trace_set& t, const sim_config& c, const run_options& o)
      : trace_(t), cfg_(c), opt_(o), src_(t, c) {}

  result<run_result> run();

 private:
  result<void> setup();
  std::vector<std::unique_ptr<entities::component>> node_components(std::string_view node);
  // The sink of the host: every numbered record, in log order.
  result<void> on_round(const entities::record_batch& round);
  void track(const wire::Envelope& env);
  void observe(const messages::byte_buffer& b) { host_->observe(b); }
  void report_nodes(std::int64_t t, const std::vector<std::uint32_t>& nodes);
  void replace(std::int64_t t, std::uint32_t evicted);
  void collector_tick(std::int64_t t);
  [[nodiscard]] summary_header summary_header_of() const;
  void node_changed(std::uint32_t n) {
    if (changed_mark_[n] != 0) return;
    changed_mark_[n] = 1;
    changed_.push_back(n);
  }

  const trace::trace_set& trace_;
  const sim_config& cfg_;
  run_options opt_;
  usage_model model_ = usage_model::v2018_curves;
  pod_lifetime lifetime_ = pod_lifetime::trace;
  trace_source src_;
  std::optional<usage_source> usage_;
  messages::event_builder b_;
  event_queue q_;
  std::unique_ptr<stores::event_log> log_;
  std::unique_ptr<log_sink> sink_;
  std::unique_ptr<component_host> host_;
  std::unique_ptr<metrics_observer> observer_;
  // The slo-controller ConfigMap read once for every node's shard (node_components).
  std::shared_ptr<const slo_controller_actor::slo_controller_initial_config> slo_initial_;
  std::int64_t now_ = 0, end_ms_ = 0, start_ms_ = 0;

  std::vector<pod_rec> pods_;
  string_map<std::uint32_t> pod_index_;  // lookup only
  std::vector<std::string> node_names_;
  // Each node's state in the host's world, found once (the world never erases a node, and its
  // ordered map keeps a node's address): a report then skips the map walk.
  std::vector<const entities::node_state*> node_states_;
  std::vector<std::uint32_t> late_withdrawals_;     // pods created and deleted at this instant
  std::vector<std::uint32_t> descheduled_;          // pods evicted by the descheduler, to replace
  std::vector<std::uint32_t> replacements_of_row_;  // per trace row: replacements made
  string_map<std::uint32_t> node_index_;            // lookup only
  std::vector<std::vector<std::uint32_t>> node_pods_;  // ascending pod row
  std::vector<char> reported_empty_;
  std::vector<messages::byte_buffer> idle_report_;  // per node: its empty report (a template)
  std::vector<char> changed_mark_;
  std::vector<std::uint32_t> changed_;  // nodes whose pods changed this instant
  std::vector<pod_on_node_usage> scratch_;
  // report_nodes: the nodes reporting this tick (node, reuses its idle report), the reports
  // built for them, and one builder and scratch per chunk of nodes built in parallel.
  struct reporting_node {
    std::uint32_t node;
    bool reuse;
  };
  struct report_scratch {
    messages::event_builder b;
    std::vector<pod_on_node_usage> pods;
  };
  std::vector<reporting_node> reporting_;
  std::vector<messages::byte_buffer> built_;
  std::vector<report_scratch> report_scratch_;
  entities::parallelizer parallel_;  // the host's threads (empty: this thread)
  double host_wall_ = 0, source_wall_ = 0;
  std::vector<std::string> skipped_plugins_;
};

result<void> component_sim::setup() {
  model_ = opt_.usage_override.value_or(cfg_.usage);
  lifetime_ = opt_.lifetime_override.value_or(cfg_.lifetime);
  if (!trace_.openb_nodes || !trace_.openb_pods)
    return fail(errc::invalid_input,
                "the trace has no openb node list and pod list (colony sim replays openb)",
                trace_.dir);
  auto u = usage_source::create(trace_, cfg_, model_, opt_.seed);
  if (!u) return tl::unexpected(u.error());
  usage_.emplace(std::move(*u));

  // The log, the sink and the host.
  namespace fs = std::filesystem;
  if (!opt_.log_path.empty()) {
    std::error_code ec;
    fs::remove_all(opt_.log_path, ec);
    stores::log_options lo;
    lo.sync = false;  // a sim log is reproducible from its inputs; fsync per batch buys nothing
    auto l = stores::open_log(opt_.log_path, lo);
    if (!l) return tl::unexpected(l.error());
    log_ = std::move(*l);
  }
  sink_ = std::make_unique<log_sink>(log_.get());
  // The report folds the log on the appender thread (observer_ is made below, before the first
  // record).
  sink_->set_tap([this](std::span<const std::uint8_t> rec) { observer_->on_record(rec); });
  auto sink = [this](const entities::record_batch& round) { return on_round(round); };
  const std::size_t threads = std::max<std::size_t>(1, opt_.threads);
  host_ =
      opt_.actor_host_reference ? make_actor_host(threads, sink) : make_step_host(threads, sink);

  // The control plane: the components `colony run` hosts, configured from the sim config.
  admission_actor::colocation_profile_options ao;
  ao.mutating.seed = opt_.seed;
  ao.priority_classes = cfg_.priority_classes;
  host_->add_component(
      std::make_unique<admission_actor::colocation_profile_component>(cfg_.profiles, ao));
  scheduler::scheduler_component_options so;
  so.config = cfg_.scheduler;
  so.profile = 0;
  so.seed = opt_.seed;
  so.ties = cfg_.scheduler_tie_break;
  const bool quotas = !cfg_.quotas.empty() || !cfg_.quota_profiles.empty();
  so.elastic_quota = quotas;
  so.elastic_quota_ignore_pod_overhead = cfg_.scheduler_gates.elastic_quota_ignore_pod_overhead;
  so.await_admission = true;
  // No leftover flush (kube's 5-min flushUnschedulablePodsLeftover): with the queueing hints, a
  // parked pod moves when a node event could make it fit, and a retry with unchanged inputs gives
  // the same answer (every filter of the shipped profile has a hint; LoadAwareScheduling's usage
  // filter, off there, has none). Over openb's 149 days the flush would retry each never-bound
  // pod ~43,000 times.
  so.pod_max_in_unschedulable_pods_duration = duration_ms{0};
  parallel_ = host_->parallelizer();
  so.parallelizer = parallel_;
  auto sched = scheduler::scheduler_component::create(std::move(so));
  if (!sched) return tl::unexpected(sched.error());
  skipped_plugins_ = (*sched)->skipped_plugins();
  quota::quota_component_options qo;
  qo.args = (*sched)->quota_args();
  host_->add_component(std::move(*sched));
  if (quotas) host_->add_component(std::make_unique<quota::quota_component>(std::move(qo)));
  // koord-manager's ElasticQuotaProfile controller: the tree roots of the config's profiles.
  if (!cfg_.quota_profiles.empty())
    host_->add_component(std::make_unique<quota::quota_profile_component>());
  if (cfg_.colocation && !host_->routes_by_node()) {
    // A host that gives every component every record runs one slo-controller for all nodes.
    slo_controller_actor::slo_controller_options sl;
    sl.configmap_json = cfg_.slo_configmap_json;
    sl.cache_idle_nodes = opt_.cache_idle_nodes;
    sl.cpu_normalization = cfg_.cpu_normalization_plugins;
    host_->add_component(std::make_unique<slo_controller_actor::slo_controller_component>(sl));
  }
  if (cfg_.descheduler) {
    // koord-descheduler: the descheduling loop, then the migration controller.
    descheduler_actor::descheduler_component_options dopt;
    dopt.config = *cfg_.descheduler;
    host_->add_component(std::make_unique<descheduler_actor::descheduler_component>(dopt));
    descheduler_actor::migration_controller_options mopt;
    mopt.args = cfg_.descheduler->migration;
    host_->add_component(
        std::make_unique<descheduler_actor::migration_controller_component>(std::move(mopt)));
  }
  if (cfg_.colocation)
    slo_initial_ = slo_controller_actor::read_initial_config(cfg_.slo_configmap_json);
  host_->on_new_node([this](std::string_view node) { return node_components(node); });

  // Nodes and pods of the trace.
  const auto& nrows = trace_.openb_nodes->rows;
  node_names_.reserve(nrows.size());
  for (std::size_t i = 0; i < nrows.size(); ++i) {
    node_names_.push_back(nrows[i].name);
    node_index_.emplace(nrows[i].name, static_cast<std::uint32_t>(i));
    q_.push(0, action::node_register, static_cast<std::uint32_t>(i));
  }
  if (node_index_.size() != nrows.size())
    return fail(errc::invalid_input, "the node list names a node twice", trace_.openb_nodes->file);
  node_pods_.resize(nrows.size());
  reported_empty_.assign(nrows.size(), 0);
  idle_report_.resize(nrows.size());
  changed_mark_.assign(nrows.size(), 0);
  {
    const std::int64_t step = cfg_.node_metric_report_interval_s * 1000;
    start_ms_ = std::max<std::int64_t>(0, opt_.from_ms) / step * step;
  }
  const auto& prows = trace_.openb_pods->rows;
  pods_.resize(prows.size());
  end_ms_ = 0;
  for (std::size_t i = 0; i < prows.size(); ++i) {
    auto& p = pods_[i];
    const auto& r = prows[i];
    p.key = src_.pod_key(static_cast<std::uint32_t>(i));
    p.row = static_cast<std::uint32_t>(i);
    const std::int64_t start = r.scheduled ? r.scheduled->value : r.creation.value;
    p.duration_ms = std::max<std::int64_t>(0, r.deletion.value - start);
    p.stays = lifetime_ == pod_lifetime::running_stays && r.phase == trace::openb_phase::running;
    p.requests = r.requests();
    end_ms_ = std::max(end_ms_, r.deletion.value);
    q_.push(std::max(r.creation.value, start_ms_), action::pod_submit,
            static_cast<std::uint32_t>(i));
    if (!p.stays)
      q_.push(std::max(r.deletion.value, start_ms_), action::pod_withdraw,
              static_cast<std::uint32_t>(i));
  }
  for (std::uint32_t i = 0; i < pods_.size(); ++i) pod_index_.emplace(pods_[i].key, i);
  replacements_of_row_.assign(pods_.size(), 0);
  if (pod_index_.size() != pods_.size())
    return fail(errc::invalid_input, "the pod list names a pod twice", trace_.openb_pods->file);
  for (auto& p : pods_)
    if (p.stays) p.duration_ms = end_ms_ + 1;  // runs (or waits) until the end of the run
  if (opt_.until_ms >= 0) end_ms_ = std::min(end_ms_, opt_.until_ms);
  if (model_ == usage_model::v2018_curves) q_.push(start_ms_, action::koordlet_tick);
  q_.push(start_ms_, action::metrics_sample);

  observer_options oo;
  oo.usage_is_allocation = model_ == usage_model::none;
  oo.task_classes = fgd_task_classes(prows);
  oo.pods_in_trace = prows.size();
  observer_ = std::make_unique<metrics_observer>(std::move(oo));
  return {};
}

// The node-scoped components of a node: its slo-controller shard and its koordlet.
std::vector<std::unique_ptr<entities::component>> component_sim::node_components(
    std::string_view node) {
  std::vector<std::unique_ptr<entities::component>> v;
  if (!cfg_.colocation) return v;
  if (host_->routes_by_node()) {
    slo_controller_actor::slo_controller_options sl;
    sl.configmap_json = cfg_.slo_configmap_json;
    sl.cache_idle_nodes = opt_.cache_idle_nodes;
    sl.cpu_normalization = cfg_.cpu_normalization_plugins;
    sl.initial = slo_initial_;
    v.push_back(std::make_unique<entities::node_shard>(
        std::make_unique<slo_controller_actor::slo_controller_component>(std::move(sl)),
        std::string(node)));
  }
  koordlet_actor::koordlet_options ko;
  ko.node = std::string(node);
  ko.gates = cfg_.gates;
  // Its strategies come with its node's NodeSLOUpdated (the slo-controller renders it when the
  // node registers), as a koordlet reads its NodeSLO.
  // One usage sample per report: the BE CPU window of BECPUEvict holds one sample per report.
  ko.timing.collect_res_used_interval = duration_ms{cfg_.node_metric_report_interval_s * 1000};
  v.push_back(std::make_unique<koordlet_actor::koordlet_component>(std::move(ko)));
  return v;
}

result<void> component_sim::on_round(const entities::record_batch& round) {
  for (std::size_t i = 0; i < round.size(); ++i) {
    const auto& env = round.envelope(i);
    sink_->add_numbered(round.record(i));
    track(env);
  }
  if (sink_->should_flush()) return sink_->flush();
  return {};
}

// The pod lifecycle as the log tells it: admission's requests and classes, where a pod was
// bound, when it left. The trace source reads it to end pods; the usage model to measure them.
void component_sim::track(const wire::Envelope& env) {
  using P = wire::Payload;
  auto pod_of = [&](const flatbuffers::String* s) -> pod_rec* {
    const auto it = pod_index_.find(to_string_view(s));
    return it == pod_index_.end() ? nullptr : &pods_[it->second];
  };
  auto unbind = [&](pod_rec& p) {
    if (p.node < 0) return;
    auto& v = node_pods_[static_cast<std::size_t>(p.node)];
    const auto row = static_cast<std::uint32_t>(&p - pods_.data());
    if (auto it = std::lower_bound(v.begin(), v.end(), row); it != v.end() && *it == row)
      v.erase(it);
    node_changed(static_cast<std::uint32_t>(p.node));
    p.node = -1;
  };
  switch (env.payload_type()) {
    case P::PodMutated: {
      const auto* e = env.payload_as_PodMutated();
      if (auto* p = pod_of(e->name())) {
        p->requests = messages::to_resource_list(e->requests());
        p->requests.pods = 0;
        p->qos = e->qos_class();
        p->pclass = e->priority_class();
      }
      break;
    }
    case P::PodRejected:
      if (auto* p = pod_of(env.payload_as_PodRejected()->name())) p->status = pod_status::done;
      break;
    case P::PodScheduled: {
      const auto* e = env.payload_as_PodScheduled();
      auto* p = pod_of(e->pod());
      const auto n = node_index_.find(to_string_view(e->node()));
      if (p == nullptr || n == node_index_.end()) break;
      unbind(*p);
      p->status = pod_status::bound;
      p->node = static_cast<std::int32_t>(n->second);
      p->bind_ms = env.event_time_ms();
      auto& v = node_pods_[n->second];
      const auto row = static_cast<std::uint32_t>(p - pods_.data());
      v.insert(std::lower_bound(v.begin(), v.end(), row), row);
      node_changed(n->second);
      ++p->complete_tag;
      q_.push(env.event_time_ms() + p->duration_ms, action::pod_complete, row, p->complete_tag);
      break;
    }
    case P::PodEvicted:
      if (auto* p = pod_of(env.payload_as_PodEvicted()->pod())) {
        if (env.payload_as_PodEvicted()->reason() == wire::EvictionReason::Descheduled &&
            p->status == pod_status::bound)
          descheduled_.push_back(static_cast<std::uint32_t>(p - pods_.data()));
        unbind(*p);
        p->status = pod_status::done;
      }
      break;
    case P::PodFinished:
      if (auto* p = pod_of(env.payload_as_PodFinished()->pod())) {
        unbind(*p);
        p->status = pod_status::done;
      }
      break;
    default:
      break;
  }
}

// The replacement of a descheduled pod: the same trace row, the rest of its run time, a new name.
void component_sim::replace(std::int64_t t, std::uint32_t evicted) {
  const pod_rec old = pods_[evicted];
  const std::int64_t left =
      old.stays ? old.duration_ms : std::max<std::int64_t>(0, old.bind_ms + old.duration_ms - t);
  if (!old.stays && left == 0) return;  // its run was over anyway
  const std::uint32_t n = ++replacements_of_row_[old.row];
  const auto& row = trace_.openb_pods->rows[old.row];
  pod_rec r;
  r.row = old.row;
  r.key = src_.pod_key(old.row) + "-r" + std::to_string(n);
  r.duration_ms = left;
  r.stays = old.stays;
  r.requests = old.requests;
  r.status = pod_status::pending;
  r.submit_ms = t;
  const auto idx = static_cast<std::uint32_t>(pods_.size());
  pod_index_.emplace(r.key, idx);
  const std::string uid = row.name + "-r" + std::to_string(n);
  observe(src_.pod_resubmitted(t, old.row, left, r.key, uid));
  pods_.push_back(std::move(r));
}

// NodeMetricReported of the given nodes at t (in the given order).
void component_sim::report_nodes(std::int64_t t, const std::vector<std::uint32_t>& nodes) {
  const auto& world = host_->state();
  if (node_states_.size() < node_names_.size()) node_states_.resize(node_names_.size(), nullptr);
  // 1. Which nodes report (ready, not removed), and which of them need a report built: a node
  // without pods reports "usage 0, no pods" every time, so its report is its first one with the
  // times rewritten in place, byte for byte what building it again gives (fields at their
  // default are absent, hence t != 0). cache_idle_nodes = false builds every report, so a test
  // can compare the two.
  reporting_.clear();
  for (const std::uint32_t n : nodes) {
    if (node_states_[n] == nullptr) {
      const auto nit = world.nodes.find(node_names_[n]);
      if (nit == world.nodes.end()) continue;
      node_states_[n] = &nit->second;
    }
    const auto& ns = *node_states_[n];
    if (!ns.ready || ns.removed) continue;
    const bool idle = node_pods_[n].empty();
    const bool reuse = opt_.cache_idle_nodes && idle && t != 0 && !idle_report_[n].empty();
    reporting_.push_back({n, reuse});
  }
  // 2. Build the others on the host's threads, in chunks of nodes, each chunk with its own
  // builder and scratch: measure() and node_metric() read only the trace, the config and the
  // world, so which thread builds a report does not change its bytes.
  constexpr std::size_t chunk = 128;
  const std::size_t m = reporting_.size();
  const std::size_t tasks = (m + chunk - 1) / chunk;
  if (built_.size() < m) built_.resize(m);
  if (report_scratch_.size() < tasks) report_scratch_.resize(tasks);
  const std::function<void(std::size_t)> build = [&](std::size_t k) {
    auto& sc = report_scratch_[k];
    for (std::size_t j = k * chunk; j < std::min(m, (k + 1) * chunk); ++j) {
      const auto [n, reuse] = reporting_[j];
      if (reuse) continue;
      sc.pods.clear();
      for (const std::uint32_t pi : node_pods_[n]) {
        const auto& p = pods_[pi];
        pod_on_node_usage u;
        u.pod = p.row;
        u.key = &p.key;
        u.requests = p.requests;
        u.bind_ms = p.bind_ms;
        u.qos = p.qos;
        u.priority_class = p.pclass;
        sc.pods.push_back(u);
      }
      const auto total = usage_->measure(sc.pods, t, node_states_[n]->be_cpu_milli);
      built_[j] = usage_->node_metric(sc.b, t, node_names_[n], sc.pods, total);
    }
  };
  if (parallel_ && tasks > 1)
    parallel_(tasks, build);
  else
    for (std::size_t k = 0; k < tasks; ++k) build(k);
  // 3. Observe them in node order.
  for (std::size_t j = 0; j < m; ++j) {
    const auto [n, reuse] = reporting_[j];
    const bool idle = node_pods_[n].empty();
    reported_empty_[n] = idle ? 1 : 0;
    if (reuse) {
      auto& rec = idle_report_[n];
      auto* env = wire::GetMutableEnvelope(rec.data());
      auto* mr = static_cast<wire::NodeMetricReported*>(env->mutable_payload());
      if (env->mutate_event_time_ms(t) && mr->mutate_update_time_ms(t)) {
        observe(rec);  // the host copies it
        continue;
      }
      // A template without the fields to rewrite (cannot happen with t != 0): build it here.
      scratch_.clear();
      const auto total = usage_->measure(scratch_, t, node_states_[n]->be_cpu_milli);
      built_[j] = usage_->node_metric(b_, t, node_names_[n], scratch_, total);
    }
    observe(built_[j]);
    if (idle && t != 0) idle_report_[n] = std::move(built_[j]);
  }
}

// Every node's collector reports (usage model v2018-curves); a node without pods that has
// reported empty reports again only every idleNodeReportIntervalSeconds.
void component_sim::collector_tick(std::int64_t t) {
  const std::int64_t idle_ms = cfg_.idle_node_report_interval_s * 1000;
  std::vector<std::uint32_t> due;
  due.reserve(node_names_.size());
  for (std::uint32_t n = 0; n < node_names_.size(); ++n) {
    if (idle_ms > 0 && node_pods_[n].empty() && reported_empty_[n] != 0 && t % idle_ms != 0)
      continue;
    due.push_back(n);
  }
  report_nodes(t, due);
}

// What summary.json says about the run's inputs (the rest is folded from the log).
summary_header component_sim::summary_header_of() const {
  summary_header h;
  const bool koordlet_qos = cfg_.colocation && cfg_.slo.resource_threshold &&
                            cfg_.slo.resource_threshold->cluster.enable.value_or(false);
  h.config = {{"name", cfg_.name},
              {"source", cfg_.source},
              {"usage_model", std::string(to_string(model_))},
              {"pod_lifetime", std::string(to_string(lifetime_))},
              {"node_metric_report_interval_seconds", cfg_.node_metric_report_interval_s},
              {"idle_node_report_interval_seconds", cfg_.idle_node_report_interval_s},
              {"colocation", cfg_.colocation},
              {"koordlet_qos", koordlet_qos},
              {"descheduler", cfg_.descheduler.has_value()},
              {"scheduler_plugins_skipped", skipped_plugins_},
              {"host", "components"},
              {"seed", opt_.seed}};
  h.trace = trace_section(trace_, node_names_.size(), pods_.size(), usage_->curve_count());
  h.state_digest = host_->state().digest();
  h.entities = host_->state().entity_count();
  return h;
}

result<run_result> component_sim::run() {
  const auto wall0 = steady::now();
  if (auto s = setup(); !s) return tl::unexpected(s.error());
  // The configuration in force, as observations.
  for (const auto& rec : src_.configuration(0)) observe(rec);
  if (auto r = host_->run_instant(0); !r) return tl::unexpected(r.error());

  const std::int64_t interval_ms = cfg_.node_metric_report_interval_s * 1000;
  const std::int64_t metrics_ms = cfg_.metrics_interval_s * 1000;
  auto last_progress = steady::now();
  for (;;) {
    const std::int64_t tq = q_.empty() ? never : q_.top().time_ms;
    const std::int64_t tw = host_->next_wakeup_ms().value_or(never);
    const std::int64_t t = std::max(std::min(tq, tw), now_);
    if (t == never || t > end_ms_) break;
    now_ = t;
    const auto ts = steady::now();
    bool tick = false, sample = false;
    while (!q_.empty() && q_.top().time_ms <= t) {
      const auto a = q_.pop();
      auto& p = pods_[a.index];
      switch (a.what) {
        case action::node_register:
          observe(src_.node_registered(t, a.index));
          if (auto topo = src_.node_topology(t, a.index)) observe(*topo);
          if (auto devs = src_.node_devices(t, a.index)) observe(*devs);
          if (model_ == usage_model::none) node_changed(a.index);
          break;
        case action::pod_submit:
          observe(src_.pod_submitted(t, a.index, p.duration_ms));
          p.status = pod_status::pending;
          p.submit_ms = t;
          break;
        case action::pod_complete:
          if (p.status == pod_status::bound && a.tag == p.complete_tag)
            observe(
                src_.pod_finished(t, p.row, node_names_[static_cast<std::size_t>(p.node)], p.key));
          break;
        case action::pod_withdraw:
          // The trace deleted the pod before it was placed. A pod created at this very instant
          // is deleted once the instant's first rounds are done: in Kubernetes admission runs
          // inside the create request, so no deletion can come before it.
          if (p.status != pod_status::pending) break;
          if (p.submit_ms == t)
            late_withdrawals_.push_back(a.index);
          else
            observe(src_.pod_finished(t, a.index, ""));
          break;
        case action::koordlet_tick:
          tick = true;
          if (t + interval_ms <= end_ms_) q_.push(t + interval_ms, action::koordlet_tick);
          break;
        case action::metrics_sample:
          sample = true;
          if (t + metrics_ms <= end_ms_) q_.push(t + metrics_ms, action::metrics_sample);
          break;
        default:
          break;
      }
    }
    if (tick) collector_tick(t);
    source_wall_ += seconds_since(ts);
    const auto th = steady::now();
    if (auto r = host_->run_instant(t); !r) return tl::unexpected(r.error());
    if (!late_withdrawals_.empty()) {
      for (const auto i : late_withdrawals_)
        if (pods_[i].status == pod_status::pending) observe(src_.pod_finished(t, i, ""));
      late_withdrawals_.clear();
      if (auto r = host_->run_instant(t); !r) return tl::unexpected(r.error());
    }
    // Descheduled pods: their replacements are created now.
    while (!descheduled_.empty()) {
      std::vector<std::uint32_t> evicted;
      evicted.swap(descheduled_);
      for (const auto i : evicted) replace(t, i);
      if (auto r = host_->run_instant(t); !r) return tl::unexpected(r.error());
    }
    // Usage model none: the collectors of nodes whose pods changed report now.
    while (model_ == usage_model::none && cfg_.colocation && !changed_.empty()) {
      std::vector<std::uint32_t> nodes;
      nodes.swap(changed_);
      std::sort(nodes.begin(), nodes.end());
      for (const auto n : nodes) changed_mark_[n] = 0;
      report_nodes(t, nodes);
      if (auto r = host_->run_instant(t); !r) return tl::unexpected(r.error());
    }
    for (const auto n : changed_) changed_mark_[n] = 0;
    changed_.clear();
    host_wall_ += seconds_since(th);
    if (sample) sink_->mark([this, t] { observer_->sample(t); });
    if (opt_.progress && steady::now() - last_progress > std::chrono::milliseconds(200)) {
      last_progress = steady::now();
      opt_.progress(t - start_ms_, end_ms_ - start_ms_);
    }
  }
  observe(src_.end_of_trace(end_ms_));
  if (auto r = host_->run_instant(end_ms_); !r) return tl::unexpected(r.error());
  if (auto f = sink_->finish(); !f) return tl::unexpected(f.error());
  if (opt_.progress) opt_.progress(end_ms_ - start_ms_, end_ms_ - start_ms_);
  const double loop_wall = seconds_since(wall0);

  run_result out;
  out.summary = observer_->summary(summary_header_of());
  out.rows = observer_->rows();
  out.quota_rows = observer_->quota_rows();
  const double wall = seconds_since(wall0);
  const auto hs = host_->stats();
  auto& tm = out.timing;
  tm["wall_seconds"] = wall;
  tm["main_loop_seconds"] = loop_wall;
  tm["host_seconds"] = host_wall_;
  tm["host_us_per_event"] =
      sink_->next_offset() ? host_wall_ * 1e6 / static_cast<double>(sink_->next_offset()) : 0.0;
  tm["source_seconds"] = source_wall_;
  tm["log_append_seconds"] = sink_->append_seconds();
  tm["instants"] = hs.instants;
  tm["rounds"] = hs.rounds;
  tm["max_rounds_per_instant"] = hs.max_rounds_per_instant;
  tm["component_deliveries"] = hs.deliveries;
  tm["component_wakeups"] = hs.wakeups;
  tm["proposals_arbitrated"] = hs.proposals_arbitrated;
  tm["components"] = host_->component_count();
  tm["events"] = sink_->next_offset();
  tm["events_per_second"] = static_cast<double>(sink_->next_offset()) / wall;
  tm["virtual_seconds"] = static_cast<double>(end_ms_ - start_ms_) / 1000.0;
  tm["time_compression"] = static_cast<double>(end_ms_ - start_ms_) / 1000.0 / wall;
  tm["threads"] = opt_.threads;
  return out;
}

}  // namespace

result<run_result> run_simulation(const trace::trace_set& trace, const sim_config& cfg,
                                  const run_options& opt) {
  auto s = std::make_unique<component_sim>(trace, cfg, opt);
  auto r = s->run();
  if (r && opt.release_in_background) {
    // Tearing down 3,000 components and closing the log takes tens of milliseconds
    // (docs/results.md): the report's plots and files need none of it.
    struct joiner {
      explicit joiner(std::thread th) : t(std::move(th)) {}
      joiner(const joiner&) = delete;
      joiner& operator=(const joiner&) = delete;
      ~joiner() { t.join(); }
      std::thread t;
    };
    r->release =
        std::make_shared<joiner>(std::thread([sim = std::move(s)]() mutable { sim.reset(); }));
  }
  return r;
}

}  // namespace colony::sim
