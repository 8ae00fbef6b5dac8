/// @file
/// CDI names: vendor, class, device name, the kind "vendor/class" and the
/// qualified device ID "vendor/class=name" that NodePrepareResources returns.
/// Rules as in tags.cncf.io/container-device-interface/pkg/parser.
#pragma once

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace dra::cdi {

/// Vendor and class: ASCII letters, digits, '_', '-', '.'; start with a
/// letter, end with a letter or digit.
///@{
absl::Status ValidateVendorName(absl::string_view vendor);
absl::Status ValidateClassName(absl::string_view class_name);
///@}
/// Device name: ASCII letters, digits, '_', '-', '.', ':'; start and end with
/// a letter or digit.
absl::Status ValidateDeviceName(absl::string_view name);

/// A CDI kind, "vendor/class": what a spec file's devices are.
struct Kind {
  std::string vendor;      ///< e.g. "example.com"
  std::string class_name;  ///< e.g. "gpu"

  /// "vendor/class"
  std::string ToString() const;
  bool operator==(const Kind&) const = default;  ///< member-wise equality
};

/// Splits and checks "vendor/class".
absl::StatusOr<Kind> ParseKind(absl::string_view kind);

/// A qualified CDI device ID, "vendor/class=name".
struct QualifiedName {
  std::string vendor;      ///< e.g. "example.com"
  std::string class_name;  ///< e.g. "gpu"
  std::string name;        ///< the device's name in its spec, e.g. "gpu0"

  /// "vendor/class=name"
  std::string ToString() const;
  bool operator==(const QualifiedName&) const = default;  ///< member-wise equality
};

/// Splits and checks "vendor/class=name".
absl::StatusOr<QualifiedName> ParseQualifiedName(absl::string_view device);

/// "vendor/class=name" after checking all three parts.
absl::StatusOr<std::string> MakeQualifiedName(absl::string_view kind, absl::string_view name);

}  // namespace dra::cdi
