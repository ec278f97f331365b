// Strong types for Colony's units and ids, so a milli-core is never added to a byte.
//
// quantity<Tag> is a 64-bit signed integer with arithmetic only between equal tags.
// Policies take these in their signatures; wire tables carry the raw int64 values.
#pragma once

#include <compare>
#include <cstdint>
#include <functional>

namespace colony {

template <class Tag>
struct quantity {
  std::int64_t value = 0;

  constexpr quantity() = default;
  constexpr explicit quantity(std::int64_t v) : value(v) {}

  constexpr auto operator<=>(const quantity&) const = default;
  constexpr quantity operator+(quantity o) const { return quantity{value + o.value}; }
  constexpr quantity operator-(quantity o) const { return quantity{value - o.value}; }
  constexpr quantity& operator+=(quantity o) {
    value += o.value;
    return *this;
  }
  constexpr quantity& operator-=(quantity o) {
    value -= o.value;
    return *this;
  }
  constexpr quantity operator-() const { return quantity{-value}; }
};

struct milli_cpu_tag {};
struct bytes_tag {};
struct event_time_tag {};
struct duration_tag {};

using milli_cpu = quantity<milli_cpu_tag>;  // 1000 = one core (Kubernetes "1")
using bytes = quantity<bytes_tag>;          // memory in bytes
// Event time in milliseconds since the trace (sim) or the Unix epoch (cluster mode).
// Policies read time only from events, never from a clock.
using event_time = quantity<event_time_tag>;
using duration_ms = quantity<duration_tag>;

constexpr event_time operator+(event_time t, duration_ms d) {
  return event_time{t.value + d.value};
}
// No free event_time - event_time -> duration_ms: it would be ambiguous with the member
// operator-; subtract .value explicitly.

// A position in an event log. Offsets start at 0 and have no gaps.
using log_offset = std::uint64_t;
inline constexpr log_offset no_offset = ~log_offset{0};

constexpr std::int64_t kib = 1024;
constexpr std::int64_t mib = 1024 * kib;
constexpr std::int64_t gib = 1024 * mib;

}  // namespace colony
