// GpuBinding: the example's BindingHandler (binding_condition_reconciler.h).
// The node's own GPUs, published with binding conditions
// (--binding-conditions, as dra-example-driver's), are ready as soon as the
// reconciler asks: they are in the node already, where a vendor would check
// that the device came up. Fabric GPUs are attached first (FabricAttach).
// The same handler serves the node plugin's reconciler and the fabric
// controller's central one (--fabric-controller --fabric-attach).
#pragma once

#include <optional>
#include <string>

#include "dra/k8s/node_selector.h"
#include "dra/k8s/resource_slice.h"
#include "dra/resourceclaim/binding_condition_reconciler.h"
#include "fabric_attach.h"

namespace gpu {

// Gives `device` the binding conditions this handler's reconciler sets:
// "<driver>/is-prepared" and the failure condition "<driver>/preparing-failed".
// The scheduler binds a pod only once they are met.
inline void AddBindingConditions(dra::k8s::Device& device, const std::string& driver_name) {
  device.binding_conditions = {driver_name + "/is-prepared"};
  device.binding_failure_conditions = {driver_name + "/preparing-failed"};
}

class GpuBinding : public dra::resourceclaim::BindingHandler {
 public:
  explicit GpuBinding(FabricAttach& fabric) : fabric_(fabric) {}

  // A node's own pool is named after the node, which the allocation selects
  // (SelectedNodeName): any other pool's device is a fabric GPU. This holds
  // in the node plugin and centrally, with or without --fabric-pool.
  dra::resourceclaim::BindingResult PrepareForBinding(const dra::CallContext& ctx, const dra::k8s::ResourceClaim& claim,
                                                      const dra::k8s::DeviceRequestAllocationResult& device) override {
    const std::optional<dra::k8s::NodeSelector>& selector = claim.status.allocation->node_selector;
    if (selector.has_value() && dra::k8s::SelectedNodeName(*selector) == device.pool) {
      return dra::resourceclaim::BindingResult::Ready("OnNode", device.device + " is on node " + device.pool);
    }
    return fabric_.PrepareForBinding(ctx, claim, device);
  }

 private:
  FabricAttach& fabric_;
};

}  // namespace gpu
