#include "kubeletplugin/call_tracker.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "base/mutex.h"
#include "dra/kubeletplugin/driver.h"

namespace dra::kubeletplugin {

namespace internal {
namespace {

// Waits are sliced to this so that an infinite one never overflows a
// std::chrono deadline.
constexpr absl::Duration kMaxWaitSlice = absl::Hours(1);
// How far behind the caller's deadline the propagated one may lie.
constexpr absl::Duration kPropagatedDeadlineLag = absl::Milliseconds(100);

}  // namespace

void TrackedCall::CallerCancelled() const {
  // The deadline gRPC propagates is the caller's timeout from when the
  // request arrived, so it lies behind the caller's own by the request's
  // transit time: a caller that gives up this close to it ran out of time.
  const absl::Time deadline = canceller_.deadline();
  if (absl::Now() >= deadline - kPropagatedDeadlineLag) {
    Cancel(absl::DeadlineExceededError(absl::StrCat(description_, ": the call's deadline ",
                                                    absl::FormatTime(deadline, absl::UTCTimeZone()),
                                                    " passed (the caller gave up at it)")));
    return;
  }
  Cancel(absl::CancelledError(absl::StrCat(description_, ": the caller cancelled the call")));
}

void TrackedCall::Finish() const {
  Cancel(absl::CancelledError(absl::StrCat(description_, ": the call has returned")));
}

CallTracker::Call::~Call() {
  if (tracker_ != nullptr) tracker_->End(state_);
}

CallTracker::Call CallTracker::Begin(const std::string& method, absl::Time caller_deadline) {
  const absl::Time now = absl::Now();
  const absl::Time deadline = caller_deadline == absl::InfiniteFuture() ? now + kDefaultCallTimeout : caller_deadline;
  dra::MutexLock lock(&mu_);
  const std::string request_id = std::to_string(next_request_id_++);
  std::string description = absl::StrCat(method, " requestID=", request_id);
  auto [context, canceller] = CallContext::WithCancel(
      deadline, logger_.WithValues({{"method", method}, {"requestID", request_id}}), description);
  auto state = std::make_shared<const TrackedCall>(std::move(description), std::move(canceller));
  if (!cancel_all_.ok()) state->Cancel(cancel_all_);
  in_flight_.insert(state);
  return Call(this, std::move(state), std::move(context), now);
}

void CallTracker::End(const std::shared_ptr<const TrackedCall>& state) {
  state->Finish();
  {
    dra::MutexLock lock(&mu_);
    in_flight_.erase(state);
  }
  idle_cv_.SignalAll();
}

void CallTracker::CancelAll(const absl::Status& reason) {
  dra::MutexLock lock(&mu_);
  cancel_all_ = reason;
  for (const std::shared_ptr<const TrackedCall>& state : in_flight_) state->Cancel(reason);
}

std::vector<std::string> CallTracker::WaitIdle(absl::Time deadline) {
  dra::MutexLock lock(&mu_);
  for (absl::Time now = absl::Now(); !in_flight_.empty() && now < deadline; now = absl::Now()) {
    idle_cv_.WaitWithTimeout(&mu_, std::min(deadline - now, kMaxWaitSlice));
  }
  std::vector<std::string> running;
  for (const std::shared_ptr<const TrackedCall>& state : in_flight_) running.push_back(state->description());
  return running;
}

}  // namespace internal
}  // namespace dra::kubeletplugin
