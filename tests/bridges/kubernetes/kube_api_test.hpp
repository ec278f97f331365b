// A GoogleTest fixture over a real kube-apiserver for one test (kube_peer.hpp) with an admin
// API client and JSON helpers: what every kube-labelled test starts from.
#pragma once

#include <memory>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "bridges/kubernetes/api_client.hpp"
#include "tests/bridges/kubernetes/kube_peer.hpp"

namespace colony::kube::testing {

class kube_api_test : public ::testing::Test {
 protected:
  using json = nlohmann::json;

  // Starts the apiserver (with extra flags, e.g. "--watch-cache=false") and the client, and
  // creates namespace `ns` unless empty. Skips the
  // test only when kube.sh's binaries are not installed; callers return when
  // IsSkipped() || HasFatalFailure().
  void start_peer(const std::string& ns = {}, const std::string& apiserver_args = {}) {
    std::string why;
    if (!kube_peer::binaries_installed(why)) GTEST_SKIP() << why;
    auto p = kube_peer::start(apiserver_args);
    ASSERT_TRUE(p) << p.error().describe();
    peer_ = std::move(*p);
    auto c = api_client::open(peer_->conn());
    ASSERT_TRUE(c) << c.error().describe();
    client_ = std::make_unique<api_client>(std::move(*c));
    if (!ns.empty())
      post("/api/v1/namespaces",
           json{{"apiVersion", "v1"}, {"kind", "Namespace"}, {"metadata", {{"name", ns}}}});
  }
  json post(const std::string& path, const json& body) {
    auto r = client_->post(path, body.dump());
    EXPECT_TRUE(r) << r.error().describe();
    return r ? json::parse(r->body) : json{};
  }
  json get(const std::string& path) {
    auto r = client_->get(path);
    EXPECT_TRUE(r) << r.error().describe();
    return r ? json::parse(r->body) : json{};
  }

  std::unique_ptr<kube_peer> peer_;
  std::unique_ptr<api_client> client_;
};

}  // namespace colony::kube::testing
