#include "kubeletplugin/call_serializer.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace dra::kubeletplugin::internal {

CallSerializer::Guard::~Guard() {
  if (fd_ >= 0) flock(fd_, LOCK_UN);
}

absl::StatusOr<std::unique_ptr<CallSerializer>> CallSerializer::Create(bool enabled, const std::string& lock_file) {
  int fd = -1;
  if (enabled && !lock_file.empty()) {
    fd = open(lock_file.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0) {
      return absl::FailedPreconditionError(
          absl::StrCat("open serialization lock file ", lock_file, ": ", std::strerror(errno)));
    }
  }
  return std::unique_ptr<CallSerializer>(new CallSerializer(enabled, fd));
}

CallSerializer::~CallSerializer() {
  if (fd_ >= 0) close(fd_);
}

absl::StatusOr<CallSerializer::Guard> CallSerializer::Acquire() {
  if (!enabled_) return Guard(std::unique_lock<std::mutex>(), -1);
  waiting_.fetch_add(1, std::memory_order_relaxed);
  struct Waited {
    std::atomic<int64_t>& waiting;
    ~Waited() { waiting.fetch_sub(1, std::memory_order_relaxed); }
  } waited{waiting_};
  std::unique_lock<std::mutex> lock(mu_);
  if (fd_ >= 0) {
    int rc;
    do {
      rc = flock(fd_, LOCK_EX);
    } while (rc != 0 && errno == EINTR);
    if (rc != 0) return absl::InternalError(absl::StrCat("flock serialization lock: ", std::strerror(errno)));
  }
  return Guard(std::move(lock), fd_);
}

}  // namespace dra::kubeletplugin::internal
