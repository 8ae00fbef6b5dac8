#include "dra/k8s/resource_slice_json.h"

#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "k8s/json_fields.h"
#include "k8s/json_text.h"
#include "k8s/shared_fields.h"

namespace dra::k8s {
namespace internal {
namespace {

constexpr absl::string_view kLegacyMappingsKey = "nodeAllocatableResourceMappings";
constexpr absl::string_view kResourcesKey = "nodeAllocatableResources";

// One value of the legacy devices[].nodeAllocatableResourceMappings map
// (Kubernetes 1.36, 1.37.0-beta.0): NodeAllocatableResourceMapping
// {CapacityKey *QualifiedName `json:"capacityKey,omitempty"`;
//  AllocationMultiplier *resource.Quantity `json:"allocationMultiplier,omitempty"`}.
struct LegacyNodeAllocatableResourceMapping {
  std::optional<std::string> capacity_key;
  std::optional<Quantity> allocation_multiplier;  // defaults to 1
  json unknown_fields;
};

}  // namespace

// std::vector<bool> (DeviceAttribute::bool_values) hands out proxies, not
// bool&, so the generic vector codec cannot decode into it. Only this file
// has a vector<bool> field.
template <>
struct Codec<std::vector<bool>> {
  static absl::Status Decode(const json& value, std::vector<bool>& out, const Path& path) {
    if (!value.is_array()) return InvalidType(path, "array", value);
    out.reserve(value.size());
    for (size_t i = 0; i < value.size(); ++i) {
      bool element = false;
      if (absl::Status status = DecodeValue(value[i], element, path.Index(i)); !status.ok()) return status;
      out.push_back(element);
    }
    return absl::OkStatus();
  }
  static json Encode(const std::vector<bool>& value) {
    json out = json::array();
    for (bool element : value) out.push_back(element);
    return out;
  }
  static bool IsEmpty(const std::vector<bool>& value) { return value.empty(); }
};

template <>
struct JsonObject<LegacyNodeAllocatableResourceMapping> {
  static constexpr auto kFields = std::tuple{
      OmitEmpty("capacityKey", &LegacyNodeAllocatableResourceMapping::capacity_key),
      OmitEmpty("allocationMultiplier", &LegacyNodeAllocatableResourceMapping::allocation_multiplier),
  };
};

template <>
struct JsonObject<ResourcePool> {
  static constexpr auto kFields = std::tuple{
      Always("name", &ResourcePool::name),
      Always("generation", &ResourcePool::generation),
      Always("resourceSliceCount", &ResourcePool::resource_slice_count),
  };
};

template <>
struct JsonObject<Counter> {
  static constexpr auto kFields = std::tuple{Always("value", &Counter::value)};
};

template <>
struct JsonObject<CounterSet> {
  static constexpr auto kFields = std::tuple{
      Always("name", &CounterSet::name),
      OmitEmpty("counters", &CounterSet::counters),
  };
};

template <>
struct JsonObject<DeviceAttribute> {
  static constexpr auto kFields = std::tuple{
      OmitEmpty("int", &DeviceAttribute::int_value),         OmitEmpty("bool", &DeviceAttribute::bool_value),
      OmitEmpty("string", &DeviceAttribute::string_value),   OmitEmpty("version", &DeviceAttribute::version_value),
      OmitEmpty("ints", &DeviceAttribute::int_values),       OmitEmpty("bools", &DeviceAttribute::bool_values),
      OmitEmpty("strings", &DeviceAttribute::string_values), OmitEmpty("versions", &DeviceAttribute::version_values),
  };
};

template <>
struct JsonObject<CapacityRequestPolicyRange> {
  static constexpr auto kFields = std::tuple{
      Always("min", &CapacityRequestPolicyRange::min),
      OmitEmpty("max", &CapacityRequestPolicyRange::max),
      OmitEmpty("step", &CapacityRequestPolicyRange::step),
  };
};

template <>
struct JsonObject<CapacityRequestPolicy> {
  static constexpr auto kFields = std::tuple{
      OmitEmpty("default", &CapacityRequestPolicy::default_value),
      OmitEmpty("validValues", &CapacityRequestPolicy::valid_values),
      OmitEmpty("validRange", &CapacityRequestPolicy::valid_range),
  };
};

template <>
struct JsonObject<DeviceCapacity> {
  static constexpr auto kFields = std::tuple{
      Always("value", &DeviceCapacity::value),
      OmitEmpty("requestPolicy", &DeviceCapacity::request_policy),
  };
};

template <>
struct JsonObject<DeviceCounterConsumption> {
  static constexpr auto kFields = std::tuple{
      Always("counterSet", &DeviceCounterConsumption::counter_set),
      OmitEmpty("counters", &DeviceCounterConsumption::counters),
      OmitEmpty("compatibilityGroups", &DeviceCounterConsumption::compatibility_groups),
  };
};

template <>
struct JsonObject<DeviceTaint> {
  static constexpr auto kFields = std::tuple{
      Always("key", &DeviceTaint::key),
      OmitEmpty("value", &DeviceTaint::value),
      Always("effect", &DeviceTaint::effect),
      OmitEmpty("timeAdded", &DeviceTaint::time_added),
  };
};

template <>
struct JsonObject<NodeAllocatableMapping> {
  static constexpr auto kFields = std::tuple{
      OmitEmpty("capacityKey", &NodeAllocatableMapping::capacity_key),
      OmitEmpty("capacityMultiplier", &NodeAllocatableMapping::capacity_multiplier),
      OmitEmpty("deviceMultiplier", &NodeAllocatableMapping::device_multiplier),
  };
};

template <>
struct JsonObject<NodeAllocatableOverhead> {
  static constexpr auto kFields = std::tuple{
      OmitEmpty("perPod", &NodeAllocatableOverhead::per_pod),
      OmitEmpty("perContainer", &NodeAllocatableOverhead::per_container),
  };
};

template <>
struct JsonObject<NodeAllocatableResource> {
  static constexpr auto kFields = std::tuple{
      OmitEmpty("mapping", &NodeAllocatableResource::mapping),
      OmitEmpty("overhead", &NodeAllocatableResource::overhead),
  };
};

// nodeAllocatableResourceMappings is not listed: it lands in unknown_fields
// and ConvertLegacyMappings takes it from there.
template <>
struct JsonObject<Device> {
  static constexpr auto kFields = std::tuple{
      Always("name", &Device::name),
      OmitEmpty("attributes", &Device::attributes),
      OmitEmpty("capacity", &Device::capacity),
      OmitEmpty("consumesCounters", &Device::consumes_counters),
      OmitEmpty("nodeName", &Device::node_name),
      OmitEmpty("nodeSelector", &Device::node_selector),
      OmitEmpty("allNodes", &Device::all_nodes),
      OmitEmpty("taints", &Device::taints),
      OmitEmpty("bindsToNode", &Device::binds_to_node),
      OmitEmpty("bindingConditions", &Device::binding_conditions),
      OmitEmpty("bindingFailureConditions", &Device::binding_failure_conditions),
      OmitEmpty("allowMultipleAllocations", &Device::allow_multiple_allocations),
      OmitEmpty("nodeAllocatableResources", &Device::node_allocatable_resources),
  };
};

template <>
struct JsonObject<ResourceSliceSpec> {
  using S = ResourceSliceSpec;
  static constexpr auto kFields = std::tuple{
      Always("driver", &S::driver),
      Always("pool", &S::pool),
      OmitEmpty("nodeName", &S::node_name),
      OmitEmpty("nodeSelector", &S::node_selector),
      OmitEmpty("allNodes", &S::all_nodes),
      OmitEmpty("devices", &S::devices),
      OmitEmpty("perDeviceNodeSelection", &S::per_device_node_selection),
      OmitEmpty("sharedCounters", &S::shared_counters),
      OmitEmpty("partitionTypeAttribute", &S::partition_type_attribute),
      OmitEmpty("skipNodeOperations", &S::skip_node_operations),
  };
};

template <>
struct JsonObject<ResourceSlice> {
  static constexpr auto kFields = std::tuple{
      ConstantField{"apiVersion", "resource.k8s.io/v1"},
      ConstantField{"kind", "ResourceSlice"},
      Always("metadata", &ResourceSlice::metadata),
      Always("spec", &ResourceSlice::spec),
  };
};

namespace {

// Moves a legacy nodeAllocatableResourceMappings map out of the device's
// unknown fields into node_allocatable_resources, unless the device also had
// nodeAllocatableResources (which then wins; the legacy key stays unknown).
absl::Status ConvertLegacyMappings(Device& device, const Path& device_path) {
  if (!device.unknown_fields.is_object()) return absl::OkStatus();
  auto it = device.unknown_fields.find(std::string(kLegacyMappingsKey));
  if (it == device.unknown_fields.end() || !device.node_allocatable_resources.empty()) return absl::OkStatus();

  std::map<std::string, LegacyNodeAllocatableResourceMapping> legacy;
  const Path path = device_path.Field(kLegacyMappingsKey);
  if (absl::Status status = DecodeValue(*it, legacy, path); !status.ok()) return status;
  for (auto& [name, entry] : legacy) {
    NodeAllocatableMapping& mapping = device.node_allocatable_resources[name].mapping.emplace();
    const Quantity multiplier = entry.allocation_multiplier.value_or(Quantity::FromInt(1));
    if (entry.capacity_key.has_value()) {
      mapping.capacity_key = std::move(entry.capacity_key);
      mapping.capacity_multiplier = multiplier;
    } else {
      mapping.device_multiplier = multiplier;
    }
    mapping.unknown_fields = std::move(entry.unknown_fields);
  }
  device.unknown_fields.erase(it);
  if (device.unknown_fields.empty()) device.unknown_fields = json();
  return absl::OkStatus();
}

absl::Status NotExpressible(size_t index, const Device& device, absl::string_view resource, absl::string_view what) {
  return absl::InvalidArgumentError(
      absl::StrCat("spec.devices[", index, "] (device \"", device.name, "\"): ", kResourcesKey, "[", resource, "]",
                   what, ": cannot be expressed as ", kLegacyMappingsKey, " (Kubernetes 1.36, 1.37.0-beta.0)"));
}

// The legacy map for one device, or why it cannot be written.
absl::StatusOr<json> LegacyMappings(size_t index, const Device& device) {
  json out = json::object();
  for (const auto& [name, resource] : device.node_allocatable_resources) {
    if (resource.overhead.has_value()) return NotExpressible(index, device, name, ".overhead");
    if (resource.unknown_fields.is_object() && !resource.unknown_fields.empty()) {
      return NotExpressible(index, device, name, absl::StrCat(".", resource.unknown_fields.begin().key()));
    }
    if (!resource.mapping.has_value()) return NotExpressible(index, device, name, " without mapping");
    const NodeAllocatableMapping& mapping = *resource.mapping;
    LegacyNodeAllocatableResourceMapping legacy;
    if (mapping.capacity_key.has_value()) {
      if (mapping.device_multiplier.has_value()) {
        return NotExpressible(index, device, name, ".mapping.deviceMultiplier together with capacityKey");
      }
      legacy.capacity_key = mapping.capacity_key;
      legacy.allocation_multiplier = mapping.capacity_multiplier;
    } else {
      if (mapping.capacity_multiplier.has_value()) {
        return NotExpressible(index, device, name, ".mapping.capacityMultiplier without capacityKey");
      }
      if (!mapping.device_multiplier.has_value()) {
        return NotExpressible(index, device, name, ".mapping without capacityKey or deviceMultiplier");
      }
      legacy.allocation_multiplier = mapping.device_multiplier;
    }
    legacy.unknown_fields = mapping.unknown_fields;
    out[name] = Codec<LegacyNodeAllocatableResourceMapping>::Encode(legacy);
  }
  return out;
}

}  // namespace
}  // namespace internal

absl::StatusOr<ResourceSlice> ResourceSliceFromJson(const nlohmann::json& value) {
  absl::StatusOr<ResourceSlice> slice = internal::FromJson<ResourceSlice>(value);
  if (!slice.ok()) return slice;
  // Paths point to their parents: each one must be a named local.
  const internal::Path root;
  const internal::Path spec = root.Field("spec");
  const internal::Path devices_path = spec.Field("devices");
  for (size_t i = 0; i < slice->spec.devices.size(); ++i) {
    if (absl::Status status = internal::ConvertLegacyMappings(slice->spec.devices[i], devices_path.Index(i));
        !status.ok()) {
      return status;
    }
  }
  return slice;
}

absl::StatusOr<ResourceSlice> ParseResourceSlice(std::string_view json_text) {
  absl::StatusOr<nlohmann::json> value = internal::ParseJsonText(absl::string_view(json_text.data(), json_text.size()));
  if (!value.ok()) return value.status();
  return ResourceSliceFromJson(*value);
}

nlohmann::json ToJson(const ResourceSlice& slice) { return internal::ToJson(slice); }

nlohmann::json ToJson(const DeviceAttribute& attribute) { return internal::ToJson(attribute); }

absl::StatusOr<nlohmann::json> ToJson(const ResourceSlice& slice, const EncodeOptions& options) {
  nlohmann::json out = internal::ToJson(slice);
  if (options.node_allocatable_shape == NodeAllocatableShape::kResources) return out;
  for (size_t i = 0; i < slice.spec.devices.size(); ++i) {
    const Device& device = slice.spec.devices[i];
    if (device.node_allocatable_resources.empty()) continue;
    absl::StatusOr<nlohmann::json> legacy = internal::LegacyMappings(i, device);
    if (!legacy.ok()) return legacy.status();
    nlohmann::json& device_json = out["spec"]["devices"][i];
    device_json.erase(std::string(internal::kResourcesKey));
    device_json[std::string(internal::kLegacyMappingsKey)] = *std::move(legacy);
  }
  return out;
}

}  // namespace dra::k8s
