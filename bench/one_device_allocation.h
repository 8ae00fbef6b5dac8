// The allocation every benchmark claim carries: one result for request "gpu",
// a share (shareID `share_id`, the claim's UID) of device "gpu-0" of pool
// "pool-a", by `driver` (the claims of bench/gosdk and the kubelet peer's
// --bench-claims name the same device). A share, so that the Helper's device
// exclusivity checks every prepare and refuses none.
#pragma once

#include <string>

#include "dra/k8s/resource_claim.h"

namespace dra::bench {

inline constexpr char kBenchRequest[] = "gpu";
inline constexpr char kBenchPool[] = "pool-a";
inline constexpr char kBenchDevice[] = "gpu-0";

inline k8s::AllocationResult OneDeviceAllocation(const std::string& driver, const std::string& share_id) {
  k8s::DeviceRequestAllocationResult result;
  result.request = kBenchRequest;
  result.driver = driver;
  result.pool = kBenchPool;
  result.device = kBenchDevice;
  result.share_id = share_id;
  k8s::AllocationResult allocation;
  allocation.devices.results.push_back(result);
  return allocation;
}

}  // namespace dra::bench
