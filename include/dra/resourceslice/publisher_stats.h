/// @file
/// dra::resourceslice::PublisherStats: what a Publisher has done so far.
#pragma once

#include <cstdint>

namespace dra::resourceslice {

/// Counters of a Publisher, for tests and metrics.
struct PublisherStats {
  int64_t creates = 0;  ///< slices created
  int64_t updates = 0;  ///< slices updated
  int64_t deletes = 0;  ///< slices deleted
  int64_t errors = 0;   ///< reports to the error handler
  /// Devices in the server as last given to Update(), summed over the pools
  /// whose last sync succeeded (a pool that failed validation counts 0).
  int64_t published_devices = 0;
  /// Lists of this driver's slices applied (a watch-list or a LIST): one per
  /// watched scope at start, then one per 410.
  int64_t lists = 0;
  /// Watch events about this driver's slices received after those lists:
  /// the API server's fan-out to this publisher, its own writes echoed
  /// included.
  int64_t watch_events = 0;
};

}  // namespace dra::resourceslice
