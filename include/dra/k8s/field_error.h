/// @file
/// dra::k8s::FieldError: one validation failure of an API object, printed
/// exactly as k8s.io/apimachinery's field.Error prints it, e.g.
/// @code{.unparsed}
///   spec.devices[3].name: Invalid value: "GPU 0": a lowercase RFC 1123 label must ...
///   spec.devices: Too many: 129: must have at most 128 items
///   spec.devices[0].attributes[dra.example.com/model].string: Too long: may not be more than 64 bytes
/// @endcode
/// so that a client-side failure reads the same as the API server's 422.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"

namespace dra::k8s {

/// One validation failure: the field, what is wrong with it and the rule.
struct FieldError {
  /// field.ErrorType, in the words Error() prints: "Required value", "Invalid
  /// value", "Too many", "Too long", "Duplicate value", "Unsupported value",
  /// "Forbidden", "Internal error", "Not found".
  enum class Type {
    kRequired,
    kInvalid,
    kTooMany,
    kTooLong,
    kDuplicate,
    kNotSupported,
    kForbidden,
    kInternal,
    kNotFound,
  };

  /// The JSON path of the field: "spec.devices[3].attributes[dra.example.com/model]".
  std::string field;
  Type type = Type::kInvalid;  ///< what kind of failure
  /// The bad value as Go's field.Error prints it: strings quoted as by \%q
  /// ("\"abc\""), numbers and booleans bare ("33", "false"), nil as "null".
  /// Ignored for kRequired, kForbidden, kTooLong and kInternal, which print no
  /// value. Empty means "no value" (printed as nothing, like Go's omitted value).
  std::string value_text;
  /// The rule, e.g. "must have at most 32 items".
  std::string detail;

  /// "<field>: <Type words>[: <value_text>][: <detail>]", as field.Error.Error().
  std::string ToString() const;

  bool operator==(const FieldError&) const = default;  ///< member-wise equality

  /// @name Constructors
  /// The constructors of k8s.io/apimachinery/pkg/util/validation/field.
  ///@{

  /// "Required value[: <detail>]".
  static FieldError Required(std::string field, std::string detail);
  /// "Invalid value: <value_text>[: <detail>]".
  static FieldError Invalid(std::string field, std::string value_text, std::string detail);
  /// "Too many: <actual>: must have at most <max> items".
  static FieldError TooMany(std::string field, size_t actual, size_t max);
  /// "Too long: may not be more than <max> bytes".
  static FieldError TooLong(std::string field, size_t max);
  /// "Duplicate value: <value_text>".
  static FieldError Duplicate(std::string field, std::string value_text);
  /// "Unsupported value: <value>: supported values: "a", "b"".
  static FieldError NotSupported(std::string field, std::string value_text, const std::vector<std::string>& supported);
  /// "Forbidden[: <detail>]".
  static FieldError Forbidden(std::string field, std::string detail);
  /// "Not found: <value_text>".
  static FieldError NotFound(std::string field, std::string value_text);
  /// "Internal error[: <detail>]".
  static FieldError Internal(std::string field, std::string detail);
  ///@}
};

/// The failures of one object; empty means valid.
using FieldErrors = std::vector<FieldError>;

/// `value` quoted as Go's \%q / strconv.Quote does: "a\"b\n".
std::string GoQuote(std::string_view value);

/// OK when `errors` is empty; otherwise InvalidArgument with the API server's
/// message, e.g. `ResourceSlice.resource.k8s.io "node-1-gpu" is invalid: [a, b]`
/// for object_description `ResourceSlice.resource.k8s.io "node-1-gpu"`: one
/// error is printed bare, several are joined in brackets, and repeated
/// messages are printed once (as apimachinery's ErrorList.ToAggregate()).
absl::Status ToStatus(const FieldErrors& errors, std::string_view object_description);

}  // namespace dra::k8s
