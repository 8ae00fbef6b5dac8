#include "kubeletplugin/health_staleness.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "base/thread_name.h"

namespace dra::kubeletplugin::internal {
namespace {

constexpr absl::Duration kCheckInterval = absl::Seconds(10);

}  // namespace

absl::Duration StaleAfter(const std::vector<DeviceHealth>& devices) {
  absl::Duration stale_after = absl::InfiniteDuration();
  for (const DeviceHealth& device : devices) {
    stale_after = std::min(stale_after, device.health_check_timeout > absl::ZeroDuration() ? device.health_check_timeout
                                                                                           : kKubeletHealthTimeout);
  }
  return stale_after;
}

HealthStalenessCheck::HealthStalenessCheck(HealthBroadcaster& health, Driver& driver, Logger logger,
                                           absl::Duration resend_interval)
    : health_(health), driver_(driver), logger_(std::move(logger)), resend_interval_(resend_interval) {}

HealthStalenessCheck::~HealthStalenessCheck() { Stop(); }

absl::Status HealthStalenessCheck::Start() {
  return base::StartNamedThread(thread_, "dra-health", "start the health staleness thread", [this] { Run(); });
}

void HealthStalenessCheck::Stop() {
  {
    dra::MutexLock lock(&mu_);
    stop_ = true;
  }
  cv_.SignalAll();
  if (thread_.joinable()) thread_.join();
}

void HealthStalenessCheck::HealthChanged() {
  dra::MutexLock lock(&mu_);
  cv_.SignalAll();
}

void HealthStalenessCheck::Run() {
  dra::MutexLock lock(&mu_);
  while (!stop_) {
    absl::Duration wait = kCheckInterval;
    if (std::optional<HealthBroadcaster::Snapshot> snapshot = health_.Newer(0)) {
      const absl::Duration stale_after = StaleAfter(snapshot->devices);
      const absl::Duration age = absl::Now() - snapshot->published;
      if (resend_interval_ > absl::ZeroDuration() && age >= resend_interval_) {
        for (DeviceHealth& device : snapshot->devices) device.last_updated = absl::InfinitePast();
        mu_.Unlock();
        health_.Publish(std::move(snapshot->devices));  // wakes this thread: it looks again
        mu_.Lock();
        continue;
      }
      if (resend_interval_ > absl::ZeroDuration()) wait = std::min(wait, resend_interval_ - age);
      if (age > stale_after && snapshot->version != reported_version_) {
        reported_version_ = snapshot->version;
        const absl::Status stale = absl::FailedPreconditionError(absl::StrCat(
            "device health was last published ", absl::FormatDuration(absl::Trunc(age, absl::Seconds(1))),
            " ago, longer than the health check timeout of its devices (", absl::FormatDuration(stale_after),
            "): the kubelet now reads them as Unknown; call Helper::PublishHealth again within it, changed or not"));
        mu_.Unlock();
        logger_.Error("Device health is stale", {{"err", stale.ToString()}});
        driver_.HandleError(stale, ErrorSeverity::kRecoverable, "device health");
        mu_.Lock();
      }
      if (stale_after != absl::InfiniteDuration()) wait = std::min(wait, stale_after / 2);
    }
    // A new list or Stop wakes it early; a spurious wake-up only looks again.
    if (!stop_) cv_.WaitWithDeadline(&mu_, absl::Now() + wait);
  }
}

}  // namespace dra::kubeletplugin::internal
