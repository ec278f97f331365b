// The sim's report is a fold of the log it wrote: a fresh metrics observer
// (sim/metrics_observer.hpp) fed the written log offline gives the same report, field by field;
// and the shared log audit (actors/entities/audit.hpp) finds the sim's log clean and flags forged
// variants of it.
//
// Each run writes its log to disk; the test reads it back (stores::open_log + read, which
// verifies every record), feeds every record in offset order to a new metrics_observer, samples
// it at the metrics instants, and compares metrics rows, quota rows and summary.json with what
// the sim wrote. The log records no sample points, but they are found from it: the sim samples
// every metricsIntervalSeconds from the start of its clock to the run's end (the event time of
// the log's last record), and a sample at virtual time t sees exactly the records with event time
// <= t (an instant's records all carry its time, and instants only move forward). The runs are
// chosen so that what the report counts actually happens: evictions, BE suppression,
// unschedulable pods are asserted non-zero where the run exercises them.
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "actors/entities/audit.hpp"
#include "actors/entities/world.hpp"
#include "messages/codec.hpp"
#include "sim/driver.hpp"
#include "sim/metrics_observer.hpp"
#include "stores/event_log.hpp"
#include "tests/sim/sim_fixture.hpp"

namespace fs = std::filesystem;
using namespace colony;
using namespace colony::sim_fixture;

namespace {

using messages::byte_buffer;
using messages::to_string_view;

struct observed {
  sim::run_result driver;             // what the sim reported
  std::vector<std::int64_t> samples;  // the metrics instants of the offline fold
  std::vector<byte_buffer> log;
  std::vector<sim::metrics_row> rows;
  std::vector<sim::quota_row> quota_rows;
  nlohmann::ordered_json summary;
  entities::audit_report audit;
  double replay_seconds = 0;
  // Per event, over the records in memory (kept logs only): the observer alone, the audit alone.
  double observer_ns = 0, audit_ns = 0;
};

std::uint64_t hex(const nlohmann::ordered_json& j) {
  return std::stoull(j.get<std::string>(), nullptr, 16);
}

// Runs the sim with a log, then rebuilds its report from the log alone.
observed run_and_observe(const trace::trace_set& t, const sim::sim_config& c, sim::run_options o,
                         const std::string& name, bool keep_log = true) {
  observed out;
  o.log_path = (fixture().root / ("observer-" + name)).string();
  auto r = sim::run_simulation(t, c, o);
  EXPECT_TRUE(r.has_value()) << (r ? "" : r.error().describe());
  if (!r) return out;
  out.driver = std::move(*r);

  const auto t0 = std::chrono::steady_clock::now();
  sim::observer_options oo;
  oo.usage_is_allocation = o.usage_override.value_or(c.usage) == sim::usage_model::none;
  oo.task_classes = sim::fgd_task_classes(t.openb_pods->rows);
  oo.pods_in_trace = t.openb_pods->rows.size();
  sim::metrics_observer obs(std::move(oo));
  // Every decision of the components names its cause, so the audit requires one.
  const entities::audit_options ao;
  entities::log_audit audit(ao);
  entities::world w;

  stores::log_options lo;
  lo.create_if_missing = false;
  lo.read_only = true;
  auto log = stores::open_log(o.log_path, lo);
  EXPECT_TRUE(log.has_value()) << (log ? "" : log.error().describe());
  if (!log) return out;
  // The metrics instants: from the start of the clock (rounded down to a report interval, as the
  // sim rounds --from-days) every metricsIntervalSeconds up to the end of the run, which is the
  // event time of the log's last record (the closing ClockTicked).
  const auto count = (*log)->end_offset();
  EXPECT_TRUE(count.has_value() && *count > 0);
  if (!count || *count == 0) return out;
  std::int64_t end_ms = -1;
  const auto tail = (*log)->read(*count - 1, no_offset, [&](log_offset, messages::bytes_view b) {
    end_ms = wire::GetEnvelope(b.data())->event_time_ms();
    return true;
  });
  EXPECT_TRUE(tail.has_value() && end_ms >= 0);
  const std::int64_t report_ms = c.node_metric_report_interval_s * 1000;
  const std::int64_t step_ms = c.metrics_interval_s * 1000;
  for (std::int64_t s = std::max<std::int64_t>(0, o.from_ms) / report_ms * report_ms; s <= end_ms;
       s += step_ms)
    out.samples.push_back(s);
  std::size_t next_sample = 0;
  auto rd = (*log)->read(0, no_offset, [&](log_offset, messages::bytes_view b) {
    const auto& env = *wire::GetEnvelope(b.data());
    // A sample at t saw exactly the records with event time <= t.
    for (; next_sample < out.samples.size() && out.samples[next_sample] < env.event_time_ms();
         ++next_sample)
      obs.sample(out.samples[next_sample]);
    obs.on_record(b);  // read() verified the record
    audit.on_event(env);
    w.apply(env);
    if (keep_log) out.log.emplace_back(b.begin(), b.end());
    return true;
  });
  EXPECT_TRUE(rd.has_value()) << (rd ? "" : rd.error().describe());
  for (; next_sample < out.samples.size(); ++next_sample) obs.sample(out.samples[next_sample]);
  out.rows = obs.rows();
  out.quota_rows = obs.quota_rows();
  sim::summary_header h;
  h.config = out.driver.summary["config"];
  h.trace = out.driver.summary["trace"];
  h.state_digest = w.digest();
  h.entities = w.entity_count();
  out.summary = obs.summary(h);
  out.audit = audit.finish();
  out.replay_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (keep_log && !out.log.empty()) {
    using clock = std::chrono::steady_clock;
    const double n = static_cast<double>(out.log.size());
    auto t1 = clock::now();
    sim::metrics_observer again(sim::observer_options{});
    for (const auto& rec : out.log) again.on_event(*wire::GetEnvelope(rec.data()));
    out.observer_ns = std::chrono::duration<double, std::nano>(clock::now() - t1).count() / n;
    t1 = clock::now();
    entities::log_audit a2(ao);
    for (const auto& rec : out.log) a2.on_event(*wire::GetEnvelope(rec.data()));
    (void)a2.finish();
    out.audit_ns = std::chrono::duration<double, std::nano>(clock::now() - t1).count() / n;
  }
  std::error_code ec;
  fs::remove_all(o.log_path, ec);
  return out;
}

void expect_rows_equal(const std::vector<sim::metrics_row>& want,
                       const std::vector<sim::metrics_row>& got) {
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t i = 0; i < want.size(); ++i) {
    const auto& a = want[i];
    const auto& b = got[i];
    SCOPED_TRACE("metrics row " + std::to_string(i) + " at " + std::to_string(a.time_ms) + " ms");
#define COLONY_FIELD(f) EXPECT_EQ(b.f, a.f) << #f
    COLONY_FIELD(time_ms);
    COLONY_FIELD(pods_running);
    COLONY_FIELD(pods_pending);
    COLONY_FIELD(cpu_capacity);
    COLONY_FIELD(cpu_requested);
    COLONY_FIELD(cpu_allocated);
    COLONY_FIELD(cpu_used);
    COLONY_FIELD(mem_capacity);
    COLONY_FIELD(mem_requested);
    COLONY_FIELD(mem_allocated);
    COLONY_FIELD(mem_used);
    COLONY_FIELD(batch_cpu_allocatable);
    COLONY_FIELD(batch_cpu_allocated);
    COLONY_FIELD(batch_cpu_used);
    COLONY_FIELD(batch_mem_allocatable);
    COLONY_FIELD(batch_mem_allocated);
    COLONY_FIELD(batch_mem_used);
    COLONY_FIELD(gpu_total);
    COLONY_FIELD(gpu_allocated);
    COLONY_FIELD(gpu_frag);  // the same sums in the same order: bit-identical
    COLONY_FIELD(evictions);
    COLONY_FIELD(unschedulable);
  }
}

void expect_quota_rows_equal(const std::vector<sim::quota_row>& want,
                             const std::vector<sim::quota_row>& got) {
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t i = 0; i < want.size(); ++i) {
    const auto& a = want[i];
    const auto& b = got[i];
    SCOPED_TRACE("quota row " + std::to_string(i) + ": " + a.quota + " at " +
                 std::to_string(a.time_ms) + " ms");
    COLONY_FIELD(time_ms);
    COLONY_FIELD(quota);
    COLONY_FIELD(min_cpu);
    COLONY_FIELD(max_cpu);
    COLONY_FIELD(runtime_cpu);
    COLONY_FIELD(used_cpu);
    COLONY_FIELD(request_cpu);
    COLONY_FIELD(runtime_memory);
    COLONY_FIELD(used_memory);
#undef COLONY_FIELD
  }
}

// Section by section (readable failures), then the whole document byte for byte.
void expect_summary_equal(const nlohmann::ordered_json& want, const nlohmann::ordered_json& got) {
  for (const auto& [k, v] : want.items()) {
    ASSERT_TRUE(got.contains(k)) << k;
    EXPECT_EQ(got[k].dump(2), v.dump(2)) << "summary section " << k;
  }
  EXPECT_EQ(got.dump(2), want.dump(2));
}

void expect_same_report(const observed& o) {
  expect_rows_equal(o.driver.rows, o.rows);
  expect_quota_rows_equal(o.driver.quota_rows, o.quota_rows);
  expect_summary_equal(o.driver.summary, o.summary);
  // The world fold of the log is the actors' fold (the digest in the header came from it).
  EXPECT_EQ(hex(o.driver.summary["events"]["state_digest"]),
            hex(o.summary["events"]["state_digest"]));
}

void expect_clean(const entities::audit_report& a) {
  EXPECT_TRUE(a.clean()) << a.describe();
  EXPECT_EQ(a.unanswered_proposals, 0u);
  EXPECT_EQ(a.pending_in_flight, 0u);
  EXPECT_EQ(a.proposals, a.scheduled + a.bind_rejections);
}

std::uint64_t u64(const nlohmann::ordered_json& j) { return j.get<std::uint64_t>(); }

void print(const char* what, const observed& o) {
  const auto& s = o.driver.summary;
  std::printf(
      "%s: %zu events, %zu samples, %zu quota rows, replay %.2f s (observer %.0f ns/event, audit "
      "%.0f ns/event); scheduled %llu, unschedulable "
      "%llu, bind rejections %llu, evicted %llu, suppress updates %llu, batch updates %llu; audit: "
      "%llu decisions (%llu without causation), %llu pending at end (%llu unschedulable, %llu bind "
      "rejected, %llu not attempted)\n",
      what, static_cast<std::size_t>(o.audit.events), o.samples.size(), o.quota_rows.size(),
      o.replay_seconds, o.observer_ns, o.audit_ns,
      static_cast<unsigned long long>(u64(s["pods"]["scheduled"])),
      static_cast<unsigned long long>(u64(s["pods"]["unschedulable_events"])),
      static_cast<unsigned long long>(u64(s["pods"]["bind_rejections"])),
      static_cast<unsigned long long>(u64(s["pods"]["evicted"])),
      static_cast<unsigned long long>(u64(s["batch"]["be_suppress_updates"])),
      static_cast<unsigned long long>(u64(s["batch"]["batch_updates"])),
      static_cast<unsigned long long>(o.audit.decisions),
      static_cast<unsigned long long>(o.audit.decisions_without_causation),
      static_cast<unsigned long long>(o.audit.pending_at_end),
      static_cast<unsigned long long>(o.audit.pending_unschedulable),
      static_cast<unsigned long long>(o.audit.pending_bind_rejected),
      static_cast<unsigned long long>(o.audit.pending_not_attempted));
}

// A cut the cluster cannot hold: 8 nodes (every 200th), the pods created in days 140-149, and
// pods that run to the end of the trace stay (running-stays). Pods wait (unschedulable, pending
// at the end, withdrawn while pending) and GPUs fragment. The config is aggressive-reclaim with
// its BE memory eviction threshold lowered from 85 % to 20 %: openb nodes are memory-rich, so
// the shipped threshold is never reached on this trace and no eviction would happen.
trace::trace_set load_pressure_cut() {
  static const fs::path dir = [] {
    const auto d = fixture().root / "pressure";
    write_cut_trace(d, {.node_step = 200, .first_day = 140, .stop_day = 149});
    return d;
  }();
  auto t = trace::load_trace_set(dir.string());
  EXPECT_TRUE(t.has_value()) << (t ? "" : t.error().describe());
  return *t;
}

sim::sim_config eviction_config() {
  std::ifstream in(repo_root() + "/sim/configs/aggressive-reclaim.yaml");
  std::stringstream ss;
  ss << in.rdbuf();
  std::string text = ss.str();
  const std::string from = R"("memoryEvictThresholdPercent": 85)";
  const auto at = text.find(from);
  EXPECT_NE(at, std::string::npos);
  if (at != std::string::npos)
    text.replace(at, from.size(), R"("memoryEvictThresholdPercent": 20)");
  auto c = sim::parse_sim_config(text, "aggressive-reclaim-evict-20.yaml");
  EXPECT_TRUE(c.has_value()) << (c ? "" : c.error().describe());
  return *c;
}

const observed& under_pressure() {
  static const observed o = [] {
    const auto t = load_pressure_cut();
    sim::run_options ro;
    ro.lifetime_override = sim::pod_lifetime::running_stays;
    return run_and_observe(t, eviction_config(), ro, "pressure");
  }();
  return o;
}

}  // namespace

TEST(SimObserver, CutTraceUnderPressureEqualsTheDriversReport) {
  const auto& o = under_pressure();
  print("pressure cut, aggressive-reclaim evicting at 20 %, v2018-curves, running-stays", o);
  expect_same_report(o);
  const auto& p = o.driver.summary["pods"];
  // What the report counts actually happened.
  EXPECT_GT(u64(p["evicted"]), 0u);
  EXPECT_GT(u64(p["unschedulable_events"]), 0u);
  EXPECT_GT(u64(p["completed"]), 0u);
  EXPECT_GT(u64(p["withdrawn_while_pending"]), 0u);
  EXPECT_GT(u64(p["pending_at_end"]), 0u);
  EXPECT_GT(u64(o.driver.summary["batch"]["be_suppress_updates"]), 0u);
  EXPECT_GT(u64(o.driver.summary["events"]["node_metric_reports"]), 0u);
  EXPECT_GT(o.driver.summary["gpu"]["avg_gpu_fragmentation_pct_of_total"].get<double>(), 0.0);
  std::int64_t batch_used = 0;
  for (const auto& r : o.rows) batch_used = std::max(batch_used, r.batch_cpu_used);
  EXPECT_GT(batch_used, 0);
}

// ElasticQuota with limits the cut's demand exceeds, under the usage model: quota rows from
// QuotaRuntimeUpdated, refusals by ElasticQuota, and batch pods.
TEST(SimObserver, CutTraceElasticQuotaWithUsageEqualsTheDriversReport) {
  const auto t = load_cut();
  sim::run_options ro;
  ro.usage_override = sim::usage_model::v2018_curves;
  const auto o = run_and_observe(t, small_quotas(), ro, "quota");
  print("elastic-quota (small), v2018-curves", o);
  expect_same_report(o);
  expect_clean(o.audit);
  EXPECT_GT(o.quota_rows.size(), 0u);
  std::uint64_t refused = 0;
  for (const auto& q : o.driver.summary["quota"]["by_quota"]) refused += u64(q["attempts_refused"]);
  EXPECT_GT(refused, 0u);
  EXPECT_GT(u64(o.driver.summary["scheduling_latency_virtual"]["batch"]["count"]), 0u);
  EXPECT_GT(u64(o.driver.summary["events"]["by_type"]["QuotaRuntimeUpdated"]), 0u);
}

// The README's run: the whole bundled trace, usage model none, running pods stay.
TEST(SimObserver, FullBundledTraceReadmeRunEqualsTheDriversReport) {
  auto t = trace::load_trace_set(traces_dir());
  ASSERT_TRUE(t.has_value()) << t.error().describe();
  auto c = shipped("koordinator-defaults");
  sim::run_options ro;
  ro.usage_override = sim::usage_model::none;
  ro.lifetime_override = sim::pod_lifetime::running_stays;
  ro.threads = 2;
  const auto o = run_and_observe(*t, c, ro, "readme", false);
  print("README: bundled trace, usage none, running-stays", o);
  expect_same_report(o);
  expect_clean(o.audit);
  EXPECT_EQ(u64(o.driver.summary["pods"]["submitted"]), 8152u);
  EXPECT_GT(u64(o.driver.summary["pods"]["scheduled"]), 0u);
}

// ---- the shared audit on the sim's log ---------------------------------------------------------

namespace {

entities::audit_report audit_of(const std::vector<byte_buffer>& log) {
  return entities::audit_log(log, entities::audit_options{});
}

// The index of the first record of a type satisfying pred.
template <class Pred>
std::size_t find_record(const std::vector<byte_buffer>& log, wire::Payload type, Pred pred) {
  for (std::size_t i = 0; i < log.size(); ++i) {
    const auto& env = *wire::GetEnvelope(log[i].data());
    if (env.payload_type() == type && pred(env)) return i;
  }
  return log.size();
}

}  // namespace

TEST(SimAudit, CurrentSimLogIsClean) {
  const auto& o = under_pressure();
  ASSERT_FALSE(o.log.empty());
  expect_clean(o.audit);
  EXPECT_EQ(o.audit.events, o.log.size());
  EXPECT_GT(o.audit.evictions, 0u);
  EXPECT_GT(o.audit.unschedulable, 0u);
  EXPECT_GT(o.audit.pending_at_end, 0u);
  EXPECT_EQ(o.audit.pending_at_end, u64(o.driver.summary["pods"]["pending_at_end"]));
  EXPECT_EQ(o.audit.evictions, u64(o.driver.summary["pods"]["evicted"]));
  // The same through audit_log over the records (decoded there).
  const auto again = audit_of(o.log);
  EXPECT_TRUE(again.clean()) << again.describe();
  // The audit requires a cause of every decision, and every component decision names one.
  EXPECT_GT(o.audit.decisions, 0u);
  EXPECT_EQ(o.audit.decisions_without_causation, 0u);
  EXPECT_EQ(again.count(entities::audit_check::decision_without_causation), 0u);
}

TEST(SimAudit, ForgedSimLogsAreFlagged) {
  const auto& base = under_pressure().log;
  ASSERT_FALSE(base.empty());
  using entities::audit_check;

  {  // A binding that asks for more CPU than its node has.
    auto log = base;
    const auto i = find_record(log, wire::Payload::PodScheduled, [](const wire::Envelope& env) {
      const auto* r = env.payload_as_PodScheduled()->requests();
      return r != nullptr && r->cpu_milli() > 0;
    });
    ASSERT_LT(i, log.size());
    auto* env = wire::GetMutableEnvelope(log[i].data());
    auto* ps = static_cast<wire::PodScheduled*>(env->mutable_payload());
    ASSERT_TRUE(ps->mutable_requests()->mutate_cpu_milli(1'000'000'000));
    const auto a = audit_of(log);
    EXPECT_GT(a.count(audit_check::over_allocatable), 0u) << a.describe();
  }
  {  // A decided binding that takes batch-cpu above its node's batch allocatable is flagged; the
     // same binding observed (no proposal: a koordlet's log, another scheduler's pod) is a fact
     // and is not.
    auto log = base;
    const auto i = find_record(log, wire::Payload::PodScheduled, [](const wire::Envelope& env) {
      const auto* e = env.payload_as_PodScheduled();
      return e->proposal_offset() > 0 && e->requests() != nullptr &&
             e->requests()->batch_cpu_milli() > 0;
    });
    ASSERT_LT(i, log.size());
    auto* ps = static_cast<wire::PodScheduled*>(
        wire::GetMutableEnvelope(log[i].data())->mutable_payload());
    ASSERT_TRUE(ps->mutable_requests()->mutate_batch_cpu_milli(1'000'000'000));
    EXPECT_GT(audit_of(log).count(audit_check::over_batch_at_bind), 0u);
    ASSERT_TRUE(ps->mutate_proposal_offset(-1));
    const auto a = audit_of(log);
    EXPECT_EQ(a.count(audit_check::over_batch_at_bind), 0u) << a.describe();
    EXPECT_GT(a.unproposed_bindings, 0u);
  }
  {  // A second binding of a bound pod (its proposal answered twice).
    auto log = base;
    const auto i = find_record(log, wire::Payload::PodScheduled, [](auto&) { return true; });
    ASSERT_LT(i, log.size());
    auto dup = log[i];
    ASSERT_TRUE(messages::patch_offset(dup, log_offset{log.size()}));
    log.push_back(std::move(dup));
    const auto a = audit_of(log);
    EXPECT_EQ(a.count(audit_check::bound_twice), 1u) << a.describe();
    EXPECT_EQ(a.count(audit_check::answered_twice), 1u) << a.describe();
  }
  {  // An eviction without a reason.
    auto log = base;
    const auto i = find_record(log, wire::Payload::PodEvicted, [](auto&) { return true; });
    ASSERT_LT(i, log.size());
    auto* ev =
        static_cast<wire::PodEvicted*>(wire::GetMutableEnvelope(log[i].data())->mutable_payload());
    ASSERT_TRUE(ev->mutate_reason(wire::EvictionReason::Unknown));
    const auto a = audit_of(log);
    EXPECT_EQ(a.count(audit_check::eviction_without_reason), 1u) << a.describe();
  }
  {  // A decision without a cause.
    auto log = base;
    const auto i = find_record(log, wire::Payload::PodBindProposed, [](auto&) { return true; });
    ASSERT_LT(i, log.size());
    ASSERT_TRUE(wire::GetMutableEnvelope(log[i].data())->mutate_causation(-1));
    const auto a = audit_of(log);
    EXPECT_EQ(a.count(audit_check::decision_without_causation), 1u) << a.describe();
  }
  {  // Admission of a pod after its end (a copy of its PodMutated appended after PodFinished).
    auto log = base;
    const auto f = find_record(log, wire::Payload::PodFinished, [](auto&) { return true; });
    ASSERT_LT(f, log.size());
    const std::string pod(messages::to_string_view(
        wire::GetEnvelope(log[f].data())->payload_as_PodFinished()->pod()));
    const auto m = find_record(log, wire::Payload::PodMutated, [&](const wire::Envelope& env) {
      return messages::to_string_view(env.payload_as_PodMutated()->name()) == pod;
    });
    ASSERT_LT(m, f);
    auto late = log[m];
    ASSERT_TRUE(messages::patch_offset(late, log_offset{log.size()}));
    log.push_back(std::move(late));
    const auto a = audit_of(log);
    EXPECT_EQ(a.count(audit_check::admitted_after_end), 1u) << a.describe();
  }
  {  // A decision whose cause comes after it.
    auto log = base;
    const auto i = find_record(log, wire::Payload::PodEvicted, [](auto&) { return true; });
    ASSERT_LT(i, log.size());
    auto* env = wire::GetMutableEnvelope(log[i].data());
    ASSERT_TRUE(env->mutate_causation(static_cast<std::int64_t>(env->offset()) + 1));
    const auto a = audit_of(log);
    EXPECT_EQ(a.count(audit_check::causation_not_earlier), 1u) << a.describe();
  }
  {  // Negative batch allocatable.
    auto log = base;
    const auto i =
        find_record(log, wire::Payload::NodeBatchResourceUpdated, [](const wire::Envelope& env) {
          return env.payload_as_NodeBatchResourceUpdated()->batch_cpu_milli() > 0;
        });
    ASSERT_LT(i, log.size());
    auto* b = static_cast<wire::NodeBatchResourceUpdated*>(
        wire::GetMutableEnvelope(log[i].data())->mutable_payload());
    ASSERT_TRUE(b->mutate_batch_cpu_milli(-1));
    const auto a = audit_of(log);
    EXPECT_EQ(a.count(audit_check::negative_colocation), 1u) << a.describe();
  }
  {  // A proposal left without answer: its PodScheduled (and what follows from it) dropped.
    auto log = base;
    const auto i = find_record(log, wire::Payload::PodScheduled, [](auto&) { return true; });
    ASSERT_LT(i, log.size());
    log.erase(log.begin() + static_cast<std::ptrdiff_t>(i));
    const auto a = audit_of(log);
    EXPECT_EQ(a.count(audit_check::unanswered_proposal), 1u) << a.describe();
  }
  {  // Schema v3/v4 records: counted, never violations, as long as a WriteFailed names as its cause
     // a decision a sink carries out; one naming an observation is flagged.
    auto log = base;
    const auto s = find_record(log, wire::Payload::PodScheduled, [](auto&) { return true; });
    const auto o = find_record(log, wire::Payload::PodSubmitted, [](auto&) { return true; });
    ASSERT_LT(s, log.size());
    ASSERT_LT(o, log.size());
    messages::event_builder b;
    auto& f = b.fbb();
    const auto append = [&](messages::byte_buffer rec) {
      ASSERT_TRUE(messages::patch_offset(rec, log_offset{log.size()}));
      log.push_back(std::move(rec));
    };
    const auto refused = wire::CreateObjectRefusedDirect(
        f, "ElasticQuota", "q", "q", "", "1", "spec.min.cpu", "exceeds", "invalid_input");
    append(
        b.finish({event_time{0}, wire::EntityKind::ElasticQuota, "q", -1, "bridge/k8s"}, refused));
    // Schema v4: a recorded object, an observation no invariant reads: counted only.
    const auto observed = wire::CreateObjectObservedDirect(f, "scheduling.koordinator.sh/v1alpha1",
                                                           "Reservation", "", "r1", "uid-r1", "5",
                                                           nullptr, R"({"ttl":"5m"})", "", false);
    append(b.finish({event_time{0}, wire::EntityKind::Object, "Reservation/r1", -1, "bridge/k8s"},
                    observed));
    for (const auto cause : {s, o}) {
      const auto failed =
          wire::CreateWriteFailedDirect(f, wire::WriteKind::binding, "ns/p", 404, 1, "not found");
      append(b.finish({event_time{0}, wire::EntityKind::Pod, "ns/p",
                       static_cast<std::int64_t>(cause), "kube-sink"},
                      failed));
    }
    const auto a = audit_of(log);
    EXPECT_EQ(a.objects_refused, 1u);
    EXPECT_EQ(a.objects_observed, 1u);
    EXPECT_EQ(a.writes_failed, 2u);
    EXPECT_EQ(a.count(audit_check::failure_without_decision), 1u) << a.describe();
    EXPECT_EQ(a.violation_count, 1u) << a.describe();
  }
  {  // A PodMigrationJob a user created and aborted, observed by a bridge (causation -1): the
     // user's decisions, not Colony's, so no cause is owed; Colony's own decisions still owe one.
    auto log = base;
    messages::event_builder b;
    auto& f = b.fbb();
    const auto append = [&](messages::byte_buffer rec) {
      ASSERT_TRUE(messages::patch_offset(rec, log_offset{log.size()}));
      log.push_back(std::move(rec));
    };
    const auto created = wire::CreateMigrationJobCreatedDirect(
        f, "user-job", "ns/p", "EvictDirectly", "", 0, "kubectl-create");
    append(b.finish(
        {event_time{0}, wire::EntityKind::PodMigrationJob, "user-job", -1, "bridge/k8s"}, created));
    const auto aborted =
        wire::CreateMigrationJobPhaseChangedDirect(f, "user-job", "Aborted", "", "stop");
    append(b.finish(
        {event_time{0}, wire::EntityKind::PodMigrationJob, "user-job", -1, "bridge/k8s"}, aborted));
    auto a = audit_of(log);
    EXPECT_EQ(a.count(audit_check::decision_without_causation), 0u) << a.describe();
    const auto i = find_record(log, wire::Payload::PodBindProposed, [](auto&) { return true; });
    ASSERT_LT(i, log.size());
    ASSERT_TRUE(wire::GetMutableEnvelope(log[i].data())->mutate_causation(-1));
    a = audit_of(log);
    EXPECT_EQ(a.count(audit_check::decision_without_causation), 1u) << a.describe();
  }
  {  // An eviction of a pod that is not bound (the evicted pod's binding answered "rejected").
    auto log = base;
    const auto e = find_record(log, wire::Payload::PodEvicted, [](auto&) { return true; });
    ASSERT_LT(e, log.size());
    const auto pod = std::string(
        to_string_view(wire::GetEnvelope(log[e].data())->payload_as_PodEvicted()->pod()));
    const auto i = find_record(log, wire::Payload::PodScheduled, [&](const wire::Envelope& env) {
      return to_string_view(env.payload_as_PodScheduled()->pod()) == pod;
    });
    ASSERT_LT(i, e);
    log.erase(log.begin() + static_cast<std::ptrdiff_t>(i));
    const auto a = audit_of(log);
    EXPECT_GE(a.count(audit_check::evicted_not_bound), 1u) << a.describe();
  }
}
