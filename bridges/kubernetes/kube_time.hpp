// Kubernetes' two timestamp formats (k8s.io/apimachinery pkg/apis/meta/v1 time.go, micro_time.go),
// from milliseconds since the epoch, in UTC.
#pragma once

#include <cstdint>
#include <string>

namespace colony::kube {

// metav1.Time: RFC 3339 with seconds ("2026-11-26T11:40:00Z"); the milliseconds are dropped.
[[nodiscard]] std::string rfc3339(std::int64_t unix_ms);
// metav1.MicroTime: RFC 3339 with microseconds ("2026-01-01T00:00:08.123000Z"), as a Lease's
// acquireTime and renewTime.
[[nodiscard]] std::string micro_time(std::int64_t unix_ms);

}  // namespace colony::kube
