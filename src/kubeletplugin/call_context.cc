// dra/kubeletplugin/call_context.h: a CallContext is a view of the call's
// internal::CallState (call_tracker.h), which the CallTracker cancels.
#include "dra/kubeletplugin/call_context.h"

#include <memory>
#include <utility>

#include "kubeletplugin/call_tracker.h"

namespace dra::kubeletplugin {

CallContext::CallContext(std::shared_ptr<internal::CallState> state, Logger logger)
    : state_(std::move(state)), logger_(std::move(logger)) {}

CallContext CallContext::Background(absl::Time deadline, Logger logger) {
  return CallContext(std::make_shared<internal::CallState>("background", deadline), std::move(logger));
}

absl::Time CallContext::deadline() const { return state_->deadline(); }
bool CallContext::cancelled() const { return !state_->status().ok(); }
absl::Status CallContext::status() const { return state_->status(); }
bool CallContext::WaitForCancellation(absl::Duration timeout) const { return state_->WaitForCancellation(timeout); }

}  // namespace dra::kubeletplugin
