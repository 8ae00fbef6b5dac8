// CallContext and CallTracker: deadlines, the three ways a call is
// cancelled, request IDs in the logger, and what Stop() learns about calls
// still running.
#include <catch2/catch.hpp>
#include <memory>
#include <optional>
#include <thread>

#include "absl/time/clock.h"
#include "dra/call_context.h"
#include "dra/kubeletplugin/driver.h"
#include "kubeletplugin/call_tracker.h"
#include "support/capturing_logger.h"

namespace dra::kubeletplugin {
namespace {

using internal::CallTracker;
using testing::CapturingSink;

TEST_CASE("a call without a deadline gets the kubelet's 45 s, one with a deadline keeps it", "[call_context]") {
  const Logger logger(std::make_shared<CapturingSink>());
  CallTracker tracker(logger);
  const absl::Time before = absl::Now();
  const CallTracker::Call none = tracker.Begin("NodePrepareResources", absl::InfiniteFuture());
  CHECK(none.context().deadline() >= before + kDefaultCallTimeout);
  CHECK(none.context().deadline() <= absl::Now() + kDefaultCallTimeout);
  const absl::Time given = absl::Now() + absl::Seconds(3);
  const CallTracker::Call with = tracker.Begin("NodePrepareResources", given);
  CHECK(with.context().deadline() == given);
  CHECK_FALSE(with.context().cancelled());
  CHECK(with.context().status().ok());
}

TEST_CASE("a passed deadline cancels with DeadlineExceeded", "[call_context]") {
  const Logger logger(std::make_shared<CapturingSink>());
  CallTracker tracker(logger);
  const CallTracker::Call call = tracker.Begin("NodePrepareResources", absl::Now() + absl::Milliseconds(50));
  CHECK(call.context().WaitForCancellation(absl::Seconds(30)));
  CHECK(call.context().cancelled());
  CHECK(call.context().status().code() == absl::StatusCode::kDeadlineExceeded);
  CHECK_THAT(std::string(call.context().status().message()),
             Catch::StartsWith("NodePrepareResources requestID=1: the call's deadline"));
}

TEST_CASE("a caller that went away cancels with Cancelled, seen by a waiter", "[call_context]") {
  const Logger logger(std::make_shared<CapturingSink>());
  CallTracker tracker(logger);
  const CallTracker::Call call = tracker.Begin("NodeUnprepareResources", absl::InfiniteFuture());
  CHECK_FALSE(call.context().WaitForCancellation(absl::Milliseconds(20)));
  std::thread leave([tracked = call.tracked()] { tracked->CallerCancelled(); });
  CHECK(call.context().WaitForCancellation(absl::Seconds(30)));
  leave.join();
  CHECK(call.context().status().code() == absl::StatusCode::kCancelled);
  CHECK_THAT(std::string(call.context().status().message()), Catch::Contains("the caller cancelled the call"));
}

TEST_CASE("CancelAll cancels calls in flight and later ones, the first reason stays", "[call_context]") {
  const Logger logger(std::make_shared<CapturingSink>());
  CallTracker tracker(logger);
  const CallTracker::Call running = tracker.Begin("NodePrepareResources", absl::InfiniteFuture());
  const CallContext copy = running.context();  // a driver thread's copy
  std::thread waiter([&] { CHECK(copy.WaitForCancellation(absl::InfiniteDuration())); });
  tracker.CancelAll(absl::UnavailableError("the DRA plugin is stopping"));
  waiter.join();
  CHECK(copy.status() == absl::UnavailableError("the DRA plugin is stopping"));
  const CallTracker::Call later = tracker.Begin("NodePrepareResources", absl::InfiniteFuture());
  CHECK(later.context().status().code() == absl::StatusCode::kUnavailable);
}

TEST_CASE("a context outlives its call, cancelled once the call returned", "[call_context]") {
  const Logger logger(std::make_shared<CapturingSink>());
  CallTracker tracker(logger);
  std::optional<CallContext> kept;
  std::shared_ptr<const internal::TrackedCall> tracked;
  {
    const CallTracker::Call call = tracker.Begin("NodePrepareResources", absl::InfiniteFuture());
    kept = call.context();
    tracked = call.tracked();
    CHECK_FALSE(kept->cancelled());
  }
  CHECK(kept->cancelled());
  CHECK_THAT(std::string(kept->status().message()), Catch::EndsWith("the call has returned"));
  tracked->CallerCancelled();  // gRPC's OnCancel may come after the call returned
  CHECK_THAT(std::string(kept->status().message()), Catch::EndsWith("the call has returned"));
}

TEST_CASE("each call's logger carries its method and a request ID counted per tracker", "[call_context]") {
  auto sink = std::make_shared<CapturingSink>();
  const Logger logger(sink);
  CallTracker tracker(logger);
  tracker.Begin("NodePrepareResources", absl::InfiniteFuture()).context().logger().Info("one");
  tracker.Begin("NodeUnprepareResources", absl::InfiniteFuture()).context().logger().Info("two");
  const std::vector<std::string> lines = sink->lines();
  REQUIRE(lines.size() == 2);
  CHECK_THAT(lines[0], Catch::EndsWith("\"one\" method=\"NodePrepareResources\" requestID=\"1\""));
  CHECK_THAT(lines[1], Catch::EndsWith("\"two\" method=\"NodeUnprepareResources\" requestID=\"2\""));
}

TEST_CASE("WaitIdle returns at once when idle and names the calls still running at its deadline", "[call_context]") {
  const Logger logger(std::make_shared<CapturingSink>());
  CallTracker tracker(logger);
  CHECK(tracker.WaitIdle(absl::Now() + absl::Hours(1)).empty());
  std::optional<CallTracker::Call> call = tracker.Begin("NodePrepareResources", absl::InfiniteFuture());
  CHECK(tracker.WaitIdle(absl::Now() + absl::Milliseconds(20)) ==
        std::vector<std::string>{"NodePrepareResources requestID=1"});
  std::thread end([&] { call.reset(); });
  CHECK(tracker.WaitIdle(absl::Now() + absl::Hours(1)).empty());
  end.join();
}

TEST_CASE("Background is cancelled only at its deadline", "[call_context]") {
  CHECK_FALSE(CallContext::Background().cancelled());
  CHECK(CallContext::Background().deadline() == absl::InfiniteFuture());
  const CallContext soon = CallContext::Background(absl::Now() + absl::Milliseconds(10));
  CHECK(soon.WaitForCancellation(absl::Seconds(30)));
  CHECK(soon.status().code() == absl::StatusCode::kDeadlineExceeded);
}

TEST_CASE("WithCancel: the canceller's first reason stays, and the deadline still applies", "[call_context]") {
  auto [context, canceller] = CallContext::WithCancel(absl::InfiniteFuture(), Logger(), "attach gpu-0");
  CHECK_FALSE(context.cancelled());
  std::thread cancel([canceller = canceller] { canceller.Cancel(absl::CancelledError("claim deallocated")); });
  CHECK(context.WaitForCancellation(absl::InfiniteDuration()));
  cancel.join();
  canceller.Cancel(absl::UnavailableError("stopping"));
  CHECK(context.status() == absl::CancelledError("claim deallocated"));
  auto [soon, unused] = CallContext::WithCancel(absl::Now() + absl::Milliseconds(10), Logger(), "attach gpu-1");
  CHECK(soon.WaitForCancellation(absl::Seconds(30)));
  CHECK_THAT(std::string(soon.status().message()), Catch::StartsWith("attach gpu-1: the call's deadline"));
}

}  // namespace
}  // namespace dra::kubeletplugin
