// The one retry backoff of the SDK: jittered exponential, as client-go's
// wait.Backoff with jitter, so that a thousand nodes retrying after the same
// outage do not come back in step.
#pragma once

#include "absl/time/time.h"

namespace dra::base {

// The wait before retry `attempt` (0-based): a random duration in [d/2, d],
// d = min(initial * 2^attempt, max).
absl::Duration Backoff(int attempt, absl::Duration initial = absl::Milliseconds(200),
                       absl::Duration max = absl::Seconds(5));

}  // namespace dra::base
