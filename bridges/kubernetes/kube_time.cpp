#include "bridges/kubernetes/kube_time.hpp"

#include <cstdio>
#include <ctime>

namespace colony::kube {

namespace {

// The UTC calendar time of the second holding unix_ms (floored, also before 1970).
std::tm utc_second(std::int64_t unix_ms) {
  std::time_t s = static_cast<std::time_t>(unix_ms / 1000);
  if (unix_ms < 0 && unix_ms % 1000 != 0) --s;
  std::tm tm{};
  gmtime_r(&s, &tm);
  return tm;
}

}  // namespace

std::string rfc3339(std::int64_t unix_ms) {
  const std::tm tm = utc_second(unix_ms);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

std::string micro_time(std::int64_t unix_ms) {
  const std::tm tm = utc_second(unix_ms);
  char buf[96];  // ample for any int fields (-Wformat-truncation)
  std::snprintf(buf, sizeof(buf), "%04d-%02d-%02dT%02d:%02d:%02d.%06dZ", tm.tm_year + 1900,
                tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                static_cast<int>((unix_ms % 1000 + 1000) % 1000) * 1000);
  return buf;
}

}  // namespace colony::kube
