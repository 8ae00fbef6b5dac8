#include "dra/k8s/quantity.h"

#include <catch2/catch.hpp>

#include <cstdint>
#include <iterator>
#include <limits>
#include <random>
#include <string>
#include <string_view>
#include <vector>

namespace Catch {
template <>
struct StringMaker<dra::k8s::Quantity> {
  static std::string convert(const dra::k8s::Quantity& q) { return q.ToString(); }
};
}  // namespace Catch

namespace {

using dra::k8s::Quantity;
using Format = Quantity::Format;
constexpr Format kD = Format::kDecimalSI;
constexpr Format kB = Format::kBinarySI;
constexpr Format kX = Format::kDecimalExponent;
constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
constexpr int64_t kMin = std::numeric_limits<int64_t>::min();

Quantity Q(std::string_view text) {
  absl::StatusOr<Quantity> q = Quantity::Parse(text);
  INFO(text << ": " << q.status().ToString());
  REQUIRE(q.ok());
  return *q;
}

int Cmp(const Quantity& a, const Quantity& b) {
  const auto order = a <=> b;
  return order < 0 ? -1 : (order > 0 ? 1 : 0);
}

struct Case {
  std::string_view in;
  std::string_view canonical;
  Format format;
};

// Inputs and expected results come from apimachinery's own test tables in
// k8s.io/apimachinery/pkg/api/resource/quantity_test.go:
// - TestQuantityParse: every input, with the String() of its expected value
//   and its expected Format;
// - TestQuantityString: each canonical string (which must parse back to
//   itself) and each alternate spelling of it;
// - TestQuantityParseEmit: input and expected String().
constexpr Case kCases[] = {
    // TestQuantityParse
    {"0", "0", kD},
    {"0n", "0", kD},
    {"0u", "0", kD},
    {"0m", "0", kD},
    {"0Ki", "0", kB},
    {"0k", "0", kD},
    {"0Mi", "0", kB},
    {"0M", "0", kD},
    {"0Gi", "0", kB},
    {"0G", "0", kD},
    {"0Ti", "0", kB},
    {"0T", "0", kD},
    {"1", "1", kD},
    {"1Ki", "1Ki", kB},
    {"8Ki", "8Ki", kB},
    {"7Mi", "7Mi", kB},
    {"6Gi", "6Gi", kB},
    {"5Ti", "5Ti", kB},
    {"4Pi", "4Pi", kB},
    {"3Ei", "3Ei", kB},
    {"10Ti", "10Ti", kB},
    {"100Ti", "100Ti", kB},
    {"5n", "5n", kD},
    {"4u", "4u", kD},
    {"3m", "3m", kD},
    {"9", "9", kD},
    {"8k", "8k", kD},
    {"50k", "50k", kD},
    {"7M", "7M", kD},
    {"6G", "6G", kD},
    {"5T", "5T", kD},
    {"40T", "40T", kD},
    {"300T", "300T", kD},
    {"2P", "2P", kD},
    {"1E", "1E", kD},
    {"1E-3", "1e-3", kX},
    {"1e3", "1e3", kX},
    {"1E6", "1e6", kX},
    {"1e9", "1e9", kX},
    {"1E12", "1e12", kX},
    {"1e15", "1e15", kX},
    {"1E18", "1e18", kX},
    {"1e14", "100e12", kX},
    {"1e13", "10e12", kX},
    {"100.035k", "100035", kD},
    {"0.001", "1m", kD},
    {"0.0005k", "500m", kD},
    {"0.005", "5m", kD},
    {"0.05", "50m", kD},
    {"0.5", "500m", kD},
    {"0.00050k", "500m", kD},
    {"0.00500", "5m", kD},
    {"0.05000", "50m", kD},
    {"0.50000", "500m", kD},
    {"0.5e0", "500e-3", kX},
    {"0.5e-1", "50e-3", kX},
    {"0.5e-2", "5e-3", kX},
    {"10.035M", "10035k", kD},
    {"1.2e3", "1200", kX},
    {"1.3E+6", "1300e3", kX},
    {"1.40e9", "1400e6", kX},
    {"1.53E12", "1530e9", kX},
    {"1.6e15", "1600e12", kX},
    {"1.7E18", "1700e15", kX},
    {"9.01", "9010m", kD},
    {"8.1k", "8100", kD},
    {"7.123456M", "7123456", kD},
    {"6.987654321G", "6987654321", kD},
    {"5.444T", "5444G", kD},
    {"40.1T", "40100G", kD},
    {"300.2T", "300200G", kD},
    {"2.5P", "2500T", kD},
    {"1.01E", "1010P", kD},
    {"3.001n", "4n", kD},
    {"1.1E-9", "2e-9", kX},
    {"0.0000000001", "1n", kD},
    {"0.0000000005", "1n", kD},
    {"0.00000000050", "1n", kD},
    {"0.5e-9", "1e-9", kX},
    {"0.9n", "1n", kD},
    {"0.00000012345", "124n", kD},
    {"0.00000012354", "124n", kD},
    {"9Ei", "9223372036854775807", kB},
    {"9223372036854775807Ki", "9223372036854775807", kB},
    {"12E", "12E", kD},
    {"100.035Ki", "102435840m", kB},
    {"0.5Mi", "512Ki", kB},
    {"0.05Gi", "53687091200m", kB},
    {"0.025Ti", "27487790694400m", kB},
    {"0.000000000001Ki", "2n", kD},
    {".001", "1m", kD},
    {".0001k", "100m", kD},
    {"1.", "1", kD},
    {"1.G", "1G", kD},
    // TestQuantityString
    {"1Gi", "1Gi", kB},
    {"1024Mi", "1Gi", kB},
    {"300Mi", "300Mi", kB},
    {"307200Ki", "300Mi", kB},
    {"6Ki", "6Ki", kB},
    {"1001Gi", "1001Gi", kB},
    {"1025024Mi", "1001Gi", kB},
    {"1Ti", "1Ti", kB},
    {"1024Gi", "1Ti", kB},
    {"5", "5", kD},
    {"5000m", "5", kD},
    {"500m", "500m", kD},
    {"1G", "1G", kD},
    {"1000M", "1G", kD},
    {"0.001T", "1G", kD},
    {"1m", "1m", kD},
    {"1000u", "1m", kD},
    {"80m", "80m", kD},
    {"1080m", "1080m", kD},
    {"1.08", "1080m", kD},
    {"1080000000n", "1080m", kD},
    {"300M", "300M", kD},
    {"1T", "1T", kD},
    {"1234567M", "1234567M", kD},
    {"1234567m", "1234567m", kD},
    {"3k", "3k", kD},
    {"1025", "1025", kD},
    {".001e12", "1e9", kX},
    {"1e-3", "1e-3", kX},
    {"0.001e0", "1e-3", kX},
    {"1e-9", "1e-9", kX},
    {"1000e-12", "1e-9", kX},
    {"80e-3", "80e-3", kX},
    {"300e6", "300e6", kX},
    {"1e12", "1e12", kX},
    {"3e3", "3e3", kX},
    {"00", "0", kD},
    {"1n", "1n", kD},
    {"80n", "80n", kD},
    {"1080n", "1080n", kD},
    {"1u", "1u", kD},
    {"80u", "80u", kD},
    {"1080u", "1080u", kD},
    // TestQuantityParseEmit
    {"1Mi", "1Mi", kB},
    {".001Ki", "1024m", kB},
    {".000001Ki", "1024u", kD},
    {".000000001Ki", "1024n", kD},
    {".000000000001Ki", "2n", kD},
};

TEST_CASE("Parse and ToString match apimachinery's tables", "[quantity]") {
  STATIC_REQUIRE(std::size(kCases) >= 120);
  for (const Case& c : kCases) {
    INFO("input " << c.in);
    const Quantity q = Q(c.in);
    CHECK(q.ToString() == c.canonical);
    CHECK(q.format() == c.format);
    // The canonical string is stable and round trips to the same value.
    const Quantity back = Q(q.ToString());
    CHECK(back == q);
    CHECK(back.ToString() == c.canonical);
  }
}

TEST_CASE("Signed inputs, as apimachinery's TestQuantityParse tries them", "[quantity]") {
  for (const Case& c : kCases) {
    INFO("input " << c.in);
    const std::string negated = c.canonical == "0" ? "0" : "-" + std::string(c.canonical);
    const Quantity minus = Q("-" + std::string(c.in));
    CHECK(minus.ToString() == negated);
    CHECK(minus.format() == c.format);
    CHECK(Q(negated) == minus);
    const Quantity plus = Q("+" + std::string(c.in));
    CHECK(plus.ToString() == c.canonical);
    CHECK(plus.format() == c.format);
  }
}

TEST_CASE("Values beyond int64 stay exact", "[quantity]") {
  CHECK(Q("9223372036854775808").ToString() == "9223372036854775808");
  CHECK(Q("-9223372036854775809").ToString() == "-9223372036854775809");
  CHECK(Q("12345678901234567890123456789").ToString() == "12345678901234567890123456789");
  CHECK(Q("1E") + Q("1E") == Q("2E"));
  CHECK(Q("1e2147483647").ToString() == "10e2147483646");
  CHECK(Q("1e-2147483647").ToString() == "1e-9");
  // Only BinarySI is capped at int64, as in apimachinery.
  CHECK(Q("8Ei").ToString() == "9223372036854775807");
  CHECK(Q("-8Ei").ToString() == "-9223372036854775807");
  CHECK(Q("8E").ToString() == "8E");
}

// apimachinery finds no suffix for these and drops the magnitude ("1000E"
// prints "1"); dra-cpp prints exponent notation instead.
TEST_CASE("Values without an SI suffix print in exponent notation", "[quantity]") {
  CHECK(Q("1000E").ToString() == "1e21");
  CHECK(Q("5000E").ToString() == "5e21");
  CHECK(Q("1000000E").ToString() == "1e24");
  CHECK(Quantity::FromScaled(1, -12).ToString() == "1e-12");
  CHECK(Quantity::FromScaled(1, -10).ToString() == "100e-12");
  const Quantity two_to_70 = Q("1Ei").Mul(1024);
  CHECK(two_to_70.ToString() == "1180591620717411303424");
  CHECK(Q(two_to_70.ToString()) == two_to_70);
  CHECK(Q("1000E") == Q(Q("1000E").ToString()));
}

TEST_CASE("FromInt and FromScaled, from TestNewSet, TestMilliNewSet, TestNewScaledSet", "[quantity]") {
  CHECK(Quantity().ToString() == "0");
  CHECK(Quantity().format() == kD);
  CHECK(Quantity::FromInt(1).ToString() == "1");
  CHECK(Quantity::FromInt(1000).ToString() == "1k");
  CHECK(Quantity::FromInt(1234000).ToString() == "1234k");
  CHECK(Quantity::FromInt(1024, kB).ToString() == "1Ki");
  CHECK(Quantity::FromInt(1000000, kX).ToString() == "1e6");
  CHECK(Quantity::FromInt(1024 * 1024, kB).ToString() == "1Mi");
  CHECK(Quantity::FromInt(kMin).ToString() == "-9223372036854775808");

  CHECK(Quantity::FromScaled(1, -3).ToString() == "1m");
  CHECK(Quantity::FromScaled(1000, -3).ToString() == "1");
  CHECK(Quantity::FromScaled(1234000, -3).ToString() == "1234");
  CHECK(Quantity::FromScaled(1024, -3, kB).ToString() == "1024m");
  CHECK(Quantity::FromScaled(1000000, -3, kX).ToString() == "1e3");
  CHECK(Quantity::FromScaled(1024 * 1024, -3, kB).ToString() == "1048576m");

  CHECK(Quantity::FromScaled(1, -9).ToString() == "1n");
  CHECK(Quantity::FromScaled(1000, -9).ToString() == "1u");
  CHECK(Quantity::FromScaled(1, -6).ToString() == "1u");
  CHECK(Quantity::FromScaled(1000, -6).ToString() == "1m");
  CHECK(Quantity::FromScaled(1, 0).ToString() == "1");
  CHECK(Quantity::FromScaled(0, -9).ToString() == "0");

  // TestQuantityString's BinarySI values that print as DecimalSI.
  CHECK(Quantity::FromInt(5, kB).ToString() == "5");
  CHECK(Quantity::FromScaled(500, -3, kB).ToString() == "500m");
  CHECK(Quantity::FromScaled(1234567, -3, kB).ToString() == "1234567m");
  CHECK(Quantity::FromInt(1025, kB).ToString() == "1025");
  CHECK(Quantity::FromInt(2000, kB).ToString() == "2000");
  CHECK(Quantity::FromInt(-2000, kB).ToString() == "-2000");
  // Below 1024 a BinarySI value prints as DecimalSI.
  CHECK(Quantity::FromInt(1000, kB).ToString() == "1k");
  CHECK(Quantity::FromInt(-1000, kB).ToString() == "-1k");
  CHECK(Q("0.9765625Ki").ToString() == "1k");
  CHECK(Q("0.9765625Ki").format() == kB);
  CHECK(Quantity::FromScaled(-901, -2).ToString() == "-9010m");  // TestQuantityNeg
}

TEST_CASE("Parse errors name the input and the rule broken", "[quantity]") {
  constexpr std::string_view kFormat =
      "quantities must match the regular expression "
      "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'";
  constexpr std::string_view kSuffix = "unable to parse quantity's suffix";
  constexpr std::string_view kNumeric = "unable to parse numeric part of quantity";
  struct ErrorCase {
    std::string_view in;
    std::string_view rule;
  };
  // The first block is TestQuantityParse's invalid list.
  constexpr ErrorCase kErrors[] = {
      {"1.1.M", kFormat},        {"1+1.0M", kFormat},
      {"0.1mi", kSuffix},        {"0.1am", kFormat},
      {"aoeu", kFormat},         {".5i", kSuffix},
      {"1i", kSuffix},           {"-3.01i", kSuffix},
      {"-3.01e-", kSuffix},      {" 1", kFormat},
      {"1 ", kFormat},           {"", kFormat},
      {"1.5.5", kFormat},        {"Non-Numeric", kFormat},
      {"1GiB", kFormat},         {"1gi", kFormat},
      {"1Ki5", kSuffix},         {"1ki", kSuffix},
      {"1e", kSuffix},           {"1e1.5", kFormat},
      {"--1", kSuffix},          {"1e9223372036854775808", kSuffix},
      {"1e4294967297", kSuffix}, {"Ei", kNumeric},
      {".Pi", kNumeric},         {"-.e-10", kNumeric},
  };
  for (const ErrorCase& e : kErrors) {
    INFO("input '" << e.in << "'");
    const absl::StatusOr<Quantity> q = Quantity::Parse(e.in);
    REQUIRE_FALSE(q.ok());
    CHECK(q.status().code() == absl::StatusCode::kInvalidArgument);
    CHECK(std::string(q.status().message()) == "quantity \"" + std::string(e.in) + "\": " + std::string(e.rule));
  }
}

TEST_CASE("Digit-less numbers parse as zero where apimachinery's fast path takes them", "[quantity]") {
  for (std::string_view in : {"-", "+", ".", "-.", "m", "Ki", "Ti", "e5"}) {
    INFO("input " << in);
    CHECK(Q(in).IsZero());
  }
}

TEST_CASE("Compare is numeric, from TestQuantityCmp and TestQuantityCmpInt64AndDec", "[quantity]") {
  CHECK(Cmp(Q("0"), Q("0")) == 0);
  CHECK(Cmp(Q("100m"), Q("50m")) == 1);
  CHECK(Cmp(Q("50m"), Q("100m")) == -1);
  CHECK(Cmp(Q("10000T"), Q("100Gi")) == 1);
  CHECK(Q("1Gi") == Q("1073741824"));
  CHECK(Q("1k") == Q("1e3"));
  CHECK(Q("1k") != Q("1Ki"));
  CHECK(Q("1k") < Q("1Ki"));
  CHECK(Q("-1") < Q("1n"));
  CHECK(Q("-2") < Q("-1"));

  struct CmpCase {
    int64_t a_value;
    int32_t a_scale;
    int64_t b_value;
    int32_t b_scale;
    int expect;
  };
  constexpr int64_t kE18 = 1000000000000000000;
  constexpr CmpCase kTable[] = {
      {901, -2, 901, -2, 0},    {90, -1, 901, -2, -1},     {901, -2, 900, -2, 1},   {0, 0, 0, 0, 0},
      {0, 1, 0, -1, 0},         {0, -1, 0, 1, 0},          {800, -3, 1, 0, -1},     {800, -3, 79, -2, 1},
      {kMax, 0, 1, -1, 1},      {kMax, 1, 1, 0, 1},        {kMax, 1, 1, 1, 1},      {kMax, 1, 0, 1, 1},
      {kMax, -16, 1, 3, -1},    {kMin, 0, 0, 0, -1},       {kMin, -18, -1, 0, -1},  {kMin, -19, -1, 0, 1},
      {kE18, -17, 1, 1, 0},     {kE18, -17, -10, 0, 1},    {-kE18, -17, -10, 0, 0}, {kE18, -17, 1, 0, 1},
      {kE18 + 1, -17, 1, 1, 1}, {kE18 - 1, -17, 1, 1, -1},
  };
  for (const CmpCase& c : kTable) {
    const Quantity a = Quantity::FromScaled(c.a_value, c.a_scale);
    const Quantity b = Quantity::FromScaled(c.b_value, c.b_scale);
    INFO(a.ToString() << " vs " << b.ToString());
    CHECK(Cmp(a, b) == c.expect);
    CHECK(Cmp(b, a) == -c.expect);
  }
}

TEST_CASE("Add and Sub, from TestAdd, TestSub and the zero-suffix tests", "[quantity]") {
  const Quantity zero;
  CHECK((Quantity::FromInt(10) + Quantity::FromScaled(1, 1)) == Quantity::FromInt(20));
  const Quantity mixed = Quantity::FromInt(10) + Quantity::FromInt(1, kB);
  CHECK(mixed == Quantity::FromInt(11));
  CHECK(mixed.format() == kD);
  const Quantity binary = Quantity::FromInt(10, kB) + Quantity::FromInt(1);
  CHECK(binary == Quantity::FromInt(11));
  CHECK(binary.format() == kB);
  CHECK((zero + Quantity::FromInt(50)) == Quantity::FromInt(50));
  CHECK((Quantity::FromInt(50) + zero) == Quantity::FromInt(50));
  CHECK((zero + zero).IsZero());

  CHECK((Quantity::FromInt(10) - Quantity::FromScaled(1, 1)).IsZero());
  CHECK((Quantity::FromInt(10) - Quantity::FromInt(1, kB)).format() == kD);
  const Quantity binary_diff = Quantity::FromInt(10, kB) - Quantity::FromInt(1);
  CHECK(binary_diff == Quantity::FromInt(9));
  CHECK(binary_diff.format() == kB);
  CHECK((zero - Quantity::FromInt(50)) == Quantity::FromInt(-50));
  CHECK((Quantity::FromInt(50) - zero) == Quantity::FromInt(50));

  // A zero left side takes the right side's format; a zero right side
  // changes nothing.
  for (std::string_view text : {"100m", "1Gi"}) {
    INFO(text);
    CHECK((Q(text) + Q("0")).ToString() == text);
    CHECK((Q("0") + Q(text)).ToString() == text);
    CHECK((Q(text) - Q("0")).ToString() == text);
    CHECK((Q("0") - Q(text)).ToString() == "-" + std::string(text));
  }
  CHECK((Q("1Gi") + Q("1G")).ToString() == "2073741824");
  CHECK((Q("1Gi") + Q("1Gi")).ToString() == "2Gi");
  CHECK((Q("1") + Q("1m")).ToString() == "1001m");
  CHECK((Q("1m") - Q("1")).ToString() == "-999m");
  CHECK((Q("1e3") + Q("1")).ToString() == "1001");
  Quantity self = Q("1.5");
  const Quantity& alias = self;  // the operand is the object itself
  self += alias;
  CHECK(self.ToString() == "3");
  self -= alias;
  CHECK(self.IsZero());
  CHECK(self.format() == kD);
}

TEST_CASE("Add then Sub cancels, as TestAddSubRoundTripAcrossScales", "[quantity]") {
  std::mt19937_64 random(42);
  Quantity sum;
  std::vector<Quantity> terms;
  for (int i = 0; i < 100; ++i) {
    const auto value = static_cast<int64_t>(random() >> 1);
    terms.push_back(Quantity::FromScaled(value, static_cast<int32_t>(value % 20 - 10)));
    sum += terms.back();
  }
  CHECK(sum.Sign() == 1);
  for (const Quantity& term : terms) sum -= term;
  CHECK(sum.IsZero());
}

TEST_CASE("Mul, from TestMul", "[quantity]") {
  const Quantity max = Quantity::FromInt(kMax);
  const Quantity min = Quantity::FromInt(kMin);
  CHECK(Quantity::FromInt(10).Mul(10) == Quantity::FromInt(100));
  CHECK(Quantity::FromInt(10).Mul(1) == Quantity::FromInt(10));
  CHECK(Quantity::FromInt(10, kB).Mul(1).format() == kB);
  CHECK(Quantity().Mul(50).IsZero());
  CHECK(Quantity::FromInt(50).Mul(0).IsZero());
  CHECK(Quantity::FromInt(10).Mul(-10) == Quantity::FromInt(-100));
  CHECK(Quantity::FromInt(-10).Mul(1) == Quantity::FromInt(-10));
  const Quantity negated = Quantity::FromInt(10, kB).Mul(-1);
  CHECK(negated == Quantity::FromInt(-10));
  CHECK(negated.format() == kB);
  CHECK(Quantity::FromInt(-50).Mul(0).IsZero());
  CHECK(Quantity::FromInt(-50).Mul(-50) == Quantity::FromInt(2500));
  CHECK(max.Mul(0).IsZero());
  CHECK(max.Mul(1) == max);
  CHECK(max.Mul(-1) == Quantity::FromInt(-kMax));
  CHECK(Quantity::FromInt(kMax / 2).Mul(2) == Quantity::FromInt((kMax / 2) * 2));
  CHECK(Quantity::FromInt(kMax / -2).Mul(-2) == Quantity::FromInt((kMax / 2) * 2));
  CHECK(max.Mul(2).ToString() == "18446744073709551614");
  CHECK(max.Mul(10) == Quantity::FromScaled(kMax, 1));
  CHECK(max.Mul(-10) == Quantity::FromScaled(-kMax, 1));
  CHECK(min.Mul(0).IsZero());
  CHECK(min.Mul(1) == min);
  CHECK(min.Mul(-1).ToString() == "9223372036854775808");
  CHECK(Quantity::FromInt(kMin / 2).Mul(2) == min);
  CHECK(Quantity::FromInt(kMin / -2).Mul(-2) == min);
  CHECK(min.Mul(2).ToString() == "-18446744073709551616");
  CHECK(min.Mul(10) == Quantity::FromScaled(kMin, 1));
  CHECK(min.Mul(-10).ToString() == "92233720368547758080");
  CHECK(min.Mul(kMin).ToString() == "85070591730234615865843651857942052864");
  CHECK(Q("1.5Gi").Mul(2).ToString() == "3Gi");
  CHECK(Q("500m").Mul(3).ToString() == "1500m");
}

TEST_CASE("Value and MilliValue round up away from zero and saturate", "[quantity]") {
  // TestScaledValue: NewScaledQuantity(1, scale) at scales 0 and Milli.
  CHECK(Quantity::FromScaled(1, -9).Value() == 1);
  CHECK(Quantity::FromScaled(1, -9).MilliValue() == 1);
  CHECK(Quantity::FromScaled(1, -6).Value() == 1);
  CHECK(Quantity::FromScaled(1, -6).MilliValue() == 1);
  CHECK(Quantity::FromScaled(1, -3).Value() == 1);
  CHECK(Quantity::FromScaled(1, -3).MilliValue() == 1);
  CHECK(Quantity::FromScaled(1, 0).Value() == 1);
  CHECK(Quantity::FromScaled(1, 0).MilliValue() == 1000);
  CHECK(Quantity::FromScaled(1, 2).MilliValue() == 100000);
  // ExampleMustParse and TestQuantityValueSet.
  CHECK(Q("5Gi").Value() == 5368709120);
  CHECK(Q("5G").Value() == 5000000000);
  CHECK(Q("5300m").MilliValue() == 5300);
  CHECK(Q("5.4").MilliValue() == 5400);
  CHECK(Q("1Mi").Value() == 1024 * 1024);

  CHECK(Quantity().Value() == 0);
  CHECK(Q("1.5").Value() == 2);
  CHECK(Q("1.5").MilliValue() == 1500);
  CHECK(Q("-1.5").Value() == -2);
  CHECK(Q("1001u").MilliValue() == 2);
  CHECK(Q("-1001u").MilliValue() == -2);
  CHECK(Q("-1n").Value() == -1);
  CHECK(Q("999m").Value() == 1);
  CHECK(Q("1e-3").MilliValue() == 1);

  CHECK(Q("9223372036854775807").Value() == kMax);
  CHECK(Q("9223372036854775808").Value() == kMax);
  CHECK(Q("-9223372036854775808").Value() == kMin);
  CHECK(Q("-9223372036854775809").Value() == kMin);
  CHECK(Q("9223372036854775807").MilliValue() == kMax);
  CHECK(Q("9223372036854775807m").MilliValue() == kMax);
  CHECK(Q("9223372036854775807m").Value() == 9223372036854776);
  CHECK(Q("9Ei").Value() == kMax);
  CHECK(Q("1E").MilliValue() == kMax);
  CHECK(Q("-1E").MilliValue() == kMin);
  CHECK(Q("1e2147483647").Value() == kMax);
  CHECK(Q("123456789012345678901234567890e-20").Value() == 1234567891);
}

TEST_CASE("IsZero and Sign", "[quantity]") {
  CHECK(Quantity().IsZero());
  CHECK(Q("-0").IsZero());
  CHECK(Q("-0").Sign() == 0);
  CHECK(Q("-0").ToString() == "0");
  CHECK(Q("0.0e-20").IsZero());
  CHECK(Q("1n").Sign() == 1);
  CHECK(Q("-1n").Sign() == -1);
}

}  // namespace
