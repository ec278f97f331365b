// A real kube-apiserver + etcd for one test, through tools/peers/kube.sh (docs/peers.md).
//
// start() makes a fresh temporary folder, runs `kube.sh start --dir DIR` (free ports on
// 127.0.0.1) and loads the kubeconfig it prints with colony's own loader; the destructor runs
// `kube.sh stop` and deletes the folder. kill_apiserver/restart_apiserver/compact are the fault
// commands of kube.sh. Thread-safety: none; one test thread drives it.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "bridges/kubernetes/kubeconfig.hpp"
#include "messages/result.hpp"

namespace colony::kube::testing {

class kube_peer {
 public:
  // True when kube.sh's cached binaries exist; else `why` says how to get them. Tests skip
  // only in that case: any other failure to start is a failure.
  static bool binaries_installed(std::string& why);
  // extra_apiserver_args: KUBE_APISERVER_ARGS for kube.sh (e.g. "--watch-cache=false").
  [[nodiscard]] static result<std::unique_ptr<kube_peer>> start(
      const std::string& extra_apiserver_args = {});
  ~kube_peer();

  [[nodiscard]] const connection& conn() const { return conn_; }
  [[nodiscard]] const std::string& viewer_token() const { return viewer_token_; }
  [[nodiscard]] const std::string& dir() const { return dir_; }

  // Applies CRD files (`kube.sh apply-crds`: server-side apply, waits until Established).
  [[nodiscard]] result<void> apply_crds(const std::vector<std::string>& files);
  // The repository's deploy/crds (Colony's CRDs for every kind it reads or writes), and
  // Koordinator's own CRDs ($COLONY_KOORDINATOR_CRDS, else the shared folder docs/peers.md names,
  // beside the checkout; it may be absent).
  [[nodiscard]] static std::string repo_crds();
  [[nodiscard]] static std::string koordinator_crds();
  // Koordinator's CRD folder when it exists, else deploy/crds: a test against a kind's CRD runs
  // everywhere, with Koordinator's own where the checkout has them beside it.
  [[nodiscard]] static std::string crds_folder();
  // One kind's CRD file, by its name in either folder.
  [[nodiscard]] static std::string crd_file(const std::string& koordinator_file,
                                            const std::string& colony_file);

  [[nodiscard]] result<void> kill_apiserver();
  [[nodiscard]] result<void> restart_apiserver();
  // Compacts etcd at its current revision; returns that revision.
  [[nodiscard]] result<std::string> compact();

 private:
  kube_peer() = default;
  // Runs `bash kube.sh CMD --dir DIR`; stdout on success, an error with stderr's tail if not.
  [[nodiscard]] result<std::string> kube_sh(const std::string& cmd, const std::string& env = {});

  std::string work_;  // temporary folder: DIR and the kube.sh log
  std::string dir_;   // kube.sh --dir
  connection conn_;
  std::string viewer_token_;
};

}  // namespace colony::kube::testing
