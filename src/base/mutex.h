// dra::Mutex: a mutex whose locking rules clang checks at compile time
// (-Wthread-safety) and ThreadSanitizer checks at run time. The SDK's and
// dractl's own: internal, no public header includes it. A driver uses
// std::mutex (as the examples do) or absl::Mutex.
//
// Write the rules down with abseil's annotations: ABSL_GUARDED_BY(mu_) on
// what a mutex protects, ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) on functions
// called with it held. The interface is absl::Mutex's; the implementation
// is std::mutex, because Debian's abseil library is built without TSan's
// hooks, so TSan would see none of absl::Mutex's locks, and std::mutex is
// also the faster of the two for the SDK's short critical sections. (clang
// cannot check annotations on std::mutex itself: libstdc++ has none.)
//
//   dra::Mutex mu_;
//   int count_ ABSL_GUARDED_BY(mu_) = 0;
//   ...
//   dra::MutexLock lock(&mu_);
//   while (count_ == 0) cv_.Wait(&mu_);
#pragma once

#include <condition_variable>
#include <mutex>

#include "absl/base/thread_annotations.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"

namespace dra {

// A non-recursive mutex with absl::Mutex's interface, on std::mutex; hold it with MutexLock.
class ABSL_LOCKABLE Mutex {
 public:
  Mutex() = default;
  Mutex(const Mutex&) = delete;
  Mutex& operator=(const Mutex&) = delete;

  // Blocks until the mutex is held.
  void Lock() ABSL_EXCLUSIVE_LOCK_FUNCTION() { mu_.lock(); }
  // Releases the mutex, which the caller holds.
  void Unlock() ABSL_UNLOCK_FUNCTION() { mu_.unlock(); }

 private:
  friend class CondVar;
  std::mutex mu_;
};

// Holds `mu` for its scope.
class ABSL_SCOPED_LOCKABLE MutexLock {
 public:
  // Locks `mu`; the destructor unlocks it.
  explicit MutexLock(Mutex* mu) ABSL_EXCLUSIVE_LOCK_FUNCTION(mu) : mu_(mu) { mu_->Lock(); }
  ~MutexLock() ABSL_UNLOCK_FUNCTION() { mu_->Unlock(); }
  MutexLock(const MutexLock&) = delete;
  MutexLock& operator=(const MutexLock&) = delete;

 private:
  Mutex* const mu_;
};

// Holds `mu` until Release() or the end of its scope.
class ABSL_SCOPED_LOCKABLE ReleasableMutexLock {
 public:
  // Locks `mu`.
  explicit ReleasableMutexLock(Mutex* mu) ABSL_EXCLUSIVE_LOCK_FUNCTION(mu) : mu_(mu) { mu_->Lock(); }
  ~ReleasableMutexLock() ABSL_UNLOCK_FUNCTION() {
    if (mu_ != nullptr) mu_->Unlock();
  }
  // Unlocks `mu` before the end of the scope; call it once at most.
  void Release() ABSL_UNLOCK_FUNCTION() {
    mu_->Unlock();
    mu_ = nullptr;
  }
  ReleasableMutexLock(const ReleasableMutexLock&) = delete;
  ReleasableMutexLock& operator=(const ReleasableMutexLock&) = delete;

 private:
  Mutex* mu_;
};

// A condition variable for dra::Mutex. Waits may wake spuriously: wait in
// a loop on the condition.
class CondVar {
 public:
  // Releases `mu`, which the caller holds, waits until signalled (or woken spuriously) and takes it again.
  void Wait(Mutex* mu) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
    std::unique_lock<std::mutex> lock(mu->mu_, std::adopt_lock);
    cv_.wait(lock);
    lock.release();
  }
  // Returns true when `timeout` passed (not when woken).
  bool WaitWithTimeout(Mutex* mu, absl::Duration timeout) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
    if (timeout == absl::InfiniteDuration()) {
      Wait(mu);
      return false;
    }
    std::unique_lock<std::mutex> lock(mu->mu_, std::adopt_lock);
    // A steady-clock wait: a wall-clock step neither shortens nor stretches it.
    const bool timed_out = cv_.wait_for(lock, absl::ToChronoNanoseconds(timeout)) == std::cv_status::timeout;
    lock.release();
    return timed_out;
  }
  // Returns true when `deadline` passed (not when woken). InfiniteFuture
  // waits until woken.
  bool WaitWithDeadline(Mutex* mu, absl::Time deadline) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
    return WaitWithTimeout(mu, deadline - absl::Now());
  }
  // Wakes one waiter.
  void Signal() { cv_.notify_one(); }
  // Wakes every waiter.
  void SignalAll() { cv_.notify_all(); }

 private:
  std::condition_variable cv_;
};

}  // namespace dra
