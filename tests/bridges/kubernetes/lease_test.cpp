// lease_elector's option rules (client-go NewLeaderElector's) and MicroTime; no server.
#include <gtest/gtest.h>

#include "bridges/kubernetes/kube_time.hpp"
#include "bridges/kubernetes/lease.hpp"

namespace colony::kube {
namespace {

using std::chrono::milliseconds;

TEST(LeaseOptions, RefusesWhatClientGoRefusesNamingTheOption) {
  struct row {
    const char* what;
    lease_options o;
    const char* where;
  };
  const auto base = [] {
    lease_options o;
    o.identity = "a";
    return o;
  };
  std::vector<row> rows;
  {
    auto o = base();
    o.identity.clear();
    rows.push_back({"no identity", o, "identity"});
  }
  {
    auto o = base();
    o.name.clear();
    rows.push_back({"no name", o, "name"});
  }
  {
    auto o = base();
    o.renew_deadline = o.lease_duration;
    rows.push_back({"deadline = duration", o, "lease_duration"});
  }
  {
    auto o = base();
    o.retry_period = milliseconds(9'000);  // 1.2 x 9 s > 10 s
    rows.push_back({"retry too long", o, "renew_deadline"});
  }
  {
    auto o = base();
    o.retry_period = milliseconds(0);
    rows.push_back({"no retry period", o, "renew_deadline"});
  }
  {
    auto o = base();
    o.lease_duration = milliseconds(900);
    o.renew_deadline = milliseconds(800);
    o.retry_period = milliseconds(100);
    rows.push_back({"sub-second lease", o, "lease_duration"});
  }
  for (const auto& r : rows) {
    auto e = lease_elector::open(connection{}, r.o);
    ASSERT_FALSE(e) << r.what;
    EXPECT_EQ(e.error().code, errc::invalid_input) << r.what;
    EXPECT_EQ(e.error().where, r.where) << r.what;
  }
}

TEST(LeaseOptions, MicroTimeIsRfc3339WithMicroseconds) {
  EXPECT_EQ(micro_time(0), "1970-01-01T00:00:00.000000Z");
  EXPECT_EQ(micro_time(1'767'225'608'123), "2026-01-01T00:00:08.123000Z");
  EXPECT_EQ(micro_time(-1), "1969-12-31T23:59:59.999000Z");
}

}  // namespace
}  // namespace colony::kube
