/// @file
/// CDI spec versions: which version a spec needs, and whether a pinned
/// version can carry it. Floor 0.3.0; 0.4.0 mount type; 0.5.0 device-node
/// hostPath and device names starting with a digit; 0.6.0 annotations and
/// dots in the class; 0.7.0 intelRdt and additionalGids; 1.1.0 netDevices and
/// intelRdt schemata/enableMonitoring. 0.8.0 and 1.0.0 added no fields.
#pragma once

#include <compare>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "dra/cdi/spec.h"

namespace dra::cdi {

/// A CDI spec version, major.minor.patch.
struct Version {
  int major = 0;  ///< 1 in 1.2.3
  int minor = 0;  ///< 2 in 1.2.3
  int patch = 0;  ///< 3 in 1.2.3

  std::string ToString() const;                      ///< "1.1.0"
  auto operator<=>(const Version&) const = default;  ///< version order
};

/// The oldest spec version this library reads or writes.
inline constexpr Version kEarliestVersion{0, 3, 0};
/// The newest spec version this library knows.
inline constexpr Version kLatestVersion{1, 1, 0};

/// Parses a released CDI spec version ("0.6.0", also "v0.6.0"); anything
/// else, including 0.1.0 and 0.2.0 which no runtime reads any more, fails.
absl::StatusOr<Version> ParseVersion(absl::string_view text);

/// The minimum version `spec`'s contents need, and the first field that needs
/// it ("devices[\"gpu0\"].containerEdits.netDevices"; empty at the floor).
struct RequiredVersion {
  Version version = kEarliestVersion;  ///< the minimum version
  std::string feature;                 ///< the first field that needs it; empty at the floor
};
/// The minimum version `spec`'s contents need (see RequiredVersion).
RequiredVersion MinimumVersion(const Spec& spec);

/// The version to write: spec.cdi_version if set (must be known and not older
/// than the features used, the error names the feature), else the minimum.
absl::StatusOr<Version> ResolveVersion(const Spec& spec);

}  // namespace dra::cdi
