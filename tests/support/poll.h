// Polling instead of sleeping: wait until a condition holds or time runs out.
#pragma once

#include <functional>

#include "absl/time/time.h"

namespace dra::testing {

// Evaluates `condition` until it returns true (returns true) or `timeout`
// passes (returns false), pausing from 100 us up to `max_pause` in between;
// conditions that send requests want a longer one.
bool PollUntil(const std::function<bool()>& condition, absl::Duration timeout = absl::Seconds(10),
               absl::Duration max_pause = absl::Milliseconds(5));

}  // namespace dra::testing
