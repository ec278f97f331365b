#include "run/metrics_server.hpp"

#include <charconv>
#include <chrono>
#include <exception>
#include <thread>

#include <sys/socket.h>

#include <httplib.h>

namespace colony::run {

result<listen_address> parse_listen_address(std::string_view s, std::string_view flag) {
  const auto bad = [&](const std::string& why) -> result<listen_address> {
    return fail(errc::invalid_input, "'" + std::string(s) + "': " + why + " (expected HOST:PORT)",
                std::string(flag));
  };
  const auto colon = s.rfind(':');
  if (colon == std::string_view::npos) return bad("no port");
  listen_address a;
  a.host = std::string(s.substr(0, colon));
  if (a.host.empty()) return bad("no host");
  const auto p = s.substr(colon + 1);
  unsigned v = 0;
  const auto r = std::from_chars(p.data(), p.data() + p.size(), v);
  if (p.empty() || r.ec != std::errc{} || r.ptr != p.data() + p.size() || v > 65535)
    return bad("the port is not a number in 0..65535");
  a.port = static_cast<std::uint16_t>(v);
  return a;
}

struct metrics_server::impl {
  httplib::Server server;
  std::thread thread;
  std::uint16_t port = 0;
  metrics_handlers handlers;
};

namespace {

// The probes answer plain text, as kube-apiserver's /healthz and /readyz do.
void answer_probe(httplib::Response& res, const std::function<probe_result()>& probe,
                  int failed_status) {
  const auto p = probe ? probe() : probe_result{true, {}};
  res.status = p.ok ? 200 : failed_status;
  res.set_content(p.ok ? std::string("ok") : p.reason + "\n", "text/plain; charset=utf-8");
}

}  // namespace

result<std::unique_ptr<metrics_server>> metrics_server::start(const listen_address& at,
                                                              metrics_handlers handlers) {
  auto p = std::make_unique<impl>();
  p->handlers = std::move(handlers);
  auto* h = &p->handlers;
  // SO_REUSEADDR only: httplib's default adds SO_REUSEPORT, which lets a second process bind the
  // same port and share the scrapes instead of failing.
  p->server.set_socket_options([](socket_t sock) {
    int yes = 1;
    (void)setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
  });
  // Scrapes and probes are few: two answering threads, not httplib's default of one per core.
  p->server.new_task_queue = [] { return new httplib::ThreadPool(2); };
  p->server.Get("/healthz", [h](const httplib::Request&, httplib::Response& res) {
    answer_probe(res, h->healthz, 500);
  });
  p->server.Get("/readyz", [h](const httplib::Request&, httplib::Response& res) {
    answer_probe(res, h->readyz, 503);
  });
  p->server.Get("/metrics", [h](const httplib::Request&, httplib::Response& res) {
    res.set_content(h->metrics ? h->metrics() : std::string(),
                    "text/plain; version=0.0.4; charset=utf-8");
  });
  // No exception leaves a handler thread: httplib answers 500.
  p->server.set_exception_handler(
      [](const httplib::Request&, httplib::Response& res, std::exception_ptr) {
        res.status = 500;
        res.set_content("internal error\n", "text/plain; charset=utf-8");
      });
  int port = at.port;
  if (at.port == 0) {
    port = p->server.bind_to_any_port(at.host);
    if (port <= 0)
      return fail(errc::unavailable, "cannot listen on " + at.host + ":0", "--metrics-addr");
  } else if (!p->server.bind_to_port(at.host, at.port)) {
    return fail(errc::unavailable,
                "cannot listen on " + at.host + ":" + std::to_string(at.port) +
                    " (in use, or not an address of this host)",
                "--metrics-addr");
  }
  p->port = static_cast<std::uint16_t>(port);
  auto* s = &p->server;
  p->thread = std::thread([s] { (void)s->listen_after_bind(); });
  // httplib's stop() does nothing until listen_after_bind has marked the server running: wait
  // for that, so that a stop() right after start() cannot leave the thread listening.
  while (!s->is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  return std::unique_ptr<metrics_server>(new metrics_server(std::move(p)));
}

metrics_server::metrics_server(std::unique_ptr<impl> p) : impl_(std::move(p)) {}

metrics_server::~metrics_server() { stop(); }

std::uint16_t metrics_server::port() const noexcept { return impl_->port; }

void metrics_server::stop() {
  if (!impl_->thread.joinable()) return;
  // stop() shuts the listening socket; listen_after_bind returns once the pool has drained.
  impl_->server.stop();
  impl_->thread.join();
}

}  // namespace colony::run
