// dra::kubeletplugin::CallContext: what a driver call knows about the call it
// serves, as the ctx of the Go helper's PrepareResourceClaims: a deadline, a
// cancellation flag and a logger that carries the request ID.
#pragma once

#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "dra/log.h"

namespace dra::kubeletplugin {

namespace internal {
class CallState;
}

// The kubelet gives up on a NodePrepareResources or NodeUnprepareResources
// call after this long; calls that carry no gRPC deadline (and the Helper's
// own calls, such as unpreparing an orphan) get it too.
inline constexpr absl::Duration kDefaultCallTimeout = absl::Seconds(45);

// A cheap, copyable view of one call; valid for as long as a copy is held.
// Thread-safe: a driver may hand it to its own threads.
class CallContext {
 public:
  // A context that is cancelled only at `deadline` (default: never), for
  // calling driver code outside the Helper, e.g. from a driver's own tests.
  static CallContext Background(absl::Time deadline = absl::InfiniteFuture(), Logger logger = Logger());

  // When the caller gives up. A driver that cannot finish by then should
  // stop and fail the claims it did not get to.
  absl::Time deadline() const;

  // True once the deadline passed, the kubelet went away (it cancelled the
  // call or its connection closed) or Helper::Stop() ran. The result is no
  // longer awaited: stop blocking work and return.
  bool cancelled() const;

  // Why it was cancelled, in the words a claim error can carry:
  // DeadlineExceeded, Cancelled (the kubelet went away) or Unavailable (the
  // Helper is stopping); OK while not cancelled. Like Go's ctx.Err().
  absl::Status status() const;

  // Blocks until the context is cancelled or `timeout` passes, whichever
  // comes first; returns cancelled(). For drivers that wait on hardware:
  // `while (!ready()) if (ctx.WaitForCancellation(absl::Milliseconds(10))) ...`.
  bool WaitForCancellation(absl::Duration timeout) const;

  // Logs with "method" and "requestID" (a counter per Helper) in every
  // record, as the Go helper's per-call logger.
  const Logger& logger() const { return logger_; }

  // Made by the Helper.
  CallContext(std::shared_ptr<internal::CallState> state, Logger logger);

 private:
  std::shared_ptr<internal::CallState> state_;
  Logger logger_;
};

}  // namespace dra::kubeletplugin
