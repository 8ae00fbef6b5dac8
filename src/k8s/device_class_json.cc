#include "dra/k8s/device_class_json.h"

#include <tuple>

#include "k8s/json_fields.h"
#include "k8s/json_text.h"
#include "k8s/shared_fields.h"

namespace dra::k8s {
namespace internal {

template <>
struct JsonObject<DeviceClassConfiguration> {
  static constexpr auto kFields = std::tuple{OmitEmpty("opaque", &DeviceClassConfiguration::opaque)};
};

template <>
struct JsonObject<DeviceClassSpec> {
  static constexpr auto kFields = std::tuple{
      OmitEmpty("selectors", &DeviceClassSpec::selectors),
      OmitEmpty("config", &DeviceClassSpec::config),
      OmitEmpty("extendedResourceName", &DeviceClassSpec::extended_resource_name),
  };
};

template <>
struct JsonObject<DeviceClass> {
  static constexpr auto kFields = std::tuple{
      ConstantField{"apiVersion", "resource.k8s.io/v1"},
      ConstantField{"kind", "DeviceClass"},
      Always("metadata", &DeviceClass::metadata),
      Always("spec", &DeviceClass::spec),
  };
};

}  // namespace internal

absl::StatusOr<DeviceClass> DeviceClassFromJson(const nlohmann::json& value) {
  return internal::FromJson<DeviceClass>(value);
}

absl::StatusOr<DeviceClass> ParseDeviceClass(std::string_view json_text) {
  absl::StatusOr<nlohmann::json> value = internal::ParseJsonText(absl::string_view(json_text.data(), json_text.size()));
  if (!value.ok()) return value.status();
  return DeviceClassFromJson(*value);
}

nlohmann::json ToJson(const DeviceClass& device_class) { return internal::ToJson(device_class); }

}  // namespace dra::k8s
