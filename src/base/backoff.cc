#include "base/backoff.h"

#include <algorithm>
#include <random>

namespace dra::base {

absl::Duration Backoff(int attempt, absl::Duration initial, absl::Duration max) {
  absl::Duration d = initial;
  for (int i = 0; i < attempt && d < max; ++i) d *= 2;
  d = std::min(d, max);
  thread_local std::mt19937_64 rng{std::random_device{}()};
  std::uniform_real_distribution<double> jitter(0.5, 1.0);
  return d * jitter(rng);
}

}  // namespace dra::base
