// absl::Notification's interface on dra::Mutex, for tests that run under
// ThreadSanitizer: Debian's absl::Notification is built without TSan's
// hooks, so TSan would not see that Notify happens before the wait returns.
#pragma once

#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "base/mutex.h"

namespace dra::testing {

class Notification {
 public:
  void Notify() {
    MutexLock lock(&mu_);
    notified_ = true;
    cv_.SignalAll();
  }
  bool HasBeenNotified() {
    MutexLock lock(&mu_);
    return notified_;
  }
  void WaitForNotification() {
    MutexLock lock(&mu_);
    while (!notified_) cv_.Wait(&mu_);
  }
  // False when `timeout` passed first.
  bool WaitForNotificationWithTimeout(absl::Duration timeout) {
    const absl::Time until = absl::Now() + timeout;
    MutexLock lock(&mu_);
    while (!notified_ && !cv_.WaitWithDeadline(&mu_, until)) {
    }
    return notified_;
  }

 private:
  Mutex mu_;
  CondVar cv_;
  bool notified_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace dra::testing
