// Executor: the Helper's own threads for the work of kubelet calls, so that
// gRPC's threads only decode a request, hand it over and later send the
// answer. Everything that may block (claim fetches, the cross-instance
// lock, the driver, fsync) runs here.
//
// Threads start on demand, FIFO queue. Up to `parallelism` threads (the
// CPUs) start as soon as work finds none idle: more would only take turns
// on the CPUs for work that does not block. Beyond that, work waits for a
// thread, and a monitor adds one (up to `max_threads`) whenever queued work
// made no progress for `stall`: the threads are blocked (a slow driver, a
// claim fetch, fsync), so more of them is what lets the queue move. A
// thread idle for `idle_timeout` exits, so an idle Helper holds none.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/functional/any_invocable.h"
#include "absl/time/time.h"
#include "base/mutex.h"

namespace dra::kubeletplugin::internal {

class Executor {
 public:
  struct Limits {
    size_t max_threads = 32;
    size_t parallelism = 0;  // 0: the number of CPUs
    absl::Duration stall = absl::Milliseconds(10);
    absl::Duration idle_timeout = absl::Seconds(30);
  };

  explicit Executor(Limits limits);
  // Runs what is still queued, then joins the threads.
  ~Executor();
  Executor(const Executor&) = delete;
  Executor& operator=(const Executor&) = delete;

  // Runs `work` on a thread of the executor. `work` must not throw. If no
  // thread can be started and none runs, `work` runs on the caller's thread.
  void Post(absl::AnyInvocable<void() &&> work);

  // Worker threads running now, and those of them waiting for work (for tests).
  size_t threads() const;
  size_t idle_threads() const;

 private:
  // Starts a worker; false when the system has no thread to give.
  bool StartWorkerLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void WorkerLoop() ABSL_LOCKS_EXCLUDED(mu_);
  void MonitorLoop() ABSL_LOCKS_EXCLUDED(mu_);

  const size_t max_threads_;
  const size_t parallelism_;
  const absl::Duration stall_;
  const absl::Duration idle_timeout_;
  mutable dra::Mutex mu_;
  dra::CondVar work_cv_;
  dra::CondVar monitor_cv_;
  std::deque<absl::AnyInvocable<void() &&>> queue_ ABSL_GUARDED_BY(mu_);
  uint64_t taken_ ABSL_GUARDED_BY(mu_) = 0;  // work taken off the queue, ever
  size_t running_ ABSL_GUARDED_BY(mu_) = 0;  // workers in WorkerLoop
  // Workers waiting for work minus work queued: a Post finds a worker free
  // when it is positive; negative while work waits for a busy one.
  ptrdiff_t spare_ ABSL_GUARDED_BY(mu_) = 0;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  bool monitor_started_ ABSL_GUARDED_BY(mu_) = false;
  bool monitor_idle_ ABSL_GUARDED_BY(mu_) = false;  // waiting for queued work, not timing a stall
  // Workers that left WorkerLoop, joined by the next Post or the destructor.
  std::vector<std::thread::id> exited_ ABSL_GUARDED_BY(mu_);
  std::vector<std::thread> threads_ ABSL_GUARDED_BY(mu_);  // workers and the monitor
};

}  // namespace dra::kubeletplugin::internal
