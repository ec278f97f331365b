// colony run: the control plane over a real cluster (run/cluster_run.hpp;
// docs/kubernetes-bridge.md "colony run").
//
//   colony run --kubeconfig FILE --log DIR [--threads N] [--no-elastic-quota] [--cpu-normalization]
//              [--descheduler-config FILE]
//              [--metrics-addr HOST:PORT] [--leader-elect [--leader-elect-...]]
//              [--webhook-addr HOST:PORT [--webhook-cert-dir DIR]
//               [--webhook-url https://HOST:PORT | --webhook-service NAMESPACE/NAME[:PORT]]]
//
// Runs until SIGINT/SIGTERM; prints a progress line every few seconds on stderr and a summary
// (JSON) on stdout when it stops.
#include <unistd.h>

#include <atomic>
#include <charconv>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <fstream>
#include <random>
#include <sstream>
#include <string>

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>
#include <nlohmann/json.hpp>

#include "cmd/colony/commands.hpp"
#include "cmd/colony/duration_flag.hpp"
#include "cmd/colony/exit_codes.hpp"
#include "run/cluster_run.hpp"

namespace colony::cli {

namespace {

std::atomic<bool> run_stop{false};
extern "C" void on_run_signal(int) { run_stop = true; }

// client-go's default identity is the hostname and a UUID; a pid and 64 random bits serve.
std::string default_identity() {
  char host[256] = {};
  if (gethostname(host, sizeof host - 1) != 0) std::snprintf(host, sizeof host, "colony");
  std::random_device rd;
  const std::uint64_t r = (static_cast<std::uint64_t>(rd()) << 32) ^ rd();
  char buf[320];
  std::snprintf(buf, sizeof buf, "%s_%d_%016llx", host, static_cast<int>(getpid()),
                static_cast<unsigned long long>(r));
  return buf;
}

// A DeschedulerConfiguration file, parsed and validated; an error names the file and the field.
result<descheduler::descheduler_config> read_descheduler_config(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return fail(errc::not_found, "cannot read the descheduler config", path);
  std::stringstream text;
  text << f.rdbuf();
  auto d = descheduler::parse_descheduler_config(text.str());
  if (!d) {
    auto e = d.error();
    e.where = path + (e.where.empty() ? "" : ": " + e.where);
    return tl::unexpected(std::move(e));
  }
  return d;
}

}  // namespace

void add_run_command(CLI::App& app) {
  auto opts = std::make_shared<run::run_options>();
  auto no_quota = std::make_shared<bool>(false);
  auto cpu_norm = std::make_shared<bool>(false);
  auto gates = std::make_shared<std::string>();
  auto* cmd = app.add_subcommand(
      "run", "Run the control plane against a Kubernetes API server (cluster mode)");
  cmd->add_option("--kubeconfig", opts->kubeconfig,
                  "kubeconfig file (default: the in-cluster ServiceAccount)");
  cmd->add_option("--log", opts->log_path,
                  "event log: a directory (embedded RocksDB) or kafka://host:port/topic")
      ->required();
  cmd->add_option("--state", opts->state_path,
                  "prefix of colony run's own files (STATE.sink-position, "
                  "STATE.source-checkpoint); default: the --log directory; required with Kafka");
  cmd->add_option("--threads", opts->threads, "host threads (default 2)");
  cmd->add_option("--sink-connections", opts->sink_connections,
                  "API connections the sink writes on at once (default 16)")
      ->check(CLI::Range(1, 256));
  cmd->add_flag("--no-elastic-quota", *no_quota, "run without the ElasticQuota plugin");
  cmd->add_option("--feature-gates", *gates,
                  "koord-scheduler feature gates, e.g. ElasticQuotaIgnorePodOverhead=true");
  cmd->add_flag("--cpu-normalization", *cpu_norm,
                "run the slo-controller's cpunormalization and resourceamplification plugins "
                "(node annotations from cpu-normalization-config, CPU basic info from the "
                "NodeResourceTopology)");
  auto desched = std::make_shared<std::string>();
  cmd->add_option("--descheduler-config", *desched,
                  "run koord-descheduler (LowNodeLoad) and the PodMigrationJob controller with "
                  "this DeschedulerConfiguration (YAML); evictions go through the Eviction API; "
                  "default: no descheduler (docs/operating.md \"Descheduler\")");
  cmd->add_option("--metrics-addr", opts->metrics_addr,
                  "serve /healthz, /readyz and Prometheus /metrics on HOST:PORT (port 0: a free "
                  "one, printed on stderr); default: off (docs/operating.md)");
  cmd->add_option("--webhook-addr", opts->webhook_addr,
                  "serve the admission webhooks (AdmissionReview v1) over HTTPS on HOST:PORT and "
                  "register them with the apiserver (port 0: a free one, printed on stderr); "
                  "default: off (docs/operating.md \"Admission webhooks\")");
  cmd->add_option("--webhook-cert-dir", opts->webhook_cert_dir,
                  "directory of ca.crt, tls.crt, tls.key; generated there when missing "
                  "(default: STATE.webhook-certs)");
  cmd->add_option("--webhook-url", opts->webhook_url,
                  "the apiserver's clientConfig url, https://HOST:PORT (default: "
                  "https://<--webhook-addr>)");
  cmd->add_option("--webhook-service", opts->webhook_service,
                  "the apiserver's clientConfig service, NAMESPACE/NAME[:PORT] (in-cluster)");
  struct leader_flags {
    bool on = false;
    kube::lease_options lease;
    std::string duration = "15s", deadline = "10s", retry = "2s";
  };
  auto le = std::make_shared<leader_flags>();
  cmd->add_flag("--leader-elect", le->on,
                "run only while holding a coordination.k8s.io Lease (one of several replicas "
                "leads; docs/operating.md \"Leader election\")");
  cmd->add_option("--leader-elect-resource-namespace", le->lease.lease_namespace,
                  "the Lease's namespace (default colony-system)");
  cmd->add_option("--leader-elect-resource-name", le->lease.name,
                  "the Lease's name (default colony-manager)");
  cmd->add_option("--leader-elect-identity", le->lease.identity,
                  "this candidate's holderIdentity (default HOSTNAME_PID_RANDOM)");
  cmd->add_option("--leader-elect-lease-duration", le->duration,
                  "how long a lease not renewed keeps others out (default 15s)");
  cmd->add_option("--leader-elect-renew-deadline", le->deadline,
                  "how long the leader keeps trying to renew before it stops (default 10s)");
  cmd->add_option("--leader-elect-retry-period", le->retry,
                  "the time between two tries to acquire or renew (default 2s)");
  cmd->callback([opts, no_quota, cpu_norm, gates, le, desched] {
    // Warnings (a kind whose CRD is missing, a refused object) go to stderr: stdout is the
    // summary.
    spdlog::set_default_logger(spdlog::stderr_color_mt("colony-run"));
    std::signal(SIGINT, on_run_signal);
    std::signal(SIGTERM, on_run_signal);
    auto o = *opts;
    o.elastic_quota = !*no_quota;
    o.cpu_normalization = *cpu_norm;
    auto g = scheduler::parse_scheduler_feature_gates(*gates);
    if (!g) {
      std::fprintf(stderr, "colony: %s\n", g.error().describe().c_str());
      exit_status() = exit_code_for(g.error());
      return;
    }
    o.scheduler_gates = *g;
    if (!desched->empty()) {
      auto d = read_descheduler_config(*desched);
      if (!d) {
        std::fprintf(stderr, "colony: %s\n", d.error().describe().c_str());
        exit_status() = exit_code_for(d.error());
        return;
      }
      o.descheduler = std::move(*d);
    }
    if (le->on) {
      auto lease = le->lease;
      const std::pair<const std::string*, std::chrono::milliseconds*> ds[] = {
          {&le->duration, &lease.lease_duration},
          {&le->deadline, &lease.renew_deadline},
          {&le->retry, &lease.retry_period}};
      const char* names[] = {"--leader-elect-lease-duration", "--leader-elect-renew-deadline",
                             "--leader-elect-retry-period"};
      for (std::size_t i = 0; i < 3; ++i) {
        auto d = parse_duration_flag(*ds[i].first, names[i]);
        if (!d) {
          std::fprintf(stderr, "colony: %s\n", d.error().describe().c_str());
          exit_status() = exit_code_for(d.error());
          return;
        }
        *ds[i].second = *d;
      }
      if (lease.identity.empty()) lease.identity = default_identity();
      o.leader_election = lease;
    }
    o.stop = [] { return run_stop.load(); };
    o.progress = [](const std::string& s) { std::fprintf(stderr, "%s\n", s.c_str()); };
    // One line a test or a wrapper can wait for (the port matters when 0 was asked for).
    o.on_metrics_listening =
        [host = o.metrics_addr.substr(0, o.metrics_addr.rfind(':'))](std::uint16_t port) {
          std::fprintf(stderr, "colony run: serving /healthz /readyz /metrics on http://%s:%u\n",
                       host.c_str(), static_cast<unsigned>(port));
          std::fflush(stderr);
        };
    o.on_webhook_listening =
        [host = o.webhook_addr.substr(0, o.webhook_addr.rfind(':'))](std::uint16_t port) {
          std::fprintf(stderr, "colony run: serving admission webhooks on https://%s:%u\n",
                       host.c_str(), static_cast<unsigned>(port));
          std::fflush(stderr);
        };
    auto r = run::run_cluster(o);
    if (!r) {
      std::fprintf(stderr, "colony: %s\n", r.error().describe().c_str());
      exit_status() = exit_code_for(r.error());
      return;
    }
    nlohmann::ordered_json j;
    j["replayed"] = r->replayed;
    j["carried_over"] = r->carried_over;
    j["recovered"] = r->recovered;
    j["delivered"] = r->delivered;
    j["observations"] = r->observations;
    j["decisions"] = r->decisions;
    j["clock_ticks"] = r->ticks;
    j["api_writes"] = r->writes;
    j["api_write_failures"] = r->write_failures;
    j["watch_reconnects"] = r->reconnects;
    j["gone_410"] = r->gone;
    j["relists"] = r->relists;
    if (le->on) j["led"] = r->led;
    if (!o.webhook_addr.empty()) {
      j["webhook_reviews"] = r->webhook_reviews;
      j["webhook_refused"] = r->webhook_refused;
    }
    std::printf("%s\n", j.dump().c_str());
    exit_status() = 0;
  });
}

}  // namespace colony::cli
