#include "kubeletplugin/executor.h"

#include <pthread.h>

#include <algorithm>
#include <chrono>
#include <system_error>
#include <utility>

namespace dra::kubeletplugin::internal {

Executor::Executor(Limits limits)
    : max_threads_(std::max<size_t>(limits.max_threads, 1)),
      parallelism_(std::clamp<size_t>(limits.parallelism > 0 ? limits.parallelism
                                                             : std::max(1u, std::thread::hardware_concurrency()),
                                      1, max_threads_)),
      stall_(limits.stall),
      idle_timeout_(limits.idle_timeout) {}

Executor::~Executor() {
  std::vector<std::thread> threads;
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
    threads = std::move(threads_);
  }
  work_cv_.notify_all();
  monitor_cv_.notify_all();
  for (std::thread& thread : threads) thread.join();
}

size_t Executor::threads() const {
  std::lock_guard<std::mutex> lock(mu_);
  return running_;
}

bool Executor::StartWorkerLocked() {
  try {
    threads_.emplace_back([this] { WorkerLoop(); });
  } catch (const std::system_error&) {
    return false;  // out of threads: the others take the work
  }
  pthread_setname_np(threads_.back().native_handle(), "dra-call");
  ++running_;
  ++spare_;
  return true;
}

void Executor::Post(absl::AnyInvocable<void() &&> work) {
  std::vector<std::thread> exited;
  bool run_here = false;
  bool wake_monitor = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    // Workers that timed out have left WorkerLoop: join them off the lock.
    for (std::thread::id id : exited_) {
      auto it = std::find_if(threads_.begin(), threads_.end(), [&](const std::thread& t) { return t.get_id() == id; });
      exited.push_back(std::move(*it));
      threads_.erase(it);
    }
    exited_.clear();
    // No thread starts once the destructor took the list to join.
    if (spare_ <= 0 && !stopping_) {
      if (running_ < parallelism_) {
        StartWorkerLocked();
      } else if (running_ < max_threads_) {
        wake_monitor = monitor_idle_;
        if (!monitor_started_) {
          try {
            threads_.emplace_back([this] { MonitorLoop(); });
            pthread_setname_np(threads_.back().native_handle(), "dra-call-mon");
            monitor_started_ = true;
          } catch (const std::system_error&) {
          }
        }
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
    work_cv_.notify_one();
    if (wake_monitor) monitor_cv_.notify_one();
  }
  for (std::thread& thread : exited) thread.join();
}

void Executor::WorkerLoop() {
  std::unique_lock<std::mutex> lock(mu_);
  while (true) {
    if (queue_.empty()) {
      if (stopping_) break;
      if (!work_cv_.wait_for(lock, absl::ToChronoNanoseconds(idle_timeout_),
                             [&] { return stopping_ || !queue_.empty(); })) {
        exited_.push_back(std::this_thread::get_id());
        break;
      }
      continue;
    }
    absl::AnyInvocable<void() &&> work = std::move(queue_.front());
    queue_.pop_front();
    ++taken_;
    lock.unlock();
    std::move(work)();
    work = nullptr;  // destroys what it captured before the thread counts as idle
    lock.lock();
    ++spare_;
  }
  --running_;
  --spare_;
}

void Executor::MonitorLoop() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!stopping_) {
    if (queue_.empty() || spare_ > 0 || running_ >= max_threads_) {
      monitor_idle_ = true;
      monitor_cv_.wait(lock);
      monitor_idle_ = false;
      continue;
    }
    const uint64_t taken = taken_;
    monitor_cv_.wait_until(lock, std::chrono::steady_clock::now() + absl::ToChronoNanoseconds(stall_),
                           [&] { return stopping_; });
    if (!stopping_ && !queue_.empty() && taken_ == taken && spare_ <= 0 && running_ < max_threads_) {
      StartWorkerLocked();
      lock.unlock();
      work_cv_.notify_one();
      lock.lock();
    }
  }
}

}  // namespace dra::kubeletplugin::internal
