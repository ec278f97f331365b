// The re-simulation of a cluster's log (run_log_simulation, sim/driver.hpp): `colony sim
// --from-log`. The observations `colony run` recorded (sim/log_source.hpp) are fed, in log
// order, to the deterministic step_host (actors/entities/step_host.hpp) running the components
// `colony run` hosts (run/control_plane.hpp), configured as the run's config says; the report
// is folded from the written log as for a trace (sim/metrics_observer.hpp).
//
// Fidelity to `colony run` (docs/kubernetes-bridge.md "colony run"):
//   - the host delivers every record, observation or decision, as a batch of its own, in one
//     FIFO queue (step_host_options::record_batches): colony run hands each record it reads to
//     the components alone, and a component decides at the end of a batch;
//   - each observation joins that queue where the log had it: after as many decisions as the log
//     holds before it (step_host::set_tail_hook), or when the host is quiet if the run decided
//     less. A colony run whose loop was busy read observations between the decisions it was
//     appending; the re-simulation interleaves them the same way;
//   - components are woken only by the records they get (step_host_options::wake_on_time off):
//     colony run wakes them with the ClockTicked observations it appends, which are in the log;
//   - the components are colony run's (run/control_plane.hpp), with their own seeds.
// So with the cluster's own configuration the run makes the decisions the log holds, in its
// order: the output log equals the input log record for record (tested).
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
  // Feeds one observation (the host queues it) after the metrics samples it comes after.
  void admit(const log_observation& o);
  // The host's tail hook: feeds the observations whose place in the log is before the decisions
  // made so far.
  result<void> on_tail(log_offset tail);
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
  // The slo-controller-config ConfigUpdated records numbered so far, in log order: a koordlet
  // made when its node registers reads them first (a node's components miss what came before).
  std::vector<messages::byte_buffer> slo_config_records_;
  std::int64_t start_ms_ = 0, now_ = 0, next_sample_ = 0, metrics_ms_ = 0;
  std::uint64_t fed_ = 0;          // observations the host was given (the config's and the log's)
  std::uint64_t interleaved_ = 0;  // observations fed between the host's decisions (on_tail)
  double host_wall_ = 0;
  std::uint64_t instants_ = 0;
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
  ho.record_batches = true;
  ho.wake_on_time = false;
  host_ = std::make_unique<entities::step_host>(
      ho, [this](const entities::record_batch& round) { return on_round(round); });

  run::control_plane_options cp;
  cp.slo_controller = cfg_.colocation;
  if (cfg_.gives("schedulerConfig")) cp.scheduler = cfg_.scheduler;
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
// colony run runs none; koordlets run on the nodes). It reads the slo-controller-config records
// in force first, as its NodeSLO would carry them.
std::vector<std::unique_ptr<entities::component>> log_sim::node_components(std::string_view node) {
  std::vector<std::unique_ptr<entities::component>> v;
  koordlet_actor::koordlet_options ko;
  ko.node = std::string(node);
  ko.gates = cfg_.gates;
  // One usage sample per report: the BE CPU window of BECPUEvict holds one per report.
  ko.timing.collect_res_used_interval = duration_ms{cfg_.node_metric_report_interval_s * 1000};
  auto k = std::make_unique<koordlet_actor::koordlet_component>(std::move(ko));
  std::vector<messages::byte_buffer> none;
  for (const auto& rec : slo_config_records_) {
    const auto& env = *wire::GetEnvelope(rec.data());
    if (k->wants(env.payload_type())) k->on_event(env, none);
  }
  v.push_back(std::move(k));
  return v;
}

result<void> log_sim::on_round(const entities::record_batch& round) {
  for (std::size_t i = 0; i < round.size(); ++i) {
    sink_->add_numbered(round.record(i));
    const auto& env = round.envelope(i);
    if (koordlets_ && env.payload_type() == wire::Payload::ConfigUpdated &&
        to_string_view(env.payload_as_ConfigUpdated()->kind()) ==
            slo_controller_actor::config_kind_slo_controller) {
      const auto rec = round.record(i);
      slo_config_records_.emplace_back(rec.begin(), rec.end());
    }
  }
  if (sink_->should_flush()) return sink_->flush();
  return {};
}

std::optional<std::string_view> log_sim::placement(std::string_view pod) const {
  const auto& pods = host_->state().pods;
  const auto it = pods.find(pod);
  if (it == pods.end() || entities::is_terminal(it->second.phase)) return std::nullopt;
  return std::string_view(it->second.node);
}

// One observation into the host's queue, after the metrics samples it comes after (a sample at
// s sees the records fed before the first observation later than s). Times never go back: a
// live log's observations come from several informer threads.
void log_sim::admit(const log_observation& o) {
  const std::int64_t t = std::max(o.time_ms, now_);
  while (next_sample_ < t) {
    const std::int64_t s = next_sample_;
    sink_->mark([this, s] { observer_->sample(s); });
    next_sample_ += metrics_ms_;
  }
  now_ = t;
  host_->observe(o.record);
  ++fed_;
  if (opt_.progress && steady::now() - last_progress_ > std::chrono::milliseconds(200)) {
    last_progress_ = steady::now();
    opt_.progress(t - start_ms_, src_->scan().last_ms - start_ms_);
  }
}

// The host holds `tail` records: the observations fed and the decisions made. An observation
// that the cluster's log holds after d decisions joins the queue once the run has made d: where
// colony run's loop read it, between the decisions it had appended by then.
result<void> log_sim::on_tail(log_offset tail) {
  // Quiet: the instant ends, and the main loop starts the next with the next observation.
  if (tail == host_->next_offset()) return {};
  const std::uint64_t decided = tail - fed_;
  for (;;) {
    auto d = src_->next_decisions_before();
    if (!d) return tl::unexpected(d.error());
    if (!*d || **d > decided) return {};
    auto o = src_->next();
    if (!o) return tl::unexpected(o.error());
    admit(**o);
    ++interleaved_;
  }
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
  h.trace = std::move(tr);
  h.state_digest = host_->state().digest();
  h.entities = host_->state().entity_count();
  return h;
}

result<run_result> log_sim::run() {
  const auto wall0 = steady::now();
  if (auto s = setup(); !s) return tl::unexpected(s.error());
  // The configuration the config gives, in force before the log's first record.
  const auto given = given_configuration(cfg_, now_);
  if (!given.empty()) {
    for (const auto& rec : given) host_->observe(rec);
    fed_ += given.size();
    ++instants_;
    if (auto r = host_->run_instant(now_); !r) return tl::unexpected(r.error());
  }
  src_->configure(replacement_of(cfg_), [this](std::string_view pod) { return placement(pod); });
  host_->set_tail_hook([this](log_offset tail) { return on_tail(tail); });
  // Each time the host is quiet, the next observation starts an instant (on_tail feeds those
  // that come while it decides).
  for (;;) {
    auto o = src_->next();
    if (!o) return tl::unexpected(o.error());
    if (!*o) break;
    admit(**o);
    ++instants_;
    const auto t0 = steady::now();
    auto r = host_->run_instant(now_);
    host_wall_ += seconds_since(t0);
    if (!r) return tl::unexpected(r.error());
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
  tm["instants"] = instants_;
  tm["rounds"] = hs.rounds;
  tm["max_rounds_per_instant"] = hs.max_rounds_per_instant;
  tm["component_deliveries"] = hs.deliveries;
  tm["component_wakeups"] = hs.wakeups;
  tm["proposals_arbitrated"] = hs.proposals_arbitrated;
  tm["components"] = host_->component_count();
  tm["events"] = sink_->next_offset();
  tm["events_per_second"] = events / wall;
  tm["observations_fed"] = src_->counts().fed;
  tm["observations_interleaved"] = interleaved_;
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
