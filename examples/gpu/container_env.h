// What the containers of every device profile get besides their devices'
// own settings, as dra-example-driver gives them: the node-wide CDI spec
// (KUBERNETES_NODE_NAME, DRA_RESOURCE_DRIVER_NAME), and per device
// <CLASS>_DEVICE_<NAME>_RESOURCE_CLAIM and DRA_ADMIN_ACCESS.
#pragma once

#include <string>
#include <string_view>

#include "dra/cdi/spec.h"
#include "dra/k8s/resource_claim.h"

namespace gpu {

// `prefix` followed by `name` upper case, every other character than a
// letter or digit as '_': EnvName("GPU_DEVICE_", "gpu-0") is GPU_DEVICE_GPU_0.
std::string EnvName(std::string_view prefix, std::string_view name);

// "<CLASS>_DEVICE_<NAME>_RESOURCE_CLAIM=<claim UID>" for device `device_name`
// of a claim, e.g. GPU_DEVICE_GPU_0_RESOURCE_CLAIM (class "gpu").
std::string ClaimVariable(std::string_view cdi_class, const std::string& device_name, const std::string& uid);

// "DRA_ADMIN_ACCESS=true" when any device of the claim, whichever driver's,
// was allocated with admin access, else "DRA_ADMIN_ACCESS=false".
std::string AdminAccessVariable(const dra::k8s::ResourceClaim& claim);

// The node-wide spec <driver>-<class> (CdiOptions::node_specs, which the
// Helper keeps in the spec dir): device "common" with env
// KUBERNETES_NODE_NAME and DRA_RESOURCE_DRIVER_NAME, and its CDI ID.
struct CommonCdiSpec {
  dra::cdi::Spec spec;
  std::string id;
};
CommonCdiSpec MakeCommonCdiSpec(const std::string& driver_name, const std::string& cdi_class,
                                const std::string& node_name);

}  // namespace gpu
