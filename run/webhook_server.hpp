// webhook_server: the HTTPS endpoint of `colony run --webhook-addr HOST:PORT` (cpp-httplib's
// SSLServer over OpenSSL): POST /mutate-pod, /validate-pod and
// /validate-scheduling-sigs-k8s-io-v1alpha1-elasticquota, each answered by
// admission_webhooks::serve (run/admission_webhooks.hpp). docs/operating.md "Admission webhooks".
//
// The server runs on its own threads (one accepting, a pool answering; the apiserver keeps
// connections alive and sends reviews concurrently). stop() (or the destructor) stops
// accepting, waits for the answers under way and joins every thread; after it returns no
// handler runs again. The admission_webhooks must outlive the server.
#pragma once

#include <cstdint>
#include <memory>

#include "messages/result.hpp"
#include "run/admission_webhooks.hpp"
#include "run/metrics_server.hpp"
#include "run/webhook_certs.hpp"

namespace colony::run {

class webhook_server {
 public:
  // Binds (unavailable if it cannot) and starts serving with tls's files
  // (REQUIRES: tls.dir set: SSLServer reads the certificate and key from files).
  [[nodiscard]] static result<std::unique_ptr<webhook_server>> start(const listen_address& at,
                                                                     const webhook_tls& tls,
                                                                     admission_webhooks& hooks);
  ~webhook_server();
  webhook_server(const webhook_server&) = delete;
  webhook_server& operator=(const webhook_server&) = delete;

  [[nodiscard]] std::uint16_t port() const noexcept;
  void stop();  // idempotent

 private:
  struct impl;
  explicit webhook_server(std::unique_ptr<impl> p);
  std::unique_ptr<impl> impl_;
};

}  // namespace colony::run
