// dra::WorkPool: the SDK's one way to run work in parallel, a bounded pool
// of persistent threads ("dra-work") that the Helper owns and shares: the
// claims of one NodePrepareResources call are fetched on it, and the
// publisher writes a pool's slices on it, so neither creates (and joins)
// threads per call. Internal; public headers only forward-declare it
// (resourceslice::Options::work_pool).
//
// ParallelFor(n, max_parallel, fn) runs fn(0) .. fn(n - 1) and returns when
// all have run. The calling thread works too: it claims indices from the
// call's own atomic counter, and idle pool threads help while indices are
// left. So a call never waits for a pool thread to become free (calls from
// many threads at once cannot deadlock each other), n == 1 runs inline, and
// a busy pool only means less help. Threads start on demand, up to the
// pool's size, and are joined by the destructor.
#pragma once

#include <cstddef>
#include <deque>
#include <functional>
#include <memory>
#include <thread>
#include <vector>

#include "base/mutex.h"

namespace dra {

// A bounded pool of persistent threads that help the callers of ParallelFor.
class WorkPool {
 public:
  // At most `max_threads` pool threads (the callers come on top).
  explicit WorkPool(size_t max_threads);
  // Joins the threads. No ParallelFor call may be running.
  ~WorkPool();
  WorkPool(const WorkPool&) = delete;
  WorkPool& operator=(const WorkPool&) = delete;

  // Runs fn(i) exactly once for every i in [0, n), at most `max_parallel`
  // (>= 1) of them at the same time, the caller included. fn must be safe to
  // run concurrently and must not throw. If no pool thread can be created,
  // the caller does all the work.
  void ParallelFor(size_t n, size_t max_parallel, const std::function<void(size_t)>& fn);

  // Pool threads started so far (for tests).
  size_t threads_started() const;

 private:
  struct Batch;
  void WorkerLoop() ABSL_LOCKS_EXCLUDED(mu_);
  // Starts threads until there are `wanted` (capped by max_threads_).
  void GrowLocked(size_t wanted) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const size_t max_threads_;
  mutable dra::Mutex mu_;
  dra::CondVar cv_;
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  std::deque<std::shared_ptr<Batch>> queue_ ABSL_GUARDED_BY(mu_);  // batches that may take a helper
  std::vector<std::thread> threads_ ABSL_GUARDED_BY(mu_);
};

}  // namespace dra
