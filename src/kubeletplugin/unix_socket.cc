#include "kubeletplugin/unix_socket.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"

namespace dra::kubeletplugin::internal {

absl::Status ClearStaleSocket(const std::string& path) {
  struct stat st;
  if (lstat(path.c_str(), &st) != 0) {
    if (errno == ENOENT) return absl::OkStatus();
    return absl::FailedPreconditionError(absl::StrCat("stat ", path, ": ", std::strerror(errno)));
  }
  if (!S_ISSOCK(st.st_mode)) {
    return absl::FailedPreconditionError(
        absl::StrCat("cannot listen on ", path, ": a file that is not a socket is in the way; remove it"));
  }
  if (unlink(path.c_str()) != 0 && errno != ENOENT) {
    return absl::FailedPreconditionError(absl::StrCat("remove stale socket ", path, ": ", std::strerror(errno)));
  }
  return absl::OkStatus();
}

void RemoveSocket(const std::string& path) {
  struct stat st;
  if (lstat(path.c_str(), &st) == 0 && S_ISSOCK(st.st_mode)) unlink(path.c_str());
}

absl::Status MakeDirectories(const std::string& path, mode_t mode) {
  if (path.empty()) return absl::InvalidArgumentError("empty directory path");
  for (size_t pos = path.find('/', 1);; pos = path.find('/', pos + 1)) {
    const std::string prefix = path.substr(0, pos);
    if (mkdir(prefix.c_str(), mode) != 0 && errno != EEXIST) {
      return absl::FailedPreconditionError(absl::StrCat("create directory ", prefix, ": ", std::strerror(errno)));
    }
    if (pos == std::string::npos) break;
  }
  struct stat st;
  if (stat(path.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    return absl::FailedPreconditionError(absl::StrCat(path, " is not a directory"));
  }
  return absl::OkStatus();
}

}  // namespace dra::kubeletplugin::internal
