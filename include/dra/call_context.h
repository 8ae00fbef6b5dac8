/// @file
/// dra::CallContext: what a driver call knows about the call it serves, as
/// the ctx of the Go helper's PrepareResourceClaims: a deadline, a
/// cancellation and a logger that carries the request ID. The Helper makes
/// one per kubelet call, the binding-condition reconciler one per handler
/// call; CallContext::WithCancel makes one with the handle that cancels it,
/// as Go's context.WithDeadline does.
#pragma once

#include <memory>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "dra/log.h"

namespace dra {

class CallCanceller;

/// A cheap, copyable view of one call; valid for as long as a copy is held.
/// Thread-safe: a driver may hand it to its own threads.
class CallContext {
 public:
  /// A context that is cancelled only at `deadline` (default: never), for
  /// calling driver code outside the Helper, e.g. from a driver's own tests.
  static CallContext Background(absl::Time deadline = absl::InfiniteFuture(), Logger logger = Logger());

  /// A context cancelled at `deadline` or by the returned canceller,
  /// whichever comes first. `what` names the call in the status messages
  /// ("<what>: the call's deadline ... passed").
  static std::pair<CallContext, CallCanceller> WithCancel(absl::Time deadline, Logger logger = Logger(),
                                                          std::string what = "call");

  /// When the caller gives up. A driver that cannot finish by then should
  /// stop and fail the claims it did not get to.
  absl::Time deadline() const;

  /// True once the deadline passed or the context was cancelled (the kubelet
  /// went away, the call returned, Helper::Stop() ran). The result is no
  /// longer awaited: stop blocking work and return.
  bool cancelled() const;

  /// Why it was cancelled, in the words a claim error can carry:
  /// DeadlineExceeded, Cancelled (the kubelet went away) or Unavailable (the
  /// Helper is stopping); OK while not cancelled. Like Go's ctx.Err().
  absl::Status status() const;

  /// Blocks until the context is cancelled or `timeout` passes, whichever
  /// comes first; returns cancelled(). For drivers that wait on hardware:
  /// `while (!ready()) if (ctx.WaitForCancellation(absl::Milliseconds(10))) ...`.
  bool WaitForCancellation(absl::Duration timeout) const;

  /// Logs with "method" and "requestID" (a counter per Helper) in every
  /// record, as the Go helper's per-call logger.
  const Logger& logger() const { return logger_; }

 private:
  friend class CallCanceller;
  class State;
  CallContext(std::shared_ptr<State> state, Logger logger) : state_(std::move(state)), logger_(std::move(logger)) {}

  std::shared_ptr<State> state_;
  Logger logger_;
};

/// Cancels the CallContext it was made with. Copyable; thread-safe.
class CallCanceller {
 public:
  /// Cancels with `reason` (an error) unless the context is cancelled
  /// already, whose first reason stays; wakes every waiter.
  void Cancel(absl::Status reason) const;
  /// The context's deadline().
  absl::Time deadline() const;
  /// The context's status(): OK until cancelled.
  absl::Status status() const;

 private:
  friend class CallContext;
  explicit CallCanceller(std::shared_ptr<CallContext::State> state) : state_(std::move(state)) {}
  std::shared_ptr<CallContext::State> state_;
};

}  // namespace dra
