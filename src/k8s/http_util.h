// Pieces of dra::k8s::Client that need no network: URL paths and queries,
// the HTTP-to-Status mapping, Retry-After, the token bucket, backoff, and the
// line decoder of watch streams. Internal; unit-tested directly.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "base/mutex.h"
#include "dra/k8s/client.h"
#include "nlohmann/json.hpp"

namespace dra::k8s::internal {

// Percent-encodes everything but RFC 3986 unreserved characters.
std::string PercentEncode(std::string_view text);

// "/apis/<group>/<version>[/namespaces/<ns>]/<resource>[/<name>[/<sub>]]";
// /api/<version> for the core group. Empty parts are left out.
std::string ResourcePath(const ResourceRef& ref, std::string_view ns, std::string_view name = "",
                         std::string_view subresource = "");

// "?k=v&k2=v2" with values percent-encoded, skipping empty values; "" if none.
std::string Query(const std::vector<std::pair<std::string, std::string>>& params);

// The Status for a non-2xx response. `body` may be a metav1.Status JSON or
// anything else (only its first 256 bytes are quoted). `context` is appended
// in brackets, e.g. "GET /api/v1/nodes/x".
absl::Status StatusFromResponse(int http_code, std::string_view body, std::string_view context);
// The same for a metav1.Status object (a watch ERROR event).
absl::Status StatusFromMetaStatus(const nlohmann::json& status, int fallback_code, std::string_view context);

// Retry-After as seconds or an HTTP date; nullopt if absent or unparsable.
std::optional<absl::Duration> ParseRetryAfter(std::string_view value, absl::Time now);

// `status` with its code and message replaced, payloads (HTTP code, reason)
// kept, so that IsConflict and friends still answer.
absl::Status Rewrap(const absl::Status& status, absl::StatusCode code, std::string message);

// A token bucket: `burst` tokens, refilled at `qps` per second. Reserve()
// takes a token now, going into debt if needed, and says how long the caller
// must wait before using it, so waiters are served in order. Thread-safe.
class TokenBucket {
 public:
  TokenBucket(double qps, int burst);
  absl::Duration Reserve(absl::Time now);
  // Gives back a reservation that was not used (a cancelled watch).
  void Cancel();

 private:
  dra::Mutex mu_;
  const double qps_;
  const double burst_;
  double tokens_ ABSL_GUARDED_BY(mu_);
  absl::Time last_ ABSL_GUARDED_BY(mu_);
  const bool unlimited_;
};

// Splits a byte stream into lines. Feed() may get any chunking: partial lines
// are kept until their '\n' arrives. Empty lines and a trailing '\r' are
// dropped. A line longer than max_line is an error (a watch event over 64 MiB
// is not one the API server sends).
class LineDecoder {
 public:
  explicit LineDecoder(size_t max_line = size_t{64} << 20) : max_line_(max_line) {}

  // Calls on_line for every completed line; stops at the first error it
  // returns.
  absl::Status Feed(std::string_view data, const std::function<absl::Status(std::string_view)>& on_line);
  // Bytes of an unfinished line.
  const std::string& pending() const { return pending_; }

 private:
  size_t max_line_;
  std::string pending_;
};

}  // namespace dra::k8s::internal
