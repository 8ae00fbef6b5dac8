/// @file
/// dra::k8s::Quantity: the Kubernetes resource.Quantity, parsed and printed
/// exactly as k8s.io/apimachinery does it.
#pragma once

#include <compare>
#include <cstdint>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace dra::k8s {

/// An exact decimal value and the suffix family it prints with.
class Quantity {
 public:
  /// The suffix family a quantity prints with, as in apimachinery.
  enum class Format {
    kDecimalExponent,  ///< 12e6
    kBinarySI,         ///< 12Mi
    kDecimalSI,        ///< 12M
  };

  /// Zero, DecimalSI.
  Quantity() = default;

  /// Parses "1Gi", "500m", "1.5", "1e3", "-2Ki"... Errors name the rule broken.
  static absl::StatusOr<Quantity> Parse(std::string_view text);
  /// value * 10^scale, e.g. FromScaled(5, -3) is 5m.
  static Quantity FromScaled(int64_t value, int32_t scale, Format format = Format::kDecimalSI);
  /// An integer `value`.
  static Quantity FromInt(int64_t value, Format format = Format::kDecimalSI);

  /// Canonical form, as apimachinery's Quantity.String(): "1024Mi" -> "1Gi",
  /// "1000m" -> "1", "0.5" -> "500m", "1e3" -> "1k".
  std::string ToString() const;
  /// The suffix family it prints with.
  Format format() const { return format_; }
  /// Whether the value is zero.
  bool IsZero() const;
  /// -1, 0 or 1.
  int Sign() const;

  /// The value rounded up to an integer, and in thousandths rounded up, as
  /// apimachinery's Value() and MilliValue(); saturate at int64 limits.
  ///@{
  int64_t Value() const;
  int64_t MilliValue() const;
  ///@}

  /// Numeric comparison; the format does not take part.
  ///@{
  std::strong_ordering operator<=>(const Quantity& other) const;
  bool operator==(const Quantity& other) const;
  ///@}

  /// Exact sum and difference. The format stays this one's, unless this one
  /// is zero, which takes `other`'s (as in apimachinery).
  ///@{
  Quantity& operator+=(const Quantity& other);
  Quantity& operator-=(const Quantity& other);
  friend Quantity operator+(Quantity a, const Quantity& b) { return a += b; }
  friend Quantity operator-(Quantity a, const Quantity& b) { return a -= b; }
  ///@}
  /// Multiplies by an integer; the format is kept.
  Quantity Mul(int64_t factor) const;

 private:
  // Normalizes digits_/scale_ after arithmetic: strips leading and trailing
  // zeros (moving the latter into scale_) and gives zero one representation.
  void Normalize();
  // Compares absolute values.
  int CompareMagnitude(const Quantity& other) const;
  // Adds other, taken as negative when other_negative.
  void AddSigned(const Quantity& other, bool other_negative);
  // The value divided by 10^scale, rounded away from zero, saturated to int64.
  int64_t ScaledValue(int64_t scale) const;

  // Exact decimal value: (negative_ ? -1 : 1) * digits_ * 10^scale_.
  // Invariant: digits_ has no leading or trailing zeros, zero is "0" with
  // scale_ 0 and negative_ false. scale_ is 64-bit so that exponents up to
  // int32 limits and the arithmetic on them cannot overflow.
  std::string digits_ = "0";
  bool negative_ = false;
  int64_t scale_ = 0;
  Format format_ = Format::kDecimalSI;
};

}  // namespace dra::k8s
