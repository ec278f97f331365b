#include "sim/driver.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <map>
#include <mutex>
#include <optional>

#include <unordered_map>

#include <fmt/format.h>

#include "actors/admission/colocation_profile.hpp"
#include "actors/admission/qos.hpp"
#include "actors/entities/entity_actors.hpp"
#include "actors/entities/worker_pool.hpp"
#include "actors/koordlet/cpu_suppress.hpp"
#include "actors/koordlet/memory_evict.hpp"
#include "actors/quota/actor/quota_events.hpp"
#include "actors/quota/quota_resources.hpp"
#include "actors/scheduler/elastic_quota.hpp"
#include "actors/scheduler/framework.hpp"
#include "actors/scheduler/scheduler_config.hpp"
#include "actors/scheduler/scheduling_queue.hpp"
#include "actors/slo_controller/node_resource.hpp"
#include "bridges/trace/usage_curves.hpp"
#include "messages/codec.hpp"
#include "messages/names.hpp"
#include "sim/event_queue.hpp"
#include "sim/host_driver.hpp"
#include "sim/log_sink.hpp"
#include "sim/metrics_observer.hpp"
#include "stores/event_log.hpp"

namespace colony::sim {

namespace {

namespace fb = flatbuffers;
using steady = std::chrono::steady_clock;
using messages::byte_buffer;

// Kubelet's default maxPods: openb nodes publish no pod capacity.
constexpr std::int64_t pods_per_node = 110;
constexpr std::string_view pod_namespace = "default";
constexpr std::string_view trace_qos_label = "colony.sim/trace-qos";

double seconds_since(steady::time_point t0) {
  return std::chrono::duration<double>(steady::now() - t0).count();
}

// ---------------------------------------------------------------------------------------------
// A sim-local filter: openb's gpu_spec restricts a GPU pod to nodes of the listed GPU models
// (as a required node affinity on the model label would; the openb simulator does the same).
// ---------------------------------------------------------------------------------------------
class gpu_model_affinity final : public scheduler::plugin {
 public:
  static constexpr std::string_view plugin_name = "GPUModelAffinity";
  [[nodiscard]] std::string_view name() const noexcept override { return plugin_name; }
  [[nodiscard]] std::uint32_t points() const noexcept override { return scheduler::ep_filter; }
  // Reads the node's model and the pod's list, set before the cycle.
  [[nodiscard]] bool parallel_safe() const noexcept override { return true; }
  scheduler::status filter(scheduler::cycle_state&, const scheduler::pod_info&,
                           const scheduler::node_info& node, event_time) override {
    if (models_ == nullptr || models_->empty()) return {};
    const auto idx = static_cast<std::size_t>(&node - base_);
    if (idx >= node_models_.size()) return scheduler::status::unschedulable(reason_);
    for (const auto& m : *models_)
      if (m == node_models_[idx]) return {};
    return scheduler::status::unschedulable(reason_);
  }
  // Set before each cycle: the node array the cycle runs over and the pod's allowed models.
  void prepare(const scheduler::node_info* base, const std::vector<std::string>* models) {
    base_ = base;
    models_ = models;
  }
  std::vector<std::string> node_models_;

 private:
  static constexpr std::string_view reason_ = "node(s) didn't match the pod's GPU model (gpu_spec)";
  const scheduler::node_info* base_ = nullptr;
  const std::vector<std::string>* models_ = nullptr;
};

// CPU of every kind (cpu + batch-cpu + mid-cpu, milli-cores) and memory likewise (bytes): one
// scale for prod pods (cpu) and BE pods (batch-cpu) in allocation totals and quota rows.
std::int64_t all_cpu(const resource_list& r) {
  return r.cpu_milli + r.batch_cpu_milli + r.mid_cpu_milli;
}
std::int64_t all_memory(const resource_list& r) {
  return r.memory_bytes + r.batch_memory_bytes + r.mid_memory_bytes;
}

// ---------------------------------------------------------------------------------------------
// Entities of the driver.
// ---------------------------------------------------------------------------------------------
enum class pod_status : std::uint8_t { future, queued, parked, bound, done };
enum class pod_end : std::uint8_t { none, completed, evicted, withdrawn, rejected };

struct pod_rec {
  std::string key;
  std::uint32_t row = 0;
  pod_status status = pod_status::future;
  pod_end end = pod_end::none;
  wire::QoSClass qos = wire::QoSClass::None;
  wire::PriorityClass pclass = wire::PriorityClass::None;
  std::int32_t priority = 0;
  std::int32_t node = -1;
  std::int32_t attempts = 0;
  std::int64_t submit_ms = 0, bind_ms = -1, last_attempt_ms = 0, duration_ms = 0;
  std::uint64_t parked_at_hint = 0;
  std::uint32_t curve = 0;
  std::int64_t curve_shift_ms = 0;
  std::uint32_t complete_tag = 0;
  bool stays = false;      // pod_lifetime::running_stays and a Running row
  bool trace_be = false;   // the trace's qos column says BE
  resource_list requests;  // after admission (no pods count)
  scheduler::pod_info info;
  std::vector<scheduler::gpu_allocation> gpus;
  std::int64_t last_attempt_offset = -1;
  [[nodiscard]] bool batch() const { return pclass == wire::PriorityClass::Batch; }
  [[nodiscard]] std::int64_t cpu_req() const { return all_cpu(requests); }
  [[nodiscard]] std::int64_t mem_req() const { return all_memory(requests); }
};

struct node_rec {
  entities::node_state st;          // the node actor's state: fold of this node's events
  std::vector<std::uint32_t> pods;  // bound pods, ascending pod index
  std::string model;
  slo_controller::node_extended_resources published;
  std::optional<event_time> last_sync;
  std::int64_t be_cpu_milli = -1;  // BE CPU suppression in force (-1: none)
  koordlet::evictor_state mem_evictor;
  bool metric_dirty = false;
  bool reported_empty = false;  // the last report showed no pod
  std::int64_t last_cpu_used = 0, last_mem_used = 0, last_be_cpu_used = 0, last_be_mem_used = 0;
  std::vector<std::pair<std::uint32_t, std::pair<std::int64_t, std::int64_t>>> last_pod_usage;
  std::uint64_t frag_gen = ~0ull;
  double frag = 0;
  std::int64_t metric_time_ms = -1;
  // slo-controller result for this node while it hosts no pod, computed once at registration.
  // Its inputs are then constant: capacity and allocatable (fixed after registration), no pod,
  // node usage 0, and a NodeMetric as fresh as the round (the sim reports at the instant it
  // reconciles, so the degrade check never fires); the config is fixed for the run. Only
  // need_sync, which depends on the clock and the last write, is evaluated per round.
  struct empty_slo {
    slo_controller::node_resource_result r;
    slo_controller::prepared_node_resources prepared;
  };
  std::optional<empty_slo> idle_slo;
  // While the node hosts no pod, its NodeMetricReported and NodeBatchResourceUpdated records
  // differ from one round to the next only in scalars (event time, update time, causation,
  // offset): the first one built is kept and later ones are copies with those rewritten in
  // place, byte for byte what building them again gives (tested).
  std::vector<std::uint8_t> idle_metric_tpl, idle_batch_tpl;
};

// The slo-controller's view of a node: name, capacity and kubelet allocatable from its fold.
slo_controller::node_input slo_input_of(const node_rec& nr) {
  slo_controller::node_input ni;
  ni.name = nr.st.name;
  ni.capacity.cpu_milli = nr.st.capacity.cpu_milli;
  ni.capacity.memory_bytes = nr.st.capacity.memory_bytes;
  ni.allocatable.cpu_milli = nr.st.allocatable.cpu_milli;
  ni.allocatable.memory_bytes = nr.st.allocatable.memory_bytes;
  return ni;
}

struct usage_pt {
  std::int64_t cpu = 0, mem = 0;
};

// What one node's koordlet tick decided (computed in parallel, applied in node order).
struct tick_out {
  bool skip = false;  // idle node between its idle reports: nothing reported
  std::vector<std::pair<std::uint32_t, usage_pt>> pod_usage;
  std::int64_t cpu = 0, mem = 0, be_cpu = 0, be_mem = 0;
  bool batch_sync = false;
  bool idle_cached = false;  // the slo result is the node's cached idle one (node_rec::idle_slo)
  std::int64_t batch_cpu = 0, batch_mem = 0, mid_cpu = 0, mid_mem = 0;
  bool degraded = false;
  std::string_view cpu_policy, mem_policy;
  std::vector<slo_controller::term> terms;
  std::vector<std::string_view> term_resource;
  bool suppress = false;
  std::int64_t be_cpu_limit = -1;
  std::vector<koordlet::explain_term> suppress_terms;
  struct victim {
    std::uint32_t pod;
    koordlet::evict_feature feature;
    std::int64_t released_mem;
    std::int64_t node_mem_used, threshold_percent;
  };
  std::vector<victim> victims;
  koordlet::evictor_state next_evictor;
  // Back to the default state, keeping the vectors' capacity (the outputs are reused every tick).
  void reset() {
    skip = false;
    pod_usage.clear();
    cpu = mem = be_cpu = be_mem = 0;
    batch_sync = false;
    idle_cached = false;
    batch_cpu = batch_mem = mid_cpu = mid_mem = 0;
    degraded = false;
    cpu_policy = mem_policy = {};
    terms.clear();
    term_resource.clear();
    suppress = false;
    be_cpu_limit = -1;
    suppress_terms.clear();
    victims.clear();
    next_evictor = {};
  }
};

// FGD (Weng et al., ATC'23) task classes: pods grouped by (num_gpu, gpu_milli) with their
// popularity and median cpu / memory demand.
struct task_class {
  std::int32_t num_gpu = 0, gpu_milli = 0;
  std::int64_t cpu = 0, mem = 0;
  double weight = 0;
};

wire::KubeQoSClass to_wire(admission::kube_qos_class k) {
  switch (k) {
    case admission::kube_qos_class::guaranteed:
      return wire::KubeQoSClass::Guaranteed;
    case admission::kube_qos_class::burstable:
      return wire::KubeQoSClass::Burstable;
    case admission::kube_qos_class::best_effort:
      return wire::KubeQoSClass::BestEffort;
    default:
      return wire::KubeQoSClass::Unset;
  }
}

std::int64_t percentile(std::vector<std::int64_t>& v, double p) {
  if (v.empty()) return 0;
  // nearest-rank on the sorted values
  const auto rank = static_cast<std::size_t>(std::ceil(p / 100.0 * static_cast<double>(v.size())));
  return v[std::min(v.size() - 1, rank == 0 ? 0 : rank - 1)];
}

std::string_view eviction_reason_name(wire::EvictionReason r) {
  return wire::EnumNameEvictionReason(r);
}

// ---------------------------------------------------------------------------------------------
// The simulator.
// ---------------------------------------------------------------------------------------------
class simulator {
 public:
  simulator(const trace::trace_set& t, const sim_config& c, const run_options& o)
      : trace_(t), cfg_(c), opt_(o), pool_(std::max<std::size_t>(1, o.threads)) {}

  result<run_result> run();

 private:
  result<void> setup();
  void build_task_classes();
  // Emitting helpers.
  messages::header hdr(std::int64_t t, wire::EntityKind k, std::string_view key, std::int64_t cause,
                       std::string_view source) {
    messages::header h;
    h.time = event_time{t};
    h.kind = k;
    h.key = key;
    h.causation = cause;
    h.source = source;
    return h;
  }
  template <class T>
  log_offset emit(const messages::header& h, fb::Offset<T> payload) {
    constexpr auto type = wire::PayloadTraits<T>::enum_value;
    const log_offset off = sink_->emit(b_.finish(h, payload), type);
    book_quota(type);
    return off;
  }
  // The ElasticQuota book reads the events the sim emits, as the scheduler's plugin does in
  // cluster mode (actors/quota/actor/quota_events.hpp).
  void book_quota(wire::Payload type) {
    if (quota_ && quota::quota_book::wants(type)) (void)quota_->apply(sink_->last());
  }
  void apply_node(std::uint32_t n) { entities::apply(nodes_[n].st, sink_->last()); }
  result<void> maybe_flush() {
    if (sink_->should_flush()) return sink_->flush();
    return {};
  }

  void on_node_register(std::int64_t t, std::uint32_t n);
  result<void> on_pod_submit(std::int64_t t, std::uint32_t p);
  void on_pod_complete(std::int64_t t, std::uint32_t p, std::uint32_t tag);
  void on_pod_withdraw(std::int64_t t, std::uint32_t p);
  void scheduling_pass(std::int64_t t);
  void schedule_one(std::int64_t t, scheduler::queued_pod qp);
  void park(std::int64_t t, std::uint32_t p);
  void node_freed(std::int64_t t, std::uint32_t n);
  bool hint_fits(const pod_rec& p, std::uint32_t n) const;
  void release(std::int64_t t, std::uint32_t p);
  void koordlet_tick(std::int64_t t);
  void compute_tick(std::int64_t t, std::uint32_t n, tick_out& out) const;
  void slo_for_node(std::int64_t t, std::uint32_t n,
                    const std::vector<std::pair<std::uint32_t, usage_pt>>& usage, tick_out& out,
                    slo_controller::calculator_scratch& scratch) const;
  void apply_batch(std::int64_t t, std::uint32_t n, const tick_out& o, log_offset cause);
  void cache_idle_slo(std::int64_t t, std::uint32_t n);
  log_offset emit_metric_record(std::int64_t t, std::uint32_t i, const tick_out& o);
  void emit_batch_record(std::int64_t t, std::uint32_t n, const tick_out& o, log_offset cause);
  void publish_slo(std::int64_t t, std::uint32_t n, const slo_controller::node_resource_result& r,
                   const slo_controller::prepared_node_resources& prepared, tick_out& out) const;
  void refresh_scheduler_metrics();
  usage_pt pod_usage(const pod_rec& p, std::int64_t t) const;
  void sample_metrics(std::int64_t t);
  double node_frag(std::uint32_t n);
  // node_frag's inputs (GPUs, requested and allocatable cpu/memory) changed on node n.
  void mark_frag(std::uint32_t n) {
    if (frag_mark_[n] != 0) return;
    frag_mark_[n] = 1;
    frag_dirty_.push_back(n);
  }
  void check_capacity(std::uint32_t n);
  nlohmann::ordered_json summarize(std::uint64_t state_digest, std::uint64_t entities);
  void sample_quotas(std::int64_t t);
  nlohmann::ordered_json quota_summary() const;

  const trace::trace_set& trace_;
  const sim_config& cfg_;
  run_options opt_;
  usage_model model_ = usage_model::v2018_curves;
  pod_lifetime lifetime_ = pod_lifetime::trace;
  entities::worker_pool pool_;

  std::unique_ptr<stores::event_log> log_;
  std::unique_ptr<entities::actor_host> host_;
  std::unique_ptr<log_sink> sink_;
  std::unordered_map<std::string, std::uint32_t> key_index_;  // lookup only, never iterated
  messages::event_builder b_;
  event_queue q_;

  std::vector<node_rec> nodes_;
  std::vector<scheduler::node_info> snodes_;
  std::vector<pod_rec> pods_;
  std::vector<trace::usage_curve> curves_;
  std::vector<double> curve_mean_cpu_, curve_mean_mem_;
  std::vector<task_class> classes_;
  std::vector<tick_out> tick_outs_;  // one per node, reused every koordlet tick

  std::unique_ptr<scheduler::framework> fwk_;
  std::vector<std::string> skipped_plugins_;
  std::shared_ptr<gpu_model_affinity> affinity_;
  // ElasticQuota (only with quotas in the config): the book the plugin admits against.
  std::unique_ptr<quota::quota_book> quota_;
  struct quota_stat {
    double used_cpu_sum = 0, runtime_cpu_sum = 0, used_mem_sum = 0;
    std::int64_t used_cpu_peak = 0, request_cpu_peak = 0;
    std::uint64_t refusals = 0;  // scheduling attempts refused by the quota (PreFilter)
  };
  std::map<std::string, quota_stat> quota_stats_;  // by quota name
  std::vector<quota_row> quota_rows_;
  std::size_t quota_samples_ = 0;
  scheduler::cycle_state cycle_;
  std::unique_ptr<scheduler::scheduling_queue> queue_;
  std::string scheduler_name_ = "koord-scheduler";
  std::vector<std::uint32_t> parked_;  // pod indices, ascending insertion order
  std::uint64_t hint_seq_ = 0;
  bool wakeup_pending_ = false;
  std::int64_t wakeup_at_ = -1;

  std::int64_t end_ms_ = 0;
  std::int64_t start_ms_ = 0;
  slo_controller::colocation_strategy sync_strategy_;  // need_sync's: the same for every node
  bool qos_on_ = false;  // koordlet QoS runs (co-location and resource-threshold enabled)
  koordlet::resource_threshold_strategy kcfg_;
  koordlet::qos_manager_timing timing_;

  // Running totals.
  std::int64_t cpu_capacity_ = 0, mem_capacity_ = 0, gpu_total_ = 0;
  std::int64_t cpu_requested_ = 0, mem_requested_ = 0, cpu_allocated_ = 0, mem_allocated_ = 0;
  std::int64_t batch_cpu_alloc_ = 0, batch_mem_alloc_ = 0, gpu_allocated_ = 0;
  std::int64_t batch_cpu_allocatable_ = 0, batch_mem_allocatable_ = 0;
  std::int64_t cpu_used_ = 0, mem_used_ = 0, be_cpu_used_ = 0, be_mem_used_ = 0;
  std::int64_t running_ = 0, pending_ = 0;

  // Counters for the summary.
  std::uint64_t submitted_ = 0, scheduled_ = 0, rejected_ = 0, withdrawn_ = 0, completed_ = 0;
  std::uint64_t unschedulable_events_ = 0, bind_rejections_ = 0, cycles_ = 0, hint_skips_ = 0;
  std::uint64_t over_capacity_ = 0, negative_batch_ = 0, evictions_without_reason_ = 0;
  std::uint64_t batch_overcommitted_ = 0, metric_reports_ = 0, batch_updates_ = 0,
                suppress_updates_ = 0;
  std::map<std::string, std::uint64_t>
      unsched_reasons_;  // "plugin: reason" -> PodUnschedulable events
  std::map<std::string, std::uint64_t> pods_unsched_reason_;  // last reason of pods pending at end
  std::map<std::string, std::uint64_t> evicted_by_reason_;
  std::map<std::string, std::uint64_t> completed_by_phase_;
  std::map<std::string, std::uint64_t> admission_errors_;
  std::vector<std::int64_t> latency_ms_, latency_prod_ms_, latency_batch_ms_;
  std::vector<std::string> last_reason_;  // per pod (only for unschedulable)
  double sched_wall_ = 0, tick_wall_ = 0, admission_wall_ = 0;
  std::vector<metrics_row> rows_;
  double gpu_frag_sum_ = 0, gpu_alloc_ratio_sum_ = 0, gpu_frag_idle_sum_ = 0;
  std::vector<std::uint32_t> metric_dirty_;  // nodes whose metric_dirty is set
  std::vector<double> frag_;                 // per node, as of the last sample
  std::vector<char> frag_mark_;              // per node: in frag_dirty_
  std::vector<std::uint32_t> frag_dirty_;
  std::size_t samples_ = 0;
};

// ---------------------------------------------------------------------------------------------

result<void> simulator::setup() {
  model_ = opt_.usage_override.value_or(cfg_.usage);
  lifetime_ = opt_.lifetime_override.value_or(cfg_.lifetime);
  if (!trace_.openb_nodes || !trace_.openb_pods)
    return fail(errc::invalid_input,
                "the trace has no openb node list and pod list (colony sim replays openb)",
                trace_.dir);
  if (model_ == usage_model::v2018_curves) {
    if (!trace_.machine_usage || trace_.machine_usage->rows.empty())
      return fail(errc::invalid_input,
                  "usage model v2018-curves needs a v2018 machine_usage table in the trace (or use "
                  "--usage-model none)",
                  trace_.dir);
    curves_ = trace::extract_usage_curves(trace_.machine_usage->rows);
    if (curves_.empty())
      return fail(errc::invalid_input, "no usage curve could be extracted from machine_usage",
                  trace_.dir);
    for (const auto& c : curves_) {
      double sc = 0, sm = 0;
      for (std::size_t i = 0; i < c.size(); ++i) {
        sc += c.cpu[i];
        sm += c.memory[i];
      }
      const double n = static_cast<double>(std::max<std::size_t>(1, c.size()));
      curve_mean_cpu_.push_back(std::max(sc / n, 1e-3));
      curve_mean_mem_.push_back(std::max(sm / n, 1e-3));
    }
  } else if (model_ == usage_model::trace) {
    // openb and synthetic traces carry requests only; per-pod usage would come from v2018
    // container_usage keyed by container, which no openb pod maps to.
    return fail(
        errc::invalid_input,
        "usage model 'trace' needs per-pod usage, which this trace does not have (openb lists "
        "requests only); use v2018-curves or none",
        trace_.dir);
  }
  if (cfg_.colocation && cfg_.slo.colocation)
    sync_strategy_ = slo_controller::node_colocation_strategy(*cfg_.slo.colocation, {});
  if (cfg_.colocation && cfg_.slo.resource_threshold) {
    const auto& s = cfg_.slo.resource_threshold->cluster;
    kcfg_.enable = s.enable.value_or(false);
    if (s.cpu_suppress_threshold_percent)
      kcfg_.cpu_suppress_threshold_percent = *s.cpu_suppress_threshold_percent;
    kcfg_.cpu_suppress_min_percent = s.cpu_suppress_min_percent;
    if (s.cpu_suppress_policy && *s.cpu_suppress_policy == "cfsQuota")
      kcfg_.cpu_suppress_policy = koordlet::cpu_suppress_policy_type::cfs_quota;
    if (s.memory_evict_threshold_percent)
      kcfg_.memory_evict_threshold_percent = *s.memory_evict_threshold_percent;
    kcfg_.memory_evict_lower_percent = s.memory_evict_lower_percent;
    if (s.evict_enabled_priority_threshold)
      kcfg_.evict_enabled_priority_threshold =
          static_cast<std::int32_t>(*s.evict_enabled_priority_threshold);
    qos_on_ = kcfg_.enable && model_ != usage_model::none;
  }

  // Scheduler: profile 0 of the config, plus the sim's GPU model affinity filter.
  auto reg = scheduler::plugin_registry::with_builtin();
  auto built = scheduler::build_framework(cfg_.scheduler, 0, reg, opt_.seed);
  if (!built) return tl::unexpected(built.error());
  fwk_ = std::move(built->fwk);
  skipped_plugins_ = built->skipped_plugins;
  // From 4 threads up, Filter and Score fan out over the sim's workers (kube-scheduler's
  // Parallelizer); the decision does not depend on it (framework.hpp). Below that the hand-off
  // costs more than it saves: a cycle is ~100 us of work, and at 2 threads the worker competes
  // with the actor fold and the appender for the same cores (measured: 113 -> 196 us per
  // decision on the 2-core box).
  if (opt_.threads >= 4)
    fwk_->options().parallelizer =
        [this](std::size_t n, const std::function<void(std::size_t)>& fn) { pool_.run(n, fn); };
  affinity_ = std::make_shared<gpu_model_affinity>();
  fwk_->add(affinity_, 1, scheduler::ep_filter);
  if (!cfg_.quotas.empty()) {
    auto tree = std::make_shared<quota::quota_tree>();
    quota_ = std::make_unique<quota::quota_book>(tree);
    // PreFilter (admission against runtime) and Reserve/Unreserve (used), as the scheduler
    // component runs it; PostFilter preemption is not modelled (docs/sim.md).
    fwk_->add(std::make_shared<scheduler::elastic_quota>(std::move(tree)), 1,
              scheduler::ep_pre_filter | scheduler::ep_reserve);
    for (const auto& q : cfg_.quotas) quota_stats_[q.name];
  }
  scheduler::queue_options qo;
  qo.initial_backoff = duration_ms{cfg_.scheduler.pod_initial_backoff_seconds * 1000};
  qo.max_backoff = duration_ms{cfg_.scheduler.pod_max_backoff_seconds * 1000};
  queue_ = std::make_unique<scheduler::scheduling_queue>(std::move(qo));

  // Nodes.
  const auto& nrows = trace_.openb_nodes->rows;
  nodes_.resize(nrows.size());
  snodes_.resize(nrows.size());
  frag_.assign(nrows.size(), 0.0);
  frag_mark_.assign(nrows.size(), 0);
  affinity_->node_models_.resize(nrows.size());
  for (std::size_t i = 0; i < nrows.size(); ++i) {
    affinity_->node_models_[i] = nrows[i].gpu_model;
    nodes_[i].model = nrows[i].gpu_model;
    q_.push(0, action::node_register, static_cast<std::uint32_t>(i));
  }
  // Pods.
  {
    const std::int64_t step = cfg_.node_metric_report_interval_s * 1000;
    start_ms_ = std::max<std::int64_t>(0, opt_.from_ms) / step * step;
  }
  const auto& prows = trace_.openb_pods->rows;
  pods_.resize(prows.size());
  last_reason_.resize(prows.size());
  end_ms_ = 0;
  for (std::size_t i = 0; i < prows.size(); ++i) {
    auto& p = pods_[i];
    const auto& r = prows[i];
    p.row = static_cast<std::uint32_t>(i);
    p.key = std::string(pod_namespace) + "/" + r.name;
    const std::int64_t start = r.scheduled ? r.scheduled->value : r.creation.value;
    p.duration_ms = std::max<std::int64_t>(0, r.deletion.value - start);
    p.stays = lifetime_ == pod_lifetime::running_stays && r.phase == trace::openb_phase::running;
    p.trace_be = r.qos == trace::openb_qos::be;
    end_ms_ = std::max(end_ms_, r.deletion.value);
    if (!curves_.empty()) {
      p.curve = static_cast<std::uint32_t>(trace::pick_curve(curves_.size(), opt_.seed, r.name));
      const auto& c = curves_[p.curve];
      p.curve_shift_ms = static_cast<std::int64_t>(trace::pick_curve(
                             c.size(), opt_.seed ^ 0x9e3779b97f4a7c15ULL, r.name)) *
                         c.step_ms;
    }
    q_.push(std::max(r.creation.value, start_ms_), action::pod_submit,
            static_cast<std::uint32_t>(i));
    if (!p.stays)
      q_.push(std::max(r.deletion.value, start_ms_), action::pod_withdraw,
              static_cast<std::uint32_t>(i));
  }
  // A pod that stays runs (or waits) until the end of the run.
  for (auto& p : pods_)
    if (p.stays) p.duration_ms = end_ms_ + 1;
  if (opt_.until_ms >= 0) end_ms_ = std::min(end_ms_, opt_.until_ms);
  if (model_ != usage_model::none) q_.push(start_ms_, action::koordlet_tick);
  q_.push(start_ms_, action::metrics_sample);
  build_task_classes();
  return {};
}

void simulator::build_task_classes() {
  std::map<std::pair<std::int32_t, std::int32_t>, std::vector<const trace::openb_pod*>> groups;
  for (const auto& r : trace_.openb_pods->rows) groups[{r.num_gpu, r.gpu_milli}].push_back(&r);
  const double total = static_cast<double>(trace_.openb_pods->rows.size());
  for (auto& [k, v] : groups) {
    std::vector<std::int64_t> cpu, mem;
    for (const auto* r : v) {
      cpu.push_back(r->cpu_milli);
      mem.push_back(r->memory_bytes);
    }
    std::sort(cpu.begin(), cpu.end());
    std::sort(mem.begin(), mem.end());
    classes_.push_back({k.first, k.second, cpu[cpu.size() / 2], mem[mem.size() / 2],
                        static_cast<double>(v.size()) / total});
  }
}

void simulator::on_node_register(std::int64_t t, std::uint32_t n) {
  const auto& r = trace_.openb_nodes->rows[n];
  resource_list cap = r.capacity();
  cap.pods = pods_per_node;
  auto& fbb = b_.fbb();
  std::vector<fb::Offset<wire::GpuDevice>> gpus;
  for (std::int32_t g = 0; g < r.gpu; ++g)
    gpus.push_back(wire::CreateGpuDeviceDirect(fbb, g, r.gpu_model.c_str(), 100, 0, true));
  std::vector<std::pair<std::string, std::string>> labels;
  if (!r.gpu_model.empty()) labels.emplace_back("node.koordinator.sh/gpu-model", r.gpu_model);
  auto name = fbb.CreateString(r.name);
  auto rc = b_.resources(cap);
  auto ra = b_.resources(cap);
  auto lab = b_.key_values(labels);
  auto gv = gpus.empty() ? 0 : fbb.CreateVector(gpus);
  auto payload = wire::CreateNodeRegistered(fbb, name, rc, ra, lab, 0, gv, false);
  emit(hdr(t, wire::EntityKind::Node, r.name, -1, "trace"), payload);
  apply_node(n);
  auto& sn = snodes_[n];
  sn.name = r.name;
  sn.allocatable = cap;
  sn.gpus.clear();
  for (std::int32_t g = 0; g < r.gpu; ++g) {
    scheduler::gpu_device d;
    d.minor = g;
    sn.gpus.push_back(d);
  }
  ++sn.generation;
  mark_frag(n);
  cpu_capacity_ += cap.cpu_milli;
  mem_capacity_ += cap.memory_bytes;
  gpu_total_ += cap.gpu;
  if (cfg_.colocation && cfg_.slo.colocation && opt_.cache_idle_nodes) cache_idle_slo(t, n);
  if (model_ == usage_model::none && cfg_.colocation) {
    tick_out o;
    slo_controller::calculator_scratch scratch;
    slo_for_node(t, n, {}, o, scratch);
    if (o.batch_sync) apply_batch(t, n, o, -1);
  }
  node_freed(t, n);
}

result<void> simulator::on_pod_submit(std::int64_t t, std::uint32_t pi) {
  auto& p = pods_[pi];
  const auto& r = trace_.openb_pods->rows[p.row];
  const auto t0 = steady::now();
  // The pod as the trace gives it: one container with the row's requests; Guaranteed pods
  // also get limits = requests. The trace's qos column is kept as a label for profiles.
  admission::pod_spec spec;
  spec.pod_namespace = std::string(pod_namespace);
  spec.name = r.name;
  spec.uid = r.name;
  const std::string_view qos = trace::to_string(r.qos);
  spec.labels.emplace(std::string(trace_qos_label), std::string(qos));
  admission::container_spec c;
  c.name = "main";
  c.requests = r.requests();
  if (r.qos == trace::openb_qos::guaranteed) c.limits = c.requests;
  spec.containers.push_back(c);
  spec.status_qos_class = admission::get_kube_qos_class(spec);
  const resource_list limits = c.limits;

  auto& fbb = b_.fbb();
  {
    std::vector<fb::Offset<fb::String>> models;
    for (const auto& m : r.gpu_spec) models.push_back(fbb.CreateString(m));
    auto name = fbb.CreateString(p.key);
    auto uid = fbb.CreateString(spec.uid);
    auto req = b_.resources(c.requests);
    auto lim = b_.resources(limits);
    auto lab = b_.key_values({{std::string(trace_qos_label), std::string(qos)}});
    auto sched = fbb.CreateString("default-scheduler");
    auto mv = models.empty() ? 0 : fbb.CreateVector(models);
    auto payload = wire::CreatePodSubmitted(fbb, name, uid, req, lim, 0, false, 0, lab, 0, sched,
                                            to_wire(spec.status_qos_class), mv, 0, p.duration_ms);
    emit(hdr(t, wire::EntityKind::Pod, p.key, -1, "trace"), payload);
  }
  const log_offset submitted_at = sink_->next_offset() - 1;
  ++submitted_;
  p.submit_ms = t;
  admission::mutating_options mo;
  mo.seed = opt_.seed;
  auto m = admission::mutate_pod_on_create(spec, cfg_.profiles, nullptr, cfg_.priority_classes, mo);
  admission_wall_ += seconds_since(t0);
  if (!m) {
    auto payload = wire::CreatePodRejectedDirect(fbb, p.key.c_str(), m.error().message.c_str(),
                                                 m.error().where.c_str());
    emit(hdr(t, wire::EntityKind::Pod, p.key, static_cast<std::int64_t>(submitted_at), "admission"),
         payload);
    p.status = pod_status::done;
    p.end = pod_end::rejected;
    ++rejected_;
    ++admission_errors_[m.error().message];
    return {};
  }
  p.requests = m->requests;
  p.requests.pods = 0;
  p.qos = static_cast<wire::QoSClass>(m->koord_qos);
  p.pclass = static_cast<wire::PriorityClass>(m->koord_priority_class);
  p.priority = m->priority;
  {
    std::vector<std::pair<std::string, std::string>> labels(m->pod.labels.begin(),
                                                            m->pod.labels.end());
    std::vector<std::pair<std::string, std::string>> annos(m->pod.annotations.begin(),
                                                           m->pod.annotations.end());
    std::vector<fb::Offset<fb::String>> profs;
    for (const auto& s : m->applied_profiles) profs.push_back(fbb.CreateString(s));
    auto name = fbb.CreateString(p.key);
    auto pv = fbb.CreateVector(profs);
    auto pcn = fbb.CreateString(m->pod.priority_class_name);
    auto sn = fbb.CreateString(m->pod.scheduler_name);
    auto req = b_.resources(m->requests);
    auto lim = b_.resources(m->limits);
    auto lab = b_.key_values(labels);
    auto ann = b_.key_values(annos);
    auto payload = wire::CreatePodMutated(fbb, name, pv, p.qos, p.pclass, p.priority, pcn, sn, req,
                                          lim, lab, ann);
    emit(hdr(t, wire::EntityKind::Pod, p.key, static_cast<std::int64_t>(submitted_at), "admission"),
         payload);
  }
  // The scheduler's view of the pod.
  auto& info = p.info;
  info.key = p.key;
  info.priority = p.priority;
  info.priority_class_label = m->koord_priority_class;
  info.qos_label = m->koord_qos;
  switch (m->pod.status_qos_class) {
    case admission::kube_qos_class::guaranteed:
      info.kube_qos_class = scheduler::kube_qos::guaranteed;
      break;
    case admission::kube_qos_class::best_effort:
      info.kube_qos_class = scheduler::kube_qos::best_effort;
      break;
    default:
      info.kube_qos_class = scheduler::kube_qos::burstable;
      break;
  }
  info.requests = p.requests;
  info.limits = m->limits;
  if (quota_) {
    // The labels the ElasticQuota plugin reads (the scheduler component's set_quota_labels).
    const auto& l = m->pod.labels;
    auto q = l.find(std::string(names::label_quota_name));
    info.quota_name = q == l.end() ? std::string{} : q->second;
    auto np = l.find(std::string(names::label_preemptible));
    info.non_preemptible = np != l.end() && np->second == "false";
  }
  if (p.requests.gpu > 0) info.devices.koord_gpu = p.requests.gpu;
  info.requests.gpu_core = 0;  // DeviceShare converts koordinator.sh/gpu itself
  info.requests.gpu_memory_ratio = 0;
  p.status = pod_status::queued;
  cpu_requested_ += p.cpu_req();
  mem_requested_ += p.mem_req();
  ++pending_;
  queue_->add(info, event_time{t});
  return {};
}

void simulator::park(std::int64_t, std::uint32_t p) {
  pods_[p].status = pod_status::parked;
  pods_[p].parked_at_hint = hint_seq_;
  parked_.push_back(p);
}

// QueueingHint: a parked pod failed on every node; only a node whose free resources grew can
// change that. Checked with the filters' own arithmetic (NodeResourcesFit fits_request, GPU
// devices free, GPU model), so a retry that cannot succeed is not run.
bool simulator::hint_fits(const pod_rec& p, std::uint32_t n) const {
  const auto& sn = snodes_[n];
  const auto& a = sn.allocatable;
  const auto& u = sn.requested;
  const auto& r = p.requests;
  if (u.pods + 1 > a.pods) return false;
  if (r.cpu_milli > a.cpu_milli - u.cpu_milli) return false;
  if (r.memory_bytes > a.memory_bytes - u.memory_bytes) return false;
  if (r.batch_cpu_milli > a.batch_cpu_milli - u.batch_cpu_milli) return false;
  if (r.batch_memory_bytes > a.batch_memory_bytes - u.batch_memory_bytes) return false;
  if (r.mid_cpu_milli > a.mid_cpu_milli - u.mid_cpu_milli) return false;
  if (r.mid_memory_bytes > a.mid_memory_bytes - u.mid_memory_bytes) return false;
  if (r.gpu > 0) {
    const auto& row = trace_.openb_pods->rows[p.row];
    if (!row.gpu_spec.empty() &&
        std::find(row.gpu_spec.begin(), row.gpu_spec.end(), nodes_[n].model) == row.gpu_spec.end())
      return false;
    const std::int64_t per = r.gpu >= 100 ? 100 : r.gpu;
    const std::int64_t need = r.gpu >= 100 ? r.gpu / 100 : 1;
    std::int64_t ok = 0;
    for (const auto& g : sn.gpus)
      if (g.core_total - g.core_used >= per) ++ok;
    if (ok < need) return false;
  }
  return true;
}

void simulator::node_freed(std::int64_t t, std::uint32_t n) {
  ++hint_seq_;
  if (parked_.empty()) return;
  std::size_t w = 0;
  for (std::size_t i = 0; i < parked_.size(); ++i) {
    const std::uint32_t pi = parked_[i];
    auto& p = pods_[pi];
    if (p.status == pod_status::parked && hint_fits(p, n)) {
      p.status = pod_status::queued;
      const std::int64_t backoff = queue_->backoff_duration(p.attempts).value;
      q_.push(std::max(t, p.last_attempt_ms + backoff), action::pod_retry, pi);
      continue;
    }
    if (p.status == pod_status::parked) parked_[w++] = pi;
  }
  parked_.resize(w);
}

void simulator::scheduling_pass(std::int64_t t) {
  const auto t0 = steady::now();
  refresh_scheduler_metrics();
  if (quota_) quota_->flush();  // cluster total and pod association before the cycles
  while (auto qp = queue_->pop(event_time{t})) {
    schedule_one(t, std::move(*qp));
    if (sink_->should_flush()) permit_unchecked(sink_->flush());
  }
  if (queue_->backoff_size() > 0 && !wakeup_pending_) {
    wakeup_pending_ = true;
    q_.push(t + 1000, action::scheduler_wakeup);
  }
  sched_wall_ += seconds_since(t0);
}

void simulator::schedule_one(std::int64_t t, scheduler::queued_pod qp) {
  const std::uint32_t pi = key_index_.find(qp.pod.key)->second;
  auto& p = pods_[pi];
  ++cycles_;
  ++p.attempts;
  p.last_attempt_ms = t;
  const auto& row = trace_.openb_pods->rows[p.row];
  affinity_->prepare(snodes_.data(), row.num_gpu > 0 ? &row.gpu_spec : nullptr);
  auto d = fwk_->run_cycle(cycle_, qp.pod, snodes_, event_time{t});
  auto& fbb = b_.fbb();
  if (d.result == scheduler::outcome::scheduled) {
    const auto n = static_cast<std::uint32_t>(d.node_index);
    std::vector<fb::Offset<wire::PluginScore>> scores;
    for (const auto& s : d.scores)
      scores.push_back(wire::CreatePluginScore(
          fbb, fbb.CreateString(s.plugin), s.normalized,
          s.normalized == 0 ? 0 : s.weighted / std::max<std::int64_t>(1, s.normalized)));
    std::vector<fb::Offset<wire::NodeScore>> alts;
    for (const auto& a : d.alternatives)
      alts.push_back(wire::CreateNodeScore(fbb, fbb.CreateString(a.node), a.total));
    std::vector<fb::Offset<wire::DeviceAllocation>> devs;
    for (const auto& g : d.gpu_allocations)
      devs.push_back(wire::CreateDeviceAllocation(fbb, g.minor, g.core, g.memory_bytes));
    resource_list req = p.requests;
    req.pods = 1;
    auto pod = fbb.CreateString(p.key);
    auto node = fbb.CreateString(d.node);
    auto sched = fbb.CreateString(scheduler_name_);
    auto sv = fbb.CreateVector(scores);
    auto av = fbb.CreateVector(alts);
    auto rq = b_.resources(req);
    auto dv = fbb.CreateVector(devs);
    auto quota =
        qp.pod.quota_name.empty() ? fb::Offset<fb::String>{} : fbb.CreateString(qp.pod.quota_name);
    auto payload = wire::CreatePodBindProposed(
        fbb, pod, node, sched, p.attempts, d.total_score, sv, av, rq, dv, quota,
        static_cast<std::int32_t>(d.feasible_nodes), static_cast<std::int32_t>(d.evaluated_nodes));
    const log_offset proposal =
        emit(hdr(t, wire::EntityKind::Pod, p.key, -1, "scheduler"), payload);
    // The node actor arbitrates against its own state (fold of its events).
    std::vector<std::pair<std::int32_t, resource_list>> devices;
    for (const auto& g : d.gpu_allocations) {
      resource_list r;
      r.gpu_core = g.core;
      r.gpu_memory_bytes = g.memory_bytes;
      devices.emplace_back(g.minor, r);
    }
    const auto verdict = entities::arbitrate(nodes_[n].st, p.key, req, devices);
    if (!verdict.accepted) {
      auto rej = wire::CreatePodBindRejectedDirect(fbb, p.key.c_str(), d.node.c_str(),
                                                   static_cast<std::int64_t>(proposal),
                                                   verdict.reason.c_str(), scheduler_name_.c_str());
      emit(hdr(t, wire::EntityKind::Node, d.node, static_cast<std::int64_t>(proposal), "node"),
           rej);
      apply_node(n);
      ++bind_rejections_;
      // Our Reserve marked the pod used in its quota; the binding did not happen.
      if (quota_) (void)quota_->tree()->update_pod_is_assigned(p.key, false);
      queue_->requeue(std::move(qp), event_time{t}, true);
      return;
    }
    {
      std::vector<fb::Offset<wire::DeviceAllocation>> devs2;
      for (const auto& g : d.gpu_allocations)
        devs2.push_back(wire::CreateDeviceAllocation(fbb, g.minor, g.core, g.memory_bytes));
      auto pod = fbb.CreateString(p.key);
      auto node = fbb.CreateString(d.node);
      auto rq2 = b_.resources(req);
      auto dv2 = fbb.CreateVector(devs2);
      auto sched = fbb.CreateString(scheduler_name_);
      auto ok = wire::CreatePodScheduled(fbb, pod, node, static_cast<std::int64_t>(proposal), rq2,
                                         dv2, sched);
      const log_offset bound = emit(
          hdr(t, wire::EntityKind::Node, d.node, static_cast<std::int64_t>(proposal), "node"), ok);
      apply_node(n);
      auto started = wire::CreatePodStartedDirect(fbb, p.key.c_str(), d.node.c_str());
      emit(hdr(t, wire::EntityKind::Pod, p.key, static_cast<std::int64_t>(bound), "sim"), started);
    }
    scheduler::assume_pod(snodes_[n], qp.pod, d, event_time{t});
    mark_frag(n);
    auto& nr = nodes_[n];
    nr.pods.insert(std::lower_bound(nr.pods.begin(), nr.pods.end(), pi), pi);
    p.status = pod_status::bound;
    p.node = static_cast<std::int32_t>(n);
    p.bind_ms = t;
    p.gpus = d.gpu_allocations;
    ++scheduled_;
    --pending_;
    ++running_;
    cpu_allocated_ += p.cpu_req();
    mem_allocated_ += p.mem_req();
    batch_cpu_alloc_ += p.requests.batch_cpu_milli;
    batch_mem_alloc_ += p.requests.batch_memory_bytes;
    gpu_allocated_ += p.requests.gpu;
    const std::int64_t lat = t - p.submit_ms;
    latency_ms_.push_back(lat);
    (p.batch() ? latency_batch_ms_ : latency_prod_ms_).push_back(lat);
    check_capacity(n);
    ++p.complete_tag;
    q_.push(t + p.duration_ms, action::pod_complete, pi, p.complete_tag);
    if (model_ == usage_model::none && cfg_.colocation) {
      tick_out o;
      slo_controller::calculator_scratch scratch;
      slo_for_node(t, n, {}, o, scratch);
      if (o.batch_sync) apply_batch(t, n, o, -1);
    }
    return;
  }
  // Unschedulable (or an error, or a gang wait the sim does not model): record and park.
  std::vector<fb::Offset<wire::PluginReason>> reasons;
  std::string first;
  for (const auto& f : d.failures) {
    reasons.push_back(wire::CreatePluginReasonDirect(fbb, f.plugin.c_str(), f.reason.c_str(),
                                                     static_cast<std::int32_t>(f.nodes)));
    ++unsched_reasons_[f.plugin + ": " + f.reason];
    if (quota_ && f.plugin == scheduler::elastic_quota::plugin_name) {
      const std::string& qn = qp.pod.quota_name;
      auto it = quota_stats_.find(qn.empty() ? std::string("(no quota label)") : qn);
      if (it == quota_stats_.end())
        it = quota_stats_.emplace(qn.empty() ? "(no quota label)" : qn, quota_stat{}).first;
      ++it->second.refusals;
    }
    if (first.empty()) first = f.plugin + ": " + f.reason;
  }
  if (d.failures.empty()) {
    const std::string msg =
        d.message.empty() ? std::string(scheduler::to_string(d.result)) : d.message;
    reasons.push_back(wire::CreatePluginReasonDirect(fbb, "", msg.c_str(), 0));
    ++unsched_reasons_[msg];
    first = msg;
  }
  auto pod = fbb.CreateString(p.key);
  auto rv = fbb.CreateVector(reasons);
  auto sched = fbb.CreateString(scheduler_name_);
  auto payload = wire::CreatePodUnschedulable(fbb, pod, p.attempts, rv, sched);
  emit(hdr(t, wire::EntityKind::Pod, p.key, -1, "scheduler"), payload);
  ++unschedulable_events_;
  last_reason_[pi] = first;
  park(t, pi);
}

void simulator::check_capacity(std::uint32_t n) {
  const auto& s = nodes_[n].st;
  const auto& a = s.allocatable;
  const auto& u = s.allocated;
  bool over = u.cpu_milli > a.cpu_milli || u.memory_bytes > a.memory_bytes || u.gpu > a.gpu ||
              u.pods > a.pods;
  for (const auto& g : s.gpus) over = over || g.core_used > g.core;
  if (over) ++over_capacity_;
  if (u.batch_cpu_milli > s.colocation.batch_cpu_milli ||
      u.batch_memory_bytes > s.colocation.batch_memory_bytes)
    ++batch_overcommitted_;
}

void simulator::release(std::int64_t t, std::uint32_t pi) {
  auto& p = pods_[pi];
  const auto n = static_cast<std::uint32_t>(p.node);
  auto& nr = nodes_[n];
  nr.pods.erase(std::lower_bound(nr.pods.begin(), nr.pods.end(), pi));
  (void)scheduler::forget_pod(snodes_[n], p.key);
  mark_frag(n);
  --running_;
  cpu_allocated_ -= p.cpu_req();
  mem_allocated_ -= p.mem_req();
  cpu_requested_ -= p.cpu_req();
  mem_requested_ -= p.mem_req();
  batch_cpu_alloc_ -= p.requests.batch_cpu_milli;
  batch_mem_alloc_ -= p.requests.batch_memory_bytes;
  gpu_allocated_ -= p.requests.gpu;
  p.status = pod_status::done;
  if (model_ == usage_model::none && cfg_.colocation) {
    tick_out o;
    slo_controller::calculator_scratch scratch;
    slo_for_node(t, n, {}, o, scratch);
    if (o.batch_sync) apply_batch(t, n, o, -1);
  }
  node_freed(t, n);
}

void simulator::on_pod_complete(std::int64_t t, std::uint32_t pi, std::uint32_t tag) {
  auto& p = pods_[pi];
  if (p.status != pod_status::bound || tag != p.complete_tag) return;
  const auto& row = trace_.openb_pods->rows[p.row];
  wire::PodPhase phase = wire::PodPhase::Deleted;
  if (row.phase == trace::openb_phase::succeeded) phase = wire::PodPhase::Succeeded;
  if (row.phase == trace::openb_phase::failed) phase = wire::PodPhase::Failed;
  const auto& node = nodes_[static_cast<std::size_t>(p.node)].st.name;
  auto payload = wire::CreatePodFinishedDirect(b_.fbb(), p.key.c_str(), node.c_str(), phase);
  emit(hdr(t, wire::EntityKind::Pod, p.key, -1, "trace"), payload);
  apply_node(static_cast<std::uint32_t>(p.node));
  ++completed_;
  ++completed_by_phase_[std::string(wire::EnumNamePodPhase(phase))];
  p.end = pod_end::completed;
  release(t, pi);
}

void simulator::on_pod_withdraw(std::int64_t t, std::uint32_t pi) {
  auto& p = pods_[pi];
  if (p.status != pod_status::queued && p.status != pod_status::parked) return;
  // The trace deleted the pod before the sim could bind it.
  (void)queue_->remove(p.key);
  auto payload =
      wire::CreatePodFinishedDirect(b_.fbb(), p.key.c_str(), "", wire::PodPhase::Deleted);
  emit(hdr(t, wire::EntityKind::Pod, p.key, -1, "trace"), payload);
  p.status = pod_status::done;
  p.end = pod_end::withdrawn;
  ++withdrawn_;
  --pending_;
  cpu_requested_ -= p.cpu_req();
  mem_requested_ -= p.mem_req();
}

usage_pt simulator::pod_usage(const pod_rec& p, std::int64_t t) const {
  const std::int64_t creq = p.cpu_req(), mreq = p.mem_req();
  if (model_ == usage_model::none || curves_.empty()) return {creq, mreq};
  const auto& c = curves_[p.curve];
  const auto pt = trace::sample(c, t - p.bind_ms + p.curve_shift_ms);
  // The workload's own class (the trace's qos column), not the config's classification: the
  // same pod uses the same resources under every config.
  const usage_ratio& ratio = p.trace_be ? cfg_.batch_ratio : cfg_.prod_ratio;
  const double fc = std::clamp(ratio.cpu * pt.cpu / curve_mean_cpu_[p.curve], 0.0, 1.0);
  const double fm = std::clamp(ratio.memory * pt.memory / curve_mean_mem_[p.curve], 0.0, 1.0);
  return {static_cast<std::int64_t>(static_cast<double>(creq) * fc),
          static_cast<std::int64_t>(static_cast<double>(mreq) * fm)};
}

// slo-controller for one node: batch/mid from the NodeMetric (usage) or, with usage model none,
// from requests (pods use what they request).
void simulator::slo_for_node(std::int64_t t, std::uint32_t n,
                             const std::vector<std::pair<std::uint32_t, usage_pt>>& usage,
                             tick_out& out, slo_controller::calculator_scratch& scratch) const {
  if (!cfg_.colocation || !cfg_.slo.colocation) return;
  const auto& nr = nodes_[n];
  if (nr.pods.empty() && nr.idle_slo) {
    publish_slo(t, n, nr.idle_slo->r, nr.idle_slo->prepared, out);
    out.idle_cached = out.batch_sync;
    return;
  }
  const slo_controller::node_input ni = slo_input_of(nr);
  // The hot/cold split inputs (node_resource.hpp): the sim's pod index + 1 is the pod's key id,
  // one id per namespace/name as pod_key_interner would give, for pods and metrics alike.
  thread_local std::vector<slo_controller::pod_sample> pods;
  thread_local std::vector<slo_controller::pod_metric_sample> metrics;
  pods.clear();
  metrics.clear();
  slo_controller::node_metric_input m;
  m.update_time = event_time{t};
  std::int64_t ucpu = 0, umem = 0;
  for (std::size_t i = 0; i < nr.pods.size(); ++i) {
    const auto& p = pods_[nr.pods[i]];
    slo_controller::pod_sample pin;
    pin.key_id = static_cast<std::uint64_t>(nr.pods[i]) + 1;
    pin.priority = static_cast<slo_controller::priority_class>(p.pclass);
    pin.qos = static_cast<slo_controller::qos_class>(p.qos);
    pin.phase = slo_controller::pod_phase::running;
    pin.cpu_milli = p.requests.cpu_milli;
    pin.memory_bytes = p.requests.memory_bytes;
    slo_controller::pod_metric_sample pm;
    pm.key_id = pin.key_id;
    pm.priority = pin.priority;
    pm.qos = pin.qos;
    const usage_pt u = i < usage.size() ? usage[i].second : usage_pt{p.cpu_req(), p.mem_req()};
    pm.cpu_milli = u.cpu;
    pm.memory_bytes = u.mem;
    ucpu += u.cpu;
    umem += u.mem;
    pods.push_back(pin);
    metrics.push_back(pm);
  }
  m.node_usage.cpu_milli = ucpu;
  m.node_usage.memory_bytes = umem;
  const auto& cc = *cfg_.slo.colocation;
  const auto r =
      slo_controller::reconcile_node_resource(cc, ni, pods, &m, metrics, event_time{t}, scratch);
  publish_slo(t, n, r, slo_controller::prepare_node_resource(r, ni), out);
}

// need_sync and the outputs of one slo-controller round (shared by the computed and the cached
// idle-node results).
void simulator::publish_slo(std::int64_t t, std::uint32_t n,
                            const slo_controller::node_resource_result& r,
                            const slo_controller::prepared_node_resources& prepared,
                            tick_out& out) const {
  const auto& nr = nodes_[n];
  const auto sync = slo_controller::need_sync(sync_strategy_, nr.published, prepared.allocatable,
                                              nr.last_sync, event_time{t});
  if (!sync.need_sync) return;
  out.batch_sync = true;
  out.batch_cpu = prepared.allocatable.batch_cpu.value_or(0);
  out.batch_mem = prepared.allocatable.batch_memory.value_or(0);
  out.mid_cpu = prepared.allocatable.mid_cpu.value_or(0);
  out.mid_mem = prepared.allocatable.mid_memory.value_or(0);
  out.degraded = r.degraded;
  out.cpu_policy = r.batch_cpu.formula;
  out.mem_policy = r.batch_memory.formula;
  for (const auto* e : {&r.batch_cpu, &r.batch_memory}) {
    for (const auto& term : e->terms) {
      out.terms.push_back(term);
      out.term_resource.push_back(e->resource);
    }
  }
}

void simulator::cache_idle_slo(std::int64_t t, std::uint32_t n) {
  auto& nr = nodes_[n];
  const slo_controller::node_input ni = slo_input_of(nr);
  slo_controller::node_metric_input m;
  m.update_time = event_time{t};
  slo_controller::calculator_scratch scratch;
  node_rec::empty_slo c;
  c.r = slo_controller::reconcile_node_resource(*cfg_.slo.colocation, ni, {}, &m, event_time{t},
                                                scratch);
  c.prepared = slo_controller::prepare_node_resource(c.r, ni);
  nr.idle_slo = std::move(c);
}

void simulator::emit_batch_record(std::int64_t t, std::uint32_t n, const tick_out& o,
                                  log_offset cause) {
  auto& nr = nodes_[n];
  auto& fbb = b_.fbb();
  std::vector<fb::Offset<wire::Term>> terms;
  terms.reserve(o.terms.size());
  // Terms: "<resource>.<name>" (resource without its kubernetes.io/ prefix), value, unit; the
  // text only for textual terms (policy names, reasons): the numeric terms' descriptions are
  // fixed per name (slo_controller/node_resource.cpp) and would triple the record size.
  std::string name;
  for (std::size_t i = 0; i < o.terms.size(); ++i) {
    const auto& x = o.terms[i];
    std::string_view res = o.term_resource[i];
    if (res.substr(0, 14) == "kubernetes.io/") res.remove_prefix(14);
    name.assign(res);
    name += '.';
    name += x.name;
    auto n = fbb.CreateString(name);
    auto u = x.unit.empty() ? fb::Offset<fb::String>{}
                            : fbb.CreateSharedString(x.unit.data(), x.unit.size());
    auto tx =
        x.unit.empty() ? fbb.CreateString(x.text.data(), x.text.size()) : fb::Offset<fb::String>{};
    terms.push_back(wire::CreateTerm(fbb, n, x.value, u, tx));
  }
  auto node = fbb.CreateString(nr.st.name);
  auto cp = fbb.CreateString(o.cpu_policy.data(), o.cpu_policy.size());
  auto mp = fbb.CreateString(o.mem_policy.data(), o.mem_policy.size());
  auto tv = fbb.CreateVector(terms);
  auto payload = wire::CreateNodeBatchResourceUpdated(fbb, node, o.batch_cpu, o.batch_mem,
                                                      o.mid_cpu, o.mid_mem, cp, mp, o.degraded, tv);
  emit(hdr(t, wire::EntityKind::Node, nr.st.name,
           cause == no_offset ? -1 : static_cast<std::int64_t>(cause), "slo-controller"),
       payload);
}

void simulator::apply_batch(std::int64_t t, std::uint32_t n, const tick_out& o, log_offset cause) {
  auto& nr = nodes_[n];
  // An idle node's update is its template with the time and causation rewritten (see node_rec).
  const bool tpl_ok = o.idle_cached && cause != no_offset && t != 0;
  bool emitted = false;
  if (tpl_ok && !nr.idle_batch_tpl.empty()) {
    auto* env = sink_->begin_copy(nr.idle_batch_tpl);
    if (env->mutate_event_time_ms(t) && env->mutate_causation(static_cast<std::int64_t>(cause))) {
      sink_->commit_copy(wire::Payload::NodeBatchResourceUpdated);
      book_quota(wire::Payload::NodeBatchResourceUpdated);
      emitted = true;
    } else {
      sink_->abort_copy();
    }
  }
  if (!emitted) {
    emit_batch_record(t, n, o, cause);
    if (tpl_ok) {
      const auto b = sink_->last_bytes();
      nr.idle_batch_tpl.assign(b.begin(), b.end());
    }
  }
  apply_node(n);
  ++batch_updates_;
  if (o.batch_cpu < 0 || o.batch_mem < 0) ++negative_batch_;
  auto& a = snodes_[n].allocatable;
  const bool grew = o.batch_cpu > a.batch_cpu_milli || o.batch_mem > a.batch_memory_bytes ||
                    o.mid_cpu > a.mid_cpu_milli || o.mid_mem > a.mid_memory_bytes;
  batch_cpu_allocatable_ += o.batch_cpu - a.batch_cpu_milli;
  batch_mem_allocatable_ += o.batch_mem - a.batch_memory_bytes;
  a.batch_cpu_milli = o.batch_cpu;
  a.batch_memory_bytes = o.batch_mem;
  a.mid_cpu_milli = o.mid_cpu;
  a.mid_memory_bytes = o.mid_mem;
  ++snodes_[n].generation;
  nr.published.batch_cpu = o.batch_cpu;
  nr.published.batch_memory = o.batch_mem;
  nr.published.mid_cpu = o.mid_cpu;
  nr.published.mid_memory = o.mid_mem;
  nr.last_sync = event_time{t};
  if (grew) node_freed(t, n);
}

void simulator::compute_tick(std::int64_t t, std::uint32_t n, tick_out& out) const {
  thread_local slo_controller::calculator_scratch scratch;
  const auto& nr = nodes_[n];
  const std::int64_t idle_ms = cfg_.idle_node_report_interval_s * 1000;
  if (idle_ms > 0 && nr.pods.empty() && nr.reported_empty && t % idle_ms != 0) {
    out.skip = true;
    return;
  }
  out.pod_usage.reserve(nr.pods.size());
  std::int64_t be_cpu = 0;
  for (const auto pi : nr.pods) {
    const auto& p = pods_[pi];
    usage_pt u = pod_usage(p, t);
    out.pod_usage.emplace_back(pi, u);
    if (p.qos == wire::QoSClass::BE) be_cpu += u.cpu;
  }
  // BE CPU suppression in force caps what BE pods can use (scaled down proportionally).
  if (nr.be_cpu_milli >= 0 && be_cpu > nr.be_cpu_milli && be_cpu > 0) {
    const double f = static_cast<double>(nr.be_cpu_milli) / static_cast<double>(be_cpu);
    for (auto& [pi, u] : out.pod_usage)
      if (pods_[pi].qos == wire::QoSClass::BE)
        u.cpu = static_cast<std::int64_t>(static_cast<double>(u.cpu) * f);
  }
  bool has_be = false;
  for (const auto& [pi, u] : out.pod_usage) {
    out.cpu += u.cpu;
    out.mem += u.mem;
    if (pods_[pi].qos == wire::QoSClass::BE) {
      out.be_cpu += u.cpu;
      out.be_mem += u.mem;
      has_be = true;
    }
  }
  slo_for_node(t, n, out.pod_usage, out, scratch);
  out.next_evictor = nr.mem_evictor;
  if (!qos_on_ || !has_be) return;
  // koordlet QoS on nodes that host BE pods.
  koordlet::node_info kn;
  kn.name = nr.st.name;
  kn.capacity = nr.st.capacity;
  kn.allocatable = nr.st.effective_allocatable();
  std::vector<koordlet::pod_info> kp;
  kp.reserve(out.pod_usage.size());
  for (const auto& [pi, u] : out.pod_usage) {
    const auto& p = pods_[pi];
    koordlet::pod_info k;
    k.ns = std::string(pod_namespace);
    k.name = trace_.openb_pods->rows[p.row].name;
    k.uid = k.name;
    k.qos = static_cast<koordlet::qos_class>(p.qos);
    k.kube_qos_class = koordlet::kube_qos::burstable;
    k.priority = p.priority;
    k.priority_class_label = static_cast<koordlet::priority_class>(p.pclass);
    k.phase = koordlet::pod_phase::running;
    k.creation_time = event_time{p.submit_ms};
    k.requests = p.requests;
    k.cpu_used_cores = static_cast<double>(u.cpu) / 1000.0;
    k.memory_used_bytes = static_cast<double>(u.mem);
    kp.push_back(std::move(k));
  }
  if (cfg_.gates.be_cpu_suppress) {
    auto s = koordlet::calculate_be_suppress_cpu(kn, static_cast<double>(out.cpu) / 1000.0, kp, {},
                                                 {}, kcfg_.cpu_suppress_threshold_percent,
                                                 kcfg_.cpu_suppress_min_percent);
    const std::int64_t be = std::max<std::int64_t>(0, s.suppress_milli);
    if (nr.be_cpu_milli < 0 || std::llabs(be - nr.be_cpu_milli) * 100 >= nr.st.capacity.cpu_milli) {
      out.suppress = true;
      out.be_cpu_limit = be;
      out.suppress_terms = std::move(s.explain);
    }
  }
  if (cfg_.gates.be_memory_evict || cfg_.gates.memory_evict) {
    koordlet::memory_evict_input in;
    in.node = &kn;
    in.pods = kp;
    in.node_memory_used_bytes = static_cast<double>(out.mem);
    auto d = koordlet::memory_evict(in, kcfg_, cfg_.gates, timing_, nr.mem_evictor, event_time{t});
    out.next_evictor = d.next_state;
    for (const auto& v : d.round.victims) {
      if (v.already_evicted) continue;
      out.victims.push_back({out.pod_usage[v.pod].first, v.feature, v.released_used.memory_bytes,
                             out.mem, kcfg_.memory_evict_threshold_percent.value_or(70)});
    }
  }
}

log_offset simulator::emit_metric_record(std::int64_t t, std::uint32_t i, const tick_out& o) {
  auto& fbb = b_.fbb();
  const auto& nr = nodes_[i];
  const std::int64_t interval_ms = cfg_.node_metric_report_interval_s * 1000;
  // NodeMetricReported (koordlet).
  std::vector<fb::Offset<wire::PodMetric>> pms;
  pms.reserve(o.pod_usage.size());
  for (const auto& [pi, u] : o.pod_usage) {
    resource_list r;
    r.cpu_milli = u.cpu;
    r.memory_bytes = u.mem;
    auto ru = b_.resources(r);
    pms.push_back(wire::CreatePodMetric(fbb, fbb.CreateString(pods_[pi].key), ru, pods_[pi].pclass,
                                        pods_[pi].qos));
  }
  resource_list nu;
  nu.cpu_milli = o.cpu;
  nu.memory_bytes = o.mem;
  auto node = fbb.CreateString(nr.st.name);
  auto nuo = b_.resources(nu);
  auto suo = b_.resources(resource_list{});
  auto pv = fbb.CreateVector(pms);
  auto payload =
      wire::CreateNodeMetricReported(fbb, node, t, 300000, interval_ms, nuo, suo, 0, 0, pv, 0);
  return emit(hdr(t, wire::EntityKind::Node, nr.st.name, -1, "koordlet"), payload);
}

void simulator::koordlet_tick(std::int64_t t) {
  const auto t0 = steady::now();
  const std::size_t n = nodes_.size();
  auto& outs = tick_outs_;
  outs.resize(n);
  pool_.run(n, [&](std::size_t i) {
    outs[i].reset();
    compute_tick(t, static_cast<std::uint32_t>(i), outs[i]);
  });
  cpu_used_ = mem_used_ = be_cpu_used_ = be_mem_used_ = 0;
  auto& fbb = b_.fbb();
  for (std::uint32_t i = 0; i < n; ++i) {
    auto& nr = nodes_[i];
    if (!nr.st.ready) continue;
    auto& o = outs[i];
    if (o.skip) continue;
    nr.reported_empty = o.pod_usage.empty();
    cpu_used_ += o.cpu;
    mem_used_ += o.mem;
    be_cpu_used_ += o.be_cpu;
    be_mem_used_ += o.be_mem;
    // NodeMetricReported (koordlet). An idle node's report is its template with the times
    // rewritten (see node_rec).
    const bool tpl_ok = opt_.cache_idle_nodes && o.pod_usage.empty() && t != 0;
    log_offset metric = no_offset;
    if (tpl_ok && !nr.idle_metric_tpl.empty()) {
      auto* env = sink_->begin_copy(nr.idle_metric_tpl);
      auto* m = static_cast<wire::NodeMetricReported*>(env->mutable_payload());
      if (env->mutate_event_time_ms(t) && m->mutate_update_time_ms(t))
        metric = sink_->commit_copy(wire::Payload::NodeMetricReported);
      else
        sink_->abort_copy();
    }
    if (metric == no_offset) {
      metric = emit_metric_record(t, i, o);
      if (tpl_ok) {
        const auto b = sink_->last_bytes();
        nr.idle_metric_tpl.assign(b.begin(), b.end());
      }
    }
    apply_node(i);
    ++metric_reports_;
    nr.last_cpu_used = o.cpu;
    nr.last_mem_used = o.mem;
    nr.last_pod_usage.clear();
    for (const auto& [pi, u] : o.pod_usage) nr.last_pod_usage.push_back({pi, {u.cpu, u.mem}});
    if (!nr.metric_dirty) {
      nr.metric_dirty = true;
      metric_dirty_.push_back(static_cast<std::uint32_t>(i));
    }
    nr.metric_time_ms = t;
    if (o.batch_sync) apply_batch(t, i, o, metric);
    if (o.suppress) {
      std::vector<fb::Offset<wire::Term>> terms;
      for (const auto& x : o.suppress_terms)
        terms.push_back(wire::CreateTermDirect(
            fbb, std::string(x.name).c_str(), static_cast<std::int64_t>(x.value),
            std::string(x.unit).c_str(), std::string(x.text).c_str()));
      const char* pol = kcfg_.cpu_suppress_policy == koordlet::cpu_suppress_policy_type::cfs_quota
                            ? "cfsQuota"
                            : "cpuset";
      auto node = fbb.CreateString(nr.st.name);
      auto policy = fbb.CreateString(pol);
      auto iv = fbb.CreateVector(terms);
      auto bs = wire::CreateBeSuppressed(fbb, node, policy, o.be_cpu_limit, 0, iv);
      emit(
          hdr(t, wire::EntityKind::Node, nr.st.name, static_cast<std::int64_t>(metric), "koordlet"),
          bs);
      apply_node(i);
      nr.be_cpu_milli = o.be_cpu_limit;
      ++suppress_updates_;
    }
    nr.mem_evictor = o.next_evictor;
    for (const auto& v : o.victims) {
      auto& p = pods_[v.pod];
      if (p.status != pod_status::bound) continue;
      const auto reason = wire::EvictionReason::MemoryEvict;
      const std::string msg = koordlet::evict_round::reason(v.feature);
      std::vector<fb::Offset<wire::Term>> terms;
      terms.push_back(wire::CreateTermDirect(fbb, "nodeMemoryUsed", v.node_mem_used, "bytes", ""));
      terms.push_back(wire::CreateTermDirect(fbb, "nodeMemoryCapacity", nr.st.capacity.memory_bytes,
                                             "bytes", ""));
      terms.push_back(wire::CreateTermDirect(fbb, "memoryEvictThresholdPercent",
                                             v.threshold_percent, "percent", ""));
      terms.push_back(wire::CreateTermDirect(fbb, "podMemoryUsed", v.released_mem, "bytes", ""));
      resource_list rel = p.requests;
      auto pod = fbb.CreateString(p.key);
      auto node = fbb.CreateString(nr.st.name);
      auto message = fbb.CreateString(msg);
      auto iv = fbb.CreateVector(terms);
      auto relo = b_.resources(rel);
      auto ev = wire::CreatePodEvicted(fbb, pod, node, reason, message, iv, relo);
      emit(hdr(t, wire::EntityKind::Pod, p.key, static_cast<std::int64_t>(metric), "koordlet"), ev);
      apply_node(i);
      if (msg.empty()) ++evictions_without_reason_;
      ++evicted_by_reason_[std::string(eviction_reason_name(reason)) + " (" +
                           std::string(koordlet::to_string(v.feature)) + ")"];
      p.end = pod_end::evicted;
      release(t, v.pod);
    }
    if (sink_->should_flush()) permit_unchecked(sink_->flush());
  }
  tick_wall_ += seconds_since(t0);
}

// The scheduler reads the latest NodeMetric of each node at its next cycle (LoadAwareScheduling).
void simulator::refresh_scheduler_metrics() {
  // Only the nodes that reported since the last pass (a node_rec is several KB, so scanning
  // every node's flag before every scheduling pass cost more than the updates themselves).
  std::sort(metric_dirty_.begin(), metric_dirty_.end());
  for (const std::uint32_t i : metric_dirty_) {
    auto& nr = nodes_[i];
    nr.metric_dirty = false;
    auto& sn = snodes_[i];
    if (!sn.metric) sn.metric.emplace();
    auto& m = *sn.metric;
    m.update_time = event_time{nr.metric_time_ms};
    m.report_interval_seconds = cfg_.node_metric_report_interval_s;
    m.node_usage = {};
    m.node_usage.cpu_milli = nr.last_cpu_used;
    m.node_usage.memory_bytes = nr.last_mem_used;
    m.pods.resize(nr.last_pod_usage.size());
    for (std::size_t k = 0; k < nr.last_pod_usage.size(); ++k) {
      const auto& [pi, u] = nr.last_pod_usage[k];
      auto& pm = m.pods[k];
      pm.key = pods_[pi].key;
      pm.priority = static_cast<scheduler::priority_class>(pods_[pi].pclass);
      pm.usage = {};
      pm.usage.cpu_milli = u.first;
      pm.usage.memory_bytes = u.second;
    }
    ++sn.generation;
  }
  metric_dirty_.clear();
}

double simulator::node_frag(std::uint32_t n) {
  auto& nr = nodes_[n];
  const auto& sn = snodes_[n];
  if (sn.gpus.empty()) return 0;
  if (nr.frag_gen == sn.generation) return nr.frag;
  const std::int64_t cpu_free = sn.allocatable.cpu_milli - sn.requested.cpu_milli;
  const std::int64_t mem_free = sn.allocatable.memory_bytes - sn.requested.memory_bytes;
  double f = 0;
  for (const auto& c : classes_) {
    double free_total = 0, frag = 0;
    std::int64_t whole_free = 0;
    double best_free = 0;
    for (const auto& g : sn.gpus) {
      const double fr = static_cast<double>(g.core_total - g.core_used) / 100.0;
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
      for (const auto& g : sn.gpus) {
        const double fr = static_cast<double>(g.core_total - g.core_used) / 100.0;
        if (fr + 1e-9 < share) frag += fr;
      }
    }
    f += c.weight * frag;
  }
  nr.frag = f;
  nr.frag_gen = sn.generation;
  return f;
}

void simulator::sample_metrics(std::int64_t t) {
  metrics_row r;
  r.time_ms = t;
  r.pods_running = running_;
  r.pods_pending = pending_;
  r.cpu_capacity = cpu_capacity_;
  r.mem_capacity = mem_capacity_;
  r.cpu_requested = cpu_requested_;
  r.mem_requested = mem_requested_;
  r.cpu_allocated = cpu_allocated_;
  r.mem_allocated = mem_allocated_;
  if (model_ == usage_model::none) {
    r.cpu_used = cpu_allocated_;
    r.mem_used = mem_allocated_;
    r.batch_cpu_used = batch_cpu_alloc_;
    r.batch_mem_used = batch_mem_alloc_;
  } else {
    r.cpu_used = cpu_used_;
    r.mem_used = mem_used_;
    r.batch_cpu_used = be_cpu_used_;
    r.batch_mem_used = be_mem_used_;
  }
  r.batch_cpu_allocatable = batch_cpu_allocatable_;
  r.batch_mem_allocatable = batch_mem_allocatable_;
  r.batch_cpu_allocated = batch_cpu_alloc_;
  r.batch_mem_allocated = batch_mem_alloc_;
  r.gpu_total = gpu_total_;
  r.gpu_allocated = gpu_allocated_;
  // Only nodes whose GPUs or requests changed since the last sample are recomputed; the sum runs
  // over every node in index order, as before.
  for (const std::uint32_t n : frag_dirty_) {
    frag_[n] = node_frag(n);
    frag_mark_[n] = 0;
  }
  frag_dirty_.clear();
  double frag = 0;
  for (const double v : frag_) frag += v;
  r.gpu_frag = frag;
  std::int64_t ev = 0;
  for (const auto& [k, v] : evicted_by_reason_) ev += static_cast<std::int64_t>(v);
  r.evictions = ev;
  r.unschedulable = static_cast<std::int64_t>(unschedulable_events_);
  rows_.push_back(r);
  if (quota_) sample_quotas(t);
  if (gpu_total_ > 0) {
    gpu_alloc_ratio_sum_ += static_cast<double>(gpu_allocated_) / static_cast<double>(gpu_total_);
    // frag is in devices; gpu_total_ is x100 per device.
    gpu_frag_sum_ += frag * 10000.0 / static_cast<double>(gpu_total_);
    const double idle = static_cast<double>(gpu_total_ - gpu_allocated_) / 100.0;
    if (idle > 0) gpu_frag_idle_sum_ += frag * 100.0 / idle;
  }
  ++samples_;
  if (opt_.on_sample) opt_.on_sample(t, sink_->next_offset());
}

// The quota controller's view at a metrics sample: statuses that changed since the last sample
// become QuotaRuntimeUpdated decisions (Koordinator's controller updates status periodically
// too), and every quota gets a quota.csv row.
void simulator::sample_quotas(std::int64_t t) {
  quota_->flush();
  auto& tree = *quota_->tree();
  for (const auto& st : tree.refresh()) {
    emit(hdr(t, wire::EntityKind::ElasticQuota, st.name, -1, "quota-controller"),
         quota::quota_runtime_updated(b_, st));
  }
  // A quota row's CPU and memory are all_cpu / all_memory, so a quota of BE pods (batch-cpu)
  // and one of prod pods (cpu) read on one scale.
  const auto cpu = all_cpu;
  const auto mem = all_memory;
  for (const auto& q : cfg_.quotas) {
    const auto* st = tree.status(q.name);
    if (st == nullptr) continue;
    const resource_list runtime = quota::masked(st->runtime, st->runtime_keys);
    quota_row r;
    r.time_ms = t;
    r.quota = q.name;
    r.min_cpu = cpu(q.min);
    r.max_cpu = cpu(q.max);
    r.runtime_cpu = cpu(runtime);
    r.used_cpu = cpu(st->used);
    r.request_cpu = cpu(st->request);
    r.used_memory = mem(st->used);
    r.runtime_memory = mem(runtime);
    auto& s = quota_stats_[q.name];
    s.used_cpu_sum += static_cast<double>(r.used_cpu);
    s.runtime_cpu_sum += static_cast<double>(r.runtime_cpu);
    s.used_mem_sum += static_cast<double>(r.used_memory);
    s.used_cpu_peak = std::max(s.used_cpu_peak, r.used_cpu);
    s.request_cpu_peak = std::max(s.request_cpu_peak, r.request_cpu);
    quota_rows_.push_back(std::move(r));
  }
  ++quota_samples_;
}

nlohmann::ordered_json simulator::quota_summary() const {
  nlohmann::ordered_json j;
  if (!quota_) {
    j["quotas"] = 0;
    j["note"] = "the config defines no ElasticQuota";
    return j;
  }
  j["quotas"] = cfg_.quotas.size();
  j["note"] =
      "CPU = cpu + batch-cpu + mid-cpu in milli-cores, memory likewise in bytes; averages over the "
      "metrics samples";
  const double n = quota_samples_ == 0 ? 1.0 : static_cast<double>(quota_samples_);
  nlohmann::ordered_json by = nlohmann::ordered_json::array();
  for (const auto& [name, s] : quota_stats_) {
    nlohmann::ordered_json q;
    q["name"] = name;
    const auto* spec = quota_->tree()->spec(name);
    if (spec != nullptr) {
      q["parent"] = spec->parent.empty() ? "koordinator-root-quota" : spec->parent;
      q["min_cpu"] = all_cpu(spec->min);
      q["max_cpu"] = all_cpu(spec->max);
    }
    const auto* st = quota_->tree()->status(name);
    q["used_cpu_avg"] = std::llround(s.used_cpu_sum / n);
    q["used_cpu_peak"] = s.used_cpu_peak;
    q["runtime_cpu_avg"] = std::llround(s.runtime_cpu_sum / n);
    if (st != nullptr) {
      const resource_list rt = quota::masked(st->runtime, st->runtime_keys);
      q["runtime_cpu_at_end"] = all_cpu(rt);
    }
    q["request_cpu_peak"] = s.request_cpu_peak;
    q["used_memory_avg"] = std::llround(s.used_mem_sum / n);
    q["attempts_refused"] = s.refusals;
    by.push_back(std::move(q));
  }
  j["by_quota"] = std::move(by);
  return j;
}

result<run_result> simulator::run() {
  const auto wall0 = steady::now();
  if (auto s = setup(); !s) return tl::unexpected(s.error());
  for (std::uint32_t i = 0; i < pods_.size(); ++i) key_index_.emplace(pods_[i].key, i);
  if (key_index_.size() != pods_.size())
    return fail(errc::invalid_input, "the pod list names a pod twice", trace_.openb_pods->file);
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
  host_ = std::make_unique<entities::actor_host>(std::max<std::size_t>(1, opt_.threads));
  sink_ = std::make_unique<log_sink>(log_.get(), host_.get());

  // The configuration in force, as observation events.
  {
    auto& fbb = b_.fbb();
    const std::string sched = cfg_.scheduler_yaml;
    emit(hdr(0, wire::EntityKind::Cluster, "slo-controller", -1, "sim"),
         wire::CreateConfigUpdatedDirect(fbb, "slo-controller-config",
                                         "koordinator-system/slo-controller-config",
                                         cfg_.slo_configmap_json.c_str(), false));
    emit(hdr(0, wire::EntityKind::Cluster, "admission", -1, "sim"),
         wire::CreateConfigUpdatedDirect(fbb, "ClusterColocationProfile", cfg_.name.c_str(),
                                         cfg_.profiles_yaml.c_str(), false));
    emit(hdr(0, wire::EntityKind::Cluster, "scheduler", -1, "sim"),
         wire::CreateConfigUpdatedDirect(fbb, "KubeSchedulerConfiguration", cfg_.name.c_str(),
                                         sched.c_str(), false));
    // The ElasticQuota objects of the config, as observations (sorted by name).
    std::vector<const quota::quota_spec*> qs;
    for (const auto& q : cfg_.quotas) qs.push_back(&q);
    std::sort(qs.begin(), qs.end(), [](auto* a, auto* b) { return a->name < b->name; });
    for (const auto* q : qs)
      emit(hdr(0, wire::EntityKind::ElasticQuota, q->name, -1, "sim"),
           quota::quota_upserted(b_, *q));
  }

  const std::int64_t interval_ms = cfg_.node_metric_report_interval_s * 1000;
  const std::int64_t metrics_ms = cfg_.metrics_interval_s * 1000;
  auto last_progress = steady::now();
  std::int64_t now = 0;
  while (!q_.empty()) {
    if (q_.top().time_ms > end_ms_) break;
    now = q_.top().time_ms;
    while (!q_.empty() && q_.top().time_ms == now) {
      const auto a = q_.pop();
      switch (a.what) {
        case action::node_register:
          on_node_register(now, a.index);
          break;
        case action::pod_submit:
          if (auto s = on_pod_submit(now, a.index); !s) return tl::unexpected(s.error());
          break;
        case action::pod_complete:
          on_pod_complete(now, a.index, a.tag);
          break;
        case action::pod_withdraw:
          on_pod_withdraw(now, a.index);
          break;
        case action::pod_retry:
          if (pods_[a.index].status == pod_status::queued)
            queue_->add(pods_[a.index].info, event_time{now});
          break;
        case action::scheduler_wakeup:
          wakeup_pending_ = false;
          break;
        case action::koordlet_tick:
          koordlet_tick(now);
          if (now + interval_ms <= end_ms_) q_.push(now + interval_ms, action::koordlet_tick);
          break;
        case action::metrics_sample:
          // Sampled after everything else at this instant (pushed with a later sequence).
          sample_metrics(now);
          if (now + metrics_ms <= end_ms_) q_.push(now + metrics_ms, action::metrics_sample);
          break;
      }
      if (auto f = maybe_flush(); !f) return tl::unexpected(f.error());
    }
    if (queue_->active_size() > 0 || queue_->backoff_size() > 0) scheduling_pass(now);
    if (auto f = maybe_flush(); !f) return tl::unexpected(f.error());
    if (opt_.progress && steady::now() - last_progress > std::chrono::milliseconds(200)) {
      last_progress = steady::now();
      opt_.progress(now - start_ms_, end_ms_ - start_ms_);
    }
  }
  // End of run.
  {
    auto payload = wire::CreateClockTickedDirect(b_.fbb(), "end of trace");
    emit(hdr(end_ms_, wire::EntityKind::Cluster, "sim", -1, "sim"), payload);
  }
  if (auto f = sink_->finish(); !f) return tl::unexpected(f.error());
  if (opt_.progress) opt_.progress(end_ms_ - start_ms_, end_ms_ - start_ms_);
  const double loop_wall = seconds_since(wall0);
  const auto tf = steady::now();
  auto states = host_->collect();
  if (!states) return tl::unexpected(states.error());
  const std::uint64_t state_digest = entities::digest_of(*states);
  const double fold_wall = seconds_since(tf);
  run_result out;
  out.summary = summarize(state_digest, states->size());
  out.rows = std::move(rows_);
  // quota.csv is quota-major (each quota's rows in time order) so a plot filtered by quota
  // draws connected lines.
  std::stable_sort(quota_rows_.begin(), quota_rows_.end(),
                   [](const quota_row& a, const quota_row& b) { return a.quota < b.quota; });
  out.quota_rows = std::move(quota_rows_);
  const double wall = seconds_since(wall0);
  auto& tm = out.timing;
  tm["wall_seconds"] = wall;
  tm["main_loop_seconds"] = loop_wall;
  tm["actor_fold_wait_seconds"] = fold_wall;
  tm["log_append_seconds"] = sink_->append_seconds();
  tm["scheduling_seconds"] = sched_wall_;
  tm["koordlet_tick_seconds"] = tick_wall_;
  tm["admission_seconds"] = admission_wall_;
  tm["scheduling_cycles"] = cycles_;
  tm["wall_us_per_scheduling_decision"] =
      cycles_ ? sched_wall_ * 1e6 / static_cast<double>(cycles_) : 0.0;
  tm["events"] = sink_->next_offset();
  tm["events_per_second"] = static_cast<double>(sink_->next_offset()) / wall;
  tm["virtual_seconds"] = static_cast<double>(end_ms_ - start_ms_) / 1000.0;
  tm["time_compression"] = static_cast<double>(end_ms_ - start_ms_) / 1000.0 / wall;
  tm["threads"] = opt_.threads;
  return out;
}

nlohmann::ordered_json simulator::summarize(std::uint64_t state_digest,
                                            std::uint64_t entity_count) {
  nlohmann::ordered_json j;
  j["schema"] = "colony.sim.summary/v1";
  j["config"] = {{"name", cfg_.name},
                 {"source", cfg_.source},
                 {"usage_model", std::string(to_string(model_))},
                 {"pod_lifetime", std::string(to_string(lifetime_))},
                 {"node_metric_report_interval_seconds", cfg_.node_metric_report_interval_s},
                 {"idle_node_report_interval_seconds", cfg_.idle_node_report_interval_s},
                 {"colocation", cfg_.colocation},
                 {"koordlet_qos", qos_on_},
                 {"scheduler_plugins_skipped", skipped_plugins_},
                 {"seed", opt_.seed}};
  j["trace"] = trace_section(trace_, nodes_.size(), pods_.size(), curves_.size());
  j["virtual_seconds"] = static_cast<double>(end_ms_ - start_ms_) / 1000.0;
  j["start_seconds"] = static_cast<double>(start_ms_) / 1000.0;

  std::uint64_t evicted = 0;
  for (const auto& [k, v] : evicted_by_reason_) evicted += v;
  std::uint64_t pending_end = 0, running_end = 0;
  std::map<std::string, std::uint64_t> pending_reasons;
  for (std::size_t i = 0; i < pods_.size(); ++i) {
    const auto& p = pods_[i];
    if (p.status == pod_status::queued || p.status == pod_status::parked) {
      ++pending_end;
      ++pending_reasons[last_reason_[i].empty() ? "not attempted yet" : last_reason_[i]];
    }
    if (p.status == pod_status::bound) ++running_end;
  }
  std::uint64_t not_submitted = 0;
  for (const auto& p : pods_)
    if (p.status == pod_status::future) ++not_submitted;
  nlohmann::ordered_json pods;
  pods["in_trace"] = pods_.size();
  pods["submitted"] = submitted_;
  pods["not_submitted_before_end"] = not_submitted;
  pods["scheduled"] = scheduled_;
  pods["pending_at_end"] = pending_end;
  pods["rejected"] = rejected_;
  pods["withdrawn_while_pending"] = withdrawn_;
  pods["running_at_end"] = running_end;
  pods["completed"] = completed_;
  pods["completed_by_phase"] = completed_by_phase_;
  pods["evicted"] = evicted;
  pods["evicted_by_reason"] = evicted_by_reason_;
  pods["pending_at_end_by_last_reason"] = pending_reasons;
  pods["unschedulable_events"] = unschedulable_events_;
  pods["unschedulable_events_by_reason"] = unsched_reasons_;
  pods["bind_rejections"] = bind_rejections_;
  pods["admission_errors"] = admission_errors_;
  pods["conservation_ok"] = submitted_ == scheduled_ + pending_end + rejected_ + withdrawn_;
  j["pods"] = pods;

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
  j["scheduling_latency_virtual"] = {{"all", pct(latency_ms_)},
                                     {"prod", pct(latency_prod_ms_)},
                                     {"batch", pct(latency_batch_ms_)}};

  // Time averages over the metric samples (ratios of capacity, percent).
  auto avg = [&](auto f) {
    double s = 0;
    for (const auto& r : rows_) s += f(r);
    return rows_.empty() ? 0.0 : s / static_cast<double>(rows_.size());
  };
  auto ratio = [](std::int64_t a, std::int64_t b) {
    return b > 0 ? 100.0 * static_cast<double>(a) / static_cast<double>(b) : 0.0;
  };
  auto r2 = [](double v) { return std::round(v * 100.0) / 100.0; };
  nlohmann::ordered_json res;
  res["cpu_capacity_milli"] = cpu_capacity_;
  res["memory_capacity_bytes"] = mem_capacity_;
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
  for (const auto& r : rows_) {
    peak_cpu_alloc = std::max(peak_cpu_alloc, r.cpu_allocated);
    peak_cpu_used = std::max(peak_cpu_used, r.cpu_used);
  }
  res["peak_cpu_allocated_pct"] = r2(ratio(peak_cpu_alloc, cpu_capacity_));
  res["peak_cpu_used_pct"] = r2(ratio(peak_cpu_used, cpu_capacity_));
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
  bt["avg_batch_cpu_reclaimed_pct_of_capacity"] =
      r2(avg([&](const metrics_row& r) { return ratio(r.batch_cpu_allocatable, r.cpu_capacity); }));
  bt["avg_batch_cpu_allocated_pct_of_reclaimed"] = r2(avg(
      [&](const metrics_row& r) { return ratio(r.batch_cpu_allocated, r.batch_cpu_allocatable); }));
  bt["avg_batch_cpu_used_pct_of_reclaimed"] = r2(
      avg([&](const metrics_row& r) { return ratio(r.batch_cpu_used, r.batch_cpu_allocatable); }));
  bt["batch_updates"] = batch_updates_;
  bt["be_suppress_updates"] = suppress_updates_;
  j["batch"] = bt;
  nlohmann::ordered_json g;
  g["gpu_devices"] = gpu_total_ / 100;
  g["avg_gpu_allocation_pct"] =
      r2(samples_ ? 100.0 * gpu_alloc_ratio_sum_ / static_cast<double>(samples_) : 0.0);
  g["avg_gpu_fragmentation_pct_of_total"] =
      r2(samples_ ? gpu_frag_sum_ / static_cast<double>(samples_) : 0.0);
  g["avg_gpu_fragmentation_pct_of_unallocated"] =
      r2(samples_ ? gpu_frag_idle_sum_ / static_cast<double>(samples_) : 0.0);
  g["final_gpu_allocation_pct"] = r2(ratio(gpu_allocated_, gpu_total_));
  g["final_gpu_fragmentation_gpus"] = r2(rows_.empty() ? 0.0 : rows_.back().gpu_frag);
  g["task_classes"] = classes_.size();
  j["gpu"] = g;
  j["quota"] = quota_summary();
  nlohmann::ordered_json inv;
  inv["over_capacity_binds"] = over_capacity_;
  inv["negative_batch_allocatable"] = negative_batch_;
  inv["evictions_without_reason"] = evictions_without_reason_;
  inv["batch_overcommitted_binds"] = batch_overcommitted_;
  j["invariants"] = inv;
  nlohmann::ordered_json ev;
  ev["count"] = sink_->next_offset();
  ev["bytes"] = sink_->log_bytes();
  nlohmann::ordered_json bytype;
  for (std::size_t i = 0; i < sink_->by_type().size(); ++i) {
    if (sink_->by_type()[i] == 0) continue;
    bytype[std::string(wire::EnumNamePayload(static_cast<wire::Payload>(i)))] = sink_->by_type()[i];
  }
  ev["by_type"] = bytype;
  ev["node_metric_reports"] = metric_reports_;
  ev["scheduling_cycles"] = cycles_;
  ev["log_byte_digest"] = fmt::format("{:016x}", sink_->byte_digest());
  ev["state_digest"] = fmt::format("{:016x}", state_digest);
  ev["entities"] = entity_count;
  j["events"] = ev;
  return j;
}

}  // namespace

result<run_result> run_simulation(const trace::trace_set& trace, const sim_config& cfg,
                                  const run_options& opt) {
  if (opt.components_host) return run_on_components(trace, cfg, opt);
  auto s = std::make_unique<simulator>(trace, cfg, opt);
  return s->run();
}

}  // namespace colony::sim
