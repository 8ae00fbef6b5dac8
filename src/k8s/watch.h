// The watch of dra::k8s::Client (Client::RunWatch): a stream transfer on the
// client's transport, decoded on the watching thread, which runs the handler.
// Internal.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "base/mutex.h"
#include "dra/k8s/client.h"
#include "k8s/auth.h"
#include "k8s/http_util.h"
#include "k8s/transport.h"

namespace dra::k8s {

namespace internal {
struct StreamTransfer;
}  // namespace internal

struct WatchStop::State {
  std::atomic<bool> stop{false};
  dra::Mutex mu;
  dra::CondVar cv;
  internal::StreamTransfer* transfer ABSL_GUARDED_BY(mu) = nullptr;  // while one runs

  // Wakes the watch wherever it waits.
  void Stop();
};

namespace internal {

// Runs watches on the calling thread. Thread-safe.
class Watcher {
 public:
  // All three must outlive the watcher.
  Watcher(Transport& transport, Authenticator& auth, TokenBucket& limiter)
      : transport_(transport), auth_(auth), limiter_(limiter) {}

  // Waits for the rate limit, then streams `request` (a watch) and calls
  // `on_event` for each event until the stream ends, an error, or `state`
  // is stopped; a 401 gets refreshed credentials and one more request.
  // Returns what Client::RunWatch does.
  absl::Status Run(WatchStop::State& state, const HttpRequest& request, int64_t timeout_seconds,
                   const std::function<void(const WatchEvent&)>& on_event);

 private:
  struct Writer;

  // The client-side rate limit's wait, cut short by Stop().
  void WaitForRateLimit(WatchStop::State& state);
  // One request: returns its transport outcome; `writer` holds the rest.
  absl::StatusOr<HttpResponse> Stream(WatchStop::State& state, const HttpRequest& request, const Credentials& creds,
                                      absl::Duration timeout, Writer& writer);
  // Hands what arrives to `writer` until the transfer completes; cancels it
  // on Stop() or an error.
  void Pump(WatchStop::State& state, StreamTransfer& transfer, Writer& writer);
  // Why the stream ended, when neither Stop() nor the writer ended it.
  absl::Status Outcome(Writer& writer, const HttpResponse& response, const std::string& context) const;

  Transport& transport_;
  Authenticator& auth_;
  TokenBucket& limiter_;
};

}  // namespace internal
}  // namespace dra::k8s
