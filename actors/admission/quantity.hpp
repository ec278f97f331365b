// Kubernetes' canonical quantity strings (resource.Quantity.String()) for values Colony
// holds as integers: what Koordinator writes into annotations and error messages.
//
// DecimalSI: trailing zeros are removed in groups of three and named by suffix
// (n u m "" k M G T P E): 500m, 1, 1500m, 1k, 4G. BinarySI: whole powers of 1024 are named
// (Ki Mi Gi Ti Pi Ei), values in (-1024, 1024) fall back to DecimalSI: 1Gi, 1536, 512.
#pragma once

#include <cstdint>
#include <string>

namespace colony::admission {

// value * 10^exponent10 in DecimalSI canonical form (exponent10 = -3 for milli values).
[[nodiscard]] std::string format_decimal_si(std::int64_t value, int exponent10 = 0);

// An integer in BinarySI canonical form.
[[nodiscard]] std::string format_binary_si(std::int64_t value);

// A cpu quantity from milli-cores, as resource.NewMilliQuantity(m, DecimalSI).String().
[[nodiscard]] inline std::string format_milli_cpu(std::int64_t milli) {
  return format_decimal_si(milli, -3);
}

// A byte count whose original format Colony does not keep: the shorter of the BinarySI and
// DecimalSI forms, BinarySI on a tie (4Gi stays "4Gi", 4G stays "4G", 1536 is "1536").
[[nodiscard]] std::string format_memory(std::int64_t bytes);

// The same, appended to `out` (no temporary string).
void append_decimal_si(std::string& out, std::int64_t value, int exponent10 = 0);
void append_memory(std::string& out, std::int64_t bytes);

}  // namespace colony::admission
