// Holds the driver's latest complete device-health list and hands every new
// version to each NodeWatchResources stream.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <optional>
#include <vector>

#include "absl/time/time.h"
#include "dra/kubeletplugin/device_health.h"

namespace dra::kubeletplugin::internal {

class HealthBroadcaster {
 public:
  struct Snapshot {
    uint64_t version = 0;
    std::vector<DeviceHealth> devices;
  };

  // Entries with last_updated == InfinitePast get the publication time.
  void Publish(std::vector<DeviceHealth> devices);

  // A snapshot newer than `seen_version`, waiting up to `max_wait` for one.
  // Nothing when none came in time or after Shutdown.
  std::optional<Snapshot> WaitNewer(uint64_t seen_version, absl::Duration max_wait);

  // Wakes all waiters; later waits return at once.
  void Shutdown();
  bool shut_down() const;

 private:
  mutable std::mutex mu_;
  std::condition_variable cv_;
  Snapshot current_;
  bool shut_down_ = false;
};

// The API's 1024-character limit: longer messages become 1021 + "...", cut
// on a UTF-8 character boundary.
std::string TruncateHealthMessage(const std::string& message);

}  // namespace dra::kubeletplugin::internal
