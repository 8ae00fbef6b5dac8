#include "kubeletplugin/health_broadcaster.h"

#include "absl/time/clock.h"

namespace dra::kubeletplugin::internal {

void HealthBroadcaster::Publish(std::vector<DeviceHealth> devices) {
  const absl::Time now = absl::Now();
  for (DeviceHealth& device : devices) {
    if (device.last_updated == absl::InfinitePast()) device.last_updated = now;
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    current_.devices = std::move(devices);
    ++current_.version;
  }
  cv_.notify_all();
}

std::optional<HealthBroadcaster::Snapshot> HealthBroadcaster::WaitNewer(uint64_t seen_version,
                                                                         absl::Duration max_wait) {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait_for(lock, absl::ToChronoNanoseconds(max_wait),
               [&] { return shut_down_ || current_.version > seen_version; });
  if (shut_down_ || current_.version <= seen_version) return std::nullopt;
  return current_;
}

void HealthBroadcaster::Shutdown() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    shut_down_ = true;
  }
  cv_.notify_all();
}

bool HealthBroadcaster::shut_down() const {
  std::lock_guard<std::mutex> lock(mu_);
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
