// Kubernetes resource.Quantity: the one parser and the one set of canonical formatters Colony
// uses for "500m", "1.5", "16Gi", "8k", "1e3" (k8s.io/apimachinery/pkg/api/resource).
//
// Grammar (quantity.go):
//   <quantity> ::= <sign>? <number> <suffix>
//   <number>   ::= <digits> | <digits>.<digits> | <digits>. | .<digits>
//   <suffix>   ::= <binarySI> | <decimalSI> | <decimalExponent>
//   binarySI:  Ki Mi Gi Ti Pi Ei (2^10 .. 2^60)
//   decimalSI: n u m "" k M G T P E (10^-9 .. 10^18; note "E" is exa, "e3" an exponent)
//   decimalExponent: e<signed int> | E<signed int>
//
// As apimachinery does: the value is kept exactly (any number of digits), rounded away from
// zero to a multiple of 10^-9 ("0.9n" -> 1n, "1e-20" -> 1n); Value() and MilliValue() round
// away from zero ("100m" -> Value 1, "-0.5" -> Value -1, "1.0001" -> MilliValue 1001). Colony
// differs where apimachinery is silent or lenient, and says so with an error instead:
//   - an accessor whose result does not fit int64 fails with errc::out_of_range (Go overflows
//     silently: "123456789012345678901".Value() is undefined there);
//   - a BinarySI quantity outside int64 fails with errc::out_of_range (Go caps its magnitude
//     at 2^63-1 silently: "9Ei" parses as 2^63-1);
//   - a number without a digit ("", ".", "+", "Ki") is invalid_input (Go reads ".", "+", "-"
//     and a bare suffix like "Ki" as 0; only "" is an error there);
//   - an exponent outside int32 is invalid_input.
// Errors name the text (the first 64 characters) in the message; `where` is the caller's
// location ("pod default/x: requests.cpu") and becomes error::where.
//
// Formatting is resource.Quantity.String(): the canonical form, no fraction digits, the largest
// suffix that keeps the value exact, the exponent a multiple of three: DecimalSI 1500m, 2, 8k,
// 1G; BinarySI 16Gi, 1536Mi, values in (-1024, 1024) or with a fraction as DecimalSI;
// DecimalExponent 1e3, 80e-3. A DecimalSI exponent above 18 falls back to e-notation (1e21).
//
// Plain functions of their arguments: no state, thread-safe, no exceptions.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "messages/result.hpp"

namespace colony::k8s {

// resource.Format: how a quantity was written, which String() keeps.
enum class quantity_format : std::uint8_t {
  decimal_si,        // 12M, 500m, 2 (and every unsuffixed number)
  binary_si,         // 12Mi
  decimal_exponent,  // 12e6
};

// A parsed resource.Quantity: an exact decimal, sign * digits * 10^exponent, exponent >= -9.
class quantity {
 public:
  quantity() = default;  // zero, DecimalSI

  // resource.ParseQuantity. invalid_input for malformed text, out_of_range for a BinarySI value
  // outside int64. where: the caller's location, copied into error::where.
  [[nodiscard]] static result<quantity> parse(std::string_view text, std::string_view where = {});

  // Value(): rounded away from zero to an integer. out_of_range where it does not fit int64.
  [[nodiscard]] result<std::int64_t> value(std::string_view where = {}) const {
    return scaled_value(0, where);
  }
  // MilliValue(): value * 1000 rounded away from zero.
  [[nodiscard]] result<std::int64_t> milli_value(std::string_view where = {}) const {
    return scaled_value(-3, where);
  }
  // ScaledValue(scale): value / 10^scale rounded away from zero (scale -3 = milli, -9 = nano,
  // 3 = kilo). out_of_range where it does not fit int64.
  [[nodiscard]] result<std::int64_t> scaled_value(int scale, std::string_view where = {}) const;

  // -1, 0 or 1.
  [[nodiscard]] int sign() const noexcept { return digits_.empty() ? 0 : (negative_ ? -1 : 1); }
  [[nodiscard]] bool is_zero() const noexcept { return digits_.empty(); }
  [[nodiscard]] quantity_format format() const noexcept { return format_; }

  // String(): the canonical form ("1500m", "16Gi", "1e3", "0").
  [[nodiscard]] std::string to_string() const;

  // Equal values (the format does not take part, as in Quantity.Cmp).
  [[nodiscard]] bool operator==(const quantity& o) const noexcept {
    return negative_ == o.negative_ && digits_ == o.digits_ && (is_zero() || exp10_ == o.exp10_);
  }

 private:
  bool negative_ = false;
  quantity_format format_ = quantity_format::decimal_si;
  std::string digits_;      // magnitude: no leading or trailing zeros; empty = zero
  std::int64_t exp10_ = 0;  // value = digits_ * 10^exp10_, exp10_ >= -9
};

// quantity::parse(text).value(): the usual one-liner for counts and bytes ("16Gi", "110").
[[nodiscard]] result<std::int64_t> parse_quantity_value(std::string_view text,
                                                        std::string_view where = {});
// quantity::parse(text).milli_value(): the usual one-liner for cpu ("500m" -> 500, "2" -> 2000).
[[nodiscard]] result<std::int64_t> parse_quantity_milli(std::string_view text,
                                                        std::string_view where = {});

// value * 10^exponent10 in DecimalSI canonical form: NewScaledQuantity(value, exponent10)
// .String(). format_decimal_si(1500) = "1500", (8000) = "8k", (1500, -3) = "1500m",
// (150, -2) = "1500m".
[[nodiscard]] std::string format_decimal_si(std::int64_t value, int exponent10 = 0);
void append_decimal_si(std::string& out, std::int64_t value, int exponent10 = 0);

// NewMilliQuantity(milli, DecimalSI).String(): cpu from milli-cores ("100m", "2", "1500m").
[[nodiscard]] inline std::string format_milli(std::int64_t milli) {
  return format_decimal_si(milli, -3);
}

// NewQuantity(value, BinarySI).String(): "16Gi", "1536Mi", "512", "1025".
[[nodiscard]] std::string format_binary_si(std::int64_t value);
void append_binary_si(std::string& out, std::int64_t value);

// A byte count whose original format Colony does not keep: the shorter of the BinarySI and
// DecimalSI forms, BinarySI on a tie (4Gi stays "4Gi", 4G stays "4G", 1536 is "1536").
[[nodiscard]] std::string format_memory(std::int64_t bytes);
void append_memory(std::string& out, std::int64_t bytes);

}  // namespace colony::k8s
