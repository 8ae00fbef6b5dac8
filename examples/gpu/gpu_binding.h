// GpuBinding: the example's BindingHandler (binding_condition_reconciler.h).
// The node's own GPUs, published with binding conditions
// (--binding-conditions, as dra-example-driver's), are ready as soon as the
// reconciler asks: they are in the node already, where a vendor would check
// that the device came up. Fabric GPUs are attached first (FabricAttach).
#pragma once

#include <string>
#include <utility>

#include "dra/resourceclaim/binding_condition_reconciler.h"
#include "fabric_attach.h"

namespace gpu {

class GpuBinding : public dra::resourceclaim::BindingHandler {
 public:
  // `node_pool`: the pool of the node's own GPUs (named after the node).
  GpuBinding(std::string node_pool, FabricAttach& fabric) : node_pool_(std::move(node_pool)), fabric_(fabric) {}

  dra::resourceclaim::BindingResult PrepareForBinding(const dra::CallContext& ctx, const dra::k8s::ResourceClaim& claim,
                                                      const dra::k8s::DeviceRequestAllocationResult& device) override {
    if (device.pool != node_pool_) return fabric_.PrepareForBinding(ctx, claim, device);
    return dra::resourceclaim::BindingResult::Ready("OnNode", device.device + " is on node " + node_pool_);
  }

 private:
  const std::string node_pool_;
  FabricAttach& fabric_;
};

}  // namespace gpu
