// Kubernetes resource.Quantity (messages/quantity.hpp): the grammar and rounding of
// apimachinery's ParseQuantity, Value, MilliValue and ScaledValue, the canonical String() forms,
// and where Colony answers with an error instead of Go's silent overflow or leniency. Expected
// values follow apimachinery's quantity_test.go where it has the case.
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "messages/quantity.hpp"

namespace colony::k8s {
namespace {

constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max();
constexpr std::int64_t kMin = std::numeric_limits<std::int64_t>::min();
constexpr std::int64_t Ki = 1024;
constexpr std::int64_t Mi = 1024 * Ki;
constexpr std::int64_t Gi = 1024 * Mi;
constexpr std::int64_t Ei = Gi * Gi;

constexpr std::optional<std::int64_t> overflow = std::nullopt;

std::optional<std::int64_t> opt(const result<std::int64_t>& r) {
  return r ? std::optional<std::int64_t>(*r) : std::nullopt;
}

struct valid_case {
  std::string_view text;
  std::optional<std::int64_t> value;  // Value(); nullopt: out_of_range
  std::optional<std::int64_t> milli;  // MilliValue(); nullopt: out_of_range
  std::string_view canonical;         // String()
  quantity_format format;
};

constexpr auto dsi = quantity_format::decimal_si;
constexpr auto bsi = quantity_format::binary_si;
constexpr auto dex = quantity_format::decimal_exponent;

const valid_case valid_cases[] = {
    // zero, in every spelling
    {"0", 0, 0, "0", dsi},
    {"-0", 0, 0, "0", dsi},
    {"0.000", 0, 0, "0", dsi},
    {"0m", 0, 0, "0", dsi},
    {"0Ki", 0, 0, "0", bsi},
    {"0e9", 0, 0, "0", dex},
    // decimal SI
    {"8k", 8000, 8000000, "8k", dsi},
    {"50k", 50000, 50000000, "50k", dsi},
    {"100m", 1, 100, "100m", dsi},  // Value rounds up
    {"500m", 1, 500, "500m", dsi},
    {"1500m", 2, 1500, "1500m", dsi},
    {"2000m", 2, 2000, "2", dsi},
    {"2", 2, 2000, "2", dsi},
    {"1000", 1000, 1000000, "1k", dsi},
    {"1500", 1500, 1500000, "1500", dsi},
    {"1000M", 1000000000, 1000000000000, "1G", dsi},
    {"120G", 120000000000, 120000000000000, "120G", dsi},
    {"5T", 5000000000000, 5000000000000000, "5T", dsi},
    {"2P", 2000000000000000, 2000000000000000000, "2P", dsi},
    {"1E", 1000000000000000000, overflow, "1E", dsi},
    {"12E", overflow, overflow, "12E", dsi},
    {"1000E", overflow, overflow, "1e21", dsi},  // no suffix beyond E: e-notation
    {"5n", 1, 1, "5n", dsi},
    {"4u", 1, 1, "4u", dsi},
    // fractions
    {"1.5", 2, 1500, "1500m", dsi},
    {"0.1", 1, 100, "100m", dsi},
    {"0.5", 1, 500, "500m", dsi},
    {"1.0001", 2, 1001, "1000100u", dsi},  // MilliValue rounds up
    {"9.01", 10, 9010, "9010m", dsi},
    {"100.035k", 100035, 100035000, "100035", dsi},
    {"10.035M", 10035000, 10035000000, "10035k", dsi},
    {"6.987654321G", 6987654321, 6987654321000, "6987654321", dsi},
    {"1.", 1, 1000, "1", dsi},
    {".5", 1, 500, "500m", dsi},
    {".001", 1, 1, "1m", dsi},
    {"1.G", 1000000000, 1000000000000, "1G", dsi},
    {"1.000000000000000000000000000000000000000000000", 1, 1000, "1", dsi},
    // rounding to nano at parse, away from zero
    {"0.9n", 1, 1, "1n", dsi},
    {"3.001n", 1, 1, "4n", dsi},
    {"0.0000000001", 1, 1, "1n", dsi},
    {"0.00000012345", 1, 1, "124n", dsi},
    {"0.00000000000000000000000000000000000000000001", 1, 1, "1n", dsi},
    // signs
    {"+5", 5, 5000, "5", dsi},
    {"-1", -1, -1000, "-1", dsi},
    {"-0.5", -1, -500, "-500m", dsi},  // away from zero, as int64Amount does
    {"-1.5", -2, -1500, "-1500m", dsi},
    {"-100m", -1, -100, "-100m", dsi},
    {"-1.0001", -2, -1001, "-1000100u", dsi},
    {"-.5", -1, -500, "-500m", dsi},
    // decimal exponents ("E" alone is exa)
    {"1e3", 1000, 1000000, "1e3", dex},
    {"1E3", 1000, 1000000, "1e3", dex},
    {"1e+3", 1000, 1000000, "1e3", dex},
    {"1e03", 1000, 1000000, "1e3", dex},
    {"1E-3", 1, 1, "1e-3", dex},
    {"0.5e-2", 1, 5, "5e-3", dex},
    {"1.2e3", 1200, 1200000, "1200", dex},
    {"1.3E+6", 1300000, 1300000000, "1300e3", dex},
    {"1e0", 1, 1000, "1", dex},
    {"1e-20", 1, 1, "1e-9", dex},
    {"1.1E-9", 1, 1, "2e-9", dex},
    {"1e-2147483648", 1, 1, "1e-9", dex},
    {"1e2147483647", overflow, overflow, "10e2147483646", dex},
    // binary SI
    {"1Ki", 1024, 1024000, "1Ki", bsi},
    {"16Gi", 16 * Gi, 16 * Gi * 1000, "16Gi", bsi},
    {"1024Mi", Gi, Gi * 1000, "1Gi", bsi},
    {"1536Mi", 1536 * Mi, 1536 * Mi * 1000, "1536Mi", bsi},
    {"1.5Gi", 1536 * Mi, 1536 * Mi * 1000, "1536Mi", bsi},
    {"0.5Mi", 512 * Ki, 512 * Ki * 1000, "512Ki", bsi},
    {"1000Ki", 1024000, 1024000000, "1000Ki", bsi},
    {"100.035Ki", 102436, 102435840, "102435840m", bsi},  // a fraction prints as DecimalSI
    {".001Ki", 2, 1024, "1024m", bsi},
    {".000000000001Ki", 1, 1, "2n", dsi},  // below one: DecimalSI
    {"0.5Ki", 512, 512000, "512", bsi},    // below 1024: printed as DecimalSI
    {"7Ei", 7 * Ei, overflow, "7Ei", bsi},
    {"-7Ei", -7 * Ei, overflow, "-7Ei", bsi},
    {"-8Ei", kMin, overflow, "-8Ei", bsi},
    {"8191Pi", 8191 * (Ei / 1024), overflow, "8191Pi", bsi},
    // int64 edges
    {"9223372036854775807", kMax, overflow, "9223372036854775807", dsi},
    {"-9223372036854775808", kMin, overflow, "-9223372036854775808", dsi},
    {"9223372036854775808", overflow, overflow, "9223372036854775808", dsi},
    {"9223372036854775807m", 9223372036854776, kMax, "9223372036854775807m", dsi},
    {"123456789012345678901", overflow, overflow, "123456789012345678901", dsi},
    {"00000000000000000000000000000000000000012", 12, 12000, "12", dsi},
};

TEST(Quantity, ParsesLikeApimachinery) {
  for (const auto& c : valid_cases) {
    SCOPED_TRACE(std::string(c.text));
    auto q = quantity::parse(c.text);
    ASSERT_TRUE(q) << q.error().describe();
    EXPECT_EQ(opt(q->value()), c.value);
    EXPECT_EQ(opt(q->milli_value()), c.milli);
    EXPECT_EQ(q->to_string(), c.canonical);
    EXPECT_EQ(q->format(), c.format);
    EXPECT_EQ(opt(parse_quantity_value(c.text)), c.value);
    EXPECT_EQ(opt(parse_quantity_milli(c.text)), c.milli);
    // The canonical form parses back to the same value.
    auto again = quantity::parse(q->to_string());
    ASSERT_TRUE(again) << again.error().describe();
    EXPECT_EQ(*again, *q);
    EXPECT_EQ(again->to_string(), c.canonical);
  }
}

TEST(Quantity, OverflowIsOutOfRangeAndNamesTheText) {
  auto v = parse_quantity_value("123456789012345678901", "pod default/x: requests.memory");
  ASSERT_FALSE(v);
  EXPECT_EQ(v.error().code, errc::out_of_range);
  EXPECT_EQ(v.error().where, "pod default/x: requests.memory");
  EXPECT_NE(v.error().message.find("\"123456789012345678901\""), std::string::npos)
      << v.error().message;

  auto m = parse_quantity_milli("9223372036854775807", "node n: cpu");
  ASSERT_FALSE(m);
  EXPECT_EQ(m.error().code, errc::out_of_range);
  EXPECT_NE(m.error().message.find("milli"), std::string::npos) << m.error().message;

  auto q = quantity::parse("12E");
  ASSERT_TRUE(q);
  auto qv = q->value("spec.max[memory]");
  ASSERT_FALSE(qv);
  EXPECT_EQ(qv.error().code, errc::out_of_range);
  EXPECT_EQ(qv.error().where, "spec.max[memory]");
}

// Go caps a BinarySI quantity at +-(2^63-1) without a word; Colony refuses one outside int64.
TEST(Quantity, BinaryBeyondInt64IsOutOfRange) {
  for (std::string_view text : {"8Ei", "9Ei", "-9Ei", "9223372036854775807Ki", "8192Pi"}) {
    auto q = quantity::parse(text, "w");
    ASSERT_FALSE(q) << text;
    EXPECT_EQ(q.error().code, errc::out_of_range) << text;
    EXPECT_EQ(q.error().where, "w");
  }
}

struct invalid_case {
  std::string_view text;
  std::string_view why;  // part of the message
};

const invalid_case invalid_cases[] = {
    {"", "empty"},
    {"1.2.3", "malformed number"},
    {"1.1.M", "malformed number"},
    {"1+1.0M", "malformed number"},
    {"5X", "unknown suffix \"X\""},
    {"4x", "unknown suffix \"x\""},
    {"1K", "unknown suffix"},  // kilo is "k"
    {"1Gb", "unknown suffix"},
    {"0.1mi", "unknown suffix"},
    {"0.1am", "unknown suffix"},
    {".5i", "unknown suffix"},
    {"1i", "unknown suffix"},
    {"-3.01i", "unknown suffix"},
    {"1e", "unknown suffix"},
    {"-3.01e-", "unknown suffix"},
    {"1e+-3", "unknown suffix"},
    {"1e--3", "unknown suffix"},
    {"1e3k", "unknown suffix"},
    {"1ke3", "unknown suffix"},
    {"1e3.5", "unknown suffix"},
    {"1e9999999999", "exponent out of range"},
    {"aoeu", "no digits"},
    {"Ki", "no digits"},  // Go reads a bare suffix as 0
    {".", "no digits"},   // Go reads ".", "+", "-" as 0
    {"+", "no digits"},
    {"-", "no digits"},
    {"--1", "no digits"},
    {"+-1", "no digits"},
    {" 1", "no digits"},
    {"1 ", "unknown suffix"},
};

TEST(Quantity, RejectsMalformedText) {
  for (const auto& c : invalid_cases) {
    SCOPED_TRACE(std::string(c.text));
    auto q = quantity::parse(c.text, "pod default/x: requests.cpu");
    ASSERT_FALSE(q);
    EXPECT_EQ(q.error().code, errc::invalid_input);
    EXPECT_EQ(q.error().where, "pod default/x: requests.cpu");
    EXPECT_NE(q.error().message.find(c.why), std::string::npos) << q.error().message;
    EXPECT_NE(q.error().message.find("\"" + std::string(c.text) + "\""), std::string::npos)
        << q.error().message;
    EXPECT_FALSE(parse_quantity_value(c.text));
    EXPECT_FALSE(parse_quantity_milli(c.text));
  }
}

TEST(Quantity, ErrorMessagesCutLongText) {
  const std::string text = std::string(200, '1') + "X";
  auto q = quantity::parse(text);
  ASSERT_FALSE(q);
  EXPECT_LT(q.error().message.size(), 120u) << q.error().message;
}

// ScaledValue(scale) = ceil(q / 10^scale), away from zero.
TEST(Quantity, ScaledValueRoundsAwayFromZero) {
  struct row {
    std::string_view text;
    int scale;
    std::optional<std::int64_t> want;
  };
  const row rows[] = {
      {"1", -9, 1000000000},
      {"1", -6, 1000000},
      {"1500", 3, 2},
      {"1k", 3, 1},
      {"1001", 3, 2},
      {"-1001", 3, -2},
      {"1.0001", -3, 1001},
      {"-1.0001", -3, -1001},
      {"2.5", 0, 3},
      {"-2.5", 0, -3},
      {"1n", 0, 1},
      {"-1n", 0, -1},
      {"1n", -9, 1},
      {"123456789012345678901", 3, 123456789012345679},
      {"9223372036854775807", -1, overflow},
      {"-9223372036854775808", 0, kMin},
      {"-9223372036854775809", 0, overflow},
  };
  for (const auto& r : rows) {
    auto q = quantity::parse(r.text);
    ASSERT_TRUE(q) << r.text;
    EXPECT_EQ(opt(q->scaled_value(r.scale)), r.want) << r.text << " scale " << r.scale;
  }
}

TEST(Quantity, EqualityIgnoresFormat) {
  EXPECT_EQ(*quantity::parse("1Ki"), *quantity::parse("1024"));
  EXPECT_EQ(*quantity::parse("1k"), *quantity::parse("1e3"));
  EXPECT_EQ(*quantity::parse("0Ki"), *quantity::parse("-0"));
  EXPECT_EQ(*quantity::parse("1500m"), *quantity::parse("1.5"));
  EXPECT_FALSE(*quantity::parse("1") == *quantity::parse("-1"));
  EXPECT_FALSE(*quantity::parse("1m") == *quantity::parse("1"));
  EXPECT_EQ(quantity::parse("-1")->sign(), -1);
  EXPECT_EQ(quantity::parse("0.0")->sign(), 0);
  EXPECT_TRUE(quantity::parse("0.0")->is_zero());
  EXPECT_EQ(quantity().to_string(), "0");
}

TEST(QuantityFormat, DecimalSI) {
  struct row {
    std::int64_t value;
    int exponent10;
    std::string_view want;
  };
  const row rows[] = {
      {0, 0, "0"},
      {0, -3, "0"},
      {1, 0, "1"},
      {1000, 0, "1k"},
      {8000, 0, "8k"},
      {1500, 0, "1500"},
      {1234000, 0, "1234k"},
      {1000000000, 0, "1G"},
      {-1000, 0, "-1k"},
      {1, 18, "1E"},
      {1, 21, "1e21"},
      {1, -9, "1n"},
      {1, -12, "1e-12"},
      {80, -9, "80n"},
      {1080, -9, "1080n"},
      {108, -8, "1080n"},
      {1500, -3, "1500m"},
      {2000, -3, "2"},
      {150, -2, "1500m"},  // gpu in 1/100 devices
      {100, -2, "1"},
      {kMax, 0, "9223372036854775807"},
      {kMin, 0, "-9223372036854775808"},
      {kMin, -3, "-9223372036854775808m"},
  };
  for (const auto& r : rows) {
    EXPECT_EQ(format_decimal_si(r.value, r.exponent10), r.want) << r.value << "e" << r.exponent10;
    std::string out = "x=";
    append_decimal_si(out, r.value, r.exponent10);
    EXPECT_EQ(out, "x=" + std::string(r.want));
  }
}

TEST(QuantityFormat, Milli) {
  EXPECT_EQ(format_milli(1), "1m");
  EXPECT_EQ(format_milli(100), "100m");
  EXPECT_EQ(format_milli(500), "500m");
  EXPECT_EQ(format_milli(1000), "1");
  EXPECT_EQ(format_milli(1500), "1500m");
  EXPECT_EQ(format_milli(1234000), "1234");
  EXPECT_EQ(format_milli(1000000), "1k");
  EXPECT_EQ(format_milli(-2500), "-2500m");
  EXPECT_EQ(format_milli(0), "0");
}

TEST(QuantityFormat, BinarySI) {
  EXPECT_EQ(format_binary_si(1024), "1Ki");
  EXPECT_EQ(format_binary_si(Mi), "1Mi");
  EXPECT_EQ(format_binary_si(16 * Gi), "16Gi");
  EXPECT_EQ(format_binary_si(1536 * Mi), "1536Mi");
  EXPECT_EQ(format_binary_si(300 * Mi), "300Mi");
  EXPECT_EQ(format_binary_si(1001 * Gi), "1001Gi");
  EXPECT_EQ(format_binary_si(1024 * Gi), "1Ti");
  EXPECT_EQ(format_binary_si(1536), "1536");
  EXPECT_EQ(format_binary_si(1025), "1025");
  EXPECT_EQ(format_binary_si(512), "512");
  EXPECT_EQ(format_binary_si(1000), "1k");  // below 1024: DecimalSI
  EXPECT_EQ(format_binary_si(5), "5");
  EXPECT_EQ(format_binary_si(0), "0");
  EXPECT_EQ(format_binary_si(-2048), "-2Ki");
  EXPECT_EQ(format_binary_si(7 * Ei), "7Ei");
  EXPECT_EQ(format_binary_si(kMin), "-8Ei");
  EXPECT_EQ(format_binary_si(kMax), "9223372036854775807");
}

TEST(QuantityFormat, MemoryPicksTheShorterForm) {
  EXPECT_EQ(format_memory(4 * Gi), "4Gi");
  EXPECT_EQ(format_memory(4000000000), "4G");
  EXPECT_EQ(format_memory(1536), "1536");
  EXPECT_EQ(format_memory(1024), "1Ki");
  EXPECT_EQ(format_memory(3072), "3Ki");
  EXPECT_EQ(format_memory(1000), "1k");
  EXPECT_EQ(format_memory(1000000), "1M");
  EXPECT_EQ(format_memory(1024000), "1024k");  // "1000Ki" is longer
  EXPECT_EQ(format_memory(512), "512");
  EXPECT_EQ(format_memory(0), "0");
  EXPECT_EQ(format_memory(-4 * Gi), "-4Gi");
  std::string out = "m=";
  append_memory(out, 16 * Gi);
  EXPECT_EQ(out, "m=16Gi");
}

// Every formatter's output parses back to the value it printed.
TEST(QuantityFormat, RoundTrips) {
  std::vector<std::int64_t> values = {0,       1,       -1,        7,           999,  1000,
                                      1001,    1023,    1024,      1025,        1536, 4096,
                                      1000000, 1024000, 123456789, 17179869184, kMax, kMin};
  for (std::int64_t p = 1; p < kMax / 10; p *= 10) values.push_back(p * 3);
  for (std::int64_t p = 1; p < kMax / 1024; p *= 1024) values.push_back(p * 5);
  for (std::int64_t v : values) {
    EXPECT_EQ(opt(parse_quantity_value(format_decimal_si(v))), v) << format_decimal_si(v);
    EXPECT_EQ(opt(parse_quantity_value(format_binary_si(v))), v) << format_binary_si(v);
    EXPECT_EQ(opt(parse_quantity_value(format_memory(v))), v) << format_memory(v);
    EXPECT_EQ(opt(parse_quantity_milli(format_milli(v))), v) << format_milli(v);
    auto centi = quantity::parse(format_decimal_si(v, -2));
    ASSERT_TRUE(centi);
    EXPECT_EQ(opt(centi->scaled_value(-2)), v) << format_decimal_si(v, -2);
    // DecimalSI text is a fixed point of parse + String(). (BinarySI text need not be: "1536"
    // from format_binary_si reads back as DecimalSI, as in Go.)
    EXPECT_EQ(quantity::parse(format_decimal_si(v))->to_string(), format_decimal_si(v));
    EXPECT_EQ(quantity::parse(format_milli(v))->to_string(), format_milli(v));
  }
}

}  // namespace
}  // namespace colony::k8s
