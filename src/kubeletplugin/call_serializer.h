// Serializes NodePrepareResources/NodeUnprepareResources: within the process
// with a mutex and, with rolling updates, across instances with flock on a
// lock file in the plugin data dir.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <utility>

#include "absl/status/statusor.h"

namespace dra::kubeletplugin::internal {

class CallSerializer {
 public:
  class Guard {
   public:
    Guard(Guard&& other) noexcept : lock_(std::move(other.lock_)), fd_(std::exchange(other.fd_, -1)) {}
    Guard& operator=(Guard&&) = delete;
    ~Guard();

   private:
    friend class CallSerializer;
    Guard(std::unique_lock<std::mutex> lock, int fd) : lock_(std::move(lock)), fd_(fd) {}
    std::unique_lock<std::mutex> lock_;
    int fd_ = -1;  // flocked lock file, -1 when none
  };

  // Does nothing when `enabled` is false; `lock_file` empty means in-process only.
  static absl::StatusOr<std::unique_ptr<CallSerializer>> Create(bool enabled, const std::string& lock_file);
  ~CallSerializer();

  // Blocks until this call may run.
  absl::StatusOr<Guard> Acquire();
  // Calls blocked in Acquire() right now.
  int64_t waiting() const { return waiting_.load(std::memory_order_relaxed); }

 private:
  CallSerializer(bool enabled, int fd) : enabled_(enabled), fd_(fd) {}
  const bool enabled_;
  const int fd_;
  std::mutex mu_;
  std::atomic<int64_t> waiting_{0};
};

}  // namespace dra::kubeletplugin::internal
