// Holds the driver's latest complete device-health list and tells every
// NodeWatchResources stream about each new version.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/time/time.h"
#include "base/mutex.h"
#include "dra/kubeletplugin/device_health.h"

namespace dra::kubeletplugin::internal {

class HealthBroadcaster {
 public:
  struct Snapshot {
    uint64_t version = 0;
    std::vector<DeviceHealth> devices;
    absl::Time published;  // when the driver published it
  };

  // Told after each Publish and at Shutdown, on the thread that called
  // them, without the broadcaster's lock held.
  class Watcher {
   public:
    virtual ~Watcher() = default;
    virtual void HealthChanged() = 0;
  };

  // Entries with last_updated == InfinitePast get the publication time.
  void Publish(std::vector<DeviceHealth> devices);

  // The current snapshot if it is newer than `seen_version`.
  std::optional<Snapshot> Newer(uint64_t seen_version) const;

  // Watchers are held weakly: one that is gone is skipped.
  void AddWatcher(std::weak_ptr<Watcher> watcher);

  // Tells the watchers; `shut_down` is true from now on.
  void Shutdown();
  bool shut_down() const;

 private:
  void Notify();

  mutable dra::Mutex mu_;
  Snapshot current_ ABSL_GUARDED_BY(mu_);
  bool shut_down_ ABSL_GUARDED_BY(mu_) = false;
  std::vector<std::weak_ptr<Watcher>> watchers_ ABSL_GUARDED_BY(mu_);
};

// The API's 1024-character limit: longer messages become 1021 + "...", cut
// on a UTF-8 character boundary.
std::string TruncateHealthMessage(const std::string& message);

}  // namespace dra::kubeletplugin::internal
