// colony::kube::connection and where it comes from: a kubeconfig file or a pod's ServiceAccount.
//
// A connection is plain data (server URL, TLS material, credentials) that api_client and
// watch_stream turn into libcurl options. Loading follows client-go's rules where they matter:
// relative paths in a kubeconfig are resolved against the file's folder
// (staging/src/k8s.io/client-go/tools/clientcmd/loader.go ResolveLocalPaths), an inline token wins
// over tokenFile (tools/clientcmd/client_config.go), a CA together with
// insecure-skip-tls-verify is refused (tools/clientcmd/validation.go), and in-cluster reads
// KUBERNETES_SERVICE_HOST/PORT plus the mounted ServiceAccount files (rest/config.go
// InClusterConfig). Auth plugins (exec, auth-provider) are not supported: refused with an error.
//
// Every failure is an error value naming the file and the field ("FILE:users[NAME].user.token").
// Thread-safety: free functions with no shared state.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "messages/result.hpp"

namespace colony::kube {

// How to reach one kube-apiserver. Copyable; holds secrets (token, key), so never log it whole.
struct connection {
  std::string server;  // "https://127.0.0.1:6443", no trailing '/'
  // Trust: a CA file, or PEM bytes (certificate-authority-data decoded), or neither (the system
  // CA store). insecure_skip_tls_verify turns verification off (never with a CA set).
  std::string ca_file;
  std::string ca_pem;
  bool insecure_skip_tls_verify = false;
  // Credentials: a bearer token (from `token`, or read from token_file at load time; the
  // client re-reads token_file once a minute, as client-go does for rotated ServiceAccount
  // tokens) and/or a client certificate and key (file or PEM bytes).
  std::string token;
  std::string token_file;
  std::string client_cert_file;
  std::string client_cert_pem;
  std::string client_key_file;
  std::string client_key_pem;
  // The context's namespace, or the ServiceAccount's. Default: "default".
  std::string default_namespace = "default";
  // Where this came from, for messages: "kubeconfig FILE context NAME" or "in-cluster".
  std::string origin;
};

// Loads `path`; `context` empty means the file's current-context.
[[nodiscard]] result<connection> load_kubeconfig(const std::string& path,
                                                 std::string_view context = {});

// The files and environment in-cluster mode reads; tests point them at a temporary folder.
struct in_cluster_source {
  // Holds token, ca.crt and (optional) namespace.
  // Default: the kubelet's mount point for the pod's ServiceAccount.
  std::string service_account_dir = "/var/run/secrets/kubernetes.io/serviceaccount";
  // nullopt: read KUBERNETES_SERVICE_HOST / KUBERNETES_SERVICE_PORT from the environment.
  std::optional<std::string> host;
  std::optional<std::string> port;
};

// The connection of a process running in a pod. not_found when not in a cluster (no
// KUBERNETES_SERVICE_HOST/PORT), invalid_input when a ServiceAccount file is missing or empty.
[[nodiscard]] result<connection> in_cluster(const in_cluster_source& source = {});

// RFC 4648 base64 (standard alphabet, '=' padding; whitespace ignored, as kubeconfig *-data
// fields may be wrapped). `where` names the field in the error.
[[nodiscard]] result<std::string> decode_base64(std::string_view text, std::string_view where);

}  // namespace colony::kube
