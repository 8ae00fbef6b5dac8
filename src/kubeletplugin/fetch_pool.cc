#include "kubeletplugin/fetch_pool.h"

#include <algorithm>
#include <atomic>
#include <system_error>
#include <utility>

namespace dra::kubeletplugin::internal {

// One ParallelFor call. Indices are claimed from `next`; `done` counts the
// finished ones, and the caller waits for it to reach n under `mu`.
struct FetchPool::Batch {
  Batch(size_t n, size_t max_helpers, const std::function<void(size_t)>& fn)
      : n(n), max_helpers(max_helpers), fn(fn) {}

  const size_t n;
  const size_t max_helpers;  // pool threads allowed on this batch
  const std::function<void(size_t)>& fn;  // valid until done == n
  std::atomic<size_t> next{0};
  size_t helpers = 0;  // guarded by FetchPool::mu_

  std::mutex mu;
  std::condition_variable cv;
  size_t done = 0;  // guarded by mu

  bool Exhausted() const { return next.load(std::memory_order_relaxed) >= n; }

  // Runs indices until none are left.
  void Work() {
    size_t finished = 0;
    for (size_t i = next.fetch_add(1); i < n; i = next.fetch_add(1)) {
      fn(i);
      ++finished;
    }
    if (finished == 0) return;
    std::lock_guard<std::mutex> lock(mu);
    done += finished;
    if (done == n) cv.notify_all();  // under the lock: the caller may free `fn` right after
  }
};

FetchPool::FetchPool(size_t max_threads) : max_threads_(max_threads) {}

FetchPool::~FetchPool() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  for (std::thread& thread : threads_) thread.join();
}

size_t FetchPool::threads_started() const {
  std::lock_guard<std::mutex> lock(mu_);
  return threads_.size();
}

void FetchPool::GrowLocked(size_t wanted) {
  wanted = std::min(wanted, max_threads_);
  while (threads_.size() < wanted) {
    try {
      threads_.emplace_back([this] { WorkerLoop(); });
    } catch (const std::system_error&) {
      return;  // out of threads: fewer helpers, same result
    }
  }
}

void FetchPool::ParallelFor(size_t n, size_t max_parallel, const std::function<void(size_t)>& fn) {
  if (n == 0) return;
  const size_t helpers = std::min(n, std::max<size_t>(max_parallel, 1)) - 1;
  if (helpers == 0 || max_threads_ == 0) {
    for (size_t i = 0; i < n; ++i) fn(i);
    return;
  }
  auto batch = std::make_shared<Batch>(n, helpers, fn);
  {
    std::lock_guard<std::mutex> lock(mu_);
    GrowLocked(helpers);
    queue_.push_back(batch);
  }
  if (helpers == 1) {
    cv_.notify_one();
  } else {
    cv_.notify_all();
  }
  batch->Work();
  {
    // No helper is needed any more: take the batch off the queue if no
    // worker has done so.
    std::lock_guard<std::mutex> lock(mu_);
    auto it = std::find(queue_.begin(), queue_.end(), batch);
    if (it != queue_.end()) queue_.erase(it);
  }
  std::unique_lock<std::mutex> lock(batch->mu);
  batch->cv.wait(lock, [&] { return batch->done == batch->n; });
}

void FetchPool::WorkerLoop() {
  std::unique_lock<std::mutex> lock(mu_);
  while (true) {
    cv_.wait(lock, [&] { return stop_ || !queue_.empty(); });
    if (stop_) return;
    std::shared_ptr<Batch> batch = queue_.front();
    if (batch->Exhausted() || batch->helpers >= batch->max_helpers) {
      queue_.pop_front();
      continue;
    }
    if (++batch->helpers == batch->max_helpers) queue_.pop_front();
    lock.unlock();
    batch->Work();
    batch.reset();
    lock.lock();
  }
}

}  // namespace dra::kubeletplugin::internal
