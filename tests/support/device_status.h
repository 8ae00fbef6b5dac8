// status.devices entries for ClaimStatusWriter tests: one with a Ready
// condition, and finding an entry in a claim.
#pragma once

#include <string>

#include "dra/k8s/resource_claim.h"

namespace dra::testing {

inline k8s::AllocatedDeviceStatus ReadyEntry(const std::string& driver, const std::string& pool,
                                             const std::string& device, const std::string& ready = "True") {
  k8s::AllocatedDeviceStatus entry;
  entry.driver = driver;
  entry.pool = pool;
  entry.device = device;
  k8s::Condition& condition = entry.conditions.emplace_back();
  condition.type = "Ready";
  condition.status = ready;
  condition.reason = "Initialized";
  condition.message = "set up";
  return entry;
}

// The claim's entry for (driver, device), or null.
inline const k8s::AllocatedDeviceStatus* FindDeviceStatus(const k8s::ResourceClaim& claim, const std::string& driver,
                                                          const std::string& device) {
  for (const k8s::AllocatedDeviceStatus& entry : claim.status.devices) {
    if (entry.driver == driver && entry.device == device) return &entry;
  }
  return nullptr;
}

}  // namespace dra::testing
