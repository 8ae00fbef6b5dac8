#include "support/poll.h"

#include "absl/time/clock.h"

namespace dra::testing {

bool PollUntil(const std::function<bool()>& condition, absl::Duration timeout) {
  const absl::Time deadline = absl::Now() + timeout;
  absl::Duration pause = absl::Microseconds(100);
  while (true) {
    if (condition()) return true;
    if (absl::Now() >= deadline) return false;
    absl::SleepFor(pause);
    pause = std::min(pause * 2, absl::Milliseconds(5));
  }
}

}  // namespace dra::testing
