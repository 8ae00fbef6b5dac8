// The fabric-attached GPUs of dra-example-driver's fabric demo
// (--fabric-pool): mock GPUs that any node the pool's selector picks can
// attach (fabric_attach.h), published as a pool of their own by one node
// plugin or by the fabric controller (--fabric-controller).
#pragma once

#include <string>
#include <vector>

#include "dra/k8s/node_selector.h"
#include "dra/resourceslice/driver_resources.h"
#include "gpu_info.h"

namespace gpu {

// The mock GPUs of the fabric: the same in the fabric controller and in every
// node plugin, whichever pool name publishes them, so that the UUID a
// container gets is the one its slice shows. Their device nodes are
// /dev/mock-fabric-gpu<index>.
std::vector<GpuInfo> MockFabricGpus(int count);

// Fabric-attached GPUs reachable from the nodes `selector` selects: devices
// "fabric-gpu-<index>" with the GPUs' attributes (and fabricAttached: true)
// and capacity, bindsToNode, and binding conditions (AddBindingConditions).
dra::resourceslice::Pool FabricPool(const std::vector<GpuInfo>& gpus, const std::string& driver_name,
                                    const dra::k8s::NodeSelector& selector);
std::string FabricDeviceName(int index);

}  // namespace gpu
