// Creating directory trees.
#pragma once

#include <string>

#include <sys/types.h>

#include "absl/status/status.h"

namespace dra::internal {

// Creates `path` and missing parents with `mode` (existing ones keep theirs);
// fails when `path` ends up not being a directory.
absl::Status MakeDirectories(const std::string& path, mode_t mode);

}  // namespace dra::internal
