// Kubernetes resource.Quantity parsing and canonical formatting (see quantity.hpp).
//
// A quantity is kept as a decimal digit string and a power of ten, so any text that parses has
// an exact value (as apimachinery's inf.Dec); the int64 accessors check the range at the end.
#include "messages/quantity.hpp"

#include <charconv>
#include <limits>
#include <system_error>
#include <utility>

namespace colony::k8s {

namespace {

using u128 = unsigned __int128;

constexpr std::uint64_t kInt64Max = std::numeric_limits<std::int64_t>::max();
constexpr std::int64_t kNanoExponent = -9;  // parsing keeps a value down to 10^-9
constexpr std::size_t kShownChars = 64;     // how much of a bad text an error message repeats

constexpr bool is_digit(char c) { return c >= '0' && c <= '9'; }

// The text as an error message repeats it: quoted, cut after kShownChars.
std::string quoted(std::string_view text) {
  std::string s = "\"";
  s.append(text.substr(0, kShownChars));
  if (text.size() > kShownChars) s += "...";
  s += '"';
  return s;
}

std::string scale_words(int scale) {
  if (scale == 0) return "";
  if (scale == -3) return " in milli units";
  return " in units of 10^" + std::to_string(scale);
}

tl::unexpected<error> out_of_int64(std::string_view shown, int scale, std::string_view where) {
  return fail(errc::out_of_range,
              "quantity " + quoted(shown) + scale_words(scale) + " is out of int64 range",
              std::string(where));
}

// --- suffixes (suffix.go) ---

struct suffix_meaning {
  std::int64_t exp10 = 0;
  int exp2 = 0;
  quantity_format format = quantity_format::decimal_si;
};

// Empty on success, else why the suffix is not one.
std::string interpret(std::string_view s, suffix_meaning& m) {
  struct entry {
    std::string_view text;
    std::int64_t exp10;
    int exp2;
  };
  static constexpr entry table[] = {
      {"", 0, 0},    {"n", -9, 0},  {"u", -6, 0},  {"m", -3, 0},  {"k", 3, 0},   {"M", 6, 0},
      {"G", 9, 0},   {"T", 12, 0},  {"P", 15, 0},  {"E", 18, 0},  {"Ki", 0, 10}, {"Mi", 0, 20},
      {"Gi", 0, 30}, {"Ti", 0, 40}, {"Pi", 0, 50}, {"Ei", 0, 60},
  };
  for (const auto& e : table) {
    if (s == e.text) {
      m.exp10 = e.exp10;
      m.exp2 = e.exp2;
      m.format = e.exp2 != 0 ? quantity_format::binary_si : quantity_format::decimal_si;
      return {};
    }
  }
  if (is_digit(s[0]) || s[0] == '.' || s[0] == '+' || s[0] == '-') return "malformed number";
  // <decimalExponent> ::= "e" <signed integer> | "E" <signed integer> (strconv.ParseInt rules).
  if (s.size() > 1 && (s[0] == 'e' || s[0] == 'E')) {
    std::string_view n = s.substr(1);
    const bool minus = n[0] == '-';
    if (n[0] == '+' || minus) n.remove_prefix(1);
    if (!n.empty() && is_digit(n[0])) {
      if (minus) n = s.substr(1);  // from_chars reads the '-' itself, but not a '+'
      std::int32_t e = 0;
      const auto [end, ec] = std::from_chars(n.data(), n.data() + n.size(), e);
      if (end == n.data() + n.size()) {
        if (ec == std::errc::result_out_of_range) return "exponent out of range";
        if (ec == std::errc{}) {
          m.exp10 = e;
          m.exp2 = 0;
          m.format = quantity_format::decimal_exponent;
          return {};
        }
      }
    }
  }
  return "unknown suffix " + quoted(s);
}

// --- digit strings ---

// d = d * m (d: decimal digits, most significant first).
void multiply(std::string& d, unsigned m) {
  unsigned carry = 0;
  for (auto it = d.rbegin(); it != d.rend(); ++it) {
    const unsigned x = static_cast<unsigned>(*it - '0') * m + carry;
    *it = static_cast<char>('0' + x % 10);
    carry = x / 10;
  }
  for (; carry != 0; carry /= 10) d.insert(d.begin(), static_cast<char>('0' + carry % 10));
}

// d = d + 1.
void increment(std::string& d) {
  for (auto it = d.rbegin(); it != d.rend(); ++it) {
    if (*it != '9') {
      ++*it;
      return;
    }
    *it = '0';
  }
  d.insert(d.begin(), '1');
}

// ceil(digits * 10^shift) (digits: no leading zeros) into out when it is at most limit.
bool ceil_magnitude(std::string_view digits, std::int64_t shift, std::uint64_t limit,
                    std::uint64_t& out) {
  if (digits.empty()) {
    out = 0;
    return true;
  }
  bool round_up = false;
  if (shift < 0) {
    const auto drop = static_cast<std::uint64_t>(-shift);
    if (drop >= digits.size()) {  // 0 < value < 1
      out = 1;
      return limit >= 1;
    }
    const std::size_t keep = digits.size() - static_cast<std::size_t>(drop);
    round_up = digits.find_first_not_of('0', keep) != std::string_view::npos;
    digits = digits.substr(0, keep);
    shift = 0;
  }
  // At least 10^20 > 2^64 from here on: out of every limit.
  if (digits.size() > 20 || static_cast<std::uint64_t>(shift) > 20 - digits.size()) return false;
  u128 v = 0;
  for (char c : digits) v = v * 10 + static_cast<unsigned>(c - '0');
  for (std::int64_t k = 0; k < shift; ++k) v *= 10;
  if (round_up) ++v;
  if (v > limit) return false;
  out = static_cast<std::uint64_t>(v);
  return true;
}

// Decimal digits of |value| into buf (at least 20 chars); value != 0.
std::string_view magnitude_digits(std::int64_t value, char* buf) {
  const std::uint64_t m =
      value < 0 ? 0 - static_cast<std::uint64_t>(value) : static_cast<std::uint64_t>(value);
  const auto r = std::to_chars(buf, buf + 20, m);
  return {buf, static_cast<std::size_t>(r.ptr - buf)};
}

// --- canonical forms (CanonicalizeBytes) ---

const char* decimal_suffix(std::int64_t exp10) {
  switch (exp10) {
    case -9:
      return "n";
    case -6:
      return "u";
    case -3:
      return "m";
    case 0:
      return "";
    case 3:
      return "k";
    case 6:
      return "M";
    case 9:
      return "G";
    case 12:
      return "T";
    case 15:
      return "P";
    case 18:
      return "E";
    default:
      return nullptr;
  }
}

// DecimalSI / DecimalExponent: trailing zeros move into the exponent, then the exponent comes
// down to a multiple of three (AsCanonicalBytes): 1500m, 8k, 80e-3.
struct decimal_form {
  bool negative = false;
  std::string_view digits;  // no leading or trailing zeros, non-empty
  int pad = 0;              // zeros after digits
  std::int64_t exponent = 0;
  const char* suffix = nullptr;  // nullptr: "e<exponent>"
};

decimal_form make_decimal(bool negative, std::string_view digits, std::int64_t exp10,
                          bool exponent_notation) {
  const std::size_t last = digits.find_last_not_of('0');
  exp10 += static_cast<std::int64_t>(digits.size() - last - 1);
  digits = digits.substr(0, last + 1);
  const int pad = static_cast<int>(((exp10 % 3) + 3) % 3);
  exp10 -= pad;
  const char* suffix = nullptr;
  if (exponent_notation) {
    if (exp10 == 0) suffix = "";
  } else {
    suffix = decimal_suffix(exp10);  // beyond "E": e-notation rather than a wrong value
  }
  return {negative, digits, pad, exp10, suffix};
}

std::size_t length(const decimal_form& f) {
  std::size_t n = (f.negative ? 1 : 0) + f.digits.size() + static_cast<std::size_t>(f.pad);
  if (f.suffix != nullptr) return n + std::char_traits<char>::length(f.suffix);
  char buf[24];
  return n + 1 +
         static_cast<std::size_t>(std::to_chars(buf, buf + sizeof buf, f.exponent).ptr - buf);
}

void append(std::string& out, const decimal_form& f) {
  if (f.negative) out += '-';
  out.append(f.digits);
  out.append(static_cast<std::size_t>(f.pad), '0');
  if (f.suffix != nullptr) {
    out += f.suffix;
    return;
  }
  char buf[24];
  out += 'e';
  out.append(buf, std::to_chars(buf, buf + sizeof buf, f.exponent).ptr);
}

// BinarySI for a whole number of magnitude >= 1024: whole powers of 1024 become the suffix
// (AsCanonicalBase1024Bytes): 16Gi, 1536Mi, 1025.
struct binary_form {
  bool negative = false;
  std::uint64_t mantissa = 0;
  int exponent = 0;  // of 1024
};

constexpr const char* kBinarySuffixes[] = {"", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"};

binary_form make_binary(bool negative, std::uint64_t magnitude) {
  binary_form f{negative, magnitude, 0};
  while (f.mantissa % 1024 == 0 && f.exponent < 6) {
    f.mantissa /= 1024;
    ++f.exponent;
  }
  return f;
}

std::size_t length(const binary_form& f) {
  char buf[24];
  return (f.negative ? 1 : 0) +
         static_cast<std::size_t>(std::to_chars(buf, buf + sizeof buf, f.mantissa).ptr - buf) +
         std::char_traits<char>::length(kBinarySuffixes[f.exponent]);
}

void append(std::string& out, const binary_form& f) {
  char buf[24];
  if (f.negative) out += '-';
  out.append(buf, std::to_chars(buf, buf + sizeof buf, f.mantissa).ptr);
  out += kBinarySuffixes[f.exponent];
}

std::uint64_t magnitude(std::int64_t v) {
  return v < 0 ? 0 - static_cast<std::uint64_t>(v) : static_cast<std::uint64_t>(v);
}

}  // namespace

// --- quantity ---

result<quantity> quantity::parse(std::string_view text, std::string_view where) {
  auto bad = [&](const std::string& why) {
    return fail(errc::invalid_input, "invalid quantity " + quoted(text) + ": " + why,
                std::string(where));
  };
  if (text.empty()) return bad("empty");

  std::size_t pos = 0;
  bool negative = false;
  if (text[0] == '+' || text[0] == '-') {
    negative = text[0] == '-';
    ++pos;
  }
  const std::size_t int_begin = pos;
  while (pos < text.size() && is_digit(text[pos])) ++pos;
  const std::string_view int_part = text.substr(int_begin, pos - int_begin);
  std::string_view frac_part;
  if (pos < text.size() && text[pos] == '.') {
    const std::size_t frac_begin = ++pos;
    while (pos < text.size() && is_digit(text[pos])) ++pos;
    frac_part = text.substr(frac_begin, pos - frac_begin);
  }
  if (int_part.empty() && frac_part.empty()) return bad("no digits");

  suffix_meaning m;
  if (std::string why = interpret(text.substr(pos), m); !why.empty()) return bad(why);

  quantity q;
  q.format_ = m.format;
  std::string& d = q.digits_;
  d.reserve(int_part.size() + frac_part.size() + (m.exp2 != 0 ? 19 : 0));
  d.append(int_part);
  d.append(frac_part);
  const std::size_t first = d.find_first_not_of('0');
  if (first == std::string::npos) {  // zero ("0", "-0.0", "0Ki")
    d.clear();
    return q;
  }
  d.erase(0, first);
  q.negative_ = negative;
  std::int64_t e = m.exp10 - static_cast<std::int64_t>(frac_part.size());

  // BinarySI: the decimal value times 2^exp2, exactly (digits * 1024 per step).
  for (int k = 0; k < m.exp2; k += 10) multiply(d, 1024);

  // Round a finer value away from zero to a multiple of 10^-9 ("0.9n" -> 1n).
  if (e < kNanoExponent) {
    const auto drop = static_cast<std::uint64_t>(kNanoExponent - e);
    if (drop >= d.size()) {
      d = "1";
    } else {
      const std::size_t keep = d.size() - static_cast<std::size_t>(drop);
      const bool round_up = d.find_first_not_of('0', keep) != std::string::npos;
      d.resize(keep);
      if (round_up) increment(d);
    }
    e = kNanoExponent;
  }
  const std::size_t last = d.find_last_not_of('0');
  e += static_cast<std::int64_t>(d.size() - last - 1);
  d.resize(last + 1);
  q.exp10_ = e;

  if (q.format_ == quantity_format::binary_si) {
    // |x| > limit exactly when ceil(|x|) > limit. Go caps the magnitude at 2^63-1 silently;
    // Colony refuses a value outside int64.
    std::uint64_t whole = 0;
    if (!ceil_magnitude(d, e, negative ? kInt64Max + 1 : kInt64Max, whole)) {
      return fail(errc::out_of_range,
                  "quantity " + quoted(text) +
                      " is out of int64 range (Kubernetes would cap a BinarySI value there)",
                  std::string(where));
    }
    // A BinarySI value in (0, 1) is DecimalSI ("0.5Ki" is not; ".000000000001Ki" is).
    if (e < 0 && static_cast<std::uint64_t>(-e) >= d.size())
      q.format_ = quantity_format::decimal_si;
  }
  return q;
}

result<std::int64_t> quantity::scaled_value(int scale, std::string_view where) const {
  const std::uint64_t limit = negative_ ? kInt64Max + 1 : kInt64Max;
  std::uint64_t m = 0;
  if (!ceil_magnitude(digits_, exp10_ - scale, limit, m)) {
    return out_of_int64(to_string(), scale, where);
  }
  return static_cast<std::int64_t>(negative_ ? 0 - m : m);
}

std::string quantity::to_string() const {
  if (digits_.empty()) return "0";
  std::string out;
  if (format_ == quantity_format::binary_si && exp10_ >= 0) {
    std::uint64_t whole = 0;
    if (ceil_magnitude(digits_, exp10_, kInt64Max + 1, whole) && whole >= 1024) {
      append(out, make_binary(negative_, whole));
      return out;
    }
  }
  // DecimalSI, DecimalExponent, and BinarySI below 1024 or with a fraction.
  append(out,
         make_decimal(negative_, digits_, exp10_, format_ == quantity_format::decimal_exponent));
  return out;
}

// --- one-liners ---

namespace {

result<std::int64_t> parse_scaled(std::string_view text, int scale, std::string_view where) {
  auto q = quantity::parse(text, where);
  if (!q) return tl::unexpected(std::move(q.error()));
  auto v = q->scaled_value(scale, where);
  if (!v) return out_of_int64(text, scale, where);  // names the text as written
  return v;
}

}  // namespace

result<std::int64_t> parse_quantity_value(std::string_view text, std::string_view where) {
  return parse_scaled(text, 0, where);
}

result<std::int64_t> parse_quantity_milli(std::string_view text, std::string_view where) {
  return parse_scaled(text, -3, where);
}

// --- int64 formatters ---

void append_decimal_si(std::string& out, std::int64_t value, int exponent10) {
  if (value == 0) {
    out += '0';
    return;
  }
  char buf[24];
  append(out, make_decimal(value < 0, magnitude_digits(value, buf), exponent10, false));
}

std::string format_decimal_si(std::int64_t value, int exponent10) {
  std::string s;
  append_decimal_si(s, value, exponent10);
  return s;
}

void append_binary_si(std::string& out, std::int64_t value) {
  if (value > -1024 && value < 1024) {  // no rounding, no confusion: DecimalSI
    append_decimal_si(out, value);
    return;
  }
  append(out, make_binary(value < 0, magnitude(value)));
}

std::string format_binary_si(std::int64_t value) {
  std::string s;
  append_binary_si(s, value);
  return s;
}

void append_memory(std::string& out, std::int64_t bytes) {
  if (bytes > -1024 && bytes < 1024) {
    append_decimal_si(out, bytes);
    return;
  }
  char buf[24];
  const decimal_form dec = make_decimal(bytes < 0, magnitude_digits(bytes, buf), 0, false);
  const binary_form bin = make_binary(bytes < 0, magnitude(bytes));
  if (length(dec) < length(bin)) {
    append(out, dec);
  } else {
    append(out, bin);
  }
}

std::string format_memory(std::int64_t bytes) {
  std::string s;
  append_memory(s, bytes);
  return s;
}

}  // namespace colony::k8s
