// colony run: the control plane over a real cluster (run/cluster_run.hpp;
// docs/kubernetes-bridge.md "colony run").
//
//   colony run --kubeconfig FILE --log DIR [--threads N] [--no-elastic-quota]
//              [--metrics-addr HOST:PORT]
//              [--webhook-addr HOST:PORT [--webhook-cert-dir DIR]
//               [--webhook-url https://HOST:PORT | --webhook-service NAMESPACE/NAME[:PORT]]]
//
// Runs until SIGINT/SIGTERM; prints a progress line every few seconds on stderr and a summary
// (JSON) on stdout when it stops.
#include <atomic>
#include <csignal>
#include <cstdio>
#include <string>

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>
#include <nlohmann/json.hpp>

#include "cmd/colony/commands.hpp"
#include "cmd/colony/exit_codes.hpp"
#include "run/cluster_run.hpp"

namespace colony::cli {

namespace {

std::atomic<bool> run_stop{false};
extern "C" void on_run_signal(int) { run_stop = true; }

}  // namespace

void add_run_command(CLI::App& app) {
  auto opts = std::make_shared<run::run_options>();
  auto no_quota = std::make_shared<bool>(false);
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
  cmd->callback([opts, no_quota] {
    // Warnings (a kind whose CRD is missing, a refused object) go to stderr: stdout is the
    // summary.
    spdlog::set_default_logger(spdlog::stderr_color_mt("colony-run"));
    std::signal(SIGINT, on_run_signal);
    std::signal(SIGTERM, on_run_signal);
    auto o = *opts;
    o.elastic_quota = !*no_quota;
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
    if (!o.webhook_addr.empty()) {
      j["webhook_reviews"] = r->webhook_reviews;
      j["webhook_refused"] = r->webhook_refused;
    }
    std::printf("%s\n", j.dump().c_str());
    exit_status() = 0;
  });
}

}  // namespace colony::cli
