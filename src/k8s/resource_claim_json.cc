#include "dra/k8s/resource_claim_json.h"

#include <tuple>

#include "k8s/json_fields.h"
#include "k8s/json_text.h"
#include "k8s/shared_fields.h"

namespace dra::k8s {
namespace internal {
namespace {

// The fields ExactDeviceRequest and DeviceSubRequest share.
template <typename Request>
constexpr auto CommonRequestFields() {
  return std::tuple{
      Always("deviceClassName", &Request::device_class_name), OmitEmpty("selectors", &Request::selectors),
      OmitEmpty("allocationMode", &Request::allocation_mode), OmitEmpty("count", &Request::count),
      OmitEmpty("tolerations", &Request::tolerations),        OmitEmpty("capacity", &Request::capacity),
  };
}

}  // namespace

template <>
struct JsonObject<DeviceToleration> {
  static constexpr auto kFields = std::tuple{
      OmitEmpty("key", &DeviceToleration::key),
      OmitEmpty("operator", &DeviceToleration::operator_),
      OmitEmpty("value", &DeviceToleration::value),
      OmitEmpty("effect", &DeviceToleration::effect),
      OmitEmpty("tolerationSeconds", &DeviceToleration::toleration_seconds),
  };
};

template <>
struct JsonObject<CapacityRequirements> {
  static constexpr auto kFields = std::tuple{OmitEmpty("requests", &CapacityRequirements::requests)};
};

template <>
struct JsonObject<ExactDeviceRequest> {
  static constexpr auto kFields =
      std::tuple_cat(CommonRequestFields<ExactDeviceRequest>(),
                     std::tuple{OmitEmpty("adminAccess", &ExactDeviceRequest::admin_access)});
};

template <>
struct JsonObject<DeviceSubRequest> {
  static constexpr auto kFields =
      std::tuple_cat(std::tuple{Always("name", &DeviceSubRequest::name)}, CommonRequestFields<DeviceSubRequest>());
};

template <>
struct JsonObject<DeviceRequest> {
  static constexpr auto kFields = std::tuple{
      Always("name", &DeviceRequest::name),
      OmitEmpty("exactly", &DeviceRequest::exactly),
      OmitEmpty("firstAvailable", &DeviceRequest::first_available),
  };
};

template <>
struct JsonObject<DeviceConstraint> {
  static constexpr auto kFields = std::tuple{
      OmitEmpty("requests", &DeviceConstraint::requests),
      OmitEmpty("matchAttribute", &DeviceConstraint::match_attribute),
      OmitEmpty("distinctAttribute", &DeviceConstraint::distinct_attribute),
  };
};

template <>
struct JsonObject<DeviceClaimConfiguration> {
  static constexpr auto kFields = std::tuple{
      OmitEmpty("requests", &DeviceClaimConfiguration::requests),
      OmitEmpty("opaque", &DeviceClaimConfiguration::opaque),
  };
};

template <>
struct JsonObject<DeviceClaim> {
  static constexpr auto kFields = std::tuple{
      OmitEmpty("requests", &DeviceClaim::requests),
      OmitEmpty("constraints", &DeviceClaim::constraints),
      OmitEmpty("config", &DeviceClaim::config),
  };
};

template <>
struct JsonObject<ResourceClaimSpec> {
  static constexpr auto kFields = std::tuple{Always("devices", &ResourceClaimSpec::devices)};
};

template <>
struct JsonObject<DeviceRequestAllocationResult> {
  using R = DeviceRequestAllocationResult;
  static constexpr auto kFields = std::tuple{
      Always("request", &R::request),
      Always("driver", &R::driver),
      Always("pool", &R::pool),
      Always("device", &R::device),
      OmitEmpty("adminAccess", &R::admin_access),
      OmitEmpty("tolerations", &R::tolerations),
      OmitEmpty("bindingConditions", &R::binding_conditions),
      OmitEmpty("bindingFailureConditions", &R::binding_failure_conditions),
      OmitEmpty("shareID", &R::share_id),
      OmitEmpty("consumedCapacity", &R::consumed_capacity),
  };
};

template <>
struct JsonObject<DeviceAllocationConfiguration> {
  static constexpr auto kFields = std::tuple{
      Always("source", &DeviceAllocationConfiguration::source),
      OmitEmpty("requests", &DeviceAllocationConfiguration::requests),
      OmitEmpty("opaque", &DeviceAllocationConfiguration::opaque),
  };
};

template <>
struct JsonObject<DeviceAllocationResult> {
  static constexpr auto kFields = std::tuple{
      OmitEmpty("results", &DeviceAllocationResult::results),
      OmitEmpty("config", &DeviceAllocationResult::config),
  };
};

template <>
struct JsonObject<AllocationResult> {
  static constexpr auto kFields = std::tuple{
      Always("devices", &AllocationResult::devices),
      OmitEmpty("nodeSelector", &AllocationResult::node_selector),
      OmitEmpty("allocationTimestamp", &AllocationResult::allocation_timestamp),
  };
};

template <>
struct JsonObject<ResourceClaimConsumerReference> {
  static constexpr auto kFields = std::tuple{
      OmitEmpty("apiGroup", &ResourceClaimConsumerReference::api_group),
      Always("resource", &ResourceClaimConsumerReference::resource),
      Always("name", &ResourceClaimConsumerReference::name),
      Always("uid", &ResourceClaimConsumerReference::uid),
  };
};

template <>
struct JsonObject<NetworkDeviceData> {
  static constexpr auto kFields = std::tuple{
      OmitEmpty("interfaceName", &NetworkDeviceData::interface_name),
      OmitEmpty("ips", &NetworkDeviceData::ips),
      OmitEmpty("hardwareAddress", &NetworkDeviceData::hardware_address),
  };
};

template <>
struct JsonObject<AllocatedDeviceStatus> {
  static constexpr auto kFields = std::tuple{
      Always("driver", &AllocatedDeviceStatus::driver),
      Always("pool", &AllocatedDeviceStatus::pool),
      Always("device", &AllocatedDeviceStatus::device),
      OmitEmpty("shareID", &AllocatedDeviceStatus::share_id),
      OmitEmpty("conditions", &AllocatedDeviceStatus::conditions),
      OmitEmpty("data", &AllocatedDeviceStatus::data),
      OmitEmpty("networkData", &AllocatedDeviceStatus::network_data),
  };
};

template <>
struct JsonObject<ResourceClaimStatus> {
  static constexpr auto kFields = std::tuple{
      OmitEmpty("allocation", &ResourceClaimStatus::allocation),
      OmitEmpty("reservedFor", &ResourceClaimStatus::reserved_for),
      OmitEmpty("devices", &ResourceClaimStatus::devices),
  };
};

template <>
struct JsonObject<ResourceClaim> {
  static constexpr auto kFields = std::tuple{
      ConstantField{"apiVersion", "resource.k8s.io/v1"}, ConstantField{"kind", "ResourceClaim"},
      Always("metadata", &ResourceClaim::metadata),      Always("spec", &ResourceClaim::spec),
      Always("status", &ResourceClaim::status),
  };
};

}  // namespace internal

absl::StatusOr<ResourceClaim> ResourceClaimFromJson(const nlohmann::json& value) {
  return internal::FromJson<ResourceClaim>(value);
}

absl::StatusOr<ResourceClaim> ParseResourceClaim(std::string_view json_text) {
  absl::StatusOr<nlohmann::json> value = internal::ParseJsonText(absl::string_view(json_text.data(), json_text.size()));
  if (!value.ok()) return value.status();
  return ResourceClaimFromJson(*value);
}

nlohmann::json ToJson(const ResourceClaim& claim) { return internal::ToJson(claim); }

nlohmann::json ToJson(const NetworkDeviceData& data) { return internal::ToJson(data); }

}  // namespace dra::k8s
