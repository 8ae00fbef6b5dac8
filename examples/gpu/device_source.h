// Where the GPU example driver finds its GPUs and learns about their health:
// mock GPUs (mock_gpus.h) or NVIDIA GPUs through NVML (nvml/nvml_gpus.h). A
// vendor copying this example replaces the source.
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "gpu_info.h"

namespace gpu {

// A change of one GPU's health.
struct HealthEvent {
  int index = 0;        // GpuInfo::index
  bool healthy = true;  // false: taint it NoSchedule and report it unhealthy
  bool fatal = false;   // with !healthy: NoExecute (running pods must go), e.g. fatal XIDs
  std::string reason;   // for logs and the taint value, e.g. "XID 79"

  bool operator==(const HealthEvent&) const = default;
};

class DeviceSource {
 public:
  virtual ~DeviceSource() = default;

  // The GPUs of this node, in index order. An error stops the driver's start.
  virtual absl::StatusOr<std::vector<GpuInfo>> Discover() = 0;

  // Blocks until health events arrive or `timeout` passes; an empty list on
  // timeout. Called from one thread only. An error is logged and retried.
  virtual absl::StatusOr<std::vector<HealthEvent>> WaitForHealthEvents(absl::Duration timeout) = 0;
};

}  // namespace gpu
