// The key that ties a ResourceClaim's status.devices[] entry to its
// allocation result: the list-map keys driver, pool, device and shareID.
#pragma once

#include <string>
#include <tuple>

#include "absl/strings/str_cat.h"
#include "dra/k8s/resource_claim.h"

namespace dra::resourceclaim::internal {

using AllocatedDeviceKey = std::tuple<std::string, std::string, std::string, std::string>;

inline AllocatedDeviceKey KeyOf(const k8s::AllocatedDeviceStatus& status) {
  return {status.driver, status.pool, status.device, status.share_id.value_or("")};
}

inline AllocatedDeviceKey KeyOf(const k8s::DeviceRequestAllocationResult& result) {
  return {result.driver, result.pool, result.device, result.share_id.value_or("")};
}

// "driver/pool/device", with " (shareID ...)" when there is one.
inline std::string Describe(const AllocatedDeviceKey& key) {
  std::string text = absl::StrCat(std::get<0>(key), "/", std::get<1>(key), "/", std::get<2>(key));
  if (!std::get<3>(key).empty()) absl::StrAppend(&text, " (shareID ", std::get<3>(key), ")");
  return text;
}

}  // namespace dra::resourceclaim::internal
