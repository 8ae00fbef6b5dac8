#include "fileutil/atomic_file.h"

#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <system_error>
#include <vector>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "absl/strings/str_cat.h"
#include "crashpoint/crash_point.h"

namespace dra::internal {
namespace {

// "<syscall> <path>: <strerror>", with the code errno maps to.
absl::Status SyscallError(int error_number, absl::string_view syscall, absl::string_view path) {
  return absl::ErrnoToStatus(error_number, absl::StrCat(syscall, " ", path));
}

absl::Status WriteAll(int fd, std::string_view content, const std::string& path) {
  while (!content.empty()) {
    const ssize_t n = ::write(fd, content.data(), content.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      return SyscallError(errno, "write", path);
    }
    content.remove_prefix(static_cast<size_t>(n));
  }
  return absl::OkStatus();
}

// Without this the rename itself may not survive a crash.
absl::Status SyncDirectory(const std::string& dir) {
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return SyscallError(errno, "open", dir);
  absl::Status status;
  if (::fsync(fd) != 0) status = SyscallError(errno, "fsync", dir);
  ::close(fd);
  return status;
}

// Writes, syncs (kSynced) and closes the open temp file `fd`.
absl::Status FillTempFile(int fd, const std::string& temp, std::string_view content, mode_t mode,
                          Durability durability) {
  absl::Status status = WriteAll(fd, content, temp);
  if (status.ok() && ::fchmod(fd, mode) != 0) status = SyscallError(errno, "fchmod", temp);
  if (status.ok() && durability == Durability::kSynced && ::fsync(fd) != 0) {
    status = SyscallError(errno, "fsync", temp);
  }
  // close can report a deferred write error (e.g. on NFS).
  if (::close(fd) != 0 && status.ok()) status = SyscallError(errno, "close", temp);
  return status;
}

}  // namespace

absl::Status WriteFileAtomically(const std::string& path, std::string_view content, mode_t mode,
                                 Durability durability) {
  const size_t slash = path.rfind('/');
  const std::string dir = slash == std::string::npos ? "." : slash == 0 ? "/" : path.substr(0, slash);
  const std::string name = slash == std::string::npos ? path : path.substr(slash + 1);
  if (name.empty()) return absl::InvalidArgumentError(absl::StrCat("write ", path, ": not a file path"));

  const std::string pattern = absl::StrCat(dir, "/.", name, ".tmp-XXXXXX");
  std::string temp = pattern;
  const int fd = ::mkostemp(temp.data(), O_CLOEXEC);
  if (fd < 0) return SyscallError(errno, "mkstemp", pattern);

  absl::Status status = FillTempFile(fd, temp, content, mode, durability);
  if (status.ok()) DRA_CRASH_POINT("atomic_file.before_rename");
  if (status.ok() && ::rename(temp.c_str(), path.c_str()) != 0) {
    status = SyscallError(errno, absl::StrCat("rename ", temp, " to"), path);
  }
  if (!status.ok()) {
    ::unlink(temp.c_str());
    return status;
  }
  DRA_CRASH_POINT("atomic_file.after_rename");
  return durability == Durability::kSynced ? SyncDirectory(dir) : absl::OkStatus();
}

std::string_view AtomicFileTarget(std::string_view entry) {
  if (!entry.starts_with('.')) return entry;
  entry.remove_prefix(1);
  const size_t temp = entry.rfind(".tmp-");
  return temp == std::string_view::npos ? std::string_view() : entry.substr(0, temp);
}

absl::StatusOr<std::vector<std::string>> RemoveAtomicTempFiles(const std::string& path) {
  const size_t slash = path.rfind('/');
  const std::string dir = slash == std::string::npos ? "." : slash == 0 ? "/" : path.substr(0, slash);
  const std::string_view name = slash == std::string::npos ? path : std::string_view(path).substr(slash + 1);
  std::vector<std::string> removed;
  std::error_code error;
  for (std::filesystem::directory_iterator it(dir, error), end; !error && it != end; it.increment(error)) {
    const std::string entry = it->path().filename();
    if (entry == name || AtomicFileTarget(entry) != name) continue;
    if (!std::filesystem::remove(it->path(), error) && error) break;
    removed.push_back(it->path());
  }
  if (error && error != std::errc::no_such_file_or_directory) {
    return absl::ErrnoToStatus(error.value(), absl::StrCat("remove temp files of ", path));
  }
  return removed;
}

absl::StatusOr<std::string> ReadWholeFile(const std::string& path, struct stat* info) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return SyscallError(errno, "open", path);
  if (info != nullptr && ::fstat(fd, info) != 0) {
    const int error_number = errno;
    ::close(fd);
    return SyscallError(error_number, "fstat", path);
  }
  std::string content;
  std::vector<char> buffer(64 * 1024);
  absl::Status status;
  while (true) {
    const ssize_t n = ::read(fd, buffer.data(), buffer.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      status = SyscallError(errno, "read", path);
      break;
    }
    if (n == 0) break;
    content.append(buffer.data(), static_cast<size_t>(n));
  }
  ::close(fd);
  if (!status.ok()) return status;
  return content;
}

}  // namespace dra::internal
