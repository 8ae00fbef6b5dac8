// Crash-safe file replacement: temp file in the same directory, fsync,
// rename over the target, fsync the directory (the fsyncs optional).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include <sys/stat.h>
#include <sys/types.h>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace dra::internal {

// Whether a write reaches the disk before it returns.
enum class Durability {
  kSynced,    // fsync of the file and of its directory
  kUnsynced,  // readers see the old file or the new one, never a partial one,
              // but a power loss may leave the new one empty or missing
};

// Replaces `path` with `content` (temp file, rename) so that a reader never
// sees a partial file and, kSynced, a crash at any point leaves either the
// old or the new file. The file gets `mode`.
absl::Status WriteFileAtomically(const std::string& path, std::string_view content, mode_t mode = 0600,
                                 Durability durability = Durability::kSynced);

// What a directory entry named `entry` stands for: the file itself, or for a
// temp file of WriteFileAtomically (".<name>.tmp-XXXXXX", left by a crash
// while writing) the file <name> it was to replace. Empty for other dot
// files.
std::string_view AtomicFileTarget(std::string_view entry);

// Removes the temp files WriteFileAtomically(path, ...) left beside `path`
// when a crash cut it short; returns their paths. Only while nobody writes
// `path`: it cannot tell a temp file in use from a left one.
absl::StatusOr<std::vector<std::string>> RemoveAtomicTempFiles(const std::string& path);

// Reads a whole file. NotFound when it does not exist. With `info`, also
// fstat()s the file it read (e.g. to learn which inode that was).
absl::StatusOr<std::string> ReadWholeFile(const std::string& path, struct stat* info = nullptr);

}  // namespace dra::internal
