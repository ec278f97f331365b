// Status classification, URL building, backoff and a refused connection: no apiserver needed.
#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <set>
#include <string>
#include <vector>

#include "bridges/kubernetes/api_client.hpp"
#include "bridges/kubernetes/backoff.hpp"
#include "bridges/kubernetes/http.hpp"
#include "bridges/kubernetes/watch_stream.hpp"

namespace colony::kube {
namespace {

TEST(KubeStatusError, ClassifiesByWhatTheCallerDoesNext) {
  const std::string already =
      R"({"kind":"Status","status":"Failure","message":"nodes \"n1\" already exists","reason":"AlreadyExists","code":409})";
  const std::string conflict =
      R"({"kind":"Status","message":"the object has been modified","reason":"Conflict","code":409})";
  struct row {
    long status;
    std::string body;
    errc want;
  };
  const row rows[] = {
      {404, "{}", errc::not_found},
      {409, already, errc::already_exists},
      {409, conflict, errc::failed_precondition},
      {401, "", errc::failed_precondition},
      {403, "", errc::failed_precondition},
      {429, "", errc::unavailable},
      {500, "", errc::unavailable},
      {503, "", errc::unavailable},
      {504, "", errc::unavailable},
      {501, "", errc::invalid_input},
      {400, "", errc::invalid_input},
      {422, "", errc::invalid_input},
  };
  for (const auto& r : rows) {
    const error e = status_error(r.status, r.body, "GET https://127.0.0.1:1/x");
    EXPECT_EQ(e.code, r.want) << r.status << " " << r.body;
    EXPECT_EQ(e.where, "GET https://127.0.0.1:1/x");
    EXPECT_EQ(e.message.rfind("HTTP " + std::to_string(r.status), 0), 0u) << e.message;
  }
  EXPECT_EQ(status_error(409, already, "w").message,
            "HTTP 409 Conflict: nodes \"n1\" already exists");
  EXPECT_EQ(status_message("not json"), "not json");
}

TEST(KubeQuery, ParametersArePercentEncoded) {
  std::string p = "/api/v1/pods";
  add_query(p, "labelSelector", "app in (a,b),tier=x y");
  add_query(p, "limit", "10");
  EXPECT_EQ(p, "/api/v1/pods?labelSelector=app%20in%20%28a%2Cb%29%2Ctier%3Dx%20y&limit=10");
  watch_params wp;
  wp.resource_version = "123";
  wp.timeout = std::chrono::seconds(42);
  EXPECT_EQ(watch_stream::watch_path("/api/v1/nodes", wp),
            "/api/v1/nodes?watch=1&resourceVersion=123&allowWatchBookmarks=true&timeoutSeconds=42");
}

TEST(KubeBackoff, SameSeedSameDelaysDoublingToTheCap) {
  backoff a(std::chrono::milliseconds(100), std::chrono::milliseconds(3000), 1.0, 42);
  backoff b(std::chrono::milliseconds(100), std::chrono::milliseconds(3000), 1.0, 42);
  backoff other(std::chrono::milliseconds(100), std::chrono::milliseconds(3000), 1.0, 43);
  std::vector<long> da, dother;
  for (int i = 0; i < 10; ++i) {
    const auto x = a.next();
    EXPECT_EQ(x, b.next());
    da.push_back(static_cast<long>(x.count()));
    dother.push_back(static_cast<long>(other.next().count()));
    const long base = 100L << i;
    EXPECT_GE(x.count(), std::min(base, 3000L)) << i;      // jitter only adds
    EXPECT_LE(x.count(), std::min(2 * base, 3000L)) << i;  // at most base * (1 + 1.0), capped
  }
  EXPECT_NE(da, dother);
  EXPECT_EQ(da.back(), 3000);
  a.reset();
  EXPECT_LT(a.next().count(), 200);
}

// A port nothing listens on: bind an ephemeral one, then close it.
int closed_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
  socklen_t len = sizeof addr;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  ::close(fd);
  return ntohs(addr.sin_port);
}

TEST(KubeApiClientOffline, RefusedConnectionIsUnavailableNamingTheUrl) {
  connection c;
  c.server = "https://127.0.0.1:" + std::to_string(closed_port());
  c.token = "t";
  auto client = api_client::open(c);
  ASSERT_TRUE(client) << client.error().describe();
  auto r = client->get("/api/v1/nodes");
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, errc::unavailable);
  EXPECT_EQ(r.error().where, "GET " + c.server + "/api/v1/nodes");

  auto w = watch_stream::open(c);
  ASSERT_TRUE(w);
  auto wr = w->run("/api/v1/nodes", {}, [](watch_event&) { return true; });
  ASSERT_FALSE(wr);
  EXPECT_EQ(wr.error().code, errc::unavailable);
}

TEST(KubeApiClientOffline, InterruptIsFinal) {
  connection c;
  c.server = "https://127.0.0.1:" + std::to_string(closed_port());
  auto client = api_client::open(c);
  ASSERT_TRUE(client);
  client->interrupt();
  auto r = client->get("/version");
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().message, "interrupted");
}

}  // namespace
}  // namespace colony::kube
