// dra::k8s::ResourceClaim: resource.k8s.io/v1 ResourceClaim (Kubernetes 1.37)
// as plain values. Field names follow the Go API in snake_case; the Go
// documentation of each field applies. `unknown_fields` is explained in
// object_meta.h. JSON codec: resource_claim_json.h.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "dra/k8s/claim_ref.h"
#include "dra/k8s/node_selector.h"
#include "dra/k8s/object_meta.h"
#include "dra/k8s/quantity.h"
#include "nlohmann/json.hpp"

namespace dra::k8s {

struct CELDeviceSelector {
  std::string expression;
  nlohmann::json unknown_fields;

  bool operator==(const CELDeviceSelector&) const = default;
};

struct DeviceSelector {
  std::optional<CELDeviceSelector> cel;
  nlohmann::json unknown_fields;

  bool operator==(const DeviceSelector&) const = default;
};

struct DeviceToleration {
  std::string key;
  std::string operator_;  // "Exists" or "Equal"; empty means Equal
  std::string value;
  std::string effect;  // "NoSchedule", "NoExecute" or empty for all
  std::optional<int64_t> toleration_seconds;
  nlohmann::json unknown_fields;

  bool operator==(const DeviceToleration&) const = default;
};

struct CapacityRequirements {
  std::map<std::string, Quantity> requests;  // by capacity name
  nlohmann::json unknown_fields;

  bool operator==(const CapacityRequirements&) const = default;
};

struct ExactDeviceRequest {
  std::string device_class_name;
  std::vector<DeviceSelector> selectors;
  std::string allocation_mode;  // "ExactCount" (default when empty) or "All"
  std::optional<int64_t> count;
  std::optional<bool> admin_access;
  std::vector<DeviceToleration> tolerations;
  std::optional<CapacityRequirements> capacity;
  nlohmann::json unknown_fields;

  bool operator==(const ExactDeviceRequest&) const = default;
};

// One alternative of DeviceRequest::first_available; referenced as
// "<request>/<subrequest>".
struct DeviceSubRequest {
  std::string name;
  std::string device_class_name;
  std::vector<DeviceSelector> selectors;
  std::string allocation_mode;
  std::optional<int64_t> count;
  std::vector<DeviceToleration> tolerations;
  std::optional<CapacityRequirements> capacity;
  nlohmann::json unknown_fields;

  bool operator==(const DeviceSubRequest&) const = default;
};

// Exactly one of `exactly` and `first_available` is set.
struct DeviceRequest {
  std::string name;
  std::optional<ExactDeviceRequest> exactly;
  std::vector<DeviceSubRequest> first_available;
  nlohmann::json unknown_fields;

  bool operator==(const DeviceRequest&) const = default;
};

struct DeviceConstraint {
  std::vector<std::string> requests;  // empty: all requests
  std::optional<std::string> match_attribute;
  std::optional<std::string> distinct_attribute;
  nlohmann::json unknown_fields;

  bool operator==(const DeviceConstraint&) const = default;
};

struct OpaqueDeviceConfiguration {
  std::string driver;
  nlohmann::json parameters;  // a JSON object defined by the driver vendor
  nlohmann::json unknown_fields;

  bool operator==(const OpaqueDeviceConfiguration&) const = default;
};

struct DeviceClaimConfiguration {
  std::vector<std::string> requests;  // empty: all requests
  std::optional<OpaqueDeviceConfiguration> opaque;
  nlohmann::json unknown_fields;

  bool operator==(const DeviceClaimConfiguration&) const = default;
};

struct DeviceClaim {
  std::vector<DeviceRequest> requests;
  std::vector<DeviceConstraint> constraints;
  std::vector<DeviceClaimConfiguration> config;
  nlohmann::json unknown_fields;

  bool operator==(const DeviceClaim&) const = default;
};

struct ResourceClaimSpec {
  DeviceClaim devices;
  nlohmann::json unknown_fields;

  bool operator==(const ResourceClaimSpec&) const = default;
};

struct DeviceRequestAllocationResult {
  std::string request;  // "<request>" or "<request>/<subrequest>"
  std::string driver;
  std::string pool;
  std::string device;
  std::optional<bool> admin_access;
  std::vector<DeviceToleration> tolerations;
  std::vector<std::string> binding_conditions;
  std::vector<std::string> binding_failure_conditions;
  std::optional<std::string> share_id;
  std::map<std::string, Quantity> consumed_capacity;
  nlohmann::json unknown_fields;

  bool operator==(const DeviceRequestAllocationResult&) const = default;
};

struct DeviceAllocationConfiguration {
  std::string source;  // "FromClass" or "FromClaim"
  std::vector<std::string> requests;
  std::optional<OpaqueDeviceConfiguration> opaque;
  nlohmann::json unknown_fields;

  bool operator==(const DeviceAllocationConfiguration&) const = default;
};

struct DeviceAllocationResult {
  std::vector<DeviceRequestAllocationResult> results;
  std::vector<DeviceAllocationConfiguration> config;
  nlohmann::json unknown_fields;

  bool operator==(const DeviceAllocationResult&) const = default;
};

struct AllocationResult {
  DeviceAllocationResult devices;
  std::optional<NodeSelector> node_selector;
  std::optional<std::string> allocation_timestamp;  // RFC 3339
  nlohmann::json unknown_fields;

  bool operator==(const AllocationResult&) const = default;
};

struct ResourceClaimConsumerReference {
  std::string api_group;  // empty for the core API
  std::string resource;   // e.g. "pods"
  std::string name;
  std::string uid;
  nlohmann::json unknown_fields;

  bool operator==(const ResourceClaimConsumerReference&) const = default;
};

struct NetworkDeviceData {
  std::string interface_name;
  std::vector<std::string> ips;  // CIDR notation, e.g. "192.0.2.5/24"
  std::string hardware_address;
  nlohmann::json unknown_fields;

  bool operator==(const NetworkDeviceData&) const = default;
};

// Keyed by (driver, pool, device, share_id); each entry is owned by its driver.
struct AllocatedDeviceStatus {
  std::string driver;
  std::string pool;
  std::string device;
  std::optional<std::string> share_id;
  std::vector<Condition> conditions;
  std::optional<nlohmann::json> data;  // a JSON object defined by the driver
  std::optional<NetworkDeviceData> network_data;
  nlohmann::json unknown_fields;

  bool operator==(const AllocatedDeviceStatus&) const = default;
};

struct ResourceClaimStatus {
  std::optional<AllocationResult> allocation;
  std::vector<ResourceClaimConsumerReference> reserved_for;
  std::vector<AllocatedDeviceStatus> devices;
  nlohmann::json unknown_fields;

  bool operator==(const ResourceClaimStatus&) const = default;
};

struct ResourceClaim {
  ObjectMeta metadata;
  ResourceClaimSpec spec;
  ResourceClaimStatus status;
  nlohmann::json unknown_fields;

  bool operator==(const ResourceClaim&) const = default;
};

// What the kubelet would name `claim` by.
inline ClaimRef ClaimRefOf(const ResourceClaim& claim) {
  return ClaimRef{claim.metadata.namespace_, claim.metadata.name, claim.metadata.uid};
}

}  // namespace dra::k8s
