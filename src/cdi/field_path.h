// Paths that name a field in error messages, e.g.
// devices["gpu0"].containerEdits.mounts[1].hostPath.
#pragma once

#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"

namespace dra::cdi::internal {

inline std::string DevicePath(absl::string_view device_name) { return absl::StrCat("devices[\"", device_name, "\"]"); }

inline std::string Field(absl::string_view parent, absl::string_view field) {
  return parent.empty() ? std::string(field) : absl::StrCat(parent, ".", field);
}

inline std::string Index(absl::string_view parent, size_t index) { return absl::StrCat(parent, "[", index, "]"); }

}  // namespace dra::cdi::internal
