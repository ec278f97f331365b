// webhook_certs: the serving certificate of colony run's admission webhooks, as Koordinator's
// webhook controller provides its own (pkg/webhook/util/controller/webhook_controller.go
// ensureCerts, pkg/webhook/util/writer/fs.go, pkg/webhook/util/generator/selfsigned.go): use
// DIR's certificate when there is one, else generate a CA and a serving certificate signed by
// it and write them there, so that a restart keeps the caBundle the apiserver trusts.
//
// Files (the names of a kubernetes.io/tls Secret plus the CA, as cert-manager writes them):
//   DIR/ca.crt   the CA certificate (PEM): the webhook configurations' caBundle
//   DIR/tls.crt  the serving certificate (PEM), SANs = the hosts given
//   DIR/tls.key  its private key (PEM, mode 0600)
// Keys are ECDSA P-256 (Koordinator's generator makes RSA 2048; the apiserver accepts both,
// P-256 is generated in a millisecond); both certificates are valid for 10 years from an hour
// ago (clock skew). There is no rotation: delete the files and restart to renew.
// OpenSSL's C API (libssl-dev). Thread-safety: reentrant.
#pragma once

#include <string>
#include <vector>

#include "messages/result.hpp"

namespace colony::run {

struct webhook_tls {
  std::string ca_pem;    // CA certificate
  std::string cert_pem;  // serving certificate
  std::string key_pem;   // serving key
  std::string dir;       // where the files are ("" when only in memory)
  [[nodiscard]] std::string cert_file() const { return dir + "/tls.crt"; }
  [[nodiscard]] std::string key_file() const { return dir + "/tls.key"; }
};

// A fresh CA and a serving certificate for `hosts` (each an IPv4/IPv6 address -> an IP SAN,
// else a DNS SAN; the first is also the subject's CN). invalid_input without hosts; internal
// when OpenSSL fails.
[[nodiscard]] result<webhook_tls> generate_webhook_tls(const std::vector<std::string>& hosts);

// DIR's files when all three exist (the serving certificate is not re-checked against `hosts`:
// an operator's own certificate is used as given), else generate_webhook_tls written there
// (DIR created). unavailable when DIR cannot be read or written; invalid_input when only some
// of the files exist.
[[nodiscard]] result<webhook_tls> ensure_webhook_tls(const std::string& dir,
                                                     const std::vector<std::string>& hosts);

}  // namespace colony::run
