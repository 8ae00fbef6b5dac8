// Polling instead of sleeping: wait until a condition holds or time runs out.
#pragma once

#include <functional>

#include "absl/time/time.h"

namespace dra::testing {

// Evaluates `condition` every millisecond or so until it returns true
// (returns true) or `timeout` passes (returns false).
bool PollUntil(const std::function<bool()>& condition, absl::Duration timeout = absl::Seconds(10));

}  // namespace dra::testing
