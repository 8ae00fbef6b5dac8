#include "base/work_pool.h"

#include <algorithm>
#include <atomic>
#include <system_error>
#include <utility>

#include "base/mutex.h"
#include "base/thread_name.h"

namespace dra {

// One ParallelFor call. Indices are claimed from `next`; `done` counts the
// finished ones, and the caller waits for it to reach n under `mu`.
struct WorkPool::Batch {
  Batch(size_t n, size_t max_helpers, const std::function<void(size_t)>& fn) : n(n), max_helpers(max_helpers), fn(fn) {}

  const size_t n;
  const size_t max_helpers;               // pool threads allowed on this batch
  const std::function<void(size_t)>& fn;  // valid until done == n
  std::atomic<size_t> next{0};
  size_t helpers = 0;  // guarded by WorkPool::mu_

  dra::Mutex mu;
  dra::CondVar cv;
  size_t done ABSL_GUARDED_BY(mu) = 0;

  bool Exhausted() const { return next.load(std::memory_order_relaxed) >= n; }

  // Runs indices until none are left.
  void Work() {
    size_t finished = 0;
    for (size_t i = next.fetch_add(1); i < n; i = next.fetch_add(1)) {
      fn(i);
      ++finished;
    }
    if (finished == 0) return;
    dra::MutexLock lock(&mu);
    done += finished;
    if (done == n) cv.SignalAll();  // under the lock: the caller may free `fn` right after
  }
};

WorkPool::WorkPool(size_t max_threads) : max_threads_(max_threads) {}

WorkPool::~WorkPool() {
  std::vector<std::thread> threads;
  {
    dra::MutexLock lock(&mu_);
    stop_ = true;
    threads = std::move(threads_);
  }
  cv_.SignalAll();
  for (std::thread& thread : threads) thread.join();
}

size_t WorkPool::threads_started() const {
  dra::MutexLock lock(&mu_);
  return threads_.size();
}

void WorkPool::GrowLocked(size_t wanted) {
  wanted = std::min(wanted, max_threads_);
  while (threads_.size() < wanted) {
    try {
      base::NameThread(threads_.emplace_back([this] { WorkerLoop(); }), "dra-work");
    } catch (const std::system_error&) {
      return;  // out of threads: fewer helpers, same result
    }
  }
}

void WorkPool::ParallelFor(size_t n, size_t max_parallel, const std::function<void(size_t)>& fn) {
  if (n == 0) return;
  const size_t helpers = std::min(n, std::max<size_t>(max_parallel, 1)) - 1;
  if (helpers == 0 || max_threads_ == 0) {
    for (size_t i = 0; i < n; ++i) fn(i);
    return;
  }
  auto batch = std::make_shared<Batch>(n, helpers, fn);
  {
    dra::MutexLock lock(&mu_);
    GrowLocked(helpers);
    queue_.push_back(batch);
  }
  if (helpers == 1) {
    cv_.Signal();
  } else {
    cv_.SignalAll();
  }
  batch->Work();
  {
    // No helper is needed any more: take the batch off the queue if no
    // worker has done so.
    dra::MutexLock lock(&mu_);
    auto it = std::find(queue_.begin(), queue_.end(), batch);
    if (it != queue_.end()) queue_.erase(it);
  }
  dra::MutexLock lock(&batch->mu);
  while (batch->done != batch->n) batch->cv.Wait(&batch->mu);
}

void WorkPool::WorkerLoop() {
  dra::MutexLock lock(&mu_);
  while (true) {
    while (!stop_ && queue_.empty()) cv_.Wait(&mu_);
    if (stop_) return;
    std::shared_ptr<Batch> batch = queue_.front();
    if (batch->Exhausted() || batch->helpers >= batch->max_helpers) {
      queue_.pop_front();
      continue;
    }
    if (++batch->helpers == batch->max_helpers) queue_.pop_front();
    mu_.Unlock();
    batch->Work();
    batch.reset();
    mu_.Lock();
  }
}

}  // namespace dra
