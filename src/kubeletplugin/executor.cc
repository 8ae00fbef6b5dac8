#include "kubeletplugin/executor.h"

#include <algorithm>
#include <system_error>
#include <utility>

namespace dra::kubeletplugin::internal {

Executor::Executor(size_t max_threads, absl::Duration idle_timeout)
    : max_threads_(std::max<size_t>(max_threads, 1)), idle_timeout_(idle_timeout) {}

Executor::~Executor() {
  std::vector<std::thread> threads;
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
    threads = std::move(threads_);
  }
  cv_.notify_all();
  for (std::thread& thread : threads) thread.join();
}

size_t Executor::threads() const {
  std::lock_guard<std::mutex> lock(mu_);
  return running_;
}

void Executor::Post(absl::AnyInvocable<void() &&> work) {
  std::vector<std::thread> exited;
  bool run_here = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    // Threads that timed out have left WorkerLoop: join them off the lock.
    for (std::thread::id id : exited_) {
      auto it = std::find_if(threads_.begin(), threads_.end(), [&](const std::thread& t) { return t.get_id() == id; });
      exited.push_back(std::move(*it));
      threads_.erase(it);
    }
    exited_.clear();
    // No thread starts once the destructor took the list to join.
    if (spare_ <= 0 && running_ < max_threads_ && !stopping_) {
      try {
        threads_.emplace_back([this] { WorkerLoop(); });
        ++running_;
        ++spare_;
      } catch (const std::system_error&) {
      }
    }
    run_here = running_ == 0;  // out of threads, or stopped, and nobody to run it
    if (!run_here) {
      queue_.push_back(std::move(work));
      --spare_;
    }
  }
  if (run_here) {
    std::move(work)();
  } else {
    cv_.notify_one();
  }
  for (std::thread& thread : exited) thread.join();
}

void Executor::WorkerLoop() {
  std::unique_lock<std::mutex> lock(mu_);
  while (true) {
    if (queue_.empty()) {
      if (stopping_) break;
      if (!cv_.wait_for(lock, absl::ToChronoNanoseconds(idle_timeout_),
                        [&] { return stopping_ || !queue_.empty(); })) {
        exited_.push_back(std::this_thread::get_id());
        break;
      }
      continue;
    }
    absl::AnyInvocable<void() &&> work = std::move(queue_.front());
    queue_.pop_front();
    lock.unlock();
    std::move(work)();
    work = nullptr;  // destroys what it captured before the thread counts as idle
    lock.lock();
    ++spare_;
  }
  --running_;
  --spare_;
}

}  // namespace dra::kubeletplugin::internal
