#include "dra/resourceslice/split.h"

#include <algorithm>
#include <utility>

#include "dra/k8s/validation.h"

namespace dra::resourceslice {
namespace {

// Devices that lower the per-slice limit to 64 (the API server's
// "advanced features").
bool UsesAdvancedFeatures(const k8s::Device& device) {
  if (!device.taints.empty() || !device.consumes_counters.empty()) return true;
  return std::any_of(device.attributes.begin(), device.attributes.end(), [](const auto& entry) {
    const k8s::DeviceAttribute& a = entry.second;
    return !a.int_values.empty() || !a.bool_values.empty() || !a.string_values.empty() || !a.version_values.empty();
  });
}

}  // namespace

std::vector<Slice> SplitIntoSlices(std::vector<k8s::Device> devices, std::vector<k8s::CounterSet> shared_counters) {
  std::vector<Slice> slices;
  for (size_t i = 0; i < shared_counters.size(); i += k8s::kResourceSliceMaxCounterSets) {
    Slice slice;
    const size_t end = std::min(shared_counters.size(), i + k8s::kResourceSliceMaxCounterSets);
    for (size_t j = i; j < end; ++j) slice.shared_counters.push_back(std::move(shared_counters[j]));
    slices.push_back(std::move(slice));
  }
  Slice current;
  bool advanced = false;
  for (k8s::Device& device : devices) {
    const bool with_device = advanced || UsesAdvancedFeatures(device);
    const size_t limit =
        with_device ? k8s::kResourceSliceMaxDevicesWithAdvancedFeatures : k8s::kResourceSliceMaxDevices;
    if (current.devices.size() + 1 > limit) {
      slices.push_back(std::move(current));
      current = Slice();
      advanced = UsesAdvancedFeatures(device);
    } else {
      advanced = with_device;
    }
    current.devices.push_back(std::move(device));
  }
  if (!current.devices.empty() || slices.empty()) slices.push_back(std::move(current));
  return slices;
}

}  // namespace dra::resourceslice
