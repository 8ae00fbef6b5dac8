// The Helper's register of the driver calls in flight: it numbers them (the request ID), cancels them all when
// Stop() runs, and tells Stop() which ones are still running at the end of
// the shutdown grace.
#pragma once

#include <cstdint>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "base/mutex.h"
#include "dra/call_context.h"
#include "dra/log.h"

namespace dra::kubeletplugin::internal {

// One kubelet call as the tracker holds it: what cancels its CallContext.
class TrackedCall {
 public:
  TrackedCall(std::string description, CallCanceller canceller)
      : description_(std::move(description)), canceller_(std::move(canceller)) {}

  // Cancels with `reason` unless already cancelled.
  void Cancel(absl::Status reason) const { canceller_.Cancel(std::move(reason)); }
  // The caller cancelled the call or its connection closed (gRPC's OnCancel).
  void CallerCancelled() const;
  // The call returned: cancels, as Go cancels a handler's ctx.
  void Finish() const;
  absl::Status status() const { return canceller_.status(); }
  const std::string& description() const { return description_; }

 private:
  const std::string description_;
  const CallCanceller canceller_;
};

class CallTracker {
 public:
  // A call in flight; ends (and leaves the tracker) when destroyed.
  class Call {
   public:
    Call(Call&& other) noexcept
        : tracker_(std::exchange(other.tracker_, nullptr)),
          state_(std::move(other.state_)),
          context_(other.context_),
          start_(other.start_) {}
    Call& operator=(Call&&) = delete;
    ~Call();
    const CallContext& context() const { return context_; }
    // For the gRPC layer to cancel the call, also after it ended.
    const std::shared_ptr<const TrackedCall>& tracked() const { return state_; }
    // When Begin ran.
    absl::Time start() const { return start_; }

   private:
    friend class CallTracker;
    Call(CallTracker* tracker, std::shared_ptr<const TrackedCall> state, CallContext context, absl::Time start)
        : tracker_(tracker), state_(std::move(state)), context_(std::move(context)), start_(start) {}
    CallTracker* tracker_;
    std::shared_ptr<const TrackedCall> state_;
    CallContext context_;
    absl::Time start_;
  };

  explicit CallTracker(const Logger& logger) : logger_(logger) {}

  // `method` names the call in logs ("NodePrepareResources"). The deadline
  // is the caller's or, when it has none (InfiniteFuture), now +
  // kDefaultCallTimeout. After CancelAll the call starts cancelled.
  Call Begin(const std::string& method, absl::Time caller_deadline);

  // Cancels every call in flight and every later one.
  void CancelAll(const absl::Status& reason);

  // Waits until no call is in flight or `deadline` passes; returns the
  // descriptions ("NodePrepareResources requestID=7") of those still running.
  std::vector<std::string> WaitIdle(absl::Time deadline);

 private:
  void End(const std::shared_ptr<const TrackedCall>& state);

  const Logger& logger_;
  dra::Mutex mu_;
  dra::CondVar idle_cv_;
  uint64_t next_request_id_ ABSL_GUARDED_BY(mu_) = 1;
  absl::Status cancel_all_ ABSL_GUARDED_BY(mu_);  // OK until CancelAll
  std::set<std::shared_ptr<const TrackedCall>> in_flight_ ABSL_GUARDED_BY(mu_);
};

}  // namespace dra::kubeletplugin::internal
