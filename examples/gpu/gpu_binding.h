// GpuBinding: the example's BindingHandler (binding_condition_reconciler.h).
// The node's own GPUs, published with binding conditions
// (--binding-conditions, as dra-example-driver's), are ready as soon as the
// reconciler asks: they are in the node already, where a vendor would check
// that the device came up. Fabric GPUs are attached first (FabricAttach).
// The same handler serves the node plugin's reconciler and the fabric
// controller's central one (--fabric-controller --fabric-attach).
#pragma once

#include <string>
#include <utility>

#include "dra/resourceclaim/binding_condition_reconciler.h"
#include "fabric_attach.h"

namespace gpu {

class GpuBinding : public dra::resourceclaim::BindingHandler {
 public:
  // `fabric_pool`: the pool of the fabric GPUs (--fabric-pool; may be empty);
  // every other pool is a node's own.
  GpuBinding(std::string fabric_pool, FabricAttach& fabric) : fabric_pool_(std::move(fabric_pool)), fabric_(fabric) {}

  dra::resourceclaim::BindingResult PrepareForBinding(const dra::CallContext& ctx, const dra::k8s::ResourceClaim& claim,
                                                      const dra::k8s::DeviceRequestAllocationResult& device) override {
    if (!fabric_pool_.empty() && device.pool == fabric_pool_) return fabric_.PrepareForBinding(ctx, claim, device);
    return dra::resourceclaim::BindingResult::Ready("OnNode", device.device + " is on node " + device.pool);
  }

 private:
  const std::string fabric_pool_;
  FabricAttach& fabric_;
};

}  // namespace gpu
