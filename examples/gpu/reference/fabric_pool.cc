#include "fabric_pool.h"

#include "absl/strings/str_cat.h"
#include "dra/k8s/device_attributes.h"
#include "gpu_binding.h"
#include "gpu_resources.h"
#include "mock_gpus.h"

namespace gpu {

std::vector<GpuInfo> MockFabricGpus(int count) {
  std::vector<GpuInfo> gpus = *MockGpus("fabric", count, "").Discover();
  for (GpuInfo& gpu : gpus) {
    for (dra::cdi::DeviceNode& node : gpu.device_nodes) node.path = absl::StrCat("/dev/mock-fabric-gpu", gpu.index);
  }
  return gpus;
}

std::string FabricDeviceName(int index) { return absl::StrCat("fabric-", GpuDeviceName(index)); }

dra::resourceslice::Pool FabricPool(const std::vector<GpuInfo>& gpus, const std::string& driver_name,
                                    const dra::k8s::NodeSelector& selector) {
  // A node pool's whole GPUs ("gpu-<index>"), then what makes them the
  // fabric's.
  PublishOptions options;
  options.driver_name = driver_name;
  dra::resourceslice::Pool pool = NodePool(gpus, options);
  pool.nodes = dra::resourceslice::NodeSelection::kNodeSelector;
  pool.node_selector = selector;
  for (dra::resourceslice::Slice& slice : pool.slices) {
    for (dra::k8s::Device& device : slice.devices) {
      device.name = absl::StrCat("fabric-", device.name);
      device.attributes["fabricAttached"] = dra::k8s::BoolAttribute(true);
      device.binds_to_node = true;
      AddBindingConditions(device, driver_name);
    }
  }
  return pool;
}

}  // namespace gpu
