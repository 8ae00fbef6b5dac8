// The NICs of --device-profile=net, as dra-example-driver's net profile
// publishes them: mock NICs "nic-<index>" in the node's pool, each shared by
// many claims (allowMultipleAllocations) that take ingress and egress
// bandwidth by capacity request (DRAConsumableCapacity): 100G each way,
// 1G per claim unless it asks (from 100M to 100G in steps of 1M), and one
// of its 100 virtual functions.
#pragma once

#include <string>

#include "dra/resourceslice/driver_resources.h"

namespace gpu {

std::string NicDeviceName(int index);

// `count` NICs of node `node_name`, whose UUIDs ("net-...") are derived from
// the node name, as mock GPUs' are.
dra::resourceslice::Pool NicPool(const std::string& node_name, int count);

}  // namespace gpu
