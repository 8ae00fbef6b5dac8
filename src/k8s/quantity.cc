#include "dra/k8s/quantity.h"

#include <algorithm>
#include <array>
#include <limits>
#include <optional>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace dra::k8s {
namespace {

// apimachinery's three parse errors, word for word.
constexpr std::string_view kFormatRule =
    "quantities must match the regular expression "
    "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'";
constexpr std::string_view kNumericRule = "unable to parse numeric part of quantity";
constexpr std::string_view kSuffixRule = "unable to parse quantity's suffix";

constexpr int64_t kNano = -9;

// Debian's abseil is built with its own string_view, distinct from std's.
absl::string_view Absl(std::string_view s) { return {s.data(), s.size()}; }

absl::Status ParseError(std::string_view text, std::string_view rule) {
  return absl::InvalidArgumentError(absl::StrCat("quantity \"", absl::CHexEscape(Absl(text)), "\": ", Absl(rule)));
}

// Arithmetic on magnitudes written as decimal digit strings.

std::string StripLeadingZeros(std::string digits) {
  size_t first = digits.find_first_not_of('0');
  if (first == std::string::npos) return "0";
  digits.erase(0, first);
  return digits;
}

// Compares two digit strings without leading zeros.
int CompareDigits(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return a.size() < b.size() ? -1 : 1;
  int c = a.compare(b);
  return (c > 0) - (c < 0);
}

std::string AddDigits(std::string_view a, std::string_view b) {
  std::string sum;
  int carry = 0;
  for (size_t i = 0; i < std::max(a.size(), b.size()) || carry != 0; ++i) {
    int d = carry;
    if (i < a.size()) d += a[a.size() - 1 - i] - '0';
    if (i < b.size()) d += b[b.size() - 1 - i] - '0';
    sum.push_back(static_cast<char>('0' + d % 10));
    carry = d / 10;
  }
  std::reverse(sum.begin(), sum.end());
  return sum;
}

// a - b, for a >= b.
std::string SubDigits(std::string_view a, std::string_view b) {
  std::string diff;
  int borrow = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    int d = a[a.size() - 1 - i] - '0' - borrow;
    if (i < b.size()) d -= b[b.size() - 1 - i] - '0';
    borrow = d < 0;
    diff.push_back(static_cast<char>('0' + d + 10 * borrow));
  }
  std::reverse(diff.begin(), diff.end());
  return StripLeadingZeros(std::move(diff));
}

std::string MulDigits(std::string_view a, uint64_t factor) {
  std::string product;
  unsigned __int128 carry = 0;
  for (auto it = a.rbegin(); it != a.rend(); ++it) {
    carry += static_cast<unsigned __int128>(*it - '0') * factor;
    product.push_back(static_cast<char>('0' + static_cast<int>(carry % 10)));
    carry /= 10;
  }
  for (; carry != 0; carry /= 10) {
    product.push_back(static_cast<char>('0' + static_cast<int>(carry % 10)));
  }
  std::reverse(product.begin(), product.end());
  return StripLeadingZeros(std::move(product));
}

// Divides digits by divisor in place and returns the remainder.
uint32_t DivDigits(std::string& digits, uint32_t divisor) {
  uint64_t rem = 0;
  for (char& c : digits) {
    rem = rem * 10 + static_cast<uint64_t>(c - '0');
    c = static_cast<char>('0' + rem / divisor);
    rem %= divisor;
  }
  digits = StripLeadingZeros(std::move(digits));
  return static_cast<uint32_t>(rem);
}

// The pieces of a quantity string, split the way apimachinery's
// parseQuantityString splits them.
struct Split {
  bool negative = false;
  bool has_digits = false;
  std::string_view num;  // leading zeros stripped, may be empty
  std::string_view denom;
  std::string_view suffix;
};

bool IsSuffixLetter(char c) { return std::string_view("eEinumkKMGTP").find(c) != std::string_view::npos; }

// Returns nullopt where apimachinery returns ErrFormatWrong.
std::optional<Split> SplitQuantity(std::string_view s) {
  Split out;
  size_t pos = 0;
  if (pos < s.size() && (s[pos] == '-' || s[pos] == '+')) {
    out.negative = s[pos] == '-';
    ++pos;
  }
  const size_t digits_start = pos;
  while (pos < s.size() && s[pos] == '0') ++pos;
  const bool leading_zeros = pos > digits_start;
  if (pos == s.size()) {
    // Only zeros, or only a sign: apimachinery reads this as "0".
    out.has_digits = true;
    return out;
  }
  auto scan_digits = [&] {
    const size_t start = pos;
    while (pos < s.size() && absl::ascii_isdigit(static_cast<unsigned char>(s[pos]))) ++pos;
    return s.substr(start, pos - start);
  };
  out.num = scan_digits();
  if (pos < s.size() && s[pos] == '.') {
    ++pos;
    out.denom = scan_digits();
  }
  out.has_digits = leading_zeros || !out.num.empty() || !out.denom.empty();
  const size_t suffix_start = pos;
  while (pos < s.size() && IsSuffixLetter(s[pos])) ++pos;
  if (pos < s.size() && (s[pos] == '-' || s[pos] == '+')) ++pos;
  scan_digits();
  if (pos != s.size()) return std::nullopt;
  out.suffix = s.substr(suffix_start);
  return out;
}

struct Suffix {
  int base;  // 10 or 2
  int64_t exponent;
  Quantity::Format format;
};

constexpr std::array<std::pair<std::string_view, int64_t>, 10> kDecimalSuffixes = {{
    {"n", -9},
    {"u", -6},
    {"m", -3},
    {"", 0},
    {"k", 3},
    {"M", 6},
    {"G", 9},
    {"T", 12},
    {"P", 15},
    {"E", 18},
}};
// Indexed by the power of 1024.
constexpr std::array<std::string_view, 7> kBinarySuffixes = {"", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"};

std::optional<Suffix> InterpretSuffix(std::string_view s) {
  for (const auto& [name, exponent] : kDecimalSuffixes) {
    if (s == name) return Suffix{10, exponent, Quantity::Format::kDecimalSI};
  }
  for (size_t i = 1; i < kBinarySuffixes.size(); ++i) {
    if (s == kBinarySuffixes[i]) {
      return Suffix{2, static_cast<int64_t>(10 * i), Quantity::Format::kBinarySI};
    }
  }
  int64_t exponent = 0;
  if (s.size() < 2 || (s[0] != 'e' && s[0] != 'E') || !absl::SimpleAtoi(Absl(s.substr(1)), &exponent)) {
    return std::nullopt;
  }
  // apimachinery narrows the exponent to int32, so "1e4294967297" would read
  // as 1e1; refuse what does not fit instead.
  if (exponent < -std::numeric_limits<int32_t>::max() || exponent > std::numeric_limits<int32_t>::max()) {
    return std::nullopt;
  }
  return Suffix{10, exponent, Quantity::Format::kDecimalExponent};
}

// apimachinery parses most quantities on an int64 fast path that reads a
// number without digits ("", ".", "-.") as zero; its inf.Dec fallback, taken
// for exponents below nano and for Pi and Ei, rejects such a number.
bool DigitlessNumberRejected(const Suffix& suffix) {
  return suffix.base == 10 ? suffix.exponent < kNano : suffix.exponent > 40;
}

}  // namespace

absl::StatusOr<Quantity> Quantity::Parse(std::string_view text) {
  if (text.empty()) return ParseError(text, kFormatRule);
  std::optional<Split> split = SplitQuantity(text);
  if (!split) return ParseError(text, kFormatRule);
  std::optional<Suffix> suffix = InterpretSuffix(split->suffix);
  if (!suffix) return ParseError(text, kSuffixRule);
  if (!split->has_digits && DigitlessNumberRejected(*suffix)) {
    return ParseError(text, kNumericRule);
  }

  Quantity q;
  q.format_ = suffix->format;
  q.negative_ = split->negative;
  q.digits_ = StripLeadingZeros(absl::StrCat("0", Absl(split->num), Absl(split->denom)));
  q.scale_ = -static_cast<int64_t>(split->denom.size());
  if (suffix->base == 10) {
    q.scale_ += suffix->exponent;
  } else {
    q.digits_ = MulDigits(q.digits_, uint64_t{1} << suffix->exponent);
  }
  q.Normalize();

  // Precision below nano rounds away from zero, so that a request for a tiny
  // amount still gets some. Normalized digits end in a non-zero digit, so
  // dropping any of them always rounds.
  if (q.scale_ < kNano) {
    const int64_t drop = kNano - q.scale_;
    const auto size = static_cast<int64_t>(q.digits_.size());
    q.digits_ = AddDigits(drop >= size ? "0" : q.digits_.substr(0, size - drop), "1");
    q.scale_ = kNano;
    q.Normalize();
  }
  // As in apimachinery, only BinarySI magnitudes are capped at the int64
  // maximum, and a BinarySI value below 1 becomes DecimalSI.
  if (q.format_ == Format::kBinarySI) {
    const Quantity max = FromInt(std::numeric_limits<int64_t>::max());
    if (q.CompareMagnitude(max) > 0) {
      q.digits_ = max.digits_;
      q.scale_ = max.scale_;
    }
    if (!q.IsZero() && static_cast<int64_t>(q.digits_.size()) + q.scale_ <= 0) {
      q.format_ = Format::kDecimalSI;
    }
  }
  return q;
}

Quantity Quantity::FromScaled(int64_t value, int32_t scale, Format format) {
  Quantity q;
  q.negative_ = value < 0;
  q.digits_ = std::to_string(q.negative_ ? 0 - static_cast<uint64_t>(value) : static_cast<uint64_t>(value));
  q.scale_ = scale;
  q.format_ = format;
  q.Normalize();
  return q;
}

Quantity Quantity::FromInt(int64_t value, Format format) { return FromScaled(value, 0, format); }

std::string Quantity::ToString() const {
  if (IsZero()) return "0";
  const absl::string_view sign = negative_ ? "-" : "";
  Format format = format_;
  if (format == Format::kBinarySI) {
    if (CompareMagnitude(FromInt(1024)) < 0 || scale_ < 0) {
      // As apimachinery: below 1024, or fractional, BinarySI prints as DecimalSI.
      format = Format::kDecimalSI;
    } else {
      std::string mantissa = digits_ + std::string(static_cast<size_t>(scale_), '0');
      size_t power = 0;
      for (std::string quotient = mantissa; DivDigits(quotient, 1024) == 0; quotient = mantissa) {
        mantissa = quotient;
        ++power;
      }
      if (power < kBinarySuffixes.size()) {
        return absl::StrCat(sign, mantissa, Absl(kBinarySuffixes[power]));
      }
      // Past Ei apimachinery finds no suffix and silently drops the
      // magnitude (2^70 prints "1"); print the exact decimal instead.
      format = Format::kDecimalExponent;
    }
  }

  // The largest exponent that is a multiple of 3, as apimachinery does.
  const int64_t pad = ((scale_ % 3) + 3) % 3;
  const int64_t exponent = scale_ - pad;
  const std::string mantissa = digits_ + std::string(static_cast<size_t>(pad), '0');
  if (format == Format::kDecimalSI) {
    for (const auto& [name, value] : kDecimalSuffixes) {
      if (value == exponent) return absl::StrCat(sign, mantissa, Absl(name));
    }
    // Beyond "E" or below "n" apimachinery drops the suffix and with it the
    // magnitude ("1000E" prints "1"); fall back to exponent notation.
  }
  if (exponent == 0) return absl::StrCat(sign, mantissa);
  return absl::StrCat(sign, mantissa, "e", exponent);
}

bool Quantity::IsZero() const { return digits_ == "0"; }

int Quantity::Sign() const { return IsZero() ? 0 : (negative_ ? -1 : 1); }

int64_t Quantity::Value() const { return ScaledValue(0); }

int64_t Quantity::MilliValue() const { return ScaledValue(-3); }

int64_t Quantity::ScaledValue(int64_t scale) const {
  if (IsZero()) return 0;
  const int64_t saturated = negative_ ? std::numeric_limits<int64_t>::min() : std::numeric_limits<int64_t>::max();
  const auto size = static_cast<int64_t>(digits_.size());
  const int64_t shift = scale_ - scale;
  constexpr int64_t kMaxDigits = 19;  // the widest int64
  std::string magnitude;
  if (shift >= 0) {
    if (size + shift > kMaxDigits) return saturated;
    magnitude = digits_ + std::string(static_cast<size_t>(shift), '0');
  } else {
    // Normalized digits end in a non-zero digit, so dropping any rounds.
    magnitude = AddDigits(-shift >= size ? "0" : digits_.substr(0, size + shift), "1");
    if (static_cast<int64_t>(magnitude.size()) > kMaxDigits) return saturated;
  }
  uint64_t m = 0;
  if (!absl::SimpleAtoi(magnitude, &m)) return saturated;
  const uint64_t limit = static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) + negative_;
  if (m > limit) return saturated;
  return static_cast<int64_t>(negative_ ? 0 - m : m);
}

std::strong_ordering Quantity::operator<=>(const Quantity& other) const {
  if (Sign() != other.Sign() || IsZero()) return Sign() <=> other.Sign();
  const int c = CompareMagnitude(other);
  return (negative_ ? -c : c) <=> 0;
}

bool Quantity::operator==(const Quantity& other) const { return (*this <=> other) == 0; }

Quantity& Quantity::operator+=(const Quantity& other) {
  AddSigned(other, other.negative_);
  return *this;
}

Quantity& Quantity::operator-=(const Quantity& other) {
  AddSigned(other, !other.negative_);
  return *this;
}

Quantity Quantity::Mul(int64_t factor) const {
  Quantity q = *this;
  q.digits_ = MulDigits(digits_, factor < 0 ? 0 - static_cast<uint64_t>(factor) : static_cast<uint64_t>(factor));
  q.negative_ = negative_ != (factor < 0);
  q.Normalize();
  return q;
}

void Quantity::Normalize() {
  digits_ = StripLeadingZeros(std::move(digits_));
  if (digits_ == "0") {
    negative_ = false;
    scale_ = 0;
    return;
  }
  const size_t last = digits_.find_last_not_of('0');
  scale_ += static_cast<int64_t>(digits_.size() - 1 - last);
  digits_.resize(last + 1);
}

int Quantity::CompareMagnitude(const Quantity& other) const {
  if (IsZero() || other.IsZero()) return static_cast<int>(!IsZero()) - !other.IsZero();
  // Normalized, so the position of the leading digit decides first.
  const int64_t lead = static_cast<int64_t>(digits_.size()) + scale_;
  const int64_t other_lead = static_cast<int64_t>(other.digits_.size()) + other.scale_;
  if (lead != other_lead) return lead < other_lead ? -1 : 1;
  const size_t common = std::min(digits_.size(), other.digits_.size());
  const int c = digits_.compare(0, common, other.digits_, 0, common);
  if (c != 0) return c < 0 ? -1 : 1;
  return (digits_.size() > other.digits_.size()) - (digits_.size() < other.digits_.size());
}

void Quantity::AddSigned(const Quantity& other, bool other_negative) {
  // As apimachinery: a zero takes the format of what is added to it.
  if (IsZero()) {
    format_ = other.format_;
    digits_ = other.digits_;
    scale_ = other.scale_;
    negative_ = other_negative;
    Normalize();
    return;
  }
  if (other.IsZero()) return;
  const int64_t scale = std::min(scale_, other.scale_);
  const std::string a = digits_ + std::string(static_cast<size_t>(scale_ - scale), '0');
  const std::string b = other.digits_ + std::string(static_cast<size_t>(other.scale_ - scale), '0');
  if (negative_ == other_negative) {
    digits_ = AddDigits(a, b);
  } else if (CompareDigits(a, b) >= 0) {
    digits_ = SubDigits(a, b);
  } else {
    digits_ = SubDigits(b, a);
    negative_ = other_negative;
  }
  scale_ = scale;
  Normalize();
}

}  // namespace dra::k8s
