#include "run/webhook_server.hpp"

#include <chrono>
#include <exception>
#include <thread>

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <httplib.h>

#include "bridges/kubernetes/webhook_registration.hpp"

namespace colony::run {

struct webhook_server::impl {
  explicit impl(const webhook_tls& tls) : server(tls.cert_file().c_str(), tls.key_file().c_str()) {}
  httplib::SSLServer server;
  std::thread thread;
  std::uint16_t port = 0;
};

result<std::unique_ptr<webhook_server>> webhook_server::start(const listen_address& at,
                                                              const webhook_tls& tls,
                                                              admission_webhooks& hooks) {
  if (tls.dir.empty())
    return fail(errc::invalid_input, "the webhook server needs its certificate in files",
                "--webhook-cert-dir");
  auto p = std::make_unique<impl>(tls);
  if (!p->server.is_valid())
    return fail(errc::invalid_input, "cannot load the serving certificate and key",
                tls.cert_file());
  p->server.set_socket_options([](socket_t sock) {
    int yes = 1;
    (void)setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
    // Accepted sockets inherit it on Linux: httplib's set_tcp_nodelay acts only where its
    // default socket options run, which this callback replaces.
    (void)setsockopt(sock, IPPROTO_TCP, TCP_NODELAY, &yes, sizeof yes);
  });
  // httplib closes a kept-alive connection after 5 requests by default: a TLS handshake
  // every fifth review.
  p->server.set_keep_alive_max_count(100000);
  // httplib gives each kept-alive connection a pool thread until it closes, and the apiserver
  // keeps one connection per concurrent review (HTTP/1.1: httplib has no HTTP/2): a pool smaller
  // than that queues new connections behind idle ones (measured: ~150 ms per review with 4
  // threads and 16 concurrent creates). The answers themselves are serialised on the
  // components' mutex and take tens of microseconds.
  p->server.new_task_queue = [] { return new httplib::ThreadPool(64); };
  // Replies are one small write: no Nagle delay waiting for the peer's delayed ACK.
  p->server.set_tcp_nodelay(true);
  auto* h = &hooks;
  for (const auto path :
       {kube::path_mutate_pod, kube::path_validate_pod, kube::path_validate_elastic_quota}) {
    p->server.Post(std::string(path), [h](const httplib::Request& req, httplib::Response& res) {
      auto a = h->serve(req.path, req.body);
      res.status = a.status;
      res.set_content(a.body, a.content_type.c_str());
    });
  }
  p->server.set_exception_handler(
      [](const httplib::Request&, httplib::Response& res, std::exception_ptr) {
        res.status = 500;
        res.set_content("internal error\n", "text/plain");
      });
  int port = at.port;
  if (at.port == 0) {
    port = p->server.bind_to_any_port(at.host);
    if (port <= 0)
      return fail(errc::unavailable, "cannot listen on " + at.host + ":0", "--webhook-addr");
  } else if (!p->server.bind_to_port(at.host, at.port)) {
    return fail(errc::unavailable,
                "cannot listen on " + at.host + ":" + std::to_string(at.port) +
                    " (in use, or not an address of this host)",
                "--webhook-addr");
  }
  p->port = static_cast<std::uint16_t>(port);
  auto* s = &p->server;
  p->thread = std::thread([s] { (void)s->listen_after_bind(); });
  // As metrics_server: stop() is a no-op until the server runs.
  while (!s->is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  return std::unique_ptr<webhook_server>(new webhook_server(std::move(p)));
}

webhook_server::webhook_server(std::unique_ptr<impl> p) : impl_(std::move(p)) {}
webhook_server::~webhook_server() { stop(); }
std::uint16_t webhook_server::port() const noexcept { return impl_->port; }

void webhook_server::stop() {
  if (!impl_->thread.joinable()) return;
  impl_->server.stop();
  impl_->thread.join();
}

}  // namespace colony::run
