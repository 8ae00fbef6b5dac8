/// @file
/// JSON codec for dra::k8s::ResourceSlice, in the form the API server reads
/// and writes. Conventions as in resource_claim_json.h: unknown keys are kept,
/// null means unset, errors are InvalidArgument naming the JSON path (e.g.
/// "spec.devices[3].capacity[memory].value: Invalid value: ..."), encoding
/// writes apiVersion "resource.k8s.io/v1" and kind "ResourceSlice", omits what
/// Go omits, prints quantities canonically and sorts object keys.
///
/// Node allocatable resources (KEP-5517, alpha). Kubernetes 1.37 (and the
/// OpenAPI document this library follows) has
/// @code{.unparsed}
///   devices[].nodeAllocatableResources:
///     map<resource name, {mapping: {capacityKey, capacityMultiplier,
///                                   deviceMultiplier},
///                         overhead: {perPod, perContainer}}>
/// @endcode
/// Kubernetes 1.36 and 1.37.0-beta.0 have instead
/// @code{.unparsed}
///   devices[].nodeAllocatableResourceMappings:
///     map<resource name, {capacityKey, allocationMultiplier}>
/// @endcode
/// where allocationMultiplier defaults to 1 and multiplies the consumed
/// capacity named by capacityKey, or the allocated device count when
/// capacityKey is unset.
///
/// Decoding accepts either shape into Device::node_allocatable_resources:
/// legacy {capacityKey: K, allocationMultiplier: M} becomes
/// mapping {capacityKey: K, capacityMultiplier: M or 1}, and legacy
/// {allocationMultiplier: M} becomes mapping {deviceMultiplier: M or 1}. When a
/// device carries both keys, nodeAllocatableResources wins and the legacy key
/// stays in Device::unknown_fields (written back unchanged).
///
/// Encoding writes nodeAllocatableResources unless EncodeOptions asks for the
/// legacy shape (see ToJson(slice, options)).
#pragma once

#include <string_view>

#include "absl/status/statusor.h"
#include "dra/k8s/resource_slice.h"
#include "nlohmann/json.hpp"

namespace dra::k8s {

/// Which JSON shape Device::node_allocatable_resources is written in.
enum class NodeAllocatableShape {
  kResources,       ///< "nodeAllocatableResources" (Kubernetes 1.37 and later)
  kLegacyMappings,  ///< "nodeAllocatableResourceMappings" (1.36, 1.37.0-beta.0)
};

/// Options for encoding a ResourceSlice.
struct EncodeOptions {
  /// Default: the current shape, as in the OpenAPI document.
  NodeAllocatableShape node_allocatable_shape = NodeAllocatableShape::kResources;
};

/// Decodes a ResourceSlice object, in either shape of node allocatable resources.
absl::StatusOr<ResourceSlice> ResourceSliceFromJson(const nlohmann::json& json);
/// Parses JSON text, then ResourceSliceFromJson.
absl::StatusOr<ResourceSlice> ParseResourceSlice(std::string_view json_text);

/// The current shape; cannot fail.
nlohmann::json ToJson(const ResourceSlice& slice);
/// One attribute value as in a slice (and in KEP-5304 device metadata): {"int": 3}.
nlohmann::json ToJson(const DeviceAttribute& attribute);

/// With kLegacyMappings each node allocatable resource must be expressible as
/// {capacityKey, allocationMultiplier}: a mapping with capacityKey (and
/// optionally capacityMultiplier), or a mapping with only deviceMultiplier.
/// Anything else fails with InvalidArgument naming the device and the
/// resource, e.g. "spec.devices[1] (device \"gpu-1\"):
/// nodeAllocatableResources[memory].overhead: cannot be expressed as
/// nodeAllocatableResourceMappings (Kubernetes 1.36 / 1.37.0-beta.0)":
/// overhead, unknown fields next to mapping/overhead, deviceMultiplier
/// together with capacityKey, capacityMultiplier without capacityKey, or an
/// empty mapping. With kResources it never fails.
absl::StatusOr<nlohmann::json> ToJson(const ResourceSlice& slice, const EncodeOptions& options);

}  // namespace dra::k8s
