// metrics_server: the HTTP endpoints of `colony run --metrics-addr HOST:PORT` (cpp-httplib):
//   GET /healthz  200 "ok" while the run's loops are alive, else 500 and why
//   GET /readyz   200 "ok" once the run serves (log open, history replayed, components up,
//                 informers synced, API server reachable), else 503 and why
//   GET /metrics  the Prometheus text format 0.0.4 (run/metrics.hpp)
// docs/operating.md "Health and metrics" gives the exact conditions.
//
// The server runs on its own threads (one accepting, a small pool answering); the handlers are
// called there, concurrently with the run, so they must be thread-safe. stop() (or the
// destructor) stops accepting, waits for the answers under way and joins every thread; after it
// returns no handler runs again.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "messages/result.hpp"

namespace colony::run {

struct listen_address {
  std::string host;
  std::uint16_t port = 0;  // 0: any free port (metrics_server::port() tells which)
};

// "HOST:PORT" (IPv4 address or name; PORT 0..65535). invalid_input naming `flag` otherwise.
[[nodiscard]] result<listen_address> parse_listen_address(std::string_view s,
                                                          std::string_view flag = "--metrics-addr");

// A probe's answer: ok, or the reason it is not.
struct probe_result {
  bool ok = false;
  std::string reason;
};

struct metrics_handlers {
  std::function<probe_result()> healthz;
  std::function<probe_result()> readyz;
  std::function<std::string()> metrics;  // the exposition text
};

class metrics_server {
 public:
  // Binds (unavailable if it cannot: the address in use, or not local) and starts serving.
  [[nodiscard]] static result<std::unique_ptr<metrics_server>> start(const listen_address& at,
                                                                     metrics_handlers handlers);
  ~metrics_server();  // stop()
  metrics_server(const metrics_server&) = delete;
  metrics_server& operator=(const metrics_server&) = delete;

  // The port bound (the one picked when asked for 0).
  [[nodiscard]] std::uint16_t port() const noexcept;
  // Stops serving and joins the server's threads. Idempotent.
  void stop();

 private:
  struct impl;
  explicit metrics_server(std::unique_ptr<impl> p);
  std::unique_ptr<impl> impl_;
};

}  // namespace colony::run
