#include "run/cluster_run.hpp"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <unordered_set>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "actors/entities/component.hpp"
#include "actors/entities/entity_actors.hpp"
#include "bridges/kubernetes/api_client.hpp"
#include "bridges/kubernetes/kube_time.hpp"
#include "bridges/kubernetes/kubeconfig.hpp"
#include "bridges/kubernetes/source.hpp"
#include "bridges/kubernetes/webhook_registration.hpp"
#include "bridges/kubernetes/write_failed.hpp"
#include "messages/codec.hpp"
#include "run/admission_webhooks.hpp"
#include "run/control_plane.hpp"
#include "run/metrics_server.hpp"
#include "run/run_metrics.hpp"
#include "run/sink_pool.hpp"
#include "run/sink_position.hpp"
#include "run/webhook_certs.hpp"
#include "run/webhook_server.hpp"
#include "stores/event_log.hpp"

namespace colony::run {

namespace {

using clock = std::chrono::system_clock;

std::int64_t wall_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(clock::now().time_since_epoch())
      .count();
}

// The first record of a leader's term: ConfigUpdated kind "Lease", named NAMESPACE/NAME, with
// the Lease's spec as this holder wrote it (the shape `colony elect` logs). An observation: no
// component reads it; it shows in the log who led from where on.
messages::byte_buffer lease_record(const kube::lease_options& lo, std::int64_t acquired_ms) {
  const nlohmann::json spec{
      {"holderIdentity", lo.identity},
      {"leaseDurationSeconds",
       std::chrono::duration_cast<std::chrono::seconds>(lo.lease_duration).count()},
      {"acquireTime", kube::micro_time(acquired_ms)}};
  const std::string name = lo.lease_namespace + "/" + lo.name;
  const std::string body = spec.dump();
  messages::event_builder b;
  auto& fbb = b.fbb();
  const auto kind = fbb.CreateString("Lease");
  const auto n = fbb.CreateString(name);
  const auto s = fbb.CreateString(body);
  const auto payload = wire::CreateConfigUpdated(fbb, kind, n, s);
  messages::header h;
  h.time = event_time{acquired_ms};
  h.kind = wire::EntityKind::Cluster;
  h.key = "lease";
  h.source = "colony-run";
  return b.finish(h, payload);
}

// The log every writer of the run appends through: times and counts appends for /metrics.
class instrumented_log final : public stores::event_log {
 public:
  instrumented_log(stores::event_log& log, run_metrics& m) : log_(log), m_(m) {}
  result<log_offset> append(std::span<const messages::bytes_view> records) override {
    const auto t0 = std::chrono::steady_clock::now();
    auto r = log_.append(records);
    m_.log_append_seconds.observe(
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    if (r) counted(*r, records.size());
    return r;
  }
  result<std::uint64_t> read(log_offset from, log_offset to,
                             const stores::record_sink& sink) override {
    return log_.read(from, to, sink);
  }
  result<log_offset> end_offset() override { return log_.end_offset(); }
  result<log_offset> wait_for(log_offset offset, std::chrono::milliseconds timeout) override {
    return log_.wait_for(offset, timeout);
  }
  std::string describe() const override { return log_.describe(); }
  result<log_offset> append_bulk(std::span<const messages::bytes_view> records,
                                 const bulk_options& opts) override {
    auto r = log_.append_bulk(records, opts);
    if (r) counted(*r, records.size());
    return r;
  }
  result<void> flush() override { return log_.flush(); }
  result<void> sync_appended() override { return log_.sync_appended(); }

 private:
  void counted(log_offset first, std::size_t n) {
    ++m_.log_appends;
    m_.log_records += n;
    // Appends of different threads finish in any order: the end offset only grows.
    auto cur = m_.log_next.load();
    while (cur < first + n && !m_.log_next.compare_exchange_weak(cur, first + n)) {
    }
  }
  stores::event_log& log_;
  run_metrics& m_;
};

// What /readyz and /healthz read, set by the run as it starts (any thread).
struct run_health {
  std::mutex mu;
  std::string phase = "opening the event log";  // why not ready; "" once serving
  kube::observation_source* source = nullptr;   // while it exists
  std::chrono::steady_clock::time_point api_ok = std::chrono::steady_clock::now();
  std::string api_error;
  void set_phase(std::string p) {
    std::lock_guard lk(mu);
    phase = std::move(p);
  }
};

// Runs `f` when the scope ends (every return path).
struct scope_exit {
  std::function<void()> f;
  ~scope_exit() { f(); }
};

// Asks the API server GET /version every 5 s on a connection of its own, so that /readyz can
// tell an unreachable server from a quiet cluster (informers see nothing either way).
class api_probe {
 public:
  api_probe(const kube::connection& conn, run_health& h) : h_(h) {
    kube::client_options co;
    co.connect_timeout = std::chrono::seconds(5);
    co.request_timeout = std::chrono::seconds(5);
    auto c = kube::api_client::open(conn, co);
    if (!c) {
      std::lock_guard lk(h_.mu);
      h_.api_error = c.error().describe();
      return;
    }
    client_ = std::make_unique<kube::api_client>(std::move(*c));
    thread_ = std::thread([this] { loop(); });
  }
  ~api_probe() {
    {
      std::lock_guard lk(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    if (thread_.joinable()) thread_.join();
  }
  api_probe(const api_probe&) = delete;
  api_probe& operator=(const api_probe&) = delete;

 private:
  void loop() {
    std::unique_lock lk(mu_);
    while (!stop_) {
      lk.unlock();
      auto r = client_->get("/version");
      {
        std::lock_guard hl(h_.mu);
        if (r && r->status >= 200 && r->status < 500) {
          h_.api_ok = std::chrono::steady_clock::now();
          h_.api_error.clear();
        } else {
          h_.api_error =
              r ? "GET /version answered " + std::to_string(r->status) : r.error().describe();
        }
      }
      lk.lock();
      cv_.wait_for(lk, std::chrono::seconds(5), [this] { return stop_; });
    }
  }
  run_health& h_;
  std::unique_ptr<kube::api_client> client_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::thread thread_;
};

// The webhooks' parts that need no apiserver: the address, the Service, the certificate.
struct webhook_setup {
  listen_address at;
  kube::webhook_registration reg;
  webhook_tls tls;
};

result<webhook_setup> prepare_webhooks(const run_options& o, const std::string& state) {
  webhook_setup w;
  auto at = parse_listen_address(o.webhook_addr, "--webhook-addr");
  if (!at) return tl::unexpected(at.error());
  w.at = *at;
  if (!o.webhook_url.empty() && !o.webhook_service.empty())
    return fail(errc::invalid_input, "give --webhook-url or --webhook-service, not both",
                "--webhook-url");
  std::vector<std::string> hosts;
  if (!o.webhook_url.empty()) {
    if (!o.webhook_url.starts_with("https://"))
      return fail(errc::invalid_input, "'" + o.webhook_url + "' is not an https:// URL",
                  "--webhook-url");
    w.reg.url = o.webhook_url;
    while (w.reg.url.ends_with("/")) w.reg.url.pop_back();
    auto hp = w.reg.url.substr(8);
    hp = hp.substr(0, hp.find('/'));
    hosts.push_back(hp.substr(0, hp.rfind(':') == std::string::npos ? hp.size() : hp.rfind(':')));
  } else if (!o.webhook_service.empty()) {
    const auto slash = o.webhook_service.find('/');
    if (slash == std::string::npos || slash == 0 || slash + 1 == o.webhook_service.size())
      return fail(errc::invalid_input, "'" + o.webhook_service + "' is not NAMESPACE/NAME[:PORT]",
                  "--webhook-service");
    w.reg.service_namespace = o.webhook_service.substr(0, slash);
    std::string name = o.webhook_service.substr(slash + 1);
    if (const auto colon = name.find(':'); colon != std::string::npos) {
      try {
        w.reg.service_port = std::stoi(name.substr(colon + 1));
      } catch (const std::exception&) {
        w.reg.service_port = 0;
      }
      if (w.reg.service_port <= 0 || w.reg.service_port > 65535)
        return fail(errc::invalid_input, "'" + o.webhook_service + "': the port is not 1..65535",
                    "--webhook-service");
      name = name.substr(0, colon);
    }
    w.reg.service_name = name;
    // The names the apiserver may dial a Service by (k8s.io/apiserver/pkg/util/webhook
    // ServiceResolver: NAME.NAMESPACE.svc).
    const std::string n = name + "." + w.reg.service_namespace;
    for (const auto& h : {name, n, n + ".svc", n + ".svc.cluster.local"}) hosts.push_back(h);
  }
  if (w.at.host != "0.0.0.0" && w.at.host != "::")
    if (std::find(hosts.begin(), hosts.end(), w.at.host) == hosts.end()) hosts.push_back(w.at.host);
  if (hosts.empty()) hosts.push_back("127.0.0.1");
  auto tls = ensure_webhook_tls(
      o.webhook_cert_dir.empty() ? state + ".webhook-certs" : o.webhook_cert_dir, hosts);
  if (!tls) return tl::unexpected(tls.error());
  w.tls = std::move(*tls);
  w.reg.ca_bundle_pem = w.tls.ca_pem;
  w.reg.elastic_quota = o.elastic_quota;
  return w;
}

}  // namespace

result<run_stats> run_cluster(const run_options& o) {
  run_stats st;
  run_metrics m;
  // Before the metrics server starts: its threads read the name.
  if (o.leader_election) m.leader_name = o.leader_election->name;
  run_health health;
  // The server starts first, so that /healthz answers and /readyz says why not during a long
  // replay; it stops (joined) before any of the objects its handlers read is destroyed: those
  // above, and the source, which it reads only through health.source (cleared under the lock).
  std::unique_ptr<metrics_server> server;
  if (!o.metrics_addr.empty()) {
    auto at = parse_listen_address(o.metrics_addr);
    if (!at) return tl::unexpected(at.error());
    metrics_handlers hs;
    hs.healthz = [&m, &health]() -> probe_result {
      // The run loop turns every poll (20 ms) unless an API write is retried; a minute without
      // a turn is a stuck loop.
      const auto now = std::chrono::duration_cast<std::chrono::milliseconds>(
                           std::chrono::steady_clock::now().time_since_epoch())
                           .count();
      const auto age = now - m.heartbeat_ms.load();
      if (m.heartbeat_ms.load() != 0 && age > 60'000)
        return {false, fmt::format("the run loop has not turned for {} s", age / 1000)};
      std::lock_guard lk(health.mu);
      if (health.source)
        if (auto f = health.source->failure())
          return {false, "the Kubernetes source stopped: " + f->describe()};
      return {true, {}};
    };
    hs.readyz = [&health, &o]() -> probe_result {
      std::lock_guard lk(health.mu);
      if (!health.phase.empty()) return {false, health.phase};
      if (!health.source) return {false, "the informers have not synced yet"};
      // Name the informers still listing and why, so that a LIST refused (403: a missing RBAC
      // rule) says which resource from the probe itself.
      if (const auto waiting = health.source->unsynced(); !waiting.empty()) {
        std::string why = "the informers have not synced yet:";
        for (const auto& w : waiting) why += (why.back() == ':' ? " " : "; ") + w;
        return {false, why};
      }
      const auto since = std::chrono::steady_clock::now() - health.api_ok;
      if (since > o.api_unreachable_after)
        return {false, fmt::format("the API server has not answered for {} s: {}",
                                   std::chrono::duration_cast<std::chrono::seconds>(since).count(),
                                   health.api_error)};
      return {true, {}};
    };
    hs.metrics = [&m, &health] {
      std::optional<kube::source_counters> sc;
      {
        std::lock_guard lk(health.mu);
        if (health.source) sc = health.source->counters();
      }
      return write_exposition(m.families(sc ? &*sc : nullptr));
    };
    auto srv = metrics_server::start(*at, std::move(hs));
    if (!srv) return tl::unexpected(srv.error());
    server = std::move(*srv);
    if (o.on_metrics_listening) o.on_metrics_listening(server->port());
  }
  scope_exit stop_server{[&server] {
    if (server) server->stop();
  }};
  m.beat(std::chrono::steady_clock::now());
  const std::string state = o.state_path.empty() ? o.log_path : o.state_path;
  if (state.starts_with("kafka://"))
    return fail(errc::invalid_input,
                "a Kafka log needs a state path for the sink position and the source checkpoint "
                "(--state PATH)",
                "--state");
  auto conn = o.kubeconfig.empty() ? kube::in_cluster() : kube::load_kubeconfig(o.kubeconfig);
  if (!conn) return tl::unexpected(conn.error());
  // The admission webhooks' components, fed every record the host is (deliver_one), so they
  // answer from the log's state; served once the history is replayed, registered once the
  // informers' first state has been read (docs/operating.md "Admission webhooks").
  std::optional<webhook_setup> wh;
  std::unique_ptr<admission_webhooks> hooks;
  if (!o.webhook_addr.empty()) {
    auto w = prepare_webhooks(o, state);
    if (!w) return tl::unexpected(w.error());
    wh = std::move(*w);
    hooks = std::make_unique<admission_webhooks>(o.elastic_quota);
  }
  std::unique_ptr<webhook_server> hook_server;
  scope_exit stop_hooks{[&hook_server] {
    if (hook_server) hook_server->stop();
  }};
  // Group durability: appends are not synced one by one (an fsync costs ~3.6 ms here, and the
  // bridge, the components and the binding stages append several times per pod); the log is
  // synced once before the sink carries out what it read and before the source checkpoints,
  // so nothing acted on or vouched for can be lost. A crash loses at most an unsynced tail
  // that nothing outside has seen (a prefix survives).
  stores::log_options lo;
  lo.sync = false;
  const auto stopped = [&o] { return o.stop && o.stop(); };
  // Leader election: nothing of the run starts before this process holds the Lease.
  std::unique_ptr<kube::leader_election> leader;
  if (o.leader_election) {
    auto le = kube::leader_election::start(*conn, *o.leader_election);
    if (!le) return tl::unexpected(le.error());
    leader = std::move(*le);
    const bool leads = leader->wait_leading([&] {
      health.set_phase("waiting to lead: " + leader->describe());
      return stopped();
    });
    if (!leads) {
      if (leader->lost())
        return fail(errc::failed_precondition,
                    "leader election lost before the run started: " + leader->describe(),
                    "--leader-elect");
      return st;  // stopped while waiting: nothing was started
    }
    st.led = true;
    m.leading = 1;
    if (o.progress) o.progress("colony run: leading (" + leader->describe() + ")");
  }
  auto opened = stores::open_log(o.log_path, lo);
  // A predecessor that lost the Lease may still hold the log (a paused process keeps its
  // lock): the successor waits for it, and so never writes beside it.
  for (bool said = false; !opened && leader && opened.error().code == errc::unavailable &&
                          !leader->lost() && !stopped();
       said = true) {
    health.set_phase("waiting for the event log: " + opened.error().describe());
    if (!said && o.progress)
      o.progress("colony run: leading, waiting for the event log: " + opened.error().describe());
    for (auto t = std::chrono::steady_clock::now();
         std::chrono::steady_clock::now() - t < o.leader_election->retry_period && !stopped();)
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    opened = stores::open_log(o.log_path, lo);
  }
  if (leader && leader->lost())
    return fail(errc::failed_precondition,
                "leader election lost while waiting for the event log: " + leader->describe(),
                "--leader-elect");
  if (!opened) return tl::unexpected(opened.error());
  if (leader) {
    // The term's first record: who leads from here on, in the log's own order.
    const auto rec = lease_record(*o.leader_election, leader->acquired_ms());
    const std::vector<messages::bytes_view> one{{rec.data(), rec.size()}};
    if (auto a = (*opened)->append(one); !a) return tl::unexpected(a.error());
  }
  auto end0 = (*opened)->end_offset();
  if (!end0) return tl::unexpected(end0.error());
  m.log_next = *end0;
  // Every append of the run goes through it; `log` keeps the shape of open_log's result.
  std::optional<std::unique_ptr<stores::event_log>> log(
      std::make_unique<instrumented_log>(**opened, m));
  health.set_phase("replaying the event log (" + std::to_string(*end0) + " records)");

  // Decisions of the host, appended as they come (on CAF threads; the log serialises appends).
  // While the history is replayed they are kept aside: the log holds most of them already.
  std::atomic<bool> replaying{*end0 > 0};
  std::mutex err_mu;
  std::optional<error> append_error;
  std::vector<std::vector<std::uint8_t>> replayed_out;  // guarded by err_mu
  auto on_decisions = [&](std::vector<std::vector<std::uint8_t>> v) {
    if (v.empty()) return;
    if (replaying.load()) {
      std::lock_guard lk(err_mu);
      for (auto& r : v) replayed_out.push_back(std::move(r));
      return;
    }
    std::vector<messages::bytes_view> views;
    views.reserve(v.size());
    for (const auto& r : v) views.emplace_back(r.data(), r.size());
    if (auto a = (*log)->append(views); !a) {
      std::lock_guard lk(err_mu);
      if (!append_error) append_error = a.error();
      return;
    }
    m.decisions += v.size();
  };
  entities::actor_host host(o.threads, on_decisions);

  // The control plane (run/control_plane.hpp), configured by the cluster's own objects
  // (ConfigUpdated observations: the slo-controller ConfigMap, ClusterColocationProfiles,
  // PriorityClasses).
  control_plane_options cpo;
  cpo.elastic_quota = o.elastic_quota;
  cpo.cpu_normalization = o.cpu_normalization;
  cpo.scheduler_gates = o.scheduler_gates;
  cpo.descheduler = o.descheduler;
  // The scheduler's timings count from the end of the replay (set_live below).
  m.framework->set_live(false);
  cpo.scheduler_recorder = m.framework;
  auto components = control_plane(cpo);
  if (!components) return tl::unexpected(components.error());
  for (auto& c : *components) host.add_component(std::move(c));

  // Every record is delivered as a batch of its own, live and in the replay alike: a component
  // decides at the end of each batch (the scheduler drains its queue there), so its decisions
  // are then a function of the log alone, not of how the loop happened to group reads.
  auto deliver_one = [&](messages::bytes_view b) {
    if (hooks) hooks->feed(b);
    auto one = std::make_shared<entities::record_batch>();
    one->add(b);
    host.deliver(std::move(one));
  };

  // The history, replayed through the entity actors, the arbitration and the components as it
  // was lived: each decider decides again what it decided then. What it emits is compared, after
  // the whole history, with what the log holds: a decision whose cause is in the log but which
  // a crash kept out of it (the decider's appends are atomic per step, so none or all of a
  // step's records are there) is appended then; the others are dropped. A decision is known by
  // its cause and decider, and for a component also by its type and entity. The decisions the sink
  // had not carried out yet (a stop or crash between the append and the write) are carried out
  // first, below.
  const std::string position_path = state + ".sink-position";
  log_offset applied = load_sink_position(position_path).value_or(0);
  std::vector<std::pair<log_offset, std::vector<std::uint8_t>>> pending;
  std::unordered_set<std::string> logged;  // "causation/source" of every decision in the log
  // (decision offset, write kind) of every WriteFailed in the log: a decision carried out again
  // after a restart that fails again is not recorded twice.
  std::set<std::pair<std::int64_t, wire::WriteKind>> failed_logged;
  auto decision_key = [](const wire::Envelope& env) {
    const auto src = messages::to_string_view(env.source());
    std::string k = std::to_string(env.causation()) + "/" + std::string(src);
    // The pod and node stages answer a proposal once, whatever the answer; a component may
    // answer one cause for several entities (one step schedules several pods).
    if (src != "pod" && src != "node") {
      k += "/" + std::to_string(static_cast<int>(env.payload_type())) + "/";
      k += messages::to_string_view(env.entity_key());
    }
    return k;
  };
  if (*end0 > 0) {
    auto r = (*log)->read(0, *end0, [&](log_offset off, messages::bytes_view b) {
      const auto& env = *wire::GetEnvelope(b.data());
      if (env.payload_type() == wire::Payload::WriteFailed) {
        // The sink's own record of a failure: nothing to write.
        failed_logged.emplace(env.causation(), env.payload_as_WriteFailed()->write());
      } else if (env.causation() >= 0) {
        logged.insert(decision_key(env));
        if (off >= applied)
          pending.emplace_back(off, std::vector<std::uint8_t>(b.begin(), b.end()));
      }
      deliver_one(b);
      const auto now = std::chrono::steady_clock::now();
      m.observe_record(off, env, now, false);
      m.beat(now);
      return true;
    });
    if (!r) return tl::unexpected(r.error());
    if (auto s = host.sync(); !s) return tl::unexpected(s.error());
    m.replayed = *r;
    std::vector<messages::bytes_view> missing;
    {
      std::lock_guard lk(err_mu);
      replaying = false;
      for (const auto& rec : replayed_out)
        if (logged.count(decision_key(*wire::GetEnvelope(rec.data()))) == 0)
          missing.emplace_back(rec.data(), rec.size());
      if (!missing.empty()) {
        auto a = (*log)->append(missing);
        if (!a) return tl::unexpected(a.error());
      }
      m.recovered = missing.size();
      replayed_out.clear();
    }
  }
  m.framework->set_live(true);

  if (hooks) {
    auto srv = webhook_server::start(wh->at, wh->tls, *hooks);
    if (!srv) return tl::unexpected(srv.error());
    hook_server = std::move(*srv);
    if (wh->reg.url.empty() && wh->reg.service_name.empty())
      wh->reg.url = "https://" + wh->at.host + ":" + std::to_string(hook_server->port());
    if (o.on_webhook_listening) o.on_webhook_listening(hook_server->port());
  }

  // The bridge: observations into the log from the informers' threads.
  kube::source_options srco;
  srco.checkpoint_path = state + ".source-checkpoint";
  auto source = kube::observation_source::open(*conn, **log, srco);
  if (!source) return tl::unexpected(source.error());
  health.set_phase("starting the informers");
  std::unique_ptr<api_probe> probe;
  if (server) probe = std::make_unique<api_probe>(*conn, health);
  if (auto s = (*source)->start(); !s) return tl::unexpected(s.error());
  {
    std::lock_guard lk(health.mu);
    health.source = source->get();
  }
  // Before the source is destroyed (declared after it, so run first): no scrape reads it after.
  scope_exit unpublish{[&health] {
    std::lock_guard lk(health.mu);
    health.source = nullptr;
  }};
  auto sinks = sink_pool::open(*conn, o.sink_connections, kube::sink_options{});
  if (!sinks) return tl::unexpected(sinks.error());
  // Carries out a run of decision records (in offset order) on the pool's connections; the
  // position moves past every record carried out, up to the first that could not be read.
  using effect = std::pair<log_offset, std::vector<std::uint8_t>>;
  auto carry_out = [&](const std::vector<effect>& effects) -> result<void> {
    if (effects.empty()) return {};
    std::vector<std::span<const std::uint8_t>> recs;
    recs.reserve(effects.size());
    for (const auto& e : effects) recs.emplace_back(e.second);
    auto outs = (*sinks)->apply(recs);
    // A write given up becomes a WriteFailed record (once per decision and write kind).
    std::vector<messages::byte_buffer> failures;
    result<void> status;
    for (std::size_t i = 0; i < outs.size(); ++i) {
      if (!outs[i]) {
        status = tl::unexpected(outs[i].error());
        break;
      }
      const log_offset off = effects[i].first;
      for (const auto& w : *outs[i]) {
        m.count_write(kube::to_string(w.kind), w.ok, w.wrote);
        if (!w.ok &&
            failed_logged.emplace(static_cast<std::int64_t>(off), kube::to_wire(w.kind)).second)
          failures.push_back(kube::write_failed_record(w, event_time{wall_ms()}));
      }
      applied = off + 1;
    }
    if (!failures.empty()) {
      std::vector<messages::bytes_view> views(failures.begin(), failures.end());
      if (auto a = (*log)->append(views); !a) return tl::unexpected(a.error());
      m.failures_logged += failures.size();
    }
    return status;
  };
  if (auto c = carry_out(pending); !c) return tl::unexpected(c.error());
  m.carried_over = pending.size();
  if (!pending.empty()) (void)save_sink_position(position_path, applied);
  pending.clear();

  log_offset next = *end0;
  // Registration waits until the host and the webhooks have read what the informers' first
  // LIST appended (profiles, PriorityClasses, quotas): answering before would admit pods
  // against an empty profile set.
  std::optional<log_offset> register_at;
  bool registered = !hooks;
  auto last_tick_check = std::chrono::steady_clock::now();
  auto last_progress = last_tick_check;
  m.log_read = next;
  // Components are up and the history is theirs: ready once the informers sync (/readyz).
  health.set_phase("");
  result<void> status;
  while (!(o.stop && o.stop())) {
    m.beat(std::chrono::steady_clock::now());
    {
      std::lock_guard lk(err_mu);
      if (append_error) {
        status = tl::unexpected(*append_error);
        break;
      }
    }
    if (auto f = (*source)->failure()) {
      status = tl::unexpected(*f);
      break;
    }
    if (leader && leader->lost()) {
      // kube-scheduler exits here (OnStoppedLeading); what this run appended stays in the log,
      // its successor replays it.
      m.leading = 0;
      status = fail(errc::failed_precondition, "leader election lost: " + leader->describe(),
                    "--leader-elect");
      break;
    }
    // New records: to the host, and the decisions among them to the sink, in offset order.
    std::vector<effect> effects;
    auto r = (*log)->read(next, no_offset, [&](log_offset off, messages::bytes_view bytes) {
      const auto now = std::chrono::steady_clock::now();
      m.observe_delivered(off, now);
      deliver_one(bytes);
      const auto& env = *wire::GetEnvelope(bytes.data());
      m.observe_record(off, env, now, true);
      if (env.causation() < 0)
        ++m.observations;
      else if (off >= applied && env.payload_type() != wire::Payload::WriteFailed)
        effects.emplace_back(off, std::vector<std::uint8_t>(bytes.begin(), bytes.end()));
      return true;
    });
    if (!r) {
      status = tl::unexpected(r.error());
      break;
    }
    next += *r;
    m.log_read = next;
    if (!registered) {
      if (!register_at && (*source)->synced()) {
        auto e = (*log)->end_offset();
        if (!e) {
          status = tl::unexpected(e.error());
          break;
        }
        register_at = *e;
      }
      if (register_at && next >= *register_at) {
        auto c = kube::api_client::open(*conn);
        if (!c) {
          status = tl::unexpected(c.error());
          break;
        }
        if (auto reg = kube::ensure_webhook_configurations(*c, wh->reg); !reg) {
          status = reg;
          break;
        }
        registered = true;
        if (o.progress)
          o.progress("colony run: admission webhooks registered (" +
                     (wh->reg.url.empty()
                          ? "service " + wh->reg.service_namespace + "/" + wh->reg.service_name
                          : wh->reg.url) +
                     ")");
      }
    }
    m.delivered += *r;
    if (!effects.empty()) {
      if (auto y = (*log)->sync_appended(); !y) {
        status = y;
        break;
      }
    }
    if (auto c = carry_out(effects); !c) {
      status = c;
      break;
    }
    if (!effects.empty()) (void)save_sink_position(position_path, applied);
    // Wake-ups: once the wall clock passes what a component waits for, a ClockTicked moves the
    // log's time there.
    const auto now = std::chrono::steady_clock::now();
    if (now - last_tick_check > std::chrono::milliseconds(200)) {
      last_tick_check = now;
      if (auto s = host.sync(); !s) {
        status = tl::unexpected(s.error());
        break;
      }
      const auto w = host.next_wakeup_ms();
      const auto t = wall_ms();
      if (w && *w <= t) {
        const auto rec = clock_tick_record(t);
        const std::vector<messages::bytes_view> one{{rec.data(), rec.size()}};
        if (auto a = (*log)->append(one); !a) {
          status = tl::unexpected(a.error());
          break;
        }
        ++m.ticks;
      }
    }
    if (o.progress && now - last_progress > std::chrono::seconds(5)) {
      last_progress = now;
      o.progress(
          fmt::format("colony run: log at {}, {} observations, {} decisions, {} writes "
                      "({} failed)",
                      next, m.observations.load(), m.decisions.load(), m.writes("written"),
                      m.writes("failed")));
    }
    if (*r == 0) (void)(*log)->wait_for(next, o.poll);
  }
  (*source)->stop();
  {
    const auto sc = (*source)->counters();
    st.reconnects = sc.reconnects;
    st.gone = sc.gone;
    st.relists = sc.relists;
  }
  (void)host.sync();
  (void)(*log)->sync_appended();
  (void)save_sink_position(position_path, applied);
  // After the last write: a successor may start as soon as the Lease is free.
  if (leader) {
    leader->stop();
    m.leading = 0;
  }
  // The summary reads the cells /metrics reads (run_metrics), so the two agree.
  st.replayed = m.replayed;
  st.carried_over = m.carried_over;
  st.recovered = m.recovered;
  st.delivered = m.delivered;
  st.decisions = m.decisions;
  st.observations = m.observations;
  st.ticks = m.ticks;
  st.writes = m.writes("written");
  st.write_failures = m.writes("failed");
  st.failures_logged = m.failures_logged;
  if (hooks) {
    st.webhook_reviews = hooks->reviews();
    st.webhook_refused = hooks->refused();
  }
  if (!status) return tl::unexpected(status.error());
  return st;
}

}  // namespace colony::run
