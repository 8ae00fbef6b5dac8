/// @file
/// Filling a device node's type, major and minor from the host device, for
/// drivers that know only the path.
#pragma once

#include "absl/status/status.h"
#include "dra/cdi/spec.h"

namespace dra::cdi {

/// lstat()s host_path (or path) and sets `type` ("b", "c" or "p") if empty
/// and major/minor if major is 0 (not for a fifo). A set type must match the
/// host ("u" matches a character device). Fails if the file is not a device.
absl::Status FillDeviceNodeFromHost(DeviceNode& node);

}  // namespace dra::cdi
