#include "run/run_metrics.hpp"

#include <algorithm>

#include "bridges/kubernetes/source.hpp"

namespace colony::run {

namespace {

// kube-scheduler's profile is the schedulerName pods ask for; Colony's scheduler components are
// named "koord-scheduler/<id>" (scheduler_component.hpp), one profile each.
constexpr std::string_view default_profile = "koord-scheduler";

std::string profile_of(std::string_view scheduler) {
  return std::string(scheduler.substr(0, scheduler.find('/')));
}

metric_family family(std::string name, std::string help, metric_type t) {
  metric_family f;
  f.name = std::move(name);
  f.help = std::move(help);
  f.type = t;
  return f;
}

metric_family one(std::string name, std::string help, metric_type t, double v) {
  auto f = family(std::move(name), std::move(help), t);
  f.samples.push_back({{}, v});
  return f;
}

}  // namespace

// Log appends take from ~10 us (RocksDB, unsynced) to seconds (a Kafka broker in trouble):
// 0.1 ms doubling to ~3.3 s.
// Koordinator's node-count histograms: ExponentialBuckets(1, 2, 24)
// (pkg/scheduler/metrics/metrics.go); kube's pod_scheduling_attempts: ExponentialBuckets(1, 2, 5).
run_metrics::run_metrics()
    : log_append_seconds(exponential_buckets(0.0001, 2, 16)),
      evaluated_nodes_(exponential_buckets(1, 2, 24)),
      feasible_nodes_(exponential_buckets(1, 2, 24)),
      attempts_to_schedule_(exponential_buckets(1, 2, 5)),
      delivered_at_(ring_size) {}

void run_metrics::count_write(std::string_view kind, bool ok, bool wrote) {
  const char* result = !ok ? "failed" : wrote ? "written" : "unchanged";
  std::lock_guard lk(writes_mu_);
  ++writes_[{std::string(kind), result}];
}

std::uint64_t run_metrics::writes(std::string_view result) const {
  std::lock_guard lk(writes_mu_);
  std::uint64_t n = 0;
  for (const auto& [k, v] : writes_)
    if (k.second == result) n += v;
  return n;
}

void run_metrics::beat(steady::time_point now) noexcept {
  heartbeat_ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count();
}

void run_metrics::observe_delivered(log_offset off, steady::time_point now) {
  delivered_at_[off % ring_size] = now;
  delivered_end_ = std::max<std::uint64_t>(delivered_end_, off + 1);
}

run_metrics::steady::time_point run_metrics::cause_time(std::int64_t causation,
                                                        steady::time_point now) const {
  // A cause delivered before this run (replayed) or out of the ring counts as now: duration 0.
  if (causation < 0 || static_cast<std::uint64_t>(causation) >= delivered_end_ ||
      delivered_end_ - static_cast<std::uint64_t>(causation) > ring_size)
    return now;
  const auto t = delivered_at_[static_cast<std::uint64_t>(causation) % ring_size];
  return t == steady::time_point{} ? now : t;
}

void run_metrics::attempt(std::string_view result, std::string_view profile, double seconds) {
  std::lock_guard lk(sched_mu_);
  auto& cell = attempts_[{std::string(result), std::string(profile)}];
  // kube-scheduler's buckets: metrics.ExponentialBuckets(0.001, 2, 15).
  if (!cell) cell.reset(new attempt_cell{0, histogram(exponential_buckets(0.001, 2, 15))});
  ++cell->count;
  cell->duration.observe(seconds);
}

void run_metrics::set_queue(const std::string& pod, int q) {
  std::lock_guard lk(sched_mu_);
  auto [it, fresh] = queue_of_.try_emplace(pod, q);
  if (!fresh) {
    --pending_[static_cast<std::size_t>(it->second)];
    it->second = q;
  }
  ++pending_[static_cast<std::size_t>(q)];
}

void run_metrics::drop_pod(const std::string& pod) {
  std::lock_guard lk(sched_mu_);
  if (auto it = queue_of_.find(pod); it != queue_of_.end()) {
    --pending_[static_cast<std::size_t>(it->second)];
    queue_of_.erase(it);
  }
}

void run_metrics::set_rejected(const std::string& pod,
                               std::vector<std::pair<std::string, std::string>> cells) {
  std::lock_guard lk(sched_mu_);
  auto it = rejected_by_.find(pod);
  if (it != rejected_by_.end()) {
    for (const auto& c : it->second)
      if (auto u = unschedulable_by_plugin_.find(c); u != unschedulable_by_plugin_.end())
        --u->second;
    rejected_by_.erase(it);
  }
  if (cells.empty()) return;
  for (const auto& c : cells) ++unschedulable_by_plugin_[c];
  rejected_by_.emplace(pod, std::move(cells));
}

void run_metrics::observe_record(log_offset off, const wire::Envelope& env, steady::time_point now,
                                 bool live) {
  const auto str = [](const flatbuffers::String* s) { return messages::to_string_view(s); };
  const auto seconds = [&](steady::time_point from) {
    return std::chrono::duration<double>(now - from).count();
  };
  const bool decision = env.causation() >= 0;
  switch (env.payload_type()) {
    case wire::Payload::PodSubmitted: {
      const auto* p = env.payload_as_PodSubmitted();
      const std::string pod(str(p->name()));
      scheduler_of_[pod] = std::string(str(p->scheduler_name()));
      if (str(p->scheduler_name()) == default_profile && queue_of_.count(pod) == 0)
        set_queue(pod, 0);
      break;
    }
    case wire::Payload::PodMutated: {
      const auto* p = env.payload_as_PodMutated();
      const std::string pod(str(p->name()));
      if (p->scheduler_name() && p->scheduler_name()->size() > 0)
        scheduler_of_[pod] = std::string(str(p->scheduler_name()));
      if (scheduler_of_[pod] != default_profile)
        drop_pod(pod);
      else if (queue_of_.count(pod) == 0)
        set_queue(pod, 0);
      break;
    }
    case wire::Payload::PodBindProposed: {
      // In flight: out of every queue until its outcome (kube-scheduler pops it from activeQ).
      const auto* p = env.payload_as_PodBindProposed();
      drop_pod(std::string(str(p->pod())));
      if (live && decision) {
        proposals_[static_cast<std::int64_t>(off)] = cause_time(env.causation(), now);
        proposal_attempts_[static_cast<std::int64_t>(off)] = p->attempt();
        evaluated_nodes_.observe(p->evaluated_nodes());
        feasible_nodes_.observe(p->feasible_nodes());
      }
      break;
    }
    case wire::Payload::PodUnschedulable: {
      const auto* p = env.payload_as_PodUnschedulable();
      const std::string pod(str(p->pod()));
      set_queue(pod, 2);
      std::vector<std::pair<std::string, std::string>> cells;
      if (p->reasons())
        for (const auto* r : *p->reasons()) {
          std::pair<std::string, std::string> c{std::string(str(r->plugin())),
                                                profile_of(str(p->scheduler()))};
          if (std::find(cells.begin(), cells.end(), c) == cells.end())
            cells.push_back(std::move(c));
        }
      set_rejected(pod, std::move(cells));
      if (live && decision)
        attempt("unschedulable", profile_of(str(p->scheduler())),
                seconds(cause_time(env.causation(), now)));
      break;
    }
    case wire::Payload::PodBindRejected: {
      const auto* p = env.payload_as_PodBindRejected();
      const std::string pod(str(p->pod()));
      if (scheduler_of_[pod] == default_profile) set_queue(pod, 1);  // requeued with backoff
      if (live && decision && p->scheduler() && p->scheduler()->size() > 0) {
        proposal_attempts_.erase(p->proposal_offset());
        auto it = proposals_.find(p->proposal_offset());
        attempt("error", profile_of(str(p->scheduler())),
                seconds(it != proposals_.end() ? it->second : cause_time(env.causation(), now)));
        if (it != proposals_.end()) proposals_.erase(it);
      }
      break;
    }
    case wire::Payload::PodScheduled: {
      const auto* p = env.payload_as_PodScheduled();
      const std::string pod(str(p->pod()));
      drop_pod(pod);
      set_rejected(pod, {});
      scheduler_of_.erase(pod);
      if (live && decision && p->scheduler() && p->scheduler()->size() > 0) {
        if (auto a = proposal_attempts_.find(p->proposal_offset()); a != proposal_attempts_.end()) {
          attempts_to_schedule_.observe(a->second);
          proposal_attempts_.erase(a);
        }
        auto it = proposals_.find(p->proposal_offset());
        attempt("scheduled", profile_of(str(p->scheduler())),
                seconds(it != proposals_.end() ? it->second : cause_time(env.causation(), now)));
        if (it != proposals_.end()) proposals_.erase(it);
      }
      break;
    }
    case wire::Payload::PodFinished: {
      const std::string pod(str(env.payload_as_PodFinished()->pod()));
      drop_pod(pod);
      set_rejected(pod, {});
      scheduler_of_.erase(pod);
      break;
    }
    case wire::Payload::PodRejected: {
      const std::string pod(str(env.payload_as_PodRejected()->name()));
      drop_pod(pod);
      set_rejected(pod, {});
      scheduler_of_.erase(pod);
      break;
    }
    default:
      break;
  }
}

std::vector<metric_family> run_metrics::families(const kube::source_counters* source) const {
  std::vector<metric_family> fs;
  using mt = metric_type;
  {
    std::lock_guard lk(sched_mu_);
    auto a = family("scheduler_schedule_attempts_total",
                    "Number of attempts to schedule pods, by the result. 'unschedulable' means a "
                    "pod could not be scheduled, while 'error' means an internal scheduler "
                    "problem (in Colony: the node actor refused the binding).",
                    mt::counter);
    auto d = family("scheduler_scheduling_attempt_duration_seconds",
                    "Scheduling attempt latency in seconds (scheduling algorithm + binding), wall "
                    "time on the colony run host.",
                    mt::histogram);
    // Every result appears from the start, as kube-scheduler's do once used: a rate() over
    // a series that appears late misses its first increase.
    for (const char* r : {"scheduled", "unschedulable", "error"}) {
      const metric_labels l{{"result", r}, {"profile", std::string(default_profile)}};
      auto it = attempts_.find({r, std::string(default_profile)});
      a.samples.push_back({l, it == attempts_.end() ? 0.0 : double(it->second->count)});
      d.histograms.push_back(it == attempts_.end()
                                 ? histogram(exponential_buckets(0.001, 2, 15)).snapshot(l)
                                 : it->second->duration.snapshot(l));
    }
    for (const auto& [k, cell] : attempts_) {
      if (k.second == default_profile) continue;
      const metric_labels l{{"result", k.first}, {"profile", k.second}};
      a.samples.push_back({l, double(cell->count)});
      d.histograms.push_back(cell->duration.snapshot(l));
    }
    fs.push_back(std::move(a));
    fs.push_back(std::move(d));
    auto p = family("scheduler_pending_pods",
                    "Number of pending pods, by the queue type, as the latest logged decision "
                    "about each pod left it: 'active' not attempted yet, 'backoff' its binding "
                    "was refused, 'unschedulable' no node fit.",
                    mt::gauge);
    const char* queues[] = {"active", "backoff", "unschedulable"};
    for (std::size_t i = 0; i < 3; ++i)
      p.samples.push_back({{{"queue", queues[i]}}, double(pending_[i])});
    fs.push_back(std::move(p));
    auto u = family("scheduler_unschedulable_pods",
                    "Unschedulable pods by the plugin that rejected them: a pod counts under each "
                    "plugin that rejected it on some node in its latest attempt.",
                    mt::gauge);
    for (const auto& [k, v] : unschedulable_by_plugin_)
      u.samples.push_back({{{"plugin", k.first}, {"profile", k.second}}, double(v)});
    fs.push_back(std::move(u));
  }
  fs.push_back(family("scheduler_pod_scheduling_attempts",
                      "Attempts a pod took until its node was proposed and bound.", mt::histogram));
  fs.back().histograms.push_back(attempts_to_schedule_.snapshot({}));
  // Koordinator's (pkg/scheduler/metrics/metrics.go).
  fs.push_back(family("scheduler_pod_scheduling_evaluated_nodes",
                      "Nodes the scheduler filtered for a pod in the cycle that proposed its node.",
                      mt::histogram));
  fs.back().histograms.push_back(evaluated_nodes_.snapshot({}));
  fs.push_back(family("scheduler_pod_scheduling_feasible_nodes",
                      "Nodes among the evaluated ones that passed every filter, in the cycle that "
                      "proposed the pod's node.",
                      mt::histogram));
  fs.back().histograms.push_back(feasible_nodes_.snapshot({}));
  for (auto& f : framework->families()) fs.push_back(std::move(f));
  if (!leader_name.empty()) {
    fs.push_back(family("leader_election_master_status",
                        "1 while this process holds the Lease, 0 otherwise (client-go's gauge).",
                        mt::gauge));
    fs.back().samples.push_back({{{"name", leader_name}}, double(leading.load())});
  }
  fs.push_back(family("colony_log_append_duration_seconds",
                      "Wall time of one append to the event log (a batch, all or none).",
                      mt::histogram));
  fs.back().histograms.push_back(log_append_seconds.snapshot({}));
  fs.push_back(one("colony_log_appends_total", "Appends to the event log by this process.",
                   mt::counter, double(log_appends.load())));
  fs.push_back(one("colony_log_records_total", "Records appended to the event log by this process.",
                   mt::counter, double(log_records.load())));
  fs.push_back(one("colony_log_next_offset", "The offset the log's next record gets (its length).",
                   mt::gauge, double(log_next.load())));
  const auto next = log_next.load(), read = log_read.load();
  fs.push_back(one("colony_log_consumer_lag_records",
                   "Records in the log the run loop has not read yet.", mt::gauge,
                   double(next > read ? next - read : 0)));
  fs.push_back(one("colony_run_replayed_records_total",
                   "Records of an earlier run replayed at the start.", mt::counter,
                   double(replayed.load())));
  fs.push_back(one("colony_run_delivered_records_total",
                   "Records handed to the components after the start.", mt::counter,
                   double(delivered.load())));
  fs.push_back(one("colony_run_observations_total",
                   "Observation records read after the start (the bridge's, and ClockTicked).",
                   mt::counter, double(observations.load())));
  fs.push_back(one("colony_run_decisions_total",
                   "Records the components and the binding arbitration appended.", mt::counter,
                   double(decisions.load())));
  fs.push_back(one("colony_run_clock_ticks_total",
                   "ClockTicked records appended for components' wake-ups.", mt::counter,
                   double(ticks.load())));
  fs.push_back(one("colony_run_write_failures_logged_total",
                   "WriteFailed records appended for writes given up.", mt::counter,
                   double(failures_logged.load())));
  {
    auto w = family("colony_api_writes_total",
                    "API writes the sink carried out, by write kind and result: 'written' (the "
                    "server took it), 'unchanged' (found already applied), 'failed' (given up).",
                    mt::counter);
    std::lock_guard lk(writes_mu_);
    for (const auto& [k, v] : writes_)
      w.samples.push_back({{{"kind", k.first}, {"result", k.second}}, double(v)});
    fs.push_back(std::move(w));
  }
  if (source) {
    fs.push_back(one("colony_source_watch_reconnects_total",
                     "Watches the informers re-established after a failure.", mt::counter,
                     double(source->reconnects)));
    fs.push_back(one("colony_source_gone_410_total",
                     "410 Gone answers the informers met (expired resourceVersion).", mt::counter,
                     double(source->gone)));
    fs.push_back(one("colony_source_relists_total",
                     "LISTs after the first (after a 410, or a restart without a usable version).",
                     mt::counter, double(source->relists)));
    fs.push_back(one("colony_source_records_total", "Observation records the bridge appended.",
                     mt::counter, double(source->events)));
    fs.push_back(one("colony_source_objects_refused_total",
                     "Objects translate refused (an ObjectRefused record each).", mt::counter,
                     double(source->bad_objects)));
    fs.push_back(
        one("colony_source_informers", "Informers started.", mt::gauge, double(source->informers)));
    fs.push_back(one("colony_source_kinds_skipped",
                     "Kinds skipped because their CRD is not installed.", mt::gauge,
                     double(source->kinds_skipped)));
  }
  return fs;
}

}  // namespace colony::run
