#include "actors/admission/quantity.hpp"

namespace colony::admission {

std::string format_decimal_si(std::int64_t value, int exponent10) {
  if (value == 0) return "0";
  // Strip factors of ten, then re-grow to a multiple of three (resource.int64Amount
  // AsCanonicalBytes), so 1500m stays "1500m" and 2000m becomes "2".
  while (value % 10 == 0) {
    value /= 10;
    ++exponent10;
  }
  while (((exponent10 % 3) + 3) % 3 != 0) {
    value *= 10;
    --exponent10;
  }
  const char* suffix = "";
  switch (exponent10) {
    case -9: suffix = "n"; break;
    case -6: suffix = "u"; break;
    case -3: suffix = "m"; break;
    case 0: suffix = ""; break;
    case 3: suffix = "k"; break;
    case 6: suffix = "M"; break;
    case 9: suffix = "G"; break;
    case 12: suffix = "T"; break;
    case 15: suffix = "P"; break;
    case 18: suffix = "E"; break;
    default: {
      // Beyond the suffix table (not reachable from int64 milli or byte values): e-notation.
      return std::to_string(value) + "e" + std::to_string(exponent10);
    }
  }
  return std::to_string(value) + suffix;
}

std::string format_binary_si(std::int64_t value) {
  if (value > -1024 && value < 1024) return format_decimal_si(value);
  int exp = 0;
  while (value % 1024 == 0 && exp < 6) {
    value /= 1024;
    ++exp;
  }
  static constexpr const char* suffixes[] = {"", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"};
  return std::to_string(value) + suffixes[exp];
}

std::string format_memory(std::int64_t bytes) {
  std::string bin = format_binary_si(bytes);
  std::string dec = format_decimal_si(bytes);
  return dec.size() < bin.size() ? dec : bin;
}

}  // namespace colony::admission
