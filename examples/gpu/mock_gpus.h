// Mock GPUs for the example driver (the default --device-source): a fixed
// number of 80Gi GPUs whose UUIDs are derived from the node name, so they
// stay the same across restarts. Their health is flipped through a control
// file (--mock-health-file): each appended line "<index> healthy|unhealthy|
// fatal" is one event, so that people can watch a taint and an eviction.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "device_source.h"

namespace gpu {

// A stable, UUID-shaped name for device `index` of `node`, after `prefix`
// ("GPU-" for mock GPUs).
std::string MockUuid(std::string_view prefix, const std::string& node, int index);

class MockGpus : public DeviceSource {
 public:
  // `health_file` may be empty (no health events) and need not exist yet.
  MockGpus(std::string node_name, int count, std::string health_file)
      : node_name_(std::move(node_name)), count_(count), health_file_(std::move(health_file)) {}

  absl::StatusOr<std::vector<GpuInfo>> Discover() override;
  absl::StatusOr<std::vector<HealthEvent>> WaitForHealthEvents(absl::Duration timeout) override;

 private:
  // Lines of the control file after `offset_`; a partial last line waits.
  absl::StatusOr<std::vector<HealthEvent>> ReadNewLines();

  const std::string node_name_;
  const int count_;
  const std::string health_file_;
  uintmax_t offset_ = 0;
};

}  // namespace gpu
