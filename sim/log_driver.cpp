// The re-simulation of a cluster's log (run_log_simulation, sim/driver.hpp): `colony sim
// --from-log`. The observations `colony run` recorded (sim/log_source.hpp) are fed, in log
// order, to the deterministic step_host (actors/entities/step_host.hpp) running the components
// `colony run` hosts (run/control_plane.hpp), configured as the run's config says; the report
// is folded from the written log as for a trace (sim/metrics_observer.hpp).
//
// Fidelity to `colony run` (docs/kubernetes-bridge.md "colony run"):
//   - every record, observation or decision, is delivered as a batch of its own
//     (step_host::step_record): colony run hands each record it reads from the log to the
//     components alone, and a component decides at the end of a batch;
//   - the records are stepped in the log's order: an observation at its position in the log,
//     a decision the log also holds (same cause, decider, type and entity:
//     log_source::logged_position) at that decision's position, a decision the log does not
//     hold right after the record that caused it. colony run's loop reads observations between
//     the decisions its components are appending, and one component's answers between
//     another's, as threads finish; the re-simulation follows the order the log recorded;
//   - components are woken only by the records they get (step_record wakes nobody): colony run
//     wakes them with the ClockTicked observations it appends, which are in the log;
//   - the components are colony run's (run/control_plane.hpp), with their own seeds.
// So with the cluster's own configuration the run makes the decisions the log holds, in its
// order, and writes the log again byte for byte (tests/sim/from_log_test.cpp, and
// tests/run/run_kube_test.cpp on a real colony run's log).
//
// No usage model: the usage is the log's NodeMetricReported (the cluster's koordlets). Pods leave
// when the cluster says so (PodFinished), on the node this run placed them.
#include <algorithm>
#include <chrono>
#include <filesystem>
#include <limits>

#include "actors/entities/step_host.hpp"
#include "actors/koordlet/actor/koordlet_component.hpp"
#include "actors/scheduler/actor/scheduler_component.hpp"
#include "actors/slo_controller/actor/slo_controller_component.hpp"
#include "messages/codec.hpp"
#include "run/control_plane.hpp"
#include "sim/driver.hpp"
#include "sim/log_sink.hpp"
#include "sim/log_source.hpp"
#include "sim/metrics_observer.hpp"
#include "stores/event_log.hpp"

namespace colony::sim {

namespace {

using steady = std::chrono::steady_clock;
using messages::to_string_view;

double seconds_since(steady::time_point t0) {
  return std::chrono::duration<double>(steady::now() - t0).count();
}

// Sim config fields that describe a trace run and mean nothing for a log.
constexpr std::string_view trace_only_fields[] = {"usageModel", "usageRatios",
                                                  "idleNodeReportIntervalSeconds", "podLifetime"};

class log_sim {
 public:
  log_sim(std::string path, const sim_config& c, const run_options& o)
      : path_(std::move(path)), cfg_(c), opt_(o) {}

  result<run_result> run();

 private:
  result<void> setup();
  result<void> on_round(const entities::record_batch& round);
  // A record waiting to be stepped: rank = the position the log gives it (that of the record
  // that caused it when the log does not hold it), ties in the order made.
  struct waiting {
    log_offset rank = 0;
    std::uint64_t seq = 0;
    std::optional<log_offset> logged;  // its position in the log, if the log holds it
    std::uint32_t depth = 0;           // decisions between it and an observation
    messages::byte_buffer record;
  };
  struct later {
    bool operator()(const waiting& a, const waiting& b) const {
      return a.rank != b.rank ? a.rank > b.rank : a.seq > b.seq;
    }
  };
  // Steps one record and queues what it caused.
  result<void> step(std::span<const std::uint8_t> record, log_offset rank,
                    std::optional<log_offset> logged, std::uint32_t depth);
  // The metrics samples an observation at t comes after, and the clock.
  void advance_to(std::int64_t t);
  std::vector<std::unique_ptr<entities::component>> node_components(std::string_view node);
  std::optional<std::string_view> placement(std::string_view pod) const;
  [[nodiscard]] summary_header summary_header_of() const;

  std::string path_;
  const sim_config& cfg_;
  run_options opt_;
  std::unique_ptr<log_source> src_;
  std::unique_ptr<stores::event_log> log_;
  std::unique_ptr<log_sink> sink_;
  std::unique_ptr<entities::step_host> host_;
  std::unique_ptr<metrics_observer> observer_;
  bool koordlets_ = false;
  std::vector<std::string> skipped_plugins_;
  std::int64_t start_ms_ = 0, now_ = 0, next_sample_ = 0, metrics_ms_ = 0;
  std::vector<waiting> queue_;  // a heap by later: the earliest rank on top
  std::uint64_t seq_ = 0;
  std::vector<messages::byte_buffer> out_;           // one step's output
  std::uint64_t in_log_order_ = 0, not_in_log_ = 0;  // decisions the log holds / does not
  double host_wall_ = 0;
  steady::time_point last_progress_ = steady::now();
};

result<void> log_sim::setup() {
  auto src = log_source::open(path_);
  if (!src) return tl::unexpected(src.error());
  src_ = std::move(*src);
  namespace fs = std::filesystem;
  if (!opt_.log_path.empty()) {
    std::error_code ec;
    if (fs::exists(opt_.log_path, ec) && fs::equivalent(opt_.log_path, path_, ec))
      return fail(errc::invalid_input,
                  "the output log is the --from-log log; name another with --log or --out",
                  opt_.log_path);
    fs::remove_all(opt_.log_path, ec);
    stores::log_options lo;
    lo.sync = false;  // reproducible from its inputs (see sim/log_sink.hpp)
    auto l = stores::open_log(opt_.log_path, lo);
    if (!l) return tl::unexpected(l.error());
    log_ = std::move(*l);
  }
  sink_ = std::make_unique<log_sink>(log_.get());
  sink_->set_tap([this](std::span<const std::uint8_t> rec) { observer_->on_record(rec); });

  entities::step_host_options ho;
  ho.threads = std::max<std::size_t>(1, opt_.threads);
  host_ = std::make_unique<entities::step_host>(
      ho, [this](const entities::record_batch& round) { return on_round(round); });

  run::control_plane_options cp;
  cp.slo_controller = cfg_.colocation;
  if (cfg_.gives("schedulerConfig")) cp.scheduler = cfg_.scheduler;
  cp.descheduler = cfg_.descheduler;
  cp.parallelizer = host_->cluster_parallelizer();
  auto components = run::control_plane(cp);
  if (!components) return tl::unexpected(components.error());
  for (auto& c : *components) {
    if (const auto* s = dynamic_cast<const scheduler::scheduler_component*>(c.get()))
      skipped_plugins_ = s->skipped_plugins();
    host_->add_component(std::move(c));
  }
  koordlets_ = cfg_.colocation && cfg_.gives("koordletFeatureGates");
  if (koordlets_)
    host_->on_new_node([this](std::string_view node) { return node_components(node); });

  metrics_ms_ = cfg_.metrics_interval_s * 1000;
  const auto& sc = src_->scan();
  start_ms_ = std::max<std::int64_t>(0, sc.first_ms) / metrics_ms_ * metrics_ms_;
  now_ = sc.first_ms;
  next_sample_ = start_ms_;

  observer_options oo;
  oo.pods_in_trace = sc.pods;
  observer_ = std::make_unique<metrics_observer>(std::move(oo));
  return {};
}

// A koordlet for a node that registers (only when the config gives koordletFeatureGates:
// colony run runs none; koordlets run on the nodes). Its strategies come with the NodeSLOUpdated
// the slo-controller emits for its node.
std::vector<std::unique_ptr<entities::component>> log_sim::node_components(std::string_view node) {
  std::vector<std::unique_ptr<entities::component>> v;
  koordlet_actor::koordlet_options ko;
  ko.node = std::string(node);
  ko.gates = cfg_.gates;
  // One usage sample per report: the BE CPU window of BECPUEvict holds one per report.
  ko.timing.collect_res_used_interval = duration_ms{cfg_.node_metric_report_interval_s * 1000};
  v.push_back(std::make_unique<koordlet_actor::koordlet_component>(std::move(ko)));
  return v;
}

result<void> log_sim::on_round(const entities::record_batch& round) {
  for (std::size_t i = 0; i < round.size(); ++i) sink_->add_numbered(round.record(i));
  if (sink_->should_flush()) return sink_->flush();
  return {};
}

std::optional<std::string_view> log_sim::placement(std::string_view pod) const {
  const auto& pods = host_->state().pods;
  const auto it = pods.find(pod);
  if (it == pods.end() || entities::is_terminal(it->second.phase)) return std::nullopt;
  return std::string_view(it->second.node);
}

void log_sim::advance_to(std::int64_t t) {
  // Times never go back: a live log's observations come from several informer threads.
  t = std::max(t, now_);
  // A sample at s sees the records stepped before the first observation later than s.
  while (next_sample_ < t) {
    const std::int64_t s = next_sample_;
    sink_->mark([this, s] { observer_->sample(s); });
    next_sample_ += metrics_ms_;
  }
  now_ = t;
  if (opt_.progress && steady::now() - last_progress_ > std::chrono::milliseconds(200)) {
    last_progress_ = steady::now();
    opt_.progress(t - start_ms_, src_->scan().last_ms - start_ms_);
  }
}

result<void> log_sim::step(std::span<const std::uint8_t> record, log_offset rank,
                           std::optional<log_offset> logged, std::uint32_t depth) {
  // Components that keep answering each other forever are a bug, not a workload.
  constexpr std::uint32_t max_depth = 10000;
  if (depth > max_depth)
    return fail(errc::internal,
                "the components kept answering each other for " + std::to_string(max_depth) +
                    " steps after an observation",
                path_);
  out_.clear();
  const auto t0 = steady::now();
  auto r = host_->step_record(record, now_, out_);
  host_wall_ += seconds_since(t0);
  if (!r) return r;
  for (auto& d : out_) {
    std::optional<log_offset> at;
    if (logged) {
      auto p = src_->logged_position(*logged, *wire::GetEnvelope(d.data()));
      if (!p) return tl::unexpected(p.error());
      at = *p;
    }
    (at ? in_log_order_ : not_in_log_) += 1;
    queue_.push_back(waiting{at ? std::max(*at, rank) : rank, seq_++, at, depth + 1, std::move(d)});
    std::push_heap(queue_.begin(), queue_.end(), later{});
  }
  return {};
}

summary_header log_sim::summary_header_of() const {
  const auto& sc = src_->scan();
  const auto& rc = src_->counts();
  auto from = [&](std::string_view field, const char* cluster) {
    return cfg_.gives(field) ? "config" : cluster;
  };
  nlohmann::ordered_json configuration = {
      {"slo-controller-config", from("sloControllerConfig", "log")},
      {"ClusterColocationProfile", from("colocationProfiles", "log")},
      {"PriorityClass", "log"},
      {"ElasticQuota", from("elasticQuotas", "log")},
      {"KubeSchedulerConfiguration", from("schedulerConfig", "Koordinator's shipped profile")},
      {"koordlets", koordlets_ ? "config (koordletFeatureGates)" : "none (colony run runs none)"}};
  std::vector<std::string> ignored;
  for (const auto f : trace_only_fields)
    if (cfg_.gives(f)) ignored.emplace_back(f);
  summary_header h;
  h.config = {{"name", cfg_.name},
              {"source", cfg_.source},
              {"mode", "from-log"},
              {"usage_model", "log"},
              {"pod_lifetime", "log"},
              {"configuration", configuration},
              {"ignored_fields", ignored},
              {"node_metric_report_interval_seconds", cfg_.node_metric_report_interval_s},
              {"colocation", cfg_.colocation},
              {"koordlet_qos", koordlets_},
              {"scheduler_plugins_skipped", skipped_plugins_},
              {"host", "components"},
              {"seed", "the components' own (as colony run)"}};
  nlohmann::ordered_json tr;
  tr["dir"] = sc.path;
  tr["log"] = sc.path;
  tr["synthetic"] = false;
  tr["files"] = nlohmann::ordered_json::array();
  tr["nodes"] = sc.nodes;
  tr["pods"] = sc.pods;
  tr["usage_curves"] = 0;
  tr["bad_rows_skipped"] = 0;
  tr["bad_row_warnings"] = nlohmann::ordered_json::array();
  tr["records"] = sc.records;
  tr["observations"] = sc.observations;
  tr["observations_by_source"] = sc.observations_by_source;
  tr["decisions"] = sc.decisions;
  tr["decisions_by_source"] = sc.decisions_by_source;
  tr["first_event_ms"] = sc.first_ms;
  tr["last_event_ms"] = sc.last_ms;
  tr["observations_fed"] = rc.fed;
  tr["configuration_replaced"] = rc.configuration_replaced;
  tr["placements_rewritten"] = rc.placements_rewritten;
  tr["pod_started_dropped"] = rc.pod_started_dropped;
  // How closely the run followed the log: decisions the log holds too (stepped at their logged
  // position) and decisions it does not.
  tr["decisions_also_in_log"] = in_log_order_;
  tr["decisions_not_in_log"] = not_in_log_;
  h.trace = std::move(tr);
  h.state_digest = host_->state().digest();
  h.entities = host_->state().entity_count();
  return h;
}

result<run_result> log_sim::run() {
  const auto wall0 = steady::now();
  if (auto s = setup(); !s) return tl::unexpected(s.error());
  // The configuration the config gives, in force (and answered) before the log's first record.
  for (const auto& rec : given_configuration(cfg_, now_))
    if (auto r = step(rec, 0, std::nullopt, 0); !r) return tl::unexpected(r.error());
  while (!queue_.empty()) {
    std::pop_heap(queue_.begin(), queue_.end(), later{});
    waiting w = std::move(queue_.back());
    queue_.pop_back();
    if (auto r = step(w.record, w.rank, w.logged, w.depth); !r) return tl::unexpected(r.error());
  }
  src_->configure(replacement_of(cfg_), [this](std::string_view pod) { return placement(pod); });
  // The log's order: the waiting record or the next observation, whichever the log has first.
  for (;;) {
    auto next = src_->peek();
    if (!next) return tl::unexpected(next.error());
    if (!queue_.empty() && (!*next || queue_.front().rank < **next)) {
      std::pop_heap(queue_.begin(), queue_.end(), later{});
      waiting w = std::move(queue_.back());
      queue_.pop_back();
      if (auto r = step(w.record, w.rank, w.logged, w.depth); !r) return tl::unexpected(r.error());
      continue;
    }
    if (!*next) break;
    auto o = src_->next();
    if (!o) return tl::unexpected(o.error());
    if (!*o) break;
    advance_to((*o)->time_ms);
    if (auto r = step((*o)->record, (*o)->position, (*o)->position, 0); !r)
      return tl::unexpected(r.error());
  }
  const std::int64_t end_ms = now_;
  while (next_sample_ <= end_ms) {
    const std::int64_t s = next_sample_;
    sink_->mark([this, s] { observer_->sample(s); });
    next_sample_ += metrics_ms_;
  }
  if (auto f = sink_->finish(); !f) return tl::unexpected(f.error());
  if (opt_.progress) opt_.progress(end_ms - start_ms_, end_ms - start_ms_);
  const double loop_wall = seconds_since(wall0);

  run_result out;
  out.summary = observer_->summary(summary_header_of());
  out.rows = observer_->rows();
  out.quota_rows = observer_->quota_rows();
  const double wall = seconds_since(wall0);
  const auto& hs = host_->stats();
  const double events = static_cast<double>(sink_->next_offset());
  auto& tm = out.timing;
  tm["wall_seconds"] = wall;
  tm["main_loop_seconds"] = loop_wall;
  tm["host_seconds"] = host_wall_;
  tm["host_us_per_event"] = events > 0 ? host_wall_ * 1e6 / events : 0.0;
  tm["log_append_seconds"] = sink_->append_seconds();
  tm["steps"] = hs.rounds;
  tm["component_deliveries"] = hs.deliveries;
  tm["component_wakeups"] = hs.wakeups;
  tm["proposals_arbitrated"] = hs.proposals_arbitrated;
  tm["components"] = host_->component_count();
  tm["events"] = sink_->next_offset();
  tm["events_per_second"] = events / wall;
  tm["observations_fed"] = src_->counts().fed;
  tm["decisions_at_their_logged_position"] = in_log_order_;
  tm["decisions_not_in_the_log"] = not_in_log_;
  tm["virtual_seconds"] = static_cast<double>(end_ms - start_ms_) / 1000.0;
  tm["time_compression"] = static_cast<double>(end_ms - start_ms_) / 1000.0 / wall;
  tm["threads"] = opt_.threads;
  return out;
}

}  // namespace

sim_config recorded_configuration() {
  sim_config c;
  c.name = "recorded";
  c.description = "the cluster's own configuration, as the log records it";
  c.source = std::string(recorded_config_spelling);
  return c;
}

result<run_result> run_log_simulation(const std::string& log_path, const sim_config& cfg,
                                      const run_options& opt) {
  log_sim s(log_path, cfg, opt);
  return s.run();
}

}  // namespace colony::sim
