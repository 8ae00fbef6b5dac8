#include "dra/cdi/version.h"

#include <array>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "cdi/field_path.h"

namespace dra::cdi {
namespace {

using internal::DevicePath;
using internal::Field;

constexpr std::array<Version, 8> kReleasedVersions = {{
    {0, 3, 0},
    {0, 4, 0},
    {0, 5, 0},
    {0, 6, 0},
    {0, 7, 0},
    {0, 8, 0},
    {1, 0, 0},
    {1, 1, 0},
}};

// Keeps the highest version seen and the first feature that needed it.
class Requirement {
 public:
  void Need(Version version, std::string feature) {
    if (version > required_.version) {
      required_.version = version;
      required_.feature = std::move(feature);
    }
  }
  RequiredVersion result() && { return std::move(required_); }

 private:
  RequiredVersion required_;
};

void CheckEdits(const ContainerEdits& edits, const std::string& where, Requirement& need) {
  for (const Mount& mount : edits.mounts) {
    if (!mount.type.empty()) need.Need({0, 4, 0}, Field(where, "mounts[].type"));
  }
  for (const DeviceNode& node : edits.device_nodes) {
    if (!node.host_path.empty()) need.Need({0, 5, 0}, Field(where, "deviceNodes[].hostPath"));
  }
  if (edits.intel_rdt.has_value()) {
    need.Need({0, 7, 0}, Field(where, "intelRdt"));
    if (!edits.intel_rdt->schemata.empty()) need.Need({1, 1, 0}, Field(where, "intelRdt.schemata"));
    if (edits.intel_rdt->enable_monitoring) need.Need({1, 1, 0}, Field(where, "intelRdt.enableMonitoring"));
  }
  if (!edits.additional_gids.empty()) need.Need({0, 7, 0}, Field(where, "additionalGids"));
  if (!edits.net_devices.empty()) need.Need({1, 1, 0}, Field(where, "netDevices"));
}

}  // namespace

std::string Version::ToString() const { return absl::StrCat(major, ".", minor, ".", patch); }

absl::StatusOr<Version> ParseVersion(absl::string_view text) {
  const absl::string_view bare = absl::StripPrefix(text, "v");
  const std::vector<absl::string_view> parts = absl::StrSplit(bare, '.');
  Version version;
  if (parts.size() != 3 || !absl::SimpleAtoi(parts[0], &version.major) || !absl::SimpleAtoi(parts[1], &version.minor) ||
      !absl::SimpleAtoi(parts[2], &version.patch)) {
    return absl::InvalidArgumentError(absl::StrCat("cdiVersion \"", text, "\": not a version like 0.6.0"));
  }
  for (const Version& released : kReleasedVersions) {
    if (released == version) return version;
  }
  return absl::InvalidArgumentError(absl::StrCat("cdiVersion \"", text, "\": not a supported CDI spec version (",
                                                 kEarliestVersion.ToString(), " to ", kLatestVersion.ToString(), ")"));
}

RequiredVersion MinimumVersion(const Spec& spec) {
  Requirement need;
  if (!spec.annotations.empty()) need.Need({0, 6, 0}, "annotations");
  if (const size_t slash = spec.kind.find('/');
      slash != std::string::npos && spec.kind.find('.', slash + 1) != std::string::npos) {
    need.Need({0, 6, 0}, "kind (a '.' in the class)");
  }
  CheckEdits(spec.container_edits, "containerEdits", need);
  for (const Device& device : spec.devices) {
    const std::string where = DevicePath(device.name);
    if (!device.name.empty() && device.name.front() >= '0' && device.name.front() <= '9') {
      need.Need({0, 5, 0}, Field(where, "name (starts with a digit)"));
    }
    if (!device.annotations.empty()) need.Need({0, 6, 0}, Field(where, "annotations"));
    CheckEdits(device.container_edits, Field(where, "containerEdits"), need);
  }
  return std::move(need).result();
}

absl::StatusOr<Version> ResolveVersion(const Spec& spec) {
  RequiredVersion required = MinimumVersion(spec);
  if (spec.cdi_version.empty()) return required.version;
  absl::StatusOr<Version> pinned = ParseVersion(spec.cdi_version);
  if (!pinned.ok()) return pinned.status();
  if (*pinned < required.version) {
    return absl::InvalidArgumentError(absl::StrCat("cdiVersion \"", spec.cdi_version,
                                                   "\" is too old: ", required.feature, " needs CDI ",
                                                   required.version.ToString(), " or later"));
  }
  return *pinned;
}

}  // namespace dra::cdi
