#include "kubeletplugin/health_broadcaster.h"

#include "base/mutex.h"

#include "absl/time/clock.h"

namespace dra::kubeletplugin::internal {

void HealthBroadcaster::Publish(std::vector<DeviceHealth> devices) {
  const absl::Time now = absl::Now();
  for (DeviceHealth& device : devices) {
    if (device.last_updated == absl::InfinitePast()) device.last_updated = now;
  }
  {
    dra::MutexLock lock(&mu_);
    current_.devices = std::move(devices);
    current_.published = now;
    ++current_.version;
  }
  Notify();
}

std::optional<HealthBroadcaster::Snapshot> HealthBroadcaster::Newer(uint64_t seen_version) const {
  dra::MutexLock lock(&mu_);
  if (current_.version <= seen_version) return std::nullopt;
  return current_;
}

void HealthBroadcaster::AddWatcher(std::weak_ptr<Watcher> watcher) {
  dra::MutexLock lock(&mu_);
  std::erase_if(watchers_, [](const std::weak_ptr<Watcher>& w) { return w.expired(); });
  watchers_.push_back(std::move(watcher));
}

void HealthBroadcaster::Notify() {
  std::vector<std::shared_ptr<Watcher>> live;
  {
    dra::MutexLock lock(&mu_);
    for (const std::weak_ptr<Watcher>& watcher : watchers_) {
      if (std::shared_ptr<Watcher> w = watcher.lock()) live.push_back(std::move(w));
    }
  }
  for (const std::shared_ptr<Watcher>& watcher : live) watcher->HealthChanged();
}

void HealthBroadcaster::Shutdown() {
  {
    dra::MutexLock lock(&mu_);
    shut_down_ = true;
  }
  Notify();
}

bool HealthBroadcaster::shut_down() const {
  dra::MutexLock lock(&mu_);
  return shut_down_;
}

std::string TruncateHealthMessage(const std::string& message) {
  constexpr size_t kMax = 1024;
  if (message.size() <= kMax) return message;
  size_t cut = kMax - 3;
  // Step back over UTF-8 continuation bytes so no character is split.
  while (cut > 0 && (static_cast<unsigned char>(message[cut]) & 0xC0) == 0x80) --cut;
  return message.substr(0, cut) + "...";
}

}  // namespace dra::kubeletplugin::internal
