#include "support/poll.h"

#include "absl/time/clock.h"

namespace dra::testing {

bool PollUntil(const std::function<bool()>& condition, absl::Duration timeout, absl::Duration max_pause) {
  const absl::Time deadline = absl::Now() + timeout;
  absl::Duration pause = absl::Microseconds(100);
  while (true) {
    if (condition()) return true;
    if (absl::Now() >= deadline) return false;
    absl::SleepFor(pause);
    pause = std::min(pause * 2, max_pause);
  }
}

}  // namespace dra::testing
