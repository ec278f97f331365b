#include "actors/admission/quantity.hpp"

#include <charconv>

namespace colony::admission {

namespace {

// A canonical number: mantissa and suffix.
struct canonical {
  std::int64_t mantissa = 0;
  const char* suffix = "";
  int exponent10 = 0;  // only for the e-notation fallback
  bool e_notation = false;
};

// Strip factors of ten, then re-grow to a multiple of three (resource.int64Amount
// AsCanonicalBytes), so 1500m stays "1500m" and 2000m becomes "2".
canonical decimal_si(std::int64_t value, int exponent10) {
  if (value == 0) return {0, "", 0, false};
  while (value % 10 == 0) {
    value /= 10;
    ++exponent10;
  }
  while (((exponent10 % 3) + 3) % 3 != 0) {
    value *= 10;
    --exponent10;
  }
  switch (exponent10) {
    case -9:
      return {value, "n"};
    case -6:
      return {value, "u"};
    case -3:
      return {value, "m"};
    case 0:
      return {value, ""};
    case 3:
      return {value, "k"};
    case 6:
      return {value, "M"};
    case 9:
      return {value, "G"};
    case 12:
      return {value, "T"};
    case 15:
      return {value, "P"};
    case 18:
      return {value, "E"};
    default:
      return {value, "", exponent10, true};  // not reachable from int64 milli or byte values
  }
}

canonical binary_si(std::int64_t value) {
  if (value > -1024 && value < 1024) return decimal_si(value, 0);
  static constexpr const char* suffixes[] = {"", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"};
  int exp = 0;
  while (value % 1024 == 0 && exp < 6) {
    value /= 1024;
    ++exp;
  }
  return {value, suffixes[exp]};
}

std::size_t digits(std::int64_t v) {
  std::size_t n = v < 0 ? 2 : 1;
  for (std::uint64_t u = v < 0 ? 0 - static_cast<std::uint64_t>(v) : static_cast<std::uint64_t>(v);
       u >= 10; u /= 10)
    ++n;
  return n;
}

std::size_t length(const canonical& c) {
  std::size_t n = digits(c.mantissa);
  for (const char* s = c.suffix; *s; ++s) ++n;
  return n;
}

void append(std::string& out, const canonical& c) {
  char buf[24];
  auto r = std::to_chars(buf, buf + sizeof buf, c.mantissa);
  out.append(buf, r.ptr);
  if (c.e_notation) {
    out += 'e';
    r = std::to_chars(buf, buf + sizeof buf, c.exponent10);
    out.append(buf, r.ptr);
    return;
  }
  out += c.suffix;
}

}  // namespace

void append_decimal_si(std::string& out, std::int64_t value, int exponent10) {
  append(out, decimal_si(value, exponent10));
}

void append_memory(std::string& out, std::int64_t bytes) {
  const canonical bin = binary_si(bytes);
  const canonical dec = decimal_si(bytes, 0);
  append(out, length(dec) < length(bin) ? dec : bin);
}

std::string format_decimal_si(std::int64_t value, int exponent10) {
  std::string s;
  append_decimal_si(s, value, exponent10);
  return s;
}

std::string format_binary_si(std::int64_t value) {
  std::string s;
  append(s, binary_si(value));
  return s;
}

std::string format_memory(std::int64_t bytes) {
  std::string s;
  append_memory(s, bytes);
  return s;
}

}  // namespace colony::admission
