// Tells the driver when it lets its device health go stale. The kubelet
// reads a device's entry as Unknown once it is older than the device's
// health check timeout (30 s by default; getHealthInfo in the kubelet's
// pkg/kubelet/cm/dra/healthinfo.go). As in the Go helper, sending the list
// again is the driver's job, so that the health of a wedged driver decays;
// this check only says so, through Driver::HandleError, once per list.
// Unless the driver asked the Helper to resend (Options::
// health_resend_interval): then this sends the last list again.
#pragma once

#include <cstdint>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/time/time.h"
#include "base/mutex.h"
#include "dra/kubeletplugin/device_health.h"
#include "dra/kubeletplugin/driver.h"
#include "dra/log.h"
#include "kubeletplugin/health_broadcaster.h"

namespace dra::kubeletplugin::internal {

// The kubelet's DefaultHealthTimeout, for devices without a timeout of their own.
inline constexpr absl::Duration kKubeletHealthTimeout = absl::Seconds(30);

// When `devices` go stale: the smallest of their timeouts, each its own or
// the kubelet's; infinite for no device.
absl::Duration StaleAfter(const std::vector<DeviceHealth>& devices);

// A watcher of the broadcaster: each list wakes it, so that a short timeout
// is looked at from its publication on.
class HealthStalenessCheck : public HealthBroadcaster::Watcher {
 public:
  // `resend_interval`: Options::health_resend_interval (zero: never).
  HealthStalenessCheck(HealthBroadcaster& health, Driver& driver, Logger logger, absl::Duration resend_interval);
  ~HealthStalenessCheck() override;  // Stop()

  // Starts the thread (dra-health): it looks at each new list, then every
  // 10 s, or every half of the list's smallest timeout, or every resend
  // interval, when that is shorter.
  absl::Status Start();
  void Stop();

  void HealthChanged() override;

 private:
  void Run();

  HealthBroadcaster& health_;
  Driver& driver_;
  const Logger logger_;
  const absl::Duration resend_interval_;
  dra::Mutex mu_;
  dra::CondVar cv_;
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  uint64_t reported_version_ = 0;  // the thread's
  std::thread thread_;
};

}  // namespace dra::kubeletplugin::internal
