// The allocation every benchmark claim carries: one result for request "gpu",
// device "gpu-0" of pool "pool-a", by `driver` (the claims of bench/gosdk
// and the kubelet peer's --bench-claims look the same).
#pragma once

#include <string>

#include "dra/k8s/resource_claim.h"

namespace dra::bench {

inline constexpr char kBenchRequest[] = "gpu";
inline constexpr char kBenchPool[] = "pool-a";
inline constexpr char kBenchDevice[] = "gpu-0";

inline k8s::AllocationResult OneDeviceAllocation(const std::string& driver) {
  k8s::DeviceRequestAllocationResult result;
  result.request = kBenchRequest;
  result.driver = driver;
  result.pool = kBenchPool;
  result.device = kBenchDevice;
  k8s::AllocationResult allocation;
  allocation.devices.results.push_back(result);
  return allocation;
}

}  // namespace dra::bench
