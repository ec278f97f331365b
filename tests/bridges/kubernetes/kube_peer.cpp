// kube_peer over tools/peers/kube.sh (see kube_peer.hpp).
#include "tests/bridges/kubernetes/kube_peer.hpp"

#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>

#include <filesystem>
#include <fstream>
#include <sstream>

namespace colony::kube::testing {
namespace {

namespace fs = std::filesystem;

std::string env_or(const char* name, const std::string& fallback) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? std::string(v) : fallback;
}

// kube.sh's path: $COLONY_KUBE_SH, else the one compiled in by CMake.
std::string kube_sh_path() { return env_or("COLONY_KUBE_SH", COLONY_KUBE_SH_DEFAULT); }

// The cache root kube.sh uses (its COLONY_PEERS_CACHE rule).
std::string peers_cache() {
  const std::string home = env_or("HOME", "/nonexistent");
  return env_or("COLONY_PEERS_CACHE", env_or("XDG_CACHE_HOME", home + "/.cache") + "/colony/peers");
}

std::string shell_quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) {
    if (c == '\'') {
      q += "'\\''";
    } else {
      q += c;
    }
  }
  return q + "'";
}

std::string tail_of(const std::string& path, std::size_t n) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string s = ss.str();
  return s.size() > n ? s.substr(s.size() - n) : s;
}

}  // namespace

bool kube_peer::binaries_installed(std::string& why) {
  const fs::path cache = peers_cache();
  bool apiserver = false, etcd = false;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(cache, ec)) {
    const std::string name = e.path().filename().string();
    if (name.rfind("kube-", 0) == 0 && fs::exists(e.path() / "bin/kube-apiserver"))
      apiserver = true;
    if (name.rfind("etcd-", 0) == 0 && fs::exists(e.path() / "bin/etcd")) etcd = true;
  }
  if (apiserver && etcd) return true;
  why = "kube-apiserver/etcd binaries are not installed under " + cache.string() +
        " (run tools/peers/kube.sh install, ~9 min on 2 cores)";
  return false;
}

result<std::string> kube_peer::kube_sh(const std::string& cmd, const std::string& env) {
  const std::string log = work_ + "/kube.sh.log";
  const std::string line = "PYENV_VERSION=system KUBE_STOP_TIMEOUT=5 " + env + " bash " +
                           shell_quote(kube_sh_path()) + " " + cmd + " --dir " + shell_quote(dir_) +
                           " 2>>" + shell_quote(log);
  FILE* p = ::popen(line.c_str(), "r");
  if (p == nullptr) return fail(errc::internal, "popen failed", line);
  std::string out;
  char buf[4096];
  while (std::size_t n = std::fread(buf, 1, sizeof buf, p)) out.append(buf, n);
  const int status = ::pclose(p);
  if (status != 0) {
    return fail(errc::unavailable,
                "kube.sh " + cmd + " failed (status " + std::to_string(status) + "); log tail:\n" +
                    tail_of(log, 2000),
                line);
  }
  while (!out.empty() && (out.back() == '\n' || out.back() == '\r')) out.pop_back();
  return out;
}

result<void> kube_peer::apply_crds(const std::vector<std::string>& files) {
  std::string cmd = "apply-crds";
  for (const auto& f : files) cmd += " " + shell_quote(f);
  auto r = kube_sh(cmd);
  if (!r) return tl::make_unexpected(r.error());
  return {};
}

std::string kube_peer::repo_crds() {
  return (fs::path(kube_sh_path()).parent_path() / ".." / ".." / "deploy" / "crds")
      .lexically_normal()
      .string();
}

std::string kube_peer::koordinator_crds() {
  const char* v = std::getenv("COLONY_KOORDINATOR_CRDS");
  if (v != nullptr && *v != '\0') return v;
  return (fs::path(kube_sh_path()).parent_path() / ".." / ".." / ".." / "shared" /
          "koordinator-crds")
      .lexically_normal()
      .string();
}

std::string kube_peer::crds_folder() {
  const auto k = koordinator_crds();
  return fs::is_directory(k) ? k : repo_crds();
}

std::string kube_peer::crd_file(const std::string& koordinator_file,
                                const std::string& colony_file) {
  const auto k = fs::path(koordinator_crds()) / koordinator_file;
  return fs::exists(k) ? k.string() : (fs::path(repo_crds()) / colony_file).string();
}

result<std::unique_ptr<kube_peer>> kube_peer::start(const std::string& extra_apiserver_args) {
  std::unique_ptr<kube_peer> peer(new kube_peer());
  std::string tmpl = (fs::temp_directory_path() / "colony-kube-test-XXXXXX").string();
  if (::mkdtemp(tmpl.data()) == nullptr) return fail(errc::internal, "mkdtemp failed", tmpl);
  peer->work_ = tmpl;
  peer->dir_ = tmpl + "/kube";
  const std::string env = extra_apiserver_args.empty()
                              ? ""
                              : "KUBE_APISERVER_ARGS=" + shell_quote(extra_apiserver_args);
  auto kubeconfig = peer->kube_sh("start", env);
  if (!kubeconfig) return tl::make_unexpected(kubeconfig.error());
  auto conn = load_kubeconfig(*kubeconfig);
  if (!conn) return tl::make_unexpected(conn.error());
  peer->conn_ = std::move(*conn);
  auto env_lines = peer->kube_sh("env");
  if (!env_lines) return tl::make_unexpected(env_lines.error());
  std::istringstream in(*env_lines);
  for (std::string l; std::getline(in, l);) {
    if (l.rfind("KUBE_VIEWER_TOKEN=", 0) == 0) peer->viewer_token_ = l.substr(18);
  }
  return peer;
}

kube_peer::~kube_peer() {
  if (!dir_.empty()) permit_unchecked(kube_sh("stop"));
  std::error_code ec;
  if (!work_.empty()) fs::remove_all(work_, ec);
}

result<void> kube_peer::kill_apiserver() {
  auto r = kube_sh("kill-apiserver");
  if (!r) return tl::make_unexpected(r.error());
  return {};
}

result<void> kube_peer::restart_apiserver() {
  auto r = kube_sh("restart-apiserver");
  if (!r) return tl::make_unexpected(r.error());
  return {};
}

result<std::string> kube_peer::compact() { return kube_sh("compact"); }

}  // namespace colony::kube::testing
