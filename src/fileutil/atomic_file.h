// Crash-safe file replacement: temp file in the same directory, fsync,
// rename over the target, fsync the directory.
#pragma once

#include <string>
#include <string_view>

#include <sys/stat.h>
#include <sys/types.h>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace dra::internal {

// Replaces `path` with `content` so that a crash at any point leaves either
// the old or the new file, never a partial one. The file gets `mode`.
absl::Status WriteFileAtomically(const std::string& path, std::string_view content, mode_t mode = 0600);

// Reads a whole file. NotFound when it does not exist. With `info`, also
// fstat()s the file it read (e.g. to learn which inode that was).
absl::StatusOr<std::string> ReadWholeFile(const std::string& path, struct stat* info = nullptr);

}  // namespace dra::internal
