// Executor: the Helper's own threads for the work of kubelet calls, so that
// gRPC's threads only decode a request, hand it over and later send the
// answer. Everything that may block (claim fetches, the cross-instance
// lock, the driver, fsync) runs here.
//
// Threads start on demand: Post() starts one when no thread is idle and
// fewer than `max_threads` run; otherwise the work waits in a FIFO queue.
// A thread idle for `idle_timeout` exits, so an idle Helper holds none.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <mutex>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/functional/any_invocable.h"
#include "absl/time/time.h"

namespace dra::kubeletplugin::internal {

class Executor {
 public:
  explicit Executor(size_t max_threads, absl::Duration idle_timeout = absl::Seconds(30));
  // Runs what is still queued, then joins the threads.
  ~Executor();
  Executor(const Executor&) = delete;
  Executor& operator=(const Executor&) = delete;

  // Runs `work` on a thread of the executor. `work` must not throw. If no
  // thread can be started and none runs, `work` runs on the caller's thread.
  void Post(absl::AnyInvocable<void() &&> work);

  // Threads running now (for tests and metrics).
  size_t threads() const;

 private:
  void WorkerLoop();

  const size_t max_threads_;
  const absl::Duration idle_timeout_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<absl::AnyInvocable<void() &&>> queue_ ABSL_GUARDED_BY(mu_);
  size_t running_ ABSL_GUARDED_BY(mu_) = 0;  // threads in WorkerLoop
  // Threads waiting for work minus work queued: a Post finds a thread free
  // when it is positive; negative while work waits for a busy thread.
  ptrdiff_t spare_ ABSL_GUARDED_BY(mu_) = 0;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  // Threads that left WorkerLoop, joined by the next Post or the destructor.
  std::vector<std::thread::id> exited_ ABSL_GUARDED_BY(mu_);
  std::vector<std::thread> threads_ ABSL_GUARDED_BY(mu_);
};

}  // namespace dra::kubeletplugin::internal
