/// @file
/// dra::k8s::ResourceClaim: resource.k8s.io/v1 ResourceClaim (Kubernetes 1.37)
/// as plain values. Field names follow the Go API in snake_case; the Go
/// documentation of each field applies. `unknown_fields` is explained in
/// object_meta.h. JSON codec: resource_claim_json.h.
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

/// A selector as a CEL expression.
struct CELDeviceSelector {
  std::string expression;         ///< CEL over `device`; the device is selected when it yields true
  nlohmann::json unknown_fields;  ///< the keys this library does not model (object_meta.h)

  bool operator==(const CELDeviceSelector&) const = default;  ///< member-wise equality
};

/// One condition a device must meet to be selected.
struct DeviceSelector {
  std::optional<CELDeviceSelector> cel;  ///< the only kind of selector so far
  nlohmann::json unknown_fields;         ///< the keys this library does not model (object_meta.h)

  bool operator==(const DeviceSelector&) const = default;  ///< member-wise equality
};

/// A toleration of device taints (DeviceTaint).
struct DeviceToleration {
  std::string key;                            ///< the taint key; empty with Exists: every key
  std::string operator_;                      ///< "Exists" or "Equal"; empty means Equal
  std::string value;                          ///< the taint value, for Equal
  std::string effect;                         ///< "NoSchedule", "NoExecute" or empty for all
  std::optional<int64_t> toleration_seconds;  ///< NoExecute: how long the taint is tolerated; unset: for ever
  nlohmann::json unknown_fields;              ///< the keys this library does not model (object_meta.h)

  bool operator==(const DeviceToleration&) const = default;  ///< member-wise equality
};

/// The capacity a request needs from each of its devices.
struct CapacityRequirements {
  std::map<std::string, Quantity> requests;  ///< by capacity name
  nlohmann::json unknown_fields;             ///< the keys this library does not model (object_meta.h)

  bool operator==(const CapacityRequirements&) const = default;  ///< member-wise equality
};

/// A request for devices of one class (DeviceRequest::exactly).
struct ExactDeviceRequest {
  std::string device_class_name;                 ///< the DeviceClass the devices come from
  std::vector<DeviceSelector> selectors;         ///< all must select a device
  std::string allocation_mode;                   ///< "ExactCount" (default when empty) or "All"
  std::optional<int64_t> count;                  ///< ExactCount: how many devices; unset means 1
  std::optional<bool> admin_access;              ///< access for administration, also to devices in use
  std::vector<DeviceToleration> tolerations;     ///< the device taints this request tolerates
  std::optional<CapacityRequirements> capacity;  ///< needed from each device
  nlohmann::json unknown_fields;                 ///< the keys this library does not model (object_meta.h)

  bool operator==(const ExactDeviceRequest&) const = default;  ///< member-wise equality
};

/// One alternative of DeviceRequest::first_available; referenced as
/// "<request>/<subrequest>".
struct DeviceSubRequest {
  std::string name;                              ///< the subrequest's name, unique within its request
  std::string device_class_name;                 ///< as in ExactDeviceRequest
  std::vector<DeviceSelector> selectors;         ///< as in ExactDeviceRequest
  std::string allocation_mode;                   ///< as in ExactDeviceRequest
  std::optional<int64_t> count;                  ///< as in ExactDeviceRequest
  std::vector<DeviceToleration> tolerations;     ///< as in ExactDeviceRequest
  std::optional<CapacityRequirements> capacity;  ///< as in ExactDeviceRequest
  nlohmann::json unknown_fields;                 ///< the keys this library does not model (object_meta.h)

  bool operator==(const DeviceSubRequest&) const = default;  ///< member-wise equality
};

/// Exactly one of `exactly` and `first_available` is set.
struct DeviceRequest {
  std::string name;                               ///< the request's name, unique within the claim
  std::optional<ExactDeviceRequest> exactly;      ///< a request for devices of one class
  std::vector<DeviceSubRequest> first_available;  ///< alternatives, tried in order; one is allocated
  nlohmann::json unknown_fields;                  ///< the keys this library does not model (object_meta.h)

  bool operator==(const DeviceRequest&) const = default;  ///< member-wise equality
};

/// A constraint across the devices of several requests.
struct DeviceConstraint {
  std::vector<std::string> requests;              ///< empty: all requests
  std::optional<std::string> match_attribute;     ///< an attribute all the devices have, with the same value
  std::optional<std::string> distinct_attribute;  ///< an attribute all the devices have, each with another value
  nlohmann::json unknown_fields;                  ///< the keys this library does not model (object_meta.h)

  bool operator==(const DeviceConstraint&) const = default;  ///< member-wise equality
};

/// Configuration for one driver, in a format only that driver knows.
struct OpaqueDeviceConfiguration {
  std::string driver;             ///< the driver it is for
  nlohmann::json parameters;      ///< a JSON object defined by the driver vendor
  nlohmann::json unknown_fields;  ///< the keys this library does not model (object_meta.h)

  bool operator==(const OpaqueDeviceConfiguration&) const = default;  ///< member-wise equality
};

/// Configuration of some of the claim's requests.
struct DeviceClaimConfiguration {
  std::vector<std::string> requests;                ///< empty: all requests
  std::optional<OpaqueDeviceConfiguration> opaque;  ///< the configuration
  nlohmann::json unknown_fields;                    ///< the keys this library does not model (object_meta.h)

  bool operator==(const DeviceClaimConfiguration&) const = default;  ///< member-wise equality
};

/// What devices a claim asks for.
struct DeviceClaim {
  std::vector<DeviceRequest> requests;           ///< what is requested
  std::vector<DeviceConstraint> constraints;     ///< constraints across requests
  std::vector<DeviceClaimConfiguration> config;  ///< configuration for the drivers
  nlohmann::json unknown_fields;                 ///< the keys this library does not model (object_meta.h)

  bool operator==(const DeviceClaim&) const = default;  ///< member-wise equality
};

/// The claim's spec, immutable once created.
struct ResourceClaimSpec {
  DeviceClaim devices;            ///< the devices asked for
  nlohmann::json unknown_fields;  ///< the keys this library does not model (object_meta.h)

  bool operator==(const ResourceClaimSpec&) const = default;  ///< member-wise equality
};

/// One allocated device and the request it serves.
struct DeviceRequestAllocationResult {
  std::string request;                                  ///< "<request>" or "<request>/<subrequest>"
  std::string driver;                                   ///< the driver of the device
  std::string pool;                                     ///< the device's pool in that driver's ResourceSlices
  std::string device;                                   ///< the device's name in that pool
  std::optional<bool> admin_access;                     ///< copied from the request
  std::vector<DeviceToleration> tolerations;            ///< copied from the request
  std::vector<std::string> binding_conditions;          ///< copied from the device (KEP-5007)
  std::vector<std::string> binding_failure_conditions;  ///< copied from the device (KEP-5007)
  std::optional<std::string> share_id;  ///< "shareID": this allocation's share of a multiply allocatable device
  std::map<std::string, Quantity> consumed_capacity;  ///< capacity taken from the device, by name
  nlohmann::json unknown_fields;                      ///< the keys this library does not model (object_meta.h)

  bool operator==(const DeviceRequestAllocationResult&) const = default;  ///< member-wise equality
};

/// Configuration that applies to allocated devices.
struct DeviceAllocationConfiguration {
  std::string source;                               ///< "FromClass" or "FromClaim"
  std::vector<std::string> requests;                ///< empty: all requests
  std::optional<OpaqueDeviceConfiguration> opaque;  ///< the configuration
  nlohmann::json unknown_fields;                    ///< the keys this library does not model (object_meta.h)

  bool operator==(const DeviceAllocationConfiguration&) const = default;  ///< member-wise equality
};

/// The devices allocated to a claim.
struct DeviceAllocationResult {
  std::vector<DeviceRequestAllocationResult> results;  ///< one per allocated device
  std::vector<DeviceAllocationConfiguration> config;   ///< the classes' and the claim's (see `source`)
  nlohmann::json unknown_fields;                       ///< the keys this library does not model (object_meta.h)

  bool operator==(const DeviceAllocationResult&) const = default;  ///< member-wise equality
};

/// Where and what a claim was allocated.
struct AllocationResult {
  DeviceAllocationResult devices;                   ///< the allocated devices
  std::optional<NodeSelector> node_selector;        ///< the nodes the devices are reachable from; unset: all
  std::optional<std::string> allocation_timestamp;  ///< RFC 3339
  nlohmann::json unknown_fields;                    ///< the keys this library does not model (object_meta.h)

  bool operator==(const AllocationResult&) const = default;  ///< member-wise equality
};

/// A consumer for which a claim is reserved, usually a pod.
struct ResourceClaimConsumerReference {
  std::string api_group;          ///< empty for the core API
  std::string resource;           ///< e.g. "pods"
  std::string name;               ///< the consumer's name
  std::string uid;                ///< the consumer's UID
  nlohmann::json unknown_fields;  ///< the keys this library does not model (object_meta.h)

  bool operator==(const ResourceClaimConsumerReference&) const = default;  ///< member-wise equality
};

/// How a network device is set up, as its driver reports it.
struct NetworkDeviceData {
  std::string interface_name;     ///< the device's network interface, e.g. as named in the pod
  std::vector<std::string> ips;   ///< CIDR notation, e.g. "192.0.2.5/24"
  std::string hardware_address;   ///< e.g. a MAC address
  nlohmann::json unknown_fields;  ///< the keys this library does not model (object_meta.h)

  bool operator==(const NetworkDeviceData&) const = default;  ///< member-wise equality
};

/// Keyed by (driver, pool, device, share_id); each entry is owned by its driver.
struct AllocatedDeviceStatus {
  std::string driver;                             ///< the device's driver
  std::string pool;                               ///< the device's pool
  std::string device;                             ///< the device's name
  std::optional<std::string> share_id;            ///< "shareID" of the allocation, if it has one
  std::vector<Condition> conditions;              ///< the device's conditions, e.g. Ready
  std::optional<nlohmann::json> data;             ///< a JSON object defined by the driver
  std::optional<NetworkDeviceData> network_data;  ///< for a network device
  nlohmann::json unknown_fields;                  ///< the keys this library does not model (object_meta.h)

  bool operator==(const AllocatedDeviceStatus&) const = default;  ///< member-wise equality
};

/// What happened to a claim.
struct ResourceClaimStatus {
  std::optional<AllocationResult> allocation;                ///< set once allocated
  std::vector<ResourceClaimConsumerReference> reserved_for;  ///< the consumers allowed to use the claim
  std::vector<AllocatedDeviceStatus> devices;                ///< the drivers' status of allocated devices
  nlohmann::json unknown_fields;                             ///< the keys this library does not model (object_meta.h)

  bool operator==(const ResourceClaimStatus&) const = default;  ///< member-wise equality
};

/// A ResourceClaim: a request for devices, and their allocation.
struct ResourceClaim {
  ObjectMeta metadata;            ///< name, namespace, UID, ...
  ResourceClaimSpec spec;         ///< what is asked for
  ResourceClaimStatus status;     ///< allocation, reservations and device status
  nlohmann::json unknown_fields;  ///< the keys this library does not model (object_meta.h)

  bool operator==(const ResourceClaim&) const = default;  ///< member-wise equality
};

/// What the kubelet would name `claim` by.
inline ClaimRef ClaimRefOf(const ResourceClaim& claim) {
  return ClaimRef{claim.metadata.namespace_, claim.metadata.name, claim.metadata.uid};
}

}  // namespace dra::k8s
