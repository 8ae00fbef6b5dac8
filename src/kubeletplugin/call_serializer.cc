#include "kubeletplugin/call_serializer.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <latch>
#include <utility>

#include "absl/strings/str_cat.h"
#include "base/mutex.h"

namespace dra::kubeletplugin::internal {

absl::StatusOr<std::unique_ptr<CallSerializer>> CallSerializer::Create(bool enabled, const std::string& lock_file,
                                                                       Executor& executor) {
  int fd = -1;
  if (enabled && !lock_file.empty()) {
    fd = open(lock_file.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0) {
      return absl::FailedPreconditionError(
          absl::StrCat("open serialization lock file ", lock_file, ": ", std::strerror(errno)));
    }
  }
  return std::unique_ptr<CallSerializer>(new CallSerializer(enabled, fd, executor));
}

CallSerializer::~CallSerializer() {
  {
    dra::MutexLock lock(&mu_);
    while (busy_) idle_.Wait(&mu_);
  }
  if (fd_ >= 0) close(fd_);
}

void CallSerializer::Run(Section section) {
  if (!enabled_) {
    std::move(section)(absl::OkStatus());
    return;
  }
  {
    dra::MutexLock lock(&mu_);
    if (busy_) {
      queue_.push_back(std::move(section));
      waiting_.fetch_add(1, std::memory_order_relaxed);
      return;
    }
    busy_ = true;
  }
  RunLocked(std::move(section));
}

void CallSerializer::RunLocked(Section section) {
  absl::Status locked;
  if (fd_ >= 0) {
    int rc;
    do {
      rc = flock(fd_, LOCK_EX);
    } while (rc != 0 && errno == EINTR);
    if (rc != 0) locked = absl::InternalError(absl::StrCat("flock serialization lock: ", std::strerror(errno)));
  }
  std::move(section)(locked);
  if (fd_ >= 0 && locked.ok()) flock(fd_, LOCK_UN);

  Section next;
  {
    dra::MutexLock lock(&mu_);
    if (queue_.empty()) {
      busy_ = false;
      idle_.SignalAll();
      return;
    }
    next = std::move(queue_.front());
    queue_.pop_front();
    waiting_.fetch_sub(1, std::memory_order_relaxed);
  }
  // Stays busy_: the next section runs without a gap another could take.
  executor_.Post([this, next = std::move(next)]() mutable { RunLocked(std::move(next)); });
}

void CallSerializer::RunAndWait(Section section) {
  std::latch done(1);
  Run([&](absl::Status locked) {
    std::move(section)(std::move(locked));
    done.count_down();
  });
  done.wait();
}

}  // namespace dra::kubeletplugin::internal
