// Kubeconfig and in-cluster loading (bridges/kubernetes/kubeconfig.hpp): no server needed.
#include "bridges/kubernetes/kubeconfig.hpp"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

namespace colony::kube {
namespace {

namespace fs = std::filesystem;

class Kubeconfig : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (fs::temp_directory_path() / "colony-kubeconfig-XXXXXX").string();
    ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string write(const std::string& name, const std::string& text) {
    const fs::path p = dir_ / name;
    fs::create_directories(p.parent_path());
    std::ofstream(p, std::ios::binary) << text;
    return p.string();
  }

  fs::path dir_;
};

constexpr const char* kPem =
    "-----BEGIN CERTIFICATE-----\nMIIBcolonytest\n-----END CERTIFICATE-----\n";

// Two contexts; the current one uses a relative CA path and an inline token.
constexpr const char* kTwoContexts = R"(apiVersion: v1
kind: Config
clusters:
- name: a
  cluster:
    server: https://127.0.0.1:6443/
    certificate-authority: certs/ca.crt
- name: b
  cluster:
    server: https://10.0.0.2:443
    insecure-skip-tls-verify: true
users:
- name: admin
  user:
    token: admin-token
- name: other
  user:
    token: other-token
contexts:
- name: ctx-a
  context:
    cluster: a
    user: admin
    namespace: koordinator-system
- name: ctx-b
  context:
    cluster: b
    user: other
current-context: ctx-a
)";

TEST_F(Kubeconfig, LoadsTheCurrentContext) {
  const std::string path = write("kube/config", kTwoContexts);
  auto c = load_kubeconfig(path);
  ASSERT_TRUE(c) << c.error().describe();
  EXPECT_EQ(c->server, "https://127.0.0.1:6443");  // trailing '/' dropped
  // Relative to the kubeconfig's folder, as client-go resolves it.
  EXPECT_EQ(c->ca_file, (dir_ / "kube/certs/ca.crt").string());
  EXPECT_TRUE(c->ca_pem.empty());
  EXPECT_FALSE(c->insecure_skip_tls_verify);
  EXPECT_EQ(c->token, "admin-token");
  EXPECT_EQ(c->default_namespace, "koordinator-system");
  EXPECT_EQ(c->origin, "kubeconfig " + path + " context ctx-a");
}

TEST_F(Kubeconfig, LoadsANamedContext) {
  const std::string path = write("config", kTwoContexts);
  auto c = load_kubeconfig(path, "ctx-b");
  ASSERT_TRUE(c) << c.error().describe();
  EXPECT_EQ(c->server, "https://10.0.0.2:443");
  EXPECT_TRUE(c->insecure_skip_tls_verify);
  EXPECT_EQ(c->token, "other-token");
  EXPECT_EQ(c->default_namespace, "default");
}

TEST_F(Kubeconfig, DecodesBase64CertificateData) {
  const std::string b64 =
      "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCk1JSUJjb2xvbnl0ZXN0Ci0tLS0tRU5EIENFUlRJRklDQVRFLS0t"
      "LS0K";
  const std::string path = write("config", std::string(R"(clusters:
- name: c
  cluster:
    server: https://127.0.0.1:1
    certificate-authority-data: )") + b64 + R"(
users:
- name: u
  user:
    client-certificate-data: )" + b64 + R"(
    client-key-data: )" + b64 + R"(
contexts:
- name: x
  context: {cluster: c, user: u}
current-context: x
)");
  auto c = load_kubeconfig(path);
  ASSERT_TRUE(c) << c.error().describe();
  EXPECT_EQ(c->ca_pem, kPem);
  EXPECT_EQ(c->client_cert_pem, kPem);
  EXPECT_EQ(c->client_key_pem, kPem);
  EXPECT_TRUE(c->ca_file.empty());
  EXPECT_TRUE(c->token.empty());
}

TEST_F(Kubeconfig, ReadsTheTokenFile) {
  write("secrets/token", "file-token\n");
  const std::string path = write("config", R"(clusters:
- {name: c, cluster: {server: "https://127.0.0.1:1"}}
users:
- {name: u, user: {tokenFile: secrets/token}}
contexts:
- {name: x, context: {cluster: c, user: u}}
current-context: x
)");
  auto c = load_kubeconfig(path);
  ASSERT_TRUE(c) << c.error().describe();
  EXPECT_EQ(c->token, "file-token");  // trailing newline trimmed
  EXPECT_EQ(c->token_file, (dir_ / "secrets/token").string());
}

TEST_F(Kubeconfig, InlineTokenWinsOverTokenFile) {
  write("token", "from-file");
  const std::string path = write("config", R"(clusters:
- {name: c, cluster: {server: "https://127.0.0.1:1"}}
users:
- {name: u, user: {token: inline, tokenFile: token}}
contexts:
- {name: x, context: {cluster: c, user: u}}
current-context: x
)");
  auto c = load_kubeconfig(path);
  ASSERT_TRUE(c) << c.error().describe();
  EXPECT_EQ(c->token, "inline");
}

TEST_F(Kubeconfig, MissingTokenFileNamesTheField) {
  const std::string path = write("config", R"(clusters:
- {name: c, cluster: {server: "https://127.0.0.1:1"}}
users:
- {name: u, user: {tokenFile: nowhere/token}}
contexts:
- {name: x, context: {cluster: c, user: u}}
current-context: x
)");
  auto c = load_kubeconfig(path);
  ASSERT_FALSE(c);
  EXPECT_EQ(c.error().code, errc::not_found);
  EXPECT_EQ(c.error().where, path + ":users[u].user.tokenFile");
}

TEST_F(Kubeconfig, MissingCurrentContextIsAnErrorNamingTheField) {
  const std::string path = write("config", R"(clusters:
- {name: c, cluster: {server: "https://127.0.0.1:1"}}
contexts:
- {name: x, context: {cluster: c}}
)");
  auto c = load_kubeconfig(path);
  ASSERT_FALSE(c);
  EXPECT_EQ(c.error().code, errc::invalid_input);
  EXPECT_EQ(c.error().where, path + ":current-context");
  // With the context named by the caller the same file loads (anonymous: no user).
  auto named = load_kubeconfig(path, "x");
  ASSERT_TRUE(named) << named.error().describe();
  EXPECT_TRUE(named->token.empty());
}

TEST_F(Kubeconfig, MalformedYamlIsAnErrorNamingTheFile) {
  const std::string path = write("config", "clusters:\n- name: c\n  cluster: [unclosed\n");
  auto c = load_kubeconfig(path);
  ASSERT_FALSE(c);
  EXPECT_EQ(c.error().code, errc::invalid_input);
  EXPECT_EQ(c.error().where.rfind(path + ":", 0), 0u) << c.error().where;  // file:line:column
  EXPECT_NE(c.error().message.find("malformed kubeconfig"), std::string::npos);
}

TEST_F(Kubeconfig, MissingFileIsNotFound) {
  auto c = load_kubeconfig((dir_ / "absent").string());
  ASSERT_FALSE(c);
  EXPECT_EQ(c.error().code, errc::not_found);
  EXPECT_EQ(c.error().where, (dir_ / "absent").string());
}

TEST_F(Kubeconfig, ErrorsNameTheField) {
  struct bad_case {
    const char* yaml;
    errc code;
    const char* where;  // after "FILE:"
  };
  const bad_case cases[] = {
      {"contexts:\n- {name: x, context: {cluster: gone}}\ncurrent-context: x\n", errc::not_found,
       "clusters"},
      {"current-context: x\n", errc::not_found, "contexts"},
      {"clusters:\n- {name: c, cluster: {}}\ncontexts:\n- {name: x, context: {cluster: c}}\n"
       "current-context: x\n",
       errc::invalid_input, "clusters[c].cluster.server"},
      {"clusters:\n- {name: c, cluster: {server: 'https://h', certificate-authority-data: "
       "'no*base64'}}\ncontexts:\n- {name: x, context: {cluster: c}}\ncurrent-context: x\n",
       errc::invalid_input, "clusters[c].cluster.certificate-authority-data"},
      {"clusters:\n- {name: c, cluster: {server: 'https://h', certificate-authority: ca, "
       "insecure-skip-tls-verify: true}}\ncontexts:\n- {name: x, context: {cluster: c}}\n"
       "current-context: x\n",
       errc::invalid_input, "clusters[c].cluster.insecure-skip-tls-verify"},
      {"clusters:\n- {name: c, cluster: {server: 'https://h', insecure-skip-tls-verify: maybe}}\n"
       "contexts:\n- {name: x, context: {cluster: c}}\ncurrent-context: x\n",
       errc::invalid_input, "clusters[c].cluster.insecure-skip-tls-verify"},
      {"clusters:\n- {name: c, cluster: {server: 'https://h'}}\nusers:\n- {name: u, user: {exec: "
       "{command: aws}}}\ncontexts:\n- {name: x, context: {cluster: c, user: u}}\n"
       "current-context: x\n",
       errc::invalid_input, "users[u].user.exec"},
      {"clusters:\n- {name: c, cluster: {server: 'https://h'}}\nusers:\n- {name: u, user: "
       "{client-certificate: cert.pem}}\ncontexts:\n- {name: x, context: {cluster: c, user: u}}\n"
       "current-context: x\n",
       errc::invalid_input, "users[u].user.client-key"},
      {"clusters:\n- {name: c, cluster: {server: [1, 2]}}\ncontexts:\n- {name: x, context: "
       "{cluster: c}}\ncurrent-context: x\n",
       errc::invalid_input, "clusters[c].cluster.server"},
  };
  for (const auto& bc : cases) {
    const std::string path = write("config", bc.yaml);
    auto c = load_kubeconfig(path);
    ASSERT_FALSE(c) << bc.yaml;
    EXPECT_EQ(c.error().code, bc.code) << bc.yaml << " -> " << c.error().describe();
    EXPECT_EQ(c.error().where, path + ":" + bc.where) << bc.yaml;
  }
}

TEST(KubeBase64, DecodesRfc4648Vectors) {
  const std::pair<const char*, const char*> vectors[] = {
      {"", ""},
      {"Zg==", "f"},
      {"Zm8=", "fo"},
      {"Zm9v", "foo"},
      {"Zm9vYg==", "foob"},
      {"Zm9vYmE=", "fooba"},
      {"Zm9vYmFy", "foobar"},
      {"Zm9v\nYmFy\n", "foobar"},
  };
  for (const auto& [in, want] : vectors) {
    auto got = decode_base64(in, "field");
    ASSERT_TRUE(got) << in;
    EXPECT_EQ(*got, want) << in;
  }
  for (const char* bad : {"Zm9vY", "Zg=a", "Z===", "Zm9v!"}) {
    auto got = decode_base64(bad, "the.field");
    ASSERT_FALSE(got) << bad;
    EXPECT_EQ(got.error().where, "the.field");
  }
}

TEST_F(Kubeconfig, InClusterReadsTheServiceAccount) {
  write("sa/token", "sa-token\n");
  write("sa/ca.crt", kPem);
  write("sa/namespace", "koordinator-system");
  in_cluster_source src;
  src.service_account_dir = (dir_ / "sa").string();
  src.host = "10.96.0.1";
  src.port = "443";
  auto c = in_cluster(src);
  ASSERT_TRUE(c) << c.error().describe();
  EXPECT_EQ(c->server, "https://10.96.0.1:443");
  EXPECT_EQ(c->token, "sa-token");
  EXPECT_EQ(c->token_file, (dir_ / "sa/token").string());
  EXPECT_EQ(c->ca_file, (dir_ / "sa/ca.crt").string());
  EXPECT_EQ(c->default_namespace, "koordinator-system");
  EXPECT_EQ(c->origin, "in-cluster");

  src.host = "fd00::1";  // IPv6 goes in brackets
  auto v6 = in_cluster(src);
  ASSERT_TRUE(v6) << v6.error().describe();
  EXPECT_EQ(v6->server, "https://[fd00::1]:443");
}

TEST_F(Kubeconfig, InClusterErrors) {
  in_cluster_source src;
  src.service_account_dir = (dir_ / "sa").string();
  src.host = "";
  src.port = "443";
  auto none = in_cluster(src);
  ASSERT_FALSE(none);
  EXPECT_EQ(none.error().code, errc::not_found);

  src.host = "10.96.0.1";
  auto no_token = in_cluster(src);
  ASSERT_FALSE(no_token);
  EXPECT_EQ(no_token.error().code, errc::not_found);
  EXPECT_EQ(no_token.error().where, (dir_ / "sa/token").string());

  write("sa/token", "t");
  auto no_ca = in_cluster(src);
  ASSERT_FALSE(no_ca);
  EXPECT_EQ(no_ca.error().where, (dir_ / "sa/ca.crt").string());
}

TEST_F(Kubeconfig, InClusterReadsTheEnvironment) {
  write("sa/token", "t");
  write("sa/ca.crt", kPem);
  in_cluster_source src;
  src.service_account_dir = (dir_ / "sa").string();
  ::setenv("KUBERNETES_SERVICE_HOST", "10.96.0.7", 1);
  ::setenv("KUBERNETES_SERVICE_PORT", "6443", 1);
  auto c = in_cluster(src);
  ::unsetenv("KUBERNETES_SERVICE_HOST");
  ::unsetenv("KUBERNETES_SERVICE_PORT");
  ASSERT_TRUE(c) << c.error().describe();
  EXPECT_EQ(c->server, "https://10.96.0.7:6443");
  EXPECT_EQ(c->default_namespace, "default");  // no namespace file
}

}  // namespace
}  // namespace colony::kube
