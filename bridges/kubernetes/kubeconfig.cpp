// Kubeconfig and in-cluster loading; yaml-cpp exceptions end here (see kubeconfig.hpp).
#include "bridges/kubernetes/kubeconfig.hpp"

#include <array>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <yaml-cpp/yaml.h>

namespace colony::kube {
namespace {

namespace fs = std::filesystem;

std::string at(const std::string& file, std::string_view field) {
  std::string s = file;
  s += ':';
  s += field;
  return s;
}

// The whole file, or not_found naming `where` (the kubeconfig field that named it).
result<std::string> read_file(const std::string& path, const std::string& where) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return fail(errc::not_found, "cannot read file '" + path + "'", where);
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) return fail(errc::invalid_input, "read error on '" + path + "'", where);
  return ss.str();
}

std::string trim(std::string s) {
  const auto ws = [](char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; };
  while (!s.empty() && ws(s.back())) s.pop_back();
  std::size_t i = 0;
  while (i < s.size() && ws(s[i])) ++i;
  return s.substr(i);
}

// An optional string field: absent or null gives "", a map or list is an error.
result<std::string> scalar(const YAML::Node& n, const std::string& where) {
  if (!n.IsDefined() || n.IsNull()) return std::string{};
  if (!n.IsScalar()) return fail(errc::invalid_input, "expected a string", where);
  return n.Scalar();
}

// client-go resolves relative file references against the kubeconfig's own folder
// (tools/clientcmd/loader.go ResolveLocalPaths), so a kubeconfig can travel with its certs.
std::string resolve(const std::string& file, const std::string& p) {
  if (p.empty() || fs::path(p).is_absolute()) return p;
  return (fs::path(file).parent_path() / p).lexically_normal().string();
}

// clusters/contexts/users are lists of {name: N, <inner>: {...}}; returns the inner map.
result<YAML::Node> named(const YAML::Node& root, const char* list, const char* inner,
                         const std::string& name, const std::string& file) {
  // A missing key gives an invalid node whose type queries throw: test IsDefined() first.
  const YAML::Node seq = root[list];
  const bool present = seq.IsDefined() && !seq.IsNull();
  if (present && !seq.IsSequence())
    return fail(errc::invalid_input, "expected a list", at(file, list));
  if (present) {
    for (std::size_t i = 0; i < seq.size(); ++i) {
      const YAML::Node entry = seq[i];
      if (!entry.IsMap()) {
        return fail(errc::invalid_input, "expected a map with name and " + std::string(inner),
                    at(file, std::string(list) + "[" + std::to_string(i) + "]"));
      }
      auto n =
          scalar(entry["name"], at(file, std::string(list) + "[" + std::to_string(i) + "].name"));
      if (!n) return tl::make_unexpected(n.error());
      if (*n != name) continue;
      const YAML::Node body = entry[inner];
      if (!body.IsDefined() || !body.IsMap()) {
        return fail(errc::invalid_input, "expected a map",
                    at(file, std::string(list) + "[" + name + "]." + inner));
      }
      return body;
    }
  }
  return fail(errc::not_found, std::string(list) + " has no entry named '" + name + "'",
              at(file, list));
}

// Fills the cluster half of `c` from clusters[name].cluster.
result<void> load_cluster(const YAML::Node& cl, const std::string& name, const std::string& file,
                          connection& c) {
  const std::string base = "clusters[" + name + "].cluster.";
  auto server = scalar(cl["server"], at(file, base + "server"));
  if (!server) return tl::make_unexpected(server.error());
  if (server->empty()) return fail(errc::invalid_input, "no server", at(file, base + "server"));
  c.server = *server;
  while (!c.server.empty() && c.server.back() == '/') c.server.pop_back();

  auto ca = scalar(cl["certificate-authority"], at(file, base + "certificate-authority"));
  if (!ca) return tl::make_unexpected(ca.error());
  c.ca_file = resolve(file, *ca);
  auto ca_data =
      scalar(cl["certificate-authority-data"], at(file, base + "certificate-authority-data"));
  if (!ca_data) return tl::make_unexpected(ca_data.error());
  if (!ca_data->empty()) {
    auto pem = decode_base64(*ca_data, at(file, base + "certificate-authority-data"));
    if (!pem) return tl::make_unexpected(pem.error());
    c.ca_pem = std::move(*pem);
  }
  const YAML::Node insecure = cl["insecure-skip-tls-verify"];
  if (insecure.IsDefined() && !insecure.IsNull()) {
    bool v = false;
    if (!insecure.IsScalar() || !YAML::convert<bool>::decode(insecure, v)) {
      return fail(errc::invalid_input, "expected true or false",
                  at(file, base + "insecure-skip-tls-verify"));
    }
    c.insecure_skip_tls_verify = v;
  }
  // tools/clientcmd/validation.go refuses this pair: a CA that is then not checked is a mistake.
  if (c.insecure_skip_tls_verify && (!c.ca_file.empty() || !c.ca_pem.empty())) {
    return fail(errc::invalid_input,
                "insecure-skip-tls-verify together with a certificate authority is not allowed",
                at(file, base + "insecure-skip-tls-verify"));
  }
  return {};
}

// Fills the credentials of `c` from users[name].user.
result<void> load_user(const YAML::Node& u, const std::string& name, const std::string& file,
                       connection& c) {
  const std::string base = "users[" + name + "].user.";
  for (const char* plugin : {"exec", "auth-provider"}) {
    if (u[plugin].IsDefined() && !u[plugin].IsNull()) {
      return fail(errc::invalid_input,
                  std::string(plugin) + " credential plugins are not supported",
                  at(file, base + plugin));
    }
  }
  struct text_field {
    const char* key;
    std::string* out;
    bool is_path;
  };
  std::string cert_data, key_data;
  const std::array<text_field, 6> fields{{{"token", &c.token, false},
                                          {"tokenFile", &c.token_file, true},
                                          {"client-certificate", &c.client_cert_file, true},
                                          {"client-key", &c.client_key_file, true},
                                          {"client-certificate-data", &cert_data, false},
                                          {"client-key-data", &key_data, false}}};
  for (const auto& f : fields) {
    auto v = scalar(u[f.key], at(file, base + f.key));
    if (!v) return tl::make_unexpected(v.error());
    *f.out = f.is_path ? resolve(file, *v) : *v;
  }
  if (!cert_data.empty()) {
    auto pem = decode_base64(cert_data, at(file, base + "client-certificate-data"));
    if (!pem) return tl::make_unexpected(pem.error());
    c.client_cert_pem = std::move(*pem);
  }
  if (!key_data.empty()) {
    auto pem = decode_base64(key_data, at(file, base + "client-key-data"));
    if (!pem) return tl::make_unexpected(pem.error());
    c.client_key_pem = std::move(*pem);
  }
  // An inline token wins over tokenFile (tools/clientcmd/client_config.go); the file is still
  // kept so the client can pick up a rotated token.
  if (c.token.empty() && !c.token_file.empty()) {
    auto tok = read_file(c.token_file, at(file, base + "tokenFile"));
    if (!tok) return tl::make_unexpected(tok.error());
    c.token = trim(std::move(*tok));
    if (c.token.empty()) {
      return fail(errc::invalid_input, "token file '" + c.token_file + "' is empty",
                  at(file, base + "tokenFile"));
    }
  }
  const bool has_cert = !c.client_cert_file.empty() || !c.client_cert_pem.empty();
  const bool has_key = !c.client_key_file.empty() || !c.client_key_pem.empty();
  if (has_cert != has_key) {
    return fail(errc::invalid_input, "a client certificate needs its key and a key its certificate",
                at(file, base + (has_cert ? "client-key" : "client-certificate")));
  }
  return {};
}

result<connection> load_parsed(const YAML::Node& root, const std::string& file,
                               std::string_view wanted) {
  if (!root.IsMap()) return fail(errc::invalid_input, "expected a kubeconfig map", file);
  std::string ctx_name(wanted);
  if (ctx_name.empty()) {
    auto cur = scalar(root["current-context"], at(file, "current-context"));
    if (!cur) return tl::make_unexpected(cur.error());
    if (cur->empty()) {
      return fail(errc::invalid_input, "current-context is not set and no context was named",
                  at(file, "current-context"));
    }
    ctx_name = *cur;
  }
  auto ctx = named(root, "contexts", "context", ctx_name, file);
  if (!ctx) return tl::make_unexpected(ctx.error());
  const std::string cbase = "contexts[" + ctx_name + "].context.";
  auto cluster_name = scalar((*ctx)["cluster"], at(file, cbase + "cluster"));
  if (!cluster_name) return tl::make_unexpected(cluster_name.error());
  if (cluster_name->empty())
    return fail(errc::invalid_input, "context names no cluster", at(file, cbase + "cluster"));
  auto user_name = scalar((*ctx)["user"], at(file, cbase + "user"));
  if (!user_name) return tl::make_unexpected(user_name.error());
  auto ns = scalar((*ctx)["namespace"], at(file, cbase + "namespace"));
  if (!ns) return tl::make_unexpected(ns.error());

  connection c;
  c.origin = "kubeconfig " + file + " context " + ctx_name;
  if (!ns->empty()) c.default_namespace = *ns;
  auto cl = named(root, "clusters", "cluster", *cluster_name, file);
  if (!cl) return tl::make_unexpected(cl.error());
  if (auto r = load_cluster(*cl, *cluster_name, file, c); !r) return tl::make_unexpected(r.error());
  // A context without a user is anonymous access, which client-go allows.
  if (!user_name->empty()) {
    auto u = named(root, "users", "user", *user_name, file);
    if (!u) return tl::make_unexpected(u.error());
    if (auto r = load_user(*u, *user_name, file, c); !r) return tl::make_unexpected(r.error());
  }
  return c;
}

}  // namespace

result<std::string> decode_base64(std::string_view text, std::string_view where) {
  std::string out;
  out.reserve(text.size() * 3 / 4);
  std::uint32_t acc = 0;
  int bits = 0;
  std::size_t pad = 0, digits = 0;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char ch = text[i];
    int v;
    if (ch >= 'A' && ch <= 'Z') {
      v = ch - 'A';
    } else if (ch >= 'a' && ch <= 'z') {
      v = ch - 'a' + 26;
    } else if (ch >= '0' && ch <= '9') {
      v = ch - '0' + 52;
    } else if (ch == '+') {
      v = 62;
    } else if (ch == '/') {
      v = 63;
    } else if (ch == '=') {
      ++pad;
      continue;
    } else if (ch == ' ' || ch == '\n' || ch == '\r' || ch == '\t') {
      continue;
    } else {
      return fail(errc::invalid_input, "invalid base64 character at position " + std::to_string(i),
                  std::string(where));
    }
    if (pad != 0) {
      return fail(errc::invalid_input, "base64 data after '=' padding", std::string(where));
    }
    ++digits;
    acc = (acc << 6) | static_cast<std::uint32_t>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(static_cast<char>((acc >> bits) & 0xFFu));
    }
  }
  if (digits % 4 == 1 || pad > 2 || (pad != 0 && (digits + pad) % 4 != 0)) {
    return fail(errc::invalid_input, "truncated base64 data", std::string(where));
  }
  return out;
}

result<connection> load_kubeconfig(const std::string& path, std::string_view context) {
  auto text = read_file(path, path);
  if (!text) return tl::make_unexpected(text.error());
  try {
    const YAML::Node root = YAML::Load(*text);
    return load_parsed(root, path, context);
  } catch (const YAML::Exception& e) {
    // yaml-cpp marks are 0-based; editors count from 1.
    std::string where = path;
    if (!e.mark.is_null()) {
      where += ':' + std::to_string(e.mark.line + 1) + ':' + std::to_string(e.mark.column + 1);
    }
    return fail(errc::invalid_input, "malformed kubeconfig: " + e.msg, where);
  }
}

result<connection> in_cluster(const in_cluster_source& source) {
  auto env = [](const char* name) {
    const char* v = std::getenv(name);
    return std::string(v ? v : "");
  };
  const std::string host = source.host ? *source.host : env("KUBERNETES_SERVICE_HOST");
  const std::string port = source.port ? *source.port : env("KUBERNETES_SERVICE_PORT");
  if (host.empty() || port.empty()) {
    return fail(errc::not_found,
                "not in a cluster: KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT must be set",
                "environment");
  }
  connection c;
  c.origin = "in-cluster";
  // net.JoinHostPort: an IPv6 literal goes in brackets.
  c.server =
      "https://" + (host.find(':') != std::string::npos ? "[" + host + "]" : host) + ":" + port;
  const fs::path dir(source.service_account_dir);
  c.token_file = (dir / "token").string();
  auto tok = read_file(c.token_file, c.token_file);
  if (!tok) return tl::make_unexpected(tok.error());
  c.token = trim(std::move(*tok));
  if (c.token.empty())
    return fail(errc::invalid_input, "ServiceAccount token file is empty", c.token_file);
  c.ca_file = (dir / "ca.crt").string();
  if (!fs::is_regular_file(c.ca_file))
    return fail(errc::not_found, "no ServiceAccount CA certificate", c.ca_file);
  // The namespace file is optional (rest/config.go does not need it either).
  const std::string ns_file = (dir / "namespace").string();
  if (fs::is_regular_file(ns_file)) {
    auto ns = read_file(ns_file, ns_file);
    if (!ns) return tl::make_unexpected(ns.error());
    if (auto t = trim(std::move(*ns)); !t.empty()) c.default_namespace = std::move(t);
  }
  return c;
}

}  // namespace colony::kube
