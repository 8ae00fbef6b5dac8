#include "dra/call_context.h"

#include <algorithm>
#include <memory>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "base/mutex.h"

namespace dra {
namespace {

// Waits are sliced to this so that an infinite one never overflows a
// std::chrono deadline.
constexpr absl::Duration kMaxWaitSlice = absl::Hours(1);

}  // namespace

// The cancellation shared by a context's copies and its canceller.
class CallContext::State {
 public:
  State(std::string what, absl::Time deadline) : what_(std::move(what)), deadline_(deadline) {}

  absl::Time deadline() const { return deadline_; }

  void Cancel(absl::Status reason) {
    {
      dra::MutexLock lock(&mu_);
      RefreshLocked();
      if (reason_.ok()) reason_ = std::move(reason);
    }
    cv_.SignalAll();
  }

  absl::Status status() const {
    dra::MutexLock lock(&mu_);
    RefreshLocked();
    return reason_;
  }

  bool WaitForCancellation(absl::Duration timeout) const {
    const absl::Time until = absl::Now() + timeout;
    dra::MutexLock lock(&mu_);
    while (true) {
      RefreshLocked();
      if (!reason_.ok()) return true;
      const absl::Time now = absl::Now();
      if (now >= until) return false;
      const absl::Time wake = std::min(until, deadline_);
      cv_.WaitWithTimeout(&mu_, std::min(wake - now, kMaxWaitSlice));
    }
  }

 private:
  // Sets reason_ from the deadline when due.
  void RefreshLocked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (!reason_.ok() || absl::Now() < deadline_) return;
    reason_ = absl::DeadlineExceededError(
        absl::StrCat(what_, ": the call's deadline ", absl::FormatTime(deadline_, absl::UTCTimeZone()), " passed"));
  }

  const std::string what_;
  const absl::Time deadline_;
  mutable dra::Mutex mu_;
  mutable dra::CondVar cv_;
  mutable absl::Status reason_ ABSL_GUARDED_BY(mu_);
};

CallContext CallContext::Background(absl::Time deadline, Logger logger) {
  return CallContext(std::make_shared<State>("background", deadline), std::move(logger));
}

std::pair<CallContext, CallCanceller> CallContext::WithCancel(absl::Time deadline, Logger logger, std::string what) {
  auto state = std::make_shared<State>(std::move(what), deadline);
  return {CallContext(state, std::move(logger)), CallCanceller(state)};
}

absl::Time CallContext::deadline() const { return state_->deadline(); }
bool CallContext::cancelled() const { return !state_->status().ok(); }
absl::Status CallContext::status() const { return state_->status(); }
bool CallContext::WaitForCancellation(absl::Duration timeout) const { return state_->WaitForCancellation(timeout); }

void CallCanceller::Cancel(absl::Status reason) const { state_->Cancel(std::move(reason)); }
absl::Time CallCanceller::deadline() const { return state_->deadline(); }
absl::Status CallCanceller::status() const { return state_->status(); }

}  // namespace dra
