#include "kubeletplugin/executor.h"

#include <algorithm>
#include <system_error>
#include <utility>

#include "absl/time/clock.h"
#include "base/thread_name.h"

namespace dra::kubeletplugin::internal {

Executor::Executor(Limits limits)
    : max_threads_(std::max<size_t>(limits.max_threads, 1)),
      parallelism_(std::clamp<size_t>(
          limits.parallelism > 0 ? limits.parallelism : std::max(1u, std::thread::hardware_concurrency()), 1,
          max_threads_)),
      stall_(limits.stall),
      idle_timeout_(limits.idle_timeout) {}

Executor::~Executor() {
  std::vector<std::thread> threads;
  {
    dra::MutexLock lock(&mu_);
    stopping_ = true;
    threads = std::move(threads_);
  }
  work_cv_.SignalAll();
  monitor_cv_.SignalAll();
  for (std::thread& thread : threads) thread.join();
}

size_t Executor::threads() const {
  dra::MutexLock lock(&mu_);
  return running_;
}

size_t Executor::idle_threads() const {
  dra::MutexLock lock(&mu_);
  return spare_ > 0 ? static_cast<size_t>(spare_) : 0;
}

bool Executor::StartWorkerLocked() {
  try {
    threads_.emplace_back([this] { WorkerLoop(); });
  } catch (const std::system_error&) {
    return false;  // out of threads: the others take the work
  }
  base::NameThread(threads_.back(), "dra-call");
  ++running_;
  ++spare_;
  return true;
}

void Executor::Post(absl::AnyInvocable<void() &&> work) {
  std::vector<std::thread> exited;
  bool run_here = false;
  bool wake_monitor = false;
  {
    dra::MutexLock lock(&mu_);
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
            base::NameThread(threads_.back(), "dra-call-mon");
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
    work_cv_.Signal();
    if (wake_monitor) monitor_cv_.Signal();
  }
  for (std::thread& thread : exited) thread.join();
}

void Executor::WorkerLoop() {
  dra::MutexLock lock(&mu_);
  while (true) {
    if (queue_.empty()) {
      if (stopping_) break;
      const absl::Time idle_until = absl::Now() + idle_timeout_;
      while (!stopping_ && queue_.empty()) {
        if (work_cv_.WaitWithDeadline(&mu_, idle_until)) break;  // timed out
      }
      if (!stopping_ && queue_.empty()) {
        exited_.push_back(std::this_thread::get_id());
        break;
      }
      continue;
    }
    absl::AnyInvocable<void()&&> work = std::move(queue_.front());
    queue_.pop_front();
    ++taken_;
    mu_.Unlock();
    std::move(work)();
    work = nullptr;  // destroys what it captured before the thread counts as idle
    mu_.Lock();
    ++spare_;
  }
  --running_;
  --spare_;
}

void Executor::MonitorLoop() {
  dra::MutexLock lock(&mu_);
  while (!stopping_) {
    if (queue_.empty() || spare_ > 0 || running_ >= max_threads_) {
      monitor_idle_ = true;
      monitor_cv_.Wait(&mu_);
      monitor_idle_ = false;
      continue;
    }
    const uint64_t taken = taken_;
    const absl::Time stall_at = absl::Now() + stall_;
    while (!stopping_ && !monitor_cv_.WaitWithDeadline(&mu_, stall_at)) {
    }
    if (!stopping_ && !queue_.empty() && taken_ == taken && spare_ <= 0 && running_ < max_threads_) {
      StartWorkerLocked();
      work_cv_.Signal();
    }
  }
}

}  // namespace dra::kubeletplugin::internal
