// Serializes NodePrepareResources/NodeUnprepareResources: within the process
// as a queue of sections run one at a time and, with rolling updates, across
// instances with flock on a lock file in the plugin data dir.
//
// A section that must wait is queued, not blocked on: no thread is held
// while it waits for the section before it. When a section ends, the next
// one is handed to the Executor.
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <memory>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/functional/any_invocable.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "base/mutex.h"
#include "kubeletplugin/executor.h"

namespace dra::kubeletplugin::internal {

class CallSerializer {
 public:
  // A section gets OK, or why the cross-instance lock could not be taken
  // (it runs then too, without the lock, to fail its call).
  using Section = absl::AnyInvocable<void(absl::Status locked) &&>;

  // Does nothing when `enabled` is false; `lock_file` empty means in-process
  // only. `executor` runs queued sections and must outlive this.
  static absl::StatusOr<std::unique_ptr<CallSerializer>> Create(bool enabled, const std::string& lock_file,
                                                                Executor& executor);
  // Waits until the running section and those queued behind it are done:
  // RunAndWait's caller may destroy this as soon as its section ran, while
  // the section's thread still hands on to the next.
  ~CallSerializer();

  // Runs `section` serialized: on this thread right away when no other
  // section runs (or serialization is off), else later on an executor thread,
  // after the sections queued before it.
  void Run(Section section);
  // Runs `section` as Run does and returns once it has run. Not from inside
  // a section.
  void RunAndWait(Section section);

  // Sections queued behind a running one right now.
  int64_t waiting() const { return waiting_.load(std::memory_order_relaxed); }

 private:
  CallSerializer(bool enabled, int fd, Executor& executor) : enabled_(enabled), fd_(fd), executor_(executor) {}
  // Runs `section` under the file lock, then hands on the next queued one.
  void RunLocked(Section section);

  const bool enabled_;
  const int fd_;  // the lock file, -1 when none
  Executor& executor_;
  dra::Mutex mu_;
  bool busy_ ABSL_GUARDED_BY(mu_) = false;
  dra::CondVar idle_;  // busy_ became false
  std::deque<Section> queue_ ABSL_GUARDED_BY(mu_);
  std::atomic<int64_t> waiting_{0};
};

}  // namespace dra::kubeletplugin::internal
