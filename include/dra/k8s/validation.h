/// @file
/// Client-side validation of the objects a DRA driver writes, mirroring the
/// API server (k8s.io/kubernetes pkg/apis/resource/validation, Kubernetes
/// 1.37, plus the declarative rules of k8s.io/api/resource/v1 that have no
/// hand-written twin), so that a bad object fails locally, before any request,
/// with the field path and the rule in the API server's own words:
///
/// @code{.unparsed}
///   spec.devices: Too many: 129: must have at most 128 items
///   spec.devices[3]: Invalid value: 33: the total number of attributes and capacities must not exceed 32
/// @endcode
///
/// Errors come in the order the API server reports them. Map entries are
/// visited in key order (Go visits them in random order).
///
/// Validation is for a create: rules that compare with the stored object
/// (immutable fields, grandfathered values) are not applied. Fields of alpha
/// and beta features are validated as if their feature gates were enabled (a
/// server with a gate disabled silently drops the field instead);
/// DRAFractionalCapacityRange is taken as disabled (its default), so request
/// policy ranges use integer arithmetic.
///
/// Known differences from the server's text: where Go prints a whole struct
/// with `%#v` (a DeviceAttribute that sets several values, a list of node
/// selector terms), the value is printed as JSON or Go syntax without pointer
/// addresses.
#pragma once

#include <string>
#include <string_view>

#include "dra/k8s/field_error.h"
#include "dra/k8s/resource_claim.h"
#include "dra/k8s/resource_slice.h"

namespace dra::k8s {

/// @name Limits
/// Limits of resource.k8s.io/v1 (k8s.io/api/resource/v1/types.go).
///@{
inline constexpr size_t kResourceSliceMaxDevices = 128;                             ///< ResourceSliceMaxDevices
inline constexpr size_t kResourceSliceMaxDevicesWithAdvancedFeatures = 64;          ///< ...WithAdvancedFeatures
inline constexpr size_t kResourceSliceMaxCounterSets = 8;                           ///< ResourceSliceMaxCounterSets
inline constexpr size_t kResourceSliceMaxCountersPerCounterSet = 32;                ///< ...PerCounterSet
inline constexpr size_t kResourceSliceMaxDeviceCounterConsumptionsPerDevice = 2;    ///< ...PerDevice
inline constexpr size_t kResourceSliceMaxCountersPerDeviceCounterConsumption = 32;  ///< ...PerDeviceCounterConsumption
inline constexpr size_t kDeviceCounterConsumptionMaxCompatibilityGroups = 2;        ///< +k8s:maxItems, KEP-5963
/// Attributes plus capacities of one device.
inline constexpr size_t kResourceSliceMaxAttributesAndCapacitiesPerDevice = 32;
/// Attribute values of one device, each element of a list attribute counted.
inline constexpr size_t kResourceSliceMaxAttributeValuesPerDevice = 48;
/// Bytes of a string or version attribute value.
inline constexpr size_t kDeviceAttributeMaxValueLength = 64;
/// Bytes of the domain of a qualified attribute or capacity name.
inline constexpr size_t kDeviceMaxDomainLength = 63;
/// Bytes of an attribute or capacity name without its domain (a C identifier).
inline constexpr size_t kDeviceMaxIdLength = 32;
/// Taints of one device.
inline constexpr size_t kDeviceTaintsMaxLength = 16;
/// Binding conditions of one device.
inline constexpr size_t kBindingConditionsMaxSize = 4;
/// Binding failure conditions of one device.
inline constexpr size_t kBindingFailureConditionsMaxSize = 4;
/// Entries of CapacityRequestPolicy::valid_values.
inline constexpr size_t kCapacityRequestPolicyDiscreteMaxOptions = 10;
/// Bytes of a pool name.
inline constexpr size_t kPoolNameMaxLength = 253;
/// Bytes of a driver name.
inline constexpr size_t kDriverNameMaxLength = 63;
/// Conditions of one status.devices entry.
inline constexpr size_t kAllocatedDeviceStatusMaxConditions = 8;
/// Bytes of a status.devices entry's data, as compact JSON.
inline constexpr size_t kAllocatedDeviceStatusDataMaxLength = 10 * 1024;
/// Entries of NetworkDeviceData::ips.
inline constexpr size_t kNetworkDeviceDataMaxIps = 16;
/// Bytes of NetworkDeviceData::interface_name.
inline constexpr size_t kNetworkDeviceDataInterfaceNameMaxLength = 256;
/// Bytes of NetworkDeviceData::hardware_address.
inline constexpr size_t kNetworkDeviceDataHardwareAddressMaxLength = 128;
///@}

/// A DRA driver name as the SDK takes it (Helper, ResourceSlice publisher,
/// ClaimStatusWriter): required, a lower-case DNS subdomain of at most 63
/// bytes, e.g. "gpu.example.com". (The API server checks a lower-cased copy;
/// the Go helper asks for lower case, and the name appears in file names and
/// CDI kinds.) `field` names it in the errors, e.g. "options.driver_name".
FieldErrors ValidateDriverName(std::string_view name, const std::string& field);

/// metadata (name, or the generateName prefix when name is empty; no
/// namespace; labels; annotations) and the whole spec of a ResourceSlice.
FieldErrors ValidateResourceSlice(const ResourceSlice& slice);

/// One entry of ResourceClaim status.devices, as the API server checks it on a
/// status update; path_prefix is its path, e.g. "status.devices[0]". Whether
/// the entry names a device allocated in the claim is not checked here.
FieldErrors ValidateAllocatedDeviceStatus(const AllocatedDeviceStatus& status, const std::string& path_prefix);

}  // namespace dra::k8s
