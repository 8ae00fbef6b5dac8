/// @file
/// Factories for the typed values of a ResourceSlice Device, so that a driver
/// writes `device.attributes["model"] = StringAttribute("a100")` instead of
/// setting one of DeviceAttribute's optional members by hand, plus the names
/// of the attributes Kubernetes itself defines.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "dra/k8s/quantity.h"
#include "dra/k8s/resource_slice.h"

namespace dra::k8s {

/// Attribute names in the resource.kubernetes.io domain (KEP-5491 and the
/// DRA documentation): PCI bus and PCIe root of a device, for matchAttribute
/// across drivers.
///@{
inline constexpr char kPciBusIdAttribute[] = "resource.kubernetes.io/pciBusID";
inline constexpr char kPcieRootAttribute[] = "resource.kubernetes.io/pcieRoot";
///@}
/// KEP-6072 (stable in Kubernetes 1.37, no gate): the NUMA node of a device,
/// an int. Omitted for a device without NUMA affinity (sysfs numa_node -1):
/// a -1 would match every other such device under matchAttribute.
inline constexpr char kNumaNodeAttribute[] = "resource.kubernetes.io/numaNode";

/// An int attribute.
inline DeviceAttribute IntAttribute(int64_t value) {
  DeviceAttribute attribute;
  attribute.int_value = value;
  return attribute;
}

/// A bool attribute.
inline DeviceAttribute BoolAttribute(bool value) {
  DeviceAttribute attribute;
  attribute.bool_value = value;
  return attribute;
}

/// A string attribute (at most 64 bytes, which ValidateResourceSlice checks).
inline DeviceAttribute StringAttribute(std::string value) {
  DeviceAttribute attribute;
  attribute.string_value = std::move(value);
  return attribute;
}

/// A semantic version (semver 2.0.0, e.g. "1.2.3"); ValidateResourceSlice
/// checks the syntax.
inline DeviceAttribute VersionAttribute(std::string semver) {
  DeviceAttribute attribute;
  attribute.version_value = std::move(semver);
  return attribute;
}

/// A list of strings (alpha, DRAListTypeAttributes).
inline DeviceAttribute StringsAttribute(std::vector<std::string> values) {
  DeviceAttribute attribute;
  attribute.string_values = std::move(values);
  return attribute;
}

/// Capacity of a fixed `value`, with no request policy.
inline DeviceCapacity Capacity(Quantity value) {
  DeviceCapacity capacity;
  capacity.value = std::move(value);
  return capacity;
}

/// Capacity that several claims of a device with allow_multiple_allocations
/// share (consumable capacity): each takes a multiple of `step`, at least one
/// step and at most all of it; one step when a claim does not say. When the
/// total is a single step there is no step to take (the API server refuses a
/// range whose min plus step is above the capacity).
inline DeviceCapacity ShareableCapacity(Quantity total, Quantity step) {
  DeviceCapacity capacity = Capacity(total);
  CapacityRequestPolicy& policy = capacity.request_policy.emplace();
  policy.default_value = step;
  CapacityRequestPolicyRange& range = policy.valid_range.emplace();
  range.min = step;
  if (step + step <= total) range.step = step;
  range.max = std::move(total);
  return capacity;
}

/// Capacity from quantity text ("80Gi", "500m"); InvalidArgument naming the
/// rule the text breaks.
inline absl::StatusOr<DeviceCapacity> ParseCapacity(std::string_view quantity) {
  absl::StatusOr<Quantity> value = Quantity::Parse(quantity);
  if (!value.ok()) return value.status();
  return Capacity(*std::move(value));
}

}  // namespace dra::k8s
